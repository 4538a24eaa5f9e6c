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
  };
  struct Counters {
    uint64_t lines_sent = 0;
    uint64_t lines_spooled = 0;
    uint64_t lines_dropped = 0;
    uint64_t lines_resent = 0;
    uint64_t connect_failures = 0;
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
  // Our own descriptors, so the tracer leaves them alone if the traced program
  // closes or dup2()s over them.
  bool OwnsFd(int fd) const { return fd >= 0 && (fd == sock_ || fd == file_fd_); }
  void ForgetFd(int fd);  // the program closed it under us: reopen next time
  Counters counters();
  Kind kind() const { return kind_; }
  void set_stream(uint64_t stream) { stream_ = stream; }

 private:
  bool EnsureConnected();
  bool WriteAll(int fd, const char* data, size_t len);
  bool Spool(const char* data, size_t len, uint64_t nlines);
  void ResendSpoolLocked();
  bool ResendFile(const char* path);
  void SpoolPath(char* out, size_t n) const;

  Kind kind_ = Kind::kNone;
  Options opts_{};
  char host_[256] = {0};
  char port_[16] = {0};
  char path_[1024] = {0};
  char spool_dir_[1024] = {0};
  int sock_ = -1;
  int file_fd_ = -1;
  uint64_t stream_ = 0;
  int64_t next_retry_ns_ = 0;
  bool spool_pending_ = false;  // spool files may exist: try a resend after connecting
  Counters c_{};
  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
};

}  // namespace iosonar
