// The loop of `iosonar analyze` (the analysis worker): takes finished jobs
// from the queue (queue.h) oldest first, analyses each (worker.h), publishes
// the results, and with screening on screens every whole period that is due
// (anomaly/screen.h), e-mailing occurrences (anomaly/alert.h). The command
// (cli/cmd_analyze.cc) parses the options, opens the store and the job
// database and hands them here; where results go is its Publisher, seen
// here through Destinations.
#pragma once
#include <csignal>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "analysis-jobs/anomaly/alert.h"
#include "analysis-jobs/anomaly/anomaly.h"
#include "analysis-jobs/worker/queue.h"
#include "core/base/status.h"
#include "core/jobdb/jobdb.h"
#include "core/store/store.h"

namespace iosonar::worker {

// Where results go: the result stream, the Redis cache and the job database.
// Each destination decides on its own whether it is on and reports its own
// failures (cli/publish.h).
class Destinations {
 public:
  virtual ~Destinations() = default;
  virtual bool has_output() const = 0;
  virtual void Send(const std::string& lines) = 0;
  virtual void Cache(const std::string& key, const std::string& value) = 0;
  virtual void WithJobDb(const std::function<Status(JobDb&)>& fn) = 0;
  virtual void WithJob(const std::string& job_id, const std::string& cluster,
                       const std::function<Status(JobDb&, const JobRecord&)>& fn) = 0;
};

struct LoopOptions {
  bool follow = false;            // keep polling; without it the queue is drained once
  int64_t poll_ns = 2000000000;   // queue poll interval (follow)
  std::string screen_state;       // screening state file; screening is on when given
  int64_t screen_every_ns = 3600ll * 1000000000;
  std::map<std::string, double> peaks;  // known peak bandwidth per server
  anomaly::AlertOptions alert;    // alert.to empty: no e-mail
  bool reread_forwarding_map = false;  // read the job database's map again before each job
  std::string host;               // names the result records' source
  std::string command = "analyze";  // in messages: "iosonar COMMAND: ..."
};

// Runs until the queue is drained (no follow) or *stop is set (checked
// between jobs and while waiting). Progress lines go to out, errors to err.
// Returns 1 on a fatal error (the queue or the screening state cannot be
// read or written) or a failed screening, else 0.
int RunWorker(AnalysisQueue& queue, Store& store, JobDb* db, const anomaly::JobSource& src, const LoopOptions& opt,
              Destinations& dest, const volatile std::sig_atomic_t* stop, std::ostream& out, std::ostream& err);

}  // namespace iosonar::worker
