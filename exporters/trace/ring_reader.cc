// The ring reader of the node agent (ring_agent.h): hostile input, copied and checked.
#include "exporters/trace/ring_agent.h"

#include <algorithm>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "core/base/timeutil.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"

namespace iosonar::trace {
namespace {

// ---- the SIGBUS guard: a ring truncated by its owner while the agent reads it
// volatile, and fenced below: the compiler must neither drop the store before
// the guarded accesses (nothing it can see reads it) nor move them across it.
thread_local sigjmp_buf* volatile t_guard = nullptr;

void OnBus(int sig, siginfo_t*, void*) {
  if (sigjmp_buf* g = t_guard) siglongjmp(*g, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Runs f (plain copies and atomics on the mapping, nothing to unwind) and
// returns false if the mapping faulted under it.
template <typename F>
__attribute__((noinline)) bool Guarded(F&& f) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 0) != 0) {
    t_guard = nullptr;
    return false;
  }
  t_guard = &jb;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  f();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_guard = nullptr;
  return true;
}


// Runs appended in the agent's memory (never fails: room for every run a
// compressor and an aggregator can hold).
struct ListSink final : RunSink {
  static constexpr int kCap = Compressor::kOpenRuns + Aggregator::kEntries;
  Run runs[kCap];
  int n = 0;
  bool Put(const Run& r) override {
    if (n >= kCap) return false;
    runs[n++] = r;
    return true;
  }
};

bool JobTextOk(const char* s) {
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

void InstallRingGuard() {
  struct sigaction sa {};
  sa.sa_sigaction = OnBus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;  // not blocked after a siglongjmp out of the handler
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
}

// ---------------------------------------------------------------- the reader
struct RingReader::Impl {
  // One slot copied out of the ring (the compressor and aggregator run here).
  alignas(Slot) unsigned char slot_mem[sizeof(Slot)];
  Slot& slot() { return *reinterpret_cast<Slot*>(slot_mem); }
  ListSink extra;
  // The path table as far as this ring's runs need it: copies of the probed
  // entries, NUL-terminated, at their own indices (LookupPath reads it).
  PathSlot* paths = nullptr;
  std::vector<uint32_t> touched;
  FmtContext c;
  char line[16384];
};

RingReader::RingReader() : impl_(new Impl()) {
  impl_->paths = static_cast<PathSlot*>(calloc(kPathSlots, sizeof(PathSlot)));
  if (!impl_->paths) throw std::bad_alloc();
}

RingReader::~RingReader() {
  free(impl_->paths);
  delete impl_;
}

namespace {

bool CheckHeader(RingHeader& h, std::string* why) {
  auto bad = [&](const char* w) {
    *why = w;
    return false;
  };
  if (h.magic != kRingMagic) return bad("not a ring (magic)");
  if (h.version != kRingVersion) return bad("ring version not this agent's");
  if (h.header_size != sizeof(RingHeader) || h.slot_size != sizeof(Slot) || h.path_slot_size != sizeof(PathSlot) ||
      h.compressor_size != sizeof(Compressor) || h.run_size != sizeof(Run) || h.max_threads != kMaxThreads ||
      h.path_slots != kPathSlots)
    return bad("layout sizes differ from this agent's");
  if (h.slots_hwm > kMaxThreads) return bad("slots_hwm out of range");
  if (h.cmdline_len >= sizeof h.cmdline) return bad("cmdline_len out of range");
  if (!memchr(h.job, 0, sizeof h.job)) return bad("job id not terminated");
  if (!JobTextOk(h.job)) return bad("job id with control characters or quotes");
  if (!(std::isfinite(h.ns_per_tick) && h.ns_per_tick > 1e-4 && h.ns_per_tick < 1e4)) return bad("clock rate out of range");
  if (h.real0 <= 0 || h.real0 > (int64_t{1} << 62)) return bad("start time out of range");
  if (h.pid <= 0) return bad("pid out of range");
  if (h.window_ns < 0) return bad("window out of range");
  h.host[sizeof h.host - 1] = '\0';  // not used: the agent's own host name goes out
  return true;
}

}  // namespace

bool RingReader::Header(const char* base, size_t len, RingHeader* h, std::string* why) {
  if (len < kRingBytes) {
    *why = "shorter than a ring";
    return false;
  }
  if (!Guarded([&] { memcpy(static_cast<void*>(h), base, sizeof *h); })) {
    *why = "truncated while read";
    return false;
  }
  return CheckHeader(*h, why);
}

bool RingReader::Take(char* base, size_t len, const TakeParams& p, RingTake* out, std::string* why) {
  Impl& m = *impl_;
  *out = RingTake{};
  RingHeader h;
  if (!Header(base, len, &h, why)) return false;
  if (h.pid != p.name_pid) {
    *why = "pid in the header is not the file name's";
    return false;
  }
  if (h.finished) {  // sent everything itself: nothing to ship
    out->remove = true;
    return true;
  }
  const bool agent = h.agent != 0;
  if (!agent && p.alive) return true;  // sends for itself while it lives
  const bool whole = !p.alive || h.ended == 1 || (h.ended >= 2 && p.exec_settled);
  const bool locks = p.alive;

  FmtContext& c = m.c;
  BuildPrefixes(&c, h.stream, p.host, h.job, h.pid, h.rank, static_cast<int64_t>(p.uid));
  c.tick0 = h.tick0;
  c.real0 = h.real0;
  c.ns_per_tick = h.ns_per_tick;
  const int64_t mono = MonotonicNs();
  const uint64_t now_ticks = h.use_tsc ? __rdtsc() : static_cast<uint64_t>(mono);
  if (h.use_tsc && h.mono0 > 0 && h.mono0 < mono - 100000000 && now_ticks > h.tick0) {
    // Same node, same TSC: the rate over the process's whole life (an agent-mode
    // process never recalibrates its header's).
    double r = static_cast<double>(mono - h.mono0) / static_cast<double>(now_ticks - h.tick0);
    if (std::isfinite(r) && r > 1e-4 && r < 1e4) c.ns_per_tick = r;
  }
  c.paths = m.paths;

  uint64_t seq = h.seq;  // processes that sent for themselves: continue after their last line
  auto emit = [&](auto&& fill) {
    JsonLine j(m.line, sizeof m.line);
    fill(j);
    if (!j.ok()) return;
    out->lines.append(m.line, j.size());
    ++out->nlines;
  };
  auto tracer_record = [&](const char* action, int64_t ts, uint64_t s, uint64_t raw, uint64_t records, uint64_t dropped) {
    emit([&](JsonLine& j) { FormatTracerRecord(j, c, h, action, ts, s, TracerCounts{raw, records, dropped}); });
  };
  if (!h.started) {
    tracer_record("start", h.real0, agent ? AgentSeq(kMaxThreads, 0) : seq++, 0, 0, 0);
    out->start = true;
  }
  if (locks && !Guarded([&] { __atomic_store_n(&RingHead(base)->drainer_pid, static_cast<int32_t>(getpid()), __ATOMIC_RELAXED); })) {
    *why = "truncated while read";
    *out = RingTake{};
    return false;
  }

  uint64_t raw = h.raw_ops_gone, records = 0, dropped = h.dropped;
  for (uint32_t i = 0; i < h.slots_hwm; ++i) records += h.shipped[i];
  if (!agent) records = h.records;
  const int32_t me = static_cast<int32_t>(getpid());
  for (uint32_t i = 0; i < h.slots_hwm; ++i) {
    // Bounded memory: a live ring's other slots wait for the next pass; a
    // finished ring's lines go to the output in parts (TakeParams::spill).
    out->max_bytes = std::max(out->max_bytes, out->lines.size());
    if (!whole && out->lines.size() >= (size_t{32} << 20)) break;
    if (whole && p.spill && out->lines.size() >= p.spill_bytes) {
      if (!p.spill(out->lines, out->nlines)) {
        *out = RingTake{};
        return true;
      }
      out->spilled += out->nlines;
      out->lines.clear();
      out->nlines = 0;
    }
    Slot& s = m.slot();
    Slot* sh = RingSlots(base) + i;
    m.extra.n = 0;
    int nbuf = 0, taken = 0;
    bool busy = false, bad = false;
    bool ok = Guarded([&] {
      bool held = false;
      if (locks) {
        int expect = 0;
        // A thread holds its lock for the bookkeeping of one call (tens of ns): worth a short wait.
        for (int spin = 0; spin < 2000; ++spin) {
          expect = 0;
          if (__atomic_compare_exchange_n(&sh->lock, &expect, kLockDrainer, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) break;
          __builtin_ia32_pause();
        }
        if (expect != 0) {
          // A lock left by an agent that died is taken back; a thread's is respected.
          int dp = __atomic_load_n(&RingHead(base)->drainer_pid, __ATOMIC_RELAXED);
          if (expect != kLockDrainer || dp == me || (dp > 0 && !(kill(dp, 0) != 0 && errno == ESRCH)) ||
              !__atomic_compare_exchange_n(&sh->lock, &expect, kLockDrainer, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            busy = true;
            return;
          }
        }
        held = true;
      }
      s.tid = __atomic_load_n(&sh->tid, __ATOMIC_RELAXED);
      s.raw_ops = __atomic_load_n(&sh->raw_ops, __ATOMIC_RELAXED);
      nbuf = __atomic_load_n(&sh->nbuf, __ATOMIC_RELAXED);
      memcpy(s.comp_mem, sh->comp_mem, sizeof s.comp_mem);
      memcpy(s.agg_mem, sh->agg_mem, sizeof s.agg_mem);
      if (nbuf < 0 || nbuf > kBufRuns || !s.comp().Sane() || !s.agg().Sane()) {
        bad = true;
      } else {
        memcpy(static_cast<void*>(s.buf), sh->buf, static_cast<size_t>(nbuf) * sizeof(Run));
        if (whole) {
          s.comp().CloseAll(&m.extra);
          s.agg().CloseAll(&m.extra);
        } else if (kBufRuns - nbuf >= ListSink::kCap) {
          // Runs whose window ended while the program computes: closed into
          // the slot's buffer (in the ring), taken from there with the rest.
          if (h.window_ns > 0) s.comp().CloseExpired(now_ticks, &m.extra);
          if (h.budget_interval_ticks && s.agg().open()) s.agg().CloseBefore(now_ticks / h.budget_interval_ticks, &m.extra);
          if (m.extra.n > 0) {
            memcpy(static_cast<void*>(sh->buf + nbuf), m.extra.runs, static_cast<size_t>(m.extra.n) * sizeof(Run));
            memcpy(static_cast<void*>(s.buf + nbuf), m.extra.runs, static_cast<size_t>(m.extra.n) * sizeof(Run));
            memcpy(sh->comp_mem, s.comp_mem, sizeof s.comp_mem);
            memcpy(sh->agg_mem, s.agg_mem, sizeof s.agg_mem);
            nbuf += m.extra.n;
            __atomic_store_n(&sh->nbuf, nbuf, __ATOMIC_RELAXED);
            m.extra.n = 0;
          }
        }
        taken = nbuf;
      }
      if (held) __atomic_store_n(&sh->lock, 0, __ATOMIC_RELEASE);
    });
    if (!ok) {
      *why = "truncated while read";
      *out = RingTake{};
      return false;
    }
    if (bad) {
      *why = "slot tables out of range";
      *out = RingTake{};
      return false;
    }
    if (busy) {
      if (whole) {  // a thread on its way out still holds it: the whole ring next pass
        *out = RingTake{};
        return true;
      }
      continue;
    }
    raw += s.raw_ops;
    dropped += s.comp().dropped();
    // The files these runs name, copied (and terminated) from the ring's path table.
    for (auto ix : m.touched) m.paths[ix].id = 0;
    m.touched.clear();
    // An entry copied empty: the end of a probe chain (LookupPath stops at the
    // local table's untouched zeros the same way).
    constexpr uint64_t kCopiedEmpty = ~uint64_t{0} - 1;
    auto want = [&](const Run& r) {
      if (!r.file_id) return;
      for (int probe = 0; probe < 16; ++probe) {
        uint32_t ix = static_cast<uint32_t>((r.file_id + static_cast<uint64_t>(probe)) % kPathSlots);
        PathSlot& d = m.paths[ix];
        if (d.id == r.file_id || d.id == kCopiedEmpty) return;
        if (d.id != 0) continue;  // copied already: another file's
        bool copied = Guarded([&] { memcpy(static_cast<void*>(&d), RingPaths(base) + ix, sizeof d); });
        d.path[sizeof d.path - 1] = '\0';
        m.touched.push_back(ix);
        if (!copied || d.id == 0) {
          d.id = kCopiedEmpty;
          return;
        }
        if (d.id == r.file_id) return;
      }
    };
    const int total = nbuf + m.extra.n;
    for (int k = 0; k < total; ++k) want(k < nbuf ? s.buf[k] : m.extra.runs[k - nbuf]);
    const uint64_t base_seq = h.shipped[i];
    for (int k = 0; k < total; ++k) {
      const Run& r = k < nbuf ? s.buf[k] : m.extra.runs[k - nbuf];
      const uint64_t sq = agent ? AgentSeq(i, base_seq + static_cast<uint64_t>(k)) : seq++;
      emit([&](JsonLine& j) { FormatRun(j, c, r, s.tid, sq); });
      ++out->runs;
    }
    records += static_cast<uint64_t>(total);
    if (agent && !whole && taken > 0) out->slots.emplace_back(i, static_cast<uint32_t>(taken));
  }
  for (auto ix : m.touched) m.paths[ix].id = 0;
  m.touched.clear();
  if (whole) {
    const char* action = !agent || h.ended == 0 ? "killed" : h.ended >= 2 ? "exec" : "exit";
    // A killed process's uncollected AIO ops (its exit path counts them itself).
    if (action[0] == 'k') dropped = KilledDropped(h, dropped);
    tracer_record(action, NowNs(), agent ? AgentSeq(kMaxThreads, 1) : seq++, raw, records, dropped);
    out->remove = true;
    out->finished = true;
    out->exec_end = agent && p.alive && h.ended == 2;
  }
  out->max_bytes = std::max(out->max_bytes, out->lines.size());
  return true;
}

bool RingReader::Commit(char* base, size_t len, const RingTake& t) {
  if (len < kRingBytes) return false;
  bool keep = false;
  bool ok = Guarded([&] {
    RingHeader* h = RingHead(base);
    if (t.start) __atomic_store_n(&h->started, 1u, __ATOMIC_RELEASE);
    if (t.exec_end) {  // its exec may have failed since: then it lives on
      uint32_t expect = 2;
      keep = !__atomic_compare_exchange_n(&h->ended, &expect, 3u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
             expect == 0;
    }
    for (auto [i, k] : t.slots) {
      if (i >= kMaxThreads) continue;
      Slot* sh = RingSlots(base) + i;
      int expect = 0;
      bool held = false;
      for (int spin = 0; spin < 100000 && !held; ++spin) {
        expect = 0;
        held = __atomic_compare_exchange_n(&sh->lock, &expect, kLockDrainer, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
        if (!held) __builtin_ia32_pause();
      }
      if (!held) continue;  // shipped again next pass under the same event.seq: deduplicated
      int nbuf = __atomic_load_n(&sh->nbuf, __ATOMIC_RELAXED);
      if (nbuf < 0 || nbuf > kBufRuns || static_cast<int>(k) > nbuf) {
        nbuf = 0;  // not what a tracer writes: its owner's loss only
      } else {
        memmove(static_cast<void*>(sh->buf), sh->buf + k, static_cast<size_t>(nbuf - static_cast<int>(k)) * sizeof(Run));
        nbuf -= static_cast<int>(k);
        h->shipped[i] += k;
      }
      __atomic_store_n(&sh->nbuf, nbuf, __ATOMIC_RELAXED);
      __atomic_store_n(&sh->lock, 0, __ATOMIC_RELEASE);
    }
  });
  return ok && !keep;
}

}  // namespace iosonar::trace
