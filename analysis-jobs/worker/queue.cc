#include "analysis-jobs/worker/queue.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/timeutil.h"

namespace iosonar::worker {
namespace {

Status MakeDir(const std::string& d) {
  if (::mkdir(d.c_str(), 0700) == 0 || errno == EEXIST) return Status::Ok();
  return Status::Io("cannot create " + d + ": " + std::strerror(errno));
}

Status WriteFile0600(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    return Status::Io("cannot write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::Io("cannot rename " + tmp + ": " + std::strerror(errno));
  return Status::Ok();
}

bool ValidJobId(const std::string& j) {
  return !j.empty() && j.size() <= 64 &&
         std::all_of(j.begin(), j.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; });
}

constexpr int64_t kMarkerKeepNs = int64_t{30} * 86400 * 1000000000;

bool PlainName(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; });
}

// The entry's first line: JOB TAB CLUSTER [TAB "once"].
bool ParseEntry(const std::string& line, QueueItem* it) {
  const size_t tab = line.find('\t');
  it->job_id = line.substr(0, tab);
  if (tab != std::string::npos) {
    std::string rest = line.substr(tab + 1);
    const size_t t2 = rest.find('\t');
    it->cluster = rest.substr(0, t2);
    it->once = t2 != std::string::npos && rest.substr(t2 + 1) == "once";
  }
  return ValidJobId(it->job_id);
}

}  // namespace

Status AnalysisQueue::EnsureDirs() {
  if (Status s = MakeDir(dir_); !s.ok()) return s;
  if (Status s = MakeDir(dir_ + "/done"); !s.ok()) return s;
  return MakeDir(dir_ + "/failed");
}

// done/CLUSTER@JOB; a cluster name of other characters is written in hex.
std::string AnalysisQueue::MarkerPath(const std::string& job_id, const std::string& cluster) const {
  std::string c;
  if (PlainName(cluster)) {
    c = cluster;
  } else {
    static const char kHex[] = "0123456789abcdef";
    c = "x";
    for (unsigned char ch : cluster) c += {kHex[ch >> 4], kHex[ch & 15]};
  }
  return dir_ + "/done/" + c + "@" + job_id;
}

bool AnalysisQueue::Analysed(const QueueItem& it) const {
  struct stat st {};
  return ::lstat(MarkerPath(it.job_id, it.cluster).c_str(), &st) == 0;
}

// Whether an entry for it.job_id and it.cluster is queued. Only entries whose
// name ends in "-JOB" are read; nothing is moved or removed (that is List's).
bool AnalysisQueue::Pending(const QueueItem& it) const {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return false;
  const std::string tail = "-" + it.job_id;
  bool found = false;
  while (!found) {
    const dirent* e = ::readdir(d);
    if (!e) break;
    const std::string n = e->d_name;
    if (n.size() <= tail.size() || n.compare(n.size() - tail.size(), tail.size(), tail) != 0) continue;
    std::ifstream f(dir_ + "/" + n);
    std::string line;
    QueueItem q;
    found = std::getline(f, line) && ParseEntry(line, &q) && q.job_id == it.job_id && q.cluster == it.cluster;
  }
  ::closedir(d);
  return found;
}

Status AnalysisQueue::Enqueue(const std::string& job_id, const std::string& cluster, bool once, bool* queued) {
  if (queued) *queued = false;
  if (!ValidJobId(job_id)) return Status::Invalid("not a job id: '" + job_id + "'");
  if (cluster.find_first_of("\t\n") != std::string::npos) return Status::Invalid("cluster name with a tab or newline");
  if (Status s = EnsureDirs(); !s.ok()) return s;
  if (once) {
    QueueItem key;
    key.job_id = job_id;
    key.cluster = cluster;
    if (Analysed(key) || Pending(key)) return Status::Ok();
  }
  static std::atomic<unsigned> seq{0};
  char name[96];
  std::snprintf(name, sizeof name, "/%020lld-%06d-%04u-%s", static_cast<long long>(NowNs()), static_cast<int>(::getpid()),
                seq++ % 10000, job_id.c_str());
  Status w = WriteFile0600(dir_ + name, job_id + "\t" + cluster + (once ? "\tonce" : "") + "\n");
  if (w.ok() && queued) *queued = true;
  return w;
}

Result<std::vector<QueueItem>> AnalysisQueue::List() {
  if (Status s = EnsureDirs(); !s.ok()) return s;
  std::vector<std::string> names;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return Status::Io("cannot read " + dir_ + ": " + std::strerror(errno));
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.empty() || n[0] == '.' || n == "failed" || n == "done" || (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0)) continue;
    names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<QueueItem> out;
  for (const auto& n : names) {
    QueueItem it;
    it.path = dir_ + "/" + n;
    std::ifstream f(it.path);
    std::string line;
    std::getline(f, line);
    if (!ParseEntry(line, &it)) {
      (void)Fail(it, "unreadable queue entry");
      continue;
    }
    out.push_back(it);
  }
  // Markers of jobs analysed more than 30 days ago: a late duplicate is not expected any more.
  if (DIR* dd = ::opendir((dir_ + "/done").c_str())) {
    const int64_t now = NowNs();
    while (dirent* e = ::readdir(dd)) {
      if (e->d_name[0] == '.') continue;
      const std::string p = dir_ + "/done/" + e->d_name;
      struct stat st {};
      if (::lstat(p.c_str(), &st) == 0 && now - static_cast<int64_t>(st.st_mtime) * 1000000000 > kMarkerKeepNs)
        ::unlink(p.c_str());
    }
    ::closedir(dd);
  }
  return out;
}

Status AnalysisQueue::Done(const QueueItem& it, bool analysed) {
  if (analysed)
    if (Status s = WriteFile0600(MarkerPath(it.job_id, it.cluster), std::to_string(NowNs()) + "\n"); !s.ok()) return s;
  if (::unlink(it.path.c_str()) != 0 && errno != ENOENT) return Status::Io("cannot remove " + it.path + ": " + std::strerror(errno));
  return Status::Ok();
}

Status AnalysisQueue::Fail(const QueueItem& it, const std::string& reason) {
  const std::string base = it.path.substr(it.path.rfind('/') + 1);
  const std::string to = dir_ + "/failed/" + base;
  if (::rename(it.path.c_str(), to.c_str()) != 0) return Status::Io("cannot move " + it.path + ": " + std::strerror(errno));
  return WriteFile0600(to + ".reason", reason + "\n");
}

}  // namespace iosonar::worker
