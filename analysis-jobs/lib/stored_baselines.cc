#include "analysis-jobs/lib/stored_baselines.h"

#include "core/base/json_kv.h"

#include <fcntl.h>
#include <rapidjson/error/en.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

namespace iosonar::analysis {

void WriteBaselineHead(JsonWriter& w, const BaselineHead& h) {
  KvAll(w, "name", h.name, "computed_at_ns", h.computed_at_ns, "from_ns", h.from_ns, "to_ns", h.to_ns);
}

Status ParseBaselineHead(const rapidjson::Value& d, BaselineHead* h) {
  if (!d.HasMember("name") || !d["name"].IsString()) return Status::Invalid("no \"name\" string");
  h->name = d["name"].GetString();
  for (auto [k, slot] : {std::pair{"computed_at_ns", &h->computed_at_ns}, {"from_ns", &h->from_ns}, {"to_ns", &h->to_ns}}) {
    if (!d.HasMember(k) || !d[k].IsInt64()) return Status::Invalid(std::string("needs an integer \"") + k + "\"");
    *slot = d[k].GetInt64();
  }
  return Status::Ok();
}

Status ParseJsonObjectLine(std::string_view line, rapidjson::Document* d) {
  d->Parse(line.data(), line.size());
  if (d->HasParseError())
    return Status::Invalid(std::string("not JSON: ") + rapidjson::GetParseError_En(d->GetParseError()) + " at offset " +
                           std::to_string(d->GetErrorOffset()));
  if (!d->IsObject()) return Status::Invalid("not a JSON object");
  return Status::Ok();
}

Status AppendBaselineLine(const std::string& path, std::string_view line) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("cannot open " + path, errno);
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      close(fd);
      return Status::FromErrno("cannot write " + path, e);
    }
    off += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Status::FromErrno("cannot write " + path, errno);
  return Status::Ok();
}

Status ForEachBaselineLine(const std::string& path, const std::function<Status(std::string_view line)>& each) {
  std::ifstream in(path);
  if (!in) {
    if (access(path.c_str(), F_OK) != 0) return Status::Ok();  // none stored yet
    return Status::Io("cannot read " + path);
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    if (Status s = each(line); !s.ok()) return Status::Invalid(path + ":" + std::to_string(n) + ": " + s.message());
  }
  if (in.bad()) return Status::Io("cannot read " + path);
  return Status::Ok();
}

Status ReplaceBaselineRows(MysqlConn& c, const std::string& table, const std::string& name,
                           const std::function<Status()>& insert) {
  Status st = c.Transaction([&]() -> Status {
    auto del = c.Exec("DELETE FROM " + table + " WHERE name = ?", {name});
    if (!del.ok()) return del.status();
    return insert();
  });
  if (st.ok()) return st;
  return Status(st.code(), "writing " + table + " (run `iosonar db-migrate` first?): " + st.message());
}

Status BaselineTableError(const std::string& table, const Status& st) {
  return Status(st.code(), "reading " + table + " (run `iosonar db-migrate` first?): " + st.message());
}

}  // namespace iosonar::analysis
