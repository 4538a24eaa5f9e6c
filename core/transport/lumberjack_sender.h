// The sending side of Lumberjack v2 (lumberjack.h): at-least-once delivery to
// Logstash's beats input or `iosonar collect`. A record is kept until the
// receiver's ACK covers it: in memory while its window is in flight, in the
// spool when the receiver is unreachable or the ACK does not come. Spool files
// are deleted only once every record in them is acknowledged; a record sent
// twice (a lost ACK) is stored once, because receivers deduplicate on
// event.stream + event.seq.
//
// The spool directory must be the sender's own (created 0700; refused if
// another user owns it or others can write it); files are 0600, opened with
// O_NOFOLLOW and read only when they are regular files owned by this user.
// Each process appends to its own file (lj-PID-N.jsonl, locked with flock);
// files of dead processes are resent by the next sender that connects.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <sys/uio.h>

#include "core/base/status.h"
#include "core/base/tls.h"

namespace iosonar {

class LumberjackSender {
 public:
  struct Options {
    std::string host, port;
    std::string spool_dir;               // "" = no spool: unacknowledged records are dropped (counted)
    // spool_dir is a default in a shared place: taken by another user, a
    // private spool_dir.SUFFIX is used (and said on stderr) instead of an error.
    bool spool_fallback = false;
    uint64_t spool_max_bytes = 64ull << 20;
    uint32_t window = 4096;              // events per window; two windows are in flight at most
    int connect_timeout_ms = 2000;
    int ack_timeout_ms = 30000;          // without any ACK for this long, the window goes to the spool
    int retry_interval_ms = 1000;        // after a failure, spool without trying for this long
    // MUNGE: every window starts with an event carrying a fresh credential whose
    // payload is auth_host (`iosonar collect --auth munge` checks it against that
    // window's records; Logstash's beats input does not speak it).
    bool munge = false;
    std::string munge_socket;            // "" = libmunge's default
    std::string auth_host;               // "" = HostName()
    // TLS (lumberjacks:// or ?tls=1): the receiver's certificate is verified
    // against tls_ca (else the system's CAs) and the host name or address;
    // tls_cert/tls_key, when given, are this sender's identity (client certificate).
    bool tls = false;
    std::string tls_ca, tls_cert, tls_key;
    // zlib level of the compressed ('C') frames each window's JSON frames go
    // in (Filebeat's compression_level; its default is 3): 0 sends the JSON
    // frames as they are, 1..9 compress. A window's frames are cut into 'C'
    // frames of at most compress_max_inflated bytes each (whole frames; an
    // event bigger than that goes alone), so a receiver's bound on the inflated
    // size (`iosonar collect`: its --max-buffer, 64 MiB by default) is never hit.
    int compression_level = 3;
    size_t compress_max_inflated = 4u << 20;
  };
  struct Counters {
    uint64_t acked = 0;       // records the receiver acknowledged (first sends and resends)
    uint64_t resent = 0;      // of those, records taken from the spool
    uint64_t spooled = 0;     // records written to the spool
    uint64_t dropped = 0;     // records neither acknowledged nor spooled (spool full or none)
    uint64_t windows = 0;
    uint64_t failures = 0;    // connects or windows that failed
    uint64_t bytes_sent = 0;  // Lumberjack bytes handed to the connection (before TLS; resends included)
    uint64_t compressed_frames = 0;  // 'C' frames sent
  };

  LumberjackSender();
  ~LumberjackSender();
  LumberjackSender(const LumberjackSender&) = delete;
  LumberjackSender& operator=(const LumberjackSender&) = delete;

  // host:port from "lumberjack://HOST:PORT" (or beats://); checks the spool directory.
  Status Init(const Options& o);
  // Whole '\n'-terminated lines; full windows are sent (and acknowledged) at once.
  Status Send(std::string_view lines);
  // Sends what is pending and, if the receiver is reachable, the spool.
  Status Flush();
  const Counters& counters() const { return c_; }
  // Records waiting in this process's spool file.
  uint64_t spooled_pending() const { return own_records_; }

 private:
  bool Connect();
  void Disconnect();
  // Sends lines as one window and waits for the ACK covering all of them.
  bool SendWindow(const std::vector<std::string_view>& lines);
  bool WriteWindow(const std::vector<std::string_view>& lines);
  bool WaitAck(uint32_t n);  // the ACK of the oldest window in flight, of n events
  bool Fail();
  bool Credential(std::string* event);  // a fresh MUNGE credential event for the next window
  bool Handshake();                     // TLS, within connect_timeout_ms
  bool WriteAll(const char* p, size_t n);
  bool WriteIov();  // iov_ to the (plain) socket
  ssize_t ReadSome(char* p, size_t n);  // >0, or <=0: failed (timed out, closed, error)
  void SayOnce(const std::string& what);  // a reason on stderr, once per change
  void Deliver();   // pending_ (and the spool first) to the receiver, else to the spool
  bool ResendSpool();
  bool ResendFile(int fd, bool own);
  void SpoolPending(size_t from = 0);  // pending_[from..] to the spool (or counted as dropped); clears pending_
  Status OpenOwnSpool();

  Options o_;
  int sock_ = -1;
  int64_t next_try_ns_ = 0;
  // Records not yet acknowledged: their bytes in one buffer ('\n'-separated, as
  // they came), each line by offset and length (no allocation per record).
  std::string pending_buf_;
  std::vector<std::pair<size_t, size_t>> pending_;
  // While Send() delivers a big send straight from the caller's buffer,
  // pending_ indexes direct_ instead of pending_buf_.
  std::string_view direct_;
  size_t direct_scan_ = 0;         // direct_ is indexed up to here
  void IndexDirect(size_t want);   // pending_ from direct_ up to want lines (or its end)
  std::string_view Src() const { return direct_.data() ? direct_ : std::string_view(pending_buf_); }
  std::string_view PendingLine(size_t k) const { return Src().substr(pending_[k].first, pending_[k].second); }
  int own_fd_ = -1;
  std::string own_path_;
  uint64_t own_bytes_ = 0, own_records_ = 0;
  Counters c_;
  std::string auth_error_;
  std::string wbuf_;  // the window being written, or its frame headers (kept: no allocation per window)
  std::vector<struct iovec> iov_;
  // compression_level > 0: the window's JSON frames before deflating, and the zlib stream (reused).
  std::string raw_;
  struct Deflater;
  std::unique_ptr<Deflater> z_;
  bool Deflate(std::string_view in, std::string* out);  // appends a 'C' frame holding in
  std::shared_ptr<TlsContext> tls_ctx_;
  std::unique_ptr<TlsConn> tls_;
};

}  // namespace iosonar
