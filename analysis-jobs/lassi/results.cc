#include "analysis-jobs/lassi/results.h"

#include <cctype>
#include <charconv>

#include "analysis-jobs/lib/result_record.h"
#include "core/base/json.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::lassi {

std::optional<int64_t> ParseDuration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t mult = 1;
  switch (s.back()) {
    case 's': mult = 1; s.remove_suffix(1); break;
    case 'm': mult = 60; s.remove_suffix(1); break;
    case 'h': mult = 3600; s.remove_suffix(1); break;
    case 'd': mult = 86400; s.remove_suffix(1); break;
    default: break;
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0 || v > 400LL * 86400 / mult) return std::nullopt;
  return v * mult * 1000000000LL;
}

std::optional<int64_t> ParseDay(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
  return ParseIso8601(std::string(s) + "T00:00:00Z");
}

namespace {
void Head(JsonWriter& w, int64_t t, DatasetId ds, uint64_t stream, int64_t* seq, const std::string& host,
          const char* analysis) {
  analysis::BeginResultRecord(w, t, ds, static_cast<int64_t>(stream), ++*seq, host);
  w.Kv(field::kResultAnalysis, analysis);
}
}  // namespace

std::string RiskRecords(const LassiResult& r, uint64_t stream, int64_t* seq, const std::string& host) {
  std::string out;
  auto rows = [&](const std::vector<WindowRow>& v, const char* kind) {
    for (const auto& x : v) {
      JsonWriter w(&out);
      Head(w, x.start_ns, dataset::kResultRisk, stream, seq, host, "lassi/1");
      w.Kv(field::kResultFs, x.fs);
      std::string target = x.fs;
      if (std::string_view(kind) == "app") {
        w.Kv(field::kResultApp, x.target);
        target = "app:" + x.target;
      } else if (std::string_view(kind) == "job") {
        w.Kv(field::kJobId, x.target);
        target = "job:" + x.target;
      }
      w.Kv(field::kResultTarget, target);
      w.Kv(field::kResultMetric, "lassi_risk");
      w.Kv(field::kResultIntervalNs, r.opt.window_ns);
      w.Key(field::kResultRisk);
      w.Double(x.risk_oss + x.risk_mds);
      w.Key(field::kResultRiskOss);
      w.Double(x.risk_oss);
      w.Key(field::kResultRiskMds);
      w.Double(x.risk_mds);
      if (x.read_kb_ops) {
        w.Key(field::kResultReadKbOps);
        w.Double(*x.read_kb_ops);
      }
      if (x.write_kb_ops) {
        w.Key(field::kResultWriteKbOps);
        w.Double(*x.write_kb_ops);
      }
      w.EndObject();
      out += '\n';
    }
  };
  rows(r.fs_windows, "fs");
  rows(r.app_windows, "app");
  rows(r.job_windows, "job");
  return out;
}

std::string SlowdownRecords(const std::vector<SlowdownRow>& rows, uint64_t stream, int64_t* seq,
                            const std::string& host) {
  std::string out;
  for (const auto& r : rows) {
    const std::pair<const char*, std::pair<double, std::optional<double>>> stats[] = {
        {"median", {r.stats.median, r.slowdown_median}}, {"p90", {r.stats.p90, r.slowdown_p90}},
        {"p95", {r.stats.p95, r.slowdown_p95}},          {"p99", {r.stats.p99, r.slowdown_p99}},
        {"mean", {r.stats.mean, r.slowdown_mean}},       {"max", {r.stats.max, r.slowdown_max}}};
    for (const auto& [name, v] : stats) {
      JsonWriter w(&out);
      Head(w, r.start_ns, dataset::kResultSlowdown, stream, seq, host, "slowdown/1");
      w.Kv(field::kResultFs, r.fs);
      w.Kv(field::kResultTarget, r.fs);
      w.Kv(field::kResultOp, r.op);
      w.Kv(field::kResultMetric, std::string("latency_") + name);
      w.Kv(field::kResultIntervalNs, r.interval_ns);
      w.Kv(field::kResultCount, static_cast<int64_t>(r.stats.count));
      w.Key(field::kResultObserved);
      w.Double(v.first);
      if (r.baseline_median) {
        w.Key(field::kResultBaseline);
        w.Double(*r.baseline_median);
      }
      if (v.second) {
        w.Key(field::kResultSlowdown);
        w.Double(*v.second);
      }
      w.EndObject();
      out += '\n';
    }
  }
  return out;
}

RunCorrelation CorrelateRuns(const LassiResult& r, const std::string& fs, const std::vector<Run>& runs) {
  RunCorrelation c;
  c.fs = fs;
  const int64_t win = r.opt.window_ns;
  std::vector<double> rt, ro, rm;
  for (const auto& run : runs) {
    if (run.end_ns <= run.start_ns) continue;
    RunRisk x;
    x.job = run.job;
    x.runtime_s = static_cast<double>(run.end_ns - run.start_ns) / 1e9;
    for (const auto& w : r.fs_windows)
      if (w.fs == fs && w.start_ns < run.end_ns && w.start_ns + win > run.start_ns) {
        x.risk_oss += w.risk_oss;
        x.risk_mds += w.risk_mds;
      }
    rt.push_back(x.runtime_s);
    ro.push_back(x.risk_oss);
    rm.push_back(x.risk_mds);
    c.runs.push_back(std::move(x));
  }
  c.oss = ComputePearson(rt, ro);
  c.mds = ComputePearson(rt, rm);
  return c;
}

}  // namespace iosonar::lassi
