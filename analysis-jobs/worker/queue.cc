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

}  // namespace

Status AnalysisQueue::EnsureDirs() {
  if (Status s = MakeDir(dir_); !s.ok()) return s;
  return MakeDir(dir_ + "/failed");
}

Status AnalysisQueue::Enqueue(const std::string& job_id, const std::string& cluster) {
  if (!ValidJobId(job_id)) return Status::Invalid("not a job id: '" + job_id + "'");
  if (Status s = EnsureDirs(); !s.ok()) return s;
  static std::atomic<unsigned> seq{0};
  char name[96];
  std::snprintf(name, sizeof name, "/%020lld-%06d-%04u-%s", static_cast<long long>(NowNs()), static_cast<int>(::getpid()),
                seq++ % 10000, job_id.c_str());
  return WriteFile0600(dir_ + name, job_id + "\t" + cluster + "\n");
}

Result<std::vector<QueueItem>> AnalysisQueue::List() {
  if (Status s = EnsureDirs(); !s.ok()) return s;
  std::vector<std::string> names;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return Status::Io("cannot read " + dir_ + ": " + std::strerror(errno));
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.empty() || n[0] == '.' || n == "failed" || (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0)) continue;
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
    const size_t tab = line.find('\t');
    it.job_id = line.substr(0, tab);
    if (tab != std::string::npos) it.cluster = line.substr(tab + 1);
    if (!ValidJobId(it.job_id)) {
      (void)Fail(it, "unreadable queue entry");
      continue;
    }
    out.push_back(it);
  }
  return out;
}

Status AnalysisQueue::Done(const QueueItem& it) {
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
