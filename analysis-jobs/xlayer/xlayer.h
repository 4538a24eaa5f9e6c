// The cross-layer view of one job (Beacon, NSDI'19 §3.3; TOKIO's coverage
// factors): from the job's nodes and time window, its client traces; through
// the node -> forwarding-node map, the forwarding layer (Lustre client llite
// and osc records of those nodes); through the job's file -> OST layouts (or,
// without layouts, the targets its job_stats name) the OST and MDT records.
//
// Definitions (what the numbers mean):
//  - window: [start, end) of the job: from the maps / job database if given,
//    else from its trace runs (first start floored, last end ceiled to 1 s).
//  - Series: per layer, 1 s buckets from the window start: read and write
//    bytes, data ops and metadata ops. client: the job's trace runs by their
//    start; forwarding: llite records of the job's forwarding nodes (all the
//    traffic through them, not only this job's); ost: iosonar.oss of the
//    job's OSTs; mdt: iosonar.mds of all MDTs (total ops). Server records
//    cover [@timestamp - lustre.elapsed_ns, @timestamp) (the exporters stamp
//    a delta at its later reading); each is spread over the buckets that
//    interval overlaps in proportion to the overlap, the part outside the
//    window left out (totals and shares too); a record without elapsed_ns
//    counts in the bucket just before its @timestamp; lustre.reset records
//    (no deltas) are skipped. Server records stamped up to 5 min after the
//    window are read.
//  - Server share: for each server the job used, the job's bytes on it over
//    the window divided by all bytes it served over the window. OST: job
//    bytes from iosonar.jobstats (job.id, target); without job_stats records,
//    the trace bytes of each file split evenly over its stripe OSTs (marked
//    "estimated"). Forwarding node: the job's trace bytes from the nodes
//    behind it / its llite bytes. MDT: the job's job_stats ops / mds.ops.
//  - Coverage factors (TOKIO): the job's trace bytes / all OSTs' bytes
//    (iosonar.oss of the file system) over the window; opens: trace open ops /
//    mds.open; stats: trace stat ops / mds.getattr. A factor is 0 when the
//    denominator is 0 (no server data).
// Pure functions over text (ParseGetstripe, MapsFromJson) and one store
// reader (Analyze); nothing keeps state; thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/jobdb/jobdb.h"
#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::xlayer {

struct Layout {
  std::string path;
  int64_t stripe_size = 0;
  std::vector<int> osts;  // OST indices (obdidx / l_ost_idx), stripe order, all components
  int mdt = -1;           // -1: unknown
};

struct ParseIssue {
  size_t line = 0;
  std::string what;
};

// Parses `lfs getstripe FILE...` text: the plain (v1/v3) form with its
// obdidx table and the composite (PFL) form with lmm_objects / l_ost_idx
// entries. Files without objects (directories' defaults, uninstantiated
// components only) get no OSTs and are left out. Lines that cannot be read
// are reported in issues (line numbers from 1) and skipped.
std::vector<Layout> ParseGetstripe(std::string_view text, std::vector<ParseIssue>* issues = nullptr);

struct JobInfo {
  std::string id;
  int64_t start_ns = 0, end_ns = 0;
  std::vector<std::string> nodes;
};

struct Maps {
  std::string fs;  // file system name (OST target names are FS-OSTxxxx)
  std::map<std::string, std::string> node_fwd;
  std::map<std::string, Layout> layouts;  // by path
  std::map<std::string, JobInfo> jobs;    // by id
};

// The simulator's --maps JSON ({"filesystem", "jobs", "node_forwarding", "layouts"}).
Result<Maps> MapsFromJson(std::string_view json);
// Adds to *m what the job database knows of the job (JobDb::FindJob with
// `cluster`): its window and nodes, its nodes' forwarding nodes and its file
// layouts (and their file system).
Status MapsFromJobDb(JobDb& db, const std::string& cluster, const std::string& job_id, Maps* m);

struct Series {
  int64_t start_ns = 0;
  int64_t bucket_ns = 1000000000;
  std::vector<double> read_bytes, write_bytes, data_ops, meta_ops;
  void Resize(size_t n);
  double TotalBytes() const;
};

struct ServerShare {
  std::string server;
  double job_bytes = 0, total_bytes = 0, share = 0;
  double job_ops = 0, total_ops = 0;
  // osc records: mean RPCs in flight, weighted by RPCs, that the job's
  // forwarding nodes saw to this OST / that this forwarding node saw to all
  // OSTs (0: no osc records). A slow OST or forwarding node queues RPCs.
  double in_flight_mean = 0;
  bool estimated = false;
};

struct View {
  std::string job_id;
  int64_t start_ns = 0, end_ns = 0;
  std::string window_source;  // "maps", "trace"
  std::vector<std::string> nodes, fwd_nodes, files;
  uint64_t trace_records = 0;
  int64_t job_bytes = 0, job_read_bytes = 0, job_write_bytes = 0, job_opens = 0, job_stats = 0, job_meta_ops = 0;
  double fs_bytes = 0, fs_opens = 0, fs_stats = 0;
  // TOKIO's coverage factors: the job's bytes/opens/stats on the file system
  // only (analysis-jobs/lib/coverage.h) over the file system's; 0 when its count is 0.
  double coverage_bytes = 0, coverage_opens = 0, coverage_stats = 0;
  double job_fs_bytes = 0;     // the job's bytes on the file system
  std::string coverage_basis;  // how its files were placed: "mounts", "layouts", "all files ..."
  Series client, fwd, ost, mdt;
  std::vector<ServerShare> fwd_shares, ost_shares, mdt_shares;
  std::string ost_source;  // "layouts", "jobstats", "none"
  uint64_t unmapped_nodes = 0;  // job nodes without a forwarding node in the map
};

struct Options {
  int64_t bucket_ns = 1000000000;
};

// The view of job_id from the store; maps may be empty (then the window and
// nodes come from the trace and the OSTs from job_stats).
Result<View> Analyze(Store& store, const std::string& job_id, const Maps& maps, const Options& opt = {});

std::string ToJson(const View& v, bool with_series = true);
std::string ToTable(const View& v);

// "simfs-OST000a" -> 10; "simfs-OST000a-osc-ffff..." -> 10; else -1.
int OstIndexOf(std::string_view target);
int MdtIndexOf(std::string_view target);

// ---- results to the job database and a result stream ----
// Replaces the job's job_xlayer row and all its job_server_share rows
// (migration 025) with this view, in one transaction; json is the view as
// ToJson wrote it (stored in job_xlayer.view_json).
Status WriteToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const View& v, const std::string& json);
// The view as records: one iosonar.result.xlayer (totals, coverage factors)
// then one iosonar.result.server_share per server (forwarding, ost, mdt in
// the view's order), event.seq 0, 1, ... in that order, @timestamp the window
// start. event.stream: from the job, its window and the sources of window and
// OSTs (analysis::ResultStreamId), so a resend dedupes.
std::string ToRecords(const View& v, const std::string& host);

}  // namespace iosonar::xlayer
