// LASSi and slowdown results in their published forms (tables for people,
// iosonar.result.risk / iosonar.result.slowdown JSON lines, rows of the job
// database's lassi_risk / probe_slowdown) and helpers shared by `iosonar
// lassi`, `slowdown` and `report`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "core/base/status.h"
#include "core/jobdb/mysql.h"

namespace iosonar::lassi {

// "30s", "10m", "1h", "4h", "1d", or plain seconds; nullopt if malformed or <= 0.
std::optional<int64_t> ParseDuration(std::string_view s);
// "2018-01-28" -> that day's 00:00 UTC in ns.
std::optional<int64_t> ParseDay(std::string_view s);

// iosonar.result.risk: one JSON line (with '\n') per window row: fs rows,
// then apps, then jobs; event.seq 1, 2, ... and event.stream from the result
// (ResultToJson: the options and every window), so a resend dedupes.
std::string RiskRecords(const LassiResult& r, const std::string& host);
// iosonar.result.slowdown: one line per slowdown row and statistic (median,
// p90, p95, p99, mean, max); event.seq 1, 2, ... and event.stream from the
// result (SlowdownToJson).
std::string SlowdownRecords(const std::vector<SlowdownRow>& rows, const SlowdownOptions& opt, const std::string& host);

// LASSi slowdown analysis (Table 3, Fig. 6): the runs of one command against
// the file system's risk summed over the windows each run overlapped.
struct Run {
  std::string job;
  int64_t start_ns = 0, end_ns = 0;
};
struct RunRisk {
  std::string job;
  double runtime_s = 0, risk_oss = 0, risk_mds = 0;
};
struct RunCorrelation {
  std::string fs;
  std::vector<RunRisk> runs;
  Pearson oss, mds;  // runtime vs risk_oss, runtime vs risk_mds
};
RunCorrelation CorrelateRuns(const LassiResult& r, const std::string& fs, const std::vector<Run>& runs);
// The file system --runs correlates against: `fs`, else the first in name order ("" if none).
std::string RunsFs(const LassiResult& r, const std::string& fs);

// Runs from a file of JOB<TAB>START<TAB>END lines (ISO 8601); blank lines and
// '#' comments are skipped; a malformed line goes to *skipped as
// "FILE:LINE: expected JOB<TAB>START<TAB>END, skipped". Io if unreadable.
Result<std::vector<Run>> ReadRunsFile(const std::string& path, std::vector<std::string>* skipped);

// For people: the file-system windows, per-op mean and c_v, and applications.
std::string ResultToTable(const LassiResult& r);
// The runtime-vs-risk lines of `iosonar lassi --runs`.
std::string CorrelationToText(const RunCorrelation& c);
// One line per slowdown row (fs, op, interval, start, n, median, p90, baseline, slowdowns).
std::string SlowdownToTable(const std::vector<SlowdownRow>& rows);

// Into the job database (migration 020), one transaction each, computed_at
// now: REPLACE the fs/app/job window rows of lassi_risk; REPLACE the rows of
// probe_slowdown. Errors say which table (and that `iosonar db-migrate` makes it).
Status WriteRiskToDb(MysqlConn& db, const LassiResult& r);
Status WriteSlowdownToDb(MysqlConn& db, const std::vector<SlowdownRow>& rows);

}  // namespace iosonar::lassi
