// What `iosonar darshan-import` does with the logs it is given (cli/cmd_darshan.cc
// parses the options and calls these): the logs a directory stands for, each
// log's records into an embedded store or a sink (validated as the collector
// validates them), the job record and `--apps` line of a log, and the
// summary as a table or JSON.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/darshan/darshan_import.h"
#include "core/darshan/darshan_log.h"
#include "core/jobdb/jobdb.h"
#include "core/store/store.h"
#include "core/transport/sink.h"

namespace iosonar {
class BulkWriter;
class IngestBatch;
}

namespace iosonar::darshan {

// One log as darshan-import reports it.
struct LogImport {
  std::string path;
  std::string error;  // the log was refused
  std::string version, job_id, exe;
  int64_t nprocs = 0;
  ImportReport rep;
  std::vector<ModuleInfo> modules;
  AppendStats stored;
};

// The logs named: a directory stands for its *.darshan files (recursively,
// sorted by path). *err: a directory that could not be read ("" when none).
std::vector<std::string> ExpandLogPaths(const std::vector<std::string>& in, std::string* err);

// Imports logs into an embedded store's bulk path (batches of 8,192
// records; importing a log again stores nothing new) or into a sink (the
// collector's validation before anything leaves, 4 MiB sends).
class LogImporter {
 public:
  LogImporter(BulkWriter* writer, RecordSink* sink, const ImportOptions& opt);
  ~LogImporter();
  // One log's records; fills row (version, job id, counts, what was stored).
  // An error stops this log (row->error is its message).
  Status Import(const Log& log, LogImport* row);
  // The sink's flush (Ok with a store).
  Status Flush();

 private:
  BulkWriter* writer_;
  RecordSink* sink_;
  ImportOptions opt_;
  std::unique_ptr<IngestBatch> batch_;
};

// The job database's row of a log's job (uid, nprocs, start/end, executable
// as its command; source "darshan") on `cluster`; Invalid when the job id
// is not numeric.
Result<JobRecord> JobRecordOf(const Log& log, const std::string& job_id, const std::string& cluster);
// "JOB_ID<TAB>EXECUTABLE\n" for --apps (tabs in the executable as spaces);
// "" when the log names no executable.
std::string AppsLine(const Log& log, const std::string& job_id);

// The summary darshan-import prints: a table per log (to_store: with what was
// stored), or a JSON array of one object per log.
std::string ImportTable(const std::vector<LogImport>& rows, bool to_store);
std::string ImportJson(const std::vector<LogImport>& rows);

}  // namespace iosonar::darshan
