#include "iosonar/schema.h"

#include <array>

#include "iosonar/json.h"

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
    // ---- issue 3: health and probe ----
    Dataset{"iosonar.health", "metrics",
            "File-system health as a client sees it (TOKIO): per OST/MDT fullness from `lfs df`, a per-file-system "
            "fullness summary, and from `lctl dl -t` the OSTs each OSS serves and the OSSes serving more than "
            "their file system's mode (failover, overload factor); health.record says which kind a record is"},
    Dataset{"iosonar.probe", "metrics",
            "The I/O latency probe (Kunkel & Betke): one record per timed operation (1 MiB write and read at "
            "random offsets of a large file; stat, read, delete of the oldest small file and create of a new one)"},
    // ---- issue 4 (Elasticsearch): analysis result streams -------------------
    Dataset{"iosonar.result.job_summary", "logs",
            "One record per analysed job: the per-job I/O summary (bytes, bandwidth, IOPS, metadata "
            "ops, I/O mode) written by the analysis jobs"},
    Dataset{"iosonar.result.risk", "metrics",
            "Risk series: a per-interval risk score of a target (server, OST, job) from the analysis"},
    Dataset{"iosonar.result.slowdown", "metrics",
            "Slowdown series: observed against baseline performance of a target per interval"},
    Dataset{"iosonar.result.anomaly", "logs", "Anomalies found by the analysis: what, where, when and how strong"},
    // ---- end issue 4 ---------------------------------------------------------
};

// Keep names ECS-like where ECS has the concept (host.name, process.pid, file.path).
constexpr std::array kFieldTable = {
    Field{"@timestamp", T::kDate, "", M::kNone, true, "*", "When the record's activity began (UTC, ISO 8601, ms)"},
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
    // ---- iosonar.sampler: exporters' self-reports (exporters/common) ----
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
    // ---- issue 3: health and probe ----
    Field{"lustre.fs", T::kKeyword, "", M::kDimension, false, "iosonar.health iosonar.probe",
          "Lustre file system name (fsname), e.g. snx11035"},
    Field{"lustre.target", T::kKeyword, "", M::kDimension, false, "iosonar.health",
          "Lustre target, FSNAME-OSTxxxx or FSNAME-MDTxxxx, e.g. snx11035-OST0002"},
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
    // ---- issue 4 (Elasticsearch): analysis result fields ---------------------
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
    Field{"result.risk", T::kDouble, "1", M::kGauge, false, "iosonar.result.risk", "Risk score of the target in the interval, 0 to 1"},
    Field{"result.observed", T::kDouble, "", M::kGauge, false, "iosonar.result.slowdown",
          "Observed value of the metric in the interval"},
    Field{"result.baseline", T::kDouble, "", M::kGauge, false, "iosonar.result.slowdown",
          "Baseline (expected) value of the metric for the target"},
    Field{"result.slowdown", T::kDouble, "1", M::kGauge, false, "iosonar.result.slowdown",
          "Baseline over observed performance: 1 = as expected, 2 = twice as slow"},
    Field{"result.score", T::kDouble, "1", M::kGauge, false, "iosonar.result.anomaly", "Strength of the anomaly (e.g. a z-score)"},
    Field{"result.reason", T::kKeyword, "", M::kNone, false, "iosonar.result.anomaly", "What is anomalous, in words"},
    // ---- end issue 4 ---------------------------------------------------------
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
