// Durable delivery of JSON lines to one output: a TCP receiver (the collector
// or Logstash's tcp/json_lines input), a file (appended), or stdout.
//
// Used by the LD_PRELOAD tracer, so: no heap allocation of its own, no
// exceptions, fixed buffers, and all I/O through raw system calls (never the
// traced libc entry points). Logstash's persistent queue does not protect a
// TCP input, so the sender owns durability: when the receiver is unreachable
// a batch goes to a bounded spool file (<spool_dir>/iosonar-<stream>.jsonl);
// after the next successful connect every spool file in the directory (this
// process's and those left by dead processes) is resent and removed. Files
// are locked with flock so two processes never resend the same file; a
// record resent after a half-finished send is stored once, because receivers
// deduplicate on (event.stream, event.seq).
//
// Thread-safe: one internal mutex. After fork() the child must call
// AfterForkChild() before using the sender (the tracer does it in its atfork
// handler).
#pragma once
#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace iosonar {

// The lowest number the tracer's own descriptors use: 32 below the soft
// RLIMIT_NOFILE, at most 1000 (programs open their files at the lowest free
// numbers, so ours stay out of their way).
int HighFdBase();
// Moves fd to a number >= HighFdBase() with FD_CLOEXEC (raw system calls);
// returns the new number (fd itself, made close-on-exec, if none is free).
int MoveFdHigh(int fd);

class LineSender {
 public:
  enum class Kind { kNone, kTcp, kFile, kStdout };
  struct Options {
    const char* output = "-";         // tcp://HOST:PORT, a path, file:///PATH or "-"
    const char* spool_dir = nullptr;  // nullptr: no spool (lines are dropped when unreachable)
    uint64_t spool_max_bytes = 64ull << 20;
    int connect_timeout_ms = 500;
    int retry_interval_ms = 1000;     // after a failed connect, spool without retrying this long
    int send_timeout_ms = 10000;
    bool log_refusals = true;  // a refused spool directory said on stderr (false inside a traced program)
  };
  struct Counters {
    uint64_t lines_sent = 0;
    uint64_t lines_spooled = 0;
    uint64_t lines_dropped = 0;
    uint64_t lines_resent = 0;
    uint64_t connect_failures = 0;
    uint64_t fds_lost = 0;  // our descriptor was closed or replaced under us
    uint64_t spool_dirs_refused = 0;  // not ours, or writable by others (see OpenSpoolDir)
    uint64_t spool_fragments = 0;     // a spool file's unterminated end, skipped at resend
  };

  LineSender() = default;
  ~LineSender();
  LineSender(const LineSender&) = delete;
  LineSender& operator=(const LineSender&) = delete;

  // Returns false (and writes the reason into err) if output is malformed.
  bool Init(const Options& opts, char* err, size_t err_len);
  // data holds nlines complete '\n'-terminated lines. Returns false if they
  // could be neither sent nor spooled (they are then counted as dropped).
  bool Send(const char* data, size_t len, uint64_t nlines);
  // Sends what the spool holds if the receiver is reachable now.
  void ResendSpool();
  void Close();
  void AfterForkChild(uint64_t new_stream);
  // Our own descriptors. They sit at a high number (HighFdBase()) with
  // FD_CLOEXEC, and their identity (st_dev, st_ino) is recorded when opened
  // and checked before every write: a number that no longer refers to what we
  // opened (the program closed it with a raw system call and reused it) is
  // never written to nor closed, only forgotten (a file or TCP output is then
  // reopened; stdout, which cannot be, is counted as dropped).
  // OwnsFd: fd is ours and still what we opened (callable without the lock).
  bool OwnsFd(int fd);
  // Our live descriptors (at most 2), for the tracer's close_range/closefrom.
  int OwnFds(int* out, int cap);
  // The program is about to make fd (ours) refer to something else (dup2,
  // dup3): move ours to another high number first.
  void Relocate(int fd);
  void ForgetFd(int fd);  // the number is no longer ours: forget it, never close it
  Counters counters();
  Kind kind() const { return kind_; }
  void set_stream(uint64_t stream) { stream_ = stream; }

 private:
  bool EnsureConnected();
  bool WriteAll(int fd, const char* data, size_t len);
  bool Spool(const char* data, size_t len, uint64_t nlines);
  void ResendSpoolLocked();
  bool ResendFile(int dirfd, const char* name);
  void SpoolName(char* out, size_t n) const;
  int OpenSpoolDir();
  int OpenSpoolFile(int dirfd, const char* name, int flags);
  bool OpenFile();
  bool FileValid();
  bool SockValid();

  Kind kind_ = Kind::kNone;
  Options opts_{};
  char host_[256] = {0};
  char port_[16] = {0};
  char path_[1024] = {0};
  char spool_dir_[1024] = {0};
  int sock_ = -1;
  int file_fd_ = -1;
  uint64_t sock_dev_ = 0, sock_ino_ = 0, file_dev_ = 0, file_ino_ = 0;
  uint64_t stream_ = 0;
  int64_t next_retry_ns_ = 0;
  bool spool_pending_ = false;  // spool files may exist: try a resend after connecting
  bool spooled_own_ = false;    // this stream spooled (its own file may exist)
  Counters c_{};
  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
};

}  // namespace iosonar
