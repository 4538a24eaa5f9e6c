#include "serve/diagnosis.h"

#include <cmath>

#include <algorithm>
#include <cstdio>

#include "core/base/json.h"
#include "serve/pages.h"

namespace iosonar::serve {

namespace {

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

int Rank(const std::string& severity) {
  if (severity == "high") return 0;
  if (severity == "medium") return 1;
  if (severity == "low") return 2;
  return 3;
}

std::string SeverityOf(double cost_s, double runtime_s) {
  if (cost_s <= 0) return "info";
  if (runtime_s <= 0) return "medium";
  if (cost_s >= 0.1 * runtime_s) return "high";
  if (cost_s >= 0.01 * runtime_s) return "medium";
  return "low";
}

// "3008", "3008 and 3011", "3008, another job and 3011".
std::string JobList(const std::vector<SlowedJob>& slowed) {
  std::string out;
  for (size_t i = 0; i < slowed.size(); ++i) {
    if (i) out += i + 1 == slowed.size() ? " and " : ", ";
    out += slowed[i].job_id.empty() ? "another user's job" : "job " + slowed[i].job_id;
  }
  return out;
}

}  // namespace

std::vector<Diagnosis> Diagnose(const analysis::JobSummary& s, const std::vector<report::Advice>& advice,
                                const AnomalyView* a, const std::vector<SlowedJob>& slowed) {
  std::vector<Diagnosis> out;
  const double io_s = s.io_phase_s > 0 ? s.io_phase_s : s.runtime_s;
  const bool anomalous = a && a->analysed && a->verdict == "anomalous";
  // How much slower than normal the job's I/O ran (1: as normal, or unknown).
  double x = anomalous && a->slowdown > 1 ? a->slowdown : 1;

  if (a && a->analysed && !a->outliers.empty()) {
    // The server that cost the most (the job waits for its slowest server).
    const AnomalyView::Outlier* worst = &a->outliers.front();
    for (const auto& o : a->outliers)
      if (o.cost_s > worst->cost_s || (o.cost_s == worst->cost_s && o.bandwidth_ratio < worst->bandwidth_ratio))
        worst = &o;
    const double sx = x > 1 ? x : (worst->bandwidth_ratio > 0 && worst->bandwidth_ratio < 1 ? 1 / worst->bandwidth_ratio : 1);
    Diagnosis d;
    d.kind = "slow_server";
    d.cost_s = worst->cost_s > 0 ? worst->cost_s : io_s * (1 - 1 / sx);
    d.severity = anomalous ? "high" : SeverityOf(d.cost_s, s.runtime_s);
    if (d.severity == "info") d.severity = "low";  // a lagging server is never "nothing to change"
    const std::string what = ServerKindText(worst->kind) + " " + worst->server;
    d.cause = (sx > 1 ? Fmt("Slowed ~%.1fx by ", sx) : std::string("Slowed by ")) + what +
              " (the server, not your code)";
    d.evidence = what + Fmt(" moved data at %.2fx the rate of its peers", worst->bandwidth_ratio) + " while your job used it" +
                 Fmt(", ~%.0f s lost", d.cost_s);
    for (const auto& o : a->outliers)
      if (&o != worst)
        d.evidence += "; " + ServerKindText(o.kind) + " " + o.server + Fmt(" lagged too (%.2fx its peers)", o.bandwidth_ratio);
    if (anomalous) d.evidence += Fmt("; the slowest I/O phase took %.1fx as long as in ", a->slowdown) +
                                 std::to_string(a->history_runs) + " earlier runs";
    else if (a->verdict == "not_enough_history")
      d.evidence += "; judged against the other servers your job used (" + std::to_string(a->history_runs) +
                    (a->history_runs == 1 ? " earlier run" : " earlier runs") + " of the application, too few to compare with)";
    d.action = worst->kind == "ost"
                   ? "Rerun; to keep off this OST, stripe your output away from it (lfs setstripe -o with other OST "
                     "indices, or lfs migrate) and tell the administrators. Changing your code will not help."
                   : "Rerun (other nodes go through other forwarding nodes) and tell the administrators. Changing your "
                     "code will not help.";
    out.push_back(std::move(d));
  } else if (anomalous) {
    // Slower than its history, no lagging server: a neighbour's load, if one is known.
    const AnomalyView::Neighbour* n = a->neighbours.empty() ? nullptr : &a->neighbours.front();
    Diagnosis d;
    d.cost_s = x > 1 ? io_s * (1 - 1 / x) : 0;
    d.severity = "high";
    if (n) {
      d.kind = "interference";
      d.cause = Fmt("I/O ~%.1fx slower than in earlier runs, likely slowed by ", x) +
                (n->job_id.empty() ? std::string("another user's job") : "job " + n->job_id) + " on the same servers";
      d.evidence = (n->job_id.empty() ? std::string("another user's job") : "job " + n->job_id) + " shared " +
                   n->shared + " with yours and showed " + EvidenceText(n->evidence) +
                   (n->md_ops_per_s > 0 ? Fmt(" (%.0f metadata ops/s)", n->md_ops_per_s) : std::string());
      d.action = "Rerun; nothing in your job explains the slowdown. The administrators can see the other job.";
    } else {
      d.kind = "slower_than_history";
      d.cause = Fmt("I/O ~%.1fx slower than in earlier runs of the application", x);
      d.evidence = "against " + std::to_string(a->history_runs) + " earlier runs at the same scale; no lagging server and "
                   "no busy neighbour was found";
      d.action = "Check whether this run's input or output differed from the earlier runs'; if not, tell the "
                 "administrators.";
    }
    d.evidence += Fmt("; ~%.0f s lost", d.cost_s);
    out.push_back(std::move(d));
  }

  if (!slowed.empty()) {
    Diagnosis d;
    d.kind = "slowed_others";
    d.severity = "high";
    double worst = 0;
    for (const auto& j : slowed) worst = std::max(worst, j.slowdown);
    d.cause = "Your job slowed " + std::to_string(slowed.size()) + (slowed.size() == 1 ? " other job" : " other jobs") +
              " (" + JobList(slowed) + ")";
    d.evidence = "named the first suspect of their I/O anomaly";
    if (worst > 0) d.evidence += Fmt(" (up to %.1fx slower than their history)", worst);
    d.evidence += ": shared " + slowed.front().shared;
    if (!slowed.front().evidence.empty()) d.evidence += ", your job showed " + EvidenceText(slowed.front().evidence);
    d.action = "Spread or reduce that load (see the other findings); the jobs beside yours run faster for it.";
    out.push_back(std::move(d));
  }

  // The advice rules: at most the time the calls concerned took, at normal speed.
  const double procs = static_cast<double>(std::max<uint64_t>(1, s.processes_with_io));
  for (const auto& ad : advice) {
    Diagnosis d;
    double call_s = 0;
    if (ad.kind == "metadata-heavy") {
      d.kind = "metadata_heavy";
      call_s = std::max(0.0, s.busy_s - s.read.busy_s - s.write.busy_s) / procs;
    } else {
      // FindAdvice says the direction in its evidence only ("... read one shared file", "N reads of ...").
      const bool reads = ad.evidence.find(" read") != std::string::npos || ad.evidence.find("reads") != std::string::npos;
      const analysis::DirectionStats& dir = reads ? s.read : s.write;
      call_s = dir.busy_s / procs;
      d.kind = ad.kind == "small requests" ? "small_requests" : ad.kind == "N-1 with many processes" ? "n1_many_processes"
                                                                                                  : "advice";
    }
    d.cost_s = call_s / x;
    d.severity = SeverityOf(d.cost_s, s.runtime_s);
    if (d.severity == "info") d.severity = "low";  // a rule fired: worth a look even without a measured cost
    d.cause = d.kind == "small_requests"      ? "Small requests"
              : d.kind == "n1_many_processes" ? "Many processes on one shared file (N-1)"
              : d.kind == "metadata_heavy"    ? "Metadata-heavy I/O"
                                              : ad.kind;
    d.evidence = ad.evidence + Fmt("; up to ~%.1f s per process in these calls", d.cost_s);
    d.action = ad.change;
    out.push_back(std::move(d));
  }

  // Too few earlier runs and nothing compared the servers either: nothing
  // was judged, and the page must not say all is well.
  bool unjudged = false;
  if (a && a->analysed && !anomalous && a->outliers.empty()) {
    Diagnosis d;
    d.severity = "info";
    if (a->verdict == "not_enough_history" && !a->ServersJudged()) {
      unjudged = true;
      d.kind = "not_judged";
      d.cause = "Not judged: first runs of this application";
      std::string which = "the servers your job used";
      if (!a->unjudged.empty() && a->server_check != "none" && !a->server_check.empty()) {
        which.clear();
        for (size_t i = 0; i < a->unjudged.size() && i < 5; ++i) which += (i ? ", " : "") + a->unjudged[i];
        if (a->unjudged.size() > 5) which += " and " + std::to_string(a->unjudged.size() - 5) + " more";
        which += " (the others did not lag)";
      }
      d.evidence = std::to_string(a->history_runs) + (a->history_runs == 1 ? " earlier run" : " earlier runs") +
                   " of the same application at the same scale (3 are needed to tell a slow run), and " + which +
                   " could not be compared with peers (no service-time records, no file layouts, or nothing beside "
                   "them)";
      d.action = "Nothing can be said yet; later runs will be compared with this one.";
    } else if (a->verdict == "normal") {
      d.kind = "as_before";
      d.cause = "I/O as fast as in earlier runs of the application";
      d.evidence = "compared with " + std::to_string(a->history_runs) + " earlier runs at the same scale";
      d.action = "Nothing to do.";
    } else {
      d.kind = "not_judged";
      d.cause = "Not compared with earlier runs: too few of them";
      d.evidence = std::to_string(a->history_runs) + (a->history_runs == 1 ? " earlier run" : " earlier runs") +
                   " of the same application at the same scale";
      d.action = "Nothing to do; later runs will be compared with this one.";
    }
    out.push_back(std::move(d));
  }
  const bool problem = std::any_of(out.begin(), out.end(), [](const Diagnosis& d) { return d.severity != "info"; });
  if (!problem && !unjudged) {
    Diagnosis d;
    d.kind = "nothing_found";
    d.severity = "info";
    d.cause = "Nothing to change was found";
    d.evidence = "no slow server, no interference and none of the advice rules (N-1 with many processes, small "
                 "requests, metadata-heavy) applies";
    if (a && a->analysed && a->verdict == "not_enough_history")
      d.evidence = "no server lagged its peers and none of the advice rules (N-1 with many processes, small requests, "
                   "metadata-heavy) applies; too few earlier runs to compare this run's speed with";
    d.action = "Nothing to do.";
    out.insert(out.begin(), std::move(d));
  }
  std::stable_sort(out.begin(), out.end(), [](const Diagnosis& l, const Diagnosis& r) {
    if (Rank(l.severity) != Rank(r.severity)) return Rank(l.severity) < Rank(r.severity);
    return l.cost_s > r.cost_s;
  });
  return out;
}

std::string DiagnosisJson(const std::vector<Diagnosis>& ds, bool pretty) {
  std::string b;
  JsonWriter w(&b, pretty ? 2 : 0);
  w.BeginArray();
  for (const auto& d : ds) {
    w.BeginObject();
    w.Kv("kind", d.kind);
    w.Kv("severity", d.severity);
    w.Kv("cause", d.cause);
    w.Kv("evidence", d.evidence);
    w.Kv("action", d.action);
    w.Kv("cost_s", std::round(d.cost_s * 1000) / 1000);  // to the millisecond
    w.EndObject();
  }
  w.EndArray();
  return b;
}

}  // namespace iosonar::serve
