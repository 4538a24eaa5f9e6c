// The node agent's merge of a process's runs across its threads
// (exporters/agent/thread_merge.h), and its intents: a batch taken again after
// a failed flush or an agent that died is made into the same lines, and one
// committed halfway is finished, not sent again (ring_agent.h).
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "exporters/trace/ring.h"
#include "exporters/agent/ring_agent.h"
#include "exporters/agent/thread_merge.h"

using namespace iosonar::trace;

namespace {

constexpr int64_t kKiB = 4096;

// A successful contiguous write run of fd 3 on file 0x77.
Run Contig(int64_t offset, uint64_t count, uint64_t t0, uint64_t t1, int64_t size = kKiB) {
  Run r{};
  r.op = kOpWrite;
  r.layer = kPosix;
  r.fd = 3;
  r.file_id = 0x77;
  r.offset = offset;
  r.size = size;
  r.count = count;
  r.bytes = count * static_cast<uint64_t>(size);
  r.next_offset = offset + static_cast<int64_t>(r.bytes);
  r.t_start = t0;
  r.t_end = t1;
  r.dur = (t1 - t0) / 2;
  r.n_seq = 1;
  return r;
}

Run Strided(int64_t offset, int64_t stride, uint64_t count, uint64_t t0, uint64_t t1) {
  Run r = Contig(offset, count, t0, t1);
  r.op = kOpRead;
  r.strided = 1;
  r.stride = stride;
  r.next_offset = offset + stride * static_cast<int64_t>(count);
  r.n_seq = 0;
  return r;
}

Run Agg(uint64_t count, uint64_t t0, uint64_t t1, uint64_t seq, uint64_t strided, uint64_t random) {
  Run r{};
  r.op = kOpRead;
  r.layer = kPosix;
  r.agg = 1;
  r.fd = 3;
  r.file_id = 0x77;
  r.offset = -1;
  r.size = kKiB;
  r.count = count;
  r.bytes = count * kKiB;
  r.t_start = t0;
  r.t_end = t1;
  r.dur = count * 10;
  r.n_seq = seq;
  r.n_strided = strided;
  r.n_random = random;
  return r;
}

TakenRun T(const Run& r, int32_t tid, uint64_t seq) {
  TakenRun t;
  t.r = r;
  t.tid = tid;
  t.seq = seq;
  return t;
}

std::vector<TakenRun> Survivors(const std::vector<TakenRun>& v) {
  std::vector<TakenRun> s;
  for (const auto& t : v)
    if (!t.gone) s.push_back(t);
  return s;
}

}  // namespace

TEST_CASE("thread merge: contiguous pieces of two threads chain into one run, in offset order", "[tracer][merge]") {
  // Thread 12's piece [1 MiB, 2 MiB) is listed first (its slot is lower); thread 11 wrote [0, 1 MiB) and [2, 3 MiB).
  std::vector<TakenRun> v{T(Contig(1 << 20, 256, 1500, 1600), 12, 900), T(Contig(0, 256, 1200, 1400), 11, 100),
                          T(Contig(2 << 20, 256, 1650, 1700), 11, 101)};
  CHECK(MergeThreadRuns(v, 1000, 0) == 2);
  auto s = Survivors(v);
  REQUIRE(s.size() == 1);
  const Run& r = s[0].r;
  CHECK(s[0].seq == 100);  // the first piece by offset keeps its event.seq
  CHECK(s[0].tid == 11);
  CHECK(s[0].threads == 2);
  CHECK(r.offset == 0);
  CHECK(r.next_offset == 3 << 20);
  CHECK(r.count == 768);
  CHECK(r.bytes == 3u << 20);
  CHECK(r.t_start == 1200);
  CHECK(r.t_end == 1700);
  CHECK(r.dur == 50 + 100 + 25);
  CHECK(OpsSequential(r) == 1 + 767);  // every op after the first continued the one before it
}

TEST_CASE("thread merge: four threads reading in turns (strided by four sizes) become one contiguous run", "[tracer][merge]") {
  std::vector<TakenRun> v;
  for (int t = 0; t < 4; ++t) v.push_back(T(Strided(t * kKiB, 4 * kKiB, 64, 1000 + t, 1900 + t), 20 + t, 10 * t));
  CHECK(MergeThreadRuns(v, 1000, 0) == 3);
  auto s = Survivors(v);
  REQUIRE(s.size() == 1);
  CHECK(s[0].seq == 0);
  CHECK(s[0].threads == 4);
  CHECK(s[0].r.strided == 0);
  CHECK(s[0].r.offset == 0);
  CHECK(s[0].r.count == 256);
  CHECK(s[0].r.bytes == 256u * kKiB);
  CHECK(s[0].r.next_offset == 256 * kKiB);
  CHECK(s[0].r.t_start == 1000);
  CHECK(s[0].r.t_end == 1903);

  SECTION("three of the four threads do not cover the region: left as they are") {
    std::vector<TakenRun> w(v.begin(), v.end());
    for (int t = 0; t < 3; ++t) w[static_cast<size_t>(t)] = T(Strided(t * kKiB, 4 * kKiB, 64, 1000, 1900), 20 + t, t);
    w.resize(3);
    CHECK(MergeThreadRuns(w, 1000, 0) == 0);
  }
  SECTION("the window ended inside a turn (the last threads made one op fewer): one contiguous run") {
    std::vector<TakenRun> w;
    for (int t = 0; t < 4; ++t) w.push_back(T(Strided(t * kKiB, 4 * kKiB, t >= 2 ? 63 : 64, 1000, 1900), 20 + t, t));
    CHECK(MergeThreadRuns(w, 1000, 0) == 3);
    auto m = Survivors(w);
    REQUIRE(m.size() == 1);
    CHECK(m[0].r.count == 254);
    CHECK(m[0].r.bytes == 254u * kKiB);
    CHECK(m[0].r.offset == 0);
    CHECK(m[0].r.next_offset == 254 * kKiB);  // blocks 0 .. 63*4+1: no hole
    CHECK(m[0].r.strided == 0);
  }
  SECTION("the turn began inside the window: threads in rotated order, still one run") {
    // Threads 22 and 23 wrote blocks 2 and 3 first; 20 and 21 start at 4 and 5.
    std::vector<TakenRun> w;
    for (int t = 0; t < 4; ++t) {
      const int64_t block = t < 2 ? 4 + t : t;
      w.push_back(T(Strided(block * kKiB, 4 * kKiB, t < 2 ? 63 : 64, 1000, 1900), 20 + t, t));
    }
    CHECK(MergeThreadRuns(w, 1000, 0) == 3);
    auto m = Survivors(w);
    REQUIRE(m.size() == 1);
    CHECK(m[0].r.offset == 2 * kKiB);
    CHECK(m[0].r.next_offset == (2 + 254) * kKiB);
    CHECK(m[0].seq == 2);  // the first by offset keeps its event.seq
  }
  SECTION("counts that would leave a hole (a thread before the others made one op fewer): left as they are") {
    std::vector<TakenRun> w;
    for (int t = 0; t < 4; ++t) w.push_back(T(Strided(t * kKiB, 4 * kKiB, t == 1 ? 63 : 64, 1000, 1900), 20 + t, t));
    CHECK(MergeThreadRuns(w, 1000, 0) == 0);
    w.clear();
    for (int t = 0; t < 4; ++t) w.push_back(T(Strided(t * kKiB, 4 * kKiB, t == 3 ? 62 : 64, 1000, 1900), 20 + t, t));
    CHECK(MergeThreadRuns(w, 1000, 0) == 0);  // two fewer: a hole too
  }
}

TEST_CASE("thread merge: aggregates of one file, op and size sum per budget interval", "[tracer][merge]") {
  std::vector<TakenRun> v{T(Agg(100, 2100, 2900, 10, 20, 70), 1, 1), T(Agg(50, 2000, 2500, 5, 0, 45), 2, 2),
                          T(Agg(30, 2400, 2999, 0, 0, 30), 3, 3),
                          T(Agg(7, 3001, 3500, 0, 0, 7), 2, 4)};  // the next interval: its own
  CHECK(MergeThreadRuns(v, 1000, 1000) == 2);
  auto s = Survivors(v);
  REQUIRE(s.size() == 2);
  CHECK(s[0].seq == 1);
  CHECK(s[0].threads == 3);
  CHECK(s[0].r.count == 180);
  CHECK(s[0].r.bytes == 180u * kKiB);
  CHECK(s[0].r.dur == 1800);
  CHECK(s[0].r.n_seq == 15);
  CHECK(s[0].r.n_strided == 20);
  CHECK(s[0].r.n_random == 145);
  CHECK(s[0].r.t_start == 2000);
  CHECK(s[0].r.t_end == 2999);
  CHECK(s[1].seq == 4);
  CHECK(s[1].threads == 1);
  CHECK(s[1].r.count == 7);
}

TEST_CASE("thread merge: what is not merged", "[tracer][merge]") {
  auto two = [](Run a, Run b, uint64_t window = 1000, uint64_t interval = 1000) {
    std::vector<TakenRun> v{T(a, 1, 1), T(b, 2, 2)};
    return MergeThreadRuns(v, window, interval);
  };
  const Run a = Contig(0, 16, 1100, 1200);
  Run b = Contig(16 * kKiB, 16, 1300, 1400);
  CHECK(two(a, b) == 1);  // the control: they do merge
  {
    std::vector<TakenRun> one{T(a, 1, 1), T(b, 1, 2)};  // one thread's: as the tracer made them
    CHECK(MergeThreadRuns(one, 1000, 1000) == 0);
  }
  CHECK(two(a, b, 0, 0) == 0);  // no window: detail runs are not merged
  CHECK(two(a, Contig(16 * kKiB, 16, 2100, 2200)) == 0);  // another window
  CHECK(two(a, Contig(16 * kKiB + 1, 16, 1300, 1400)) == 0);  // a gap
  CHECK(two(a, Contig(16 * kKiB, 16, 1300, 1400, 8192)) == 0);  // another request size
  Run c = b;
  c.fd = 4;
  CHECK(two(a, c) == 0);  // another descriptor
  c = b;
  c.op = kOpRead;
  CHECK(two(a, c) == 0);  // another direction
  c = b;
  c.file_id = 0x78;
  CHECK(two(a, c) == 0);  // another file
  c = b;
  c.err = 5;
  CHECK(two(a, c) == 0);  // failed ops
  c = b;
  c.op = kOpSync;
  CHECK(two(a, c) == 0);  // not a data op
  Run g = Agg(1, 1100, 1200, 0, 0, 1);
  Run h = Agg(1, 1300, 1400, 0, 0, 1);
  h.size = 8192;
  CHECK(two(g, h) == 0);  // aggregates of another request size
  CHECK(two(g, Agg(1, 1300, 1400, 0, 0, 1), 1000, 0) == 0);  // no budget interval
}

TEST_CASE("thread merge: random lists keep bytes, ops and time exact, and merge the same way every time", "[tracer][merge]") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 200; ++round) {
    std::vector<TakenRun> v;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const uint64_t t0 = 1000 + rng() % 3000;
      const int kind = static_cast<int>(rng() % 3);
      Run r = kind == 0   ? Contig(static_cast<int64_t>(rng() % 8) * 16 * kKiB, 16, t0, t0 + 50)
              : kind == 1 ? Strided(static_cast<int64_t>(rng() % 4) * kKiB, 4 * kKiB, 8, t0, t0 + 50)
                          : Agg(1 + rng() % 9, t0, t0 + 50, rng() % 3, rng() % 3, rng() % 3);
      v.push_back(T(r, static_cast<int32_t>(rng() % 4), static_cast<uint64_t>(i)));
    }
    uint64_t count = 0, bytes = 0, dur = 0;
    for (const auto& t : v) count += t.r.count, bytes += t.r.bytes, dur += t.r.dur;
    auto w = v;
    const uint64_t merged = MergeThreadRuns(v, 1000, 1000);
    uint64_t count2 = 0, bytes2 = 0, dur2 = 0, survivors = 0;
    for (const auto& t : v) {
      if (t.gone) continue;
      ++survivors;
      count2 += t.r.count, bytes2 += t.r.bytes, dur2 += t.r.dur;
    }
    REQUIRE(count2 == count);
    REQUIRE(bytes2 == bytes);
    REQUIRE(dur2 == dur);
    REQUIRE(survivors + merged == static_cast<uint64_t>(n));
    CHECK(MergeThreadRuns(w, 1000, 1000) == merged);
    for (size_t i = 0; i < v.size(); ++i) {
      REQUIRE(w[i].gone == v[i].gone);
      REQUIRE(std::memcmp(&w[i].r, &v[i].r, sizeof(Run)) == 0);
    }
  }
}

// ---- intents, on a ring in memory (a live agent-mode process of two threads)
namespace {

struct MemRing {
  char* b;
  MemRing() {
    void* m = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(m != MAP_FAILED);
    b = static_cast<char*>(m);
    RingHeader& h = *RingHead(b);
    FillRingLayout(h);
    h.pid = 4321;
    h.ppid = 1;
    h.stream = 99;
    h.window_ns = 1000;
    h.budget_interval_ticks = 1000;
    h.real0 = int64_t{1} << 60;
    h.ns_per_tick = 1.0;
    h.slots_hwm = 2;
    h.agent = 1;
    h.started = 1;
    std::memcpy(h.job, "42", 3);
    RingSlots(b)[0].tid = 11;
    RingSlots(b)[1].tid = 12;
  }
  ~MemRing() { munmap(b, kRingBytes); }
  void Add(int slot, const Run& r) {
    Slot& s = RingSlots(b)[slot];
    s.at(s.tail++) = r;
  }
  Slot& S(int i) { return RingSlots(b)[i]; }
  uint32_t Held(int i) { return SlotHeld(S(i).tail, H().shipped[i]); }
  RingHeader& H() { return *RingHead(b); }
};

RingTake Take(RingReader& reader, MemRing& ring, bool alive = true) {
  TakeParams p;
  p.name_pid = 4321;
  p.alive = alive;
  p.host = "h";
  RingTake t;
  std::string why;
  REQUIRE(reader.Take(ring.b, kRingBytes, p, &t, &why));
  return t;
}

size_t Count(const std::string& lines, const std::string& what) {
  size_t n = 0;
  for (size_t at = lines.find(what); at != std::string::npos; at = lines.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("thread merge intents: a batch not committed is made again into the same lines, one committed halfway is "
          "finished, not sent again",
          "[tracer][merge][agent]") {
  MemRing ring;
  RingReader reader;
  ring.Add(0, Contig(0, 256, 1100, 1200));
  ring.Add(0, Contig(2 << 20, 256, 1500, 1600));
  ring.Add(1, Contig(1 << 20, 256, 1300, 1400));
  RingTake t1 = Take(reader, ring);
  CHECK(t1.runs == 3);
  CHECK(t1.merged == 2);
  REQUIRE(t1.nlines == 1);
  CHECK(Count(t1.lines, "\"io.count\":768") == 1);
  CHECK(Count(t1.lines, "\"process.threads\":2") == 1);
  CHECK(ring.S(0).intent_k == 2);
  CHECK(ring.S(1).intent_k == 1);
  CHECK(ring.H().intent_merged == 2);

  // The flush failed (nothing committed); thread 12 wrote on meanwhile, a run that would chain too.
  ring.Add(1, Contig(3 << 20, 256, 1700, 1800));
  RingTake t2 = Take(reader, ring);
  CHECK(t2.lines == t1.lines);  // the same line: the receivers deduplicate it
  CHECK(t2.runs == 3);
  REQUIRE(reader.Commit(ring.b, kRingBytes, t2));
  CHECK(ring.Held(0) == 0);
  CHECK(ring.Held(1) == 1);
  CHECK(ring.H().shipped[0] == 2);
  CHECK(ring.H().shipped[1] == 1);
  CHECK(ring.H().agent_merged == 2);
  CHECK(ring.H().intent_merged == 0);

  // The next batch: thread 11's [4 MiB, 5 MiB) chains to thread 12's waiting run.
  ring.Add(0, Contig(4 << 20, 256, 1850, 1900));
  RingTake t3 = Take(reader, ring);
  REQUIRE(t3.nlines == 1);
  CHECK(t3.merged == 1);
  const std::string seq12 = "\"event.seq\":" + std::to_string(AgentSeq(1, 1));
  CHECK(Count(t3.lines, seq12) == 1);  // thread 12's run comes first by offset
  CHECK(ring.S(0).intent_k == 1);  // the last batch's intents were replaced by this one's
  CHECK(ring.S(1).intent_k == 1);
  CHECK(ring.S(1).intent_base == 1);
  // The agent dies between two slots' commits: slot 0 committed (one store, as CommitSlot does; its
  // intent stays), slot 1 not.
  ring.H().shipped[0] += 1;
  // The next agent: the batch was held (a slot of it is committed): slot 1 is committed, nothing sent again.
  RingTake t4 = Take(reader, ring);
  CHECK(t4.nlines == 0);
  CHECK(t4.slots.empty());
  CHECK(ring.Held(1) == 0);
  CHECK(ring.H().shipped[1] == 2);
  CHECK(ring.S(0).intent_k == 0);
  CHECK(ring.S(1).intent_k == 0);
  CHECK(ring.H().agent_merged == 3);

  // The process ends: its end record counts 5 records of which 3 were merged.
  ring.H().ended = 1;
  RingTake t5 = Take(reader, ring, false);
  CHECK(t5.remove);
  CHECK(Count(t5.lines, "\"tracer.records\":5") == 1);
  CHECK(Count(t5.lines, "\"tracer.merged\":3") == 1);
}

TEST_CASE("thread merge intents: a process that ends with a batch in flight: that batch is made again whole, the rest "
          "after it",
          "[tracer][merge][agent]") {
  MemRing ring;
  RingReader reader;
  ring.Add(0, Contig(0, 256, 1100, 1200));
  ring.Add(1, Contig(1 << 20, 256, 1300, 1400));
  RingTake t1 = Take(reader, ring);
  REQUIRE(t1.nlines == 1);
  // Not committed; thread 11 wrote [2 MiB, 3 MiB) and the process exited.
  ring.Add(0, Contig(2 << 20, 256, 1500, 1600));
  ring.H().ended = 1;
  RingTake t2 = Take(reader, ring, false);
  CHECK(t2.remove);
  // The batch's line first, unchanged; [2 MiB, 3 MiB) on its own (not folded into it: that would change it).
  REQUIRE(t2.lines.compare(0, t1.lines.size(), t1.lines) == 0);
  CHECK(Count(t2.lines, "\"io.count\":512") == 1);
  CHECK(Count(t2.lines, "\"io.count\":256") == 1);
  CHECK(Count(t2.lines, "\"tracer.records\":3") == 1);
  CHECK(Count(t2.lines, "\"tracer.merged\":1") == 1);
}

TEST_CASE("thread merge intents: intents a ring's owner forged are ignored, not trusted", "[tracer][merge][agent][hostile]") {
  MemRing ring;
  RingReader reader;
  ring.Add(0, Contig(0, 256, 1100, 1200));
  ring.S(0).intent_k = 5000;  // more runs than a buffer holds
  ring.S(1).intent_k = 3;     // at a shipped count that is not the slot's
  ring.S(1).intent_base = 77;
  RingTake t = Take(reader, ring);
  CHECK(t.nlines == 1);
  CHECK(t.runs == 1);
  CHECK(ring.S(0).intent_k == 1);
  CHECK(ring.S(1).intent_k == 0);
}
