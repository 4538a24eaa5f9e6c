// `iosonar simulate`: a deterministic cluster simulator (analysis-jobs/simulate,
// docs/simulator.md) writing consistent multi-layer records to a sink, or
// straight into an embedded store through the collector's batch path.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/jobdb/jobdb.h"
#include "core/store/es_store.h"
#include "core/transport/sink.h"
#include "core/store/sqlite_store.h"
#include "analysis-jobs/simulate/simulate.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

constexpr const char* kUsage =
    "usage: iosonar simulate [--store DIR | --output URL] [--nodes N --fwd F --osts S --mdts D | --scale taihulight]\n"
    "                        [--seed N] [--duration SEC] [--interval S] [--job SPEC]... [--slow-ost I] [--slow-fwd I] [--storm]\n"
    "                        [--no-trace] [--no-client] [--no-servers] [--no-brw]\n"
    "                        [--slow-ost-from S --slow-ost-to S] [--slow-fwd-from S --slow-fwd-to S]\n"
    "                        [--maps FILE] [--getstripe FILE] [--file-perf FILE] [--truth FILE] [--apps FILE] [--mysql URL]\n"
    "\n"
    "Simulates a cluster and writes consistent multi-layer records: client traces\n"
    "(iosonar.trace), forwarding-node Lustre client stats (iosonar.client: llite\n"
    "and osc), OST and MDT counters (iosonar.oss, iosonar.mds) and job_stats\n"
    "(iosonar.jobstats). Deterministic for a seed. Without --job, one job per I/O\n"
    "mode (N-N, N-1, N-M, 1-1) is generated (and a metadata storm with --storm).\n"
    "The side files give what an administrator's tools would: the jobs and the\n"
    "node -> forwarding map (--maps, JSON; or --mysql into the job database),\n"
    "layouts as `lfs getstripe` prints them, per-file performance as CSV\n"
    "(file,bytes,seconds,osts) for `iosonar bad-ost`, and the ground truth.\n"
    "\n"
    "Job SPEC: id=2001,mode=N-N,first=0,nodes=64,ppn=1,stripes=4,m=4,start=0,\n"
    "duration=20,period=5,io=2,bytes=64M,req=1M,read=1,meta=2000,phase=2G,cmd=./app%20-x\n"
    "(phase=B: bandwidth-bound phases of B bytes per rank, period seconds of compute between them)\n"
    "\n"
    "options";

// --scale, the --job SPECs (or the generated jobs, with --storm's storm); "" or a usage error.
std::string FinishConfig(sim::Config* cfg, const std::string& scale, const std::vector<std::string>& job_specs,
                         bool storm) {
  if (scale == "taihulight") {
    cfg->nodes = 40960;
    cfg->fwd = 288;
    cfg->osts = 400;
    cfg->mdts = 4;
  } else if (!scale.empty()) {
    return "--scale: only 'taihulight' is known, not '" + scale + "'";
  }
  for (const auto& spec : job_specs) {
    auto j = sim::ParseJobSpec(spec);
    if (!j.ok()) return j.status().message();
    cfg->jobs.push_back(j.value());
  }
  if (cfg->jobs.empty()) {
    if (storm) cfg->faults.storm_job = "1999";
    sim::GenerateJobs(cfg);
  }
  return "";
}

// The side files and the job database (--maps, --getstripe, --file-perf,
// --truth, --mysql); the last failure, if any.
struct SideOutputs {
  std::string maps, getstripe, file_perf, truth, apps, mysql;
};
Status WriteSideOutputs(const SideOutputs& o, const sim::Config& cfg, const sim::SimResult& res) {
  Status st;
  auto write = [&](const std::string& path, const std::function<std::string()>& text) {
    if (path.empty()) return;
    if (Status s = WriteTextFile(path, text()); !s.ok()) st = s;
  };
  write(o.maps, [&] { return sim::MapsJson(cfg, res); });
  write(o.getstripe, [&] { return sim::GetstripeText(res); });
  write(o.file_perf, [&] { return sim::FilePerfCsv(res); });
  write(o.truth, [&] { return sim::TruthJson(res); });
  write(o.apps, [&] { return sim::AppsText(cfg); });
  if (!o.mysql.empty()) {
    auto db = JobDb::Open(o.mysql);
    Status s = db.ok() ? sim::WriteToJobDb(*db.value(), cfg, res) : db.status();
    if (!s.ok()) st = Status(s.code(), "job database: " + s.message());
  }
  return st;
}

// The simulation into the store or the sink, then the side outputs and the
// counts on stderr; the exit status.
int RunSimulation(const sim::Config& cfg, const std::string& store_dir, const std::string& output,
                  const SideOutputs& side) {
  sim::SimResult res;
  Status st;
  const auto t0 = std::chrono::steady_clock::now();
  if (!store_dir.empty()) {
    auto store = OpenSqliteStore(store_dir);
    if (!store.ok()) return CommandError("simulate", 1, store.status().ToString());
    st = sim::SimulateIntoStore(cfg, *store.value(), &res);
  } else {
    SinkOptions so;
    so.es = EsOptionsFromEnv();  // an Elasticsearch URL: credentials, CA and namespace as for --store
    auto sink = OpenSink(output, so);
    if (!sink.ok()) return UsageError("simulate", sink.status().message());
    st = sim::SimulateToSink(cfg, *sink.value(), &res);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return CommandError("simulate", 1, st.ToString());
  st = WriteSideOutputs(side, cfg, res);
  std::fprintf(stderr, "iosonar simulate: %llu records (%.1f MB) in %.2f s, %.0f records/s; %zu jobs\n",
               static_cast<unsigned long long>(res.lines), static_cast<double>(res.bytes) / 1e6, secs,
               secs > 0 ? static_cast<double>(res.lines) / secs : 0.0, res.jobs.size());
  if (!st.ok()) return CommandError("simulate", 1, st.ToString());
  return 0;
}

}  // namespace

int CmdSimulate(int argc, char** argv) {
  sim::Config cfg;
  std::string store_dir, output, scale;
  SideOutputs side;
  std::vector<std::string> job_specs;
  int64_t seed = 1;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                                        //
      ("store", po::value(&store_dir)->value_name("DIR"), "write straight into the embedded store in DIR (fastest)")  //
      ("output", po::value(&output)->value_name("URL"), "JSON lines to tcp://HOST:PORT, a file, or - (stdout)")  //
      ("seed", po::value(&seed)->default_value(1), "random seed (same seed, same output)")            //
      ("scale", po::value(&scale)->value_name("NAME"), "taihulight: 40960 nodes, 288 forwarding nodes, 400 OSTs, 4 MDTs")  //
      ("nodes", po::value(&cfg.nodes)->default_value(64), "compute nodes")                           //
      ("fwd", po::value(&cfg.fwd)->default_value(4), "forwarding nodes (the Lustre clients)")         //
      ("osts", po::value(&cfg.osts)->default_value(16), "OSTs")                                       //
      ("mdts", po::value(&cfg.mdts)->default_value(1), "MDTs")                                        //
      ("duration", po::value(&cfg.duration_s)->default_value(30), "simulated seconds")                //
      ("interval", po::value(&cfg.interval_s)->default_value(1)->value_name("S"),
       "seconds each server/client-counter record covers (the exporter's --interval)")  //
      ("start", po::value(&cfg.start_ns)->value_name("NS"), "start time, ns since the epoch (default 2026-11-22T00:00:00Z)")  //
      ("cluster", po::value(&cfg.cluster)->default_value("sim"), "cluster name (job database)")       //
      ("fs", po::value(&cfg.fs)->default_value("simfs"), "Lustre file system name")                   //
      ("job", po::value(&job_specs)->value_name("SPEC"), "a job (repeatable; see above); none: one per I/O mode")  //
      ("slow-ost", po::value(&cfg.faults.slow_ost)->value_name("I"), "OST index whose bandwidth is cut")  //
      ("slow-ost-factor", po::value(&cfg.faults.slow_ost_factor)->default_value(0.25, "0.25"), "its bandwidth fraction")  //
      ("slow-fwd", po::value(&cfg.faults.slow_fwd)->value_name("I"), "forwarding node whose bandwidth is cut")  //
      ("slow-fwd-factor", po::value(&cfg.faults.slow_fwd_factor)->default_value(0.25, "0.25"), "its bandwidth fraction")  //
      ("slow-ost-from", po::value(&cfg.faults.slow_ost_from_s)->value_name("S"), "the OST is slow from second S of the run (default 0) ...")  //
      ("slow-ost-to", po::value(&cfg.faults.slow_ost_to_s)->value_name("S"), "... to second S (default: the end)")  //
      ("slow-fwd-from", po::value(&cfg.faults.slow_fwd_from_s)->value_name("S"), "the forwarding node is slow from second S ...")  //
      ("slow-fwd-to", po::value(&cfg.faults.slow_fwd_to_s)->value_name("S"), "... to second S")  //
      ("rank-bw", po::value(&cfg.rank_bw)->default_value(cfg.rank_bw)->value_name("B"), "bytes/s a rank reaches unimpeded")  //
      ("variability", po::value(&cfg.variability)->default_value(0.0, "0"),
       "share of rank-seconds whose data run differs from its peers' (0-1; real ranks are not in lockstep)")  //
      ("background-bytes", po::value(&cfg.background_bytes_per_ost_s)->default_value(cfg.background_bytes_per_ost_s)->value_name("B"),
       "untraced load per OST, bytes/s (uniform in [0, 2B))")  //
      ("background-meta", po::value(&cfg.background_meta_per_mdt_s)->default_value(cfg.background_meta_per_mdt_s)->value_name("N"),
       "untraced metadata ops per MDT per second (uniform in [0, 2N))")  //
      ("storm", "add a metadata-storm job (id 1999) to the generated jobs")                          //
      ("no-trace", "do not emit iosonar.trace")                                                      //
      ("no-client", "do not emit iosonar.client")                                                    //
      ("no-servers", "do not emit iosonar.oss, iosonar.brw, iosonar.mds, iosonar.jobstats")                //
      ("no-brw", "do not emit iosonar.brw (the OSTs' brw_stats; the other server records stay)")      //
      ("maps", po::value(&side.maps)->value_name("FILE"), "write jobs, node -> forwarding map and layouts as JSON")  //
      ("getstripe", po::value(&side.getstripe)->value_name("FILE"), "write the layouts as `lfs getstripe` output")  //
      ("file-perf", po::value(&side.file_perf)->value_name("FILE"), "write per-file performance CSV (file,bytes,seconds,osts)")  //
      ("truth", po::value(&side.truth)->value_name("FILE"), "write the ground truth as JSON")            //
      ("apps", po::value(&side.apps)->value_name("FILE"), "write JOB_ID<TAB>COMMAND LINE per job (for lassi/anomaly --apps)")  //
      ("mysql", po::value(&side.mysql)->value_name("URL"), "write jobs, node -> forwarding map, OSTs and layouts to the job database");
  po::variables_map vm;
  if (int rc = ParseCommandLine("simulate", argc, argv, desc, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("simulate", m); };
  if (!store_dir.empty() && !output.empty()) return usage_error("give --store or --output, not both");
  if (store_dir.empty() && output.empty()) output = "-";
  cfg.seed = static_cast<uint64_t>(seed);
  if (cfg.interval_s < 1) return usage_error("--interval must be >= 1");
  if (!(cfg.variability >= 0 && cfg.variability <= 1)) return usage_error("--variability must be in [0, 1]");
  if (cfg.background_bytes_per_ost_s < 0 || cfg.background_meta_per_mdt_s < 0)
    return usage_error("--background-bytes and --background-meta must be >= 0");
  cfg.emit_trace = !vm.count("no-trace");
  cfg.emit_client = !vm.count("no-client");
  cfg.emit_servers = !vm.count("no-servers");
  cfg.emit_brw = !vm.count("no-brw");
  if (std::string e = FinishConfig(&cfg, scale, job_specs, vm.count("storm") > 0); !e.empty()) return usage_error(e);
  return RunSimulation(cfg, store_dir, output, side);
}

}  // namespace iosonar::cli
