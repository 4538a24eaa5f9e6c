// The HTTP side of `iosonar serve`, on GNU libmicrohttpd (docs/serve.md says
// why): a fixed pool of polling threads, each multiplexing its connections
// with epoll (no thread per connection), optional TLS through GnuTLS. Each
// request becomes a serve::Request for Service::Handle; the response gets
// the security headers.
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
};

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
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

// Splits HOST:PORT / [HOST]:PORT; Invalid naming the text otherwise.
Status ParseListen(const std::string& text, std::string* host, int* port);

}  // namespace iosonar::serve
