#include "analysis-jobs/phases/wavelet.h"

#include <algorithm>
#include <cmath>

namespace iosonar::analysis {

Result<WaveletKind> ParseWavelet(std::string_view name) {
  if (name == "haar" || name == "db1") return WaveletKind::kHaar;
  if (name == "db4") return WaveletKind::kDb4;
  return Status::Invalid("unknown wavelet '" + std::string(name) + "' (haar or db4)");
}

Result<ExtensionMode> ParseExtensionMode(std::string_view name) {
  if (name == "periodization" || name == "per") return ExtensionMode::kPeriodization;
  if (name == "symmetric" || name == "sym") return ExtensionMode::kSymmetric;
  return Status::Invalid("unknown extension mode '" + std::string(name) + "' (periodization or symmetric)");
}

std::string_view WaveletName(WaveletKind w) { return w == WaveletKind::kHaar ? "haar" : "db4"; }
std::string_view ExtensionModeName(ExtensionMode m) {
  return m == ExtensionMode::kPeriodization ? "periodization" : "symmetric";
}

namespace {

WaveletFilters Make(std::vector<double> rec_lo) {
  WaveletFilters f;
  const size_t n = rec_lo.size();
  f.rec_lo = rec_lo;
  f.dec_lo.assign(rec_lo.rbegin(), rec_lo.rend());
  // Quadrature mirror: rec_hi[k] = (-1)^k rec_lo[n-1-k]; dec_hi is its reverse.
  f.rec_hi.resize(n);
  for (size_t k = 0; k < n; ++k) f.rec_hi[k] = (k % 2 == 0 ? 1.0 : -1.0) * rec_lo[n - 1 - k];
  f.dec_hi.assign(f.rec_hi.rbegin(), f.rec_hi.rend());
  return f;
}

// Mirror index k into [0, n) half-sample symmetrically (period 2n).
size_t Mirror(long long k, long long n) {
  long long p = 2 * n;
  long long r = k % p;
  if (r < 0) r += p;
  if (r >= n) r = p - 1 - r;
  return static_cast<size_t>(r);
}

std::vector<double> DownConv(std::span<const double> x, const std::vector<double>& h, ExtensionMode m) {
  const long long f = static_cast<long long>(h.size());
  const long long n = static_cast<long long>(x.size());
  std::vector<double> out;
  if (n == 0) return out;
  if (m == ExtensionMode::kPeriodization) {
    const long long np = n + (n % 2);
    auto at = [&](long long k) {
      long long r = k % np;
      if (r < 0) r += np;
      return r >= n ? x[static_cast<size_t>(n - 1)] : x[static_cast<size_t>(r)];
    };
    out.resize(static_cast<size_t>(np / 2));
    for (long long o = 0; o < np / 2; ++o) {
      double s = 0;
      for (long long j = 0; j < f; ++j) s += h[static_cast<size_t>(j)] * at(f / 2 + 2 * o - j);
      out[static_cast<size_t>(o)] = s;
    }
  } else {
    const long long len = (n + f - 1) / 2;
    out.resize(static_cast<size_t>(len));
    for (long long o = 0; o < len; ++o) {
      double s = 0;
      for (long long j = 0; j < f; ++j) s += h[static_cast<size_t>(j)] * x[Mirror(1 + 2 * o - j, n)];
      out[static_cast<size_t>(o)] = s;
    }
  }
  return out;
}

}  // namespace

const WaveletFilters& Filters(WaveletKind w) {
  static const WaveletFilters kHaar = Make({M_SQRT1_2, M_SQRT1_2});
  // Daubechies' extremal-phase scaling filter with 4 vanishing moments
  // (published constants; the oracle test checks them against PyWavelets).
  static const WaveletFilters kDb4 = Make({0.2303778133088965, 0.7148465705529157, 0.6308807679298589,
                                           -0.027983769416859854, -0.18703481171909309, 0.030841381835560764,
                                           0.0328830116668852, -0.010597401785069032});
  return w == WaveletKind::kHaar ? kHaar : kDb4;
}

int DwtMaxLevel(size_t n, WaveletKind w) {
  const size_t f = Filters(w).dec_lo.size();
  if (f <= 1 || n < f - 1) return 0;
  size_t q = n / (f - 1);
  int l = 0;
  while (q > 1) {
    q >>= 1;
    ++l;
  }
  return l;
}

DwtPair Dwt(std::span<const double> x, WaveletKind w, ExtensionMode m) {
  const auto& f = Filters(w);
  return {DownConv(x, f.dec_lo, m), DownConv(x, f.dec_hi, m)};
}

std::vector<double> Idwt(std::span<const double> a, std::span<const double> d, WaveletKind w, ExtensionMode m) {
  const auto& fl = Filters(w);
  const long long f = static_cast<long long>(fl.rec_lo.size());
  const long long nc = static_cast<long long>(std::min(a.size(), d.size()));
  std::vector<double> out;
  if (nc == 0) return out;
  if (m == ExtensionMode::kPeriodization) {
    // Transpose of the analysis: the filters are orthonormal.
    const long long np = 2 * nc;
    out.assign(static_cast<size_t>(np), 0.0);
    for (long long o = 0; o < nc; ++o)
      for (long long j = 0; j < f; ++j) {
        long long r = (f / 2 + 2 * o - j) % np;
        if (r < 0) r += np;
        out[static_cast<size_t>(r)] += fl.dec_lo[static_cast<size_t>(j)] * a[static_cast<size_t>(o)] +
                                        fl.dec_hi[static_cast<size_t>(j)] * d[static_cast<size_t>(o)];
      }
    return out;
  }
  const long long len = 2 * nc - f + 2;
  if (len <= 0) return out;
  out.assign(static_cast<size_t>(len), 0.0);
  for (long long n = 0; n < len; ++n) {
    double s = 0;
    // full[n + f - 2] = sum_k rec[n + f - 2 - 2k] c[k]
    const long long m2 = n + f - 2;
    for (long long k = std::max<long long>(0, (m2 - f + 2) / 2); k < nc && 2 * k <= m2; ++k) {
      const long long j = m2 - 2 * k;
      if (j < 0 || j >= f) continue;
      s += fl.rec_lo[static_cast<size_t>(j)] * a[static_cast<size_t>(k)] +
           fl.rec_hi[static_cast<size_t>(j)] * d[static_cast<size_t>(k)];
    }
    out[static_cast<size_t>(n)] = s;
  }
  return out;
}

std::vector<std::vector<double>> Wavedec(std::span<const double> x, WaveletKind w, ExtensionMode m, int level) {
  std::vector<double> a(x.begin(), x.end());
  std::vector<std::vector<double>> details;
  for (int l = 0; l < level && !a.empty(); ++l) {
    DwtPair p = Dwt(a, w, m);
    details.push_back(std::move(p.detail));
    a = std::move(p.approx);
  }
  std::vector<std::vector<double>> out;
  out.push_back(std::move(a));
  for (auto it = details.rbegin(); it != details.rend(); ++it) out.push_back(std::move(*it));
  return out;
}

std::vector<double> Waverec(const std::vector<std::vector<double>>& c, WaveletKind w, ExtensionMode m) {
  if (c.empty()) return {};
  std::vector<double> a = c[0];
  for (size_t i = 1; i < c.size(); ++i) {
    if (a.size() == c[i].size() + 1) a.pop_back();
    a = Idwt(a, c[i], w, m);
  }
  return a;
}

void SoftThreshold(std::vector<double>& v, double t) {
  for (double& x : v) {
    const double mag = std::fabs(x) - t;
    x = mag > 0 ? std::copysign(mag, x) : 0.0;
  }
}

void HardThreshold(std::vector<double>& v, double t) {
  for (double& x : v)
    if (std::fabs(x) < t) x = 0.0;
}

double UniversalThreshold(std::span<const double> d, size_t n) {
  if (d.empty() || n < 2) return 0;
  std::vector<double> mag(d.size());
  for (size_t i = 0; i < d.size(); ++i) mag[i] = std::fabs(d[i]);
  const size_t mid = mag.size() / 2;
  std::nth_element(mag.begin(), mag.begin() + static_cast<long>(mid), mag.end());
  double med = mag[mid];
  if (mag.size() % 2 == 0) {
    const double lo = *std::max_element(mag.begin(), mag.begin() + static_cast<long>(mid));
    med = (med + lo) / 2;
  }
  return med / 0.6745 * std::sqrt(2.0 * std::log(static_cast<double>(n)));
}

}  // namespace iosonar::analysis
