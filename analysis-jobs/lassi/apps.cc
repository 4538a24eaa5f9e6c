#include "analysis-jobs/lassi/apps.h"

#include <cstdlib>
#include <fstream>
#include <utility>

namespace iosonar::lassi {

Status ForEachDataLine(const std::string& path, const std::function<Status(const std::string& line, int n)>& fn) {
  std::ifstream f(path);
  if (!f) return Status::Io("cannot read " + path);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    if (Status s = fn(line, n); !s.ok()) return s;
  }
  return Status::Ok();
}

Status AppSource::LoadFile(const std::string& path) {
  return ForEachDataLine(path, [&](const std::string& line, int n) {
    auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0)
      return Status::Invalid(path + ":" + std::to_string(n) + ": expected JOB_ID<TAB>COMMAND LINE");
    file_[line.substr(0, tab)] = ApplicationKey(line.substr(tab + 1), "");
    return Status::Ok();
  });
}

void AppSource::UseJobDb(JobDb* db, std::string cluster) {
  db_ = db;
  cluster_ = std::move(cluster);
}

std::optional<std::pair<int64_t, int64_t>> AppSource::RunOf(std::string_view job) const {
  if (!db_) return std::nullopt;
  const std::string j(job);
  char* end = nullptr;
  const unsigned long long id = std::strtoull(j.c_str(), &end, 10);
  if (j.empty() || *end != '\0') return std::nullopt;
  std::string cl = cluster_;
  if (cl.empty()) {
    auto cls = db_->ClustersOf(id);
    if (cls.ok() && cls->size() == 1) cl = cls->front();
  }
  if (cl.empty()) return std::nullopt;
  auto g = db_->Get(cl, id);
  if (!g.ok() || !g.value() || !g.value()->start_ns || !g.value()->end_ns) return std::nullopt;
  return std::pair<int64_t, int64_t>{*g.value()->start_ns, *g.value()->end_ns};
}

std::string AppSource::Of(std::string_view job) const {
  if (auto it = file_.find(job); it != file_.end()) return it->second;
  if (!db_) return "";
  const std::string j(job);
  char* end = nullptr;
  const unsigned long long id = std::strtoull(j.c_str(), &end, 10);
  if (j.empty() || *end != '\0') return "";
  std::string cl = cluster_;
  if (cl.empty()) {
    auto cls = db_->ClustersOf(id);
    if (cls.ok() && cls->size() == 1) cl = cls->front();
  }
  if (cl.empty()) return "";
  auto g = db_->Get(cl, id);
  if (g.ok() && g.value()) return ApplicationKeyOf(*g.value());  // jobs.app_key, as written
  return "";
}

}  // namespace iosonar::lassi
