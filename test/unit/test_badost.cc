// bad-ost: Pearson r and p against scipy.stats.pearsonr (the oracle), the
// incomplete beta, the per-OST correlation on synthetic striping with one
// slow OST, and the input parsers' guards.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "analysis-jobs/badost/badost.h"
#include "analysis-jobs/lib/stats.h"
#include "core/base/json.h"
#include "core/records/record.h"
#include "test/testutil/oracle.h"
#include "test/testutil/testutil.h"

using namespace iosonar::analysis;

namespace {

bool HaveScipy() { return iosonar::test::Run({"/usr/bin/python3", "-c", "import scipy.stats"}).exit_code == 0; }

// Runs the scipy oracle on pairs; returns [{r, p}].
rapidjson::Document Oracle(const std::vector<std::pair<std::vector<double>, std::vector<double>>>& pairs) {
  std::string in;
  iosonar::JsonWriter j(&in, 0);
  j.BeginArray();
  for (const auto& [x, y] : pairs) {
    j.BeginObject();
    j.Key("x");
    j.BeginArray();
    for (double v : x) j.Double(v);
    j.EndArray();
    j.Key("y");
    j.BeginArray();
    for (double v : y) j.Double(v);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  rapidjson::Document d = iosonar::test::RunOracle("badost_pearson.py", {}, in);
  REQUIRE(d.Size() == pairs.size());
  return d;
}

void CheckRP(const stats::PearsonResult& got, const rapidjson::Value& want) {
  const double r = want["r"].GetDouble(), p = want["p"].GetDouble();
  INFO("r got " << got.r << " want " << r << "; p got " << got.p << " want " << p);
  REQUIRE(got.ok);
  CHECK(std::fabs(got.r - r) <= 1e-12);
  // Relative agreement on p down to scipy's own precision near 0.
  CHECK(std::fabs(got.p - p) <= 1e-9 * std::max(p, 1e-300) + 1e-15);
}

// 300 files, each striped over 1-4 of 24 OSTs; files touching OST 14 run at
// a fraction of the speed.
std::vector<FileObservation> SlowOstWorkload(unsigned seed, double slow_factor) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ost(0, 23), width(1, 4);
  std::normal_distribution<double> noise(1.0, 0.08);
  std::vector<FileObservation> v;
  for (int i = 0; i < 300; ++i) {
    FileObservation f;
    f.file = "/scratch/f" + std::to_string(i);
    const int w = width(rng);
    while (static_cast<int>(f.osts.size()) < w) {
      const int o = ost(rng);
      if (std::find(f.osts.begin(), f.osts.end(), o) == f.osts.end()) f.osts.push_back(o);
    }
    f.bytes = 1e9;
    double bw = 1e9 * noise(rng);
    if (std::find(f.osts.begin(), f.osts.end(), 14) != f.osts.end()) bw *= slow_factor;
    f.seconds = f.bytes / bw;
    v.push_back(f);
  }
  return v;
}

}  // namespace

TEST_CASE("bad-ost: Pearson r and two-sided p equal scipy.stats.pearsonr", "[badost][oracle]") {
  if (!HaveScipy()) {
    FAIL("python3-scipy is not installed (scripts/setup.sh --test installs it)");
  }
  std::mt19937 rng(42);
  std::normal_distribution<double> g(0, 1);
  std::bernoulli_distribution coin(0.3);
  std::vector<std::pair<std::vector<double>, std::vector<double>>> pairs;
  for (size_t n : {3, 5, 10, 30, 100, 1000}) {
    for (double rho : {0.0, 0.3, -0.7, 0.99}) {
      std::vector<double> x(n), y(n);
      for (size_t i = 0; i < n; ++i) {
        x[i] = g(rng);
        y[i] = rho * x[i] + std::sqrt(1 - rho * rho) * g(rng);
      }
      pairs.emplace_back(x, y);
    }
    // A performance column against a 0/share OST column, as bad-ost uses.
    std::vector<double> perf(n), col(n);
    for (size_t i = 0; i < n; ++i) {
      col[i] = coin(rng) ? 0.5 : 0.0;
      perf[i] = 1e9 * (1 + 0.1 * g(rng)) * (col[i] > 0 ? 0.6 : 1.0);
    }
    if (std::find(col.begin(), col.end(), 0.5) == col.end()) col[0] = 0.5;
    if (std::find(col.begin(), col.end(), 0.0) == col.end()) col[1] = 0.0;
    pairs.emplace_back(perf, col);
  }
  auto d = Oracle(pairs);
  for (size_t k = 0; k < pairs.size(); ++k) {
    INFO("case " << k << " n=" << pairs[k].first.size());
    CheckRP(stats::Pearson(pairs[k].first, pairs[k].second), d[static_cast<rapidjson::SizeType>(k)]);
  }
}

TEST_CASE("bad-ost: incomplete beta and t tail on known values", "[badost]") {
  CHECK(stats::RegularizedIncompleteBeta(1, 1, 0.3) == Approx(0.3).epsilon(1e-12));  // uniform CDF
  CHECK(stats::RegularizedIncompleteBeta(2, 3, 0.0) == 0);
  CHECK(stats::RegularizedIncompleteBeta(2, 3, 1.0) == 1);
  // I_x(a, 1) = x^a
  CHECK(stats::RegularizedIncompleteBeta(3.5, 1, 0.7) == Approx(std::pow(0.7, 3.5)).epsilon(1e-12));
  // Symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
  CHECK(stats::RegularizedIncompleteBeta(2.5, 7, 0.4) ==
        Approx(1 - stats::RegularizedIncompleteBeta(7, 2.5, 0.6)).epsilon(1e-12));
  // Student t with 1 df is Cauchy: P(|T| >= 1) = 0.5
  CHECK(stats::StudentTwoSidedP(1.0, 1) == Approx(0.5).epsilon(1e-12));
  CHECK(stats::StudentTwoSidedP(0.0, 10) == Approx(1.0));
}

TEST_CASE("bad-ost: guards on constant and tiny inputs", "[badost]") {
  std::vector<double> a{1, 2, 3}, c{5, 5, 5};
  CHECK_FALSE(stats::Pearson(a, c).ok);
  CHECK_FALSE(stats::Pearson(std::vector<double>{1}, std::vector<double>{2}).ok);
  auto two = stats::Pearson(std::vector<double>{1, 2}, std::vector<double>{4, 3});
  REQUIRE(two.ok);
  CHECK(two.r == Approx(-1));
  CHECK(two.p == 1);
}

TEST_CASE("bad-ost: one slow OST among 24 is named, and only it", "[badost]") {
  auto files = SlowOstWorkload(3, 0.4);
  auto res = CorrelateOsts(files);
  CHECK(res.files == 300);
  REQUIRE_FALSE(res.correlations.empty());
  CHECK(res.correlations.front().ost == 14);  // the most negative
  BadOstFilter f;
  f.p_threshold = 1e-5;
  f.c_threshold = 0.5;
  auto bad = FilterCorrelations(res, f);
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].name == "OST#14");
  CHECK(bad[0].coefficient < -0.5);

  // A healthy file system names nobody at -p 0.01 with -c 0.5.
  auto good = CorrelateOsts(SlowOstWorkload(4, 1.0));
  BadOstFilter g;
  g.p_threshold = 0.01;
  g.c_threshold = 0.5;
  CHECK(FilterCorrelations(good, g).empty());

  // Every OST's r and p equal scipy's on the same columns.
  if (!HaveScipy()) return;
  std::vector<double> perf;
  for (const auto& fo : files) perf.push_back(fo.bytes / fo.seconds);
  std::vector<std::pair<std::vector<double>, std::vector<double>>> pairs;
  for (const auto& c : res.correlations) {
    std::vector<double> col;
    for (const auto& fo : files) {
      const bool on = std::find(fo.osts.begin(), fo.osts.end(), c.ost) != fo.osts.end();
      col.push_back(on ? 1.0 / static_cast<double>(fo.osts.size()) : 0.0);
    }
    pairs.emplace_back(perf, col);
  }
  auto d = Oracle(pairs);
  for (size_t k = 0; k < pairs.size(); ++k) {
    stats::PearsonResult pr;
    pr.ok = true;
    pr.r = res.correlations[k].coefficient;
    pr.p = res.correlations[k].p_value;
    INFO(res.correlations[k].name);
    CheckRP(pr, d[static_cast<rapidjson::SizeType>(k)]);
  }
}

TEST_CASE("bad-ost: zero I/O time, bad rows and constant columns are set aside", "[badost]") {
  BadOstInput in;
  ParseBadOstCsv(
      "file,bytes,seconds,osts\n"
      "/a,100,1,0;1\n"
      "/b,100,0,1\n"        // no I/O time
      "/c,abc,1,1\n"        // bad bytes
      "/d,100,2,OST0000 OST0002\n"
      "/e,100,4,0;2\n"
      "/f,100,3,0;XYZ\n",  // bad OST
      "in.csv", &in);
  CHECK(in.files.size() == 3);
  REQUIRE(in.errors.size() == 3);
  CHECK(in.errors[0].find("in.csv:3:") == 0);
  CHECK(in.errors[0].find("no I/O time") != std::string::npos);
  CHECK(in.errors[1].find("in.csv:4:") == 0);
  CHECK(in.errors[2].find("in.csv:7:") == 0);
  CHECK(in.zero_time == 1);
  auto res = CorrelateOsts(in.files);
  // OST 0 is on every file: a constant column, skipped.
  REQUIRE(res.constant_osts.size() == 1);
  CHECK(res.constant_osts[0] == 0);
  CHECK(res.correlations.size() == 2);

  // Everyone equally fast: no correlation at all.
  std::vector<FileObservation> same{{"x", 10, 1, {1}}, {"y", 20, 2, {2}}, {"z", 5, 0.5, {1, 2}}};
  auto none = CorrelateOsts(same);
  CHECK(none.constant_performance);
  CHECK(none.correlations.empty());

  // JSON array and JSON lines read the same.
  BadOstInput j1, j2;
  ParseBadOstJson(R"([{"file":"/a","bytes":100,"seconds":1,"osts":[0,1]},{"file":"/b","bytes":1,"seconds":1,"osts":["OST000e"]}])",
                  "a.json", &j1);
  ParseBadOstAuto("{\"file\":\"/a\",\"bytes\":100,\"seconds\":1,\"osts\":[0,1]}\n{\"file\":1}\n"
                  "{\"file\":\"/b\",\"bytes\":1,\"seconds\":1,\"osts\":[\"OST#14\"]}\n",
                  "b.jsonl", &j2);
  REQUIRE(j1.files.size() == 2);
  REQUIRE(j2.files.size() == 2);
  CHECK(j1.files[1].osts == std::vector<int64_t>{14});
  CHECK(j2.files[1].osts == std::vector<int64_t>{14});
  REQUIRE(j2.errors.size() == 1);
  CHECK(j2.errors[0].find("b.jsonl:2:") == 0);
  BadOstInput broken;
  ParseBadOstJson("[{\"file\":", "x.json", &broken);
  CHECK(broken.files.empty());
  CHECK(broken.errors.size() == 1);
  BadOstInput noheader;
  ParseBadOstCsv("a,b,c\n1,2,3\n", "h.csv", &noheader);
  CHECK(noheader.files.empty());
  CHECK_FALSE(noheader.errors.empty());
}

TEST_CASE("bad-ost: iosonar.result.bad_ost records pass the schema, and the slow OST is flagged", "[badost]") {
  BadOstInput in;
  in.files = SlowOstWorkload(3, 0.4);
  auto res = CorrelateOsts(in.files);
  BadOstFilter f;
  f.p_threshold = 1e-5;
  f.c_threshold = 0.5;
  const std::string recs = BadOstToRecords(res, f, in, "admin1", "", 1795000000LL * 1000000000);
  size_t n = 0, flagged = 0;
  for (size_t a = 0, b; (b = recs.find('\n', a)) != std::string::npos; a = b + 1) {
    std::string line = recs.substr(a, b - a), buf = line + '\0';
    iosonar::ParsedRecord rec;
    INFO(line);
    REQUIRE(iosonar::ParseRecordInsitu(buf.data(), line.size(), &rec).message() == "");
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (d.HasMember("badost.verdict")) {
      ++flagged;
      CHECK(std::string(d["badost.ost"].GetString()) == "OST#14");
      CHECK(std::string(d["badost.verdict"].GetString()) == "unhealthy");
    }
    ++n;
  }
  CHECK(n == res.correlations.size());
  CHECK(flagged == 1);
}

TEST_CASE("bad-ost records: a resend has the same stream, another job or result another", "[badost]") {
  BadOstInput in;
  in.files = SlowOstWorkload(3, 0.4);
  BadOstFilter f;
  auto stream_of = [](const std::string& recs) {
    rapidjson::Document d;
    d.Parse(recs.substr(0, recs.find('\n')).c_str());
    REQUIRE(d.IsObject());
    return d["event.stream"].GetInt64();
  };
  const auto res = CorrelateOsts(in.files);
  const int64_t s = stream_of(BadOstToRecords(res, f, in, "h", "7", 1));
  CHECK(stream_of(BadOstToRecords(CorrelateOsts(in.files), f, in, "h", "7", 2)) == s);  // the time is not the result
  CHECK(stream_of(BadOstToRecords(res, f, in, "h", "8", 1)) != s);
  BadOstInput other;
  other.files = SlowOstWorkload(4, 0.4);
  CHECK(stream_of(BadOstToRecords(CorrelateOsts(other.files), f, other, "h", "7", 1)) != s);
}
