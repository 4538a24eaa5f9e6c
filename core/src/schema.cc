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
