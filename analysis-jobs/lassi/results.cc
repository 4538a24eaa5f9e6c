#include "analysis-jobs/lassi/results.h"

#include <cctype>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/results/results.h"
#include "core/base/appendf.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/jobdb/jobdb.h"
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
void Head(JsonWriter& w, int64_t t, DatasetId ds, int64_t stream, int64_t* seq, const std::string& host,
          const char* analysis) {
  analysis::BeginResultRecord(w, t, ds, stream, ++*seq, host);
  w.Kv(field::kResultAnalysis, analysis);
}
}  // namespace

std::string RiskRecords(const LassiResult& r, const std::string& host) {
  const int64_t stream = analysis::ResultStreamId("iosonar.result.risk", {ResultToJson(r, false)});
  int64_t n = 0, *seq = &n;
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
      KvAll(w, field::kResultTarget, target, field::kResultMetric, "lassi_risk",
            field::kResultIntervalNs, r.opt.window_ns);
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

std::string SlowdownRecords(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt, const std::string& host) {
  const int64_t stream = analysis::ResultStreamId("iosonar.result.slowdown", {SlowdownToJson(rows, opt, false)});
  int64_t n = 0, *seq = &n;
  std::string out;
  for (const auto& r : rows) {
    if (!r.host.empty()) continue;  // the per-host rows stay in the JSON
    const std::pair<const char*, std::pair<double, std::optional<double>>> stats[] = {
        {"median", {r.stats.median, r.slowdown_median}}, {"p90", {r.stats.p90, r.slowdown_p90}},
        {"p95", {r.stats.p95, r.slowdown_p95}},          {"p99", {r.stats.p99, r.slowdown_p99}},
        {"mean", {r.stats.mean, r.slowdown_mean}},       {"max", {r.stats.max, r.slowdown_max}}};
    for (const auto& [name, v] : stats) {
      JsonWriter w(&out);
      Head(w, r.start_ns, dataset::kResultSlowdown, stream, seq, host, "slowdown/1");
      KvAll(w, field::kResultFs, r.fs, field::kResultTarget, r.fs, field::kResultOp, r.op,
            field::kResultMetric, std::string("latency_") + name, field::kResultIntervalNs, r.interval_ns,
            field::kResultCount, static_cast<int64_t>(r.stats.count));
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

std::string RunsFs(const LassiResult& r, const std::string& fs) {
  if (fs.empty() && !r.fs_stats.empty()) return r.fs_stats.front().fs;
  return fs;
}

Result<std::vector<Run>> ReadRunsFile(const std::string& path, std::vector<std::string>* skipped) {
  std::vector<Run> runs;
  Status st = ForEachDataLine(path, [&](const std::string& line, int n) {
    std::istringstream in(line);
    std::string job, a, b;
    std::getline(in, job, '\t');
    std::getline(in, a, '\t');
    std::getline(in, b, '\t');
    auto s = ParseIso8601(a), e = ParseIso8601(b);
    if (job.empty() || !s || !e) skipped->push_back(path + ":" + std::to_string(n) + ": expected JOB<TAB>START<TAB>END, skipped");
    else runs.push_back({job, *s, *e});
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return runs;
}

namespace {

constexpr int64_t kS = 1000000000;

// %.3g, or "-" when undefined.
std::string G3(std::optional<double> v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", *v);
  return b;
}

}  // namespace

std::string ResultToTable(const LassiResult& r) {
  std::ostringstream o;
  o << "LASSi risk and ops, " << FormatIsoMillis(r.opt.from_ns) << " to " << FormatIsoMillis(r.opt.to_ns)
    << ", windows of " << r.opt.window_ns / kS << " s, alpha " << r.opt.alpha << " (" << r.records << " records, "
    << r.records_reset << " with a counter reset left out)\n"
    << "avg_fs (per run-hour: LASSi's application is one run) from the baseline " << BaselineDescription(r.baseline) << "\n";
  if (const std::string warn = BaselineWarning(r); !warn.empty()) o << "WARNING: " << warn << "\n";
  std::string fs;
  for (const auto& w : r.fs_windows) {
    if (w.fs != fs) {
      fs = w.fs;
      o << "\nfile system " << fs
        << (w.server_basis ? " (no job_stats: risk of its server windows against their mean)"
                           : " (risk = sum of its runs' risks)")
        << "\n  window start               risk_oss   risk_mds   read_kb_ops write_kb_ops\n";
    }
    char b[256];
    std::snprintf(b, sizeof b, "  %-24s %10s %10s %11s %12s\n", FormatIsoMillis(w.start_ns).c_str(),
                  G3(w.risk_oss).c_str(), G3(w.risk_mds).c_str(), G3(w.read_kb_ops).c_str(), G3(w.write_kb_ops).c_str());
    o << b;
  }
  for (const auto& s : r.fs_stats) {
    o << "\n" << s.fs << ": mean and c_v per " << (s.per_app_hour ? "run window" : "server window")
      << " over " << s.windows << (s.per_app_hour ? " run windows" : " server windows (no job_stats)") << "\n";
    for (const auto& op : s.ops) o << "  " << op.op << " mean " << G3(op.stat.mean) << " c_v " << G3(op.stat.cv) << "\n";
  }
  if (!r.apps.empty()) {
    o << "\napplications (risk: the sum of their runs' risks over the windows; per run: the mean over runs)\n";
    for (const auto& a : r.apps)
      o << "  " << a.fs << "  risk_oss " << G3(a.risk_oss) << "  risk_mds " << G3(a.risk_mds) << "  runs "
        << a.per_run.runs << "  per run: risk_oss " << G3(a.per_run.risk_oss) << " risk_mds " << G3(a.per_run.risk_mds)
        << "  " << a.app << "\n";
  }
  return o.str();
}

std::string CorrelationToText(const RunCorrelation& c) {
  std::ostringstream o;
  auto f3 = [](std::optional<double> v) { return v ? std::to_string(*v) : std::string("undefined"); };
  o << "\nslowdown analysis on " << c.fs << " (" << c.runs.size() << " runs):\n";
  for (const auto& x : c.runs)
    o << "  job " << x.job << " runtime " << x.runtime_s << " s risk_oss " << x.risk_oss << " risk_mds " << x.risk_mds << "\n";
  o << "  runtime vs risk_oss: r = " << f3(c.oss.r) << ", p = " << f3(c.oss.p) << "\n"
    << "  runtime vs risk_mds: r = " << f3(c.mds.r) << ", p = " << f3(c.mds.p) << "\n";
  return o.str();
}

std::string SlowdownToTable(const std::vector<SlowdownRow>& rows) {
  std::string o;
  Appendf(&o, "%-16s %-12s %-8s %6s %-24s %6s %10s %10s %10s %9s %9s %s\n", "fs", "host", "op", "int_s", "start", "n",
          "median_s", "p90_s", "baseline_s", "sd_med", "sd_p90", "baseline from");
  for (const auto& r : rows)
    Appendf(&o, "%-16s %-12s %-8s %6lld %-24s %6zu %10.4g %10.4g %10.4g %9.3g %9.3g %s\n", r.fs.c_str(),
            r.host.empty() ? "(all)" : r.host.c_str(), r.op.c_str(), static_cast<long long>(r.interval_ns / kS),
            FormatIsoMillis(r.start_ns).c_str(), r.stats.count, r.stats.median, r.stats.p90,
            r.baseline_median.value_or(0), r.slowdown_median.value_or(0), r.slowdown_p90.value_or(0),
            r.baseline_kind.c_str());
  return o;
}

namespace {

// Runs write() in a transaction; errors name the table.
Status InTransaction(MysqlConn& c, const char* table, const std::function<Status()>& write) {
  Status st = c.Transaction(write);
  if (st.ok()) return st;
  return Status(st.code(), std::string("writing ") + table + " (run `iosonar db-migrate` first?): " + st.message());
}

}  // namespace

Status WriteRiskToDb(MysqlConn& c, const LassiResult& r) {
  results::lassi_risk::Row row;
  row.window_s = static_cast<uint64_t>(r.opt.window_ns / kS);
  row.alpha = r.opt.alpha;
  row.computed_at = SqlDatetime(NowNs());
  return InTransaction(c, "lassi_risk", [&]() -> Status {
    for (auto [rows, kind] : {std::pair{&r.fs_windows, "fs"}, {&r.app_windows, "app"}, {&r.job_windows, "job"}})
      for (const auto& w : *rows) {
        row.fs = w.fs;
        row.kind = kind;
        row.target = w.target;
        row.window_start = SqlDatetime(w.start_ns);
        row.risk_oss = w.risk_oss;
        row.risk_mds = w.risk_mds;
        row.read_kb_ops = w.read_kb_ops;
        row.write_kb_ops = w.write_kb_ops;
        row.read_kb = w.x.oss[0];
        row.write_kb = w.x.oss[2];
        if (Status st = results::Replace(c, row); !st.ok()) return st;
      }
    return Status::Ok();
  });
}

Status WriteSlowdownToDb(MysqlConn& c, const std::vector<SlowdownRow>& rows) {
  const std::string now = SqlDatetime(NowNs());
  return InTransaction(c, "probe_slowdown", [&]() -> Status {
    for (const auto& r : rows) {
      if (!r.host.empty()) continue;  // the table's key has no host: file-system rows only
      const auto& x = r.stats;
      const results::probe_slowdown::Row row{r.fs, r.op, SqlDatetime(r.start_ns), static_cast<uint64_t>(r.interval_ns / kS),
                                             x.count, x.mean, x.min, x.median, x.p90, x.p95, x.p99, x.max,
                                             r.baseline_median, r.slowdown_median, r.slowdown_p90, now};
      if (Status st = results::Replace(c, row); !st.ok()) return st;
    }
    return Status::Ok();
  });
}

}  // namespace iosonar::lassi
