#include "analysis-jobs/phases/phases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis-jobs/lib/format.h"
#include "core/results/results.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/jobdb/jobdb.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::analysis {

namespace {

// Runs [first, last] of buckets whose denoised value is above cut, trimmed
// to buckets with bytes and split at empty ones (smoothing bridges short
// pauses).
std::vector<std::pair<size_t, size_t>> ActiveRuns(std::span<const double> series, const std::vector<double>& denoised,
                                                  double cut) {
  const size_t n = series.size();
  std::vector<std::pair<size_t, size_t>> runs;  // [first, last]
  for (size_t i = 0; i < n;) {
    if (!(denoised[i] > cut)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < n && denoised[j + 1] > cut) ++j;
    size_t a = i, b = j;
    while (a <= b && !(series[a] > 0)) ++a;
    while (b > a && !(series[b] > 0)) --b;
    if (a <= b && series[a] > 0) {
      // Split on raw empty gaps inside the run: smoothing bridges short pauses.
      size_t s = a;
      for (size_t k = a; k <= b; ++k) {
        if (series[k] > 0) continue;
        size_t e = k;
        while (e <= b && !(series[e] > 0)) ++e;
        runs.emplace_back(s, k - 1);
        s = e;
        k = e - 1;
      }
      runs.emplace_back(s, b);
    }
    i = j + 1;
  }
  return runs;
}

// Runs separated by fewer than merge_gap empty buckets, merged.
std::vector<std::pair<size_t, size_t>> MergeRuns(const std::vector<std::pair<size_t, size_t>>& runs, int merge_gap) {
  std::vector<std::pair<size_t, size_t>> merged;
  for (const auto& r : runs) {
    if (!merged.empty() && r.first <= merged.back().second + 1 + static_cast<size_t>(std::max(0, merge_gap - 1)) &&
        (merge_gap > 0 || r.first == merged.back().second + 1))
      merged.back().second = r.second;
    else
      merged.push_back(r);
  }
  return merged;
}

}  // namespace

SeriesPhases FindPhases(std::span<const double> series, int64_t start_ns, const std::string& direction,
                        const PhaseOptions& opt) {
  SeriesPhases out;
  const size_t n = series.size();
  if (n == 0) return out;
  const int64_t width = opt.bucket_ns > 0 ? opt.bucket_ns : 1000000000;
  // Default: as deep as useful, between 1 and 3 (a short series still gets
  // one level, as pywt.wavedec allows with a warning).
  int level = opt.level >= 0 ? opt.level : (n >= 2 ? std::clamp(DwtMaxLevel(n, opt.wavelet), 1, 3) : 0);
  level = std::max(0, level);
  out.level = level;

  auto coeffs = Wavedec(series, opt.wavelet, opt.mode, level);
  if (level > 0) {
    out.threshold = opt.threshold ? *opt.threshold : UniversalThreshold(coeffs.back(), n);
    for (size_t i = 1; i < coeffs.size(); ++i) {
      if (opt.hard) HardThreshold(coeffs[i], out.threshold);
      else SoftThreshold(coeffs[i], out.threshold);
    }
    out.denoised = Waverec(coeffs, opt.wavelet, opt.mode);
    out.denoised.resize(n, 0.0);  // periodization pads odd lengths
  } else {
    out.denoised.assign(series.begin(), series.end());
  }

  double top = 0;
  for (double v : out.denoised) top = std::max(top, v);
  if (!(top > 0)) return out;

  const auto merged = MergeRuns(ActiveRuns(series, out.denoised, opt.active_frac * top), opt.merge_gap);
  for (const auto& [a, b] : merged) {
    Phase p;
    p.direction = direction;
    p.first_bucket = a;
    p.buckets = b - a + 1;
    p.start_ns = start_ns + static_cast<int64_t>(a) * width;
    p.duration_ns = static_cast<int64_t>(p.buckets) * width;
    double bytes = 0, peak = 0;
    for (size_t k = a; k <= b; ++k) {
      bytes += series[k];
      peak = std::max(peak, series[k]);
    }
    p.bytes = static_cast<uint64_t>(std::llround(bytes));
    p.bw_mean = bytes / (static_cast<double>(p.duration_ns) / 1e9);
    p.bw_peak = peak / (static_cast<double>(width) / 1e9);
    out.phases.push_back(p);
  }
  return out;
}

JobPhases PhasesFromSeries(const std::string& job_id, int64_t start_ns, std::vector<double> read_series,
                           std::vector<double> write_series, const PhaseOptions& opt) {
  JobPhases jp;
  jp.job_id = job_id;
  jp.start_ns = start_ns;
  jp.bucket_ns = opt.bucket_ns;
  jp.options = opt;
  jp.read_series = std::move(read_series);
  jp.write_series = std::move(write_series);
  jp.read = FindPhases(jp.read_series, start_ns, "read", opt);
  jp.write = FindPhases(jp.write_series, start_ns, "write", opt);
  jp.phases = jp.read.phases;
  jp.phases.insert(jp.phases.end(), jp.write.phases.begin(), jp.write.phases.end());
  std::stable_sort(jp.phases.begin(), jp.phases.end(), [](const Phase& x, const Phase& y) {
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.direction < y.direction;
  });
  return jp;
}

Result<JobPhases> PhasesForJob(Store& store, const std::string& job_id, const PhaseOptions& opt) {
  const int64_t width = opt.bucket_ns > 0 ? opt.bucket_ns : 1000000000;
  // Each read/write run's bytes spread uniformly over [event.start_ns,
  // event.end_ns), bucket by bucket (a zero-length run: all in the bucket of
  // its start): a request longer than a bucket fills every bucket it spans
  // instead of leaving empty ones that would split its phase.
  struct Piece {
    int dir;
    int64_t start, end;
    double bytes;
  };
  std::vector<Piece> pieces;
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, job_id}};
  q.fields = {field::kIoOp, field::kIoBytes, field::kEventStartNs, field::kEventEndNs, field::kTimestamp, field::kIoLayer};
  q.ordered = false;
  // mpiio runs (the MPI-IO layer) are the POSIX bytes again: counted once, as POSIX.
  Status st = store.Scan(q, [&](const Row& r) {
    if (!r.Has(0) || !r.Has(1) || (r.Has(5) && r.Str(5) == "mpiio")) return true;
    const std::string_view op = r.Str(0);
    const int dir = op == "read" ? 0 : op == "write" ? 1 : -1;
    if (dir < 0 || r.Int(1) <= 0) return true;
    const int64_t start = r.Has(2) ? r.Int(2) : r.Int(4);
    const int64_t end = r.Has(3) ? std::max(r.Int(3), start) : start;
    pieces.push_back({dir, start, end, static_cast<double>(r.Int(1))});
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  if (pieces.empty()) return Status::NotFound("job " + job_id + " has no read or write records in iosonar.trace");
  auto floor_div = [](int64_t a, int64_t w) { return a / w - ((a % w) < 0 ? 1 : 0); };
  int64_t lo_b = INT64_MAX, hi_b = INT64_MIN;
  for (const auto& p : pieces) {
    lo_b = std::min(lo_b, floor_div(p.start, width));
    hi_b = std::max(hi_b, floor_div(p.end > p.start ? p.end - 1 : p.start, width));
  }
  const int64_t span = hi_b - lo_b + 1;
  if (span > kMaxPhaseBuckets)
    return Status::Invalid("job " + job_id + " spans " + std::to_string(span) + " buckets of " +
                           std::to_string(width / 1000000) + " ms (more than " + std::to_string(kMaxPhaseBuckets) +
                           "): use wider buckets (--bucket)");
  const int64_t lo = lo_b * width;
  const size_t n = static_cast<size_t>(span);
  std::vector<double> series[2] = {std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (const auto& p : pieces) {
    auto& s = series[p.dir];
    if (p.end <= p.start) {
      s[static_cast<size_t>(floor_div(p.start, width) - lo_b)] += p.bytes;
      continue;
    }
    const double len = static_cast<double>(p.end - p.start);
    for (int64_t b = floor_div(p.start, width); b <= floor_div(p.end - 1, width); ++b) {
      const int64_t a = std::max(p.start, b * width), e = std::min(p.end, (b + 1) * width);
      s[static_cast<size_t>(b - lo_b)] += p.bytes * static_cast<double>(e - a) / len;
    }
  }
  PhaseOptions o = opt;
  o.bucket_ns = width;
  return PhasesFromSeries(job_id, lo, std::move(series[0]), std::move(series[1]), o);
}

namespace {

void WritePhase(JsonWriter& w, const Phase& p) {
  KvObject(w, "direction", p.direction, "start", FormatIsoMillis(p.start_ns), "start_ns", p.start_ns,
           "duration_s", static_cast<double>(p.duration_ns) / 1e9, "bytes", p.bytes, "bw_mean", p.bw_mean,
           "bw_peak", p.bw_peak, "first_bucket", p.first_bucket, "buckets", p.buckets);
}

std::string Human(double b) { return format::Bytes1(b); }

}  // namespace

std::string PhasesToJson(const JobPhases& jp, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  KvAll(w, "job_id", jp.job_id, "series_start", FormatIsoMillis(jp.start_ns), "series_start_ns", jp.start_ns,
        "bucket_s", static_cast<double>(jp.bucket_ns) / 1e9);
  w.Key("method");
  KvObject(w, "wavelet", WaveletName(jp.options.wavelet), "mode", ExtensionModeName(jp.options.mode),
           "thresholding", jp.options.hard ? "hard" : "soft", "read_level", jp.read.level,
           "write_level", jp.write.level, "read_threshold", jp.read.threshold, "write_threshold", jp.write.threshold,
           "active_frac", jp.options.active_frac);
  uint64_t nr = 0, nw = 0;
  for (const auto& p : jp.phases) (p.direction == "read" ? nr : nw) += 1;
  w.Kv("read_phases", nr);
  w.Kv("write_phases", nw);
  w.Key("phases");
  w.BeginArray();
  for (const auto& p : jp.phases) WritePhase(w, p);
  w.EndArray();
  w.EndObject();
  return out;
}

namespace {
// The phases as their job_phases rows (results.def), phase_no from 0 in order.
std::vector<results::job_phases::Row> RowsOf(const JobPhases& jp, const std::string& cluster, uint64_t job_id,
                                             const std::string& now) {
  std::vector<results::job_phases::Row> rows;
  uint64_t no = 0;
  for (const auto& p : jp.phases)
    rows.push_back({cluster, job_id, no++, now, p.direction, SqlDatetime(p.start_ns),
                    static_cast<double>(p.duration_ns) / 1e9, p.bytes, p.bw_mean, p.bw_peak,
                    std::string(WaveletName(jp.options.wavelet))});
  return rows;
}
}  // namespace

std::string PhasesToRecords(const JobPhases& jp, const std::string& host) {
  const std::string method = std::string(WaveletName(jp.options.wavelet)) + "/" +
                             std::string(ExtensionModeName(jp.options.mode));
  // What identifies this analysis of this job, and what was found: a
  // recomputation that finds other phases (a job still running, more records
  // arrived) is another set of records under another stream, never a
  // different record under an (event.stream, event.seq) already stored; an
  // identical recomputation or resend has the same stream and is deduped.
  std::vector<std::string> parts = {jp.job_id, method,
                                    std::to_string(jp.write.level) + "/" + std::to_string(jp.read.level) + "/" +
                                        std::to_string(jp.options.active_frac) + "/" + std::to_string(jp.bucket_ns),
                                    std::to_string(jp.phases.size())};
  for (const auto& p : jp.phases) {
    char b[160];
    std::snprintf(b, sizeof b, "%lld/%lld/%lld/%.17g/%.17g", static_cast<long long>(p.start_ns),
                  static_cast<long long>(p.duration_ns), static_cast<long long>(p.bytes), p.bw_mean, p.bw_peak);
    parts.push_back(p.direction);
    parts.push_back(b);
  }
  const int64_t stream = ResultStreamId("iosonar.result.phase", parts);
  std::string out;
  int64_t seq = 0;
  const auto rows = RowsOf(jp, "", 0, "");
  for (const auto& p : jp.phases) {
    JsonWriter w(&out, 0);
    BeginResultRecord(w, p.start_ns, dataset::kResultPhase, stream, seq, host);
    w.Kv(field::kJobId, jp.job_id);
    // phase.index is phase_no (= event.seq); the length in ns exactly, the wavelet with its extension mode.
    results::WriteStreamFields(w, rows[static_cast<size_t>(seq)], [&](std::string_view f) {
      if (f == field::kPhaseDurationNs.name()) w.Kv(f, p.duration_ns);
      else w.Kv(f, method);  // phase.wavelet
    });
    w.EndObject();
    out += '\n';
    ++seq;
  }
  return out;
}

std::string PhasesToTable(const JobPhases& jp) {
  std::string o = "I/O phases of job " + jp.job_id + " (" + std::string(WaveletName(jp.options.wavelet)) + ", " +
                  std::string(ExtensionModeName(jp.options.mode)) + ", level " + std::to_string(jp.write.level) +
                  ")\n\n";
  if (jp.phases.empty()) return o + "  no I/O phases\n";
  char b[256];
  std::snprintf(b, sizeof b, "  %-3s %-6s %-24s %10s %12s %14s %14s\n", "#", "dir", "start", "duration", "bytes",
                "mean bw", "peak bw");
  o += b;
  size_t i = 0;
  for (const auto& p : jp.phases) {
    std::snprintf(b, sizeof b, "  %-3zu %-6s %-24s %9.0fs %12s %14s %14s\n", ++i, p.direction.c_str(),
                  FormatIsoMillis(p.start_ns).c_str(), static_cast<double>(p.duration_ns) / 1e9,
                  Human(static_cast<double>(p.bytes)).c_str(), (Human(p.bw_mean) + "/s").c_str(),
                  (Human(p.bw_peak) + "/s").c_str());
    o += b;
  }
  return o;
}

Status WritePhasesToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const JobPhases& jp) {
  const std::string now = SqlDatetime(NowNs());
  return db.Transaction([&]() -> Status {
    auto del = results::Delete<results::job_phases::Row>(db, "WHERE cluster = ? AND job_id = ?",
                                                          {cluster, static_cast<int64_t>(job_id)});
    if (!del.ok()) return del.status();
    for (const auto& row : RowsOf(jp, cluster, job_id, now))
      if (Status st = results::Insert(db, row); !st.ok()) return st;
    return Status::Ok();
  });
}

}  // namespace iosonar::analysis
