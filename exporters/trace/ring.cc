#include "exporters/trace/ring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <new>

#include "core/base/private_dir.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"
#include "core/transport/line_sender.h"

namespace {
// Heap objects without the C++ runtime: ring.cc is linked into the preloaded
// tracer, and operator new/delete alone would make every traced process load
// libstdc++ (about 1.5 million instructions of relocation at each start).
template <class T, class... A>
T* Make(A&&... a) {
  void* m = malloc(sizeof(T));
  return m ? new (m) T(static_cast<A&&>(a)...) : nullptr;
}
template <class T>
void Unmake(T* p) {
  if (!p) return;
  p->~T();
  free(p);
}
}  // namespace

namespace iosonar::trace {
namespace {
int SysOpenAt(int dirfd, const char* p, int flags, int mode) {
  return static_cast<int>(syscall(SYS_openat, dirfd, p, flags, mode));
}
void SysClose(int fd) { syscall(SYS_close, fd); }

int64_t RealNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

void RingRoot(char* out, size_t cap) {
  const char* env = getenv("IOSONAR_RING_ROOT");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return;
  }
  struct stat st;
  bool shm = syscall(SYS_newfstatat, AT_FDCWD, "/dev/shm", &st, 0) == 0 && S_ISDIR(st.st_mode);
  snprintf(out, cap, "%s", shm ? "/dev/shm" : "/tmp");
}

void DefaultRingDir(char* out, size_t cap) {
  const char* env = getenv("IOSONAR_RING_DIR");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return;
  }
  char root[400];
  RingRoot(root, sizeof root);
  snprintf(out, cap, "%s/iosonar-ring-%u", root, static_cast<unsigned>(geteuid()));
}

int OpenRingDir(const char* dir) {
  char used[512];
  return OpenPrivateDir(dir, used, sizeof used, nullptr, false);
}

int OpenDefaultRingDir(char* out, size_t cap, bool* fell_back) {
  char dir[512];
  DefaultRingDir(dir, sizeof dir);
  const char* env = getenv("IOSONAR_RING_DIR");
  // Taken by another user: ROOT/iosonar-ring-UID.SUFFIX, where the agent finds
  // it too. A directory the user named has no other.
  return OpenPrivateDir(dir, out, cap, fell_back, !(env && *env));
}

uint64_t ProcessStartTime(int pid, char* state, long* threads) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = SysOpenAt(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  SysClose(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the command name may contain spaces
  if (!p) return 0;
  if (state && p[1] == ' ') *state = p[2];
  for (int field = 2; field < 22 && *p; ++p)
    if (*p == ' ' && ++field == 20 && threads) *threads = strtol(p + 1, nullptr, 10);
  return strtoull(p, nullptr, 10);
}

// ---------------------------------------------------------------- formatting
void BuildPrefixes(FmtContext* c, uint64_t stream, const char* host, const char* job, int pid, int64_t rank,
                   int64_t uid) {
  const char* datasets[2] = {"iosonar.trace", "iosonar.tracer"};
  for (int k = 0; k < 2; ++k) {
    JsonLine j(c->prefix[k], sizeof c->prefix[k]);
    j.Raw(",", 1);
    j.Key(field::kEventDataset);
    j.Str(datasets[k]);
    j.KInt(field::kEventStream, static_cast<int64_t>(stream));
    j.KStr(field::kHostName, host);
    if (job[0]) j.KStr(field::kJobId, job);
    j.KInt(field::kProcessPid, pid);
    if (rank >= 0) j.KInt(field::kProcessRank, rank);
    if (uid >= 0) {
      char u[24];
      const int n = snprintf(u, sizeof u, "%lld", static_cast<long long>(uid));
      j.KStr(field::kUserId, u, static_cast<size_t>(n));
    }
    c->prefix_len[k] = j.ok() ? j.size() : 0;
  }
}

// A double in int64_t's range, else 0 (a damaged or hostile ring's clock must not be undefined behaviour).
static int64_t SafeNs(double d) { return d > -4e18 && d < 4e18 ? static_cast<int64_t>(d) : 0; }

int64_t TicksToEpochNs(const FmtContext& c, uint64_t t) {
  double d = static_cast<double>(static_cast<int64_t>(t - c.tick0)) * c.ns_per_tick;
  return static_cast<int64_t>(static_cast<uint64_t>(c.real0) + static_cast<uint64_t>(SafeNs(d)));
}

const char* LookupPath(const PathSlot* paths, uint64_t id) {
  if (!id || !paths) return nullptr;
  for (int probe = 0; probe < 16; ++probe) {
    const PathSlot& s = paths[(id + static_cast<uint64_t>(probe)) % kPathSlots];
    uint64_t cur = __atomic_load_n(&s.id, __ATOMIC_ACQUIRE);
    if (cur == id) return s.path;
    if (cur == 0) return nullptr;
  }
  return nullptr;
}

void FormatCommon(JsonLine& j, const FmtContext& c, PrefixKind kind, int64_t ts_ns, uint64_t seq) {
  j.Begin();
  j.Key(field::kTimestamp);
  j.IsoMillis(ts_ns);
  j.KInt(field::kEventSeq, static_cast<int64_t>(seq));
  j.Raw(c.prefix[kind], c.prefix_len[kind]);
}

// mmap's prot as "rwx" letters ("none" for PROT_NONE), its flags as words.
static void MmapProtName(int prot, char* out, size_t cap) {
  size_t n = 0;
  if (prot & 1) out[n++] = 'r';
  if (prot & 2) out[n++] = 'w';
  if (prot & 4) out[n++] = 'x';
  if (n == 0) {
    snprintf(out, cap, "none");
    return;
  }
  out[n] = '\0';
}
static void MmapFlagsName(int flags, char* out, size_t cap) {
  static const struct {
    int bit;
    const char* name;
  } kFlags[] = {{0x10, "fixed"}, {0x2000, "locked"}, {0x4000, "noreserve"}, {0x8000, "populate"}, {0x80000, "sync"},
                {0x100000, "fixed_noreplace"}};
  int type = flags & 3;
  size_t n = static_cast<size_t>(snprintf(out, cap, "%s", type == 1 ? "shared" : type == 2 ? "private" : type == 3 ? "shared_validate" : "none"));
  for (const auto& f : kFlags)
    if ((flags & f.bit) && n + 1 + strlen(f.name) < cap) n += static_cast<size_t>(snprintf(out + n, cap - n, ",%s", f.name));
}

void FormatRun(JsonLine& j, const FmtContext& c, const Run& r, int tid, uint64_t seq, uint32_t threads) {
  int64_t start = TicksToEpochNs(c, r.t_start);
  int64_t end = TicksToEpochNs(c, r.t_end);
  FormatCommon(j, c, kPrefixTrace, start, seq);
  j.KInt(field::kProcessTid, tid);
  if (threads > 1) j.KInt(field::kProcessThreads, threads);
  j.KStr(field::kIoOp, OpName(r.op));
  j.KStr(field::kIoLayer, LayerName(r.layer));
  if (r.file_id) {
    if (const char* p = LookupPath(c.paths, r.file_id)) j.KStr(field::kFilePath, p);
    char hex[17];
    static const char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) hex[i] = kHex[(r.file_id >> (60 - 4 * i)) & 15];
    j.KStr(field::kFileId, hex, 16);
  }
  if (r.fd >= 0) j.KInt(field::kIoFd, r.fd);
  if (IsDataOp(r.op)) {
    if (r.offset >= 0) j.KInt(field::kIoOffset, r.offset);
    if (r.strided) j.KInt(field::kIoStride, r.stride);
    j.KInt(field::kIoSize, r.size);
    j.KInt(field::kIoBytes, static_cast<int64_t>(r.bytes));
  }
  j.KInt(field::kIoCount, static_cast<int64_t>(r.count));
  if (r.err) j.KInt(field::kIoErrno, r.err);
  j.KInt(field::kEventStartNs, start);
  j.KInt(field::kEventEndNs, end > start ? end : start);
  j.KInt(field::kIoDurationNs, SafeNs(static_cast<double>(r.dur) * c.ns_per_tick));
  if (r.agg) {
    j.Key(field::kIoAggregated);
    j.Bool(true);
    j.KInt(field::kIoOpsSequential, static_cast<int64_t>(r.n_seq));
    j.KInt(field::kIoOpsStrided, static_cast<int64_t>(r.n_strided));
    j.KInt(field::kIoOpsRandom, static_cast<int64_t>(r.n_random));
  } else if (IsDataOp(r.op)) {  // every data record: its ops that continued the previous one (OpsSequential)
    j.KInt(field::kIoOpsSequential, static_cast<int64_t>(OpsSequential(r)));
  }
  if (r.op == kOpMmap) {  // the mapping: its length and file offset, prot and flags
    if (r.offset >= 0) j.KInt(field::kIoOffset, r.offset);
    j.KInt(field::kIoSize, r.size);
    char prot[8], flags[64];
    MmapProtName(r.comm_size & 0xff, prot, sizeof prot);
    MmapFlagsName(r.comm_size >> 8, flags, sizeof flags);
    j.KStr(field::kIoMmapProt, prot);
    j.KStr(field::kIoMmapFlags, flags);
  }
  if (IsMpiio(r.layer)) {
    j.Key(field::kMpiCollective);
    j.Bool(r.layer == kMpiioCollective);
    if (r.comm_size > 0) j.KInt(field::kMpiCommSize, r.comm_size);
  }
  j.End();
}

void FormatTracerRecord(JsonLine& j, const FmtContext& c, const RingHeader& h, const char* action, int64_t ts_ns,
                        uint64_t seq, const TracerCounts& n) {
  FormatCommon(j, c, kPrefixTracer, ts_ns, seq);
  j.KStr(field::kEventAction, action);
  if (h.ppid > 0) j.KInt(field::kProcessPpid, h.ppid);
  if (h.cmdline_len && h.cmdline_len < sizeof h.cmdline) j.KStr(field::kProcessCommandLine, h.cmdline, h.cmdline_len);
  j.KInt(field::kTracerRawOps, static_cast<int64_t>(n.raw & INT64_MAX));
  j.KInt(field::kTracerRecords, static_cast<int64_t>(n.records & INT64_MAX));
  if (n.merged) j.KInt(field::kTracerMerged, static_cast<int64_t>(n.merged & INT64_MAX));
  j.KInt(field::kTracerDropped, static_cast<int64_t>(n.dropped & INT64_MAX));
  j.KInt(field::kTracerSpooled, 0);
  j.KInt(field::kTracerWindowNs, h.window_ns);
  if (h.io_uring_sqes || h.io_uring_rings) j.KInt(field::kTracerIoUringSqes, static_cast<int64_t>(h.io_uring_sqes & INT64_MAX));
  if (h.untraced_execs) {
    j.KInt(field::kTracerUntracedExecs, static_cast<int64_t>(h.untraced_execs & INT64_MAX));
    const size_t len = strnlen(h.untraced_exec, sizeof h.untraced_exec);
    if (len > 0 && len < sizeof h.untraced_exec) j.KStr(field::kTracerUntracedExec, h.untraced_exec, len);
  }
  j.End();
}

bool ProcessAlive(int pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  uint64_t t = ProcessStartTime(pid, &state);
  if (state == 'Z' || state == 'X') return false;
  return t == 0 || t == start_time;
}

void FillRingLayout(RingHeader& h) {
  h.magic = kRingMagic;
  h.version = kRingVersion;
  h.header_size = sizeof(RingHeader);
  h.slot_size = sizeof(Slot);
  h.path_slot_size = sizeof(PathSlot);
  h.compressor_size = sizeof(Compressor);
  h.run_size = sizeof(Run);
  h.max_threads = kMaxThreads;
  h.path_slots = kPathSlots;
}

// ---------------------------------------------------------------- the drainer
namespace {

// Lines of one dead process, sent in batches through the sender.
class DrainOut final : public RunSink {
 public:
  DrainOut(LineSender* s, const FmtContext& c, uint64_t seq) : sender_(s), c_(c), seq_(seq) {}
  ~DrainOut() { Flush(); }
  int tid = 0;
  bool Put(const Run& r) override {
    Room();
    JsonLine j(buf_ + len_, sizeof buf_ - len_);
    FormatRun(j, c_, r, tid, seq_);
    Commit(j);
    ++runs_;
    return true;
  }
  template <typename Fn>
  void Line(Fn&& fn) {
    Room();
    JsonLine j(buf_ + len_, sizeof buf_ - len_);
    fn(j, seq_);
    Commit(j);
  }
  void Flush() {
    if (len_) sender_->Send(buf_, len_, lines_);
    sent_ += lines_;
    len_ = 0;
    lines_ = 0;
  }
  uint64_t sent() const { return sent_ + lines_; }
  uint64_t runs() const { return runs_; }

 private:
  void Room() {
    if (sizeof buf_ - len_ < 8192) Flush();
  }
  void Commit(const JsonLine& j) {
    if (!j.ok()) return;
    len_ += j.size();
    ++lines_;
    ++seq_;
  }
  LineSender* sender_;
  const FmtContext& c_;
  uint64_t seq_;
  char buf_[1 << 16];
  size_t len_ = 0;
  uint64_t lines_ = 0, sent_ = 0, runs_ = 0;
};

bool LayoutMatches(const RingHeader& h) {
  return h.magic == kRingMagic && h.version == kRingVersion && h.header_size == sizeof(RingHeader) &&
         h.slot_size == sizeof(Slot) && h.path_slot_size == sizeof(PathSlot) && h.compressor_size == sizeof(Compressor) &&
         h.run_size == sizeof(Run) && h.max_threads == kMaxThreads && h.path_slots == kPathSlots &&
         h.slots_hwm <= kMaxThreads && h.cmdline_len < sizeof h.cmdline && memchr(h.host, 0, sizeof h.host) &&
         memchr(h.job, 0, sizeof h.job);
}

// Ships one dead process's ring. base is a private (copy-on-write) mapping.
uint64_t ShipRing(void* base, LineSender* sender) {
  RingHeader& h = *RingHead(base);
  auto* c = Make<FmtContext>();
  if (!c) return 0;
  BuildPrefixes(c, h.stream, h.host, h.job, h.pid, h.rank, static_cast<int64_t>(geteuid()));  // our own rings only
  c->tick0 = h.tick0;
  c->real0 = h.real0;
  c->ns_per_tick = h.ns_per_tick > 0 ? h.ns_per_tick : 1.0;
  if (h.use_tsc) {  // same node, same TSC: the rate measured over the process's whole life
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t m = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    uint64_t t = __rdtsc();
    if (m - h.mono0 > 100000000 && t > h.tick0) c->ns_per_tick = static_cast<double>(m - h.mono0) / static_cast<double>(t - h.tick0);
  }
  c->paths = RingPaths(base);
  auto* out = Make<DrainOut>(sender, *c, h.seq);
  if (!out) {
    Unmake(c);
    return 0;
  }
  uint64_t raw = 0;
  auto tracer_record = [&](const char* action) {
    TracerCounts n{raw, h.records + out->runs(), action[0] == 'k' ? KilledDropped(h, h.dropped) : 0};
    out->Line([&](JsonLine& j, uint64_t seq) { FormatTracerRecord(j, *c, h, action, RealNs(), seq, n); });
  };
  Slot* slots = RingSlots(base);
  for (uint32_t i = 0; i < h.slots_hwm; ++i) raw += slots[i].raw_ops;
  if (!h.started) tracer_record("start");
  for (uint32_t i = 0; i < h.slots_hwm; ++i) {
    Slot& s = slots[i];
    out->tid = s.tid;
    const uint32_t first = h.shipped[i], held = SlotHeld(s.tail, first);
    for (uint32_t k = 0; k < held && k < static_cast<uint32_t>(kBufRuns); ++k) out->Put(s.at(first + k));
    if (s.comp().open_runs() > 0 && s.comp().open_runs() <= Compressor::kOpenRuns) s.comp().CloseAll(out);
    if (s.agg().open() > 0 && s.agg().open() <= Aggregator::kEntries) s.agg().CloseAll(out);
  }
  // The runs that found no room in their slot, per file (ring.h: RingLost).
  out->tid = h.pid;
  const Run* lost = RingLost(base);
  for (uint32_t k = 0; k < LostUsed(h); ++k) out->Put(lost[k]);
  tracer_record("killed");
  out->Flush();
  uint64_t n = out->sent();
  Unmake(out);
  Unmake(c);
  return n;
}

}  // namespace

namespace {

// Runs copied out of a live ring under the slot lock, formatted after it is released.
class CopySink final : public RunSink {
 public:
  bool Put(const Run& r) override {
    if (n_ == kCap) return false;
    runs_[n_++] = r;
    return true;
  }
  static constexpr int kCap = kBufRuns + Compressor::kOpenRuns;
  Run runs_[kCap];
  int n_ = 0;
};

uint64_t NowTicks(const RingHeader& h) {
  if (h.use_tsc) return __rdtsc();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
}

// Takes from a live process's ring (a shared mapping) the runs its threads
// have closed and those whose window has ended, as the process's own flusher
// would, under each slot's lock (a slot whose thread holds it is skipped).
uint64_t DrainLive(void* base, LineSender* sender) {
  RingHeader& h = *RingHead(base);
  auto* c = Make<FmtContext>();
  if (!c) return 0;
  BuildPrefixes(c, h.stream, h.host, h.job, h.pid, h.rank, static_cast<int64_t>(geteuid()));  // our own rings only
  c->tick0 = h.tick0;
  c->real0 = h.real0;
  c->ns_per_tick = h.ns_per_tick > 0 ? h.ns_per_tick : 1.0;
  c->paths = RingPaths(base);
  auto* copy = Make<CopySink>();
  if (!copy) {
    Unmake(c);
    return 0;
  }
  __atomic_store_n(&h.drainer_pid, static_cast<int32_t>(getpid()), __ATOMIC_RELAXED);
  uint64_t lines = 0;
  uint64_t window_ticks = h.window_ns > 0 ? static_cast<uint64_t>(static_cast<double>(h.window_ns) / c->ns_per_tick) : 0;
  Slot* slots = RingSlots(base);
  uint32_t hwm = __atomic_load_n(&h.slots_hwm, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < hwm && i < kMaxThreads; ++i) {
    Slot& s = slots[i];
    int expect = 0;
    if (!__atomic_compare_exchange_n(&s.lock, &expect, kLockDrainer, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) continue;
    copy->n_ = 0;
    const uint32_t first = h.shipped[i], tail = s.tail, held = SlotHeld(tail, first);
    for (uint32_t k = 0; k < held && k < static_cast<uint32_t>(kBufRuns); ++k) copy->Put(s.at(first + k));
    __atomic_store_n(&h.shipped[i], tail, __ATOMIC_RELEASE);
    int open = s.comp().open_runs();
    uint64_t now = NowTicks(h);
    if (open > 0 && open <= Compressor::kOpenRuns && window_ticks) s.comp().CloseExpired(now, copy);
    int aggs = s.agg().open();
    if (aggs > 0 && aggs <= Aggregator::kEntries && h.budget_interval_ticks) s.agg().CloseBefore(now / h.budget_interval_ticks, copy);
    int tid = s.tid;
    uint64_t seq = copy->n_ ? __atomic_fetch_add(&h.drain_seq, static_cast<uint64_t>(copy->n_), __ATOMIC_RELAXED) : 0;
    if (copy->n_) __atomic_fetch_add(&h.drained_records, static_cast<uint64_t>(copy->n_), __ATOMIC_RELAXED);
    __atomic_store_n(&s.lock, 0, __ATOMIC_RELEASE);
    if (!copy->n_) continue;
    auto* out = Make<DrainOut>(sender, *c, seq);
    if (!out) break;
    out->tid = tid;
    for (int k = 0; k < copy->n_; ++k) out->Put(copy->runs_[k]);
    out->Flush();
    lines += out->sent();
    Unmake(out);
  }
  Unmake(copy);
  Unmake(c);
  return lines;
}

}  // namespace

DrainStats DrainDeadRings(const char* dir, LineSender* sender, bool live) {
  DrainStats st;
  int dfd = OpenRingDir(dir);
  if (dfd < 0) return st;
  DIR* d = fdopendir(dfd);
  if (!d) {
    SysClose(dfd);
    return st;
  }
  while (dirent* e = readdir(d)) {
    size_t nl = strlen(e->d_name);
    if (strncmp(e->d_name, "ring-", 5) != 0 || nl < 4 || strcmp(e->d_name + nl - 4, ".bin") != 0) continue;
    if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;
    int fd = SysOpenAt(dfd, e->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) continue;
    struct stat sb;
    if (syscall(SYS_fstat, fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        static_cast<size_t>(sb.st_size) != kRingBytes || flock(fd, LOCK_EX | LOCK_NB) != 0) {
      SysClose(fd);
      ++st.skipped;
      continue;
    }
    void* base = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      SysClose(fd);
      ++st.skipped;
      continue;
    }
    RingHeader& h = *RingHead(base);
    bool ok = LayoutMatches(h);
    bool alive = ok && !h.finished && ProcessAlive(h.pid, h.start_time);
    if (ok && alive && live) {
      // The live process's own ring, shared: remap it so the drainer's
      // changes (runs taken, under the slot locks) are the process's.
      munmap(base, kRingBytes);
      base = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base != MAP_FAILED) {
        st.live_lines += DrainLive(base, sender);
        munmap(base, kRingBytes);
      }
      SysClose(fd);
      continue;
    }
    if (!ok || alive) {
      ++st.skipped;  // a live process's ring (or not a ring of this version): left alone
    } else {
      if (!h.finished) {
        st.lines += ShipRing(base, sender);
        ++st.rings;
      }
      syscall(SYS_unlinkat, dfd, e->d_name, 0);
    }
    munmap(base, kRingBytes);
    SysClose(fd);  // releases the lock
  }
  closedir(d);
  return st;
}

DrainStats DrainDeadRingsTo(const char* dir, const char* output, const char* spool_dir, bool* ok) {
  LineSender sender;
  LineSender::Options o;
  o.output = output && *output ? output : "-";
  o.spool_dir = spool_dir;
  char err[256];
  *ok = sender.Init(o, err, sizeof err);
  if (!*ok) return {};
  DrainStats st = DrainDeadRings(dir, &sender);
  sender.Close();
  return st;
}

}  // namespace iosonar::trace
