#include "core/transport/lumberjack_sender.h"

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <zlib.h>

#include <climits>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/base/host.h"
#include "core/base/munge.h"
#include "core/base/private_dir.h"
#include "core/base/timeutil.h"
#include "core/transport/lumberjack.h"

namespace iosonar {
namespace {

constexpr std::string_view kSpoolPrefix = "lj-";
constexpr std::string_view kSpoolSuffix = ".jsonl";

bool WriteAllPoll(int fd, const char* p, size_t n, int timeout_ms) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      int r = poll(&pf, 1, timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;  // the receiver stopped reading
      continue;
    }
    return false;
  }
  return true;
}

// OpenSSL writes to the socket with write(): a receiver gone would raise
// SIGPIPE in a process that does not ignore it. Blocked around the write, and
// a SIGPIPE it raised taken back (one that was pending before stays).
struct NoSigpipe {
  sigset_t pipe_set, old;
  bool was_pending = false;
  NoSigpipe() {
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  }
  ~NoSigpipe() {
    if (!was_pending) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
};

}  // namespace

// The zlib stream of the 'C' frames, made once and reset per frame.
struct LumberjackSender::Deflater {
  z_stream z{};
  bool ok = false;
  explicit Deflater(int level) { ok = deflateInit(&z, level) == Z_OK; }
  ~Deflater() {
    if (ok) deflateEnd(&z);
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
};

bool LumberjackSender::Deflate(std::string_view in, std::string* out) {
  namespace lj = lumberjack;
  if (!z_) z_ = std::make_unique<Deflater>(o_.compression_level);
  if (!z_->ok || in.size() > UINT32_MAX) return false;
  z_stream& z = z_->z;
  if (deflateReset(&z) != Z_OK) return false;
  const size_t at = out->size();
  const uLong bound = deflateBound(&z, static_cast<uLong>(in.size()));
  out->resize(at + 6 + bound);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data() + at + 6);
  z.avail_out = static_cast<uInt>(bound);
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) {  // deflateBound is enough for one call
    out->resize(at);
    return false;
  }
  const size_t len = bound - z.avail_out;
  out->resize(at + 6 + len);
  char* h = out->data() + at;
  h[0] = lj::kVersion;
  h[1] = lj::kCompressed;
  h[2] = static_cast<char>(len >> 24);
  h[3] = static_cast<char>(len >> 16);
  h[4] = static_cast<char>(len >> 8);
  h[5] = static_cast<char>(len);
  ++c_.compressed_frames;
  return true;
}

LumberjackSender::LumberjackSender() = default;

LumberjackSender::~LumberjackSender() {
  if (!pending_.empty()) Deliver();
  Disconnect();
  if (own_fd_ >= 0) {
    if (own_records_ == 0) unlink(own_path_.c_str());  // nothing left to resend
    close(own_fd_);  // releases the lock: the next sender resends what is left
  }
}

Status LumberjackSender::Init(const Options& o) {
  o_ = o;
  if (o_.host.empty() || o_.port.empty()) return Status::Invalid("lumberjack output: no host or port");
  if (o_.window == 0) return Status::Invalid("lumberjack output: the window must be at least 1");
  if (o_.compression_level < 0 || o_.compression_level > 9)
    return Status::Invalid("lumberjack output: compression_level must be 0 (off) to 9, not " +
                           std::to_string(o_.compression_level));
  if (o_.compress_max_inflated == 0) return Status::Invalid("lumberjack output: compress_max_inflated must be positive");
  if (o_.tls) {
    TlsConfig tc;
    tc.ca_file = o_.tls_ca;
    tc.cert_file = o_.tls_cert;
    tc.key_file = o_.tls_key;
    auto ctx = TlsContext::Client(tc);
    if (!ctx.ok()) return Status(ctx.status().code(), "lumberjack output: " + ctx.status().message());
    tls_ctx_ = std::move(ctx.value());
  } else if (!o_.tls_ca.empty() || !o_.tls_cert.empty() || !o_.tls_key.empty()) {
    return Status::Invalid("lumberjack output: a CA, certificate or key without TLS (use lumberjacks:// or tls=1)");
  }
  if (o_.spool_dir.empty()) return Status::Ok();
  if (o_.spool_fallback) {
    // A default directory in a shared place (/tmp/iosonar-spool-UID): taken
    // by another user, a private DIR.SUFFIX of ours instead (private_dir.h),
    // said here, on the tool's own stderr.
    char used[1024];
    bool fell_back = false;
    int fd = OpenPrivateDir(o_.spool_dir.c_str(), used, sizeof used, &fell_back);
    if (fd < 0) return Status::Invalid("spool directory " + o_.spool_dir + ": taken by another user, and no private one beside it could be made");
    close(fd);
    if (fell_back) {
      std::fprintf(stderr, "iosonar: spool directory %s is not a private directory of uid %u (another user made it, or a link); spooling to %s\n",
                   o_.spool_dir.c_str(), static_cast<unsigned>(geteuid()), used);
      o_.spool_dir = used;
    }
  }
  if (mkdir(o_.spool_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::FromErrno("spool directory " + o_.spool_dir, errno);
  struct stat st;
  if (lstat(o_.spool_dir.c_str(), &st) != 0) return Status::FromErrno("spool directory " + o_.spool_dir, errno);
  if (!S_ISDIR(st.st_mode))
    return Status::Invalid("spool directory " + o_.spool_dir + ": not a directory (a symbolic link is not followed)");
  if (st.st_uid != geteuid())
    return Status::Invalid("spool directory " + o_.spool_dir + ": owned by uid " + std::to_string(st.st_uid) +
                           ", not by this user (" + std::to_string(geteuid()) + "): refusing to use it");
  if (st.st_mode & 022)
  {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    return Status::Invalid("spool directory " + o_.spool_dir + ": writable by others (mode " + mode +
                           "): refusing to use it (chmod 700)");
  }
  return Status::Ok();
}

Status LumberjackSender::Send(std::string_view lines) {
  const uint64_t dropped = c_.dropped;
  if (pending_.empty() && lines.size() >= size_t{o_.window} * 64) {
    // A big send (a resend, a forwarder's batch) goes straight from the
    // caller's buffer: lines indexed as the windows go out, no copy. (Small
    // sends, an exporter's sample, are kept below until a window fills.)
    direct_ = lines;
    direct_scan_ = 0;
    Deliver();
    direct_ = {};
    if (c_.dropped != dropped)
      return Status::Unavailable("lumberjack output " + o_.host + ":" + o_.port + ": " +
                                 std::to_string(c_.dropped - dropped) + " records neither acknowledged nor spooled");
    return Status::Ok();
  }
  const size_t base = pending_buf_.size();
  pending_buf_.append(lines);
  if (lines.back() != '\n') pending_buf_ += '\n';
  const char* b = pending_buf_.data();
  size_t pos = base;
  while (pos < pending_buf_.size()) {
    const char* nl = static_cast<const char*>(std::memchr(b + pos, '\n', pending_buf_.size() - pos));
    const size_t end = static_cast<size_t>(nl - b);
    if (end > pos) pending_.emplace_back(pos, end - pos);
    pos = end + 1;
  }
  if (pending_.size() >= o_.window || pending_buf_.size() >= (8u << 20)) Deliver();
  if (c_.dropped != dropped)
    return Status::Unavailable("lumberjack output " + o_.host + ":" + o_.port + ": " +
                               std::to_string(c_.dropped - dropped) + " records neither acknowledged nor spooled");
  return Status::Ok();
}

Status LumberjackSender::Flush() {
  const uint64_t dropped = c_.dropped;
  Deliver();
  if (c_.dropped != dropped)
    return Status::Unavailable("lumberjack output " + o_.host + ":" + o_.port + ": " +
                               std::to_string(c_.dropped - dropped) + " records neither acknowledged nor spooled");
  return Status::Ok();
}

bool LumberjackSender::Connect() {
  if (sock_ >= 0) return true;
  const int64_t now = MonotonicNs();
  if (now < next_try_ns_) return false;
  auto fail = [&] {
    ++c_.failures;
    next_try_ns_ = MonotonicNs() + int64_t{o_.retry_interval_ms} * 1000000;
    return false;
  };
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(o_.host.c_str(), o_.port.c_str(), &hints, &res) != 0) return fail();
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int r = connect(fd, a->ai_addr, a->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      pollfd pf{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (poll(&pf, 1, o_.connect_timeout_ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
        r = 0;
    }
    if (r == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sock_ = fd;
      break;
    }
    close(fd);
  }
  freeaddrinfo(res);
  if (sock_ < 0) return fail();
  if (tls_ctx_ && !Handshake()) return false;
  return true;
}

void LumberjackSender::SayOnce(const std::string& what) {
  if (auth_error_ == what) return;  // said once per change, not per retry
  auth_error_ = what;
  std::fprintf(stderr, "iosonar: lumberjack output %s:%s: %s\n", o_.host.c_str(), o_.port.c_str(), what.c_str());
}

bool LumberjackSender::Handshake() {
  auto t = TlsConn::New(tls_ctx_, sock_, o_.host);
  if (!t.ok()) {
    SayOnce(t.status().message());
    return Fail();
  }
  tls_ = std::move(t.value());
  NoSigpipe guard;
  const int64_t deadline = MonotonicNs() + int64_t{o_.connect_timeout_ms} * 1000000;
  for (;;) {
    int r = tls_->Handshake();
    if (r == 1) break;
    if (r < 0) {
      SayOnce(tls_->error());  // e.g. the server's certificate is not from the CA, or names another host
      return Fail();
    }
    const int64_t left_ms = (deadline - MonotonicNs()) / 1000000;
    pollfd pf{sock_, static_cast<short>(tls_->want() == TlsConn::kWantWrite ? POLLOUT : POLLIN), 0};
    if (left_ms <= 0 || poll(&pf, 1, static_cast<int>(left_ms)) == 0) {
      SayOnce("tls: handshake timed out");
      return Fail();
    }
  }
  auth_error_.clear();  // a later failure is said again
  return true;
}

bool LumberjackSender::Credential(std::string* event) {
  auto cred = MungeEncode(o_.munge_socket, o_.auth_host.empty() ? HostName() : o_.auth_host);
  if (!cred.ok()) {
    SayOnce(cred.status().message());
    return false;
  }
  *event = "{\"iosonar.auth\":\"munge\",\"credential\":\"" + *cred + "\"}";
  return true;
}

void LumberjackSender::Disconnect() {
  tls_.reset();
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
}

bool LumberjackSender::Fail() {
  Disconnect();
  ++c_.failures;
  next_try_ns_ = MonotonicNs() + int64_t{o_.retry_interval_ms} * 1000000;
  return false;
}

bool LumberjackSender::WriteWindow(const std::vector<std::string_view>& lines) {
  namespace lj = lumberjack;
  // --auth munge: a fresh credential as the window's first event, so every
  // window (not only the connection) is authenticated; munged refuses a replay.
  std::string cred;
  if (o_.munge && !Credential(&cred)) return Fail();
  const size_t events = lines.size() + (o_.munge ? 1 : 0);
  if (o_.compression_level > 0) {
    // The window's JSON frames deflated into 'C' frames of at most
    // compress_max_inflated bytes of frames each, after the 'W' frame.
    std::string& out = wbuf_;
    out.clear();
    out += lj::kVersion;
    out += lj::kWindow;
    lj::PutU32(&out, static_cast<uint32_t>(events));
    raw_.clear();
    bool ok = true;
    uint32_t seq = 0;
    auto event = [&](std::string_view l) {
      if (!raw_.empty() && raw_.size() + 10 + l.size() > o_.compress_max_inflated) {
        ok = ok && Deflate(raw_, &out);
        raw_.clear();
      }
      raw_ += lj::kVersion;
      raw_ += lj::kJson;
      lj::PutU32(&raw_, ++seq);
      lj::PutU32(&raw_, static_cast<uint32_t>(l.size()));
      raw_.append(l);
    };
    if (o_.munge) event(cred);
    for (auto l : lines) event(l);
    ok = ok && (raw_.empty() || Deflate(raw_, &out));
    if (raw_.capacity() > (16u << 20)) std::string().swap(raw_);
    if (!ok) {
      SayOnce("zlib: compressing a window failed");
      return Fail();
    }
    c_.bytes_sent += out.size();
    if (!WriteAll(out.data(), out.size())) return Fail();
    if (out.capacity() > (16u << 20)) std::string().swap(out);
    return true;
  }
  if (!tls_) {
    // Plain TCP: the frame headers in one buffer, the events where they are,
    // gathered by sendmsg (no copy of the records).
    std::string& hdr = wbuf_;
    hdr.assign(6 + 10 * events, '\0');
    char* h = hdr.data();
    h[0] = lj::kVersion;
    h[1] = lj::kWindow;
    auto put = [](char* at, uint32_t v) {
      at[0] = static_cast<char>(v >> 24);
      at[1] = static_cast<char>(v >> 16);
      at[2] = static_cast<char>(v >> 8);
      at[3] = static_cast<char>(v);
    };
    put(h + 2, static_cast<uint32_t>(events));
    iov_.clear();
    iov_.push_back({h, 6});
    uint32_t seq = 0;
    auto event = [&](std::string_view l) {
      char* e = h + 6 + 10 * seq;
      e[0] = lj::kVersion;
      e[1] = lj::kJson;
      put(e + 2, ++seq);
      put(e + 6, static_cast<uint32_t>(l.size()));
      iov_.push_back({e, 10});
      iov_.push_back({const_cast<char*>(l.data()), l.size()});
    };
    if (o_.munge) event(cred);
    for (auto l : lines) event(l);
    for (const auto& v : iov_) c_.bytes_sent += v.iov_len;
    if (!WriteIov()) return Fail();
    return true;
  }
  std::string& buf = wbuf_;
  buf.clear();
  size_t bytes = 6 + (cred.empty() ? 0 : 10 + cred.size());
  for (auto l : lines) bytes += 10 + l.size();
  buf.reserve(bytes);
  buf += lj::kVersion;
  buf += lj::kWindow;
  lj::PutU32(&buf, static_cast<uint32_t>(events));
  uint32_t seq = 0;
  auto event = [&](std::string_view l) {
    buf += lj::kVersion;
    buf += lj::kJson;
    lj::PutU32(&buf, ++seq);
    lj::PutU32(&buf, static_cast<uint32_t>(l.size()));
    buf.append(l);
  };
  if (o_.munge) event(cred);
  for (auto l : lines) event(l);
  c_.bytes_sent += buf.size();
  if (!WriteAll(buf.data(), buf.size())) return Fail();
  if (buf.capacity() > (16u << 20)) std::string().swap(buf);
  return true;
}

bool LumberjackSender::WriteIov() {
  size_t i = 0;
  while (i < iov_.size()) {
    msghdr m{};
    m.msg_iov = iov_.data() + i;
    m.msg_iovlen = std::min<size_t>(iov_.size() - i, IOV_MAX);
    ssize_t w = sendmsg(sock_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{sock_, POLLOUT, 0};
      int r = poll(&pf, 1, o_.ack_timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;  // the receiver stopped reading
      continue;
    }
    if (w <= 0) return false;
    auto left = static_cast<size_t>(w);
    while (i < iov_.size() && left >= iov_[i].iov_len) left -= iov_[i++].iov_len;
    if (left > 0) {
      iov_[i].iov_base = static_cast<char*>(iov_[i].iov_base) + left;
      iov_[i].iov_len -= left;
    }
  }
  return true;
}

bool LumberjackSender::WriteAll(const char* p, size_t n) {
  if (!tls_) return WriteAllPoll(sock_, p, n, o_.ack_timeout_ms);
  NoSigpipe guard;
  while (n > 0) {
    ssize_t w = tls_->Write(p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < -1) return false;
    pollfd pf{sock_, static_cast<short>(tls_->want() == TlsConn::kWantRead ? POLLIN : POLLOUT), 0};
    int r = poll(&pf, 1, o_.ack_timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // the receiver stopped reading
  }
  return true;
}

ssize_t LumberjackSender::ReadSome(char* p, size_t n) {
  for (;;) {
    if (!tls_ || !tls_->HasPending()) {
      pollfd pf{sock_, POLLIN, 0};
      if (tls_ && tls_->want() == TlsConn::kWantWrite) pf.events = POLLOUT;
      int r = poll(&pf, 1, o_.ack_timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return -1;
    }
    if (tls_) {
      ssize_t got = tls_->Read(p, n);
      if (got == -1) continue;  // a record not complete yet
      return got;
    }
    ssize_t got = recv(sock_, p, n, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return got;
  }
}

// ACKs come in window order: partial ones (the receiver's progress) reset the
// wait; the one for the window's last event ends it.
bool LumberjackSender::WaitAck(uint32_t n) {
  namespace lj = lumberjack;
  if (o_.munge) ++n;  // the credential event
  char ack[6];
  size_t have = 0;
  for (;;) {
    ssize_t got = ReadSome(ack + have, sizeof ack - have);
    if (got <= 0) return Fail();
    have += static_cast<size_t>(got);
    if (have < sizeof ack) continue;
    have = 0;
    if (ack[0] != lj::kVersion || ack[1] != lj::kAck) return Fail();
    if (lj::GetU32(ack + 2) >= n) break;
  }
  ++c_.windows;
  return true;
}

bool LumberjackSender::SendWindow(const std::vector<std::string_view>& lines) {
  if (lines.empty()) return true;
  return WriteWindow(lines) && WaitAck(static_cast<uint32_t>(lines.size()));
}

Status LumberjackSender::OpenOwnSpool() {
  static std::atomic<uint32_t> counter{0};
  own_path_ = o_.spool_dir + "/" + std::string(kSpoolPrefix) + std::to_string(getpid()) + "-" +
              std::to_string(counter.fetch_add(1)) + std::string(kSpoolSuffix);
  own_fd_ = open(own_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (own_fd_ < 0) return Status::FromErrno("spool file " + own_path_, errno);
  flock(own_fd_, LOCK_EX);  // ours for as long as we live: no other sender resends it meanwhile
  return Status::Ok();
}

void LumberjackSender::IndexDirect(size_t want) {
  while (pending_.size() < want && direct_scan_ < direct_.size()) {
    const char* b = direct_.data();
    const char* nl = static_cast<const char*>(std::memchr(b + direct_scan_, '\n', direct_.size() - direct_scan_));
    const size_t end = nl ? static_cast<size_t>(nl - b) : direct_.size();
    if (end > direct_scan_) pending_.emplace_back(direct_scan_, end - direct_scan_);
    direct_scan_ = end + 1;
  }
}

void LumberjackSender::SpoolPending(size_t from) {
  if (direct_.data()) IndexDirect(SIZE_MAX);  // every line not delivered is counted and kept
  const uint64_t n = pending_.size() > from ? pending_.size() - from : 0;
  if (n > 0) {
    // The lines as they came, from the first not delivered on (blank lines, if
    // any, go along: the resend skips them).
    const size_t off = pending_[from].first;
    const std::string_view bytes = Src().substr(off);
    bool ok = !o_.spool_dir.empty() && own_bytes_ + bytes.size() <= o_.spool_max_bytes;
    if (ok && own_fd_ < 0) ok = OpenOwnSpool().ok();
    if (ok) {
      const off_t end = static_cast<off_t>(own_bytes_);
      const bool nl = bytes.back() != '\n';  // a caller's last line without its '\n'
      if (pwrite(own_fd_, bytes.data(), bytes.size(), end) == static_cast<ssize_t>(bytes.size()) &&
          (!nl || pwrite(own_fd_, "\n", 1, end + static_cast<off_t>(bytes.size())) == 1)) {
        own_bytes_ += bytes.size() + (nl ? 1 : 0);
        own_records_ += n;
        c_.spooled += n;
      } else {
        // A full disk: cut the partial write off again, and count the loss.
        if (ftruncate(own_fd_, end) != 0) {
        }
        ok = false;
      }
    }
    if (!ok) c_.dropped += n;
  }
  pending_.clear();
  pending_buf_.clear();
  if (pending_buf_.capacity() > (16u << 20)) pending_buf_.shrink_to_fit();
}

bool LumberjackSender::ResendFile(int fd, bool own) {
  constexpr size_t kMaxSpoolLine = 4u << 20;  // a spool line longer than this is skipped (memory bound)
  bool skipping = false;
  std::string carry;
  std::vector<std::string> owned;
  std::vector<std::string_view> window;
  char chunk[1 << 16];
  off_t off = 0;
  auto send_window = [&]() {
    if (window.empty()) return true;
    if (!SendWindow(window)) return false;
    c_.acked += window.size();
    c_.resent += window.size();
    if (own) own_records_ -= std::min<uint64_t>(own_records_, window.size());
    window.clear();
    owned.clear();
    return true;
  };
  for (;;) {
    ssize_t n = pread(fd, chunk, sizeof chunk, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    off += n;
    carry.append(chunk, static_cast<size_t>(n));
    size_t pos = 0, nl;
    if (skipping) {  // the rest of an over-long line: up to its end
      nl = carry.find('\n');
      if (nl == std::string::npos) {
        carry.clear();
        continue;
      }
      pos = nl + 1;
      skipping = false;
    }
    while ((nl = carry.find('\n', pos)) != std::string::npos) {
      if (nl > pos) owned.emplace_back(carry, pos, nl - pos);
      pos = nl + 1;
    }
    carry.erase(0, pos);
    if (carry.size() > kMaxSpoolLine) {
      // No line of ours is this long (garbage, or a file not written by a
      // sender): skipped and counted, never held whole in memory.
      ++c_.dropped;
      carry.clear();
      skipping = true;
    }
    if (owned.size() >= o_.window) {
      for (const auto& l : owned) window.emplace_back(l);
      if (!send_window()) return false;
    }
  }
  for (const auto& l : owned) window.emplace_back(l);
  if (!send_window()) return false;
  if (!carry.empty()) ++c_.dropped;  // a record cut off by a crash mid-write: counted, not sent half
  return true;
}

bool LumberjackSender::ResendSpool() {
  if (o_.spool_dir.empty()) return true;
  if (own_fd_ >= 0 && own_bytes_ > 0) {
    if (!ResendFile(own_fd_, true)) return false;
    if (ftruncate(own_fd_, 0) == 0) own_bytes_ = own_records_ = 0;
  }
  DIR* d = opendir(o_.spool_dir.c_str());
  if (!d) return true;
  bool all = true;
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(kSpoolPrefix) || !name.ends_with(kSpoolSuffix)) continue;
    const std::string path = o_.spool_dir + "/" + std::string(name);
    if (path == own_path_) continue;
    // Never through a link, never a FIFO or device, never another user's file.
    int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    // One link: a hard link to a file another user (or root) owns elsewhere is never shipped.
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 ||
        flock(fd, LOCK_EX | LOCK_NB) != 0) {  // locked: its sender is alive and resends it itself
      close(fd);
      continue;
    }
    if (ResendFile(fd, false)) {
      unlink(path.c_str());
    } else {
      all = false;
    }
    close(fd);
    if (!all) break;
  }
  closedir(d);
  return all;
}

void LumberjackSender::Deliver() {
  if (!Connect()) return SpoolPending();
  if (!ResendSpool()) return SpoolPending();
  // Two windows in flight: the next one is on the wire while the receiver
  // stores the last (Beats' pipelining); on a failure, everything from the
  // oldest unacknowledged window on is spooled.
  size_t sent = 0, done = 0;
  std::vector<size_t> inflight;  // window sizes, oldest first
  std::vector<std::string_view> window;
  bool ok = true;
  for (;;) {
    while (ok && inflight.size() < 2) {
      if (direct_.data()) IndexDirect(sent + o_.window);
      if (sent >= pending_.size()) break;
      window.clear();
      const size_t end = std::min(pending_.size(), sent + o_.window);
      for (size_t k = sent; k < end; ++k) window.emplace_back(PendingLine(k));
      ok = WriteWindow(window);
      inflight.push_back(end - sent);
      sent = end;
    }
    if (!ok || inflight.empty()) break;
    ok = WaitAck(static_cast<uint32_t>(inflight.front()));
    if (ok) {
      c_.acked += inflight.front();
      done += inflight.front();
      inflight.erase(inflight.begin());
    }
  }
  SpoolPending(done);  // what could not be delivered now
}

}  // namespace iosonar
