// First-pass compression (exporters/trace/compress.h), driven op by op.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <map>
#include <thread>
#include <vector>

#include "exporters/trace/compress.h"

using namespace iosonar::trace;

namespace {
struct VecSink : RunSink {
  std::vector<Run> runs;
  bool Put(const Run& r) override {
    runs.push_back(r);
    return true;
  }
};
RawOp W(int fd, int64_t off, int64_t size, uint64_t t, Op op = kOpWrite, uint64_t file = 7) {
  return RawOp{op, kPosix, fd, off, size, size, 0, file, t, t + 1};
}
}  // namespace

TEST_CASE("compress: contiguous same-size ops merge into one run keeping the start offset", "[compress]") {
  Compressor c(1000000);
  VecSink s;
  for (int i = 0; i < 1000; ++i) c.Add(W(3, 4096 + i * 4096LL, 4096, static_cast<uint64_t>(i * 10)), &s);
  CHECK(s.runs.empty());  // still open: never closed at an arbitrary boundary
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 1);
  CHECK(s.runs[0].count == 1000);
  CHECK(s.runs[0].offset == 4096);
  CHECK(s.runs[0].bytes == 4096000);
  CHECK(s.runs[0].t_start == 0);
  CHECK(s.runs[0].t_end == 9991);
  CHECK(s.runs[0].dur == 1000);
}

TEST_CASE("compress: a run ends when size, op or offset changes", "[compress]") {
  Compressor c(1000000);
  VecSink s;
  c.Add(W(3, 0, 4096, 1), &s);
  c.Add(W(3, 4096, 4096, 2), &s);
  c.Add(W(3, 8192, 8192, 3), &s);           // size change
  c.Add(W(3, 16384, 8192, 4), &s);
  c.Add(W(3, 100000, 8192, 5), &s);         // gap
  c.Add(W(3, 108192, 8192, 6, kOpRead), &s);  // other op: its own run on the same fd
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 4);
  CHECK(s.runs[0].count == 2);
  CHECK(s.runs[1].offset == 8192);
  CHECK(s.runs[1].count == 2);
  CHECK(s.runs[2].offset == 100000);
  CHECK(s.runs[3].op == kOpRead);
  for (const auto& r : s.runs) CHECK_FALSE(r.strided);
}

TEST_CASE("compress: ops at a constant step merge into a strided run", "[compress]") {
  Compressor c(1000000);
  VecSink s;
  for (int i = 0; i < 100; ++i) c.Add(W(3, i * 16384LL, 4096, static_cast<uint64_t>(i + 1)), &s);  // every 4th block
  c.Add(W(3, 100 * 16384LL + 8192, 4096, 200), &s);  // another step: the run ends
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[0].strided);
  CHECK(s.runs[0].stride == 16384);
  CHECK(s.runs[0].count == 100);
  CHECK(s.runs[0].bytes == 100 * 4096);
  CHECK(s.runs[0].offset == 0);
  CHECK(s.runs[1].offset == 100 * 16384LL + 8192);
  CHECK(s.runs[1].count == 1);
  // A backward step or a step of a different size does not make a strided run.
  Compressor b(1000000);
  VecSink t;
  b.Add(W(3, 65536, 4096, 1), &t);
  b.Add(W(3, 0, 4096, 2), &t);
  b.Add(W(3, 1 << 20, 8192, 3), &t);
  b.CloseAll(&t);
  CHECK(t.runs.size() == 3);
}

TEST_CASE("compress: interleaved fds each keep their own run", "[compress]") {
  Compressor c(1000000);
  VecSink s;
  for (int i = 0; i < 50; ++i) {
    c.Add(W(3, i * 100LL, 100, static_cast<uint64_t>(2 * i), kOpWrite, 1), &s);
    c.Add(W(4, i * 200LL, 200, static_cast<uint64_t>(2 * i + 1), kOpWrite, 2), &s);
  }
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[0].count == 50);
  CHECK(s.runs[1].count == 50);
  CHECK(s.runs[0].fd != s.runs[1].fd);
}

TEST_CASE("compress: offsets beyond 4 GiB stay exact", "[compress]") {
  Compressor c(0);
  VecSink s;
  const int64_t base = (int64_t{1} << 32) - 4096;  // crosses the 4 GiB line
  for (int i = 0; i < 4; ++i) c.Add(W(5, base + i * 4096LL, 4096, static_cast<uint64_t>(i)), &s);
  c.Add(W(5, (int64_t{9} << 40), 4096, 9), &s);
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[0].offset == base);
  CHECK(s.runs[0].count == 4);
  CHECK(s.runs[0].next_offset == base + 4 * 4096);
  CHECK(s.runs[1].offset == (int64_t{9} << 40));
}

TEST_CASE("compress: the time window closes a run", "[compress]") {
  Compressor c(100);
  VecSink s;
  for (int i = 0; i < 10; ++i) c.Add(W(3, i * 10LL, 10, static_cast<uint64_t>(i * 30)), &s);
  c.CloseAll(&s);
  // ops at t=0,30,60,90 | 120,150,180,210 | 240,270
  REQUIRE(s.runs.size() == 3);
  CHECK(s.runs[0].count == 4);
  CHECK(s.runs[1].count == 4);
  CHECK(s.runs[1].offset == 40);
  CHECK(s.runs[2].count == 2);
  // CloseExpired closes an idle run once its window has passed.
  Compressor c2(100);
  VecSink s2;
  c2.Add(W(3, 0, 10, 0), &s2);
  c2.CloseExpired(50, &s2);
  CHECK(s2.runs.empty());
  c2.CloseExpired(100, &s2);
  CHECK(s2.runs.size() == 1);
}

TEST_CASE("compress: failed ops and short transfers", "[compress]") {
  Compressor c(0);
  VecSink s;
  RawOp bad = W(3, 0, 4096, 1);
  bad.result = -1;
  bad.err = 9;
  c.Add(bad, &s);
  c.Add(bad, &s);
  RawOp shortr = W(3, 0, 4096, 2, kOpRead);
  shortr.result = 1000;  // EOF: the next op at 1000 continues the run
  c.Add(shortr, &s);
  RawOp eof = W(3, 1000, 4096, 3, kOpRead);
  eof.result = 0;
  c.Add(eof, &s);
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[0].err == 9);
  CHECK(s.runs[0].count == 2);
  CHECK(s.runs[0].bytes == 0);
  CHECK(s.runs[1].count == 2);
  CHECK(s.runs[1].bytes == 1000);
}

TEST_CASE("compress: closing an fd closes its runs, capacity evicts the least recently used", "[compress]") {
  Compressor c(0);
  VecSink s;
  c.Add(W(3, 0, 10, 1), &s);
  c.Add(W(4, 0, 10, 2), &s);
  c.CloseFd(3, &s);
  REQUIRE(s.runs.size() == 1);
  CHECK(s.runs[0].fd == 3);
  CHECK(c.open_runs() == 1);
  for (int fd = 10; fd < 10 + Compressor::kOpenRuns; ++fd) c.Add(W(fd, 0, 10, static_cast<uint64_t>(fd)), &s);
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[1].fd == 4);  // the oldest untouched run went first
}

TEST_CASE("compress: one compressor per thread, several threads at once", "[compress]") {
  std::vector<std::thread> ts;
  std::vector<VecSink> sinks(4);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t, &sinks] {
      Compressor c(0);
      for (int i = 0; i < 10000; ++i) c.Add(W(3 + t, i * 512LL, 512, static_cast<uint64_t>(i)), &sinks[static_cast<size_t>(t)]);
      c.CloseAll(&sinks[static_cast<size_t>(t)]);
    });
  for (auto& t : ts) t.join();
  for (const auto& s : sinks) {
    REQUIRE(s.runs.size() == 1);
    CHECK(s.runs[0].count == 10000);
  }
}

// The tracer's slow path (TryExtend, then AddMissed) must compress exactly as
// Add alone: same runs, same order, for a mix of contiguous, strided, random,
// interleaved-fd, by-path and failed ops.
TEST_CASE("compress: AddMissed after a failed TryExtend gives the runs Add gives", "[compress]") {
  Compressor a(5000), b(5000);
  VecSink sa, sb;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int kind = static_cast<int>(x % 7);
    const int fd = 3 + static_cast<int>((x >> 8) % 3);
    const int64_t off = kind < 2 ? (i % 64) * 4096LL : kind < 4 ? static_cast<int64_t>((x >> 16) % 4096) * 4096 : (i % 32) * 8192LL;
    RawOp o = W(fd, off, kind == 6 ? 512 : 4096, static_cast<uint64_t>(i) * 3, (x >> 20) % 5 == 0 ? kOpRead : kOpWrite,
                static_cast<uint64_t>(fd));
    if ((x >> 24) % 11 == 0) {  // a failed op
      o.result = -1;
      o.err = 5;
    }
    if ((x >> 28) % 13 == 0) {  // a path-only metadata op
      o.op = kOpStat;
      o.fd = -1;
      o.file_id = 100 + (x >> 32) % 3;
    }
    a.Add(o, &sa);
    if (!b.TryExtend(o)) b.AddMissed(o, &sb);
  }
  a.CloseAll(&sa);
  b.CloseAll(&sb);
  REQUIRE(sa.runs.size() == sb.runs.size());
  CHECK(sa.runs.size() > 1000);
  for (size_t i = 0; i < sa.runs.size(); ++i) {
    INFO("run " << i);
    const Run &p = sa.runs[i], &q = sb.runs[i];
    CHECK(p.op == q.op);
    CHECK(p.fd == q.fd);
    CHECK(p.file_id == q.file_id);
    CHECK(p.offset == q.offset);
    CHECK(p.stride == q.stride);
    CHECK(p.strided == q.strided);
    CHECK(p.count == q.count);
    CHECK(p.bytes == q.bytes);
    CHECK(p.err == q.err);
    CHECK(p.t_start == q.t_start);
    CHECK(p.t_end == q.t_end);
  }
}

// io.ops_sequential of detail runs (OpsSequential): the ops that started
// exactly where the previous op of the same fd and direction ended. Counted
// by hand from the op sequence below (4 KiB writes on fd 3, 1000-tick window).
TEST_CASE("compress: every run counts its ops that continue the previous op (io.ops_sequential)", "[compress]") {
  Compressor c(1000);
  VecSink s;
  c.Add(W(3, 0, 4096, 1), &s);         // A: first op ever on the key: not sequential
  c.Add(W(3, 4096, 4096, 2), &s);      // A: +1
  c.Add(W(3, 8192, 4096, 3), &s);      // A: +1                      -> A = 2
  c.Add(W(3, 12288, 4096, 1500), &s);  // window cut: B starts where A ended: +1
  c.Add(W(3, 16384, 4096, 1501), &s);  // B: +1                      -> B = 2
  c.Add(W(3, 100000, 4096, 1502), &s);  // a jump: C, not sequential
  c.Add(W(3, 116384, 4096, 1503), &s);  // C strided (16 KiB step): skips
  c.Add(W(3, 132768, 4096, 1504), &s);  // C: skips                  -> C = 0
  c.Add(W(3, 136864, 4096, 1505), &s);  // where C's last op ended: D, +1 -> D = 1
  c.Add(W(3, 500000, 4096, 1506, kOpRead), &s);  // another direction: its own key, first op: 0
  c.CloseExpired(2600, &s);            // D's and the read's windows end: both close
  c.Add(W(3, 140960, 4096, 2601), &s);  // E continues D, closed before it came: +1 -> E = 1
  c.Add(W(3, 145056, 4096, 2602), &s);  // E: +1 -> E = 2
  c.CloseFd(3, &s);                    // the fd closed: a later fd 3 is another file
  c.Add(W(3, 149152, 4096, 2603), &s);  // F: nothing to continue: 0
  RawOp bad = W(3, 153248, 4096, 2604);
  bad.result = -1;
  bad.err = 5;
  c.Add(bad, &s);  // G: failed: 0
  c.Add(bad, &s);
  c.CloseAll(&s);
  std::vector<uint64_t> seq, count;
  for (const Run& r : s.runs) {
    seq.push_back(OpsSequential(r));
    count.push_back(r.count);
  }
  CHECK(count == std::vector<uint64_t>{3, 2, 3, 1, 1, 2, 1, 2});
  // Runs in the order they closed: A, B, C, then D and the read (expired), E, F, G.
  CHECK(seq == std::vector<uint64_t>{2, 2, 0, 1, 0, 2, 0, 0});
  REQUIRE(s.runs.size() == 8);
  CHECK(s.runs[2].strided == 1);
  CHECK(s.runs[4].op == kOpRead);
}

// Unknown offsets (a pipe, O_APPEND) are a stream, as the aggregates count them.
TEST_CASE("compress: a run at unknown offsets counts every op sequential", "[compress]") {
  Compressor c(1000);
  VecSink s;
  for (int i = 0; i < 5; ++i) c.Add(W(4, -1, 100, static_cast<uint64_t>(i + 1)), &s);
  c.CloseAll(&s);
  REQUIRE(s.runs.size() == 1);
  CHECK(OpsSequential(s.runs[0]) == 5);
}

// The tracer past the detail budget (RecordPastBudget): ops that continue no
// run fold straight into the aggregates (FoldOp), the others run as before.
// The aggregates must be those that folding every run gives: same ops,
// bytes, times and the same sequential / strided / random classes.
TEST_CASE("compress: folding ops straight past the budget gives the aggregates folding runs gives", "[compress]") {
  struct AggSink : RunSink {
    Aggregator* agg = nullptr;
    std::vector<Run> out;
    bool Put(const Run& r) override {
      if (r.agg) out.push_back(r);
      else agg->Fold(r, 0, this);
      return true;
    }
  };
  Compressor ca(1u << 30), cb(1u << 30);
  Aggregator aa, ab;
  AggSink sa, sb;
  sa.agg = &aa;
  sb.agg = &ab;
  uint64_t x = 88172645463325252ull;
  int64_t seq_next[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int kind = static_cast<int>(x % 8);
    const int fd = 3 + static_cast<int>((x >> 8) % 3);
    int64_t off;
    if (kind < 3) {  // a stretch of contiguous ops on this fd
      off = seq_next[fd - 3];
    } else if (kind < 5) {
      off = static_cast<int64_t>((x >> 16) % 4096) * 4096;  // random
    } else {
      off = (i % 64) * 16384LL;  // strided
    }
    // One file per fd: an aggregate folds one fd's ops in their order either way.
    RawOp o = W(fd, off, 4096, static_cast<uint64_t>(i) * 3, (x >> 20) % 4 == 0 ? kOpRead : kOpWrite,
                static_cast<uint64_t>(fd));
    // A short transfer, in a contiguous stretch (the op after it continues
    // it). Where one ends a strided run (a coincidence of offsets) the run
    // keeps no end of it, and the next op is classed random there but
    // sequential by direct folding, which knows it: classes may differ by a
    // few ops, nothing else may.
    if (kind < 3 && (x >> 24) % 17 == 0) o.result = 1000;
    seq_next[fd - 3] = off + (o.result > 0 ? o.result : 0);
    ca.Add(o, &sa);
    if (cb.TryExtend(o)) continue;
    if (!cb.TakeOrRelease(o, &sb))
      if (int k = ab.FoldOp(o, 0, &sb)) cb.StartRun(o, &sb, k == 1);
  }
  ca.CloseAll(&sa);
  cb.CloseAll(&sb);
  aa.CloseAll(&sa);
  ab.CloseAll(&sb);
  auto sum = [](const std::vector<Run>& v) {
    std::map<std::pair<int, int>, std::array<uint64_t, 7>> m;  // (op, file) -> totals
    for (const Run& r : v) {
      auto& t = m[{r.op, static_cast<int>(r.file_id)}];
      t[0] += r.count;
      t[1] += r.bytes;
      t[2] += r.dur;
      t[3] += r.n_seq;
      t[4] += r.n_strided;
      t[5] += r.n_random;
      t[6] = std::max(t[6], r.t_end);
    }
    return m;
  };
  auto ma = sum(sa.out), mb = sum(sb.out);
  REQUIRE(ma.size() == 6);
  for (const auto& [k, v] : ma) {
    INFO("op " << k.first << " file " << k.second);
    for (size_t f = 0; f < v.size(); ++f) {
      INFO("total " << f);
      if (f >= 3 && f <= 5) CHECK(std::max(v[f], mb[k][f]) - std::min(v[f], mb[k][f]) <= 2);  // the classes
      else CHECK(v[f] == mb[k][f]);  // count, bytes, time: exact
    }
  }
  const auto& w = ma[{kOpWrite, 3}];
  CHECK(w[3] > 0);  // every class occurs
  CHECK(w[4] > 0);
  CHECK(w[5] > 0);
  CHECK(w[0] == w[3] + w[4] + w[5]);
}
