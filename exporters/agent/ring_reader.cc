// The ring reader of the node agent (ring_agent.h): hostile input, copied and checked.
#include "exporters/agent/ring_agent.h"
#include "exporters/agent/thread_merge.h"

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
  std::vector<TakenRun> items, scope1;
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

namespace {

// The first k runs slot i holds are held by the output: they leave it, by
// one store of shipped (the buffer is a circle: nothing moves), so an agent
// killed at any instant leaves the slot whole. The slot's intent stays:
// committed now, it tells a take after an agent that died between two slots'
// commits that its batch was held. k beyond what the slot holds is not what
// an agent wrote: everything leaves (the owner's loss only).
void CommitSlot(char* base, uint32_t i, uint32_t k) {
  RingHeader* h = RingHead(base);
  const uint32_t shipped = __atomic_load_n(&h->shipped[i], __ATOMIC_RELAXED);
  const uint32_t tail = __atomic_load_n(&RingSlots(base)[i].tail, __ATOMIC_ACQUIRE);
  const uint32_t held = SlotHeld(tail, shipped);
  __atomic_store_n(&h->shipped[i], k <= held && held <= static_cast<uint32_t>(kBufRuns) ? shipped + k : tail,
                   __ATOMIC_RELEASE);
}

// Every slot's intent gone: a batch finished, or a new one about to start.
void ClearIntents(char* base, uint32_t slots) {
  for (uint32_t i = 0; i < slots; ++i) __atomic_store_n(&RingSlots(base)[i].intent_k, 0u, __ATOMIC_RELAXED);
}

// The batch's merged count joins the process's (copy: the header copy too).
void CommitMerged(char* base, RingHeader* copy) {
  RingHeader* h = RingHead(base);
  const uint64_t m = __atomic_load_n(&h->intent_merged, __ATOMIC_ACQUIRE);
  const uint64_t total = __atomic_load_n(&h->agent_merged, __ATOMIC_RELAXED) + m;
  __atomic_store_n(&h->agent_merged, total, __ATOMIC_RELAXED);
  __atomic_store_n(&h->intent_merged, uint64_t{0}, __ATOMIC_RELEASE);
  if (copy) {
    copy->agent_merged = total;
    copy->intent_merged = 0;
  }
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
  // The owner truncated the ring under us (SIGBUS guarded): nothing taken.
  auto truncated = [&] {
    *why = "truncated while read";
    *out = RingTake{};
    return false;
  };
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
    return truncated();
  }

  uint64_t raw = h.raw_ops_gone, records = 0, dropped = h.dropped;
  // Agent mode: the batch an earlier take handed to the output (its intents).
  // An agent commits only what its output held; one that died while it
  // committed left some slots committed: the rest are committed now. One that
  // failed to flush, or died before committing, left none: exactly those runs
  // are taken again (nothing else from those slots) and merge into the same lines.
  uint32_t ik[kMaxThreads] = {}, ib[kMaxThreads] = {};
  bool exact = false;
  if (agent) {
    if (!Guarded([&] {
          for (uint32_t i = 0; i < h.slots_hwm; ++i) {
            const Slot* sh = RingSlots(base) + i;
            ik[i] = __atomic_load_n(&sh->intent_k, __ATOMIC_RELAXED);
            ib[i] = __atomic_load_n(&sh->intent_base, __ATOMIC_RELAXED);
          }
        })) {
      return truncated();
    }
    // Pending: the slot's runs not yet committed (shipped still intent_base);
    // done: committed (shipped advanced by intent_k). A commit leaves the
    // intents in place, so that one cut short is seen as such.
    bool pending = false, done = false;
    for (uint32_t i = 0; i < h.slots_hwm; ++i) {
      if (!ik[i]) continue;
      if (ik[i] <= static_cast<uint32_t>(kBufRuns) && h.shipped[i] == ib[i]) {
        pending = true;
        continue;
      }
      if (ik[i] <= static_cast<uint32_t>(kBufRuns) && h.shipped[i] == ib[i] + ik[i]) done = true;
      ik[i] = 0;  // committed, or not an agent's: void
    }
    if (pending && done) {
      // The batch was held (an agent commits only then): its commit was cut short.
      bool ok = Guarded([&] {
        for (uint32_t i = 0; i < h.slots_hwm; ++i) {
          if (!ik[i]) continue;
          CommitSlot(base, i, ik[i]);
          h.shipped[i] = __atomic_load_n(&RingHead(base)->shipped[i], __ATOMIC_RELAXED);
          ik[i] = 0;
        }
        CommitMerged(base, &h);
        ClearIntents(base, h.slots_hwm);
      });
      if (!ok) return truncated();
      pending = false;
    } else if (!pending && h.intent_merged) {  // a commit cut short after its last slot
      if (!Guarded([&] { CommitMerged(base, &h); })) return truncated();
    }
    // A new batch of a live process: the last one's intents (committed) go first.
    if (!pending && !whole && !Guarded([&] { ClearIntents(base, h.slots_hwm); })) return truncated();
    exact = pending;
  }
  // An earlier batch is merged as it was taken; new runs as the agent says.
  const bool merge_batch = agent && h.intent_unmerged == 0, merge_new = agent && p.merge;
  const bool merge = exact && !whole ? merge_batch : merge_new;  // items' (scope1: merge_batch)
  for (uint32_t i = 0; i < h.slots_hwm; ++i) records += h.shipped[i];
  if (!agent) records = h.records;
  const int32_t me = static_cast<int32_t>(getpid());
  // The runs taken, merged across the process's threads and formatted once
  // the slots are read: scope1, an earlier batch's (a whole take that honours
  // intents), then items.
  std::vector<TakenRun>& items = m.items;
  std::vector<TakenRun>& scope1 = m.scope1;
  items.clear();
  scope1.clear();
  // The window in the ring's ticks (its clock rate is checked; the window is
  // the owner's: capped, a huge one merges no more than one of ~300 years).
  const double wt = h.window_ns > 0 ? static_cast<double>(h.window_ns) / h.ns_per_tick : 0.0;
  const uint64_t window_ticks = wt < 1.0 ? 0 : wt < 9.0e18 ? static_cast<uint64_t>(wt) : uint64_t{9000000000000000000u};
  auto format = [&](std::vector<TakenRun>& v, bool merging) {
    if (merging) out->merged += MergeThreadRuns(v, window_ticks, h.budget_interval_ticks);
    for (const TakenRun& t : v) {
      if (t.gone) continue;
      emit([&](JsonLine& j) { FormatRun(j, c, t.r, t.tid, t.seq, t.threads); });
    }
    v.clear();
    out->max_bytes = std::max(out->max_bytes, out->lines.size());
  };
  const size_t spill_runs = std::max<size_t>(1, p.spill_bytes / 512);
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
  for (uint32_t i = 0; i < h.slots_hwm; ++i) {
    // Bounded memory: a live ring's other slots wait for the next pass (an
    // earlier batch is taken whole: it was bounded so when taken); a finished
    // ring's lines go to the output in parts (TakeParams::spill).
    if (!whole && !exact && items.size() >= kMaxTakeRuns) break;
    if (whole && p.spill && items.size() >= spill_runs) {
      format(items, merge);
      if (!p.spill(out->lines, out->nlines)) {
        *out = RingTake{};
        return true;
      }
      out->spilled += out->nlines;
      out->lines.clear();
      out->nlines = 0;
    }
    if (exact && !whole && !ik[i]) continue;
    Slot& s = m.slot();
    Slot* sh = RingSlots(base) + i;
    const uint32_t first = h.shipped[i];  // the slot's first run held (agent mode: only agents advance it)
    m.extra.n = 0;
    int nbuf = 0, taken = 0;
    bool busy = false, bad = false;
    bool ok = Guarded([&] {
      bool locked = false;
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
        locked = true;
      }
      s.tid = __atomic_load_n(&sh->tid, __ATOMIC_RELAXED);
      s.raw_ops = __atomic_load_n(&sh->raw_ops, __ATOMIC_RELAXED);
      const uint32_t tail = __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE);
      const uint32_t held = SlotHeld(tail, first);
      memcpy(s.comp_mem, sh->comp_mem, sizeof s.comp_mem);
      memcpy(s.agg_mem, sh->agg_mem, sizeof s.agg_mem);
      // The runs [first, first + n) of the circle, into the local copy's buf[0, n).
      auto copy = [&](uint32_t n) {
        const uint32_t at = first % kBufRuns, run1 = std::min<uint32_t>(n, kBufRuns - at);
        memcpy(static_cast<void*>(s.buf), sh->buf + at, run1 * sizeof(Run));
        memcpy(static_cast<void*>(s.buf + run1), sh->buf, (n - run1) * sizeof(Run));
      };
      if (held > static_cast<uint32_t>(kBufRuns) || !s.comp().Sane() || !s.agg().Sane() || (exact && ik[i] > held)) {
        bad = true;
      } else if (exact && !whole) {
        // An earlier batch's runs only: the lines it made, made again.
        taken = nbuf = static_cast<int>(ik[i]);
        copy(ik[i]);
      } else {
        nbuf = static_cast<int>(held);
        copy(held);
        if (whole) {
          s.comp().CloseAll(&m.extra);
          s.agg().CloseAll(&m.extra);
        } else if (kBufRuns - nbuf >= ListSink::kCap) {
          // Runs whose window ended while the program computes: closed into
          // the slot's buffer (in the ring), taken from there with the rest.
          if (h.window_ns > 0) s.comp().CloseExpired(now_ticks, &m.extra);
          if (h.budget_interval_ticks && s.agg().open()) s.agg().CloseBefore(now_ticks / h.budget_interval_ticks, &m.extra);
          if (m.extra.n > 0) {
            for (int x = 0; x < m.extra.n; ++x) sh->at(tail + static_cast<uint32_t>(x)) = m.extra.runs[x];
            memcpy(static_cast<void*>(s.buf + nbuf), m.extra.runs, static_cast<size_t>(m.extra.n) * sizeof(Run));
            memcpy(sh->comp_mem, s.comp_mem, sizeof s.comp_mem);
            memcpy(sh->agg_mem, s.agg_mem, sizeof s.agg_mem);
            nbuf += m.extra.n;
            __atomic_store_n(&sh->tail, tail + static_cast<uint32_t>(m.extra.n), __ATOMIC_RELEASE);
            m.extra.n = 0;
          }
        }
        taken = nbuf;
        if (agent && !whole && taken > 0) {  // the batch this take starts: its runs, before any line leaves
          __atomic_store_n(&sh->intent_base, h.shipped[i], __ATOMIC_RELAXED);
          __atomic_store_n(&sh->intent_k, static_cast<uint32_t>(taken), __ATOMIC_RELEASE);
        }
      }
      if (locked) __atomic_store_n(&sh->lock, 0, __ATOMIC_RELEASE);
    });
    if (!ok) {
      return truncated();
    }
    if (bad) {
      *why = "slot tables out of range";
      *out = RingTake{};
      return false;
    }
    if (busy) {
      if (whole || exact) {  // a thread on its way out still holds it, or an earlier batch cannot be made again: next pass
        *out = RingTake{};
        return true;
      }
      continue;
    }
    raw += s.raw_ops;
    dropped += s.comp().dropped();
    // The files these runs name, copied (and terminated) from the ring's path
    // table; entries found empty are looked at again for each slot (a file
    // another thread opened meanwhile).
    size_t keep = 0;
    for (auto ix : m.touched) {
      if (m.paths[ix].id == kCopiedEmpty) {
        m.paths[ix].id = 0;
      } else {
        m.touched[keep++] = ix;
      }
    }
    m.touched.resize(keep);
    const int total = nbuf + m.extra.n;
    const uint64_t base_seq = h.shipped[i];
    for (int k = 0; k < total; ++k) {
      const Run& r = k < nbuf ? s.buf[k] : m.extra.runs[k - nbuf];
      want(r);
      TakenRun t;
      t.r = r;
      t.tid = s.tid;
      t.seq = agent ? AgentSeq(i, base_seq + static_cast<uint64_t>(k)) : seq++;
      (whole && exact && k < static_cast<int>(ik[i]) ? scope1 : items).push_back(t);
      ++out->runs;
    }
    records += static_cast<uint64_t>(total);
    if (agent && !whole && taken > 0) out->slots.emplace_back(i, static_cast<uint32_t>(taken));
  }
  format(scope1, merge_batch);
  format(items, merge);
  if (whole) {
    // The runs that found no room in their slot, one aggregate per file and
    // key (ring.h: RingLost): shipped with the end, never merged.
    const uint32_t nlost = LostUsed(h);
    for (uint32_t k = 0; k < nlost; ++k) {
      TakenRun t;
      if (!Guarded([&] { memcpy(static_cast<void*>(&t.r), RingLost(base) + k, sizeof t.r); })) return truncated();
      t.tid = h.pid;
      t.seq = agent ? AgentSeq(kMaxThreads, kAgentLostSeq + k) : seq++;
      want(t.r);
      items.push_back(t);
      ++out->runs;
    }
    records += nlost;
    format(items, false);
  }
  for (auto ix : m.touched) m.paths[ix].id = 0;
  m.touched.clear();
  if (!out->slots.empty() && !Guarded([&] {
        __atomic_store_n(&RingHead(base)->intent_unmerged, merge ? 0u : 1u, __ATOMIC_RELAXED);
        __atomic_store_n(&RingHead(base)->intent_merged, out->merged, __ATOMIC_RELEASE);
      })) {
    return truncated();
  }
  if (whole) {
    const char* action = !agent || h.ended == 0 ? "killed" : h.ended >= 2 ? "exec" : "exit";
    // A killed process's uncollected AIO ops (its exit path counts them itself).
    if (action[0] == 'k') dropped = KilledDropped(h, dropped);
    TracerCounts n{raw, records, dropped, agent ? h.agent_merged + out->merged : 0};
    emit([&](JsonLine& j) { FormatTracerRecord(j, c, h, action, NowNs(), agent ? AgentSeq(kMaxThreads, 1) : seq++, n); });
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
    for (auto [i, k] : t.slots)
      if (i < kMaxThreads) CommitSlot(base, i, k);
    if (!t.slots.empty()) CommitMerged(base, nullptr);
  });
  return ok && !keep;
}

}  // namespace iosonar::trace
