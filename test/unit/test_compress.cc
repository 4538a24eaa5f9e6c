// First-pass compression (exporters/trace/compress.h), driven op by op.
#include <catch2/catch.hpp>
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
