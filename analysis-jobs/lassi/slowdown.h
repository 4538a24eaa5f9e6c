// Probe slowdown factors (Kunkel & Betke, "Towards I/O probing for the
// user-perceived slowdown", §3.2-3.3): per file system, op and interval the
// latency statistics of the probe, and slowdown = statistic / t_expected,
// the median latency of that op over a long baseline (§3.3: "the median of
// all observed values"; §4.5 uses a 30-day period): by default the newest
// stored baseline (`iosonar slowdown baseline`, probe_baseline.h); without
// one, the 30 days before the analysed range, re-read from the store (said
// loudly: SlowdownBaselineWarning); the analysed range itself only for an
// op without a sample there (flagged in the row). Rows per file system and
// op, and per file system, probing host and op (§4.4: host variability)
// with that host's own baseline median.
//
// Quantiles use linear interpolation between order statistics, Hyndman & Fan
// type 7 (numpy's default method='linear', R's default): for sorted x[0..n-1]
// and q in [0,1], h = (n-1) q, Q = x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
#pragma once
#include <cstdint>
#include <memory>
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
  std::string host;  // host.name of the probe
};

struct ProbeBaseline;  // probe_baseline.h

// Kunkel & Betke §4.6: "a median of 5 ms indicates that data is often served
// not from the HDD; the 200 GB files still lead to cache hits". A data op
// (read, write: 1 MiB) faster than the device's plausible floor was served
// by the page cache, not the storage: 1 MiB at 8 GiB/s (122 us) by default,
// far above a 1 MiB memcpy (tens of us) and below any network or disk
// round trip with a 1 MiB transfer. Such samples are marked and left out of
// t_expected (stored and history baselines), so a baseline never drifts into
// the cache band and an ordinary storage read is not a 100x "slowdown".
inline constexpr double kDefaultCacheFloorS = 1.0 / 8192;
bool CacheServed(const ProbeSample& s, double floor_s);

struct SlowdownOptions {
  std::vector<int64_t> intervals_ns = {600LL * 1000000000, 4 * 3600LL * 1000000000};
  int64_t from_ns = 0, to_ns = 0;
  // Baseline: fixed [baseline_from, baseline_to); or, when sliding_ns > 0,
  // the sliding_ns before each interval's start; else the stored baseline
  // when there is one (an op it has no median for: [from, to)); else the
  // history_ns before `from` (default 30 days), falling back to [from, to)
  // for an op without samples there.
  std::optional<int64_t> baseline_from_ns, baseline_to_ns;
  int64_t sliding_ns = 0;
  int64_t history_ns = 30 * 86400LL * 1000000000;
  std::shared_ptr<const ProbeBaseline> stored;
  double cache_floor_s = kDefaultCacheFloorS;  // baseline data-op samples faster than this are cache-served (0: keep all)
  // "sliding", "fixed", "stored" or "history": which of the above applies.
  std::string BaselineMode() const;
};

struct SlowdownRow {
  std::string fs, op;
  std::string host;  // "" for the file system's row (every probing host); else that host's
  // Where baseline_median came from: "stored" (the stored baseline),
  // "history" (history_ns before from), "fixed", "sliding", or "analysed
  // range" (no stored median or history for the op: the fallback).
  std::string baseline_kind;
  int64_t interval_ns = 0, start_ns = 0;
  LatencyStats stats;
  std::optional<double> baseline_median;  // seconds; nullopt: no baseline samples
  uint64_t baseline_cache_served = 0;     // baseline samples left out as cache-served (stored: as stored)
  // statistic / baseline median; nullopt without a baseline or with a 0 median
  std::optional<double> slowdown_mean, slowdown_median, slowdown_p90, slowdown_p95, slowdown_p99, slowdown_max;
};

// Samples outside [from, to) only serve the baseline. File-system rows
// (host "") first, sorted by fs, op, interval, start; then the host rows.
std::vector<SlowdownRow> ComputeSlowdown(std::vector<ProbeSample> samples, const SlowdownOptions& opt);

// Successful probe ops (probe.ok) from the store in [from - sliding or baseline_from, to).
Result<std::vector<ProbeSample>> LoadProbeSamples(Store& store, int64_t from_ns, int64_t to_ns);

// LoadProbeSamples over what opt needs (the range, the fixed or sliding
// baseline), then ComputeSlowdown.
Result<std::vector<SlowdownRow>> SlowdownFromStore(Store& store, const SlowdownOptions& opt);

// "" when there are no rows or the stored baseline gave every row its median; else what people
// must be told: no stored baseline (t_expected re-read from the history), or
// rows whose op had no stored median / no history.
std::string SlowdownBaselineWarning(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt);
// Which baseline was used, for people: the stored one's name, source and
// range, or the history read.
std::string SlowdownBaselineDescription(const SlowdownOptions& opt);
// The baseline as part of a Redis cache key: results against different
// baselines never share a key ("stored:NAME@COMPUTED_AT", "history:30d",
// "sliding:600s", "fixed:FROM-TO").
std::string SlowdownBaselineTag(const SlowdownOptions& opt);

// "rows": the file-system rows; "host_rows": per probing host; "baseline",
// "baseline_description", "baseline_warning" and with a stored baseline
// "stored_baseline" {name, source, from, to, computed_at}.
std::string SlowdownToJson(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt, bool pretty);

}  // namespace iosonar::lassi
