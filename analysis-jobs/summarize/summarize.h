// `iosonar summarize-job` and `iosonar scoreboard` (TOKIO's summarize_job and
// darshan_scoreboard, over iosonar's trace records instead of Darshan logs).
//
// summarize-job: one flat row per job. Columns carry TOKIO's summarize_job
// names wherever iosonar has the data, so notebooks written for TOKIO's CSV
// keep working; iosonar's own columns are prefixed iosonar_. Definitions
// (Darshan's meanings, computed from trace runs):
//  - _jobid, darshan_jobid: the job id. _datetime_start/_datetime_end: the
//    job's start and end from the job database when known, else the traced
//    span, in epoch seconds (TOKIO writes floats).
//  - darshan_start_time, darshan_end_time (whole epoch seconds), darshan_walltime
//    (seconds): the traced span.
//  - darshan_app: the executable (basename of the first word of the command
//    line) most of the job's traced process images ran (a launcher's forked
//    children that exec'd count as what they exec'd); darshan_nprocs: distinct
//    MPI ranks when the tracer saw ranks, else traced processes.
//  - darshan_io_time: the slowest process's time inside read/write/metadata
//    calls (seconds); darshan_total_gibs_posix: read + written GiB through
//    POSIX; darshan_agg_perf_by_slowest_posix: POSIX bytes / darshan_io_time
//    in MiB/s (Darshan's "agg_perf_by_slowest").
//  - darshan_biggest_{read,write}_api: the layer (posix or stdio) that moved
//    the most bytes that way, with _bytes and _files (files it moved bytes of).
//  - jobsdb_concurrent_jobs/_nodes/_nodehrs (only with a job database): other
//    jobs of the cluster whose run overlapped this one, their nodes, and the
//    node-hours of the overlap.
//  Columns without data (Darshan's file-system mounts, LMT, topology, OST
//  health) are not emitted.
//
// scoreboard: per user and per application over a time range, jobs, bytes
// read and written, data ops and metadata ops, ranked by each. Users and
// applications come from the job database (--mysql); without one the user is
// "unknown" and the application is darshan_app above (from the tracer's
// command lines), so it works from job.id alone.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/jobdb/jobdb.h"
#include "core/base/status.h"
#include "core/store/store.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/summarize/fs_context.h"

namespace iosonar::analysis {

// A job's runs plus what the tracer said about its processes.
struct JobTrace {
  std::string job_id;
  std::vector<TraceRun> runs;
  // One per process image, from iosonar.tracer "start" records (images that
  // exec'd another program are left out; the new image counts).
  std::vector<std::string> command_lines;
  int64_t tracer_dropped = -1;
};

// Reads the job's iosonar.trace and iosonar.tracer records. NotFound if it has no trace records.
Result<JobTrace> ReadJobTrace(Store& store, const std::string& job_id);

// The basename of the first word of the command line most processes ran ("" if none).
std::string MainExecutable(const std::vector<std::string>& command_lines);

struct ConcurrentJobs {
  uint64_t jobs = 0;
  uint64_t nodes = 0;
  double node_hours = 0;
};

// One row: (column, value) in output order; values are already text
// (numbers in shortest round-trip form, strings verbatim).
struct SummaryRow {
  std::vector<std::pair<std::string, std::string>> cols;
  const std::string* Get(const std::string& name) const;
};

struct SummarizeInput {
  const JobTrace* trace = nullptr;
  const JobSummary* summary = nullptr;
  const JobRecord* job = nullptr;               // from the job database, if any
  const ConcurrentJobs* concurrent = nullptr;   // likewise
  int read_phases = -1, write_phases = -1;      // from analysis-jobs/phases (-1: not computed)
  const FsContext* fs = nullptr;                 // the job's file system (fs_*, fshealth_*, coverage)
  const std::vector<std::pair<std::string, std::string>>* mounts = nullptr;  // mount -> fs (biggest_*_fs)
};
SummaryRow MakeSummaryRow(const SummarizeInput& in);

// Bytes the job's trace read ([0]) and wrote ([1]) under each mount point
// (MountOf; "" for files under none, or without a path), a file known only by
// id taking the path seen with that id.
std::array<std::map<std::string, uint64_t>, 2> BytesByMount(
    const JobTrace& jt, const std::vector<std::pair<std::string, std::string>>& mounts);

// The file system a job used, as TOKIO divines it: the mount point
// (iosonar.health records' health.mount -> lustre.fs, see ReadMounts) its
// trace moved the most bytes to, whichever way was bigger; without mounts,
// the only file system with iosonar.oss records over [start_ns, end_ns).
// "" when it cannot be told.
Result<std::string> ChooseFileSystem(Store& store, const JobTrace& jt,
                                     const std::vector<std::pair<std::string, std::string>>& mounts, int64_t start_ns,
                                     int64_t end_ns);

// CSV: a header of the union of the rows' columns (first-seen order), then
// one line per row (RFC 4180 quoting; a missing column is empty).
std::string SummaryRowsToCsv(const std::vector<SummaryRow>& rows);
// JSON: an array of objects; numbers stay numbers.
std::string SummaryRowsToJson(const std::vector<SummaryRow>& rows);
// One row as a compact JSON object (the Redis and MySQL form).
std::string SummaryRowToJson(const SummaryRow& row);
// The row as one iosonar.result.job_summary record (a JSON line, "\n"-ended):
// @timestamp the job start, event.stream a hash of the job and the row (a
// resend of the same row dedupes, a changed row is a new record), result.*
// from the row's iosonar_*, darshan_*, fs_* and fshealth_* columns.
std::string SummaryRowToRecord(const SummaryRow& row, const std::string& host);

// The row into the job database (migration 010): upserts the job's
// job_tokio_summary row.
Status WriteTokioSummaryToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const std::string& row_json);

// Other jobs of the cluster whose run overlapped [start, end] (job database).
Result<ConcurrentJobs> QueryConcurrentJobs(MysqlConn& db, const std::string& cluster, uint64_t job_id,
                                           int64_t start_ns, int64_t end_ns);

// ---- one summarize-job row, step by step ----
// The job's JobSummary from its trace (with the job id and the tracer's dropped count).
JobSummary SummarizeTrace(const JobTrace& jt);

// What the job database adds to a row: the job (JobDb::FindJob; a failure is
// NotFound with its reason) and the jobs that ran alongside it over its
// window (the job's start and end, else the trace's s.start_ns/end_ns). job
// is set even when the concurrency query then fails.
struct JobDbContext {
  std::optional<JobRecord> job;
  std::optional<ConcurrentJobs> concurrent;
};
Status ReadJobDbContext(JobDb& db, const std::string& job_id, const std::string& cluster, const JobSummary& s,
                        JobDbContext* out);

struct SummarizeJobOptions {
  bool phases = true;      // count the I/O phases (analysis-jobs/phases)
  bool fs_columns = true;  // the file-system columns (fs_*, fshealth_*, darshan_biggest_*_fs)
  std::string file_system;  // their file system; "" = ChooseFileSystem
};
// The row: the trace, its summary s, the job database's part, the phase
// counts and the file-system columns over the job's window. When the
// file-system columns cannot be read, *fs_status says why and the row goes
// without them.
SummaryRow SummarizeJobRow(Store& store, const JobTrace& jt, const JobSummary& s, const JobDbContext& db,
                           const SummarizeJobOptions& opt, Status* fs_status);

// ---- scoreboard ----
struct FsTally {
  uint64_t read_bytes = 0, write_bytes = 0, data_ops = 0, meta_ops = 0;
};
struct JobTally {
  std::string job_id;
  std::string user = "unknown";
  std::string app;  // executable
  uint64_t read_bytes = 0, write_bytes = 0, data_ops = 0, meta_ops = 0;  // all its traced I/O
  int64_t first_ns = 0, last_ns = 0;
  std::map<std::string, FsTally> by_fs;  // per storage system (FileSystemOfPath)
};

// TOKIO §IV-B ranks the traffic "to each storage system": the storage
// system of a traced file. The file system (lustre.fs) of the longest mount
// point of the iosonar.health records (health.mount) that holds the path;
// else kNodeLocal for node-local mounts (/tmp, /var/tmp, /dev/shm, /run and
// below); else kUnknownFs ("" for a record without a path: pipes, sockets).
inline constexpr const char* kNodeLocal = "node-local";
inline constexpr const char* kUnknownFs = "no mount record";
std::string FileSystemOfPath(const std::string& path, const std::vector<std::pair<std::string, std::string>>& mounts);

// Per-job sums over iosonar.trace records in range (one scan), with each
// job's executable from iosonar.tracer, and per storage system with the
// mounts of the iosonar.health records of the week before `range` to its end.
Result<std::vector<JobTally>> TallyJobs(Store& store, const TimeRange& range);

struct ScoreEntry {
  std::string key;  // user or application
  uint64_t jobs = 0, read_bytes = 0, write_bytes = 0, data_ops = 0, meta_ops = 0;
};
struct FsScoreboard {  // one storage system's traffic (TOKIO §IV-B)
  std::string fs;
  bool node_local = false;  // kNodeLocal: not a shared storage system
  uint64_t jobs = 0, read_bytes = 0, write_bytes = 0, data_ops = 0, meta_ops = 0;
  std::vector<ScoreEntry> users, apps;  // all, unsorted: their I/O to this storage system
};
struct Scoreboard {
  std::vector<ScoreEntry> users, apps;  // all, unsorted (all traced I/O, node-local mounts included)
  uint64_t jobs = 0;
  std::vector<FsScoreboard> file_systems;  // by name; node-local and unknown ones included, flagged
};
Scoreboard MakeScoreboard(const std::vector<JobTally>& jobs);
// The top n of v by "bytes" (read + written), "ops" or "meta".
std::vector<ScoreEntry> TopBy(std::vector<ScoreEntry> v, const std::string& metric, size_t n);

// Users and applications of the tallied jobs from the job database (the job's
// user; its command's executable, else its name). Jobs it does not know (not
// every traced job is a scheduler job) keep theirs; a database failure stops
// and is returned.
Status NameTalliesFromJobDb(JobDb& db, const std::string& cluster, std::vector<JobTally>* tallies);

std::string ScoreboardToTable(const Scoreboard& s, size_t n);
std::string ScoreboardToJson(const Scoreboard& s, size_t n);

// ---- scoreboard results to the job database and a result stream ----
struct ScoreboardPeriod {
  std::string cluster;  // "" = not restricted to a cluster
  int64_t from_ns = 0, to_ns = 0;  // [from, to)
};
// Replaces the period's rows of the scoreboard table (migration 025; key
// cluster, from, to) with the top n users and applications by each metric,
// ranks from 1, in one transaction: fs '' over all traced I/O, then the same
// per storage system of s.file_systems (fs, node_local; migration 039).
Status WriteScoreboardToDb(MysqlConn& db, const ScoreboardPeriod& p, const Scoreboard& s, size_t n);
// The same rows as iosonar.result.scoreboard records (users then
// applications, bytes/ops/meta, by rank), event.seq 0, 1, ...; @timestamp the
// period end (the scoreboard "as of"; the start is @timestamp - scoreboard.period_ns);
// event.stream from the cluster, the period and n.
std::string ScoreboardToRecords(const Scoreboard& s, size_t n, const ScoreboardPeriod& p, const std::string& host);

}  // namespace iosonar::analysis
