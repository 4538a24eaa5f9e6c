// One diagnosis per job: what cost the job the most time, first (docs/serve.md
// "Diagnosis"). It joins what the analyses found separately -- the stored
// anomaly verdict (`iosonar anomaly`: the slowdown against the application's
// history, the servers that lagged their peers, the neighbours that may have
// interfered), the advice rules of the daily report (N-1 with many processes,
// small requests, metadata-heavy) and the jobs this job slowed -- into one
// list of findings, each with a severity (as drishti grades its insights),
// the evidence, the action and the estimated seconds it cost. Pure: every
// finding can be checked on synthetic input.
#pragma once
#include <string>
#include <vector>

#include "analysis-jobs/job-summary/job_summary.h"
#include "core/results/results.h"
#include "analysis-jobs/report/report.h"

namespace iosonar::serve {

// A job's stored anomaly verdict (`iosonar anomaly`, job_anomaly and its
// neighbour and server-outlier rows). Neighbours the caller may not see have
// an empty job_id (the page says "another job").
struct AnomalyView {
  bool analysed = false;
  std::string verdict;  // normal, anomalous, not_enough_history
  int64_t history_runs = 0;
  double slowdown = 0;
  struct Neighbour {
    std::string job_id;  // "" = hidden from the caller
    std::string shared, evidence;
    double md_ops_per_s = 0;
  };
  std::vector<Neighbour> neighbours;
  using Outlier = results::job_server_outlier::Row;  // kind, server, bandwidth_ratio, cost_s (results.def)
  std::vector<Outlier> outliers;
  // How its servers were judged (AnomalyResult::server_check): brw_osc,
  // client_time, io_time, or none / "" (nothing compared them, or a row
  // written before it was stored).
  std::string server_check;
  std::vector<std::string> unjudged;  // servers of the job nothing could compare
  // Every server the job used was compared with peers.
  bool ServersJudged() const {
    return (server_check == "brw_osc" || server_check == "client_time" || server_check == "io_time") && unjudged.empty();
  }
};

// A job this job is named as the first suspect of: an anomalous job whose
// stored neighbours list this one (job_anomaly_neighbour, rank 0). job_id ""
// when the caller may not see it.
struct SlowedJob {
  std::string job_id;
  double slowdown = 0;
  std::string shared, evidence;  // the servers they shared; the evidence codes against this job
};

struct Diagnosis {
  std::string kind;      // a stable code for scripts: slow_server, interference, slower_than_history,
                         // slowed_others, n1_many_processes, small_requests, metadata_heavy,
                         // not_judged, as_before, nothing_found
  std::string severity;  // high, medium, low, info
  std::string cause;     // in words, for the job's owner
  std::string evidence;  // the numbers behind it
  std::string action;    // what to do
  double cost_s = 0;     // estimated seconds of the job's run this cost (0: none known)
};

// The findings, most severe first and, within a severity, by cost_s. Severity:
// high for a measured slowdown of an anomalous job, for slowing other jobs,
// and for a cost of at least 10 % of the run time; medium for 1 %; low below;
// info for what costs nothing. Never empty: "nothing_found" when there is
// nothing to say (and only then, so no "nothing to change" stands above an
// anomaly or a lagging server), except that a job with too few earlier runs
// whose servers nothing could compare gets "not_judged" ("Not judged: first
// runs of this application") in its place. A lagging server is named
// whatever the verdict (a first run's servers are judged against their
// peers): never below low. Costs:
//  - slow_server: the lagging server's cost_s (its seconds with the job's
//    bytes x (1 - bandwidth ratio), docs/anomaly.md), else the job's seconds
//    with I/O x (1 - 1/slowdown);
//  - interference, slower_than_history: the job's seconds with I/O x
//    (1 - 1/slowdown);
//  - advice: the wall-clock time a process spent in the calls concerned (the
//    direction's summed call time, or the metadata and other calls', over the
//    processes with I/O), divided by the slowdown when a server slowed the job
//    (the time they would have taken at normal speed): at most what the
//    change can save.
std::vector<Diagnosis> Diagnose(const analysis::JobSummary& s, const std::vector<report::Advice>& advice,
                                const AnomalyView* anomaly, const std::vector<SlowedJob>& slowed);

// [{"kind", "severity", "cause", "evidence", "action", "cost_s"}, ...]
std::string DiagnosisJson(const std::vector<Diagnosis>& d, bool pretty);

}  // namespace iosonar::serve
