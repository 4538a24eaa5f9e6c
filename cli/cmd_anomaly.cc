// `iosonar anomaly`: a finished job's I/O phases against its application's
// earlier runs at the same scale (DBSCAN), interference evidence from its
// neighbours and lagging servers inside it (analysis-jobs/anomaly).
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "analysis-jobs/anomaly/alert.h"
#include "analysis-jobs/anomaly/anomaly.h"
#include "analysis-jobs/lassi/results.h"
#include "analysis-jobs/xlayer/xlayer.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/publish.h"
#include "core/base/host.h"
#include "core/jobdb/jobdb.h"
#include "core/store/es_store.h"
#include "core/store/store.h"
#include "redis-cache/cache.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {
constexpr const char* kUsage =
    "usage: iosonar anomaly JOB_ID --store DIR|URL [--mysql URL [--cluster NAME] | --apps FILE] [--maps FILE]\n"
    "                       [--eps E] [--min-samples N] [--min-history N] [--node-tolerance F]\n"
    "                       [--high-mdops R] [--high-bw B] [--high-iops R] [--n1-min-nodes N] [--server-factor 2]\n"
    "                       [--large-job-nodes N]\n"
    "                       [--format table|json] [--redis URL] [--output OUT]\n"
    "                       [--alert-to ADDRS --smtp URL --alert-state FILE [--alert-job-nodes 1024]]\n"
    "(with --mysql the result also replaces the job's rows of job_anomaly, job_anomaly_neighbour\n"
    "and job_server_outlier; --redis caches it under iosonar:job:JOB_ID:anomaly)\n"
    "\n"
    "Beacon's job I/O anomaly detection: the job's I/O phases (duration, volume) are\n"
    "compared with the phases of the same application's earlier runs (same\n"
    "application key, jobs.app_key, as the prolog or the sacct poller stored it; the\n"
    "same command line for a job whose row has no app_key, which the output says; node\n"
    "count within --node-tolerance) by DBSCAN on\n"
    "(log10 duration_s, log10 bytes). Verdict: normal, anomalous (a phase outside\n"
    "every cluster of the history) or not_enough_history. For an anomalous job, the\n"
    "jobs that shared a forwarding node or an OST with it during the anomalous\n"
    "phases, ranked by interference evidence (high_mdops, high_bw, high_iops,\n"
    "n1_mode); for large jobs (and anomalous ones), the forwarding nodes and OSTs\n"
    "that lagged their peers. Application keys come from the job database (--mysql) or\n"
    "--apps FILE (JOB_ID<TAB>COMMAND LINE, keyed as lassi does); the node -> forwarding map from --maps\n"
    "(the simulator's JSON) or the job database. docs/anomaly.md has the details.\n"
    "\n"
    "Exit status: 0 done, 1 the job has no phases or a store/database failure, 2 usage error.\n"
    "\n"
    "options";
}  // namespace

Status LoadJobSourceFiles(const std::string& apps, const std::string& maps, anomaly::JobSource* src) {
  if (!apps.empty()) {
    auto a = anomaly::LoadApps(apps);
    if (!a.ok()) return Status::Invalid("--apps: " + a.status().message());
    src->apps = std::move(*a);
  }
  if (!maps.empty()) {
    auto text = ReadTextFile(maps);
    if (!text.ok()) return Status::Invalid("--maps: " + text.status().message());
    auto m = xlayer::MapsFromJson(*text);
    if (!m.ok()) return Status::Invalid("--maps " + maps + ": " + m.status().message());
    src->node_fwd = m->node_fwd;
    for (const auto& [path, L] : m->layouts) {
      if (m->fs.empty()) break;
      auto& names = src->file_osts[path];
      for (int o : L.osts) {
        char b[16];
        std::snprintf(b, sizeof b, "-OST%04x", o);
        names.push_back(m->fs + b);
      }
    }
  }
  return Status::Ok();
}

int CmdAnomaly(int argc, char** argv) {
  std::string job_id, store_dir, format = "table", apps, maps, cluster, config, output, redis_flag, mysql_flag;
  std::string alert_to, alert_from, alert_state, smtp_flag, smtp_user;
  int64_t alert_job_nodes = 1024;
  anomaly::Options opt;
  int64_t min_samples = static_cast<int64_t>(opt.min_samples), min_history = static_cast<int64_t>(opt.min_history);
  int64_t max_history = static_cast<int64_t>(opt.max_history), min_runs = static_cast<int64_t>(opt.min_runs);
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                                  //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store (directory or Elasticsearch URL)")  //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: command lines, node counts, maps")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster in the job database")  //
      ("apps", po::value(&apps)->value_name("FILE"), "JOB_ID<TAB>COMMAND LINE per job (no job database)")  //
      ("maps", po::value(&maps)->value_name("FILE"), "node -> forwarding map as JSON (iosonar simulate --maps)")  //
      ("eps", po::value(&opt.eps)->default_value(opt.eps, "0.1"), "DBSCAN radius in log10 units (0.1: ~26 %)")  //
      ("min-samples", po::value(&min_samples)->default_value(min_samples), "DBSCAN min_samples (the point itself counts)")  //
      ("min-history", po::value(&min_history)->default_value(min_history), "earlier runs needed for a verdict")  //
      ("min-runs", po::value(&min_runs)->default_value(min_runs), "runs that must share a cluster for it to count as known")  //
      ("max-history", po::value(&max_history)->default_value(max_history), "most recent earlier runs used")  //
      ("node-tolerance", po::value(&opt.node_tolerance)->default_value(opt.node_tolerance, "0.1"),
       "same scale: node counts within this fraction")  //
      ("high-mdops", po::value(&opt.high_mdops)->default_value(opt.high_mdops, "300"), "metadata ops/s (Beacon: 300)")  //
      ("high-bw", po::value(&opt.high_bw)->default_value(opt.high_bw, "1073741824"), "bytes/s")  //
      ("high-iops", po::value(&opt.high_iops)->default_value(opt.high_iops, "10000"), "data ops/s")  //
      ("n1-min-nodes", po::value(&opt.n1_min_nodes)->default_value(opt.n1_min_nodes),
       "n1_mode: an N-1 neighbour doing I/O from more nodes than this (Beacon: 32)")  //
      ("server-factor", po::value(&opt.server_factor)->default_value(opt.server_factor, "2"),
       "a server whose cost per request is this many times its peers' or its history's is named")  //
      ("large-job-nodes", po::value(&opt.large_job_nodes)->default_value(opt.large_job_nodes),
       "without brw/osc records: node count from which servers' I/O times are compared (Beacon: 1024)")  //
      ("server-eps", po::value(&opt.server_eps)->default_value(opt.server_eps, "0.15"), "DBSCAN radius for servers (log10)")  //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "table or json")  //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache the JSON in Redis")  //
      ("output", po::value(&output)->value_name("OUT"), "also send iosonar.result.anomaly records to OUT")  //
      ("alert-to", po::value(&alert_to)->value_name("ADDRS"), "e-mail the administrators (comma-separated) about lagging servers ...")  //
      ("alert-job-nodes", po::value(&alert_job_nodes)->default_value(alert_job_nodes), "... in jobs of at least this many nodes")  //
      ("alert-state", po::value(&alert_state)->value_name("FILE"), "jobs already alerted (each is e-mailed once)")  //
      ("alert-from", po::value(&alert_from)->value_name("ADDR"), "sender (default iosonar@HOST)")  //
      ("smtp", po::value(&smtp_flag)->value_name("URL"), "mail server smtp://HOST:PORT or smtps:// ($IOSONAR_SMTP)")  //
      ("smtp-user", po::value(&smtp_user)->value_name("USER"), "SMTP AUTH user (password from $IOSONAR_SMTP_PASSWORD)")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseJobCommandLine("anomaly", argc, argv, desc, &job_id, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("anomaly", m); };
  if (store_dir.empty()) return usage_error("missing --store DIR");
  if (format != "table" && format != "json") return usage_error("--format must be table or json, not '" + format + "'");
  if (!(opt.eps > 0) || !(opt.server_eps > 0)) return usage_error("--eps and --server-eps must be > 0");
  if (!(opt.server_factor > 1)) return usage_error("--server-factor must be > 1");
  if (min_samples < 1 || min_history < 1 || max_history < 1 || min_runs < 1)
    return usage_error("--min-samples, --min-history, --min-runs and --max-history must be >= 1");
  opt.min_runs = static_cast<size_t>(min_runs);
  if (!(opt.node_tolerance >= 0)) return usage_error("--node-tolerance must be >= 0");
  opt.min_samples = static_cast<size_t>(min_samples);
  opt.min_history = static_cast<size_t>(min_history);
  opt.max_history = static_cast<size_t>(max_history);

  anomaly::AlertOptions alert;
  if (!alert_to.empty()) {
    if (alert_state.empty()) return usage_error("--alert-to needs --alert-state FILE (to send each alert once)");
    alert.smtp.url = ResolveSetting(smtp_flag, "IOSONAR_SMTP", "smtp", config);
    if (alert.smtp.url.empty()) return usage_error("--alert-to needs --smtp URL (or $IOSONAR_SMTP)");
    alert.smtp.user = smtp_user;
    if (const char* pw = std::getenv("IOSONAR_SMTP_PASSWORD")) alert.smtp.password = pw;
    for (size_t pos = 0; pos <= alert_to.size();) {
      size_t c = alert_to.find(',', pos);
      if (c == std::string::npos) c = alert_to.size();
      if (c > pos) alert.to.push_back(alert_to.substr(pos, c - pos));
      pos = c + 1;
    }
    alert.from = alert_from.empty() ? "iosonar@" + HostName() : alert_from;
    alert.job_nodes = alert_job_nodes;
    alert.store = store_dir;
  }
  anomaly::JobSource src;
  src.cluster = cluster;
  if (Status st = LoadJobSourceFiles(apps, maps, &src); !st.ok()) return usage_error(st.message());
  Publisher pub("anomaly", {output, redis_flag, mysql_flag, config});
  std::unique_ptr<JobDb> db;
  if (!pub.mysql_url().empty() && src.apps.empty()) {
    auto d = JobDb::Open(pub.mysql_url());
    if (!d.ok()) return CommandError("anomaly", 1, "job database: ", d.status().ToString());
    db = std::move(*d);
    src.db = db.get();
    if (src.node_fwd.empty()) {  // the whole map: the neighbours' nodes too
      auto f = db->ForwardingMap();
      if (!f.ok()) return CommandError("anomaly", 1, "job database: ", f.status().ToString());
      for (const auto& [n, fw] : *f) src.node_fwd[n] = fw;
    }
  }
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("anomaly", 1, store.status().ToString());
  auto res = anomaly::Analyze(*store.value(), job_id, src, opt);
  if (!res.ok()) return CommandError("anomaly", 1, res.status().ToString());
  const std::string json = anomaly::ToJson(*res, true);
  if (format == "json") std::cout << json;
  else std::cout << TerminalSafe(anomaly::ToTable(*res));
  if (pub.has_output()) pub.Send(anomaly::ToRecords(*res, HostName()));
  pub.Cache(cache::JobResultKey(job_id, "anomaly"), anomaly::ToJson(*res, false));
  pub.WithJob(job_id, cluster, [&](JobDb& d, const JobRecord& job) {
    return anomaly::WriteToDb(d.conn(), job.cluster, job.job_id, *res);
  });
  int rc = 0;
  if (!alert.to.empty()) {
    auto ids = anomaly::LoadAlerted(alert_state);
    int sent = 0;
    Status s = ids.ok() ? anomaly::AlertJob(*res, alert, &*ids, &sent) : ids.status();
    if (s.ok() && sent) s = anomaly::SaveAlerted(alert_state, *ids);
    if (!s.ok()) {
      rc = CommandError("anomaly", 1, "alert: ", s.ToString());
    }
  }
  return std::max(rc, pub.rc());
}

}  // namespace iosonar::cli
