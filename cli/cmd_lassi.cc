// `iosonar lassi`, `iosonar slowdown`, `iosonar report` and
// `iosonar lmt-import` (analysis-jobs/lassi, analysis-jobs/report; docs/lassi.md).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/records/fields.h"
#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/store/es_store.h"
#include "core/jobdb/jobdb.h"
#include "core/jobdb/mysql.h"
#include "core/records/record.h"
#include "core/transport/sink.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/lassi_store.h"
#include "analysis-jobs/lassi/lmt_import.h"
#include "analysis-jobs/lassi/results.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "analysis-jobs/report/report.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

constexpr int64_t kS = 1000000000;

std::string HostName() {
  char b[256] = {};
  if (gethostname(b, sizeof b - 1) != 0) return "localhost";
  return b;
}

uint64_t NewStream() {
  return static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(getpid()) << 40);
}

// Common options of lassi/slowdown/report.
struct RangeOpts {
  std::string day, from, to;
  int64_t from_ns = 0, to_ns = 0;
  std::string Parse() {
    if (!day.empty()) {
      auto d = lassi::ParseDay(day);
      if (!d) return "--day must be YYYY-MM-DD, not '" + day + "'";
      from_ns = *d;
      to_ns = *d + 86400 * kS;
    }
    if (!from.empty()) {
      auto f = ParseIso8601(from);
      if (!f) return "--from: not an ISO 8601 time: '" + from + "'";
      from_ns = *f;
    }
    if (!to.empty()) {
      auto t = ParseIso8601(to);
      if (!t) return "--to: not an ISO 8601 time: '" + to + "'";
      to_ns = *t;
    }
    if (day.empty() && (from.empty() || to.empty())) return "give --day D or --from T --to T";
    if (to_ns <= from_ns) return "--to must be after --from";
    return "";
  }
};

struct Usage {
  const char* name;
  int operator()(const std::string& msg) const { return UsageError(name, msg); }
};

bool ParseArgs(const char* name, int argc, char** argv, po::options_description& desc, po::variables_map& vm,
               int* rc) {
  const int r = ParseCommandLine(name, argc, argv, desc, &vm);
  if (r >= 0) *rc = r;  // stop with this exit status; else *rc stays as the caller set it
  return r < 0;
}

Result<std::unique_ptr<Store>> OpenStoreOrSay(const char* name, const std::string& where) {
  auto s = OpenStoreAt(where);
  if (!s.ok())
    std::cerr << "iosonar " << name << ": "
              << (s.status().code() == Code::kNotFound ? s.status().message() : s.status().ToString()) << "\n";
  return s;
}

// Applications: job_id<TAB>command line file, and/or the job database.
struct AppSource {
  std::map<std::string, std::string> file;
  std::unique_ptr<JobDb> db;
  std::string cluster;
  std::string Of(std::string_view job) {
    auto it = file.find(std::string(job));
    if (it != file.end()) return it->second;
    if (db) {
      char* end = nullptr;
      std::string j(job);
      const unsigned long long id = std::strtoull(j.c_str(), &end, 10);
      if (!j.empty() && *end == '\0') {
        std::string cl = cluster;
        if (cl.empty()) {
          auto cls = db->ClustersOf(id);
          if (cls.ok() && cls->size() == 1) cl = cls->front();
        }
        if (!cl.empty()) {
          auto g = db->Get(cl, id);
          if (g.ok() && g.value() && g.value()->command) return *g.value()->command;
        }
      }
    }
    return "";
  }
};

Status LoadAppsFile(const std::string& path, std::map<std::string, std::string>* out) {
  std::ifstream f(path);
  if (!f) return Status::Io("cannot read " + path);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0)
      return Status::Invalid(path + ":" + std::to_string(n) + ": expected JOB_ID<TAB>COMMAND LINE");
    (*out)[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return Status::Ok();
}

Status ShipRecords(const std::string& output, const std::string& lines) {
  if (output.empty() || lines.empty()) return Status::Ok();
  auto sink = OpenSink(output, SinkOptions{});
  if (!sink.ok()) return sink.status();
  uint64_t n = 0;
  for (char c : lines) n += c == '\n';
  Status st = sink.value()->Send(lines, n);
  if (!st.ok()) return st;
  return sink.value()->Flush();
}

Status WriteFileText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::Io("cannot write " + path);
  return Status::Ok();
}

// The LASSi computation every command shares.
struct LassiArgs {
  double alpha = 2;
  std::string window = "1h", history, apps_file, mysql, cluster;
  int scan_threads = 1;
  void Add(po::options_description& d) {
    d.add_options()("scan-threads", po::value(&scan_threads)->default_value(1)->value_name("N"),
                    "1, or 2: scan oss+mds and job_stats on two store handles in parallel")  //
        ("alpha", po::value(&alpha)->default_value(2.0, "2")->value_name("A"), "LASSi's scaling factor alpha")  //
        ("window", po::value(&window)->default_value("1h")->value_name("DUR"),
         "window: 1h (default), 10m, 3m, ...; shorter than 3 min only for short captures (e.g. 30s for 5 min of LMT)")  //
        ("history", po::value(&history)->value_name("DUR"),
         "averages over this much time before --from as well (default: the analysed range only)")  //
        ("apps", po::value(&apps_file)->value_name("FILE"), "job id<TAB>command line, one a line (applications)")  //
        ("mysql", po::value(&mysql)->value_name("URL"), "job database: command lines of the jobs (applications)")  //
        ("cluster", po::value(&cluster)->value_name("NAME"), "cluster of the jobs in the job database");
  }
};

int ComputeLassi(const char* name, const LassiArgs& a, const RangeOpts& range, const std::string& where,
                 AppSource* apps, lassi::LassiResult* out) {
  auto win = lassi::ParseDuration(a.window);
  if (!win) return Usage{name}("--window: not a duration: '" + a.window + "' (e.g. 1h, 10m, 30s)");
  int64_t hist = 0;
  if (!a.history.empty()) {
    auto h = lassi::ParseDuration(a.history);
    if (!h) return Usage{name}("--history: not a duration: '" + a.history + "'");
    hist = *h;
  }
  if (!(a.alpha > 0)) return Usage{name}("--alpha must be > 0");
  if (!a.apps_file.empty()) {
    Status st = LoadAppsFile(a.apps_file, &apps->file);
    if (!st.ok()) {
      std::cerr << "iosonar " << name << ": " << st.ToString() << "\n";
      return 1;
    }
  }
  const std::string mysql_url = ResolveSetting(a.mysql, "IOSONAR_MYSQL", "mysql");
  if (!mysql_url.empty()) {
    auto db = JobDb::Open(mysql_url);
    if (!db.ok()) {
      std::cerr << "iosonar " << name << ": " << (a.mysql.empty() ? "warning: " : "") << "job database: "
                << db.status().ToString() << "\n";
      if (!a.mysql.empty()) return 1;
    } else {
      apps->db = std::move(db).value();
      apps->cluster = a.cluster;
    }
  }
  lassi::Options o;
  o.alpha = a.alpha;
  o.window_ns = *win;
  o.from_ns = range.from_ns;
  o.to_ns = range.to_ns;
  o.history_from_ns = range.from_ns - hist;
  lassi::Accumulator acc(o);
  if (a.scan_threads != 1 && a.scan_threads != 2) return Usage{name}("--scan-threads must be 1 or 2");
  auto app_of = [&](std::string_view job) { return apps->Of(job); };
  Status st;
  if (a.scan_threads == 2) {  // oss+mds | job_stats on two store handles
    st = lassi::FeedFromStoreParallel([&] { return OpenStoreAt(where); }, acc, app_of);
  } else {
    auto store = OpenStoreAt(where);
    st = store.ok() ? lassi::FeedFromStore(*store.value(), acc, app_of) : store.status();
  }
  if (!st.ok()) {
    std::cerr << "iosonar " << name << ": " << st.ToString() << "\n";
    return 1;
  }
  *out = acc.Compute();
  return 0;
}

Status WriteLassiMysql(JobDb& db, const lassi::LassiResult& r) {
  auto& c = db.conn();
  const std::string now = SqlDatetime(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  if (Status s = c.Begin(); !s.ok()) return s;
  auto put = [&](const std::vector<lassi::WindowRow>& rows, const char* kind) -> Status {
    for (const auto& w : rows) {
      auto e = c.Exec(
          "REPLACE INTO lassi_risk (fs, kind, target, window_start, window_s, alpha, risk_oss, risk_mds, read_kb_ops, "
          "write_kb_ops, read_kb, write_kb, computed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
          {w.fs, std::string(kind), w.target, SqlDatetime(w.start_ns), r.opt.window_ns / kS, r.opt.alpha, w.risk_oss,
           w.risk_mds, SqlOpt(w.read_kb_ops), SqlOpt(w.write_kb_ops), SqlOpt(w.x.oss[0]), SqlOpt(w.x.oss[2]), now});
      if (!e.ok()) return e.status();
    }
    return Status::Ok();
  };
  for (auto [rows, kind] : {std::pair{&r.fs_windows, "fs"}, {&r.app_windows, "app"}, {&r.job_windows, "job"}}) {
    Status s = put(*rows, kind);
    if (!s.ok()) {
      c.Rollback();
      return s;
    }
  }
  return c.Commit();
}

// JOB<TAB>START<TAB>END lines; malformed lines are reported by file:line and skipped.
bool ReadRuns(const char* name, const std::string& path, std::vector<lassi::Run>* runs) {
  std::ifstream f(path);
  if (!f) {
    std::cerr << "iosonar " << name << ": cannot read " << path << "\n";
    return false;
  }
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string job, a, b;
    std::getline(in, job, '\t');
    std::getline(in, a, '\t');
    std::getline(in, b, '\t');
    auto s = ParseIso8601(a), e = ParseIso8601(b);
    if (job.empty() || !s || !e) {
      std::cerr << "iosonar " << name << ": " << path << ":" << n << ": expected JOB<TAB>START<TAB>END, skipped\n";
      continue;
    }
    runs->push_back({job, *s, *e});
  }
  return true;
}

std::string NowSql() {
  return SqlDatetime(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

Status WriteSlowdownMysql(const std::string& url, const std::vector<lassi::SlowdownRow>& rows) {
  auto db = JobDb::Open(url);
  if (!db.ok()) return db.status();
  auto& c = db.value()->conn();
  const std::string now = NowSql();
  if (Status s = c.Begin(); !s.ok()) return s;
  for (const auto& r : rows) {
    auto e = c.Exec(
        "REPLACE INTO probe_slowdown (fs, op, interval_start, interval_s, n, mean_s, min_s, median_s, p90_s, p95_s, "
        "p99_s, max_s, baseline_median_s, slowdown_median, slowdown_p90, computed_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        {r.fs, r.op, SqlDatetime(r.start_ns), r.interval_ns / kS, static_cast<int64_t>(r.stats.count), r.stats.mean,
         r.stats.min, r.stats.median, r.stats.p90, r.stats.p95, r.stats.p99, r.stats.max, SqlOpt(r.baseline_median),
         SqlOpt(r.slowdown_median), SqlOpt(r.slowdown_p90), now});
    if (!e.ok()) {
      c.Rollback();
      return e.status();
    }
  }
  return c.Commit();
}

std::string LassiTable(const lassi::LassiResult& r) {
  std::ostringstream o;
  auto f = [](std::optional<double> v) {
    if (!v) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", *v);
    return std::string(b);
  };
  o << "LASSi risk and ops, " << FormatIsoMillis(r.opt.from_ns) << " to " << FormatIsoMillis(r.opt.to_ns)
    << ", windows of " << r.opt.window_ns / kS << " s, alpha " << r.opt.alpha << " (" << r.records << " records, "
    << r.records_reset << " with a counter reset left out)\n";
  std::string fs;
  for (const auto& w : r.fs_windows) {
    if (w.fs != fs) {
      fs = w.fs;
      o << "\nfile system " << fs << "\n  window start               risk_oss   risk_mds   read_kb_ops write_kb_ops\n";
    }
    char b[256];
    std::snprintf(b, sizeof b, "  %-24s %10s %10s %11s %12s\n", FormatIsoMillis(w.start_ns).c_str(),
                  f(w.risk_oss).c_str(), f(w.risk_mds).c_str(), f(w.read_kb_ops).c_str(), f(w.write_kb_ops).c_str());
    o << b;
  }
  for (const auto& s : r.fs_stats) {
    o << "\n" << s.fs << ": per-window mean and c_v over " << s.windows << " windows\n";
    for (const auto& op : s.ops) o << "  " << op.op << " mean " << f(op.stat.mean) << " c_v " << f(op.stat.cv) << "\n";
  }
  if (!r.apps.empty()) {
    o << "\napplications (risk summed over windows)\n";
    for (const auto& a : r.apps)
      o << "  " << a.fs << "  risk_oss " << f(a.risk_oss) << "  risk_mds " << f(a.risk_mds) << "  " << a.app << "\n";
  }
  return o.str();
}

}  // namespace

// ---------------------------------------------------------------------------
int CmdLassi(int argc, char** argv) {
  RangeOpts range;
  LassiArgs la;
  std::string store_dir, format = "table", json_path, redis_flag, results_output, runs_file, correlate_fs;
  po::options_description desc(
      "usage: iosonar lassi --store DIR|URL (--day D | --from T --to T) [options]\n\n"
      "LASSi risk and ops metrics (docs/lassi.md) per file system, application (exact command line)\n"
      "and job per window from iosonar.oss, iosonar.mds and iosonar.jobstats records; the file\n"
      "system's per-op mean and c_v; with --runs, the correlation of runtime with risk.\n"
      "Exit status: 0 done, 1 store/service failure, 2 usage error.\n\noptions");
  desc.add_options()("help,h", "show this help")("store", po::value(&store_dir)->value_name("DIR|URL"), "record store")  //
      ("day", po::value(&range.day)->value_name("YYYY-MM-DD"), "the UTC day to analyse")                              //
      ("from", po::value(&range.from)->value_name("TIME"), "start (ISO 8601)")("to", po::value(&range.to)->value_name("TIME"), "end")  //
      ("format", po::value(&format)->default_value("table"), "table or json")                                        //
      ("json", po::value(&json_path)->value_name("FILE"), "also write the JSON to FILE")                              //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache the JSON under iosonar:lassi:...")                  //
      ("results-output", po::value(&results_output)->value_name("URL"),
       "send iosonar.result.risk records there (tcp://, http(s):// Elasticsearch, a file, -)")  //
      ("runs", po::value(&runs_file)->value_name("FILE"),
       "runs of one command: JOB<TAB>START<TAB>END (ISO 8601) a line; prints Pearson r and p of runtime vs risk")  //
      ("runs-fs", po::value(&correlate_fs)->value_name("FS"), "file system for --runs (default: the first one in name order)");
  la.Add(desc);
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("lassi", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"lassi"};
  if (store_dir.empty()) return usage("missing --store");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  if (format != "table" && format != "json") return usage("--format must be table or json");
  auto store = OpenStoreOrSay("lassi", store_dir);
  if (!store.ok()) return 1;
  AppSource apps;
  lassi::LassiResult res;
  if (int r = ComputeLassi("lassi", la, range, store_dir, &apps, &res); r != 0) return r;
  const std::string js = lassi::ResultToJson(res, true);
  std::string corr;
  if (!runs_file.empty()) {
    std::vector<lassi::Run> runs;
    if (!ReadRuns("lassi", runs_file, &runs)) return 1;
    std::string fs = correlate_fs;
    if (fs.empty() && !res.fs_stats.empty()) fs = res.fs_stats.front().fs;
    auto c = lassi::CorrelateRuns(res, fs, runs);
    std::ostringstream o;
    auto f3 = [](std::optional<double> v) { return v ? std::to_string(*v) : std::string("undefined"); };
    o << "\nslowdown analysis on " << fs << " (" << c.runs.size() << " runs):\n";
    for (const auto& x : c.runs)
      o << "  job " << x.job << " runtime " << x.runtime_s << " s risk_oss " << x.risk_oss << " risk_mds " << x.risk_mds << "\n";
    o << "  runtime vs risk_oss: r = " << f3(c.oss.r) << ", p = " << f3(c.oss.p) << "\n"
      << "  runtime vs risk_mds: r = " << f3(c.mds.r) << ", p = " << f3(c.mds.p) << "\n";
    corr = o.str();
  }
  if (format == "json") std::cout << js;
  else std::cout << LassiTable(res);
  std::cout << corr;
  std::cout.flush();
  if (!json_path.empty())
    if (Status s = WriteFileText(json_path, js); !s.ok()) {
      std::cerr << "iosonar lassi: " << s.ToString() << "\n";
      rc = 1;
    }
  const std::string redis_url = ResolveSetting(redis_flag, "IOSONAR_REDIS", "redis");
  if (!redis_url.empty()) {
    Status s = cache::CacheResult(redis_url,
                                  cache::LassiKey("", FormatIsoMillis(range.from_ns), FormatIsoMillis(range.to_ns),
                                                  res.opt.window_ns / kS),
                                  lassi::ResultToJson(res, false));
    if (!s.ok()) {
      std::cerr << "iosonar lassi: " << (redis_flag.empty() ? "warning: " : "") << "caching: " << s.ToString() << "\n";
      if (!redis_flag.empty()) rc = 1;
    }
  }
  if (apps.db) {
    Status s = WriteLassiMysql(*apps.db, res);
    if (!s.ok()) {
      std::cerr << "iosonar lassi: writing lassi_risk (run `iosonar db-migrate` first?): " << s.ToString() << "\n";
      rc = 1;
    }
  }
  if (!results_output.empty()) {
    int64_t seq = 0;
    Status s = ShipRecords(results_output, lassi::RiskRecords(res, NewStream(), &seq, HostName()));
    if (!s.ok()) {
      std::cerr << "iosonar lassi: --results-output: " << s.ToString() << "\n";
      rc = 1;
    }
  }
  return rc;
}

// ---------------------------------------------------------------------------
int CmdSlowdown(int argc, char** argv) {
  RangeOpts range;
  std::string store_dir, format = "table", json_path, redis_flag, results_output, intervals = "10m,4h", baseline_from,
                         baseline_to, sliding, mysql_flag;
  po::options_description desc(
      "usage: iosonar slowdown --store DIR|URL (--day D | --from T --to T) [options]\n\n"
      "Probe slowdown (Kunkel & Betke): per file system, op and interval the count, mean, min,\n"
      "median, p90/p95/p99 and max latency of the iosonar.probe records (quantiles: linear\n"
      "interpolation, Hyndman-Fan type 7 = numpy's default), and slowdown = statistic / the\n"
      "median latency of the op over a baseline (fixed: --baseline-from/--baseline-to, default\n"
      "the analysed range; or --baseline-sliding DUR before each interval).\n\noptions");
  desc.add_options()("help,h", "show this help")("store", po::value(&store_dir)->value_name("DIR|URL"), "record store")  //
      ("day", po::value(&range.day)->value_name("YYYY-MM-DD"), "the UTC day")("from", po::value(&range.from), "start")  //
      ("to", po::value(&range.to), "end")("intervals", po::value(&intervals)->default_value("10m,4h"), "interval widths")  //
      ("baseline-from", po::value(&baseline_from), "fixed baseline start (ISO 8601)")                               //
      ("baseline-to", po::value(&baseline_to), "fixed baseline end")                                                //
      ("baseline-sliding", po::value(&sliding)->value_name("DUR"), "sliding baseline: the DUR before each interval")  //
      ("format", po::value(&format)->default_value("table"), "table or json")                                       //
      ("json", po::value(&json_path), "also write the JSON to FILE")                                                //
      ("redis", po::value(&redis_flag), "cache the JSON under iosonar:slowdown:...")                                //
      ("results-output", po::value(&results_output), "send iosonar.result.slowdown records there")  //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "write the rows to the probe_slowdown table (migration 020)");
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("slowdown", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"slowdown"};
  if (store_dir.empty()) return usage("missing --store");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  lassi::SlowdownOptions o;
  o.from_ns = range.from_ns;
  o.to_ns = range.to_ns;
  o.intervals_ns.clear();
  std::istringstream iv(intervals);
  for (std::string tok; std::getline(iv, tok, ',');) {
    auto d = lassi::ParseDuration(tok);
    if (!d) return usage("--intervals: not a duration: '" + tok + "'");
    o.intervals_ns.push_back(*d);
  }
  if (!sliding.empty()) {
    auto d = lassi::ParseDuration(sliding);
    if (!d) return usage("--baseline-sliding: not a duration: '" + sliding + "'");
    o.sliding_ns = *d;
  }
  for (auto [text, slot] : {std::pair{baseline_from, &o.baseline_from_ns}, {baseline_to, &o.baseline_to_ns}}) {
    if (text.empty()) continue;
    auto t = ParseIso8601(text);
    if (!t) return usage("baseline: not an ISO 8601 time: '" + text + "'");
    *slot = *t;
  }
  auto store = OpenStoreOrSay("slowdown", store_dir);
  if (!store.ok()) return 1;
  int64_t lo = o.from_ns - o.sliding_ns;
  if (o.baseline_from_ns) lo = std::min(lo, *o.baseline_from_ns);
  int64_t hi = o.to_ns;
  if (o.baseline_to_ns) hi = std::max(hi, *o.baseline_to_ns);
  auto samples = lassi::LoadProbeSamples(*store.value(), lo, hi);
  if (!samples.ok()) {
    std::cerr << "iosonar slowdown: " << samples.status().ToString() << "\n";
    return 1;
  }
  auto rows = lassi::ComputeSlowdown(std::move(samples).value(), o);
  const std::string js = lassi::SlowdownToJson(rows, o, true);
  if (format == "json") {
    std::cout << js;
  } else {
    std::printf("%-16s %-8s %6s %-24s %6s %10s %10s %10s %9s %9s\n", "fs", "op", "int_s", "start", "n", "median_s",
                "p90_s", "baseline", "sd_med", "sd_p90");
    for (const auto& r : rows)
      std::printf("%-16s %-8s %6lld %-24s %6zu %10.4g %10.4g %10.4g %9.3g %9.3g\n", r.fs.c_str(), r.op.c_str(),
                  static_cast<long long>(r.interval_ns / kS), FormatIsoMillis(r.start_ns).c_str(), r.stats.count,
                  r.stats.median, r.stats.p90, r.baseline_median.value_or(0), r.slowdown_median.value_or(0),
                  r.slowdown_p90.value_or(0));
    std::fflush(stdout);
  }
  if (!json_path.empty())
    if (Status s = WriteFileText(json_path, js); !s.ok()) {
      std::cerr << "iosonar slowdown: " << s.ToString() << "\n";
      rc = 1;
    }
  const std::string redis_url = ResolveSetting(redis_flag, "IOSONAR_REDIS", "redis");
  if (!redis_url.empty()) {
    Status s = cache::CacheResult(
        redis_url, cache::SlowdownKey("", FormatIsoMillis(o.from_ns), FormatIsoMillis(o.to_ns)),
        lassi::SlowdownToJson(rows, o, false));
    if (!s.ok()) {
      std::cerr << "iosonar slowdown: " << (redis_flag.empty() ? "warning: " : "") << "caching: " << s.ToString() << "\n";
      if (!redis_flag.empty()) rc = 1;
    }
  }
  const std::string mysql_url = ResolveSetting(mysql_flag, "IOSONAR_MYSQL", "mysql");
  if (!mysql_url.empty()) {
    Status s = WriteSlowdownMysql(mysql_url, rows);
    if (!s.ok()) {
      std::cerr << "iosonar slowdown: " << (mysql_flag.empty() ? "warning: " : "")
                << "writing probe_slowdown (run `iosonar db-migrate` first?): " << s.ToString() << "\n";
      if (!mysql_flag.empty()) rc = 1;
    }
  }
  if (!results_output.empty()) {
    int64_t seq = 0;
    Status s = ShipRecords(results_output, lassi::SlowdownRecords(rows, NewStream(), &seq, HostName()));
    if (!s.ok()) {
      std::cerr << "iosonar slowdown: --results-output: " << s.ToString() << "\n";
      rc = 1;
    }
  }
  return rc;
}

// ---------------------------------------------------------------------------
int CmdReport(int argc, char** argv) {
  RangeOpts range;
  LassiArgs la;
  std::string store_dir, html = "iosonar-report.html", text, json, intervals = "10m", title, runs_file, runs_fs;
  size_t top = 10;
  po::options_description desc(
      "usage: iosonar report --store DIR|URL (--day D | --from T --to T) [--html FILE] [--text FILE] [--json FILE]\n\n"
      "The helpdesk report: one self-contained HTML file (inline SVG, no scripts or styles from\n"
      "elsewhere) with per file system risk_oss/risk_mds, risk by application, ops quality, probe\n"
      "slowdown, top jobs and applications, and jobs whose I/O calls for advice; a plain-text\n"
      "summary (stdout unless --text) and the same data as JSON.\n\noptions");
  desc.add_options()("help,h", "show this help")("store", po::value(&store_dir)->value_name("DIR|URL"), "record store")  //
      ("day", po::value(&range.day)->value_name("YYYY-MM-DD"), "the UTC day")("from", po::value(&range.from), "start")  //
      ("to", po::value(&range.to), "end")("html", po::value(&html)->default_value("iosonar-report.html"), "HTML file")  //
      ("text", po::value(&text), "plain-text summary file (default: stdout)")("json", po::value(&json), "JSON file")  //
      ("slowdown-interval", po::value(&intervals)->default_value("10m"), "probe slowdown interval")                 //
      ("title", po::value(&title), "report title (default: the day or the range)")                                 //
      ("top", po::value(&top)->default_value(10), "rows in the top tables")  //
      ("runs", po::value(&runs_file)->value_name("FILE"),
       "runs of one command (JOB<TAB>START<TAB>END): runtime vs risk scatter with Pearson r and p")  //
      ("runs-fs", po::value(&runs_fs)->value_name("FS"), "file system for --runs (default: the first one in name order)");
  la.Add(desc);
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("report", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"report"};
  if (store_dir.empty()) return usage("missing --store");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  auto sd = lassi::ParseDuration(intervals);
  if (!sd) return usage("--slowdown-interval: not a duration: '" + intervals + "'");
  auto store = OpenStoreOrSay("report", store_dir);
  if (!store.ok()) return 1;
  report::ReportInput in;
  in.top_n = top;
  in.title = !title.empty() ? title : !range.day.empty() ? range.day
                                                        : FormatIsoMillis(range.from_ns) + " - " + FormatIsoMillis(range.to_ns);
  AppSource apps;
  if (int r = ComputeLassi("report", la, range, store_dir, &apps, &in.lassi); r != 0) return r;
  lassi::SlowdownOptions so;
  so.from_ns = range.from_ns;
  so.to_ns = range.to_ns;
  so.intervals_ns = {*sd};
  auto samples = lassi::LoadProbeSamples(*store.value(), range.from_ns, range.to_ns);
  if (!samples.ok()) {
    std::cerr << "iosonar report: " << samples.status().ToString() << "\n";
    return 1;
  }
  in.slowdown = lassi::ComputeSlowdown(std::move(samples).value(), so);
  // Job summaries of the jobs with trace records in the range.
  {
    std::set<std::string> jobs;
    ScanQuery q;
    q.dataset = dataset::kTrace;
    q.range.start_ns = range.from_ns;
    q.range.end_ns = range.to_ns;
    q.fields = {field::kJobId};
    Status st = store.value()->Scan(q, [&](const Row& r) {
      if (r.Has(0)) jobs.insert(std::string(r.Str(0)));
      return jobs.size() < 10000;
    });
    if (!st.ok()) std::cerr << "iosonar report: warning: listing traced jobs: " << st.ToString() << "\n";
    for (const auto& j : jobs) {
      auto s = analysis::SummarizeJob(*store.value(), j);
      if (s.ok()) in.summaries[j] = std::move(s).value();
    }
  }
  if (!runs_file.empty()) {
    std::vector<lassi::Run> runs;
    if (!ReadRuns("report", runs_file, &runs)) return 1;
    std::string fs = runs_fs;
    if (fs.empty() && !in.lassi.fs_stats.empty()) fs = in.lassi.fs_stats.front().fs;
    in.runs = lassi::CorrelateRuns(in.lassi, fs, runs);
  }
  auto out = report::RenderReport(in);
  for (auto [path, body] : {std::pair{html, &out.html}, {json, &out.json}, {text, &out.text}}) {
    if (path.empty()) continue;
    if (Status s = WriteFileText(path, *body); !s.ok()) {
      std::cerr << "iosonar report: " << s.ToString() << "\n";
      rc = 1;
    }
  }
  if (text.empty()) std::cout << out.text;
  return rc;
}

// ---------------------------------------------------------------------------
int CmdLmtImport(int argc, char** argv) {
  std::string lmt, store_dir, offset = "+00:00", output;
  po::options_description desc(
      "usage: iosonar lmt-import --lmt-sqlite FILE (--store DIR | --output URL) [--utc-offset -08:00]\n\n"
      "Turns an LMT database (sqlite copy of the MySQL schema: OST_DATA, MDS_OPS_DATA, ...) into\n"
      "iosonar.oss and iosonar.mds records: deltas of the monotonic counters between consecutive\n"
      "readings, stamped at the later reading; a counter that went backwards gives a record with\n"
      "lustre.reset = true and no deltas. LMT has no OST op counts: oss.read_ops/write_ops stay absent.\n\noptions");
  desc.add_options()("help,h", "show this help")("lmt-sqlite", po::value(&lmt)->value_name("FILE"), "LMT database")  //
      ("store", po::value(&store_dir)->value_name("DIR"), "embedded store to append to")                           //
      ("output", po::value(&output)->value_name("URL"), "or send the records there (file, -, tcp://, ES)")         //
      ("utc-offset", po::value(&offset)->default_value("+00:00"),
       "LMT timestamps are local time: their offset from UTC (NERSC: -08:00)");
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("lmt-import", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"lmt-import"};
  if (lmt.empty()) return usage("missing --lmt-sqlite");
  if (store_dir.empty() == output.empty()) return usage("give exactly one of --store and --output");
  int64_t off_s = 0;
  {
    int hh = 0, mm = 0;
    char sign = 0;
    if (std::sscanf(offset.c_str(), "%c%d:%d", &sign, &hh, &mm) != 3 || (sign != '+' && sign != '-') || hh > 14 ||
        mm > 59)
      return usage("--utc-offset must look like -08:00 or +05:30, not '" + offset + "'");
    off_s = (sign == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
  }
  std::string lines;
  auto stats = lassi::ImportLmt(lmt, off_s, [&](const std::string& l) {
    lines += l;
    lines += '\n';
    return Status::Ok();
  });
  if (!stats.ok()) {
    std::cerr << "iosonar lmt-import: " << stats.status().ToString() << "\n";
    return 1;
  }
  if (!output.empty()) {
    if (Status s = ShipRecords(output, lines); !s.ok()) {
      std::cerr << "iosonar lmt-import: " << s.ToString() << "\n";
      return 1;
    }
  } else {
    auto store = OpenSqliteStore(store_dir);
    if (!store.ok()) {
      std::cerr << "iosonar lmt-import: " << store.status().ToString() << "\n";
      return 1;
    }
    std::vector<ParsedRecord> recs(512);
    std::vector<const ParsedRecord*> ptrs;
    std::vector<std::string> bufs(512);
    AppendStats as;
    size_t bad = 0, lineno = 0;
    std::istringstream in(lines);
    auto flush = [&]() -> Status {
      if (ptrs.empty()) return Status::Ok();
      AppendStats a;
      Status s = store.value()->Append(ptrs, &a);
      as.inserted += a.inserted;
      as.duplicates += a.duplicates;
      ptrs.clear();
      return s;
    };
    for (std::string l; std::getline(in, l);) {
      ++lineno;
      auto& b = bufs[ptrs.size()];
      b = l;
      b.push_back('\0');
      auto& rec = recs[ptrs.size()];
      Status s = ParseRecordInsitu(b.data(), l.size(), &rec);
      if (!s.ok()) {
        std::cerr << "iosonar lmt-import: record " << lineno << ": " << s.ToString() << "\n";
        ++bad;
        continue;
      }
      ptrs.push_back(&rec);
      if (ptrs.size() == recs.size())
        if (Status f = flush(); !f.ok()) {
          std::cerr << "iosonar lmt-import: " << f.ToString() << "\n";
          return 1;
        }
    }
    if (Status f = flush(); !f.ok()) {
      std::cerr << "iosonar lmt-import: " << f.ToString() << "\n";
      return 1;
    }
    if (bad) rc = 1;
    std::cerr << "iosonar lmt-import: stored " << as.inserted << " records (" << as.duplicates << " already stored)\n";
  }
  const auto& st = stats.value();
  std::cout << "file system " << st.fs << ": " << st.timestamps << " readings " << FormatIsoMillis(st.first_ns)
            << " to " << FormatIsoMillis(st.last_ns) << "; " << st.oss_records << " iosonar.oss and "
            << st.mds_records << " iosonar.mds records, " << st.resets << " counter resets (unknown)\n";
  return rc;
}

}  // namespace iosonar::cli
