// analyses, CPU cost on one core (median of 5 runs each):
//  - phases: DWT + denoise + phase finding on a 1 s series of one day
//    (86,400 buckets) and of one week, haar and db4;
//  - bad-ost: per-OST correlation over F files striped over 4 of 400 OSTs;
//  - Pearson r + p alone on 10^6 pairs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "analysis-jobs/badost/badost.h"
#include "analysis-jobs/lib/stats.h"
#include "analysis-jobs/phases/phases.h"

using namespace iosonar::analysis;

namespace {

template <typename Fn>
double MedianMs(Fn&& fn, int reps = 5) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    fn();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<double> Bursty(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 1e6);
  std::vector<double> v(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    if ((i / 60) % 10 == 0) v[i] = std::max(0.0, 5e8 + noise(rng));  // a 1-minute burst every 10 minutes
  return v;
}

}  // namespace

int main() {
  std::printf("phases (1 s buckets, level 3, universal threshold):\n");
  for (size_t n : {size_t{86400}, size_t{7 * 86400}}) {
    for (auto w : {WaveletKind::kHaar, WaveletKind::kDb4}) {
      auto series = Bursty(n, 1);
      PhaseOptions opt;
      opt.wavelet = w;
      size_t phases = 0;
      double ms = MedianMs([&] { phases = FindPhases(series, 0, "write", opt).phases.size(); });
      std::printf("  %-5s n=%7zu  %8.2f ms  (%zu phases, %.1f ns/bucket)\n", std::string(WaveletName(w)).c_str(), n,
                  ms, phases, ms * 1e6 / static_cast<double>(n));
    }
  }
  std::printf("bad-ost (400 OSTs, 4 per file, one slow OST):\n");
  for (size_t f : {size_t{10000}, size_t{100000}}) {
    std::mt19937 rng(2);
    std::uniform_int_distribution<int> ost(0, 399);
    std::normal_distribution<double> noise(1.0, 0.1);
    std::vector<FileObservation> files(f);
    for (size_t i = 0; i < f; ++i) {
      auto& fo = files[i];
      fo.file = "/f" + std::to_string(i);
      while (fo.osts.size() < 4) {
        int o = ost(rng);
        if (std::find(fo.osts.begin(), fo.osts.end(), o) == fo.osts.end()) fo.osts.push_back(o);
      }
      fo.bytes = 1e9;
      double bw = 1e9 * noise(rng) * (std::find(fo.osts.begin(), fo.osts.end(), 123) != fo.osts.end() ? 0.5 : 1.0);
      fo.seconds = fo.bytes / bw;
    }
    BadOstResult r;
    double ms = MedianMs([&] { r = CorrelateOsts(files); });
    std::printf("  files=%6zu  %8.1f ms  (most negative: %s r=%.3f)\n", f, ms, r.correlations.front().name.c_str(),
                r.correlations.front().coefficient);
  }
  std::mt19937 rng(3);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> x(1000000), y(1000000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = g(rng);
    y[i] = 0.1 * x[i] + g(rng);
  }
  stats::PearsonResult pr;
  double ms = MedianMs([&] { pr = stats::Pearson(x, y); });
  std::printf("Pearson r+p on 10^6 pairs: %.2f ms (r=%.4f p=%.3g)\n", ms, pr.r, pr.p);
  return 0;
}
