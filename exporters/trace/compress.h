// First-pass online compression of I/O ops (Beacon §3.2), one instance per
// thread: consecutive ops on the same fd with the same op and request size
// over contiguous offsets merge into one run with a count; the run keeps its
// start offset. Ops at a constant step other than contiguous (strided: every
// N-th block) merge the same way into a strided run (offset + k * stride). A run ends when the op, fd or size changes for that fd, the
// offset jumps, the result changes kind (error vs success), or the run's time
// window (default 1 s) ends, so per-second bandwidth stays reconstructable.
//
// Several runs stay open at once (one per (fd, op) key, up to kOpenRuns), so
// ops interleaved over several fds each compress. Runs never end at a buffer
// or batch boundary: a run closes only for the reasons above, when its fd is
// closed, when more than kOpenRuns keys are live (the least recently used run
// closes), or at flush/exit.
//
// No allocation: fixed arrays. Not thread-safe: owned by one thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace iosonar::trace {

// The ops are declared once, with their io.op names, in core/records/io_ops.def.
enum Op : uint8_t {
#define X(id, name) kOp##id,
#include "core/records/io_ops.def"
#undef X
  kOpCount
};
const char* OpName(Op op);  // the io.op value
inline bool IsDataOp(Op op) { return op == kOpRead || op == kOpWrite; }
// Offsets added and subtracted modulo 2^64: a run may come from another
// process's ring (the drainer's and the agent's copies), whose values nothing
// bounds; a wrapped result is merely an offset no op continues (no signed
// overflow, which is undefined). The same instructions as plain + and -.
inline int64_t WrapAdd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t WrapSub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }

// The interface the ops came through. MPI-IO ops (recorded by
// libiosonar-mpiio.so through iosonar_trace_record, the logical layer above
// the POSIX calls the MPI library makes) carry collective vs independent in
// the layer, so the two never merge into one run.
enum Layer : uint8_t { kPosix, kStdio, kMpiio, kMpiioCollective };
inline bool IsMpiio(Layer l) { return l == kMpiio || l == kMpiioCollective; }
const char* LayerName(Layer l);  // io.layer: posix, stdio, mpiio

// One intercepted call.
struct RawOp {
  Op op;
  Layer layer;
  int32_t fd;          // -1 for path-only metadata ops
  int64_t offset;      // data ops: offset the op started at; -1 if unknown/not seekable
  int64_t size;        // data ops: requested bytes
  int64_t result;      // data ops: bytes transferred (>= 0) or -1
  int32_t err;         // errno if the call failed, else 0
  uint64_t file_id;    // 0 if unknown
  uint64_t t0, t1;     // ticks (see Clock in tracer.cc); t1 >= t0
};
// Built on every intercepted call: nothing more in it. The few ops that carry
// more (MPI-IO's communicator size, mmap's prot and flags) pass it beside the
// op as `extra` (Run::comm_size), which keys their runs too.

// A closed (or open) run; or, flagged agg, a per-interval aggregate of runs
// (Aggregator) with the share of its ops by access pattern.
struct Run {
  Op op;
  Layer layer;
  uint8_t agg;          // 1: an aggregate past the detail budget (offset -1, n_* set)
  uint8_t strided;      // 1: ops at offset + k * stride (a constant step other than contiguous)
  int32_t fd;
  int32_t err;
  int32_t comm_size;    // MPI-IO runs: processes in the file's communicator; mmap: prot | flags << 8 (else 0; was padding)
  uint64_t file_id;
  int64_t offset;       // start offset, -1 if unknown
  int64_t next_offset;  // where the next op must start to continue the run
  int64_t stride;       // strided runs: the step between op starts
  int64_t size;
  uint64_t count;
  uint64_t bytes;
  uint64_t t_start, t_end;  // first op start, last op end (ticks)
  uint64_t dur;             // summed op durations (ticks)
  uint64_t last_use;        // LRU stamp
  // Aggregates: ops continuing the previous one, at its stride, elsewhere.
  // Detail runs: n_seq is 1 if the run's first op started exactly where the
  // previous op of its (fd, op) key ended, else 0 (set at the run's start;
  // OpsSequential adds the rest, implied by count), the other two 0.
  uint64_t n_seq, n_strided, n_random;
};

// io.ops_sequential of a run: the ops that started exactly where the previous
// op of the same thread on the same descriptor and direction ended. A
// contiguous run: its first op (n_seq) and every later one; a strided run:
// its first op only (the later ones skip); offsets unknown (a pipe,
// O_APPEND): a stream, every op (as aggregates count them); failed ops: none.
inline uint64_t OpsSequential(const Run& r) {
  if (r.agg) return r.n_seq;
  if (r.err != 0 || r.count == 0) return 0;
  if (r.offset < 0) return r.count;
  return r.n_seq + (r.strided ? 0 : r.count - 1);
}

// Where closed runs go. Returns false if the run had to be dropped.
class RunSink {
 public:
  virtual bool Put(const Run& r) = 0;
 protected:
  ~RunSink() = default;
};

class Compressor {
 public:
  static constexpr int kOpenRuns = 16;
  explicit Compressor(uint64_t window_ticks = 0) : window_(window_ticks) {}
  void set_window(uint64_t ticks) { window_ = ticks; }

  void Add(const RawOp& op, RunSink* sink, int32_t extra = 0);
  // Add() after TryExtend(op) returned false: the most recent run, when it
  // has op's key, is known not to continue it, so it is strided or replaced
  // in place without a search (random offsets: the common case past the
  // detail budget).
  void AddMissed(const RawOp& op, RunSink* sink, int32_t extra = 0);
  // The hot path: extends the most recently used run if op continues it.
  // Returns false when the caller must fall back to Add().
  // No LRU stamp here: runs_[last_] is the most recently used run by
  // definition (a run is stamped as it becomes last_), so stamping only then
  // keeps the same order among the open runs.
  __attribute__((always_inline)) bool TryExtend(const RawOp& o, int32_t extra = 0) {
    if (last_ >= n_) return false;
    Run& r = runs_[last_];
    if (!SameKey(r, o) || !Continues(r, o, extra)) return false;
    Grow(r, o);
    return true;
  }
  // Where a slot's hot line ends and the open runs begin (ring.h aligns them to cache lines).
  static constexpr size_t RunsOffset();
  // Past the detail budget, where the caller folds ops that do not continue
  // a run straight into the aggregates (Aggregator::FoldOp): if o continues
  // or strides its key's open run, extends it and returns true; otherwise
  // closes that run (if any) and returns false: no run is open on o's key.
  bool TakeOrRelease(const RawOp& o, RunSink* sink);
  // Opens a run of o (its key has none open); first_seq: o starts where the
  // previous op on its key ended (the run's n_seq).
  void StartRun(const RawOp& o, RunSink* sink, bool first_seq, int32_t extra = 0);
  // Closes every open run on fd (the fd was closed or replaced).
  void CloseFd(int32_t fd, RunSink* sink);
  // Closes runs whose window began at or before now - window.
  void CloseExpired(uint64_t now, RunSink* sink);
  void CloseAll(RunSink* sink);
  void Reset() {  // forget open runs (after fork, in the child)
    n_ = 0;
    last_ = 0;
    for (Closed& c : closed_) c = Closed{};
  }
  int open_runs() const { return n_; }
  uint64_t dropped() const { return dropped_; }
  // The indices are in range (a copy read from another process's memory is checked before use).
  bool Sane() const {
    return n_ >= 0 && n_ <= kOpenRuns && last_ >= 0 && last_ < kOpenRuns && closed_next_ >= 0 && closed_next_ < kClosed;
  }

 private:
  void Emit(int i, RunSink* sink);
  // Emit for a run closed without a successor on its key (its window ended,
  // capacity): where its last op ended is remembered for the key's next run.
  void EmitRemember(int i, RunSink* sink);
  void Start(int i, const RawOp& o, int32_t extra, bool first_seq);  // runs_[i] becomes a new run of o
  // Whether o starts where the last op of run r (o's key) ended.
  static bool ContinuesEnd(const Run& r, const RawOp& o);
  // The same for a key with no open run, from the remembered ends (forgotten once used).
  bool ContinuesClosed(const RawOp& o);
  // A run of one data op and a second one of the same size elsewhere: the
  // run becomes strided with that (forward) step; a third op must follow at the same step.
  bool CanStride(const Run& r, const RawOp& o) const {
    return r.count == 1 && !r.strided && IsDataOp(o.op) && o.err == 0 && r.err == 0 && r.size == o.size &&
           r.file_id == o.file_id && r.offset >= 0 && o.offset > r.offset &&
           static_cast<int64_t>(r.bytes) == r.size && o.result == o.size && (window_ == 0 || o.t0 - r.t_start < window_ - 1);
  }
  // The one rule for merging, given the same (fd, op, layer) key: same size,
  // file and error, inside the run's window, and — for successful data ops —
  // starting where the run's last op ended (unknown offsets, from pipes or
  // O_APPEND, are contiguous by definition).
  __attribute__((always_inline)) bool Continues(const Run& r, const RawOp& o, int32_t extra) const {
    if (r.size != o.size || r.file_id != o.file_id || r.err != o.err) return false;
    if (o.t0 - r.t_start >= window_ - 1 && window_ != 0) return false;  // also refuses o.t0 < t_start (wraps)
    if (IsDataOp(o.op) && o.err == 0) return o.offset == r.next_offset;
    return r.comm_size == extra;  // mmap: the same prot and flags; MPI-IO: the same communicator size
  }
  // (fd, op, layer) of r and o are the same. One 8-byte compare of the run's
  // first bytes against a key built in registers: comparing the fields one by
  // one made the compiler merge them into a load of the RawOp it had just
  // stored in pieces, which stalls store-to-load forwarding on every call.
  __attribute__((always_inline)) static bool SameKey(const Run& r, const RawOp& o) {
    uint64_t rk;
    std::memcpy(&rk, &r, sizeof rk);
    const uint64_t ok = static_cast<uint64_t>(o.op) | static_cast<uint64_t>(o.layer) << 8 | uint64_t{static_cast<uint32_t>(o.fd)} << 32;
    return ((rk ^ ok) & 0xffffffff0000ffffull) == 0;  // bytes 2-3 (agg, strided) are not the key
  }
  __attribute__((always_inline)) void Extend(int i, const RawOp& o) {
    Grow(runs_[i], o);
    runs_[i].last_use = ++clock_;
    last_ = i;
  }
  __attribute__((always_inline)) static void Grow(Run& r, const RawOp& o) {
    ++r.count;
    if (o.result > 0) {
      r.bytes += static_cast<uint64_t>(o.result);
      if (o.offset >= 0) r.next_offset = WrapAdd(o.offset, r.strided ? r.stride : o.result);
    }
    if (o.t1 > r.t_end) r.t_end = o.t1;
    r.dur += o.t1 - o.t0;
  }
  // What every call reads first (before the runs, so that in a ring's slot
  // they share the cache line of the slot's lock; see RunsOffset).
  int n_ = 0;
  int last_ = 0;  // index of the most recently extended or opened run
  uint64_t window_;
  uint64_t clock_ = 0;
  Run runs_[kOpenRuns];
  // Where the last op of a few recently closed runs ended, by key (fd, op,
  // layer), so a run cut by its window still counts its first op sequential.
  struct Closed {
    int32_t fd = -1;
    uint8_t op = 0, layer = 0;
    int64_t end = -1;
  };
  static constexpr int kClosed = 4;
  Closed closed_[kClosed];
  int closed_next_ = 0;
  uint64_t dropped_ = 0;
};
constexpr size_t Compressor::RunsOffset() { return offsetof(Compressor, runs_); }
static_assert(offsetof(Run, op) == 0 && offsetof(Run, layer) == 1 && offsetof(Run, fd) == 4 && sizeof(Op) == 1 &&
                  sizeof(Layer) == 1,
              "Compressor::SameKey reads (op, layer, fd) as the run's first 8 bytes");
static_assert(sizeof(Run) % 64 == 0, "a run is whole cache lines");

// Past the detail budget, closed runs fold into per-interval aggregates, one
// per (file, op, layer, request size, errno) and interval: count, bytes and
// time stay exact, the request size is exact (it is in the key), and each op
// is classed sequential (it starts where the previous op on that key ended),
// strided (same step as the previous one) or random. No allocation: a fixed
// table; when it is full the least recently used aggregate is emitted early.
// Not thread-safe: owned by one thread (or whoever holds its slot's lock).
class Aggregator {
 public:
  static constexpr int kEntries = 16;
  void Fold(const Run& r, uint64_t epoch, RunSink* sink);
  // One successful data op at a known offset, straight from the call (past
  // the detail budget, without a run): folded and 0 returned if it is random
  // on its key; not folded if it continues the key's previous op (1) or
  // repeats its step (2): the caller opens a run of it, which folds later,
  // so contiguous and strided ops still compress.
  int FoldOp(const RawOp& o, uint64_t epoch, RunSink* sink);
  void CloseBefore(uint64_t epoch, RunSink* sink);  // emits aggregates of earlier intervals
  void CloseAll(RunSink* sink);
  void Reset() { n_ = last_ = 0; }
  int open() const { return n_; }
  bool Sane() const { return n_ >= 0 && n_ <= kEntries && last_ >= 0 && last_ < kEntries; }

 private:
  struct Entry {
    Run r;
    uint64_t epoch;
    int64_t prev_start, prev_end, prev_delta;
  };
  void Emit(int i, RunSink* sink);
  // The entry of key (file, op, layer, size, errno; fd if no file) in epoch,
  // else a free one (the least recently used emitted if full): *made is then
  // true and the caller fills it.
  Entry& Find(uint64_t file_id, Op op, Layer layer, int64_t size, int32_t err, int32_t fd, uint64_t epoch, RunSink* sink,
              bool* made);
  Entry e_[kEntries];
  int n_ = 0;
  int last_ = 0;  // the entry folded into last
  uint64_t clock_ = 0;
};

// ---- inline: the tracer's past-budget path (RecordSlow) calls these per op.
__attribute__((always_inline)) inline bool Compressor::TakeOrRelease(const RawOp& o, RunSink* sink) {
  int i = last_;
  auto key = [&](const Run& r) { return r.op == o.op && r.fd == o.fd && r.layer == o.layer; };
  if (i >= n_ || !key(runs_[i]))
    for (i = 0; i < n_ && !key(runs_[i]); ++i) {
    }
  if (i == n_) return false;
  Run& r = runs_[i];
  if (Continues(r, o, 0)) {
    Extend(i, o);
    return true;
  }
  if (CanStride(r, o)) {
    r.strided = 1;
    r.stride = WrapSub(o.offset, r.offset);
    Extend(i, o);
    return true;
  }
  Emit(i, sink);
  return false;
}

__attribute__((always_inline)) inline Aggregator::Entry& Aggregator::Find(uint64_t file_id, Op op, Layer layer, int64_t size, int32_t err, int32_t fd,
                                     uint64_t epoch, RunSink* sink, bool* made) {
  auto same = [&](const Entry& e) {
    return e.epoch == epoch && e.r.file_id == file_id && e.r.op == op && e.r.layer == layer && e.r.size == size &&
           e.r.err == err && (file_id || e.r.fd == fd);
  };
  int i = last_;  // the usual case: the same key as the previous run
  if (i >= n_ || !same(e_[i]))
    for (i = 0; i < n_ && !same(e_[i]); ++i) {
    }
  ++clock_;
  *made = i == n_;
  if (i == n_) {
    if (n_ == kEntries) {
      int lru = 0;
      for (int k = 1; k < n_; ++k)
        if (e_[k].r.last_use < e_[lru].r.last_use) lru = k;
      Emit(lru, sink);
    }
    i = n_++;
  }
  last_ = i;
  return e_[i];
}

__attribute__((always_inline)) inline int Aggregator::FoldOp(const RawOp& o, uint64_t epoch, RunSink* sink) {
  bool made;
  Entry& e = Find(o.file_id, o.op, o.layer, o.size, o.err, o.fd, epoch, sink, &made);
  Run& a = e.r;
  if (made) {
    a.op = o.op;
    a.layer = o.layer;
    a.agg = 1;
    a.strided = 0;
    a.fd = o.fd;
    a.err = o.err;
    a.comm_size = 0;
    a.file_id = o.file_id;
    a.offset = a.next_offset = -1;
    a.stride = 0;
    a.size = o.size;
    a.count = a.bytes = a.dur = 0;
    a.t_start = o.t0;
    a.t_end = o.t1;
    a.n_seq = a.n_strided = a.n_random = 0;
    e.epoch = epoch;
    e.prev_start = e.prev_end = -1;
    e.prev_delta = 0;
  } else if (e.prev_end == o.offset) {
    return 1;  // continues the previous op: a run of its own
  } else if (e.prev_start >= 0 && e.prev_delta != 0 && o.offset - e.prev_start == e.prev_delta) {
    return 2;  // the same step again: a strided run
  }
  // As Fold of a run of this one op. The op's fields in locals first: the
  // stores below could alias o for the compiler, which would reload them.
  const int64_t off = o.offset, res = o.result, end = WrapAdd(o.offset, o.result > 0 ? o.result : 0);
  const uint64_t t0 = o.t0, t1 = o.t1;
  const int64_t prev_start = e.prev_start;
  Run* __restrict ap = &a;
  ++ap->count;
  if (res > 0) ap->bytes += static_cast<uint64_t>(res);
  ap->dur += t1 - t0;
  if (t0 < ap->t_start) ap->t_start = t0;
  if (t1 > ap->t_end) ap->t_end = t1;
  ap->last_use = clock_;
  ++ap->n_random;
  if (prev_start >= 0) e.prev_delta = off - prev_start;
  e.prev_start = off;
  e.prev_end = end;
  return 0;
}

}  // namespace iosonar::trace
