#include "core/transport/line_sender.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
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
int SysUnlink(const char* p) { return static_cast<int>(syscall(SYS_unlinkat, AT_FDCWD, p, 0)); }
int SysMkdir(const char* p, int mode) { return static_cast<int>(syscall(SYS_mkdirat, AT_FDCWD, p, mode)); }
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

struct Lock {
  explicit Lock(pthread_mutex_t* m) : m_(m) { pthread_mutex_lock(m_); }
  ~Lock() { pthread_mutex_unlock(m_); }
  pthread_mutex_t* m_;
};

}  // namespace

LineSender::~LineSender() { Close(); }

bool LineSender::Init(const Options& opts, char* err, size_t err_len) {
  opts_ = opts;
  const char* out = opts.output ? opts.output : "-";
  if (opts.spool_dir) CopyStr(spool_dir_, sizeof spool_dir_, opts.spool_dir, strlen(opts.spool_dir));
  opts_.spool_dir = nullptr;  // we keep our own copy
  if (strcmp(out, "-") == 0) {
    kind_ = Kind::kStdout;
    // A private duplicate: the program may close or redirect its stdout.
    file_fd_ = fcntl(1, F_DUPFD_CLOEXEC, 100);
    if (file_fd_ < 0) file_fd_ = fcntl(1, F_DUPFD_CLOEXEC, 3);
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

bool LineSender::EnsureConnected() {
  if (sock_ >= 0) return true;
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
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t sl = sizeof soerr;
      if (poll(&p, 1, opts_.connect_timeout_ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
        rc = 0;
    }
    if (rc != 0) {
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
  // Back to blocking with a send timeout, so a stuck receiver cannot hang the program forever.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  timeval tv{opts_.send_timeout_ms / 1000, (opts_.send_timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sock_ = fd;
  if (spool_pending_) ResendSpoolLocked();
  return sock_ >= 0;
}

void LineSender::SpoolPath(char* out, size_t n) const {
  snprintf(out, n, "%s/iosonar-%016llx.jsonl", spool_dir_, static_cast<unsigned long long>(stream_));
}

bool LineSender::Spool(const char* data, size_t len, uint64_t nlines) {
  if (!spool_dir_[0]) return false;
  SysMkdir(spool_dir_, 0700);
  char path[1200];
  SpoolPath(path, sizeof path);
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = SysOpen(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    flock(fd, LOCK_EX);
    struct stat st;
    if (SysFstat(fd, &st) != 0) {
      SysClose(fd);
      return false;
    }
    if (st.st_nlink == 0) {  // a resender took the file between our open and lock
      SysClose(fd);
      continue;
    }
    bool ok = static_cast<uint64_t>(st.st_size) + len <= opts_.spool_max_bytes && WriteAll(fd, data, len);
    SysClose(fd);  // releases the lock
    if (ok) {
      c_.lines_spooled += nlines;
      spool_pending_ = true;
    }
    return ok;
  }
  return false;
}

bool LineSender::ResendFile(const char* path) {
  int fd = SysOpen(path, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return true;  // already taken by someone else
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    SysClose(fd);
    return true;  // its writer or another resender holds it: leave it for later
  }
  struct stat st;
  if (SysFstat(fd, &st) != 0 || st.st_nlink == 0) {
    SysClose(fd);
    return true;
  }
  // Send in chunks that end on line boundaries.
  static char buf[1 << 16];
  size_t have = 0;
  bool ok = true;
  uint64_t lines = 0;
  for (;;) {
    ssize_t n = SysRead(fd, buf + have, sizeof buf - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { ok = false; break; }
    have += static_cast<size_t>(n);
    size_t upto = have;
    if (n > 0) {
      while (upto > 0 && buf[upto - 1] != '\n') --upto;
      if (upto == 0 && have == sizeof buf) upto = have;  // a line longer than the buffer: pass it through
    }
    for (size_t i = 0; i < upto; ++i) lines += buf[i] == '\n';
    if (upto && !WriteAll(sock_, buf, upto)) { ok = false; break; }
    memmove(buf, buf + upto, have - upto);
    have -= upto;
    if (n == 0) break;
  }
  if (ok) {
    SysUnlink(path);
    c_.lines_resent += lines;
  }
  SysClose(fd);
  return ok;
}

void LineSender::ResendSpoolLocked() {
  if (!spool_dir_[0] || sock_ < 0) return;
  DIR* d = opendir(spool_dir_);
  if (!d) {
    spool_pending_ = false;
    return;
  }
  bool all_ok = true;
  char path[1400];
  // Our own file first, so this process's records keep their order.
  SpoolPath(path, sizeof path);
  if (!ResendFile(path)) all_ok = false;
  while (all_ok) {
    dirent* e = readdir(d);
    if (!e) break;
    size_t nl = strlen(e->d_name);
    if (strncmp(e->d_name, "iosonar-", 8) != 0 || nl < 6 || strcmp(e->d_name + nl - 6, ".jsonl") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", spool_dir_, e->d_name);
    if (!ResendFile(path)) all_ok = false;
  }
  closedir(d);
  if (!all_ok) {  // the connection broke mid-resend: what was sent may come again, receivers dedupe
    SysClose(sock_);
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
      if (file_fd_ < 0 && kind_ == Kind::kFile)
        file_fd_ = SysOpen(path_, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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
        SysClose(sock_);
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
  if (sock_ >= 0) {
    shutdown(sock_, SHUT_WR);
    SysClose(sock_);
  }
  if (file_fd_ >= 0) SysClose(file_fd_);
  sock_ = file_fd_ = -1;
}

void LineSender::ForgetFd(int fd) {
  // Called from the tracer's close()/dup2() wrappers, possibly while another
  // thread sends: the descriptor number is gone either way.
  if (fd == sock_) sock_ = -1;
  if (fd == file_fd_) file_fd_ = -1;
}

void LineSender::AfterForkChild(uint64_t new_stream) {
  pthread_mutex_init(&mu_, nullptr);
  // The parent's connection is shared with us: close our copy, connect anew.
  if (sock_ >= 0) SysClose(sock_);
  sock_ = -1;
  if (kind_ == Kind::kFile && file_fd_ >= 0) {
    SysClose(file_fd_);
    file_fd_ = -1;
  }
  stream_ = new_stream;
  c_ = Counters{};
  next_retry_ns_ = 0;
}

LineSender::Counters LineSender::counters() {
  Lock l(&mu_);
  return c_;
}

}  // namespace iosonar
