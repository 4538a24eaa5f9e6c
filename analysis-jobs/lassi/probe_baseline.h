// Stored probe-slowdown baselines (`iosonar slowdown baseline`; Kunkel &
// Betke §3.3: t_expected is "the median of all observed values" of an op over
// a long baseline, 30-60 days): per file system and probe op, and per file
// system, probing host and op, the median latency (type 7 quantile, as
// slowdown.h) and the number of samples over a history [from, to). Kept like
// the LASSi baselines (analysis-jobs/lib/stored_baselines.h): a JSON-lines
// file DIR/probe-baselines.jsonl beside an embedded store (0600), or the job
// database's probe_baseline table (migration 038). `slowdown` and `report`
// take the newest one, or a named one.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis-jobs/lassi/slowdown.h"
#include "analysis-jobs/lib/stored_baselines.h"
#include "core/base/status.h"
#include "core/jobdb/mysql.h"

namespace iosonar::lassi {

struct ProbeMedian {
  std::string fs, host, op;  // host "": the file system's (every probing host)
  double median_s = 0;
  uint64_t samples = 0;       // samples the median is over
  uint64_t cache_served = 0;  // data-op samples left out as cache-served (CacheServed; probe_baseline, migration 039)
};

struct ProbeBaseline : analysis::BaselineHead {
  std::vector<ProbeMedian> medians;  // sorted by fs, host, op
  const ProbeMedian* Find(std::string_view fs, std::string_view host, std::string_view op) const;
};

// The medians of the samples with t in [from, to), the data-op samples under
// cache_floor_s marked (cache_served) and left out; an op all of whose
// samples were cache-served has no median (and is in *all_cached, "fs host op").
ProbeBaseline ComputeProbeBaseline(const std::vector<ProbeSample>& samples, int64_t from_ns, int64_t to_ns,
                                   double cache_floor_s = kDefaultCacheFloorS,
                                   std::vector<std::string>* all_cached = nullptr);

std::string ProbeBaselineFileOf(const std::string& store_dir);  // DIR/probe-baselines.jsonl
std::string ProbeBaselineLine(const ProbeBaseline& b);           // one JSON line with '\n'
Result<ProbeBaseline> ParseProbeBaselineLine(std::string_view line);
Status AppendProbeBaselineFile(const std::string& path, const ProbeBaseline& b);
// Every baseline of the file (none if it does not exist); a bad line is an
// Invalid error naming PATH:LINE. source = "file PATH".
Result<std::vector<ProbeBaseline>> ReadProbeBaselineFile(const std::string& path);
// probe_baseline rows: replaces the baseline's rows (same name) in one transaction.
Status WriteProbeBaselineToDb(MysqlConn& c, const ProbeBaseline& b);
// Every baseline in the table; source = "mysql probe_baseline".
Result<std::vector<ProbeBaseline>> ReadProbeBaselinesFromDb(MysqlConn& c);
// The named baseline (NotFound naming it and what exists), else the newest; nullopt when none.
Result<std::optional<ProbeBaseline>> SelectProbeBaseline(const std::vector<ProbeBaseline>& all, const std::string& name);
// "'NAME' from SOURCE: N medians over FROM - TO, computed AT".
std::string ProbeBaselineDescription(const ProbeBaseline& b);

}  // namespace iosonar::lassi
