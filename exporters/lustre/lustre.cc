#include "exporters/lustre/lustre.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/base/hash.h"
#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/base/timeutil.h"
#include "exporters/framework/metrics_http.h"
#include "exporters/lustre/parse.h"
#include "exporters/lustre/read_watchdog.h"

namespace iosonar::lustre {
namespace {

using exporters::Context;
using exporters::Record;

// ---------------------------------------------------------------- op tables
enum Role { kOss = 0, kMds = 1, kClient = 2 };

enum OpFlags : uint8_t {
  kBytes = 1,   // read_bytes/write_bytes: samples -> *_ops, sum -> *_bytes
  kOther = 2,   // part of LASSi's "other" (OSS)
  kIgnore = 4,  // known, duplicates another counter or is not an op: no field, not counted
};

struct OpDef {
  std::string_view op;
  FieldId field;      // for kBytes: the *_bytes field; none for kIgnore
  FieldId ops_field;  // for kBytes: the *_ops field
  uint8_t flags;
};

// The first entries of the OSS and MDS tables are the ones job_stats has
// (kJobSlots), so a job's snapshot only needs those slots.
constexpr OpDef kOssOps[] = {
    {"read_bytes", field::kOssReadBytes, field::kOssReadOps, kBytes},
    {"write_bytes", field::kOssWriteBytes, field::kOssWriteOps, kBytes},
    {"getattr", field::kOssGetattr, {}, 0},
    {"setattr", field::kOssSetattr, {}, 0},
    {"punch", field::kOssPunch, {}, kOther},
    {"sync", field::kOssSync, {}, kOther},
    {"destroy", field::kOssDestroy, {}, kOther},
    {"create", field::kOssCreate, {}, 0},
    {"statfs", field::kOssStatfs, {}, 0},
    {"get_info", field::kOssGetInfo, {}, kOther},
    {"set_info", field::kOssSetInfo, {}, kOther},
    {"quotactl", field::kOssQuotactl, {}, 0},
    {"prealloc", field::kOssPrealloc, {}, 0},
    // not in job_stats
    {"set_info_async", field::kOssSetInfoAsync, {}, kOther},
    {"disconnect", field::kOssDisconnect, {}, kOther},
    {"preprw", field::kOssPreprw, {}, kOther},
    {"commitrw", field::kOssCommitrw, {}, kOther},
    {"connect", field::kOssConnect, {}, 0},
    {"reconnect", field::kOssReconnect, {}, 0},
    {"ping", field::kOssPing, {}, 0},
    // 2.14+/2.15 latency lines: samples equal read_bytes/write_bytes samples
    {"read", {}, {}, kIgnore},
    {"write", {}, {}, kIgnore},
};
constexpr OpDef kMdsOps[] = {
    {"open", field::kMdsOpen, {}, 0},
    {"close", field::kMdsClose, {}, 0},
    {"mknod", field::kMdsMknod, {}, 0},
    {"link", field::kMdsLink, {}, 0},
    {"unlink", field::kMdsUnlink, {}, 0},
    {"mkdir", field::kMdsMkdir, {}, 0},
    {"rmdir", field::kMdsRmdir, {}, 0},
    {"rename", field::kMdsRename, {}, 0},
    {"getattr", field::kMdsGetattr, {}, 0},
    {"setattr", field::kMdsSetattr, {}, 0},
    {"getxattr", field::kMdsGetxattr, {}, 0},
    {"setxattr", field::kMdsSetxattr, {}, 0},
    {"statfs", field::kMdsStatfs, {}, 0},
    {"sync", field::kMdsSync, {}, 0},
    {"samedir_rename", field::kMdsSamedirRename, {}, 0},
    {"crossdir_rename", field::kMdsCrossdirRename, {}, 0},
    {"parallel_rename_file", field::kMdsParallelRenameFile, {}, 0},
    {"parallel_rename_dir", field::kMdsParallelRenameDir, {}, 0},
    {"migrate", field::kMdsMigrate, {}, 0},
    {"punch", field::kMdsPunch, {}, 0},
    {"read_bytes", field::kMdsReadBytes, field::kMdsReadOps, kBytes},
    {"write_bytes", field::kMdsWriteBytes, field::kMdsWriteOps, kBytes},
    {"read", {}, {}, kIgnore},
    {"write", {}, {}, kIgnore},
};
constexpr OpDef kClientOps[] = {
    {"read_bytes", field::kClientReadBytes, field::kClientReadOps, kBytes},
    {"write_bytes", field::kClientWriteBytes, field::kClientWriteOps, kBytes},
    {"open", field::kClientOpen, {}, 0},
    {"close", field::kClientClose, {}, 0},
    {"getattr", field::kClientGetattr, {}, 0},
    {"setattr", field::kClientSetattr, {}, 0},
    {"readdir", field::kClientReaddir, {}, 0},
    {"truncate", field::kClientTruncate, {}, 0},
    {"fsync", field::kClientFsync, {}, 0},
    {"seek", field::kClientSeek, {}, 0},
    {"mmap", field::kClientMmap, {}, 0},
    {"statfs", field::kClientStatfs, {}, 0},
    {"getxattr", field::kClientGetxattr, {}, 0},
    {"setxattr", field::kClientSetxattr, {}, 0},
    {"listxattr", field::kClientListxattr, {}, 0},
    {"removexattr", field::kClientRemovexattr, {}, 0},
    {"inode_permission", field::kClientInodePermission, {}, 0},
    {"create", field::kClientCreate, {}, 0},
    {"unlink", field::kClientUnlink, {}, 0},
    {"mkdir", field::kClientMkdir, {}, 0},
    {"rmdir", field::kClientRmdir, {}, 0},
    {"mknod", field::kClientMknod, {}, 0},
    {"rename", field::kClientRename, {}, 0},
    {"link", field::kClientLink, {}, 0},
    {"symlink", field::kClientSymlink, {}, 0},
    {"flock", field::kClientFlock, {}, 0},
    {"ioctl", field::kClientIoctl, {}, 0},
    {"alloc_inode", field::kClientAllocInode, {}, 0},
    // cache hit counters and open-time statistics, not ops
    {"getxattr_hits", {}, {}, kIgnore},
    {"dirty_pages_hits", {}, {}, kIgnore},
    {"dirty_pages_misses", {}, {}, kIgnore},
    {"opencount", {}, {}, kIgnore},
    {"openclosetime", {}, {}, kIgnore},
    {"read", {}, {}, kIgnore},
    {"write", {}, {}, kIgnore},
};

struct RoleDef {
  const OpDef* ops;
  size_t n;
  size_t job_slots;  // leading entries job_stats uses
  DatasetId dataset;
  FieldId unknown_field;
};
constexpr RoleDef kRoles[] = {
    {kOssOps, std::size(kOssOps), 13, dataset::kOss, field::kOssUnknownOps},
    {kMdsOps, std::size(kMdsOps), 22, dataset::kMds, field::kMdsUnknownOps},
    {kClientOps, std::size(kClientOps), 0, dataset::kClient, field::kClientUnknownOps},
};

int FindOp(const RoleDef& r, std::string_view name, size_t limit) {
  for (size_t i = 0; i < limit && i < r.n; ++i)
    if (r.ops[i].op.size() == name.size() && r.ops[i].op == name) return static_cast<int>(i);
  return -1;
}

// A reading of one target's (or one job's) counters, in table slots (jobs
// are kept packed between readings: JobTable).
template <size_t N, typename T = uint64_t>
struct Snap {
  std::array<T, N> samples{};
  uint64_t read_sum = 0, write_sum = 0;  // sums of the two kBytes slots
  uint64_t unknown = 0;                  // samples of ops with no slot
  uint64_t present = 0;                  // slots seen (bitmask)
  bool unknown_present = false;

  void Add(const RoleDef& r, int slot, uint64_t samples_v, uint64_t sum, bool has_sum) {
    const OpDef& d = r.ops[slot];
    samples[static_cast<size_t>(slot)] += static_cast<T>(samples_v);  // duplicate lines (statfs twice) are summed
    present |= uint64_t{1} << slot;
    if ((d.flags & kBytes) && has_sum) (d.op[0] == 'r' ? read_sum : write_sum) += sum;
  }
};
using TargetSnap = Snap<40>;
using JobSnap = Snap<22>;
static_assert(std::size(kClientOps) <= 40 && std::size(kMdsOps) <= 40 && std::size(kOssOps) <= 40);

// No real counter moves by 2^56 (72 PB, or ops) in one interval: a bigger
// delta is garbage or a wrap, taken for a reset. It also keeps the sums of
// up to 40 deltas (mds.ops, oss.other_ops) far from int64 overflow.
constexpr uint64_t kMaxDelta = uint64_t{1} << 56;

// Deltas cur - prev; false if anything went backwards (a reset).
template <size_t N, typename T>
bool Delta(const Snap<N, T>& prev, const Snap<N, T>& cur, Snap<N, T>* d) {
  if (prev.present & ~cur.present) return false;  // a counter vanished: stats were cleared
  for (size_t i = 0; i < N; ++i) {
    if constexpr (sizeof(T) == 8) {
      if (cur.samples[i] < prev.samples[i]) return false;
      d->samples[i] = cur.samples[i] - prev.samples[i];
      if (d->samples[i] > kMaxDelta) return false;
    } else {
      d->samples[i] = static_cast<T>(cur.samples[i] - prev.samples[i]);  // modulo 2^32
      if (d->samples[i] > (T{1} << (sizeof(T) * 8 - 1))) return false;
    }
  }
  if (cur.read_sum < prev.read_sum || cur.write_sum < prev.write_sum || cur.unknown < prev.unknown) return false;
  d->read_sum = cur.read_sum - prev.read_sum;
  d->write_sum = cur.write_sum - prev.write_sum;
  d->unknown = cur.unknown - prev.unknown;
  if (d->read_sum > kMaxDelta || d->write_sum > kMaxDelta || d->unknown > kMaxDelta) return false;
  d->present = cur.present;
  d->unknown_present = cur.unknown_present;
  return true;
}

// Fills counters missing from cur with prev's values; true if any was missing.
template <size_t N, typename T>
bool CarryForward(const Snap<N, T>& prev, Snap<N, T>* cur) {
  const uint64_t missing = prev.present & ~cur->present;
  if (!missing) return false;
  for (size_t i = 0; i < N; ++i)
    if (missing >> i & 1) cur->samples[i] = prev.samples[i];
  cur->present |= missing;
  cur->read_sum = std::max(cur->read_sum, prev.read_sum);
  cur->write_sum = std::max(cur->write_sum, prev.write_sum);
  return true;
}

inline int64_t I(uint64_t v) { return static_cast<int64_t>(v); }

struct TargetState {
  TargetSnap snap;
  int64_t snapshot_ns = -1, start_ns = -1, mono_ns = 0;
  uint64_t gen = 0;
};

// ---------------------------------------------------------------- job state
// The jobs of a target's last job_stats reading, in file order, packed: an
// MDS keeps 10,000s of them, so each is ~40-60 bytes in one arena instead of
// a node of a hash map of fixed structs (~250 bytes). A record is
//   varint id length, id, 8 bytes of the entry's body hash, 1 byte of flags,
//   [varint baseline monotonic ns: kOwnMono], varint present mask,
//   varint samples of each present slot, varint read_sum, varint write_sum,
//   [varint unknown: kUnknown]
// An open-addressing index over the positions finds a job by id. Each
// reading builds the next table while it walks the previous one (entries come
// in the same order from one reading to the next: the job at the same
// position is tried before the index).
void PutVarint(std::string* out, uint64_t v) {
  char b[10];
  size_t n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<char>(v);
  out->append(b, n);
}
uint64_t GetVarint(const char*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t c = static_cast<uint8_t>(*p++);
    v |= uint64_t{c & 0x7fu} << shift;
    if (c < 0x80) return v;
  }
}

struct JobTable {
  enum Flags : uint8_t { kUnknownPresent = 1, kOwnMono = 2, kUnknown = 4 };
  std::string arena;
  std::vector<uint32_t> offs;   // record start of each position
  std::vector<uint32_t> index;  // position + 1, 0 = empty; size a power of 2, at most half full
  size_t size() const { return offs.size(); }
  size_t End(size_t i) const { return i + 1 < offs.size() ? offs[i + 1] : arena.size(); }
  std::string_view Record(size_t i) const { return std::string_view(arena).substr(offs[i], End(i) - offs[i]); }
  std::string_view Id(size_t i) const {
    const char* p = arena.data() + offs[i];
    const size_t n = GetVarint(p);
    return {p, n};
  }
  uint64_t Hash(size_t i) const {
    const char* p = arena.data() + offs[i];
    p += GetVarint(p);
    uint64_t h;
    std::memcpy(&h, p, 8);
    return h;
  }
  // Position of id, or -1.
  int64_t Find(std::string_view id) const {
    if (index.empty()) return -1;
    const size_t mask = index.size() - 1;
    for (size_t h = HashBytes(id) & mask;; h = (h + 1) & mask) {
      const uint32_t v = index[h];
      if (v == 0) return -1;
      if (Id(v - 1) == id) return v - 1;
    }
  }
  // Appends a record for id unless id is there already (false).
  bool Add(std::string_view id) {
    if (index.size() < 2 * (offs.size() + 1)) Grow(std::max<size_t>(64, index.size() * 2));
    const size_t mask = index.size() - 1;
    size_t h = HashBytes(id) & mask;
    for (;; h = (h + 1) & mask) {
      const uint32_t v = index[h];
      if (v == 0) break;
      if (Id(v - 1) == id) return false;
    }
    index[h] = static_cast<uint32_t>(offs.size() + 1);
    offs.push_back(static_cast<uint32_t>(arena.size()));
    PutVarint(&arena, id.size());
    arena.append(id);
    return true;
  }
  // The rest of a record Add began.
  template <typename SnapT>
  void Put(uint64_t hash, const SnapT& s, bool own_mono, int64_t mono) {
    char h[8];
    std::memcpy(h, &hash, 8);
    arena.append(h, 8);
    arena.push_back(static_cast<char>((s.unknown_present ? kUnknownPresent : 0) | (own_mono ? kOwnMono : 0) |
                                      (s.unknown ? kUnknown : 0)));
    if (own_mono) PutVarint(&arena, static_cast<uint64_t>(mono));
    PutVarint(&arena, s.present);
    for (uint64_t m = s.present; m; m &= m - 1) PutVarint(&arena, s.samples[static_cast<size_t>(__builtin_ctzll(m))]);
    PutVarint(&arena, s.read_sum);
    PutVarint(&arena, s.write_sum);
    if (s.unknown) PutVarint(&arena, s.unknown);
  }
  // Decodes position i: its snapshot, and its own baseline time if it has one.
  template <typename SnapT>
  bool Get(size_t i, SnapT* s, int64_t* own_mono) const {
    const char* p = arena.data() + offs[i];
    p += GetVarint(p);
    p += 8;
    const uint8_t flags = static_cast<uint8_t>(*p++);
    const bool own = flags & kOwnMono;
    if (own) *own_mono = static_cast<int64_t>(GetVarint(p));
    *s = SnapT{};
    s->present = GetVarint(p);
    for (uint64_t m = s->present; m; m &= m - 1) s->samples[static_cast<size_t>(__builtin_ctzll(m))] = GetVarint(p);
    s->read_sum = GetVarint(p);
    s->write_sum = GetVarint(p);
    if (flags & kUnknown) s->unknown = GetVarint(p);
    s->unknown_present = flags & kUnknownPresent;
    return own;
  }
  void Grow(size_t n) {
    index.assign(n, 0u);
    const size_t mask = n - 1;
    for (size_t i = 0; i < offs.size(); ++i) {
      size_t h = HashBytes(Id(i)) & mask;
      while (index[h]) h = (h + 1) & mask;
      index[h] = static_cast<uint32_t>(i + 1);
    }
  }
  size_t Bytes() const { return arena.capacity() + offs.capacity() * 4 + index.capacity() * 4; }
  // Frees the buffers (clear() and a move from an empty table keep a
  // string's capacity, and its touched pages).
  void Release() {
    std::string().swap(arena);
    std::vector<uint32_t>().swap(offs);
    std::vector<uint32_t>().swap(index);
  }
  // Bytes of record i's id part (varint length + id).
  size_t IdBytes(size_t i) const {
    const char* p = arena.data() + offs[i];
    const char* q = p;
    const size_t n = GetVarint(q);
    return static_cast<size_t>(q - p) + n;
  }
};

struct JobTargetState {
  JobTable table;
  Role role = kOss;
  int64_t mono_ns = 0;  // when the jobs without their own baseline time were read
  uint64_t gen = 0;
};

struct HistSnap {
  struct H {
    std::string key;
    uint32_t first = 0, n = 0;
  };
  std::vector<H> h;
  std::vector<HistBucket> b;
  int64_t snapshot_ns = -1, mono_ns = 0;
  uint64_t gen = 0;
  void From(const ParsedHist& p) {
    h.resize(p.hists.size());
    for (size_t i = 0; i < p.hists.size(); ++i) {
      const Histogram& x = p.hists[i];
      if (!x.key.empty()) {
        h[i].key.assign(x.key);
      } else {  // unknown title: a stable slug
        h[i].key.clear();
        for (char c : x.title) h[i].key += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '_';
      }
      h[i].first = x.first;
      h[i].n = x.n;
    }
    b.assign(p.buckets.begin(), p.buckets.end());
    snapshot_ns = p.snapshot_ns;
  }
};

struct HistDelta {
  uint32_t hist;  // index into cur.h
  uint64_t bucket, read, write;
};

// Bucket deltas of cur against prev; false on a reset.
bool HistDiff(const HistSnap& prev, const HistSnap& cur, std::vector<HistDelta>* out) {
  out->clear();
  for (uint32_t hi = 0; hi < cur.h.size(); ++hi) {
    const auto& ch = cur.h[hi];
    const HistSnap::H* ph = nullptr;
    for (const auto& x : prev.h)
      if (x.key == ch.key) ph = &x;
    for (uint32_t k = 0; k < ch.n; ++k) {
      const HistBucket& cb = cur.b[ch.first + k];
      uint64_t pr = 0, pw = 0;
      if (ph) {
        const HistBucket* pb = nullptr;
        if (k < ph->n && prev.b[ph->first + k].bucket == cb.bucket) pb = &prev.b[ph->first + k];
        for (uint32_t j = 0; !pb && j < ph->n; ++j)
          if (prev.b[ph->first + j].bucket == cb.bucket) pb = &prev.b[ph->first + j];
        if (pb) {
          pr = pb->read;
          pw = pb->write;
        }
      }
      if (cb.read < pr || cb.write < pw || cb.read - pr > kMaxDelta || cb.write - pw > kMaxDelta) return false;
      if (cb.read != pr || cb.write != pw) out->push_back(HistDelta{hi, cb.bucket, cb.read - pr, cb.write - pw});
    }
  }
  // A histogram or bucket that vanished with counts in it means a clear.
  for (const auto& ph : prev.h) {
    bool found = false;
    for (const auto& ch : cur.h) found = found || ch.key == ph.key;
    if (!found)
      for (uint32_t k = 0; k < ph.n; ++k)
        if (prev.b[ph.first + k].read || prev.b[ph.first + k].write) return false;
  }
  return true;
}

// ---------------------------------------------------------------- sources
// kOstIo: the OSS's ost_io service stats (ost/OSS/ost_io/stats), read before
// the OSTs' stats, whose records carry its request wait (oss.ost_io_wait_ns).
enum Kind { kOstIo, kOssStats, kMdsStats, kJobStats, kBrw, kLlite, kOsc, kKinds };
constexpr std::string_view kKindSource[kKinds] = {"oss", "oss", "mds", "jobstats", "brw", "client", "client"};

struct Item {
  Kind kind;
  Role role;            // for job_stats: kOss (obdfilter) or kMds (mdt)
  std::string target;
  std::string rel;      // "obdfilter/lustrefs-OST0000/stats" or the lctl parameter name
  std::string path;     // file to read ("" in dump mode)
  std::string_view text;  // dump mode: the value
};

// Opens a statistics file for reading (-1 with *err on failure). *vanished
// tells a file that disappeared since it was listed from a real error.
int OpenStatFile(const std::string& path, std::string* err, bool* vanished) {
  if (vanished) *vanished = false;
  // O_NONBLOCK: opening a FIFO or a device planted where a statistics file
  // should be must not block the sample (every other source would wait).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (vanished) *vanished = errno == ENOENT;
    *err = path + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = path + ": not a regular file (" +
           (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not readable as a file") +
           "), not read";
    ::close(fd);
    return -1;
  }
  // O_NONBLOCK was for the open. The reads are plain blocking reads, as a
  // statistics file's are anyway (procfs ignores the flag): a read that blocks
  // is bounded by the ReadWatchdog, not by the flag.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

constexpr std::string_view kTooLarge = ": larger than ";

// Reads a whole file into *buf (grown, never shrunk here). Statistics files
// other than job_stats are a few KiB; job_stats is streamed (DoJobs).
bool ReadWhole(const std::string& path, std::string* buf, size_t* len, int64_t max, std::string* err,
               bool* vanished = nullptr) {
  int fd = OpenStatFile(path, err, vanished);
  if (fd < 0) return false;
  if (buf->size() < 65536) buf->resize(65536);
  size_t n = 0;
  while (true) {
    if (n == buf->size()) {
      if (static_cast<int64_t>(n) > max) {
        ::close(fd);
        *err = path + std::string(kTooLarge) + std::to_string(max) + " bytes (--max-file-size; " + std::to_string(n) +
               " bytes read so far): not read";
        return false;
      }
      buf->resize(buf->size() * 2);
    }
    ssize_t r = ::read(fd, buf->data() + n, buf->size() - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      *err = path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  ::close(fd);
  if (static_cast<int64_t>(n) > max) {
    *err = path + std::string(kTooLarge) + std::to_string(max) + " bytes (--max-file-size; " + std::to_string(n) +
           " bytes): not read";
    return false;
  }
  *len = n;
  return true;
}

// A file read in chunks on the watchdog's thread: the fd belongs to whoever
// holds the last reference (a stuck read keeps it until it returns).
struct SharedFd {
  int fd = -1;
  ~SharedFd() {
    if (fd >= 0) ::close(fd);
  }
};
constexpr size_t kJobChunk = 1u << 20;        // bytes a read(2) of job_stats asks for
constexpr size_t kMaxJobEntry = 16u << 20;    // one job_stats entry larger than this is garbage

class LustreExporter final : public exporters::Exporter {
 public:
  explicit LustreExporter(LustreOptions o)
      : o_(std::move(o)),
        wd_([](const std::string& path, std::string* buf, size_t* len, int64_t max, std::string* err,
               bool* vanished) { return ReadWhole(path, buf, len, max, err, vanished); },
            o_.read_timeout_ms) {
    std::string r = o_.proc_root;
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    if (r == "/") r.clear();
    roots_ = {r + "/proc/fs/lustre", r + "/sys/fs/lustre", r + "/sys/kernel/debug/lustre"};
  }

  Status Init(Context&) override {
    // Big buffers (file reads, the sample's output) straight from mmap, at a
    // fixed threshold: glibc's moving threshold would put them on the heap,
    // where the ones outgrown stay resident.
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
    if (!o_.listen_metrics.empty()) {
      auto m = exporters::MetricsServer::Listen(o_.listen_metrics);
      if (!m.ok()) return m.status();
      metrics_ = std::move(m.value());
    }
    if (!o_.lctl_dump.empty()) {
      if (access(o_.lctl_dump.c_str(), R_OK) != 0)
        return Status::Invalid("--lctl-dump " + o_.lctl_dump + ": " + std::strerror(errno));
      return Status::Ok();
    }
    for (const auto& r : roots_)
      if (access(r.c_str(), X_OK) == 0) return Status::Ok();
    return Status::Invalid("no Lustre statistics under --proc-root " + o_.proc_root + " (looked in " + roots_[0] + ", " +
                           roots_[1] + ", " + roots_[2] + ")");
  }

  void Collect(Context& ctx) override;
  void Idle(int64_t until_ns) override;

 private:
  // --listen-metrics: the Prometheus text exposition of the counters as last
  // read (cumulative, as the files have them), rendered from the state.
  void RenderMetrics(exporters::MetricsServer::Body& body);
  std::unique_ptr<exporters::MetricsServer> metrics_;
  uint64_t samples_done_ = 0, timeouts_ = 0;
  void Find(Context& ctx);
  void FindDir(std::string_view sub, std::string_view file, Kind kind, Role role, std::set<std::string>* seen);
  void FromDump(Context& ctx);
  // With --jobstats-every N, each target's job_stats is read every N samples,
  // the targets spread over the N phases (by a hash of the name), so no one
  // sample reads them all. The hash starts from its own seed (not FNV's
  // offset basis: the value this exporter has always used), so a target
  // keeps its phase across versions.
  static constexpr uint64_t kPhaseSeed = 1469598103934665603ULL;
  bool JobsDue(std::string_view target) const {
    const uint64_t n = static_cast<uint64_t>(o_.jobstats_every);
    if (n <= 1) return true;
    return (gen_ - 1 + Fnv1a(target, kPhaseSeed)) % n == 0;
  }
  std::string_view Source(const Item& it) const { return o_.per_file_sources ? std::string_view(it.rel) : kKindSource[it.kind]; }
  bool Text(Context& ctx, const Item& it, std::string_view* text);
  // A read that failed or was abandoned: a timeout (ReadWatchdog) is a
  // warning and a count in the sampler record (Context::Timeout), a file over
  // --max-file-size a warning with its size; either way the source is not ok.
  void ReadFailed(Context& ctx, const Item& it, ReadWatchdog::Outcome outcome, const std::string& err);
  // The target's last reading stays its baseline: the next reading's deltas
  // span both intervals (their elapsed time says so) instead of being lost.
  void KeepBase(const Item& it);
  void KeepAllBases();
  struct JobRun;
  void JobsBegin(const Item& it, JobRun* run);
  void JobsPiece(Context& ctx, const Item& it, JobRun* run, std::string_view text);
  void JobsEnd(Context& ctx, const Item& it, JobRun* run, bool complete);
  void OfferJob(Context& ctx, JobRun* run, std::string_view id, const JobSnap& d, bool reset, int64_t elapsed);
  void EmitJob(Context& ctx, Role role, std::string_view id, const JobSnap& d, bool reset, int64_t elapsed);
  void WarnIssues(Context& ctx, const Item& it, const std::vector<Issue>& issues);
  void FillSnap(Context& ctx, const Item& it, Role role, const ParsedStats& p, TargetSnap* s);
  void DoStats(Context& ctx, const Item& it);
  void DoOstIo(Context& ctx, const Item& it);
  void DoJobs(Context& ctx, const Item& it);
  void DoBrw(Context& ctx, const Item& it);
  void DoOsc(Context& ctx, const Item& it);
  // This interval's parsed histograms (ph_) become target's snapshot in
  // snaps; the changed buckets against the previous snapshot go to hd_.
  struct HistStep {
    const HistSnap& now;  // the new snapshot (its keys name hd_'s histograms)
    bool baseline;        // no previous snapshot of the last interval: no deltas
    bool ok;              // false: a histogram was cleared (no deltas this interval)
    int64_t elapsed;      // ns since the previous snapshot (0 on a baseline)
  };
  HistStep StepHist(std::unordered_map<std::string, HistSnap>& snaps, const std::string& target);
  void WarnUnknown(Context& ctx, const Item& it, Role role, std::string_view op);
  int64_t Elapsed(int64_t prev_snap, int64_t cur_snap, int64_t prev_mono, int64_t cur_mono) const {
    if (prev_snap > 0 && cur_snap > prev_snap) return cur_snap - prev_snap;
    return cur_mono - prev_mono;
  }

  LustreOptions o_;
  ReadWatchdog wd_;  // every file read, on a reader thread with a deadline
  std::vector<std::string> roots_;
  uint64_t gen_ = 0;
  int64_t mono_ = 0;
  std::vector<Item> items_;
  std::string buf_, dump_;
  size_t buf_len_ = 0;
  std::vector<LctlParam> params_;
  ParsedStats ps_;
  std::vector<JobSpan> spans_;
  std::vector<JobOp> ops_;
  std::vector<Issue> issues_;
  ParsedHist ph_;
  HistSnap hs_;
  std::vector<HistDelta> hd_;
  std::unordered_map<std::string, TargetState> stats_[3];  // per role
  std::unordered_map<std::string, JobTargetState> jobs_;
  std::unordered_map<std::string, HistSnap> brw_, osc_;
  struct JobSummary {
    int64_t active = 0, dropped = 0;
  };
  std::unordered_map<std::string, JobSummary> job_summary_;
  // The OSS's ost_io req_waittime as last read, and this sample's mean wait
  // per request (ns; -1: none this sample: a baseline, a reset, no requests).
  struct OstIoState {
    uint64_t gen = 0, samples = 0, sum_ns = 0;
    int64_t start_ns = -1;
  } ost_io_;
  int64_t ost_io_wait_ns_ = -1;
  std::set<std::string> warned_[3];
  // With --jobstats-max-jobs N: the N heaviest changed jobs of the target
  // being read (a heap, lightest on top); with 0 (the default) every changed
  // job is emitted as it is read.
  struct Changed {
    std::string id;
    JobSnap d;
    uint64_t weight;
    bool reset;
    int64_t elapsed;
  };
  std::vector<Changed> heap_;
  std::vector<int8_t> job_slot_guess_[2];  // per role: slot of the k-th op line of the last job entry
  JobLineCache line_cache_[2];
  std::string job_common_;  // `,"lustre.fs":..,"lustre.target":..` of the target being read
  JobTable next_jobs_;      // the table the reading under way builds
  std::vector<bool> old_seen_;  // positions of the previous table read this time
  std::string jbuf_;        // job_stats: the chunk read and the incomplete entry before it
};

struct LustreExporter::JobRun {
  JobTargetState* ts = nullptr;
  Role role = kOss;
  bool have_base = false;
  int64_t elapsed = 0;  // since the target's last reading
  size_t pos = 0;       // entries so far
  uint32_t next_line = 1;
  int64_t changed = 0, dropped = 0;
};

void LustreExporter::FindDir(std::string_view sub, std::string_view file, Kind kind, Role role,
                             std::set<std::string>* seen) {
  for (size_t ri = 0; ri < roots_.size(); ++ri) {
    std::string dir = roots_[ri] + "/" + std::string(sub);
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (kind == kOsc && name.find("-osc-MDT") != std::string_view::npos) continue;  // server-side osp links
      if (kind == kBrw && name.find("-OST") == std::string_view::npos && name.find("-MDT") == std::string_view::npos)
        continue;  // MGS
      if (kind == kJobStats && !JobsDue(name)) continue;
      // One file per kind and target, whichever root or OSD (osd-zfs, osd-ldiskfs) has it.
      std::string key = std::to_string(kind) + (kind == kBrw ? "/" : "/" + std::string(sub) + "/") + std::string(name);
      if (seen->count(key)) continue;
      std::string path = dir + "/" + std::string(name) + "/" + std::string(file);
      // Absent in this layout: not a source. Present but unreadable (EACCES, a
      // symbolic-link loop, EIO): kept, so its read fails and the sampler
      // record and stderr say so every sample, instead of a silent skip.
      if (access(path.c_str(), R_OK) != 0 && (errno == ENOENT || errno == ENOTDIR)) continue;
      seen->insert(key);
      items_.push_back(Item{kind, role, std::string(name), std::string(sub) + "/" + std::string(name) + "/" + std::string(file),
                            std::move(path), {}});
    }
    closedir(d);
  }
}

void LustreExporter::Find(Context&) {
  items_.clear();
  std::set<std::string> seen;
  if (o_.jobstats) {
    FindDir("obdfilter", "job_stats", kJobStats, kOss, &seen);
    FindDir("mdt", "job_stats", kJobStats, kMds, &seen);
  }
  if (o_.oss) {
    FindDir("obdfilter", "stats", kOssStats, kOss, &seen);
    // The OSS's ost_io service: /proc/fs/lustre up to 2.14, debugfs since.
    for (const auto& r : roots_) {
      std::string path = r + "/ost/OSS/ost_io/stats";
      if (access(path.c_str(), R_OK) != 0 && (errno == ENOENT || errno == ENOTDIR)) continue;
      items_.push_back(Item{kOstIo, kOss, "OSS", "ost/OSS/ost_io/stats", std::move(path), {}});
      break;
    }
  }
  if (o_.mds) FindDir("mdt", "md_stats", kMdsStats, kMds, &seen);
  if (o_.brw) {
    // Since 2.9 brw_stats lives in the OSD (osd-zfs, osd-ldiskfs), reached
    // from obdfilter by a symlink up to 2.12; before, in obdfilter itself.
    std::set<std::string> osds;
    for (const auto& r : roots_) {
      if (DIR* d = opendir(r.c_str())) {
        while (dirent* e = readdir(d))
          if (std::strncmp(e->d_name, "osd-", 4) == 0) osds.insert(e->d_name);
        closedir(d);
      }
    }
    for (const auto& osd : osds) FindDir(osd, "brw_stats", kBrw, kOss, &seen);
    FindDir("obdfilter", "brw_stats", kBrw, kOss, &seen);
  }
  if (o_.client) {
    FindDir("llite", "stats", kLlite, kClient, &seen);
    FindDir("osc", "rpc_stats", kOsc, kClient, &seen);
  }
  // Job stats first (their per-target summary goes on the target records),
  // then by kind and target, so the output order is stable.
  std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
    const int ra = a.kind == kJobStats ? -1 : a.kind, rb = b.kind == kJobStats ? -1 : b.kind;
    return ra != rb ? ra < rb : a.target < b.target;
  });
}

void LustreExporter::FromDump(Context& ctx) {
  items_.clear();
  size_t len = 0;
  std::string err;
  bool vanished = false;
  if (const auto r = wd_.Read(o_.lctl_dump, &dump_, &len, o_.max_file_bytes, &err, &vanished); r != ReadWatchdog::kOk) {
    if (r == ReadWatchdog::kTimedOut || r == ReadWatchdog::kStillStuck || r == ReadWatchdog::kTooManyStuck) {
      ctx.Timeout("lctl-dump", err);
      ++timeouts_;
    }
    else if (err.find(kTooLarge) != std::string::npos)
      ctx.Warn("lctl-dump", err);
    ctx.SourceDone("lctl-dump", false, 0, err);
    KeepAllBases();
    return;
  }
  std::string_view text(dump_.data(), len);
  std::vector<Issue> issues;
  ParseLctlDump(text, &params_, &issues);
  for (const auto& is : issues) ctx.Warn("lctl-dump", o_.lctl_dump + ":" + std::to_string(is.line) + ": " + is.message);
  for (const auto& p : params_) {
    auto d1 = p.name.find('.');
    auto d2 = p.name.rfind('.');
    if (d1 == std::string_view::npos || d1 == d2) continue;
    std::string_view mod = p.name.substr(0, d1), tgt = p.name.substr(d1 + 1, d2 - d1 - 1), file = p.name.substr(d2 + 1);
    if (p.name == "ost.OSS.ost_io.stats") {
      if (o_.oss) items_.push_back(Item{kOstIo, kOss, "OSS", std::string(p.name), {}, p.value});
      continue;
    }
    if (tgt.find('.') != std::string_view::npos) continue;  // per-export and other service parameters
    Item it{kKinds, kOss, std::string(tgt), std::string(p.name), {}, p.value};
    if (mod == "obdfilter" && file == "stats" && o_.oss) it.kind = kOssStats;
    else if (mod == "mdt" && file == "md_stats" && o_.mds) { it.kind = kMdsStats; it.role = kMds; }
    else if ((mod == "obdfilter" || mod == "mdt") && file == "job_stats" && o_.jobstats && JobsDue(tgt)) {
      it.kind = kJobStats;
      it.role = mod == "mdt" ? kMds : kOss;
    } else if (mod.substr(0, 4) == "osd-" && file == "brw_stats" && o_.brw &&
               (tgt.find("-OST") != std::string_view::npos || tgt.find("-MDT") != std::string_view::npos)) it.kind = kBrw;
    else if (mod == "llite" && file == "stats" && o_.client) { it.kind = kLlite; it.role = kClient; }
    else if (mod == "osc" && file == "rpc_stats" && o_.client) { it.kind = kOsc; it.role = kClient; }
    if (it.kind != kKinds) items_.push_back(std::move(it));
  }
  // Job stats first, then the OSS's ost_io (its wait goes on the OSTs' records).
  auto rank = [](Kind k) { return k == kJobStats ? 0 : k == kOstIo ? 1 : 2; };
  std::stable_sort(items_.begin(), items_.end(), [&](const Item& a, const Item& b) { return rank(a.kind) < rank(b.kind); });
}

bool LustreExporter::Text(Context& ctx, const Item& it, std::string_view* text) {
  if (it.path.empty()) {
    *text = it.text;
    return true;
  }
  std::string err;
  bool vanished = false;
  if (const auto r = wd_.Read(it.path, &buf_, &buf_len_, o_.max_file_bytes, &err, &vanished); r != ReadWatchdog::kOk) {
    if (vanished) return false;  // gone since it was listed: the target is leaving
    ReadFailed(ctx, it, r, err);
    KeepBase(it);
    return false;
  }
  *text = std::string_view(buf_.data(), buf_len_);
  return true;
}

void LustreExporter::ReadFailed(Context& ctx, const Item& it, ReadWatchdog::Outcome outcome, const std::string& err) {
  if (outcome == ReadWatchdog::kTimedOut || outcome == ReadWatchdog::kStillStuck || outcome == ReadWatchdog::kTooManyStuck) {
    ctx.Timeout(Source(it), err);
    ++timeouts_;
  }
  else if (err.find(kTooLarge) != std::string::npos)
    ctx.Warn(Source(it), err);
  ctx.SourceDone(Source(it), false, 0, err);
}

void LustreExporter::KeepBase(const Item& it) {
  auto keep = [&](auto& map) {
    auto f = map.find(it.target);
    if (f != map.end() && f->second.gen + 1 == gen_) f->second.gen = gen_;
  };
  switch (it.kind) {
    case kOstIo:
      if (ost_io_.gen + 1 == gen_) ost_io_.gen = gen_;
      break;
    case kOssStats:
    case kMdsStats:
    case kLlite: keep(stats_[it.role]); break;
    case kBrw: keep(brw_); break;
    case kOsc: keep(osc_); break;
    case kJobStats:
    case kKinds: break;
  }
}

void LustreExporter::KeepAllBases() {
  auto keep = [&](auto& map) {
    for (auto& [k, v] : map)
      if (v.gen + 1 == gen_) v.gen = gen_;
  };
  for (auto& m : stats_) keep(m);
  keep(brw_);
  keep(osc_);
  const uint64_t every = static_cast<uint64_t>(o_.jobstats_every);
  for (auto& [k, v] : jobs_)
    if (v.gen + every == gen_) v.gen += every;  // its next turn: as if read now (all its jobs stay baselines)
}

void LustreExporter::WarnIssues(Context& ctx, const Item& it, const std::vector<Issue>& issues) {
  for (const auto& is : issues) ctx.Warn(Source(it), it.rel + ":" + std::to_string(is.line) + ": " + is.message);
}

void LustreExporter::WarnUnknown(Context& ctx, const Item& it, Role role, std::string_view op) {
  auto& w = warned_[role];
  if (w.size() > 256 || w.count(std::string(op))) return;
  w.insert(std::string(op));
  ctx.Warn(Source(it), it.rel + ": unknown op '" + std::string(op) + "' counted in " +
                           std::string(kRoles[role].unknown_field) + " (warned once)");
}

void LustreExporter::FillSnap(Context& ctx, const Item& it, Role role, const ParsedStats& p, TargetSnap* s) {
  const RoleDef& r = kRoles[role];
  for (const auto& c : p.counters) {
    int slot = FindOp(r, c.name, r.n);
    if (slot < 0) {
      s->unknown += c.samples;
      s->unknown_present = true;
      WarnUnknown(ctx, it, role, c.name);
      continue;
    }
    if (r.ops[slot].flags & kIgnore) continue;
    s->Add(r, slot, c.samples, c.sum, c.nvals >= 3);
  }
}

void LustreExporter::DoStats(Context& ctx, const Item& it) {
  std::string_view text;
  if (!Text(ctx, it, &text)) return;
  ParseStats(text, &ps_);
  WarnIssues(ctx, it, ps_.issues);
  const Role role = it.role;
  TargetSnap cur;
  FillSnap(ctx, it, role, ps_, &cur);
  auto [st, fresh] = stats_[role].try_emplace(it.target);
  TargetState& s = st->second;
  const uint64_t prev_gen = s.gen;
  s.gen = gen_;
  const bool baseline = fresh || prev_gen + 1 != gen_;  // new, or missing last time
  if (baseline) {
    s.snap = cur;
    s.snapshot_ns = ps_.snapshot_ns;
    s.start_ns = ps_.start_ns;
    s.mono_ns = mono_;
    return;
  }
  // A damaged reading (lines set aside) may lack counters: they are unknown
  // this time, not cleared. Keep their last values and emit nothing for it.
  if (!ps_.issues.empty() && CarryForward(s.snap, &cur)) {
    s.snap = cur;
    s.mono_ns = mono_;
    return;
  }
  TargetSnap d;
  bool ok = Delta(s.snap, cur, &d);
  if (s.start_ns >= 0 && ps_.start_ns >= 0 && s.start_ns != ps_.start_ns) ok = false;  // restarted counters
  const int64_t elapsed = Elapsed(s.snapshot_ns, ps_.snapshot_ns, s.mono_ns, mono_);
  s.snap = cur;
  s.snapshot_ns = ps_.snapshot_ns;
  s.start_ns = ps_.start_ns;
  s.mono_ns = mono_;

  const RoleDef& r = kRoles[role];
  Record& rec = ctx.Begin(r.dataset);
  rec.Str(field::kLustreFs, FsOf(it.target)).Str(field::kLustreTarget, it.target).Int(field::kLustreElapsedNs, elapsed);
  if (role == kClient) rec.Str(field::kClientLayer, "llite");
  if (!ok) {
    rec.Bool(field::kLustreReset, true);
  } else {
    const double secs = elapsed > 0 ? static_cast<double>(elapsed) / 1e9 : 0;
    uint64_t total = 0, other = 0;
    for (size_t i = 0; i < r.n; ++i) {
      const OpDef& op = r.ops[i];
      if (op.flags & kIgnore) continue;
      const uint64_t v = d.samples[i];
      if (op.flags & kBytes) {
        const bool rd = op.op[0] == 'r';
        const uint64_t bytes = rd ? d.read_sum : d.write_sum;
        if (role == kMds && !(d.present >> i & 1)) continue;  // data on MDT: only when present
        rec.Int(op.field, I(bytes)).Int(op.ops_field, I(v));
        if (role != kMds && secs > 0) {
          if (role == kOss) {
            rec.Num(rd ? field::kOssReadBytesPerS : field::kOssWriteBytesPerS, static_cast<double>(bytes) / secs);
            rec.Num(rd ? field::kOssReadOpsPerS : field::kOssWriteOpsPerS, static_cast<double>(v) / secs);
          } else {
            rec.Num(rd ? field::kClientReadBytesPerS : field::kClientWriteBytesPerS, static_cast<double>(bytes) / secs);
          }
        }
        if (role == kOss) total += v;
        continue;
      }
      if (op.flags & kOther) other += v;
      total += v;
      if (d.present >> i & 1) rec.Int(op.field, I(v));
    }
    total += d.unknown;
    if (d.unknown_present) rec.Int(r.unknown_field, I(d.unknown));
    if (role == kOss) {
      rec.Int(field::kOssOtherOps, I(other));
      if (secs > 0) rec.Num(field::kOssOpsPerS, static_cast<double>(total) / secs);
      if (ost_io_wait_ns_ >= 0) rec.Int(field::kOssOstIoWaitNs, ost_io_wait_ns_);
    } else if (role == kMds) {
      rec.Int(field::kMdsOps, I(total));
      if (secs > 0) rec.Num(field::kMdsOpsPerS, static_cast<double>(total) / secs);
    } else {
      rec.Int(field::kClientMetadataOps, I(total));
    }
  }
  if (role != kClient) {
    auto js = job_summary_.find(it.target);
    if (js != job_summary_.end()) rec.Int(field::kLustreJobsActive, js->second.active).Int(field::kLustreJobsDropped, js->second.dropped);
  }
}

// The OSS's ost_io service stats (lprocfs counters, like an OST's stats):
//   req_waittime   4690313 samples [usec] 4 20340 100079668 6817957300
// The mean wait per request over the interval is Δsum / Δsamples; the
// OSTs' records of this sample carry it (the OSS's threads serve them all).
void LustreExporter::DoOstIo(Context& ctx, const Item& it) {
  std::string_view text;
  if (!Text(ctx, it, &text)) return;
  ParseStats(text, &ps_);
  WarnIssues(ctx, it, ps_.issues);
  const StatsCounter* w = nullptr;
  for (const auto& c : ps_.counters)
    if (c.name == "req_waittime") w = &c;
  if (!w || w->nvals < 3) return;  // no request yet (the line appears with the first), or no sum
  uint64_t scale = 0;
  if (w->unit.rfind("usec", 0) == 0) scale = 1000;
  else if (w->unit.rfind("nsec", 0) == 0) scale = 1;
  if (!scale) {
    ctx.Warn(Source(it), it.rel + ": req_waittime in unit \"" + std::string(w->unit) + "\", not usec: not used");
    return;
  }
  const uint64_t sum_ns = w->sum * scale;
  const bool have_base = ost_io_.gen != 0 && ost_io_.gen + 1 == gen_;
  const bool restarted = ost_io_.start_ns >= 0 && ps_.start_ns >= 0 && ost_io_.start_ns != ps_.start_ns;
  if (have_base && !restarted && w->samples > ost_io_.samples && sum_ns >= ost_io_.sum_ns)
    ost_io_wait_ns_ = static_cast<int64_t>((sum_ns - ost_io_.sum_ns) / (w->samples - ost_io_.samples));
  ost_io_.gen = gen_;
  ost_io_.samples = w->samples;
  ost_io_.sum_ns = sum_ns;
  ost_io_.start_ns = ps_.start_ns;
}

// job_stats is parsed as it is read: chunks of kJobChunk bytes, each cut
// after its last whole entry (the incomplete one is carried to the next
// chunk), so memory does not grow with the file (an MDS's job_stats is
// 100s of MB at 50,000 jobs). Each chunk is one read on the watchdog.
void LustreExporter::DoJobs(Context& ctx, const Item& it) {
  JobRun run;
  JobsBegin(it, &run);
  if (it.path.empty()) {  // lctl dump
    JobsPiece(ctx, it, &run, it.text);
    JobsEnd(ctx, it, &run, true);
    return;
  }
  auto f = std::make_shared<SharedFd>();
  const std::string& path = it.path;
  std::string err;
  bool vanished = false;
  size_t len = 0;
  ReadWatchdog::Outcome r = wd_.Run(
      path,
      [f, path](std::string*, size_t* l, std::string* e, bool* v) {
        *l = 0;
        f->fd = OpenStatFile(path, e, v);
        return f->fd >= 0;
      },
      &jbuf_, &len, &err, &vanished);
  if (r != ReadWatchdog::kOk) {
    if (vanished) return;  // gone since it was listed: the target is leaving
    ReadFailed(ctx, it, r, err);
    JobsEnd(ctx, it, &run, false);
    return;
  }
  size_t carry = 0;
  while (true) {
    const size_t off = carry;
    r = wd_.Run(
        path,
        [f, path, off](std::string* b, size_t* l, std::string* e, bool*) {
          if (b->capacity() < off + kJobChunk) b->reserve(off + kJobChunk + (off ? off : kJobChunk / 4));
          if (b->size() < off + kJobChunk) b->resize(off + kJobChunk);
          for (;;) {
            const ssize_t n = ::read(f->fd, b->data() + off, kJobChunk);
            if (n >= 0) {
              *l = static_cast<size_t>(n);
              return true;
            }
            if (errno != EINTR) {
              *e = path + ": " + std::strerror(errno);
              return false;
            }
          }
        },
        &jbuf_, &len, &err, &vanished);
    if (r != ReadWatchdog::kOk) {
      ReadFailed(ctx, it, r, err);
      JobsEnd(ctx, it, &run, false);
      return;
    }
    const size_t have = carry + len;
    const std::string_view text(jbuf_.data(), have);
    if (len == 0) {  // end of file: the last entry is whole
      if (have) JobsPiece(ctx, it, &run, text);
      break;
    }
    const size_t cut = JobStatsCut(text);
    if (cut == 0) {
      carry = have;  // one incomplete entry: read on
      if (carry > kMaxJobEntry) {
        const std::string msg = it.rel + ":" + std::to_string(run.next_line) + ": an entry longer than " +
                                std::to_string(kMaxJobEntry >> 20) + " MiB: the rest of the file is not read";
        ctx.Warn(Source(it), msg);
        ctx.SourceDone(Source(it), false, 0, msg);
        JobsEnd(ctx, it, &run, false);
        return;
      }
      continue;
    }
    JobsPiece(ctx, it, &run, text.substr(0, cut));
    std::memmove(jbuf_.data(), jbuf_.data() + cut, have - cut);
    carry = have - cut;
  }
  JobsEnd(ctx, it, &run, true);
}

void LustreExporter::JobsBegin(const Item& it, JobRun* run) {
  auto [tst, fresh] = jobs_.try_emplace(it.target);
  JobTargetState& ts = tst->second;
  run->ts = &ts;
  run->role = it.role;
  ts.role = it.role;
  // A target read last time job_stats was read (gen_ - every) has a baseline.
  run->have_base = !fresh && ts.gen + static_cast<uint64_t>(o_.jobstats_every) == gen_;
  run->elapsed = mono_ - ts.mono_ns;
  // The new table, sized like the last one (no rehash, no regrowth). A spare
  // much bigger than this target needs is let go first: it would stay with
  // this target, its pages resident (a big target's buffers would otherwise
  // wander from small target to small target, one more each sample).
  if (next_jobs_.Bytes() > 2 * ts.table.Bytes() + (64u << 10)) next_jobs_.Release();
  next_jobs_.arena.clear();
  next_jobs_.offs.clear();
  next_jobs_.index.assign(std::max<size_t>(64, ts.table.index.size()), 0u);
  next_jobs_.arena.reserve(ts.table.arena.size());
  next_jobs_.offs.reserve(ts.table.size());
  old_seen_.assign(ts.table.size(), false);
  heap_.clear();
  // The members every record of this target has, rendered once.
  job_common_.assign(field::kLustreFs.member());
  AppendJsonString(&job_common_, FsOf(it.target));
  job_common_.append(field::kLustreTarget.member());
  AppendJsonString(&job_common_, it.target);
}

void LustreExporter::JobsPiece(Context& ctx, const Item& it, JobRun* run, std::string_view text) {
  issues_.clear();
  uint32_t last = 0;
  IndexJobStats(text, &spans_, &issues_, run->next_line, &last);
  run->next_line = last + 1;
  WarnIssues(ctx, it, issues_);
  const Role role = it.role;
  const RoleDef& r = kRoles[role];
  const JobTable& old = run->ts->table;
  JobTable& next = next_jobs_;
  for (const JobSpan& e : spans_) {
    const size_t pos = run->pos++;
    int64_t o = -1;
    if (pos < old.size() && old.Id(pos) == e.job_id) o = static_cast<int64_t>(pos);
    else o = old.Find(e.job_id);
    if (!next.Add(e.job_id)) {
      ctx.Warn(Source(it), it.rel + ":" + std::to_string(e.line) + ": job_id '" + std::string(e.job_id) +
                               "' listed twice; the second entry is ignored");
      continue;
    }
    if (o >= 0) old_seen_[static_cast<size_t>(o)] = true;
    // Most entries do not change from one second to the next: same bytes,
    // same counters, nothing to parse.
    if (o >= 0 && run->have_base && old.Hash(static_cast<size_t>(o)) == e.hash) {
      const size_t ou = static_cast<size_t>(o);
      const size_t idb = old.IdBytes(ou);
      if (!(old.arena[old.offs[ou] + idb + 8] & JobTable::kOwnMono)) {
        next.arena.append(old.Record(ou).substr(idb));
      } else {
        JobSnap s;
        int64_t own = 0;
        old.Get(ou, &s, &own);
        next.Put(e.hash, s, false, 0);  // read now: its baseline time is the target's again
      }
      continue;
    }
    ops_.clear();
    issues_.clear();
    ParseJobOps(e.body, e.body_line, &ops_, &issues_, &line_cache_[role]);
    WarnIssues(ctx, it, issues_);
    JobSnap cur;
    // Every entry lists its ops in the same order: the slot the k-th op line
    // had last time is tried first (one compare instead of a table search).
    std::vector<int8_t>& guess = job_slot_guess_[role];
    if (guess.size() < ops_.size()) guess.resize(ops_.size(), -1);
    for (size_t k = 0; k < ops_.size(); ++k) {
      const JobOp& op = ops_[k];
      int slot = guess[k];
      if (slot < 0 || r.ops[slot].op != op.name) {
        slot = FindOp(r, op.name, r.job_slots);
        guess[k] = static_cast<int8_t>(slot);
      }
      if (slot < 0) {
        const int any = FindOp(r, op.name, r.n);
        if (any >= 0 && (r.ops[any].flags & kIgnore)) continue;
        cur.unknown += op.samples;
        cur.unknown_present = true;
        WarnUnknown(ctx, it, role, op.name);
        continue;
      }
      cur.Add(r, slot, op.samples, op.sum, op.has_sum);
    }
    if (!run->have_base) {  // first reading of this target: baseline only
      next.Put(e.hash, cur, false, 0);
      continue;
    }
    JobSnap prev;  // a job that appeared since the last reading counts from zero
    int64_t own = 0;
    const bool has_own = o >= 0 && old.Get(static_cast<size_t>(o), &prev, &own);
    if (o >= 0 && !issues_.empty()) CarryForward(prev, &cur);  // damaged entry: see DoStats
    JobSnap d;
    const bool reset = !Delta(prev, cur, &d);
    next.Put(e.hash, cur, false, 0);
    if (!reset) {
      uint64_t ops = d.unknown;
      for (size_t i = 0; i < r.job_slots; ++i) ops += d.samples[i];
      if (ops == 0 && d.read_sum == 0 && d.write_sum == 0) continue;  // unchanged
    }
    ++run->changed;
    OfferJob(ctx, run, e.job_id, d, reset, has_own ? mono_ - own : run->elapsed);
  }
}

void LustreExporter::OfferJob(Context& ctx, JobRun* run, std::string_view id, const JobSnap& d, bool reset,
                              int64_t elapsed) {
  if (o_.jobstats_max_jobs <= 0) {
    EmitJob(ctx, run->role, id, d, reset, elapsed);
    return;
  }
  uint64_t weight = UINT64_MAX;
  if (!reset) {
    weight = d.read_sum + d.write_sum + d.unknown;
    for (size_t i = 0; i < kRoles[run->role].job_slots; ++i) weight += d.samples[i];
  }
  auto lighter = [](const Changed& a, const Changed& b) { return a.weight > b.weight; };  // lightest on top
  heap_.push_back(Changed{std::string(id), d, weight, reset, elapsed});
  std::push_heap(heap_.begin(), heap_.end(), lighter);
  if (heap_.size() > static_cast<size_t>(o_.jobstats_max_jobs)) {
    std::pop_heap(heap_.begin(), heap_.end(), lighter);
    heap_.pop_back();
    ++run->dropped;
  }
}

void LustreExporter::JobsEnd(Context& ctx, const Item& it, JobRun* run, bool complete) {
  JobTargetState& ts = *run->ts;
  const JobTable& old = ts.table;
  if (!complete && run->have_base) {
    // The jobs this reading did not reach keep their last values as the
    // baseline, with the time they were read: the next delta is right.
    for (size_t i = 0; i < old.size(); ++i) {
      if (old_seen_[i] || !next_jobs_.Add(old.Id(i))) continue;
      JobSnap s;
      int64_t own = ts.mono_ns;
      old.Get(i, &s, &own);
      next_jobs_.Put(old.Hash(i), s, true, own);
    }
  }
  // Jobs Lustre dropped (job_cleanup_interval) are forgotten with the old table.
  std::swap(ts.table, next_jobs_);
  // The old table of a big target (an MDT's) is let go now, not handed to the
  // next (small) target, which would keep its pages.
  if (next_jobs_.Bytes() > (1u << 20)) next_jobs_.Release();
  ts.gen = gen_;
  ts.mono_ns = mono_;
  if (!heap_.empty()) {
    std::sort(heap_.begin(), heap_.end(), [](const Changed& a, const Changed& b) { return a.weight > b.weight; });
    for (const Changed& c : heap_) EmitJob(ctx, run->role, c.id, c.d, c.reset, c.elapsed);
    heap_.clear();
  }
  JobSummary& sum = job_summary_[it.target];
  sum.active = run->changed;
  sum.dropped = run->dropped;
  if (run->dropped)
    ctx.Warn(Source(it), it.rel + ": " + std::to_string(run->dropped) + " changed job ids over --jobstats-max-jobs " +
                             std::to_string(o_.jobstats_max_jobs) + " not emitted (smallest first)");
}

void LustreExporter::EmitJob(Context& ctx, Role role, std::string_view id, const JobSnap& d, bool reset,
                             int64_t elapsed) {
  const RoleDef& r = kRoles[role];
  Record& rec = ctx.Begin(dataset::kJobstats);
  rec.Str(field::kJobId, id).Raw(job_common_).Int(field::kLustreElapsedNs, elapsed);
  if (reset) {
    rec.Bool(field::kLustreReset, true);
    return;
  }
  uint64_t total = 0, other = 0;
  for (size_t i = 0; i < r.job_slots; ++i) {
    const OpDef& op = r.ops[i];
    const uint64_t v = d.samples[i];
    if (op.flags & kBytes) {
      if (role == kOss || v) rec.Int(op.field, I(op.op[0] == 'r' ? d.read_sum : d.write_sum)).Int(op.ops_field, I(v));
      continue;
    }
    total += v;
    if (op.flags & kOther) other += v;
    if (v) rec.Int(op.field, I(v));
  }
  if (d.unknown) rec.Int(r.unknown_field, I(d.unknown));
  if (role == kOss) rec.Int(field::kOssOtherOps, I(other));
  else rec.Int(field::kMdsOps, I(total + d.unknown));
}

LustreExporter::HistStep LustreExporter::StepHist(std::unordered_map<std::string, HistSnap>& snaps,
                                                 const std::string& target) {
  auto [sit, fresh] = snaps.try_emplace(target);
  HistSnap& prev = sit->second;
  hs_.From(ph_);
  hs_.mono_ns = mono_;
  hs_.gen = gen_;
  const bool baseline = fresh || prev.gen + 1 != gen_;
  const bool ok = baseline || HistDiff(prev, hs_, &hd_);
  const int64_t elapsed = baseline ? 0 : Elapsed(prev.snapshot_ns, hs_.snapshot_ns, prev.mono_ns, mono_);
  std::swap(prev, hs_);
  return {prev, baseline, ok, elapsed};
}

void LustreExporter::DoBrw(Context& ctx, const Item& it) {
  std::string_view text;
  if (!Text(ctx, it, &text)) return;
  ParseBrwStats(text, &ph_);
  WarnIssues(ctx, it, ph_.issues);
  const auto [now, baseline, ok, elapsed] = StepHist(brw_, it.target);
  if (baseline || !ok) return;  // a cleared histogram: no deltas this interval
  const std::string fs = FsOf(it.target);
  for (const auto& d : hd_) {
    Record& rec = ctx.Begin(dataset::kBrw);
    rec.Str(field::kLustreFs, fs).Str(field::kLustreTarget, it.target).Int(field::kLustreElapsedNs, elapsed);
    rec.Str(field::kBrwHist, now.h[d.hist].key).Int(field::kBrwBucket, I(std::min<uint64_t>(d.bucket, INT64_MAX)));
    rec.Int(field::kBrwRead, I(d.read)).Int(field::kBrwWrite, I(d.write));
  }
}

void LustreExporter::DoOsc(Context& ctx, const Item& it) {
  std::string_view text;
  if (!Text(ctx, it, &text)) return;
  ParseRpcStats(text, &ph_);
  WarnIssues(ctx, it, ph_.issues);
  const auto [now, baseline, ok, elapsed] = StepHist(osc_, it.target);
  if (baseline) return;
  Record& rec = ctx.Begin(dataset::kClient);
  rec.Str(field::kLustreFs, FsOf(it.target)).Str(field::kLustreTarget, it.target).Int(field::kLustreElapsedNs, elapsed);
  rec.Str(field::kClientLayer, "osc");
  if (ph_.read_in_flight >= 0) rec.Int(field::kClientReadInFlight, ph_.read_in_flight);
  if (ph_.write_in_flight >= 0) rec.Int(field::kClientWriteInFlight, ph_.write_in_flight);
  if (ph_.pending_read_pages >= 0) rec.Int(field::kClientPendingReadPages, ph_.pending_read_pages);
  if (ph_.pending_write_pages >= 0) rec.Int(field::kClientPendingWritePages, ph_.pending_write_pages);
  if (!ok) {
    rec.Bool(field::kLustreReset, true);
    return;
  }
  uint64_t pr = 0, pw = 0, fr = 0, fw = 0;
  double pr_sum = 0, pw_sum = 0, fr_sum = 0, fw_sum = 0;
  for (const auto& d : hd_) {
    const std::string& key = now.h[d.hist].key;
    const double b = static_cast<double>(d.bucket);
    if (key == "pages") {
      pr += d.read;
      pw += d.write;
      pr_sum += b * static_cast<double>(d.read);
      pw_sum += b * static_cast<double>(d.write);
    } else if (key == "in_flight") {
      fr += d.read;
      fw += d.write;
      fr_sum += b * static_cast<double>(d.read);
      fw_sum += b * static_cast<double>(d.write);
    }
  }
  rec.Int(field::kClientRpcReads, I(pr)).Int(field::kClientRpcWrites, I(pw));
  if (pr) rec.Num(field::kClientRpcReadPagesMean, pr_sum / static_cast<double>(pr));
  if (pw) rec.Num(field::kClientRpcWritePagesMean, pw_sum / static_cast<double>(pw));
  if (fr) rec.Num(field::kClientRpcReadInFlightMean, fr_sum / static_cast<double>(fr));
  if (fw) rec.Num(field::kClientRpcWriteInFlightMean, fw_sum / static_cast<double>(fw));
}

void LustreExporter::Collect(Context& ctx) {
  ++gen_;
  mono_ = ctx.mono_ns();
  job_summary_.clear();
  ost_io_wait_ns_ = -1;
  if (o_.lctl_dump.empty()) Find(ctx);
  else FromDump(ctx);
  for (const Item& it : items_) {
    const int64_t t0 = MonotonicNs();
    switch (it.kind) {
      case kOstIo: DoOstIo(ctx, it); break;
      case kOssStats:
      case kMdsStats:
      case kLlite: DoStats(ctx, it); break;
      case kJobStats: DoJobs(ctx, it); break;
      case kBrw: DoBrw(ctx, it); break;
      case kOsc: DoOsc(ctx, it); break;
      case kKinds: break;
    }
    ctx.SourceDone(Source(it), true, MonotonicNs() - t0);
  }
  // Targets that vanished are forgotten; if they come back they start with a baseline.
  for (auto& m : stats_)
    for (auto i = m.begin(); i != m.end();) i = i->second.gen != gen_ ? m.erase(i) : std::next(i);
  for (auto* m : {&brw_, &osc_})
    for (auto i = m->begin(); i != m->end();) i = i->second.gen != gen_ ? m->erase(i) : std::next(i);
  const uint64_t keep_jobs = static_cast<uint64_t>(o_.jobstats_every);
  for (auto i = jobs_.begin(); i != jobs_.end();) i = i->second.gen + keep_jobs < gen_ ? jobs_.erase(i) : std::next(i);
  // A huge file once must not pin its buffer for ever.
  if (buf_.size() > (4u << 20)) std::string().swap(buf_);
  if (jbuf_.size() > 2 * kJobChunk) std::string().swap(jbuf_);
  if (dump_.size() > (16u << 20)) std::string().swap(dump_);
  // Give the pages of this sample's transient allocations back (the job id
  // maps churn): RSS stays near what is really in use.
  malloc_trim(64 << 10);
  ++samples_done_;
}

void LustreExporter::Idle(int64_t until_ns) {
  if (!metrics_) {
    Exporter::Idle(until_ns);
    return;
  }
  while (!exporters::StopRequested() && MonotonicNs() < until_ns)
    metrics_->ServeUntil(until_ns, [this](exporters::MetricsServer::Body& b) { RenderMetrics(b); });
}

namespace {

// Metric names and labels as lustre_exporter and lustrefs-exporter have them
// where they exist (lustre_read_bytes_total, lustre_job_stats_total, ...;
// labels component="ost"|"mdt", target, jobid, operation), so dashboards
// written for those port; brw_stats as real histograms (lustre_brw_*).
constexpr std::string_view kComponent[2] = {"ost", "mdt"};

void Num(std::string* out, uint64_t v) {
  char b[24];
  out->append(b, static_cast<size_t>(std::to_chars(b, b + sizeof b, v).ptr - b));
}

void Header(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ").append(name).append(" ").append(type).append("\n");
}

struct BrwName {
  std::string_view key, metric, help;
};
constexpr BrwName kBrwNames[] = {
    {"pages", "lustre_brw_pages_per_bulk_rw", "Pages per bulk read/write RPC (brw_stats)"},
    {"discont_pages", "lustre_brw_discontiguous_pages", "Discontiguous pages per RPC (brw_stats)"},
    {"discont_blocks", "lustre_brw_discontiguous_blocks", "Discontiguous blocks per RPC (brw_stats)"},
    {"frags", "lustre_brw_fragmented_ios", "Disk fragmented I/Os per RPC (brw_stats)"},
    {"in_flight", "lustre_brw_ios_in_flight", "Disk I/Os in flight when an I/O was started (brw_stats)"},
    {"io_time_ms", "lustre_brw_io_time_milliseconds", "Disk I/O time in milliseconds (brw_stats)"},
    {"io_size", "lustre_brw_io_size_bytes", "Disk I/O size in bytes (brw_stats)"},
    {"block_maps_ms", "lustre_brw_block_maps_milliseconds", "Block map time in milliseconds (brw_stats)"},
};

}  // namespace

void LustreExporter::RenderMetrics(exporters::MetricsServer::Body& body) {
  std::string& out = body.buf();
  auto labels = [&](Role role, std::string_view target) {
    out.append("{component=\"").append(kComponent[role]).append("\",target=\"");
    exporters::AppendLabelValue(&out, target);
    out.append("\"");
  };
  // Targets: lustre_{read,write}_{samples,bytes}_total and lustre_stats_total.
  struct Io {
    std::string_view name, help;
    bool write, bytes;
  };
  constexpr Io kIo[] = {{"read_samples_total", "Total number of reads that have been recorded.", false, false},
                        {"read_bytes_total", "The total number of bytes that have been read.", false, true},
                        {"write_samples_total", "Total number of writes that have been recorded.", true, false},
                        {"write_bytes_total", "The total number of bytes that have been written.", true, true}};
  auto io_slot = [](Role role, bool write) { return FindOp(kRoles[role], write ? "write_bytes" : "read_bytes", kRoles[role].n); };
  for (const Io& io : kIo) {
    Header(&out, "lustre_" + std::string(io.name), "counter", io.help);
    for (Role role : {kOss, kMds}) {
      const int slot = io_slot(role, io.write);
      for (const auto& [target, st] : stats_[role]) {
        if (!(st.snap.present >> slot & 1)) continue;
        out.append("lustre_").append(io.name);
        labels(role, target);
        out.append("} ");
        Num(&out, io.bytes ? (io.write ? st.snap.write_sum : st.snap.read_sum) : st.snap.samples[static_cast<size_t>(slot)]);
        out.push_back('\n');
      }
    }
    if (!body.Flush()) return;
  }
  Header(&out, "lustre_stats_total", "counter", "Number of operations the filesystem has performed.");
  for (Role role : {kOss, kMds}) {
    const RoleDef& r = kRoles[role];
    for (const auto& [target, st] : stats_[role]) {
      for (size_t i = 0; i < r.n; ++i) {
        if ((r.ops[i].flags & (kBytes | kIgnore)) || !(st.snap.present >> i & 1)) continue;
        out.append("lustre_stats_total{component=\"").append(kComponent[role]).append("\",operation=\"").append(r.ops[i].op);
        out.append("\",target=\"");
        exporters::AppendLabelValue(&out, target);
        out.append("\"} ");
        Num(&out, st.snap.samples[i]);
        out.push_back('\n');
      }
      if (!body.Flush()) return;
    }
  }
  // Jobs: lustre_job_{read,write}_{samples,bytes}_total and lustre_job_stats_total
  // (ops with a count above 0: the rest are absent, read as 0).
  JobSnap s;
  int64_t own = 0;
  auto job_labels = [&](Role role, std::string_view id, std::string_view target) {
    out.append("{component=\"").append(kComponent[role]).append("\",jobid=\"");
    exporters::AppendLabelValue(&out, id);
    out.append("\",target=\"");
    exporters::AppendLabelValue(&out, target);
    out.append("\"");
  };
  for (const Io& io : kIo) {
    Header(&out, "lustre_job_" + std::string(io.name), "counter", io.help);
    for (const auto& [target, ts] : jobs_) {
      const Role role = ts.role;
      const int slot = io_slot(role, io.write);
      for (size_t i = 0; i < ts.table.size(); ++i) {
        ts.table.Get(i, &s, &own);
        if (!(s.present >> slot & 1)) continue;
        out.append("lustre_job_").append(io.name);
        job_labels(role, ts.table.Id(i), target);
        out.append("} ");
        Num(&out, io.bytes ? (io.write ? s.write_sum : s.read_sum) : s.samples[static_cast<size_t>(slot)]);
        out.push_back('\n');
        if (!body.Flush()) return;
      }
    }
  }
  Header(&out, "lustre_job_stats_total", "counter", "Number of operations the filesystem has performed for the job.");
  for (const auto& [target, ts] : jobs_) {
    const Role role = ts.role;
    const RoleDef& r = kRoles[role];
    for (size_t i = 0; i < ts.table.size(); ++i) {
      ts.table.Get(i, &s, &own);
      const std::string_view id = ts.table.Id(i);
      for (uint64_t m = s.present; m; m &= m - 1) {
        const size_t k = static_cast<size_t>(__builtin_ctzll(m));
        if ((r.ops[k].flags & (kBytes | kIgnore)) || s.samples[k] == 0) continue;
        out.append("lustre_job_stats_total{component=\"").append(kComponent[role]).append("\",jobid=\"");
        exporters::AppendLabelValue(&out, id);
        out.append("\",operation=\"").append(r.ops[k].op).append("\",target=\"");
        exporters::AppendLabelValue(&out, target);
        out.append("\"} ");
        Num(&out, s.samples[k]);
        out.push_back('\n');
      }
      if (!body.Flush()) return;
    }
  }
  // brw_stats: one histogram per kind, per target and direction. A row
  // labelled N holds values up to N: Lustre tallies the log2 histograms
  // (pages, I/O time, I/O size, block maps) into the smallest power of two
  // >= the value (lprocfs_oh_tally_log2: (N/2, N]) and the linear ones
  // (discontiguous pages/blocks, fragments, in flight) at exactly N, so
  // le="N" is exact for both.
  std::vector<std::string> keys;
  for (const auto& [target, h] : brw_)
    for (const auto& x : h.h)
      if (std::find(keys.begin(), keys.end(), x.key) == keys.end()) keys.push_back(x.key);
  for (const std::string& key : keys) {
    std::string metric = "lustre_brw_" + key, help = "brw_stats histogram '" + key + "'";
    for (const BrwName& n : kBrwNames)
      if (n.key == key) {
        metric.assign(n.metric);
        help.assign(n.help);
      }
    Header(&out, metric, "histogram", help);
    for (const auto& [target, h] : brw_) {
      for (const auto& x : h.h) {
        if (x.key != key) continue;
        for (int write = 0; write < 2; ++write) {
          uint64_t cum = 0;
          auto bucket = [&](std::string_view le) {
            out.append(metric).append("_bucket{component=\"ost\",operation=\"").append(write ? "write" : "read");
            out.append("\",target=\"");
            exporters::AppendLabelValue(&out, target);
            out.append("\",le=\"").append(le).append("\"} ");
            Num(&out, cum);
            out.push_back('\n');
          };
          for (uint32_t k = 0; k < x.n; ++k) {
            const HistBucket& b = h.b[x.first + k];
            cum += write ? b.write : b.read;
            char le[24];
            bucket(std::string_view(le, static_cast<size_t>(std::to_chars(le, le + sizeof le, b.bucket).ptr - le)));
          }
          bucket("+Inf");
          out.append(metric).append("_count{component=\"ost\",operation=\"").append(write ? "write" : "read");
          out.append("\",target=\"");
          exporters::AppendLabelValue(&out, target);
          out.append("\"} ");
          Num(&out, cum);
          out.push_back('\n');
        }
        if (!body.Flush()) return;
      }
    }
  }
  // The OSS's ost_io request waits (req_waittime) as a summary without
  // quantiles: rate(_sum) / rate(_count) is the mean wait per request, the
  // records' oss.ost_io_wait_ns.
  if (ost_io_.gen != 0) {
    Header(&out, "lustre_ost_io_request_wait_seconds", "summary",
           "Time requests waited for an ost_io service thread on this OSS (ost/OSS/ost_io/stats req_waittime).");
    out.append("lustre_ost_io_request_wait_seconds_sum ");
    Num(&out, ost_io_.sum_ns / 1000000000);
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%09llu\n", static_cast<unsigned long long>(ost_io_.sum_ns % 1000000000));
    out.append(frac);
    out.append("lustre_ost_io_request_wait_seconds_count ");
    Num(&out, ost_io_.samples);
    out.push_back('\n');
  }
  Header(&out, "iosonar_lustre_samples_total", "counter", "Samples taken by this exporter.");
  out.append("iosonar_lustre_samples_total ");
  Num(&out, samples_done_);
  out.push_back('\n');
  Header(&out, "iosonar_lustre_read_timeouts_total", "counter",
         "Statistics file reads abandoned at --read-timeout (the data of that file missed that sample).");
  out.append("iosonar_lustre_read_timeouts_total ");
  Num(&out, timeouts_);
  out.push_back('\n');
}

}  // namespace

std::string FsOf(std::string_view t) {
  for (std::string_view marker : {"-OST", "-MDT"}) {
    auto p = t.find(marker);
    if (p != std::string_view::npos && p > 0) return std::string(t.substr(0, p));
  }
  auto p = t.rfind('-');
  return std::string(p == std::string_view::npos || p == 0 ? t : t.substr(0, p));
}

std::unique_ptr<exporters::Exporter> MakeLustreExporter(const LustreOptions& o) {
  return std::make_unique<LustreExporter>(o);
}

}  // namespace iosonar::lustre

namespace iosonar::exporters {
namespace {

constexpr OptionSpec kLustreOptions[] = {
    opt::String("proc-root", "DIR", "/", "read DIR/proc/fs/lustre, DIR/sys/fs/lustre and DIR/sys/kernel/debug/lustre"),
    opt::String("lctl-dump", "FILE", nullptr, "read this `lctl get_param` dump (re-read every sample) instead of the tree"),
    opt::List("sources", "LIST", "oss,mds,jobstats,brw,client", "oss,mds,jobstats,brw,client", "what to sample (comma-separated)"),
    opt::Int("jobstats-max-jobs", "N", "0", "at most N changed job ids per target per sample, the largest (0 = every changed job, the default: memory, ~60 bytes a job id kept, is the bound)").Min(0),
    opt::Int("jobstats-every", "N", "1", "read each target's job_stats every N samples, the targets spread over the N phases (deltas then span N intervals)").Min(1),
    opt::Flag("per-file-sources", "self-report (iosonar.sampler) per file instead of per kind"),
    opt::Bytes("max-file-size", "BYTES", "64M", "a statistics file larger than this is not read (a warning with its size); job_stats is streamed and has no such bound"),
    opt::String("listen-metrics", "HOST:PORT", nullptr,
                "also serve the counters as last read in the Prometheus text format on http://HOST:PORT/metrics "
                "(OST/MDT ops and bytes, job_stats per job, brw_stats histograms; :PORT = every address)"),
    opt::Duration("read-timeout", "SECONDS", "0.5",
                  "a file read that takes longer (blocked in the kernel: a hung server) is abandoned for the sample "
                  "and reported; that file is not read again until the read returns (0 = no watchdog)").Min(0),
};

Result<std::unique_ptr<Exporter>> CreateLustre(const Options& opts) {
  if (!opts.Get("job-id").empty())
    return Status::Invalid("--job-id: not for lustre (job ids come from job_stats; records of servers belong to no one job)");
  lustre::LustreOptions o;
  o.proc_root = opts.Get("proc-root");
  if (o.proc_root.empty()) o.proc_root = "/";
  o.lctl_dump = opts.Get("lctl-dump");
  o.listen_metrics = opts.Get("listen-metrics");
  o.jobstats_max_jobs = opts.Int("jobstats-max-jobs");
  o.jobstats_every = opts.Int("jobstats-every");
  o.max_file_bytes = opts.Bytes("max-file-size");
  o.read_timeout_ms = static_cast<int>(opts.Seconds("read-timeout") * 1000);
  o.per_file_sources = opts.Flag("per-file-sources");
  o.oss = opts.Contains("sources", "oss");
  o.mds = opts.Contains("sources", "mds");
  o.jobstats = opts.Contains("sources", "jobstats");
  o.brw = opts.Contains("sources", "brw");
  o.client = opts.Contains("sources", "client");
  return lustre::MakeLustreExporter(o);
}

}  // namespace

extern const Descriptor kLustreExporter = {
    "lustre",
    "sample Lustre OSS/MDS/job_stats/brw_stats/client statistics (deltas and rates per target)",
    "Reads Lustre's statistics files under --proc-root (proc/fs/lustre, sys/fs/lustre, sys/kernel/debug/lustre) "
    "every interval and emits per-target deltas and rates: iosonar.oss (obdfilter/*/stats), iosonar.mds "
    "(mdt/*/md_stats), iosonar.jobstats (job_stats per job id and target, changed jobs only), iosonar.brw "
    "(brw_stats histogram buckets that changed) and iosonar.client (llite/*/stats, osc/*/rpc_stats). The first "
    "reading of a target is a baseline; a counter that goes down is a reset (lustre.reset=true, no deltas). "
    "Lustre 1.8 to 2.15 formats.",
    kLustreOptions,
    1.0,
    &CreateLustre,
    nullptr,
};

}  // namespace iosonar::exporters
