// A reader of Darshan logs (format 3.10, 3.20, 3.21 and 3.41), written from
// the format's description (docs/darshan.md): an uncompressed header (version
// string, magic number that also tells the byte order, compression type,
// partial-module flags, the offset and length of every region), then
// zlib-compressed regions: the job record (uid, nprocs, times, job id,
// metadata, executable and mount table), the name records (record id ->
// file name) and one region per module holding fixed-size records of that
// module's version (LUSTRE and DXT records carry a variable tail).
//
// Read: POSIX (module versions 2-4), MPI-IO (1-3), STDIO (1-2), LUSTRE
// (1-2), DXT_POSIX (1-2), DXT_MPIIO (1-3). Counter records come back in the
// layout of the newest module version (older layouts are mapped onto it,
// counters the older version lacked are -1). Every other module with data is
// listed in `modules` with why it was not read; a module whose last record is
// cut short keeps the whole records before it and says so.
//
// Bad input (wrong magic, an unknown log version, a region outside the file,
// a zlib stream that does not inflate, a record count beyond the region) is
// an error "offset N: what", N the byte offset in the file (for data inside a
// compressed region: the region's offset, and the offset inside the inflated
// data). No input makes it read outside its buffers or allocate more than
// kMaxInflatedBytes per region. Pure functions, thread-safe.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"

namespace iosonar::darshan {

// Inflated bytes one region may have at most (a larger one is refused).
inline constexpr uint64_t kMaxInflatedBytes = uint64_t{4} << 30;

// The modules this reader knows by name, numbered as in format 3.41.
enum ModuleId : int {
  kNull = 0, kPosix = 1, kMpiio = 2, kH5F = 3, kH5D = 4, kPnetcdfFile = 5, kPnetcdfVar = 6, kBgq = 7,
  kLustre = 8, kStdio = 9, kDxtPosix = 10, kDxtMpiio = 11, kMdhim = 12, kApxc = 13, kApmpi = 14,
  kHeatmap = 15, kDfs = 16, kDaos = 17,
  kModuleSlots = 64
};
const char* ModuleName(int id);  // "POSIX", "MPI-IO", ...; "module#N" past the known ones

// ---- counter indices of the newest module versions ----
namespace posix {
enum : int {
  kOpens = 0, kFilenos, kDups, kReads, kWrites, kSeeks, kStats, kMmaps, kFsyncs, kFdsyncs, kRenameSources,
  kRenameTargets, kRenamedFrom, kMode, kBytesRead, kBytesWritten, kMaxByteRead, kMaxByteWritten, kConsecReads,
  kConsecWrites, kSeqReads, kSeqWrites, kRwSwitches, kMemNotAligned, kMemAlignment, kFileNotAligned,
  kFileAlignment, kMaxReadTimeSize, kMaxWriteTimeSize, kSizeRead0 /* 10 bins */, kSizeWrite0 = kSizeRead0 + 10,
  kStride1Stride = kSizeWrite0 + 10, kStride1Count = kStride1Stride + 4, kAccess1Access = kStride1Count + 4,
  kAccess1Count = kAccess1Access + 4, kFastestRank = kAccess1Count + 4, kFastestRankBytes, kSlowestRank,
  kSlowestRankBytes, kNumCounters
};
enum : int {
  kFOpenStart = 0, kFReadStart, kFWriteStart, kFCloseStart, kFOpenEnd, kFReadEnd, kFWriteEnd, kFCloseEnd,
  kFReadTime, kFWriteTime, kFMetaTime, kFMaxReadTime, kFMaxWriteTime, kFFastestRankTime, kFSlowestRankTime,
  kFVarianceRankTime, kFVarianceRankBytes, kNumFCounters
};
}  // namespace posix
namespace mpiio {
enum : int {
  kIndepOpens = 0, kCollOpens, kIndepReads, kIndepWrites, kCollReads, kCollWrites, kSplitReads, kSplitWrites,
  kNbReads, kNbWrites, kSyncs, kHints, kViews, kMode, kBytesRead, kBytesWritten, kRwSwitches, kMaxReadTimeSize,
  kMaxWriteTimeSize, kSizeReadAgg0 /* 10 bins */, kSizeWriteAgg0 = kSizeReadAgg0 + 10,
  kAccess1Access = kSizeWriteAgg0 + 10, kAccess1Count = kAccess1Access + 4, kFastestRank = kAccess1Count + 4,
  kFastestRankBytes, kSlowestRank, kSlowestRankBytes, kNumCounters
};
// The same F counters as POSIX's.
}  // namespace mpiio
namespace stdio {
enum : int {
  kOpens = 0, kFdopens, kReads, kWrites, kSeeks, kFlushes, kBytesWritten, kBytesRead, kMaxByteRead,
  kMaxByteWritten, kFastestRank, kFastestRankBytes, kSlowestRank, kSlowestRankBytes, kNumCounters
};
enum : int {
  kFMetaTime = 0, kFWriteTime, kFReadTime, kFOpenStart, kFCloseStart, kFWriteStart, kFReadStart, kFOpenEnd,
  kFCloseEnd, kFWriteEnd, kFReadEnd, kFFastestRankTime, kFSlowestRankTime, kFVarianceRankTime,
  kFVarianceRankBytes, kNumFCounters
};
}  // namespace stdio

struct CounterRecord {
  uint64_t id = 0;
  int64_t rank = 0;  // -1: a shared file's record, reduced over all ranks
  std::vector<int64_t> counters;
  std::vector<double> fcounters;  // timestamps in seconds since the job's start
};

struct LustreComponent {
  int64_t stripe_size = 0, stripe_count = 0, stripe_pattern = -1, flags = -1, ext_start = 0, ext_end = -1,
          mirror_id = -1;
  std::string pool;
};
struct LustreRecord {
  uint64_t id = 0;
  int64_t rank = 0;
  std::vector<LustreComponent> components;
  std::vector<int64_t> osts;  // OST indices, stripe order, components in turn
};

struct DxtSegment {
  int64_t offset = 0;  // -1: unknown (DXT_MPIIO version 1)
  int64_t length = 0;
  double start = 0, end = 0;  // seconds since the job's start
  uint64_t thread = 0;
  bool write = false;
};
struct DxtRecord {
  uint64_t id = 0;
  int64_t rank = 0;
  std::string hostname;
  std::vector<DxtSegment> segments;  // writes, then reads
};

struct ModuleInfo {
  int id = 0;               // ModuleId numbering (3.41)
  std::string name;
  uint32_t version = 0;
  uint64_t offset = 0, length = 0;  // compressed region in the file
  bool partial = false;     // Darshan ran out of memory for this module's records at run time
  bool read = false;        // its records are in Log
  uint64_t records = 0;     // records read
  std::string note;         // why it was not read, or what was cut ("" when whole)
};

struct Mount {
  std::string fs_type, path;
};

struct Job {
  int64_t uid = 0, nprocs = 0, jobid = 0;
  int64_t start_sec = 0, start_nsec = 0, end_sec = 0, end_nsec = 0;
  std::string metadata;  // "key=value" lines
  std::string exe;       // the command line
  std::vector<Mount> mounts;
};

struct Log {
  std::string version;  // "3.41"
  bool swapped = false;  // written on a host of the other byte order
  int compression = 0;   // 0 zlib, 2 none
  Job job;
  std::unordered_map<uint64_t, std::string> names;
  std::vector<ModuleInfo> modules;  // every module with a region, in id order
  std::vector<CounterRecord> posix, mpiio, stdio;
  std::vector<LustreRecord> lustre;
  std::vector<DxtRecord> dxt_posix, dxt_mpiio;

  const std::string& Name(uint64_t id) const;  // "" when the log has no name for it
};

// Parses a whole log held in memory.
Result<Log> ParseLog(std::span<const uint8_t> bytes);
// Reads and parses the file; errors are ParseLog's (the caller names the file).
Result<Log> ReadLog(const std::string& path);

}  // namespace iosonar::darshan
