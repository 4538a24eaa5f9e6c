// What `iosonar lassi`, `lassi baseline`, `slowdown`, `slowdown baseline`
// and `report` do besides parsing their options (cli/cmd_lassi.cc parses
// them and calls these): the analysed range and the options from their text
// forms, the stored baseline a run uses, and a baseline computed from the
// store with what the command prints of it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/probe_baseline.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::lassi {

// --day D, or --from T --to T (ISO 8601): the range [from_ns, to_ns).
struct Range {
  std::string day, from, to;
  int64_t from_ns = 0, to_ns = 0;
  // Fills from_ns/to_ns; "" or what is wrong (a usage error).
  std::string Parse();
};

// The LASSi computation's options as the commands take them.
struct LassiArgs {
  double alpha = 2;
  std::string window = "1h", history, apps_file, mysql, cluster, baseline;
  int scan_threads = 1;
  // The options over the range; "" or what is wrong with them.
  std::string ToOptions(const Range& range, Options* o) const;
};

// --intervals (comma-separated durations), --baseline-sliding,
// --baseline-from/--baseline-to into *o over the range; "" or a usage error.
std::string SlowdownOptionsFrom(const Range& range, const std::string& intervals, const std::string& sliding,
                                const std::string& baseline_from, const std::string& baseline_to, SlowdownOptions* o);

// avg_fs from the stored baselines: the one named, else the newest of
// o->window_ns, into o->baseline. Returns the line to say on stderr ("" when
// there is nothing to say); NotFound when the named one is not stored.
Result<std::string> UseStoredBaseline(const std::vector<Baseline>& all, const std::string& name, Options* o);
// t_expected from the stored probe baselines: the one named, else the
// newest, into o->stored. Returns the line to say on stderr.
Result<std::string> UseStoredProbeBaseline(const std::vector<ProbeBaseline>& all, const std::string& name,
                                           SlowdownOptions* o);

// `lassi baseline`: avg_fs per application window over the range of the
// store, named `name` (default FROM..TO), computed now. *warning: what to
// say on stderr ("" when nothing).
Result<Baseline> BaselineFromStore(Store& store, const Range& range, int64_t window_ns, const AppSource& apps,
                                   const std::string& name, std::string* warning);
// What `lassi baseline` prints once it is stored.
std::string BaselineSummary(const Baseline& b);

// `slowdown baseline`: the probe medians over the range of the store, named
// `name` (default FROM..TO), computed now; *warnings: the lines to say.
Result<ProbeBaseline> ProbeBaselineFromStore(Store& store, const Range& range, const std::string& name,
                                             std::vector<std::string>* warnings);
// What `slowdown baseline` prints once it is stored.
std::string ProbeBaselineSummary(const ProbeBaseline& b);

}  // namespace iosonar::lassi
