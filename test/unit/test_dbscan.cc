// DBSCAN: labels and core samples equal scikit-learn's (the oracle, run as a
// python3 subprocess on the same points) on generated point sets and the edge
// cases where implementations differ: ties at eps, duplicates, all noise, one
// cluster, min_samples counting the point itself, border points between clusters.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "analysis-jobs/anomaly/dbscan.h"
#include "core/base/json.h"
#include "test/testutil/oracle.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::analysis;

namespace {

struct Case {
  std::string name;
  size_t dims = 2;
  std::vector<double> pts;
  double eps = 0.5;
  size_t min_samples = 5;
};

bool HaveSklearn() { return iosonar::test::Run({"/usr/bin/python3", "-c", "import sklearn"}).exit_code == 0; }

std::vector<Case> Cases() {
  std::vector<Case> cs;
  // Generated: blobs of varying density plus uniform noise, in 2-D and 3-D.
  for (unsigned seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    Case c;
    c.name = "generated seed " + std::to_string(seed);
    c.dims = seed % 4 == 0 ? 3 : 2;
    std::normal_distribution<double> g(0, 0.3 + 0.1 * (seed % 3));
    std::uniform_real_distribution<double> u(-6, 6);
    const int blobs = 1 + static_cast<int>(seed % 4);
    for (int b = 0; b < blobs; ++b) {
      std::vector<double> centre(c.dims);
      for (auto& v : centre) v = u(rng);
      const int npts = 10 + static_cast<int>((seed * 7 + static_cast<unsigned>(b) * 13) % 60);
      for (int p = 0; p < npts; ++p)
        for (size_t k = 0; k < c.dims; ++k) c.pts.push_back(centre[k] + g(rng));
    }
    for (int p = 0; p < 15; ++p)
      for (size_t k = 0; k < c.dims; ++k) c.pts.push_back(u(rng));
    c.eps = 0.3 + 0.05 * (seed % 5);
    c.min_samples = 2 + seed % 6;
    cs.push_back(c);
  }
  // Ties at eps: points on a line exactly eps apart (exactly representable:
  // every implementation computes the same distances) are neighbours.
  cs.push_back({"ties at eps (chain)", 2, {0, 0, 0.5, 0, 1, 0, 1.5, 0, 4, 0, 4.25, 0}, 0.5, 3});
  cs.push_back({"ties at eps (cross)", 2, {0, 0, 1, 0, -1, 0, 0, 1, 0, -1, 3, 3}, 1.0, 5});
  cs.push_back({"just beyond eps", 2, {0, 0, 0.5, 0, 1.0, 0}, 0.4999, 2});
  // Duplicates: a stack of identical points is a cluster once min_samples deep.
  cs.push_back({"duplicates", 2, {1, 1, 1, 1, 1, 1, 5, 5, 5, 5, 9, 9}, 0.1, 3});
  cs.push_back({"duplicates one short", 2, {1, 1, 1, 1, 5, 5, 5, 5}, 0.1, 3});
  // All noise, one cluster, min_samples 1 (every point a cluster of its own).
  cs.push_back({"all noise", 2, {0, 0, 2, 0, 4, 0, 6, 0, 8, 0}, 1.0, 2});
  cs.push_back({"one cluster", 2, {0, 0, 0.1, 0, 0.2, 0, 0.3, 0.1, 0.15, 0.05}, 0.5, 3});
  cs.push_back({"min_samples 1", 2, {0, 0, 3, 0, 3.5, 0, 10, 10}, 1.0, 1});
  // min_samples counts the point itself: 2 neighbours + itself = 3.
  cs.push_back({"min_samples counts self", 2, {0, 0, 1, 0, 2, 0, 10, 0, 11, 0}, 1.0, 3});
  // A border point within eps of core samples of two clusters: sklearn gives
  // it the cluster whose expansion reaches it first (the lower-numbered one).
  cs.push_back({"border between clusters", 2,
                {0, 0, 0.5, 0, 1, 0, 1.5, 0, 2.5, 0, 3.5, 0, 4, 0, 4.5, 0, 5, 0}, 1.0, 3});
  cs.push_back({"border, later cluster first in index", 2,
                {4, 0, 4.5, 0, 5, 0, 3.5, 0, 2.5, 0, 0, 0, 0.5, 0, 1, 0, 1.5, 0}, 1.0, 3});
  cs.push_back({"single point", 2, {7, 7}, 0.5, 1});
  cs.push_back({"single point noise", 2, {7, 7}, 0.5, 2});
  cs.push_back({"tiny eps with duplicates", 2, {1, 2, 1, 2, 1, 2.000001, 3, 3}, 1e-9, 2});
  cs.push_back({"1-D", 1, {0, 0.2, 0.4, 5, 5.1, 5.2, 5.3, 9}, 0.25, 2});
  return cs;
}

}  // namespace

TEST_CASE("dbscan: labels and core samples equal scikit-learn's", "[dbscan][oracle]") {
  if (!HaveSklearn()) {
    FAIL("python3-sklearn is not installed (scripts/setup.sh --test installs it)");
  }
  const auto cases = Cases();
  std::string in;
  {
    JsonWriter j(&in, 0);
    j.BeginArray();
    for (const auto& c : cases) {
      j.BeginObject();
      j.Key("points");
      j.BeginArray();
      for (size_t i = 0; i < c.pts.size() / c.dims; ++i) {
        j.BeginArray();
        for (size_t k = 0; k < c.dims; ++k) j.Double(c.pts[i * c.dims + k]);
        j.EndArray();
      }
      j.EndArray();
      j.Kv("eps", c.eps);
      j.Kv("min_samples", static_cast<int64_t>(c.min_samples));
      j.EndObject();
    }
    j.EndArray();
  }
  const rapidjson::Document d = iosonar::test::RunOracle("dbscan_sklearn.py", {}, in);
  REQUIRE(d.Size() == cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    INFO(c.name);
    const auto res = Dbscan(c.pts, c.dims, c.eps, c.min_samples);
    const auto& o = d[static_cast<rapidjson::SizeType>(k)];
    REQUIRE(res.labels.size() == o["labels"].Size());
    std::vector<int> want;
    for (const auto& v : o["labels"].GetArray()) want.push_back(v.GetInt());
    CHECK(res.labels == want);
    std::vector<int> core;
    for (size_t i = 0; i < res.core.size(); ++i)
      if (res.core[i]) core.push_back(static_cast<int>(i));
    std::vector<int> want_core;
    for (const auto& v : o["core"].GetArray()) want_core.push_back(v.GetInt());
    CHECK(core == want_core);
  }
}

TEST_CASE("dbscan: ties at eps are neighbours, min_samples counts the point itself", "[dbscan]") {
  // Without the oracle: three points 1 apart in a row, eps 1 -> the middle one
  // has 3 neighbours (itself included) and is the only core sample.
  const std::vector<double> pts = {0, 0, 1, 0, 2, 0};
  auto r = Dbscan(pts, 2, 1.0, 3);
  CHECK(r.labels == std::vector<int>{0, 0, 0});
  CHECK(r.core == std::vector<bool>{false, true, false});
  r = Dbscan(pts, 2, 0.999, 2);
  CHECK(r.labels == std::vector<int>{-1, -1, -1});
  CHECK(r.clusters == 0);
  CHECK(Dbscan({}, 2, 1.0, 1).labels.empty());
}
