// A parsed Darshan log (darshan_log.h) as iosonar records (docs/darshan.md):
//  - DXT_POSIX / DXT_MPIIO segments: one iosonar.trace record per op (rank,
//    host, op, layer posix/mpiio, offset, size, start/end), used for a file's
//    reads and writes when the DXT segments account for every op the
//    file's counters count (else the counters are used: DXT ran out of
//    memory);
//  - POSIX, MPI-IO and STDIO counters otherwise: aggregate records
//    (io.aggregated) per file, rank, op and Darshan request-size bin
//    (io.count the bin's ops, io.size a size inside the bin, io.bytes the
//    file's bytes shared over its bins, io.ops_sequential the consecutive
//    ops), and per metadata op (open, stat, seek, sync, mmap, rename, flush);
//    a shared file's record (rank -1, reduced over all ranks) is spread over
//    the job's nprocs ranks (at most kMaxSpreadRanks: records grow with
//    ranks x files): the fastest and slowest rank get their bytes,
//    the others the rest in equal parts, ops in proportion, so the I/O mode
//    sees N ranks on one file;
//  - the job: one iosonar.job end record (uid, nprocs, start/end, executable).
// event.stream is a hash of the log's job id, start time, uid, nprocs and of
// the job id and cluster it is stored under; event.seq counts the records
// in a fixed order: importing the same log twice stores it once.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/darshan/darshan_log.h"

namespace iosonar::darshan {

// Ranks a shared file's record is spread over at most.
inline constexpr int64_t kMaxSpreadRanks = 4096;

struct ImportOptions {
  std::string job_id;   // "" = the log's job id
  std::string cluster = "darshan";
  std::string host;     // host.name when DXT names none ("" = "darshan")
};

struct ModuleTotals {
  uint64_t reads = 0, writes = 0, bytes_read = 0, bytes_written = 0;
  uint64_t records = 0;  // Darshan records of the module
};

struct ImportReport {
  std::string job_id;
  int64_t stream = 0;
  uint64_t lines = 0;          // records emitted
  uint64_t dxt_segments = 0;   // of them, one op each from DXT
  uint64_t dxt_files_incomplete = 0;  // files whose DXT missed ops: counters used
  std::map<std::string, ModuleTotals> totals;  // "POSIX", "MPI-IO", "STDIO": from the counters
};

// One '\n'-terminated JSON line; a non-ok status stops the import.
using LineFn = std::function<Status(std::string_view line)>;

// Emits every record of the log through emit. The lines pass the schema
// (the collector's validation) as they are.
Status ImportLog(const Log& log, const ImportOptions& opt, const LineFn& emit, ImportReport* report);

// bad-ost input (analysis-jobs/badost): CSV rows "file,bytes,seconds,osts"
// for the files with LUSTRE stripe information and POSIX bytes and I/O time
// (header line included when header is true).
std::string BadOstCsv(const Log& log, bool header);

}  // namespace iosonar::darshan
