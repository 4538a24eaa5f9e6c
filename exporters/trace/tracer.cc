// libiosonar-trace.so: LD_PRELOAD interposition of POSIX and stdio I/O.
//
// One wrapper shape (as Darshan): the real symbol is resolved once with
// dlsym(RTLD_NEXT); a wrapper times the real call, records it, and returns
// the real result with the real errno. Records are compressed online per
// thread (compress.h) and leave as JSON lines through a LineSender (TCP to the
// collector or Logstash, a file, or stdout; spool when unreachable).
//
// Rules kept here: no allocation per call (fixed tables in BSS, touched only
// when used), no exceptions, no libc entry point that we also wrap is ever
// called from inside (raw syscalls instead), IOSONAR_DISABLE=1 turns it all
// off. Threads own their slot; the slot's spinlock is held only for the
// bookkeeping after a call, so exit() in any thread can flush every slot.
//
// Environment: IOSONAR_OUTPUT (tcp://HOST:PORT, a path or -; default -; or
// "agent": a node agent ships everything from the ring, see g_agent),
// IOSONAR_JOB_ID, IOSONAR_WINDOW_MS (default 1000), IOSONAR_SPOOL_DIR
// (default /tmp/iosonar-spool-UID), IOSONAR_SPOOL_MAX_MB (default 64),
// IOSONAR_EXCLUDE (colon-separated path prefixes; default the system paths
// /etc/ /usr/ /lib/ /lib64/ /bin/ /sbin/ /boot/ /opt/ /var/ /run/ /proc/ /sys/ /dev/),
// IOSONAR_INCLUDE (prefixes traced even when excluded; default /dev/shm/),
// IOSONAR_DETAIL_BUDGET (records a second per process before runs fold into
// per-interval aggregates; default 4000, 0 = no limit), IOSONAR_RING_DIR
// (default /dev/shm/iosonar-ring-UID), IOSONAR_DISABLE, IOSONAR_CLOCK=gettime (do not use the TSC), IOSONAR_FLUSHER=1|0
// (background flush thread always | never; default: only in multi-threaded processes).
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include <cpuid.h>

#include <atomic>
#include <new>
#include <type_traits>
#include <utility>

#include "core/records/fields.h"
#include "core/base/hash.h"
#include "exporters/trace/compress.h"
#include "exporters/trace/iosonar_trace.h"
#include "core/base/redact.h"
#include "exporters/trace/ring.h"
#include "exporters/trace/tracer_internal.h"
#include "exporters/trace/tracer_log.h"
#include "core/records/json_line.h"
#include "core/transport/line_sender.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

// glibc entry points no header declares (fortified and legacy stdio).
extern "C" {
int __vfprintf_chk(FILE* fp, int flag, const char* fmt, va_list ap);
int __fprintf_chk(FILE* fp, int flag, const char* fmt, ...);
char* __fgets_chk(char* str, size_t cap, int n, FILE* fp);
size_t __fread_chk(void* ptr, size_t cap, size_t size, size_t n, FILE* fp);
char* __fgets_unlocked_chk(char* str, size_t cap, int n, FILE* fp);
size_t __fread_unlocked_chk(void* ptr, size_t cap, size_t size, size_t n, FILE* fp);
int _IO_putc(int c, FILE* fp);
int _IO_getc(FILE* fp);
ssize_t __read_chk(int fd, void* buf, size_t n, size_t cap);
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t cap);
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t cap);
}

namespace iosonar::trace {
namespace {

// ---------------------------------------------------------------- real symbols
__attribute__((noinline)) void* Resolve(const char* name) { return dlsym(RTLD_NEXT, name); }
template <typename F>
__attribute__((always_inline)) inline F Real(const char* name, F* slot) {
  F f = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<F>(Resolve(name));
    __atomic_store_n(slot, f, __ATOMIC_RELAXED);
  }
  return f;
}
#define REAL(name) Real<decltype(real_##name)>(#name, &real_##name)
#define DECLARE_REAL(name) decltype(&::name) real_##name = nullptr

// ---------------------------------------------------------------- raw syscalls
long SysFstat(int fd, struct stat* st) { return syscall(SYS_fstat, fd, st); }
long SysRead(int fd, void* b, size_t n) { return syscall(SYS_read, fd, b, n); }
int SysOpen(const char* p, int flags) { return static_cast<int>(syscall(SYS_openat, AT_FDCWD, p, flags, 0)); }
void SysClose(int fd) { syscall(SYS_close, fd); }
long SysLseek(int fd, off_t off, int whence) { return syscall(SYS_lseek, fd, off, whence); }

// ---------------------------------------------------------------- clock
// Ticks are TSC cycles when the TSC is invariant (10 ns to read here, against
// 25 ns for clock_gettime), else CLOCK_MONOTONIC ns. Ticks become epoch ns
// at format time using the rate measured between init and now, which is
// exact to a few parts in 10^5 after a millisecond.
bool g_use_tsc = false;
uint64_t g_tick0 = 0;
int64_t g_mono0 = 0, g_real0 = 0;
double g_ns_per_tick = 1.0;

// The program's errno, put back when the scope ends. The wrappers' inline
// fast path reads errno only after a call that failed and never writes it:
// whatever may make a system call between the program's call and its return
// (classifying an fd, a contended slot lock, the slow halves of Record, which
// may flush) keeps errno itself with one of these.
struct ErrnoKeeper {
  int* p = &errno;
  int e = *p;
  ~ErrnoKeeper() { *p = e; }
};

int64_t ClockNs(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
inline uint64_t Ticks() {
  if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
  return static_cast<uint64_t>(ClockNs(CLOCK_MONOTONIC));
}
bool InvariantTsc() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d >> 8) & 1;
}
FmtContext& Fc();
// A (TSC, CLOCK_MONOTONIC) pair read back to back, again if the thread was
// preempted in between: the rate over a short interval stays right.
void ClockPair(uint64_t* t, int64_t* m) {
  for (int i = 0; i < 8; ++i) {
    const uint64_t a = __rdtsc();
    *m = ClockNs(CLOCK_MONOTONIC);
    const uint64_t b = __rdtsc();
    *t = a + (b - a) / 2;
    if (b - a < 20000) return;
  }
}
constexpr int64_t kCalibrateNs = 50000;  // the shortest interval a rate is measured over
void CalibrateClock() {
  if (g_use_tsc) {
    uint64_t t;
    int64_t m;
    ClockPair(&t, &m);
    if (m - g_mono0 >= kCalibrateNs && t > g_tick0) g_ns_per_tick = static_cast<double>(m - g_mono0) / static_cast<double>(t - g_tick0);
  } else {
    g_ns_per_tick = 1.0;
  }
  Fc().tick0 = g_tick0;
  Fc().real0 = g_real0;
  Fc().ns_per_tick = g_ns_per_tick;
}
uint64_t NsToTicks(int64_t ns) { return static_cast<uint64_t>(static_cast<double>(ns) / g_ns_per_tick); }

// ---------------------------------------------------------------- process state
enum State : int { kUninit = 0, kIniting, kActive, kDisabled, kFinished };
std::atomic<int> g_state{kUninit};
__thread int t_busy __attribute__((tls_model("initial-exec"))) = 0;  // inside the tracer: pass through

char g_host[256];
char g_job[128];
int64_t g_rank = -1;
int g_pid = 0, g_ppid = 0;
char g_cmdline[1024];
size_t g_cmdline_len = 0;
uint64_t g_stream = 0;
uint64_t g_seq = 0;  // under g_fmt_mu
int64_t g_window_ns = 1000000000;
uint64_t g_window_ticks = 0;
uint64_t g_sweep_ticks = 0;
uint64_t g_budget = 4000;              // detail records a second (IOSONAR_DETAIL_BUDGET), see OverBudget
uint64_t g_ring_max_files = 1024;      // rings waiting in the ring directory before a new one is private (MakeRing)
uint64_t g_ring_grace_s = 3600;        // a dead process's ring unshipped this long is reclaimed (ReclaimDeadRings)
uint64_t g_budget_interval_ticks = 1;  // one second
// A first rate for window arithmetic (to ~0.1 %: tight pairs; refined at
// every flush, and by the agent over the process's life) and the intervals
// in ticks. Measured when the ring is made (the first recorded op), not at
// start: the 50 us the rate needs have then mostly passed already, and a
// process that records nothing (a shell that forks and execs) never waits
// for them. Everything that uses the intervals runs after EnsureRing.
void CalibrateIntervals() {
  if (g_use_tsc)
    while (ClockNs(CLOCK_MONOTONIC) - g_mono0 < kCalibrateNs + 1000) __builtin_ia32_pause();
  CalibrateClock();
  g_window_ticks = NsToTicks(g_window_ns);
  g_budget_interval_ticks = NsToTicks(1000000000);
  if (g_budget_interval_ticks == 0) g_budget_interval_ticks = 1;
  g_sweep_ticks = NsToTicks(g_window_ns > 0 ? g_window_ns / 4 : 250000000);
}
// System and runtime paths, as Darshan's darshan_path_exclusions (plus
// /lib64/ and /run/): configuration, libraries and runtime state that every
// process reads (MPI and PMIx configuration, locale, NSS) and that would
// otherwise decide a job's I/O mode.
char g_exclude[1024] = "/etc/:/usr/:/lib/:/lib64/:/bin/:/sbin/:/boot/:/opt/:/var/:/run/:/proc/:/sys/:/dev/";
char g_include[1024] = "/dev/shm/";  // wins over g_exclude
std::atomic<uint64_t> g_raw_ops{0};
std::atomic<uint64_t> g_records{0};
std::atomic<uint64_t> g_dropped{0};
bool g_started_emitted = false;  // under g_fmt_mu
uint64_t g_untraced_execs = 0;   // programs exec'd that the tracer cannot see (process.inc: NoteUntracedExec)
char g_untraced_exec[256];       // the last one's path
// IOSONAR_OUTPUT=agent: the process never formats nor sends anything, not even
// at exit. Closed runs stay in the ring's slots (a full buffer folds runs into
// the per-interval aggregates); the node agent (`iosonar-exporter agent`,
// exporters/agent/ring_agent.h) closes expired runs, ships them, and removes
// the ring once its sender holds them durably. No flusher thread, no socket.
bool g_agent = false;
// In raw storage: constructed in Init(), never destroyed, so no static
// constructor touches it and no atexit destructor closes it before the final flush.
alignas(LineSender) unsigned char g_sender_mem[sizeof(LineSender)];
bool g_sender_ready = false;
inline LineSender& Sender() { return *reinterpret_cast<LineSender*>(g_sender_mem); }
inline bool SenderOwns(int fd) { return g_sender_ready && Sender().OwnsFd(fd); }
pthread_mutex_t g_fmt_mu = PTHREAD_MUTEX_INITIALIZER;
// This thread holds g_fmt_mu: a fork() from a signal handler that interrupted
// it must not take it again in the fork handler (that would never return).
__thread int t_fmt_held __attribute__((tls_model("initial-exec"))) = 0;
void FmtLock() {
  pthread_mutex_lock(&g_fmt_mu);
  ++t_fmt_held;
}
void FmtUnlock() {
  --t_fmt_held;
  pthread_mutex_unlock(&g_fmt_mu);
}
pthread_key_t g_thread_key;

uint64_t NewStream() {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = __rdtsc() * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(getpid());
  r &= 0x7fffffffffffffffull;
  return r ? r : 1;
}

// ---------------------------------------------------------------- fd table
enum FdKind : uint8_t { kFdUnknown = 0, kFdTraced, kFdIgnored };
struct FdInfo {
  uint64_t file_id;
  int64_t offset;       // shadow of the kernel file offset; -1 unknown (O_APPEND, not seekable)
  int64_t stdio_offset; // the stdio stream's position, if a FILE* sits on this fd
  uint8_t kind;
};
constexpr int kMaxFds = 1 << 16;
FdInfo g_fds[kMaxFds];  // BSS: pages become resident only for fds in use
int g_fd_hwm = -1;      // highest fd whose entry was ever set: close_range scans no further

inline void MarkFd(int fd) {
  int cur = __atomic_load_n(&g_fd_hwm, __ATOMIC_RELAXED);
  while (fd > cur && !__atomic_compare_exchange_n(&g_fd_hwm, &cur, fd, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// ---------------------------------------------------------------- paths
// The path table lives in the ring (ring.h), so a drainer can name the files
// of a process that died; null until the ring exists.
PathSlot* g_paths = nullptr;
uint16_t g_path_used[kPathSlots];  // indices of claimed path slots (copied into a fork child's ring)
std::atomic<int> g_path_count{0};
Slot* g_slots = nullptr;  // the thread slots, in the ring too
bool EnsureRing();
void BackRingPage(const void* p, size_t n);

// file.id of a path: FNV-1a-64 (core/base/hash.h: constexpr, no allocation or
// library calls), 0 kept for "free".
uint64_t PathId(const char* s, size_t n) {
  const uint64_t h = Fnv1a(s, n);
  return h ? h : 1;
}

// Absolute, lexically normalised path (no symlink resolution: cheap, and the
// name the user wrote is the one they recognise).
size_t AbsPath(int dirfd, const char* p, char* out, size_t cap) {
  char tmp[4096];
  size_t n = 0;
  if (p[0] != '/') {
    long r;
    if (dirfd == AT_FDCWD || dirfd < 0) {
      r = syscall(SYS_getcwd, tmp, sizeof tmp - 1);
      if (r <= 0) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      r = syscall(SYS_readlinkat, AT_FDCWD, link, tmp, sizeof tmp - 1);
      if (r <= 0) return 0;
      tmp[r] = '\0';
    }
    n = strlen(tmp);
    if (n + 1 < sizeof tmp) tmp[n++] = '/';
  }
  size_t pl = strlen(p);
  if (n + pl >= sizeof tmp) pl = sizeof tmp - n - 1;
  memcpy(tmp + n, p, pl);
  n += pl;
  tmp[n] = '\0';
  // Normalise: collapse //, /./ and /../
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    while (i < n && tmp[i] == '/') ++i;
    size_t j = i;
    while (j < n && tmp[j] != '/') ++j;
    size_t len = j - i;
    if (len == 0) break;
    if (len == 1 && tmp[i] == '.') {
    } else if (len == 2 && tmp[i] == '.' && tmp[i + 1] == '.') {
      while (o > 0 && out[o - 1] != '/') --o;
      if (o > 0) --o;
    } else if (o + 1 + len < cap) {
      out[o++] = '/';
      memcpy(out + o, tmp + i, len);
      o += len;
    }
    i = j;
  }
  if (o == 0 && cap > 1) out[o++] = '/';
  out[o] = '\0';
  return o;
}

bool MatchesPrefix(const char* abs, const char* list) {
  const char* e = list;
  while (*e) {
    const char* colon = strchr(e, ':');
    size_t n = colon ? static_cast<size_t>(colon - e) : strlen(e);
    if (n && strncmp(abs, e, n) == 0) return true;
    if (!colon) break;
    e = colon + 1;
  }
  return false;
}
bool Excluded(const char* abs) { return !MatchesPrefix(abs, g_include) && MatchesPrefix(abs, g_exclude); }

void RememberPath(uint64_t id, const char* abs, size_t n) {
  if (!EnsureRing() || !g_paths) return;
  for (int probe = 0; probe < 16; ++probe) {
    PathSlot& s = g_paths[(id + static_cast<uint64_t>(probe)) % kPathSlots];
    uint64_t cur = __atomic_load_n(&s.id, __ATOMIC_ACQUIRE);
    if (cur == id) return;
    if (cur == 0) {
      // Claim with a sentinel, write the path, then publish the id.
      uint64_t expect = 0;
      if (!__atomic_compare_exchange_n(&s.id, &expect, ~uint64_t{0}, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (expect == id) return;
        continue;
      }
      BackRingPage(&s, sizeof s);
      int k = g_path_count.fetch_add(1, std::memory_order_relaxed);
      if (k < kPathSlots) g_path_used[k] = static_cast<uint16_t>((id + static_cast<uint64_t>(probe)) % kPathSlots);
      size_t m = n < sizeof s.path - 1 ? n : sizeof s.path - 1;
      memcpy(s.path, abs, m);
      s.path[m] = '\0';
      __atomic_store_n(&s.id, id, __ATOMIC_RELEASE);
      return;
    }
  }
  // Table full: records of this file carry no path, only file.id.
}

// Returns the file id of a path, or 0 if the path is excluded.
uint64_t IdForPath(int dirfd, const char* p) {
  if (!p) return 0;
  char abs[4096];
  size_t n = AbsPath(dirfd, p, abs, sizeof abs);
  if (n == 0 || Excluded(abs)) return 0;
  uint64_t id = PathId(abs, n);
  RememberPath(id, abs, n);
  return id;
}

// After a successful open of a path: decide whether to trace the fd.
void TrackOpenedFd(int fd, uint64_t id, int flags) {
  if (fd < 0 || fd >= kMaxFds) return;
  MarkFd(fd);
  FdInfo& f = g_fds[fd];
  if (!id) {
    f.kind = kFdIgnored;
    return;
  }
  struct stat st;
  if (SysFstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
    f.kind = kFdIgnored;
    return;
  }
  f.file_id = id;
  f.offset = (flags & O_APPEND) ? -1 : 0;
  f.stdio_offset = f.offset;
  f.kind = kFdTraced;
}

// First data op on an fd we did not see opened (inherited, or opened before
// init): classify it once.
bool ClassifyFd(int fd) {
  const ErrnoKeeper keep;
  MarkFd(fd);
  FdInfo& f = g_fds[fd];
  f.kind = kFdIgnored;
  if (SenderOwns(fd)) return false;
  struct stat st;
  if (SysFstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  long r = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof target - 1);
  if (r <= 0 || target[0] != '/') return false;
  target[r] = '\0';
  // An unlinked file's link reads "PATH (deleted)": its name is PATH.
  static const char kDeleted[] = " (deleted)";
  constexpr long kDel = sizeof kDeleted - 1;
  if (st.st_nlink == 0 && r > kDel && memcmp(target + r - kDel, kDeleted, kDel) == 0) target[r - kDel] = '\0';
  uint64_t id = IdForPath(AT_FDCWD, target);
  if (!id) return false;
  int fl = static_cast<int>(syscall(SYS_fcntl, fd, F_GETFL));
  f.file_id = id;
  f.offset = (fl >= 0 && (fl & O_APPEND)) ? -1 : SysLseek(fd, 0, SEEK_CUR);
  f.stdio_offset = f.offset;
  f.kind = kFdTraced;
  return true;
}

inline FdInfo* TracedFd(int fd) {
  if (fd < 0 || fd >= kMaxFds) return nullptr;
  FdInfo& f = g_fds[fd];
  if (__builtin_expect(f.kind == kFdTraced, 1)) return &f;
  if (f.kind == kFdUnknown && ClassifyFd(fd)) return &f;
  return nullptr;
}

// ---------------------------------------------------------------- the ring
void* g_ring = nullptr;
std::atomic<int> g_ring_state{0};  // 0 none, 1 being made, 2 made (g_ring may still be null: no memory)
char g_ring_path[700];             // "" when the ring is anonymous memory (does not survive)
bool g_ring_populate = true;       // MADV_POPULATE_WRITE works: back pages before first use
FmtContext g_fc;  // the record prefixes, clock and path table formatting uses

FmtContext& Fc() { return g_fc; }
inline RingHeader* Hdr() { return g_ring ? RingHead(g_ring) : nullptr; }

// A page of a file mapping that cannot be backed (a full tmpfs) would kill
// the program with SIGBUS when first touched: back it first. Where it cannot
// be, the ring is abandoned for anonymous memory at creation (see MakeRing).
void BackRingPage(const void* p, size_t n) {
  if (!g_ring_path[0] || !g_ring_populate) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
  uintptr_t e = (reinterpret_cast<uintptr_t>(p) + n + 4095) & ~uintptr_t{4095};
  syscall(SYS_madvise, a, e - a, 23 /* MADV_POPULATE_WRITE */);
}

std::atomic<long> g_threads_at_ring{0};  // the process's threads when its ring was made (StartFlusher), 0 once used
void FillHeader(RingHeader& h) {
  FillRingLayout(h);
  h.pid = g_pid;
  h.ppid = g_ppid;
  long threads = 0;
  h.start_time = ProcessStartTime(g_pid, nullptr, &threads);
  g_threads_at_ring.store(threads, std::memory_order_relaxed);
  h.stream = g_stream;
  h.seq = g_seq;
  h.drain_seq = kDrainSeqBase;
  h.window_ns = g_window_ns;
  h.budget_interval_ticks = g_budget || g_agent ? g_budget_interval_ticks : 0;  // agent mode folds a full buffer
  h.tick0 = g_tick0;
  h.real0 = g_real0;
  h.mono0 = g_mono0;
  h.use_tsc = g_use_tsc;
  h.agent = g_agent;
  h.ns_per_tick = g_ns_per_tick;
  h.rank = g_rank;
  memcpy(h.host, g_host, sizeof h.host - 1);
  memcpy(h.job, g_job, sizeof h.job - 1);
  h.cmdline_len = static_cast<uint32_t>(g_cmdline_len < sizeof h.cmdline ? g_cmdline_len : sizeof h.cmdline - 1);
  memcpy(h.cmdline, g_cmdline, h.cmdline_len);
}

// Creates this process's ring: a file in the verified ring directory, else
// (no such directory, a full or old kernel's tmpfs) anonymous memory that
// works the same but does not survive the process.
void* g_parent_ring = nullptr;  // a fork child's: the parent's ring, read for its paths until the child makes its own
// A fork child's new ring gets the paths its parent knew (inherited fds name
// them); the parent's mapping then goes.
void CopyParentPaths(void* base) {
  void* old = g_parent_ring;
  if (!old) return;
  g_parent_ring = nullptr;
  PathSlot* paths = RingPaths(base);
  int n = g_path_count.load();
  for (int k = 0; k < n && k < kPathSlots; ++k) {
    const PathSlot& from = RingPaths(old)[g_path_used[k]];
    const uint64_t id = __atomic_load_n(&from.id, __ATOMIC_ACQUIRE);
    if (id == 0 || id == ~uint64_t{0}) continue;  // being claimed when the fork was taken
    PathSlot& d = paths[g_path_used[k]];
    BackRingPage(&d, sizeof d);
    memcpy(&d, &from, sizeof d);
  }
  munmap(old, kRingBytes);
}
struct linux_dirent64_view {  // getdents64's record (no glibc declaration)
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};
// Ring files in the directory, counted up to max, and kReclaimLook of them
// picked at random on the way (reservoir sampling: each pass of a process
// looks at other rings), the candidates ReclaimDeadRings looks at. One
// getdents64 call for a directory a running agent keeps small; at most
// kScanMax entries. Called once per process, from MakeRing, which one thread
// runs: the buffers are static (BSS, touched only here).
constexpr int kReclaimLook = 2;
constexpr uint64_t kScanMax = 4096;
char g_reclaim_names[kReclaimLook][64];
uint64_t CountRings(int dfd, uint64_t max, int* picked) {
  static char buf[32768];
  uint64_t n = 0, seen = 0;
  uint64_t rnd = __rdtsc() ^ (static_cast<uint64_t>(g_pid) << 32);
  *picked = 0;
  for (;;) {
    long got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      const auto* d = reinterpret_cast<const struct linux_dirent64_view*>(buf + off);
      if (d->reclen == 0) return n;
      off += d->reclen;
      const bool ring = strncmp(d->name, "ring-", 5) == 0;
      if ((!ring && strncmp(d->name, "new-", 4) != 0) || strlen(d->name) >= sizeof g_reclaim_names[0]) continue;
      n += ring;
      rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t at = seen < kReclaimLook ? seen : (rnd >> 33) % (seen + 1);
      ++seen;
      if (at < kReclaimLook) {
        strcpy(g_reclaim_names[at], d->name);
        if (*picked < kReclaimLook) ++*picked;
      }
      if ((max && n >= max) || seen >= kScanMax) return n;
    }
  }
  return n;
}

// Rings nobody ships: a process killed while no drainer ran, or an
// agent-mode process while no agent runs, leaves its ring in the directory
// (/dev/shm: the node's memory). A new process reclaims them: of the rings
// CountRings picked, those whose process is gone, while no agent holds the
// directory (an agent keeps a shared flock on it: the tracer must get it
// exclusively, without waiting), are stamped when first found so, and
// removed once IOSONAR_RING_GRACE_S later (default an hour; 0: at once), said
// in the tracer's log: an agent restarted within the grace still ships them.
// Bounded: kReclaimLook rings a process, a kill(pid, 0) each, and a few
// system calls for a dead one; never a wait. A ring whose pid was reused by
// a live process waits until that one is gone too; one that is malformed,
// not ours or being made is left alone. Returns the rings removed.
int ReclaimDeadRings(int dfd, const char* dir, int picked) {
  int dead[kReclaimLook], ndead = 0;
  auto pid_of = [](const char* name) { return atoi(name + (name[0] == 'n' ? 4 : 5)); };
  for (int k = 0; k < picked; ++k) {
    const int pid = pid_of(g_reclaim_names[k]);
    if (pid > 0 && pid != g_pid && syscall(SYS_kill, pid, 0) != 0 && errno == ESRCH) dead[ndead++] = k;
  }
  if (!ndead || syscall(SYS_flock, dfd, LOCK_EX | LOCK_NB) != 0) return 0;  // none gone, or an agent drains here
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int removed = 0;
  for (int x = 0; x < ndead; ++x) {
    const char* name = g_reclaim_names[dead[x]];
    const int fd = static_cast<int>(syscall(SYS_openat, dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (fd < 0) continue;
    struct stat st;
    RingHeader h;
    // A "new-" file is a ring its process never finished making (killed
    // between its creation and its rename): never read by anyone, it goes.
    if (name[0] == 'n') {
      if (SysFstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 &&
          syscall(SYS_unlinkat, dfd, name, 0) == 0) {
        ++removed;
        char why[160];
        snprintf(why, sizeof why, "/%s: a ring never finished by a process that is gone; removed", name);
        TracerLog("iosonar-trace: ", dir, why);
      }
      SysClose(fd);
      continue;
    }
    const bool ours = SysFstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 &&
                      static_cast<size_t>(st.st_size) == kRingBytes &&
                      syscall(SYS_pread64, fd, &h, sizeof h, 0) == static_cast<long>(sizeof h) && h.magic == kRingMagic &&
                      h.version == kRingVersion && h.header_size == sizeof(RingHeader) && h.pid == atoi(name + 5);
    if (ours) {
      int64_t seen = h.reclaim_seen_s;
      if (seen <= 0 || seen > now.tv_sec) {  // first found gone now
        seen = now.tv_sec;
        syscall(SYS_pwrite64, fd, &seen, sizeof seen, offsetof(RingHeader, reclaim_seen_s));
      }
      if (now.tv_sec - seen >= static_cast<int64_t>(g_ring_grace_s) && syscall(SYS_unlinkat, dfd, name, 0) == 0) {
        ++removed;
        char why[200];
        snprintf(why, sizeof why, "/%s: its process (%d) is gone and no agent took the ring for %llu s; removed, "
                 "its unshipped records are lost (IOSONAR_RING_GRACE_S)", name, h.pid,
                 static_cast<unsigned long long>(now.tv_sec - seen));
        TracerLog("iosonar-trace: ", dir, why);
      }
    }
    SysClose(fd);
  }
  syscall(SYS_flock, dfd, LOCK_UN);
  return removed;
}
void MakeRing() {
  CalibrateIntervals();
  g_ring = nullptr;
  g_ring_path[0] = '\0';
  char dir[512];
  // Another user's directory under our name: a private one instead (ring.h),
  // where the agent finds it too (it reports the directory it refused).
  int dfd = OpenDefaultRingDir(dir, sizeof dir);
  void* base = MAP_FAILED;
  int picked = 0;
  uint64_t rings = dfd >= 0 ? CountRings(dfd, g_ring_max_files, &picked) : 0;
  if (picked) {
    const uint64_t gone = static_cast<uint64_t>(ReclaimDeadRings(dfd, dir, picked));
    rings -= gone < rings ? gone : rings;  // (a "new-" file removed is not counted in rings)
  }
  // The ring directory's file system (/dev/shm: memory the job's MPI library
  // and the node share) is never filled by rings: with less than an eighth of
  // it free, the ring is private memory instead (what a killed process, or an
  // agent-mode process while no agent runs, leaves is then lost: said in the
  // tracer's log).
  struct statfs fs;
  if (dfd >= 0 && syscall(SYS_fstatfs, dfd, &fs) == 0) {
    const uint64_t bs = static_cast<uint64_t>(fs.f_bsize), avail = static_cast<uint64_t>(fs.f_bavail) * bs;
    const uint64_t total = static_cast<uint64_t>(fs.f_blocks) * bs;
    if (avail < total / 8) {
      SysClose(dfd);
      dfd = -1;
      TracerLog("iosonar-trace: ", dir, ": less than an eighth free; this process's ring is private memory");
    }
  }
  // Nor by the rings nobody ships: those of killed processes, or of agent-mode
  // processes while no agent runs, stay until a drainer comes. Past
  // IOSONAR_RING_MAX_FILES rings in the directory (1024; 0: no bound), a new
  // ring is private memory too, said in the tracer's log: the node's memory is
  // never eaten by a dead agent.
  if (dfd >= 0 && g_ring_max_files > 0 && rings >= g_ring_max_files) {
    SysClose(dfd);
    dfd = -1;
    char why[160];
    snprintf(why, sizeof why, ": %llu rings wait unshipped (IOSONAR_RING_MAX_FILES; no agent or drainer?); "
             "this process's ring is private memory, lost if unsent", static_cast<unsigned long long>(g_ring_max_files));
    TracerLog("iosonar-trace: ", dir, why);
  }
  if (dfd >= 0) {
    // Made under a name no reader looks at ("new-"), renamed once its header
    // is written: an agent or drainer never sees a ring without one.
    char name[96], tmp[96];
    snprintf(name, sizeof name, "ring-%d-%016llx.bin", g_pid, static_cast<unsigned long long>(g_stream));
    snprintf(tmp, sizeof tmp, "new-%d-%016llx.bin", g_pid, static_cast<unsigned long long>(g_stream));
    int fd = static_cast<int>(syscall(SYS_openat, dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd >= 0 && syscall(SYS_ftruncate, fd, kRingBytes) == 0)
      base = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    // The header page backed, or no file ring at all (MADV_POPULATE_WRITE: Linux 5.14).
    if (base != MAP_FAILED && syscall(SYS_madvise, base, kRingHeaderBytes, 23) != 0) {
      munmap(base, kRingBytes);
      base = MAP_FAILED;
    }
    if (base != MAP_FAILED) {
      FillHeader(*RingHead(base));
      if (syscall(SYS_renameat, dfd, tmp, dfd, name) != 0) {
        munmap(base, kRingBytes);
        base = MAP_FAILED;
      }
    }
    if (base == MAP_FAILED && fd >= 0) syscall(SYS_unlinkat, dfd, tmp, 0);
    if (fd >= 0) SysClose(fd);  // the mapping stays
    if (base != MAP_FAILED) snprintf(g_ring_path, sizeof g_ring_path, "%s/%s", dir, name);
    SysClose(dfd);
  }
  if (base == MAP_FAILED) {
    base = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return;  // no memory: no slots, ops are counted as dropped
    FillHeader(*RingHead(base));
  }
  CopyParentPaths(base);
  g_slots = RingSlots(base);
  g_paths = RingPaths(base);
  g_fc.paths = g_paths;
  g_ring = base;
}

bool EnsureRing() {
  if (__builtin_expect(g_ring_state.load(std::memory_order_acquire) == 2, 1)) return g_ring != nullptr;
  int expect = 0;
  if (g_ring_state.compare_exchange_strong(expect, 1)) {
    const ErrnoKeeper keep;  // (its mkdir's EEXIST, a reclaim's ESRCH: never the program's)
    ++t_busy;
    MakeRing();
    --t_busy;
    g_ring_state.store(2, std::memory_order_release);
  }
  // Another thread makes it (a few system calls). A fork taken meanwhile
  // gives the child state 0, not 1 (AtForkChild): no child waits here for a
  // thread that did not come along.
  for (unsigned spins = 0; g_ring_state.load(std::memory_order_acquire) != 2; ++spins) {
    if (spins < 256) __builtin_ia32_pause();
    else syscall(SYS_sched_yield);
  }
  return g_ring != nullptr;
}

// The process ends through its exit path (or execs) having sent everything:
// nothing for a drainer; the ring file goes.
void RetireRing(uint32_t ended = 1) {
  if (g_agent) {  // finished but unsent: the agent ships it and removes the ring
    if (RingHeader* h = Hdr()) {
      __atomic_store_n(&h->dropped, g_dropped.load(), __ATOMIC_RELAXED);
      __atomic_store_n(&h->ended, ended, __ATOMIC_RELEASE);
    }
    return;
  }
  if (RingHeader* h = Hdr()) __atomic_store_n(&h->finished, 1u, __ATOMIC_RELEASE);
  if (g_ring_path[0]) syscall(SYS_unlinkat, AT_FDCWD, g_ring_path, 0);
  g_ring_path[0] = '\0';
}

// ---------------------------------------------------------------- thread slots
void FlushBuffered(Slot* s);

// A thread's tracing state (ring.h: struct Slot) lives in the ring, a shared
// mapping of a file, so what a thread has not yet sent survives the death of
// the process; a slot's pages are backed only once a thread uses it. The
// flags that every scan reads live apart, in g_slot_flags (BSS).
// in_use: 0 free, 1 claimed and being set up (ClaimSlot: its index, shipped
// count and compressor not yet this thread's), kSlotReady once set up. Only
// a ready slot is flushed by another thread (the flusher, FlushAll): one
// caught between its claim and its set-up read another slot's shipped count
// (a never-used slot's index is 0) and shipped ~2^32 runs of garbage.
constexpr int kSlotReady = 2;
struct SlotFlags {
  std::atomic<int> in_use;
};
SlotFlags g_slot_flags[kMaxThreads];
__thread Slot* t_slot __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_no_slot __attribute__((tls_model("initial-exec"))) = false;
// Nonzero while this thread holds its own slot's lock (or the AIO table's).
// A signal handler that runs then and does traced I/O on this thread must
// not wait for the lock the interrupted code holds (that never returns: the
// program hangs): its call passes through untraced and is counted in
// tracer.dropped.
__thread int t_recording __attribute__((tls_model("initial-exec"))) = 0;
// Nonzero while a tcp:// sender sends the tracer's lines: the wrapped calls
// made then (a reconnect's name lookup) are the tracer's, not the program's,
// so they pass through uncounted even inside a Record (and so does a signal
// handler's call in that window).
__thread int t_sending __attribute__((tls_model("initial-exec"))) = 0;

inline SlotFlags& Flags(const Slot* s) { return g_slot_flags[s->index]; }
inline bool TryLockSlot(Slot* s) { return __atomic_exchange_n(&s->lock, kLockThread, __ATOMIC_ACQUIRE) == 0; }
// The lock is held by a drainer only for a copy (microseconds); one that died
// holding it (SIGKILL) must not hang the program: after ~10 ms of spinning on
// a drainer that no longer exists, the slot is taken back.
__attribute__((noinline)) void LockSlotSlow(Slot* s) {
  const ErrnoKeeper keep;  // kill(2) of a drainer that died sets ESRCH
  for (uint64_t spins = 1;; ++spins) {
    __builtin_ia32_pause();
    int cur = __atomic_load_n(&s->lock, __ATOMIC_RELAXED);
    if (cur == 0 && TryLockSlot(s)) return;
    if (cur == kLockDrainer && (spins & 0xfffff) == 0) {
      RingHeader* h = Hdr();
      int dp = h ? __atomic_load_n(&h->drainer_pid, __ATOMIC_RELAXED) : 0;
      if (dp > 0 && syscall(SYS_kill, dp, 0) != 0 && errno == ESRCH &&
          __atomic_compare_exchange_n(&s->lock, &cur, kLockThread, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    }
  }
}
inline void LockSlot(Slot* s) {
  if (__builtin_expect(!TryLockSlot(s), 0)) LockSlotSlow(s);
}
inline void UnlockSlot(Slot* s) { __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE); }

// Closed runs go to the slot's buffer; a full buffer is flushed first, so a
// run is dropped only if the flush could not make room.
// The detail budget: at most g_budget records a second per process (the
// first ones of each second); past it, runs fold into per-interval aggregates
// (compress.h: Aggregator), so cost and volume stay bounded on patterns that
// do not compress while bytes and ops stay exact. 0: no budget.
std::atomic<uint64_t> g_budget_epoch{0};
std::atomic<uint64_t> g_budget_used{0};

inline uint64_t BudgetEpoch(uint64_t ticks) { return ticks / g_budget_interval_ticks; }
bool OverBudget(uint64_t epoch) {
  uint64_t e = g_budget_epoch.load(std::memory_order_relaxed);
  if (epoch > e && g_budget_epoch.compare_exchange_strong(e, epoch, std::memory_order_relaxed))
    g_budget_used.store(0, std::memory_order_relaxed);
  return g_budget_used.fetch_add(1, std::memory_order_relaxed) >= g_budget;
}

// The budget interval this thread last found over budget, and its ticks
// [t_over_lo, t_over_hi): once over, an interval stays over, so further runs
// of it fold without the shared counter (nor a division), and ops of it that
// continue no run fold straight from the call (RecordSlow).
__thread uint64_t t_over_epoch __attribute__((tls_model("initial-exec"))) = ~uint64_t{0};
__thread uint64_t t_over_lo __attribute__((tls_model("initial-exec"))) = 0;
__thread uint64_t t_over_hi __attribute__((tls_model("initial-exec"))) = 0;
inline bool InOverInterval(uint64_t t) { return t >= t_over_lo && t < t_over_hi; }

// Agent mode: places of a slot's buffer kept for aggregates.
constexpr int kAggReserve = 4 * Aggregator::kEntries;
static_assert(kAggReserve < kBufRuns / 4, "most of the buffer is for detail runs");

// The runs a slot's buffer holds (ring.h: a circle; shipped advances as they leave).
inline uint32_t& ShippedOf(const Slot* s) { return Hdr()->shipped[s->index]; }
inline uint32_t Held(const Slot* s) { return SlotHeld(s->tail, __atomic_load_n(&ShippedOf(s), __ATOMIC_ACQUIRE)); }

// Pages of this process's ring backed so far, per slot: its head (lock,
// compressor, aggregator) once claimed, and the first g_slot_runs_backed runs
// of its buffer (a page at a time as runs reach them): a process that closes
// a few runs touches a few pages of /dev/shm, not the whole 128 KiB slot.
bool g_slot_backed[kMaxThreads];
uint16_t g_slot_runs_backed[kMaxThreads];
__attribute__((noinline)) void BackRunPage(Slot* s, uint32_t at) {
  const uint32_t end = at + 4096 / sizeof(Run) < kBufRuns ? at + static_cast<uint32_t>(4096 / sizeof(Run)) : kBufRuns;
  BackRingPage(&s->buf[at], (end - at) * sizeof(Run));
  g_slot_runs_backed[s->index] = static_cast<uint16_t>(end);
}
// Appends r to s's buffer (the caller holds s's lock and checked for room).
inline void PutRun(Slot* s, const Run& r) {
  const uint32_t at = s->tail % kBufRuns;
  if (__builtin_expect(at >= g_slot_runs_backed[s->index], 0)) BackRunPage(s, at);
  s->buf[at] = r;
  __atomic_store_n(&s->tail, s->tail + 1, __ATOMIC_RELEASE);
}

// Agent mode: a thread whose buffer is full before the agent came by (a
// process touching many small files between two of the agent's passes) puts
// its closed runs into a spill slot: a free slot of the ring claimed for it,
// with the thread's tid, which the agent ships like any other (it reads every
// slot below slots_hwm). Up to kMaxSpillSlots per process; only past those do
// runs fold into the per-interval aggregates, and only past the aggregates'
// reserve is anything dropped (counted).
constexpr int kMaxSpillSlots = 16;
std::atomic<int> g_spill_slots{0};
__thread Slot* t_spill __attribute__((tls_model("initial-exec"))) = nullptr;
Slot* ClaimSlot();
void ReleaseSpill() {
  if (Slot* sp = t_spill) {
    t_spill = nullptr;
    g_spill_slots.fetch_sub(1, std::memory_order_relaxed);
    // Its runs stay until the agent takes them: AcquireSlot passes over a slot that holds any.
    g_slot_flags[sp->index].in_use.store(0, std::memory_order_release);
  }
}
// A spill slot with room for one run, or null.
Slot* SpillSlot() {
  if (t_spill && Held(t_spill) < kBufRuns) return t_spill;
  ReleaseSpill();
  if (g_spill_slots.fetch_add(1, std::memory_order_relaxed) >= kMaxSpillSlots) {
    g_spill_slots.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  t_spill = ClaimSlot();
  if (!t_spill) g_spill_slots.fetch_sub(1, std::memory_order_relaxed);
  return t_spill;
}

// The lost table (ring.h: RingLost): a closed run that finds no room in its
// slot folds into the aggregate of its key there, so its ops, bytes and time
// still reach the data (as the file's aggregate record, at the process's
// end); a run is dropped (counted) only when the table has no room for a new
// key. Rare (agent mode with no agent for long): a process-wide spinlock,
// never taken by a signal handler (they pass through: t_recording) nor with
// another lock of its kind held. The key index is this process's (BSS).
std::atomic_flag g_lost_lock = ATOMIC_FLAG_INIT;
uint16_t g_lost_index[kLostRuns * 2];  // open addressing, entry + 1 (0: empty)
uint64_t LostKey(const Run& r) {
  uint64_t k = r.file_id ? r.file_id : (uint64_t{0x9e3779b97f4a7c15} * static_cast<uint32_t>(r.fd));
  k ^= (static_cast<uint64_t>(r.op) << 56) ^ (static_cast<uint64_t>(r.layer) << 48) ^ static_cast<uint64_t>(r.size) * 0x100000001b3ull ^
       static_cast<uint64_t>(static_cast<uint32_t>(r.err)) << 20;
  return k * 0xff51afd7ed558ccdull;
}
bool SameLostKey(const Run& a, const Run& r) {
  return a.file_id == r.file_id && a.op == r.op && a.layer == r.layer && a.size == r.size && a.err == r.err &&
         (r.file_id || a.fd == r.fd);
}
bool FoldLost(const Run& r) {
  RingHeader* h = Hdr();
  if (!h) return false;
  while (g_lost_lock.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  Run* lost = RingLost(g_ring);
  bool ok = true;
  uint32_t ix = static_cast<uint32_t>(LostKey(r) >> 40) % (kLostRuns * 2);
  for (;; ix = (ix + 1) % (kLostRuns * 2)) {
    const uint16_t e = g_lost_index[ix];
    if (e && SameLostKey(lost[e - 1], r)) break;
    if (e) continue;
    const uint32_t used = h->lost_used;
    if (used >= static_cast<uint32_t>(kLostRuns)) {
      ok = false;
      break;
    }
    Run& a = lost[used];
    BackRingPage(&a, sizeof a);
    a = r;
    a.agg = 1;
    a.strided = 0;
    a.stride = 0;
    a.offset = a.next_offset = -1;
    a.count = a.bytes = a.dur = a.n_seq = a.n_strided = a.n_random = 0;
    g_lost_index[ix] = static_cast<uint16_t>(used + 1);
    __atomic_store_n(&h->lost_used, used + 1, __ATOMIC_RELEASE);
    break;
  }
  if (ok) {
    Run& a = lost[g_lost_index[ix] - 1];
    a.count += r.count;
    a.bytes += r.bytes;
    a.dur += r.dur;
    if (r.t_start < a.t_start) a.t_start = r.t_start;
    if (r.t_end > a.t_end) a.t_end = r.t_end;
    if (r.agg) {
      a.n_seq += r.n_seq;
      a.n_strided += r.n_strided;
      a.n_random += r.n_random;
    } else {
      const uint64_t sq = OpsSequential(r);
      uint64_t st = r.strided && r.count > 1 ? r.count - 1 : 0;
      if (sq + st > r.count) st = r.count - sq;
      a.n_seq += sq;
      a.n_strided += st;
      a.n_random += r.count - sq - st;
    }
  }
  g_lost_lock.clear(std::memory_order_release);
  return ok;
}

class SlotSink final : public RunSink {
 public:
  explicit SlotSink(Slot* s) : s_(s) {}
  bool Put(const Run& r) override {
    if (g_budget && !r.agg) {
      if (InOverInterval(r.t_end)) {
        s_->agg().Fold(r, t_over_epoch, this);
        return true;
      }
      const uint64_t epoch = BudgetEpoch(r.t_end);
      if (epoch == t_over_epoch || OverBudget(epoch)) {
        if (t_over_epoch == ~uint64_t{0} || epoch > t_over_epoch) {  // a later interval (not a late run of an earlier one)
          t_over_epoch = epoch;
          t_over_lo = epoch * g_budget_interval_ticks;
          t_over_hi = t_over_lo + g_budget_interval_ticks;
        }
        s_->agg().Fold(r, epoch, this);
        return true;
      }
    }
    if (g_agent && Held(s_) >= kBufRuns - kAggReserve) {
      if (Slot* sp = SpillSlot()) {  // room in a spill slot: the run stays a run
        LockSlot(sp);  // the agent may be taking from it
        PutRun(sp, r);
        UnlockSlot(sp);
        return true;
      }
      // Until the agent takes them: a run folds into the aggregates (bytes and
      // ops stay exact), and the last kAggReserve places are the aggregates'
      // (the aggregator emits at most kEntries at a time), so an aggregate is
      // dropped (and counted) only when the agent has been away for several
      // intervals, not whenever detail runs filled the buffer first.
      if (!r.agg) {
        s_->agg().Fold(r, BudgetEpoch(r.t_end), this);
        return true;
      }
      if (Held(s_) >= kBufRuns) {  // the last resort: the lost table, else dropped
        if (!FoldLost(r)) g_dropped.fetch_add(r.count, std::memory_order_relaxed);
        return true;  // counted here, not again by the compressor
      }
    }
    if (Held(s_) >= kBufRuns) FlushBuffered(s_);
    if (Held(s_) >= kBufRuns) return FoldLost(r);  // false: dropped, counted by the compressor
    PutRun(s_, r);
    return true;
  }

 private:
  Slot* s_;
};

// The flusher: a background thread that, every quarter window, closes the
// runs whose window has ended and ships closed runs, so a thread that stops
// doing I/O (a compute phase) does not hold its records until it exits. It
// never blocks the app's threads: a slot that is busy is skipped this round.
//
// A second thread is not free: once a process has one, glibc takes its
// multi-threaded paths (cancellation bookkeeping around every system call),
// measured at ~20-60 ns a call here. So by default it starts only in a
// process that is multi-threaded anyway (at its first I/O, or when a second
// thread does I/O); IOSONAR_FLUSHER=1 starts it always, =0 never.
std::atomic<bool> g_flusher_started{false};
void FlushBuffered(Slot* s);
void* FlusherMain(void*) {
  t_busy = 1;  // never traced itself
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the program's signals go to the program's threads
  int64_t period = g_window_ns > 0 ? g_window_ns / 4 : 250000000;
  if (period < 1000000) period = 1000000;
  while (g_state.load(std::memory_order_acquire) == kActive) {
    timespec ts{static_cast<time_t>(period / 1000000000), static_cast<long>(period % 1000000000)};
    nanosleep(&ts, nullptr);
    uint64_t now = Ticks();
    for (int i = 0; i < kMaxThreads && g_state.load(std::memory_order_acquire) == kActive; ++i) {
      SlotFlags& fl = g_slot_flags[i];
      Slot* s = &g_slots[i];
      if (fl.in_use.load(std::memory_order_acquire) != kSlotReady || !TryLockSlot(s)) continue;
      SlotSink sink(s);
      s->comp().CloseExpired(now, &sink);
      if (s->agg().open()) s->agg().CloseBefore(BudgetEpoch(now), &sink);
      FlushBuffered(s);
      UnlockSlot(s);
    }
  }
  return nullptr;
}
int g_flusher_mode = -1;  // -1 auto, 0 never, 1 always (IOSONAR_FLUSHER, read in Init)

// Threads of this process, from /proc/self/stat (field 20), without libc's
// stdio (we must not reach our own wrappers): read once per slot acquisition.
int ThreadCount() {
  char buf[1024];
  int fd = SysOpen("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  long n = SysRead(fd, buf, sizeof buf - 1);
  SysClose(fd);
  if (n <= 0) return 1;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the command name may contain spaces
  if (!p) return 1;
  for (int field = 2; field < 20 && *p; ++p)
    if (*p == ' ') ++field;
  return atoi(p);
}

void StartFlusher() {
  if (g_agent || g_flusher_mode == 0 || g_flusher_started.load(std::memory_order_relaxed)) return;
  // (the ring was just made: the count read with its start time, not read again)
  const long at_ring = g_threads_at_ring.exchange(0, std::memory_order_relaxed);
  const long threads = at_ring > 0 ? at_ring : ThreadCount();
  if (g_flusher_mode < 0 && threads < 2) return;  // single-threaded: keep glibc's fast paths
  if (g_flusher_started.exchange(true)) return;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 256 << 10);
  pthread_t th;
  pthread_create(&th, &a, FlusherMain, nullptr);
  pthread_attr_destroy(&a);
}

// Claims a free slot of the ring for this thread (its own, or a spill slot:
// see SpillSlot), or null when every slot is taken.
Slot* ClaimSlot() {
  for (int i = 0; i < kMaxThreads; ++i) {
    auto& fl = g_slot_flags[i];
    int expect = 0;
    if (fl.in_use.load(std::memory_order_relaxed) == 0 && fl.in_use.compare_exchange_strong(expect, 1)) {
      Slot* s = &g_slots[i];
      if (!g_slot_backed[i]) {  // once: a slot passed over below (runs the agent has not taken) is not backed again
        BackRingPage(s, offsetof(Slot, buf));  // its buffer a page at a time, as runs reach it (PutRun)
        g_slot_backed[i] = true;
      }
      LockSlot(s);  // a drainer may look at any slot of the ring
      // (Held reads shipped[s->index]: a slot never used has index 0 in the
      // zeroed ring, and slot 0's shipped count would make it look full.)
      s->index = i;
      if (g_agent && (Held(s) > 0 || s->comp().open_runs() || s->agg().open())) {  // an exited thread's runs, not yet taken
        UnlockSlot(s);
        fl.in_use.store(0, std::memory_order_release);
        continue;
      }
      s->tid = static_cast<int>(syscall(SYS_gettid));
      new (s->comp_mem) Compressor(g_window_ticks);
      new (s->agg_mem) Aggregator();
      if (!g_agent) __atomic_store_n(&ShippedOf(s), s->tail, __ATOMIC_RELEASE);  // an earlier thread's leftovers: gone, as before
      s->raw_ops = 0;
      s->next_sweep = 0;
      UnlockSlot(s);
      fl.in_use.store(kSlotReady, std::memory_order_release);
      uint32_t hwm = static_cast<uint32_t>(i + 1);
      uint32_t cur = __atomic_load_n(&Hdr()->slots_hwm, __ATOMIC_RELAXED);
      while (hwm > cur && !__atomic_compare_exchange_n(&Hdr()->slots_hwm, &cur, hwm, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      }
      return s;
    }
  }
  return nullptr;
}

Slot* AcquireSlot() {
  if (t_no_slot) return nullptr;
  if (!EnsureRing()) {
    t_no_slot = true;
    return nullptr;
  }
  StartFlusher();
  Slot* s = ClaimSlot();
  if (!s) {
    t_no_slot = true;  // more live threads than slots: this thread's ops are counted as dropped
    return nullptr;
  }
  t_slot = s;
  pthread_setspecific(g_thread_key, s);
  return s;
}

// ---------------------------------------------------------------- formatting
constexpr size_t kFmtBuf = 1 << 18;
char g_fmt[kFmtBuf];
size_t g_fmt_len = 0;
uint64_t g_fmt_lines = 0;

// The fields every record of this process shares (g_fc), pre-rendered once
// per process (and again after fork): most of a record's bytes cost a memcpy.
void BuildPrefixes() { trace::BuildPrefixes(&g_fc, g_stream, g_host, g_job, g_pid, g_rank, static_cast<int64_t>(getuid())); }
void FmtCommon(JsonLine& j, PrefixKind kind, int64_t ts_ns) { FormatCommon(j, g_fc, kind, ts_ns, g_seq); }

// What a drainer needs to go on where this process stopped: the next
// event.seq, the counters, the clock. Under g_fmt_mu, after a send.
void CommitLocked() {
  RingHeader* h = Hdr();
  if (!h) return;
  h->seq = g_seq;
  h->started = g_started_emitted;
  h->records = g_records.load(std::memory_order_relaxed);
  h->ns_per_tick = g_ns_per_tick;
}

void FmtSendLocked() {
  // Lines the sender can neither send nor spool are counted by the sender
  // (lines_dropped), once: tracer.dropped adds its counter to ours.
  if (g_fmt_len) {
    // Only a tcp:// sender calls wrapped functions (getaddrinfo's NSS files
    // when it reconnects); files and stdout are raw system calls.
    const int own = Sender().kind() == LineSender::Kind::kTcp;
    t_sending += own;
    Sender().Send(g_fmt, g_fmt_len, g_fmt_lines);
    t_sending -= own;
  }
  g_fmt_len = 0;
  g_fmt_lines = 0;
}

// Appends one line built by fn; sends the buffer first if it might not fit.
template <typename Fn>
void FmtLineLocked(Fn&& fn) {
  if (kFmtBuf - g_fmt_len < 8192) FmtSendLocked();
  JsonLine j(g_fmt + g_fmt_len, kFmtBuf - g_fmt_len);
  fn(j);
  if (!j.ok()) return;  // cannot happen with 8 KiB of room; never send half a line
  g_fmt_len += j.size();
  ++g_fmt_lines;
  ++g_seq;
}

void FmtTracerRecordLocked(const char* action) {
  FmtLineLocked([&](JsonLine& j) {
    FmtCommon(j, kPrefixTracer, ClockNs(CLOCK_REALTIME));
    j.KStr(field::kEventAction, action);
    if (g_ppid) j.KInt(field::kProcessPpid, g_ppid);
    if (g_cmdline_len) j.KStr(field::kProcessCommandLine, g_cmdline, g_cmdline_len);
    auto c = Sender().counters();
    uint64_t raw = g_raw_ops.load();
    for (int i = 0; i < kMaxThreads; ++i)
      if (g_slot_flags[i].in_use.load(std::memory_order_acquire) == kSlotReady) raw += g_slots[i].raw_ops;
    j.KInt(field::kTracerRawOps, static_cast<int64_t>(raw));
    uint64_t drained = Hdr() ? __atomic_load_n(&Hdr()->drained_records, __ATOMIC_RELAXED) : 0;
    j.KInt(field::kTracerRecords, static_cast<int64_t>(g_records.load() + drained));
    j.KInt(field::kTracerDropped, static_cast<int64_t>(g_dropped.load() + c.lines_dropped));
    j.KInt(field::kTracerSpooled, static_cast<int64_t>(c.lines_spooled));
    j.KInt(field::kTracerWindowNs, g_window_ns);
    if (const RingHeader* h = Hdr(); h && (h->io_uring_sqes || h->io_uring_rings))
      j.KInt(field::kTracerIoUringSqes, static_cast<int64_t>(h->io_uring_sqes & INT64_MAX));
    if (g_untraced_execs) {
      j.KInt(field::kTracerUntracedExecs, static_cast<int64_t>(g_untraced_execs));
      j.KStr(field::kTracerUntracedExec, g_untraced_exec, strlen(g_untraced_exec));
    }
    j.End();
  });
}

void FmtRunLocked(const Run& r, int tid) {
  FmtLineLocked([&](JsonLine& j) { FormatRun(j, g_fc, r, tid, g_seq); });
  g_records.fetch_add(1, std::memory_order_relaxed);
}

void EmitStartLocked() {
  if (g_started_emitted) return;
  g_started_emitted = true;
  FmtTracerRecordLocked("start");
}

// Caller holds s->lock (or s is otherwise exclusively ours).
void FlushBuffered(Slot* s) {
  if (g_agent || Held(s) == 0) return;  // agent mode: the runs stay for the agent
  ++t_busy;  // sending may reach NSS modules that call wrapped functions
  FmtLock();
  CalibrateClock();
  EmitStartLocked();
  const uint32_t tail = s->tail;
  for (uint32_t n = ShippedOf(s); n != tail; ++n) FmtRunLocked(s->at(n), s->tid);
  FmtSendLocked();
  // Only now are the runs out of the ring: a death before this point has a
  // drainer send them again under the same event.seq (deduplicated).
  __atomic_store_n(&ShippedOf(s), tail, __ATOMIC_RELEASE);
  CommitLocked();
  FmtUnlock();
  --t_busy;
}

void FlushSlot(Slot* s) {
  SlotSink sink(s);
  s->comp().CloseAll(&sink);
  s->agg().CloseAll(&sink);
  FlushBuffered(s);
  g_dropped.fetch_add(s->comp().dropped(), std::memory_order_relaxed);
}

// Flushes every thread's runs and sends a tracer record (exit, exec): one
// send for all of it (a short process: one write to the receiver, not one
// per thread and another for the end record). Every slot in use is locked
// first, in index order, and only then the formatting lock (the order the
// Record paths take them in: a slot's lock, then FlushBuffered's), and each
// slot's runs leave the ring (its shipped count) only once the send is done.
void FlushAll(const char* action) {
  if (g_agent) return;  // the agent closes what is open and sends the tracer record
  ++t_busy;
  int locked[kMaxThreads];
  uint32_t tails[kMaxThreads];
  int nlocked = 0;
  for (int i = 0; i < kMaxThreads; ++i) {
    if (g_slot_flags[i].in_use.load(std::memory_order_acquire) != kSlotReady) continue;
    Slot* s = &g_slots[i];
    LockSlot(s);
    SlotSink sink(s);  // (a full buffer on the way sends what it holds: FlushBuffered)
    s->comp().CloseAll(&sink);
    s->agg().CloseAll(&sink);
    g_dropped.fetch_add(s->comp().dropped(), std::memory_order_relaxed);
    locked[nlocked++] = i;
  }
  FmtLock();
  CalibrateClock();
  for (int k = 0; k < nlocked; ++k) {
    Slot* s = &g_slots[locked[k]];
    tails[k] = s->tail;
    if (Held(s) == 0) continue;
    EmitStartLocked();
    for (uint32_t n = ShippedOf(s); n != tails[k]; ++n) FmtRunLocked(s->at(n), s->tid);
  }
  // The lost table's aggregates, once (an exec that fails goes on with an empty one).
  if (RingHeader* h = Hdr(); h && h->lost_used) {
    while (g_lost_lock.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
    CalibrateClock();
    EmitStartLocked();
    for (uint32_t k = 0; k < LostUsed(*h); ++k) FmtRunLocked(RingLost(g_ring)[k], g_pid);
    __atomic_store_n(&h->lost_used, 0u, __ATOMIC_RELEASE);
    memset(g_lost_index, 0, sizeof g_lost_index);
    g_lost_lock.clear(std::memory_order_release);
  }
  if (g_untraced_execs) EmitStartLocked();  // an exec the tracer cannot follow is said even without I/O
  if (g_started_emitted) FmtTracerRecordLocked(action);
  FmtSendLocked();
  // Only now are the runs out of the ring (as FlushBuffered).
  for (int k = 0; k < nlocked; ++k) __atomic_store_n(&ShippedOf(&g_slots[locked[k]]), tails[k], __ATOMIC_RELEASE);
  CommitLocked();
  FmtUnlock();
  for (int k = 0; k < nlocked; ++k) UnlockSlot(&g_slots[locked[k]]);
  --t_busy;
}

void ThreadExit(void* p) {
  auto* s = static_cast<Slot*>(p);
  if (!s || g_state.load() != kActive) return;
  ++t_busy;
  LockSlot(s);
  if (!g_agent) {  // agent mode: the slot keeps its runs until the agent has taken them (AcquireSlot)
    FlushSlot(s);
    s->comp().Reset();
    s->agg().Reset();
  }
  g_raw_ops.fetch_add(s->raw_ops, std::memory_order_relaxed);
  if (g_agent && Hdr()) __atomic_fetch_add(&Hdr()->raw_ops_gone, s->raw_ops, __ATOMIC_RELAXED);
  s->raw_ops = 0;
  UnlockSlot(s);
  Flags(s).in_use.store(0, std::memory_order_release);
  t_slot = nullptr;
  ReleaseSpill();
  --t_busy;
}

// ---------------------------------------------------------------- init
void ReadCmdline() {
  int fd = SysOpen("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  long n = SysRead(fd, g_cmdline, sizeof g_cmdline - 1);
  SysClose(fd);
  if (n <= 0) return;
  while (n > 0 && g_cmdline[n - 1] == '\0') --n;
  for (long i = 0; i < n; ++i)
    if (g_cmdline[i] == '\0') g_cmdline[i] = ' ';
  g_cmdline_len = RedactCommandLine(g_cmdline, static_cast<size_t>(n));  // no password leaves the node
}

void CopyEnv(const char* name, char* dst, size_t cap) {
  const char* v = getenv(name);
  if (v && *v) {
    strncpy(dst, v, cap - 1);
    dst[cap - 1] = '\0';
  }
}

// A numeric IOSONAR_* setting: a whole decimal number from lo to hi, else
// (letters, a sign, a value out of range) the default, said in the tracer's
// log (never on the program's stderr): a typo never silently means "no bound".
uint64_t EnvNumber(const char* name, uint64_t def, uint64_t lo, uint64_t hi, const char* def_name = nullptr) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  uint64_t n = 0;
  bool ok = true;
  for (const char* p = v; *p && ok; ++p) {
    ok = *p >= '0' && *p <= '9' && n <= (UINT64_MAX - 9) / 10;
    n = n * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (ok && n >= lo && n <= hi) return n;
  char why[256], d[24];
  if (def_name) snprintf(d, sizeof d, "%s", def_name);
  else snprintf(d, sizeof d, "%llu", static_cast<unsigned long long>(def));
  snprintf(why, sizeof why, "=\"%.40s\" is not a whole number from %llu to %llu; the default, %s, is used", v,
           static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi), d);
  TracerLog("iosonar-trace: ", name, why);
  return def;
}

void AioAfterForkChild();
uint64_t AioUncollected();
// Around fork: the formatting lock is held across it so the child's copy of
// the buffer is whole (the child then drops it: the parent sends it). Every
// other lock and once-state of the tracer is reset in the child, which may
// have been forked while any other thread held it (AtForkChild).
__thread bool t_fork_locked __attribute__((tls_model("initial-exec"))) = false;
void AtForkPrepare() {
  ++t_busy;
  t_fork_locked = !t_fmt_held;  // a signal handler's fork on a thread inside a flush: it holds the lock already
  if (t_fork_locked) pthread_mutex_lock(&g_fmt_mu);
}
void AtForkParent() {
  if (t_fork_locked) pthread_mutex_unlock(&g_fmt_mu);
  t_fork_locked = false;
  --t_busy;
}
void AtForkChild() {
  pthread_mutex_init(&g_fmt_mu, nullptr);
  t_fmt_held = 0;
  t_fork_locked = false;
  AioAfterForkChild();
  // Everything buffered belongs to the parent, which will send it; the
  // other threads' slots went with their threads, and this one's stays the
  // parent's (the child takes a slot of its own ring on its first op).
  for (int i = 0; i < kMaxThreads; ++i) g_slot_flags[i].in_use.store(0);
  g_ppid = g_pid;
  g_pid = static_cast<int>(syscall(SYS_getpid));
  g_stream = NewStream();
  g_seq = 0;
  g_fmt_len = 0;
  g_fmt_lines = 0;
  g_started_emitted = false;
  g_untraced_execs = 0;
  g_untraced_exec[0] = '\0';
  g_flusher_started.store(false);  // threads do not survive fork: start a new one on first I/O
  g_threads_at_ring.store(0);
  g_lost_lock.clear(std::memory_order_relaxed);  // the child's ring is a new one: its lost table too
  memset(g_lost_index, 0, sizeof g_lost_index);
  g_raw_ops.store(0);
  g_records.store(0);
  g_dropped.store(0);
  // The parent's ring is shared memory of the parent's: never written here.
  // The child makes its own on its first traced op (EnsureRing), with the
  // paths known so far read from the parent's, kept mapped until then; a
  // child that execs or exits without I/O makes none. Whatever state the
  // set-up was in when the fork was taken (state 1: a thread that did not
  // come along was making it), the child starts from none: it never waits
  // for another thread's work.
  const int ring_state = g_ring_state.load(std::memory_order_acquire);
  void* old = ring_state == 2 ? g_ring : nullptr;
  if (ring_state == 1 && g_ring) munmap(g_ring, kRingBytes);  // published but never ours to write
  if (old) g_parent_ring = old;  // (state 2 means any earlier parent's ring was consumed by MakeRing)
  g_ring = nullptr;
  g_slots = nullptr;
  g_paths = nullptr;
  g_fc.paths = nullptr;
  g_ring_path[0] = '\0';
  g_ring_state.store(0, std::memory_order_release);
  t_slot = nullptr;
  t_spill = nullptr;
  g_spill_slots.store(0);
  memset(g_slot_backed, 0, sizeof g_slot_backed);  // the child's ring is a new one
  memset(g_slot_runs_backed, 0, sizeof g_slot_runs_backed);
  t_no_slot = false;
  pthread_setspecific(g_thread_key, nullptr);  // the parent's slot: never ThreadExit's to flush here
  Sender().AfterForkChild(g_stream);
  BuildPrefixes();
  --t_busy;
}

void ResolveAll();
void Init() {
  int expect = kUninit;
  if (!g_state.compare_exchange_strong(expect, kIniting)) return;
  ++t_busy;
  const char* dis = getenv("IOSONAR_DISABLE");
  if (dis && *dis && strcmp(dis, "0") != 0) {
    g_state.store(kDisabled);
    --t_busy;
    return;
  }
  const char* clk = getenv("IOSONAR_CLOCK");
  g_use_tsc = InvariantTsc() && !(clk && strcmp(clk, "gettime") == 0);
  if (g_use_tsc) {
    ClockPair(&g_tick0, &g_mono0);
  } else {
    g_mono0 = ClockNs(CLOCK_MONOTONIC);
    g_tick0 = static_cast<uint64_t>(g_mono0);
  }
  g_real0 = ClockNs(CLOCK_REALTIME) - (ClockNs(CLOCK_MONOTONIC) - g_mono0);
  g_window_ns = static_cast<int64_t>(EnvNumber("IOSONAR_WINDOW_MS", 1000, 0, 86400000)) * 1000000;  // up to a day
  g_budget = EnvNumber("IOSONAR_DETAIL_BUDGET", g_budget, 0, 1000000000);
  g_ring_max_files = EnvNumber("IOSONAR_RING_MAX_FILES", g_ring_max_files, 0, 1000000);
  g_ring_grace_s = EnvNumber("IOSONAR_RING_GRACE_S", g_ring_grace_s, 0, 100000000);
  if (gethostname(g_host, sizeof g_host - 1) != 0) strcpy(g_host, "unknown");
  CopyEnv("SLURM_JOB_ID", g_job, sizeof g_job);
  if (!g_job[0]) CopyEnv("IOSONAR_JOB_ID", g_job, sizeof g_job);
  for (const char* rv : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* v = getenv(rv);
    if (v && *v) {
      g_rank = strtol(v, nullptr, 10);
      break;
    }
  }
  CopyEnv("IOSONAR_EXCLUDE", g_exclude, sizeof g_exclude);
  g_flusher_mode = static_cast<int>(EnvNumber("IOSONAR_FLUSHER", 2, 0, 1, "auto"));  // 2: unset or bad
  if (g_flusher_mode == 2) g_flusher_mode = -1;
  CopyEnv("IOSONAR_INCLUDE", g_include, sizeof g_include);
  g_pid = static_cast<int>(syscall(SYS_getpid));
  g_ppid = static_cast<int>(syscall(SYS_getppid));
  g_stream = NewStream();
  ReadCmdline();

  static char spool[512];
  const char* sd = getenv("IOSONAR_SPOOL_DIR");
  if (sd && *sd) snprintf(spool, sizeof spool, "%s", sd);
  else snprintf(spool, sizeof spool, "/tmp/iosonar-spool-%u", static_cast<unsigned>(getuid()));
  new (g_sender_mem) LineSender();
  g_sender_ready = true;
  BuildPrefixes();
  LineSender::Options o;
  const char* out = getenv("IOSONAR_OUTPUT");
  o.output = out && *out ? out : "-";
  g_agent = strcmp(o.output, "agent") == 0;  // the sender stays unopened: no descriptor, never used
  o.spool_dir = spool;
  o.log_refusals = false;  // the program's stderr is not ours: a taken spool directory is replaced quietly
  o.spool_max_bytes = EnvNumber("IOSONAR_SPOOL_MAX_MB", o.spool_max_bytes >> 20, 0, uint64_t{1} << 30) << 20;
  char err[256];
  if (!g_agent && !Sender().Init(o, err, sizeof err)) {
    TracerLog("iosonar-trace: ", err, "; tracing is off");  // never on the program's stderr
    g_state.store(kDisabled);
    --t_busy;
    return;
  }
  Sender().set_stream(g_stream);
  ResolveAll();
  pthread_key_create(&g_thread_key, ThreadExit);
  pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
  g_state.store(kActive);
  --t_busy;
}

__attribute__((constructor)) void Ctor() { Init(); }

void Finish(const char* action) {
  int expect = kActive;
  if (!g_state.compare_exchange_strong(expect, kFinished)) return;
  // AIO the program submitted and never collected with aio_return: its ops
  // were not recorded; counted before the count goes out.
  if (uint64_t n = AioUncollected()) g_dropped.fetch_add(n, std::memory_order_relaxed);
  FlushAll(action);
  if (!g_agent) Sender().Close();
  RetireRing();
}

__attribute__((destructor)) void Dtor() { Finish("exit"); }

// ---------------------------------------------------------------- the wrapper shape
// Returns the caller's slot, locked, or nullptr when this call is not traced.
// The cold paths (Init, a thread's first slot: the ring directory's mkdir
// gives EEXIST) keep the program's errno: a wrapper that then passes the call
// through untraced (stdin, a pipe) must not leave ours behind.
__attribute__((noinline, cold)) void InitKeepErrno() {
  int e = errno;
  Init();
  errno = e;
}
__attribute__((noinline, cold)) Slot* AcquireSlotKeepErrno() {
  int e = errno;
  Slot* s = AcquireSlot();
  errno = e;
  return s;
}
// Whether this call may be traced at all (the tracer is on, and this thread
// is not inside it). Nothing is made yet: the ring and the thread's slot come
// with the first op that is recorded (Slotted), so a process that touches no
// traced file (a shell that forks and execs, a compiler pass reading only
// /usr) never makes a ring.
inline bool Enter() {
  if (__builtin_expect(g_state.load(std::memory_order_relaxed) != kActive, 0)) {
    if (g_state.load() == kUninit) InitKeepErrno();
    if (g_state.load() != kActive) return false;
  }
  if (__builtin_expect((t_busy | t_recording) != 0, 0)) {
    // Inside the tracer: its own calls pass through; a signal handler's, run
    // while this thread's Record holds its slot, pass through counted.
    if (t_recording && !t_sending) g_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}
// The caller's slot, after Enter(), for an op that is recorded.
inline Slot* Slotted() {
  Slot* s = t_slot;
  if (__builtin_expect(s == nullptr, 0)) {
    s = AcquireSlotKeepErrno();
    if (!s) {
      g_dropped.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  return s;
}
inline Slot* Begin() { return Enter() ? Slotted() : nullptr; }

// This thread's slot, taken and given back by the Record paths; t_recording
// says so to a signal handler that runs in between (see Begin).
inline void Take(Slot* s) {
  ++t_recording;
  LockSlot(s);
}
inline void Release(Slot* s) {
  UnlockSlot(s);
  --t_recording;
}

// The slow half of Record: a new run, or the periodic sweep. Called with the
// slot locked; unlocks it.
void Sweep(Slot* s, uint64_t now) {
  if (g_agent) __atomic_store_n(&Hdr()->dropped, g_dropped.load(std::memory_order_relaxed), __ATOMIC_RELAXED);
  SlotSink sink(s);
  s->comp().CloseExpired(now, &sink);
  if (s->agg().open()) s->agg().CloseBefore(BudgetEpoch(now), &sink);
  if (!g_agent && Held(s)) FlushBuffered(s);
  s->next_sweep = now + g_sweep_ticks;
}

// Past the detail budget (this thread found this interval's records spent),
// a successful data op at a known offset that continues no run: it folds
// straight into the aggregates, without building (and closing) a run of its
// own. Bytes, ops and the access classes come out as folding its run would
// have made them. Called with the slot locked; unlocks it.
__attribute__((noinline)) void RecordPastBudget(Slot* s, const RawOp& op) {
  const ErrnoKeeper keep;  // the wrappers' fast path leaves errno alone: the slow ones keep it
  SlotSink sink(s);
  Compressor& c = s->comp();
  if (!c.TakeOrRelease(op, &sink)) {
    if (int k = s->agg().FoldOp(op, t_over_epoch, &sink)) c.StartRun(op, &sink, k == 1);
  }
  if (__builtin_expect(op.t1 >= s->next_sweep, 0)) Sweep(s, op.t1);
  Release(s);
}
inline bool PastBudgetOp(const RawOp& op) {  // t_over_* are set only with a budget
  return InOverInterval(op.t1) && IsDataOp(op.op) && op.err == 0 && op.offset >= 0 && op.size > 0;
}

// The slow half of Record: a new run, or the periodic sweep. Called with the
// slot locked; unlocks it.
__attribute__((noinline)) void RecordSlow(Slot* s, const RawOp& op, bool extended, int32_t extra = 0) {
  const ErrnoKeeper keep;
  if (!extended) {
    SlotSink sink(s);
    s->comp().AddMissed(op, &sink, extra);
  }
  if (op.t1 >= s->next_sweep) Sweep(s, op.t1);
  Release(s);
}

// The common case stays inline in every wrapper: the op extends the thread's
// most recent run and no sweep is due.
__attribute__((always_inline)) inline void Record(Slot* s, const RawOp& op) {
  Take(s);
  ++s->raw_ops;
  bool extended = s->comp().TryExtend(op);
  if (__builtin_expect(extended && op.t1 < s->next_sweep, 1)) return Release(s);
  if (!extended && PastBudgetOp(op)) return RecordPastBudget(s, op);
  RecordSlow(s, op, extended);
}

// Record for the ops that carry more than a RawOp (mmap, MPI-IO): out of
// line, so the POSIX wrappers' inline path stays as it was.
__attribute__((noinline)) void RecordExtra(Slot* s, const RawOp& op, int32_t extra) {
  Take(s);
  ++s->raw_ops;
  bool extended = s->comp().TryExtend(op, extra);
  if (extended && op.t1 < s->next_sweep) return Release(s);
  RecordSlow(s, op, extended, extra);
}

// A data op on a traced file by a thread that has no slot (more live
// threads than the ring's 512 slots; Slotted counted it dropped): timed as any other, and folded as a
// run of one op into the lost table (the file's aggregate there), so its
// bytes still reach the data; dropped (counted) only without a ring or room
// there. t_recording: a signal handler's traced call meanwhile passes
// through (counted), never waits for the lost table's lock held below it.
__attribute__((noinline, cold)) void NoSlotRecord(Op op, Layer layer, int fd, int64_t at, int64_t size, FdInfo* f, ssize_t r,
                                                   uint64_t t0, uint64_t t1, bool shadow) {
  const ErrnoKeeper keep;
  if (shadow && r > 0 && at >= 0) (layer == kStdio ? f->stdio_offset : f->offset) = at + r;
  Run run{};
  run.op = op;
  run.layer = layer;
  run.fd = fd;
  run.err = r < 0 ? keep.e : 0;
  run.file_id = f->file_id;
  run.offset = at;
  run.next_offset = at >= 0 && r > 0 ? at + r : at;
  run.size = size;
  run.count = 1;
  run.bytes = r > 0 ? static_cast<uint64_t>(r) : 0;
  run.t_start = t0;
  run.t_end = t1 > t0 ? t1 : t0;
  run.dur = run.t_end - t0;
  ++t_recording;
  if (EnsureRing() && FoldLost(run)) g_dropped.fetch_sub(1, std::memory_order_relaxed);  // Slotted counted it
  --t_recording;
}

// Data op on an fd. off >= 0: positional (pread/pwrite); off < 0: at the
// shadow offset, which then advances. kSizeIsResult: the request's size is
// known only from the result (fprintf, fscanf): it is the bytes moved.
template <bool kSizeIsResult = false, typename Call>
ssize_t DataOp(Op op, Layer layer, int fd, int64_t off, size_t size, Call&& call) {
  if (!Enter()) return call();
  FdInfo* f = TracedFd(fd);
  Slot* s = f ? Slotted() : nullptr;
  if (!s) {
    if (__builtin_expect(!f, 1)) return call();
    const int64_t at = off >= 0 ? off : (layer == kStdio ? f->stdio_offset : f->offset);
    const uint64_t t0 = Ticks();
    const ssize_t r = call();
    const uint64_t t1 = Ticks();
    NoSlotRecord(op, layer, fd, at, kSizeIsResult ? (r > 0 ? r : 0) : static_cast<int64_t>(size), f, r, t0, t1, off < 0);
    return r;
  }
  int64_t at = off >= 0 ? off : (layer == kStdio ? f->stdio_offset : f->offset);
  uint64_t t0 = Ticks();
  ssize_t r = call();
  uint64_t t1 = Ticks();
  // errno is read only when the call failed: the fast path of Record does not
  // touch it, and its slow halves keep it (ErrnoKeeper).
  if (off < 0 && r > 0 && at >= 0) (layer == kStdio ? f->stdio_offset : f->offset) = at + r;
  if constexpr (kSizeIsResult) size = r > 0 ? static_cast<size_t>(r) : 0;
  RawOp o{op, layer, fd, at, static_cast<int64_t>(size), r, r < 0 ? errno : 0, f->file_id, t0, t1};
  Record(s, o);
  return r;
}

// Metadata op. fd >= 0 for fd-based ops (then only traced fds count);
// otherwise path-based with id (0 = excluded path: not recorded).
template <typename Call>
auto MetaOp(Op op, Layer layer, int fd, uint64_t id, Call&& call) -> decltype(call()) {
  if (fd >= 0) {
    FdInfo* f = Enter() ? TracedFd(fd) : nullptr;
    if (!f) return call();
    id = f->file_id;
  } else if (!id || !Enter()) {
    return call();
  }
  Slot* s = Slotted();
  if (!s) return call();
  ++t_busy;
  uint64_t t0 = Ticks();
  auto r = call();
  uint64_t t1 = Ticks();
  int e = errno;
  bool failed;
  if constexpr (std::is_pointer_v<decltype(r)>) failed = r == nullptr;
  else failed = r < 0;
  RawOp o{op, layer, fd, -1, 0, 0, failed ? e : 0, id, t0, t1};
  Record(s, o);
  --t_busy;
  errno = e;
  return r;
}

// Path argument → file id, without tracing when the tracer is off.
inline uint64_t PathId(int dirfd, const char* p) {
  if (g_state.load(std::memory_order_relaxed) != kActive || t_busy || !p) return 0;
  ++t_busy;
  uint64_t id = IdForPath(dirfd, p);
  --t_busy;
  return id;
}

// open-like: the op is recorded on the new fd.
template <typename Call>
int OpenOp(Layer layer, int dirfd, const char* path, int flags, Call&& call) {
  uint64_t id = PathId(dirfd, path);
  Slot* s = id ? Begin() : nullptr;
  if (!s) {
    int fd = call();
    // Excluded paths are never traced; otherwise classify on first use.
    if (fd >= 0 && fd < kMaxFds) {
      MarkFd(fd);
      g_fds[fd].kind = (path && !id && g_state.load() == kActive && !t_busy) ? kFdIgnored : kFdUnknown;
    }
    return fd;
  }
  ++t_busy;
  uint64_t t0 = Ticks();
  int fd = call();
  uint64_t t1 = Ticks();
  int e = errno;
  if (fd >= 0) TrackOpenedFd(fd, id, flags);
  RawOp o{kOpOpen, layer, fd >= 0 ? fd : -1, -1, 0, 0, fd < 0 ? e : 0, id, t0, t1};
  Record(s, o);
  --t_busy;
  errno = e;
  return fd;
}

// The fd is gone (closed or replaced by dup2): close its runs in this thread.
void ForgetFd(int fd) {
  if (fd < 0 || fd >= kMaxFds) return;
  if (Slot* s = t_slot; s && g_fds[fd].kind == kFdTraced && !t_recording) {
    Take(s);
    SlotSink sink(s);
    s->comp().CloseFd(fd, &sink);
    Release(s);
  }
  g_fds[fd].kind = kFdUnknown;
}

void CopyFd(int from, int to) {
  if (from < 0 || to < 0 || from >= kMaxFds || to >= kMaxFds) return;
  MarkFd(to);
  g_fds[to] = g_fds[from];
}

// The program closed [first, last] (close_range, closefrom): each traced fd
// among them gets its close record, as close() would have made, timed as
// the whole call; then we forget what we knew of those fds.
void ForgetRange(unsigned first, unsigned last, uint64_t t0, uint64_t t1) {
  int hi = __atomic_load_n(&g_fd_hwm, __ATOMIC_RELAXED);
  if (static_cast<int64_t>(last) > hi) last = hi < 0 ? 0 : static_cast<unsigned>(hi);
  const bool record = g_state.load(std::memory_order_relaxed) == kActive && !t_busy && !t_recording;
  for (int64_t fd = first; fd <= static_cast<int64_t>(last) && fd < kMaxFds; ++fd) {
    if (g_fds[fd].kind == kFdUnknown) continue;
    if (record && g_fds[fd].kind == kFdTraced) {
      if (Slot* s = Slotted()) {
        RawOp o{kOpClose, kPosix, static_cast<int32_t>(fd), -1, 0, 0, 0, g_fds[fd].file_id, t0, t1};
        Record(s, o);
      }
    }
    ForgetFd(static_cast<int>(fd));
  }
}

// Our own descriptors are not the program's: they are protected from its
// close, close_range, closefrom, dup2 and dup3 (the tracer's own calls, under
// t_busy, are not the program's).
inline bool Protected(int fd) { return !t_busy && fd >= 0 && SenderOwns(fd); }

// close_range(first, last, flags) that leaves our descriptors open: the range
// is split around them, so the program's other descriptors still close.
// Raw system calls; returns 0 or -1 with errno (ENOSYS from an old kernel).
int CloseRangeAround(unsigned first, unsigned last, int flags) {
  int own[4];
  int n = (g_sender_ready && !t_busy && !(flags & CLOSE_RANGE_CLOEXEC) && first <= last) ? Sender().OwnFds(own, 4) : 0;
  if (n == 2 && own[0] > own[1]) std::swap(own[0], own[1]);
  unsigned lo = first;
  int rc = 0, err = 0;
  auto close_part = [&](unsigned a, unsigned b) {
    if (syscall(SYS_close_range, a, b, flags) != 0 && rc == 0) {
      rc = -1;
      err = errno;
    }
  };
  bool done = false;
  for (int i = 0; i < n && !done; ++i) {
    unsigned o = static_cast<unsigned>(own[i]);
    if (o < lo || o > last) continue;
    if (o > lo) close_part(lo, o - 1);
    done = o == last;
    lo = o + 1;
  }
  if (!done && lo <= last) close_part(lo, last);
  if (n == 0 && first > last) close_part(first, last);  // the kernel's EINVAL, as without us
  if (rc != 0) errno = err;
  return rc;
}

DECLARE_REAL(open);
DECLARE_REAL(open64);
DECLARE_REAL(openat);
DECLARE_REAL(openat64);
DECLARE_REAL(creat);
DECLARE_REAL(creat64);
DECLARE_REAL(close);
DECLARE_REAL(read);
DECLARE_REAL(write);
DECLARE_REAL(pread);
DECLARE_REAL(pwrite);
DECLARE_REAL(pread64);
DECLARE_REAL(pwrite64);
DECLARE_REAL(__read_chk);
DECLARE_REAL(__pread_chk);
DECLARE_REAL(__pread64_chk);
DECLARE_REAL(readv);
DECLARE_REAL(writev);
DECLARE_REAL(preadv);
DECLARE_REAL(pwritev);
DECLARE_REAL(preadv64);
DECLARE_REAL(pwritev64);
DECLARE_REAL(lseek);
DECLARE_REAL(lseek64);
DECLARE_REAL(fsync);
DECLARE_REAL(fdatasync);
DECLARE_REAL(stat);
DECLARE_REAL(lstat);
DECLARE_REAL(fstat);
DECLARE_REAL(fstatat);
DECLARE_REAL(stat64);
DECLARE_REAL(lstat64);
DECLARE_REAL(fstat64);
DECLARE_REAL(fstatat64);
DECLARE_REAL(statx);
DECLARE_REAL(access);
DECLARE_REAL(faccessat);
DECLARE_REAL(unlink);
DECLARE_REAL(unlinkat);
DECLARE_REAL(rename);
DECLARE_REAL(renameat);
DECLARE_REAL(mkdir);
DECLARE_REAL(mkdirat);
DECLARE_REAL(rmdir);
DECLARE_REAL(dup);
DECLARE_REAL(dup2);
DECLARE_REAL(dup3);
DECLARE_REAL(fopen);
DECLARE_REAL(fopen64);
DECLARE_REAL(fclose);
DECLARE_REAL(fread);
DECLARE_REAL(fwrite);
DECLARE_REAL(fflush);
DECLARE_REAL(fseek);
DECLARE_REAL(fseeko);
DECLARE_REAL(rewind);
DECLARE_REAL(fseeko64);
DECLARE_REAL(ftello);
DECLARE_REAL(ftello64);
DECLARE_REAL(vfprintf);
DECLARE_REAL(__vfprintf_chk);
DECLARE_REAL(fputc);
DECLARE_REAL(putc);
DECLARE_REAL(_IO_putc);
DECLARE_REAL(fputc_unlocked);
DECLARE_REAL(putc_unlocked);
DECLARE_REAL(fputs);
DECLARE_REAL(fputs_unlocked);
DECLARE_REAL(fwrite_unlocked);
DECLARE_REAL(fgetc);
DECLARE_REAL(getc);
DECLARE_REAL(_IO_getc);
DECLARE_REAL(fgetc_unlocked);
DECLARE_REAL(getc_unlocked);
DECLARE_REAL(fgets);
DECLARE_REAL(fgets_unlocked);
DECLARE_REAL(__fgets_chk);
DECLARE_REAL(fread_unlocked);
DECLARE_REAL(__fread_chk);
DECLARE_REAL(__fgets_unlocked_chk);
DECLARE_REAL(__fread_unlocked_chk);
DECLARE_REAL(mmap);
DECLARE_REAL(aio_read);
DECLARE_REAL(aio_write);
DECLARE_REAL(aio_read64);
DECLARE_REAL(aio_write64);
DECLARE_REAL(aio_return);
DECLARE_REAL(aio_return64);
DECLARE_REAL(aio_error);
DECLARE_REAL(lio_listio);
DECLARE_REAL(lio_listio64);
DECLARE_REAL(mmap64);
DECLARE_REAL(execve);
DECLARE_REAL(execv);
DECLARE_REAL(execvp);
DECLARE_REAL(execvpe);
DECLARE_REAL(fork);
DECLARE_REAL(_exit);
DECLARE_REAL(_Exit);

// Every real symbol, resolved at start (from the constructor, before the
// program has threads): a wrapper's first call never runs dlsym, which takes
// the dynamic loader's lock. A fork child of a thread whose other thread was
// inside dlsym would otherwise wait for that lock for ever.
void ResolveAll() {
  (void)REAL(open);
  (void)REAL(open64);
  (void)REAL(openat);
  (void)REAL(openat64);
  (void)REAL(creat);
  (void)REAL(creat64);
  (void)REAL(close);
  (void)REAL(read);
  (void)REAL(write);
  (void)REAL(pread);
  (void)REAL(pwrite);
  (void)REAL(pread64);
  (void)REAL(pwrite64);
  (void)REAL(readv);
  (void)REAL(writev);
  (void)REAL(preadv);
  (void)REAL(pwritev);
  (void)REAL(preadv64);
  (void)REAL(pwritev64);
  (void)REAL(lseek);
  (void)REAL(lseek64);
  (void)REAL(fsync);
  (void)REAL(fdatasync);
  (void)REAL(stat);
  (void)REAL(lstat);
  (void)REAL(fstat);
  (void)REAL(fstatat);
  (void)REAL(stat64);
  (void)REAL(lstat64);
  (void)REAL(fstat64);
  (void)REAL(fstatat64);
  (void)REAL(statx);
  (void)REAL(access);
  (void)REAL(faccessat);
  (void)REAL(unlink);
  (void)REAL(unlinkat);
  (void)REAL(rename);
  (void)REAL(renameat);
  (void)REAL(mkdir);
  (void)REAL(mkdirat);
  (void)REAL(rmdir);
  (void)REAL(dup);
  (void)REAL(dup2);
  (void)REAL(dup3);
  (void)REAL(fopen);
  (void)REAL(fopen64);
  (void)REAL(fclose);
  (void)REAL(fread);
  (void)REAL(fwrite);
  (void)REAL(fflush);
  (void)REAL(fseek);
  (void)REAL(fseeko);
  (void)REAL(rewind);
  (void)REAL(fseeko64);
  (void)REAL(ftello);
  (void)REAL(ftello64);
  (void)REAL(vfprintf);
  (void)REAL(__vfprintf_chk);
  (void)REAL(fputc);
  (void)REAL(putc);
  (void)REAL(_IO_putc);
  (void)REAL(fputc_unlocked);
  (void)REAL(putc_unlocked);
  (void)REAL(fputs);
  (void)REAL(fputs_unlocked);
  (void)REAL(fwrite_unlocked);
  (void)REAL(fgetc);
  (void)REAL(getc);
  (void)REAL(_IO_getc);
  (void)REAL(fgetc_unlocked);
  (void)REAL(getc_unlocked);
  (void)REAL(fgets);
  (void)REAL(fgets_unlocked);
  (void)REAL(__fgets_chk);
  (void)REAL(fread_unlocked);
  (void)REAL(__fread_chk);
  (void)REAL(__fgets_unlocked_chk);
  (void)REAL(__fread_unlocked_chk);
  (void)REAL(mmap);
  (void)REAL(aio_read);
  (void)REAL(aio_write);
  (void)REAL(aio_read64);
  (void)REAL(aio_write64);
  (void)REAL(aio_return);
  (void)REAL(aio_return64);
  (void)REAL(aio_error);
  (void)REAL(lio_listio);
  (void)REAL(lio_listio64);
  (void)REAL(mmap64);
  (void)REAL(execve);
  (void)REAL(execv);
  (void)REAL(execvp);
  (void)REAL(execvpe);
  (void)REAL(fork);
  (void)REAL(_exit);
  (void)REAL(_Exit);
  ext::ResolveCopy();
  ext::ResolvePosixExtra();
  ext::ResolveStdioExtra();
  ext::ResolveLibaio();
  ext::ResolveSyscall();
}

int64_t IovLen(const struct iovec* iov, int n) {
  int64_t t = 0;
  for (int i = 0; i < n; ++i) t += static_cast<int64_t>(iov[i].iov_len);
  return t;
}

int OpenMode(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}

int StdioFlags(const char* mode) { return mode && mode[0] == 'a' ? O_APPEND : 0; }

// ---- POSIX AIO: glibc does the I/O in its own threads through internal
// pread/pwrite calls that no wrapper sees, so the op is taken from the
// control block: remembered at submission (aio_read, aio_write, lio_listio)
// and recorded when the program collects its result (aio_return), from the
// submission to the collection, with what aio_return and aio_error report.
// A bounded table (open addressing, keyed by the aiocb's address): a program
// that never calls aio_return fills it, and later submissions are counted
// as dropped, never recorded wrong.
struct AioPending {
  uintptr_t cb;  // 0 empty, 1 a freed entry
  uint64_t t0, file_id;
  int64_t offset, size;
  int32_t fd;
  Op op;
};
constexpr int kAioSlots = 1024;
AioPending g_aio[kAioSlots];
std::atomic_flag g_aio_lock = ATOMIC_FLAG_INIT;
uint64_t g_aio_pending = 0;  // entries in use; under g_aio_lock
// Under g_aio_lock: the count changed by d, and the ring says so (so a drainer
// can count a killed process's uncollected ops, ring.h aio_pending).
void AioPendingAdd(int d) {
  g_aio_pending += static_cast<uint64_t>(static_cast<int64_t>(d));
  if (RingHeader* h = Hdr()) __atomic_store_n(&h->aio_pending, g_aio_pending, __ATOMIC_RELAXED);
}
// Held only by wrappers on a thread not already inside one (t_recording: a
// signal handler's aio_return must not wait for the lock its own thread holds).
struct AioLock {
  AioLock() {
    ++t_recording;
    while (g_aio_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  }
  ~AioLock() {
    g_aio_lock.clear(std::memory_order_release);
    --t_recording;
  }
};
inline uint32_t AioHash(uintptr_t k) { return static_cast<uint32_t>((k >> 4) * 0x9E3779B97F4A7C15ull >> 40) % kAioSlots; }

// A child inherits no asynchronous I/O (POSIX), and the table's lock may have
// been held by a parent's thread that did not come along.
void AioAfterForkChild() {
  memset(static_cast<void*>(g_aio), 0, sizeof g_aio);
  g_aio_lock.clear(std::memory_order_relaxed);
  g_aio_pending = 0;
}

// Entries never taken by aio_return (at exit). Lock-free on purpose: the
// process is ending, and a thread that held the lock may be gone.
uint64_t AioUncollected() {
  uint64_t n = 0;
  for (const AioPending& e : g_aio) n += e.cb > 1;
  return n;
}

// At submission, before the real call (which may complete the op at once).
void AioSubmit(const struct aiocb* cb, Op op) {
  if (!cb || t_busy || g_state.load(std::memory_order_relaxed) != kActive) return;
  if (t_recording) {  // a signal handler inside our own wrapper: not recorded, counted
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int saved = errno;  // classifying a new fd may fstat it
  FdInfo* f = TracedFd(cb->aio_fildes);
  errno = saved;
  if (!f) return;
  const uintptr_t k = reinterpret_cast<uintptr_t>(cb);
  AioPending p{k, Ticks(), f->file_id, static_cast<int64_t>(cb->aio_offset), static_cast<int64_t>(cb->aio_nbytes),
               cb->aio_fildes, op};
  AioLock lock;
  AioPending* free_at = nullptr;
  for (int i = 0; i < kAioSlots; ++i) {
    AioPending& e = g_aio[(AioHash(k) + static_cast<uint32_t>(i)) % kAioSlots];
    if (e.cb == k) {  // resubmitted without aio_return: the new op replaces it
      e = p;
      return;
    }
    if (e.cb <= 1 && !free_at) free_at = &e;
    if (e.cb == 0) break;
  }
  if (free_at) {
    *free_at = p;
    AioPendingAdd(1);
  } else {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

// A submission that failed: no result will be collected.
void AioForget(const struct aiocb* cb) {
  if (t_recording) return;  // (then it was not remembered either)
  const uintptr_t k = reinterpret_cast<uintptr_t>(cb);
  AioLock lock;
  for (int i = 0; i < kAioSlots; ++i) {
    AioPending& e = g_aio[(AioHash(k) + static_cast<uint32_t>(i)) % kAioSlots];
    if (e.cb == 0) return;
    if (e.cb == k) {
      e.cb = 1;
      AioPendingAdd(-1);
      return;
    }
  }
}

bool AioTake(const struct aiocb* cb, AioPending* out) {
  if (!cb) return false;
  if (t_recording) {  // a signal handler inside our own wrapper: this op is not recorded, counted (its entry
    g_dropped.fetch_add(1, std::memory_order_relaxed);  // stays until the block is submitted again)
    return false;
  }
  const uintptr_t k = reinterpret_cast<uintptr_t>(cb);
  AioLock lock;
  for (int i = 0; i < kAioSlots; ++i) {
    AioPending& e = g_aio[(AioHash(k) + static_cast<uint32_t>(i)) % kAioSlots];
    if (e.cb == 0) return false;
    if (e.cb == k) {
      *out = e;
      e.cb = 1;
      AioPendingAdd(-1);
      return true;
    }
  }
  return false;
}

template <typename Submit>
int AioSubmitOp(const struct aiocb* cb, Op op, Submit&& submit) {
  AioSubmit(cb, op);
  const int r = submit();
  if (r != 0) {
    const int e = errno;
    AioForget(cb);
    errno = e;
  }
  return r;
}

// aio_return: the op is recorded with the result the program gets.
template <typename Error, typename Return>
ssize_t AioReturnOp(const struct aiocb* cb, Error&& error, Return&& ret) {
  AioPending p;
  if (!AioTake(cb, &p)) return ret();
  const int e0 = errno;
  const int err = error();  // before aio_return, after which it is undefined
  errno = e0;
  const ssize_t r = ret();
  const uint64_t t1 = Ticks();
  int* errp = &errno;
  const int e = *errp;
  Slot* s = err == EINPROGRESS ? nullptr : Begin();
  if (s) {
    RawOp o{p.op, kPosix, p.fd, p.offset, p.size, r, r < 0 ? (err > 0 ? err : EIO) : 0, p.file_id, p.t0,
            t1 > p.t0 ? t1 : p.t0};
    Record(s, o);
  } else if (err == EINPROGRESS) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);  // collected before it completed: not recorded
  }
  *errp = e;
  return r;
}

template <typename Cb, typename Submit>
int LioOp(Cb* const list[], int nent, Submit&& submit) {
  for (int i = 0; i < nent && list; ++i)
    if (list[i] && (list[i]->aio_lio_opcode == LIO_READ || list[i]->aio_lio_opcode == LIO_WRITE))
      AioSubmit(reinterpret_cast<const struct aiocb*>(list[i]), list[i]->aio_lio_opcode == LIO_READ ? kOpRead : kOpWrite);
  // A failed lio_listio may still have queued some entries (EIO): each one's
  // aio_error/aio_return tells, so the entries stay remembered.
  return submit();
}

}  // namespace
}  // namespace iosonar::trace

using namespace iosonar::trace;  // NOLINT

// The wrappers, one file per layer, in this translation unit (see each file's head).
#include "exporters/trace/layer_posix.inc"
#include "exporters/trace/layer_stdio.inc"
#include "exporters/trace/layer_mmap.inc"
#include "exporters/trace/layer_aio.inc"
#include "exporters/trace/process.inc"
#include "exporters/trace/layer_mpiio.inc"

// ---------------------------------------------------------------- for the wrap_*.cc files
// tracer_internal.h: the machinery above for the wrappers of other
// translation units (hidden symbols).
namespace iosonar::trace::ext {
bool Enter() { return ::iosonar::trace::Enter(); }
Slot* Slotted() { return ::iosonar::trace::Slotted(); }
bool TracedFd(int fd, Fd* out) {
  FdInfo* f = ::iosonar::trace::TracedFd(fd);
  if (!f) return false;
  *out = Fd{f->file_id, &f->offset, &f->stdio_offset};
  return true;
}
uint64_t Ticks() { return ::iosonar::trace::Ticks(); }
void Record(Slot* s, const RawOp& op) { ::iosonar::trace::Record(s, op); }
int OpenOp(Layer layer, int dirfd, const char* path, int flags, int (*call)(void*), void* ctx) {
  return ::iosonar::trace::OpenOp(layer, dirfd, path, flags, [&] { return call(ctx); });
}
void ForgetFd(int fd) {
  const int e = errno;
  ::iosonar::trace::ForgetFd(fd);
  errno = e;
}
int StdioFlags(const char* mode) { return ::iosonar::trace::StdioFlags(mode); }
void NoteIoUring(uint64_t sqes, uint64_t rings) {
  if (g_state.load(std::memory_order_relaxed) != kActive) return;
  const int e = errno;
  if (EnsureRing()) {
    __atomic_fetch_add(&Hdr()->io_uring_sqes, sqes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&Hdr()->io_uring_rings, rings, __ATOMIC_RELAXED);
  }
  errno = e;
}
void CountDropped(uint64_t n) { g_dropped.fetch_add(n, std::memory_order_relaxed); }
}  // namespace iosonar::trace::ext
