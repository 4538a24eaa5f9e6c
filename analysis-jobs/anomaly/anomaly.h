// Job I/O anomaly detection (Beacon, NSDI'19 §3.3, §4.1-4.2, Appendix B):
// a finished job's I/O phases against the phases of the same application's
// earlier runs at the same scale, the neighbour jobs that may have interfered,
// and the forwarding nodes / OSTs that lagged their peers inside the job.
//
// Definitions (docs/anomaly.md has the reasons for each default):
//  - Same application: the application key (LASSi's "exact command used",
//    ApplicationKey in core/jobdb/jobdb.h) the prolog or the sacct poller
//    stored in jobs.app_key; for a job whose row has no app_key (written
//    before migration 037) the exact command line (jobs.command), which the
//    result says (history_match "command"); with an apps file
//    (JOB_ID<TAB>COMMAND LINE) the ApplicationKey of its command lines.
//    Same scale: |nodes - nodes_job| <= node_tolerance * nodes_job.
//  - Phases: analysis::PhasesForJob (DWT on the 1 s trace bandwidth series).
//  - Features: per phase (log10 duration_s, log10 bytes). On a log scale eps
//    is a relative tolerance the same for every application and unit:
//    eps = 0.1 joins phases whose durations and volumes differ by up to ~26 %
//    (10^0.1) in one coordinate (Euclidean in both).
//  - Clustering: DBSCAN (sklearn's labels) over the history's phases, one
//    direction (read, write) at a time; cluster ids are numbered across
//    directions (read first). A cluster is a known pattern only when phases
//    of at least min_runs different runs are in it (its samples are not core
//    otherwise), so one slow earlier run does not make slowness normal. A phase of the job belongs to the cluster of the
//    nearest history core sample within eps (sklearn's rule for a border
//    point), else it is noise (-1). The job's own phases never make a cluster,
//    so ten slow checkpoints of one run do not vouch for each other.
//  - Verdict: not_enough_history with fewer than min_history earlier runs
//    that have phases; anomalous when any phase is noise; else normal.
//  - Slowdown of an anomalous phase: the median mean bandwidth of the
//    history's phases of the same direction over the phase's mean bandwidth.
//  - Neighbours (for an anomalous job): other jobs active during the
//    anomalous phases on a forwarding node (from the node -> forwarding map)
//    or an OST (job_stats) the job used then. Evidence over the neighbour's
//    active seconds in that window: high_mdops (metadata ops/s > high_mdops,
//    Beacon: 300), high_bw (bytes/s > high_bw), high_iops (data ops/s >
//    high_iops), n1_mode (the neighbour's decided I/O mode over its traced
//    runs in the window, of the direction moving more bytes, is N-1 by the
//    job summary's rule, and it did I/O from more than n1_min_nodes nodes: Beacon §4.3, "N is
//    large (e.g., over 32 compute nodes)").
//    Ranked by the number of evidence items, then the strongest ratio of a
//    metric to its threshold, then the seconds shared.
//  - Server outliers, every job whatever its verdict (docs/anomaly.md "Which
//    server slowed the job"): each server's cost per request (brw_stats I/O
//    time, OSC RPCs in flight) against its peers' and its own history's;
//    without those records, the job's own traced time per I/O through each
//    server, placed by the files' layouts, against the same paths' other
//    servers (client_time); without layouts either, the I/O-time rule below.
//  - The I/O-time rule: for jobs of at least large_job_nodes nodes (Beacon:
//    1,024), or any anomalous job with at least 3 servers of a kind, each
//    forwarding node / OST that served the job: bytes of the job through it
//    and its I/O time (seconds in which it moved the job's bytes). Servers
//    carry unequal shares (files land on OSTs by hash, nodes per forwarding
//    node differ), so raw bandwidths differ without any fault; what a
//    homogeneous load makes equal is the time each server needs for its
//    share. DBSCAN on log10 I/O time with server_eps (0.15: ~41 %); the
//    largest cluster is the peers; a server outside it that was busy longer
//    than the peers' median I/O time is an outlier. bandwidth_ratio: the
//    bandwidth it reached on its own load over the bandwidth that would have
//    served that load in the peers' median time (= median time / its time);
//    cost_s = its I/O time - the peers' median, the time the job waited.
//    Cross-layer attribution (from the clients' osc records, when there are
//    any): an OST whose RPCs through forwarding nodes that do not lag ended
//    with its peers only waited for the lagging forwarding nodes, and is moved
//    to explained_servers; then likewise a forwarding node whose RPCs to the
//    OSTs still lagging ended with its peers.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis-jobs/job-summary/job_summary.h"
#include "core/results/results.h"
#include "analysis-jobs/phases/phases.h"
#include "core/base/status.h"
#include "core/jobdb/jobdb.h"
#include "core/jobdb/mysql.h"
#include "core/store/store.h"

namespace iosonar::anomaly {

struct Options {
  double eps = 0.1;             // log10 units
  size_t min_samples = 3;       // history phases (a phase seen in >= 3 runs is a pattern)
  size_t min_history = 3;       // earlier runs with phases
  size_t min_runs = 3;          // a history cluster is known when phases of >= min_runs runs are in it
  size_t max_history = 50;      // most recent earlier runs used
  double node_tolerance = 0.1;  // relative
  double high_mdops = 300;      // metadata ops/s (Beacon)
  double high_bw = 1073741824;  // bytes/s
  double high_iops = 10000;     // data ops/s
  uint64_t n1_min_nodes = 32;   // n1_mode: an N-1 neighbour on more nodes doing I/O than this (Beacon §4.3)
  int64_t large_job_nodes = 1024;
  double server_factor = 2;     // a server costing this many times its peers' or its history's is named
  double server_eps = 0.15;     // log10 units (the I/O-time fallback)
  size_t server_min_samples = 2;
  analysis::PhaseOptions phases;
};

// Where the application and scale of jobs come from.
struct JobSource {
  JobDb* db = nullptr;        // the job database (command, nodes, window), or
  std::string cluster;        // its cluster ("" = the only one with the id)
  std::map<std::string, std::string> apps;       // job id -> command line (an apps file)
  std::map<std::string, std::string> node_fwd;   // node -> forwarding node (maps file)
  // File path -> the OSTs it is striped over (target names, FS-OSTxxxx): the
  // maps file's layouts; empty: the job database's file_layouts of the job.
  std::map<std::string, std::vector<std::string>> file_osts;
};

// The n1_mode evidence of a neighbour from its traced reads and writes:
// the decided I/O mode (analysis::Summarize, the job summary's rule) of the
// direction moving more bytes is N-1 and it did I/O from more than
// min_nodes nodes (Beacon §4.3). (what, its nodes), or nullopt.
std::optional<std::pair<std::string, double>> N1Evidence(const std::vector<analysis::TraceRun>& runs,
                                                         uint64_t min_nodes);

// JOB_ID<TAB>COMMAND LINE lines (blank and '#' lines skipped); errors name file:line.
Result<std::map<std::string, std::string>> LoadApps(const std::string& path);

struct PhaseResult {
  analysis::Phase phase;
  int cluster = -1;
  double slowdown = 0;  // anomalous phases: history median bandwidth / this phase's
};

struct Neighbour {
  std::string job_id;
  std::vector<std::string> shared;  // forwarding node and OST names
  std::vector<std::string> evidence;
  double md_ops_per_s = 0, bytes_per_s = 0, data_ops_per_s = 0;
  int64_t overlap_s = 0;
  double score = 0;  // strongest metric / threshold
  std::string io_mode;  // n1_mode: "write N-1 from P processes on K nodes"
};

struct ServerOutlier {
  std::string kind;  // forwarding or ost
  std::string name;
  double bandwidth = 0, bandwidth_ratio = 0;  // bytes/s; to the peers' median
  double io_time_s = 0, cost_s = 0;
  int peers = 0;
  double peer_io_time_s = 0;  // the peers' median I/O time
  std::string explained_by;   // lagging servers of the other layer that explain it (then it is not listed)
  struct Evidence {
    std::string rule;     // peers, history, peers+history; client_time or io_time for the fallbacks
    std::string measure;  // service_ms (brw I/O time per I/O), queue_depth (OSC RPCs in flight), client_ms_per_io
                          // (the job's own time in its reads and writes per 1 MiB I/O through the server); "" for io_time
    double value = 0, peer_value = 0;  // its measure, its peers' (median, or the reference depth)
    double peer_ratio = 0, history_ratio = 0;  // its cost / peers', / its median over the earlier runs (0: not known)
    int history_runs = 0;
  } evidence;
};

struct AnomalyResult {
  std::string job_id;
  std::string command;
  std::string app_key;        // the key the history was matched by ("" when by command)
  std::string history_match;  // app_key (jobs.app_key), command (the job's row has no app_key) or apps_file
  int64_t nodes = 0;
  int64_t start_ns = 0, end_ns = 0;
  std::string verdict;  // normal, anomalous, not_enough_history
  std::vector<std::string> history;  // job ids used
  std::vector<PhaseResult> phases;
  std::vector<Neighbour> neighbours;
  std::vector<ServerOutlier> server_outliers;
  std::vector<ServerOutlier> explained_servers;  // slow only because of the other layer's lagging servers
  double slowdown = 0;  // largest phase slowdown
  // How the job's servers were judged (docs/anomaly.md "Which server slowed
  // the job"): brw_osc (the servers' own records), client_time (the job's
  // traced time per I/O through each server, by the file layouts),
  // io_time (Beacon's I/O-time comparison) or none (nothing to compare:
  // no such records, too few peers). unjudged: servers of the job that
  // had nothing to be compared with.
  std::string server_check = "none";
  std::vector<std::string> servers_unjudged;
  Options options;
};

Result<AnomalyResult> Analyze(Store& store, const std::string& job_id, const JobSource& src, const Options& opt);

std::string ToJson(const AnomalyResult& r, bool pretty = true);
std::string ToTable(const AnomalyResult& r);
// "slowed ~4.0x by simfs-OST0005 (the server, not your code)": the job's
// slowdown against its history (else the server's cost ratio) and the
// slowest server named; "" when none is.
std::string BlameText(const AnomalyResult& r);
// iosonar.result.anomaly records: one for the job (verdict), then one per
// neighbour and per server outlier; deterministic event.stream.
std::string ToRecords(const AnomalyResult& r, const std::string& host);
// Into the job database (migration 35): replaces the job's job_anomaly,
// job_anomaly_neighbour and job_server_outlier rows in one transaction.
Status WriteToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const AnomalyResult& r);
// A job's stored result (migration 35; its tables are declared in
// core/results/results.def): the job_anomaly row (all but result_json),
// the neighbours by rank and the lagging servers, largest cost first. The
// one reader of a job's rows (StoredVerdictLine, serve's job page).
struct StoredAnomaly {
  results::job_anomaly::Row job;
  std::string server_check;  // AnomalyResult::server_check from result_json ("" in rows written before it)
  std::vector<std::string> servers_unjudged;  // and its unjudged servers
  std::vector<results::job_anomaly_neighbour::Row> neighbours;
  std::vector<results::job_server_outlier::Row> outliers;
};
// nullopt when the job has no job_anomaly row.
Result<std::optional<StoredAnomaly>> ReadStored(MysqlConn& db, const std::string& cluster, uint64_t job_id);
// The anomalous jobs whose first suspect (rank 0) is this job, by job id, at
// most `limit`: each its neighbour row (job_id: the slowed job; shared,
// evidence) and its slowdown. The one reader of a job's rows as a neighbour
// (serve's "your job slowed").
struct SlowedBy {
  results::job_anomaly_neighbour::Row neighbour;
  double slowdown = 0;
};
Result<std::vector<SlowedBy>> ReadSlowedBy(MysqlConn& db, const std::string& cluster, uint64_t job_id, size_t limit);
// The stored verdict of a job as one line for people ("I/O anomaly: anomalous
// against 6 earlier runs, slowest phase 4.0x its history; first neighbour
// 3999 (high_mdops); lagging fwd001"), "" when the job has no job_anomaly row.
Result<std::string> StoredVerdictLine(MysqlConn& db, const std::string& cluster, uint64_t job_id);
// The same as a compact JSON object {"verdict", "history_runs", "slowdown",
// "computed_at"}, "" when the job has no job_anomaly row.
Result<std::string> StoredVerdictJson(MysqlConn& db, const std::string& cluster, uint64_t job_id);

}  // namespace iosonar::anomaly
