// LASSi risk and ops metrics (Sivalingam et al., "LASSi: metric based I/O
// analytics for HPC", §2.3 and §3) as pure functions over per-window op sums.
//
// Inputs are per-window sums of the LASSi ops, for a file system (from the
// iosonar.oss / iosonar.mds records) and per job and application (from
// iosonar.jobstats). An op can be *unknown* in a window (no record carried
// it, or a counter reset made the delta unknown): unknown is not zero, it is
// left out of averages and risks. Definitions (docs/lassi.md):
//   risk(x)   = (x - a*avg(x)) / (a*avg(x)), a = alpha (2), only if > 0
//   risk_oss  = sum of positive risk over read_kb, read_ops, write_kb, write_ops, other
//   risk_mds  = sum of positive risk over the 16 MDS ops of eq. 4
//   read_kb_ops = read_ops*1024/read_kb (undefined where read_kb or read_ops
//                 is unknown or read_kb == 0), write_kb_ops likewise
//   avg(x) = avg_fs(x): the file system's long-term average of x per
//            application-hour (LASSi Tables 1-2), the application being one
//            run (one job: §3.3 "per application per hour", attributed "to
//            individual application launches"), from a stored Baseline, or
//            (fallback, flagged) the run windows of [history_from, to).
//   A run-hour (run window) counts for every window of the run of a job:
//   from the job's first to its last job_stats window (or the run's
//   start/end when known), with 0 for an op the file system's job_stats
//   carry but the job did not move in that window (job_stats only report
//   jobs whose counters changed: no record while running is zero).
//   Job (run) windows: risk against avg_fs. Application (exact command)
//   windows: the sum of the risks of its runs active in the window, never
//   the risk of their summed ops (a task farm of 50 benign runs is 50 times
//   0). File-system windows: the sum over the runs active in the window (Fig.
//   2 is the stack of Figs. 3-4). An application's profile is the average of
//   its per-run values (RunProfile). A file system without any job_stats (LMT data)
//   has no applications: its windows are compared with the mean of its own
//   server windows (basis "server"), as before.
#pragma once
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/json.h"
#include "core/records/fields.h"

namespace iosonar::lassi {

inline constexpr size_t kOssOps = 5;
inline constexpr size_t kMdsOps = 16;
// Names as LASSi writes them; the record fields they come from are in lassi.cc.
inline constexpr std::array<std::string_view, kOssOps> kOssOpNames = {"read_kb", "read_ops", "write_kb", "write_ops",
                                                                       "other"};
inline constexpr std::array<std::string_view, kMdsOps> kMdsOpNames = {
    "open",  "close",  "getattr",  "setattr",  "mkdir",    "rmdir",  "mknod", "link",
    "unlink", "rename", "getxattr", "setxattr", "statfs", "sync", "crossdir_rename", "samedir_rename"};
// The record field of each op (oss.* / mds.*), read_kb from oss.read_bytes/1024.
extern const std::array<FieldId, kOssOps> kOssFields;
extern const std::array<FieldId, kMdsOps> kMdsFields;

// Op sums of one window; nullopt = unknown.
struct OpSums {
  std::array<std::optional<double>, kOssOps> oss{};
  std::array<std::optional<double>, kMdsOps> mds{};
};

// --- the pure metric functions -------------------------------------------
// One op's risk contribution: (x - a*avg)/(a*avg) when positive, else 0.
// 0 also when x or avg is unknown, or avg <= 0 (nothing ever moved: no scale).
double RiskTerm(std::optional<double> x, std::optional<double> avg, double alpha);
// Sums of the positive terms (eqs. 3, 4).
double RiskOss(const OpSums& x, const OpSums& avg, double alpha);
double RiskMds(const OpSums& x, const OpSums& avg, double alpha);
// ops*1024/kb (eqs. 5, 6); nullopt where either is unknown or kb <= 0.
std::optional<double> OpsQuality(std::optional<double> ops, std::optional<double> kb);
// Mean of the known values of each op over windows (nullopt: none known).
OpSums MeanOf(std::span<const OpSums> windows);

struct MeanCv {
  size_t n = 0;
  double mean = 0;
  std::optional<double> cv;  // sample standard deviation (ddof = 1) / mean; nullopt if n < 2 or mean == 0
};
MeanCv ComputeMeanCv(std::span<const double> xs);

struct Pearson {
  size_t n = 0;
  std::optional<double> r;  // nullopt if n < 2 or either variance is 0
  std::optional<double> p;  // two-sided, t with n-2 degrees of freedom; nullopt if n < 3 or r undefined
};
Pearson ComputePearson(std::span<const double> x, std::span<const double> y);
// Regularized incomplete beta I_x(a, b) (continued fraction, Lentz).
double RegularizedIncompleteBeta(double a, double b, double x);

// --- the long-term average per application-hour (avg_fs) ------------------
struct BaselineFs {
  std::string fs;
  uint64_t app_hours = 0;  // application windows averaged over (Table 1's "App hours")
  OpSums avg;              // per op: mean per application window (nullopt: never carried)
};
struct Baseline {
  std::string name;     // stored baselines: a name (default FROM..TO); "" for the fallback
  std::string source;   // where it came from, for people: "file PATH", "mysql lassi_baseline", "analysed range"
  bool fallback = false;  // true: no stored baseline, averaged over the analysed range (+ --history)
  int64_t computed_at_ns = 0, from_ns = 0, to_ns = 0, window_ns = 0;
  std::vector<BaselineFs> fs;
  const BaselineFs* Find(std::string_view fs_name) const;
};

// --- accumulation and the full computation --------------------------------
struct Options {
  double alpha = 2.0;
  int64_t window_ns = 3600LL * 1000000000;
  // Windows with start in [from, to) are reported; averages use windows in
  // [history_from, to) (history_from <= from).
  int64_t from_ns = 0, to_ns = 0, history_from_ns = 0;
  // avg_fs per file system; nullopt: computed from [history_from, to) and
  // flagged as the fallback. A file system missing from it falls back alone.
  std::optional<Baseline> baseline;
  // Without the job's run from the scheduler, silent windows between two of
  // its job_stats windows count as zeros only up to this long a silence;
  // a longer one ends the run (job ids are reused, e.g. by a simulator run
  // day after day, and a run without scheduler data has no other end).
  int64_t max_silent_ns = 6 * 3600LL * 1000000000;
};

// The options a range is analysed with, by `iosonar lassi` and `report`
// (--day/--from/--to, --window, --history) and by `serve`'s admin page (a
// day, no history), so both give one reading: windows starting in
// [from, to), and without a stored baseline the averages over
// [from - history, to).
inline Options RangeOptions(int64_t from_ns, int64_t to_ns, int64_t window_ns, int64_t history_ns = 0) {
  Options o;
  o.window_ns = window_ns;
  o.from_ns = from_ns;
  o.to_ns = to_ns;
  o.history_from_ns = from_ns - history_ns;
  return o;
}

struct WindowRow {
  std::string fs;
  std::string target;  // "" for the file system; the application (command line) or the job id
  int64_t start_ns = 0;
  OpSums x;
  double risk_oss = 0, risk_mds = 0;
  std::optional<double> read_kb_ops, write_kb_ops;
  std::vector<std::string> jobs;  // applications: the jobs active in the window
  std::vector<std::string> apps;  // file systems (basis "applications"): the applications summed
  bool server_basis = false;      // file systems without job_stats: risk against the server-window mean
};

struct OpStat {
  std::string op;
  MeanCv stat;
};
struct FsStats {
  std::string fs;
  size_t windows = 0;        // windows the statistics are over (application-hours, or server windows)
  bool per_app_hour = true;  // false: no job_stats, over the file system's server windows
  std::vector<OpStat> ops;   // Tables 1-2: per-op mean and c_v per application-hour in [from, to)
};

// An application's runs (LASSi groups runs by their exact command, §3.3 and
// §4.2): the averages of per-run values, never the metrics of summed runs.
struct RunProfile {
  size_t runs = 0;         // runs with a window in the span
  size_t run_windows = 0;  // run-hours (windows of those runs)
  double risk_oss = 0, risk_mds = 0;  // mean over runs of the run's risk summed over its windows
  // Mean per run-hour (per window of one run) of the ops.
  double read_kb = 0, write_kb = 0, read_ops = 0, write_ops = 0, meta_ops = 0;
  // Mean over runs of the run's ops quality (eqs. 5-6 on its summed ops); nullopt: no run had it defined.
  std::optional<double> read_kb_ops, write_kb_ops;
};

struct TargetTotal {  // per job / application over [from, to)
  std::string fs, target, app;
  double risk_oss = 0, risk_mds = 0;  // sums over windows (Table 3); an application's: the sum of its runs' risks
  double read_kb = 0, write_kb = 0, read_ops = 0, write_ops = 0, meta_ops = 0;
  size_t windows = 0;
  int64_t first_ns = 0, last_ns = 0;
  RunProfile per_run;  // applications: their runs in [from, to)
};

// The long-term profile of an application over the history [history_from, to).
struct AppProfile {
  std::string fs, app;
  RunProfile per_run;
};

struct LassiResult {
  Options opt;
  Baseline baseline;  // the avg_fs used (opt.baseline, or the fallback computed here)
  std::vector<std::string> fallback_fs;  // file systems the stored baseline did not cover (range average used)
  std::vector<WindowRow> fs_windows;   // sorted by fs, start
  std::vector<WindowRow> app_windows;  // by fs, app, start
  std::vector<WindowRow> job_windows;  // by fs, job, start
  std::vector<FsStats> fs_stats;
  std::vector<TargetTotal> apps, jobs;
  std::vector<AppProfile> app_profiles;  // by fs, app: per-run averages over [history_from, to)
  uint64_t records = 0, records_reset = 0;
};

// Feed records, then Compute(). Values are the deltas of one record.
class Accumulator {
 public:
  explicit Accumulator(Options opt) : opt_(opt) {}
  // Server-side records (iosonar.oss or iosonar.mds): only the known ops are set.
  void AddServer(std::string_view fs, int64_t t_ns, const OpSums& v);
  // job_stats records; app = the job's exact command line ("" = unknown: the job id stands in).
  void AddJob(std::string_view fs, std::string_view job, std::string_view app, int64_t t_ns, const OpSums& v);
  // The same with pre-resolved series ids (the fast path: resolve once per
  // file system / job, then add by id). Records should come roughly in time
  // order: each series remembers its current window.
  uint32_t ServerSeries(std::string_view fs);
  uint32_t JobSeries(std::string_view fs, std::string_view job, std::string_view app);
  void AddServerAt(uint32_t series, int64_t t_ns, const OpSums& v);
  void AddJobAt(uint32_t job_series, int64_t t_ns, const OpSums& v);
  void CountReset() { ++resets_; }
  // The job's run [start, end) when known (job database, iosonar.job): its
  // application-hours span the run, not only the windows with records.
  void SetJobRun(std::string_view job, int64_t start_ns, int64_t end_ns);
  // Adds everything other accumulated (same options) into this one.
  void Merge(const Accumulator& other);
  LassiResult Compute() const;
  // avg_fs over the run windows of [history_from, to) (what
  // `iosonar lassi baseline` stores); name/source/computed_at left to the caller.
  Baseline ComputeBaseline() const;
  const Options& options() const { return opt_; }

 private:
  uint32_t Intern(std::string_view key);
  static uint64_t Pack(uint32_t id, int64_t w) { return uint64_t{id} << 32 | static_cast<uint32_t>(w); }
  int64_t WindowIndex(int64_t t_ns) const;
  Options opt_;
  std::vector<std::string> names_;                 // interned keys: "fs", "fs\x1fjob", "fs\x1fapp"
  std::unordered_map<std::string, uint32_t> ids_;
  std::string buf_;
  std::unordered_map<uint64_t, OpSums> fs_, job_;  // (id, window index) -> sums
  std::vector<uint32_t> job_app_;                  // job id -> app id (UINT32_MAX: not a job)
  struct Cursor {  // a series' current window
    int64_t w = INT64_MIN;
    OpSums* sums = nullptr;
  };
  std::vector<Cursor> fs_cur_, job_cur_;  // by interned id
  OpSums& Slot(std::unordered_map<uint64_t, OpSums>& m, std::vector<Cursor>& cur, uint32_t id, int64_t w);
  // Compute()'s steps: the windows of each (fs, target) series in window
  // order, and the rows (and totals) of a kind of series from them.
  using Grouped = std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, const OpSums*>>>;
  Grouped GroupSeries(const std::unordered_map<uint64_t, OpSums>& m) const;
  struct Filled;  // the job and application windows with the runs' silent windows as zeros
  Filled FillRuns() const;
  Baseline BaselineOf(const Filled& f) const;
  uint64_t records_ = 0, resets_ = 0;
  std::map<std::string, std::pair<int64_t, int64_t>, std::less<>> runs_;  // job -> [start, end)
};

// JSON of the result (for --json, Redis, the report); its "baseline" says which avg_fs was used.
std::string ResultToJson(const LassiResult& r, bool pretty);
// The baseline as a JSON object (fallback_fs: the result's file systems it did not cover).
void BaselineJson(JsonWriter& w, const Baseline& b, const std::vector<std::string>* fallback_fs);
// Its "fs" key and array (each file system's app_hours and avg per op; an op
// never carried is null, or left out with omit_missing as the baseline files
// have it). BaselineJson and BaselineLine write it.
void BaselineFsJson(JsonWriter& w, const std::vector<BaselineFs>& fs, bool omit_missing);
// For people: "'NAME' from SOURCE: N run windows of 3600 s over FROM - TO, computed T",
// or "the analysed range (no stored baseline)".
std::string BaselineDescription(const Baseline& b);
// The avg_fs baseline of a run as part of a Redis cache key: a stored one
// "stored:NAME@COMPUTED_AT", else "history:HISTORY_FROM_NS" (the averages of
// [history_from, to)).
std::string BaselineTag(const Options& o);
// What to shout when the risk is not against a stored long-term baseline ("" when it is).
std::string BaselineWarning(const LassiResult& r);

}  // namespace iosonar::lassi
