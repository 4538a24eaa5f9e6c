#include "exporters/trace/compress.h"

namespace iosonar::trace {

const char* OpName(Op op) {
  static const char* const kNames[kOpCount] = {
#define X(id, name) name,
#include "core/records/io_ops.def"
#undef X
  };
  return op < kOpCount ? kNames[op] : "unknown";
}

const char* LayerName(Layer l) {
  switch (l) {
    case kPosix: return "posix";
    case kStdio: return "stdio";
    case kMpiio:
    case kMpiioCollective: return "mpiio";
  }
  return "posix";
}

void Compressor::Emit(int i, RunSink* sink) {
  if (!sink->Put(runs_[i])) dropped_ += runs_[i].count;  // ops, as tracer.dropped counts them
  if (i != --n_) runs_[i] = runs_[n_];
}

void Compressor::EmitRemember(int i, RunSink* sink) {
  const Run& r = runs_[i];
  if (IsDataOp(r.op) && r.fd >= 0) {
    // The index masked, not trusted: a copy read from another process's
    // memory (a drainer's) is written here too.
    const int k = static_cast<int>(static_cast<unsigned>(closed_next_) % kClosed);
    Closed& c = closed_[k];
    closed_next_ = (k + 1) % kClosed;
    c.fd = r.fd;
    c.op = r.op;
    c.layer = r.layer;
    // A run ending in a failed op, at unknown offsets, or with a short op
    // inside a strided run: its end is not known, nothing continues it.
    c.end = -1;
    if (r.err == 0 && r.offset >= 0) {
      if (!r.strided) c.end = r.next_offset;
      else if (r.bytes == r.count * static_cast<uint64_t>(r.size)) c.end = WrapAdd(WrapSub(r.next_offset, r.stride), r.size);
    }
  }
  Emit(i, sink);
}

bool Compressor::ContinuesEnd(const Run& r, const RawOp& o) {
  if (!IsDataOp(o.op) || o.err != 0 || o.offset < 0 || r.err != 0 || r.offset < 0) return false;
  if (!r.strided) return o.offset == r.next_offset;
  return r.bytes == r.count * static_cast<uint64_t>(r.size) && o.offset == WrapAdd(WrapSub(r.next_offset, r.stride), r.size);
}

bool Compressor::ContinuesClosed(const RawOp& o) {
  if (!IsDataOp(o.op) || o.err != 0 || o.offset < 0) return false;
  for (Closed& c : closed_)
    if (c.fd == o.fd && c.op == o.op && c.layer == o.layer && c.end >= 0) {
      bool cont = c.end == o.offset;
      c = Closed{};  // the key has an open run again: it knows its own end
      return cont;
    }
  return false;
}

void Compressor::Add(const RawOp& o, RunSink* sink, int32_t extra) {
  // Path-only metadata ops (stat by name, unlink, ...) key on the file id.
  const bool by_path = o.fd < 0;
  for (int i = 0; i < n_; ++i) {
    Run& r = runs_[i];
    if (r.op != o.op || r.fd != o.fd || r.layer != o.layer) continue;
    if (by_path && r.file_id != o.file_id) continue;
    if (Continues(r, o, extra)) {
      Extend(i, o);
      return;
    }
    if (CanStride(r, o)) {
      r.strided = 1;
      r.stride = o.offset - r.offset;
      Extend(i, o);
      return;
    }
    const bool seq = ContinuesEnd(r, o);
    Emit(i, sink);  // same key, cannot continue: the old run ends here
    StartRun(o, sink, seq, extra);
    return;
  }
  StartRun(o, sink, ContinuesClosed(o), extra);
}

void Compressor::StartRun(const RawOp& o, RunSink* sink, bool first_seq, int32_t extra) {
  ++clock_;
  if (n_ == kOpenRuns) {  // capacity: close the least recently used run
    int lru = 0;
    for (int i = 1; i < n_; ++i)
      if (runs_[i].last_use < runs_[lru].last_use) lru = i;
    EmitRemember(lru, sink);
  }
  last_ = n_;
  Start(n_++, o, extra, first_seq);
  // Ops that never continue (failed, or metadata ops on an fd other than
  // repeated seeks/syncs) could close at once, but keeping them open lets a
  // loop of identical calls (stat in a loop, fsync after each write) compress.
}

void Compressor::AddMissed(const RawOp& o, RunSink* sink, int32_t extra) {
  if (last_ < n_) {
    Run& r = runs_[last_];
    if (r.op == o.op && r.fd == o.fd && r.layer == o.layer && (o.fd >= 0 || r.file_id == o.file_id)) {
      // The key's one open run, which TryExtend found does not continue o.
      if (CanStride(r, o)) {
        r.strided = 1;
        r.stride = o.offset - r.offset;
        Extend(last_, o);
        return;
      }
      const bool seq = ContinuesEnd(r, o);
      if (!sink->Put(r)) dropped_ += r.count;
      ++clock_;
      Start(last_, o, extra, seq);
      return;
    }
  }
  Add(o, sink, extra);
}

void Compressor::Start(int i, const RawOp& o, int32_t extra, bool first_seq) {
  Run& r = runs_[i];
  r.op = o.op;
  r.layer = o.layer;
  r.fd = o.fd;
  r.err = o.err;
  r.comm_size = extra;
  r.file_id = o.file_id;
  r.offset = o.offset;
  r.next_offset = o.offset >= 0 ? o.offset + (o.result > 0 ? o.result : 0) : -1;
  r.strided = 0;
  r.stride = 0;
  r.agg = 0;
  r.size = o.size;
  r.count = 1;
  r.bytes = o.result > 0 ? static_cast<uint64_t>(o.result) : 0;
  r.t_start = o.t0;
  r.t_end = o.t1;
  r.dur = o.t1 - o.t0;
  r.last_use = clock_;
  r.n_seq = first_seq ? 1 : 0;
  r.n_strided = r.n_random = 0;
}

void Compressor::CloseFd(int32_t fd, RunSink* sink) {
  for (Closed& c : closed_)  // a later op on this fd number is on another open file
    if (c.fd == fd) c = Closed{};
  // Emit in start order so a reader sees runs roughly as they happened.
  for (;;) {
    int first = -1;
    for (int i = 0; i < n_; ++i)
      if (runs_[i].fd == fd && (first < 0 || runs_[i].t_start < runs_[first].t_start)) first = i;
    if (first < 0) return;
    Emit(first, sink);
  }
}

void Compressor::CloseExpired(uint64_t now, RunSink* sink) {
  if (window_ == 0) return;
  for (int i = 0; i < n_;) {
    if (now - runs_[i].t_start >= window_ && now >= runs_[i].t_start) EmitRemember(i, sink);
    else ++i;
  }
}

void Compressor::CloseAll(RunSink* sink) {
  // Emit in start order so a reader sees runs roughly as they happened.
  while (n_ > 0) {
    int first = 0;
    for (int i = 1; i < n_; ++i)
      if (runs_[i].t_start < runs_[first].t_start) first = i;
    EmitRemember(first, sink);
  }
}

// ---------------------------------------------------------------- aggregates
void Aggregator::Emit(int i, RunSink* sink) {
  sink->Put(e_[i].r);
  if (i != --n_) e_[i] = e_[n_];
}

void Aggregator::Fold(const Run& r, uint64_t epoch, RunSink* sink) {
  bool made;
  Entry& e = Find(r.file_id, r.op, r.layer, r.size, r.err, r.fd, epoch, sink, &made);
  if (made) {
    e.r = r;
    e.r.agg = 1;
    e.r.strided = 0;
    e.r.stride = 0;
    e.r.offset = -1;
    e.r.next_offset = -1;
    e.r.count = 0;
    e.r.bytes = 0;
    e.r.dur = 0;
    e.r.n_seq = e.r.n_strided = e.r.n_random = 0;
    e.epoch = epoch;
    e.prev_start = e.prev_end = -1;
    e.prev_delta = 0;
  }
  Run& a = e.r;
  a.count += r.count;
  a.bytes += r.bytes;
  a.dur += r.dur;
  if (r.t_start < a.t_start) a.t_start = r.t_start;
  if (r.t_end > a.t_end) a.t_end = r.t_end;
  a.last_use = clock_;
  if (r.offset < 0 || r.size <= 0) {
    a.n_seq += r.count;  // no offsets (a pipe, O_APPEND): a stream
    return;
  }
  // The run's first op against the previous op on this key; the rest of the
  // run continues it by definition.
  if (e.prev_end == r.offset) {
    ++a.n_seq;
  } else if (e.prev_start >= 0 && r.offset - e.prev_start == e.prev_delta && e.prev_delta != 0) {
    ++a.n_strided;
  } else {
    ++a.n_random;
  }
  if (e.prev_start >= 0) e.prev_delta = r.offset - e.prev_start;
  int64_t step = r.strided ? r.stride : r.size;
  if (r.count > 1 && !r.strided) {
    a.n_seq += r.count - 1;
  } else if (r.count > 1) {
    // The run's second op sets its step: strided only if that is the step
    // seen before; the ops after it repeat the step.
    ++(step == e.prev_delta ? a.n_strided : a.n_random);
    a.n_strided += r.count - 2;
  }
  int64_t last = r.offset + static_cast<int64_t>(r.count - 1) * step;
  if (r.count > 1) e.prev_delta = step;
  e.prev_start = last;
  // Where the last op ended: a contiguous run knows it exactly (a short
  // transfer ends early; the op after it continues there).
  e.prev_end = !r.strided && r.next_offset >= 0 ? r.next_offset : last + r.size;
}

void Aggregator::CloseBefore(uint64_t epoch, RunSink* sink) {
  for (int i = 0; i < n_;) {
    if (e_[i].epoch < epoch) Emit(i, sink);
    else ++i;
  }
}

void Aggregator::CloseAll(RunSink* sink) {
  while (n_ > 0) Emit(n_ - 1, sink);
}

}  // namespace iosonar::trace
