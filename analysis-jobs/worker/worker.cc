#include "analysis-jobs/worker/worker.h"

#include "analysis-jobs/job-summary/job_meta.h"

namespace iosonar::worker {

std::string JobOutputs::Line() const {
  std::string s = "job " + job_id + ": " + (anomaly ? anomaly->verdict : std::string("no phases"));
  if (phases) s += " (" + std::to_string(phases->phases.size()) + " phases";
  if (anomaly) s += ", " + std::to_string(anomaly->history.size()) + " earlier runs";
  if (phases) s += ")";
  if (anomaly && !anomaly->neighbours.empty()) s += "; first neighbour " + anomaly->neighbours[0].job_id;
  if (anomaly && !anomaly->server_outliers.empty()) s += "; lagging " + anomaly->server_outliers[0].name;
  return s;
}

Result<JobOutputs> AnalyzeFinishedJob(Store& store, const std::string& job_id, const anomaly::JobSource& src,
                                      const anomaly::Options& opt, const std::string& host) {
  JobOutputs out;
  out.job_id = job_id;
  auto sum = analysis::SummarizeJob(store, job_id);
  if (!sum.ok()) return sum.status();
  out.summary = std::move(*sum);
  auto ph = analysis::PhasesForJob(store, job_id, opt.phases);
  if (ph.ok()) {
    out.phases = std::move(*ph);
    out.records += analysis::PhasesToRecords(*out.phases, host);
    auto an = anomaly::Analyze(store, job_id, src, opt);
    if (!an.ok()) return an.status();
    out.anomaly = std::move(*an);
    out.records += anomaly::ToRecords(*out.anomaly, host);
  } else if (ph.status().code() != Code::kNotFound) {
    return ph.status();
  }
  return out;
}

Status WriteJobOutputs(JobDb& db, const JobRecord& job, const JobOutputs& out) {
  if (out.summary)
    if (Status s = db.WriteJobSummary(analysis::ToJobSummaryRow(*out.summary, job.cluster, job.job_id)); !s.ok()) return s;
  if (out.phases)
    if (Status s = analysis::WritePhasesToDb(db.conn(), job.cluster, job.job_id, *out.phases); !s.ok()) return s;
  if (out.anomaly)
    if (Status s = anomaly::WriteToDb(db.conn(), job.cluster, job.job_id, *out.anomaly); !s.ok()) return s;
  return Status::Ok();
}

std::vector<std::pair<int64_t, int64_t>> DueScreenings(int64_t screened_to_ns, int64_t now_ns, int64_t every_ns) {
  std::vector<std::pair<int64_t, int64_t>> due;
  if (every_ns <= 0) return due;
  const int64_t last_end = now_ns / every_ns * every_ns;  // the last whole period ends here
  int64_t t = screened_to_ns > 0 ? screened_to_ns : last_end - every_ns;
  for (; t + every_ns <= last_end; t += every_ns) due.emplace_back(t, t + every_ns);
  return due;
}

}  // namespace iosonar::worker
