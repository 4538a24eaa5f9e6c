// A small discrete wavelet transform for I/O phase detection (IOSI, Beacon):
// Haar and Daubechies db4, one level or several, with the signal extension
// modes "periodization" and "symmetric" defined exactly as PyWavelets
// defines the modes of the same name, so coefficients compare one to one
// with pywt.wavedec / pywt.waverec (the oracle test does that).
//
// Names follow PyWavelets: "haar" (2 taps) and "db4" (Daubechies with four
// vanishing moments, 8 taps; what some texts call D8 -- the 4-tap "D4" is
// PyWavelets' db2).
//
// Conventions (PyWavelets' downsampling convolution):
//  - dwt, periodization: an odd-length signal is first extended by repeating
//    its last sample (N' = N + N%2); out[o] = sum_j h[j] x[(F/2 + 2o - j) mod N'],
//    o = 0 .. N'/2-1.
//  - dwt, symmetric: out[o] = sum_j h[j] x~[1 + 2o - j], o = 0 .. (N+F-1)/2 - 1,
//    where x~ is x mirrored half-sample (x[-1] = x[0], x[N] = x[N-1]).
//  - idwt, periodization: the transpose of the dwt (the filters are
//    orthonormal), 2*len(cA) samples.
//  - idwt, symmetric: the upsampled full convolution with the reconstruction
//    filters, keeping samples F-2 .. 2*len(cA)-1 (2*len(cA) - F + 2 samples).
//  - wavedec returns [cA_n, cD_n, ..., cD_1]; waverec drops a trailing sample
//    of an approximation one longer than the next detail, as pywt does.
// Pure functions, no state.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace iosonar::analysis {

enum class WaveletKind { kHaar, kDb4 };
enum class ExtensionMode { kPeriodization, kSymmetric };

Result<WaveletKind> ParseWavelet(std::string_view name);      // "haar", "db4"
Result<ExtensionMode> ParseExtensionMode(std::string_view name);  // "periodization", "symmetric"
std::string_view WaveletName(WaveletKind w);
std::string_view ExtensionModeName(ExtensionMode m);

struct WaveletFilters {
  std::vector<double> dec_lo, dec_hi, rec_lo, rec_hi;
};
const WaveletFilters& Filters(WaveletKind w);

// pywt.dwt_max_level(n, filter_len): the deepest useful level.
int DwtMaxLevel(size_t n, WaveletKind w);

struct DwtPair {
  std::vector<double> approx, detail;
};
DwtPair Dwt(std::span<const double> x, WaveletKind w, ExtensionMode m);
std::vector<double> Idwt(std::span<const double> approx, std::span<const double> detail, WaveletKind w,
                         ExtensionMode m);

// [cA_level, cD_level, ..., cD_1]. level must be >= 0 (0: just [x]).
std::vector<std::vector<double>> Wavedec(std::span<const double> x, WaveletKind w, ExtensionMode m, int level);
std::vector<double> Waverec(const std::vector<std::vector<double>>& coeffs, WaveletKind w, ExtensionMode m);

// pywt.threshold(v, t, "soft") / "hard", in place.
void SoftThreshold(std::vector<double>& v, double t);
void HardThreshold(std::vector<double>& v, double t);

// Donoho and Johnstone's universal threshold: sigma * sqrt(2 ln n), sigma
// estimated as median(|d|) / 0.6745 over the finest detail coefficients d.
double UniversalThreshold(std::span<const double> finest_detail, size_t n);

}  // namespace iosonar::analysis
