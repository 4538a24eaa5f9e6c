// `iosonar simulate`: a deterministic cluster simulator (analysis-jobs/simulate,
// docs/simulator.md) writing consistent multi-layer records to a sink, or
// straight into an embedded store through the collector's batch path.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/jobdb/hostlist.h"
#include "core/jobdb/jobdb.h"
#include "core/transport/sink.h"
#include "core/store/sqlite_store.h"
#include "analysis-jobs/simulate/simulate.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

constexpr const char* kUsage =
    "usage: iosonar simulate [--store DIR | --output URL] [--nodes N --fwd F --osts S --mdts D | --scale taihulight]\n"
    "                        [--seed N] [--duration SEC] [--job SPEC]... [--slow-ost I] [--slow-fwd I] [--storm]\n"
    "                        [--maps FILE] [--getstripe FILE] [--file-perf FILE] [--truth FILE] [--mysql URL]\n"
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
    "duration=20,period=5,io=2,bytes=64M,req=1M,read=1,meta=2000\n"
    "\n"
    "options";

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::Io("cannot open " + path + " for writing");
  f << text;
  f.close();
  if (!f) return Status::Io("writing " + path + " failed");
  return Status::Ok();
}

Status WriteMysql(const std::string& url, const sim::Config& cfg, const sim::SimResult& r) {
  auto db = JobDb::Open(url);
  if (!db.ok()) return db.status();
  if (Status s = db.value()->Migrate(); !s.ok()) return s;
  for (size_t k = 0; k < r.jobs.size() && k < cfg.jobs.size(); ++k) {
    const sim::JobTruth& t = r.jobs[k];
    const sim::JobSpec& s = cfg.jobs[k];
    JobRecord j;
    j.cluster = cfg.cluster;
    char* end = nullptr;
    j.job_id = std::strtoull(t.id.c_str(), &end, 10);
    if (t.id.empty() || *end) return Status::Invalid("--mysql needs numeric job ids, not '" + t.id + "'");
    j.user = s.user;
    j.name = s.name;
    j.command = "sim " + std::string(sim::ModeName(s.mode));
    j.node_list = CompressHostlist(t.nodes);
    j.node_count = static_cast<int64_t>(t.nodes.size());
    j.task_count = static_cast<int64_t>(t.nodes.size()) * s.procs_per_node;
    j.submit_ns = t.start_ns;
    j.start_ns = t.start_ns;
    j.end_ns = t.end_ns;
    j.state = "COMPLETED";
    j.exit_code = 0;
    j.source = "sacct";
    if (Status st = db.value()->Upsert(j); !st.ok()) return st;
    for (const auto& [o, b] : t.ost_bytes)
      if (Status st = db.value()->AddJobOst(cfg.cluster, j.job_id, cfg.fs, sim::OstName(cfg.fs, o)); !st.ok()) return st;
  }
  auto& c = db.value()->conn();
  // Bulk inserts: 40,960 nodes one statement each would take minutes.
  auto flush = [&](std::string& sql, std::vector<SqlParam>& params, const char* head, const char* tail) -> Status {
    if (params.empty()) return Status::Ok();
    auto rr = c.Exec(std::string(head) + sql + tail, params);
    sql.clear();
    params.clear();
    return rr.ok() ? Status::Ok() : rr.status();
  };
  std::string sql;
  std::vector<SqlParam> params;
  const char* fwd_head = "INSERT INTO node_forwarding (node, fwd_node) VALUES ";
  const char* fwd_tail = " ON DUPLICATE KEY UPDATE fwd_node = VALUES(fwd_node)";
  for (int n = 0; n < cfg.nodes; ++n) {
    sql += params.empty() ? "(?, ?)" : ", (?, ?)";
    params.push_back(sim::NodeName(n));
    params.push_back(sim::FwdName(sim::FwdOf(cfg, n)));
    if (params.size() >= 2000)
      if (Status s = flush(sql, params, fwd_head, fwd_tail); !s.ok()) return s;
  }
  if (Status s = flush(sql, params, fwd_head, fwd_tail); !s.ok()) return s;
  const char* ost_head = "INSERT INTO filesystem_osts (filesystem, ost, oss) VALUES ";
  const char* ost_tail = " ON DUPLICATE KEY UPDATE oss = VALUES(oss)";
  for (int o = 0; o < cfg.osts; ++o) {
    char oss[16];
    std::snprintf(oss, sizeof oss, "oss%03d", o / std::max(1, cfg.osts_per_oss));
    sql += params.empty() ? "(?, ?, ?)" : ", (?, ?, ?)";
    params.push_back(cfg.fs);
    params.push_back(sim::OstName(cfg.fs, o));
    params.push_back(std::string(oss));
  }
  if (Status s = flush(sql, params, ost_head, ost_tail); !s.ok()) return s;
  const char* lay_head = "INSERT INTO file_layouts (cluster, job_id, filesystem, path, stripe_size, osts, mdt) VALUES ";
  const char* lay_tail = " ON DUPLICATE KEY UPDATE stripe_size = VALUES(stripe_size), osts = VALUES(osts), mdt = VALUES(mdt)";
  for (const auto& L : r.layouts) {
    std::string osts;
    for (size_t i = 0; i < L.osts.size(); ++i) osts += (i ? "," : "") + std::to_string(L.osts[i]);
    sql += params.empty() ? "(?, ?, ?, ?, ?, ?, ?)" : ", (?, ?, ?, ?, ?, ?, ?)";
    params.push_back(cfg.cluster);
    params.push_back(static_cast<int64_t>(std::strtoll(L.job_id.c_str(), nullptr, 10)));
    params.push_back(cfg.fs);
    params.push_back(L.path);
    params.push_back(L.stripe_size);
    params.push_back(osts);
    params.push_back(static_cast<int64_t>(L.mdt));
    if (params.size() >= 7 * 500)
      if (Status s = flush(sql, params, lay_head, lay_tail); !s.ok()) return s;
  }
  return flush(sql, params, lay_head, lay_tail);
}

}  // namespace

int CmdSimulate(int argc, char** argv) {
  sim::Config cfg;
  std::string store_dir, output, maps, getstripe, file_perf, truth, mysql, scale;
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
      ("start", po::value(&cfg.start_ns)->value_name("NS"), "start time, ns since the epoch (default 2026-11-22T00:00:00Z)")  //
      ("cluster", po::value(&cfg.cluster)->default_value("sim"), "cluster name (job database)")       //
      ("fs", po::value(&cfg.fs)->default_value("simfs"), "Lustre file system name")                   //
      ("job", po::value(&job_specs)->value_name("SPEC"), "a job (repeatable; see above); none: one per I/O mode")  //
      ("slow-ost", po::value(&cfg.faults.slow_ost)->value_name("I"), "OST index whose bandwidth is cut")  //
      ("slow-ost-factor", po::value(&cfg.faults.slow_ost_factor)->default_value(0.25, "0.25"), "its bandwidth fraction")  //
      ("slow-fwd", po::value(&cfg.faults.slow_fwd)->value_name("I"), "forwarding node whose bandwidth is cut")  //
      ("slow-fwd-factor", po::value(&cfg.faults.slow_fwd_factor)->default_value(0.25, "0.25"), "its bandwidth fraction")  //
      ("variability", po::value(&cfg.variability)->default_value(0.0, "0"),
       "share of rank-seconds whose data run differs from its peers' (0-1; real ranks are not in lockstep)")  //
      ("background-bytes", po::value(&cfg.background_bytes_per_ost_s)->default_value(cfg.background_bytes_per_ost_s)->value_name("B"),
       "untraced load per OST, bytes/s (uniform in [0, 2B))")  //
      ("background-meta", po::value(&cfg.background_meta_per_mdt_s)->default_value(cfg.background_meta_per_mdt_s)->value_name("N"),
       "untraced metadata ops per MDT per second (uniform in [0, 2N))")  //
      ("storm", "add a metadata-storm job (id 1999) to the generated jobs")                          //
      ("no-trace", "do not emit iosonar.trace")                                                      //
      ("no-client", "do not emit iosonar.client")                                                    //
      ("no-servers", "do not emit iosonar.oss, iosonar.mds, iosonar.jobstats")                       //
      ("maps", po::value(&maps)->value_name("FILE"), "write jobs, node -> forwarding map and layouts as JSON")  //
      ("getstripe", po::value(&getstripe)->value_name("FILE"), "write the layouts as `lfs getstripe` output")  //
      ("file-perf", po::value(&file_perf)->value_name("FILE"), "write per-file performance CSV (file,bytes,seconds,osts)")  //
      ("truth", po::value(&truth)->value_name("FILE"), "write the ground truth as JSON")            //
      ("mysql", po::value(&mysql)->value_name("URL"), "write jobs, node -> forwarding map, OSTs and layouts to the job database");
  po::variables_map vm;
  if (int rc = ParseCommandLine("simulate", argc, argv, desc, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("simulate", m); };
  if (!store_dir.empty() && !output.empty()) return usage_error("give --store or --output, not both");
  if (store_dir.empty() && output.empty()) output = "-";
  cfg.seed = static_cast<uint64_t>(seed);
  if (!(cfg.variability >= 0 && cfg.variability <= 1)) return usage_error("--variability must be in [0, 1]");
  if (cfg.background_bytes_per_ost_s < 0 || cfg.background_meta_per_mdt_s < 0)
    return usage_error("--background-bytes and --background-meta must be >= 0");
  if (scale == "taihulight") {
    cfg.nodes = 40960;
    cfg.fwd = 288;
    cfg.osts = 400;
    cfg.mdts = 4;
  } else if (!scale.empty()) {
    return usage_error("--scale: only 'taihulight' is known, not '" + scale + "'");
  }
  cfg.emit_trace = !vm.count("no-trace");
  cfg.emit_client = !vm.count("no-client");
  cfg.emit_servers = !vm.count("no-servers");
  for (const auto& spec : job_specs) {
    auto j = sim::ParseJobSpec(spec);
    if (!j.ok()) return usage_error(j.status().message());
    cfg.jobs.push_back(j.value());
  }
  if (cfg.jobs.empty()) {
    if (vm.count("storm")) cfg.faults.storm_job = "1999";
    sim::GenerateJobs(&cfg);
  }

  sim::SimResult res;
  Status st;
  const auto t0 = std::chrono::steady_clock::now();
  if (!store_dir.empty()) {
    auto store = OpenSqliteStore(store_dir);
    if (!store.ok()) {
      std::cerr << "iosonar simulate: " << store.status().ToString() << "\n";
      return 1;
    }
    st = sim::SimulateIntoStore(cfg, *store.value(), &res);
  } else {
    auto sink = OpenSink(output, SinkOptions{});
    if (!sink.ok()) return usage_error(sink.status().message());
    std::string buf;
    uint64_t n = 0;
    st = sim::Simulate(cfg, [&](std::string_view line) -> Status {
      buf.append(line);
      buf.push_back('\n');
      if (++n >= 4096) {
        Status s = sink.value()->Send(buf, n);
        buf.clear();
        n = 0;
        return s;
      }
      return Status::Ok();
    }, &res);
    if (st.ok() && n) st = sink.value()->Send(buf, n);
    if (st.ok()) st = sink.value()->Flush();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::cerr << "iosonar simulate: " << st.ToString() << "\n";
    return 1;
  }
  if (!maps.empty())
    if (Status s = WriteFile(maps, sim::MapsJson(cfg, res)); !s.ok()) st = s;
  if (!getstripe.empty())
    if (Status s = WriteFile(getstripe, sim::GetstripeText(res)); !s.ok()) st = s;
  if (!file_perf.empty())
    if (Status s = WriteFile(file_perf, sim::FilePerfCsv(res)); !s.ok()) st = s;
  if (!truth.empty())
    if (Status s = WriteFile(truth, sim::TruthJson(res)); !s.ok()) st = s;
  if (!mysql.empty())
    if (Status s = WriteMysql(mysql, cfg, res); !s.ok()) st = Status(s.code(), "job database: " + s.message());
  std::fprintf(stderr, "iosonar simulate: %llu records (%.1f MB) in %.2f s, %.0f records/s; %zu jobs\n",
               static_cast<unsigned long long>(res.lines), static_cast<double>(res.bytes) / 1e6, secs,
               secs > 0 ? static_cast<double>(res.lines) / secs : 0.0, res.jobs.size());
  if (!st.ok()) {
    std::cerr << "iosonar simulate: " << st.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace iosonar::cli
