// A tiny HTTP/1.1 responder for a Prometheus scrape endpoint (GET /metrics),
// small enough for the lean exporter: no HTTP library, no thread. The
// exporter's loop calls ServeUntil() while it waits for its next sample, so
// the text is rendered straight from the exporter's state, in pieces, with
// no lock and no copy of the whole exposition (a server with 50,000 job ids
// exposes 10s of MB).
//
// Bounds: one connection is served at a time; the kernel's listen backlog
// (kBacklog) holds the ones waiting, more are refused by the kernel. A
// request must arrive whole (headers <= 8 KiB) within kRequestTimeoutMs, and
// the whole response must be taken by the client within kResponseTimeoutMs,
// or the connection is closed. A scrape that is still being written when the
// next sample is due delays that sample by at most kResponseTimeoutMs (the
// loop's absolute schedule then skips the ticks it missed; deltas carry
// their elapsed time, so none is wrong).
//
// Responses: 200 with `text/plain; version=0.0.4` (the Prometheus text
// format) for GET or HEAD of /metrics (and /), 404 for another path, 405 for
// another method, 400 for a request that is not HTTP; always
// `Connection: close` and a body delimited by the close.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar::exporters {

class MetricsServer {
 public:
  static constexpr int kBacklog = 16;
  static constexpr int kRequestTimeoutMs = 2000;
  static constexpr int kResponseTimeoutMs = 10000;

  // The body being written: Append() buffers and sends every 64 KiB; false
  // once the client is gone or too slow (the renderer may stop early).
  class Body {
   public:
    bool Append(std::string_view s);
    std::string& buf() { return buf_; }  // append directly, then call Flush()
    bool Flush(bool all = false);
    bool ok() const { return ok_; }

   private:
    friend class MetricsServer;
    int fd_ = -1;
    int64_t deadline_ = 0;
    std::string buf_;
    bool ok_ = true;
    uint64_t sent_ = 0;
  };
  using Render = std::function<void(Body&)>;

  // "HOST:PORT", "[IPv6]:PORT" or ":PORT" (every address). Port 0 picks a
  // free one (port() tells which).
  static Result<std::unique_ptr<MetricsServer>> Listen(const std::string& host_port);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  // Serves scrapes until the monotonic clock reaches deadline_ns (or a
  // signal interrupts the wait: returns early, so the loop sees a stop).
  void ServeUntil(int64_t deadline_ns, const Render& render);
  uint64_t scrapes() const { return scrapes_; }

 private:
  MetricsServer() = default;
  void ServeOne(int fd, const Render& render);
  int fd_ = -1;
  int port_ = 0;
  uint64_t scrapes_ = 0;
};

// Appends s as a label value of the text format (\, " and newline escaped).
void AppendLabelValue(std::string* out, std::string_view s);

}  // namespace iosonar::exporters
