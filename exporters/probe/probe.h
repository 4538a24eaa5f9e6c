// The I/O latency probe (Kunkel & Betke, "Tracking user-perceived I/O
// slowdown via probing", §3.1): one process that, once per interval, times
// six small operations one after another on the file system under DIR —
//   write       1 MiB at a random 1 MiB-aligned offset of a large pre-created file
//   read        1 MiB at another random aligned offset of that file
//   stat        the oldest file of a pool of small (3901-byte) files
//   small_read  open + read + close of that oldest file
//   delete      unlink of that oldest file
//   create      open(O_CREAT|O_EXCL) + write 3901 bytes + close of a new newest file
// so the pool keeps its size. Probes never overlap (the caller runs them one
// after another) and memory is bounded: one 1 MiB aligned buffer, reused.
//
// Layout under DIR (made by Precreate):
//   iosonar-probe.dat           the large file
//   iosonar-probe-pool/NNN...   the pool, 20-digit sequence numbers: the
//                               oldest file is the smallest number, so the
//                               pool's state survives restarts without a
//                               state file.
// Not thread-safe: one Prober per thread.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace iosonar::probe {

inline constexpr int64_t kBlock = int64_t{1} << 20;  // data op size and alignment
inline constexpr int64_t kSmallFile = 3901;           // IO-500 MDHard / MDWorkbench file size

// The paper (§3.1, §4.1) defeats the client's caches: the large file
// exceeds the client's memory (200 GB - 1.3 TB there) and the pool holds
// 100k-200k small files; and still (§4.6) "the 200 GB files still lead to
// cache hits". So by default the data ops bypass the page cache: O_DIRECT
// where the file system accepts it, else each write is followed by fdatasync
// (inside the timing: the write reaches storage) and each data op's range is
// dropped from the page cache with posix_fadvise(POSIX_FADV_DONTNEED) before
// it (outside the timing); and the large file is made several times this
// client's memory. A file not larger than the memory is refused without a
// bypass (--cache-bypass none) unless --allow-small-file (tests, demos).
enum class Bypass {
  kAuto,     // O_DIRECT, else fsync + fadvise (the default)
  kDirect,   // O_DIRECT or refuse to start (--direct)
  kFadvise,  // fdatasync after writes, POSIX_FADV_DONTNEED before data ops
  kNone,     // buffered (the page cache may answer)
};
// What a running prober uses: "o_direct", "fsync+fadvise" or "none" (probe.cache_bypass).
const char* BypassName(Bypass b);
struct Config {
  std::string dir;
  int64_t file_size = 0;        // large file (precreate); a multiple of kBlock; 0 = AutoFileSize()
  int64_t pool_size = 100000;   // small files (precreate); the paper's pools: 100k-200k
  bool direct = false;          // --direct: the same as bypass = kDirect
  Bypass bypass = Bypass::kAuto;
  bool allow_small_file = false;  // accept a large file smaller than the client's memory
  int64_t client_memory = 0;    // bytes; 0 = ClientMemoryBytes()
  uint64_t seed = 0;            // 0: DeriveSeed(host, pid, start time)
};

// MemTotal of /proc/meminfo in bytes (0 if unreadable).
int64_t ClientMemoryBytes();
// The default large-file size: kFileMemoryFactor times the client's memory
// rounded up to a GiB, plus 1 GiB (one times the memory warms into the page
// cache over days, §4.6).
inline constexpr int64_t kFileMemoryFactor = 4;
int64_t AutoFileSize(int64_t client_memory);
// Ok, or Invalid saying why a large file of file_size bytes lets the page
// cache answer the reads (smaller than the client's memory without --direct)
// and what to do about it.
Status CheckDefeatsCache(const Config& cfg, int64_t file_size);

std::string DataPath(std::string_view dir);
std::string PoolDir(std::string_view dir);
std::string PoolName(int64_t seq);             // "00000000000000000042"
int64_t ParsePoolName(std::string_view name);  // the sequence number, -1 if not a pool name

// A 63-bit seed from host name, pid and start time (FNV-1a, then mixed).
uint64_t DeriveSeed(std::string_view host, int64_t pid, int64_t start_ns);

// Creates DIR, the large file (written with data, not sparse: reads of holes
// never reach the disks) and tops the pool up to pool_size files. Idempotent:
// an existing large file of at least file_size bytes and existing pool files
// are kept. *report says what was done.
Status Precreate(const Config& cfg, std::string* report);

struct OpResult {
  const char* op = "";
  int64_t start_ns = 0;     // wall clock at the op's start
  int64_t latency_ns = 0;   // monotonic
  int64_t bytes = 0;        // transferred
  int err = 0;              // errno, 0 = ok
  int64_t offset = -1;      // data ops
  int64_t seq = -1;         // pool ops: the file's sequence number
};

class Prober {
 public:
  // Opens DIR's large file and scans its pool. Fails with a clear message if
  // precreate was not run, or if --direct was asked and the file system
  // refuses O_DIRECT (tmpfs does).
  static Result<std::unique_ptr<Prober>> Open(const Config& cfg, std::string_view host);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // The six ops, one after another; results replace *out's contents.
  void ProbeOnce(std::vector<OpResult>* out);

  uint64_t seed() const { return seed_; }
  Bypass bypass() const { return bypass_; }  // what Open settled on: kDirect, kFadvise or kNone
  int64_t file_size() const { return file_size_; }
  int64_t pool_oldest() const { return lo_; }  // sequence numbers in use: [lo, hi)
  int64_t pool_next() const { return hi_; }

 private:
  Prober() = default;
  uint64_t Next();  // splitmix64
  int64_t RandomOffset();

  Config cfg_;
  Bypass bypass_ = Bypass::kNone;
  int fd_ = -1;
  int pool_fd_ = -1;  // the pool directory, for *at() calls
  char* buf_ = nullptr;  // kBlock bytes, 4096-aligned
  uint64_t seed_ = 0, state_ = 0;
  int64_t file_size_ = 0;
  int64_t lo_ = 0, hi_ = 0;
};

// Where a path lives: the longest mount point of /proc/self/mountinfo that
// contains it (pure: takes the file's text).
struct MountInfo {
  std::string mount_point;  // "" if none matched
  std::string fs_type;      // "lustre", "ext4", "tmpfs", ...
  std::string source;       // "10.100.101.3@o2ib2:/snx11035"
  std::string lustre_fs;    // "snx11035" for lustre mounts, else ""
};
MountInfo FindMount(std::string_view mountinfo_text, std::string_view abs_path);

}  // namespace iosonar::probe
