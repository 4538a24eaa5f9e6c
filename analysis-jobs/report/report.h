// The daily helpdesk report: one self-contained HTML file (inline
// SVG plots, no external resources, no network), a plain-text summary for
// email and the same data as JSON, from a LASSi result, probe slowdown rows
// and, where the store has trace records, job summaries.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/results.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::report {

struct AdviceOptions {
  uint64_t n1_processes = 16;           // N-1 with at least this many processes
  double small_request_bytes = 65536;   // average request below this is "small"
  uint64_t min_ops = 1000;              // ... when the job made at least this many
  uint64_t meta_ops = 10000;            // metadata-heavy: at least this many metadata ops
  double meta_ops_per_mib = 10;         // ... and this many per MiB moved
  // The rules drishti applies to Darshan logs, with its thresholds:
  double misaligned_share = 0.1;        // misaligned: more than this share of the POSIX data ops (P07/P08)
  double random_share = 0.2;            // random access: more than this share of a direction's ops
  uint64_t random_ops = 1000;           // ... and at least this many (P11/P13; here: not consecutive)
  uint64_t shared_small_ops = 1000;     // small requests on shared files (P15/P16)
  uint64_t independent_ops = 1000;      // no collective MPI-IO: more independent ops than this (M02/M03)
};

struct Advice {
  std::string job, app, fs;
  std::string kind;      // "N-1 with many processes", "small requests", "metadata-heavy", "misaligned requests",
                         // "stragglers", "load imbalance", "random access", "small requests on shared files",
                         // "no collective MPI-IO"
  std::string evidence;  // the numbers behind it
  std::string change;    // what to change
};

struct ReportInput {
  std::string title;  // e.g. "2018-01-28"
  lassi::LassiResult lassi;
  std::vector<lassi::SlowdownRow> slowdown;
  lassi::SlowdownOptions slowdown_options;  // as the rows were computed (the baseline they used)
  std::map<std::string, analysis::JobSummary> summaries;  // by job id (trace records present)
  AdviceOptions advice;
  std::optional<lassi::RunCorrelation> runs;  // the runs of one command vs risk (LASSi Table 3, Fig. 6)
  size_t top_n = 10;
  // Sections other analyses add, rendered before the advice (HTML, and the
  // same as plain text): the anomaly section (analysis-jobs/anomaly/screen.h).
  std::vector<std::pair<std::string, std::string>> extra_sections;
};

std::vector<Advice> FindAdvice(const ReportInput& in);

// The summaries of the jobs with iosonar.trace records in [from, to) (the
// first 10,000 jobs), by job id. A failed listing is returned, and the jobs
// listed until then are still summarized; a job whose summary fails is left out.
Status SummarizeTracedJobs(Store& store, int64_t from_ns, int64_t to_ns,
                           std::map<std::string, analysis::JobSummary>* out);

struct ReportOutput {
  std::string html, text, json;
};
ReportOutput RenderReport(const ReportInput& in);


}  // namespace iosonar::report
