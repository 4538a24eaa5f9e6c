// The Slurm connector (`iosonar scheduler`): job records into the MySQL job
// database from a prolog/epilog pair (start and end as they happen) and from
// a poller over `sacct --parsable2` that catches up after downtime. A record
// that cannot reach MySQL is spooled (one file each) and replayed, in order,
// before the next write or by `iosonar scheduler replay`: no job is lost.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/jobdb/jobdb.h"
#include "core/base/status.h"

namespace iosonar::scheduler {

struct Options {
  std::string mysql_url;   // "" = spool only
  std::string spool_dir = "/var/spool/iosonar/jobdb";
  std::string cluster;     // overrides SLURM_CLUSTER_NAME / sacct's Cluster; the poller's key
  bool use_scontrol = true;  // prolog/epilog: complete the record with `scontrol show job -o`
  std::string scontrol = "scontrol";
  std::string sacct = "sacct";
  int64_t poll_overlap_ns = 300LL * 1000000000;  // a poll re-reads this much before its mark
  int64_t poll_first_window_ns = 86400LL * 1000000000;  // the first poll looks back this far
};

// What one prolog/epilog run did.
struct RecordOutcome {
  bool written = false;  // reached MySQL
  bool spooled = false;  // went to the spool (MySQL down or not configured)
  std::string spool_path;
  ReplayStats replay;    // spooled records replayed first
  std::string note;      // warnings (scontrol failed, ...)
};

// env: the prolog/epilog environment. Ok when the record was written or
// spooled; an error only when it could do neither (or env has no job id).
Status RecordPrologEpilog(const Options& o, bool epilog, const std::map<std::string, std::string>& env,
                          RecordOutcome* out);

struct PollStats {
  int64_t from_ns = 0, to_ns = 0;
  size_t lines = 0, records = 0, written = 0;
  std::vector<std::string> bad;  // "line N: reason: text"
  // Jobs (not steps) written by this poll that ended since the previous
  // poll's mark (or since the start of the window on a first or --since
  // poll): each finished job appears in exactly one poll's list, for the
  // analysis queue (`iosonar analyze`).
  std::vector<std::pair<std::string, uint64_t>> ended;  // (cluster, job id)
};
// Runs sacct over [since, now] (since: explicit, else the stored mark minus
// the overlap, else now minus the first window), writes every record, and
// advances the mark only when all writes succeeded.
Status PollSacct(const Options& o, std::optional<int64_t> since_ns, PollStats* st);

// The command of a `sbatch --wrap CMD` batch script (as `scontrol write
// batch_script JOB -` prints it), nullopt for any other script.
std::optional<std::string> WrappedCommand(std::string_view script);

// Runs argv (no shell), returns stdout; an error with stderr if it fails or
// takes longer than timeout_ms.
Result<std::string> RunCapture(const std::vector<std::string>& argv, int timeout_ms = 30000);

}  // namespace iosonar::scheduler
