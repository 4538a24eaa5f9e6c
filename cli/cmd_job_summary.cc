// `iosonar job-summary`: the per-job I/O summary from the record store, as a
// report for people or JSON, optionally cached in Redis.
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "cache.h"
#include "commands.h"
#include "iosonar/es_store.h"
#include "iosonar/store.h"
#include "job-summary/job_summary.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

constexpr const char* kUsage =
    "usage: iosonar job-summary JOB_ID --store DIR [--format table|json] [--json FILE] [--redis URL] [--from-cache]\n"
    "\n"
    "Summarizes a job's I/O from its iosonar.trace records: bytes, ops, average and\n"
    "peak bandwidth, IOPS, request sizes, metadata load, processes and nodes doing\n"
    "I/O, and the I/O mode (N-N, N-1, N-M, 1-1) with the evidence for it.\n"
    "With a Redis URL (--redis, $IOSONAR_REDIS or `redis = URL` in the config file)\n"
    "the JSON is also cached under iosonar:job:JOB_ID:summary. A failed cache write\n"
    "is an error (exit 1) when --redis was given, a warning otherwise.\n"
    "\n"
    "Exit status: 0 done, 1 the job has no records or the store/Redis failed, 2 usage error.\n"
    "\n"
    "options";

}  // namespace

int CmdJobSummary(int argc, char** argv) {
  std::string job_id, store_dir, json_path, redis_flag, format = "table", config;
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
      ("config", po::value(&config)->value_name("FILE"), "config file (default $IOSONAR_CONFIG, ~/.config/iosonar/iosonar.conf)");
  po::options_description hidden;
  hidden.add_options()("job-id", po::value(&job_id));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("job-id", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "iosonar job-summary: " << e.what() << "\n(see iosonar job-summary --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  auto usage_error = [](const std::string& msg) {
    std::cerr << "iosonar job-summary: " << msg << "\n(see iosonar job-summary --help)\n";
    return 2;
  };
  if (job_id.empty()) return usage_error("missing JOB_ID");
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
    // issue 4: --store is a directory (SQLite, which must hold store.db, so a
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
  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::binary | std::ios::trunc);
    f << analysis::SummaryToJson(*summary, true);
    f.close();
    if (!f) {
      std::cerr << "iosonar job-summary: cannot write " << json_path << "\n";
      rc = 1;
    }
  }
  if (format == "json") std::cout << analysis::SummaryToJson(*summary, true);
  else std::cout << analysis::SummaryToTable(*summary);
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
