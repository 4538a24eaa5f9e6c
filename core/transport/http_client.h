// A small HTTP/1.1 client on libcurl for Elasticsearch's REST API: one CURL
// easy handle per client, reused for every request (keep-alive), basic auth
// or API key, TLS verification on by default (CA file optional).
//
// Errors: a transport failure (refused, reset, timeout, a response cut off
// mid-body) is Status kUnavailable (retryable); any HTTP status is a
// successful Result carrying that status.
// Not thread-safe: one client per thread.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "core/transport/sink.h"
#include "core/base/status.h"

namespace iosonar {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string content_type;
};

class HttpClient {
 public:
  // base_url: http(s)://HOST[:PORT][/PREFIX] (an es+ prefix is dropped).
  static Result<std::unique_ptr<HttpClient>> Open(const std::string& base_url, const EsOptions& opts);
  virtual ~HttpClient() = default;
  // path starts with '/'; body may be empty. content_type defaults to application/json;
  // content_encoding, if given, is sent as Content-Encoding (the body is already encoded).
  virtual Result<HttpResponse> Request(std::string_view method, std::string_view path, std::string_view body,
                                       std::string_view content_type = "application/json",
                                       std::string_view content_encoding = {}) = 0;
  virtual const std::string& base_url() const = 0;
};

}  // namespace iosonar
