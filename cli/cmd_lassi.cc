// `iosonar lassi`, `iosonar slowdown`, `iosonar report` and
// `iosonar lmt-import` (analysis-jobs/lassi, analysis-jobs/report; docs/lassi.md).
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "analysis-jobs/anomaly/screen.h"
#include "cli/publish.h"
#include "core/base/host.h"
#include "core/base/timeutil.h"
#include "core/jobdb/jobdb.h"
#include "core/store/es_store.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"
#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lassi/baseline.h"
#include "analysis-jobs/lassi/commands.h"
#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/lassi_store.h"
#include "analysis-jobs/lassi/lmt_import.h"
#include "analysis-jobs/lassi/probe_baseline.h"
#include "analysis-jobs/lassi/results.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "analysis-jobs/report/report.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

constexpr int64_t kS = 1000000000;

using RangeOpts = lassi::Range;  // --day, --from, --to of lassi/slowdown/report

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

// The LASSi computation's options every command shares (lassi::LassiArgs).
void AddLassiArgs(po::options_description& d, lassi::LassiArgs& a) {
  d.add_options()("scan-threads", po::value(&a.scan_threads)->default_value(1)->value_name("N"),
                  "1, or 2: scan oss+mds and job_stats on two store handles in parallel")  //
      ("alpha", po::value(&a.alpha)->default_value(2.0, "2")->value_name("A"), "LASSi's scaling factor alpha")  //
      ("window", po::value(&a.window)->default_value("1h")->value_name("DUR"),
       "window: 1h (default), 10m, 3m, ...; shorter than 3 min only for short captures (e.g. 30s for 5 min of LMT)")  //
      ("history", po::value(&a.history)->value_name("DUR"),
       "no stored baseline: avg_fs over this much time before --from and the analysed range")  //
      ("baseline", po::value(&a.baseline)->value_name("NAME"),
       "the stored baseline of that name (default: the newest of this --window; `iosonar lassi baseline`)")  //
      ("apps", po::value(&a.apps_file)->value_name("FILE"), "job id<TAB>command line, one a line (applications)")  //
      ("mysql", po::value(&a.mysql)->value_name("URL"), "job database: command lines of the jobs (applications)")  //
      ("cluster", po::value(&a.cluster)->value_name("NAME"), "cluster of the jobs in the job database");
}

bool IsStoreDir(const std::string& where) { return where.find("://") == std::string::npos; }

// Stored baselines of one kind (LASSi's, the probe slowdown's): the job
// database's with --mysql, else the file beside an embedded store.
template <typename B>
Result<std::vector<B>> StoredBaselinesOf(const std::string& where, Publisher& pub,
                                         Result<std::vector<B>> (*from_db)(MysqlConn&),
                                         Result<std::vector<B>> (*from_file)(const std::string&),
                                         std::string (*file_of)(const std::string&)) {
  if (!pub.mysql_url().empty()) {
    Result<std::vector<B>> got = std::vector<B>{};
    pub.WithJobDb([&](JobDb& db) {
      got = from_db(db.conn());
      return got.ok() ? Status::Ok() : got.status();
    });
    return got;
  }
  if (!IsStoreDir(where)) return std::vector<B>{};
  return from_file(file_of(where));
}

// Stores a computed baseline where StoredBaselinesOf reads it: the job
// database's table with --mysql, else the file beside the embedded store.
// 0 or the exit status (the failure said).
template <typename B>
int StoreBaseline(const char* name, B& b, const std::string& store_dir, Publisher& pub, const char* table,
                  Status (*to_db)(MysqlConn&, const B&), Status (*to_file)(const std::string&, const B&),
                  std::string (*file_of)(const std::string&)) {
  if (!pub.mysql_url().empty()) {
    b.source = std::string("mysql ") + table;
    pub.WithJobDb([&](JobDb& db) { return to_db(db.conn(), b); });
    return pub.rc();
  }
  const std::string path = file_of(store_dir);
  b.source = "file " + path;
  if (Status st = to_file(path, b); !st.ok()) return CommandError(name, 1, st.ToString());
  return 0;
}

Result<std::vector<lassi::Baseline>> StoredBaselines(const std::string& where, Publisher& pub) {
  return StoredBaselinesOf<lassi::Baseline>(where, pub, lassi::ReadBaselinesFromDb, lassi::ReadBaselineFile,
                                            lassi::BaselineFileOf);
}

// t_expected of the probe slowdown: the named or newest stored probe
// baseline into o->stored; without one, the history fallback, said on stderr.
// 0 or the exit status.
int LoadProbeBaseline(const char* name, const std::string& baseline_name, const std::string& where, Publisher& pub,
                      lassi::SlowdownOptions* o) {
  auto all = StoredBaselinesOf<lassi::ProbeBaseline>(where, pub, lassi::ReadProbeBaselinesFromDb,
                                                     lassi::ReadProbeBaselineFile, lassi::ProbeBaselineFileOf);
  if (!all.ok()) return CommandError(name, 1, "probe baseline: ", all.status().ToString());
  auto said = lassi::UseStoredProbeBaseline(*all, baseline_name, o);
  if (!said.ok()) return CommandError(name, 1, said.status().message());
  std::cerr << "iosonar " << name << ": " << *said << "\n";
  return 0;
}

// avg_fs: with --history, the range's (the fallback, on purpose); else the
// named or newest stored baseline, said on stderr. 0 or the exit status.
int LoadBaseline(const char* name, const lassi::LassiArgs& a, const std::string& where, Publisher& pub, lassi::Options* o) {
  if (!a.history.empty()) {
    std::cerr << "iosonar " << name << ": LASSi baseline: --history " << a.history
              << ": avg_fs over the history and the analysed range\n";
    return 0;
  }
  auto all = StoredBaselines(where, pub);
  if (!all.ok()) return CommandError(name, 1, "LASSi baseline: ", all.status().ToString());
  auto said = lassi::UseStoredBaseline(*all, a.baseline, o);
  if (!said.ok()) return CommandError(name, 1, said.status().message());
  if (!said->empty()) std::cerr << "iosonar " << name << ": " << *said << "\n";
  return 0;
}

// LASSi over the store at `where`, the applications from --apps and the job
// database (opened through pub, which reports a failure). 0, or the exit
// status to stop with.
int ComputeLassi(const char* name, const lassi::LassiArgs& a, const lassi::Options& o, const std::string& where,
                 Publisher& pub, lassi::AppSource* apps, lassi::LassiResult* out) {
  if (!a.apps_file.empty())
    if (Status st = apps->LoadFile(a.apps_file); !st.ok()) return CommandError(name, 1, st.ToString());
  pub.WithJobDb([&](JobDb& db) {
    apps->UseJobDb(&db, a.cluster);
    return Status::Ok();
  });
  if (pub.rc() != 0) return pub.rc();  // --mysql given and it failed: nothing is computed
  lassi::Options opt = o;
  if (int rc = LoadBaseline(name, a, where, pub, &opt); rc != 0) return rc;
  auto r = lassi::ComputeLassi([&] { return OpenStoreAt(where); }, opt, a.scan_threads, apps);
  if (!r.ok()) return CommandError(name, 1, r.status().ToString());
  *out = std::move(r).value();
  if (const std::string warn = lassi::BaselineWarning(*out); !warn.empty())
    std::cerr << "iosonar " << name << ": WARNING: " << warn << "\n";
  return 0;
}

// --runs FILE, its malformed lines reported; nullopt (after saying why) when unreadable.
std::optional<std::vector<lassi::Run>> ReadRuns(const char* name, const std::string& path) {
  std::vector<std::string> skipped;
  auto runs = lassi::ReadRunsFile(path, &skipped);
  for (const auto& s : skipped) std::cerr << "iosonar " << name << ": " << s << "\n";
  if (!runs.ok()) {
    std::cerr << "iosonar " << name << ": " << runs.status().message() << "\n";
    return std::nullopt;
  }
  return std::move(runs).value();
}

// Writes text to path; a failure is reported and makes *rc 1.
void WriteOutputFile(const char* name, const std::string& path, const std::string& text, int* rc) {
  if (Status s = WriteTextFile(path, text); !s.ok()) {
    *rc = CommandError(name, 1, s.ToString());
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// `iosonar lassi baseline`: avg_fs per application-hour over a history, stored.
int CmdLassiBaseline(int argc, char** argv) {
  RangeOpts range;
  std::string store_dir, window = "1h", apps_file, mysql, cluster, name, json_path;
  po::options_description desc(
      "usage: iosonar lassi baseline --store DIR|URL --from T --to T [--window DUR] [--apps FILE] [--mysql URL]\n\n"
      "LASSi's avg_fs (Tables 1-2): per file system and op the average per application-hour,\n"
      "the application being one run (run window: every window of a job's run, 0 where a counter\n"
      "did not move) over the history [--from, --to) (30 days back is typical). Stored in the job\n"
      "database's lassi_baseline table with --mysql (migration 036), else in DIR/lassi-baselines.jsonl\n"
      "beside the embedded store (0600). `iosonar lassi` and `iosonar report` use the newest one of\n"
      "their --window unless given --baseline NAME or --history.\n\noptions");
  desc.add_options()("help,h", "show this help")("store", po::value(&store_dir)->value_name("DIR|URL"), "record store")  //
      ("from", po::value(&range.from)->value_name("TIME"), "history start (ISO 8601)")                            //
      ("to", po::value(&range.to)->value_name("TIME"), "history end")                                             //
      ("window", po::value(&window)->default_value("1h")->value_name("DUR"), "window (1h: per application-hour)")  //
      ("apps", po::value(&apps_file)->value_name("FILE"), "job id<TAB>command line, one a line (applications)")   //
      ("mysql", po::value(&mysql)->value_name("URL"), "job database: command lines, and where the baseline goes")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "cluster of the jobs in the job database")            //
      ("name", po::value(&name)->value_name("NAME"), "the baseline's name (default FROM..TO)")                   //
      ("json", po::value(&json_path)->value_name("FILE"), "also write the baseline as JSON to FILE");
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("lassi baseline", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"lassi baseline"};
  if (store_dir.empty()) return usage("missing --store");
  if (range.from.empty() || range.to.empty()) return usage("give --from T --to T (the history)");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  auto win = lassi::ParseDuration(window);
  if (!win) return usage("--window: not a duration: '" + window + "' (e.g. 1h, 10m)");
  if (!OpenStoreOrSay("lassi baseline", store_dir).ok()) return 1;
  Publisher pub("lassi baseline", {"", "", mysql, ""});
  if (pub.mysql_url().empty() && !IsStoreDir(store_dir))
    return usage("the store " + store_dir + " has no directory to keep the baseline beside: give --mysql URL");
  lassi::AppSource apps;
  if (!apps_file.empty())
    if (Status st = apps.LoadFile(apps_file); !st.ok()) return CommandError("lassi baseline", 1, st.ToString());
  pub.WithJobDb([&](JobDb& db) {
    apps.UseJobDb(&db, cluster);
    return Status::Ok();
  });
  if (pub.rc() != 0) return pub.rc();
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("lassi baseline", 1, store.status().ToString());
  std::string warning;
  auto computed = lassi::BaselineFromStore(*store.value(), range, *win, apps, name, &warning);
  if (!computed.ok()) return CommandError("lassi baseline", 1, computed.status().ToString());
  lassi::Baseline& b = *computed;
  if (!warning.empty()) std::cerr << "iosonar lassi baseline: " << warning << "\n";
  if (int r = StoreBaseline("lassi baseline", b, store_dir, pub, "lassi_baseline", lassi::WriteBaselineToDb,
                            lassi::AppendBaselineFile, lassi::BaselineFileOf);
      r != 0)
    return r;
  std::cout << lassi::BaselineSummary(b);
  if (!json_path.empty()) {
    std::string js;
    JsonWriter w(&js, 2);
    lassi::BaselineJson(w, b, nullptr);
    js += "\n";
    WriteOutputFile("lassi baseline", json_path, js, &rc);
  }
  return rc;
}

int CmdLassi(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "baseline") return CmdLassiBaseline(argc - 1, argv + 1);
  RangeOpts range;
  lassi::LassiArgs la;
  std::string store_dir, format = "table", json_path, redis_flag, results_output, runs_file, correlate_fs;
  po::options_description desc(
      "usage: iosonar lassi --store DIR|URL (--day D | --from T --to T) [options]\n"
      "       iosonar lassi baseline --store DIR|URL --from T --to T [--window DUR] [--apps FILE] [--mysql URL]\n\n"
      "LASSi risk and ops metrics (docs/lassi.md) per file system, application (exact command line)\n"
      "and job per window from iosonar.oss, iosonar.mds and iosonar.jobstats records; the file\n"
      "system's per-op mean and c_v; with --runs, the correlation of runtime with risk. Risk is\n"
      "against avg_fs, the newest stored baseline (`lassi baseline`) unless --baseline or --history.\n"
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
  AddLassiArgs(desc, la);
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("lassi", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"lassi"};
  if (store_dir.empty()) return usage("missing --store");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  if (format != "table" && format != "json") return usage("--format must be table or json");
  lassi::Options opt;
  if (std::string e = la.ToOptions(range, &opt); !e.empty()) return usage(e);
  if (!OpenStoreOrSay("lassi", store_dir).ok()) return 1;
  Publisher pub("lassi", {results_output, redis_flag, la.mysql, "", "--results-output"});
  lassi::AppSource apps;
  lassi::LassiResult res;
  if (int r = ComputeLassi("lassi", la, opt, store_dir, pub, &apps, &res); r != 0) return r;
  std::string corr;
  if (!runs_file.empty()) {
    auto runs = ReadRuns("lassi", runs_file);
    if (!runs) return 1;
    corr = lassi::CorrelationToText(lassi::CorrelateRuns(res, lassi::RunsFs(res, correlate_fs), *runs));
  }
  const std::string js = lassi::ResultToJson(res, true);
  std::cout << (format == "json" ? js : lassi::ResultToTable(res)) << corr;
  std::cout.flush();
  if (!json_path.empty()) WriteOutputFile("lassi", json_path, js, &rc);
  pub.Cache(cache::LassiKey("", FormatIsoMillis(range.from_ns), FormatIsoMillis(range.to_ns), res.opt.window_ns / kS),
            lassi::ResultToJson(res, false));
  pub.WithJobDb([&](JobDb& db) { return lassi::WriteRiskToDb(db.conn(), res); });
  if (pub.has_output())
    if (const std::string recs = lassi::RiskRecords(res, HostName()); !recs.empty()) pub.Send(recs);
  return std::max(rc, pub.rc());
}

// ---------------------------------------------------------------------------
// `iosonar slowdown baseline`: t_expected per file system (and host) and op over a history, stored.
int CmdSlowdownBaseline(int argc, char** argv) {
  RangeOpts range;
  std::string store_dir, mysql, name, json_path;
  po::options_description desc(
      "usage: iosonar slowdown baseline --store DIR|URL --from T --to T [--mysql URL] [--name NAME]\n\n"
      "The probe slowdown's t_expected (Kunkel & Betke §3.3: the median of all observed values of an op\n"
      "over a long baseline; the paper uses 30-60 days): per file system and probe op, and per file\n"
      "system, probing host and op, the median latency (type 7 quantile) and the sample count of the\n"
      "successful iosonar.probe records in [--from, --to). Stored in the job database's probe_baseline\n"
      "table with --mysql (migration 038), else in DIR/probe-baselines.jsonl beside the embedded store\n"
      "(0600). `iosonar slowdown` and `iosonar report` use the newest one unless told otherwise.\n\noptions");
  desc.add_options()("help,h", "show this help")("store", po::value(&store_dir)->value_name("DIR|URL"), "record store")  //
      ("from", po::value(&range.from)->value_name("TIME"), "history start (ISO 8601; 30 days back is typical)")  //
      ("to", po::value(&range.to)->value_name("TIME"), "history end")                                         //
      ("mysql", po::value(&mysql)->value_name("URL"), "job database: where the baseline goes")                //
      ("name", po::value(&name)->value_name("NAME"), "the baseline's name (default FROM..TO)")                //
      ("json", po::value(&json_path)->value_name("FILE"), "also write the baseline as a JSON line to FILE");
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("slowdown baseline", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"slowdown baseline"};
  if (store_dir.empty()) return usage("missing --store");
  if (range.from.empty() || range.to.empty()) return usage("give --from T --to T (the history)");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  auto store = OpenStoreOrSay("slowdown baseline", store_dir);
  if (!store.ok()) return 1;
  Publisher pub("slowdown baseline", {"", "", mysql, ""});
  if (pub.mysql_url().empty() && !IsStoreDir(store_dir))
    return usage("the store " + store_dir + " has no directory to keep the baseline beside: give --mysql URL");
  std::vector<std::string> warnings;
  auto computed = lassi::ProbeBaselineFromStore(*store.value(), range, name, &warnings);
  if (!computed.ok()) return CommandError("slowdown baseline", 1, computed.status().ToString());
  lassi::ProbeBaseline& b = *computed;
  for (const auto& w : warnings) std::cerr << "iosonar slowdown baseline: " << w << "\n";
  if (int r = StoreBaseline("slowdown baseline", b, store_dir, pub, "probe_baseline", lassi::WriteProbeBaselineToDb,
                            lassi::AppendProbeBaselineFile, lassi::ProbeBaselineFileOf);
      r != 0)
    return r;
  std::cout << lassi::ProbeBaselineSummary(b);
  if (!json_path.empty()) WriteOutputFile("slowdown baseline", json_path, lassi::ProbeBaselineLine(b), &rc);
  return rc;
}

int CmdSlowdown(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "baseline") return CmdSlowdownBaseline(argc - 1, argv + 1);
  RangeOpts range;
  std::string store_dir, format = "table", json_path, redis_flag, results_output, intervals = "10m,4h", baseline_from,
                         baseline_to, sliding, mysql_flag, stored_name;
  int baseline_days = 30;
  po::options_description desc(
      "usage: iosonar slowdown --store DIR|URL (--day D | --from T --to T) [options]\n"
      "       iosonar slowdown baseline --store DIR|URL --from T --to T [--mysql URL]\n\n"
      "Probe slowdown (Kunkel & Betke): per file system, op and interval the count, mean, min,\n"
      "median, p90/p95/p99 and max latency of the iosonar.probe records (quantiles: linear\n"
      "interpolation, Hyndman-Fan type 7 = numpy's default), and slowdown = statistic / t_expected,\n"
      "the median latency of the op over a long baseline: by default the newest stored baseline\n"
      "(`slowdown baseline`; --baseline NAME for another; with --mysql the job database's), else\n"
      "(said loudly) the --baseline-days (30) days before --from, re-read from the store; the\n"
      "analysed range only for an op without either (flagged \"analysed range\" in the rows); or fixed\n"
      "--baseline-from/--baseline-to, or --baseline-sliding DUR before each interval. Rows per file\n"
      "system and op, and per probing host (each against its own baseline median; JSON host_rows).\n\noptions");
  desc.add_options()("help,h", "show this help")("store", po::value(&store_dir)->value_name("DIR|URL"), "record store")  //
      ("day", po::value(&range.day)->value_name("YYYY-MM-DD"), "the UTC day")("from", po::value(&range.from), "start")  //
      ("to", po::value(&range.to), "end")("intervals", po::value(&intervals)->default_value("10m,4h"), "interval widths")  //
      ("baseline-from", po::value(&baseline_from), "fixed baseline start (ISO 8601)")                               //
      ("baseline-to", po::value(&baseline_to), "fixed baseline end")                                                //
      ("baseline-sliding", po::value(&sliding)->value_name("DUR"), "sliding baseline: the DUR before each interval")  //
      ("baseline-days", po::value(&baseline_days)->default_value(30)->value_name("N"),
       "no stored baseline (or given explicitly): the N days before --from")  //
      ("baseline", po::value(&stored_name)->value_name("NAME"), "the stored probe baseline of that name")  //
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
  if (std::string e = lassi::SlowdownOptionsFrom(range, intervals, sliding, baseline_from, baseline_to, &o); !e.empty())
    return usage(e);
  if (baseline_days < 1) return usage("--baseline-days must be >= 1");
  o.history_ns = baseline_days * 86400LL * kS;
  const bool explicit_days = vm.count("baseline-days") && !vm["baseline-days"].defaulted();
  if (!stored_name.empty() && (explicit_days || o.BaselineMode() != "history"))
    return usage("--baseline NAME excludes --baseline-days, --baseline-from/--baseline-to and --baseline-sliding");
  auto store = OpenStoreOrSay("slowdown", store_dir);
  if (!store.ok()) return 1;
  Publisher pub("slowdown", {results_output, redis_flag, mysql_flag, "", "--results-output"});
  if (o.BaselineMode() == "history" && !explicit_days)
    if (int r = LoadProbeBaseline("slowdown", stored_name, store_dir, pub, &o); r != 0) return r;
  if (pub.rc() != 0) return pub.rc();
  auto rows = lassi::SlowdownFromStore(*store.value(), o);
  if (!rows.ok()) return CommandError("slowdown", 1, rows.status().ToString());
  const std::string js = lassi::SlowdownToJson(*rows, o, true);
  if (const std::string warn = lassi::SlowdownBaselineWarning(*rows, o); !warn.empty())
    std::cerr << "iosonar slowdown: WARNING: " << warn << "\n";
  std::cout << (format == "json" ? js
                                 : "baseline (t_expected): " + lassi::SlowdownBaselineDescription(o) + "\n" +
                                       lassi::SlowdownToTable(*rows));
  std::cout.flush();
  if (!json_path.empty()) WriteOutputFile("slowdown", json_path, js, &rc);
  pub.Cache(cache::SlowdownKey("", FormatIsoMillis(o.from_ns), FormatIsoMillis(o.to_ns)),
            lassi::SlowdownToJson(*rows, o, false));
  pub.WithJobDb([&](JobDb& db) { return lassi::WriteSlowdownToDb(db.conn(), *rows); });
  if (pub.has_output())
    if (const std::string recs = lassi::SlowdownRecords(*rows, o, HostName()); !recs.empty()) pub.Send(recs);
  return std::max(rc, pub.rc());
}

// ---------------------------------------------------------------------------
int CmdReport(int argc, char** argv) {
  RangeOpts range;
  lassi::LassiArgs la;
  std::string store_dir, html = "iosonar-report.html", text, json, intervals = "10m", title, runs_file, runs_fs,
      slowdown_baseline;
  size_t top = 10;
  int slowdown_days = 30;
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
      ("slowdown-baseline-days", po::value(&slowdown_days)->default_value(30)->value_name("N"),
       "probe slowdown without a stored baseline (or given explicitly): t_expected = the op's median latency "
       "over the N days before the report")  //
      ("slowdown-baseline", po::value(&slowdown_baseline)->value_name("NAME"),
       "probe slowdown: the stored baseline of that name (default: the newest; `iosonar slowdown baseline`)")  //
      ("title", po::value(&title), "report title (default: the day or the range)")                                 //
      ("top", po::value(&top)->default_value(10), "rows in the top tables")  //
      ("runs", po::value(&runs_file)->value_name("FILE"),
       "runs of one command (JOB<TAB>START<TAB>END): runtime vs risk scatter with Pearson r and p")  //
      ("runs-fs", po::value(&runs_fs)->value_name("FS"), "file system for --runs (default: the first one in name order)");
  AddLassiArgs(desc, la);
  po::variables_map vm;
  int rc = 0;
  if (!ParseArgs("report", argc, argv, desc, vm, &rc)) return rc;
  Usage usage{"report"};
  if (store_dir.empty()) return usage("missing --store");
  if (std::string e = range.Parse(); !e.empty()) return usage(e);
  auto sd = lassi::ParseDuration(intervals);
  if (!sd) return usage("--slowdown-interval: not a duration: '" + intervals + "'");
  lassi::Options opt;
  if (std::string e = la.ToOptions(range, &opt); !e.empty()) return usage(e);
  auto store = OpenStoreOrSay("report", store_dir);
  if (!store.ok()) return 1;
  report::ReportInput in;
  in.top_n = top;
  in.title = !title.empty() ? title : !range.day.empty() ? range.day
                                                        : FormatIsoMillis(range.from_ns) + " - " + FormatIsoMillis(range.to_ns);
  Publisher pub("report", {"", "", la.mysql, ""});  // the job database as an input only
  lassi::AppSource apps;
  if (int r = ComputeLassi("report", la, opt, store_dir, pub, &apps, &in.lassi); r != 0) return r;
  lassi::SlowdownOptions so;
  so.from_ns = range.from_ns;
  so.to_ns = range.to_ns;
  so.intervals_ns = {*sd};
  if (slowdown_days < 1) return usage("--slowdown-baseline-days must be >= 1");
  so.history_ns = slowdown_days * 86400LL * kS;
  const bool explicit_days = vm.count("slowdown-baseline-days") && !vm["slowdown-baseline-days"].defaulted();
  if (explicit_days && !slowdown_baseline.empty())
    return usage("give --slowdown-baseline or --slowdown-baseline-days, not both");
  if (!explicit_days)
    if (int r = LoadProbeBaseline("report", slowdown_baseline, store_dir, pub, &so); r != 0) return r;
  auto slowdown = lassi::SlowdownFromStore(*store.value(), so);
  if (!slowdown.ok()) return CommandError("report", 1, slowdown.status().ToString());
  in.slowdown = std::move(slowdown).value();
  in.slowdown_options = so;
  if (const std::string warn = lassi::SlowdownBaselineWarning(in.slowdown, so); !warn.empty())
    std::cerr << "iosonar report: WARNING: " << warn << "\n";
  if (Status st = report::SummarizeTracedJobs(*store.value(), range.from_ns, range.to_ns, &in.summaries); !st.ok())
    std::cerr << "iosonar report: warning: listing traced jobs: " << st.ToString() << "\n";
  if (!runs_file.empty()) {
    auto runs = ReadRuns("report", runs_file);
    if (!runs) return 1;
    in.runs = lassi::CorrelateRuns(in.lassi, lassi::RunsFs(in.lassi, runs_fs), *runs);
  }
  if (auto an = anomaly::ReportSection(*store.value(), range.from_ns, range.to_ns); an.ok() && !an->first.empty())
    in.extra_sections.push_back(std::move(*an));
  auto out = report::RenderReport(in);
  for (auto [path, body] : {std::pair{html, &out.html}, {json, &out.json}, {text, &out.text}})
    if (!path.empty()) WriteOutputFile("report", path, *body, &rc);
  if (text.empty()) std::cout << TerminalSafe(out.text);
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
  const auto off_s = lassi::ParseUtcOffset(offset);
  if (!off_s) return usage("--utc-offset must look like -08:00 or +05:30, not '" + offset + "'");
  std::string lines;
  auto stats = lassi::ImportLmt(lmt, *off_s, [&](const std::string& l) {
    lines += l;
    lines += '\n';
    return Status::Ok();
  });
  if (!stats.ok()) return CommandError("lmt-import", 1, stats.status().ToString());
  if (!output.empty()) {
    Publisher pub("lmt-import", {output, "", "", ""});
    if (!lines.empty()) pub.Send(lines);
    if (pub.rc() != 0) return pub.rc();
  } else {
    auto store = OpenSqliteStore(store_dir);
    if (!store.ok()) return CommandError("lmt-import", 1, store.status().ToString());
    AppendStats as;
    Status st = AppendJsonLines(*store.value(), lines, &as, [&](size_t lineno, const Status& why) {
      rc = CommandError("lmt-import", 1, "record ", lineno, ": ", why.ToString());
    });
    if (!st.ok()) return CommandError("lmt-import", 1, st.ToString());
    std::cerr << "iosonar lmt-import: stored " << as.inserted << " records (" << as.duplicates << " already stored)\n";
  }
  std::cout << lassi::ImportSummary(stats.value());
  return rc;
}

}  // namespace iosonar::cli
