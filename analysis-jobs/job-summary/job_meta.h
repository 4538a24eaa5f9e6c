// `iosonar job-summary` joined with the job database: the job's record as the
// summary shows it (a "job" object in the JSON, a header in the table) and
// the summary as a job_summary row.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis-jobs/job-summary/job_summary.h"
#include "core/jobdb/jobdb.h"

namespace iosonar::analysis {

// A job as it is in the job database, with its nodes (job_nodes).
struct JobMeta {
  JobRecord job;
  std::vector<std::string> nodes;
};

// The numbers of s that are job_summary columns, for the job (cluster, job_id).
JobSummaryRow ToJobSummaryRow(const JobSummary& s, const std::string& cluster, uint64_t job_id);

// SummaryToJson(s, pretty) with the job as a top-level "job" object (cluster,
// job_id, user, name, command, partition, node_list, nodes, array ids, start,
// end, state, exit_code; unknown values null) when meta is given.
std::string SummaryJsonWithJob(const JobSummary& s, const JobMeta* meta, bool pretty);
// json (an object) with one more top-level member key: value_json, in the
// layout SummaryJsonWithJob uses (the anomaly verdict in job-summary's JSON).
std::string WithMember(std::string json, const std::string& key, const std::string& value_json, bool pretty);

// "Job N on CLUSTER (job database)" and the user, name, command, nodes,
// start, end and state lines that head the table; ends with a blank line.
std::string JobMetaToTable(const JobMeta& meta);

}  // namespace iosonar::analysis
