// Probe slowdown factors (Kunkel & Betke, "Towards I/O probing for the
// user-perceived slowdown", §3.2-3.3): per file system, op and interval the
// latency statistics of the probe, and slowdown = statistic / the median
// latency of that op over a baseline window.
//
// Quantiles use linear interpolation between order statistics, Hyndman & Fan
// type 7 (numpy's default method='linear', R's default): for sorted x[0..n-1]
// and q in [0,1], h = (n-1) q, Q = x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::lassi {

double QuantileType7(std::span<const double> sorted, double q);

struct LatencyStats {
  size_t count = 0;
  double mean = 0, min = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
LatencyStats ComputeLatencyStats(std::vector<double> xs);  // empty -> count 0

struct ProbeSample {
  std::string fs, op;  // fs: lustre.fs, else the probed directory
  int64_t t_ns = 0;
  double latency_s = 0;
};

struct SlowdownOptions {
  std::vector<int64_t> intervals_ns = {600LL * 1000000000, 4 * 3600LL * 1000000000};
  int64_t from_ns = 0, to_ns = 0;
  // Baseline: fixed [baseline_from, baseline_to) (default [from, to)), or,
  // when sliding_ns > 0, the sliding_ns before each interval's start.
  std::optional<int64_t> baseline_from_ns, baseline_to_ns;
  int64_t sliding_ns = 0;
};

struct SlowdownRow {
  std::string fs, op;
  int64_t interval_ns = 0, start_ns = 0;
  LatencyStats stats;
  std::optional<double> baseline_median;  // seconds; nullopt: no baseline samples
  // statistic / baseline median; nullopt without a baseline or with a 0 median
  std::optional<double> slowdown_mean, slowdown_median, slowdown_p90, slowdown_p95, slowdown_p99, slowdown_max;
};

// Samples outside [from, to) only serve the baseline.
std::vector<SlowdownRow> ComputeSlowdown(std::vector<ProbeSample> samples, const SlowdownOptions& opt);

// Successful probe ops (probe.ok) from the store in [from - sliding or baseline_from, to).
Result<std::vector<ProbeSample>> LoadProbeSamples(Store& store, int64_t from_ns, int64_t to_ns);

// LoadProbeSamples over what opt needs (the range, the fixed or sliding
// baseline), then ComputeSlowdown.
Result<std::vector<SlowdownRow>> SlowdownFromStore(Store& store, const SlowdownOptions& opt);

std::string SlowdownToJson(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt, bool pretty);

}  // namespace iosonar::lassi
