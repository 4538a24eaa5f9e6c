// What `iosonar analyze` does for each finished job it takes from the queue
// (queue.h) and every hour: the job summary, the I/O phases and the anomaly
// analysis (with neighbours and lagging servers), as JSON for the Redis
// cache, records for the result stream and rows for the job database; and
// which hours of system screening are due. The command publishes them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis-jobs/anomaly/anomaly.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/phases/phases.h"
#include "core/base/status.h"
#include "core/jobdb/jobdb.h"
#include "core/store/store.h"

namespace iosonar::worker {

struct JobOutputs {
  std::string job_id;
  std::optional<analysis::JobSummary> summary;
  std::optional<analysis::JobPhases> phases;
  std::optional<anomaly::AnomalyResult> anomaly;
  std::string records;  // iosonar.result.phase and iosonar.result.anomaly lines
  std::string Line() const;  // one line for the log: "job J: VERDICT (N phases, ...)"
};

// NotFound when the job has no trace records (nothing to analyse).
Result<JobOutputs> AnalyzeFinishedJob(Store& store, const std::string& job_id, const anomaly::JobSource& src,
                                      const anomaly::Options& opt, const std::string& host);
// Its rows: job_summary, job_phases, job_anomaly (+ neighbours, outliers).
Status WriteJobOutputs(JobDb& db, const JobRecord& job, const JobOutputs& out);

// The whole hours [t, t + every) not yet screened: from the state's end
// (or, with no state, the last whole hour) up to now, oldest first.
std::vector<std::pair<int64_t, int64_t>> DueScreenings(int64_t screened_to_ns, int64_t now_ns, int64_t every_ns);

}  // namespace iosonar::worker
