#include "analysis-jobs/anomaly/anomaly.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis-jobs/anomaly/dbscan.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::anomaly {

std::optional<std::pair<std::string, double>> N1Evidence(const std::vector<analysis::TraceRun>& runs,
                                                         uint64_t min_nodes) {
  if (runs.empty()) return std::nullopt;
  const analysis::JobSummary js = analysis::Summarize(runs);
  if (js.nodes_with_io <= min_nodes) return std::nullopt;
  // The job's mode is that of the direction moving more bytes (as
  // summarize-job's result.io_mode): ranks writing a file each after reading
  // one shared input are N-N.
  const bool write = js.write.bytes >= js.read.bytes;
  const analysis::ModeEvidence& m = write ? js.mode_write : js.mode_read;
  if (m.mode != "N-1") return std::nullopt;
  return std::pair{std::string(write ? "write" : "read") + " N-1 from " + std::to_string(m.kept_processes) +
                       " processes on " + std::to_string(js.nodes_with_io) + " nodes",
                   static_cast<double>(js.nodes_with_io)};
}

namespace {

constexpr int64_t kSec = 1000000000;

bool IsMetaOp(std::string_view op) {
  return op == "open" || op == "close" || op == "stat" || op == "access" || op == "unlink" || op == "rename" ||
         op == "mkdir" || op == "rmdir";
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// What the store says of a job: its nodes and window (trace records).
struct JobFacts {
  std::set<std::string> nodes;
  int64_t start_ns = std::numeric_limits<int64_t>::max(), end_ns = std::numeric_limits<int64_t>::min();
};

Result<JobFacts> FactsFromStore(Store& store, const std::string& job_id) {
  JobFacts f;
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, job_id}};
  q.fields = {field::kHostName, field::kTimestamp, field::kEventEndNs};
  q.ordered = false;
  std::string last;
  Status st = store.Scan(q, [&](const Row& r) {
    std::string_view h = r.Str(0);
    if (h != last) {
      last = std::string(h);
      f.nodes.insert(last);
    }
    f.start_ns = std::min(f.start_ns, r.Int(1));
    if (r.Has(2)) f.end_ns = std::max(f.end_ns, r.Int(2));
    return true;
  });
  if (!st.ok()) return st;
  if (f.nodes.empty()) return Status::NotFound("job " + job_id + " has no trace records in the store");
  return f;
}

struct Run {
  std::string id;
  int64_t nodes = 0;
  int64_t start_ns = 0, end_ns = 0;
  std::string command;
  std::string app_key;  // "" when matched by command
  std::string match;    // app_key, command or apps_file (AnomalyResult::history_match)
  std::string cluster;  // the job database's cluster of the job ("" without one)
};

// The job itself: command, nodes and window from the job database, else the apps file and the store.
Result<Run> DescribeJob(Store& store, const std::string& job_id, const JobSource& src) {
  Run r;
  r.id = job_id;
  if (src.db) {
    auto j = src.db->FindJob(job_id, src.cluster);
    if (!j.ok()) return j.status();
    r.command = j->command.value_or("");
    r.cluster = j->cluster;
    // The key the prolog or the poller stored (jobs.app_key); a row written
    // before that column has none, and its runs are matched by command line.
    if (j->app_key && !j->app_key->empty()) {
      r.app_key = *j->app_key;
      r.match = "app_key";
    } else {
      r.match = "command";
    }
    r.nodes = j->node_count.value_or(0);
    r.start_ns = j->start_ns.value_or(0);
    r.end_ns = j->end_ns.value_or(0);
  }
  if (auto it = src.apps.find(job_id); it != src.apps.end()) {
    r.command = it->second;
    r.app_key = ApplicationKey(it->second, "");  // as lassi's --apps: one key everywhere
    r.match = "apps_file";
  }
  if (r.nodes == 0 || r.start_ns == 0) {
    auto f = FactsFromStore(store, job_id);
    if (!f.ok()) return f.status();
    if (r.nodes == 0) r.nodes = static_cast<int64_t>(f->nodes.size());
    if (r.start_ns == 0) r.start_ns = f->start_ns;
    if (r.end_ns == 0) r.end_ns = f->end_ns;
  }
  return r;
}

bool SameScale(int64_t nodes, int64_t job_nodes, double tol) {
  return std::fabs(static_cast<double>(nodes - job_nodes)) <= tol * static_cast<double>(job_nodes) + 1e-9;
}

// Earlier runs of the same application at the same scale, most recent first:
// the same jobs.app_key (or, for a job whose row has none, the same command
// line), or the same ApplicationKey of the apps file's command lines.
Result<std::vector<Run>> History(Store& store, const Run& job, const JobSource& src, const Options& opt) {
  std::vector<Run> out;
  if (job.match == "app_key" ? job.app_key.empty() : job.command.empty()) return out;
  if (src.db && src.apps.empty()) {
    std::string cluster = src.cluster;
    if (cluster.empty()) {
      auto j = src.db->FindJob(job.id, "");
      if (j.ok()) cluster = j->cluster;
    }
    const size_t limit = opt.max_history * 4 + 10;
    auto runs = job.match == "app_key" ? src.db->EarlierRunsOfApp(cluster, job.app_key, job.command, job.start_ns, limit)
                                       : src.db->EarlierRunsByCommand(cluster, job.command, job.start_ns, limit);
    if (!runs.ok()) return runs.status();
    for (const auto& j : *runs) {
      if (std::to_string(j.job_id) == job.id) continue;
      Run r{std::to_string(j.job_id), j.node_count.value_or(0), j.start_ns.value_or(0), j.end_ns.value_or(0), job.command};
      if (r.nodes == 0) {
        auto f = FactsFromStore(store, r.id);
        if (!f.ok()) continue;
        r.nodes = static_cast<int64_t>(f->nodes.size());
      }
      if (!SameScale(r.nodes, job.nodes, opt.node_tolerance)) continue;
      out.push_back(r);
      if (out.size() >= opt.max_history) break;
    }
    return out;
  }
  for (const auto& [id, cmd] : src.apps) {
    if (id == job.id || ApplicationKey(cmd, "") != job.app_key) continue;
    auto f = FactsFromStore(store, id);
    if (!f.ok()) continue;  // not in the store: not a run we can compare with
    if (f->end_ns > job.start_ns) continue;  // not earlier
    Run r{id, static_cast<int64_t>(f->nodes.size()), f->start_ns, f->end_ns, cmd};
    if (!SameScale(r.nodes, job.nodes, opt.node_tolerance)) continue;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const Run& a, const Run& b) { return a.start_ns > b.start_ns; });
  if (out.size() > opt.max_history) out.resize(opt.max_history);
  return out;
}

void Features(const analysis::Phase& p, double* x) {
  x[0] = std::log10(std::max(1e-3, static_cast<double>(p.duration_ns) / 1e9));
  x[1] = std::log10(std::max(1.0, static_cast<double>(p.bytes)));
}

// Clusters the history's phases per direction and labels the job's phases.
struct HistPhase {
  analysis::Phase phase;
  size_t run = 0;
};

void Classify(const std::vector<HistPhase>& hist, AnomalyResult* res, const Options& opt) {
  int base = 0;
  for (const char* dir : {"read", "write"}) {
    std::vector<double> pts;
    std::vector<double> bw;
    std::vector<size_t> run;
    for (const auto& h : hist)
      if (h.phase.direction == dir) {
        double x[2];
        Features(h.phase, x);
        pts.insert(pts.end(), x, x + 2);
        bw.push_back(h.phase.bw_mean);
        run.push_back(h.run);
      }
    auto db = analysis::Dbscan(pts, 2, opt.eps, opt.min_samples);
    // A cluster is a known pattern only when min_runs different runs have
    // phases in it: one slow run's many phases do not vouch for each other.
    std::map<int, std::set<size_t>> runs_of;
    for (size_t i = 0; i < db.labels.size(); ++i)
      if (db.labels[i] >= 0) runs_of[db.labels[i]].insert(run[i]);
    for (size_t i = 0; i < db.labels.size(); ++i)
      if (db.labels[i] >= 0 && runs_of[db.labels[i]].size() < opt.min_runs) db.core[i] = false;
    const double hist_bw = Median(bw);
    const double eps2 = opt.eps * opt.eps;
    for (auto& pr : res->phases) {
      if (pr.phase.direction != dir) continue;
      double x[2];
      Features(pr.phase, x);
      double best = std::numeric_limits<double>::infinity();
      int label = -1;
      for (size_t i = 0; i < db.labels.size(); ++i) {
        if (!db.core[i]) continue;
        const double d0 = x[0] - pts[2 * i], d1 = x[1] - pts[2 * i + 1];
        const double d2 = d0 * d0 + d1 * d1;
        if (d2 <= eps2 && d2 < best) {
          best = d2;
          label = db.labels[i] + base;
        }
      }
      pr.cluster = label;
      if (label < 0 && pr.phase.bw_mean > 0 && hist_bw > 0) pr.slowdown = hist_bw / pr.phase.bw_mean;
    }
    base += db.clusters;
  }
}

// ---- neighbours ----
struct Activity {
  std::set<std::string> hosts;
  std::set<int64_t> seconds;
  double md_ops = 0, data_ops = 0, bytes = 0;
  std::vector<analysis::TraceRun> data_runs;  // its traced reads and writes in the window (its I/O mode)
  std::set<std::string> osts;
  // from job_stats when the job is not traced
  std::set<int64_t> js_seconds;
  double js_md_ops = 0, js_data_ops = 0, js_bytes = 0;
};

std::string FwdOf(const JobSource& src, const std::string& host) {
  auto it = src.node_fwd.find(host);
  return it == src.node_fwd.end() ? std::string() : it->second;
}

Status ScanWindow(Store& store, int64_t t0, int64_t t1, std::map<std::string, Activity>* acts) {
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.range = {t0, t1};
  q.fields = {field::kJobId, field::kHostName, field::kTimestamp, field::kIoOp,     field::kIoCount,
              field::kIoBytes, field::kFileId,  field::kProcessPid, field::kIoLayer, field::kFilePath};
  q.ordered = false;
  // mpiio runs (the MPI-IO layer) are the POSIX bytes again: counted once, as POSIX.
  Status st = store.Scan(q, [&](const Row& r) {
    if (!r.Has(0) || (r.Has(8) && r.Str(8) == "mpiio")) return true;
    Activity& a = (*acts)[std::string(r.Str(0))];
    a.hosts.insert(std::string(r.Str(1)));
    a.seconds.insert(r.Int(2) / kSec);
    const std::string_view op = r.Str(3);
    const double n = r.Has(4) ? static_cast<double>(r.Int(4)) : 1;
    if (op == "read" || op == "write") {
      a.data_ops += n;
      if (r.Has(5)) a.bytes += static_cast<double>(r.Int(5));
      if (r.Has(5) && r.Int(5) > 0) {
        analysis::TraceRun t;
        t.host = std::string(r.Str(1));
        t.pid = r.Has(7) ? r.Int(7) : 0;
        t.op = std::string(op);
        t.layer = "posix";
        if (r.Has(6)) t.file_id = std::string(r.Str(6));
        if (r.Has(9)) t.file_path = std::string(r.Str(9));
        t.count = static_cast<int64_t>(n);
        t.bytes = r.Int(5);
        t.start_ns = t.end_ns = r.Int(2);
        a.data_runs.push_back(std::move(t));
      }
    } else if (IsMetaOp(op)) {
      a.md_ops += n;
    }
    return true;
  });
  if (!st.ok()) return st;
  // Server records cover [@timestamp - 1 s, @timestamp): read one more second.
  ScanQuery j;
  j.dataset = dataset::kJobstats;
  j.range = {t0 + kSec, t1 + kSec};
  j.fields = {field::kJobId, field::kLustreTarget, field::kTimestamp, field::kOssReadBytes, field::kOssWriteBytes,
              field::kOssReadOps, field::kOssWriteOps, field::kMdsOps};
  j.ordered = false;
  return store.Scan(j, [&](const Row& r) {
    if (!r.Has(0)) return true;
    Activity& a = (*acts)[std::string(r.Str(0))];
    const std::string target(r.Str(1));
    a.js_seconds.insert(r.Int(2) / kSec);
    const double b = (r.Has(3) ? static_cast<double>(r.Int(3)) : 0) + (r.Has(4) ? static_cast<double>(r.Int(4)) : 0);
    const double ops = (r.Has(5) ? static_cast<double>(r.Int(5)) : 0) + (r.Has(6) ? static_cast<double>(r.Int(6)) : 0);
    a.js_bytes += b;
    a.js_data_ops += ops;
    if (r.Has(7)) a.js_md_ops += static_cast<double>(r.Int(7));
    if (target.find("-OST") != std::string::npos && (b > 0 || ops > 0)) a.osts.insert(target);
    return true;
  });
}

void FindNeighbours(Store& store, AnomalyResult* res, const JobSource& src, const Options& opt) {
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  for (const auto& p : res->phases)
    if (p.cluster < 0) {
      t0 = std::min(t0, p.phase.start_ns);
      t1 = std::max(t1, p.phase.start_ns + p.phase.duration_ns);
    }
  if (t0 >= t1) return;
  std::map<std::string, Activity> acts;
  if (!ScanWindow(store, t0, t1, &acts).ok()) return;
  auto me = acts.find(res->job_id);
  if (me == acts.end()) return;
  std::set<std::string> my_fwd;
  for (const auto& h : me->second.hosts)
    if (auto f = FwdOf(src, h); !f.empty()) my_fwd.insert(f);
  const std::set<std::string>& my_osts = me->second.osts;
  for (auto& [id, a] : acts) {
    if (id == res->job_id) continue;
    Neighbour n;
    n.job_id = id;
    std::set<std::string> shared;
    for (const auto& h : a.hosts)
      if (auto f = FwdOf(src, h); !f.empty() && my_fwd.count(f)) shared.insert(f);
    for (const auto& o : a.osts)
      if (my_osts.count(o)) shared.insert(o);
    if (shared.empty()) continue;
    n.shared.assign(shared.begin(), shared.end());
    const bool traced = !a.seconds.empty();
    const double secs = static_cast<double>(std::max<size_t>(1, traced ? a.seconds.size() : a.js_seconds.size()));
    n.overlap_s = static_cast<int64_t>(secs);
    n.md_ops_per_s = (traced ? a.md_ops : a.js_md_ops) / secs;
    n.bytes_per_s = (traced ? a.bytes : a.js_bytes) / secs;
    n.data_ops_per_s = (traced ? a.data_ops : a.js_data_ops) / secs;
    auto check = [&](double v, double thr, const char* what) {
      if (thr > 0 && v > thr) {
        n.evidence.push_back(what);
        n.score = std::max(n.score, v / thr);
      }
    };
    check(n.md_ops_per_s, opt.high_mdops, "high_mdops");
    check(n.bytes_per_s, opt.high_bw, "high_bw");
    check(n.data_ops_per_s, opt.high_iops, "high_iops");
    // N-1 (Beacon §4.3): the neighbour's decided I/O mode over its reads and
    // writes in the window (the job summary's rule, 90 % of the bytes), with
    // Beacon's size condition ("particularly when N is large (e.g., over 32
    // compute nodes)"). An N-N job whose ranks also read one small input
    // file is N-N, not an N-1 interferer.
    if (auto m = N1Evidence(a.data_runs, opt.n1_min_nodes)) {
      n.io_mode = m->first;
      n.evidence.push_back("n1_mode");
      if (opt.n1_min_nodes > 0) n.score = std::max(n.score, m->second / static_cast<double>(opt.n1_min_nodes));
    }
    res->neighbours.push_back(std::move(n));
  }
  std::sort(res->neighbours.begin(), res->neighbours.end(), [](const Neighbour& x, const Neighbour& y) {
    if (x.evidence.size() != y.evidence.size()) return x.evidence.size() > y.evidence.size();
    if (x.score != y.score) return x.score > y.score;
    if (x.overlap_s != y.overlap_s) return x.overlap_s > y.overlap_s;
    return x.job_id < y.job_id;
  });
}

// ---- servers inside the job ----
struct ServerLoad {
  double bytes = 0;
  std::set<int64_t> seconds;
};

bool Outliers(const std::string& kind, const std::map<std::string, ServerLoad>& load, AnomalyResult* res,
              const Options& opt) {
  std::vector<std::string> names;
  std::vector<double> pts, bw, secs;
  for (const auto& [name, l] : load) {
    if (l.bytes <= 0 || l.seconds.empty()) continue;
    const double s = static_cast<double>(l.seconds.size());
    names.push_back(name);
    bw.push_back(l.bytes / s);
    secs.push_back(s);
    pts.push_back(std::log10(s));
  }
  if (names.size() < 3) return false;
  const auto db = analysis::Dbscan(pts, 1, opt.server_eps, opt.server_min_samples);
  std::map<int, int> sizes;
  for (int l : db.labels)
    if (l >= 0) sizes[l]++;
  if (sizes.empty()) return false;
  int major = -1, best = 0;
  for (auto [l, n] : sizes)
    if (n > best) major = l, best = n;
  std::vector<double> peer_s;
  for (size_t i = 0; i < names.size(); ++i)
    if (db.labels[i] == major) peer_s.push_back(secs[i]);
  const double ms = Median(peer_s);
  for (size_t i = 0; i < names.size(); ++i) {
    // Lagging: apart from the peers and busy longer than they were.
    if (db.labels[i] == major || secs[i] <= ms) continue;
    ServerOutlier o;
    o.kind = kind;
    o.name = names[i];
    o.bandwidth = bw[i];
    o.bandwidth_ratio = ms / secs[i];
    o.io_time_s = secs[i];
    o.cost_s = secs[i] - ms;
    o.peers = best;
    o.peer_io_time_s = ms;
    o.evidence.rule = "io_time";
    res->server_outliers.push_back(o);
  }
  return true;
}

// Cross-layer attribution. A slow forwarding node stretches the I/O time of
// the OSTs its ranks write to, and a slow OST that of the forwarding nodes in
// front of its ranks, so both layers can list a server that only waited for
// the other. The Lustre clients' osc records (iosonar.client, per forwarding
// node and OST, per second) tell them apart: an OST whose RPCs from the
// forwarding nodes that do not lag ended with its peers (busy for some
// seconds, but no more than the peers' median) was only slowed by the lagging
// forwarding nodes; then a forwarding node whose RPCs to the OSTs still
// lagging ended with its peers was only slowed by those OSTs. Such servers
// leave the list (explained_by names the others). Without osc records nothing
// changes.
Status Attribute(Store& store, AnomalyResult* res) {
  std::set<std::string> lag_fwd, lag_ost;
  for (const auto& o : res->server_outliers) (o.kind == "ost" ? lag_ost : lag_fwd).insert(o.name);
  if (lag_fwd.empty() || lag_ost.empty()) return Status::Ok();
  // (fwd, ost) -> seconds with RPCs
  std::map<std::pair<std::string, std::string>, std::set<int64_t>> rpc;
  ScanQuery q;
  q.dataset = dataset::kClient;
  q.range = {res->start_ns, res->end_ns + 2 * kSec};
  q.filters = {{field::kClientLayer, "osc"}};
  q.fields = {field::kHostName, field::kLustreTarget, field::kTimestamp, field::kClientRpcReads, field::kClientRpcWrites};
  q.ordered = false;
  Status st = store.Scan(q, [&](const Row& r) {
    const int64_t n = (r.Has(3) ? r.Int(3) : 0) + (r.Has(4) ? r.Int(4) : 0);
    if (n <= 0 || !r.Has(1)) return true;
    const std::string_view t = r.Str(1);
    const size_t osc = t.find("-osc-");
    rpc[{std::string(r.Str(0)), std::string(t.substr(0, osc))}].insert(r.Int(2) / kSec);
    return true;
  });
  if (!st.ok() || rpc.empty()) return st;
  auto healthy_time = [&](const std::string& name, bool ost, const std::set<std::string>& lagging) {
    std::set<int64_t> secs;
    for (const auto& [key, s] : rpc) {
      const std::string& self = ost ? key.second : key.first;
      const std::string& other = ost ? key.first : key.second;
      if (self == name && !lagging.count(other)) secs.insert(s.begin(), s.end());
    }
    return static_cast<double>(secs.size());
  };
  auto explain = [&](bool ost, const std::set<std::string>& others) {
    for (auto& o : res->server_outliers) {
      if ((o.kind == "ost") != ost) continue;
      const double h = healthy_time(o.name, ost, others);
      if (h > 0 && h <= o.peer_io_time_s) {
        for (const auto& x : others) o.explained_by += (o.explained_by.empty() ? "" : ",") + x;
        (ost ? lag_ost : lag_fwd).erase(o.name);
      }
    }
  };
  explain(true, lag_fwd);   // OSTs that only waited for lagging forwarding nodes
  explain(false, lag_ost);  // forwarding nodes that only waited for the OSTs still lagging
  std::vector<ServerOutlier> kept, explained;
  for (auto& o : res->server_outliers) (o.explained_by.empty() ? kept : explained).push_back(std::move(o));
  res->server_outliers = std::move(kept);
  res->explained_servers = std::move(explained);
  return Status::Ok();
}

// ---- demand-aware attribution (docs/anomaly.md, "Which server slowed the job") ----
// What the servers' own signals say about [from, to): per OST the brw_stats
// I/O time per I/O, and per server the RPCs in flight its OSCs saw against
// what the same paths' other ends saw (the queue ratio of screen.h).
struct WindowCosts {
  std::map<std::string, double> svc_ms;  // OST -> mean I/O time per I/O
  std::map<std::string, double> depth;   // kind:name -> RPC-weighted RPCs in flight
  std::map<std::string, double> ref_depth;  // kind:name -> the reference depth on the same paths
  bool any = false;                      // any brw or osc record
};

Result<WindowCosts> Costs(Store& store, int64_t from_ns, int64_t to_ns) {
  WindowCosts w;
  const TimeRange range{from_ns, to_ns + 2 * kSec};
  std::map<std::string, std::pair<double, double>> brw;  // OST -> (ios, ms)
  ScanQuery b;
  b.dataset = dataset::kBrw;
  b.range = range;
  b.filters = {{field::kBrwHist, "io_time_ms"}};
  b.fields = {field::kLustreTarget, field::kBrwBucket, field::kBrwRead, field::kBrwWrite};
  b.ordered = false;
  Status st = store.Scan(b, [&](const Row& r) {
    if (!r.Has(0) || !r.Has(1)) return true;
    const std::string_view t = r.Str(0);
    if (t.find("-OST") == std::string_view::npos) return true;
    const double n = (r.Has(2) ? static_cast<double>(r.Int(2)) : 0) + (r.Has(3) ? static_cast<double>(r.Int(3)) : 0);
    if (n <= 0) return true;
    auto& x = brw[std::string(t)];
    x.first += n;
    x.second += n * static_cast<double>(r.Int(1));
    return true;
  });
  if (!st.ok()) return st;
  for (const auto& [o, x] : brw) w.svc_ms[o] = x.second / x.first;
  // (fwd, ost) -> (rpcs, rpcs x depth)
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> pairs;
  ScanQuery q;
  q.dataset = dataset::kClient;
  q.range = range;
  q.filters = {{field::kClientLayer, "osc"}};
  q.fields = {field::kHostName, field::kLustreTarget, field::kClientRpcReads, field::kClientRpcWrites,
              field::kClientRpcReadInFlightMean, field::kClientRpcWriteInFlightMean};
  q.ordered = false;
  st = store.Scan(q, [&](const Row& r) {
    if (!r.Has(0) || !r.Has(1)) return true;
    const double rr = r.Has(2) ? static_cast<double>(r.Int(2)) : 0, rw = r.Has(3) ? static_cast<double>(r.Int(3)) : 0;
    if (rr + rw <= 0) return true;
    const std::string_view t = r.Str(1);
    const size_t osc = t.find("-osc-");
    if (osc == std::string_view::npos) return true;
    auto& p = pairs[{std::string(r.Str(0)), std::string(t.substr(0, osc))}];
    p.first += rr + rw;
    p.second += rr * (r.Has(4) ? r.Double(4) : 1) + rw * (r.Has(5) ? r.Double(5) : 1);
    return true;
  });
  if (!st.ok()) return st;
  w.any = !brw.empty() || !pairs.empty();
  std::map<std::string, std::pair<double, double>> total;  // kind:name -> (rpcs, rpcs x depth)
  for (const auto& [k, p] : pairs)
    for (const std::string& s : {"forwarding:" + k.first, "ost:" + k.second}) {
      total[s].first += p.first;
      total[s].second += p.second;
    }
  std::map<std::string, std::pair<double, double>> own, ref;  // kind:name -> (rpcs, sum)
  // An OST's service time over the other OSTs' median (0: unknown): the
  // queue a healthy client alone on it would see (Little's law).
  std::vector<double> all_svc;
  for (const auto& [o, v] : w.svc_ms) all_svc.push_back(v);
  std::sort(all_svc.begin(), all_svc.end());
  auto svc_ratio = [&](const std::string& ost) {
    auto it = w.svc_ms.find(ost);
    if (it == w.svc_ms.end() || all_svc.size() < 2) return 0.0;
    std::vector<double> others = all_svc;
    others.erase(std::lower_bound(others.begin(), others.end(), it->second));
    const double m = Median(others);
    return m > 0 ? it->second / m : 0.0;
  };
  for (const auto& [k, p] : pairs) {
    const std::string f = "forwarding:" + k.first, o = "ost:" + k.second;
    for (auto [side, other] : {std::pair<const std::string*, const std::string*>{&f, &o}, {&o, &f}}) {
      const auto& t = total[*other];
      const double rest = t.first - p.first;
      double r = rest > 0 ? (t.second - p.second) / rest : 0;
      if (r <= 0 && side == &f) r = svc_ratio(k.second);
      if (r <= 0) continue;
      own[*side].first += p.first;
      own[*side].second += p.second;
      ref[*side].first += p.first;
      ref[*side].second += p.first * r;
    }
  }
  for (const auto& [s, x] : own) {
    w.depth[s] = x.second / x.first;
    w.ref_depth[s] = ref[s].second / ref[s].first;
  }
  return w;
}

// The cost of a server in a window against its peers (> 1: slower), and its
// absolute cost for the history; 0 when the window does not tell.
struct Cost {
  double peer_ratio = 0, absolute = 0;
  double value = 0, peer_value = 0;  // ms per I/O or RPCs in flight
  std::string measure;               // service_ms or queue_depth
  int peers = 0;
};

Cost CostOf(const WindowCosts& w, const std::string& kind, const std::string& name, const std::set<std::string>& job_osts) {
  Cost c;
  if (kind == "ost")
    if (auto it = w.svc_ms.find(name); it != w.svc_ms.end()) {
      // Peers: the job's other OSTs with I/Os, else every other OST.
      std::vector<double> in_job, all;
      for (const auto& [o, v] : w.svc_ms) {
        if (o == name) continue;
        all.push_back(v);
        if (job_osts.count(o)) in_job.push_back(v);
      }
      std::vector<double>& peers = in_job.empty() ? all : in_job;
      if (!peers.empty()) {
        c.measure = "service_ms";
        c.value = it->second;
        c.peer_value = Median(peers);
        c.peers = static_cast<int>(peers.size());
        c.absolute = c.value;
        if (c.peer_value > 0) c.peer_ratio = c.value / c.peer_value;
        return c;
      }
    }
  const std::string key = kind + ":" + name;
  if (auto it = w.depth.find(key); it != w.depth.end()) {
    const double ref = w.ref_depth.at(key);
    if (ref > 0) {
      c.measure = "queue_depth";
      c.value = it->second;
      c.peer_value = ref;
      c.peers = 1;
      c.peer_ratio = c.value / ref;
      c.absolute = c.peer_ratio;  // normalised: a slow server at the other end cancels out
    }
  }
  return c;
}

// Every forwarding node and OST the job's I/O went through, against its
// peers in the same window and against its own cost in the application's
// earlier runs. false when no brw/osc record tells anything (the caller
// falls back to the I/O-time comparison).
Result<bool> DemandOutliers(Store& store, AnomalyResult* res, const std::map<std::string, ServerLoad>& fwd,
                            const std::map<std::string, ServerLoad>& ost, const std::vector<std::pair<int64_t, int64_t>>& hist,
                            const Options& opt) {
  auto now = Costs(store, res->start_ns, res->end_ns);
  if (!now.ok()) return now.status();
  if (!now->any) return false;
  std::set<std::string> job_osts;
  for (const auto& [o, l] : ost) job_osts.insert(o);
  std::vector<WindowCosts> past;
  for (const auto& [a, b] : hist) {
    auto w = Costs(store, a, b);
    if (!w.ok()) return w.status();
    past.push_back(std::move(*w));
  }
  std::vector<ServerOutlier> found;
  std::vector<std::string> unjudged;
  bool judged = false;
  for (const auto* load : {&fwd, &ost}) {
    const std::string kind = load == &fwd ? "forwarding" : "ost";
    for (const auto& [name, l] : *load) {
      const Cost c = CostOf(*now, kind, name, job_osts);
      if (c.measure.empty()) {
        unjudged.push_back(name);
        continue;
      }
      judged = true;
      std::vector<double> h;
      for (const auto& w : past) {
        const Cost p = CostOf(w, kind, name, job_osts);
        if (p.measure == c.measure && p.absolute > 0) h.push_back(p.absolute);
      }
      const double hist_ratio = h.empty() ? 0 : c.absolute / Median(h);
      const bool by_peers = c.peer_ratio >= opt.server_factor, by_history = hist_ratio >= opt.server_factor;
      if (!by_peers && !by_history) continue;
      ServerOutlier o;
      o.kind = kind;
      o.name = name;
      const double ratio = std::max(c.peer_ratio, hist_ratio);
      o.bandwidth_ratio = 1 / ratio;
      o.bandwidth = l.seconds.empty() ? 0 : l.bytes / static_cast<double>(l.seconds.size());
      o.io_time_s = static_cast<double>(l.seconds.size());
      o.cost_s = o.io_time_s * (1 - o.bandwidth_ratio);
      o.peers = c.peers;
      o.evidence.measure = c.measure;
      o.evidence.value = c.value;
      o.evidence.peer_value = c.peer_value;
      o.evidence.peer_ratio = c.peer_ratio;
      o.evidence.history_ratio = hist_ratio;
      o.evidence.history_runs = static_cast<int>(h.size());
      o.evidence.rule = by_peers && by_history ? "peers+history" : by_peers ? "peers" : "history";
      found.push_back(o);
    }
  }
  // Records in the window that say nothing of this job's servers: the fallbacks judge them.
  if (!judged) return false;
  res->server_outliers.insert(res->server_outliers.end(), found.begin(), found.end());
  res->server_check = "brw_osc";
  res->servers_unjudged = std::move(unjudged);
  return true;
}

// ---- the job's own time per I/O through each server (the fallback without brw/osc records) ----
using FileOsts = std::map<std::string, std::vector<std::string>>;

// The job's traced reads and writes of one file through one forwarding node.
struct FileTime {
  std::string fwd;                               // "" without a node -> forwarding map
  const std::vector<std::string>* osts = nullptr;  // the file's layout
  std::string path;
  double s = 0, ios = 0, bytes = 0;  // seconds inside the calls, I/Os (1 MiB pieces, as RPCs), bytes
  std::set<int64_t> seconds;
};
struct ClientTimes {
  std::vector<FileTime> units;
  double traced = 0, covered = 0;  // the job's traced bytes; those of files with a layout
};

// The job's traced runs by (forwarding node, file): their time
// (io.duration_ns), I/Os and bytes; files without a layout are left out.
Result<ClientTimes> ClientTimesOf(Store& store, const std::string& job_id, const JobSource& src, const FileOsts& file_osts) {
  ClientTimes c;
  std::map<std::pair<std::string, std::string>, size_t> index;
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, job_id}};
  q.fields = {field::kHostName, field::kTimestamp, field::kIoBytes, field::kIoOp, field::kIoLayer, field::kIoDurationNs,
              field::kFilePath, field::kIoCount};
  q.ordered = false;
  std::string last_host, last_fwd;
  Status st = store.Scan(q, [&](const Row& r) {
    if (!r.Has(2) || r.Int(2) <= 0 || (r.Has(4) && r.Str(4) == "mpiio")) return true;  // mpiio: the POSIX bytes again
    const std::string_view op = r.Str(3);
    if (op != "read" && op != "write") return true;
    const double b = static_cast<double>(r.Int(2));
    c.traced += b;
    if (!r.Has(5) || !r.Has(6)) return true;
    auto it = file_osts.find(std::string(r.Str(6)));
    if (it == file_osts.end() || it->second.empty()) return true;
    if (r.Str(0) != last_host) {
      last_host = std::string(r.Str(0));
      last_fwd = FwdOf(src, last_host);
    }
    c.covered += b;
    auto [at, added] = index.try_emplace({last_fwd, it->first}, c.units.size());
    if (added) {
      c.units.emplace_back();
      c.units.back().fwd = last_fwd;
      c.units.back().osts = &it->second;
      c.units.back().path = it->first;
    }
    FileTime& u = c.units[at->second];
    // I/Os as the servers see them: requests cut into 1 MiB RPCs, so a run
    // of small latency-bound writes and one of large requests cost alike
    // per I/O on a healthy server.
    const double count = r.Has(7) && r.Int(7) > 0 ? static_cast<double>(r.Int(7)) : 1;
    u.ios += count * std::max(1.0, std::ceil(b / count / (1 << 20)));
    u.s += static_cast<double>(r.Int(5)) / 1e9;
    u.bytes += b;
    u.seconds.insert(r.Int(1) / kSec);
    return true;
  });
  if (!st.ok()) return st;
  return c;
}

// Each forwarding node and OST against its peers on the same paths, by the
// time the job spent per I/O through it (docs/anomaly.md): an OST against
// the other files the same forwarding nodes served, a forwarding node
// against the other forwarding nodes' files on the same OSTs, so a slow
// server of the other layer cancels out, each file weighed by its I/Os (a
// tiny load barely moves its peers' reference). A server is a suspect when
// it is >= server_factor times slower and the time lost on it is at least a
// quarter of what a peer's whole share took (a light load costs nothing
// worth naming). The slowest suspect (of near ties, the costliest) is named and the files through it are
// set aside (a file striped over a slow OST is slow on every stripe; the
// ranks behind a slow forwarding node are slow on every OST), then the
// rest are judged again. Returns whether any server could be judged;
// servers with nothing to compare with go to *unjudged.
bool ClientTimeOutliers(const ClientTimes& c, AnomalyResult* res, const Options& opt, std::vector<std::string>* unjudged) {
  constexpr double kMinCostOfPeerWork = 0.25;
  std::vector<bool> active(c.units.size(), true);
  auto on = [&](const FileTime& u, bool ost, const std::string& name) {
    return ost ? std::find(u.osts->begin(), u.osts->end(), name) != u.osts->end() : u.fwd == name;
  };
  std::set<std::string> all_fwd, all_ost;
  for (const auto& u : c.units) {
    if (!u.fwd.empty()) all_fwd.insert(u.fwd);
    all_ost.insert(u.osts->begin(), u.osts->end());
  }
  struct Judged {
    double spent = 0, expected = 0, ios = 0, bytes = 0, peer_work = 0;
    std::set<std::string> peers;
    std::set<int64_t> seconds;
  };
  auto judge = [&](bool ost, const std::string& x) {
    Judged j;
    // Per forwarding node (an OST's reference) or per OST (a forwarding
    // node's): the active files' time and I/Os, without x's.
    std::map<std::string, std::pair<double, double>> ref;
    std::map<std::string, std::set<std::string>> peers_at;
    std::map<std::string, double> work;  // peer -> its active seconds
    // A forwarding node whose OSTs no other one used: against the other
    // forwarding nodes' files anywhere, when two of its own files share no
    // OST (a slow OST then shows as that OST first; with every file on a
    // common OST the two cannot be told apart).
    std::pair<double, double> any_ref;
    std::set<std::string> any_peers;
    std::vector<const std::vector<std::string>*> x_layouts;
    std::optional<bool> x_disjoint;
    auto disjoint = [&] {
      if (!x_disjoint) {
        x_disjoint = false;
        for (size_t a = 0; a < x_layouts.size() && !*x_disjoint; ++a)
          for (size_t b = a + 1; b < x_layouts.size() && !*x_disjoint; ++b) {
            bool common = false;
            for (const auto& o : *x_layouts[a])
              common |= std::find(x_layouts[b]->begin(), x_layouts[b]->end(), o) != x_layouts[b]->end();
            x_disjoint = !common;
          }
      }
      return *x_disjoint;
    };
    for (size_t i = 0; i < c.units.size(); ++i) {
      if (!active[i]) continue;
      const FileTime& u = c.units[i];
      const double n = static_cast<double>(u.osts->size());
      if (ost) {
        for (const auto& o : *u.osts) work[o] += u.s / n;
        if (on(u, true, x)) continue;
        auto& r = ref[u.fwd];
        r.first += u.s, r.second += u.ios;
        for (const auto& o : *u.osts) peers_at[u.fwd].insert(o);
      } else {
        if (!u.fwd.empty()) work[u.fwd] += u.s;
        if (u.fwd == x) x_layouts.push_back(u.osts);
        if (u.fwd == x || u.fwd.empty()) continue;
        any_ref.first += u.s, any_ref.second += u.ios;
        any_peers.insert(u.fwd);
        for (const auto& o : *u.osts) {
          auto& r = ref[o];
          r.first += u.s / n, r.second += u.ios / n;
          peers_at[o].insert(u.fwd);
        }
      }
    }
    for (size_t i = 0; i < c.units.size(); ++i) {
      const FileTime& u = c.units[i];
      if (!active[i] || !on(u, ost, x)) continue;
      double rs = 0, rios = 0;
      std::set<std::string> peers;
      for (const std::string& k : ost ? std::vector<std::string>{u.fwd} : *u.osts)
        if (auto it = ref.find(k); it != ref.end()) {
          rs += it->second.first, rios += it->second.second;
          peers.insert(peers_at[k].begin(), peers_at[k].end());
        }
      peers.erase(x);
      if (!ost && (rs <= 0 || rios <= 0) && disjoint()) {
        rs = any_ref.first, rios = any_ref.second;
        peers = any_peers;
      }
      if (rs <= 0 || rios <= 0 || peers.empty()) continue;  // nothing beside it on this path
      const double share = ost ? 1 / static_cast<double>(u.osts->size()) : 1;
      j.spent += u.s * share;
      j.expected += u.ios * share * rs / rios;
      j.ios += u.ios * share;
      j.bytes += u.bytes * share;
      j.seconds.insert(u.seconds.begin(), u.seconds.end());
      j.peers.insert(peers.begin(), peers.end());
    }
    std::vector<double> pw;
    for (const auto& p : j.peers) pw.push_back(work[p]);
    j.peer_work = Median(pw);
    return j;
  };
  bool judged_any = false;
  std::set<std::string> suspects_first, named;
  for (bool first = true;; first = false) {
    struct Suspect {
      bool ost;
      std::string name;
      Judged j;
      double ratio, cost;
    };
    std::vector<Suspect> suspects;
    for (const bool ost : {false, true})
      for (const auto& x : ost ? all_ost : all_fwd) {
        if (named.count(x)) continue;
        const Judged j = judge(ost, x);
        if (j.expected <= 0) {
          if (first) unjudged->push_back(x);
          continue;
        }
        judged_any = true;
        const double ratio = j.spent / j.expected;
        if (ratio < opt.server_factor || j.spent - j.expected < kMinCostOfPeerWork * j.peer_work) continue;
        if (first) suspects_first.insert(x);
        suspects.push_back({ost, x, j, ratio, j.spent - j.expected});
      }
    if (suspects.empty()) break;
    // The slowest suspect per I/O; among those within 10 % of it, the one
    // that cost the job the most time (the partner stripes of a slow OST's
    // files lag as much, on fewer files).
    double top = 0;
    for (const auto& x : suspects) top = std::max(top, x.ratio);
    const Suspect* pick = nullptr;
    for (const auto& x : suspects)
      if (x.ratio * 1.1 >= top && (!pick || x.cost > pick->cost)) pick = &x;
    const bool ost = pick->ost;
    const std::string x = pick->name;
    const Judged best_j = pick->j;
    const double best_ratio = pick->ratio;
    named.insert(x);
    ServerOutlier o;
    o.kind = ost ? "ost" : "forwarding";
    o.name = x;
    o.bandwidth_ratio = 1 / best_ratio;
    const double t = static_cast<double>(best_j.seconds.size());
    o.bandwidth = t > 0 ? best_j.bytes / t : 0;
    o.io_time_s = t;
    o.cost_s = t * (1 - o.bandwidth_ratio);
    o.peers = static_cast<int>(best_j.peers.size());
    o.evidence.rule = "client_time";
    o.evidence.measure = "client_ms_per_io";
    o.evidence.value = best_j.spent / best_j.ios * 1e3;
    o.evidence.peer_value = best_j.expected / best_j.ios * 1e3;
    o.evidence.peer_ratio = best_ratio;
    res->server_outliers.push_back(o);
    for (size_t i = 0; i < c.units.size(); ++i)
      if (on(c.units[i], ost, x)) active[i] = false;
  }
  // Suspects at first that the named servers explain (their files went through those).
  std::string by;
  for (const auto& n : named) by += (by.empty() ? "" : ",") + n;
  for (const auto& x : suspects_first)
    if (!named.count(x)) {
      ServerOutlier o;
      o.kind = all_ost.count(x) ? "ost" : "forwarding";
      o.name = x;
      o.explained_by = by;
      o.evidence.rule = "client_time";
      res->explained_servers.push_back(o);
    }
  return judged_any;
}

Status ServerOutliers(Store& store, AnomalyResult* res, const JobSource& src, const FileOsts& file_osts,
                      const std::vector<std::pair<int64_t, int64_t>>& hist, const Options& opt) {
  std::map<std::string, ServerLoad> fwd, ost;
  if (!src.node_fwd.empty()) {
    ScanQuery q;
    q.dataset = dataset::kTrace;
    q.filters = {{field::kJobId, res->job_id}};
    q.fields = {field::kHostName, field::kTimestamp, field::kIoBytes, field::kIoOp, field::kIoLayer};
    q.ordered = false;
    std::string last_host, last_fwd;
    Status st = store.Scan(q, [&](const Row& r) {
      if (!r.Has(2) || (r.Has(4) && r.Str(4) == "mpiio")) return true;  // the POSIX bytes again
      const std::string_view op = r.Str(3);
      if (op != "read" && op != "write") return true;
      if (r.Str(0) != last_host) {
        last_host = std::string(r.Str(0));
        last_fwd = FwdOf(src, last_host);
      }
      if (last_fwd.empty()) return true;
      ServerLoad& l = fwd[last_fwd];
      l.bytes += static_cast<double>(r.Int(2));
      l.seconds.insert(r.Int(1) / kSec);
      return true;
    });
    if (!st.ok()) return st;
  }
  ScanQuery j;
  j.dataset = dataset::kJobstats;
  j.range = {res->start_ns, res->end_ns + 2 * kSec};
  j.filters = {{field::kJobId, res->job_id}};
  j.fields = {field::kLustreTarget, field::kTimestamp, field::kOssReadBytes, field::kOssWriteBytes};
  j.ordered = false;
  Status st = store.Scan(j, [&](const Row& r) {
    const std::string_view t = r.Str(0);
    if (t.find("-OST") == std::string_view::npos) return true;
    const double b = (r.Has(2) ? static_cast<double>(r.Int(2)) : 0) + (r.Has(3) ? static_cast<double>(r.Int(3)) : 0);
    if (b <= 0) return true;
    ServerLoad& l = ost[std::string(t)];
    l.bytes += b;
    l.seconds.insert(r.Int(1) / kSec);
    return true;
  });
  if (!st.ok()) return st;
  auto demand = DemandOutliers(store, res, fwd, ost, hist, opt);
  if (!demand.ok()) return demand.status();
  // No brw/osc record tells of the job's servers: the job's own time per
  // I/O through each (the files' layouts place its traced runs), else the
  // servers' I/O time inside the job (Beacon's peer comparison).
  std::optional<ClientTimes> ct;
  if (!*demand && !file_osts.empty()) {
    auto c = ClientTimesOf(store, res->job_id, src, file_osts);
    if (!c.ok()) return c.status();
    if (c->covered > 0 && c->covered >= 0.5 * c->traced) ct = std::move(*c);
  }
  if (ct) {
    std::vector<std::string> unjudged;
    res->server_check = ClientTimeOutliers(*ct, res, opt, &unjudged) ? "client_time" : "none";
    std::set<std::string> traced;  // the servers the job's traced runs with a layout went through
    for (const auto& u : ct->units) {
      traced.insert(u.fwd);
      traced.insert(u.osts->begin(), u.osts->end());
    }
    for (const auto* load : {&fwd, &ost})
      for (const auto& [name, l] : *load)
        if (!traced.count(name)) unjudged.push_back(name);
    std::sort(unjudged.begin(), unjudged.end());
    unjudged.erase(std::unique(unjudged.begin(), unjudged.end()), unjudged.end());
    res->servers_unjudged = std::move(unjudged);
  } else if (!*demand) {
    const bool large = res->nodes >= opt.large_job_nodes;
    const bool anomalous = res->verdict == "anomalous";
    bool judged = false;
    if (large || (anomalous && fwd.size() >= 3)) judged |= Outliers("forwarding", fwd, res, opt);
    if (large || (anomalous && ost.size() >= 3)) judged |= Outliers("ost", ost, res, opt);
    res->server_check = judged ? "io_time" : "none";
    if (!judged)
      for (const auto* load : {&fwd, &ost})
        for (const auto& [name, l] : *load) res->servers_unjudged.push_back(name);
    if (Status a = Attribute(store, res); !a.ok()) return a;
  }
  std::sort(res->server_outliers.begin(), res->server_outliers.end(),
            [](const ServerOutlier& a, const ServerOutlier& b) {
              if (a.bandwidth_ratio != b.bandwidth_ratio) return a.bandwidth_ratio < b.bandwidth_ratio;
              return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
            });
  return Status::Ok();
}

}  // namespace

Result<std::map<std::string, std::string>> LoadApps(const std::string& path) {
  std::map<std::string, std::string> apps;
  Status st = lassi::ForEachDataLine(path, [&](const std::string& line, int n) -> Status {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0)
      return Status::Invalid(path + ":" + std::to_string(n) + ": expected JOB_ID<TAB>COMMAND LINE");
    apps[line.substr(0, tab)] = line.substr(tab + 1);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return apps;
}

Result<AnomalyResult> Analyze(Store& store, const std::string& job_id, const JobSource& src, const Options& opt) {
  if (!(opt.eps > 0) || opt.min_samples < 1 || !(opt.server_eps > 0) || opt.server_min_samples < 1)
    return Status::Invalid("eps must be > 0 and min_samples >= 1");
  AnomalyResult res;
  res.options = opt;
  res.job_id = job_id;
  auto job = DescribeJob(store, job_id, src);
  if (!job.ok()) return job.status();
  res.command = job->command;
  res.app_key = job->app_key;
  res.history_match = job->match.empty() ? "apps_file" : job->match;
  res.nodes = job->nodes;
  res.start_ns = job->start_ns;
  res.end_ns = job->end_ns;
  auto jp = analysis::PhasesForJob(store, job_id, opt.phases);
  if (!jp.ok()) return jp.status();
  for (const auto& p : jp->phases) res.phases.push_back({p, -1, 0});
  auto hist = History(store, *job, src, opt);
  if (!hist.ok()) return hist.status();
  std::vector<HistPhase> hist_phases;
  std::vector<std::pair<int64_t, int64_t>> hist_windows;
  for (const auto& r : *hist) {
    auto hp = analysis::PhasesForJob(store, r.id, opt.phases);
    if (!hp.ok() || hp->phases.empty()) continue;
    for (const auto& p : hp->phases) hist_phases.push_back({p, res.history.size()});
    res.history.push_back(r.id);
    if (r.end_ns > r.start_ns) hist_windows.emplace_back(r.start_ns, r.end_ns);
  }
  if (res.history.size() < opt.min_history) {
    res.verdict = "not_enough_history";
  } else {
    Classify(hist_phases, &res, opt);
    bool noise = false;
    for (const auto& p : res.phases) {
      noise |= p.cluster < 0;
      res.slowdown = std::max(res.slowdown, p.slowdown);
    }
    res.verdict = noise ? "anomalous" : "normal";
  }
  if (res.verdict == "anomalous") FindNeighbours(store, &res, src, opt);
  // The job's file layouts: the maps file's, else the job database's.
  FileOsts db_osts;
  char* id_end = nullptr;
  const uint64_t numeric_id = std::strtoull(job_id.c_str(), &id_end, 10);
  if (src.file_osts.empty() && src.db && !job_id.empty() && *id_end == 0) {
    auto ls = src.db->FileLayouts(job->cluster, numeric_id);
    if (ls.ok()) {
      for (const auto& L : *ls) {
        if (!L.filesystem || L.filesystem->empty()) continue;
        auto& names = db_osts[L.path];
        for (int o : L.osts) {
          char b[16];
          std::snprintf(b, sizeof b, "-OST%04x", o);
          names.push_back(*L.filesystem + b);
        }
      }
    }
  }
  if (Status st = ServerOutliers(store, &res, src, src.file_osts.empty() ? db_osts : src.file_osts, hist_windows, opt);
      !st.ok())
    return st;
  return res;
}

std::string ToJson(const AnomalyResult& r, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  KvAll(w, "job_id", r.job_id, "verdict", r.verdict, "command", r.command, "app_key", r.app_key,
        "history_match", r.history_match, "nodes", r.nodes, "start", FormatIsoMillis(r.start_ns),
        "end", FormatIsoMillis(r.end_ns), "history_runs", r.history.size());
  w.Key("history");
  w.BeginArray();
  for (const auto& h : r.history) w.String(h);
  w.EndArray();
  w.Kv("slowdown", r.slowdown);
  w.Key("phases");
  w.BeginArray();
  for (const auto& p : r.phases) {
    w.BeginObject();
    KvAll(w, "direction", p.phase.direction, "start", FormatIsoMillis(p.phase.start_ns),
          "duration_s", static_cast<double>(p.phase.duration_ns) / 1e9, "bytes", p.phase.bytes,
          "bw_mean", p.phase.bw_mean, "cluster", p.cluster);
    if (p.cluster < 0 && p.slowdown > 0) w.Kv("slowdown", p.slowdown);
    w.EndObject();
  }
  w.EndArray();
  w.Key("neighbours");
  w.BeginArray();
  for (const auto& n : r.neighbours) {
    w.BeginObject();
    w.Kv("job_id", n.job_id);
    w.Key("shared");
    w.BeginArray();
    for (const auto& s : n.shared) w.String(s);
    w.EndArray();
    w.Key("evidence");
    w.BeginArray();
    for (const auto& e : n.evidence) w.String(e);
    w.EndArray();
    KvAll(w, "md_ops_per_s", n.md_ops_per_s, "bytes_per_s", n.bytes_per_s, "data_ops_per_s", n.data_ops_per_s,
          "overlap_s", n.overlap_s);
    if (!n.io_mode.empty()) w.Kv("io_mode", n.io_mode);
    w.EndObject();
  }
  w.EndArray();
  w.Key("server_outliers");
  w.BeginArray();
  for (const auto& o : r.server_outliers) {
    w.BeginObject();
    KvAll(w, "kind", o.kind, "name", o.name, "bandwidth_ratio", o.bandwidth_ratio, "bandwidth", o.bandwidth,
          "io_time_s", o.io_time_s, "cost_s", o.cost_s, "peers", o.peers);
    w.Key("evidence");
    w.BeginObject();
    const auto& e = o.evidence;
    w.Kv("rule", e.rule);
    w.Kv("measure", e.measure);
    if (!e.measure.empty()) {
      KvAll(w, "value", e.value, "peer_value", e.peer_value, "peer_ratio", e.peer_ratio,
            "history_ratio", e.history_ratio, "history_runs", static_cast<int64_t>(e.history_runs));
    } else {
      w.Kv("io_time_s", o.io_time_s);
      w.Kv("peer_io_time_s", o.peer_io_time_s);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.Key("server_check");
  w.BeginObject();
  w.Kv("method", r.server_check);
  w.Key("unjudged");
  w.BeginArray();
  for (const auto& u : r.servers_unjudged) w.String(u);
  w.EndArray();
  w.EndObject();
  w.Key("explained_servers");  // slow only because of the lagging servers of the other layer
  w.BeginArray();
  for (const auto& o : r.explained_servers) {
    KvObject(w, "kind", o.kind, "name", o.name, "bandwidth_ratio", o.bandwidth_ratio, "explained_by", o.explained_by);
  }
  w.EndArray();
  w.Key("options");
  KvObject(w, "eps", r.options.eps, "min_samples", r.options.min_samples, "min_history", r.options.min_history,
           "node_tolerance", r.options.node_tolerance, "high_mdops", r.options.high_mdops,
           "large_job_nodes", r.options.large_job_nodes);
  w.EndObject();
  out.push_back('\n');
  return out;
}

std::string ToTable(const AnomalyResult& r) {
  std::string out;
  char b[256];
  std::snprintf(b, sizeof b, "job %s: %s (%zu earlier runs at %lld nodes", r.job_id.c_str(), r.verdict.c_str(),
                r.history.size(), static_cast<long long>(r.nodes));
  out += b;
  if (r.slowdown > 0) {
    std::snprintf(b, sizeof b, "; slowest phase %.1fx its history", r.slowdown);
    out += b;
  }
  out += ")\n";
  if (r.history_match == "command")
    out += "history: earlier runs with the same command line (the job database has no app_key for this job)\n";
  else if (r.history_match == "app_key")
    out += "history: earlier runs with the same application key (jobs.app_key): " + r.app_key + "\n";
  else
    out += "history: earlier runs whose --apps command line has the same application key: " + r.app_key + "\n";
  out += "phases:\n  direction  start                     duration_s        bytes  cluster\n";
  for (const auto& p : r.phases) {
    std::snprintf(b, sizeof b, "  %-9s  %-24s  %10.1f  %11llu  %7d\n", p.phase.direction.c_str(),
                  FormatIsoMillis(p.phase.start_ns).c_str(), static_cast<double>(p.phase.duration_ns) / 1e9,
                  static_cast<unsigned long long>(p.phase.bytes), p.cluster);
    out += b;
  }
  if (!r.neighbours.empty()) {
    out += "neighbours (most likely interference first):\n";
    for (const auto& n : r.neighbours) {
      std::string ev, sh;
      for (const auto& e : n.evidence) ev += (ev.empty() ? "" : ",") + e;
      for (const auto& s : n.shared) sh += (sh.empty() ? "" : ",") + s;
      std::snprintf(b, sizeof b, "  job %-10s %-24s md %.0f/s, %.1f MB/s, %.0f ops/s; shares %s\n", n.job_id.c_str(),
                    ev.empty() ? "-" : ev.c_str(), n.md_ops_per_s, n.bytes_per_s / 1e6, n.data_ops_per_s, sh.c_str());
      out += b;
    }
  }
  if (!r.server_outliers.empty()) {
    out += "lagging servers:\n";
    for (const auto& o : r.server_outliers) {
      const auto& e = o.evidence;
      if (e.measure.empty()) {
        std::snprintf(b, sizeof b, "  %-10s %-20s %.2f of its %d peers' bandwidth, cost ~%.0f s\n", o.kind.c_str(),
                      o.name.c_str(), o.bandwidth_ratio, o.peers, o.cost_s);
      } else {
        std::snprintf(b, sizeof b, "  %-10s %-20s %s %.1f vs %.1f on its peers (%.1fx)", o.kind.c_str(), o.name.c_str(),
                      e.measure == "service_ms"          ? "ms per I/O"
                      : e.measure == "client_ms_per_io" ? "the job's ms per I/O"
                                                         : "RPCs in flight",
                      e.value, e.peer_value, e.peer_ratio);
        out += b;
        if (e.history_runs > 0)
          std::snprintf(b, sizeof b, ", %.1fx its cost in %d earlier runs; rule %s\n", e.history_ratio, e.history_runs,
                        e.rule.c_str());
        else
          std::snprintf(b, sizeof b, "; rule %s\n", e.rule.c_str());
      }
      out += b;
    }
    out += BlameText(r) + "\n";
  } else if (r.server_check == "none") {
    out += "servers: not judged (no brw_stats or osc records, no file layouts to place the job's traced I/O, or too "
           "few peers)\n";
  } else {
    out += "servers: none lagging (" + r.server_check + ")\n";
  }
  if (!r.servers_unjudged.empty() && r.server_check != "none") {
    std::string un;
    for (const auto& u : r.servers_unjudged) un += (un.empty() ? "" : ", ") + u;
    out += "servers not judged (nothing beside them to compare with): " + un + "\n";
  }
  return out;
}

std::string BlameText(const AnomalyResult& r) {
  if (r.server_outliers.empty()) return "";
  const auto& o = r.server_outliers.front();
  const double x = r.slowdown > 0 ? r.slowdown : (o.bandwidth_ratio > 0 ? 1 / o.bandwidth_ratio : 0);
  char b[200];
  std::snprintf(b, sizeof b, "slowed ~%.1fx by %s (the server, not your code)", x, o.name.c_str());
  return b;
}

std::string ToRecords(const AnomalyResult& r, const std::string& host) {
  std::string out;
  const std::string summary = ToJson(r, false);
  const int64_t stream = analysis::ResultStreamId(dataset::kResultAnomaly.name(), {std::string_view("job"), r.job_id, summary});
  int64_t seq = 0;
  auto begin = [&](JsonWriter& w, const char* analysis) {
    analysis::BeginResultRecord(w, r.start_ns, dataset::kResultAnomaly, stream, seq++, host);
    w.Kv(field::kJobId, r.job_id);
    w.Kv(field::kResultAnalysis, analysis);
  };
  {
    JsonWriter w(&out, 0);
    begin(w, "job");
    w.Kv(field::kResultReason, r.verdict);
    w.Kv(field::kResultScore, r.slowdown);
    w.EndObject();
    out.push_back('\n');
  }
  for (const auto& n : r.neighbours) {
    JsonWriter w(&out, 0);
    begin(w, "neighbour");
    w.Kv(field::kResultTarget, n.job_id);
    std::string ev;
    for (const auto& e : n.evidence) ev += (ev.empty() ? "" : ",") + e;
    w.Kv(field::kResultReason, ev.empty() ? std::string("shared") : ev);
    w.Kv(field::kResultScore, n.score);
    w.EndObject();
    out.push_back('\n');
  }
  for (const auto& o : r.server_outliers) {
    JsonWriter w(&out, 0);
    begin(w, o.kind == "ost" ? "ost" : "forwarding");
    KvAll(w, field::kResultTarget, o.name, field::kResultMetric, "bandwidth_ratio",
          field::kResultScore, o.bandwidth_ratio, field::kResultReason, "lags its peers serving the same job");
    w.EndObject();
    out.push_back('\n');
  }
  return out;
}

Status WriteToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const AnomalyResult& r) {
  const std::string now = SqlDatetime(NowNs());
  const std::vector<SqlParam> key{cluster, static_cast<int64_t>(job_id)};
  results::job_anomaly::Row row;
  row.cluster = cluster;
  row.job_id = job_id;
  row.computed_at = now;
  row.verdict = r.verdict;
  row.history_runs = r.history.size();
  row.slowdown = r.slowdown;
  row.result_json = ToJson(r, false);
  return db.Transaction([&]() -> Status {
    for (auto del : {results::Delete<results::job_anomaly::Row>, results::Delete<results::job_anomaly_neighbour::Row>,
                     results::Delete<results::job_server_outlier::Row>})
      if (auto d = del(db, "WHERE cluster = ? AND job_id = ?", key); !d.ok()) return d.status();
    if (Status st = results::Insert(db, row); !st.ok()) return st;
    uint64_t rank = 0;
    for (const auto& n : r.neighbours) {
      results::job_anomaly_neighbour::Row nb{cluster, job_id, rank++, n.job_id, "", "", n.md_ops_per_s};
      for (const auto& x : n.shared) nb.shared += (nb.shared.empty() ? "" : ",") + x;
      for (const auto& x : n.evidence) nb.evidence += (nb.evidence.empty() ? "" : ",") + x;
      if (Status st = results::Insert(db, nb); !st.ok()) return st;
    }
    for (const auto& o : r.server_outliers)
      if (Status st = results::Insert(db, results::job_server_outlier::Row{cluster, job_id, o.kind, o.name,
                                                                           o.bandwidth_ratio, o.cost_s});
          !st.ok())
        return st;
    return Status::Ok();
  });
}

Result<std::optional<StoredAnomaly>> ReadStored(MysqlConn& db, const std::string& cluster, uint64_t job_id) {
  const std::vector<SqlParam> key{cluster, static_cast<int64_t>(job_id)};
  const char* where = "WHERE cluster = ? AND job_id = ?";
  auto job = results::Select<results::job_anomaly::Row>(
      db, where, key, {"cluster", "job_id", "computed_at", "verdict", "history_runs", "slowdown", "result_json"});
  if (!job.ok()) return job.status();
  if (job->empty()) return std::optional<StoredAnomaly>();
  StoredAnomaly a;
  a.job = std::move(job->front());
  // ToJson's "server_check":{"method":"..." (a string without escapes); the
  // rest of the JSON is not kept.
  static constexpr std::string_view kMethod = "\"server_check\":{\"method\":\"";
  const std::string& js = a.job.result_json;
  if (size_t at = js.find(kMethod); at != std::string::npos) {
    const size_t from = at + kMethod.size(), to = js.find('"', from);
    if (to != std::string::npos) a.server_check = js.substr(from, to - from);
    static constexpr std::string_view kUnjudged = "\"unjudged\":[";
    if (size_t u = js.find(kUnjudged, at); u != std::string::npos) {
      const size_t end = js.find(']', u);
      for (size_t q = js.find('"', u + kUnjudged.size()); q < end;) {
        const size_t q2 = js.find('"', q + 1);
        if (q2 == std::string::npos || q2 > end) break;
        a.servers_unjudged.push_back(js.substr(q + 1, q2 - q - 1));
        q = js.find('"', q2 + 1);
      }
    }
  }
  a.job.result_json.clear();
  auto nb = results::Select<results::job_anomaly_neighbour::Row>(db, std::string(where) + " ORDER BY rank_no", key);
  if (!nb.ok()) return nb.status();
  a.neighbours = std::move(*nb);
  auto so = results::Select<results::job_server_outlier::Row>(db, std::string(where) + " ORDER BY cost_s DESC", key);
  if (!so.ok()) return so.status();
  a.outliers = std::move(*so);
  return std::optional<StoredAnomaly>(std::move(a));
}

Result<std::vector<SlowedBy>> ReadSlowedBy(MysqlConn& db, const std::string& cluster, uint64_t job_id, size_t limit) {
  const std::vector<std::string> cols = {"job_id", "shared", "evidence"};
  auto rows = db.Query("SELECT " + results::SelectList("n", cols) +
                           ", a.slowdown FROM job_anomaly_neighbour n JOIN job_anomaly a "
                           "ON a.cluster = n.cluster AND a.job_id = n.job_id WHERE n.cluster = ? AND n.neighbour = ? "
                           "AND n.rank_no = 0 AND a.verdict = 'anomalous' ORDER BY n.job_id LIMIT " +
                           std::to_string(limit),
                       {cluster, std::to_string(job_id)});
  if (!rows.ok()) return rows.status();
  std::vector<SlowedBy> out(rows->size());
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto& r = (*rows)[i];
    results::ReadColumns(out[i].neighbour, r, 0, cols);
    if (r.size() > cols.size() && r[cols.size()]) out[i].slowdown = std::strtod(r[cols.size()]->c_str(), nullptr);
  }
  return out;
}

Result<std::string> StoredVerdictLine(MysqlConn& db, const std::string& cluster, uint64_t job_id) {
  auto st = ReadStored(db, cluster, job_id);
  if (!st.ok()) return st.status();
  if (!*st) return std::string();
  const StoredAnomaly& a = **st;
  std::string line =
      "I/O anomaly: " + a.job.verdict + " against " + std::to_string(a.job.history_runs) + " earlier runs";
  const double slow = a.job.slowdown;
  if (slow > 0) {
    char b[64];
    std::snprintf(b, sizeof b, ", slowest phase %.1fx its history", slow);
    line += b;
  }
  if (!a.neighbours.empty()) {
    const auto& n = a.neighbours.front();
    line += "; first neighbour " + n.neighbour + (!n.evidence.empty() ? " (" + n.evidence + ")" : "");
  }
  // The slowest server: the smallest bandwidth ratio (then kind, server).
  auto so = std::min_element(a.outliers.begin(), a.outliers.end(), [](const auto& x, const auto& y) {
    return std::tie(x.bandwidth_ratio, x.kind, x.server) < std::tie(y.bandwidth_ratio, y.kind, y.server);
  });
  if (so != a.outliers.end()) {
    const double ratio = so->bandwidth_ratio;
    const double x = slow > 0 ? slow : (ratio > 0 ? 1 / ratio : 0);
    char b[160];
    std::snprintf(b, sizeof b, "; slowed ~%.1fx by %s (the server, not your code)", x, so->server.c_str());
    line += b;
  }
  return line + "\n";
}

Result<std::string> StoredVerdictJson(MysqlConn& db, const std::string& cluster, uint64_t job_id) {
  auto rows = results::Select<results::job_anomaly::Row>(db, "WHERE cluster = ? AND job_id = ?",
                                                          {cluster, static_cast<int64_t>(job_id)},
                                                          {"verdict", "history_runs", "slowdown", "computed_at"});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::string();
  const auto& r = rows->front();
  std::string out;
  JsonWriter w(&out, 0);
  KvObject(w, "verdict", r.verdict, "history_runs", static_cast<int64_t>(r.history_runs), "slowdown", r.slowdown,
           "computed_at", FormatIsoMillis(results::SqlDatetimeNs(r.computed_at).value_or(0)));
  return out;
}

}  // namespace iosonar::anomaly
