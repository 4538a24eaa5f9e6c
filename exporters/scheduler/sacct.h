// Pure parsers for what Slurm prints: `sacct --parsable2` tables and
// `scontrol show job -o` lines. No I/O; unit-tested on captured output.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/jobdb/jobdb.h"
#include "core/base/status.h"

namespace iosonar::scheduler {

struct BadLine {
  size_t line = 0;      // 1-based line number in the input
  std::string reason;   // what was wrong, naming the column
  std::string text;     // the line (first 200 bytes)
};

struct SacctParse {
  std::vector<JobRecord> records;
  std::vector<BadLine> bad;  // set aside; the rest is parsed
  size_t lines = 0;          // data lines seen (not counting the header and empty lines)
};

// The columns the poller asks sacct for, in this order.
extern const char* const kSacctFormat;

// text: sacct -p/-P output WITH its header line (columns are found by name,
// case-insensitive; unknown columns are ignored; JobIDRaw or JobID is
// required). Times are sacct's local time (no zone), converted with the
// local time zone (TZ). "Unknown"/"None" times are absent. A job id
// "123.batch" is job 123, step "batch"; JobID "120_3" gives array job 120
// task 3. ExitCode "3:0" is exit 3, signal 0; State "CANCELLED by 0" is
// CANCELLED. cluster: used when there is no Cluster column.
SacctParse ParseSacct(std::string_view text, const std::string& cluster, std::string_view delimiter = "|");

// Local time "2017-03-20T01:59:02" -> epoch ns (nullopt: "Unknown", "None", "", or malformed -> *bad = true).
std::optional<int64_t> ParseSlurmTime(std::string_view s, bool* bad);

// `scontrol show job -o JOB` (one line of Key=Value pairs; values may hold
// spaces) -> the pairs. Keys are case-sensitive as Slurm prints them.
std::map<std::string, std::string> ParseScontrolLine(std::string_view line);
// The job record scontrol describes (cluster and source are left to the caller).
Result<JobRecord> JobFromScontrol(const std::map<std::string, std::string>& kv);

// A job record from a prolog/epilog environment (SLURM_JOB_ID, SLURM_JOB_USER,
// SLURM_JOB_NODELIST, SLURM_JOB_NAME, SLURM_JOB_EXIT_CODE2, ...). now_ns is
// the start (prolog) or end (epilog) time.
Result<JobRecord> JobFromEnvironment(const std::map<std::string, std::string>& env, bool epilog, int64_t now_ns);

}  // namespace iosonar::scheduler
