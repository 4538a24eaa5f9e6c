// Probe slowdown: quantiles equal numpy's (method 'linear' =
// Hyndman-Fan type 7), slowdown factors against a fixed and a sliding baseline.
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <memory>

#include "analysis-jobs/lassi/probe_baseline.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::lassi;

namespace {
constexpr int64_t kS = 1000000000;
}

TEST_CASE("type-7 quantiles, hand-checked", "[slowdown]") {
  std::vector<double> x = {1, 2, 3, 4};
  CHECK(QuantileType7(x, 0.5) == Approx(2.5));
  CHECK(QuantileType7(x, 0.9) == Approx(3.7));  // h = 2.7: 3 + 0.7
  CHECK(QuantileType7(x, 0) == 1);
  CHECK(QuantileType7(x, 1) == 4);
  std::vector<double> one = {7};
  CHECK(QuantileType7(one, 0.99) == 7);
  auto s = ComputeLatencyStats({5, 1, 3});
  CHECK(s.count == 3);
  CHECK(s.median == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.mean == Approx(3));
}

TEST_CASE("slowdown factor against a fixed and a sliding baseline", "[slowdown]") {
  std::vector<ProbeSample> ss;
  // 3 intervals of 10 min, 3 samples each: latencies 1,1,1 | 1,1,1 | 4,4,4 (s)
  for (int k = 0; k < 9; ++k) ss.push_back({"fs", "write", (k / 3) * 600 * kS + (k % 3) * kS, k >= 6 ? 4.0 : 1.0});
  ss.push_back({"fs", "stat", 5 * kS, 0.0});  // a zero median: no factor, not inf
  SlowdownOptions o;
  o.intervals_ns = {600 * kS};
  o.from_ns = 0;
  o.to_ns = 1800 * kS;
  auto rows = ComputeSlowdown(ss, o);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].op == "stat");
  CHECK_FALSE(rows[0].slowdown_median.has_value());
  // fixed baseline: median of 1,1,1,1,1,1,4,4,4 = 1
  CHECK(*rows[3].slowdown_median == Approx(4));
  CHECK(*rows[1].slowdown_median == Approx(1));
  o.sliding_ns = 600 * kS;
  rows = ComputeSlowdown(ss, o);
  CHECK_FALSE(rows[1].baseline_median.has_value());  // nothing before the first interval
  CHECK(*rows[3].slowdown_p90 == Approx(4));
}

TEST_CASE("slowdown quantiles equal numpy's (method='linear')", "[slowdown][oracle]") {
  if (test::Run({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) {
    FAIL("/usr/bin/python3 with numpy is not installed (apt-get install python3-numpy)");
  }
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> ln(-6, 1.2);
  std::vector<ProbeSample> ss;
  std::string csv;
  for (int i = 0; i < 3000; ++i) {
    ProbeSample s{"scratch", i % 2 ? "read" : "create", static_cast<int64_t>(rng() % (4 * 3600)) * kS, ln(rng)};
    char b[128];
    std::snprintf(b, sizeof b, "%s,%lld,%.17g\n", s.op.c_str(), static_cast<long long>(s.t_ns / kS), s.latency_s);
    csv += b;
    ss.push_back(s);
  }
  test::TempDir dir;
  test::WriteFile(dir / "samples.csv", csv);
  SlowdownOptions o;
  o.intervals_ns = {600 * kS};
  o.from_ns = 0;
  o.to_ns = 4 * 3600 * kS;
  o.cache_floor_s = 0;  // the quantiles alone: every sample (the cache-served ones are checked below)
  auto rows = ComputeSlowdown(ss, o);
  REQUIRE(rows.size() == 48);
  const char* script = R"(
import sys, numpy as np
ops, ts, lat = [], [], []
for line in open(sys.argv[1]):
    o, t, l = line.split(',')
    ops.append(o); ts.append(int(t)); lat.append(float(l))
ops = np.array(ops); ts = np.array(ts); lat = np.array(lat)
for op in sorted(set(ops)):
    base = np.median(lat[ops == op])
    for start in range(0, 4 * 3600, 600):
        x = lat[(ops == op) & (ts >= start) & (ts < start + 600)]
        q = np.quantile(x, [0.5, 0.9, 0.95, 0.99], method='linear')
        print(op, start, len(x), repr(x.mean()), repr(q[0]), repr(q[1]), repr(q[2]), repr(q[3]), repr(q[1] / base))
)";
  test::WriteFile(dir / "q.py", script);
  auto rr = test::Run({"/usr/bin/python3", dir / "q.py", dir / "samples.csv"});
  INFO(rr.err);
  REQUIRE(rr.exit_code == 0);
  std::istringstream in(rr.out);
  std::string op;
  long long start = 0;
  size_t n = 0, k = 0;
  double mean, med, p90, p95, p99, sd90;
  while (in >> op >> start >> n >> mean >> med >> p90 >> p95 >> p99 >> sd90) {
    REQUIRE(k < rows.size());
    const auto& r = rows[k++];
    INFO(op << " " << start);
    CHECK(r.op == op);
    CHECK(r.start_ns == start * kS);
    CHECK(r.stats.count == n);
    CHECK(r.stats.mean == Approx(mean).epsilon(1e-12));
    CHECK(r.stats.median == Approx(med).epsilon(1e-12));
    CHECK(r.stats.p90 == Approx(p90).epsilon(1e-12));
    CHECK(r.stats.p95 == Approx(p95).epsilon(1e-12));
    CHECK(r.stats.p99 == Approx(p99).epsilon(1e-12));
    CHECK(*r.slowdown_p90 == Approx(sd90).epsilon(1e-12));
  }
  CHECK(k == rows.size());
}

// A warm-cache baseline (Kunkel & Betke §4.6: "the 200 GB files still lead
// to cache hits"): over the history, 100 reads answered by the page cache in
// 40 us and 20 from the storage in 8 ms. By the paper's definition of
// t_expected (the median of the observed values) taken over what reached the
// storage, t_expected is 8 ms; an 8 ms read the next day is 1x, not the 200x
// a baseline of 40 us would give. Stats ops are never cache-classified.
TEST_CASE("probe baselines: cache-served samples are marked and left out of t_expected", "[slowdown]") {
  std::vector<ProbeSample> ss;
  for (int k = 0; k < 100; ++k) ss.push_back({"fs", "read", k * kS, 40e-6, "a"});
  for (int k = 0; k < 20; ++k) ss.push_back({"fs", "read", (100 + k) * kS, 8e-3, "a"});
  for (int k = 0; k < 5; ++k) ss.push_back({"fs", "stat", k * kS, 20e-6, "a"});  // metadata: kept
  for (int k = 0; k < 3; ++k) ss.push_back({"fs", "write", k * kS, 10e-6, "a"});  // all cached
  std::vector<std::string> all_cached;
  ProbeBaseline b = ComputeProbeBaseline(ss, 0, 200 * kS, kDefaultCacheFloorS, &all_cached);
  const ProbeMedian* r = b.Find("fs", "", "read");
  REQUIRE(r);
  CHECK(r->median_s == Approx(8e-3));
  CHECK(r->samples == 20);
  CHECK(r->cache_served == 100);
  REQUIRE(b.Find("fs", "", "stat"));
  CHECK(b.Find("fs", "", "stat")->median_s == Approx(20e-6));
  CHECK(b.Find("fs", "", "write") == nullptr);
  CHECK(all_cached == std::vector<std::string>{"fs  write", "fs a write"});
  // The marks survive the file.
  b.name = "warm";
  b.computed_at_ns = 1;
  auto back = ParseProbeBaselineLine(ProbeBaselineLine(b));
  REQUIRE(back.ok());
  CHECK(back->Find("fs", "", "read")->cache_served == 100);
  // Without the floor the baseline is the cache's.
  CHECK(ComputeProbeBaseline(ss, 0, 200 * kS, 0).Find("fs", "", "read")->median_s == Approx(40e-6));
  // The next day's 8 ms reads against it: 1x; against the history read from the samples too.
  std::vector<ProbeSample> day = ss;
  for (int k = 0; k < 10; ++k) day.push_back({"fs", "read", (1000 + k) * kS, 8e-3, "a"});
  SlowdownOptions o;
  o.from_ns = 1000 * kS;
  o.to_ns = 1600 * kS;
  o.intervals_ns = {600 * kS};
  o.history_ns = 1000 * kS;
  for (bool stored : {true, false}) {
    o.stored = stored ? std::make_shared<const ProbeBaseline>(b) : nullptr;
    auto rows = ComputeSlowdown(day, o);
    const SlowdownRow* rr = nullptr;
    for (const auto& x : rows)
      if (x.op == "read" && x.host.empty()) rr = &x;
    REQUIRE(rr);
    INFO((stored ? "stored" : "history"));
    CHECK(rr->baseline_kind == (stored ? "stored" : "history"));
    CHECK(*rr->baseline_median == Approx(8e-3));
    CHECK(rr->baseline_cache_served == 100);
    CHECK(*rr->slowdown_median == Approx(1.0));
  }
  o.stored = nullptr;
  o.cache_floor_s = 0;  // the old reading: 200x
  for (const auto& x : ComputeSlowdown(day, o))
    if (x.op == "read" && x.host.empty()) CHECK(*x.slowdown_median == Approx(200.0));
}

// The stored probe baseline (Kunkel & Betke §3.3: t_expected = the median of
// the op's observed values over the baseline), by hand: write latencies
// 1, 3, 2, 10 s from two hosts -> median of all (type 7) 2.5; host a (1, 2)
// 1.5, host b (3, 10) 6.5. A sample outside [from, to) does not count.
TEST_CASE("probe baselines: medians per file system and per host, file round trip (0600), bad lines named", "[slowdown]") {
  std::vector<ProbeSample> ss = {{"fs", "write", 0, 1.0, "a"}, {"fs", "write", 1 * kS, 3.0, "b"},
                                 {"fs", "write", 2 * kS, 2.0, "a"}, {"fs", "write", 3 * kS, 10.0, "b"},
                                 {"fs", "write", 100 * kS, 99.0, "a"}};
  ProbeBaseline b = ComputeProbeBaseline(ss, 0, 100 * kS);
  REQUIRE(b.medians.size() == 3);
  REQUIRE(b.Find("fs", "", "write"));
  CHECK(b.Find("fs", "", "write")->median_s == Approx(2.5));
  CHECK(b.Find("fs", "", "write")->samples == 4);
  CHECK(b.Find("fs", "a", "write")->median_s == Approx(1.5));
  CHECK(b.Find("fs", "b", "write")->median_s == Approx(6.5));
  CHECK(b.Find("fs", "", "read") == nullptr);
  b.name = "hand";
  b.computed_at_ns = 5;
  // The slowdown against it: an interval of write latencies 5, 5, 5 s from host a -> 5 / 2.5 = 2 for the
  // file system, 5 / 1.5 for host a; a read without a stored median falls back to the range, flagged.
  SlowdownOptions o;
  o.from_ns = 1000 * kS;
  o.to_ns = 1600 * kS;
  o.intervals_ns = {600 * kS};
  o.stored = std::make_shared<const ProbeBaseline>(b);
  std::vector<ProbeSample> day = {{"fs", "write", 1000 * kS, 5.0, "a"}, {"fs", "write", 1001 * kS, 5.0, "a"},
                                  {"fs", "write", 1002 * kS, 5.0, "a"}, {"fs", "read", 1003 * kS, 1.0, "a"}};
  auto rows = ComputeSlowdown(day, o);
  REQUIRE(rows.size() == 4);  // fs read, fs write, host a read, host a write
  for (const auto& r : rows) {
    INFO(r.host << " " << r.op);
    if (r.op == "write") {
      CHECK(r.baseline_kind == "stored");
      CHECK(*r.slowdown_median == Approx(r.host.empty() ? 2.0 : 5.0 / 1.5));
    } else {
      CHECK(r.baseline_kind == "analysed range");
    }
  }
  // Both rows of the read (the file system's and host a's) are named.
  CHECK(SlowdownBaselineWarning(rows, o).find("the stored probe baseline 'hand' has no median for fs a read, fs read: "
                                              "their t_expected is the median of the analysed range itself") !=
        std::string::npos);
  CHECK(SlowdownBaselineDescription(o).find("stored probe baseline 'hand'") == 0);
  o.stored.reset();
  CHECK(SlowdownBaselineWarning(rows, o).find("no stored probe baseline") == 0);
  CHECK(SlowdownBaselineWarning({}, o).empty());  // no probe records: nothing to warn about

  test::TempDir d;
  const std::string path = ProbeBaselineFileOf(d.path());
  ProbeBaseline older = b;
  older.name = "older";
  older.computed_at_ns = 1;
  REQUIRE(AppendProbeBaselineFile(path, older).ok());
  REQUIRE(AppendProbeBaselineFile(path, b).ok());
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto all = ReadProbeBaselineFile(path);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[1].source == "file " + path);
  CHECK((*all)[1].medians.size() == 3);
  CHECK((*all)[1].Find("fs", "b", "write")->median_s == 6.5);
  CHECK((*all)[1].Find("fs", "b", "write")->samples == 2);
  auto newest = SelectProbeBaseline(*all, "");
  REQUIRE(newest.ok());
  CHECK((*newest)->name == "hand");
  auto named = SelectProbeBaseline(*all, "older");
  REQUIRE(named.ok());
  CHECK((*named)->name == "older");
  auto missing = SelectProbeBaseline(*all, "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("stored: older, hand") != std::string::npos);
  auto none = ReadProbeBaselineFile(d / "none.jsonl");
  REQUIRE(none.ok());
  CHECK(none->empty());
  test::WriteFile(d / "bad.jsonl", ProbeBaselineLine(b) + ProbeBaselineLine(older) +
                                       "{\"name\":\"x\",\"computed_at_ns\":1,\"from_ns\":0,\"to_ns\":1,"
                                       "\"medians\":[{\"fs\":\"s\",\"host\":\"\",\"op\":\"write\",\"median_s\":-1,\"samples\":3}]}\n");
  auto bad = ReadProbeBaselineFile(d / "bad.jsonl");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.jsonl:3: medians[0]: \"median_s\" must be a number >= 0") != std::string::npos);
  test::WriteFile(d / "bad2.jsonl", "\n{\"name\":\"x\"}\n");
  auto bad2 = ReadProbeBaselineFile(d / "bad2.jsonl");
  REQUIRE_FALSE(bad2.ok());
  CHECK(bad2.status().message().find("bad2.jsonl:2: needs an integer \"computed_at_ns\"") != std::string::npos);
}
