// File-system health from the client's view, as TOKIO reads it: `lfs df`
// (OST/MDT fullness) and `lctl dl -t` (which OSS serves which OST, so a
// failover shows up as an OSS serving more OSTs than its peers).
//
// The parsers are pure functions over text: no I/O, no global state, safe to
// call from any thread. Bad lines never stop them: each one is counted as a
// warning (the first kMaxWarningTexts keep their text, "line N: what") and
// the rest of the input is parsed. Both accept the plain command output and
// NERSC's cron format, where each snapshot starts with a "BEGIN <epoch>" line.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iosonar::health {

inline constexpr size_t kMaxWarningTexts = 20;

struct Warnings {
  uint64_t count = 0;
  std::vector<std::string> texts;  // the first kMaxWarningTexts
  void Add(size_t line, std::string what);
};

// ---- lfs df -----------------------------------------------------------------

// One OST or MDT line: "snx11035-OST0006_UUID 90767651352 74730308892 15098973004 83% /scratch2[OST:6]".
struct DfTarget {
  std::string fs;      // "snx11035"
  std::string target;  // "snx11035-OST0006"
  std::string kind;    // "ost" or "mdt"
  std::string mount;   // "/scratch2"
  int64_t index = -1;  // 6 (from [OST:6]); -1 if not given
  bool active = true;  // false for "... : inactive device" lines (no numbers)
  bool inodes = false; // the block was `lfs df -i`: the numbers count inodes, not KiB
  int64_t total = 0, used = 0, avail = 0;  // KiB (or inodes)
  double used_pct() const { return total > 0 ? 100.0 * static_cast<double>(used) / static_cast<double>(total) : 0; }
};

struct DfSnapshot {
  int64_t epoch = 0;  // from "BEGIN <epoch>", 0 for plain output
  std::vector<DfTarget> targets;
};

struct LfsDf {
  std::vector<DfSnapshot> snapshots;  // plain output gives one
  Warnings warnings;
};

LfsDf ParseLfsDf(std::string_view text);

// pytokio's summarize_fullness over one file system's active OSTs: the
// average is total used / total capacity (not the mean of percentages).
struct FsFullness {
  std::string fs, mount;
  bool inodes = false;
  int64_t ost_count = 0, mdt_count = 0, inactive_count = 0;
  int64_t total = 0, used = 0, avail = 0;  // over the OSTs, KiB (or inodes)
  double min_pct = 0, max_pct = 0, avg_pct = 0;
  std::string min_target, max_target;
};
// One entry per (file system, KiB or inodes) in order of first appearance.
std::vector<FsFullness> SummarizeFullness(const DfSnapshot& snap);

// ---- lctl dl -t --------------------------------------------------------------

// One device line: "  9 UP osc snx11035-OST0002-osc-ffff885f81a64000 8dbd... 5 10.100.101.7@o2ib2".
struct DlDevice {
  int64_t idx = 0;
  std::string status;  // UP, ST, IN, ...
  std::string role;    // osc, mdc, mgc, lov, lmv, ...
  std::string name, uuid;
  int64_t refcnt = 0;
  std::string nid;     // "10.100.101.7@o2ib2" ("" if the line has none)
  std::string ip;      // "10.100.101.7" (the NID before '@')
  std::string fs;      // "snx11035" for osc/mdc/lov/lmv names, "" otherwise
  std::string target;  // "snx11035-OST0002" for osc/mdc, "" otherwise
};

struct DlSnapshot {
  int64_t epoch = 0;
  std::vector<DlDevice> devices;
};

struct LctlDl {
  std::vector<DlSnapshot> snapshots;
  Warnings warnings;
};

LctlDl ParseLctlDlT(std::string_view text);

// TOKIO's LfsOstMap.get_failovers: per file system, count the OSTs (osc
// devices) each OSS address serves; the mode of those counts is "normal"
// (ties go to the smaller count); an OSS serving more than the mode is
// overloaded, by served/mode. pytokio lists every OSS whose count differs
// from the mode; `abnormal` keeps that, `overloaded` is the > mode part.
struct OssLoad {
  std::string ip;
  std::vector<std::string> targets;  // in device order
  int64_t ost_count() const { return static_cast<int64_t>(targets.size()); }
  bool abnormal = false, overloaded = false;
  double overload_factor = 1.0;  // ost_count / mode
};

struct FsFailover {
  std::string fs;
  int64_t ost_count = 0;
  int64_t mode = 0;                // OSTs per OSS, the most common count
  int64_t not_up = 0;              // osc devices whose status is not UP
  std::vector<OssLoad> oss;        // every OSS, in order of first appearance
  int64_t overloaded_oss() const;
  int64_t overloaded_ost() const;  // OSTs served by overloaded OSSes
};
std::vector<FsFailover> GetFailovers(const DlSnapshot& snap);

// ---- reading the sources -------------------------------------------------------

// A file's whole text; files ending in ".gz" are decompressed (zlib).
// Returns false with *error set ("FILE: why") on failure.
bool ReadSource(const std::string& path, std::string* out, std::string* error);
// Runs argv (PATH lookup, no shell) and returns its stdout; false with
// *error set if it cannot be started ("lfs: command not found"), is killed,
// exits non-zero, or gives no output for timeout_ms (then it is killed: `lfs
// df` hangs while a server is unreachable). timeout_ms <= 0: no limit.
bool RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* error, int timeout_ms = 30000);

}  // namespace iosonar::health
