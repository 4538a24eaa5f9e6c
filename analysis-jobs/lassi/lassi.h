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
//   avg(x) for the file system: the mean of x over the file system's windows
//   in the history; for applications and jobs: the mean of x over the
//   (application or job) windows on that file system in the history in which
//   the application or job was active (LASSi's "per application hour").
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

// --- accumulation and the full computation --------------------------------
struct Options {
  double alpha = 2.0;
  int64_t window_ns = 3600LL * 1000000000;
  // Windows with start in [from, to) are reported; averages use windows in
  // [history_from, to) (history_from <= from).
  int64_t from_ns = 0, to_ns = 0, history_from_ns = 0;
};

struct WindowRow {
  std::string fs;
  std::string target;  // "" for the file system; the application (command line) or the job id
  int64_t start_ns = 0;
  OpSums x;
  double risk_oss = 0, risk_mds = 0;
  std::optional<double> read_kb_ops, write_kb_ops;
  std::vector<std::string> jobs;  // applications: the jobs active in the window
};

struct OpStat {
  std::string op;
  MeanCv stat;
};
struct FsStats {
  std::string fs;
  size_t windows = 0;
  std::vector<OpStat> ops;  // Tables 1-2: per-op mean and c_v over the fs windows in [from, to)
};

struct TargetTotal {  // per job / application over [from, to)
  std::string fs, target, app;
  double risk_oss = 0, risk_mds = 0;  // sums over windows (Table 3)
  double read_kb = 0, write_kb = 0, read_ops = 0, write_ops = 0, meta_ops = 0;
  size_t windows = 0;
  int64_t first_ns = 0, last_ns = 0;
};

struct LassiResult {
  Options opt;
  std::vector<WindowRow> fs_windows;   // sorted by fs, start
  std::vector<WindowRow> app_windows;  // by fs, app, start
  std::vector<WindowRow> job_windows;  // by fs, job, start
  std::vector<FsStats> fs_stats;
  std::vector<TargetTotal> apps, jobs;
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
  // Adds everything other accumulated (same options) into this one.
  void Merge(const Accumulator& other);
  LassiResult Compute() const;
  const Options& options() const { return opt_; }

 private:
  uint32_t Intern(std::string_view key);
  static uint64_t Pack(uint32_t id, int64_t w) { return uint64_t{id} << 32 | static_cast<uint32_t>(w); }
  int64_t WindowIndex(int64_t t_ns) const;
  Options opt_;
  std::vector<std::string> names_;                 // interned keys: "fs", "fs\x1fjob", "fs\x1fapp"
  std::unordered_map<std::string, uint32_t> ids_;
  std::string buf_;
  std::unordered_map<uint64_t, OpSums> fs_, job_, app_;  // (id, window index) -> sums
  std::vector<uint32_t> job_app_;                        // job id -> app id (UINT32_MAX: not a job)
  std::unordered_map<uint64_t, std::vector<uint32_t>> app_jobs_;  // (app id, window) -> job ids
  struct Cursor {  // a series' current window
    int64_t w = INT64_MIN;
    OpSums* sums = nullptr;
  };
  std::vector<Cursor> fs_cur_, job_cur_, app_cur_;  // by interned id
  OpSums& Slot(std::unordered_map<uint64_t, OpSums>& m, std::vector<Cursor>& cur, uint32_t id, int64_t w);
  // Compute()'s steps: the windows of each (fs, target) series in window
  // order, and the rows (and totals) of a kind of series from them.
  using Grouped = std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, const OpSums*>>>;
  Grouped GroupSeries(const std::unordered_map<uint64_t, OpSums>& m) const;
  void EmitRows(const Grouped& grouped, int64_t wfrom, std::vector<WindowRow>* rows, std::vector<TargetTotal>* totals,
                bool per_fs_avg, bool is_app) const;
  uint64_t records_ = 0, resets_ = 0;
};

// JSON of the result (for --json, Redis, the report).
std::string ResultToJson(const LassiResult& r, bool pretty);

}  // namespace iosonar::lassi
