#include "analysis-jobs/summarize/summarize.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "analysis-jobs/lib/coverage.h"
#include "analysis-jobs/lib/format.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/results/results.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/phases/phases.h"
#include "core/records/fields.h"

namespace iosonar::analysis {

namespace {

std::string Num(double v) {
  if (!std::isfinite(v)) return "";
  char b[64];
  auto [p, ec] = std::to_chars(b, b + sizeof b, v);
  return ec == std::errc() ? std::string(b, p) : std::string();
}
std::string Num(uint64_t v) { return std::to_string(v); }
std::string Num(int64_t v) { return std::to_string(v); }

bool IsData(const std::string& op) { return op == "read" || op == "write"; }
bool IsMeta(const std::string& op) {
  static const char* kMeta[] = {"open", "close", "stat", "access", "unlink", "rename", "mkdir", "rmdir"};
  for (const char* m : kMeta)
    if (op == m) return true;
  return false;
}

std::string FileKeyOf(const TraceRun& r) {
  if (!r.file_id.empty()) return r.file_id;
  if (!r.file_path.empty()) return r.file_path;
  return "fd " + std::to_string(r.fd) + " of " + r.host + ":" + std::to_string(r.pid);
}

// Words of a command line; the tracer writes it space-separated.
std::string Exe(const std::string& cmd) {
  size_t a = cmd.find_first_not_of(' ');
  if (a == std::string::npos) return "";
  size_t b = cmd.find(' ', a);
  std::string w = cmd.substr(a, b == std::string::npos ? std::string::npos : b - a);
  size_t s = w.rfind('/');
  return s == std::string::npos ? w : w.substr(s + 1);
}

// Command lines of the job's processes from iosonar.tracer: one per process
// image (event.stream) from its "start" record; a stream that went on to
// exec() is left out (a forked child of a launcher such as mpirun still
// shows the launcher's command line; the new image has its own stream).
struct StreamCmd {
  std::string cmd;
  bool execed = false;
};
void AddTracerRow(const Row& row, size_t k_stream, size_t k_action, size_t k_cmd,
                  std::map<int64_t, StreamCmd>* streams) {
  if (!row.Has(k_stream) || !row.Has(k_action)) return;
  StreamCmd& sc = (*streams)[row.Int(k_stream)];
  if (row.Str(k_action) == "exec") sc.execed = true;
  else if (row.Str(k_action) == "start" && row.Has(k_cmd)) sc.cmd = std::string(row.Str(k_cmd));
}
std::vector<std::string> ImageCommands(const std::map<int64_t, StreamCmd>& streams) {
  std::vector<std::string> v;
  for (const auto& kv : streams)
    if (!kv.second.execed && !kv.second.cmd.empty()) v.push_back(kv.second.cmd);
  return v;
}

}  // namespace

std::string MainExecutable(const std::vector<std::string>& cmds) {
  std::map<std::string, size_t> n;
  std::vector<std::string> order;
  for (const auto& c : cmds) {
    std::string e = Exe(c);
    if (e.empty()) continue;
    if (n[e]++ == 0) order.push_back(e);
  }
  std::string best;
  size_t bn = 0;
  for (const auto& e : order)
    if (n[e] > bn) {
      best = e;
      bn = n[e];
    }
  return best;
}

Result<JobTrace> ReadJobTrace(Store& store, const std::string& job_id) {
  JobTrace jt;
  jt.job_id = job_id;
  auto runs = ReadTraceRuns(store, job_id);
  if (!runs.ok()) return runs.status();
  jt.runs = std::move(runs).value();
  ScanQuery tq;
  tq.dataset = dataset::kTracer;
  tq.filters = {{field::kJobId, job_id}};
  tq.fields = {field::kEventStream, field::kTracerDropped, field::kEventAction, field::kProcessCommandLine};
  DroppedTally dropped;
  std::map<int64_t, StreamCmd> streams;
  Status st = store.Scan(tq, [&](const Row& row) {
    if (row.Has(0) && row.Has(1)) dropped.Add(row.Int(0), row.Int(1));
    AddTracerRow(row, 0, 2, 3, &streams);
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  jt.command_lines = ImageCommands(streams);
  jt.tracer_dropped = dropped.Total();
  return jt;
}

namespace {

// darshan_biggest_{read,write}_fs(_bytes): the mount point that moved the
// most bytes each way (TOKIO: over the biggest API's files; "_unknown" for
// files under no known mount).
void AddBiggestFs(const JobTrace& jt, const std::vector<std::pair<std::string, std::string>>& mounts, SummaryRow* row) {
  auto by = BytesByMount(jt, mounts);
  for (auto& m : by)
    if (auto u = m.extract(""); !u.empty()) m["_unknown"] += u.mapped();
  const char* dirs[2] = {"read", "write"};
  for (int d = 0; d < 2; ++d) {
    std::string best;
    uint64_t bytes = 0;
    for (const auto& [m, b] : by[d])
      if (best.empty() || b > bytes) best = m, bytes = b;
    const std::string base = std::string("darshan_biggest_") + dirs[d] + "_fs";
    row->cols.emplace_back(base, best);
    row->cols.emplace_back(base + "_bytes", Num(bytes));
  }
}

void AddRate(SummaryRow* row, const std::string& what, const std::string& unit, const RateStats& r, double scale) {
  // TOKIO's names: fs_tot_bytes_read, fs_ave_bytes_read_per_sec, fs_tot_open_ops, fs_ave_open_ops_per_sec.
  row->cols.emplace_back("fs_tot_" + what, Num(r.tot / scale));
  row->cols.emplace_back("fs_ave_" + what + unit, Num(r.ave / scale));
  row->cols.emplace_back("fs_max_" + what + unit, Num(r.max / scale));
  row->cols.emplace_back("fs_min_" + what + unit, Num(r.min / scale));
}

// fs_*, fshealth_* and the coverage factors (definitions in fs_context.h).
void AddFsColumns(const FsContext& fs, const JobTrace& jt,
                  const std::vector<std::pair<std::string, std::string>>* mounts, SummaryRow* row) {
  auto add = [&](std::string k, std::string v) { row->cols.emplace_back(std::move(k), std::move(v)); };
  if (fs.oss_records > 0) {
    for (const char* rw : {"read", "written"}) {
      const RateStats& r = std::string(rw) == "read" ? fs.read : fs.written;
      AddRate(row, std::string("bytes_") + rw, "_per_sec", r, 1);
      AddRate(row, std::string("gibs_") + rw, "_per_sec", r, 1073741824.0);
    }
    add("fs_frac_missing", Num(fs.frac_missing));
    add("fs_frac_zero_read", Num(fs.frac_zero_read));
    add("fs_frac_zero_written", Num(fs.frac_zero_written));
  }
  for (const auto& [op, r] : fs.md_ops) AddRate(row, op + "_ops", "_per_sec", r, 1);
  const double s = 1e9;
  // The snapshot's times (the fullness one's when both kinds are there).
  auto times = [&](const SnapshotAt& t) {
    add("fshealth_ost_requested_timestamp", Num(static_cast<double>(t.requested_ns) / s));
    add("fshealth_ost_actual_timestamp", Num(static_cast<double>(t.actual_ns) / s));
    if (t.next_ns) add("fshealth_ost_next_timestamp", Num(static_cast<double>(*t.next_ns) / s));
  };
  if (const auto& f = fs.fullness) {
    times(*f);
    add("fshealth_ost_fullness_lead_secs", Num(static_cast<double>(f->requested_ns - f->actual_ns) / s));
    add("fshealth_ost_count", Num(f->ost_count));
    add("fshealth_ost_avg_full_kib", Num(f->avg_full_kib));
    add("fshealth_ost_avg_full_pct", Num(f->avg_full_pct));
    add("fshealth_ost_least_full_id", Num(f->least_full_id));
    add("fshealth_ost_least_full_kib", Num(f->least_full_kib));
    add("fshealth_ost_least_full_name", f->least_full_name);
    add("fshealth_ost_least_full_pct", Num(f->least_full_pct));
    add("fshealth_ost_most_full_id", Num(f->most_full_id));
    add("fshealth_ost_most_full_kib", Num(f->most_full_kib));
    add("fshealth_ost_most_full_name", f->most_full_name);
    add("fshealth_ost_most_full_pct", Num(f->most_full_pct));
  }
  if (const auto& f = fs.failures) {
    if (!fs.fullness) times(*f);
    add("fshealth_ost_failures_lead_secs", Num(static_cast<double>(f->requested_ns - f->actual_ns) / s));
    add("fshealth_ost_overloaded_oss_count", Num(f->overloaded_oss));
    add("fshealth_ost_overloaded_ost_count", Num(f->overloaded_ost));
    add("fshealth_ost_overloaded_pct",
        Num(f->ost_count > 0 ? 100.0 * static_cast<double>(f->overloaded_ost) / static_cast<double>(f->ost_count) : 0.0));
    const double per_oss =
        f->overloaded_oss > 0 ? static_cast<double>(f->overloaded_ost) / static_cast<double>(f->overloaded_oss) : 0.0;
    add("fshealth_ost_avg_overloaded_ost_per_oss", Num(per_oss));
    add("fshealth_ost_avg_overloaded_overload_factor",
        Num(f->overloaded_oss > 0 && f->mode > 0 ? per_oss / static_cast<double>(f->mode) : 1.0));
  }
  // TOKIO's coverage factor: the job's bytes on this file system / the file
  // system's bytes over the window; likewise opens and stats (analysis-jobs/lib/coverage.h).
  JobOnFs on(mounts ? *mounts : std::vector<std::pair<std::string, std::string>>{}, fs.fs);
  for (const auto& r : jt.runs)
    on.Add(r.file_path, IsData(r.op) && r.bytes > 0 ? static_cast<double>(r.bytes) : 0.0,
           r.op == "open" ? static_cast<double>(r.count) : 0.0, r.op == "stat" ? static_cast<double>(r.count) : 0.0);
  add("iosonar_fs_osts", Num(static_cast<uint64_t>(fs.osts)));
  add("iosonar_fs_step_s", Num(static_cast<double>(fs.step_ns) / 1e9));
  const RateStats* o = fs.Md("open");
  const RateStats* g = fs.Md("getattr");
  const CoverageFactors c =
      Coverage(on, fs.oss_records > 0 ? fs.read.tot + fs.written.tot : 0.0, o ? o->tot : 0.0, g ? g->tot : 0.0);
  if (c.bytes) add("iosonar_coverage_factor_bw", Num(*c.bytes));
  if (c.opens) add("iosonar_coverage_factor_opens", Num(*c.opens));
  if (c.stats) add("iosonar_coverage_factor_stats", Num(*c.stats));
  add("iosonar_coverage_job_fs_bytes", Num(on.bytes()));
  add("iosonar_coverage_basis", on.basis());
}

}  // namespace

const std::string* SummaryRow::Get(const std::string& name) const {
  for (const auto& [k, v] : cols)
    if (k == name) return &v;
  return nullptr;
}

namespace {

// What the trace says beyond the JobSummary: the slowest process's time in
// I/O calls, the ranks, and per layer the bytes and files by direction.
struct LayerBytes {
  uint64_t bytes = 0;
  std::set<std::string> files;
};
struct TraceFacts {
  double io_time = 0;
  size_t ranks = 0;
  std::map<std::string, LayerBytes> api[2];  // [read, write] by layer
  uint64_t posix_bytes = 0;
};
TraceFacts FactsOf(const JobTrace& jt) {
  TraceFacts f;
  std::map<std::string, int64_t> busy;
  std::set<int64_t> ranks;
  for (const auto& r : jt.runs) {
    if (r.rank) ranks.insert(*r.rank);
    // Time in calls: the POSIX layer's (an MPI-IO call's time holds its POSIX calls').
    if ((IsData(r.op) || IsMeta(r.op)) && r.layer != "mpiio") busy[r.host + ":" + std::to_string(r.pid)] += r.duration_ns;
    if (!IsData(r.op) || r.bytes <= 0) continue;
    const std::string layer = r.layer.empty() ? "posix" : r.layer;
    LayerBytes& a = f.api[r.op == "write" ? 1 : 0][layer];
    a.bytes += static_cast<uint64_t>(r.bytes);
    a.files.insert(FileKeyOf(r));
    if (layer == "posix") f.posix_bytes += static_cast<uint64_t>(r.bytes);
  }
  int64_t slowest = 0;
  for (const auto& kv : busy) slowest = std::max(slowest, kv.second);
  f.io_time = static_cast<double>(slowest) / 1e9;
  f.ranks = ranks.size();
  return f;
}

// darshan_biggest_{read,write}_api[_bytes|_files]: the layer that moved the most bytes each way.
void AddBiggestApi(const TraceFacts& f, SummaryRow* row) {
  const char* dirs[2] = {"read", "write"};
  for (int d = 0; d < 2; ++d) {
    std::string best;
    const LayerBytes* ba = nullptr;
    for (const auto& [layer, a] : f.api[d])
      if (!ba || a.bytes > ba->bytes) {
        best = layer;
        ba = &a;
      }
    const std::string base = std::string("darshan_biggest_") + dirs[d] + "_api";
    row->cols.emplace_back(base, best);
    row->cols.emplace_back(base + "_bytes", ba ? Num(ba->bytes) : "0");
    row->cols.emplace_back(base + "_files", ba ? Num(static_cast<uint64_t>(ba->files.size())) : "0");
  }
}

// iosonar's own columns (iosonar_*).
void AddIosonarColumns(const SummarizeInput& in, SummaryRow* row) {
  auto add = [&](const char* k, std::string v) { row->cols.emplace_back(k, std::move(v)); };
  const JobTrace& jt = *in.trace;
  const JobSummary& s = *in.summary;
  // iosonar's own.
  add("iosonar_user", in.job && in.job->user ? *in.job->user : "");
  add("iosonar_job_name", in.job && in.job->name ? *in.job->name : "");
  add("iosonar_runtime_s", Num(s.runtime_s));
  add("iosonar_read_bytes", Num(s.read.bytes));
  add("iosonar_write_bytes", Num(s.write.bytes));
  add("iosonar_read_ops", Num(s.read.ops));
  add("iosonar_write_ops", Num(s.write.ops));
  add("iosonar_read_bw_avg", Num(s.read.bw_avg));
  add("iosonar_read_bw_peak", Num(s.read.bw_peak));
  add("iosonar_write_bw_avg", Num(s.write.bw_avg));
  add("iosonar_write_bw_peak", Num(s.write.bw_peak));
  // bw_avg and the IOPS: over the direction's I/O phases (Beacon §3.3); the
  // span's average beside them under its own name.
  add("iosonar_read_iops", Num(s.read.iops));
  add("iosonar_write_iops", Num(s.write.iops));
  add("iosonar_read_bw_span", Num(s.read.bw_span));
  add("iosonar_write_bw_span", Num(s.write.bw_span));
  add("iosonar_meta_ops", Num(s.meta_ops));
  add("iosonar_meta_ops_per_s", Num(s.meta_ops_per_s));
  add("iosonar_processes", Num(s.processes));
  add("iosonar_processes_with_io", Num(s.processes_with_io));
  add("iosonar_nodes", Num(s.nodes));
  add("iosonar_nodes_with_io", Num(s.nodes_with_io));
  add("iosonar_files", Num(s.files));
  add("iosonar_errors", Num(s.errors));
  add("iosonar_io_mode_read", s.mode_read.mode);
  add("iosonar_io_mode_write", s.mode_write.mode);
  if (in.read_phases >= 0) add("iosonar_read_phases", Num(static_cast<int64_t>(in.read_phases)));
  if (in.write_phases >= 0) add("iosonar_write_phases", Num(static_cast<int64_t>(in.write_phases)));
  add("iosonar_tracer_dropped", Num(jt.tracer_dropped));
}

}  // namespace

SummaryRow MakeSummaryRow(const SummarizeInput& in) {
  SummaryRow row;
  auto add = [&](const char* k, std::string v) { row.cols.emplace_back(k, std::move(v)); };
  const JobTrace& jt = *in.trace;
  const JobSummary& s = *in.summary;
  const TraceFacts f = FactsOf(jt);
  const double io_time = f.io_time;

  double dt_start = static_cast<double>(s.start_ns) / 1e9, dt_end = static_cast<double>(s.end_ns) / 1e9;
  if (in.job && in.job->start_ns) dt_start = static_cast<double>(*in.job->start_ns) / 1e9;
  if (in.job && in.job->end_ns) dt_end = static_cast<double>(*in.job->end_ns) / 1e9;

  add("_jobid", jt.job_id);
  add("_datetime_start", Num(dt_start));
  add("_datetime_end", Num(dt_end));
  if (in.fs) add("_file_system", in.fs->fs);
  add("darshan_jobid", jt.job_id);
  add("darshan_app", MainExecutable(jt.command_lines));
  add("darshan_nprocs", Num(static_cast<uint64_t>(f.ranks == 0 ? s.processes : f.ranks)));
  add("darshan_start_time", Num(static_cast<int64_t>(std::floor(static_cast<double>(s.start_ns) / 1e9))));
  add("darshan_end_time", Num(static_cast<int64_t>(std::floor(static_cast<double>(s.end_ns) / 1e9))));
  add("darshan_walltime", Num(s.runtime_s));
  add("darshan_io_time", Num(io_time));
  add("darshan_total_gibs_posix", Num(static_cast<double>(f.posix_bytes) / 1073741824.0));
  add("darshan_agg_perf_by_slowest_posix",
      io_time > 0 ? Num(static_cast<double>(f.posix_bytes) / 1048576.0 / io_time) : std::string());
  AddBiggestApi(f, &row);
  if (in.mounts && !in.mounts->empty()) AddBiggestFs(jt, *in.mounts, &row);
  if (in.fs) AddFsColumns(*in.fs, jt, in.mounts, &row);
  if (in.concurrent) {
    add("jobsdb_concurrent_jobs", Num(in.concurrent->jobs));
    add("jobsdb_concurrent_nodes", Num(in.concurrent->nodes));
    add("jobsdb_concurrent_nodehrs", Num(in.concurrent->node_hours));
  }
  AddIosonarColumns(in, &row);
  return row;
}

namespace {

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string o = "\"";
  for (char c : v) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

bool LooksNumeric(const std::string& v) {
  if (v.empty()) return false;
  double d = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  return ec == std::errc() && p == v.data() + v.size();
}

// Columns whose values are text even when they look like numbers.
bool TextColumn(const std::string& k) {
  return k == "_jobid" || k == "darshan_jobid" || k == "darshan_app" || k == "iosonar_user" ||
         k == "iosonar_job_name" || k.ends_with("_api") || k.rfind("iosonar_io_mode", 0) == 0 ||
         k == "_file_system" || k.ends_with("_fs") || k.ends_with("_full_name");
}

}  // namespace

std::string SummaryRowsToCsv(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> header;
  std::set<std::string> seen;
  for (const auto& r : rows)
    for (const auto& kv : r.cols)
      if (seen.insert(kv.first).second) header.push_back(kv.first);
  std::string out;
  for (size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + CsvField(header[i]);
  out += "\n";
  for (const auto& r : rows) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (i) out += ",";
      if (const std::string* v = r.Get(header[i])) out += CsvField(*v);
    }
    out += "\n";
  }
  return out;
}

namespace {
void WriteRow(JsonWriter& w, const SummaryRow& r) {
  w.BeginObject();
  for (const auto& [k, v] : r.cols) {
    w.Key(k);
    if (!TextColumn(k) && LooksNumeric(v)) {
      double d = 0;
      std::from_chars(v.data(), v.data() + v.size(), d);
      if (v.find_first_of(".eE") == std::string::npos && std::fabs(d) < 9e15) w.Int(static_cast<int64_t>(d));
      else w.Double(d);
    } else if (!TextColumn(k) && v.empty()) {
      w.Null();
    } else {
      w.String(v);
    }
  }
  w.EndObject();
}
}  // namespace

std::string SummaryRowsToJson(const std::vector<SummaryRow>& rows) {
  std::string out;
  JsonWriter w(&out, 2);
  w.BeginArray();
  for (const auto& r : rows) WriteRow(w, r);
  w.EndArray();
  return out;
}

std::string SummaryRowToJson(const SummaryRow& row) {
  std::string out;
  JsonWriter w(&out, 0);
  WriteRow(w, row);
  return out;
}

std::string SummaryRowToRecord(const SummaryRow& row, const std::string& host) {
  auto num = [&](const char* k) -> std::optional<double> {
    const std::string* v = row.Get(k);
    double d = 0;
    if (!v || v->empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
    if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
    return d;
  };
  auto str = [&](const char* k) -> std::string {
    const std::string* v = row.Get(k);
    return v ? *v : std::string();
  };
  const std::string job = str("_jobid");
  std::string out;
  JsonWriter w(&out, 0);
  // The same row resent: the same id; a recomputation that changed anything: a new one.
  BeginResultRecord(w, static_cast<int64_t>(std::llround(num("_datetime_start").value_or(0) * 1e9)),
                    dataset::kResultJobSummary,
                    ResultStreamId("iosonar.result.job_summary", {job, SummaryRowToJson(row)}), 0, host);
  w.Kv(field::kJobId, job);
  w.Kv(field::kResultAnalysis, "summarize-job/1");
  auto put_int = [&](FieldId field, std::optional<double> v) {
    if (v) w.Kv(field, static_cast<int64_t>(std::llround(*v)));
  };
  auto put_dbl = [&](FieldId field, std::optional<double> v) {
    if (v) w.Kv(field, *v);
  };
  const auto rb = num("iosonar_read_bytes"), wb = num("iosonar_write_bytes"), rt = num("iosonar_runtime_s");
  put_int(field::kResultBytesRead, rb);
  put_int(field::kResultBytesWritten, wb);
  put_dbl(field::kResultReadBw, num("iosonar_read_bw_avg"));
  put_dbl(field::kResultWriteBw, num("iosonar_write_bw_avg"));
  const double ops = num("iosonar_read_ops").value_or(0) + num("iosonar_write_ops").value_or(0);
  // IOPS over the I/O phases (each direction's, summed) where the row has
  // them; a row without (a Darshan-only log) over the runtime.
  if (auto ri = num("iosonar_read_iops"), wi = num("iosonar_write_iops"); ri || wi)
    put_dbl(field::kResultIops, ri.value_or(0) + wi.value_or(0));
  else if (rt && *rt > 0)
    put_dbl(field::kResultIops, ops / *rt);
  put_int(field::kResultMetadataOps, num("iosonar_meta_ops"));
  const std::string mode = str(wb.value_or(0) >= rb.value_or(0) ? "iosonar_io_mode_write" : "iosonar_io_mode_read");
  if (!mode.empty()) w.Kv(field::kResultIoMode, mode);
  put_int(field::kResultProcesses, num("iosonar_processes_with_io"));
  put_int(field::kResultFiles, num("iosonar_files"));
  if (rt) put_int(field::kResultDurationNs, *rt * 1e9);
  put_int(field::kResultNodes, num("iosonar_nodes_with_io"));
  put_dbl(field::kResultIoTimeS, num("darshan_io_time"));
  for (auto [field, col] : {std::pair{field::kResultFs, "_file_system"}, {field::kResultApp, "darshan_app"},
                            {field::kResultUser, "iosonar_user"}})
    if (const std::string v = str(col); !v.empty()) w.Kv(field, v);
  put_dbl(field::kResultCoverageBw, num("iosonar_coverage_factor_bw"));
  put_dbl(field::kResultCoverageOpens, num("iosonar_coverage_factor_opens"));
  if (auto r = num("fs_tot_bytes_read"), x = num("fs_tot_bytes_written"); r || x)
    put_dbl(field::kResultFsBytes, r.value_or(0) + x.value_or(0));
  put_dbl(field::kResultOstFullPctMax, num("fshealth_ost_most_full_pct"));
  put_int(field::kResultOverloadedOss, num("fshealth_ost_overloaded_oss_count"));
  if (auto r = num("iosonar_read_phases"), x = num("iosonar_write_phases"); r || x)
    put_int(field::kResultPhases, r.value_or(0) + x.value_or(0));
  w.EndObject();
  out += '\n';
  return out;
}

Result<ConcurrentJobs> QueryConcurrentJobs(MysqlConn& db, const std::string& cluster, uint64_t job_id,
                                           int64_t start_ns, int64_t end_ns) {
  // Overlap of [start_time, COALESCE(end_time, now)] with [start, end], in node-hours.
  auto rows = db.Query(
      "SELECT COUNT(*), COALESCE(SUM(COALESCE(node_count, 0)), 0), "
      "COALESCE(SUM(COALESCE(node_count, 0) * TIMESTAMPDIFF(MICROSECOND, GREATEST(start_time, CAST(? AS DATETIME(6))), "
      "LEAST(COALESCE(end_time, UTC_TIMESTAMP(6)), CAST(? AS DATETIME(6))))), 0) / 3.6e9 "
      "FROM jobs WHERE cluster = ? AND step = '' AND job_id <> ? AND start_time IS NOT NULL "
      "AND start_time < CAST(? AS DATETIME(6)) AND (end_time IS NULL OR end_time > CAST(? AS DATETIME(6)))",
      {SqlDatetime(start_ns), SqlDatetime(end_ns), cluster, static_cast<int64_t>(job_id), SqlDatetime(end_ns),
       SqlDatetime(start_ns)});
  if (!rows.ok()) return rows.status();
  ConcurrentJobs c;
  if (!rows->empty() && (*rows)[0].size() == 3) {
    const auto& r = (*rows)[0];
    if (r[0]) c.jobs = std::stoull(*r[0]);
    if (r[1]) c.nodes = static_cast<uint64_t>(std::stod(*r[1]));
    if (r[2]) c.node_hours = std::stod(*r[2]);
  }
  return c;
}

JobSummary SummarizeTrace(const JobTrace& jt) {
  JobSummary s = Summarize(jt.runs);
  s.job_id = jt.job_id;
  s.tracer_dropped = jt.tracer_dropped;
  return s;
}

Status ReadJobDbContext(JobDb& db, const std::string& job_id, const std::string& cluster, const JobSummary& s,
                        JobDbContext* out) {
  auto job = db.FindJob(job_id, cluster);
  if (!job.ok()) return Status::NotFound(job.status().message());
  out->job = *job;
  const int64_t a = job->start_ns.value_or(s.start_ns), b = job->end_ns.value_or(s.end_ns);
  auto c = QueryConcurrentJobs(db.conn(), job->cluster, job->job_id, a, b);
  if (!c.ok()) return c.status();
  out->concurrent = *c;
  return Status::Ok();
}

SummaryRow SummarizeJobRow(Store& store, const JobTrace& jt, const JobSummary& s, const JobDbContext& db,
                           const SummarizeJobOptions& opt, Status* fs_status) {
  SummarizeInput in;
  in.trace = &jt;
  in.summary = &s;
  if (db.job) in.job = &*db.job;
  if (db.concurrent) in.concurrent = &*db.concurrent;
  if (opt.phases) {
    auto jp = PhasesForJob(store, jt.job_id, {});
    if (jp.ok()) {
      in.read_phases = static_cast<int>(jp->read.phases.size());
      in.write_phases = static_cast<int>(jp->write.phases.size());
    } else if (jp.status().code() == Code::kNotFound) {
      in.read_phases = in.write_phases = 0;
    }
  }
  std::vector<std::pair<std::string, std::string>> mounts;
  std::optional<FsContext> fsc;
  if (opt.fs_columns) {
    const int64_t a = in.job && in.job->start_ns ? *in.job->start_ns : s.start_ns;
    const int64_t b = in.job && in.job->end_ns ? *in.job->end_ns : s.end_ns;
    constexpr int64_t kDay = 86400LL * 1000000000LL;
    Status st;
    auto m = ReadMounts(store, a - kDay, b);
    if (m.ok()) mounts = std::move(m).value();
    else st = m.status();
    std::string fs = opt.file_system;
    if (st.ok() && fs.empty()) {
      auto c = ChooseFileSystem(store, jt, mounts, a, b);
      if (c.ok()) fs = *c;
      else st = c.status();
    }
    if (st.ok() && !fs.empty()) {
      auto f = ReadFsContext(store, fs, a, b);
      if (f.ok()) fsc = std::move(f).value();
      else st = f.status();
    }
    *fs_status = st;
    in.mounts = &mounts;
    if (fsc) in.fs = &*fsc;
  }
  return MakeSummaryRow(in);
}

Status WriteTokioSummaryToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const std::string& row_json) {
  return results::Upsert(db, results::job_tokio_summary::Row{cluster, job_id, SqlDatetime(NowNs()), row_json});
}

// ---- scoreboard ----

std::string FileSystemOfPath(const std::string& path, const std::vector<std::pair<std::string, std::string>>& mounts) {
  if (path.empty()) return "";
  const std::string m = MountOf(path, mounts);
  if (!m.empty())
    for (const auto& [mount, fs] : mounts)
      if (MountOf(m, {{mount, fs}}) == m && !fs.empty()) return fs;
  static const std::vector<std::pair<std::string, std::string>> kLocal = {
      {"/tmp", kNodeLocal}, {"/var/tmp", kNodeLocal}, {"/dev/shm", kNodeLocal}, {"/run", kNodeLocal}};
  if (!MountOf(path, kLocal).empty()) return kNodeLocal;
  return kUnknownFs;
}

Result<std::vector<JobTally>> TallyJobs(Store& store, const TimeRange& range) {
  constexpr int64_t kWeek = 7 * 86400LL * 1000000000LL;
  auto mounts = ReadMounts(store, range.start_ns > kWeek ? range.start_ns - kWeek : 0, range.end_ns);
  if (!mounts.ok()) return mounts.status();
  std::map<std::string, JobTally> by_job;
  std::unordered_map<std::string, std::string> fs_of;  // path -> storage system
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.range = range;
  q.fields = {field::kJobId, field::kIoOp,  field::kIoCount, field::kIoBytes, field::kEventStartNs, field::kEventEndNs,
              field::kIoLayer, field::kFilePath};
  Status st = store.Scan(q, [&](const Row& row) {
    if (!row.Has(0)) return true;  // records outside any job
    if (row.Has(6) && row.Str(6) == "mpiio") return true;  // the MPI-IO layer: the POSIX bytes again
    const std::string job(row.Str(0));
    auto [it, fresh] = by_job.try_emplace(job);
    JobTally& t = it->second;
    if (fresh) t.job_id = job;
    const std::string op = row.Has(1) ? std::string(row.Str(1)) : std::string();
    const uint64_t count = row.Has(2) ? static_cast<uint64_t>(std::max<int64_t>(0, row.Int(2))) : 0;
    const uint64_t bytes = row.Has(3) ? static_cast<uint64_t>(std::max<int64_t>(0, row.Int(3))) : 0;
    if (op == "read") t.read_bytes += bytes;
    if (op == "write") t.write_bytes += bytes;
    if (IsData(op)) t.data_ops += count;
    else if (IsMeta(op)) t.meta_ops += count;
    if (row.Has(7) && (IsData(op) || IsMeta(op))) {
      const std::string path(row.Str(7));
      auto f = fs_of.find(path);
      if (f == fs_of.end()) f = fs_of.emplace(path, FileSystemOfPath(path, *mounts)).first;
      if (!f->second.empty()) {
        FsTally& ft = t.by_fs[f->second];
        if (op == "read") ft.read_bytes += bytes;
        if (op == "write") ft.write_bytes += bytes;
        if (IsData(op)) ft.data_ops += count;
        else ft.meta_ops += count;
      }
    }
    const int64_t s = row.Has(4) ? row.Int(4) : 0, e = row.Has(5) ? row.Int(5) : s;
    if (fresh || s < t.first_ns) t.first_ns = s;
    if (fresh || e > t.last_ns) t.last_ns = e;
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  std::vector<JobTally> out;
  for (auto& [job, t] : by_job) {
    ScanQuery tq;
    tq.dataset = dataset::kTracer;
    tq.filters = {{field::kJobId, job}};
    tq.fields = {field::kEventStream, field::kEventAction, field::kProcessCommandLine};
    std::map<int64_t, StreamCmd> streams;
    Status s2 = store.Scan(tq, [&](const Row& row) {
      AddTracerRow(row, 0, 1, 2, &streams);
      return true;
    });
    if (!s2.ok() && s2.code() != Code::kNotFound) return s2;
    t.app = MainExecutable(ImageCommands(streams));
    if (t.app.empty()) t.app = "unknown";
    out.push_back(std::move(t));
  }
  return out;
}

Status NameTalliesFromJobDb(JobDb& db, const std::string& cluster, std::vector<JobTally>* tallies) {
  for (auto& t : *tallies) {
    auto meta = db.FindJob(t.job_id, cluster);
    if (!meta.ok()) {
      if (meta.status().code() == Code::kNotFound || meta.status().code() == Code::kInvalid) continue;
      return meta.status();
    }
    if (meta->user) t.user = *meta->user;
    const std::string key = ApplicationKeyOf(*meta);  // jobs.app_key, as written
    const std::string app = !key.empty() ? key : meta->name.value_or("");
    if (!app.empty()) t.app = MainExecutable({app});
  }
  return Status::Ok();
}

Scoreboard MakeScoreboard(const std::vector<JobTally>& jobs) {
  Scoreboard sb;
  sb.jobs = jobs.size();
  std::map<std::string, ScoreEntry> users, apps;
  for (const auto& j : jobs) {
    for (auto* m : {&users, &apps}) {
      const std::string& key = m == &users ? j.user : j.app;
      ScoreEntry& e = (*m)[key];
      e.key = key;
      ++e.jobs;
      e.read_bytes += j.read_bytes;
      e.write_bytes += j.write_bytes;
      e.data_ops += j.data_ops;
      e.meta_ops += j.meta_ops;
    }
  }
  for (auto& kv : users) sb.users.push_back(kv.second);
  for (auto& kv : apps) sb.apps.push_back(kv.second);
  // Per storage system: each job's I/O to it, by user and application.
  std::map<std::string, std::pair<FsScoreboard, std::array<std::map<std::string, ScoreEntry>, 2>>> fss;
  for (const auto& j : jobs)
    for (const auto& [fs, t] : j.by_fs) {
      auto& [board, who] = fss[fs];
      board.fs = fs;
      board.node_local = fs == kNodeLocal;
      ++board.jobs;
      board.read_bytes += t.read_bytes;
      board.write_bytes += t.write_bytes;
      board.data_ops += t.data_ops;
      board.meta_ops += t.meta_ops;
      for (int w = 0; w < 2; ++w) {
        const std::string& key = w == 0 ? j.user : j.app;
        ScoreEntry& e = who[static_cast<size_t>(w)][key];
        e.key = key;
        ++e.jobs;
        e.read_bytes += t.read_bytes;
        e.write_bytes += t.write_bytes;
        e.data_ops += t.data_ops;
        e.meta_ops += t.meta_ops;
      }
    }
  for (auto& [fs, bw] : fss) {
    auto& [board, who] = bw;
    for (auto& kv : who[0]) board.users.push_back(kv.second);
    for (auto& kv : who[1]) board.apps.push_back(kv.second);
    sb.file_systems.push_back(std::move(board));
  }
  return sb;
}

std::vector<ScoreEntry> TopBy(std::vector<ScoreEntry> v, const std::string& metric, size_t n) {
  auto val = [&](const ScoreEntry& e) -> uint64_t {
    if (metric == "ops") return e.data_ops;
    if (metric == "meta") return e.meta_ops;
    return e.read_bytes + e.write_bytes;
  };
  std::stable_sort(v.begin(), v.end(), [&](const ScoreEntry& a, const ScoreEntry& b) {
    if (val(a) != val(b)) return val(a) > val(b);
    return a.key < b.key;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

namespace {
const char* kMetrics[] = {"bytes", "ops", "meta"};

std::string HumanBytes(double b) { return format::Bytes1(b); }
}  // namespace

std::string ScoreboardToTable(const Scoreboard& s, size_t n) {
  std::string o = "I/O scoreboard over " + std::to_string(s.jobs) + " jobs\n";
  char b[512];
  // Per storage system first (TOKIO §IV-B): shared ones, then node-local and unknown.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& f : s.file_systems) {
      const bool shared = !f.node_local && f.fs != kUnknownFs;
      if (shared != (pass == 0)) continue;
      o += "\nstorage system " + f.fs + (f.node_local ? " (node-local mounts: not shared storage)" : "") + ": " +
           std::to_string(f.jobs) + " jobs, read " + HumanBytes(static_cast<double>(f.read_bytes)) + ", written " +
           HumanBytes(static_cast<double>(f.write_bytes)) + "\n";
      for (int who = 0; who < 2; ++who)
        for (const auto& e : TopBy(who == 0 ? f.users : f.apps, "bytes", n)) {
          std::snprintf(b, sizeof b, "  %-12s %-24s %6llu %12s %12s\n", who == 0 ? "user" : "application",
                        e.key.c_str(), static_cast<unsigned long long>(e.jobs),
                        HumanBytes(static_cast<double>(e.read_bytes)).c_str(),
                        HumanBytes(static_cast<double>(e.write_bytes)).c_str());
          o += b;
        }
    }
  if (!s.file_systems.empty()) o += "\nall traced I/O (every storage system, node-local mounts included):\n";
  for (int who = 0; who < 2; ++who) {
    const auto& v = who == 0 ? s.users : s.apps;
    for (const char* m : kMetrics) {
      std::string title = std::string("\ntop ") + (who == 0 ? "users" : "applications") + " by " +
                          (std::string(m) == "bytes" ? "bytes read + written" : std::string(m) == "ops" ? "data ops" : "metadata ops");
      o += title + "\n";
      std::snprintf(b, sizeof b, "  %-24s %6s %12s %12s %12s %12s\n", who == 0 ? "user" : "application", "jobs", "read",
                    "written", "data ops", "meta ops");
      o += b;
      for (const auto& e : TopBy(v, m, n)) {
        std::snprintf(b, sizeof b, "  %-24s %6llu %12s %12s %12llu %12llu\n", e.key.c_str(),
                      static_cast<unsigned long long>(e.jobs), HumanBytes(static_cast<double>(e.read_bytes)).c_str(),
                      HumanBytes(static_cast<double>(e.write_bytes)).c_str(),
                      static_cast<unsigned long long>(e.data_ops), static_cast<unsigned long long>(e.meta_ops));
        o += b;
      }
    }
  }
  return o;
}

std::string ScoreboardToJson(const Scoreboard& s, size_t n) {
  std::string out;
  JsonWriter w(&out, 2);
  w.BeginObject();
  w.Kv("jobs", s.jobs);
  // The users' and applications' rankings by each metric (whole, and per file system).
  auto rankings = [&](const auto& users, const auto& apps) {
    for (int who = 0; who < 2; ++who) {
      w.Key(who == 0 ? "users" : "applications");
      w.BeginObject();
      for (const char* m : kMetrics) {
        w.Key(std::string("by_") + m);
        w.BeginArray();
        for (const auto& e : TopBy(who == 0 ? users : apps, m, n)) {
          KvObject(w, who == 0 ? "user" : "application", e.key, "jobs", e.jobs, "read_bytes", e.read_bytes,
                   "write_bytes", e.write_bytes, "data_ops", e.data_ops, "meta_ops", e.meta_ops);
        }
        w.EndArray();
      }
      w.EndObject();
    }
  };
  rankings(s.users, s.apps);
  // Per storage system (TOKIO §IV-B), node-local mounts flagged.
  w.Key("file_systems");
  w.BeginArray();
  for (const auto& f : s.file_systems) {
    w.BeginObject();
    w.Kv("fs", f.fs);
    w.Key("node_local");
    w.Bool(f.node_local);
    w.Key("mount_known");
    w.Bool(f.fs != kUnknownFs && !f.node_local);
    KvAll(w, "jobs", f.jobs, "read_bytes", f.read_bytes, "write_bytes", f.write_bytes, "data_ops", f.data_ops,
          "meta_ops", f.meta_ops);
    rankings(f.users, f.apps);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

// ---- scoreboard results to the job database and a result stream ----

namespace {
// One board's rows (results.def scoreboard): per who and metric, the top n.
std::vector<results::scoreboard::Row> BoardRows(const ScoreboardPeriod& p, const std::string& from, const std::string& to,
                                                const std::string& now, const std::string& fs, bool node_local,
                                                const std::vector<ScoreEntry>& users, const std::vector<ScoreEntry>& apps,
                                                uint64_t jobs, size_t n) {
  std::vector<results::scoreboard::Row> rows;
  for (int who = 0; who < 2; ++who) {
    for (const char* m : kMetrics) {
      uint64_t rank = 0;
      for (const auto& e : TopBy(who == 0 ? users : apps, m, n))
        rows.push_back({p.cluster, from, to, fs, node_local ? 1 : 0, who == 0 ? "user" : "application", m, ++rank, now,
                        e.key, e.jobs, e.read_bytes, e.write_bytes, e.data_ops, e.meta_ops, jobs});
    }
  }
  return rows;
}
}  // namespace

Status WriteScoreboardToDb(MysqlConn& db, const ScoreboardPeriod& p, const Scoreboard& s, size_t n) {
  const std::string now = SqlDatetime(NowNs()), from = SqlDatetime(p.from_ns), to = SqlDatetime(p.to_ns);
  // fs '': every traced byte; then one board per storage system (migration 039).
  auto rows = BoardRows(p, from, to, now, "", false, s.users, s.apps, s.jobs, n);
  for (const auto& f : s.file_systems) {
    auto more = BoardRows(p, from, to, now, f.fs, f.node_local, f.users, f.apps, f.jobs, n);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return db.Transaction([&]() -> Status {
    auto del = results::Delete<results::scoreboard::Row>(db, "WHERE cluster = ? AND period_from = ? AND period_to = ?",
                                                          {p.cluster, from, to});
    if (!del.ok()) return del.status();
    for (const auto& row : rows)
      if (Status st = results::Insert(db, row); !st.ok()) return st;
    return Status::Ok();
  });
}

std::string ScoreboardToRecords(const Scoreboard& s, size_t n, const ScoreboardPeriod& p, const std::string& host) {
  const int64_t stream = ResultStreamId("iosonar.result.scoreboard", {p.cluster, FormatIsoMillis(p.from_ns),
                                                                      FormatIsoMillis(p.to_ns), std::to_string(n)});
  std::string out;
  int64_t seq = 0;
  // The fs '' board (every traced byte); the per-file-system boards stay in MySQL and the JSON.
  for (const auto& row : BoardRows(p, "", "", "", "", false, s.users, s.apps, s.jobs, n)) {
    JsonWriter w(&out, 0);
    BeginResultRecord(w, p.to_ns, dataset::kResultScoreboard, stream, seq++, host);
    results::WriteStreamFields(w, row, [&](std::string_view f) { w.Kv(f, p.to_ns - p.from_ns); });  // period_ns
    w.EndObject();
    out += '\n';
  }
  return out;
}

}  // namespace iosonar::analysis
