// `iosonar job-summary`: the per-job I/O summary from the record store, as a
// report for people or JSON, optionally cached in Redis.
#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/store/es_store.h"
#include "core/jobdb/jobdb.h"
#include "core/base/json.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/job-summary/job_summary.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

constexpr const char* kUsage =
    "usage: iosonar job-summary JOB_ID --store DIR [--format table|json] [--json FILE] [--redis URL] [--from-cache]\n"
    "                           [--mysql URL [--cluster NAME]]\n"
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
    "\n"
    "Exit status: 0 done, 1 the job has no records or the store/Redis failed, 2 usage error.\n"
    "\n"
    "options";

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
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster in the job database (default: the only one with this job id)");
  po::variables_map vm;
  if (int rc = ParseJobCommandLine("job-summary", argc, argv, desc, &job_id, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("job-summary", m); };
  if (format != "table" && format != "json") return usage_error("--format must be table or json, not '" + format + "'");
  if (!(volume_share > 0 && volume_share <= 1)) return usage_error("--volume-share must be in (0, 1]");
  const bool from_cache = vm.count("from-cache") > 0;
  const std::string redis_url = ResolveSetting(redis_flag, "IOSONAR_REDIS", "redis", config);
  if (from_cache && redis_url.empty()) return usage_error("--from-cache needs a Redis URL (--redis or $IOSONAR_REDIS)");

  std::optional<analysis::JobSummary> summary;
  bool cached = false;
  if (from_cache) {
    auto hit = cache::CachedJobSummary(redis_url, job_id);
    if (!hit.ok()) {
      std::cerr << "iosonar job-summary: reading the cache: " << hit.status().ToString() << "\n";
    } else if (hit.value()) {
      auto parsed = analysis::SummaryFromJson(*hit.value());
      if (parsed.ok()) {
        summary = std::move(parsed).value();
        cached = true;
      } else {
        std::cerr << "iosonar job-summary: ignoring the cached summary: " << parsed.status().ToString() << "\n";
      }
    }
  }

  if (!summary) {
    if (store_dir.empty())
      return usage_error(from_cache ? "job " + job_id + " is not in the cache; --store DIR computes it"
                                    : std::string("missing --store DIR"));
    // --store is a directory (SQLite, which must hold store.db, so a
    // mistyped directory does not look like an empty job) or an Elasticsearch URL.
    auto store = OpenStoreAt(store_dir);
    if (!store.ok()) {
      std::cerr << "iosonar job-summary: " << (store.status().code() == Code::kNotFound ? store.status().message()
                                                                                        : store.status().ToString())
                << "\n";
      return 1;
    }
    analysis::SummaryOptions opt;
    opt.mode.volume_share = volume_share;
    auto s = analysis::SummarizeJob(*store.value(), job_id, opt);
    if (!s.ok()) {
      if (s.status().code() == Code::kNotFound)
        std::cerr << "iosonar job-summary: job " << job_id << " has no trace records in the store " << store_dir
                  << "\n";
      else
        std::cerr << "iosonar job-summary: " << s.status().ToString() << "\n";
      return 1;
    }
    summary = std::move(s).value();
  }

  int rc = 0;
  // The join with the job database: metadata in, job_summary out.
  const std::string mysql_url = ResolveSetting(mysql_flag, "IOSONAR_MYSQL", "mysql", config);
  std::optional<JobRecord> meta;
  std::vector<std::string> meta_nodes;
  if (!mysql_url.empty()) {
    auto fail = [&](const std::string& msg) {
      std::cerr << "iosonar job-summary: " << (mysql_flag.empty() ? "warning: " : "") << "job database: " << msg << "\n";
      if (!mysql_flag.empty()) rc = 1;
    };
    char* end = nullptr;
    unsigned long long numeric = std::strtoull(job_id.c_str(), &end, 10);
    auto db = JobDb::Open(mysql_url);
    if (!db.ok()) {
      fail(db.status().ToString());
    } else if (job_id.empty() || *end != '\0') {
      fail("job id '" + job_id + "' is not a Slurm job number");
    } else {
      std::string cl = cluster;
      if (cl.empty()) {
        auto cls = db.value()->ClustersOf(numeric);
        if (!cls.ok()) fail(cls.status().ToString());
        else if (cls->size() == 1) cl = cls->front();
        else if (cls->size() > 1) fail("job " + job_id + " exists on several clusters; give --cluster");
        else fail("job " + job_id + " is not in the job database");
      }
      if (!cl.empty()) {
        auto g = db.value()->Get(cl, numeric);
        if (!g.ok()) fail(g.status().ToString());
        else if (!g.value()) fail("job " + job_id + " on " + cl + " is not in the job database");
        else {
          meta = *g.value();
          auto n = db.value()->JobNodes(cl, numeric);
          if (n.ok()) meta_nodes = std::move(n).value();
        }
        JobSummaryRow row;
        row.cluster = cl;
        row.job_id = numeric;
        row.runtime_s = summary->runtime_s;
        row.read_bytes = summary->read.bytes;
        row.write_bytes = summary->write.bytes;
        row.read_ops = summary->read.ops;
        row.write_ops = summary->write.ops;
        row.read_bw_avg = summary->read.bw_avg;
        row.read_bw_peak = summary->read.bw_peak;
        row.write_bw_avg = summary->write.bw_avg;
        row.write_bw_peak = summary->write.bw_peak;
        row.read_iops = summary->read.iops;
        row.write_iops = summary->write.iops;
        row.meta_ops = summary->meta_ops;
        row.meta_ops_per_s = summary->meta_ops_per_s;
        row.processes_with_io = summary->processes_with_io;
        row.nodes_with_io = summary->nodes_with_io;
        row.files = summary->files;
        row.errors = summary->errors;
        row.io_mode_read = summary->mode_read.mode;
        row.io_mode_write = summary->mode_write.mode;
        row.summary_json = analysis::SummaryToJson(*summary, false);
        if (meta) {
          Status w = db.value()->WriteJobSummary(row);
          if (!w.ok()) fail("writing job_summary: " + w.ToString());
        }
      }
    }
  }
  auto meta_json = [&](int indent) {
    std::string out;
    JsonWriter w(&out, indent);
    w.BeginObject();
    w.Kv("cluster", meta->cluster);
    w.Kv("job_id", static_cast<int64_t>(meta->job_id));
    auto opt_s = [&](const char* k, const std::optional<std::string>& v) {
      w.Key(k);
      if (v) w.String(*v);
      else w.Null();
    };
    auto opt_i = [&](const char* k, const std::optional<int64_t>& v) {
      w.Key(k);
      if (v) w.Int(*v);
      else w.Null();
    };
    auto opt_t = [&](const char* k, const std::optional<int64_t>& v) {
      w.Key(k);
      if (v) w.String(FormatIsoMillis(*v));
      else w.Null();
    };
    opt_s("user", meta->user);
    opt_s("name", meta->name);
    opt_s("command", meta->command);
    opt_s("partition", meta->partition);
    opt_s("node_list", meta->node_list);
    w.Key("nodes");
    w.BeginArray();
    for (const auto& n : meta_nodes) w.String(n);
    w.EndArray();
    opt_i("array_job_id", meta->array_job_id);
    opt_i("array_task_id", meta->array_task_id);
    opt_t("start", meta->start_ns);
    opt_t("end", meta->end_ns);
    opt_s("state", meta->state);
    opt_i("exit_code", meta->exit_code);
    w.EndObject();
    return out;
  };
  // The summary JSON with the job's metadata added as a top-level "job" object.
  auto with_meta = [&](std::string js, bool pretty) {
    if (!meta) return js;
    size_t close = js.find_last_of('}');
    if (close == std::string::npos) return js;
    std::string m = meta_json(pretty ? 2 : 0);
    js.insert(close, std::string(pretty ? ",\n  " : ",") + "\"job\": " + m + (pretty ? "\n" : ""));
    if (pretty) {  // trailing whitespace before the inserted text
      size_t ins = js.rfind(",\n  \"job\"");
      while (ins > 0 && (js[ins - 1] == '\n' || js[ins - 1] == ' ')) js.erase(--ins, 1);
    }
    return js;
  };

  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::binary | std::ios::trunc);
    f << with_meta(analysis::SummaryToJson(*summary, true), true);
    f.close();
    if (!f) {
      std::cerr << "iosonar job-summary: cannot write " << json_path << "\n";
      rc = 1;
    }
  }
  if (format == "json") {
    std::cout << with_meta(analysis::SummaryToJson(*summary, true), true);
  } else {
    if (meta) {
      auto v = [](const std::optional<std::string>& s) { return s ? *s : std::string("-"); };
      std::cout << "Job " << meta->job_id << " on " << meta->cluster << " (job database)\n"
                << "  user       " << v(meta->user) << "\n"
                << "  name       " << v(meta->name) << "\n"
                << "  command    " << v(meta->command) << "\n"
                << "  nodes      " << v(meta->node_list) << " (" << meta_nodes.size() << ")\n"
                << "  start      " << (meta->start_ns ? FormatIsoMillis(*meta->start_ns) : "-") << "\n"
                << "  end        " << (meta->end_ns ? FormatIsoMillis(*meta->end_ns) : "-") << "\n"
                << "  state      " << v(meta->state)
                << (meta->exit_code ? " (exit code " + std::to_string(*meta->exit_code) + ")" : "") << "\n\n";
    }
    std::cout << analysis::SummaryToTable(*summary);
  }
  std::cout.flush();

  if (!redis_url.empty() && !cached) {
    Status st = cache::CacheJobSummary(redis_url, job_id, analysis::SummaryToJson(*summary, false));
    if (!st.ok()) {
      std::cerr << "iosonar job-summary: " << (redis_flag.empty() ? "warning: " : "")
                << "caching the summary: " << st.ToString() << "\n";
      if (!redis_flag.empty()) rc = 1;
    }
  }
  return rc;
}

}  // namespace iosonar::cli
