// The HTTP side of `iosonar serve`, on GNU libmicrohttpd (docs/serve.md says
// why): a fixed pool of polling threads, each multiplexing its connections
// with epoll (no thread per connection), optional TLS through GnuTLS. Each
// request becomes a serve::Request for Service::Handle; the response gets
// the security headers.
//
// A request whose answer needs a computation (Service::Handle's deferred)
// does not hold its polling thread: the connection is suspended
// (MHD_suspend_connection), the computation runs in a small pool of worker
// threads, and the connection is resumed with the answer. The pool's queue
// is bounded: beyond it the request gets 503 with Retry-After.
#pragma once
#include <memory>
#include <string>

#include "core/base/status.h"
#include "serve/service.h"

struct MHD_Daemon;

namespace iosonar::serve {

struct HttpOptions {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT, [IPv6]:PORT
  int threads = 4;                        // polling threads
  std::string tls_cert, tls_key;          // PEM files: HTTPS when both are given
  int connection_timeout_s = 60;
  int compute_threads = 2;   // workers for uncached computations
  int compute_queue = 64;    // computations waiting for a worker, at most (then 503)
  int retry_after_s = 5;     // the Retry-After of that 503
  bool quiet = false;        // no log lines on stderr
};

class WorkerPool;
struct Context;

class HttpServer {
 public:
  // Binds and starts serving; errors name the address or the file.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpOptions& o, Service* service);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const { return port_; }

 private:
  HttpServer() = default;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<Context> ctx_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

// Splits HOST:PORT / [HOST]:PORT; Invalid naming the text otherwise.
Status ParseListen(const std::string& text, std::string* host, int* port);

}  // namespace iosonar::serve
