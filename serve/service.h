// `iosonar serve`'s request handling, apart from the HTTP library: a request
// (method, path, query, who sent it) in, a response out. The routes (the
// JSON API and the server-rendered pages) are listed by Routes() and
// documented in docs/openapi.yaml (a test checks the two agree).
//
// Isolation: every route but /static/* needs an identity (401 without one).
// A job route first looks the job up in the job database and answers 404
// -- the same body whether the job does not exist or is someone else's --
// unless the caller owns it (jobs.user_name), shares its project
// (IdentityOptions::share_by) or is an administrator. Only then is the
// job's cache key or store read. /admin routes are 404 to non-administrators.
//
// Results: a job's summary is read from Redis (iosonar:job:JOB:summary),
// else computed from the store once however many requests ask at the same
// time (SingleFlight), written to Redis and served from there afterwards; the
// cross-layer view, the phases and the timelines likewise under their keys
// (iosonar:job:JOB:xlayer, :phases, :timeline). Without Redis the
// results are kept in memory, and while Redis is unreachable what is
// computed meanwhile is kept in memory too (not recomputed). A summary just read from Redis is served from
// memory for ServeOptions::memo_ms (1 s) before Redis is asked again, so a
// popular page costs Redis one GET a second. Read-only towards the store and the job
// database.
//
// Clusters: a job is (cluster, job id) as in the job database; ?cluster=
// picks the cluster (default ServeOptions::cluster), a job of another
// cluster than the default is cached under iosonar:job:JOB@CLUSTER:... and
// read from its cluster's store (cluster_stores, else store).
//
// Handle(r, true) never computes: a request that needs an uncached result
// gets a Response whose deferred() does it (HttpServer runs it in a worker).
//
// Thread-safe: each thread that calls Handle or deferred() gets its own
// store, job database and Redis connections.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "serve/identity.h"

namespace iosonar::serve {

struct ServeOptions {
  std::string store;  // DIR (SQLite) or an Elasticsearch URL
  std::string mysql;  // the job database
  std::string redis;  // "" = cache in memory only
  // The default cluster of requests (--cluster): a job id without ?cluster=
  // is this cluster's, and its cache keys are the plain iosonar:job:JOB:...
  // ones. "" = the only cluster holding the id (that the caller may see).
  std::string cluster;
  // A cluster's own record store (--cluster-store NAME=DIR|URL); the others' records are in `store`.
  std::map<std::string, std::string> cluster_stores;
  IdentityOptions identity;
  // The path a reverse proxy mounts the service under ("/iosonar"; "" = the
  // root): the pages' links, scripts and style sheets and the redirects carry
  // it. A request path that still starts with it (a proxy that passes the
  // prefix on) is answered as the path without it.
  std::string base_path;
  size_t list_limit = 500;   // jobs in a listing
  int meta_ttl_s = 60;       // a job's database row is re-read after this
  // A summary read from the cache is served from memory for this long before
  // the cache is asked again (0: every request reads Redis).
  int memo_ms = 1000;
  bool quiet = false;        // no log lines on stderr
};

struct Request {
  std::string method = "GET";
  std::string path;
  std::map<std::string, std::string> query;
  Credentials cred;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // When set, the body instead of `body`: an immutable buffer shared by every
  // response that sends it (a cached summary), never copied.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides the security headers
  // When set, the answer needs a computation (a cache miss): the caller runs
  // deferred() off its server thread (HttpServer: a bounded worker pool,
  // the connection suspended meanwhile) and sends what it returns; the rest
  // of this Response is not an answer.
  std::function<Response()> deferred;

  const std::string& Body() const { return shared_body ? *shared_body : body; }
};

// The security headers every response carries (a strict Content-Security-Policy:
// scripts, styles and fetches from this server only, no inline script, no frames).
const std::vector<std::pair<std::string, std::string>>& SecurityHeaders();

// --base-path as given ("/iosonar", "/iosonar/") in its canonical form
// ("/iosonar"; "/" is ""): a path of [A-Za-z0-9._~-] segments, else an error.
Result<std::string> NormalizeBasePath(const std::string& s);

// "GET /api/jobs", "GET /api/jobs/{job}", ... : every route, as the OpenAPI file names them.
const std::vector<std::string>& Routes();

class Service {
 public:
  explicit Service(ServeOptions o);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Answers r; with defer, a request that needs an uncached computation
  // (a job's summary, series or phases, a day's heatmap or LASSi) gets a
  // Response whose deferred() computes and answers it (identity already
  // checked), so the caller's thread is not held. Without defer it is
  // computed here.
  Response Handle(const Request& r, bool defer = false);
  const IdentityOptions& identity_options() const;
  // Results computed from the store so far (not read from a cache).
  uint64_t computations() const { return computations_.load(); }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> computations_{0};
};

}  // namespace iosonar::serve
