#include "analysis-jobs/lib/coverage.h"

#include <algorithm>

#include "analysis-jobs/summarize/fs_context.h"

namespace iosonar::analysis {

JobOnFs::JobOnFs(std::vector<std::pair<std::string, std::string>> mounts, std::string fs,
                 std::vector<std::string> layout_paths)
    : mounts_(std::move(mounts)), fs_(std::move(fs)), layouts_(std::move(layout_paths)) {
  std::sort(layouts_.begin(), layouts_.end());
  for (auto& [m, f] : mounts_)
    while (m.size() > 1 && m.back() == '/') m.pop_back();
}

namespace {
// Node-local places: never the parallel file system.
bool IsLocal(std::string_view p) {
  for (std::string_view pre : {"/tmp", "/var/tmp", "/dev/shm", "/dev", "/run", "/proc", "/sys"})
    if (p.size() >= pre.size() && p.compare(0, pre.size(), pre) == 0 && (p.size() == pre.size() || p[pre.size()] == '/'))
      return true;
  return false;
}
}  // namespace

JobOnFs::Where JobOnFs::Place(std::string_view path) const {
  const std::string p(path);
  if (!mounts_.empty()) {
    const std::string m = MountOf(p, mounts_);
    if (!m.empty()) {
      for (const auto& [mp, f] : mounts_)
        if (mp == m && (fs_.empty() || f == fs_)) return kOnByMount;
      return kOff;  // a listed mount of another file system
    }
  }
  if (std::binary_search(layouts_.begin(), layouts_.end(), p)) return kOnByLayout;
  if (IsLocal(p)) return kOff;
  return kAssumed;
}

bool JobOnFs::OnFs(std::string_view path) const {
  auto it = memo_.find(path);
  if (it == memo_.end()) it = memo_.emplace(std::string(path), Place(path)).first;
  return it->second != kOff;
}

void JobOnFs::Add(std::string_view path, double bytes, double opens, double stats) {
  const bool on = OnFs(path);
  Sums& s = on ? on_ : off_;
  s.bytes += bytes;
  s.opens += opens;
  s.stats += stats;
  if (on && memo_.find(path)->second == kAssumed) assumed_bytes_ += bytes;
}

std::string JobOnFs::basis() const {
  std::string b = !mounts_.empty() ? "the mount table" : !layouts_.empty() ? "the Lustre layouts" : "paths only";
  b += "; node-local paths (/tmp, /dev/shm, ...) and other file systems' mounts excluded";
  if (assumed_bytes_ > 0) b += "; files under no known mount counted as on it";
  return b;
}

CoverageFactors Coverage(const JobOnFs& job, double fs_bytes, double fs_opens, double fs_stats) {
  CoverageFactors c;
  if (fs_bytes > 0) c.bytes = job.bytes() / fs_bytes;
  if (fs_opens > 0) c.opens = job.opens() / fs_opens;
  if (fs_stats > 0) c.stats = job.stats() / fs_stats;
  return c;
}

}  // namespace iosonar::analysis
