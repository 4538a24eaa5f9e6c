// A loopback HTTP/1.1 responder for contract tests, and on top of it a
// loopback responder that plays Elasticsearch's documented responses.
//
// These are NOT tests against Elasticsearch: no Elasticsearch can be
// installed on the development machines. FakeElasticsearch implements, in
// memory, only the subset of the REST API that iosonar's client, store and
// es-setup send (as Elasticsearch 8 documents it): _bulk `create` into
// auto-created data streams with per-item 201/409, _refresh, _pit open/close,
// _search with a PIT (bool filter of range/term, sort on @timestamp and
// _shard_doc, search_after), composite aggregations over a date_histogram
// source with sum sub-aggregations and after_key, _count, and PUT/GET of
// component templates, index templates and ILM policies. It checks what the
// client sends (method, path, headers, NDJSON well formed and ending in a
// newline, JSON bodies parse) and records every violation, and it injects
// the failures Elasticsearch documents: item statuses (429/400/503), a 429
// or 5xx for a whole request, an expired PIT, a connection dropped in the
// middle of a response.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace iosonar::test {

struct HttpRequest {
  std::string method;
  std::string path;    // without the query string
  std::string query;   // after '?', "" if none
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  bool drop_mid_body = false;  // send the headers and half the body, then close the connection
};

// Serves each connection on its own thread (keep-alive), one request at a time.
class HttpResponder {
 public:
  explicit HttpResponder(std::function<HttpReply(const HttpRequest&)> handler);
  ~HttpResponder();
  HttpResponder(const HttpResponder&) = delete;
  HttpResponder& operator=(const HttpResponder&) = delete;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  uint64_t connections() const { return connections_.load(); }
  uint64_t gzip_requests() const { return gzip_requests_.load(); }  // bodies that came Content-Encoding: gzip

 private:
  void AcceptLoop();
  void Serve(int fd);
  std::function<HttpReply(const HttpRequest&)> handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> gzip_requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

class FakeElasticsearch {
 public:
  FakeElasticsearch();
  ~FakeElasticsearch();
  std::string url() const { return server_->url(); }
  uint64_t gzip_requests() const { return server_->gzip_requests(); }

  // --- failure injection (documented Elasticsearch behaviours) ---
  // The next n requests (of any kind, or only those whose path contains
  // path_part) are answered with status as a whole (429 or 5xx).
  void FailNextRequests(int status, int n, const std::string& path_part = "");
  // The next n requests whose path contains path_part are processed, then
  // their connection is dropped in the middle of the response.
  void DropNextResponses(int n, const std::string& path_part = "");
  // Per bulk item: fn(_id, attempt of that _id from 1) returns a status to
  // answer instead of processing (429, 400, 503), or 0 to process normally.
  void SetItemFault(std::function<int(const std::string& id, int attempt)> fn);
  // Every open point in time expires now.
  void ExpirePits();
  // Expire the PIT after this many more successful PIT searches.
  void ExpirePitsAfterSearches(int n);
  // Require this Authorization header value on every request (401 otherwise).
  void RequireAuthorization(const std::string& value);

  // --- inspection ---
  size_t DocCount(const std::string& index) const;
  std::map<std::string, std::string> Docs(const std::string& index) const;  // _id -> _source
  std::vector<std::string> Indices() const;
  std::vector<std::string> Violations() const;  // contract violations seen
  std::vector<HttpRequest> Requests() const;
  std::map<std::string, std::string> Resources() const;  // "/_index_template/x" -> body PUT
  uint64_t pit_expirations() const;
  // PIT searches with aggregations: the plans of ordered scans (time chunks).
  uint64_t plan_requests() const;

  struct State;

 private:
  HttpReply Handle(const HttpRequest& r);
  std::unique_ptr<State> st_;
  std::unique_ptr<HttpResponder> server_;
};

}  // namespace iosonar::test
