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

void Compressor::Emit(int i, RunSink* sink) {
  if (!sink->Put(runs_[i])) ++dropped_;
  runs_[i] = runs_[--n_];
}

void Compressor::Add(const RawOp& o, RunSink* sink) {
  // Path-only metadata ops (stat by name, unlink, ...) key on the file id.
  const bool by_path = o.fd < 0;
  for (int i = 0; i < n_; ++i) {
    Run& r = runs_[i];
    if (r.op != o.op || r.fd != o.fd || r.layer != o.layer) continue;
    if (by_path && r.file_id != o.file_id) continue;
    if (Continues(r, o)) {
      Extend(i, o);
      return;
    }
    Emit(i, sink);  // same key, cannot continue: the old run ends here
    break;
  }
  ++clock_;
  if (n_ == kOpenRuns) {  // capacity: close the least recently used run
    int lru = 0;
    for (int i = 1; i < n_; ++i)
      if (runs_[i].last_use < runs_[lru].last_use) lru = i;
    Emit(lru, sink);
  }
  last_ = n_;
  Run& r = runs_[n_++];
  r.op = o.op;
  r.layer = o.layer;
  r.fd = o.fd;
  r.err = o.err;
  r.file_id = o.file_id;
  r.offset = o.offset;
  r.next_offset = o.offset >= 0 ? o.offset + (o.result > 0 ? o.result : 0) : -1;
  r.size = o.size;
  r.count = 1;
  r.bytes = o.result > 0 ? static_cast<uint64_t>(o.result) : 0;
  r.t_start = o.t0;
  r.t_end = o.t1;
  r.dur = o.t1 - o.t0;
  r.last_use = clock_;
  // Ops that never continue (failed, or metadata ops on an fd other than
  // repeated seeks/syncs) could close at once, but keeping them open lets a
  // loop of identical calls (stat in a loop, fsync after each write) compress.
}

void Compressor::CloseFd(int32_t fd, RunSink* sink) {
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
    if (now - runs_[i].t_start >= window_ && now >= runs_[i].t_start) Emit(i, sink);
    else ++i;
  }
}

void Compressor::CloseAll(RunSink* sink) {
  // Emit in start order so a reader sees runs roughly as they happened.
  while (n_ > 0) {
    int first = 0;
    for (int i = 1; i < n_; ++i)
      if (runs_[i].t_start < runs_[first].t_start) first = i;
    Emit(first, sink);
  }
}

}  // namespace iosonar::trace
