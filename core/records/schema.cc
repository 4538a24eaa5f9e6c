#include "core/records/schema.h"

#include <array>

#include "core/base/json.h"

namespace iosonar::schema {
namespace {

using T = Type;
using M = Metric;

constexpr std::array kDatasets = {
    Dataset{"iosonar.trace", "logs",
            "Compressed POSIX/stdio I/O runs from the LD_PRELOAD tracer: one record per run of "
            "contiguous same-size ops of one thread on one fd within one time window"},
    Dataset{"iosonar.tracer", "logs",
            "Per-process tracer bookkeeping: start, exec and exit, raw op and record counts, "
            "dropped and spooled records, the command line"},
    Dataset{"iosonar.sampler", "metrics",
            "Every exporter's report on itself, one record per source per interval: how long reading "
            "the source took, whether it worked, its warnings and the records it gave, so a broken "
            "source shows up in the data"},
    // ---- health and probe ----
    Dataset{"iosonar.health", "metrics",
            "File-system health as a client sees it (TOKIO): per OST/MDT fullness from `lfs df`, a per-file-system "
            "fullness summary, and from `lctl dl -t` the OSTs each OSS serves and the OSSes serving more than "
            "their file system's mode (failover, overload factor); health.record says which kind a record is"},
    Dataset{"iosonar.probe", "metrics",
            "The I/O latency probe (Kunkel & Betke): one record per timed operation (1 MiB write and read at "
            "random offsets of a large file; stat, read, delete of the oldest small file and create of a new one)"},
    // ---- lustre ----
    Dataset{"iosonar.oss", "metrics",
            "Lustre OSS, one record per OST per interval: deltas and rates of obdfilter/*/stats "
            "(read/write bytes and ops, every other op, LASSi's other ops)"},
    Dataset{"iosonar.mds", "metrics",
            "Lustre MDS, one record per MDT per interval: deltas of mdt/*/md_stats ops (LASSi's list) "
            "and the total op rate"},
    Dataset{"iosonar.jobstats", "metrics",
            "Lustre job_stats, one record per job id per target per interval, only for jobs whose "
            "counters changed: the op deltas of that job on that OST or MDT"},
    Dataset{"iosonar.client", "metrics",
            "Lustre clients, one record per llite mount (llite/*/stats deltas) or per OSC "
            "(osc/*/rpc_stats: RPCs, pages per RPC, RPCs in flight) per interval"},
    Dataset{"iosonar.brw", "metrics",
            "Lustre brw_stats histograms, one record per target, histogram and bucket whose count "
            "changed in the interval (read and write deltas)"},
    // ---- analysis result streams -------------------
    Dataset{"iosonar.result.job_summary", "logs",
            "One record per analysed job: the per-job I/O summary (bytes, bandwidth, IOPS, metadata "
            "ops, I/O mode) written by the analysis jobs"},
    Dataset{"iosonar.result.risk", "metrics",
            "Risk series: a per-interval risk score of a target (server, OST, job) from the analysis"},
    Dataset{"iosonar.result.slowdown", "metrics",
            "Slowdown series: observed against baseline performance of a target per interval"},
    Dataset{"iosonar.result.anomaly", "logs", "Anomalies found by the analysis: what, where, when and how strong"},
    // ---- Slurm jobs ----
    Dataset{"iosonar.job", "logs",
            "Batch jobs from the scheduler (`iosonar slurm`, sacct): one record when a job starts and one when it "
            "ends (job.event), with who ran it, where, the command and the outcome; the same facts as the MySQL job "
            "database, for joins in the search engine"},
    // ---- per-job analyses ----------------------------------------
    Dataset{"iosonar.result.phase", "logs",
            "I/O phases of a job (`iosonar phases`): one record per read or write burst found in the job's 1 s "
            "bandwidth series after wavelet denoising; @timestamp is the phase's start"},
    Dataset{"iosonar.result.bad_ost", "logs",
            "`iosonar bad-ost` (TOKIO's darshan_bad_ost): one record per OST tested, the Pearson correlation "
            "between per-file performance and the files' share on that OST, with its two-sided p-value"},
    // ---- results of xlayer, compress2 and scoreboard as streams ------------
    Dataset{"iosonar.result.xlayer", "logs",
            "The cross-layer view of a job (`iosonar xlayer`): one record per analysis with the job's window, its "
            "bytes, opens and stats, the file system's over the window and TOKIO's coverage factors; @timestamp is "
            "the window start"},
    Dataset{"iosonar.result.server_share", "logs",
            "`iosonar xlayer`: one record per server a job used (forwarding node, OST, MDT) with the share of the "
            "server's load over the job's window that came from the job; @timestamp is the window start"},
    Dataset{"iosonar.result.compression", "logs",
            "`iosonar compress2`: the second-pass inter-node compression report of a job (records, groups, ratios, "
            "lossless or lossy); @timestamp is the job's first trace window"},
    Dataset{"iosonar.result.scoreboard", "logs",
            "`iosonar scoreboard`: one record per rank of the top users and applications by bytes, data ops and "
            "metadata ops over a period; @timestamp is the period end (exclusive), the start is @timestamp minus "
            "scoreboard.period_ns"},
};


// Keep names ECS-like where ECS has the concept (host.name, process.pid, file.path).
constexpr std::array kFieldTable = {
    Field{"@timestamp", T::kDate, "", M::kNone, true, "*", "When the record's activity began (UTC, ISO 8601, ms); for interval records carrying lustre.elapsed_ns (oss, mds, jobstats, client, brw) the END of the interval, which is [@timestamp - lustre.elapsed_ns, @timestamp)"},
    Field{"event.dataset", T::kKeyword, "", M::kDimension, true, "*", "The stream this record belongs to"},
    Field{"event.stream", T::kLong, "", M::kNone, true, "*",
          "Random 63-bit id of the emitting process instance; with event.seq it identifies a record "
          "uniquely, so a resent record is stored once"},
    Field{"event.seq", T::kLong, "1", M::kNone, true, "*", "Sequence number of the record within its event.stream, from 0"},
    Field{"host.name", T::kKeyword, "", M::kDimension, true, "*", "Node that emitted the record"},
    Field{"job.id", T::kKeyword, "", M::kDimension, false, "*",
          "Batch job id (SLURM_JOB_ID, else IOSONAR_JOB_ID); absent outside a job"},
    Field{"process.pid", T::kLong, "", M::kDimension, true, "iosonar.trace iosonar.tracer", "Process id"},
    Field{"process.tid", T::kLong, "", M::kDimension, true, "iosonar.trace", "Thread id that issued the ops"},
    Field{"process.rank", T::kLong, "", M::kDimension, false, "iosonar.trace iosonar.tracer",
          "Parallel rank (SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK)"},
    Field{"io.op", T::kKeyword, "", M::kDimension, true, "iosonar.trace",
          "Operation: read, write, open, close, seek, sync, stat, access, unlink, rename, mkdir, rmdir, dup, flush"},
    Field{"io.layer", T::kKeyword, "", M::kDimension, true, "iosonar.trace", "Interface the ops came through: posix or stdio"},
    Field{"file.path", T::kKeyword, "", M::kNone, false, "iosonar.trace",
          "Absolute path of the file (at most 255 bytes; longer paths are cut)"},
    Field{"file.id", T::kKeyword, "", M::kDimension, false, "iosonar.trace",
          "Stable file id: 16 hex digits of FNV-1a-64 over the absolute path"},
    Field{"io.fd", T::kLong, "", M::kNone, false, "iosonar.trace", "File descriptor (absent for path-only metadata ops)"},
    Field{"io.offset", T::kLong, "bytes", M::kNone, false, "iosonar.trace",
          "Start offset of the run (data ops on seekable files)"},
    Field{"io.size", T::kLong, "bytes", M::kNone, false, "iosonar.trace", "Requested size of each op in the run"},
    Field{"io.count", T::kLong, "1", M::kCounter, true, "iosonar.trace", "Number of raw ops merged into this record"},
    Field{"io.bytes", T::kLong, "bytes", M::kCounter, false, "iosonar.trace", "Bytes actually transferred by the run"},
    Field{"io.errno", T::kLong, "", M::kNone, false, "iosonar.trace", "errno of the failed ops of this run (runs of failed ops only)"},
    Field{"event.start_ns", T::kLong, "ns", M::kNone, true, "iosonar.trace", "Start of the first op (ns since the Unix epoch)"},
    Field{"event.end_ns", T::kLong, "ns", M::kNone, true, "iosonar.trace", "End of the last op (ns since the Unix epoch)"},
    Field{"io.duration_ns", T::kLong, "ns", M::kCounter, true, "iosonar.trace", "Time spent inside the ops, summed"},
    Field{"event.action", T::kKeyword, "", M::kNone, true, "iosonar.tracer", "start, exec or exit"},
    Field{"process.ppid", T::kLong, "", M::kNone, false, "iosonar.tracer", "Parent process id"},
    Field{"process.command_line", T::kKeyword, "", M::kNone, false, "iosonar.tracer",
          "The exact command line (LASSi groups runs on it); at most 1 KiB"},
    Field{"tracer.raw_ops", T::kLong, "1", M::kCounter, true, "iosonar.tracer", "Intercepted ops so far in this process"},
    Field{"tracer.records", T::kLong, "1", M::kCounter, true, "iosonar.tracer", "Trace records emitted so far"},
    Field{"tracer.dropped", T::kLong, "1", M::kCounter, true, "iosonar.tracer",
          "Records lost so far (buffers full and spool full, or no thread slot)"},
    Field{"tracer.spooled", T::kLong, "1", M::kCounter, true, "iosonar.tracer",
          "Records written to the local spool because the output was unreachable"},
    Field{"tracer.window_ns", T::kLong, "ns", M::kNone, false, "iosonar.tracer", "Compression time window in force"},
    // ---- iosonar.sampler: exporters' self-reports (exporters/framework) ----
    Field{"sampler.name", T::kKeyword, "", M::kDimension, true, "iosonar.sampler", "Exporter: lustre, health, probe, ..."},
    Field{"sampler.source", T::kKeyword, "", M::kDimension, true, "iosonar.sampler",
          "What was read, e.g. \"obdfilter/lustrefs-OST0000/stats\"; \"*\" for the whole sample"},
    Field{"sampler.ok", T::kBool, "", M::kNone, true, "iosonar.sampler", "The source was read and parsed"},
    Field{"sampler.duration_ns", T::kLong, "ns", M::kGauge, true, "iosonar.sampler", "Time spent on the source this interval"},
    Field{"sampler.warnings", T::kLong, "1", M::kGauge, true, "iosonar.sampler",
          "Lines or values of the source set aside this interval (malformed, unknown, out of range)"},
    Field{"sampler.records", T::kLong, "1", M::kGauge, false, "iosonar.sampler", "Records emitted for the source this interval"},
    Field{"sampler.error", T::kKeyword, "", M::kNone, false, "iosonar.sampler", "Why the source failed (absent when ok)"},
    Field{"sampler.interval_ns", T::kLong, "ns", M::kNone, false, "iosonar.sampler", "Nominal sampling interval"},
    // ---- health and probe ----
    Field{"health.record", T::kKeyword, "", M::kDimension, true, "iosonar.health",
          "Kind of health record: target (one OST/MDT's fullness), fs (a file system's fullness summary), "
          "oss (one OSS's OST count), failover (a file system's OSS load summary)"},
    Field{"health.target_kind", T::kKeyword, "", M::kDimension, false, "iosonar.health", "ost or mdt"},
    Field{"health.target_index", T::kLong, "", M::kNone, false, "iosonar.health", "Target index (from [OST:6])"},
    Field{"health.mount", T::kKeyword, "", M::kDimension, false, "iosonar.health", "Client mount point of the file system"},
    Field{"health.active", T::kBool, "", M::kNone, false, "iosonar.health",
          "false for a target lfs df lists as an inactive device (no numbers)"},
    Field{"health.inodes", T::kBool, "", M::kDimension, false, "iosonar.health",
          "true: the record counts inodes (lfs df -i), its fullness fields are inode fullness"},
    Field{"health.bytes_total", T::kLong, "bytes", M::kGauge, false, "iosonar.health", "Capacity (lfs df 1K-blocks x 1024)"},
    Field{"health.bytes_used", T::kLong, "bytes", M::kGauge, false, "iosonar.health", "Used bytes"},
    Field{"health.bytes_avail", T::kLong, "bytes", M::kGauge, false, "iosonar.health", "Available bytes"},
    Field{"health.inodes_total", T::kLong, "1", M::kGauge, false, "iosonar.health", "Inodes (lfs df -i)"},
    Field{"health.inodes_used", T::kLong, "1", M::kGauge, false, "iosonar.health", "Inodes in use"},
    Field{"health.inodes_free", T::kLong, "1", M::kGauge, false, "iosonar.health", "Free inodes"},
    Field{"health.used_pct", T::kDouble, "percent", M::kGauge, false, "iosonar.health",
          "used / total x 100 (for fs records: over all its OSTs, pytokio's average)"},
    Field{"health.used_pct_min", T::kDouble, "percent", M::kGauge, false, "iosonar.health", "Fullness of the least full OST"},
    Field{"health.used_pct_max", T::kDouble, "percent", M::kGauge, false, "iosonar.health", "Fullness of the most full OST"},
    Field{"health.target_min", T::kKeyword, "", M::kNone, false, "iosonar.health", "The least full OST"},
    Field{"health.target_max", T::kKeyword, "", M::kNone, false, "iosonar.health", "The most full OST"},
    Field{"health.ost_count", T::kLong, "1", M::kGauge, false, "iosonar.health",
          "OSTs: of the file system (fs, failover records) or served by the OSS (oss records)"},
    Field{"health.mdt_count", T::kLong, "1", M::kGauge, false, "iosonar.health", "MDTs of the file system"},
    Field{"health.inactive_count", T::kLong, "1", M::kGauge, false, "iosonar.health", "Targets lfs df lists as inactive"},
    Field{"health.oss", T::kKeyword, "", M::kDimension, false, "iosonar.health", "OSS address (the NID before '@')"},
    Field{"health.targets", T::kKeyword, "", M::kNone, false, "iosonar.health",
          "OSTs the OSS serves, comma-separated (OST0002,OST0003)"},
    Field{"health.oss_count", T::kLong, "1", M::kGauge, false, "iosonar.health", "OSSes serving the file system"},
    Field{"health.ost_per_oss_mode", T::kLong, "1", M::kGauge, false, "iosonar.health",
          "The most common number of OSTs per OSS in the file system (ties: the smaller): the normal load"},
    Field{"health.abnormal", T::kBool, "", M::kNone, false, "iosonar.health",
          "The OSS serves a number of OSTs other than the mode (pytokio's abnormal_ips)"},
    Field{"health.overloaded", T::kBool, "", M::kNone, false, "iosonar.health",
          "The OSS serves more OSTs than the mode: it took over a failed peer's OSTs"},
    Field{"health.overload_factor", T::kDouble, "", M::kGauge, false, "iosonar.health", "OSTs served / mode"},
    Field{"health.overloaded_oss_count", T::kLong, "1", M::kGauge, false, "iosonar.health", "Overloaded OSSes of the file system"},
    Field{"health.overloaded_ost_count", T::kLong, "1", M::kGauge, false, "iosonar.health", "OSTs served by overloaded OSSes"},
    Field{"health.not_up_count", T::kLong, "1", M::kGauge, false, "iosonar.health", "OSC devices whose status is not UP"},
    Field{"probe.op", T::kKeyword, "", M::kDimension, true, "iosonar.probe",
          "write, read (1 MiB, large file), stat, small_read, delete (oldest pool file), create (new pool file + write)"},
    Field{"probe.latency_ns", T::kLong, "ns", M::kGauge, true, "iosonar.probe", "Response time of the operation"},
    Field{"probe.ok", T::kBool, "", M::kNone, true, "iosonar.probe", "The operation succeeded"},
    Field{"probe.errno", T::kLong, "", M::kNone, false, "iosonar.probe", "errno of a failed operation"},
    Field{"probe.bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.probe", "Bytes transferred"},
    Field{"probe.offset", T::kLong, "bytes", M::kNone, false, "iosonar.probe", "Offset in the large file (write, read)"},
    Field{"probe.seq", T::kLong, "", M::kNone, false, "iosonar.probe", "Sequence number of the pool file (stat ... create)"},
    Field{"probe.dir", T::kKeyword, "", M::kDimension, true, "iosonar.probe", "Directory probed"},
    Field{"probe.mount", T::kKeyword, "", M::kDimension, false, "iosonar.probe", "Mount point the directory is on"},
    Field{"probe.fs_type", T::kKeyword, "", M::kDimension, false, "iosonar.probe", "File system type (lustre, ext4, tmpfs, ...)"},
    Field{"probe.direct", T::kBool, "", M::kNone, false, "iosonar.probe", "The data ops use O_DIRECT"},
    Field{"probe.file_bytes", T::kLong, "bytes", M::kNone, false, "iosonar.probe", "Size of the large file"},
    Field{"probe.seed", T::kLong, "", M::kNone, false, "iosonar.probe",
          "Seed of the offset PRNG (from host name, pid and start time unless --seed)"},
    Field{"probe.skipped_ticks", T::kLong, "1", M::kCounter, false, "iosonar.probe",
          "Intervals skipped so far because a probe overran its interval (probes never overlap)"},
    // ---- lustre (exporters/lustre; docs/lustre.md) ----
    // lustre.fs and lustre.target are shared with iosonar.health and iosonar.probe (not required
    // there: a probe directory need not be on Lustre), so they cannot be required anywhere.
    Field{"lustre.fs", T::kKeyword, "", M::kDimension, false,
          "iosonar.oss iosonar.mds iosonar.jobstats iosonar.client iosonar.brw iosonar.health iosonar.probe",
          "Lustre file system name (fsname), from the target or mount name, e.g. snx11035"},
    Field{"lustre.target", T::kKeyword, "", M::kDimension, false,
          "iosonar.oss iosonar.mds iosonar.jobstats iosonar.client iosonar.brw iosonar.health",
          "Target: lustrefs-OST0000, lustrefs-MDT0000 (FSNAME-OSTxxxx); on clients the llite mount or OSC device name"},
    Field{"lustre.elapsed_ns", T::kLong, "ns", M::kGauge, false, "iosonar.oss iosonar.mds iosonar.jobstats iosonar.client iosonar.brw",
          "Length of the interval the deltas cover, which ends at @timestamp: [@timestamp - elapsed, @timestamp); the time between the two readings (the files' snapshot_time when present, else the sampler's clock)"},
    Field{"lustre.reset", T::kBool, "", M::kNone, false, "iosonar.oss iosonar.mds iosonar.jobstats iosonar.client iosonar.brw",
          "A counter went backwards (target restarted or stats cleared): this interval's deltas are unknown and left out"},
    Field{"lustre.jobs_active", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.mds",
          "job_stats entries of this target whose counters changed this interval"},
    Field{"lustre.jobs_dropped", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.mds",
          "Changed job_stats entries of this target not emitted because of --jobstats-max-jobs"},
    Field{"client.layer", T::kKeyword, "", M::kDimension, true, "iosonar.client",
          "Which client file: llite (per mount stats) or osc (per OST rpc_stats)"},
    Field{"brw.hist", T::kKeyword, "", M::kDimension, true, "iosonar.brw",
          "Histogram: pages, discont_pages, discont_blocks, frags, in_flight, io_time_ms, io_size, block_maps_ms"},
    Field{"brw.bucket", T::kLong, "", M::kDimension, true, "iosonar.brw",
          "Bucket lower bound as printed, K/M expanded (pages, bytes, ms or count by histogram)"},
    Field{"brw.read", T::kLong, "1", M::kGauge, false, "iosonar.brw",
          "Read RPCs or I/Os that fell in this bucket during the interval"},
    Field{"brw.write", T::kLong, "1", M::kGauge, false, "iosonar.brw",
          "Write RPCs or I/Os that fell in this bucket during the interval"},
    Field{"oss.read_bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "Bytes read (read_bytes sum delta)"},
    Field{"oss.read_ops", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "Read requests (read_bytes samples delta)"},
    Field{"oss.write_bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "Bytes written (write_bytes sum delta)"},
    Field{"oss.write_ops", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "Write requests (write_bytes samples delta)"},
    Field{"oss.read_bytes_per_s", T::kDouble, "bytes/s", M::kGauge, false, "iosonar.oss",
          "Bytes read per second over lustre.elapsed_ns"},
    Field{"oss.write_bytes_per_s", T::kDouble, "bytes/s", M::kGauge, false, "iosonar.oss",
          "Bytes written per second over lustre.elapsed_ns"},
    Field{"oss.read_ops_per_s", T::kDouble, "1/s", M::kGauge, false, "iosonar.oss",
          "Read requests per second over lustre.elapsed_ns"},
    Field{"oss.write_ops_per_s", T::kDouble, "1/s", M::kGauge, false, "iosonar.oss",
          "Write requests per second over lustre.elapsed_ns"},
    Field{"oss.ops_per_s", T::kDouble, "1/s", M::kGauge, false, "iosonar.oss",
          "All requests per second over lustre.elapsed_ns"},
    Field{"oss.other_ops", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "LASSi's other: get_info + set_info(_async) + disconnect + destroy + punch + sync + preprw + commitrw"},
    Field{"oss.unknown_ops", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "Ops with no field of their own (each name is warned about once)"},
    Field{"oss.getattr", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "getattr requests in the interval"},
    Field{"oss.setattr", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "setattr requests in the interval"},
    Field{"oss.punch", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "punch requests in the interval"},
    Field{"oss.sync", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "sync requests in the interval"},
    Field{"oss.destroy", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "destroy requests in the interval"},
    Field{"oss.create", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "create requests in the interval"},
    Field{"oss.statfs", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "statfs requests in the interval"},
    Field{"oss.get_info", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "get_info requests in the interval"},
    Field{"oss.set_info", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "set_info requests in the interval"},
    Field{"oss.quotactl", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "quotactl requests in the interval"},
    Field{"oss.prealloc", T::kLong, "1", M::kGauge, false, "iosonar.oss iosonar.jobstats",
          "prealloc requests in the interval"},
    Field{"oss.set_info_async", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "set_info_async requests in the interval"},
    Field{"oss.disconnect", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "disconnect requests in the interval"},
    Field{"oss.preprw", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "preprw requests in the interval"},
    Field{"oss.commitrw", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "commitrw requests in the interval"},
    Field{"oss.connect", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "connect requests in the interval"},
    Field{"oss.reconnect", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "reconnect requests in the interval"},
    Field{"oss.ping", T::kLong, "1", M::kGauge, false, "iosonar.oss",
          "ping requests in the interval"},
    Field{"mds.open", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "open operations in the interval"},
    Field{"mds.close", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "close operations in the interval"},
    Field{"mds.mknod", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "mknod operations in the interval"},
    Field{"mds.link", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "link operations in the interval"},
    Field{"mds.unlink", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "unlink operations in the interval"},
    Field{"mds.mkdir", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "mkdir operations in the interval"},
    Field{"mds.rmdir", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "rmdir operations in the interval"},
    Field{"mds.rename", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "rename operations in the interval"},
    Field{"mds.getattr", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "getattr operations in the interval"},
    Field{"mds.setattr", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "setattr operations in the interval"},
    Field{"mds.getxattr", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "getxattr operations in the interval"},
    Field{"mds.setxattr", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "setxattr operations in the interval"},
    Field{"mds.statfs", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "statfs operations in the interval"},
    Field{"mds.sync", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "sync operations in the interval"},
    Field{"mds.samedir_rename", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "samedir_rename operations in the interval"},
    Field{"mds.crossdir_rename", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "crossdir_rename operations in the interval"},
    Field{"mds.parallel_rename_file", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "parallel_rename_file operations in the interval"},
    Field{"mds.parallel_rename_dir", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "parallel_rename_dir operations in the interval"},
    Field{"mds.migrate", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "migrate operations in the interval"},
    Field{"mds.punch", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "punch operations in the interval"},
    Field{"mds.read_bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "Bytes read from the MDT (data on MDT)"},
    Field{"mds.read_ops", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "Reads from the MDT (data on MDT)"},
    Field{"mds.write_bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "Bytes written to the MDT (data on MDT)"},
    Field{"mds.write_ops", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "Writes to the MDT (data on MDT)"},
    Field{"mds.ops", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "All metadata operations in the interval (the ones above and unknown ones)"},
    Field{"mds.ops_per_s", T::kDouble, "1/s", M::kGauge, false, "iosonar.mds",
          "mds.ops per second over lustre.elapsed_ns"},
    Field{"mds.unknown_ops", T::kLong, "1", M::kGauge, false, "iosonar.mds iosonar.jobstats",
          "Ops with no field of their own (each name is warned about once)"},
    Field{"client.read_bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.client",
          "Bytes read through this mount"},
    Field{"client.read_ops", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "read calls (read_bytes samples delta)"},
    Field{"client.write_bytes", T::kLong, "bytes", M::kGauge, false, "iosonar.client",
          "Bytes written through this mount"},
    Field{"client.write_ops", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "write calls (write_bytes samples delta)"},
    Field{"client.read_bytes_per_s", T::kDouble, "bytes/s", M::kGauge, false, "iosonar.client",
          "Bytes read per second"},
    Field{"client.write_bytes_per_s", T::kDouble, "bytes/s", M::kGauge, false, "iosonar.client",
          "Bytes written per second"},
    Field{"client.open", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "open calls in the interval"},
    Field{"client.close", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "close calls in the interval"},
    Field{"client.getattr", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "getattr calls in the interval"},
    Field{"client.setattr", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "setattr calls in the interval"},
    Field{"client.readdir", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "readdir calls in the interval"},
    Field{"client.truncate", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "truncate calls in the interval"},
    Field{"client.fsync", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "fsync calls in the interval"},
    Field{"client.seek", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "seek calls in the interval"},
    Field{"client.mmap", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "mmap calls in the interval"},
    Field{"client.statfs", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "statfs calls in the interval"},
    Field{"client.getxattr", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "getxattr calls in the interval"},
    Field{"client.setxattr", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "setxattr calls in the interval"},
    Field{"client.listxattr", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "listxattr calls in the interval"},
    Field{"client.removexattr", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "removexattr calls in the interval"},
    Field{"client.inode_permission", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "inode_permission calls in the interval"},
    Field{"client.create", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "create calls in the interval"},
    Field{"client.unlink", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "unlink calls in the interval"},
    Field{"client.mkdir", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "mkdir calls in the interval"},
    Field{"client.rmdir", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "rmdir calls in the interval"},
    Field{"client.mknod", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "mknod calls in the interval"},
    Field{"client.rename", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "rename calls in the interval"},
    Field{"client.link", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "link calls in the interval"},
    Field{"client.symlink", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "symlink calls in the interval"},
    Field{"client.flock", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "flock calls in the interval"},
    Field{"client.ioctl", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "ioctl calls in the interval"},
    Field{"client.alloc_inode", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "alloc_inode calls in the interval"},
    Field{"client.metadata_ops", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "All llite ops other than read_bytes/write_bytes in the interval"},
    Field{"client.unknown_ops", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "llite ops with no field of their own (each name is warned about once)"},
    Field{"client.rpc_reads", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "Read RPCs sent by this OSC (pages per rpc histogram delta)"},
    Field{"client.rpc_writes", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "Write RPCs sent by this OSC"},
    Field{"client.rpc_read_pages_mean", T::kDouble, "pages", M::kGauge, false, "iosonar.client",
          "Mean pages per read RPC in the interval (bucket lower bounds)"},
    Field{"client.rpc_write_pages_mean", T::kDouble, "pages", M::kGauge, false, "iosonar.client",
          "Mean pages per write RPC in the interval (bucket lower bounds)"},
    Field{"client.rpc_read_in_flight_mean", T::kDouble, "1", M::kGauge, false, "iosonar.client",
          "Mean RPCs in flight seen by read RPCs in the interval"},
    Field{"client.rpc_write_in_flight_mean", T::kDouble, "1", M::kGauge, false, "iosonar.client",
          "Mean RPCs in flight seen by write RPCs in the interval"},
    Field{"client.read_in_flight", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "Read RPCs in flight at the reading"},
    Field{"client.write_in_flight", T::kLong, "1", M::kGauge, false, "iosonar.client",
          "Write RPCs in flight at the reading"},
    Field{"client.pending_read_pages", T::kLong, "pages", M::kGauge, false, "iosonar.client",
          "Pending read pages at the reading"},
    Field{"client.pending_write_pages", T::kLong, "pages", M::kGauge, false, "iosonar.client",
          "Pending write pages at the reading"},
    // ---- analysis result fields ---------------------
    Field{"result.analysis", T::kKeyword, "", M::kDimension, true,
          "iosonar.result.job_summary iosonar.result.risk iosonar.result.slowdown iosonar.result.anomaly",
          "The analysis that produced the record and its version, e.g. job-summary/1"},
    Field{"result.target", T::kKeyword, "", M::kDimension, false,
          "iosonar.result.risk iosonar.result.slowdown iosonar.result.anomaly",
          "What the value is about: a server (OSS/MDS/OST), a file system, a job or a node"},
    Field{"result.metric", T::kKeyword, "", M::kDimension, false,
          "iosonar.result.risk iosonar.result.slowdown iosonar.result.anomaly",
          "Which measurement the value derives from, e.g. write_bw, metadata_ops, latency"},
    Field{"result.interval_ns", T::kLong, "ns", M::kNone, false,
          "iosonar.result.risk iosonar.result.slowdown iosonar.result.anomaly",
          "Width of the interval the value covers, starting at @timestamp"},
    Field{"result.bytes_read", T::kLong, "bytes", M::kNone, false, "iosonar.result.job_summary", "Bytes the job read"},
    Field{"result.bytes_written", T::kLong, "bytes", M::kNone, false, "iosonar.result.job_summary", "Bytes the job wrote"},
    Field{"result.read_bw", T::kDouble, "bytes/s", M::kNone, false, "iosonar.result.job_summary",
          "Average read bandwidth over the job's read span"},
    Field{"result.write_bw", T::kDouble, "bytes/s", M::kNone, false, "iosonar.result.job_summary",
          "Average write bandwidth over the job's write span"},
    Field{"result.iops", T::kDouble, "1/s", M::kNone, false, "iosonar.result.job_summary", "Average data ops per second"},
    Field{"result.metadata_ops", T::kLong, "1", M::kNone, false, "iosonar.result.job_summary",
          "Metadata ops (open, close, stat, unlink, ...) of the job"},
    Field{"result.io_mode", T::kKeyword, "", M::kNone, false, "iosonar.result.job_summary",
          "The job's I/O mode: N-N, N-1, N-M, 1-1 or none"},
    Field{"result.processes", T::kLong, "1", M::kNone, false, "iosonar.result.job_summary", "Processes that did I/O"},
    Field{"result.files", T::kLong, "1", M::kNone, false, "iosonar.result.job_summary", "Files the job touched"},
    Field{"result.duration_ns", T::kLong, "ns", M::kNone, false, "iosonar.result.job_summary",
          "From the job's first to its last recorded I/O"},
    Field{"result.risk", T::kDouble, "1", M::kGauge, false, "iosonar.result.risk", "Risk of the target in the interval (LASSi: sum of the positive (x - a*avg)/(a*avg) terms; 0 when at or below a times the average)"},
    Field{"result.observed", T::kDouble, "", M::kGauge, false, "iosonar.result.slowdown",
          "Observed value of the metric in the interval"},
    Field{"result.baseline", T::kDouble, "", M::kGauge, false, "iosonar.result.slowdown",
          "Baseline (expected) value of the metric for the target"},
    Field{"result.slowdown", T::kDouble, "1", M::kGauge, false, "iosonar.result.slowdown",
          "Baseline over observed performance: 1 = as expected, 2 = twice as slow"},
    Field{"result.score", T::kDouble, "1", M::kGauge, false, "iosonar.result.anomaly", "Strength of the anomaly (e.g. a z-score)"},
    Field{"result.reason", T::kKeyword, "", M::kNone, false, "iosonar.result.anomaly", "What is anomalous, in words"},
    // ---- Slurm jobs (iosonar.job); job.id is the common field ----
    Field{"job.event", T::kKeyword, "", M::kDimension, true, "iosonar.job", "start or end: what this record reports"},
    Field{"job.cluster", T::kKeyword, "", M::kDimension, true, "iosonar.job", "Slurm cluster name"},
    Field{"job.array_id", T::kKeyword, "", M::kDimension, false, "iosonar.job", "Array job id (array tasks only)"},
    Field{"job.array_task", T::kLong, "", M::kNone, false, "iosonar.job", "Array task index (array tasks only)"},
    Field{"job.user", T::kKeyword, "", M::kDimension, false, "iosonar.job", "User the job ran as"},
    Field{"job.account", T::kKeyword, "", M::kDimension, false, "iosonar.job", "Slurm account"},
    Field{"job.partition", T::kKeyword, "", M::kDimension, false, "iosonar.job", "Slurm partition"},
    Field{"job.name", T::kKeyword, "", M::kNone, false, "iosonar.job", "Job name (sacct shows '\"' as '`')"},
    Field{"job.command", T::kKeyword, "", M::kNone, false, "iosonar.job",
          "The submit command line (Slurm's SubmitLine): LASSi groups runs of one application by it"},
    Field{"job.nodes", T::kKeyword, "", M::kNone, false, "iosonar.job", "Node list, compact Slurm form (nid[05398-05399])"},
    Field{"job.node_count", T::kLong, "1", M::kNone, false, "iosonar.job", "Nodes allocated"},
    Field{"job.task_count", T::kLong, "1", M::kNone, false, "iosonar.job", "Tasks (absent when Slurm does not say)"},
    Field{"job.start_ns", T::kLong, "ns", M::kNone, false, "iosonar.job", "Job start (ns since the Unix epoch)"},
    Field{"job.end_ns", T::kLong, "ns", M::kNone, false, "iosonar.job", "Job end (ns since the Unix epoch; end records)"},
    Field{"job.duration_s", T::kDouble, "s", M::kNone, false, "iosonar.job", "Run time, end minus start (end records)"},
    Field{"job.state", T::kKeyword, "", M::kDimension, false, "iosonar.job",
          "Slurm state: RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ..."},
    Field{"job.exit_code", T::kLong, "", M::kNone, false, "iosonar.job", "Exit code of the batch script (end records)"},
    // ---- per-job analyses ----------------------------------------
    Field{"phase.index", T::kLong, "1", M::kNone, true, "iosonar.result.phase",
          "Position of the phase in the job, from 0, by start time"},
    Field{"phase.direction", T::kKeyword, "", M::kDimension, true, "iosonar.result.phase", "read or write"},
    Field{"phase.duration_ns", T::kLong, "ns", M::kNone, true, "iosonar.result.phase",
          "Length of the phase (whole buckets)"},
    Field{"phase.bytes", T::kLong, "bytes", M::kNone, true, "iosonar.result.phase", "Bytes moved in the phase"},
    Field{"phase.bw_mean", T::kDouble, "bytes/s", M::kNone, true, "iosonar.result.phase",
          "Bytes over the phase's duration"},
    Field{"phase.bw_peak", T::kDouble, "bytes/s", M::kNone, true, "iosonar.result.phase",
          "Largest bucket of the phase over the bucket width"},
    Field{"phase.wavelet", T::kKeyword, "", M::kNone, false, "iosonar.result.phase",
          "Wavelet and extension mode used for denoising, e.g. haar/periodization"},
    Field{"badost.ost", T::kKeyword, "", M::kDimension, true, "iosonar.result.bad_ost", "The OST, as OST#index"},
    Field{"badost.coefficient", T::kDouble, "1", M::kNone, true, "iosonar.result.bad_ost",
          "Pearson r between file performance and the files' share on the OST (negative: files on it were slower)"},
    Field{"badost.p_value", T::kDouble, "1", M::kNone, true, "iosonar.result.bad_ost", "Two-sided p-value of r"},
    Field{"badost.files_on", T::kLong, "1", M::kNone, false, "iosonar.result.bad_ost", "Files striped over the OST"},
    Field{"badost.files", T::kLong, "1", M::kNone, false, "iosonar.result.bad_ost", "Files correlated in all"},
    Field{"badost.verdict", T::kKeyword, "", M::kNone, false, "iosonar.result.bad_ost",
          "unhealthy or unusually fast when |r| exceeds the warning threshold and p the significance threshold"},
    // ---- LASSi risk/ops and probe slowdown results (analysis-jobs/lassi) ----
    Field{"result.fs", T::kKeyword, "", M::kDimension, false, "iosonar.result.risk iosonar.result.slowdown iosonar.result.job_summary",
          "File system the value is about (lustre.fs, or the probed directory)"},
    Field{"result.app", T::kKeyword, "", M::kDimension, false, "iosonar.result.risk iosonar.result.job_summary",
          "Application: the exact command line of the jobs grouped under it (LASSi); the executable (summarize-job)"},
    Field{"result.risk_oss", T::kDouble, "1", M::kGauge, false, "iosonar.result.risk",
          "LASSi risk_oss: sum of the positive risks of read_kb, read_ops, write_kb, write_ops, other"},
    Field{"result.risk_mds", T::kDouble, "1", M::kGauge, false, "iosonar.result.risk",
          "LASSi risk_mds: sum of the positive risks of the 16 MDS ops"},
    Field{"result.read_kb_ops", T::kDouble, "1", M::kGauge, false, "iosonar.result.risk",
          "LASSi read quality read_ops*1024/read_kb (1 = 1 MiB requests); absent where nothing was read"},
    Field{"result.write_kb_ops", T::kDouble, "1", M::kGauge, false, "iosonar.result.risk",
          "LASSi write quality write_ops*1024/write_kb; absent where nothing was written"},
    Field{"result.op", T::kKeyword, "", M::kDimension, false, "iosonar.result.slowdown",
          "Probe operation the slowdown is about (write, read, stat, create, delete, ...)"},
    Field{"result.count", T::kLong, "1", M::kGauge, false, "iosonar.result.slowdown",
          "Samples the interval statistic was computed from"},
    // ---- summarize-job's record in iosonar.result.job_summary ----
    Field{"result.user", T::kKeyword, "", M::kDimension, false, "iosonar.result.job_summary", "User the job ran as (job database)"},
    Field{"result.nodes", T::kLong, "1", M::kNone, false, "iosonar.result.job_summary", "Nodes the job's trace came from"},
    Field{"result.io_time_s", T::kDouble, "s", M::kNone, false, "iosonar.result.job_summary",
          "The slowest process's time inside I/O calls (Darshan's io_time)"},
    Field{"result.coverage_bw", T::kDouble, "1", M::kNone, false, "iosonar.result.job_summary",
          "TOKIO coverage factor: the job's bytes / its file system's bytes over the job's window"},
    Field{"result.coverage_opens", T::kDouble, "1", M::kNone, false, "iosonar.result.job_summary",
          "The job's opens / its file system's MDS opens over the job's window"},
    Field{"result.fs_bytes", T::kDouble, "bytes", M::kNone, false, "iosonar.result.job_summary",
          "Bytes the job's file system moved (all OSTs, read + written) over the job's window"},
    Field{"result.ost_full_pct_max", T::kDouble, "percent", M::kNone, false, "iosonar.result.job_summary",
          "Fullness of the file system's most full OST just before the job (fshealth_ost_most_full_pct)"},
    Field{"result.overloaded_oss", T::kLong, "1", M::kNone, false, "iosonar.result.job_summary",
          "Overloaded (failed-over) OSSes of the file system just before the job"},
    Field{"result.phases", T::kLong, "1", M::kNone, false, "iosonar.result.job_summary", "I/O phases (read + write) of the job"},
    // ---- results of xlayer, compress2 and scoreboard as streams ------------
    Field{"xlayer.window_ns", T::kLong, "ns", M::kNone, true, "iosonar.result.xlayer",
          "Length of the job's window [start, end)"},
    Field{"xlayer.window_source", T::kKeyword, "", M::kNone, true, "iosonar.result.xlayer",
          "Where the window and nodes came from: maps (job database or --maps) or trace"},
    Field{"xlayer.nodes", T::kLong, "1", M::kNone, true, "iosonar.result.xlayer",
          "Compute nodes of the job"},
    Field{"xlayer.unmapped_nodes", T::kLong, "1", M::kNone, false, "iosonar.result.xlayer",
          "Job nodes without a forwarding node in the map"},
    Field{"xlayer.files", T::kLong, "1", M::kNone, true, "iosonar.result.xlayer",
          "Files the job touched"},
    Field{"xlayer.trace_records", T::kLong, "1", M::kNone, true, "iosonar.result.xlayer",
          "Trace records of the job read"},
    Field{"xlayer.job_bytes", T::kLong, "bytes", M::kNone, true, "iosonar.result.xlayer",
          "Bytes the job read and wrote (trace)"},
    Field{"xlayer.job_read_bytes", T::kLong, "bytes", M::kNone, false, "iosonar.result.xlayer",
          "Bytes the job read (trace)"},
    Field{"xlayer.job_write_bytes", T::kLong, "bytes", M::kNone, false, "iosonar.result.xlayer",
          "Bytes the job wrote (trace)"},
    Field{"xlayer.job_opens", T::kLong, "1", M::kNone, false, "iosonar.result.xlayer",
          "Open ops of the job (trace)"},
    Field{"xlayer.job_stats", T::kLong, "1", M::kNone, false, "iosonar.result.xlayer",
          "Stat ops of the job (trace)"},
    Field{"xlayer.job_meta_ops", T::kLong, "1", M::kNone, false, "iosonar.result.xlayer",
          "Metadata ops of the job (trace)"},
    Field{"xlayer.fs_bytes", T::kDouble, "bytes", M::kNone, true, "iosonar.result.xlayer",
          "Bytes all OSTs served over the window (iosonar.oss)"},
    Field{"xlayer.fs_opens", T::kDouble, "1", M::kNone, false, "iosonar.result.xlayer",
          "Opens all MDTs served over the window (iosonar.mds)"},
    Field{"xlayer.fs_stats", T::kDouble, "1", M::kNone, false, "iosonar.result.xlayer",
          "Getattrs all MDTs served over the window (iosonar.mds)"},
    Field{"xlayer.coverage_bytes", T::kDouble, "1", M::kNone, true, "iosonar.result.xlayer",
          "TOKIO coverage factor: job bytes / file-system bytes over the window (0 without server data)"},
    Field{"xlayer.coverage_opens", T::kDouble, "1", M::kNone, false, "iosonar.result.xlayer",
          "TOKIO coverage factor: job opens / MDT opens over the window"},
    Field{"xlayer.coverage_stats", T::kDouble, "1", M::kNone, false, "iosonar.result.xlayer",
          "TOKIO coverage factor: job stats / MDT getattrs over the window"},
    Field{"xlayer.ost_source", T::kKeyword, "", M::kNone, true, "iosonar.result.xlayer",
          "Where the job's OSTs came from: layouts, jobstats or none"},
    Field{"share.layer", T::kKeyword, "", M::kDimension, true, "iosonar.result.server_share",
          "Layer of the server: forwarding, ost or mdt"},
    Field{"share.server", T::kKeyword, "", M::kDimension, true, "iosonar.result.server_share",
          "The server: forwarding node, OST or MDT target name"},
    Field{"share.window_ns", T::kLong, "ns", M::kNone, true, "iosonar.result.server_share",
          "Length of the job's window the share is over"},
    Field{"share.job_bytes", T::kDouble, "bytes", M::kNone, true, "iosonar.result.server_share",
          "Bytes of the job on the server over the window"},
    Field{"share.total_bytes", T::kDouble, "bytes", M::kNone, true, "iosonar.result.server_share",
          "All bytes the server served over the window"},
    Field{"share.fraction", T::kDouble, "1", M::kNone, true, "iosonar.result.server_share",
          "Share of the server's load from the job: job_bytes / total_bytes (MDT: job_ops / total_ops)"},
    Field{"share.job_ops", T::kDouble, "1", M::kNone, false, "iosonar.result.server_share",
          "Ops of the job on the server over the window"},
    Field{"share.total_ops", T::kDouble, "1", M::kNone, false, "iosonar.result.server_share",
          "All ops the server served over the window"},
    Field{"share.in_flight_mean", T::kDouble, "1", M::kNone, false, "iosonar.result.server_share",
          "Mean osc RPCs in flight to the server, weighted by RPCs (absent without osc records)"},
    Field{"share.estimated", T::kBool, "", M::kNone, false, "iosonar.result.server_share",
          "The job's OST bytes were estimated from file layouts, not job_stats"},
    Field{"compress.mode", T::kKeyword, "", M::kDimension, true, "iosonar.result.compression",
          "lossless or lossy"},
    Field{"compress.records", T::kLong, "1", M::kNone, true, "iosonar.result.compression",
          "Trace records in"},
    Field{"compress.groups", T::kLong, "1", M::kNone, true, "iosonar.result.compression",
          "Groups out (records alike across nodes merged)"},
    Field{"compress.processes", T::kLong, "1", M::kNone, false, "iosonar.result.compression",
          "Processes in the dictionary"},
    Field{"compress.offset_patterns", T::kLong, "1", M::kNone, false, "iosonar.result.compression",
          "Groups whose offsets follow base + stride * rank"},
    Field{"compress.record_ratio", T::kDouble, "1", M::kNone, true, "iosonar.result.compression",
          "records / groups (Beacon's Table 8)"},
    Field{"compress.baseline_bytes", T::kLong, "bytes", M::kNone, false, "iosonar.result.compression",
          "Size of every record encoded alone"},
    Field{"compress.compressed_bytes", T::kLong, "bytes", M::kNone, false, "iosonar.result.compression",
          "Size of the grouped encoding"},
    Field{"compress.byte_ratio", T::kDouble, "1", M::kNone, true, "iosonar.result.compression",
          "baseline_bytes / compressed_bytes"},
    Field{"scoreboard.cluster", T::kKeyword, "", M::kDimension, false, "iosonar.result.scoreboard",
          "Cluster of the job database lookups (absent when not given)"},
    Field{"scoreboard.period_ns", T::kLong, "ns", M::kNone, true, "iosonar.result.scoreboard",
          "Length of the period [from, to); @timestamp is its end"},
    Field{"scoreboard.who", T::kKeyword, "", M::kDimension, true, "iosonar.result.scoreboard",
          "user or application"},
    Field{"scoreboard.metric", T::kKeyword, "", M::kDimension, true, "iosonar.result.scoreboard",
          "Ranked by: bytes (read + written), ops (data ops) or meta (metadata ops)"},
    Field{"scoreboard.rank", T::kLong, "1", M::kNone, true, "iosonar.result.scoreboard",
          "Rank, 1 = top"},
    Field{"scoreboard.name", T::kKeyword, "", M::kDimension, true, "iosonar.result.scoreboard",
          "The user or the application (executable)"},
    Field{"scoreboard.jobs", T::kLong, "1", M::kNone, true, "iosonar.result.scoreboard",
          "Jobs of the user or application in the period"},
    Field{"scoreboard.read_bytes", T::kLong, "bytes", M::kNone, true, "iosonar.result.scoreboard",
          "Bytes read"},
    Field{"scoreboard.write_bytes", T::kLong, "bytes", M::kNone, true, "iosonar.result.scoreboard",
          "Bytes written"},
    Field{"scoreboard.data_ops", T::kLong, "1", M::kNone, true, "iosonar.result.scoreboard",
          "Read and write ops"},
    Field{"scoreboard.meta_ops", T::kLong, "1", M::kNone, true, "iosonar.result.scoreboard",
          "Metadata ops"},
    Field{"scoreboard.period_jobs", T::kLong, "1", M::kNone, false, "iosonar.result.scoreboard",
          "All jobs with trace records in the period"},
};

}  // namespace

std::span<const Field> Fields() { return kFieldTable; }
std::span<const Dataset> Datasets() { return kDatasets; }

const Field* FindField(std::string_view name) {
  for (const auto& f : kFieldTable)
    if (f.name == name) return &f;
  return nullptr;
}

const Dataset* FindDataset(std::string_view name) {
  for (const auto& d : kDatasets)
    if (d.name == name) return &d;
  return nullptr;
}

bool FieldInDataset(const Field& f, std::string_view dataset) {
  if (f.datasets == "*") return true;
  std::string_view rest = f.datasets;
  while (!rest.empty()) {
    auto sp = rest.find(' ');
    auto tok = rest.substr(0, sp);
    if (tok == dataset) return true;
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
  }
  return false;
}

std::vector<const Field*> FieldsOf(std::string_view dataset) {
  std::vector<const Field*> out;
  for (const auto& f : kFieldTable)
    if (FieldInDataset(f, dataset)) out.push_back(&f);
  return out;
}

std::string_view TypeName(Type t) {
  switch (t) {
    case T::kKeyword: return "keyword";
    case T::kLong: return "long";
    case T::kDouble: return "double";
    case T::kDate: return "date";
    case T::kBool: return "boolean";
  }
  return "?";
}

static std::string_view MetricName(Metric m) {
  switch (m) {
    case M::kNone: return "";
    case M::kDimension: return "dimension";
    case M::kCounter: return "counter";
    case M::kGauge: return "gauge";
  }
  return "";
}

std::string ToJson() {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("datasets");
  w.BeginArray();
  for (const auto& d : kDatasets) {
    w.BeginObject();
    w.Kv("name", d.name);
    w.Kv("stream_type", d.stream_type);
    w.Kv("description", d.description);
    w.EndObject();
  }
  w.EndArray();
  w.Key("fields");
  w.BeginArray();
  for (const auto& f : kFieldTable) {
    w.BeginObject();
    w.Kv("name", f.name);
    w.Kv("type", TypeName(f.type));
    w.Kv("unit", f.unit);
    w.Kv("metric", MetricName(f.metric));
    w.Kv("required", f.required);
    w.Kv("datasets", f.datasets);
    w.Kv("description", f.description);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace iosonar::schema
