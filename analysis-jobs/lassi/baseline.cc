#include "analysis-jobs/lassi/baseline.h"

#include <cstdlib>
#include <map>

#include "core/results/results.h"
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
  BaselineFsJson(w, b.fs, true);
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
  results::lassi_baseline::Row row;
  row.name = b.name;
  row.window_s = static_cast<uint64_t>(b.window_ns / kS);
  row.history_from = SqlDatetime(b.from_ns);
  row.history_to = SqlDatetime(b.to_ns);
  row.computed_at = SqlDatetime(b.computed_at_ns);
  row.history_from_ns = b.from_ns;
  row.history_to_ns = b.to_ns;
  row.computed_at_ns = b.computed_at_ns;
  return analysis::ReplaceBaselineRows(c, "lassi_baseline", b.name, [&]() -> Status {
    for (const auto& f : b.fs) {
      row.fs = f.fs;
      row.app_windows = f.app_hours;
      auto put = [&](std::string_view op, const std::optional<double>& v) -> Status {
        if (!v) return Status::Ok();
        row.op = op;
        row.avg_per_window = *v;
        return results::Insert(c, row);
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
  auto rows = results::Select<results::lassi_baseline::Row>(
      c, "ORDER BY computed_at_ns, name, fs, op", {},
      {"name", "fs", "op", "avg_per_window", "app_windows", "window_s", "history_from_ns", "history_to_ns",
       "computed_at_ns"});
  if (!rows.ok()) return analysis::BaselineTableError("lassi_baseline", rows.status());
  std::map<std::string, Baseline> by_name;
  std::vector<std::string> order;
  for (const auto& r : *rows) {
    auto [it, fresh] = by_name.try_emplace(r.name);
    Baseline& b = it->second;
    if (fresh) {
      order.push_back(r.name);
      b.name = r.name;
      b.source = "mysql lassi_baseline";
      b.window_ns = static_cast<int64_t>(r.window_s) * kS;
      b.from_ns = r.history_from_ns;
      b.to_ns = r.history_to_ns;
      b.computed_at_ns = r.computed_at_ns;
    }
    BaselineFs* f = nullptr;
    for (auto& x : b.fs)
      if (x.fs == r.fs) f = &x;
    if (!f) {
      b.fs.push_back({r.fs, r.app_windows, {}});
      f = &b.fs.back();
    }
    if (auto* slot = Slot(f->avg, r.op)) *slot = r.avg_per_window;
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
