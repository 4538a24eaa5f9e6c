// Probe slowdown against a long baseline (issue 14; Kunkel & Betke §3.3:
// s = t_observed / t_expected, t_expected the median of all observed values
// of the op; §4.5: over a 30-day period): 30 normal days of probes from two
// hosts, then a day on which stat and create take 4x as long. The expected
// factors are computed here from the definition (numpy's linear quantile),
// not by iosonar.
#include <rapidjson/document.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/base/timeutil.h"
#include "core/store/store.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {
constexpr int64_t kS = 1000000000;

// Hyndman-Fan type 7 median of a copy (numpy's default method='linear').
double Median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const double h = static_cast<double>(x.size() - 1) * 0.5;
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}
}  // namespace

TEST_CASE("probe slowdown: a slow day after 30 normal days, against their median", "[report][probe-slowdown]") {
  test::TempDir tmp;
  const int64_t slow_day = *ParseIso8601("2026-12-31T00:00:00Z");
  const int64_t t0 = slow_day - 30 * 86400 * kS;
  const std::vector<std::string> ops = {"write", "read", "stat", "delete", "create"};
  const std::vector<std::string> hosts = {"login1", "login2"};
  std::map<std::string, std::vector<double>> history;                       // op -> latencies (s), all hosts
  std::map<std::pair<std::string, std::string>, std::vector<double>> host_history;  // (host, op)
  std::map<std::pair<std::string, int64_t>, std::vector<double>> day;         // (op, 10-min start) on the slow day
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> ln(std::log(0.002), 0.3);
  int64_t seq = 0;
  test::StoreFromLines(tmp / "store", [&](const std::function<Status(std::string_view)>& sink) -> Status {
    for (int64_t t = t0; t < slow_day + 86400 * kS; t += 600 * kS)
      for (size_t h = 0; h < hosts.size(); ++h)
        for (const auto& op : ops) {
          double lat = ln(rng);
          const bool slow = t >= slow_day && (op == "stat" || op == "create");
          if (slow) lat *= 4;
          const auto ns = static_cast<int64_t>(std::llround(lat * 1e9));
          const double s = static_cast<double>(ns) / 1e9;
          if (t < slow_day) {
            history[op].push_back(s);
            host_history[{hosts[h], op}].push_back(s);
          } else {
            day[{op, t}].push_back(s);
          }
          const std::string line = "{\"@timestamp\":\"" + FormatIsoMillis(t + static_cast<int64_t>(h) * kS) +
                                   "\",\"event.dataset\":\"iosonar.probe\",\"event.stream\":" + std::to_string(20 + h) +
                                   ",\"event.seq\":" + std::to_string(++seq) + ",\"host.name\":\"" + hosts[h] +
                                   "\",\"lustre.fs\":\"scratch\",\"probe.dir\":\"/scratch/probe\",\"probe.op\":\"" + op +
                                   "\",\"probe.latency_ns\":" + std::to_string(ns) + ",\"probe.ok\":true}";
          if (Status st = sink(line); !st.ok()) return st;
        }
    return Status::Ok();
  });
  auto r = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--day", "2026-12-31", "--html",
                      tmp / "r.html", "--json", tmp / "r.json", "--text", tmp / "r.txt"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  rapidjson::Document d;
  d.Parse(test::ReadFile(tmp / "r.json").c_str());
  REQUIRE_FALSE(d.HasParseError());
  const auto& sd = d["slowdown"];
  CHECK(std::string(sd["baseline"].GetString()) == "history");
  CHECK(sd["rows_without_history"].GetInt() == 0);
  const auto& rows = sd["rows"];
  REQUIRE(rows.Size() == ops.size() * 144);
  size_t slow_rows = 0;
  for (const auto& row : rows.GetArray()) {
    const std::string op = row["op"].GetString();
    const int64_t start = *ParseIso8601(row["start"].GetString());
    INFO(op << " " << row["start"].GetString());
    CHECK(std::string(row["baseline_kind"].GetString()) == "history");
    const double t_expected = Median(history[op]);
    CHECK(row["baseline_median"].GetDouble() == Approx(t_expected).epsilon(1e-12));
    const double expected = Median(day[{op, start}]) / t_expected;
    CHECK(row["slowdown_median"].GetDouble() == Approx(expected).epsilon(1e-9));
    if (op == "stat" || op == "create") {
      slow_rows += expected > 1;
      CHECK(row["slowdown_median"].GetDouble() > 1);
    }
  }
  CHECK(slow_rows == 2 * 144);
  // Per host: each host against its own 30-day median.
  const auto& hr = sd["host_rows"];
  REQUIRE(hr.Size() == hosts.size() * ops.size() * 144);
  for (const auto& row : hr.GetArray()) {
    const std::pair<std::string, std::string> k{row["host"].GetString(), row["op"].GetString()};
    CHECK(row["baseline_median"].GetDouble() == Approx(Median(host_history[k])).epsilon(1e-12));
  }
  const std::string html = test::ReadFile(tmp / "r.html");
  CHECK(html.find("Per probing host") != std::string::npos);
  CHECK(html.find("no probe history before the report") == std::string::npos);
}
