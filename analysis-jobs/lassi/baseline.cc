#include "analysis-jobs/lassi/baseline.h"

#include <cstdlib>
#include <map>

#include "analysis-jobs/lib/stored_baselines.h"
#include "core/base/json.h"
#include "core/jobdb/jobdb.h"

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

}  // namespace

std::string BaselineFileOf(const std::string& store_dir) { return store_dir + "/lassi-baselines.jsonl"; }

std::string BaselineLine(const Baseline& b) {
  std::string out;
  JsonWriter w(&out, 0);
  w.BeginObject();
  analysis::WriteBaselineHead(w, {b.name, b.source, b.computed_at_ns, b.from_ns, b.to_ns});
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
  if (Status s = analysis::ParseJsonObjectLine(line, &d); !s.ok()) return s;
  analysis::BaselineHead h;
  if (Status s = analysis::ParseBaselineHead(d, &h); !s.ok()) return s;
  Baseline b;
  b.name = h.name;
  b.computed_at_ns = h.computed_at_ns;
  b.from_ns = h.from_ns;
  b.to_ns = h.to_ns;
  if (!d.HasMember("window_s") || !d["window_s"].IsInt64() || d["window_s"].GetInt64() <= 0)
    return Status::Invalid("needs an integer \"window_s\" > 0");
  b.window_ns = d["window_s"].GetInt64() * kS;
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
  return analysis::AppendBaselineLine(path, BaselineLine(b));
}

Result<std::vector<Baseline>> ReadBaselineFile(const std::string& path) {
  return analysis::ReadBaselineFileWith<Baseline>(path, ParseBaselineLine);
}

Status WriteBaselineToDb(MysqlConn& c, const Baseline& b) {
  return analysis::ReplaceBaselineRows(c, "lassi_baseline", b.name, [&]() -> Status {
    for (const auto& f : b.fs) {
      auto put = [&](std::string_view op, const std::optional<double>& v) -> Status {
        if (!v) return Status::Ok();
        auto e = c.Exec(
            "INSERT INTO lassi_baseline (name, fs, op, avg_per_window, app_windows, window_s, history_from, history_to, "
            "computed_at, history_from_ns, history_to_ns, computed_at_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            {b.name, f.fs, std::string(op), *v, static_cast<int64_t>(f.app_hours), b.window_ns / kS, SqlDatetime(b.from_ns),
             SqlDatetime(b.to_ns), SqlDatetime(b.computed_at_ns), b.from_ns, b.to_ns, b.computed_at_ns});
        return e.ok() ? Status::Ok() : e.status();
      };
      for (size_t i = 0; i < kOssOps; ++i)
        if (Status s = put(kOssOpNames[i], f.avg.oss[i]); !s.ok()) return s;
      for (size_t i = 0; i < kMdsOps; ++i)
        if (Status s = put(kMdsOpNames[i], f.avg.mds[i]); !s.ok()) return s;
    }
    return Status::Ok();
  });
}

Result<std::vector<Baseline>> ReadBaselinesFromDb(MysqlConn& c) {
  auto rows = c.Query(
      "SELECT name, fs, op, avg_per_window, app_windows, window_s, history_from_ns, history_to_ns, computed_at_ns "
      "FROM lassi_baseline ORDER BY computed_at_ns, name, fs, op");
  if (!rows.ok()) return analysis::BaselineTableError("lassi_baseline", rows.status());
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
  return analysis::SelectStoredBaseline(all, name, "LASSi baseline",
                                        [&](const Baseline& b) { return b.window_ns == window_ns; });
}

}  // namespace iosonar::lassi
