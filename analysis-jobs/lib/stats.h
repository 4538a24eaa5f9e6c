// Small statistics shared by the analysis jobs (bad-ost, LASSi, ...):
// Pearson's correlation with its two-sided p-value, and the regularized
// incomplete beta function it rests on. Header-only, <cmath> only.
//
// Pearson(x, y) agrees with scipy.stats.pearsonr (the oracle test checks
// both r and p): r = sum((x-mx)(y-my)) / sqrt(sum((x-mx)^2) sum((y-my)^2)),
// clipped to [-1, 1]; p = P(|T| >= |t|) for T ~ Student t with n-2 degrees
// of freedom, t = r sqrt((n-2) / (1-r^2)), i.e. p = I_{df/(df+t^2)}(df/2, 1/2).
// n == 2 gives r = +-1 and p = 1, as scipy does.
// Guards: fewer than two pairs, or a constant x or y (zero variance), gives
// ok = false (scipy returns NaN there); callers must skip those.
#pragma once
#include <cmath>
#include <cstddef>
#include <span>

namespace iosonar::analysis::stats {

// Continued fraction of the incomplete beta (modified Lentz).
inline double BetaContinuedFraction(double a, double b, double x) {
  constexpr int kMaxIter = 500;
  constexpr double kEps = 1e-16;
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIter; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function, for a, b > 0 and x in [0, 1].
inline double RegularizedIncompleteBeta(double a, double b, double x) {
  if (!(x > 0)) return 0;
  if (!(x < 1)) return 1;
  const double ln_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(ln_front);
  // The continued fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

// Two-sided p-value of Student's t with df degrees of freedom.
inline double StudentTwoSidedP(double t, double df) {
  if (!(df > 0)) return 1;
  if (std::isinf(t)) return 0;
  return RegularizedIncompleteBeta(df / 2, 0.5, df / (df + t * t));
}

struct PearsonResult {
  bool ok = false;  // false: fewer than 2 pairs, or x or y constant
  double r = 0;
  double p = 1;
  size_t n = 0;
};

// r and p from the centered sums sxy = sum((x-mx)(y-my)), sxx, syy over n
// pairs (for callers that can compute them sparsely).
inline PearsonResult PearsonFromSums(double sxy, double sxx, double syy, size_t n) {
  PearsonResult res;
  res.n = n;
  if (n < 2) return res;
  if (!(sxx > 0) || !(syy > 0) || !std::isfinite(sxx) || !std::isfinite(syy)) return res;
  double r = sxy / std::sqrt(sxx * syy);
  if (r > 1) r = 1;
  if (r < -1) r = -1;
  res.ok = true;
  res.r = r;
  if (n == 2) {
    res.p = 1;
    return res;
  }
  const double df = static_cast<double>(n - 2);
  if (std::fabs(r) >= 1) {
    res.p = 0;
    return res;
  }
  const double t = r * std::sqrt(df / ((1 - r) * (1 + r)));
  res.p = StudentTwoSidedP(t, df);
  return res;
}

inline PearsonResult Pearson(std::span<const double> x, std::span<const double> y) {
  const size_t n = x.size() < y.size() ? x.size() : y.size();
  if (n < 2) return PearsonFromSums(0, 0, 0, n);
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return PearsonFromSums(sxy, sxx, syy, n);
}

}  // namespace iosonar::analysis::stats
