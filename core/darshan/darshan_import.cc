// Darshan log -> iosonar records (darshan_import.h).
#include "core/darshan/darshan_import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "core/base/hash.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"

namespace iosonar::darshan {
namespace {

// Darshan's request-size bins (inclusive upper bounds; the last is open).
constexpr int64_t kBinLo[10] = {0, 101, 1025, 10241, 102401, 1048577, 4194305, 10485761, 104857601, 1073741825};
constexpr int64_t kBinHi[10] = {100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824,
                                INT64_MAX};

uint64_t Pos(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

// total split over weights, largest remainder: the parts sum to total.
std::vector<uint64_t> Split(uint64_t total, const std::vector<double>& w) {
  std::vector<uint64_t> out(w.size(), 0);
  if (w.empty()) return out;
  double sum = 0;
  for (double x : w) sum += std::max(x, 0.0);
  if (sum <= 0) {
    for (size_t i = 0; i < w.size(); ++i) out[i] = total / w.size() + (i < total % w.size() ? 1 : 0);
    return out;
  }
  uint64_t given = 0;
  std::vector<std::pair<double, size_t>> rem;
  rem.reserve(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const double exact = static_cast<double>(total) * std::max(w[i], 0.0) / sum;
    out[i] = std::min<uint64_t>(static_cast<uint64_t>(std::floor(exact)), total - given);
    given += out[i];
    rem.push_back({exact - static_cast<double>(out[i]), i});
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < total; k = (k + 1) % rem.size()) {
    ++out[rem[k].second];
    ++given;
  }
  return out;
}

// One group of ops of one file and rank, before a shared record is spread.
struct Part {
  const char* op;
  const char* layer;
  int64_t size = -1;  // requested bytes per op (-1: none)
  uint64_t count = 0, bytes = 0;
  int64_t seq = -1;   // consecutive ops (-1: absent)
  int64_t start_ns = 0, end_ns = 0;
  uint64_t dur_ns = 0;
  int collective = -1;  // -1 absent
  int64_t comm_size = 0;
  bool data = false;
  // posix data parts of a Darshan counter record: alignment (0: absent) and
  // the ops not aligned to it (-1: absent).
  int64_t alignment = 0, mem_alignment = 0;
  int64_t not_aligned = -1, mem_not_aligned = -1;
};

// A shared file's stragglers (Darshan's reduction over all ranks), carried
// once per file on its first record.
struct Stragglers {
  bool set = false;
  int64_t fastest = -1, slowest = -1;
  uint64_t fastest_bytes = 0, slowest_bytes = 0;
  int64_t fastest_ns = 0, slowest_ns = 0;
  double var_time = 0, var_bytes = 0;
};

// Where a module keeps its ranks' balance: the fastest and slowest rank (and
// their bytes and times), the variances, and the bytes read and written.
// POSIX and STDIO have them all; MPI-IO the ranks and bytes (time < 0: none).
struct RankCounters {
  int fastest, fastest_bytes, slowest, slowest_bytes, bytes_read, bytes_written;
  int f_fastest_time = -1, f_slowest_time = -1, f_var_time = -1, f_var_bytes = -1;
};
constexpr RankCounters kPosixRanks{posix::kFastestRank,      posix::kFastestRankBytes, posix::kSlowestRank,
                                   posix::kSlowestRankBytes, posix::kBytesRead,        posix::kBytesWritten,
                                   posix::kFFastestRankTime, posix::kFSlowestRankTime, posix::kFVarianceRankTime,
                                   posix::kFVarianceRankBytes};
constexpr RankCounters kMpiioRanks{mpiio::kFastestRank, mpiio::kFastestRankBytes, mpiio::kSlowestRank,
                                   mpiio::kSlowestRankBytes, mpiio::kBytesRead, mpiio::kBytesWritten};
constexpr RankCounters kStdioRanks{stdio::kFastestRank,      stdio::kFastestRankBytes, stdio::kSlowestRank,
                                   stdio::kSlowestRankBytes, stdio::kBytesRead,        stdio::kBytesWritten,
                                   stdio::kFFastestRankTime, stdio::kFSlowestRankTime, stdio::kFVarianceRankTime,
                                   stdio::kFVarianceRankBytes};

int64_t ToNs(double sec) {
  if (!(sec > 0) || !std::isfinite(sec) || sec > 1e10) return 0;
  return static_cast<int64_t>(std::llround(sec * 1e9));
}

class Emitter {
 public:
  Emitter(const Log& log, const ImportOptions& opt, const LineFn& emit, ImportReport* rep)
      : log_(log), opt_(opt), emit_(emit), rep_(rep) {
    job_start_ns_ = log.job.start_sec * 1000000000 + log.job.start_nsec;
    job_id_ = opt.job_id.empty() ? std::to_string(log.job.jobid) : opt.job_id;
    uid_ = std::to_string(log.job.uid);
    default_host_ = opt.host.empty() ? "darshan" : opt.host;
    StreamHash h;
    h.Add("darshan-import");
    for (int64_t v : {log.job.jobid, log.job.start_sec, log.job.start_nsec, log.job.end_sec, log.job.end_nsec,
                      log.job.uid, log.job.nprocs})
      h.Add(std::to_string(v));
    h.Add(log.job.exe);
    h.Add(job_id_);
    h.Add(opt.cluster);
    stream_ = h.Id();
    if (stream_ == 0) stream_ = 1;
    rep_->job_id = job_id_;
    rep_->stream = stream_;
    for (const auto& d : log.dxt_posix) rank_host_.emplace(d.rank, d.hostname);
    for (const auto& d : log.dxt_mpiio) rank_host_.emplace(d.rank, d.hostname);
    buf_.resize(8192);
  }

  Status Job() {
    JsonLine j(buf_.data(), buf_.size());
    j.Begin();
    Common(j, "iosonar.job", job_start_ns_, default_host_);
    j.KStr(field::kJobEvent, "end");
    j.KStr(field::kJobCluster, opt_.cluster);
    j.KStr(field::kJobUser, uid_);
    if (!log_.job.exe.empty()) j.KStr(field::kJobCommand, Cut(log_.job.exe, 4096));
    if (log_.job.nprocs > 0) j.KInt(field::kJobTaskCount, log_.job.nprocs);
    const int64_t end_ns = log_.job.end_sec * 1000000000 + log_.job.end_nsec;
    j.KInt(field::kJobStartNs, job_start_ns_);
    j.KInt(field::kJobEndNs, std::max(end_ns, job_start_ns_));
    char d[64];
    const int n = snprintf(d, sizeof d, "%.3f", static_cast<double>(std::max<int64_t>(end_ns - job_start_ns_, 0)) / 1e9);
    j.Key(field::kJobDurationS);
    j.Raw(d, static_cast<size_t>(n));
    j.End();
    return Flush(j);
  }

  // The parts of one counter record, spread over the ranks when shared.
  Status Record(const CounterRecord& rec, std::vector<Part>& parts, const RankCounters& k,
                const Stragglers* strag = nullptr) {
    const uint64_t id = rec.id;
    const int64_t rank = rec.rank;
    const auto& c = rec.counters;
    const int64_t fastest = c[k.fastest], slowest = c[k.slowest];
    const uint64_t fastest_bytes = Pos(c[k.fastest_bytes]), slowest_bytes = Pos(c[k.slowest_bytes]);
    const uint64_t total_bytes = Pos(c[k.bytes_read]) + Pos(c[k.bytes_written]);
    const std::string& path = log_.Name(id);
    pending_ = strag && strag->set && rank < 0 && log_.job.nprocs > 1 ? strag : nullptr;
    if (pending_ && parts.empty()) pending_dxt_[id] = *pending_;  // DXT holds its ops: carried by its first segment
    struct Clear {
      const Stragglers** p;
      ~Clear() { *p = nullptr; }
    } clear{&pending_};
    if (rank >= 0 || log_.job.nprocs <= 1) {
      for (const Part& p : parts)
        if (Status s = Trace(p, std::max<int64_t>(rank, 0), path, id); !s.ok()) return s;
      return Status::Ok();
    }
    const size_t n = static_cast<size_t>(std::min<int64_t>(log_.job.nprocs, kMaxSpreadRanks));
    std::vector<double> data_w(n, 0), meta_w(n, 1);
    double rest = static_cast<double>(total_bytes);
    size_t others = n;
    auto pin = [&](int64_t r, uint64_t b) {
      if (r >= 0 && static_cast<size_t>(r) < n && data_w[static_cast<size_t>(r)] == 0 && b > 0) {
        data_w[static_cast<size_t>(r)] = static_cast<double>(b);
        rest -= static_cast<double>(b);
        --others;
      }
    };
    pin(fastest, fastest_bytes);
    pin(slowest, slowest_bytes);
    const double each = others ? std::max(rest, 0.0) / static_cast<double>(others) : 0;
    for (size_t r = 0; r < n; ++r)
      if (!((static_cast<int64_t>(r) == fastest && fastest_bytes > 0) ||
            (static_cast<int64_t>(r) == slowest && slowest_bytes > 0)))
        data_w[r] = each;
    for (const Part& p : parts) {
      const auto& w = p.data ? data_w : meta_w;
      const auto counts = Split(p.count, w);
      const auto bytes = Split(p.bytes, w);
      const auto seqs = Split(static_cast<uint64_t>(std::max<int64_t>(p.seq, 0)), w);
      const auto durs = Split(p.dur_ns, w);
      const auto nal = Split(static_cast<uint64_t>(std::max<int64_t>(p.not_aligned, 0)), counts_w(counts));
      const auto mnal = Split(static_cast<uint64_t>(std::max<int64_t>(p.mem_not_aligned, 0)), counts_w(counts));
      for (size_t r = 0; r < n; ++r) {
        if (counts[r] == 0 && bytes[r] == 0) continue;
        Part q = p;
        q.count = counts[r];
        q.bytes = bytes[r];
        q.seq = p.seq < 0 ? -1 : static_cast<int64_t>(std::min(seqs[r], counts[r]));
        q.not_aligned = p.not_aligned < 0 ? -1 : static_cast<int64_t>(std::min(nal[r], counts[r]));
        q.mem_not_aligned = p.mem_not_aligned < 0 ? -1 : static_cast<int64_t>(std::min(mnal[r], counts[r]));
        q.dur_ns = durs[r];
        if (Status s = Trace(q, static_cast<int64_t>(r), path, id); !s.ok()) return s;
      }
    }
    return Status::Ok();
  }

  // Ops of a DXT-covered file that its POSIX counters count as not aligned,
  // given to its segments in order, one each (which ops they were is not
  // known; the totals are Darshan's).
  struct Unaligned {
    int64_t alignment = 0, mem_alignment = 0;
    uint64_t file = 0, mem = 0;
  };
  void AddUnaligned(uint64_t id, int64_t alignment, int64_t mem_alignment, int64_t file, int64_t mem) {
    Unaligned& u = unaligned_[id];
    u.alignment = std::max(u.alignment, alignment);
    u.mem_alignment = std::max(u.mem_alignment, mem_alignment);
    u.file += Pos(file);
    u.mem += Pos(mem);
  }

  Status Segment(const DxtRecord& d, const DxtSegment& s, const char* layer) {
    Part p;
    if (std::string_view(layer) == "posix")
      if (auto it = unaligned_.find(d.id); it != unaligned_.end()) {
        Unaligned& u = it->second;
        p.alignment = u.alignment;
        p.mem_alignment = u.mem_alignment;
        p.not_aligned = u.file > 0 ? 1 : 0;
        p.mem_not_aligned = u.mem > 0 ? 1 : 0;
        u.file -= static_cast<uint64_t>(p.not_aligned);
        u.mem -= static_cast<uint64_t>(p.mem_not_aligned);
      }
    if (std::string_view(layer) == "posix")
      if (auto it = pending_dxt_.find(d.id); it != pending_dxt_.end()) {
        strag_copy_ = it->second;
        pending_ = &strag_copy_;
        pending_dxt_.erase(it);
      }
    p.op = s.write ? "write" : "read";
    p.layer = layer;
    p.size = std::max<int64_t>(s.length, 0);
    p.count = 1;
    p.bytes = Pos(s.length);
    p.start_ns = job_start_ns_ + ToNs(s.start);
    p.end_ns = std::max(job_start_ns_ + ToNs(s.end), p.start_ns);
    p.dur_ns = static_cast<uint64_t>(p.end_ns - p.start_ns);
    p.data = true;
    ++rep_->dxt_segments;
    Status st = Trace(p, std::max<int64_t>(d.rank, 0), log_.Name(d.id), d.id, &d, s.offset,
                      static_cast<int64_t>(s.thread & 0x7fffffffffffffffull));
    pending_ = nullptr;
    return st;
  }

  int64_t job_start_ns() const { return job_start_ns_; }

 private:
  static std::vector<double> counts_w(const std::vector<uint64_t>& c) { return {c.begin(), c.end()}; }

  void Dbl(JsonLine& j, FieldId k, double v) {
    char d[64];
    const int n = snprintf(d, sizeof d, "%.17g", std::isfinite(v) ? v : 0.0);
    j.Key(k);
    j.Raw(d, static_cast<size_t>(n));
  }

  static std::string_view Cut(std::string_view s, size_t max) {
    if (s.size() <= max) return s;
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 sequence
    return s.substr(0, n);
  }

  void Common(JsonLine& j, const char* dataset, int64_t ts_ns, std::string_view host) {
    j.Key(field::kTimestamp);
    j.IsoMillis(ts_ns);
    j.KStr(field::kEventDataset, dataset);
    j.KInt(field::kEventStream, stream_);
    j.KInt(field::kEventSeq, seq_++);
    j.KStr(field::kHostName, host);
    j.KStr(field::kJobId, job_id_);
  }

  Status Trace(const Part& p, int64_t rank, const std::string& path, uint64_t id, const DxtRecord* dxt = nullptr,
               int64_t offset = -1, int64_t tid = 0) {
    std::string_view host = default_host_;
    if (dxt && !dxt->hostname.empty()) host = dxt->hostname;
    else if (auto it = rank_host_.find(rank); it != rank_host_.end() && !it->second.empty()) host = it->second;
    JsonLine j(buf_.data(), buf_.size());
    j.Begin();
    Common(j, "iosonar.trace", p.start_ns, host);
    j.KInt(field::kProcessPid, rank);
    j.KInt(field::kProcessTid, tid > 0 ? tid : rank);
    j.KInt(field::kProcessRank, rank);
    j.KStr(field::kUserId, uid_);
    j.KStr(field::kIoOp, p.op);
    j.KStr(field::kIoLayer, p.layer);
    if (!path.empty()) {
      j.KStr(field::kFilePath, Cut(path, 255));
      char hex[17];
      snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Fnv1a(path)));
      j.KStr(field::kFileId, hex);
    } else {
      char hex[17];
      snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(id));
      j.KStr(field::kFileId, hex);
    }
    if (offset >= 0) j.KInt(field::kIoOffset, offset);
    if (p.size >= 0) j.KInt(field::kIoSize, p.size);
    j.KInt(field::kIoCount, static_cast<int64_t>(p.count));
    if (p.data) j.KInt(field::kIoBytes, static_cast<int64_t>(p.bytes));
    j.KInt(field::kEventStartNs, p.start_ns);
    j.KInt(field::kEventEndNs, std::max(p.end_ns, p.start_ns));
    j.KInt(field::kIoDurationNs, static_cast<int64_t>(p.dur_ns));
    if (!dxt) {
      j.Key(field::kIoAggregated);
      j.Bool(true);
    }
    if (p.data && p.seq >= 0) j.KInt(field::kIoOpsSequential, std::min<int64_t>(p.seq, static_cast<int64_t>(p.count)));
    if (p.collective >= 0) {
      j.Key(field::kMpiCollective);
      j.Bool(p.collective == 1);
    }
    if (p.comm_size > 0) j.KInt(field::kMpiCommSize, p.comm_size);
    if (p.data && p.alignment > 0) j.KInt(field::kIoAlignment, p.alignment);
    if (p.data && p.not_aligned >= 0)
      j.KInt(field::kIoOpsNotAligned, std::min<int64_t>(p.not_aligned, static_cast<int64_t>(p.count)));
    if (p.data && p.mem_alignment > 0) j.KInt(field::kIoMemAlignment, p.mem_alignment);
    if (p.data && p.mem_not_aligned >= 0)
      j.KInt(field::kIoOpsMemNotAligned, std::min<int64_t>(p.mem_not_aligned, static_cast<int64_t>(p.count)));
    if (pending_) {  // the file's stragglers, on its first record
      const Stragglers& g = *pending_;
      j.KInt(field::kFileFastestRank, g.fastest);
      j.KInt(field::kFileFastestRankBytes, static_cast<int64_t>(g.fastest_bytes));
      j.KInt(field::kFileFastestRankTimeNs, g.fastest_ns);
      j.KInt(field::kFileSlowestRank, g.slowest);
      j.KInt(field::kFileSlowestRankBytes, static_cast<int64_t>(g.slowest_bytes));
      j.KInt(field::kFileSlowestRankTimeNs, g.slowest_ns);
      Dbl(j, field::kFileVarianceRankTime, g.var_time);
      Dbl(j, field::kFileVarianceRankBytes, g.var_bytes);
      pending_ = nullptr;
    }
    j.End();
    return Flush(j);
  }

  Status Flush(const JsonLine& j) {
    if (!j.ok()) return Status::Internal("darshan import: record longer than its buffer");
    ++rep_->lines;
    return emit_(std::string_view(buf_.data(), j.size()));
  }

  const Log& log_;
  const ImportOptions& opt_;
  const LineFn& emit_;
  ImportReport* rep_;
  int64_t job_start_ns_ = 0;
  int64_t stream_ = 0;
  int64_t seq_ = 0;
  std::string job_id_, uid_, default_host_;
  std::unordered_map<int64_t, std::string> rank_host_;
  std::vector<char> buf_;
  const Stragglers* pending_ = nullptr;  // to be written on the next record
  std::unordered_map<uint64_t, Stragglers> pending_dxt_;  // files whose first record is a DXT segment
  Stragglers strag_copy_;
  std::unordered_map<uint64_t, Unaligned> unaligned_;
};

// The data parts of one direction: one per non-empty size bin.
struct Alignment {
  int64_t alignment = 0, mem_alignment = 0;
  int64_t not_aligned = -1, mem_not_aligned = -1;  // of the direction's ops (-1: absent)
};

void DataParts(const char* op, const char* layer, uint64_t ops, uint64_t bytes, int64_t consec, const int64_t* bins,
               int64_t start_ns, int64_t end_ns, uint64_t dur_ns, int collective, int64_t comm_size,
               std::vector<Part>* out, const Alignment& al = {}) {
  if (ops == 0 && bytes == 0) return;
  const double avg = ops ? static_cast<double>(bytes) / static_cast<double>(ops) : 0;
  std::vector<double> w;
  std::vector<int> which;
  uint64_t binned = 0;
  if (bins)
    for (int b = 0; b < 10; ++b)
      if (bins[b] > 0) {
        w.push_back(static_cast<double>(bins[b]));
        which.push_back(b);
        binned += static_cast<uint64_t>(bins[b]);
      }
  if (which.empty() || ops == 0) {  // no histogram: one part at the mean size
    Part p{op, layer};
    p.size = static_cast<int64_t>(std::llround(avg));
    p.count = ops;
    p.bytes = bytes;
    p.seq = consec >= 0 ? static_cast<int64_t>(std::min<uint64_t>(Pos(consec), ops)) : -1;
    p.start_ns = start_ns;
    p.end_ns = end_ns;
    p.dur_ns = dur_ns;
    p.collective = collective;
    p.comm_size = comm_size;
    p.data = true;
    p.alignment = al.alignment;
    p.mem_alignment = al.mem_alignment;
    p.not_aligned = al.not_aligned < 0 ? -1 : std::min<int64_t>(al.not_aligned, static_cast<int64_t>(ops));
    p.mem_not_aligned = al.mem_not_aligned < 0 ? -1 : std::min<int64_t>(al.mem_not_aligned, static_cast<int64_t>(ops));
    out->push_back(p);
    return;
  }
  // Counts: the bins' (scaled to the op count when they disagree).
  const std::vector<uint64_t> counts = binned == ops ? std::vector<uint64_t>(w.begin(), w.end()) : Split(ops, w);
  std::vector<int64_t> sizes(which.size());
  std::vector<double> bw(which.size());
  for (size_t k = 0; k < which.size(); ++k) {
    const int b = which[k];
    sizes[k] = std::clamp<int64_t>(static_cast<int64_t>(std::llround(avg)), kBinLo[b], kBinHi[b]);
    bw[k] = static_cast<double>(counts[k]) * static_cast<double>(sizes[k]);
  }
  const auto bytes_k = Split(bytes, bw);
  const auto seq_k = Split(Pos(consec), std::vector<double>(counts.begin(), counts.end()));
  const auto dur_k = Split(dur_ns, std::vector<double>(counts.begin(), counts.end()));
  const auto nal_k = Split(Pos(al.not_aligned), std::vector<double>(counts.begin(), counts.end()));
  const auto mnal_k = Split(Pos(al.mem_not_aligned), std::vector<double>(counts.begin(), counts.end()));
  for (size_t k = 0; k < which.size(); ++k) {
    if (counts[k] == 0 && bytes_k[k] == 0) continue;
    Part p{op, layer};
    p.size = sizes[k];
    p.count = counts[k];
    p.bytes = bytes_k[k];
    p.seq = consec >= 0 ? static_cast<int64_t>(std::min(seq_k[k], counts[k])) : -1;
    p.start_ns = start_ns;
    p.end_ns = end_ns;
    p.dur_ns = dur_k[k];
    p.collective = collective;
    p.comm_size = comm_size;
    p.data = true;
    p.alignment = al.alignment;
    p.mem_alignment = al.mem_alignment;
    p.not_aligned = al.not_aligned < 0 ? -1 : static_cast<int64_t>(std::min(nal_k[k], counts[k]));
    p.mem_not_aligned = al.mem_not_aligned < 0 ? -1 : static_cast<int64_t>(std::min(mnal_k[k], counts[k]));
    out->push_back(p);
  }
}

void MetaPart(const char* op, const char* layer, int64_t count, int64_t start_ns, int64_t end_ns, uint64_t dur_ns,
              std::vector<Part>* out) {
  if (count <= 0) return;
  Part p{op, layer};
  p.count = static_cast<uint64_t>(count);
  p.start_ns = start_ns;
  p.end_ns = std::max(end_ns, start_ns);
  p.dur_ns = dur_ns;
  out->push_back(p);
}

// [first, last] of a direction from the F counters (seconds since the job
// start), falling back to the file's open time.
void Window(int64_t job0, double first, double last, double open_first, int64_t* s, int64_t* e) {
  const double a = first > 0 ? first : (open_first > 0 ? open_first : 0);
  *s = job0 + ToNs(a);
  *e = std::max(job0 + ToNs(last), *s);
}

struct DxtSums {
  uint64_t reads = 0, writes = 0, bytes_read = 0, bytes_written = 0;
};

// Files (record ids) whose DXT segments hold every op and byte the counters count.
std::unordered_set<uint64_t> DxtComplete(const std::vector<CounterRecord>& recs, int ir, int iw, int ibr, int ibw,
                                         const std::vector<int>& extra_r, const std::vector<int>& extra_w,
                                         const std::vector<DxtRecord>& dxt, uint64_t* incomplete) {
  std::unordered_map<uint64_t, DxtSums> c, d;
  for (const auto& r : recs) {
    auto& s = c[r.id];
    s.reads += Pos(r.counters[ir]);
    s.writes += Pos(r.counters[iw]);
    for (int k : extra_r) s.reads += Pos(r.counters[k]);
    for (int k : extra_w) s.writes += Pos(r.counters[k]);
    s.bytes_read += Pos(r.counters[ibr]);
    s.bytes_written += Pos(r.counters[ibw]);
  }
  for (const auto& r : dxt) {
    auto& s = d[r.id];
    for (const auto& g : r.segments) {
      (g.write ? s.writes : s.reads) += 1;
      (g.write ? s.bytes_written : s.bytes_read) += Pos(g.length);
    }
  }
  std::unordered_set<uint64_t> ok;
  for (const auto& [id, s] : d) {
    auto it = c.find(id);
    if (it != c.end() && it->second.reads == s.reads && it->second.writes == s.writes &&
        it->second.bytes_read == s.bytes_read && it->second.bytes_written == s.bytes_written)
      ok.insert(id);
    else
      ++*incomplete;
  }
  return ok;
}

}  // namespace

// A shared record's (rank -1) fastest and slowest rank, when Darshan has them.
Stragglers StragglersOf(const CounterRecord& r, const RankCounters& k) {
  Stragglers strag;
  const auto& c = r.counters;
  const auto& f = r.fcounters;
  if (r.rank < 0 && c[k.fastest] >= 0 && c[k.slowest] >= 0) {
    strag.set = true;
    strag.fastest = c[k.fastest];
    strag.slowest = c[k.slowest];
    strag.fastest_bytes = Pos(c[k.fastest_bytes]);
    strag.slowest_bytes = Pos(c[k.slowest_bytes]);
    strag.fastest_ns = ToNs(f[k.f_fastest_time]);
    strag.slowest_ns = ToNs(f[k.f_slowest_time]);
    strag.var_time = std::max(f[k.f_var_time], 0.0);
    strag.var_bytes = std::max(f[k.f_var_bytes], 0.0);
  }
  return strag;
}

// One record's operations and bytes added to its module's totals.
void AddToTotals(ModuleTotals& t, uint64_t reads, uint64_t writes, uint64_t bytes_read, uint64_t bytes_written) {
  ++t.records;
  t.reads += reads;
  t.writes += writes;
  t.bytes_read += bytes_read;
  t.bytes_written += bytes_written;
}

Status ImportLog(const Log& log, const ImportOptions& opt, const LineFn& emit, ImportReport* report) {
  Emitter em(log, opt, emit, report);
  if (Status s = em.Job(); !s.ok()) return s;
  const int64_t j0 = em.job_start_ns();
  auto dur = [](double sec) { return static_cast<uint64_t>(ToNs(sec)); };

  const auto posix_dxt = DxtComplete(log.posix, posix::kReads, posix::kWrites, posix::kBytesRead,
                                     posix::kBytesWritten, {}, {}, log.dxt_posix, &report->dxt_files_incomplete);
  const auto mpiio_dxt = DxtComplete(
      log.mpiio, mpiio::kIndepReads, mpiio::kIndepWrites, mpiio::kBytesRead, mpiio::kBytesWritten,
      {mpiio::kCollReads, mpiio::kSplitReads, mpiio::kNbReads}, {mpiio::kCollWrites, mpiio::kSplitWrites,
      mpiio::kNbWrites}, log.dxt_mpiio, &report->dxt_files_incomplete);

  std::vector<Part> parts;
  {
    auto& t = report->totals["POSIX"];
    for (const auto& r : log.posix) {
      const auto& c = r.counters;
      const auto& f = r.fcounters;
      AddToTotals(t, Pos(c[posix::kReads]), Pos(c[posix::kWrites]), Pos(c[posix::kBytesRead]),
                  Pos(c[posix::kBytesWritten]));
      parts.clear();
      int64_t s, e;
      // Darshan counts not-aligned ops over reads and writes together:
      // shared between the directions in proportion to their ops.
      const uint64_t nr = Pos(c[posix::kReads]), nw = Pos(c[posix::kWrites]);
      const bool has_al = c[posix::kFileNotAligned] >= 0 || c[posix::kMemNotAligned] >= 0;
      const auto fna = Split(Pos(c[posix::kFileNotAligned]), {static_cast<double>(nr), static_cast<double>(nw)});
      const auto mna = Split(Pos(c[posix::kMemNotAligned]), {static_cast<double>(nr), static_cast<double>(nw)});
      auto align = [&](int d) {
        Alignment a;
        if (!has_al) return a;
        a.alignment = std::max<int64_t>(c[posix::kFileAlignment], 0);
        a.mem_alignment = std::max<int64_t>(c[posix::kMemAlignment], 0);
        a.not_aligned = c[posix::kFileNotAligned] >= 0 ? static_cast<int64_t>(fna[static_cast<size_t>(d)]) : -1;
        a.mem_not_aligned = c[posix::kMemNotAligned] >= 0 ? static_cast<int64_t>(mna[static_cast<size_t>(d)]) : -1;
        return a;
      };
      if (!posix_dxt.count(r.id)) {
        Window(j0, f[posix::kFReadStart], f[posix::kFReadEnd], f[posix::kFOpenStart], &s, &e);
        DataParts("read", "posix", nr, Pos(c[posix::kBytesRead]), c[posix::kConsecReads],
                  &c[posix::kSizeRead0], s, e, dur(f[posix::kFReadTime]), -1, 0, &parts, align(0));
        Window(j0, f[posix::kFWriteStart], f[posix::kFWriteEnd], f[posix::kFOpenStart], &s, &e);
        DataParts("write", "posix", nw, Pos(c[posix::kBytesWritten]), c[posix::kConsecWrites],
                  &c[posix::kSizeWrite0], s, e, dur(f[posix::kFWriteTime]), -1, 0, &parts, align(1));
      } else if (has_al) {
        em.AddUnaligned(r.id, std::max<int64_t>(c[posix::kFileAlignment], 0),
                        std::max<int64_t>(c[posix::kMemAlignment], 0), c[posix::kFileNotAligned],
                        c[posix::kMemNotAligned]);
      }
      const Stragglers strag = StragglersOf(r, kPosixRanks);
      Window(j0, f[posix::kFOpenStart], std::max(f[posix::kFCloseEnd], f[posix::kFOpenEnd]), 0, &s, &e);
      const int64_t metas[] = {c[posix::kOpens], c[posix::kStats], c[posix::kSeeks],
                               std::max<int64_t>(c[posix::kFsyncs], 0) + std::max<int64_t>(c[posix::kFdsyncs], 0),
                               c[posix::kMmaps], c[posix::kRenameSources]};
      const char* names[] = {"open", "stat", "seek", "sync", "mmap", "rename"};
      int64_t nmeta = 0;
      for (int64_t m : metas) nmeta += std::max<int64_t>(m, 0);
      const std::vector<double> mw(std::begin(metas), std::end(metas));
      const auto mdur = Split(dur(f[posix::kFMetaTime]), mw);
      for (size_t k = 0; k < std::size(metas); ++k)
        MetaPart(names[k], "posix", metas[k], s, e, nmeta ? mdur[k] : 0, &parts);
      if (Status st = em.Record(r, parts, kPosixRanks, &strag); !st.ok()) return st;
    }
  }
  if (!log.mpiio.empty()) {
    auto& t = report->totals["MPI-IO"];
    for (const auto& r : log.mpiio) {
      const auto& c = r.counters;
      const auto& f = r.fcounters;
      const uint64_t coll_r = Pos(c[mpiio::kCollReads]) + Pos(c[mpiio::kSplitReads]);
      const uint64_t ind_r = Pos(c[mpiio::kIndepReads]) + Pos(c[mpiio::kNbReads]);
      const uint64_t coll_w = Pos(c[mpiio::kCollWrites]) + Pos(c[mpiio::kSplitWrites]);
      const uint64_t ind_w = Pos(c[mpiio::kIndepWrites]) + Pos(c[mpiio::kNbWrites]);
      AddToTotals(t, coll_r + ind_r, coll_w + ind_w, Pos(c[mpiio::kBytesRead]), Pos(c[mpiio::kBytesWritten]));
      parts.clear();
      const int64_t comm = r.rank < 0 ? log.job.nprocs : 0;
      int64_t s, e;
      if (!mpiio_dxt.count(r.id)) {
        // Collective (and split) ops apart from independent (and non-blocking)
        // ones; bytes, time and the size bins shared in proportion to the ops.
        auto both = [&](const char* op, uint64_t coll, uint64_t ind, uint64_t bytes, const int64_t* bins,
                        uint64_t dur_ns) {
          const auto b = Split(bytes, {static_cast<double>(coll), static_cast<double>(ind)});
          const auto tm = Split(dur_ns, {static_cast<double>(coll), static_cast<double>(ind)});
          DataParts(op, "mpiio", coll, b[0], -1, bins, s, e, tm[0], 1, comm, &parts);
          DataParts(op, "mpiio", ind, b[1], -1, bins, s, e, tm[1], 0, comm, &parts);
        };
        Window(j0, f[posix::kFReadStart], f[posix::kFReadEnd], f[posix::kFOpenStart], &s, &e);
        both("read", coll_r, ind_r, Pos(c[mpiio::kBytesRead]), &c[mpiio::kSizeReadAgg0], dur(f[posix::kFReadTime]));
        Window(j0, f[posix::kFWriteStart], f[posix::kFWriteEnd], f[posix::kFOpenStart], &s, &e);
        both("write", coll_w, ind_w, Pos(c[mpiio::kBytesWritten]), &c[mpiio::kSizeWriteAgg0],
             dur(f[posix::kFWriteTime]));
      }
      Window(j0, f[posix::kFOpenStart], std::max(f[posix::kFCloseEnd], f[posix::kFOpenEnd]), 0, &s, &e);
      const int64_t opens = std::max<int64_t>(c[mpiio::kIndepOpens], 0) + std::max<int64_t>(c[mpiio::kCollOpens], 0);
      const int64_t syncs = c[mpiio::kSyncs];
      const uint64_t meta = dur(f[posix::kFMetaTime]);
      const auto md = Split(meta, {static_cast<double>(std::max<int64_t>(opens, 0)),
                                   static_cast<double>(std::max<int64_t>(syncs, 0))});
      MetaPart("open", "mpiio", opens, s, e, md[0], &parts);
      MetaPart("sync", "mpiio", syncs, s, e, md[1], &parts);
      if (Status st = em.Record(r, parts, kMpiioRanks); !st.ok()) return st;
    }
  }
  if (!log.stdio.empty()) {
    auto& t = report->totals["STDIO"];
    for (const auto& r : log.stdio) {
      const auto& c = r.counters;
      const auto& f = r.fcounters;
      AddToTotals(t, Pos(c[stdio::kReads]), Pos(c[stdio::kWrites]), Pos(c[stdio::kBytesRead]),
                  Pos(c[stdio::kBytesWritten]));
      parts.clear();
      int64_t s, e;
      Window(j0, f[stdio::kFReadStart], f[stdio::kFReadEnd], f[stdio::kFOpenStart], &s, &e);
      DataParts("read", "stdio", Pos(c[stdio::kReads]), Pos(c[stdio::kBytesRead]), -1, nullptr, s, e,
                dur(f[stdio::kFReadTime]), -1, 0, &parts);
      Window(j0, f[stdio::kFWriteStart], f[stdio::kFWriteEnd], f[stdio::kFOpenStart], &s, &e);
      DataParts("write", "stdio", Pos(c[stdio::kWrites]), Pos(c[stdio::kBytesWritten]), -1, nullptr, s, e,
                dur(f[stdio::kFWriteTime]), -1, 0, &parts);
      Window(j0, f[stdio::kFOpenStart], std::max(f[stdio::kFCloseEnd], f[stdio::kFOpenEnd]), 0, &s, &e);
      const int64_t opens = std::max<int64_t>(c[stdio::kOpens], 0) + std::max<int64_t>(c[stdio::kFdopens], 0);
      const auto md = Split(dur(f[stdio::kFMetaTime]),
                            {static_cast<double>(opens), static_cast<double>(std::max<int64_t>(c[stdio::kSeeks], 0)),
                             static_cast<double>(std::max<int64_t>(c[stdio::kFlushes], 0))});
      MetaPart("open", "stdio", opens, s, e, md[0], &parts);
      MetaPart("seek", "stdio", c[stdio::kSeeks], s, e, md[1], &parts);
      MetaPart("flush", "stdio", c[stdio::kFlushes], s, e, md[2], &parts);
      // so the per-process balance leaves the spread estimate out
      const Stragglers strag = StragglersOf(r, kStdioRanks);
      if (Status st = em.Record(r, parts, kStdioRanks, &strag); !st.ok()) return st;
    }
  }
  for (const auto& d : log.dxt_posix)
    if (posix_dxt.count(d.id))
      for (const auto& s : d.segments)
        if (Status st = em.Segment(d, s, "posix"); !st.ok()) return st;
  for (const auto& d : log.dxt_mpiio)
    if (mpiio_dxt.count(d.id))
      for (const auto& s : d.segments)
        if (Status st = em.Segment(d, s, "mpiio"); !st.ok()) return st;
  return Status::Ok();
}

std::string BadOstCsv(const Log& log, bool header) {
  struct Acc {
    uint64_t bytes = 0;
    double seconds = 0;
  };
  std::unordered_map<uint64_t, Acc> io;
  for (const auto& r : log.posix) {
    auto& a = io[r.id];
    a.bytes += Pos(r.counters[posix::kBytesRead]) + Pos(r.counters[posix::kBytesWritten]);
    a.seconds += std::max(r.fcounters[posix::kFReadTime], 0.0) + std::max(r.fcounters[posix::kFWriteTime], 0.0);
  }
  std::string out = header ? "file,bytes,seconds,osts\n" : "";
  std::unordered_set<uint64_t> seen;
  for (const auto& l : log.lustre) {
    if (!seen.insert(l.id).second || l.osts.empty()) continue;
    auto it = io.find(l.id);
    if (it == io.end() || it->second.seconds <= 0) continue;
    std::string name = log.Name(l.id);
    if (name.empty()) name = std::to_string(l.id);
    std::string q = "\"";
    for (char ch : name) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    q += '"';
    char nums[96];
    snprintf(nums, sizeof nums, ",%llu,%.17g,", static_cast<unsigned long long>(it->second.bytes), it->second.seconds);
    out += q + nums;
    for (size_t k = 0; k < l.osts.size(); ++k) out += (k ? ";" : "") + std::to_string(l.osts[k]);
    out += '\n';
  }
  return out;
}

}  // namespace iosonar::darshan
