// Probe slowdown: quantiles equal numpy's (method 'linear' =
// Hyndman-Fan type 7), slowdown factors against a fixed and a sliding baseline.
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

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
    WARN("skipped: /usr/bin/python3 with numpy is not installed (apt-get install python3-numpy)");
    return;
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
