// The durable queue of finished jobs waiting for analysis: a directory (0700)
// with one file (0600) per queued job, written atomically (temp + rename),
// named so that lexical order is the order they were queued in. The Slurm
// epilog (`iosonar scheduler epilog` with $IOSONAR_ANALYSIS_QUEUE) or anyone
// (`iosonar analyze --enqueue JOB`) adds; the worker (`iosonar analyze`)
// takes the oldest, analyses it and removes it only then, so nothing is lost
// while the worker is down or when it dies mid-job (that job is redone).
// A job that cannot be analysed moves to DIR/failed/ with a .reason file.
// Several writers are safe (unique names); one worker at a time.
#pragma once
#include <string>
#include <vector>

#include "core/base/status.h"

namespace iosonar::worker {

struct QueueItem {
  std::string path;  // the file in the queue
  std::string job_id;
  std::string cluster;  // "" = the only one with that id
};

class AnalysisQueue {
 public:
  explicit AnalysisQueue(std::string dir) : dir_(std::move(dir)) {}
  Status Enqueue(const std::string& job_id, const std::string& cluster = "");
  // Oldest first; unreadable files are moved to failed/ with the reason.
  Result<std::vector<QueueItem>> List();
  Status Done(const QueueItem& it);
  Status Fail(const QueueItem& it, const std::string& reason);
  const std::string& dir() const { return dir_; }

 private:
  Status EnsureDirs();
  std::string dir_;
};

}  // namespace iosonar::worker
