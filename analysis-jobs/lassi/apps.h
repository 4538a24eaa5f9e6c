// The application of a job for LASSi's per-application risk: its exact
// command line, from a file of JOB_ID<TAB>COMMAND LINE lines and/or the job
// database (the job's app_key column, written once by the prolog or the sacct
// poller with ApplicationKey, core/jobdb/jobdb.h; computed from `command` only
// for rows older than that column). The file wins where both know a job.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/jobdb/jobdb.h"

namespace iosonar::lassi {

// Calls fn(line, number from 1) for each line of the file but blank lines and
// '#' comments; stops at fn's first error. Io "cannot read PATH" if unreadable.
Status ForEachDataLine(const std::string& path, const std::function<Status(const std::string& line, int n)>& fn);

class AppSource {
 public:
  // Adds the file's jobs: one JOB_ID<TAB>COMMAND LINE a line; blank lines and
  // lines starting with '#' are skipped; any other line without a tab (or
  // with an empty job id) is an error naming file:line.
  Status LoadFile(const std::string& path);
  // Jobs not in the file are looked up in db (which must outlive this),
  // on `cluster`, or the only cluster with that job id when "".
  void UseJobDb(JobDb* db, std::string cluster);

  // The job's command line, or "" when unknown. Calls the job database for a
  // numeric job id that is not in the file.
  std::string Of(std::string_view job) const;
  // The job's run [start, end) from the job database (nullopt: no database,
  // not found, or a start or end unknown, e.g. still running).
  std::optional<std::pair<int64_t, int64_t>> RunOf(std::string_view job) const;

 private:
  std::map<std::string, std::string, std::less<>> file_;
  JobDb* db_ = nullptr;
  std::string cluster_;
};

}  // namespace iosonar::lassi
