#include "analysis-jobs/anomaly/dbscan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace iosonar::analysis {

std::vector<std::vector<size_t>> RadiusNeighbours(std::span<const double> points, size_t dims, double eps) {
  const size_t n = dims ? points.size() / dims : 0;
  std::vector<std::vector<size_t>> nb(n);
  if (n == 0) return nb;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto x0 = [&](size_t i) { return points[i * dims]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x0(a) < x0(b); });
  const double eps2 = eps * eps;
  // The window is a little wider than eps so that rounding in the first
  // coordinate never drops a pair the squared distance admits.
  const double win = eps * (1 + 1e-9) + 1e-300;
  size_t lo = 0;
  for (size_t a = 0; a < n; ++a) {
    const size_t i = order[a];
    while (x0(order[lo]) < x0(i) - win) ++lo;
    for (size_t b = lo; b < n && x0(order[b]) <= x0(i) + win; ++b) {
      const size_t j = order[b];
      double d2 = 0;
      for (size_t k = 0; k < dims; ++k) {
        const double d = points[i * dims + k] - points[j * dims + k];
        d2 += d * d;
      }
      if (d2 <= eps2) nb[i].push_back(j);
    }
    std::sort(nb[i].begin(), nb[i].end());
  }
  return nb;
}

DbscanResult Dbscan(std::span<const double> points, size_t dims, double eps, size_t min_samples) {
  const auto nb = RadiusNeighbours(points, dims, eps);
  const size_t n = nb.size();
  DbscanResult r;
  r.labels.assign(n, -1);
  r.core.assign(n, false);
  for (size_t i = 0; i < n; ++i) r.core[i] = nb[i].size() >= min_samples;
  // sklearn's dbscan_inner: a depth-first expansion from each unlabelled core
  // sample in index order; non-core points are labelled but not expanded.
  std::vector<size_t> stack;
  for (size_t start = 0; start < n; ++start) {
    if (r.labels[start] != -1 || !r.core[start]) continue;
    const int label = r.clusters++;
    size_t i = start;
    while (true) {
      if (r.labels[i] == -1) {
        r.labels[i] = label;
        if (r.core[i])
          for (size_t v : nb[i])
            if (r.labels[v] == -1) stack.push_back(v);
      }
      if (stack.empty()) break;
      i = stack.back();
      stack.pop_back();
    }
  }
  return r;
}

}  // namespace iosonar::analysis
