#include "core/transport/line_sender.h"

#include "core/base/private_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace iosonar {
namespace {

// Raw system calls: inside the preload library the libc names are our own
// wrappers, and the sender must never trace itself.
ssize_t SysWrite(int fd, const void* b, size_t n) { return syscall(SYS_write, fd, b, n); }
ssize_t SysRead(int fd, void* b, size_t n) { return syscall(SYS_read, fd, b, n); }
int SysOpen(const char* p, int flags, int mode) { return static_cast<int>(syscall(SYS_openat, AT_FDCWD, p, flags, mode)); }
int SysClose(int fd) { return static_cast<int>(syscall(SYS_close, fd)); }
int SysFstat(int fd, struct stat* st) { return static_cast<int>(syscall(SYS_fstat, fd, st)); }

int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void CopyStr(char* dst, size_t n, const char* src, size_t len) {
  if (len >= n) len = n - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}

bool Identity(int fd, uint64_t* dev, uint64_t* ino) {
  struct stat st;
  if (fd < 0 || SysFstat(fd, &st) != 0) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  return true;
}
// fd still refers to the object (dev, ino) we opened.
bool Same(int fd, uint64_t dev, uint64_t ino) {
  struct stat st;
  return fd >= 0 && SysFstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

struct Lock {
  explicit Lock(pthread_mutex_t* m) : m_(m) { pthread_mutex_lock(m_); }
  ~Lock() { pthread_mutex_unlock(m_); }
  pthread_mutex_t* m_;
};

}  // namespace

int HighFdBase() {
  struct rlimit rl;
  if (syscall(SYS_getrlimit, RLIMIT_NOFILE, &rl) != 0) return 3;
  uint64_t cur = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur;
  uint64_t base = cur > 64 ? cur - 32 : 3;
  return static_cast<int>(base > 1000 ? 1000 : base);
}

int MoveFdHigh(int fd) {
  if (fd < 0) return fd;
  int saved = errno;
  int hi = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, HighFdBase()));
  if (hi < 0) {
    syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
    hi = fd;
  } else {
    SysClose(fd);
  }
  errno = saved;
  return hi;
}

LineSender::~LineSender() { Close(); }

bool LineSender::Init(const Options& opts, char* err, size_t err_len) {
  opts_ = opts;
  const char* out = opts.output ? opts.output : "-";
  if (opts.spool_dir) CopyStr(spool_dir_, sizeof spool_dir_, opts.spool_dir, strlen(opts.spool_dir));
  opts_.spool_dir = nullptr;  // we keep our own copy
  if (strcmp(out, "-") == 0) {
    kind_ = Kind::kStdout;
    // A private duplicate of fd 1 as it is now: the program may close or
    // redirect its stdout; records keep going where stdout pointed at start,
    // never into what the program puts on fd 1 later.
    file_fd_ = static_cast<int>(syscall(SYS_fcntl, 1, F_DUPFD_CLOEXEC, HighFdBase()));
    if (file_fd_ < 0) file_fd_ = static_cast<int>(syscall(SYS_fcntl, 1, F_DUPFD_CLOEXEC, 3));
    if (file_fd_ >= 0 && !Identity(file_fd_, &file_dev_, &file_ino_)) {
      SysClose(file_fd_);
      file_fd_ = -1;
    }
    return true;
  }
  if (strncmp(out, "tcp://", 6) == 0) {
    const char* hp = out + 6;
    const char* colon = strrchr(hp, ':');
    const char* slash = strchr(hp, '/');
    if (!colon || colon == hp || (slash && slash < colon)) {
      snprintf(err, err_len, "bad output \"%s\": expected tcp://HOST:PORT", out);
      return false;
    }
    size_t hl = static_cast<size_t>(colon - hp);
    if (hp[0] == '[' && hl >= 2 && hp[hl - 1] == ']') CopyStr(host_, sizeof host_, hp + 1, hl - 2);
    else CopyStr(host_, sizeof host_, hp, hl);
    size_t pl = slash ? static_cast<size_t>(slash - colon - 1) : strlen(colon + 1);
    CopyStr(port_, sizeof port_, colon + 1, pl);
    if (pl == 0 || strspn(port_, "0123456789") != pl || atoi(port_) <= 0 || atoi(port_) > 65535) {
      snprintf(err, err_len, "bad output \"%s\": port is not a number in 1..65535", out);
      return false;
    }
    kind_ = Kind::kTcp;
    spool_pending_ = spool_dir_[0] != '\0';
    return true;
  }
  const char* p = strncmp(out, "file://", 7) == 0 ? out + 7 : out;
  if (strstr(out, "://") && p == out) {
    snprintf(err, err_len, "bad output \"%s\": expected tcp://HOST:PORT, a file path or -", out);
    return false;
  }
  CopyStr(path_, sizeof path_, p, strlen(p));
  kind_ = Kind::kFile;
  return true;
}

bool LineSender::WriteAll(int fd, const char* data, size_t len) {
  const bool is_socket = kind_ == Kind::kTcp && fd == sock_;
  size_t off = 0;
  while (off < len) {
    ssize_t n = is_socket ? send(fd, data + off, len - off, MSG_NOSIGNAL) : SysWrite(fd, data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool LineSender::SockValid() {
  if (sock_ < 0) return false;
  if (Same(sock_, sock_dev_, sock_ino_)) return true;
  sock_ = -1;  // closed or replaced under us: the number is not ours any more
  ++c_.fds_lost;
  return false;
}

bool LineSender::FileValid() {
  if (file_fd_ < 0) return false;
  if (Same(file_fd_, file_dev_, file_ino_)) return true;
  file_fd_ = -1;
  ++c_.fds_lost;
  return false;
}

bool LineSender::OpenFile() {
  int fd = SysOpen(path_, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  fd = MoveFdHigh(fd);
  if (!Identity(fd, &file_dev_, &file_ino_)) {
    SysClose(fd);
    return false;
  }
  file_fd_ = fd;
  return true;
}

bool LineSender::EnsureConnected() {
  if (SockValid()) return true;
  int64_t now = MonoNs();
  if (now < next_retry_ns_) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host_, port_, &hints, &res) != 0 || !res) {
    ++c_.connect_failures;
    next_retry_ns_ = now + int64_t{opts_.retry_interval_ms} * 1000000;
    return false;
  }
  int fd = -1;
  // A blocking connect bounded by SO_SNDTIMEO (Linux applies the send
  // timeout to connect: EINPROGRESS when it runs out), then the send timeout
  // proper, so a stuck receiver cannot hang the program forever. (Four
  // system calls fewer than a non-blocking connect and poll, per process.)
  const timeval ctv{opts_.connect_timeout_ms / 1000, (opts_.connect_timeout_ms % 1000) * 1000};
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    fd = MoveFdHigh(fd);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &ctv, sizeof ctv) != 0 || connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      SysClose(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    ++c_.connect_failures;
    next_retry_ns_ = now + int64_t{opts_.retry_interval_ms} * 1000000;
    return false;
  }
  timeval tv{opts_.send_timeout_ms / 1000, (opts_.send_timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (!Identity(fd, &sock_dev_, &sock_ino_)) {
    SysClose(fd);
    return false;
  }
  sock_ = fd;
  if (spool_pending_) ResendSpoolLocked();
  return sock_ >= 0;
}

void LineSender::SpoolName(char* out, size_t n) const {
  snprintf(out, n, "iosonar-%016llx.jsonl", static_cast<unsigned long long>(stream_));
}

// The spool directory, opened and verified: a directory, not a link to one,
// owned by us and usable by no one else (a directory another local user
// prepared could hold links that would make us read, and ship, what they
// point at, or hang on a FIFO). Taken by another user, it is replaced by a
// private DIR.SUFFIX of ours beside it (private_dir.h: the one earlier
// processes made, so their spool is resent, else a fresh one); failing that,
// no spool. Counted; said on stderr only when log_refusals (a tool's own
// log, never a traced program's). Returns the directory's descriptor (the
// caller closes it) or -1.
int LineSender::OpenSpoolDir() {
  if (!spool_dir_[0]) return -1;
  char used[sizeof spool_dir_];
  bool fell_back = false;
  int fd = OpenPrivateDir(spool_dir_, used, sizeof used, &fell_back);
  if (fd >= 0 && !fell_back) return MoveFdHigh(fd);
  ++c_.spool_dirs_refused;
  if (opts_.log_refusals) {
    char msg[sizeof spool_dir_ * 2 + 200];
    int ml = snprintf(msg, sizeof msg,
                      "iosonar: spool directory %s refused (not a directory of uid %u that only it can use); %s%s\n",
                      spool_dir_, static_cast<unsigned>(geteuid()), fd >= 0 ? "spooling to " : "no spool",
                      fd >= 0 ? used : "");
    if (ml > 0) SysWrite(2, msg, static_cast<size_t>(ml) < sizeof msg ? static_cast<size_t>(ml) : sizeof msg - 1);
  }
  if (fd < 0) {
    spool_dir_[0] = '\0';
    return -1;
  }
  CopyStr(spool_dir_, sizeof spool_dir_, used, strlen(used));
  return MoveFdHigh(fd);
}

// A spool file: opened without following a link and without blocking (a FIFO
// or device never hangs us), and used only if it is a regular file of ours.
int LineSender::OpenSpoolFile(int dirfd, const char* name, int flags) {
  int fd = static_cast<int>(syscall(SYS_openat, dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (fd < 0) return -1;
  struct stat st;
  // One link: a hard link to a file elsewhere is never read (nor appended to).
  if (SysFstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink > 1) {
    SysClose(fd);
    return -1;
  }
  return fd;
}

bool LineSender::Spool(const char* data, size_t len, uint64_t nlines) {
  int dirfd = OpenSpoolDir();
  if (dirfd < 0) return false;
  char name[64];
  SpoolName(name, sizeof name);
  bool ok = false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = OpenSpoolFile(dirfd, name, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0) break;
    flock(fd, LOCK_EX);
    struct stat st;
    if (SysFstat(fd, &st) != 0) {
      SysClose(fd);
      break;
    }
    if (st.st_nlink == 0) {  // a resender took the file between our open and lock
      SysClose(fd);
      continue;
    }
    ok = static_cast<uint64_t>(st.st_size) + len <= opts_.spool_max_bytes && WriteAll(fd, data, len);
    // A short write (a full disk) leaves no fragment for the next record to
    // be glued to: the file is cut back to where this write began.
    if (!ok) syscall(SYS_ftruncate, fd, st.st_size);
    SysClose(fd);  // releases the lock
    if (ok) {
      c_.lines_spooled += nlines;
      spool_pending_ = true;
      spooled_own_ = true;
    }
    break;
  }
  SysClose(dirfd);
  return ok;
}

bool LineSender::ResendFile(int dirfd, const char* name) {
  int fd = OpenSpoolFile(dirfd, name, O_RDWR);
  if (fd < 0) return true;  // gone (taken by someone else), or not a regular file of ours: never read
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    SysClose(fd);
    return true;  // its writer or another resender holds it: leave it for later
  }
  struct stat st;
  if (SysFstat(fd, &st) != 0 || st.st_nlink == 0) {
    SysClose(fd);
    return true;
  }
  // Send in chunks that end on line boundaries; no more than the file held
  // when locked (its writers append only under the lock).
  static char buf[1 << 16];
  size_t have = 0;
  bool ok = true;
  bool open_line = false;  // part of an over-long line went out without its end
  uint64_t lines = 0;
  uint64_t left = static_cast<uint64_t>(st.st_size);
  for (;;) {
    size_t want = sizeof buf - have;
    if (want > left) want = static_cast<size_t>(left);
    ssize_t n = want ? SysRead(fd, buf + have, want) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { ok = false; break; }
    left -= static_cast<uint64_t>(n);
    have += static_cast<size_t>(n);
    size_t upto = have;
    if (n > 0) {
      while (upto > 0 && buf[upto - 1] != '\n') --upto;
      if (upto == 0 && have == sizeof buf) upto = have;  // a line longer than the buffer: pass it through
    } else if (have > 0) {
      // The file ends in a fragment (a writer cut short before this fix, a
      // crash): skipped and counted, never sent for the next line to be glued to.
      ++c_.spool_fragments;
      have = 0;
      upto = 0;
    }
    if (n == 0 && open_line) {
      if (!WriteAll(sock_, "\n", 1)) { ok = false; break; }  // ends it alone: the receiver sets it aside
      open_line = false;
      ++c_.spool_fragments;
    }
    if (upto) open_line = buf[upto - 1] != '\n';
    for (size_t i = 0; i < upto; ++i) lines += buf[i] == '\n';
    if (upto && !WriteAll(sock_, buf, upto)) { ok = false; break; }
    memmove(buf, buf + upto, have - upto);
    have -= upto;
    if (n == 0) break;
  }
  if (ok) {
    syscall(SYS_unlinkat, dirfd, name, 0);
    c_.lines_resent += lines;
  }
  SysClose(fd);
  return ok;
}

void LineSender::ResendSpoolLocked() {
  if (!spool_dir_[0] || sock_ < 0) return;
  int dirfd = OpenSpoolDir();
  if (dirfd < 0) {
    spool_pending_ = false;
    return;
  }
  bool all_ok = true;
  char name[64];
  // Our own file first, so this process's records keep their order (only
  // if this process spooled: a new stream has none).
  SpoolName(name, sizeof name);
  if (spooled_own_ && !ResendFile(dirfd, name)) all_ok = false;
  // The directory read with getdents64 into a buffer of ours (no libc DIR:
  // a 32 KiB allocation and three system calls more, in every process's
  // first connect). Bounded: a directory of millions of names is not read
  // to its end by one process (the rest waits for the next connect).
  // Dirent64: private_dir.h.
  alignas(8) char dbuf[4096];
  bool whole = false;
  for (int rounds = 0; all_ok && rounds < 1024; ++rounds) {
    long n = syscall(SYS_getdents64, dirfd, dbuf, sizeof dbuf);
    if (n <= 0) {
      whole = n == 0;
      break;
    }
    for (long off = 0; off < n && all_ok;) {
      const auto* e = reinterpret_cast<const Dirent64*>(dbuf + off);
      off += e->d_reclen;
      size_t nl = strlen(e->d_name);
      if (strncmp(e->d_name, "iosonar-", 8) != 0 || nl < 6 || strcmp(e->d_name + nl - 6, ".jsonl") != 0) continue;
      if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;  // links, FIFOs, devices: never opened
      if (!ResendFile(dirfd, e->d_name)) all_ok = false;
    }
  }
  SysClose(dirfd);
  if (all_ok && !whole) return;  // read in part: spool_pending_ stays (the next connect of this process goes on)
  if (!all_ok) {  // the connection broke mid-resend: what was sent may come again, receivers dedupe
    if (SockValid()) SysClose(sock_);
    sock_ = -1;
    next_retry_ns_ = MonoNs() + int64_t{opts_.retry_interval_ms} * 1000000;
    return;
  }
  spool_pending_ = false;
}

void LineSender::ResendSpool() {
  Lock l(&mu_);
  if (kind_ != Kind::kTcp) return;
  spool_pending_ = true;
  if (sock_ >= 0) ResendSpoolLocked();
  else EnsureConnected();
}

bool LineSender::Send(const char* data, size_t len, uint64_t nlines) {
  if (len == 0) return true;
  Lock l(&mu_);
  switch (kind_) {
    case Kind::kNone:
      c_.lines_dropped += nlines;
      return false;
    case Kind::kStdout:
    case Kind::kFile: {
      // Checked before every write: a descriptor that is no longer ours is
      // never written to. A file is reopened; stdout as it was at start
      // cannot be, so its lines are dropped (and counted).
      if (!FileValid() && kind_ == Kind::kFile) OpenFile();
      if (file_fd_ >= 0 && WriteAll(file_fd_, data, len)) {
        c_.lines_sent += nlines;
        return true;
      }
      c_.lines_dropped += nlines;
      return false;
    }
    case Kind::kTcp: {
      if (EnsureConnected()) {
        if (WriteAll(sock_, data, len)) {
          c_.lines_sent += nlines;
          return true;
        }
        // Part of the batch may have gone out; the receiver drops the cut
        // line and deduplicates the rest when the spool is resent.
        if (SockValid()) SysClose(sock_);
        sock_ = -1;
        next_retry_ns_ = MonoNs() + int64_t{opts_.retry_interval_ms} * 1000000;
      }
      if (Spool(data, len, nlines)) return true;
      c_.lines_dropped += nlines;
      return false;
    }
  }
  return false;
}

void LineSender::Close() {
  Lock l(&mu_);
  if (SockValid()) {
    shutdown(sock_, SHUT_WR);
    SysClose(sock_);
  }
  if (FileValid()) SysClose(file_fd_);
  sock_ = file_fd_ = -1;
}

bool LineSender::OwnsFd(int fd) {
  // Without the lock (the tracer's close() must not wait for a send): the
  // numbers and identities change only under the lock, a stale read is at
  // worst one more fstat.
  if (fd < 0) return false;
  if (fd == __atomic_load_n(&sock_, __ATOMIC_ACQUIRE))
    return Same(fd, __atomic_load_n(&sock_dev_, __ATOMIC_RELAXED), __atomic_load_n(&sock_ino_, __ATOMIC_RELAXED));
  if (fd == __atomic_load_n(&file_fd_, __ATOMIC_ACQUIRE))
    return Same(fd, __atomic_load_n(&file_dev_, __ATOMIC_RELAXED), __atomic_load_n(&file_ino_, __ATOMIC_RELAXED));
  return false;
}

int LineSender::OwnFds(int* out, int cap) {
  int n = 0;
  const int fds[2] = {__atomic_load_n(&sock_, __ATOMIC_ACQUIRE), __atomic_load_n(&file_fd_, __ATOMIC_ACQUIRE)};
  for (int fd : fds)
    if (n < cap && fd >= 0 && OwnsFd(fd)) out[n++] = fd;
  return n;
}

void LineSender::Relocate(int fd) {
  Lock l(&mu_);
  int* mine = fd == sock_ ? &sock_ : fd == file_fd_ ? &file_fd_ : nullptr;
  if (!mine || !(mine == &sock_ ? SockValid() : FileValid())) return;
  int saved = errno;
  int hi = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, HighFdBase()));
  if (hi < 0) hi = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3));
  // The duplicate is the same open file description: same identity. Without
  // one (no free descriptor) we give ours up rather than keep the number.
  SysClose(fd);
  __atomic_store_n(mine, hi, __ATOMIC_RELEASE);
  if (hi < 0) ++c_.fds_lost;
  errno = saved;
}

void LineSender::ForgetFd(int fd) {
  Lock l(&mu_);
  if (fd == sock_) sock_ = -1;
  if (fd == file_fd_) file_fd_ = -1;
}

void LineSender::AfterForkChild(uint64_t new_stream) {
  pthread_mutex_init(&mu_, nullptr);
  // The parent's connection is shared with us: close our copy, connect anew.
  if (SockValid()) SysClose(sock_);
  sock_ = -1;
  if (kind_ == Kind::kFile && FileValid()) {
    SysClose(file_fd_);
    file_fd_ = -1;
  }
  stream_ = new_stream;
  spooled_own_ = false;  // a new stream: no spool file of its own yet
  c_ = Counters{};
  next_retry_ns_ = 0;
}

LineSender::Counters LineSender::counters() {
  Lock l(&mu_);
  return c_;
}

}  // namespace iosonar
