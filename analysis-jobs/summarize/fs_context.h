// The file system around a job, for `iosonar summarize-job`: TOKIO's
// summarize_job fs_* columns (from LMT there; from iosonar.oss/iosonar.mds
// here) and fshealth_* columns (from lfs df / lctl dl -t snapshots there;
// from iosonar.health here), plus which file system the job used.
//
// Definitions (TOKIO's, restated for iosonar's records):
//  - A server record covers [@timestamp - lustre.elapsed_ns, @timestamp)
//    (the exporter stamps the end of the interval). The job's server window
//    is every record whose interval overlaps [start, end): like TOKIO, which
//    adds one LMT step after the job's end, the intervals at both edges count
//    whole.
//  - Intervals: the median elapsed of the window's records is the step;
//    records are put on a grid of that step anchored at the first record, so
//    targets sampled by different servers a few ms apart share a row. Rows:
//    the grid cells between the first and last record, at least
//    round(window / step). A cell is one (row, target).
//  - fs_tot_bytes_{read,written}: bytes over all the window's records;
//    fs_{ave,max,min}_bytes_*_per_sec: mean / largest / smallest over rows of
//    the file system's rate (the sum over its OSTs' bytes/s, a missing cell
//    counting 0); _gibs_ the same in GiB. fs_frac_zero_{read,written}: cells
//    with no bytes that way / all cells; fs_frac_missing: cells without a
//    record (or with lustre.reset, whose deltas are unknown) / all cells.
//  - fs_tot_<op>_ops: the op's count over the window's iosonar.mds records;
//    fs_{ave,max,min}_<op>_ops_per_sec: mean / largest / smallest of one MDT's
//    rate over the present cells (TOKIO: the frame's mean of means, max, min).
//    Ops: open close mknod link unlink mkdir rmdir rename getxattr statfs
//    setattr getattr.
//  - fshealth_ost_*: the iosonar.health snapshot immediately before the job
//    start (pytokio: "don't find one that overlaps it"), within 1 day.
//    fullness from its fs and target records (bytes; _kib = bytes / 1024),
//    failures from its failover record. _lead_secs = start - snapshot;
//    _next_timestamp: the next snapshot's time if there is one (pytokio wrote
//    the snapshot time + 1 s); _overloaded_pct = overloaded OSTs / OSTs x 100;
//    _avg_overloaded_ost_per_oss = overloaded OSTs / overloaded OSSes (0 when
//    none); _avg_overloaded_overload_factor = that / the OSS mode (1 when none).
//  - Not available from Lustre's own counters, so not emitted: fs_*_cpu (LMT
//    samples server CPU load; iosonar's exporters do not).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::analysis {

struct RateStats {
  double tot = 0, ave = 0, max = 0, min = 0;
};

// The health snapshot used: the latest before the requested time, and the next one.
struct SnapshotAt {
  int64_t requested_ns = 0, actual_ns = 0;
  std::optional<int64_t> next_ns;
};

struct FullnessAt : SnapshotAt {
  int64_t ost_count = 0;
  double avg_full_kib = 0, avg_full_pct = 0;
  std::string least_full_name, most_full_name;  // OST0006 (no file system prefix)
  int64_t least_full_id = -1, most_full_id = -1;
  double least_full_kib = 0, most_full_kib = 0, least_full_pct = 0, most_full_pct = 0;
};

struct FailuresAt : SnapshotAt {
  int64_t ost_count = 0, mode = 0, overloaded_oss = 0, overloaded_ost = 0;
};

struct FsContext {
  std::string fs;
  int64_t start_ns = 0, end_ns = 0;
  // iosonar.oss
  uint64_t oss_records = 0;
  int64_t step_ns = 0;
  size_t rows = 0, osts = 0;
  RateStats read, written;  // bytes
  double frac_zero_read = 0, frac_zero_written = 0, frac_missing = 0;
  // iosonar.mds: (TOKIO op name, stats of ops)
  uint64_t mds_records = 0;
  std::vector<std::pair<std::string, RateStats>> md_ops;
  std::optional<FullnessAt> fullness;
  std::optional<FailuresAt> failures;

  const RateStats* Md(const std::string& op) const;
};

// TOKIO's metadata op names, in column order.
const std::vector<std::string>& TokioMdOps();

// The file system records of `fs` around [start_ns, end_ns). A file system
// without any server or health records gives an FsContext with zero records
// (not an error); store failures are errors.
Result<FsContext> ReadFsContext(Store& store, const std::string& fs, int64_t start_ns, int64_t end_ns);

// Mount point -> file system name, from iosonar.health records (health.mount,
// lustre.fs) stamped within [from_ns, to_ns).
Result<std::vector<std::pair<std::string, std::string>>> ReadMounts(Store& store, int64_t from_ns, int64_t to_ns);

// The mount of `path`: the longest mount point that is path itself or a
// directory above it ("" if none).
std::string MountOf(const std::string& path, const std::vector<std::pair<std::string, std::string>>& mounts);

// File systems with iosonar.oss records in [from_ns, to_ns).
Result<std::vector<std::string>> FileSystemsWithServerRecords(Store& store, int64_t from_ns, int64_t to_ns);

}  // namespace iosonar::analysis
