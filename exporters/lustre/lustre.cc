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
#include <cstring>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/base/hash.h"
#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/base/timeutil.h"
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

// A reading of one target's (or one job's) counters, in table slots.
// Targets keep 64-bit op counts. Jobs (10,000s of them) keep the low 32
// bits of their op counts, deltas taken modulo 2^32: exact while a job does
// fewer than 2^31 ops on one target in one interval (a bigger "delta" is
// taken for a reset); byte sums stay 64-bit.
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
using JobSnap = Snap<22, uint32_t>;
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

struct JobState {
  JobSnap snap;
  uint64_t gen = 0;
  uint64_t hash = 0;  // of the entry's op lines at the last reading
};

struct SvHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using JobMap = std::unordered_map<std::string, JobState, SvHash, std::equal_to<>>;

struct JobTargetState {
  JobMap jobs;
  std::vector<JobMap::value_type*> order;  // the jobs of the last reading, in file order
  int64_t mono_ns = 0;
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
enum Kind { kOssStats, kMdsStats, kJobStats, kBrw, kLlite, kOsc, kKinds };
constexpr std::string_view kKindSource[kKinds] = {"oss", "mds", "jobstats", "brw", "client", "client"};

struct Item {
  Kind kind;
  Role role;            // for job_stats: kOss (obdfilter) or kMds (mdt)
  std::string target;
  std::string rel;      // "obdfilter/lustrefs-OST0000/stats" or the lctl parameter name
  std::string path;     // file to read ("" in dump mode)
  std::string_view text;  // dump mode: the value
};

// Reads a whole file into *buf (grown, never shrunk here). *vanished tells
// a file that disappeared since it was listed from a real error.
bool ReadWhole(const std::string& path, std::string* buf, size_t* len, int64_t max, std::string* err,
               bool* vanished = nullptr) {
  if (vanished) *vanished = false;
  // O_NONBLOCK: opening a FIFO or a device planted where a statistics file
  // should be must not block the sample (every other source would wait).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (vanished) *vanished = errno == ENOENT;
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = path + ": not a regular file (" +
           (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not readable as a file") +
           "), not read";
    ::close(fd);
    return false;
  }
  // O_NONBLOCK was for the open. The reads are plain blocking reads, as a
  // statistics file's are anyway (procfs ignores the flag): a read that blocks
  // is bounded by the ReadWatchdog, not by the flag.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (buf->size() < 65536) buf->resize(65536);
  size_t n = 0;
  while (true) {
    if (n == buf->size()) {
      if (static_cast<int64_t>(n) > max) {
        ::close(fd);
        *err = path + ": larger than " + std::to_string(max) + " bytes, not read";
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
    *err = path + ": larger than " + std::to_string(max) + " bytes, not read";
    return false;
  }
  *len = n;
  return true;
}

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

 private:
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
  void WarnIssues(Context& ctx, const Item& it, const std::vector<Issue>& issues);
  void FillSnap(Context& ctx, const Item& it, Role role, const ParsedStats& p, TargetSnap* s);
  void DoStats(Context& ctx, const Item& it);
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
  std::set<std::string> warned_[3];
  struct Changed {
    const std::string* id;
    JobSnap d;
    uint64_t weight;
    bool reset;
  };
  std::vector<Changed> changed_;
  std::vector<int8_t> job_slot_guess_[2];  // per role: slot of the k-th op line of the last job entry
  JobLineCache line_cache_[2];
  std::string job_common_;
  std::vector<JobMap::value_type*> next_order_;  // per role: the op lines of the last job entry parsed
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
  if (o_.oss) FindDir("obdfilter", "stats", kOssStats, kOss, &seen);
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
  if (wd_.Read(o_.lctl_dump, &dump_, &len, o_.max_file_bytes, &err, &vanished) != ReadWatchdog::kOk) {
    ctx.SourceDone("lctl-dump", false, 0, err);
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
    if (tgt.find('.') != std::string_view::npos) continue;  // per-export and service parameters
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
  std::stable_sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
    return (a.kind == kJobStats) > (b.kind == kJobStats);
  });
}

bool LustreExporter::Text(Context& ctx, const Item& it, std::string_view* text) {
  if (it.path.empty()) {
    *text = it.text;
    return true;
  }
  std::string err;
  bool vanished = false;
  if (wd_.Read(it.path, &buf_, &buf_len_, o_.max_file_bytes, &err, &vanished) != ReadWatchdog::kOk) {
    if (vanished) return false;  // gone since it was listed: the target is leaving
    ctx.SourceDone(Source(it), false, 0, err);
    return false;
  }
  *text = std::string_view(buf_.data(), buf_len_);
  return true;
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

void LustreExporter::DoJobs(Context& ctx, const Item& it) {
  std::string_view text;
  if (!Text(ctx, it, &text)) return;
  issues_.clear();
  IndexJobStats(text, &spans_, &issues_);
  WarnIssues(ctx, it, issues_);
  const Role role = it.role;
  const RoleDef& r = kRoles[role];
  auto [tst, fresh] = jobs_.try_emplace(it.target);
  JobTargetState& ts = tst->second;
  // A target read last time job_stats was read (gen_ - every) has a baseline.
  const bool have_base = !fresh && ts.gen + static_cast<uint64_t>(o_.jobstats_every) == gen_;
  const int64_t elapsed = mono_ - ts.mono_ns;
  ts.gen = gen_;
  ts.mono_ns = mono_;
  changed_.clear();
  size_t seen = 0;  // distinct jobs read this time
  next_order_.clear();
  for (size_t si = 0; si < spans_.size(); ++si) {
    const JobSpan& e = spans_[si];
    // Entries come in the same order from one reading to the next: the k-th
    // job of the last reading is tried before a hash lookup.
    JobMap::value_type* jit = nullptr;
    if (si < ts.order.size() && ts.order[si]->first == e.job_id) {
      jit = ts.order[si];
    } else if (auto f = ts.jobs.find(e.job_id); f != ts.jobs.end()) {
      jit = &*f;
    }
    const bool is_new = jit == nullptr;
    if (!is_new && jit->second.gen == gen_) {
      ctx.Warn(Source(it), it.rel + ":" + std::to_string(e.line) + ": job_id '" + std::string(e.job_id) +
                               "' listed twice; the second entry is ignored");
      continue;
    }
    // Most entries do not change from one second to the next: same bytes,
    // same counters, nothing to parse.
    ++seen;
    if (!is_new && have_base && jit->second.hash == e.hash) {
      jit->second.gen = gen_;
      next_order_.push_back(jit);
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
    if (is_new) jit = &*ts.jobs.emplace(std::string(e.job_id), JobState{}).first;
    next_order_.push_back(jit);
    JobState& js = jit->second;
    js.gen = gen_;
    js.hash = e.hash;
    if (!have_base) {  // first reading of this target: baseline only
      js.snap = cur;
      continue;
    }
    if (!is_new && !issues_.empty()) CarryForward(js.snap, &cur);  // damaged entry: see DoStats
    Changed c{&jit->first, {}, 0, false};
    // A job that appeared since the last reading counts from zero.
    const JobSnap zero;
    if (!Delta(is_new ? zero : js.snap, cur, &c.d)) c.reset = true;
    js.snap = cur;
    if (!c.reset) {
      uint64_t ops = c.d.unknown;
      for (size_t i = 0; i < r.job_slots; ++i) ops += c.d.samples[i];
      if (ops == 0 && c.d.read_sum == 0 && c.d.write_sum == 0) continue;  // unchanged
      c.weight = c.d.read_sum + c.d.write_sum + ops;
    } else {
      c.weight = UINT64_MAX;
    }
    changed_.push_back(c);
  }
  // Jobs Lustre dropped (job_cleanup_interval) are forgotten (if every job
  // known was read this time, there are none: no walk over the map).
  if (seen != ts.jobs.size())
    for (auto j = ts.jobs.begin(); j != ts.jobs.end();) j = j->second.gen != gen_ ? ts.jobs.erase(j) : std::next(j);
  ts.order.swap(next_order_);  // all read this time, so none was erased

  JobSummary& sum = job_summary_[it.target];
  sum.active = static_cast<int64_t>(changed_.size());
  sum.dropped = 0;
  size_t keep = changed_.size();
  if (o_.jobstats_max_jobs > 0 && changed_.size() > static_cast<size_t>(o_.jobstats_max_jobs)) {
    keep = static_cast<size_t>(o_.jobstats_max_jobs);
    std::nth_element(changed_.begin(), changed_.begin() + static_cast<std::ptrdiff_t>(keep), changed_.end(),
                     [](const Changed& a, const Changed& b) { return a.weight > b.weight; });
    sum.dropped = static_cast<int64_t>(changed_.size() - keep);
    ctx.Warn(Source(it), it.rel + ": " + std::to_string(sum.dropped) + " changed job ids over --jobstats-max-jobs " +
                             std::to_string(o_.jobstats_max_jobs) + " not emitted (smallest first)");
  }
  // The members every record of this target has, rendered once:
  // lustre.fs, lustre.target, lustre.elapsed_ns.
  std::string& common = job_common_;
  common.assign(field::kLustreFs.member());
  AppendJsonString(&common, FsOf(it.target));
  common.append(field::kLustreTarget.member());
  AppendJsonString(&common, it.target);
  common.append(field::kLustreElapsedNs.member());
  char num[24];
  common.append(num, static_cast<size_t>(std::to_chars(num, num + sizeof num, elapsed).ptr - num));
  for (size_t k = 0; k < keep; ++k) {
    const Changed& c = changed_[k];
    Record& rec = ctx.Begin(dataset::kJobstats);
    rec.Str(field::kJobId, *c.id).Raw(common);
    if (c.reset) {
      rec.Bool(field::kLustreReset, true);
      continue;
    }
    uint64_t total = 0, other = 0;
    for (size_t i = 0; i < r.job_slots; ++i) {
      const OpDef& op = r.ops[i];
      const uint64_t v = c.d.samples[i];
      if (op.flags & kBytes) {
        if (role == kOss || v) rec.Int(op.field, I(op.op[0] == 'r' ? c.d.read_sum : c.d.write_sum)).Int(op.ops_field, I(v));
        continue;
      }
      total += v;
      if (op.flags & kOther) other += v;
      if (v) rec.Int(op.field, I(v));
    }
    if (c.d.unknown) rec.Int(r.unknown_field, I(c.d.unknown));
    if (role == kOss) rec.Int(field::kOssOtherOps, I(other));
    else rec.Int(field::kMdsOps, I(total + c.d.unknown));
  }
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
  if (o_.lctl_dump.empty()) Find(ctx);
  else FromDump(ctx);
  for (const Item& it : items_) {
    const int64_t t0 = MonotonicNs();
    switch (it.kind) {
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
  if (dump_.size() > (16u << 20)) std::string().swap(dump_);
  // Give the pages of this sample's transient allocations back (the job id
  // maps churn): RSS stays near what is really in use.
  malloc_trim(64 << 10);
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
    opt::Int("jobstats-max-jobs", "N", "1000", "at most N changed job ids per target per sample (largest first; 0 = no limit)").Min(0),
    opt::Int("jobstats-every", "N", "1", "read each target's job_stats every N samples, the targets spread over the N phases (deltas then span N intervals)").Min(1),
    opt::Flag("per-file-sources", "self-report (iosonar.sampler) per file instead of per kind"),
    opt::Bytes("max-file-size", "BYTES", "64M", "skip (with an error) any statistics file larger than this"),
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
