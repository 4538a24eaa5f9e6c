#include "analysis-jobs/lassi/probe_baseline.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "core/results/results.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/jobdb/jobdb.h"

namespace iosonar::lassi {

static const std::string kEmpty;

const ProbeMedian* ProbeBaseline::Find(std::string_view fs, std::string_view host, std::string_view op) const {
  for (const auto& m : medians)
    if (m.fs == fs && m.host == host && m.op == op) return &m;
  return nullptr;
}

ProbeBaseline ComputeProbeBaseline(const std::vector<ProbeSample>& samples, int64_t from_ns, int64_t to_ns,
                                   double cache_floor_s, std::vector<std::string>* all_cached) {
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<std::vector<double>, uint64_t>> by;
  for (const auto& s : samples) {
    if (s.t_ns < from_ns || s.t_ns >= to_ns) continue;
    const bool cached = CacheServed(s, cache_floor_s);
    for (const std::string* h : {&kEmpty, s.host.empty() ? nullptr : &s.host}) {
      if (!h) continue;
      auto& [xs, n] = by[{s.fs, *h, s.op}];
      if (cached) ++n;
      else xs.push_back(s.latency_s);
    }
  }
  ProbeBaseline b;
  b.from_ns = from_ns;
  b.to_ns = to_ns;
  for (auto& [k, v] : by) {
    auto& [xs, cached] = v;
    if (xs.empty()) {
      if (all_cached) all_cached->push_back(std::get<0>(k) + " " + std::get<1>(k) + " " + std::get<2>(k));
      continue;
    }
    std::sort(xs.begin(), xs.end());
    b.medians.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), QuantileType7(xs, 0.5), xs.size(), cached});
  }
  return b;
}

std::string ProbeBaselineFileOf(const std::string& store_dir) { return store_dir + "/probe-baselines.jsonl"; }

std::string ProbeBaselineLine(const ProbeBaseline& b) {
  std::string out;
  JsonWriter w(&out, 0);
  w.BeginObject();
  analysis::WriteBaselineHead(w, b);
  w.Key("medians");
  w.BeginArray();
  for (const auto& m : b.medians) {
    w.BeginObject();
    KvAll(w, "fs", m.fs, "host", m.host, "op", m.op);
    w.Key("median_s");
    w.Double(m.median_s);
    w.Kv("samples", static_cast<int64_t>(m.samples));
    if (m.cache_served) w.Kv("cache_served", static_cast<int64_t>(m.cache_served));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out += '\n';
  return out;
}

Result<ProbeBaseline> ParseProbeBaselineLine(std::string_view line) {
  rapidjson::Document d;
  if (Status s = analysis::ParseJsonObjectLine(line, &d); !s.ok()) return s;
  ProbeBaseline b;
  if (Status s = analysis::ParseBaselineHead(d, &b); !s.ok()) return s;
  if (!d.HasMember("medians") || !d["medians"].IsArray()) return Status::Invalid("no \"medians\" array");
  size_t i = 0;
  for (const auto& e : d["medians"].GetArray()) {
    const std::string where = "medians[" + std::to_string(i++) + "]";
    if (!e.IsObject()) return Status::Invalid(where + " is not an object");
    ProbeMedian m;
    for (auto [k, slot] : {std::pair{"fs", &m.fs}, {"host", &m.host}, {"op", &m.op}}) {
      if (!e.HasMember(k) || !e[k].IsString()) return Status::Invalid(where + ": no \"" + k + "\" string");
      *slot = e[k].GetString();
    }
    if (!e.HasMember("median_s") || !e["median_s"].IsNumber() || e["median_s"].GetDouble() < 0)
      return Status::Invalid(where + ": \"median_s\" must be a number >= 0");
    m.median_s = e["median_s"].GetDouble();
    if (!e.HasMember("samples") || !e["samples"].IsUint64() || e["samples"].GetUint64() == 0)
      return Status::Invalid(where + ": \"samples\" must be an integer > 0");
    m.samples = e["samples"].GetUint64();
    if (e.HasMember("cache_served")) {
      if (!e["cache_served"].IsUint64()) return Status::Invalid(where + ": \"cache_served\" must be an integer >= 0");
      m.cache_served = e["cache_served"].GetUint64();
    }
    b.medians.push_back(std::move(m));
  }
  return b;
}

Status AppendProbeBaselineFile(const std::string& path, const ProbeBaseline& b) {
  return analysis::AppendBaselineLine(path, ProbeBaselineLine(b));
}

Result<std::vector<ProbeBaseline>> ReadProbeBaselineFile(const std::string& path) {
  return analysis::ReadBaselineFileWith<ProbeBaseline>(path, ParseProbeBaselineLine);
}

Status WriteProbeBaselineToDb(MysqlConn& c, const ProbeBaseline& b) {
  return analysis::ReplaceBaselineRows(c, "probe_baseline", b.name, [&]() -> Status {
    for (const auto& m : b.medians) {
      const results::probe_baseline::Row row{b.name, m.fs, m.host, m.op, m.median_s, m.samples, m.cache_served,
                                             SqlDatetime(b.from_ns), SqlDatetime(b.to_ns), SqlDatetime(b.computed_at_ns),
                                             b.from_ns, b.to_ns, b.computed_at_ns};
      if (Status st = results::Insert(c, row); !st.ok()) return st;
    }
    return Status::Ok();
  });
}

Result<std::vector<ProbeBaseline>> ReadProbeBaselinesFromDb(MysqlConn& c) {
  auto rows = results::Select<results::probe_baseline::Row>(
      c, "ORDER BY computed_at_ns, name, fs, host, op", {},
      {"name", "fs", "host", "op", "median_s", "samples", "history_from_ns", "history_to_ns", "computed_at_ns",
       "cache_served"});
  if (!rows.ok()) return analysis::BaselineTableError("probe_baseline", rows.status());
  std::map<std::string, size_t> index;
  std::vector<ProbeBaseline> out;
  for (const auto& r : *rows) {
    auto [it, fresh] = index.try_emplace(r.name, out.size());
    if (fresh) {
      out.emplace_back();
      ProbeBaseline& b = out.back();
      b.name = r.name;
      b.source = "mysql probe_baseline";
      b.from_ns = r.history_from_ns;
      b.to_ns = r.history_to_ns;
      b.computed_at_ns = r.computed_at_ns;
    }
    out[it->second].medians.push_back({r.fs, r.host, r.op, r.median_s, r.samples, r.cache_served});
  }
  return out;
}

Result<std::optional<ProbeBaseline>> SelectProbeBaseline(const std::vector<ProbeBaseline>& all, const std::string& name) {
  return analysis::SelectStoredBaseline(all, name, "probe baseline", [](const ProbeBaseline&) { return true; });
}

std::string ProbeBaselineDescription(const ProbeBaseline& b) {
  size_t fs_rows = 0;
  for (const auto& m : b.medians) fs_rows += m.host.empty();
  return "'" + b.name + "' from " + b.source + ": " + std::to_string(fs_rows) + " file-system medians and " +
         std::to_string(b.medians.size() - fs_rows) + " per host over " + FormatIsoMillis(b.from_ns) + " - " +
         FormatIsoMillis(b.to_ns) + ", computed " + FormatIsoMillis(b.computed_at_ns);
}

}  // namespace iosonar::lassi
