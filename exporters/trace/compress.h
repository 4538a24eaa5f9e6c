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
  uint64_t n_seq, n_strided, n_random;  // aggregates: ops continuing the previous one, at its stride, elsewhere
};

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
  __attribute__((always_inline)) bool TryExtend(const RawOp& o, int32_t extra = 0) {
    if (last_ >= n_) return false;
    Run& r = runs_[last_];
    if (r.fd != o.fd || r.op != o.op || r.layer != o.layer || !Continues(r, o, extra)) return false;
    Extend(last_, o);
    return true;
  }
  // Closes every open run on fd (the fd was closed or replaced).
  void CloseFd(int32_t fd, RunSink* sink);
  // Closes runs whose window began at or before now - window.
  void CloseExpired(uint64_t now, RunSink* sink);
  void CloseAll(RunSink* sink);
  void Reset() { n_ = 0; last_ = 0; }  // forget open runs (after fork, in the child)
  int open_runs() const { return n_; }
  uint64_t dropped() const { return dropped_; }
  // The indices are in range (a copy read from another process's memory is checked before use).
  bool Sane() const { return n_ >= 0 && n_ <= kOpenRuns && last_ >= 0 && last_ < kOpenRuns; }

 private:
  void Emit(int i, RunSink* sink);
  void Start(int i, const RawOp& o, int32_t extra);  // runs_[i] becomes a new run of o
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
  __attribute__((always_inline)) void Extend(int i, const RawOp& o) {
    Run& r = runs_[i];
    ++r.count;
    if (o.result > 0) {
      r.bytes += static_cast<uint64_t>(o.result);
      if (o.offset >= 0) r.next_offset = o.offset + (r.strided ? r.stride : o.result);
    }
    if (o.t1 > r.t_end) r.t_end = o.t1;
    r.dur += o.t1 - o.t0;
    r.last_use = ++clock_;
    last_ = i;
  }
  Run runs_[kOpenRuns];
  int n_ = 0;
  int last_ = 0;  // index of the most recently extended or opened run
  uint64_t window_;
  uint64_t clock_ = 0;
  uint64_t dropped_ = 0;
};

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
  Entry e_[kEntries];
  int n_ = 0;
  int last_ = 0;  // the entry folded into last
  uint64_t clock_ = 0;
};

}  // namespace iosonar::trace
