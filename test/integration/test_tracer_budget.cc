// Bounded cost and volume on patterns that do not compress: past the detail
// budget (IOSONAR_DETAIL_BUDGET records a second per process) runs fold into
// per-interval aggregates per file, op and request size, flagged
// io.aggregated, with the share of sequential, strided and random ops; bytes
// and op counts stay exact, and the job summary counts them right.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <rapidjson/document.h>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {
struct Split {
  int64_t detail = 0, aggregates = 0, agg_ops = 0, seq = 0, strided = 0, random = 0, bytes = 0, ops = 0;
  int64_t first_ns = INT64_MAX, last_ns = 0;
};
Split SplitOf(const std::vector<TraceLine>& lines, const std::string& op, const std::string& suffix) {
  Split s;
  for (const auto& l : lines) {
    if (l.dataset != "iosonar.trace" || l.op != op || !l.path.ends_with(suffix)) continue;
    s.bytes += l.bytes;
    s.ops += l.count;
    s.first_ns = std::min(s.first_ns, l.start);
    s.last_ns = std::max(s.last_ns, l.end);
    if (!l.aggregated) {
      ++s.detail;
      continue;
    }
    ++s.aggregates;
    s.agg_ops += l.count;
    s.seq += l.ops_seq;
    s.strided += l.ops_strided;
    s.random += l.ops_random;
    CHECK(l.offset == -1);      // no offset: many ops
    CHECK(l.size == 4096);      // the request size is exact (it is in the key)
  }
  return s;
}
}  // namespace

TEST_CASE("tracer: past the detail budget random I/O is aggregated, bytes and ops exact", "[tracer][budget]") {
  TempDir d;
  const int64_t n = 60000;
  auto t = RunTraced({ProgramPath("tp_pattern"), "rand-write", d / "r.dat", "4096", std::to_string(n)}, d / "out.jsonl",
                     {{"IOSONAR_DETAIL_BUDGET", "1000"}});
  REQUIRE(t.run.exit_code == 0);
  Split s = SplitOf(t.lines, "write", "/r.dat");
  CHECK(s.ops == n);
  CHECK(s.bytes == n * 4096);
  REQUIRE(s.aggregates > 0);
  // At most the budget of detail records per second the program ran (plus the second it started in).
  int64_t seconds = (s.last_ns - s.first_ns) / 1000000000 + 2;
  CHECK(s.detail <= 1000 * seconds);
  // Every aggregated op is classed once; random offsets over the file are mostly random.
  CHECK(s.seq + s.strided + s.random == s.agg_ops);
  CHECK(s.random > s.agg_ops * 9 / 10);
  // Volume: a small fraction of one record per op.
  CHECK(static_cast<int64_t>(t.lines.size()) < n / 10);
  const auto& last = t.lines.back();
  REQUIRE(last.action == "exit");
  CHECK(last.dropped == 0);
}

TEST_CASE("tracer: strided writes compress into strided runs", "[tracer][budget][compression]") {
  TempDir d;
  // 4 processes, each writing every 4th 4 KiB block: a constant step of 16 KiB.
  auto t = RunTraced({ProgramPath("tp_pattern"), "strided", d / "s.dat", "4096", "20000", "4"}, d / "out.jsonl");
  REQUIRE(t.run.exit_code == 0);
  int64_t ops = 0, bytes = 0, records = 0, strided = 0;
  std::map<int64_t, int64_t> residue;
  for (const auto& l : t.lines) {
    if (l.dataset != "iosonar.trace" || l.op != "write" || !l.path.ends_with("/s.dat")) continue;
    ops += l.count;
    bytes += l.bytes;
    ++records;
    if (l.stride) {
      ++strided;
      CHECK(l.stride == 4 * 4096);
      CHECK(l.offset % 4096 == 0);
    }
    // Each process writes only its own blocks (r, r+4, ...): its runs all start on them.
    auto [it, fresh] = residue.emplace(l.pid, l.offset / 4096 % 4);
    CHECK(it->second == l.offset / 4096 % 4);
  }
  CHECK(ops == 4 * 20000);
  CHECK(bytes == 4 * 20000 * 4096);
  CHECK(strided > 0);
  CHECK(residue.size() == 4);
  CHECK(records < 4 * 20);  // a run per process and window (or a few where one is cut), not one per op
}

TEST_CASE("tracer: past the budget, strided ops are classed strided", "[tracer][budget]") {
  TempDir d;
  // A 1 ms window cuts the strided runs often; a budget of 10 records a second aggregates them.
  auto t = RunTraced({ProgramPath("tp_pattern"), "strided", d / "s.dat", "4096", "20000", "2"}, d / "out.jsonl",
                     {{"IOSONAR_DETAIL_BUDGET", "10"}, {"IOSONAR_WINDOW_MS", "1"}});
  REQUIRE(t.run.exit_code == 0);
  Split s = SplitOf(t.lines, "write", "/s.dat");
  CHECK(s.ops == 2 * 20000);
  CHECK(s.bytes == 2 * 20000 * 4096);
  REQUIRE(s.agg_ops > 0);
  CHECK(s.seq + s.strided + s.random == s.agg_ops);
  CHECK(s.strided > s.agg_ops * 9 / 10);
}

TEST_CASE("tracer: the job summary counts bytes and ops right from aggregates", "[tracer][budget]") {
  TempDir d;
  const int64_t n = 30000;
  auto r = Run({IosonarBin(), "run", "--store", d / "store", "--json", d / "s.json", "--job-id", "budget", "--",
                ProgramPath("tp_pattern"), "rand-write", d / "r.dat", "4096", std::to_string(n)},
               {{"IOSONAR_DETAIL_BUDGET", "500"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  rapidjson::Document j;
  j.Parse(ReadFile(d / "s.json").c_str());
  REQUIRE_FALSE(j.HasParseError());
  CHECK(j["write"]["bytes"].GetInt64() == n * 4096);
  CHECK(j["write"]["ops"].GetInt64() == n);
  // Random offsets, most of them in aggregates (offset-less): not sequential,
  // from the aggregates' io.ops_sequential (before that fix: "1-1").
  CHECK(std::string(j["io_mode"]["write"].GetString()) == "1-1 random");
  CHECK(j["write"]["sequential_share"].GetDouble() < 0.05);
}

// io.ops_sequential on every data record, detail or aggregate: the ops that
// started where the previous op of the same thread, fd and direction ended.
// tp_pattern seq-then-rand-read: 2001 read()s from offset 0 (the first has
// nothing before it: 2000 sequential), then 2001 preads of even 4 KiB blocks
// (each ends at an odd block, as the last read() does: none sequential).
// With a budget of 300 records a second, some of it is detail, some aggregates.
TEST_CASE("tracer: io.ops_sequential on every data record sums to the ops that continued the previous one", "[tracer][budget]") {
  TempDir d;
  for (const char* budget : {"300", "0"}) {
    INFO("IOSONAR_DETAIL_BUDGET=" << budget);
    auto t = RunTraced({ProgramPath("tp_pattern"), "seq-then-rand-read", d / "r.dat", "4096", "4002"}, d / "out.jsonl",
                       {{"IOSONAR_DETAIL_BUDGET", budget}});
    REQUIRE(t.run.exit_code == 0);
    int64_t ops = 0, seq = 0, records = 0, missing = 0;
    for (const auto& l : t.lines) {
      if (l.dataset != "iosonar.trace" || l.op != "read" || !l.path.ends_with("/r.dat")) continue;
      ++records;
      ops += l.count;
      seq += l.ops_seq;
      if (!l.has_ops_seq) ++missing;
      CHECK(l.ops_seq <= l.count);
    }
    CHECK(ops == 4002);
    CHECK(missing == 0);
    CHECK(seq == 2000);
    CHECK(records > 300);  // the random half is not one record
    std::filesystem::remove(d / "out.jsonl");
    std::filesystem::remove(d / "r.dat");
  }
}
