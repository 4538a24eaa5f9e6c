// The durable queue of finished jobs waiting for analysis: a directory (0700)
// with one file (0600) per queued job, written atomically (temp + rename),
// named so that lexical order is the order they were queued in. The Slurm
// epilog (`iosonar scheduler epilog` with $IOSONAR_ANALYSIS_QUEUE) or anyone
// (`iosonar analyze --enqueue JOB`) adds; the worker (`iosonar analyze`)
// takes the oldest, analyses it and removes it only then, so nothing is lost
// while the worker is down or when it dies mid-job (that job is redone).
// A job that cannot be analysed moves to DIR/failed/ with a .reason file.
// Several writers are safe (unique names); one worker at a time.
//
// The automatic sources (the epilog and the sacct poller, which both see a
// job end) queue "once": such an entry is not added while the same job is
// already queued or was analysed (DIR/done/ holds a marker per analysed job,
// kept 30 days), and the worker drops a once-entry of a job analysed since it
// was queued (two sources racing). `iosonar analyze --enqueue` always queues,
// so an administrator can have a job analysed again.
#pragma once
#include <string>
#include <vector>

#include "core/base/status.h"

namespace iosonar::worker {

struct QueueItem {
  std::string path;  // the file in the queue
  std::string job_id;
  std::string cluster;  // "" = the only one with that id
  bool once = false;    // queued by an automatic source: skip if already analysed
};

class AnalysisQueue {
 public:
  explicit AnalysisQueue(std::string dir) : dir_(std::move(dir)) {}
  // once: skip (*queued = false) when the job is queued already or was analysed.
  Status Enqueue(const std::string& job_id, const std::string& cluster = "", bool once = false, bool* queued = nullptr);
  // Oldest first; unreadable files are moved to failed/ with the reason.
  // Also removes done/ markers older than 30 days.
  Result<std::vector<QueueItem>> List();
  // Whether the job of it was analysed (a done/ marker exists).
  bool Analysed(const QueueItem& it) const;
  // Removes the entry; analysed: also leaves the job's done/ marker.
  Status Done(const QueueItem& it, bool analysed = false);
  Status Fail(const QueueItem& it, const std::string& reason);
  const std::string& dir() const { return dir_; }

 private:
  Status EnsureDirs();
  std::string MarkerPath(const std::string& job_id, const std::string& cluster) const;
  bool Pending(const QueueItem& it) const;
  std::string dir_;
};

}  // namespace iosonar::worker
