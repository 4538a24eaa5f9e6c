// `iosonar xlayer`: the cross-layer view of a job (analysis-jobs/xlayer), and
// `iosonar compress2`: second-pass inter-node compression of a job's trace
// (analysis-jobs/compress2).
#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>

#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/publish.h"
#include "core/base/host.h"
#include "core/jobdb/jobdb.h"
#include "core/store/es_store.h"
#include "analysis-jobs/compress2/compress2.h"
#include "analysis-jobs/xlayer/xlayer.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

// --maps FILE, then (with --mysql) the job database's maps through pub, then
// --getstripe FILE (its unparsed lines reported), into *maps. 0, or the exit
// status to stop with. *maps_failed: the job database failed as an input (an
// error, reported; the view falls back to --maps/--getstripe and the trace).
int GatherMaps(const std::string& job_id, const std::string& maps_path, const std::string& getstripe,
               const std::string& mysql_flag, const std::string& cluster, Publisher& pub, xlayer::Maps* maps,
               bool* maps_failed) {
  if (!maps_path.empty()) {
    auto text = ReadTextFile(maps_path);
    if (!text.ok()) return UsageError("xlayer", text.status().message());
    auto m = xlayer::MapsFromJson(text.value());
    if (!m.ok()) return CommandError("xlayer", 1, maps_path, ": ", m.status().message());
    *maps = std::move(m).value();
  }
  // The job database as an input only when --mysql was given.
  if (!mysql_flag.empty())
    pub.WithJobDb([&](JobDb& db) {
      Status st = xlayer::MapsFromJobDb(db, cluster, job_id, maps);
      *maps_failed = !st.ok();
      return st;
    });
  if (!getstripe.empty()) {
    auto text = ReadTextFile(getstripe);
    if (!text.ok()) return UsageError("xlayer", text.status().message());
    std::vector<xlayer::ParseIssue> issues;
    for (auto& L : xlayer::ParseGetstripe(text.value(), &issues)) maps->layouts[L.path] = std::move(L);
    for (size_t i = 0; i < issues.size() && i < 10; ++i)
      std::cerr << "iosonar xlayer: " << getstripe << ":" << issues[i].line << ": " << issues[i].what << " (skipped)\n";
    if (issues.size() > 10) std::cerr << "iosonar xlayer: " << getstripe << ": " << issues.size() - 10 << " more lines skipped\n";
  }
  return 0;
}

}  // namespace

int CmdXlayer(int argc, char** argv) {
  std::string job_id, store_dir, maps_path, getstripe, mysql, cluster, format = "table", json_path, redis, config, output;
  po::options_description desc(
      "usage: iosonar xlayer JOB_ID --store DIR|URL [--maps FILE] [--getstripe FILE] [--mysql URL [--cluster NAME]]\n"
      "                      [--format table|json] [--json FILE] [--redis URL] [--output OUT]\n"
      "\n"
      "The cross-layer view of a job: its client traces; through the node -> forwarding\n"
      "map the forwarding (Lustre client) layer; through the job's file -> OST layouts\n"
      "(or job_stats) its OSTs and MDTs. Per layer 1 s series of bandwidth, IOPS and\n"
      "metadata ops, each server's share of load from this job, and TOKIO's coverage\n"
      "factors (job bytes / file-system bytes over the job's window; opens; stats).\n"
      "Definitions: analysis-jobs/xlayer/xlayer.h.\n"
      "\n"
      "Results: with --mysql the view replaces the job's row of job_xlayer and its rows\n"
      "of job_server_share (one per forwarding node, OST and MDT: the job's share of\n"
      "that server's load); with --redis the JSON is cached under iosonar:job:JOB_ID:xlayer;\n"
      "with --output one iosonar.result.xlayer record and one iosonar.result.server_share\n"
      "record per server go to OUT (tcp://HOST:PORT, an Elasticsearch URL, a file or -).\n"
      "A failed write is an error (exit 1) when the flag was given, a warning when the\n"
      "URL came from $IOSONAR_MYSQL / $IOSONAR_REDIS or the config file.\n"
      "\n"
      "Exit status: 0 done, 1 the store or an input failed or a result write failed, 2 usage error.\n"
      "\n"
      "options");
  desc.add_options()("help,h", "show this help")                                                          //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store (SQLite directory or Elasticsearch URL)")  //
      ("maps", po::value(&maps_path)->value_name("FILE"), "jobs, node -> forwarding map and layouts as JSON (`iosonar simulate --maps`)")  //
      ("getstripe", po::value(&getstripe)->value_name("FILE"), "file layouts: saved `lfs getstripe` output of the job's files")  //
      ("mysql", po::value(&mysql)->value_name("URL"), "job database: the job's window and nodes, node_forwarding, file_layouts")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster in the job database")    //
      ("format", po::value(&format)->default_value("table"), "stdout: table or json")                 //
      ("json", po::value(&json_path)->value_name("FILE"), "also write the view as JSON to FILE")       //
      ("redis", po::value(&redis)->value_name("URL"), "cache the JSON under iosonar:job:JOB_ID:xlayer")  //
      ("output", po::value(&output)->value_name("OUT"), "also send iosonar.result.xlayer/server_share records to OUT")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseJobCommandLine("xlayer", argc, argv, desc, &job_id, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& msg) { return UsageError("xlayer", msg); };
  if (store_dir.empty()) return usage_error("missing --store DIR");
  if (format != "table" && format != "json") return usage_error("--format must be table or json");
  Publisher pub("xlayer", {output, redis, mysql, config});
  xlayer::Maps maps;
  bool maps_failed = false;
  if (int r = GatherMaps(job_id, maps_path, getstripe, mysql, cluster, pub, &maps, &maps_failed); r != 0) return r;
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("xlayer", 1, store.status().ToString());
  const auto t0 = std::chrono::steady_clock::now();
  auto v = xlayer::Analyze(*store.value(), job_id, maps);
  if (!v.ok()) return CommandError("xlayer", 1, v.status().ToString());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string json = xlayer::ToJson(v.value());
  std::cout << (format == "json" ? json : xlayer::ToTable(v.value()));
  std::cerr << "iosonar xlayer: analysed in " << secs << " s\n";
  int rc = 0;
  if (!json_path.empty())
    if (Status s = WriteTextFile(json_path, json); !s.ok()) {
      rc = CommandError("xlayer", 1, s.message());
    }
  const xlayer::View& view = v.value();
  if (pub.has_output()) pub.Send(xlayer::ToRecords(view, HostName()));
  pub.Cache(cache::JobXlayerKey(job_id), json);
  if (!maps_failed)
    pub.WithJob(job_id, cluster, [&](JobDb& db, const JobRecord& job) {
      return xlayer::WriteToDb(db.conn(), job.cluster, job.job_id, view, json);
    });
  return std::max(rc, pub.rc());
}

int CmdCompress2(int argc, char** argv) {
  std::string job_id, store_dir, redis, config, mysql, cluster, output;
  po::options_description desc(
      "usage: iosonar compress2 JOB_ID --store DIR|URL [--lossy] [--verify] [--redis URL]\n"
      "                         [--mysql URL [--cluster NAME]] [--output OUT]\n"
      "\n"
      "Second-pass, inter-node compression of a job's trace (Beacon §3.2): runs alike\n"
      "across nodes <time window, op, fd, size, offset pattern> are merged. Lossless\n"
      "by default (--verify decompresses and checks every record and the job summary);\n"
      "--lossy coarsens offsets, fds and times. Prints the ratio as JSON.\n"
      "\n"
      "Results: with --mysql the report replaces the job's row of job_compression for\n"
      "this mode (lossless or lossy); with --redis it is cached under\n"
      "iosonar:job:JOB_ID:compress2 (--lossy: iosonar:job:JOB_ID:compress2_lossy); with\n"
      "--output it goes to OUT as one iosonar.result.compression record. A failed\n"
      "write is an error (exit 1) when the flag was given, a warning when the URL came\n"
      "from $IOSONAR_MYSQL / $IOSONAR_REDIS or the config file.\n"
      "\n"
      "Exit status: 0 done, 1 the store failed, --verify found a difference or a result write failed, 2 usage error.\n"
      "\n"
      "options");
  desc.add_options()("help,h", "show this help")                                                  //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store")                //
      ("lossy", "coarsen offsets, fds and per-member times")                                     //
      ("verify", "decompress and compare with the stored records and their job summary")          //
      ("redis", po::value(&redis)->value_name("URL"), "cache the report under iosonar:job:JOB_ID:compress2")  //
      ("mysql", po::value(&mysql)->value_name("URL"), "job database: write the report to job_compression")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster in the job database")  //
      ("output", po::value(&output)->value_name("OUT"), "also send an iosonar.result.compression record to OUT")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseJobCommandLine("compress2", argc, argv, desc, &job_id, &vm); rc >= 0) return rc;
  if (store_dir.empty()) {
    return UsageError("compress2", "missing --store DIR");
  }
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("compress2", 1, store.status().ToString());
  auto recs = compress2::LoadJob(*store.value(), job_id);
  if (!recs.ok()) return CommandError("compress2", 1, recs.status().ToString());
  compress2::Options opt;
  opt.lossy = vm.count("lossy") > 0;
  auto c = compress2::Compress(recs.value(), opt);
  const std::string report = compress2::ReportJson(job_id, c);
  std::cout << TerminalSafe(report);
  int rc = 0;
  if (vm.count("verify")) {
    const auto rt = compress2::CheckRoundTrip(recs.value(), c);
    std::cerr << "iosonar compress2: records " << (rt.records_same ? "identical" : "DIFFER") << ", job summary "
              << (rt.summary_same ? "identical" : "DIFFERS") << "\n";
    if (!opt.lossy && !(rt.records_same && rt.summary_same)) rc = 1;
  }
  Publisher pub("compress2", {output, redis, mysql, config});
  if (pub.has_output()) pub.Send(compress2::ReportToRecords(job_id, c, HostName()));
  pub.Cache(cache::JobCompress2Key(job_id, opt.lossy), report);
  pub.WithJob(job_id, cluster, [&](JobDb& db, const JobRecord& job) {
    return compress2::WriteReportToDb(db.conn(), job.cluster, job.job_id, c);
  });
  return std::max(rc, pub.rc());
}

}  // namespace iosonar::cli
