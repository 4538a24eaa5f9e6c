// LMT (Lustre Monitoring Tool) database -> iosonar.oss / iosonar.mds records.
// LMT keeps monotonically increasing counters per OST (READ_BYTES,
// WRITE_BYTES) and per MDS op (MDS_OPS_DATA.SAMPLES) at each TIMESTAMP_INFO
// step; a record carries the delta between two consecutive readings of one
// target, stamped at the later reading, with lustre.elapsed_ns. A counter
// that went backwards (a reset) gives a record with lustre.reset = true and no
// deltas: unknown, never negative. LMT has no OST op counts, so oss.read_ops
// and oss.write_ops are absent (unknown, not zero).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/base/status.h"

namespace iosonar::lassi {

struct LmtImportStats {
  uint64_t oss_records = 0, mds_records = 0, resets = 0, timestamps = 0;
  std::string fs;
  int64_t first_ns = 0, last_ns = 0;
};

// "-08:00", "+05:30" -> seconds east of UTC; nullopt unless [+-]HH:MM with
// HH <= 14 and MM <= 59.
std::optional<int64_t> ParseUtcOffset(const std::string& text);

// utc_offset_s: LMT stores local time; UTC = local - offset (e.g. -8 h for
// NERSC's Pacific time gives 2018-01-28 00:00:00 -> 08:00:00Z).
// emit gets one JSON line (no newline) per record.
Result<LmtImportStats> ImportLmt(const std::string& sqlite_path, int64_t utc_offset_s,
                                 const std::function<Status(const std::string&)>& emit);

// "file system FS: N readings FIRST to LAST; ... counter resets (unknown)\n".
std::string ImportSummary(const LmtImportStats& st);

}  // namespace iosonar::lassi
