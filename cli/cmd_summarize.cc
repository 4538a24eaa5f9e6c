// `iosonar summarize-job` (one row per job with TOKIO's summarize_job column
// names) and `iosonar scoreboard` (top users and applications), from the
// record store, optionally joined with the MySQL job database.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/base/host.h"
#include "core/store/es_store.h"
#include "core/jobdb/jobdb.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "cli/publish.h"
#include "analysis-jobs/summarize/summarize.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

constexpr const char* kSummarizeUsage =
    "usage: iosonar summarize-job JOB_ID... --store DIR|URL [--format csv|json] [--mysql URL [--cluster NAME]]\n"
    "\n"
    "One row per job: TOKIO's summarize_job columns wherever iosonar has the data\n"
    "(_jobid, _datetime_start/_end, darshan_app, darshan_nprocs, darshan_io_time,\n"
    "darshan_total_gibs_posix, darshan_agg_perf_by_slowest_posix,\n"
    "darshan_biggest_{read,write}_api[_bytes|_files], jobsdb_concurrent_* with a job\n"
    "database), the file system around the job over its window (_file_system,\n"
    "darshan_biggest_{read,write}_fs[_bytes], fs_{tot,ave,max,min}_* bytes and\n"
    "metadata ops from iosonar.oss/iosonar.mds, fs_frac_*, fshealth_ost_* from the\n"
    "iosonar.health snapshot before the job), then iosonar's own (iosonar_*: bytes,\n"
    "ops, bandwidths, metadata ops, I/O modes, I/O phases, coverage factors).\n"
    "A job without records is reported on stderr and left out.\n"
    "With --output each row also goes out as an iosonar.result.job_summary record.\n"
    "With --redis each row is cached as JSON under iosonar:job:JOB_ID:tokio_summary;\n"
    "with --mysql each job found in the job database gets its row in job_tokio_summary.\n"
    "\n"
    "Exit status: 0 every job summarized, 1 a job had no records or the store/database failed, 2 usage error.\n"
    "\n"
    "options";

constexpr const char* kScoreboardUsage =
    "usage: iosonar scoreboard --store DIR|URL [--from TIME] [--to TIME] [--limit N] [--format table|json]\n"
    "                          [--mysql URL [--cluster NAME]] [--redis URL] [--output OUT]\n"
    "\n"
    "Top users and applications by bytes read + written, data ops and metadata ops\n"
    "over the jobs with trace records between --from and --to (ISO-8601). Users and\n"
    "applications come from the job database (--mysql, $IOSONAR_MYSQL); without one\n"
    "the user is 'unknown' and the application is the executable the job's traced\n"
    "processes ran.\n"
    "\n"
    "Results: the period is [--from, --to), 1970-01-01 and the time of the run when\n"
    "not given. With --mysql the top N of each ranking replace the period's rows of\n"
    "the scoreboard table (cluster, from, to, who, metric, rank); with --redis the\n"
    "JSON is cached under iosonar:scoreboard:CLUSTER|all:FROM:TO; with --output one\n"
    "iosonar.result.scoreboard record per rank goes to OUT. A failed write is an\n"
    "error (exit 1) when the flag was given, a warning when the URL came from\n"
    "$IOSONAR_MYSQL / $IOSONAR_REDIS or the config file.\n"
    "\n"
    "Exit status: 0 done, 1 the store or the database failed, 2 usage error.\n"
    "\n"
    "options";

}  // namespace

int CmdSummarizeJob(int argc, char** argv) {
  std::vector<std::string> jobs;
  std::string store_dir, format = "csv", mysql_flag, cluster, config, redis_flag, file_system, output;
  po::options_description desc(kSummarizeUsage);
  desc.add_options()("help,h", "show this help")                                                     //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store (directory or Elasticsearch URL)")  //
      ("format", po::value(&format)->default_value("csv")->value_name("FMT"), "csv or json")          //
      ("no-phases", "do not compute the I/O phase counts")                                           //
      ("file-system", po::value(&file_system)->value_name("FS"),
       "the jobs' Lustre file system (fsname) for the fs_*/fshealth_* columns (default: from the mounts\n"
       "iosonar health saw, else the only file system with server records)")  //
      ("no-fs", "leave out the file-system columns")                                                  //
      ("output", po::value(&output)->value_name("OUT"),
       "also send each row as an iosonar.result.job_summary record to OUT (tcp://, Elasticsearch URL, file, -)")  //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache each row's JSON in Redis")          //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: user, job times, concurrent jobs; rows to job_tokio_summary")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the jobs' cluster in the job database")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::options_description hidden;
  hidden.add_options()("job-id", po::value(&jobs));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("job-id", -1);
  po::variables_map vm;
  if (int rc = ParseCommandLine("summarize-job", argc, argv, all, &vm, &pos, &desc); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("summarize-job", m); };
  if (jobs.empty()) return usage_error("missing JOB_ID");
  if (store_dir.empty()) return usage_error("missing --store DIR");
  if (format != "csv" && format != "json") return usage_error("--format must be csv or json");
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("summarize-job", 1, store.status().ToString());
  int rc = 0;
  Publisher pub("summarize-job", {output, redis_flag, mysql_flag, config});
  analysis::SummarizeJobOptions opt;
  opt.phases = !vm.count("no-phases");
  opt.fs_columns = !vm.count("no-fs");
  opt.file_system = file_system;
  std::vector<analysis::SummaryRow> rows;
  for (const auto& job : jobs) {
    auto jt = analysis::ReadJobTrace(*store.value(), job);
    if (!jt.ok()) {
      rc = CommandError("summarize-job", 1, jt.status().message());
      continue;
    }
    const analysis::JobSummary s = analysis::SummarizeTrace(*jt);
    analysis::JobDbContext db_part;
    pub.WithJobDb([&](JobDb& db) { return analysis::ReadJobDbContext(db, job, cluster, s, &db_part); });
    Status fs_status;
    rows.push_back(analysis::SummarizeJobRow(*store.value(), *jt, s, db_part, opt, &fs_status));
    if (!fs_status.ok()) {
      rc = CommandError("summarize-job", 1, "job ", job, ": file-system columns: ", fs_status.ToString());
    }
    const std::string row_json = analysis::SummaryRowToJson(rows.back());
    pub.Cache(cache::JobTokioSummaryKey(job), row_json);
    if (const auto& meta = db_part.job)
      pub.WithJobDb([&](JobDb& db) { return analysis::WriteTokioSummaryToDb(db.conn(), meta->cluster, meta->job_id, row_json); });
  }
  if (format == "json") std::cout << analysis::SummaryRowsToJson(rows) << "\n";
  else if (!rows.empty()) std::cout << analysis::SummaryRowsToCsv(rows);
  std::string recs;
  const std::string host = HostName();
  for (const auto& r : rows) recs += analysis::SummaryRowToRecord(r, host);
  if (!rows.empty()) pub.Send(recs);
  return std::max(rc, pub.rc());
}

int CmdScoreboard(int argc, char** argv) {
  std::string store_dir, format = "table", from, to, mysql_flag, cluster, config, redis_flag, output;
  size_t limit = 10;
  po::options_description desc(kScoreboardUsage);
  desc.add_options()("help,h", "show this help")                                                     //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store (directory or Elasticsearch URL)")  //
      ("from", po::value(&from)->value_name("TIME"), "period start, ISO-8601 (default: the beginning)")  //
      ("to", po::value(&to)->value_name("TIME"), "period end, ISO-8601, exclusive (default: now)")      //
      ("limit", po::value(&limit)->default_value(10)->value_name("N"), "entries per ranking")           //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "table or json")      //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: users and applications of the jobs")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the jobs' cluster in the job database")  //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache the scoreboard JSON in Redis")     //
      ("output", po::value(&output)->value_name("OUT"), "also send iosonar.result.scoreboard records to OUT")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseCommandLine("scoreboard", argc, argv, desc, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("scoreboard", m); };
  if (store_dir.empty()) return usage_error("missing --store DIR");
  if (format != "table" && format != "json") return usage_error("--format must be table or json");
  if (limit == 0) return usage_error("--limit must be at least 1");
  TimeRange range;
  if (!from.empty()) {
    auto t = ParseIso8601(from);
    if (!t) return usage_error("--from '" + from + "' is not an ISO-8601 time");
    range.start_ns = *t;
  }
  if (!to.empty()) {
    auto t = ParseIso8601(to);
    if (!t) return usage_error("--to '" + to + "' is not an ISO-8601 time");
    range.end_ns = *t;
  }
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("scoreboard", 1, store.status().ToString());
  auto tallies = analysis::TallyJobs(*store.value(), range);
  if (!tallies.ok()) return CommandError("scoreboard", 1, tallies.status().ToString());
  Publisher pub("scoreboard", {output, redis_flag, mysql_flag, config});
  Status named;
  pub.WithJobDb([&](JobDb& db) { return named = analysis::NameTalliesFromJobDb(db, cluster, &*tallies); });
  // (a failed job database is reported above; the ranking still prints, with the users it could not name as unknown)
  auto sb = analysis::MakeScoreboard(*tallies);
  const std::string json = analysis::ScoreboardToJson(sb, limit);
  if (format == "json") std::cout << json << "\n";
  else std::cout << TerminalSafe(analysis::ScoreboardToTable(sb, limit));

  analysis::ScoreboardPeriod period;
  period.cluster = cluster;
  period.from_ns = from.empty() ? 0 : range.start_ns;
  period.to_ns = to.empty() ? NowNs() / 1000000 * 1000000 : range.end_ns;
  const std::string from_iso = FormatIsoMillis(period.from_ns), to_iso = FormatIsoMillis(period.to_ns);
  if (pub.has_output()) {
    const std::string recs = analysis::ScoreboardToRecords(sb, limit, period, HostName());
    pub.Send(recs);
  }
  pub.Cache(cache::ScoreboardKey(cluster, from_iso, to_iso), json);
  if (named.ok()) pub.WithJobDb([&](JobDb& db) { return analysis::WriteScoreboardToDb(db.conn(), period, sb, limit); });
  return pub.rc();
}

}  // namespace iosonar::cli
