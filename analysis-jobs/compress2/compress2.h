// Second-pass, inter-node compression of a job's trace (Beacon, NSDI'19 §3.2
// and Table 8): the first pass (the tracer) merged each process's runs; the
// second merges the runs that many nodes emit alike. Runs are grouped on
// their feature vector <time, op, fd, size, offset pattern> -- here: the 1 s
// window of the start, op, layer, fd, size, count, bytes, errno, io.ops_sequential, io.stride, duration-free
// file pattern (the path with the rank number written as {rank}) -- and a
// group keeps the vector once plus, per member, what differs between nodes.
//
// Lossless (default): a member keeps its process (host, pid, tid, rank,
// event.stream, from a dictionary), event.seq, its offset unless the group's
// offsets follow base + stride * rank (the offset pattern, kept once), and
// its exact start (from the window), end and duration. Decompress()
// reproduces every record exactly (file.id is recomputed from the path when
// it is the path's FNV-1a hash, else kept).
// Lossy (--lossy): fd and offsets are coarsened away (not in the key; offsets
// become the group's first), and members keep only their process; times
// become the group's first member's. Bytes, ops and counts stay exact, so the
// job's volumes do; bandwidth peaks and offsets do not.
//
// Sizes are of the encoding as it would be written (LEB128 varints, strings
// once in a dictionary), computed without writing it; the baseline is the
// same encoding of every run alone, so the byte ratio measures the second
// pass only. Beacon's Table 8 reports data-size ratios (trace size before /
// after the pass): byte_ratio is the number to compare with its 2nd-pass
// columns (lossless 2.1-4.4, lossy 2.3-11.3); record_ratio (runs / groups)
// is a count of records and is not Beacon's measure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/jobdb/mysql.h"
#include "core/base/status.h"
#include "core/store/store.h"
#include "analysis-jobs/job-summary/job_summary.h"

namespace iosonar::compress2 {

struct Rec {  // one iosonar.trace record: the fields analyses read plus the dedupe key
  analysis::TraceRun run;
  int64_t stream = 0;
  int64_t seq = 0;
  bool operator==(const Rec& o) const;
};

struct Options {
  bool lossy = false;
  int64_t window_ns = 1000000000;
};

struct Proc {
  std::string host;
  int64_t pid = 0, tid = 0, rank = -1, stream = 0;  // rank -1: absent
};

struct Member {
  uint32_t proc = 0;
  int64_t seq = 0;
  int64_t offset = -1;      // unless the group has an offset pattern
  int64_t start_delta = 0;  // start - window start
  int64_t len = 0;          // end - start
  int64_t duration = 0;
};

struct Group {
  int64_t window = 0;  // window start
  std::string op, layer, path_pattern, file_id;  // file_id "" when derived from the path
  bool rank_in_path = false;
  int64_t fd = -1, size = 0, count = 0, bytes = 0, errno_ = 0;
  int64_t ops_sequential = -1, stride = 0;  // io.ops_sequential (-1: absent), io.stride (0: absent)
  bool offset_pattern = false;
  int64_t offset_base = -1, offset_stride = 0;
  std::vector<Member> members;
};

struct Compressed {
  bool lossy = false;
  std::vector<Proc> procs;
  std::vector<Group> groups;
  uint64_t records = 0;
  uint64_t baseline_bytes = 0;    // every run encoded alone
  uint64_t compressed_bytes = 0;  // the grouped encoding
  uint64_t offset_patterns = 0;   // groups (with > 1 member) whose offsets follow base + stride * rank
  double record_ratio() const { return groups.empty() ? 0 : static_cast<double>(records) / static_cast<double>(groups.size()); }
  double byte_ratio() const { return compressed_bytes ? static_cast<double>(baseline_bytes) / static_cast<double>(compressed_bytes) : 0; }
};

Compressed Compress(const std::vector<Rec>& recs, const Options& opt = {});
// The records back, in group order (sort both sides to compare).
std::vector<Rec> Decompress(const Compressed& c);

// --verify: Decompress(c) against recs, record for record (in (stream, seq,
// start) order), and the job summaries of the two.
struct RoundTrip {
  bool records_same = false, summary_same = false;
};
RoundTrip CheckRoundTrip(const std::vector<Rec>& recs, const Compressed& c);

// The job's trace records from the store.
Result<std::vector<Rec>> LoadJob(Store& store, const std::string& job_id);

std::string ReportJson(const std::string& job_id, const Compressed& c);

// ---- results to the job database and a result stream ----
// Replaces the job's job_compression row of this mode (lossless or lossy;
// migration 025), in one transaction.
Status WriteReportToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const Compressed& c);
// The report as one iosonar.result.compression record (event.seq 0),
// @timestamp the job's first 1 s window (now when there are no records);
// event.stream from the job and the mode (lossless, lossy).
std::string ReportToRecords(const std::string& job_id, const Compressed& c, const std::string& host);

}  // namespace iosonar::compress2
