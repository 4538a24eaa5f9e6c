// I/O phases of a job (IOSI, Beacon): the bursts in its 1 s bandwidth series,
// found by denoising the series with a discrete wavelet transform.
//
// The series: each read/write trace run's bytes spread uniformly over the
// buckets its [event.start_ns, event.end_ns) spans (Beacon's I/O phases are
// time in I/O: a 3 s request fills 3 one-second buckets, it does not put
// all its bytes in the bucket of its start and leave two empty ones).
// Method, per direction (read, write), over the bytes-per-bucket series:
//  1. Wavedec to `level` levels (default DwtMaxLevel clamped to 1..3), wavelet haar
//     or db4, extension mode periodization or symmetric (as PyWavelets).
//  2. Threshold the detail coefficients (soft by default; the approximation
//     is kept): `threshold` if given (in the coefficients' unit, bytes per
//     bucket), else the universal threshold sigma*sqrt(2 ln n) with sigma from
//     the median absolute finest detail (0 on a clean, sparse series: bursts
//     stand as they are).
//  3. Waverec: the denoised series. A bucket is active when its denoised
//     value exceeds active_frac (default 0.02) of the series' largest.
//  4. Runs of active buckets are candidate phases; each is trimmed to the
//     buckets that moved bytes in the raw series (smoothing spreads edges),
//     and phases separated by fewer than merge_gap empty buckets (default 0:
//     only touching) are merged.
//  5. Each phase: start (its first bucket's start), duration (buckets x
//     width), bytes (raw bytes in its buckets, so the phases' bytes never
//     exceed the job's), direction, mean bandwidth = bytes / duration, and
//     peak bandwidth (largest raw bucket / width).
// Pure functions except PhasesForJob, which reads the store.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/jobdb/mysql.h"
#include "core/store/store.h"
#include "analysis-jobs/phases/wavelet.h"

namespace iosonar::analysis {

struct PhaseOptions {
  WaveletKind wavelet = WaveletKind::kHaar;
  ExtensionMode mode = ExtensionMode::kPeriodization;
  int level = -1;                    // -1: DwtMaxLevel(n) clamped to 1..3
  std::optional<double> threshold;   // absent: universal threshold
  bool hard = false;                 // hard instead of soft thresholding
  double active_frac = 0.02;         // of the denoised series' largest value
  int merge_gap = 0;                 // merge phases separated by fewer empty buckets
  int64_t bucket_ns = 1000000000;
};

struct Phase {
  std::string direction;  // "read" or "write"
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  uint64_t bytes = 0;
  double bw_mean = 0;  // bytes/s over the phase
  double bw_peak = 0;  // largest bucket, bytes/s
  size_t first_bucket = 0;  // index into the series
  size_t buckets = 0;
};

struct SeriesPhases {
  std::vector<Phase> phases;
  std::vector<double> denoised;
  double threshold = 0;  // the one used
  int level = 0;         // the one used
};

// series[i] = bytes moved in [start_ns + i*bucket_ns, start_ns + (i+1)*bucket_ns).
SeriesPhases FindPhases(std::span<const double> series, int64_t start_ns, const std::string& direction,
                        const PhaseOptions& opt);

struct JobPhases {
  std::string job_id;
  int64_t start_ns = 0;  // series origin
  int64_t bucket_ns = 0;
  std::vector<double> read_series, write_series;
  SeriesPhases read, write;
  std::vector<Phase> phases;  // both directions, by start then direction
  PhaseOptions options;
};

// Builds the per-second read and write series of a job with Store::BucketSums
// over its iosonar.trace records (io.bytes summed by io.op, bucketed by
// @timestamp, the start of each trace run; runs are at most one tracer
// window, 1 s by default, long) and finds the phases. NotFound if the job has
// no read or write records; Invalid if its span is more than kMaxPhaseBuckets
// buckets (the series is dense: about 16 bytes per bucket).
inline constexpr int64_t kMaxPhaseBuckets = 20000000;  // 231 days of 1 s buckets
Result<JobPhases> PhasesForJob(Store& store, const std::string& job_id, const PhaseOptions& opt);
JobPhases PhasesFromSeries(const std::string& job_id, int64_t start_ns, std::vector<double> read_series,
                           std::vector<double> write_series, const PhaseOptions& opt);

std::string PhasesToJson(const JobPhases& jp, bool pretty = false);
// iosonar.result.phase records, one JSON line per phase (schema-valid):
// @timestamp = phase start, job.id, host.name = host, event.stream a hash of
// the job id, the method and the phases found (so re-running the same
// analysis with the same outcome resends the same records, which stores
// dedupe, while a recomputation that finds other phases, e.g. of a running
// job, gets its own stream instead of colliding with the earlier records'
// (stream, seq) ids), event.seq = phase.index.
std::string PhasesToRecords(const JobPhases& jp, const std::string& host);
// Into the job database (migration 010): replaces the job's job_phases rows,
// in one transaction.
Status WritePhasesToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const JobPhases& jp);
std::string PhasesToTable(const JobPhases& jp);

}  // namespace iosonar::analysis
