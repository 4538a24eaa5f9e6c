#include "analysis-jobs/lassi/slowdown.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "analysis-jobs/lassi/probe_baseline.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::lassi {

double QuantileType7(std::span<const double> x, double q) {
  if (x.empty()) return 0;
  const double h = static_cast<double>(x.size() - 1) * std::clamp(q, 0.0, 1.0);
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x[x.size() - 1];
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}

LatencyStats ComputeLatencyStats(std::vector<double> xs) {
  LatencyStats s;
  s.count = xs.size();
  if (xs.empty()) return s;
  std::sort(xs.begin(), xs.end());
  double sum = 0;
  for (double x : xs) sum += x;
  s.mean = sum / static_cast<double>(xs.size());
  s.min = xs.front();
  s.max = xs.back();
  s.median = QuantileType7(xs, 0.5);
  s.p90 = QuantileType7(xs, 0.9);
  s.p95 = QuantileType7(xs, 0.95);
  s.p99 = QuantileType7(xs, 0.99);
  return s;
}

static int64_t Floor(int64_t t, int64_t w) {
  int64_t q = t / w;
  if (t < 0 && t % w) --q;
  return q * w;
}

bool CacheServed(const ProbeSample& s, double floor_s) {
  return floor_s > 0 && (s.op == "read" || s.op == "write") && s.latency_s < floor_s;
}

namespace {
// The rows of one group of samples (one fs and op, all hosts or one host).
void GroupRows(std::span<const ProbeSample> g, const std::string& host, const SlowdownOptions& opt,
               std::vector<SlowdownRow>* out) {
  uint64_t cached = 0;  // of the last median_in
  auto median_in = [&](int64_t a, int64_t b) -> std::optional<double> {
    std::vector<double> xs;
    cached = 0;
    for (const auto& s : g)
      if (s.t_ns >= a && s.t_ns < b && (host.empty() || s.host == host)) {
        if (CacheServed(s, opt.cache_floor_s)) ++cached;
        else xs.push_back(s.latency_s);
      }
    if (xs.empty()) return std::nullopt;
    std::sort(xs.begin(), xs.end());
    return QuantileType7(xs, 0.5);
  };
  std::optional<double> fixed;
  uint64_t fixed_cached = 0;
  std::string kind = "sliding";
  if (opt.sliding_ns <= 0) {
    if (opt.baseline_from_ns || opt.baseline_to_ns) {
      fixed = median_in(opt.baseline_from_ns.value_or(opt.from_ns), opt.baseline_to_ns.value_or(opt.to_ns));
      kind = "fixed";
    } else if (opt.stored) {
      if (const ProbeMedian* m = opt.stored->Find(g.front().fs, host, g.front().op)) {
        fixed = m->median_s;
        cached = m->cache_served;
      }
      kind = "stored";
      if (!fixed) {
        fixed = median_in(opt.from_ns, opt.to_ns);
        kind = "analysed range";
      }
    } else {
      fixed = opt.history_ns > 0 ? median_in(opt.from_ns - opt.history_ns, opt.from_ns) : std::nullopt;
      kind = "history";
      if (!fixed) {
        fixed = median_in(opt.from_ns, opt.to_ns);
        kind = "analysed range";
      }
    }
  }
  fixed_cached = cached;
  for (int64_t iv : opt.intervals_ns) {
    std::map<int64_t, std::vector<double>> by;
    for (const auto& s : g)
      if (s.t_ns >= opt.from_ns && s.t_ns < opt.to_ns && (host.empty() || s.host == host))
        by[Floor(s.t_ns, iv)].push_back(s.latency_s);
    for (auto& [start, xs] : by) {
      SlowdownRow r;
      r.fs = g.front().fs;
      r.op = g.front().op;
      r.host = host;
      r.interval_ns = iv;
      r.start_ns = start;
      r.stats = ComputeLatencyStats(std::move(xs));
      r.baseline_median = opt.sliding_ns > 0 ? median_in(start - opt.sliding_ns, start) : fixed;
      r.baseline_cache_served = opt.sliding_ns > 0 ? cached : fixed_cached;
      r.baseline_kind = kind;
      if (r.baseline_median && *r.baseline_median > 0) {
        const double b = *r.baseline_median;
        r.slowdown_mean = r.stats.mean / b;
        r.slowdown_median = r.stats.median / b;
        r.slowdown_p90 = r.stats.p90 / b;
        r.slowdown_p95 = r.stats.p95 / b;
        r.slowdown_p99 = r.stats.p99 / b;
        r.slowdown_max = r.stats.max / b;
      }
      out->push_back(std::move(r));
    }
  }
}
}  // namespace

std::vector<SlowdownRow> ComputeSlowdown(std::vector<ProbeSample> samples, const SlowdownOptions& opt) {
  std::sort(samples.begin(), samples.end(), [](const ProbeSample& a, const ProbeSample& b) {
    return std::tie(a.fs, a.op, a.t_ns) < std::tie(b.fs, b.op, b.t_ns);
  });
  std::vector<SlowdownRow> out, host_rows;
  size_t i = 0;
  while (i < samples.size()) {
    size_t j = i;
    while (j < samples.size() && samples[j].fs == samples[i].fs && samples[j].op == samples[i].op) ++j;
    std::span<const ProbeSample> g(samples.data() + i, j - i);
    GroupRows(g, "", opt, &out);
    std::set<std::string> hosts;
    for (const auto& s : g)
      if (!s.host.empty()) hosts.insert(s.host);
    for (const auto& h : hosts) GroupRows(g, h, opt, &host_rows);
    i = j;
  }
  std::sort(host_rows.begin(), host_rows.end(), [](const SlowdownRow& a, const SlowdownRow& b) {
    return std::tie(a.fs, a.host, a.op, a.interval_ns, a.start_ns) < std::tie(b.fs, b.host, b.op, b.interval_ns, b.start_ns);
  });
  out.insert(out.end(), std::make_move_iterator(host_rows.begin()), std::make_move_iterator(host_rows.end()));
  return out;
}

Result<std::vector<ProbeSample>> LoadProbeSamples(Store& store, int64_t from_ns, int64_t to_ns) {
  ScanQuery q;
  q.dataset = dataset::kProbe;
  q.range.start_ns = from_ns;
  q.range.end_ns = to_ns;
  q.fields = {field::kTimestamp, field::kLustreFs, field::kProbeDir, field::kProbeOp, field::kProbeLatencyNs,
              field::kProbeOk, field::kHostName};
  std::vector<ProbeSample> out;
  Status st = store.Scan(q, [&](const Row& r) {
    if (!r.Has(3) || !r.Has(4) || (r.Has(5) && !r.Int(5))) return true;
    ProbeSample s;
    s.fs = std::string(r.Has(1) ? r.Str(1) : r.Has(2) ? r.Str(2) : "");
    s.op = std::string(r.Str(3));
    s.t_ns = r.Int(0);
    s.latency_s = static_cast<double>(r.Int(4)) / 1e9;
    if (r.Has(6)) s.host = std::string(r.Str(6));
    out.push_back(std::move(s));
    return true;
  });
  if (!st.ok()) return st;
  return out;
}

std::string SlowdownOptions::BaselineMode() const {
  if (sliding_ns > 0) return "sliding";
  if (baseline_from_ns || baseline_to_ns) return "fixed";
  return stored ? "stored" : "history";
}

std::string SlowdownBaselineDescription(const SlowdownOptions& opt) {
  const std::string mode = opt.BaselineMode();
  if (mode == "stored") return "stored probe baseline " + ProbeBaselineDescription(*opt.stored);
  if (mode == "sliding") return "the " + std::to_string(opt.sliding_ns / 1000000000) + " s before each interval";
  if (mode == "fixed")
    return "fixed range " + FormatIsoMillis(opt.baseline_from_ns.value_or(opt.from_ns)) + " - " +
           FormatIsoMillis(opt.baseline_to_ns.value_or(opt.to_ns));
  return "the probe records of the " + std::to_string(opt.history_ns / 86400000000000LL) + " days before " +
         FormatIsoMillis(opt.from_ns) + " (" + FormatIsoMillis(opt.from_ns - opt.history_ns) + " - " +
         FormatIsoMillis(opt.from_ns) + "), re-read from the store";
}

std::string SlowdownBaselineTag(const SlowdownOptions& opt) {
  const std::string mode = opt.BaselineMode();
  if (mode == "stored") return "stored:" + opt.stored->name + "@" + std::to_string(opt.stored->computed_at_ns);
  if (mode == "sliding") return "sliding:" + std::to_string(opt.sliding_ns / 1000000000) + "s";
  if (mode == "fixed")
    return "fixed:" + std::to_string(opt.baseline_from_ns.value_or(opt.from_ns)) + "-" +
           std::to_string(opt.baseline_to_ns.value_or(opt.to_ns));
  return "history:" + std::to_string(opt.history_ns / 86400000000000LL) + "d";
}

std::string SlowdownBaselineWarning(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt) {
  std::string w;
  if (rows.empty()) return w;  // no probe records: nothing was measured against a baseline
  if (opt.BaselineMode() == "history")
    w = "no stored probe baseline: t_expected is the median of " + SlowdownBaselineDescription(opt) +
        " (compute one with `iosonar slowdown baseline --from T --to T`)";
  std::set<std::string> fallback;
  for (const auto& r : rows)
    if (r.baseline_kind == "analysed range") fallback.insert(r.fs + " " + (r.host.empty() ? "" : r.host + " ") + r.op);
  if (!fallback.empty()) {
    std::string list;
    for (const auto& f : fallback) list += (list.empty() ? "" : ", ") + f;
    w += std::string(w.empty() ? "" : "; ") +
         (opt.BaselineMode() == "stored" ? "the stored probe baseline '" + opt.stored->name + "' has no median for "
                                         : "no probe history for ") +
         list + ": their t_expected is the median of the analysed range itself";
  }
  return w;
}

std::string SlowdownToJson(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  KvAll(w, "analysis", "slowdown/1", "quantile_method", "linear interpolation, Hyndman-Fan type 7 (numpy default)",
        "from", FormatIsoMillis(opt.from_ns), "to", FormatIsoMillis(opt.to_ns));
  const std::string mode = opt.BaselineMode();
  KvAll(w, "baseline", mode, "baseline_description", SlowdownBaselineDescription(opt),
        "baseline_warning", SlowdownBaselineWarning(rows, opt));
  if (opt.sliding_ns > 0) w.Kv("baseline_sliding_s", opt.sliding_ns / 1000000000);
  if (mode == "stored") {
    w.Key("stored_baseline");
    KvObject(w, "name", opt.stored->name, "source", opt.stored->source, "from", FormatIsoMillis(opt.stored->from_ns),
             "to", FormatIsoMillis(opt.stored->to_ns), "computed_at", FormatIsoMillis(opt.stored->computed_at_ns));
  }
  if (mode == "history") {
    KvAll(w, "baseline_history_s", opt.history_ns / 1000000000,
          "baseline_from", FormatIsoMillis(opt.from_ns - opt.history_ns), "baseline_to", FormatIsoMillis(opt.from_ns));
  }
  size_t no_history = 0;
  for (const auto& r : rows) no_history += r.host.empty() && r.baseline_kind == "analysed range";
  w.Kv("rows_without_history", static_cast<int64_t>(no_history));
  auto opt_d = [&](const char* k, std::optional<double> v) {
    w.Key(k);
    if (v) w.Double(*v);
    else w.Null();
  };
  for (bool host_rows : {false, true}) {
  w.Key(host_rows ? "host_rows" : "rows");
  w.BeginArray();
  for (const auto& r : rows) {
    if (r.host.empty() == host_rows) continue;
    w.BeginObject();
    w.Kv("fs", r.fs);
    if (host_rows) w.Kv("host", r.host);
    KvAll(w, "op", r.op, "interval_s", r.interval_ns / 1000000000, "start", FormatIsoMillis(r.start_ns),
          "count", static_cast<int64_t>(r.stats.count));
    for (auto [k, v] : {std::pair{"mean", r.stats.mean}, {"min", r.stats.min}, {"median", r.stats.median},
                        {"p90", r.stats.p90}, {"p95", r.stats.p95}, {"p99", r.stats.p99}, {"max", r.stats.max}}) {
      w.Key(k);
      w.Double(v);
    }
    opt_d("baseline_median", r.baseline_median);
    w.Kv("baseline_cache_served", static_cast<int64_t>(r.baseline_cache_served));
    w.Kv("baseline_kind", r.baseline_kind);
    opt_d("slowdown_mean", r.slowdown_mean);
    opt_d("slowdown_median", r.slowdown_median);
    opt_d("slowdown_p90", r.slowdown_p90);
    opt_d("slowdown_p95", r.slowdown_p95);
    opt_d("slowdown_p99", r.slowdown_p99);
    opt_d("slowdown_max", r.slowdown_max);
    w.EndObject();
  }
  w.EndArray();
  }
  w.EndObject();
  return out;
}

Result<std::vector<SlowdownRow>> SlowdownFromStore(Store& store, const SlowdownOptions& opt) {
  int64_t lo = opt.from_ns - opt.sliding_ns;
  if (opt.BaselineMode() == "history") lo = opt.from_ns - opt.history_ns;  // a stored baseline needs only the range
  if (opt.baseline_from_ns) lo = std::min(lo, *opt.baseline_from_ns);
  int64_t hi = opt.to_ns;
  if (opt.baseline_to_ns) hi = std::max(hi, *opt.baseline_to_ns);
  auto samples = LoadProbeSamples(store, lo, hi);
  if (!samples.ok()) return samples.status();
  return ComputeSlowdown(std::move(samples).value(), opt);
}

}  // namespace iosonar::lassi
