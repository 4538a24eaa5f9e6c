#include "analysis-jobs/job-summary/job_summary.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"
#include "analysis-jobs/phases/phases.h"

namespace iosonar::analysis {

const std::array<std::string_view, kSizeBins> kSizeBinLabels = {
    "0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"};
// Darshan's SIZE_*_ bins (DARSHAN_BUCKET_INC), so numbers compare with Darshan logs.
const std::array<int64_t, kSizeBins - 1> kSizeBinUpper = {
    100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824};

size_t SizeBin(int64_t size) {
  for (size_t i = 0; i < kSizeBinUpper.size(); ++i)
    if (size <= kSizeBinUpper[i]) return i;
  return kSizeBins - 1;
}

namespace {

enum class OpKind { kRead, kWrite, kMeta, kOther };

OpKind Classify(std::string_view op) {
  if (op == "read") return OpKind::kRead;
  if (op == "write") return OpKind::kWrite;
  static constexpr std::string_view kMeta[] = {"open", "close", "stat", "access", "unlink", "rename", "mkdir", "rmdir"};
  for (auto m : kMeta)
    if (op == m) return OpKind::kMeta;
  return OpKind::kOther;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// Calls fn(bucket, fraction) for each bucket [start,end] overlaps, with the
// fraction of the interval inside it. The interval is treated as half-open so
// a run ending exactly on a boundary does not touch the next bucket; a
// zero-length run is wholly in the bucket holding start.
template <typename Fn>
void ForEachBucket(int64_t start, int64_t end, int64_t width, Fn&& fn) {
  if (end <= start) {
    fn(FloorDiv(start, width), 1.0);
    return;
  }
  const int64_t first = FloorDiv(start, width);
  const int64_t last = FloorDiv(end - 1, width);
  const double len = static_cast<double>(end - start);
  for (int64_t b = first; b <= last; ++b) {
    const int64_t lo = std::max(start, b * width);
    const int64_t hi = std::min(end, (b + 1) * width);
    fn(b, static_cast<double>(hi - lo) / len);
  }
}

std::string ProcessKey(const TraceRun& r) { return r.host + '\n' + std::to_string(r.pid); }

// A named file by id (stable across processes), else path; unnamed fds of
// data ops (pipes, sockets, terminals) are per process.
std::string FileKey(const TraceRun& r, bool allow_fd) {
  if (!r.file_id.empty()) return r.file_id;
  if (!r.file_path.empty()) return r.file_path;
  if (allow_fd) return "fd " + std::to_string(r.fd) + " of " + r.host + ":" + std::to_string(r.pid);
  return {};
}

struct FileAgg {
  std::string key;
  std::string path;
  std::unordered_map<size_t, uint64_t> read_by_proc, write_by_proc;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t read_ops = 0, write_ops = 0;
  // Consecutive ops (see ConsecutiveOps), and for runs without
  // io.ops_sequential the offset each process's next run would continue at.
  std::unordered_map<size_t, int64_t> read_next, write_next;
  uint64_t read_seq_ops = 0, write_seq_ops = 0;
};

struct DirAgg {
  DirectionStats* st;
  uint64_t requested = 0;
  uint64_t seq_ops = 0;
  int64_t busy_ns = 0;
  std::map<int64_t, double> buckets;
  std::map<int64_t, double> ops_buckets;  // the ops of data runs, spread as their bytes
};

// The smallest prefix of v (sorted descending) carrying >= share of total,
// extended by the entries at least tie_ratio as large as its last one.
size_t KeepCount(const std::vector<uint64_t>& v, uint64_t total, const ModeOptions& o) {
  if (v.empty() || total == 0) return 0;
  const double need = o.volume_share * static_cast<double>(total);
  size_t k = 0;
  double cum = 0;
  while (k < v.size() && (k == 0 || cum < need)) cum += static_cast<double>(v[k++]);
  const double floor_bytes = o.tie_ratio * static_cast<double>(v[k - 1]);
  while (k < v.size() && v[k] > 0 && static_cast<double>(v[k]) >= floor_bytes) ++k;
  return k;
}

std::string Percent(double share) {
  char b[32];
  if (share > 0 && share < 0.001) return "<0.1%";
  if (share >= 0.995 || share == 0) std::snprintf(b, sizeof b, "%.0f%%", share * 100);
  else std::snprintf(b, sizeof b, "%.1f%%", share * 100);
  return b;
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Names the mode of n processes (the kept ones) moving data of m files
// (private_files of them each by one process) into ev->mode, and says why in words.
std::string ExplainMode(size_t n, size_t m, uint64_t private_files, bool write, bool sequential, ModeEvidence* out) {
  ModeEvidence& ev = *out;
  const char* verb = write ? "wrote" : "read";
  std::string what;
  if (n == 1 && m == 1 && sequential) {
    ev.mode = "1-1";
    what = "1 process " + std::string(verb) + " 1 file sequentially";
  } else if (n == 1 && m == 1) {
    ev.mode = "1-1 random";
    what = "1 process " + std::string(verb) + " 1 file at scattered offsets (not sequential: not Beacon's 1-1)";
  } else if (n == 1) {
    ev.mode = "1-M";
    what = "1 process " + std::string(verb) + " all of the data, " + (write ? "to " : "from ") +
           Plural(m, "file", "files") + " (one process, many files: all I/O through one process)";
  } else if (m == 1) {
    ev.mode = "N-1";
    what = std::to_string(n) + " processes " + verb + " one shared file";
  } else if (m >= n && private_files == m) {
    ev.mode = "N-N";
    what = std::to_string(n) + " processes " + verb + " " + std::to_string(m) + " files, each file by one process";
    what += m == n ? " (file per process)" : " (several files per process)";
  } else {
    ev.mode = "N-M";
    what = std::to_string(n) + " processes " + verb + " " + std::to_string(m) + " files";
    if (m < n) {
      char b[64];
      std::snprintf(b, sizeof b, " (about %.1f processes per file)", static_cast<double>(n) / static_cast<double>(m));
      what += b;
    } else {
      what += ", " + std::to_string(m - private_files) + " of them shared by several processes";
    }
  }
  const uint64_t minor_files = ev.files - m;
  const uint64_t minor_procs = ev.processes - n;
  std::string minor;
  if (minor_files) minor = Plural(minor_files, "file", "files") + " with " + Percent(1 - ev.kept_share) + " of the bytes";
  if (minor_procs) {
    if (!minor.empty()) minor += ", ";
    minor += Plural(minor_procs, "process", "processes") + " with a small share";
  }
  if (!minor.empty()) what += "; ignored as minor: " + minor;
  return what;
}

ModeEvidence DecideMode(const std::vector<FileAgg>& files, bool write, const ModeOptions& o, size_t top_n) {
  ModeEvidence ev;
  auto by_proc = [&](const FileAgg& f) -> const std::unordered_map<size_t, uint64_t>& {
    return write ? f.write_by_proc : f.read_by_proc;
  };
  auto bytes_of = [&](const FileAgg& f) { return write ? f.write_bytes : f.read_bytes; };

  std::vector<size_t> order;
  std::unordered_map<size_t, uint64_t> proc_all;
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (bytes_of(files[i]) == 0) continue;
    order.push_back(i);
    total += bytes_of(files[i]);
    for (const auto& [p, b] : by_proc(files[i]))
      if (b > 0) proc_all[p] += b;
  }
  ev.files = order.size();
  ev.processes = proc_all.size();
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (bytes_of(files[a]) != bytes_of(files[b])) return bytes_of(files[a]) > bytes_of(files[b]);
    return files[a].key < files[b].key;
  });
  for (size_t i = 0; i < order.size() && i < top_n; ++i) {
    const auto& f = files[order[i]];
    uint64_t procs = 0;
    for (const auto& pb : by_proc(f)) procs += pb.second > 0;
    ev.top_files.push_back({f.key, f.path, bytes_of(f), procs});
  }
  if (total == 0) {
    ev.mode = "none";
    ev.explanation = std::string("no bytes were ") + (write ? "written" : "read");
    return ev;
  }

  std::vector<uint64_t> file_bytes;
  for (size_t i : order) file_bytes.push_back(bytes_of(files[i]));
  const size_t m = KeepCount(file_bytes, total, o);
  uint64_t kept_bytes = 0;
  std::unordered_map<size_t, uint64_t> proc_kept;
  uint64_t private_files = 0;
  for (size_t j = 0; j < m; ++j) {
    const auto& f = files[order[j]];
    kept_bytes += bytes_of(f);
    uint64_t top = 0;
    for (const auto& [p, b] : by_proc(f)) {
      if (b == 0) continue;
      proc_kept[p] += b;
      top = std::max(top, b);
    }
    if (static_cast<double>(top) >= o.private_share * static_cast<double>(bytes_of(f))) ++private_files;
  }
  std::vector<uint64_t> proc_bytes;
  for (const auto& pb : proc_kept) proc_bytes.push_back(pb.second);
  std::sort(proc_bytes.rbegin(), proc_bytes.rend());
  const size_t n = KeepCount(proc_bytes, kept_bytes, o);

  ev.kept_files = m;
  ev.kept_processes = n;
  ev.private_files = private_files;
  ev.kept_share = static_cast<double>(kept_bytes) / static_cast<double>(total);

  uint64_t seq_kept = 0, ops_kept = 0;
  for (size_t j = 0; j < m; ++j) {
    seq_kept += write ? files[order[j]].write_seq_ops : files[order[j]].read_seq_ops;
    ops_kept += write ? files[order[j]].write_ops : files[order[j]].read_ops;
  }
  const bool sequential = ops_kept > 0 && static_cast<double>(seq_kept) >= o.volume_share * static_cast<double>(ops_kept);
  ev.explanation = ExplainMode(n, m, private_files, write, sequential, &ev);
  return ev;
}

void FinishDirection(DirAgg& d, int64_t bucket_ns, double runtime_s) {
  DirectionStats& s = *d.st;
  if (s.runs == 0) return;
  size_t io_buckets = 0;
  for (const auto& kv : d.buckets) io_buckets += kv.second > 0;
  s.io_time_s = static_cast<double>(io_buckets) * (static_cast<double>(bucket_ns) / 1e9);
  if (s.io_time_s > 0) {
    s.bw_io_time = static_cast<double>(s.bytes) / s.io_time_s;
    s.iops_io_time = static_cast<double>(s.ops) / s.io_time_s;
  }
  if (runtime_s > 0) {
    s.bw_run = static_cast<double>(s.bytes) / runtime_s;
    s.iops_run = static_cast<double>(s.ops) / runtime_s;
  }
  if (s.ops) s.sequential_share = static_cast<double>(d.seq_ops) / static_cast<double>(s.ops);
  s.span_s = static_cast<double>(s.last_end_ns - s.first_start_ns) / 1e9;
  if (s.span_s > 0) {
    s.bw_span = static_cast<double>(s.bytes) / s.span_s;
    s.iops_span = static_cast<double>(s.ops) / s.span_s;
  }
  // The headline until the I/O phases are known (MetaDuringPhases): the
  // span's (exact for a job of one burst, however short), else the I/O time's.
  if (s.span_s > 0) {
    s.bw_avg = s.bw_span;
    s.iops = s.iops_span;
    s.rate_basis = "span";
  } else {
    s.bw_avg = s.bw_io_time;
    s.iops = s.iops_io_time;
    s.rate_basis = s.io_time_s > 0 ? "io time" : "";
  }
  s.busy_s = static_cast<double>(d.busy_ns) / 1e9;
  if (s.ops) s.avg_request_bytes = static_cast<double>(d.requested) / static_cast<double>(s.ops);
  double peak = 0;
  for (const auto& kv : d.buckets) peak = std::max(peak, kv.second);
  // A burst shorter than a bucket is diluted by it, but the average over the
  // span is itself a lower bound on the peak rate: report the larger, so a
  // peak never reads below the average.
  s.bw_peak = std::max(peak / (static_cast<double>(bucket_ns) / 1e9), std::max(s.bw_avg, s.bw_span));
}

}  // namespace

namespace {

// The consecutive ops of a data run (the header's "sequential"): its
// io.ops_sequential when it has one (at most its ops); else, from offsets in
// time order, its first op if it continues where this process's previous run
// on the file in this direction ended (or is the first such run, or has no
// offset), plus its other ops unless it is strided.
uint64_t ConsecutiveOps(const TraceRun& r, uint64_t ops, uint64_t bytes, size_t proc,
                        std::unordered_map<size_t, int64_t>& next) {
  bool continues = true;
  if (r.offset >= 0) {
    auto nit = next.find(proc);
    if (nit != next.end()) continues = nit->second == r.offset;
    const int64_t step = r.stride != 0 ? r.stride : r.size;
    next[proc] = r.stride != 0 && ops > 0 ? r.offset + static_cast<int64_t>(ops - 1) * step + r.size
                                          : r.offset + static_cast<int64_t>(bytes);
  }
  if (r.ops_sequential >= 0) return std::min<uint64_t>(static_cast<uint64_t>(r.ops_sequential), ops);
  if (ops == 0) return 0;
  return (continues ? 1 : 0) + (r.stride != 0 ? 0 : ops - 1);
}

// The one pass over a job's runs: per direction totals and busy buckets,
// processes (and which did I/O), files and who read or wrote them.
class RunTally {
 public:
  RunTally(JobSummary* js, int64_t width) : js_(js), width_(width), rd_{&js->read}, wr_{&js->write} {}

  void Add(const TraceRun& r) {
    const int64_t end = std::max(r.end_ns, r.start_ns);
    if (first_ || r.start_ns < js_->start_ns) js_->start_ns = r.start_ns;
    if (first_ || end > js_->end_ns) js_->end_ns = end;
    first_ = false;
    busy_ns_ += r.duration_ns;
    const uint64_t ops = static_cast<uint64_t>(std::max<int64_t>(r.count, 0));
    const uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(r.bytes, 0));

    auto [pit, new_proc] = proc_index_.try_emplace(ProcessKey(r), proc_host_.size());
    if (new_proc) {
      proc_host_.push_back(r.host);
      proc_io_.push_back(false);
    }
    const size_t proc = pit->second;

    ForEachBucket(r.start_ns, end, width_, [&](int64_t b, double) { active_.insert(b); });
    if (r.errno_ != 0) {
      js_->errors += ops;
      js_->errors_by_op[r.op] += ops;
      js_->errors_by_errno[r.errno_] += ops;
    }

    const OpKind kind = Classify(r.op);
    if (kind == OpKind::kMeta && ops > 0)
      ForEachBucket(r.start_ns, end, width_, [&](int64_t b, double frac) {
        meta_buckets_[b] += static_cast<double>(ops) * frac;
      });
    if (kind == OpKind::kMeta || kind == OpKind::kOther) {
      (kind == OpKind::kMeta ? js_->meta_ops : js_->other_ops) += ops;
      (kind == OpKind::kMeta ? js_->meta_by_op : js_->other_by_op)[r.op] += ops;
      std::string key = FileKey(r, false);
      if (!key.empty()) all_files_.insert(std::move(key));
      return;
    }

    DirAgg& d = kind == OpKind::kRead ? rd_ : wr_;
    DirectionStats& s = *d.st;
    if (s.runs == 0 || r.start_ns < s.first_start_ns) s.first_start_ns = r.start_ns;
    if (s.runs == 0 || end > s.last_end_ns) s.last_end_ns = end;
    ++s.runs;
    s.ops += ops;
    s.bytes += bytes;
    d.busy_ns += r.duration_ns;
    // Requested size per op; a run without io.size is binned by what it moved.
    int64_t each = r.size > 0 ? r.size : (ops ? static_cast<int64_t>(bytes / ops) : 0);
    d.requested += static_cast<uint64_t>(each) * ops;
    s.size_hist[SizeBin(each)] += ops;
    if (bytes > 0) {
      ForEachBucket(r.start_ns, end, width_, [&](int64_t b, double frac) {
        d.buckets[b] += static_cast<double>(bytes) * frac;
      });
      proc_io_[proc] = true;
    }
    if (ops > 0)
      ForEachBucket(r.start_ns, end, width_, [&](int64_t b, double frac) {
        d.ops_buckets[b] += static_cast<double>(ops) * frac;
      });

    std::string key = FileKey(r, true);
    all_files_.insert(key);
    auto [fit, new_file] = file_index_.try_emplace(key, files_.size());
    if (new_file) {
      files_.emplace_back();
      files_.back().key = key;
    }
    FileAgg& f = files_[fit->second];
    if (!r.file_path.empty() && (f.path.empty() || r.file_path < f.path)) f.path = r.file_path;
    auto& next = kind == OpKind::kRead ? f.read_next : f.write_next;
    const uint64_t seq = ConsecutiveOps(r, ops, bytes, proc, next);
    if (kind == OpKind::kRead) {
      f.read_bytes += bytes;
      f.read_ops += ops;
      f.read_by_proc[proc] += bytes;
      f.read_seq_ops += seq;
    } else {
      f.write_bytes += bytes;
      f.write_ops += ops;
      f.write_by_proc[proc] += bytes;
      f.write_seq_ops += seq;
    }
    d.seq_ops += seq;
  }

  // The totals that need every run: spans and rates, phases, processes,
  // nodes, files.
  void Finish() {
    js_->runtime_s = static_cast<double>(js_->end_ns - js_->start_ns) / 1e9;
    js_->busy_s = static_cast<double>(busy_ns_) / 1e9;
    FinishDirection(rd_, width_, js_->runtime_s);
    FinishDirection(wr_, width_, js_->runtime_s);
    js_->io_phase_s = static_cast<double>(active_.size()) * (static_cast<double>(width_) / 1e9);
    if (js_->io_phase_s > 0) js_->meta_ops_per_s = static_cast<double>(js_->meta_ops) / js_->io_phase_s;

    js_->processes = proc_host_.size();
    std::unordered_set<std::string> hosts(proc_host_.begin(), proc_host_.end()), io_hosts;
    js_->nodes = hosts.size();
    for (size_t p = 0; p < proc_io_.size(); ++p) {
      if (!proc_io_[p]) continue;
      ++js_->processes_with_io;
      io_hosts.insert(proc_host_[p]);
    }
    js_->nodes_with_io = io_hosts.size();
    js_->files = files_.size();
    js_->files_total = all_files_.size();
  }

  // The same state fed from the store's groups instead of runs
  // (SummarizeJob's sums path); each method does what Add() does for the
  // records of one group.
  void FeedSpan(int64_t start, int64_t end) {
    js_->start_ns = start;
    js_->end_ns = std::max(start, end);
    first_ = false;
  }
  void FeedBusy(int64_t ns) { busy_ns_ += ns; }
  // In one bucket (the records do not cross one): ops of kind, and bytes.
  void FeedBucket(int64_t b, OpKind kind, uint64_t records, uint64_t ops, uint64_t bytes) {
    if (records > 0) active_.insert(b);
    if (kind == OpKind::kMeta && ops > 0) meta_buckets_[b] += static_cast<double>(ops);
    if ((kind == OpKind::kRead || kind == OpKind::kWrite) && bytes > 0)
      (kind == OpKind::kRead ? rd_ : wr_).buckets[b] += static_cast<double>(bytes);
    if ((kind == OpKind::kRead || kind == OpKind::kWrite) && ops > 0)
      (kind == OpKind::kRead ? rd_ : wr_).ops_buckets[b] += static_cast<double>(ops);
  }
  // Records of one op, layer, request size and errno.
  void FeedOps(const std::string& op, int64_t size, int64_t err, uint64_t records, uint64_t ops, uint64_t bytes,
               int64_t busy_ns) {
    if (err != 0) {
      js_->errors += ops;
      js_->errors_by_op[op] += ops;
      js_->errors_by_errno[err] += ops;
    }
    const OpKind kind = Classify(op);
    if (kind == OpKind::kMeta || kind == OpKind::kOther) {
      (kind == OpKind::kMeta ? js_->meta_ops : js_->other_ops) += ops;
      (kind == OpKind::kMeta ? js_->meta_by_op : js_->other_by_op)[op] += ops;
      return;
    }
    DirAgg& d = kind == OpKind::kRead ? rd_ : wr_;
    DirectionStats& st = *d.st;
    st.runs += records;
    st.ops += ops;
    st.bytes += bytes;
    d.busy_ns += busy_ns;
    // size <= 0 only with no bytes (the caller checks): each op is then 0.
    const int64_t each = size > 0 ? size : 0;
    d.requested += static_cast<uint64_t>(each) * ops;
    st.size_hist[SizeBin(each)] += ops;
  }
  void FeedDirectionSpan(bool write, int64_t first_start, int64_t last_end) {
    DirectionStats& st = write ? js_->write : js_->read;
    st.first_start_ns = first_start;
    st.last_end_ns = last_end;
  }
  // Records of one op on one file (id, path, fd) by one process.
  void FeedFile(const TraceRun& key, uint64_t ops, uint64_t bytes, uint64_t seq_ops) {
    auto [pit, new_proc] = proc_index_.try_emplace(ProcessKey(key), proc_host_.size());
    if (new_proc) {
      proc_host_.push_back(key.host);
      proc_io_.push_back(false);
    }
    const size_t proc = pit->second;
    const OpKind kind = Classify(key.op);
    if (kind == OpKind::kMeta || kind == OpKind::kOther) {
      std::string fk = FileKey(key, false);
      if (!fk.empty()) all_files_.insert(std::move(fk));
      return;
    }
    if (bytes > 0) proc_io_[proc] = true;
    std::string fk = FileKey(key, true);
    all_files_.insert(fk);
    auto [fit, new_file] = file_index_.try_emplace(fk, files_.size());
    if (new_file) {
      files_.emplace_back();
      files_.back().key = fk;
    }
    FileAgg& f = files_[fit->second];
    if (!key.file_path.empty() && (f.path.empty() || key.file_path < f.path)) f.path = key.file_path;
    seq_ops = std::min(seq_ops, ops);
    if (kind == OpKind::kRead) {
      f.read_bytes += bytes;
      f.read_ops += ops;
      f.read_by_proc[proc] += bytes;
      f.read_seq_ops += seq_ops;
    } else {
      f.write_bytes += bytes;
      f.write_ops += ops;
      f.write_by_proc[proc] += bytes;
      f.write_seq_ops += seq_ops;
    }
    (kind == OpKind::kRead ? rd_ : wr_).seq_ops += seq_ops;
  }

  const std::vector<FileAgg>& files() const { return files_; }
  const DirAgg& read() const { return rd_; }
  const DirAgg& write() const { return wr_; }
  const std::map<int64_t, double>& meta_buckets() const { return meta_buckets_; }

 private:
  JobSummary* js_;
  const int64_t width_;
  DirAgg rd_, wr_;
  std::unordered_map<std::string, size_t> proc_index_;
  std::vector<std::string> proc_host_;
  std::vector<bool> proc_io_;
  std::unordered_map<std::string, size_t> file_index_;
  std::vector<FileAgg> files_;
  std::unordered_set<std::string> all_files_;
  std::set<int64_t> active_;
  std::map<int64_t, double> meta_buckets_;  // metadata ops per bucket (spread like bytes)
  int64_t busy_ns_ = 0;
  bool first_ = true;
};

// The files with the most bytes read + written (then by key), and how many processes moved them.
void TopFiles(const std::vector<FileAgg>& files, size_t top_n, JobSummary* out) {
  JobSummary& js = *out;
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto total = [&](size_t i) { return files[i].read_bytes + files[i].write_bytes; };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (total(a) != total(b)) return total(a) > total(b);
    return files[a].key < files[b].key;
  });
  for (size_t i = 0; i < order.size() && js.top_files.size() < top_n; ++i) {
    const FileAgg& f = files[order[i]];
    if (total(order[i]) == 0) break;
    std::unordered_set<size_t> procs;
    for (const auto& pb : f.read_by_proc)
      if (pb.second) procs.insert(pb.first);
    for (const auto& pb : f.write_by_proc)
      if (pb.second) procs.insert(pb.first);
    js.top_files.push_back({f.key, f.path, f.read_bytes, f.write_bytes, procs.size()});
  }

}

// Bytes per bucket over the whole job; wide jobs get whole-bucket multiples
// so a cached summary stays small.
void BytesSeries(const DirAgg& rd, const DirAgg& wr, int64_t width, const SummaryOptions& opt, JobSummary* out) {
  JobSummary& js = *out;
  if (opt.max_series_points > 0) {
    const int64_t b0 = FloorDiv(js.start_ns, width);
    const int64_t b1 = js.end_ns > js.start_ns ? FloorDiv(js.end_ns - 1, width) : b0;
    int64_t k = std::max<int64_t>(1, (b1 - b0 + 1 + static_cast<int64_t>(opt.max_series_points) - 1) /
                                         static_cast<int64_t>(opt.max_series_points));
    auto points = [&](int64_t kk) { return FloorDiv(b1, kk) - FloorDiv(b0, kk) + 1; };
    while (points(k) > static_cast<int64_t>(opt.max_series_points)) ++k;
    js.series_bucket_ns = width * k;
    const int64_t c0 = FloorDiv(b0, k);
    js.series_start_ns = c0 * js.series_bucket_ns;
    const size_t n = static_cast<size_t>(points(k));
    js.series_read.assign(n, 0.0);
    js.series_write.assign(n, 0.0);
    for (const auto& [b, v] : rd.buckets) js.series_read[static_cast<size_t>(FloorDiv(b, k) - c0)] += v;
    for (const auto& [b, v] : wr.buckets) js.series_write[static_cast<size_t>(FloorDiv(b, k) - c0)] += v;
  }
}

// The MPI-IO view (MpiioView): the logical mode over the mpiio runs, and
// which processes did the POSIX work on the files accessed through MPI-IO.
void SummarizeMpiio(const std::vector<const TraceRun*>& mpi, std::span<const TraceRun> runs, int64_t width,
                    const SummaryOptions& opt, JobSummary* out) {
  MpiioView& v = out->mpiio;
  v.records = mpi.size();
  JobSummary logical;
  RunTally lt(&logical, width);
  uint64_t coll_bytes[2] = {0, 0};
  std::unordered_set<std::string> files[2];  // [read, write]: files with mpiio bytes
  for (const TraceRun* r : mpi) {
    lt.Add(*r);
    v.comm_size_max = std::max(v.comm_size_max, r->comm_size);
    const OpKind k = Classify(r->op);
    if (k != OpKind::kRead && k != OpKind::kWrite) continue;
    const int d = k == OpKind::kWrite;
    MpiioDirection& md = d ? v.write : v.read;
    if (r->collective) md.collective_ops += static_cast<uint64_t>(std::max<int64_t>(r->count, 0));
    if (r->bytes > 0) {
      if (r->collective) coll_bytes[d] += static_cast<uint64_t>(r->bytes);
      files[d].insert(FileKey(*r, true));
    }
  }
  lt.Finish();
  v.mode_read = DecideMode(lt.files(), false, opt.mode, opt.top_files);
  v.mode_write = DecideMode(lt.files(), true, opt.mode, opt.top_files);
  std::unordered_set<std::string> aggregators[2];
  for (const TraceRun& r : runs) {
    if (r.layer == "mpiio" || r.bytes <= 0) continue;
    const OpKind k = Classify(r.op);
    if (k != OpKind::kRead && k != OpKind::kWrite) continue;
    const int d = k == OpKind::kWrite;
    if (files[d].count(FileKey(r, true))) aggregators[d].insert(ProcessKey(r));
  }
  for (int d = 0; d < 2; ++d) {
    MpiioDirection& md = d ? v.write : v.read;
    const DirectionStats& ds = d ? logical.write : logical.read;
    md.bytes = ds.bytes;
    md.ops = ds.ops;
    md.collective_share = md.bytes ? static_cast<double>(coll_bytes[d]) / static_cast<double>(md.bytes) : 0;
    md.ranks = (d ? v.mode_write : v.mode_read).processes;
    md.files = files[d].size();
    md.aggregators = aggregators[d].size();
  }
}

// Beacon's metadata rate during I/O phases: the wavelet-detected phases
// (analysis-jobs/phases, default options) of the read and write byte series,
// their union's buckets, and the metadata ops in them.
void MetaDuringPhases(const DirAgg& rd, const DirAgg& wr, const std::map<int64_t, double>& meta, int64_t width,
                      JobSummary* out) {
  JobSummary& js = *out;
  if (rd.buckets.empty() && wr.buckets.empty()) return;
  const int64_t b0 = FloorDiv(js.start_ns, width);
  const int64_t b1 = js.end_ns > js.start_ns ? FloorDiv(js.end_ns - 1, width) : b0;
  int64_t w = width, origin_ns = b0 * width;
  std::vector<double> rs, ws;
  if (b1 - b0 + 1 <= kMaxPhaseSummaryBuckets) {
    rs.assign(static_cast<size_t>(b1 - b0 + 1), 0.0);
    ws.assign(rs.size(), 0.0);
    for (const auto& [b, v] : rd.buckets) rs[static_cast<size_t>(b - b0)] += v;
    for (const auto& [b, v] : wr.buckets) ws[static_cast<size_t>(b - b0)] += v;
  } else {  // a very long job: its coarsened series
    w = js.series_bucket_ns;
    origin_ns = js.series_start_ns;
    rs = js.series_read;
    ws = js.series_write;
  }
  if (w <= 0 || rs.empty()) return;
  PhaseOptions po;
  po.bucket_ns = w;
  const size_t n = rs.size();
  const JobPhases jp = PhasesFromSeries(js.job_id, origin_ns, std::move(rs), std::move(ws), po);
  std::vector<char> in(n, 0);
  for (const Phase& p : jp.phases)
    for (size_t i = p.first_bucket; i < p.first_bucket + p.buckets && i < n; ++i) in[i] = 1;
  size_t covered = 0;
  for (char c : in) covered += c != 0;
  js.io_phases = jp.phases.size();
  js.io_phases_s = static_cast<double>(covered) * (static_cast<double>(w) / 1e9);
  double m = 0;
  for (const auto& [b, v] : meta) {
    const int64_t i = FloorDiv(b * width - origin_ns, w);
    if (i >= 0 && static_cast<size_t>(i) < n && in[static_cast<size_t>(i)]) m += v;
  }
  js.meta_ops_in_io_phases = m;
  if (js.io_phases_s > 0) js.meta_ops_per_s_io_phases = m / js.io_phases_s;
  // Bandwidth and IOPS of each direction over its own phases (the headline).
  for (const DirAgg* d : {&rd, &wr}) {
    DirectionStats& st = *d->st;
    const std::string_view dir = d == &rd ? "read" : "write";
    std::vector<char> mine(n, 0);
    size_t phases = 0;
    for (const Phase& p : jp.phases) {
      if (p.direction != dir) continue;
      ++phases;
      for (size_t i = p.first_bucket; i < p.first_bucket + p.buckets && i < n; ++i) mine[i] = 1;
    }
    // A phase's time: its buckets, the first clipped to the direction's first
    // start and the last to its last end (so one short burst is its span,
    // not whole buckets); inner boundaries are bucket-exact.
    double phase_ns = 0;
    for (const Phase& p : jp.phases) {
      if (p.direction != dir) continue;
      const int64_t b0_ns = origin_ns + static_cast<int64_t>(p.first_bucket) * w;
      const int64_t b1_ns = b0_ns + static_cast<int64_t>(p.buckets) * w;
      const int64_t lo = std::max(b0_ns, st.first_start_ns), hi = std::min(b1_ns, st.last_end_ns);
      if (hi > lo) phase_ns += static_cast<double>(hi - lo);
    }
    if (!phases || phase_ns <= 0) continue;
    auto in_phases = [&](const std::map<int64_t, double>& series) {
      double sum = 0;
      for (const auto& [b, v] : series) {
        const int64_t i = FloorDiv(b * width - origin_ns, w);
        if (i >= 0 && static_cast<size_t>(i) < n && mine[static_cast<size_t>(i)]) sum += v;
      }
      return sum;
    };
    st.io_phases = phases;
    st.io_phases_s = phase_ns / 1e9;
    st.bytes_in_io_phases = in_phases(d->buckets);
    // Over the coarsened series of a very long job the ops per bucket are not
    // kept: its ops in the phases pro rata of its bytes there.
    st.ops_in_io_phases = w == width ? in_phases(d->ops_buckets)
                                     : (st.bytes ? static_cast<double>(st.ops) * st.bytes_in_io_phases /
                                                       static_cast<double>(st.bytes)
                                                 : 0);
    st.bw_io_phases = st.bytes_in_io_phases / st.io_phases_s;
    st.iops_io_phases = st.ops_in_io_phases / st.io_phases_s;
    st.bw_avg = st.bw_io_phases;
    st.iops = st.iops_io_phases;
    st.rate_basis = "io phases";
    st.bw_peak = std::max(st.bw_peak, st.bw_avg);
  }
}

// Per-process imbalance and shared files with small requests (see
// ImbalancedFile, JobSummary::shared_small_*), from the tally's files;
// files in `reduced` (a Darshan reduction of all ranks: the per-process
// bytes are an estimate) are left out of the imbalance.
void FileBalance(const std::vector<FileAgg>& files, const std::unordered_set<std::string>& reduced,
                 const SummaryOptions& opt, JobSummary* out) {
  constexpr uint64_t kSmallOps = 1000;
  constexpr double kSmallBytes = 1048576;
  for (const FileAgg& f : files) {
    const bool estimated = reduced.count(f.key) > 0;
    std::unordered_set<size_t> procs;
    for (const auto& kv : f.read_by_proc) procs.insert(kv.first);
    for (const auto& kv : f.write_by_proc) procs.insert(kv.first);
    if (procs.size() < 2) continue;
    for (int d = 0; d < 2; ++d) {
      const auto& by = d ? f.write_by_proc : f.read_by_proc;
      const uint64_t ops = d ? f.write_ops : f.read_ops, bytes = d ? f.write_bytes : f.read_bytes;
      uint64_t mn = UINT64_MAX, mx = 0;
      for (size_t p : procs) {
        auto it = by.find(p);
        const uint64_t b = it == by.end() ? 0 : it->second;
        mn = std::min(mn, b);
        mx = std::max(mx, b);
      }
      if (!estimated && mx > 0 && static_cast<double>(mx - mn) / static_cast<double>(mx) > opt.process_imbalance_share) {
        ImbalancedFile x;
        x.id = f.key;
        x.path = f.path;
        x.kind = "processes";
        x.direction = d ? "write" : "read";
        x.bytes = bytes;
        x.processes = procs.size();
        x.min_bytes = mn;
        x.max_bytes = mx;
        x.bytes_imbalance = static_cast<double>(mx - mn) / static_cast<double>(mx);
        out->imbalanced_files.push_back(std::move(x));
      }
      if (by.size() >= 2 && ops >= kSmallOps && static_cast<double>(bytes) <= kSmallBytes * static_cast<double>(ops)) {
        (d ? out->shared_small_write : out->shared_small_read).push_back({f.key, f.path, bytes, by.size()});
        (d ? out->shared_small_write_ops : out->shared_small_read_ops) += ops;
      }
    }
  }
  for (auto* v : {&out->shared_small_read, &out->shared_small_write}) {
    std::sort(v->begin(), v->end(), [](const FileBytes& a, const FileBytes& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.id < b.id;
    });
    if (v->size() > opt.top_files) v->resize(opt.top_files);
  }
}

// Darshan's alignment counters and shared files' stragglers, from the runs
// (the sums path leaves jobs carrying them to the runs).
std::unordered_set<std::string> DarshanFacts(std::span<const TraceRun> runs, const SummaryOptions& opt, JobSummary* out) {
  std::unordered_set<std::string> reduced;
  std::map<std::pair<std::string, std::string>, ImbalancedFile> strag;  // (layer, file)
  for (const TraceRun& r : runs) {
    const OpKind k = Classify(r.op);
    if (r.layer == "posix" && (k == OpKind::kRead || k == OpKind::kWrite) &&
        (r.ops_not_aligned >= 0 || r.ops_mem_not_aligned >= 0)) {
      AlignmentStats& a = out->alignment;
      a.data_ops += static_cast<uint64_t>(std::max<int64_t>(r.count, 0));
      a.not_aligned += static_cast<uint64_t>(std::max<int64_t>(r.ops_not_aligned, 0));
      a.mem_not_aligned += static_cast<uint64_t>(std::max<int64_t>(r.ops_mem_not_aligned, 0));
      a.alignment = std::max(a.alignment, r.alignment);
      a.mem_alignment = std::max(a.mem_alignment, r.mem_alignment);
    }
    if (r.fastest_rank >= 0 && r.slowest_rank >= 0) {
      const std::string key = FileKey(r, true);
      reduced.insert(key);
      ImbalancedFile& x = strag[{r.layer, key}];
      x.id = key;
      x.layer = r.layer;
      x.kind = "stragglers";
      x.fastest_rank = r.fastest_rank;
      x.slowest_rank = r.slowest_rank;
      x.fastest_bytes += static_cast<uint64_t>(std::max<int64_t>(r.fastest_rank_bytes, 0));
      x.slowest_bytes += static_cast<uint64_t>(std::max<int64_t>(r.slowest_rank_bytes, 0));
      x.fastest_s += static_cast<double>(std::max<int64_t>(r.fastest_rank_time_ns, 0)) / 1e9;
      x.slowest_s += static_cast<double>(std::max<int64_t>(r.slowest_rank_time_ns, 0)) / 1e9;
    }
  }
  if (strag.empty()) return reduced;
  for (const TraceRun& r : runs) {
    auto it = strag.find({r.layer, FileKey(r, true)});
    if (it == strag.end()) continue;
    ImbalancedFile& x = it->second;
    if (!r.file_path.empty() && (x.path.empty() || r.file_path < x.path)) x.path = r.file_path;
    const OpKind k = Classify(r.op);
    if (k == OpKind::kRead || k == OpKind::kWrite) x.bytes += static_cast<uint64_t>(std::max<int64_t>(r.bytes, 0));
    x.time_s += static_cast<double>(std::max<int64_t>(r.duration_ns, 0)) / 1e9;
  }
  for (auto& [k, x] : strag) {
    const double db = static_cast<double>(x.slowest_bytes > x.fastest_bytes ? x.slowest_bytes - x.fastest_bytes
                                                                          : x.fastest_bytes - x.slowest_bytes);
    x.bytes_imbalance = x.bytes ? db / static_cast<double>(x.bytes) : 0;
    x.time_imbalance = x.time_s > 0 ? std::abs(x.slowest_s - x.fastest_s) / x.time_s : 0;
    if (x.bytes_imbalance > opt.imbalance_share || x.time_imbalance > opt.imbalance_share)
      out->imbalanced_files.push_back(std::move(x));
  }
  return reduced;
}

void SortImbalance(const SummaryOptions& opt, JobSummary* out) {
  auto& v = out->imbalanced_files;
  auto worst = [](const ImbalancedFile& x) { return std::max(x.bytes_imbalance, x.time_imbalance); };
  std::stable_sort(v.begin(), v.end(), [&](const ImbalancedFile& a, const ImbalancedFile& b) {
    if (worst(a) != worst(b)) return worst(a) > worst(b);
    if (a.id != b.id) return a.id < b.id;
    return a.direction < b.direction;
  });
  if (v.size() > opt.top_files) v.resize(opt.top_files);
}

// What follows the tally, for runs and for sums alike.
void FinishSummary(RunTally& tally, const std::vector<const TraceRun*>& mpi, std::span<const TraceRun> runs, int64_t width,
                   const SummaryOptions& opt, JobSummary* out, const std::unordered_set<std::string>& reduced = {}) {
  JobSummary& js = *out;
  tally.Finish();
  FileBalance(tally.files(), reduced, opt, &js);
  SortImbalance(opt, &js);
  js.mode_read = DecideMode(tally.files(), false, opt.mode, opt.top_files);
  js.mode_write = DecideMode(tally.files(), true, opt.mode, opt.top_files);
  TopFiles(tally.files(), opt.top_files, &js);
  BytesSeries(tally.read(), tally.write(), width, opt, &js);
  if (!mpi.empty()) SummarizeMpiio(mpi, runs, width, opt, &js);
  MetaDuringPhases(tally.read(), tally.write(), tally.meta_buckets(), width, &js);
}

}  // namespace

JobSummary Summarize(std::span<const TraceRun> runs, const SummaryOptions& opt) {
  JobSummary js;
  const int64_t width = opt.bucket_ns > 0 ? opt.bucket_ns : 1000000000;
  js.records = runs.size();
  RunTally tally(&js, width);
  std::vector<const TraceRun*> mpi;  // the logical layer, apart
  for (const TraceRun& r : runs) {
    if (r.layer == "mpiio") mpi.push_back(&r);
    else tally.Add(r);
  }
  if (runs.empty()) return js;
  const auto reduced = DarshanFacts(runs, opt, &js);
  FinishSummary(tally, mpi, runs, width, opt, &js, reduced);
  return js;
}

const std::vector<FieldId>& TraceRunFields() {
  static const std::vector<FieldId> k = {
      field::kHostName, field::kProcessPid, field::kProcessTid, field::kProcessRank, field::kIoOp, field::kIoLayer,
      field::kFilePath, field::kFileId, field::kIoFd, field::kIoOffset, field::kIoSize, field::kIoCount,
      field::kIoBytes, field::kIoErrno, field::kEventStartNs, field::kEventEndNs, field::kIoDurationNs,
      field::kMpiCollective, field::kMpiCommSize, field::kIoOpsSequential, field::kIoStride,
      field::kIoAlignment, field::kIoMemAlignment, field::kIoOpsNotAligned, field::kIoOpsMemNotAligned,
      field::kFileFastestRank, field::kFileSlowestRank, field::kFileFastestRankBytes, field::kFileSlowestRankBytes,
      field::kFileFastestRankTimeNs, field::kFileSlowestRankTimeNs};
  return k;
}

TraceRun TraceRunFromRow(const Row& row) {
  TraceRun r;
  auto str = [&](size_t k) { return row.Has(k) ? std::string(row.Str(k)) : std::string(); };
  auto num = [&](size_t k, int64_t dflt) { return row.Has(k) ? row.Int(k) : dflt; };
  r.host = str(0);
  r.pid = num(1, 0);
  r.tid = num(2, 0);
  if (row.Has(3)) r.rank = row.Int(3);
  r.op = str(4);
  r.layer = str(5);
  r.file_path = str(6);
  r.file_id = str(7);
  r.fd = num(8, -1);
  r.offset = num(9, -1);
  r.size = num(10, 0);
  r.count = num(11, 0);
  r.bytes = num(12, 0);
  r.errno_ = num(13, 0);
  r.start_ns = num(14, 0);
  r.end_ns = num(15, 0);
  r.duration_ns = num(16, 0);
  r.collective = num(17, 0) != 0;
  r.comm_size = num(18, 0);
  r.ops_sequential = num(19, -1);
  r.stride = num(20, 0);
  r.alignment = num(21, 0);
  r.mem_alignment = num(22, 0);
  r.ops_not_aligned = num(23, -1);
  r.ops_mem_not_aligned = num(24, -1);
  r.fastest_rank = num(25, -1);
  r.slowest_rank = num(26, -1);
  r.fastest_rank_bytes = num(27, 0);
  r.slowest_rank_bytes = num(28, 0);
  r.fastest_rank_time_ns = num(29, 0);
  r.slowest_rank_time_ns = num(30, 0);
  return r;
}

// The runs in the stores' time order (@timestamp, event.stream, event.seq),
// sorted here after an unordered scan: an engine then pages in index order
// instead of sorting the job's records on @timestamp for every page.
Result<std::vector<TraceRun>> ReadTraceRuns(Store& store, const std::string& job_id) {
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, job_id}};
  q.fields = TraceRunFields();
  const size_t k = q.fields.size();
  q.fields.insert(q.fields.end(), {field::kTimestamp, field::kEventStream, field::kEventSeq});
  q.ordered = false;
  struct Key {
    int64_t ts, stream, seq;
    uint32_t i;
  };
  std::vector<TraceRun> got;
  std::vector<Key> keys;
  Status st = store.Scan(q, [&](const Row& row) {
    keys.push_back({row.Int(k), row.Int(k + 1), row.Int(k + 2), static_cast<uint32_t>(got.size())});
    got.push_back(TraceRunFromRow(row));
    return true;
  });
  if (!st.ok()) return st;
  if (got.empty()) return Status::NotFound("job " + job_id + " has no iosonar.trace records in the store");
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.seq < b.seq;
  });
  std::vector<TraceRun> runs;
  runs.reserve(got.size());
  for (const Key& key : keys) runs.push_back(std::move(got[key.i]));
  return runs;
}

namespace {

int64_t KeyLong(const std::string& k, int64_t absent) {
  return k.empty() ? absent : std::strtoll(k.c_str(), nullptr, 10);
}

// Longest job (in bucket_ns buckets) summarized from sums; longer ones read
// their records (each split bucket is a range filter on an engine).
constexpr int64_t kMaxSumBuckets = 100000;

}  // namespace

Result<std::optional<JobSummary>> SummarizeJobFromSums(Store& store, const std::string& job_id, const SummaryOptions& opt) {
  const int64_t width = opt.bucket_ns > 0 ? opt.bucket_ns : 1000000000;
  const std::vector<FieldFilter> job = {{field::kJobId, job_id}};
  // The job's span, and its reads' and writes' (one pass on SQLite).
  auto spans = store.Spans(std::string(dataset::kTrace.name()), job, field::kEventStartNs, field::kEventEndNs, field::kIoOp,
                           {"read", "write"});
  if (!spans.ok()) return spans.status();
  const Store::SpanPair* span = &(*spans)[0];
  if (!span->first || !span->second) return Status::NotFound("job " + job_id + " has no iosonar.trace records in the store");
  const int64_t start = *span->first, last = std::max(*span->first, *span->second);
  const int64_t b0 = FloorDiv(start, width), b1 = FloorDiv(last, width);
  const int64_t nb = b1 - b0 + 1;
  if (nb > kMaxSumBuckets) return std::optional<JobSummary>();

  enum { kOps, kFiles, kStarts, kEnds, kQueries };
  std::vector<GroupQuery> qs(kQueries);
  for (GroupQuery& q : qs) {
    q.dataset = dataset::kTrace;
    q.filters = job;
    q.keys = {field::kIoLayer, field::kIoOp};
  }
  qs[kOps].keys = {field::kIoLayer, field::kIoOp, field::kIoSize, field::kIoErrno};
  qs[kOps].sums = {field::kIoCount, field::kIoBytes, field::kIoDurationNs};
  // Every data record must carry both (older tracers' do not): counted per group.
  qs[kOps].present = {field::kIoOpsSequential, field::kIoBytes, field::kIoOpsNotAligned, field::kIoOpsMemNotAligned,
                      field::kFileFastestRank};
  qs[kFiles].keys = {field::kIoLayer, field::kIoOp, field::kFileId, field::kFilePath, field::kHostName, field::kProcessPid,
                     field::kIoFd};
  qs[kFiles].sums = {field::kIoCount, field::kIoBytes, field::kIoOpsSequential};
  for (int w : {kStarts, kEnds}) {
    qs[w].split_field = w == kStarts ? field::kEventStartNs : field::kEventEndNs;
    qs[w].split_start = b0 * width;
    qs[w].split_width = width;
    qs[w].split_count = static_cast<size_t>(nb);
  }
  qs[kStarts].sums = {field::kIoCount, field::kIoBytes};
  qs[kEnds].keys = {};

  JobSummary js;
  RunTally tally(&js, width);
  tally.FeedSpan(start, last);
  bool ok = true;
  std::vector<Group> files;
  // Sums of bucket x records, by start and by end bucket: equal iff no record
  // ends in a later bucket than it starts (given end >= start).
  int64_t by_start = 0, by_end = 0;
  struct BucketSums {
    uint64_t records = 0, ops = 0, bytes = 0;
  };
  std::map<std::pair<int64_t, std::string>, BucketSums> buckets;  // (bucket, op)
  bool has_read = false, has_write = false;
  Status st = store.Groups(qs, [&](size_t which, const Group& g) {
    const std::string& layer = g.keys.empty() ? std::string() : g.keys[0];
    if (which != kEnds && layer == "mpiio") ok = false;
    const OpKind kind = g.keys.size() > 1 ? Classify(g.keys[1]) : OpKind::kOther;
    const bool data = kind == OpKind::kRead || kind == OpKind::kWrite;
    switch (which) {
      case kOps: {
        const int64_t size = KeyLong(g.keys[2], 0);
        const uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(g.sums[1], 0));
        if (data && size <= 0 && bytes > 0) ok = false;
        if (data && (g.present.size() != 5 || g.present[0] < g.count || g.present[1] < g.count)) ok = false;
        // Darshan's alignment counters and stragglers are read from the runs.
        if (g.present.size() == 5 && (g.present[2] || g.present[3] || g.present[4])) ok = false;
        js.records += g.count;
        tally.FeedBusy(g.sums[2]);
        tally.FeedOps(g.keys[1], size, KeyLong(g.keys[3], 0), g.count, static_cast<uint64_t>(std::max<int64_t>(g.sums[0], 0)),
                      bytes, g.sums[2]);
        if (kind == OpKind::kRead) has_read = true;
        if (kind == OpKind::kWrite) has_write = true;
        break;
      }
      case kFiles:
        files.push_back(g);
        break;
      case kStarts: {
        by_start += static_cast<int64_t>(g.split) * static_cast<int64_t>(g.count);
        BucketSums& b = buckets[{static_cast<int64_t>(g.split), g.keys[1]}];
        b.records += g.count;
        b.ops += static_cast<uint64_t>(std::max<int64_t>(g.sums[0], 0));
        b.bytes += static_cast<uint64_t>(std::max<int64_t>(g.sums[1], 0));
        break;
      }
      case kEnds:
        by_end += static_cast<int64_t>(g.split) * static_cast<int64_t>(g.count);
        break;
    }
    return true;
  });
  if (!st.ok()) return st;
  if (!ok || by_start != by_end) return std::optional<JobSummary>();
  for (const auto& [k, b] : buckets) tally.FeedBucket(b0 + k.first, Classify(k.second), b.records, b.ops, b.bytes);
  for (const Group& g : files) {
    TraceRun key;
    key.layer = g.keys[0];
    key.op = g.keys[1];
    key.file_id = g.keys[2];
    key.file_path = g.keys[3];
    key.host = g.keys[4];
    key.pid = KeyLong(g.keys[5], 0);
    key.fd = KeyLong(g.keys[6], -1);
    tally.FeedFile(key, static_cast<uint64_t>(std::max<int64_t>(g.sums[0], 0)),
                   static_cast<uint64_t>(std::max<int64_t>(g.sums[1], 0)),
                   static_cast<uint64_t>(std::max<int64_t>(g.sums[2], 0)));
  }
  for (bool write : {false, true}) {
    if (!(write ? has_write : has_read)) continue;
    const Store::SpanPair* ds = &(*spans)[write ? 2 : 1];
    if (!ds->first || !ds->second) return Status::Internal("job " + job_id + ": " + (write ? "write" : "read") +
                                                           " records counted but their span is missing");
    tally.FeedDirectionSpan(write, *ds->first, std::max(*ds->first, *ds->second));
  }
  FinishSummary(tally, {}, {}, width, opt, &js);
  js.job_id = job_id;
  return std::optional<JobSummary>(std::move(js));
}

Result<JobSummary> SummarizeJob(Store& store, const std::string& job_id, const SummaryOptions& opt) {
  auto fast = SummarizeJobFromSums(store, job_id, opt);
  if (!fast.ok()) return fast.status();
  JobSummary js;
  if (*fast) {
    js = std::move(**fast);
  } else {
    auto runs = ReadTraceRuns(store, job_id);
    if (!runs.ok()) return runs.status();
    js = Summarize(*runs, opt);
  }
  js.job_id = job_id;
  ScanQuery tq;
  tq.dataset = dataset::kTracer;
  tq.filters = {{field::kJobId, job_id}};
  tq.fields = {field::kEventStream, field::kTracerDropped};
  DroppedTally dropped;
  Status st = store.Scan(tq, [&](const Row& row) {
    if (row.Has(0) && row.Has(1)) dropped.Add(row.Int(0), row.Int(1));
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  js.tracer_dropped = dropped.Total();
  return js;
}

// ---- JSON -------------------------------------------------------------------

namespace {

void WriteDirection(JsonWriter& w, const DirectionStats& d) {
  w.BeginObject();
  KvAll(w, "bytes", d.bytes, "ops", d.ops, "runs", d.runs, "bw_avg", d.bw_avg, "bw_peak", d.bw_peak, "iops", d.iops,
        "rate_basis", d.rate_basis, "bw_span", d.bw_span, "iops_span", d.iops_span,
        "io_phases", static_cast<uint64_t>(d.io_phases), "io_phases_s", d.io_phases_s,
        "bytes_in_io_phases", d.bytes_in_io_phases, "ops_in_io_phases", d.ops_in_io_phases,
        "bw_io_phases", d.bw_io_phases, "iops_io_phases", d.iops_io_phases, "io_time_s", d.io_time_s,
        "bw_io_time", d.bw_io_time, "iops_io_time", d.iops_io_time, "bw_run", d.bw_run, "iops_run", d.iops_run,
        "sequential_share", d.sequential_share, "busy_s", d.busy_s, "span_s", d.span_s,
        "first_start_ns", d.first_start_ns, "last_end_ns", d.last_end_ns, "avg_request_bytes", d.avg_request_bytes);
  w.Key("size_hist");
  w.BeginObject();
  for (size_t i = 0; i < kSizeBins; ++i) w.Kv(kSizeBinLabels[i], d.size_hist[i]);
  w.EndObject();
  w.EndObject();
}

void WriteCounts(JsonWriter& w, const std::map<std::string, uint64_t>& m) {
  w.BeginObject();
  for (const auto& [k, v] : m) w.Kv(k, v);
  w.EndObject();
}

void WriteEvidence(JsonWriter& w, const ModeEvidence& e) {
  w.BeginObject();
  KvAll(w, "mode", e.mode, "processes", e.processes, "files", e.files, "kept_processes", e.kept_processes,
        "kept_files", e.kept_files, "private_files", e.private_files, "kept_share", e.kept_share,
        "explanation", e.explanation);
  w.Key("top_files");
  w.BeginArray();
  for (const auto& f : e.top_files) {
    KvObject(w, "id", f.id, "path", f.path, "bytes", f.bytes, "processes", f.processes);
  }
  w.EndArray();
  w.EndObject();
}

void WriteSeries(JsonWriter& w, const std::vector<double>& v) {
  w.BeginArray();
  for (double x : v) w.Double(x);
  w.EndArray();
}

// "io_mode" and "io_mode_evidence" (the physical modes, or MPI-IO's logical ones).
void WriteModes(JsonWriter& w, const ModeEvidence& read, const ModeEvidence& write) {
  w.Key("io_mode");
  KvObject(w, "read", read.mode, "write", write.mode);
  w.Key("io_mode_evidence");
  w.BeginObject();
  w.Key("read");
  WriteEvidence(w, read);
  w.Key("write");
  WriteEvidence(w, write);
  w.EndObject();
}

// "errors", "io_mode" and "io_mode_evidence".
void WriteErrorsAndModes(JsonWriter& w, const JobSummary& s) {
  w.Key("errors");
  w.BeginObject();
  w.Kv("total", s.errors);
  w.Key("by_op");
  WriteCounts(w, s.errors_by_op);
  w.Key("by_errno");
  w.BeginObject();
  for (const auto& [e, n] : s.errors_by_errno) w.Kv(std::to_string(e), n);
  w.EndObject();
  w.EndObject();
  WriteModes(w, s.mode_read, s.mode_write);
}

// "top_files" and "series".
void WriteTopFilesAndSeries(JsonWriter& w, const JobSummary& s) {
  w.Key("top_files");
  w.BeginArray();
  for (const auto& f : s.top_files) {
    KvObject(w, "id", f.id, "path", f.path, "read_bytes", f.read_bytes, "write_bytes", f.write_bytes,
             "processes", f.processes);
  }
  w.EndArray();
  w.Key("series");
  w.BeginObject();
  w.Kv("start_ns", s.series_start_ns);
  w.Kv("bucket_ns", s.series_bucket_ns);
  w.Key("read_bytes");
  WriteSeries(w, s.series_read);
  w.Key("write_bytes");
  WriteSeries(w, s.series_write);
  w.EndObject();
}

void WriteMpiioDirection(JsonWriter& w, const MpiioDirection& d) {
  KvObject(w, "bytes", d.bytes, "ops", d.ops, "collective_ops", d.collective_ops,
           "collective_share", d.collective_share, "ranks", d.ranks, "aggregators", d.aggregators, "files", d.files);
}

// "mpiio": the logical layer (records 0: none).
void WriteMpiio(JsonWriter& w, const MpiioView& v) {
  w.Key("mpiio");
  w.BeginObject();
  w.Kv("records", v.records);
  w.Kv("comm_size_max", v.comm_size_max);
  w.Key("read");
  WriteMpiioDirection(w, v.read);
  w.Key("write");
  WriteMpiioDirection(w, v.write);
  WriteModes(w, v.mode_read, v.mode_write);
  w.EndObject();
}

// "alignment", "imbalanced_files", "shared_small": Darshan's counters and the
// load balance (see AlignmentStats, ImbalancedFile).
void WriteBalance(JsonWriter& w, const JobSummary& s) {
  w.Key("alignment");
  KvObject(w, "data_ops", s.alignment.data_ops, "not_aligned", s.alignment.not_aligned,
           "mem_not_aligned", s.alignment.mem_not_aligned, "alignment", s.alignment.alignment,
           "mem_alignment", s.alignment.mem_alignment);
  w.Key("imbalanced_files");
  w.BeginArray();
  for (const ImbalancedFile& x : s.imbalanced_files) {
    KvObject(w, "id", x.id, "path", x.path, "layer", x.layer, "kind", x.kind, "bytes", x.bytes, "time_s", x.time_s,
             "fastest_rank", x.fastest_rank, "slowest_rank", x.slowest_rank, "fastest_bytes", x.fastest_bytes,
             "slowest_bytes", x.slowest_bytes, "fastest_s", x.fastest_s, "slowest_s", x.slowest_s,
             "bytes_imbalance", x.bytes_imbalance, "time_imbalance", x.time_imbalance, "direction", x.direction,
             "processes", x.processes, "min_bytes", x.min_bytes, "max_bytes", x.max_bytes);
  }
  w.EndArray();
  w.Key("shared_small");
  w.BeginObject();
  for (int d = 0; d < 2; ++d) {
    w.Key(d ? "write" : "read");
    w.BeginObject();
    w.Kv("ops", d ? s.shared_small_write_ops : s.shared_small_read_ops);
    w.Key("files");
    w.BeginArray();
    for (const FileBytes& f : d ? s.shared_small_write : s.shared_small_read) {
      KvObject(w, "id", f.id, "path", f.path, "bytes", f.bytes, "processes", f.processes);
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace

std::string SummaryToJson(const JobSummary& s, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  KvAll(w, "job_id", s.job_id, "start", s.records ? FormatIsoMillis(s.start_ns) : std::string(),
        "end", s.records ? FormatIsoMillis(s.end_ns) : std::string(), "start_ns", s.start_ns, "end_ns", s.end_ns,
        "runtime_s", s.runtime_s, "records", s.records, "busy_s", s.busy_s);
  w.Key("read");
  WriteDirection(w, s.read);
  w.Key("write");
  WriteDirection(w, s.write);
  w.Key("meta");
  w.BeginObject();
  KvAll(w, "ops", s.meta_ops, "ops_per_s", s.meta_ops_per_s,
        "ops_per_s_label", "metadata ops per second over the seconds with any I/O (io_phase_s)",
        "io_phase_s", s.io_phase_s, "io_phases", static_cast<uint64_t>(s.io_phases), "io_phases_s", s.io_phases_s,
        "ops_in_io_phases", s.meta_ops_in_io_phases, "ops_per_s_io_phases", s.meta_ops_per_s_io_phases);
  w.Kv("ops_per_s_io_phases_label",
       "metadata ops per second during the wavelet-detected I/O phases (Beacon §3.3): ops_in_io_phases / io_phases_s");
  w.Key("by_op");
  WriteCounts(w, s.meta_by_op);
  w.EndObject();
  w.Key("other");
  w.BeginObject();
  w.Kv("ops", s.other_ops);
  w.Key("by_op");
  WriteCounts(w, s.other_by_op);
  w.EndObject();
  KvAll(w, "processes_with_io", s.processes_with_io, "nodes_with_io", s.nodes_with_io, "processes", s.processes,
        "nodes", s.nodes, "files", s.files, "files_total", s.files_total);
  WriteErrorsAndModes(w, s);
  WriteTopFilesAndSeries(w, s);
  w.Key("tracer");
  w.BeginObject();
  w.Key("dropped");
  if (s.tracer_dropped < 0) w.Null();
  else w.Int(s.tracer_dropped);
  w.EndObject();
  WriteMpiio(w, s.mpiio);
  WriteBalance(w, s);
  w.EndObject();
  if (pretty) out.push_back('\n');
  return out;
}

namespace {

using JVal = rapidjson::Value;

// Readers: a missing member keeps the default (older cached summaries), a
// member of the wrong type is an error naming its path.
class Reader {
 public:
  std::string error;

  const JVal* Obj(const JVal& o, const char* key, const std::string& path) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) return nullptr;
    if (!it->value.IsObject()) return Fail(path + key, "an object");
    return &it->value;
  }
  const JVal* Arr(const JVal& o, const char* key, const std::string& path) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) return nullptr;
    if (!it->value.IsArray()) return Fail(path + key, "an array");
    return &it->value;
  }
  void U64(const JVal& o, const char* key, uint64_t* out, const std::string& path) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) return;
    if (!it->value.IsUint64()) Fail(path + key, "a non-negative integer");
    else *out = it->value.GetUint64();
  }
  void I64(const JVal& o, const char* key, int64_t* out, const std::string& path) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) return;
    if (it->value.IsNull()) return;
    if (!it->value.IsInt64()) Fail(path + key, "an integer");
    else *out = it->value.GetInt64();
  }
  void Dbl(const JVal& o, const char* key, double* out, const std::string& path) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) return;
    if (it->value.IsNull()) *out = NAN;  // the writer's spelling of non-finite values
    else if (!it->value.IsNumber()) Fail(path + key, "a number");
    else *out = it->value.GetDouble();
  }
  void Str(const JVal& o, const char* key, std::string* out, const std::string& path) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd()) return;
    if (!it->value.IsString()) Fail(path + key, "a string");
    else out->assign(it->value.GetString(), it->value.GetStringLength());
  }
  template <typename K>
  void Counts(const JVal* o, std::map<K, uint64_t>* out, const std::string& path) {
    if (!o) return;
    for (auto it = o->MemberBegin(); it != o->MemberEnd(); ++it) {
      std::string k(it->name.GetString(), it->name.GetStringLength());
      if (!it->value.IsUint64()) {
        Fail(path + k, "a non-negative integer");
        return;
      }
      if constexpr (std::is_same_v<K, std::string>) {
        (*out)[k] = it->value.GetUint64();
      } else {
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(k.c_str(), &end, 10);
        if (k.empty() || *end != '\0' || errno != 0) {
          Fail(path + k, "an errno number as key");
          return;
        }
        (*out)[static_cast<K>(v)] = it->value.GetUint64();
      }
    }
  }
  void Doubles(const JVal* a, std::vector<double>* out, const std::string& path) {
    if (!a) return;
    for (const auto& v : a->GetArray()) {
      if (v.IsNull()) out->push_back(NAN);
      else if (!v.IsNumber()) {
        Fail(path, "an array of numbers");
        return;
      } else {
        out->push_back(v.GetDouble());
      }
    }
  }
  const JVal* Fail(const std::string& path, const char* want) {
    if (error.empty()) error = path + ": expected " + want;
    return nullptr;
  }
};

void ReadDirection(Reader& rd, const JVal* o, DirectionStats* d, const std::string& path) {
  if (!o) return;
  rd.U64(*o, "bytes", &d->bytes, path);
  rd.U64(*o, "ops", &d->ops, path);
  rd.U64(*o, "runs", &d->runs, path);
  rd.Dbl(*o, "bw_avg", &d->bw_avg, path);
  rd.Dbl(*o, "bw_peak", &d->bw_peak, path);
  rd.Dbl(*o, "iops", &d->iops, path);
  if (o->HasMember("rate_basis")) {
    rd.Str(*o, "rate_basis", &d->rate_basis, path);
    rd.Dbl(*o, "bw_span", &d->bw_span, path);
    rd.Dbl(*o, "iops_span", &d->iops_span, path);
    uint64_t phases = 0;
    rd.U64(*o, "io_phases", &phases, path);
    d->io_phases = static_cast<size_t>(phases);
    rd.Dbl(*o, "io_phases_s", &d->io_phases_s, path);
    rd.Dbl(*o, "bytes_in_io_phases", &d->bytes_in_io_phases, path);
    rd.Dbl(*o, "ops_in_io_phases", &d->ops_in_io_phases, path);
    rd.Dbl(*o, "bw_io_phases", &d->bw_io_phases, path);
    rd.Dbl(*o, "iops_io_phases", &d->iops_io_phases, path);
  } else {  // cached before the rates over I/O phases: bw_avg and iops are over the span
    d->rate_basis = "span";
    d->bw_span = d->bw_avg;
    d->iops_span = d->iops;
  }
  rd.Dbl(*o, "io_time_s", &d->io_time_s, path);
  rd.Dbl(*o, "bw_io_time", &d->bw_io_time, path);
  rd.Dbl(*o, "iops_io_time", &d->iops_io_time, path);
  rd.Dbl(*o, "bw_run", &d->bw_run, path);
  rd.Dbl(*o, "iops_run", &d->iops_run, path);
  rd.Dbl(*o, "sequential_share", &d->sequential_share, path);
  rd.Dbl(*o, "busy_s", &d->busy_s, path);
  rd.Dbl(*o, "span_s", &d->span_s, path);
  rd.I64(*o, "first_start_ns", &d->first_start_ns, path);
  rd.I64(*o, "last_end_ns", &d->last_end_ns, path);
  rd.Dbl(*o, "avg_request_bytes", &d->avg_request_bytes, path);
  if (const JVal* h = rd.Obj(*o, "size_hist", path))
    for (size_t i = 0; i < kSizeBins; ++i) rd.U64(*h, kSizeBinLabels[i].data(), &d->size_hist[i], path + "size_hist.");
}

void ReadEvidence(Reader& rd, const JVal* o, ModeEvidence* e, const std::string& path) {
  if (!o) return;
  rd.Str(*o, "mode", &e->mode, path);
  rd.U64(*o, "processes", &e->processes, path);
  rd.U64(*o, "files", &e->files, path);
  rd.U64(*o, "kept_processes", &e->kept_processes, path);
  rd.U64(*o, "kept_files", &e->kept_files, path);
  rd.U64(*o, "private_files", &e->private_files, path);
  rd.Dbl(*o, "kept_share", &e->kept_share, path);
  rd.Str(*o, "explanation", &e->explanation, path);
  if (const JVal* a = rd.Arr(*o, "top_files", path)) {
    for (const auto& f : a->GetArray()) {
      if (!f.IsObject()) {
        rd.Fail(path + "top_files", "an array of objects");
        return;
      }
      FileBytes fb;
      rd.Str(f, "id", &fb.id, path + "top_files.");
      rd.Str(f, "path", &fb.path, path + "top_files.");
      rd.U64(f, "bytes", &fb.bytes, path + "top_files.");
      rd.U64(f, "processes", &fb.processes, path + "top_files.");
      e->top_files.push_back(std::move(fb));
    }
  }
}

void ReadMpiio(Reader& rd, const JVal* o, MpiioView* v) {
  if (!o) return;
  rd.U64(*o, "records", &v->records, "mpiio.");
  rd.I64(*o, "comm_size_max", &v->comm_size_max, "mpiio.");
  for (int d = 0; d < 2; ++d) {
    const std::string path = d ? "mpiio.write." : "mpiio.read.";
    MpiioDirection& md = d ? v->write : v->read;
    const JVal* m = rd.Obj(*o, d ? "write" : "read", "mpiio.");
    if (!m) continue;
    rd.U64(*m, "bytes", &md.bytes, path);
    rd.U64(*m, "ops", &md.ops, path);
    rd.U64(*m, "collective_ops", &md.collective_ops, path);
    rd.Dbl(*m, "collective_share", &md.collective_share, path);
    rd.U64(*m, "ranks", &md.ranks, path);
    rd.U64(*m, "aggregators", &md.aggregators, path);
    rd.U64(*m, "files", &md.files, path);
  }
  if (const JVal* m = rd.Obj(*o, "io_mode", "mpiio.")) {
    rd.Str(*m, "read", &v->mode_read.mode, "mpiio.io_mode.");
    rd.Str(*m, "write", &v->mode_write.mode, "mpiio.io_mode.");
  }
  if (const JVal* m = rd.Obj(*o, "io_mode_evidence", "mpiio.")) {
    ReadEvidence(rd, rd.Obj(*m, "read", "mpiio.io_mode_evidence."), &v->mode_read, "mpiio.io_mode_evidence.read.");
    ReadEvidence(rd, rd.Obj(*m, "write", "mpiio.io_mode_evidence."), &v->mode_write, "mpiio.io_mode_evidence.write.");
  }
}

}  // namespace

Result<JobSummary> SummaryFromJson(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(json.data(), json.size());
  if (doc.HasParseError())
    return Status::Invalid(std::string("job summary JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) +
                           " at offset " + std::to_string(doc.GetErrorOffset()));
  if (!doc.IsObject()) return Status::Invalid("job summary JSON: not an object");
  Reader rd;
  JobSummary s;
  if (!doc.HasMember("job_id")) return Status::Invalid("job summary JSON: no job_id");
  rd.Str(doc, "job_id", &s.job_id, "");
  rd.I64(doc, "start_ns", &s.start_ns, "");
  rd.I64(doc, "end_ns", &s.end_ns, "");
  rd.Dbl(doc, "runtime_s", &s.runtime_s, "");
  rd.U64(doc, "records", &s.records, "");
  rd.Dbl(doc, "busy_s", &s.busy_s, "");
  ReadDirection(rd, rd.Obj(doc, "read", ""), &s.read, "read.");
  ReadDirection(rd, rd.Obj(doc, "write", ""), &s.write, "write.");
  if (const JVal* m = rd.Obj(doc, "meta", "")) {
    rd.U64(*m, "ops", &s.meta_ops, "meta.");
    rd.Dbl(*m, "ops_per_s", &s.meta_ops_per_s, "meta.");
    rd.Dbl(*m, "io_phase_s", &s.io_phase_s, "meta.");
    uint64_t phases = 0;
    rd.U64(*m, "io_phases", &phases, "meta.");
    s.io_phases = static_cast<size_t>(phases);
    rd.Dbl(*m, "io_phases_s", &s.io_phases_s, "meta.");
    rd.Dbl(*m, "ops_in_io_phases", &s.meta_ops_in_io_phases, "meta.");
    rd.Dbl(*m, "ops_per_s_io_phases", &s.meta_ops_per_s_io_phases, "meta.");
    rd.Counts(rd.Obj(*m, "by_op", "meta."), &s.meta_by_op, "meta.by_op.");
  }
  if (const JVal* m = rd.Obj(doc, "other", "")) {
    rd.U64(*m, "ops", &s.other_ops, "other.");
    rd.Counts(rd.Obj(*m, "by_op", "other."), &s.other_by_op, "other.by_op.");
  }
  rd.U64(doc, "processes_with_io", &s.processes_with_io, "");
  rd.U64(doc, "nodes_with_io", &s.nodes_with_io, "");
  rd.U64(doc, "processes", &s.processes, "");
  rd.U64(doc, "nodes", &s.nodes, "");
  rd.U64(doc, "files", &s.files, "");
  rd.U64(doc, "files_total", &s.files_total, "");
  if (const JVal* e = rd.Obj(doc, "errors", "")) {
    rd.U64(*e, "total", &s.errors, "errors.");
    rd.Counts(rd.Obj(*e, "by_op", "errors."), &s.errors_by_op, "errors.by_op.");
    rd.Counts(rd.Obj(*e, "by_errno", "errors."), &s.errors_by_errno, "errors.by_errno.");
  }
  if (const JVal* m = rd.Obj(doc, "io_mode", "")) {
    rd.Str(*m, "read", &s.mode_read.mode, "io_mode.");
    rd.Str(*m, "write", &s.mode_write.mode, "io_mode.");
  }
  if (const JVal* m = rd.Obj(doc, "io_mode_evidence", "")) {
    ReadEvidence(rd, rd.Obj(*m, "read", "io_mode_evidence."), &s.mode_read, "io_mode_evidence.read.");
    ReadEvidence(rd, rd.Obj(*m, "write", "io_mode_evidence."), &s.mode_write, "io_mode_evidence.write.");
  }
  if (const JVal* a = rd.Arr(doc, "top_files", "")) {
    for (const auto& f : a->GetArray()) {
      if (!f.IsObject()) {
        rd.Fail("top_files", "an array of objects");
        break;
      }
      TopFile t;
      rd.Str(f, "id", &t.id, "top_files.");
      rd.Str(f, "path", &t.path, "top_files.");
      rd.U64(f, "read_bytes", &t.read_bytes, "top_files.");
      rd.U64(f, "write_bytes", &t.write_bytes, "top_files.");
      rd.U64(f, "processes", &t.processes, "top_files.");
      s.top_files.push_back(std::move(t));
    }
  }
  if (const JVal* m = rd.Obj(doc, "series", "")) {
    rd.I64(*m, "start_ns", &s.series_start_ns, "series.");
    rd.I64(*m, "bucket_ns", &s.series_bucket_ns, "series.");
    rd.Doubles(rd.Arr(*m, "read_bytes", "series."), &s.series_read, "series.read_bytes");
    rd.Doubles(rd.Arr(*m, "write_bytes", "series."), &s.series_write, "series.write_bytes");
  }
  if (const JVal* t = rd.Obj(doc, "tracer", "")) rd.I64(*t, "dropped", &s.tracer_dropped, "tracer.");
  ReadMpiio(rd, rd.Obj(doc, "mpiio", ""), &s.mpiio);
  if (const JVal* a = rd.Obj(doc, "alignment", "")) {
    rd.U64(*a, "data_ops", &s.alignment.data_ops, "alignment.");
    rd.U64(*a, "not_aligned", &s.alignment.not_aligned, "alignment.");
    rd.U64(*a, "mem_not_aligned", &s.alignment.mem_not_aligned, "alignment.");
    rd.I64(*a, "alignment", &s.alignment.alignment, "alignment.");
    rd.I64(*a, "mem_alignment", &s.alignment.mem_alignment, "alignment.");
  }
  if (const JVal* a = rd.Arr(doc, "imbalanced_files", "")) {
    for (const auto& f : a->GetArray()) {
      if (!f.IsObject()) {
        rd.Fail("imbalanced_files", "an array of objects");
        break;
      }
      ImbalancedFile x;
      const std::string p = "imbalanced_files.";
      rd.Str(f, "id", &x.id, p);
      rd.Str(f, "path", &x.path, p);
      rd.Str(f, "layer", &x.layer, p);
      rd.Str(f, "kind", &x.kind, p);
      rd.U64(f, "bytes", &x.bytes, p);
      rd.Dbl(f, "time_s", &x.time_s, p);
      rd.I64(f, "fastest_rank", &x.fastest_rank, p);
      rd.I64(f, "slowest_rank", &x.slowest_rank, p);
      rd.U64(f, "fastest_bytes", &x.fastest_bytes, p);
      rd.U64(f, "slowest_bytes", &x.slowest_bytes, p);
      rd.Dbl(f, "fastest_s", &x.fastest_s, p);
      rd.Dbl(f, "slowest_s", &x.slowest_s, p);
      rd.Dbl(f, "bytes_imbalance", &x.bytes_imbalance, p);
      rd.Dbl(f, "time_imbalance", &x.time_imbalance, p);
      rd.Str(f, "direction", &x.direction, p);
      rd.U64(f, "processes", &x.processes, p);
      rd.U64(f, "min_bytes", &x.min_bytes, p);
      rd.U64(f, "max_bytes", &x.max_bytes, p);
      s.imbalanced_files.push_back(std::move(x));
    }
  }
  if (const JVal* m = rd.Obj(doc, "shared_small", "")) {
    for (int d = 0; d < 2; ++d) {
      const JVal* o = rd.Obj(*m, d ? "write" : "read", "shared_small.");
      if (!o) continue;
      const std::string p = d ? "shared_small.write." : "shared_small.read.";
      rd.U64(*o, "ops", d ? &s.shared_small_write_ops : &s.shared_small_read_ops, p);
      if (const JVal* a = rd.Arr(*o, "files", p))
        for (const auto& f : a->GetArray()) {
          if (!f.IsObject()) {
            rd.Fail(p + "files", "an array of objects");
            break;
          }
          FileBytes fb;
          rd.Str(f, "id", &fb.id, p + "files.");
          rd.Str(f, "path", &fb.path, p + "files.");
          rd.U64(f, "bytes", &fb.bytes, p + "files.");
          rd.U64(f, "processes", &fb.processes, p + "files.");
          (d ? s.shared_small_write : s.shared_small_read).push_back(std::move(fb));
        }
    }
  }
  if (!rd.error.empty()) return Status::Invalid("job summary JSON: " + rd.error);
  return s;
}

// ---- the report for people ---------------------------------------------------

namespace {

// Thresholds of the hints; each is a rule of thumb, stated in the hint's words.
constexpr double kSmallRequestBytes = 64 * 1024;
constexpr uint64_t kSmallRequestMinOps = 1000;  // a handful of small requests costs nothing
constexpr uint64_t kMetaHeavyMinOps = 1000;
constexpr double kMetaHeavyRate = 1000;  // ops/s over the seconds with any I/O (meta_ops_per_s)
constexpr uint64_t kManyErrors = 100;
constexpr double kManyErrorsShare = 0.01;

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string ThreeDigits(double v) {
  if (v < 10) return Fmt("%.2f", v);
  if (v < 100) return Fmt("%.1f", v);
  return Fmt("%.0f", v);
}

std::string HumanBytes(double b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (!std::isfinite(b)) return "-";
  if (b < 1024) return Fmt("%.0f", b) + " B";
  size_t u = 0;
  while (b >= 1024 && u + 1 < std::size(kUnits)) {
    b /= 1024;
    ++u;
  }
  return ThreeDigits(b) + " " + kUnits[u];
}

std::string HumanRate(double bps) { return HumanBytes(bps) + "/s"; }

std::string HumanCount(double v) {
  if (!std::isfinite(v)) return "-";
  if (v >= 1e6) return ThreeDigits(v / 1e6) + "M";
  if (v >= 1e4) return ThreeDigits(v / 1e3) + "k";
  if (v == std::floor(v)) return Fmt("%.0f", v);
  return ThreeDigits(v);
}

std::string HumanSeconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s == 0) return "0 s";
  if (s < 1e-3) return Fmt("%.0f us", s * 1e6);
  if (s < 1) return ThreeDigits(s * 1e3) + " ms";
  if (s < 60) return ThreeDigits(s) + " s";
  char b[64];
  const auto whole = static_cast<long long>(s);
  if (s < 3600) std::snprintf(b, sizeof b, "%lldm %02llds", whole / 60, whole % 60);
  else std::snprintf(b, sizeof b, "%lldh %02lldm", whole / 3600, (whole % 3600) / 60);
  return b;
}

std::string ErrnoName(int64_t e) {
  switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case EACCES: return "EACCES";
    case EEXIST: return "EEXIST";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case ESPIPE: return "ESPIPE";
    case EROFS: return "EROFS";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case EDQUOT: return "EDQUOT";
    case ESTALE: return "ESTALE";
    case ETIMEDOUT: return "ETIMEDOUT";
    default: return "errno " + std::to_string(e);
  }
}

template <typename M, typename KeyFn>
std::string CountList(const M& m, KeyFn key) {
  std::vector<std::pair<std::string, uint64_t>> v;
  for (const auto& [k, n] : m) v.emplace_back(key(k), n);
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [k, n] : v) {
    if (!out.empty()) out += ", ";
    out += k + " " + HumanCount(static_cast<double>(n));
  }
  return out;
}

void Line(std::string* out, const std::string& label, const std::string& r, const std::string& w) {
  char b[256];
  std::snprintf(b, sizeof b, "  %-26s %14s %14s\n", label.c_str(), r.c_str(), w.c_str());
  out->append(b);
}

std::string FileName(const std::string& path, const std::string& id) { return path.empty() ? id : path; }

// Joins words that must stay on one line (a command to copy).
constexpr char kGlue = '\x01';

std::string Unbroken(std::string s) {
  std::replace(s.begin(), s.end(), ' ', kGlue);
  return s;
}

// "  - " then the text wrapped at 80 columns, continuation lines indented.
std::string Bullet(const std::string& text) {
  constexpr size_t kWidth = 80;
  std::string out = "  -";
  size_t col = 3;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (col > 4 && col + 1 + word.size() > kWidth) {
      out += "\n   ";
      col = 3;
    }
    out += ' ';
    out += word;
    col += 1 + word.size();
    i = j + 1;
  }
  std::replace(out.begin(), out.end(), kGlue, ' ');
  return out + "\n";
}

}  // namespace

namespace {

// The table's parts, each appended to *o.
void TableSpan(const JobSummary& s, std::string* out) {
  std::string& o = *out;
  char b[512];
  std::snprintf(b, sizeof b, "  %-18s %s  (%s to %s)\n", "traced span", HumanSeconds(s.runtime_s).c_str(),
                FormatIsoMillis(s.start_ns).c_str(), FormatIsoMillis(s.end_ns).c_str());
  o += b;
  std::snprintf(b, sizeof b, "  %-18s %s with reads or writes on %s (of %s on %s traced)\n", "processes",
                std::to_string(s.processes_with_io).c_str(), Plural(s.nodes_with_io, "node", "nodes").c_str(),
                std::to_string(s.processes).c_str(), Plural(s.nodes, "node", "nodes").c_str());
  o += b;
  std::snprintf(b, sizeof b, "  %-18s %s read or written, %s touched in all\n", "files",
                std::to_string(s.files).c_str(), std::to_string(s.files_total).c_str());
  o += b;
  std::snprintf(b, sizeof b, "  %-18s %s summed over all threads (%s trace records)\n", "time in I/O calls",
                HumanSeconds(s.busy_s).c_str(), std::to_string(s.records).c_str());
  o += b;
  o += "\n";

}

void TableDirections(const JobSummary& s, std::string* out) {
  std::string& o = *out;
  const DirectionStats& rd = s.read;
  const DirectionStats& wr = s.write;
  Line(&o, "", "read", "write");
  Line(&o, "data", HumanBytes(static_cast<double>(rd.bytes)), HumanBytes(static_cast<double>(wr.bytes)));
  Line(&o, "ops", HumanCount(static_cast<double>(rd.ops)), HumanCount(static_cast<double>(wr.ops)));
  Line(&o, "avg request", HumanBytes(rd.avg_request_bytes), HumanBytes(wr.avg_request_bytes));
  Line(&o, "avg bandwidth (I/O phases)", HumanRate(rd.bw_io_phases), HumanRate(wr.bw_io_phases));
  Line(&o, "avg bandwidth (span)", HumanRate(rd.bw_span), HumanRate(wr.bw_span));
  Line(&o, "avg bandwidth (I/O time)", HumanRate(rd.bw_io_time), HumanRate(wr.bw_io_time));
  Line(&o, "avg bandwidth (whole run)", HumanRate(rd.bw_run), HumanRate(wr.bw_run));
  Line(&o, "peak bandwidth", HumanRate(rd.bw_peak), HumanRate(wr.bw_peak));
  Line(&o, "IOPS (I/O phases)", HumanCount(rd.iops_io_phases), HumanCount(wr.iops_io_phases));
  Line(&o, "IOPS (span)", HumanCount(rd.iops_span), HumanCount(wr.iops_span));
  Line(&o, "I/O phases", std::to_string(rd.io_phases) + " (" + HumanSeconds(rd.io_phases_s) + ")",
       std::to_string(wr.io_phases) + " (" + HumanSeconds(wr.io_phases_s) + ")");
  Line(&o, "IOPS (I/O time)", HumanCount(rd.iops_io_time), HumanCount(wr.iops_io_time));
  Line(&o, "IOPS (whole run)", HumanCount(rd.iops_run), HumanCount(wr.iops_run));
  Line(&o, "active span", HumanSeconds(rd.span_s), HumanSeconds(wr.span_s));
  Line(&o, "I/O time (1 s buckets)", HumanSeconds(rd.io_time_s), HumanSeconds(wr.io_time_s));
  Line(&o, "time in calls", HumanSeconds(rd.busy_s), HumanSeconds(wr.busy_s));
  Line(&o, "I/O mode", s.mode_read.mode, s.mode_write.mode);
  o += "\n";

  o += "I/O mode (who reads and writes which files)\n";
  o += "  read   " + s.mode_read.mode + ": " + s.mode_read.explanation + "\n";
  o += "  write  " + s.mode_write.mode + ": " + s.mode_write.explanation + "\n\n";

}

// The MPI-IO layer beside the physical modes above.
void TableMpiio(const JobSummary& s, std::string* out) {
  const MpiioView& v = s.mpiio;
  if (!v.records) return;
  std::string& o = *out;
  o += "MPI-IO (logical: the calls the program made; the modes above are the POSIX calls under them)\n";
  for (int d = 0; d < 2; ++d) {
    const MpiioDirection& md = d ? v.write : v.read;
    const ModeEvidence& e = d ? v.mode_write : v.mode_read;
    const char* name = d ? "write" : "read ";
    if (md.bytes == 0) {
      o += std::string("  ") + name + "  none\n";
      continue;
    }
    o += std::string("  ") + name + "  " + e.mode + ": " + e.explanation + "\n";
    std::string how = md.collective_share >= 0.995 ? "collective calls"
                      : md.collective_share <= 0.005 ? "independent calls"
                                                     : Percent(md.collective_share) + " of the bytes by collective calls";
    o += "         " + HumanBytes(static_cast<double>(md.bytes)) + " in " + HumanCount(static_cast<double>(md.ops)) +
         " calls, " + how;
    if (v.comm_size_max > 0) o += ", communicator of " + std::to_string(v.comm_size_max);
    o += "\n         physical: ";
    const char* verb = d ? "wrote" : "read";
    const std::string it = md.files == 1 ? "it" : "them";
    if (md.aggregators == 0) o += "no POSIX " + std::string(d ? "writes" : "reads") + " traced on " + it;
    else if (md.aggregators < md.ranks)
      o += Plural(md.aggregators, "aggregator", "aggregators") + " " + verb + " " + it + " (" +
           Plural(md.ranks, "rank's", "ranks'") + " data through " + (md.aggregators == 1 ? "one process" : "fewer processes") + ")";
    else o += Plural(md.aggregators, "process", "processes") + " " + verb + " " + it + " (each rank its own POSIX I/O)";
    o += "\n";
  }
  o += "\n";
}

void TableOtherOps(const JobSummary& s, std::string* out) {
  std::string& o = *out;
  char b[512];
  std::snprintf(b, sizeof b, "%-20s %s", "metadata ops", HumanCount(static_cast<double>(s.meta_ops)).c_str());
  o += b;
  if (s.meta_ops) {
    o += " (" + CountList(s.meta_by_op, [](const std::string& k) { return k; }) + ")\n";
    std::snprintf(b, sizeof b, "%-20s %s/s during %zu I/O phase%s (%s, wavelet-detected; Beacon)", "  metadata rate",
                  HumanCount(s.meta_ops_per_s_io_phases).c_str(), s.io_phases, s.io_phases == 1 ? "" : "s",
                  HumanSeconds(s.io_phases_s).c_str());
    o += b;
    o += "; " + HumanCount(s.meta_ops_per_s) + "/s over " + HumanSeconds(s.io_phase_s) + " with any I/O activity";
  }
  o += "\n";
  std::snprintf(b, sizeof b, "%-20s %s", "other ops", HumanCount(static_cast<double>(s.other_ops)).c_str());
  o += b;
  if (s.other_ops) o += " (" + CountList(s.other_by_op, [](const std::string& k) { return k; }) + ")";
  o += "\n";
  std::snprintf(b, sizeof b, "%-20s %s", "failed ops", HumanCount(static_cast<double>(s.errors)).c_str());
  o += b;
  if (s.errors) {
    o += " (" + CountList(s.errors_by_op, [](const std::string& k) { return k; }) + "; " +
         CountList(s.errors_by_errno, [](int64_t e) { return ErrnoName(e); }) + ")";
  }
  o += "\n\n";

}

void TableRequestSizes(const JobSummary& s, std::string* out) {
  std::string& o = *out;
  const DirectionStats& rd = s.read;
  const DirectionStats& wr = s.write;
  char b[512];
  if (rd.ops || wr.ops) {
    o += "request sizes (ops)\n";
    std::snprintf(b, sizeof b, "  %-6s", "");
    o += b;
    for (auto label : kSizeBinLabels) {
      std::snprintf(b, sizeof b, " %8s", std::string(label).c_str());
      o += b;
    }
    o += "\n";
    for (int dir = 0; dir < 2; ++dir) {
      const DirectionStats& d = dir == 0 ? rd : wr;
      std::snprintf(b, sizeof b, "  %-6s", dir == 0 ? "read" : "write");
      o += b;
      for (uint64_t n : d.size_hist) {
        std::snprintf(b, sizeof b, " %8s", HumanCount(static_cast<double>(n)).c_str());
        o += b;
      }
      o += "\n";
    }
    o += "\n";
  }

}

void TableTopFiles(const JobSummary& s, std::string* out) {
  std::string& o = *out;
  char b[512];
  if (!s.top_files.empty()) {
    o += "top files by bytes\n";
    std::snprintf(b, sizeof b, "  %12s %12s %6s  %s\n", "read", "written", "procs", "file");
    o += b;
    for (const auto& f : s.top_files) {
      std::snprintf(b, sizeof b, "  %12s %12s %6s  ", HumanBytes(static_cast<double>(f.read_bytes)).c_str(),
                    HumanBytes(static_cast<double>(f.write_bytes)).c_str(), std::to_string(f.processes).c_str());
      o += b;
      o += FileName(f.path, f.id) + "\n";
    }
    o += "\n";
  }

}

// Plain-language hints: what in the numbers above calls for a change.
std::vector<std::string> Hints(const JobSummary& s) {
  const DirectionStats& rd = s.read;
  const DirectionStats& wr = s.write;
  std::vector<std::string> hints;
  if (s.tracer_dropped > 0)
    hints.push_back("The tracer lost " + std::to_string(s.tracer_dropped) +
                    " records (buffers and spool full): every number above undercounts.");
  for (int dir = 0; dir < 2; ++dir) {
    const DirectionStats& d = dir == 0 ? rd : wr;
    if (d.ops >= kSmallRequestMinOps && d.avg_request_bytes < kSmallRequestBytes) {
      hints.push_back(std::string(dir == 0 ? "Reads" : "Writes") + " are small: " +
                      HumanBytes(d.avg_request_bytes) + " per request on average over " +
                      HumanCount(static_cast<double>(d.ops)) +
                      " requests (under 64 KiB). Each request pays a system call and often a file-system RPC; "
                      "use requests of 1 MiB or more, buffer in memory, or let collective I/O (MPI-IO, HDF5) "
                      "aggregate them.");
    }
  }
  // Collective MPI-IO (MpiioView): the physical mode is the aggregators',
  // not the program's; the advice is about the collective, not about the
  // POSIX pattern its aggregators chose.
  bool collective[2] = {false, false};
  for (int dir = 0; dir < 2; ++dir) {
    const MpiioDirection& md = dir ? s.mpiio.write : s.mpiio.read;
    const ModeEvidence& logical = dir ? s.mpiio.mode_write : s.mpiio.mode_read;
    if (!s.mpiio.records || md.bytes == 0 || md.ranks < 2) continue;
    const char* verb = dir ? "write" : "read";
    const std::string ranks = std::to_string(md.ranks) + " ranks " + verb + " ";
    const std::string files = logical.mode == "N-1" ? "one shared file" : Plural(md.files, "file", "files");
    if (md.collective_share >= 0.5) {
      collective[dir] = true;
      std::string h = ranks + files + " with collective MPI-IO (" + logical.mode + " as the program sees it); " +
                      Plural(md.aggregators, "aggregator", "aggregators") + " did the POSIX " + verb + "s (" +
                      (dir ? s.mode_write.mode : s.mode_read.mode) + " on the file system). ";
      if (md.aggregators == 1)
        h += "One aggregator bounds the bandwidth to one client's: if this I/O is slow, raise the number of "
             "aggregators (ROMIO's cb_nodes hint, OMPIO's " + Unbroken("--mca io_ompio_num_aggregators") +
             ") and stripe the file over as many OSTs.";
      else
        h += "Stripe the file over at least " + std::to_string(md.aggregators) + " OSTs (" +
             Unbroken("lfs setstripe -c " + std::to_string(md.aggregators)) +
             ") and align the collective buffer (cb_buffer_size) to the stripe size, so each aggregator writes "
             "whole stripes of its own.";
      hints.push_back(h);
    } else if (logical.mode == "N-1") {
      hints.push_back(ranks + "one shared file with independent MPI-IO calls: each rank's requests reach the file "
                      "system as they are, contending for the file's locks; the collective calls (" +
                      std::string(dir ? "MPI_File_write_at_all" : "MPI_File_read_at_all") +
                      ") let a few aggregators turn them into large contiguous requests.");
    }
  }
  if (s.mode_write.mode == "N-1" && !collective[1]) {
    hints.push_back(std::to_string(s.mode_write.kept_processes) +
                    " processes write one shared file (N-1). Shared-file writes contend for locks and stripes: on "
                    "Lustre stripe the file over many OSTs (" +
                    Unbroken("lfs setstripe -c -1") +
                    " on its directory before creating it), align each process's blocks to the stripe size, or use collective MPI-IO so a few "
                    "aggregators write.");
  }
  for (int dir = 0; dir < 2; ++dir) {
    const ModeEvidence& e = dir == 0 ? s.mode_read : s.mode_write;
    if (e.mode == "1-1" && s.processes > 1 && !collective[dir]) {
      hints.push_back("One process does all the " + std::string(dir == 0 ? "reading" : "writing") + " of " +
                      std::to_string(s.processes) +
                      " traced processes (1-1): that I/O is serial and cannot use more than one client's "
                      "bandwidth; spread it over processes (N-N or collective I/O) if it takes long.");
    }
  }
  const uint64_t data_ops = rd.ops + wr.ops;
  if (s.meta_ops >= kMetaHeavyMinOps && (s.meta_ops > data_ops || s.meta_ops_per_s >= kMetaHeavyRate)) {
    hints.push_back("Metadata-heavy: " + HumanCount(static_cast<double>(s.meta_ops)) + " metadata ops against " +
                    HumanCount(static_cast<double>(data_ops)) + " reads and writes, " + HumanCount(s.meta_ops_per_s) +
                    "/s while doing I/O. Every open, stat or unlink is a round trip to the metadata server that all "
                    "jobs share: open files once and keep them open, avoid stat/access in loops, and pack many "
                    "small files into one (HDF5, tar, a database).");
  }
  const uint64_t all_ops = data_ops + s.meta_ops + s.other_ops;
  if (s.errors >= kManyErrors ||
      (s.errors > 0 && static_cast<double>(s.errors) >= kManyErrorsShare * static_cast<double>(all_ops))) {
    hints.push_back(HumanCount(static_cast<double>(s.errors)) + " ops failed (" +
                    CountList(s.errors_by_errno, [](int64_t e) { return ErrnoName(e); }) +
                    "). Opens and stats of missing files are often path searches (Python imports, library "
                    "lookups) that still cost metadata round trips; failed reads or writes may mean lost data.");
  }
  if (s.runtime_s >= 1 && s.processes > 0) {
    const double share = s.busy_s / (s.runtime_s * static_cast<double>(s.processes));
    if (share < 0.05) {
      hints.push_back("The traced processes spent " + Percent(share) + " of the traced span inside I/O calls: "
                      "I/O is unlikely to be what made this job slow.");
    } else if (share > 0.5) {
      hints.push_back("The traced processes spent " + Percent(std::min(share, 1.0)) +
                      " of the traced span inside I/O calls: the job is I/O-bound.");
    }
  }
  return hints;
}

}  // namespace

std::string SummaryToTable(const JobSummary& s) {
  std::string o;
  o += "I/O summary of job " + (s.job_id.empty() ? std::string("(no id)") : s.job_id) + "\n\n";
  if (s.records == 0) {
    o += "  no trace records\n";
    return o;
  }
  TableSpan(s, &o);
  TableDirections(s, &o);
  TableMpiio(s, &o);
  TableOtherOps(s, &o);
  TableRequestSizes(s, &o);
  TableTopFiles(s, &o);
  std::vector<std::string> hints = Hints(s);
  o += "hints\n";
  if (hints.empty()) hints.push_back("no obvious I/O problems found");
  for (const auto& h : hints) o += Bullet(h);
  return o;
}

}  // namespace iosonar::analysis
