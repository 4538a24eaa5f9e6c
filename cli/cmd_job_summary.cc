// `iosonar job-summary`: the per-job I/O summary from the record store, as a
// report for people or JSON, optionally cached in Redis.
#include <boost/program_options.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>

#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "analysis-jobs/anomaly/anomaly.h"
#include "cli/publish.h"
#include "core/jobdb/jobdb.h"
#include "core/store/es_store.h"
#include "core/store/store.h"
#include "analysis-jobs/job-summary/job_meta.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/summarize/summarize.h"
#include "analysis-jobs/report/report.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

constexpr const char* kUsage =
    "usage: iosonar job-summary JOB_ID --store DIR [--format table|json] [--json FILE] [--redis URL] [--from-cache]\n"
    "                           [--mysql URL [--cluster NAME]] [--advice]\n"
    "\n"
    "Summarizes a job's I/O from its iosonar.trace records: bytes, ops, average and\n"
    "peak bandwidth, IOPS, request sizes, metadata load, processes and nodes doing\n"
    "I/O, and the I/O mode (N-N, N-1, N-M, 1-1) with the evidence for it.\n"
    "With a Redis URL (--redis, $IOSONAR_REDIS or `redis = URL` in the config file)\n"
    "the JSON is also cached under iosonar:job:JOB_ID:summary. A failed cache write\n"
    "is an error (exit 1) when --redis was given, a warning otherwise.\n"
    "With a job database (--mysql, $IOSONAR_MYSQL or `mysql = URL`) the job's metadata\n"
    "(user, nodes, times, state, exit code, command) is read from MySQL and shown with\n"
    "the summary (JSON: a \"job\" object), and the result is written to job_summary.\n"
    "A database failure is an error (exit 1) when --mysql was given, a warning otherwise.\n"
    "--advice prints the job's advice instead (as the web page's and the daily report's:\n"
    "each finding with its evidence and what to change; JSON: an array of {kind, evidence, change}).\n"
    "\n"
    "Exit status: 0 done, 1 the job has no records or the store/Redis failed, 2 usage error.\n"
    "\n"
    "options";

// The summary cached in Redis, if there is one; a failed read or a cached
// summary that does not parse is reported and passed over.
std::optional<analysis::JobSummary> FromCache(const std::string& redis_url, const std::string& job_id) {
  auto hit = cache::CachedJobSummary(redis_url, job_id);
  if (!hit.ok()) {
    std::cerr << "iosonar job-summary: reading the cache: " << hit.status().ToString() << "\n";
    return std::nullopt;
  }
  if (!hit.value()) return std::nullopt;
  auto parsed = analysis::SummaryFromJson(*hit.value());
  if (!parsed.ok()) {
    std::cerr << "iosonar job-summary: ignoring the cached summary: " << parsed.status().ToString() << "\n";
    return std::nullopt;
  }
  return std::move(parsed).value();
}

// The summary computed from the store; nullopt after saying why not.
std::optional<analysis::JobSummary> FromStore(const std::string& store_dir, const std::string& job_id,
                                              double volume_share) {
  // --store is a directory (SQLite, which must hold store.db, so a
  // mistyped directory does not look like an empty job) or an Elasticsearch URL.
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) {
    std::cerr << "iosonar job-summary: " << (store.status().code() == Code::kNotFound ? store.status().message()
                                                                                      : store.status().ToString())
              << "\n";
    return std::nullopt;
  }
  analysis::SummaryOptions opt;
  opt.mode.volume_share = volume_share;
  auto s = analysis::SummarizeJob(*store.value(), job_id, opt);
  if (!s.ok()) {
    if (s.status().code() == Code::kNotFound)
      std::cerr << "iosonar job-summary: job " << job_id << " has no trace records in the store " << store_dir << "\n";
    else
      std::cerr << "iosonar job-summary: " << s.status().ToString() << "\n";
    return std::nullopt;
  }
  return std::move(s).value();
}

}  // namespace

int CmdJobSummary(int argc, char** argv) {
  std::string job_id, store_dir, json_path, redis_flag, format = "table", config, mysql_flag, cluster;
  double volume_share = 0.9;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                           //
      ("store", po::value(&store_dir)->value_name("DIR|URL"),
       "the record store directory (as given to `iosonar collect`), or an Elasticsearch URL (https://HOST:9200; "
       "credentials from IOSONAR_ES_USER/IOSONAR_ES_PASSWORD or IOSONAR_ES_API_KEY, CA from IOSONAR_ES_CA_FILE)")  //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "stdout: table (a report) or json")  //
      ("json", po::value(&json_path)->value_name("FILE"), "also write the summary as JSON to FILE")  //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache the summary JSON in Redis at URL (redis://HOST:PORT/DB)")  //
      ("from-cache", "print the summary cached in Redis if there is one, else compute it")  //
      ("volume-share", po::value(&volume_share)->default_value(0.9, "0.9")->value_name("X"),
       "I/O mode: files and processes carrying this share of the bytes decide it; the rest are minor")  //
      ("config", po::value(&config)->value_name("FILE"), "config file (default $IOSONAR_CONFIG, ~/.config/iosonar/iosonar.conf)")  //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: read the job's metadata, write job_summary")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster in the job database (default: the only one with this job id)")  //
      ("advice", "print the job's advice (findings, evidence, what to change) instead of the summary");
  po::variables_map vm;
  if (int rc = ParseJobCommandLine("job-summary", argc, argv, desc, &job_id, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("job-summary", m); };
  if (format != "table" && format != "json") return usage_error("--format must be table or json, not '" + format + "'");
  if (!(volume_share > 0 && volume_share <= 1)) return usage_error("--volume-share must be in (0, 1]");
  const bool from_cache = vm.count("from-cache") > 0;
  Publisher pub("job-summary", {"", redis_flag, mysql_flag, config});
  if (from_cache && pub.redis_url().empty()) return usage_error("--from-cache needs a Redis URL (--redis or $IOSONAR_REDIS)");

  std::optional<analysis::JobSummary> summary;
  if (from_cache) summary = FromCache(pub.redis_url(), job_id);
  const bool cached = summary.has_value();
  if (!summary) {
    if (store_dir.empty())
      return usage_error(from_cache ? "job " + job_id + " is not in the cache; --store DIR computes it"
                                    : std::string("missing --store DIR"));
    summary = FromStore(store_dir, job_id, volume_share);
    if (!summary) return 1;
  }

  // The join with the job database: metadata in, job_summary out.
  std::optional<analysis::JobMeta> meta;
  std::string verdict, verdict_json;  // the anomaly analysis's stored verdict, when there is one
  pub.WithJob(job_id, cluster, [&](JobDb& db, const JobRecord& job) {
    meta = analysis::JobMeta{job, {}};
    if (auto v = anomaly::StoredVerdictLine(db.conn(), job.cluster, job.job_id); v.ok()) verdict = *v;
    if (auto v = anomaly::StoredVerdictJson(db.conn(), job.cluster, job.job_id); v.ok()) verdict_json = *v;
    if (auto n = db.JobNodes(job.cluster, job.job_id); n.ok()) meta->nodes = std::move(n).value();
    Status w = db.WriteJobSummary(analysis::ToJobSummaryRow(*summary, job.cluster, job.job_id));
    return w.ok() ? w : Status(w.code(), "writing job_summary: " + w.message());
  });
  const analysis::JobMeta* m = meta ? &*meta : nullptr;

  int rc = 0;
  if (vm.count("advice")) {
    report::ReportInput in;
    in.summaries.emplace(job_id, *summary);
    const auto advice = report::FindAdvice(in);
    std::string out;
    if (format == "json") {
      JsonWriter w(&out, 2);
      w.BeginArray();
      for (const auto& a : advice) {
        KvObject(w, "kind", a.kind, "evidence", a.evidence, "change", a.change);
      }
      w.EndArray();
      out += "\n";
    } else if (advice.empty()) {
      out = "No issue found.\n";
    } else {
      for (const auto& a : advice) out += "- " + a.kind + ": " + a.evidence + "\n  " + a.change + "\n";
    }
    std::cout << (format == "json" ? out : TerminalSafe(out));
    std::cout.flush();
    return pub.rc();
  }
  if (!json_path.empty())
    if (Status s = WriteTextFile(json_path, analysis::WithMember(analysis::SummaryJsonWithJob(*summary, m, true),
                                                                 "anomaly", verdict_json, true));
        !s.ok()) {
      rc = CommandError("job-summary", 1, s.message());
    }
  if (format == "json")
    std::cout << analysis::WithMember(analysis::SummaryJsonWithJob(*summary, m, true), "anomaly", verdict_json, true);
  else std::cout << TerminalSafe((m ? analysis::JobMetaToTable(*m) : "") + verdict + analysis::SummaryToTable(*summary));
  std::cout.flush();
  if (!cached) pub.Cache(cache::JobSummaryKey(job_id), analysis::SummaryToJson(*summary, false));
  return std::max(rc, pub.rc());
}

}  // namespace iosonar::cli
