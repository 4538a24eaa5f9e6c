// See commands.h.
#include "analysis-jobs/lassi/commands.h"

#include <sstream>

#include "analysis-jobs/lassi/baseline.h"
#include "analysis-jobs/lassi/lassi_store.h"
#include "analysis-jobs/lassi/results.h"
#include "core/base/timeutil.h"

namespace iosonar::lassi {

namespace {
constexpr int64_t kS = 1000000000;
std::string DefaultName(const Range& r) { return FormatIsoMillis(r.from_ns) + ".." + FormatIsoMillis(r.to_ns); }
}  // namespace

std::string Range::Parse() {
  if (!day.empty()) {
    auto d = ParseDay(day);
    if (!d) return "--day must be YYYY-MM-DD, not '" + day + "'";
    from_ns = *d;
    to_ns = *d + 86400 * kS;
  }
  if (!from.empty()) {
    auto f = ParseIso8601(from);
    if (!f) return "--from: not an ISO 8601 time: '" + from + "'";
    from_ns = *f;
  }
  if (!to.empty()) {
    auto t = ParseIso8601(to);
    if (!t) return "--to: not an ISO 8601 time: '" + to + "'";
    to_ns = *t;
  }
  if (day.empty() && (from.empty() || to.empty())) return "give --day D or --from T --to T";
  if (to_ns <= from_ns) return "--to must be after --from";
  return "";
}

std::string LassiArgs::ToOptions(const Range& range, Options* o) const {
  auto win = ParseDuration(window);
  if (!win) return "--window: not a duration: '" + window + "' (e.g. 1h, 10m, 30s)";
  int64_t hist = 0;
  if (!history.empty()) {
    auto h = ParseDuration(history);
    if (!h) return "--history: not a duration: '" + history + "'";
    hist = *h;
  }
  if (!(alpha > 0)) return "--alpha must be > 0";
  if (!history.empty() && !baseline.empty()) return "give --history or --baseline, not both";
  if (scan_threads != 1 && scan_threads != 2) return "--scan-threads must be 1 or 2";
  *o = RangeOptions(range.from_ns, range.to_ns, *win, hist);
  o->alpha = alpha;
  return "";
}

std::string SlowdownOptionsFrom(const Range& range, const std::string& intervals, const std::string& sliding,
                                const std::string& baseline_from, const std::string& baseline_to, SlowdownOptions* o) {
  o->from_ns = range.from_ns;
  o->to_ns = range.to_ns;
  o->intervals_ns.clear();
  std::istringstream iv(intervals);
  for (std::string tok; std::getline(iv, tok, ',');) {
    auto d = ParseDuration(tok);
    if (!d) return "--intervals: not a duration: '" + tok + "'";
    o->intervals_ns.push_back(*d);
  }
  if (!sliding.empty()) {
    auto d = ParseDuration(sliding);
    if (!d) return "--baseline-sliding: not a duration: '" + sliding + "'";
    o->sliding_ns = *d;
  }
  for (auto [text, slot] : {std::pair{baseline_from, &o->baseline_from_ns}, {baseline_to, &o->baseline_to_ns}}) {
    if (text.empty()) continue;
    auto t = ParseIso8601(text);
    if (!t) return "baseline: not an ISO 8601 time: '" + text + "'";
    *slot = *t;
  }
  return "";
}

Result<std::string> UseStoredBaseline(const std::vector<Baseline>& all, const std::string& name, Options* o) {
  auto sel = SelectBaseline(all, name, o->window_ns);
  if (!sel.ok()) return sel.status();
  if (*sel) {
    o->baseline = std::move(**sel);
    return "LASSi baseline " + BaselineDescription(*o->baseline);
  }
  if (all.empty()) return std::string();
  std::string have;
  for (const auto& b : all) have += (have.empty() ? "" : ", ") + b.name + " (" + std::to_string(b.window_ns / kS) + " s)";
  return "no stored LASSi baseline has windows of " + std::to_string(o->window_ns / kS) + " s (stored: " + have +
         "): compute one with `iosonar lassi baseline --window ...`";
}

Result<std::string> UseStoredProbeBaseline(const std::vector<ProbeBaseline>& all, const std::string& name,
                                           SlowdownOptions* o) {
  auto sel = SelectProbeBaseline(all, name);
  if (!sel.ok()) return sel.status();
  if (*sel) o->stored = std::make_shared<const ProbeBaseline>(std::move(**sel));
  return "probe slowdown baseline: " + SlowdownBaselineDescription(*o);
}

Result<Baseline> BaselineFromStore(Store& store, const Range& range, int64_t window_ns, const AppSource& apps,
                                   const std::string& name, std::string* warning) {
  Options o;
  o.window_ns = window_ns;
  o.from_ns = o.history_from_ns = range.from_ns;
  o.to_ns = range.to_ns;
  Accumulator acc(o);
  Status st = FeedFromStore(
      store, acc, [&](std::string_view j) { return apps.Of(j); }, [&](std::string_view j) { return apps.RunOf(j); });
  if (!st.ok()) return st;
  Baseline b = acc.ComputeBaseline();
  b.name = !name.empty() ? name : DefaultName(range);
  b.computed_at_ns = NowNs();
  warning->clear();
  if (b.fs.empty())
    *warning = "WARNING: no job_stats (iosonar.jobstats) in " + FormatIsoMillis(range.from_ns) + " - " +
               FormatIsoMillis(range.to_ns) + ": the baseline has no file system";
  return b;
}

std::string BaselineSummary(const Baseline& b) {
  std::ostringstream o;
  o << "stored LASSi baseline " << BaselineDescription(b) << "\n";
  for (const auto& f : b.fs) {
    o << "  " << f.fs << ": " << f.app_hours << " run windows;";
    for (size_t i = 0; i < kOssOps; ++i)
      if (f.avg.oss[i]) o << " " << kOssOpNames[i] << " " << *f.avg.oss[i];
    for (size_t i = 0; i < kMdsOps; ++i)
      if (f.avg.mds[i] && *f.avg.mds[i] != 0) o << " " << kMdsOpNames[i] << " " << *f.avg.mds[i];
    o << " (per window)\n";
  }
  return o.str();
}

Result<ProbeBaseline> ProbeBaselineFromStore(Store& store, const Range& range, const std::string& name,
                                             std::vector<std::string>* warnings) {
  auto samples = LoadProbeSamples(store, range.from_ns, range.to_ns);
  if (!samples.ok()) return samples.status();
  std::vector<std::string> all_cached;
  ProbeBaseline b = ComputeProbeBaseline(*samples, range.from_ns, range.to_ns, kDefaultCacheFloorS, &all_cached);
  warnings->clear();
  for (const auto& k : all_cached)
    warnings->push_back("WARNING: every sample of " + k +
                        " was faster than the device's plausible floor (served by the page cache): no median for it");
  b.name = !name.empty() ? name : DefaultName(range);
  b.computed_at_ns = NowNs();
  if (b.medians.empty())
    warnings->push_back("WARNING: no successful iosonar.probe records in " + FormatIsoMillis(range.from_ns) + " - " +
                        FormatIsoMillis(range.to_ns) + ": the baseline is empty");
  return b;
}

std::string ProbeBaselineSummary(const ProbeBaseline& b) {
  std::ostringstream o;
  o << "stored probe baseline " << ProbeBaselineDescription(b) << "\n";
  for (const auto& m : b.medians)
    o << "  " << m.fs << " " << (m.host.empty() ? "(all hosts)" : m.host) << " " << m.op << ": median " << m.median_s
      << " s over " << m.samples << " samples"
      << (m.cache_served ? " (" + std::to_string(m.cache_served) + " cache-served left out)" : std::string()) << "\n";
  return o.str();
}

}  // namespace iosonar::lassi
