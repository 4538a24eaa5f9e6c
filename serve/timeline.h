// The job page's timelines (docs/serve.md "Panels"): per process (or per
// node) the bytes it read and wrote over time, as Darshan's job report draws
// per-rank I/O, and per server the job's bytes through each forwarding node
// and OST it used, as the anomaly analysis attributes them to servers
// (analysis-jobs/anomaly: a lagging server is the one still busy after its
// peers are done).
//
// Definitions (the numbers mean exactly this):
//  - Window: the job's trace runs, first start floored and last end ceiled to
//    whole seconds. Columns: bucket_ns = the smallest whole number of seconds
//    that gives at most max_buckets columns.
//  - Rows: a process is host + pid (named "rank R" when its records carry a
//    rank, else "host:pid"); with more than max_rows processes with data,
//    one row per node instead (rows_by "node"), and with more than max_rows
//    nodes the max_rows moving most bytes (rows_omitted says how many not).
//    A row's read/write bytes are its read and write runs' io.bytes (MPI-IO
//    runs left out: their bytes are the POSIX ones again), each run's spread
//    uniformly over the buckets [start, end] overlaps (a zero-length run in
//    the bucket of its start), so a row's buckets sum to its totals. The JSON
//    gives whole bytes per bucket (rounded running sums: they still add up
//    to the rounded totals) and seconds to the microsecond.
//    busy_s: the row's io.duration_ns of all its runs (data, metadata, other).
//  - Servers: forwarding: the job's read+write trace bytes of the nodes
//    behind each forwarding node (the job database's node -> forwarding map),
//    spread as above; ost: the job's iosonar.jobstats bytes (read + write)
//    per OST target, each record spread over the interval it covers
//    ([@timestamp - lustre.elapsed_ns, @timestamp); without elapsed_ns the
//    second before @timestamp), parts outside the window in its first or last
//    bucket. active_s: the whole seconds those intervals cover (with the
//    simulator's and Beacon's 1 s samples, the anomaly analysis' I/O time of
//    a server).
// Pure over its inputs (BuildTimeline); one store reader.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::serve {

struct TimelineRun {  // one iosonar.trace record, what the timeline needs of it
  std::string host;
  int64_t pid = 0;
  std::optional<int64_t> rank;
  std::string op, layer;
  int64_t bytes = 0, start_ns = 0, end_ns = 0, duration_ns = 0;
};
struct JobstatsRow {  // one iosonar.jobstats record of the job
  std::string target;
  int64_t timestamp_ns = 0;
  int64_t bytes = 0;  // read + write
  int64_t elapsed_ns = 0;  // lustre.elapsed_ns (0: absent)
};

struct Timeline {
  std::string job_id;
  int64_t start_ns = 0, bucket_ns = 1000000000;
  size_t buckets = 0;
  std::string rows_by;  // "process" or "node"
  size_t rows_omitted = 0;
  struct Row {
    std::string name, host;
    int64_t pid = 0;     // 0 for a node row
    int64_t rank = -1;   // -1: none
    std::vector<double> read, write;
    uint64_t read_bytes = 0, write_bytes = 0;
    double busy_s = 0;
  };
  std::vector<Row> rows;
  struct Server {
    std::string kind, name;  // "forwarding" / "ost"
    std::vector<double> bytes;
    uint64_t total_bytes = 0;
    double active_s = 0;
  };
  std::vector<Server> servers;  // forwarding nodes, then OSTs, by name
};

struct TimelineOptions {
  size_t max_rows = 64;
  size_t max_buckets = 240;
};

Timeline BuildTimeline(const std::string& job_id, const std::vector<TimelineRun>& runs,
                       const std::vector<JobstatsRow>& jobstats, const std::map<std::string, std::string>& node_fwd,
                       const TimelineOptions& opt = {});

// From the store: the job's trace runs and jobstats. NotFound without trace runs.
Result<Timeline> TimelineFromStore(Store& store, const std::string& job_id,
                                   const std::map<std::string, std::string>& node_fwd, const TimelineOptions& opt = {});

// {"job_id", "start", "start_ns", "bucket_s", "buckets", "rows_by", "rows_omitted",
//  "rows": [{"name", "host", "pid", "rank", "read_bytes", "write_bytes", "busy_s", "read": [...], "write": [...]}],
//  "servers": [{"kind", "name", "total_bytes", "active_s", "bytes": [...]}]}
std::string TimelineJson(const Timeline& t);

}  // namespace iosonar::serve
