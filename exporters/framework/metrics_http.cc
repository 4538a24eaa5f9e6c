#include "exporters/framework/metrics_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/timeutil.h"

namespace iosonar::exporters {
namespace {

int MsLeft(int64_t deadline_ns) {
  const int64_t left = (deadline_ns - MonotonicNs()) / 1000000;
  return left <= 0 ? 0 : left > 1000000 ? 1000000 : static_cast<int>(left);
}

// Writes all of s before the deadline (false: the client is gone or too slow).
bool WriteAll(int fd, std::string_view s, int64_t deadline_ns) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      s.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int ms = MsLeft(deadline_ns);
      if (ms == 0) return false;
      const int r = ::poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

void AppendLabelValue(std::string* out, std::string_view s) {
  for (char c : s) {
    if (c == '\\') out->append("\\\\");
    else if (c == '"') out->append("\\\"");
    else if (c == '\n') out->append("\\n");
    else out->push_back(c);
  }
}

bool MetricsServer::Body::Flush(bool all) {
  if (!ok_) {
    buf_.clear();
    return false;
  }
  if (!all && buf_.size() < (64u << 10)) return true;
  ok_ = WriteAll(fd_, buf_, deadline_);
  sent_ += buf_.size();
  buf_.clear();
  return ok_;
}

bool MetricsServer::Body::Append(std::string_view s) {
  buf_.append(s);
  return Flush();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Listen(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos)
    return Status::Invalid("--listen-metrics " + host_port + ": want HOST:PORT, [IPv6]:PORT or :PORT");
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 0 || p > 65535)
    return Status::Invalid("--listen-metrics " + host_port + ": port '" + port + "' is not a number from 0 to 65535");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &ai); rc != 0)
    return Status::Invalid("--listen-metrics " + host_port + ": " + gai_strerror(rc));
  std::string err;
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  for (addrinfo* a = ai; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kBacklog) != 0) {
      err = std::strerror(errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    s->port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    s->fd_ = fd;
    break;
  }
  freeaddrinfo(ai);
  if (s->fd_ < 0) return Status::Invalid("--listen-metrics " + host_port + ": cannot listen: " + err);
  return s;
}

MetricsServer::~MetricsServer() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsServer::ServeUntil(int64_t deadline_ns, const Render& render) {
  while (true) {
    const int ms = MsLeft(deadline_ns);
    if (ms == 0) return;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, ms);
    if (r < 0) return;  // EINTR: a signal (the loop checks for a stop)
    if (r == 0) return;
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) continue;
    ServeOne(c, render);
    ::close(c);
  }
}

void MetricsServer::ServeOne(int fd, const Render& render) {
  // The request: up to the blank line, within the request deadline.
  const int64_t req_deadline = MonotonicNs() + int64_t{kRequestTimeoutMs} * 1000000;
  std::string req;
  char b[2048];
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos) {
    if (req.size() > 8192) return;  // not a scrape: dropped
    const ssize_t n = ::recv(fd, b, sizeof b, 0);
    if (n > 0) {
      req.append(b, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return;
    pollfd p{fd, POLLIN, 0};
    const int ms = MsLeft(req_deadline);
    if (ms == 0 || ::poll(&p, 1, ms) <= 0) return;
  }
  const int64_t deadline = MonotonicNs() + int64_t{kResponseTimeoutMs} * 1000000;
  const auto sp1 = req.find(' ');
  const auto sp2 = sp1 == std::string::npos ? sp1 : req.find(' ', sp1 + 1);
  const auto eol = req.find('\n');
  if (sp2 == std::string::npos || sp2 > eol || req.compare(sp2 + 1, 5, "HTTP/") != 0) {
    WriteAll(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", deadline);
    return;
  }
  const std::string_view method(req.data(), sp1);
  std::string_view path(req.data() + sp1 + 1, sp2 - sp1 - 1);
  if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  if (method != "GET" && method != "HEAD") {
    WriteAll(fd, "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
             deadline);
    return;
  }
  if (path != "/metrics" && path != "/") {
    WriteAll(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 25\r\nConnection: close\r\n\r\nnot found: try /metrics\r\n",
             deadline);
    return;
  }
  if (!WriteAll(fd,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nConnection: close\r\n"
                "Cache-Control: no-store\r\n\r\n",
                deadline))
    return;
  ++scrapes_;
  if (method == "HEAD") return;
  Body body;
  body.fd_ = fd;
  body.deadline_ = deadline;
  body.buf_.reserve(80u << 10);
  render(body);
  body.Flush(true);
  ::shutdown(fd, SHUT_WR);
}

}  // namespace iosonar::exporters
