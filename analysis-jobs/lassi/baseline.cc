#include "analysis-jobs/lassi/baseline.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <tuple>

#include "core/base/json.h"
#include "core/base/timeutil.h"

namespace iosonar::lassi {

namespace {
constexpr int64_t kS = 1000000000;

// The op's slot in OpSums by LASSi's name; nullptr if unknown.
std::optional<double>* Slot(OpSums& s, std::string_view op) {
  for (size_t i = 0; i < kOssOps; ++i)
    if (kOssOpNames[i] == op) return &s.oss[i];
  for (size_t i = 0; i < kMdsOps; ++i)
    if (kMdsOpNames[i] == op) return &s.mds[i];
  return nullptr;
}

std::string SqlTime(int64_t ns) {
  std::string s = FormatIsoMillis(ns);  // 2026-11-22T00:00:00.000Z -> 2026-11-22 00:00:00.000
  if (s.size() >= 24) {
    s[10] = ' ';
    s.pop_back();
  }
  return s;
}
}  // namespace

std::string BaselineFileOf(const std::string& store_dir) { return store_dir + "/lassi-baselines.jsonl"; }

std::string BaselineLine(const Baseline& b) {
  std::string out;
  JsonWriter w(&out, 0);
  w.BeginObject();
  w.Kv("name", b.name);
  w.Kv("computed_at_ns", b.computed_at_ns);
  w.Kv("from_ns", b.from_ns);
  w.Kv("to_ns", b.to_ns);
  w.Kv("window_s", b.window_ns / kS);
  w.Key("fs");
  w.BeginArray();
  for (const auto& f : b.fs) {
    w.BeginObject();
    w.Kv("fs", f.fs);
    w.Kv("app_hours", static_cast<int64_t>(f.app_hours));
    w.Key("avg");
    w.BeginObject();
    for (size_t i = 0; i < kOssOps; ++i)
      if (f.avg.oss[i]) {
        w.Key(kOssOpNames[i]);
        w.Double(*f.avg.oss[i]);
      }
    for (size_t i = 0; i < kMdsOps; ++i)
      if (f.avg.mds[i]) {
        w.Key(kMdsOpNames[i]);
        w.Double(*f.avg.mds[i]);
      }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out += '\n';
  return out;
}

Result<Baseline> ParseBaselineLine(std::string_view line) {
  rapidjson::Document d;
  d.Parse(line.data(), line.size());
  if (d.HasParseError())
    return Status::Invalid(std::string("not JSON: ") + rapidjson::GetParseError_En(d.GetParseError()) + " at offset " +
                           std::to_string(d.GetErrorOffset()));
  if (!d.IsObject()) return Status::Invalid("not a JSON object");
  auto i64 = [&](const char* k) -> std::optional<int64_t> {
    if (!d.HasMember(k) || !d[k].IsInt64()) return std::nullopt;
    return d[k].GetInt64();
  };
  Baseline b;
  if (!d.HasMember("name") || !d["name"].IsString()) return Status::Invalid("no \"name\" string");
  b.name = d["name"].GetString();
  auto c = i64("computed_at_ns"), f = i64("from_ns"), t = i64("to_ns"), ws = i64("window_s");
  if (!c || !f || !t || !ws || *ws <= 0) return Status::Invalid("needs integers computed_at_ns, from_ns, to_ns, window_s > 0");
  b.computed_at_ns = *c;
  b.from_ns = *f;
  b.to_ns = *t;
  b.window_ns = *ws * kS;
  if (!d.HasMember("fs") || !d["fs"].IsArray()) return Status::Invalid("no \"fs\" array");
  for (const auto& e : d["fs"].GetArray()) {
    if (!e.IsObject() || !e.HasMember("fs") || !e["fs"].IsString() || !e.HasMember("avg") || !e["avg"].IsObject())
      return Status::Invalid("an \"fs\" entry needs \"fs\" and \"avg\"");
    BaselineFs bf;
    bf.fs = e["fs"].GetString();
    if (e.HasMember("app_hours") && e["app_hours"].IsUint64()) bf.app_hours = e["app_hours"].GetUint64();
    for (auto m = e["avg"].MemberBegin(); m != e["avg"].MemberEnd(); ++m) {
      auto* slot = Slot(bf.avg, m->name.GetString());
      if (!slot) return Status::Invalid(std::string("unknown op '") + m->name.GetString() + "'");
      if (!m->value.IsNumber()) return Status::Invalid(std::string("op '") + m->name.GetString() + "' is not a number");
      *slot = m->value.GetDouble();
    }
    b.fs.push_back(std::move(bf));
  }
  return b;
}

Status AppendBaselineFile(const std::string& path, const Baseline& b) {
  const std::string line = BaselineLine(b);
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

Result<std::vector<Baseline>> ReadBaselineFile(const std::string& path) {
  std::vector<Baseline> out;
  std::ifstream in(path);
  if (!in) {
    if (access(path.c_str(), F_OK) != 0) return out;  // none stored yet
    return Status::Io("cannot read " + path);
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto b = ParseBaselineLine(line);
    if (!b.ok()) return Status::Invalid(path + ":" + std::to_string(n) + ": " + b.status().message());
    b->source = "file " + path;
    out.push_back(std::move(b).value());
  }
  return out;
}

Status WriteBaselineToDb(MysqlConn& c, const Baseline& b) {
  Status st = c.Transaction([&]() -> Status {
    auto del = c.Exec("DELETE FROM lassi_baseline WHERE name = ?", {b.name});
    if (!del.ok()) return del.status();
    for (const auto& f : b.fs) {
      auto put = [&](std::string_view op, const std::optional<double>& v) -> Status {
        if (!v) return Status::Ok();
        auto e = c.Exec(
            "INSERT INTO lassi_baseline (name, fs, op, avg_per_window, app_windows, window_s, history_from, history_to, "
            "computed_at, history_from_ns, history_to_ns, computed_at_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            {b.name, f.fs, std::string(op), *v, static_cast<int64_t>(f.app_hours), b.window_ns / kS, SqlTime(b.from_ns),
             SqlTime(b.to_ns), SqlTime(b.computed_at_ns), b.from_ns, b.to_ns, b.computed_at_ns});
        return e.ok() ? Status::Ok() : e.status();
      };
      for (size_t i = 0; i < kOssOps; ++i)
        if (Status s = put(kOssOpNames[i], f.avg.oss[i]); !s.ok()) return s;
      for (size_t i = 0; i < kMdsOps; ++i)
        if (Status s = put(kMdsOpNames[i], f.avg.mds[i]); !s.ok()) return s;
    }
    return Status::Ok();
  });
  if (st.ok()) return st;
  return Status(st.code(), "writing lassi_baseline (run `iosonar db-migrate` first?): " + st.message());
}

Result<std::vector<Baseline>> ReadBaselinesFromDb(MysqlConn& c) {
  auto rows = c.Query(
      "SELECT name, fs, op, avg_per_window, app_windows, window_s, history_from_ns, history_to_ns, computed_at_ns "
      "FROM lassi_baseline ORDER BY computed_at_ns, name, fs, op");
  if (!rows.ok())
    return Status(rows.status().code(),
                  "reading lassi_baseline (run `iosonar db-migrate` first?): " + rows.status().message());
  std::map<std::string, Baseline> by_name;
  std::vector<std::string> order;
  for (const auto& r : *rows) {
    if (r.size() < 9) continue;
    auto s = [&](size_t i) { return r[i].value_or(""); };
    auto ll = [&](size_t i) { return std::strtoll(s(i).c_str(), nullptr, 10); };
    auto [it, fresh] = by_name.try_emplace(s(0));
    Baseline& b = it->second;
    if (fresh) {
      order.push_back(s(0));
      b.name = s(0);
      b.source = "mysql lassi_baseline";
      b.window_ns = ll(5) * kS;
      b.from_ns = ll(6);
      b.to_ns = ll(7);
      b.computed_at_ns = ll(8);
    }
    BaselineFs* f = nullptr;
    for (auto& x : b.fs)
      if (x.fs == s(1)) f = &x;
    if (!f) {
      b.fs.push_back({s(1), static_cast<uint64_t>(ll(4)), {}});
      f = &b.fs.back();
    }
    if (auto* slot = Slot(f->avg, s(2))) *slot = std::strtod(s(3).c_str(), nullptr);
  }
  std::vector<Baseline> out;
  for (const auto& n : order) out.push_back(std::move(by_name[n]));
  return out;
}

Result<std::optional<Baseline>> SelectBaseline(const std::vector<Baseline>& all, const std::string& name,
                                               int64_t window_ns) {
  if (!name.empty()) {
    for (const auto& b : all)
      if (b.name == name) return std::optional<Baseline>(b);
    std::string known;
    for (const auto& b : all) known += (known.empty() ? "" : ", ") + b.name;
    return Status::NotFound("no LASSi baseline named '" + name + "' (stored: " + (known.empty() ? "none" : known) + ")");
  }
  const Baseline* best = nullptr;
  for (const auto& b : all)
    if (b.window_ns == window_ns && (!best || b.computed_at_ns >= best->computed_at_ns)) best = &b;
  if (!best) return std::optional<Baseline>();
  return std::optional<Baseline>(*best);
}

}  // namespace iosonar::lassi
