// The per-job I/O summary (Beacon, NSDI'19, section 3.3): bandwidth, IOPS,
// runtime, processes and nodes doing I/O, metadata load, the I/O mode (N-N,
// N-1, N-M, 1-1) with the evidence it was decided on, and a plain-text report
// for a user asking "why was my job's I/O slow?".
//
// Summarize() is a pure function over trace runs, so every number can be
// checked on synthetic input; SummarizeJob() gives the same numbers from a
// store, from its sums (Groups and Span) when they hold them, else from the
// job's records.
// Nothing here keeps state; all functions are thread-safe.
//
// Definitions (the numbers mean exactly this):
//  - A run is one iosonar.trace record: `count` ops of `size` bytes each that
//    moved `bytes` bytes over [start_ns, end_ns]. Failed runs (errno != 0)
//    still count as ops (they cost a call and usually a server round trip);
//    they are also counted under errors.
//  - runtime_s: first start to last end over all trace runs of the job.
//  - Per direction (read, write), the headline bw_avg and iops (Beacon §3.3:
//    "average ... bandwidth, average IOPS", which Beacon measures over the
//    job's I/O phases): the direction's I/O phases are the wavelet phases
//    (analysis-jobs/phases, default PhaseOptions) of its bucket_ns-wide byte
//    series (io_phases of them; io_phases_s = their buckets x width, the
//    first clipped to the direction's first start and the last to its last
//    end, so one short burst counts its exact span, not whole buckets);
//    bw_io_phases = the bytes in those buckets / io_phases_s, iops_io_phases
//    = the ops in them (a run's ops spread as its bytes) / io_phases_s.
//    bw_avg, iops = those (rate_basis "io phases"); a direction with bytes
//    but no phase found takes bw_span, iops_span (rate_basis "span"; "io
//    time" when the span is 0). So a job that reads at its start and checkpoints at its end is
//    not diluted by the compute in between. span_s = first start to last end
//    of that direction's runs; bw_span = bytes / span_s; iops_span = ops /
//    span_s (both 0 when span_s is 0): the headline before 2026-11. Two
//    more, labelled: over the direction's I/O time (io_time_s = the
//    bucket_ns-wide buckets its runs' bytes fall in, a run spread over the
//    buckets it spans): bw_io_time, iops_io_time; and over the whole run
//    (runtime_s): bw_run, iops_run. busy_s = summed io.duration_ns; bw_peak = the largest
//    bucket of bytes over bucket_ns-wide (default 1 s) epoch-aligned buckets,
//    divided by the bucket width, where a run's bytes are spread uniformly
//    over [start_ns, end_ns] (a zero-length run puts all its bytes in the
//    bucket holding start_ns) -- or bw_avg if that is larger: a burst shorter
//    than a bucket is diluted by the bucket, while the average over span_s is
//    itself a lower bound on the peak rate.
//  - Request sizes: Darshan's ten bins over io.size (the requested size of
//    each op), counted in ops; upper bounds inclusive: 0-100, 100-1K (1024),
//    1K-10K (10240), 10K-100K (102400), 100K-1M (1 MiB), 1M-4M, 4M-10M
//    (10 MiB), 10M-100M, 100M-1G (1 GiB), 1G+.
//  - Metadata ops (Lustre MDS work, as Beacon's open/lookup counts): open,
//    close, stat, access, unlink, rename, mkdir, rmdir. Every other non-data
//    op (seek, sync, dup, flush, ...) is counted under "other": lseek never
//    reaches a server and fsync is data traffic to the OSTs.
//  - Metadata rate during I/O phases (Beacon §3.3, App. B: "average metadata
//    operations per second during I/O phases"): the I/O phases are those the
//    wavelet method of analysis-jobs/phases finds (default PhaseOptions) in
//    the job's bucket_ns-wide read and write byte series (the union of the
//    read and write phases' buckets; io_phases = how many phases,
//    io_phases_s = the union's buckets x width); meta.ops_in_io_phases = the
//    metadata ops in those buckets (a run's ops spread over the buckets its
//    [start, end] spans, as its bytes are); meta.ops_per_s_io_phases =
//    ops_in_io_phases / io_phases_s (0 without phases: a job without data
//    bytes has none). Over a span of more than kMaxPhaseSummaryBuckets
//    buckets the phases are found on the coarsened series below.
//  - Seconds with any I/O (io_phase_s, a name kept for the cached JSON): the
//    number of distinct bucket_ns-wide epoch-aligned buckets that any traced
//    op (data, metadata or other) overlaps, times the bucket width.
//    meta.ops_per_s = meta.ops / io_phase_s, i.e. the metadata rate over the
//    seconds the job did any I/O at all (not Beacon's phases).
//  - A process is host + pid; processes_with_io / nodes_with_io count those
//    that moved read or write bytes (> 0). files counts distinct files of
//    read/write runs; files_total also counts files only touched by metadata
//    ops. A file is its file.id, else its path, else (for unnamed fds such as
//    pipes) "fd N of host:pid"; its path is the least (byte order) non-empty
//    file.path of its runs.
//  - I/O mode, per direction, decided on byte volume (ModeOptions):
//    1. Files sorted by bytes: keep the smallest set carrying >= volume_share
//       (default 0.9) of the bytes, plus any file at least tie_ratio (0.5) as
//       large as the smallest kept one (so equal-sized files are kept or
//       dropped together). M = kept files.
//    2. The same rule over processes, by their bytes on kept files. N = kept
//       processes.
//    3. A kept file is private when one process carries >= private_share
//       (default 0.9) of its bytes.
//    4. no bytes -> "none". One process (N=1): Beacon's "1-1" is "only one of
//       all processes performs sequential I/O on a single file", so: M=1 and
//       sequential -> "1-1"; M=1 and not sequential -> "1-1 random" (one
//       process, random offsets in one file); M>1 -> "1-M" (one process, M
//       files). A file's I/O in a direction is sequential when at least
//       volume_share (0.9) of its ops (of the kept files) are consecutive:
//       Darshan's consecutive-op view (POSIX_CONSEC_READS / POSIX_READS),
//       in ops, so an engine can sum it. A run's consecutive ops are its
//       io.ops_sequential (at most its count) when it has that field (the
//       tracer's aggregates past the detail budget, and its data records:
//       ops starting where the previous op of the same thread on the same fd
//       and direction ended); a run without it gets them from offsets in time
//       order: its first op if the run begins where that process's previous
//       run on the file ended (the process's first run on it, and a run
//       without an offset such as stdio's, count), plus its other count - 1
//       ops unless it is strided (io.stride). sequential_share = consecutive
//       ops / ops of the direction. N>1, M=1 -> "N-1";
//       N>1, M>=N, every kept file private -> "N-N" (file per process, also
//       several files per process); otherwise "N-M" (Beacon: N processes
//       aggregate into M < N files; here also N processes sharing M >= N files).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/records/fields.h"
#include "core/store/store.h"

namespace iosonar::analysis {

// One iosonar.trace record, as plain values (absent numbers are 0, absent
// strings empty, an absent fd or offset -1).
struct TraceRun {
  std::string host;
  int64_t pid = 0;
  int64_t tid = 0;
  std::optional<int64_t> rank;
  std::string op;     // read, write, open, close, seek, sync, stat, ...
  std::string layer;  // posix, stdio, mpiio
  std::string file_path;
  std::string file_id;
  int64_t fd = -1;
  int64_t offset = -1;
  int64_t size = 0;   // requested bytes of each op
  int64_t count = 0;  // ops in the run
  int64_t bytes = 0;  // bytes actually transferred by the run
  int64_t errno_ = 0;  // 0 if the ops succeeded
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns = 0;  // time inside the ops, summed
  bool collective = false;  // mpiio runs: collective calls
  int64_t comm_size = 0;    // mpiio runs: processes in the file's communicator
  int64_t ops_sequential = -1;  // io.ops_sequential: ops continuing the previous one (-1: absent)
  int64_t stride = 0;           // io.stride of a strided run (0: absent, contiguous)
  // Darshan imports (absent in the tracer's records): alignment counters
  // (-1 absent) and, once per shared file, its stragglers (fastest_rank -1: absent).
  int64_t alignment = 0, mem_alignment = 0;
  int64_t ops_not_aligned = -1, ops_mem_not_aligned = -1;
  int64_t fastest_rank = -1, slowest_rank = -1;
  int64_t fastest_rank_bytes = 0, slowest_rank_bytes = 0;
  int64_t fastest_rank_time_ns = 0, slowest_rank_time_ns = 0;
};

struct ModeOptions {
  double volume_share = 0.9;   // files (then processes) carrying this share are kept
  double tie_ratio = 0.5;      // ... plus those at least this large relative to the smallest kept
  double private_share = 0.9;  // one process carrying this share of a file makes it private
};

// Longest span (in bucket_ns buckets) whose I/O phases are found on the
// bucket_ns series itself; longer jobs use the coarsened summary series.
inline constexpr int64_t kMaxPhaseSummaryBuckets = int64_t{1} << 20;

struct SummaryOptions {
  int64_t bucket_ns = 1000000000;  // bw_peak and I/O phase buckets, epoch-aligned
  ModeOptions mode;
  size_t top_files = 20;           // files listed in evidence and top_files
  size_t max_series_points = 3600;  // the series is coarsened (whole buckets) beyond this
  double imbalance_share = 0.15;    // stragglers: drishti's threshold (imbalance_stragglers)
  double process_imbalance_share = 0.3;  // per process: drishti's imbalance_size
};

inline constexpr size_t kSizeBins = 10;
// Labels of the request-size bins, and their inclusive upper bounds (the last is open).
extern const std::array<std::string_view, kSizeBins> kSizeBinLabels;
extern const std::array<int64_t, kSizeBins - 1> kSizeBinUpper;
size_t SizeBin(int64_t size);

struct DirectionStats {
  uint64_t bytes = 0;
  uint64_t ops = 0;
  uint64_t runs = 0;
  int64_t first_start_ns = 0;  // valid when runs > 0
  int64_t last_end_ns = 0;
  double span_s = 0;
  // The headline (Beacon §3.3 "average ... bandwidth, average IOPS"): over
  // the direction's I/O phases (rate_basis "io phases"), else over its span
  // (rate_basis "span": no phase found), else over its I/O time ("io time").
  double bw_avg = 0;  // bytes/s
  double bw_peak = 0;  // bytes/s
  double busy_s = 0;
  double iops = 0;
  std::string rate_basis;               // "io phases", "span" (also a summary cached before 2026-11), "io time", ""
  double bw_span = 0, iops_span = 0;    // over span_s, first start to last end (the headline before 2026-11)
  size_t io_phases = 0;                 // the direction's wavelet-detected I/O phases
  double io_phases_s = 0;               // their buckets x width
  double bytes_in_io_phases = 0, ops_in_io_phases = 0;  // moved inside them
  double bw_io_phases = 0, iops_io_phases = 0;          // bytes_in / io_phases_s, ops_in / io_phases_s
  double io_time_s = 0;                // buckets with this direction's bytes x bucket width
  double bw_io_time = 0, iops_io_time = 0;  // over io_time_s (0 when it is 0)
  double bw_run = 0, iops_run = 0;          // over the job's runtime_s
  double sequential_share = 0;         // consecutive ops / ops (see "sequential" above)
  double avg_request_bytes = 0;  // requested bytes per op
  std::array<uint64_t, kSizeBins> size_hist{};  // ops per bin
};

struct FileBytes {
  std::string id;  // the file key (see "A file is" above)
  std::string path;  // "" if unknown
  uint64_t bytes = 0;
  uint64_t processes = 0;  // distinct processes moving bytes to/from it
};

struct ModeEvidence {
  std::string mode = "none";  // "N-N", "N-1", "N-M", "1-1", "1-1 random", "1-M", "none"
  uint64_t processes = 0;      // processes moving bytes in this direction
  uint64_t files = 0;          // files with bytes in this direction
  uint64_t kept_processes = 0;  // N
  uint64_t kept_files = 0;      // M
  uint64_t private_files = 0;   // kept files dominated by one process
  double kept_share = 0;        // share of the bytes on kept files
  std::string explanation;      // the decision in words
  std::vector<FileBytes> top_files;  // by bytes, at most SummaryOptions::top_files
};

struct TopFile {
  std::string id;
  std::string path;
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t processes = 0;  // distinct processes moving bytes
};

// The MPI-IO layer (io.layer "mpiio", libiosonar-mpiio.so): the logical view
// of the I/O, as the program called it, beside the physical one of the
// POSIX calls (the rest of JobSummary). With collective buffering the two
// differ: 8 ranks writing one shared file with MPI_File_write_at_all are
// logically N-1, while the POSIX writes come from the aggregators only.
//  - Logical mode: the same rule as the physical one (DecideMode), over the
//    mpiio runs: processes are the ranks that called MPI-IO with bytes.
//  - collective_share: bytes of collective calls / bytes, per direction.
//  - ranks: processes with mpiio bytes in the direction; aggregators:
//    processes with POSIX bytes in that direction on the files accessed
//    through MPI-IO (those that did the file system's work).
struct MpiioDirection {
  uint64_t bytes = 0;
  uint64_t ops = 0;
  uint64_t collective_ops = 0;
  double collective_share = 0;
  uint64_t ranks = 0;
  uint64_t aggregators = 0;
  uint64_t files = 0;  // files with mpiio bytes in this direction
};
struct MpiioView {
  uint64_t records = 0;  // mpiio trace runs; 0: the job has no MPI-IO layer
  int64_t comm_size_max = 0;
  MpiioDirection read, write;
  ModeEvidence mode_read, mode_write;  // logical
};

// Darshan's alignment counters over the job (io.ops_not_aligned,
// io.ops_mem_not_aligned; drishti P07/P08): data_ops = the ops of the posix
// data runs carrying either (Darshan's POSIX_READS + POSIX_WRITES).
struct AlignmentStats {
  uint64_t data_ops = 0;
  uint64_t not_aligned = 0;      // file offset not a multiple of the alignment
  uint64_t mem_not_aligned = 0;  // buffer address not a multiple of the memory alignment
  int64_t alignment = 0, mem_alignment = 0;  // the largest seen
};

// Load imbalance on a file several processes shared.
//  - Stragglers (drishti P18/P19), from a shared file's Darshan reduction
//    (file.fastest_rank ...): bytes_imbalance = |slowest - fastest rank's
//    bytes| / the file's bytes; time_imbalance = |slowest - fastest rank's
//    time| / the file's time (io.duration_ns summed over its runs of that
//    layer: Darshan's F_READ_TIME + F_WRITE_TIME + F_META_TIME).
//  - Per process (drishti P21/P22), for files without that reduction (each
//    process's own bytes are known) and at least two processes with data
//    runs on them: per direction, (max - min) / max of the processes' bytes
//    (a process that only used the other direction counts 0).
struct ImbalancedFile {
  std::string id, path, layer;
  std::string kind;  // "stragglers" or "processes"
  uint64_t bytes = 0;
  double time_s = 0;  // stragglers
  int64_t fastest_rank = -1, slowest_rank = -1;
  uint64_t fastest_bytes = 0, slowest_bytes = 0;
  double fastest_s = 0, slowest_s = 0;
  double bytes_imbalance = 0, time_imbalance = 0;
  // processes: the direction ("read"/"write"), how many, min and max bytes
  std::string direction;
  uint64_t processes = 0, min_bytes = 0, max_bytes = 0;
};

struct JobSummary {
  std::string job_id;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  double runtime_s = 0;
  uint64_t records = 0;  // trace runs summarized
  double busy_s = 0;     // time inside all traced calls, summed over threads
  DirectionStats read, write;
  uint64_t meta_ops = 0;
  double meta_ops_per_s = 0;  // over io_phase_s, the seconds with any I/O
  double io_phase_s = 0;      // seconds (buckets) with any traced op
  // Beacon's rate: over the wavelet-detected I/O phases (see above).
  size_t io_phases = 0;
  double io_phases_s = 0;
  double meta_ops_in_io_phases = 0;
  double meta_ops_per_s_io_phases = 0;
  std::map<std::string, uint64_t> meta_by_op;
  uint64_t other_ops = 0;
  std::map<std::string, uint64_t> other_by_op;
  uint64_t processes_with_io = 0;
  uint64_t nodes_with_io = 0;
  uint64_t processes = 0;  // distinct processes with any trace record
  uint64_t nodes = 0;
  uint64_t files = 0;        // distinct files of data runs
  uint64_t files_total = 0;  // ... and of metadata/other ops with a file
  uint64_t errors = 0;       // failed ops
  std::map<std::string, uint64_t> errors_by_op;
  std::map<int64_t, uint64_t> errors_by_errno;
  ModeEvidence mode_read, mode_write;
  std::vector<TopFile> top_files;  // by read+write bytes
  // Per-bucket bytes from series_start_ns, series_bucket_ns wide (a whole
  // multiple of SummaryOptions::bucket_ns), spread as for bw_peak.
  int64_t series_start_ns = 0;
  int64_t series_bucket_ns = 0;
  std::vector<double> series_read, series_write;
  int64_t tracer_dropped = -1;  // records the tracer lost (-1: no tracer records seen)
  // The MPI-IO layer. Everything above is physical: mpiio runs are left out
  // of bytes, ops, modes and files (their bytes are the POSIX ones again).
  MpiioView mpiio;
  AlignmentStats alignment;
  // Files of both kinds of ImbalancedFile whose imbalance exceeds
  // SummaryOptions::imbalance_share, most imbalanced first (at most top_files).
  std::vector<ImbalancedFile> imbalanced_files;
  // Per direction: files at least two processes moved bytes in with at
  // least 1,000 ops of at most 1 MiB on average (drishti's small bound):
  // shared files with small requests (drishti P15/P16 on Darshan's shared records).
  std::vector<FileBytes> shared_small_read, shared_small_write;
  uint64_t shared_small_read_ops = 0, shared_small_write_ops = 0;
};

JobSummary Summarize(std::span<const TraceRun> runs, const SummaryOptions& opt = {});

// The job's summary from a store: from its sums (SummarizeJobFromSums) when
// they hold it, else from its iosonar.trace records in time order
// (ReadTraceRuns + Summarize); the same numbers either way. Then the dropped
// counts of iosonar.tracer. NotFound if the job has no trace records.
Result<JobSummary> SummarizeJob(Store& store, const std::string& job_id, const SummaryOptions& opt = {});

// Summarize() of the job's runs computed from the store's sums (Groups and
// Span: an engine sends sums, not records): a few searches whatever the
// number of records. It holds when every read/write record has
// io.ops_sequential (so the consecutive ops are a sum), no run crosses a
// bucket_ns boundary (each run then lies in the bucket of its start, so the
// per-bucket spreading is a sum per bucket: checked by comparing the records'
// start and end buckets), read/write records have io.bytes >= 0 and, where
// they move bytes, io.size > 0, the job has no MPI-IO layer, and its span is
// at most 100,000 buckets; nullopt when one does not (the caller then reads
// the records). Assumes event.end_ns >= event.start_ns and io.ops_sequential
// <= io.count per record, as the tracer writes them. tracer_dropped is left
// at -1. NotFound if the job has no trace records.
Result<std::optional<JobSummary>> SummarizeJobFromSums(Store& store, const std::string& job_id,
                                                       const SummaryOptions& opt = {});

// The job's iosonar.trace runs (TraceRunFields). NotFound if it has none.
Result<std::vector<TraceRun>> ReadTraceRuns(Store& store, const std::string& job_id);

// What the tracer lost: tracer.dropped of iosonar.tracer records is a running
// total per process instance (event.stream), so the largest value of each
// stream is what that process lost; Total() is their sum, -1 when no stream
// reported.
class DroppedTally {
 public:
  void Add(int64_t stream, int64_t dropped) {
    int64_t& d = max_[stream];
    d = std::max(d, dropped);
  }
  int64_t Total() const {
    if (max_.empty()) return -1;
    int64_t t = 0;
    for (const auto& kv : max_) t += kv.second;
    return t;
  }

 private:
  std::map<int64_t, int64_t> max_;
};

// The iosonar.trace fields a TraceRun holds, in the order TraceRunFromRow
// reads them: use them as ScanQuery::fields (a caller may append more after).
const std::vector<FieldId>& TraceRunFields();
TraceRun TraceRunFromRow(const Row& row);

// Nested JSON: {"job_id", "runtime_s", "read": {"bytes", "ops", "bw_avg",
// "bw_peak", ...}, "write": {...}, "meta": {"ops", "ops_per_s", ...},
// "processes_with_io", "nodes_with_io", "files", "io_mode": {"read",
// "write"}, "io_mode_evidence": {...}, "top_files": [...], "series": {...}}.
// Rates are bytes/s or ops/s, times seconds.
std::string SummaryToJson(const JobSummary& s, bool pretty = false);
// Reads back what SummaryToJson wrote (a cached summary).
Result<JobSummary> SummaryFromJson(std::string_view json);
// The report for people: aligned columns, human units, the I/O mode in words
// and plain-language hints.
std::string SummaryToTable(const JobSummary& s);

}  // namespace iosonar::analysis
