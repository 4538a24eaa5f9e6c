#include "serve/service.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "analysis-jobs/anomaly/anomaly.h"
#include "analysis-jobs/job-summary/job_meta.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/lassi/baseline.h"
#include "analysis-jobs/lassi/lassi_store.h"
#include "analysis-jobs/lassi/probe_baseline.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "core/results/results.h"
#include "analysis-jobs/phases/phases.h"
#include "analysis-jobs/report/report.h"
#include "analysis-jobs/xlayer/xlayer.h"
#include "core/base/json.h"
#include "core/base/timeutil.h"
#include "core/jobdb/jobdb.h"
#include "core/records/fields.h"
#include "core/store/es_store.h"
#include "core/store/store.h"
#include "core/transport/redis.h"
#include "redis-cache/cache.h"
#include "serve/assets.h"
#include "serve/pages.h"
#include "serve/single_flight.h"
#include "serve/timeline.h"

namespace iosonar::serve {

const std::vector<std::pair<std::string, std::string>>& SecurityHeaders() {
  static const std::vector<std::pair<std::string, std::string>> h = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "private, no-store"},
  };
  return h;
}

const std::vector<std::string>& Routes() {
  static const std::vector<std::string> r = {
      "GET /api/me",
      "GET /api/jobs",
      "GET /api/jobs/{job}",
      "GET /api/jobs/{job}/series",
      "GET /api/jobs/{job}/phases",
      "GET /api/jobs/{job}/advice",
      "GET /api/jobs/{job}/anomaly",
      "GET /api/jobs/{job}/timeline",
      "GET /api/admin/heatmap",
      "GET /api/admin/anomalies",
      "GET /api/admin/lassi",
      "GET /api/admin/jobs/{job}/osts",
      "GET /api/admin/jobs/{job}/neighbours",
      "GET /",
      "GET /jobs",
      "GET /jobs/{job}",
      "GET /admin",
      "GET /static/{file}",
  };
  return r;
}

Result<std::string> NormalizeBasePath(const std::string& s) {
  if (s.empty() || s[0] != '/') return Status::Invalid("a base path starts with '/'");
  std::string b = s;
  while (!b.empty() && b.back() == '/') b.pop_back();
  if (b.find("//") != std::string::npos) return Status::Invalid("a base path has no empty segment ('//')");
  for (char c : b)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' || c == '.' ||
          c == '_' || c == '~' || c == '-'))
      return Status::Invalid(std::string("a base path is letters, digits and . _ ~ - between '/', not '") + c + "'");
  for (const char* dots : {"/./", "/../"})
    if ((b + "/").find(dots) != std::string::npos) return Status::Invalid("a base path has no '.' or '..' segment");
  return b;
}

namespace {

using Clock = std::chrono::steady_clock;

Response Json(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response ErrorJson(int status, const std::string& msg) {
  std::string b;
  JsonWriter w(&b);
  w.BeginObject();
  w.Kv("error", msg);
  w.EndObject();
  b += "\n";
  return Json(status, b);
}

Response Html(int status, std::string body) {
  Response r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// One job id in a URL: digits only, in the canonical form (no leading zero:
// the cache keys and the store's job.id are that form), else it names no job.
bool ValidJobId(const std::string& s) {
  return !s.empty() && s.size() <= 20 && (s[0] != '0' || s.size() == 1) &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A cluster name in a URL (Slurm's ClusterName: letters, digits, '_', '-',
// '.'), else it names no cluster.
bool ValidCluster(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// While a server thread answers with defer on: a computation is wanted
// (Cached missed), so the answer is deferred to a worker.
thread_local bool t_may_defer = false;
thread_local bool t_deferred = false;

// The test-only hook (docs/serve.md): IOSONAR_SERVE_TEST_HOLD=JOB:FIFO holds
// the computation of JOB's summary until a byte can be read from FIFO.
void TestHold(const std::string& key_id, const std::function<void(const std::string&)>& log) {
  static const char* env = std::getenv("IOSONAR_SERVE_TEST_HOLD");
  if (!env || !*env) return;
  std::string v(env);
  size_t colon = v.find(':');
  if (colon == std::string::npos || v.substr(0, colon) != key_id) return;
  log("test hook: holding the summary of job " + key_id);
  int fd = open(v.substr(colon + 1).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char c;
    while (read(fd, &c, 1) < 0 && errno == EINTR) {
    }
    close(fd);
  }
  log("test hook: released the summary of job " + key_id);
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::optional<int64_t> DayStart(const std::string& day) {
  if (day.size() != 10) return std::nullopt;
  auto t = ParseIso8601(day + "T00:00:00Z");
  return t;
}

}  // namespace

struct Service::Impl {
  ServeOptions opt;
  uint64_t serial;  // this service's number (per-thread connections are keyed by it)
  Service* owner;

  // Per-thread connections.
  struct Conns {
    std::map<std::string, std::unique_ptr<Store>> stores;  // by location
    std::unique_ptr<JobDb> db;
    std::unique_ptr<RedisClient> redis;
  };
  Conns& Mine() {
    thread_local std::map<uint64_t, Conns> conns;
    return conns[serial];
  }
  // The store of a cluster's records: its --cluster-store, else --store.
  const std::string& StoreOf(const std::string& cluster) const {
    auto it = opt.cluster_stores.find(cluster);
    return it == opt.cluster_stores.end() ? opt.store : it->second;
  }
  Result<Store*> GetStore(const std::string& cluster = "") {
    const std::string& where = StoreOf(cluster);
    Conns& c = Mine();
    auto& s = c.stores[where];
    if (!s) {
      auto o = OpenStoreAt(where);
      if (!o.ok()) return o.status();
      s = std::move(o).value();
    }
    return s.get();
  }
  Result<JobDb*> GetDb() {
    Conns& c = Mine();
    if (!c.db) {
      auto d = JobDb::Open(opt.mysql);
      if (!d.ok()) return d.status();
      c.db = std::move(d).value();
    }
    return c.db.get();
  }
  Result<RedisClient*> GetRedis() {
    Conns& c = Mine();
    if (!c.redis) {
      auto r = RedisClient::Connect(opt.redis);
      if (!r.ok()) return r.status();
      c.redis = std::move(r).value();
    }
    return c.redis.get();
  }

  void Log(const std::string& s) {
    // Once deferred, what this thread still does is discarded (the worker redoes it): no noise.
    if (!opt.quiet && !t_deferred) std::cerr << "iosonar serve: " << s << "\n";
  }

  // ---- the job database's rows, kept meta_ttl_s ----
  // A row is shared, not copied, by the requests that read it (a 1,024-node
  // job's node list was two copies per request: most of a cached page's cost).
  using MetaPtr = std::shared_ptr<const analysis::JobMeta>;
  struct MetaEntry {
    MetaPtr meta;  // nullptr: no such job
    Clock::time_point at;
  };
  std::mutex meta_mu;
  std::map<std::string, MetaEntry> meta_cache;

  // The job (with its nodes) on a cluster, nullptr if the database has no
  // such job; an error if the database failed.
  Result<MetaPtr> Meta(const std::string& cluster, const std::string& job) {
    const std::string ck = cluster + "\n" + job;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      auto it = meta_cache.find(ck);
      if (it != meta_cache.end() && Clock::now() - it->second.at < std::chrono::seconds(opt.meta_ttl_s))
        return it->second.meta;
    }
    auto db = GetDb();
    if (!db.ok()) return db.status();
    MetaPtr m;
    auto j = (*db)->FindJob(job, cluster);
    if (j.ok()) {
      auto n = (*db)->JobNodes(j->cluster, j->job_id);
      if (!n.ok()) {
        Mine().db.reset();
        return n.status();
      }
      m = std::make_shared<const analysis::JobMeta>(analysis::JobMeta{*j, std::move(n).value()});
    } else if (j.status().code() != Code::kNotFound && j.status().code() != Code::kInvalid) {
      Mine().db.reset();  // reconnect next time
      return j.status();
    }
    std::lock_guard<std::mutex> l(meta_mu);
    if (meta_cache.size() > 100000) meta_cache.clear();
    meta_cache[ck] = {m, Clock::now()};
    return m;
  }

  // The clusters whose jobs have this id (job database), kept meta_ttl_s.
  struct ClustersEntry {
    std::vector<std::string> clusters;
    Clock::time_point at;
  };
  std::map<std::string, ClustersEntry> clusters_cache;  // under meta_mu
  Result<std::vector<std::string>> ClustersOf(const std::string& job) {
    {
      std::lock_guard<std::mutex> l(meta_mu);
      auto it = clusters_cache.find(job);
      if (it != clusters_cache.end() && Clock::now() - it->second.at < std::chrono::seconds(opt.meta_ttl_s))
        return it->second.clusters;
    }
    auto db = GetDb();
    if (!db.ok()) return db.status();
    auto c = (*db)->ClustersOf(std::stoull(job));
    if (!c.ok()) {
      Mine().db.reset();
      return c.status();
    }
    std::lock_guard<std::mutex> l(meta_mu);
    if (clusters_cache.size() > 100000) clusters_cache.clear();
    clusters_cache[job] = {*c, Clock::now()};
    return *c;
  }

  // A job as a request names it, once the caller may see it: its row, and the
  // id its cache keys are spelled with: the plain job id for the default
  // cluster (--cluster; without one, for an id only one cluster has: the keys
  // `job-summary --redis` writes), else "JOB@CLUSTER".
  struct Target {
    MetaPtr row;  // never null once Resolve found the job
    std::string key_id;
    const analysis::JobMeta& meta() const { return *row; }
  };
  enum class Found { kYes, kNo, kAmbiguous };
  // cluster: ?cluster= ("" = the default cluster, else the only one holding
  // the id that the caller may see). kNo alike for a job that does not exist
  // and one the caller may not see.
  Result<Found> Resolve(const Identity& who, const std::string& job, const std::string& cluster, Target* t) {
    if (!ValidJobId(job)) return Found::kNo;
    if (!cluster.empty() && !ValidCluster(cluster)) return Found::kNo;
    std::string cl = cluster.empty() ? opt.cluster : cluster;
    if (cl.empty()) {
      auto cls = ClustersOf(job);
      if (!cls.ok()) return cls.status();
      std::vector<MetaPtr> seen;
      for (const auto& c : *cls) {
        auto m = Meta(c, job);
        if (!m.ok()) return m.status();
        if (*m && MaySee(who, (*m)->job)) seen.push_back(*m);
      }
      if (seen.empty()) return Found::kNo;
      if (seen.size() > 1) return Found::kAmbiguous;  // only jobs the caller may see: nothing leaks
      t->row = std::move(seen.front());
      t->key_id = cls->size() == 1 ? job : job + "@" + t->meta().job.cluster;
      return Found::kYes;
    }
    auto m = Meta(cl, job);
    if (!m.ok()) return m.status();
    if (!*m || !MaySee(who, (*m)->job)) return Found::kNo;
    t->row = std::move(*m);
    if (cl == opt.cluster) {
      t->key_id = job;
    } else if (opt.cluster.empty()) {
      auto cls = ClustersOf(job);
      if (!cls.ok()) return cls.status();
      t->key_id = cls->size() == 1 ? job : job + "@" + cl;
    } else {
      t->key_id = job + "@" + cl;
    }
    return Found::kYes;
  }

  bool MaySee(const Identity& who, const JobRecord& j) const {
    if (who.admin) return true;
    if (j.user && *j.user == who.user) return true;
    const std::optional<std::string>* shared = nullptr;
    if (opt.identity.share_by == "account") shared = &j.account;
    if (opt.identity.share_by == "group") shared = &j.group;
    if (shared && *shared && std::find(who.groups.begin(), who.groups.end(), **shared) != who.groups.end())
      return true;
    return false;
  }

  // ---- results: Redis (or memory), else computed once ----
  std::mutex mem_mu;
  std::map<std::string, std::string> mem;  // key -> value, when there is no Redis
  SingleFlight<Result<std::string>> flights;

  Result<std::optional<std::string>> CacheGet(const std::string& key) {
    if (opt.redis.empty()) {
      std::lock_guard<std::mutex> l(mem_mu);
      auto it = mem.find(key);
      if (it == mem.end()) return std::optional<std::string>();
      return std::optional<std::string>(it->second);
    }
    auto r = GetRedis();
    auto v = r.ok() ? (*r)->Get(key) : Result<std::optional<std::string>>(r.status());
    if (v.ok()) return v;
    Mine().redis.reset();
    // Redis is down: what was computed meanwhile is kept in memory (CachePut).
    std::lock_guard<std::mutex> l(mem_mu);
    auto it = mem.find(key);
    if (it != mem.end()) return std::optional<std::string>(it->second);
    return v.status();
  }
  void CachePut(const std::string& key, const std::string& value) {
    if (opt.redis.empty()) {
      std::lock_guard<std::mutex> l(mem_mu);
      if (mem.size() > 4096) mem.clear();
      mem[key] = value;
      return;
    }
    auto r = GetRedis();
    Status s = r.ok() ? (*r)->Set(key, value) : r.status();
    if (!s.ok()) {
      Mine().redis.reset();
      Log("warning: caching " + key + ": " + s.ToString() + " (kept in memory meanwhile)");
      std::lock_guard<std::mutex> l(mem_mu);
      if (mem.size() > 4096) mem.clear();
      mem[key] = value;
    }
  }

  // The cached value of key, else compute() once (however many ask at once), cached.
  // keep = false: computed (once for concurrent callers) but not cached (a day not over yet).
  Result<std::string> Cached(const std::string& key, const std::string& what,
                             const std::function<Result<std::string>()>& compute, bool keep = true) {
    auto hit = keep ? CacheGet(key) : Result<std::optional<std::string>>(std::optional<std::string>());
    if (!hit.ok()) Log("warning: reading the cache: " + hit.status().ToString());
    else if (*hit) return std::move(**hit);
    if (t_may_defer) {
      // A server thread: the computation is done by a worker (Handle's deferred).
      t_deferred = true;
      return Status::Unavailable("deferred to a worker: " + what);
    }
    return flights.Do(key, [&]() -> Result<std::string> {
      // Another flight may have landed between our miss and our take-off.
      if (keep)
        if (auto again = CacheGet(key); again.ok() && *again) return std::move(**again);
      auto t0 = Clock::now();
      auto v = compute();
      owner->computations_++;
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!v.ok()) {
        Log("computing " + what + ": " + v.status().ToString());
        return v;
      }
      char b[64];
      std::snprintf(b, sizeof b, "%.1f ms", ms);
      Log("computed " + what + " in " + b);
      if (keep) CachePut(key, *v);
      return v;
    });
  }

  // A job's results are final once it ended (an end time and a state that is
  // not a running one) and its last records had time to arrive (10 minutes,
  // as for a day). Before that they are computed on each request (once for
  // concurrent ones) and neither read from nor written to the cache: a page
  // viewed while the job runs never keeps a partial summary, series or phases.
  static bool JobIsOver(const JobRecord& j) {
    if (!j.end_ns) return false;
    if (j.state) {
      const std::string& st = *j.state;
      for (const char* running : {"RUNNING", "PENDING", "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUED", "RESIZING"})
        if (st.rfind(running, 0) == 0) return false;
    }
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return *j.end_ns + 600LL * 1000000000LL < now;
  }

  Result<std::string> SummaryJson(const Target& t) {
    const std::string job = std::to_string(t.meta().job.job_id);
    return Cached(
        cache::JobSummaryKey(t.key_id), "the summary of job " + t.key_id,
        [&]() -> Result<std::string> {
          TestHold(t.key_id, [&](const std::string& m) { Log(m); });
          auto store = GetStore(t.meta().job.cluster);
          if (!store.ok()) return store.status();
          auto s = analysis::SummarizeJob(**store, job);
          if (!s.ok()) return s.status();
          return analysis::SummaryToJson(*s, false);
        },
        JobIsOver(t.meta().job));
  }

  // The parsed summary and its API form, kept while the cached JSON is
  // unchanged. Immutable once made: requests share it (no copy of the JSON).
  struct Rendered {
    std::string cached;
    MetaPtr row;  // the job's row it was made with (api embeds it)
    std::shared_ptr<const analysis::JobSummary> summary;
    std::shared_ptr<const std::string> api;  // as `job-summary --format json` prints it
  };
  struct RenderedEntry {
    Clock::time_point checked;  // when the cache last had exactly r->cached
    std::shared_ptr<const Rendered> r;
  };
  std::mutex rendered_mu;
  std::map<std::string, RenderedEntry> rendered;  // by key id

  Result<std::shared_ptr<const Rendered>> Summary(const Target& t) {
    const auto now = Clock::now();
    {
      // Asked again within memo_ms of the last look at the cache: no round trip.
      std::lock_guard<std::mutex> l(rendered_mu);
      auto it = rendered.find(t.key_id);
      if (it != rendered.end() && it->second.r->row == t.row &&
          now - it->second.checked < std::chrono::milliseconds(opt.memo_ms))
        return it->second.r;
    }
    auto js = SummaryJson(t);
    if (!js.ok()) return js.status();
    {
      std::lock_guard<std::mutex> l(rendered_mu);
      auto it = rendered.find(t.key_id);
      if (it != rendered.end() && it->second.r->row == t.row && it->second.r->cached == *js) {
        it->second.checked = now;
        return it->second.r;
      }
    }
    auto s = analysis::SummaryFromJson(*js);
    if (!s.ok())
      return Status::Internal("the cached summary of job " + t.key_id + " does not parse: " + s.status().message());
    auto r = std::make_shared<Rendered>();
    r->cached = std::move(js).value();
    r->row = t.row;
    r->summary = std::make_shared<const analysis::JobSummary>(std::move(s).value());
    r->api = std::make_shared<const std::string>(analysis::SummaryJsonWithJob(*r->summary, &t.meta(), true));
    std::lock_guard<std::mutex> l(rendered_mu);
    if (rendered.size() > 4096) rendered.clear();
    rendered[t.key_id] = {now, r};
    return std::shared_ptr<const Rendered>(r);
  }

  Result<std::string> XlayerJson(const Target& t) {
    const std::string job = std::to_string(t.meta().job.job_id);
    return Cached(cache::JobXlayerKey(t.key_id), "the cross-layer view of job " + t.key_id, [&]() -> Result<std::string> {
      auto store = GetStore(t.meta().job.cluster);
      if (!store.ok()) return store.status();
      xlayer::Maps maps;
      auto db = GetDb();
      if (db.ok()) {
        if (Status s = xlayer::MapsFromJobDb(**db, t.meta().job.cluster, job, &maps); !s.ok())
          Log("maps of job " + t.key_id + ": " + s.ToString());
      }
      auto v = xlayer::Analyze(**store, job, maps);
      if (!v.ok()) return v.status();
      return xlayer::ToJson(*v);
    }, JobIsOver(t.meta().job));
  }

  Result<std::string> PhasesJson(const Target& t) {
    const std::string job = std::to_string(t.meta().job.job_id);
    return Cached(cache::JobPhasesKey(t.key_id), "the phases of job " + t.key_id, [&]() -> Result<std::string> {
      auto store = GetStore(t.meta().job.cluster);
      if (!store.ok()) return store.status();
      auto p = analysis::PhasesForJob(**store, job, analysis::PhaseOptions{});
      if (!p.ok()) return p.status();
      return analysis::PhasesToJson(*p);
    }, JobIsOver(t.meta().job));
  }

  // The per-process and per-server timelines (serve/timeline.h), cached as
  // iosonar:job:JOB:timeline once the job is over.
  Result<std::string> TimelineJsonOf(const Target& t) {
    const std::string job = std::to_string(t.meta().job.job_id);
    return Cached(cache::JobResultKey(t.key_id, "timeline"), "the timelines of job " + t.key_id,
                  [&]() -> Result<std::string> {
                    auto store = GetStore(t.meta().job.cluster);
                    if (!store.ok()) return store.status();
                    std::map<std::string, std::string> node_fwd;
                    if (auto db = GetDb(); db.ok()) {
                      auto fw = (*db)->JobForwardingNodes(t.meta().job.cluster, t.meta().job.job_id);
                      if (fw.ok())
                        for (const auto& [node, fwd] : *fw) node_fwd[node] = fwd;
                      else
                        Log("forwarding nodes of job " + t.key_id + ": " + fw.status().ToString());
                    }
                    auto tl = TimelineFromStore(**store, job, node_fwd);
                    if (!tl.ok()) return tl.status();
                    return TimelineJson(*tl);
                  },
                  JobIsOver(t.meta().job));
  }

  static std::vector<report::Advice> AdviceFor(const std::string& job, const analysis::JobSummary& s) {
    report::ReportInput in;
    in.summaries.emplace(job, s);
    return report::FindAdvice(in);
  }

  static std::string VerdictOf(const std::vector<report::Advice>& advice) {
    if (advice.empty()) return "no issue found";
    std::string v;
    for (const auto& a : advice) v += (v.empty() ? "" : "; ") + a.kind;
    return v;
  }

  // "?cluster=NAME" for a link to a job of another cluster than the default.
  std::string ClusterQuery(const std::string& cluster) const {
    return cluster.empty() || cluster == opt.cluster ? std::string() : "?cluster=" + cluster;
  }

  // The cache key ids of listed jobs (Resolve's rule), in one query at most.
  std::vector<std::string> KeyIds(const std::vector<ListedJob>& jobs) {
    std::vector<std::string> ids;
    std::map<std::string, int64_t> clusters_of;  // job id -> clusters with it
    if (opt.cluster.empty() && !jobs.empty()) {
      std::string sql = "SELECT job_id, COUNT(DISTINCT cluster) FROM jobs WHERE step = '' AND job_id IN (";
      std::vector<SqlParam> p;
      for (size_t i = 0; i < jobs.size(); ++i) {
        sql += i ? ", ?" : "?";
        p.push_back(static_cast<int64_t>(std::stoull(jobs[i].job_id)));
      }
      if (auto db = GetDb(); db.ok())
        if (auto rows = (*db)->conn().Query(sql + ") GROUP BY job_id", p); rows.ok())
          for (const auto& r : *rows) clusters_of[r[0].value_or("")] = std::strtoll(r[1].value_or("0").c_str(), nullptr, 10);
    }
    for (const auto& j : jobs) {
      bool plain = opt.cluster.empty() ? clusters_of[j.job_id] == 1 : j.cluster == opt.cluster;
      ids.push_back(plain ? j.job_id : j.job_id + "@" + j.cluster);
    }
    return ids;
  }

  // ---- the job list ----
  // A page of the jobs the caller may see, narrowed by lq; *more: a next page exists.
  Result<std::vector<ListedJob>> List(const Identity& who, const ListQuery& lq = {}, bool* more = nullptr) {
    auto db = GetDb();
    if (!db.ok()) return db.status();
    JobListFilter f;
    f.all = who.admin;
    f.user = who.user;
    if (opt.identity.share_by == "account") f.accounts = who.groups;
    if (opt.identity.share_by == "group") f.groups = who.groups;
    f.only_user = lq.user;
    f.state = lq.state;
    f.verdict = lq.verdict == "too-few" ? "not_enough_history" : lq.verdict;
    if (!lq.from.empty()) f.start_from_ns = ParseIso8601(lq.from + "T00:00:00Z");
    if (!lq.to.empty()) f.start_to_ns = *ParseIso8601(lq.to + "T00:00:00Z") + 86400LL * 1000000000LL;
    f.offset = (lq.page - 1) * opt.list_limit;
    auto rows = (*db)->ListJobs(f, opt.list_limit + 1);
    if (!rows.ok()) {
      Mine().db.reset();
      return rows.status();
    }
    if (more) *more = rows->size() > opt.list_limit;
    if (rows->size() > opt.list_limit) rows->resize(opt.list_limit);
    std::vector<ListedJob> out;
    for (const auto& l : *rows) {
      if (!MaySee(who, l.job)) continue;  // the query already filtered; the same rule as for one job
      ListedJob j;
      j.job_id = std::to_string(l.job.job_id);
      j.cluster = l.job.cluster;
      j.user = l.job.user.value_or("");
      j.name = l.job.name.value_or("");
      j.state = l.job.state.value_or("");
      j.start_ns = l.job.start_ns;
      j.end_ns = l.job.end_ns;
      j.nodes = l.job.node_count;
      if (l.summary) {
        j.summarized = true;
        j.read_bytes = l.summary->read_bytes;
        j.write_bytes = l.summary->write_bytes;
        j.bandwidth = l.summary->read_bw_avg + l.summary->write_bw_avg;
        j.mode = "write " + l.summary->io_mode_write + ", read " + l.summary->io_mode_read;
      }
      out.push_back(std::move(j));
    }
    // The cached summaries, in one round trip: they give the numbers of jobs
    // job_summary lacks and the verdict.
    if (!out.empty()) {
      std::vector<std::string> keys;
      const auto ids = KeyIds(out);
      for (size_t i = 0; i < out.size(); ++i) {
        keys.push_back(cache::JobSummaryKey(ids[i]));
        out[i].cluster_query = ClusterQuery(out[i].cluster);
      }
      std::vector<std::optional<std::string>> vals(keys.size());
      if (opt.redis.empty()) {
        std::lock_guard<std::mutex> l(mem_mu);
        for (size_t i = 0; i < keys.size(); ++i)
          if (auto it = mem.find(keys[i]); it != mem.end()) vals[i] = it->second;
      } else if (auto r = GetRedis(); r.ok()) {
        std::vector<std::string_view> args{"MGET"};
        for (const auto& k : keys) args.push_back(k);
        auto rep = (*r)->Command(args);
        if (rep.ok() && rep->type == RedisReply::kArray && rep->elements.size() == keys.size()) {
          for (size_t i = 0; i < keys.size(); ++i)
            if (rep->elements[i].type == RedisReply::kString) vals[i] = rep->elements[i].str;
        } else if (!rep.ok()) {
          Mine().redis.reset();
        }
      }
      for (size_t i = 0; i < out.size(); ++i) {
        if (!vals[i]) continue;
        auto s = analysis::SummaryFromJson(*vals[i]);
        if (!s.ok()) continue;
        ListedJob& j = out[i];
        j.summarized = true;
        j.read_bytes = s->read.bytes;
        j.write_bytes = s->write.bytes;
        j.bandwidth = s->read.bw_avg + s->write.bw_avg;
        j.mode = "write " + s->mode_write.mode + ", read " + s->mode_read.mode;
        j.verdict = VerdictOf(AdviceFor(j.job_id, *s));
      }
    }
    AddAnomalyVerdicts(&out);
    return out;
  }

  // ---- the administrators' heatmap ----
  Result<Heatmap> HeatmapFor(int64_t day_ns) {
    auto store = GetStore();
    if (!store.ok()) return store.status();
    Heatmap h;
    h.day_start_ns = day_ns;
    constexpr int64_t kHour = 3600LL * 1000000000LL;
    // One unordered scan of the day's records of a dataset.
    auto scan_day = [&](std::string_view dataset, std::vector<FieldId> fields,
                        const std::function<bool(const Row&)>& fn) -> Status {
      ScanQuery q;
      q.dataset = std::string(dataset);
      q.range = {day_ns, day_ns + 24 * kHour};
      q.fields = std::move(fields);
      q.ordered = false;
      return (*store)->Scan(q, fn);
    };
    // The hour of the day of a row whose field 1 is its timestamp (-1: outside the day).
    auto hour_of = [&](const Row& r) -> int {
      const int64_t hour = (r.Int(1) - day_ns) / kHour;
      return hour < 0 || hour >= 24 ? -1 : static_cast<int>(hour);
    };
    auto sum2 = [](const Row& r, int a, int b) {
      return (r.Has(a) ? static_cast<double>(r.Int(a)) : 0) + (r.Has(b) ? static_cast<double>(r.Int(b)) : 0);
    };
    auto per_s = [](const Row& r, int elapsed) {
      return r.Has(elapsed) && r.Int(elapsed) > 0 ? static_cast<double>(r.Int(elapsed)) / 1e9 : 1.0;
    };
    auto raise = [](double* cell, double v) { *cell = std::isfinite(*cell) ? std::max(*cell, v) : v; };
    // The OSTs (iosonar.oss, one scan): peak bytes/s, IOPS and their OSS's
    // ost_io wait; then the disk I/O time (iosonar.brw io_time_ms), where sampled.
    std::map<std::string, size_t> ost_row;
    auto row_of = [&](std::string_view name) -> HeatRow& {
      auto it = ost_row.find(std::string(name));
      if (it == ost_row.end()) {
        it = ost_row.emplace(std::string(name), h.osts.size()).first;
        h.osts.push_back(HeatRow{});
        h.osts.back().name = std::string(name);
      }
      return h.osts[it->second];
    };
    Status s = scan_day(dataset::kOss,
                        {field::kLustreTarget, field::kTimestamp, field::kOssReadBytes, field::kOssWriteBytes,
                         field::kLustreElapsedNs, field::kOssReadOps, field::kOssWriteOps, field::kOssOstIoWaitNs},
                        [&](const Row& r) {
                          const int hour = r.Has(0) ? hour_of(r) : -1;
                          if (hour < 0) return true;
                          const auto hr = static_cast<size_t>(hour);
                          HeatRow& row = row_of(r.Str(0));
                          const double secs = per_s(r, 4);
                          row.peak[hr] = std::max(row.peak[hr], sum2(r, 2, 3) / secs);
                          if (r.Has(5) || r.Has(6)) raise(&row.iops[hr], sum2(r, 5, 6) / secs);
                          if (r.Has(7)) raise(&row.wait_ms[hr], static_cast<double>(r.Int(7)) / 1e6);
                          return true;
                        });
    if (!s.ok()) return s;
    {
      // The mean I/O time of each hour's I/Os: sum of count x bucket (ms) / count.
      std::map<std::pair<std::string, size_t>, std::pair<double, double>> io;  // (ost, hour) -> (ms sum, count)
      s = scan_day(dataset::kBrw,
                   {field::kLustreTarget, field::kTimestamp, field::kBrwHist, field::kBrwBucket, field::kBrwRead,
                    field::kBrwWrite},
                   [&](const Row& r) {
                     if (!r.Has(0) || !r.Has(2) || r.Str(2) != "io_time_ms" || !r.Has(3)) return true;
                     const int hour = hour_of(r);
                     if (hour < 0) return true;
                     const double n = sum2(r, 4, 5);
                     auto& [sum, count] = io[{std::string(r.Str(0)), static_cast<size_t>(hour)}];
                     sum += n * static_cast<double>(r.Int(3));
                     count += n;
                     return true;
                   });
      if (!s.ok()) return s;
      for (const auto& [key, v] : io) row_of(key.first).io_ms[key.second] = v.second > 0 ? v.first / v.second : 0;
    }
    std::sort(h.osts.begin(), h.osts.end(), [](const HeatRow& a, const HeatRow& b) { return a.name < b.name; });
    // The forwarding nodes: peak bytes/s of their llite records.
    std::map<std::string, HeatRow> fwd;
    s = scan_day(dataset::kClient,
                 {field::kHostName, field::kTimestamp, field::kClientReadBytes, field::kClientWriteBytes,
                  field::kLustreElapsedNs, field::kClientLayer},
                 [&](const Row& r) {
                   if (!r.Has(0) || !r.Has(5) || r.Str(5) != "llite") return true;
                   const int hour = hour_of(r);
                   if (hour < 0) return true;
                   double& p = fwd[std::string(r.Str(0))].peak[static_cast<size_t>(hour)];
                   p = std::max(p, sum2(r, 2, 3) / per_s(r, 4));
                   return true;
                 });
    if (!s.ok()) return s;
    for (auto& [name, row] : fwd) {
      row.name = name;
      h.forwarding.push_back(std::move(row));
    }
    return h;
  }

  // ---- LASSi risk and probe slowdown over a day ----
  // The newest stored probe baseline of the job database (nullptr: none).
  Result<std::shared_ptr<const lassi::ProbeBaseline>> StoredProbeBaseline() {
    auto db = GetDb();
    if (!db.ok()) return db.status();
    auto all = lassi::ReadProbeBaselinesFromDb((*db)->conn());
    if (!all.ok()) return all.status();
    auto sel = lassi::SelectProbeBaseline(*all, "");
    if (!sel.ok()) return sel.status();
    if (!*sel) return std::shared_ptr<const lassi::ProbeBaseline>();
    return std::make_shared<const lassi::ProbeBaseline>(std::move(**sel));
  }
  // The newest stored LASSi baseline of this window length in the job
  // database's lassi_baseline table (`iosonar lassi baseline --mysql`), as
  // `lassi` and `report` take it; nullopt: none.
  Result<std::optional<lassi::Baseline>> StoredLassiBaseline(int64_t window_ns) {
    auto db = GetDb();
    if (!db.ok()) return db.status();
    auto all = lassi::ReadBaselinesFromDb((*db)->conn());
    if (!all.ok()) return all.status();
    return lassi::SelectBaseline(*all, "", window_ns);
  }
  Result<std::string> LassiDay(int64_t day_ns, int64_t window_s) {
    constexpr int64_t kDay = 86400LL * 1000000000LL;
    const int64_t to = day_ns + kDay;
    const bool over = DayIsOver(day_ns);  // a day still filling is computed, not cached
    const std::string from_iso = FormatIsoMillis(day_ns), to_iso = FormatIsoMillis(to);
    // As `iosonar lassi --day D --window W --mysql URL` takes it (one reading):
    // avg_fs from the stored baseline; without one the averages of the day
    // (the JSON's baseline says which, and the page shows it).
    lassi::Options o = lassi::RangeOptions(day_ns, to, window_s * 1000000000LL);
    auto base = StoredLassiBaseline(o.window_ns);
    if (!base.ok()) return base.status();
    o.baseline = std::move(*base);
    auto lassi = Cached(
        cache::LassiKey("all", from_iso, to_iso, window_s, lassi::BaselineTag(o)), "LASSi for " + from_iso.substr(0, 10),
        [&]() -> Result<std::string> {
          // The applications (exact commands) and runs from the job
          // database, as `iosonar lassi --mysql` and `report --mysql` take them.
          lassi::AppSource apps;
          auto db = GetDb();
          if (!db.ok()) return db.status();
          apps.UseJobDb(*db, "");
          auto r = lassi::ComputeLassi([&] { return OpenStoreAt(opt.store); }, o, 1, &apps);
          if (!r.ok()) return r.status();
          return lassi::ResultToJson(*r, false);
        },
        over);
    if (!lassi.ok()) return lassi.status();
    // t_expected as `slowdown` and `report --mysql` take it: the newest
    // baseline in the job database's probe_baseline table (`iosonar slowdown
    // baseline --mysql`); without one the 30 days before the day, which the
    // JSON's baseline_warning (and so the page) says loudly.
    lassi::SlowdownOptions so;
    so.from_ns = day_ns;
    so.to_ns = to;
    auto stored = StoredProbeBaseline();
    if (!stored.ok()) return stored.status();
    so.stored = *stored;
    const std::string tag = lassi::SlowdownBaselineTag(so);
    auto slow = Cached(
        cache::SlowdownKey("all", from_iso, to_iso, tag), "the probe slowdown of " + from_iso.substr(0, 10),
        [&]() -> Result<std::string> {
          auto store = GetStore();
          if (!store.ok()) return store.status();
          auto rows = lassi::SlowdownFromStore(**store, so);
          if (!rows.ok()) return rows.status();
          return lassi::SlowdownToJson(*rows, so, false);
        },
        over);
    if (!slow.ok()) return slow.status();
    auto trim = [](std::string j) {
      while (!j.empty() && (j.back() == '\n' || j.back() == ' ')) j.pop_back();
      return j;
    };
    return "{\"day\":\"" + from_iso.substr(0, 10) + "\",\"window_s\":" + std::to_string(window_s) +
           ",\"lassi\":" + trim(*lassi) + ",\"slowdown\":" + trim(*slow) + "}\n";
  }

  // The heatmap JSON of a day: cached in Redis once the day is over.
  Result<std::string> HeatmapDay(int64_t day_ns) {
    const std::string day = FormatIsoMillis(day_ns).substr(0, 10);
    return Cached(
        cache::HeatmapKey(day), "the heatmap of " + day,
        [&]() -> Result<std::string> {
          auto h = HeatmapFor(day_ns);
          if (!h.ok()) return h.status();
          return HeatmapJson(*h);
        },
        DayIsOver(day_ns));
  }
  static bool DayIsOver(int64_t day_ns) {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return day_ns + 86400LL * 1000000000LL + 600LL * 1000000000LL < now;
  }

  // The jobs that overlapped the job's run on its forwarding nodes / OSTs.
  Result<Neighbours> NeighboursOf(const JobRecord& j) {
    auto db = GetDb();
    if (!db.ok()) return db.status();
    Neighbours n;
    auto f = (*db)->JobsSharingForwardingNode(j.cluster, j.job_id);
    if (!f.ok()) {
      Mine().db.reset();
      return f.status();
    }
    auto o = (*db)->JobsSharingOst(j.cluster, j.job_id);
    if (!o.ok()) {
      Mine().db.reset();
      return o.status();
    }
    n.forwarding = std::move(f).value();
    n.osts = std::move(o).value();
    return n;
  }

  // ---- stored anomaly verdicts (`iosonar anomaly` / `iosonar screen`, migration 35) ----
  // The job's verdict; neighbours the caller may not see lose their id.
  // What the anomaly analysis stored about a job, as every caller gets it
  // before the ids of jobs they may not see are hidden: its verdict, and the
  // anomalous jobs that name it as their first suspect. Read at most once per
  // memo_ms (a popular page does not query MySQL on each request).
  struct StoredFindings {
    AnomalyView anomaly;
    std::vector<SlowedJob> slowed;
  };
  struct FindingsEntry {
    Clock::time_point at;
    std::shared_ptr<const StoredFindings> f;
    std::string text;  // f as text: an unchanged reading keeps f (answers made of it stay valid)
  };
  std::mutex findings_mu;
  std::map<std::string, FindingsEntry> findings;  // by cluster "\n" job

  std::shared_ptr<const StoredFindings> FindingsOf(const JobRecord& j) {
    const std::string ck = j.cluster + "\n" + std::to_string(j.job_id);
    const auto now = Clock::now();
    {
      std::lock_guard<std::mutex> l(findings_mu);
      auto it = findings.find(ck);
      if (it != findings.end() && now - it->second.at < std::chrono::milliseconds(opt.memo_ms)) return it->second.f;
    }
    auto f = std::make_shared<StoredFindings>();
    auto db = GetDb();
    if (!db.ok()) return f;
    MysqlConn& c = (*db)->conn();
    AnomalyView& a = f->anomaly;
    auto st = anomaly::ReadStored(c, j.cluster, j.job_id);
    if (!st.ok()) {
      Log("anomaly of job " + std::to_string(j.job_id) + ": " + st.status().ToString());
      return f;
    }
    if (*st) {
      a.analysed = true;
      a.verdict = (*st)->job.verdict;
      a.history_runs = static_cast<int64_t>((*st)->job.history_runs);
      a.slowdown = (*st)->job.slowdown;
      for (const auto& r : (*st)->neighbours) a.neighbours.push_back({r.neighbour, r.shared, r.evidence, r.md_ops_per_s});
      a.outliers = (*st)->outliers;
      a.server_check = (*st)->server_check;
      a.unjudged = (*st)->servers_unjudged;
    }
    // The anomalous jobs whose first suspect this job is.
    auto sl = anomaly::ReadSlowedBy(c, j.cluster, j.job_id, 100);
    if (sl.ok())
      for (const auto& r : *sl)
        f->slowed.push_back({std::to_string(r.neighbour.job_id), r.slowdown, r.neighbour.shared, r.neighbour.evidence});
    else
      Log("jobs slowed by job " + std::to_string(j.job_id) + ": " + sl.status().ToString());
    std::string text = AnomalyJson(f->anomaly);
    for (const auto& x : f->slowed) text += x.job_id + "\n" + std::to_string(x.slowdown) + "\n" + x.shared + "\n" + x.evidence + "\n";
    std::lock_guard<std::mutex> l(findings_mu);
    if (findings.size() > 4096) findings.clear();
    auto& e = findings[ck];
    if (e.f && e.text == text) {
      e.at = now;
      return e.f;
    }
    e = {now, f, std::move(text)};
    return f;
  }

  // A job id the caller may see on this cluster, else "" (shown as "another job").
  std::string Visible(const Identity& who, const std::string& cluster, const std::string& job) {
    if (who.admin) return job;
    auto m = ValidJobId(job) ? Meta(cluster, job) : Result<MetaPtr>(MetaPtr());
    return m.ok() && *m && MaySee(who, (*m)->job) ? job : std::string();
  }

  // The job's stored findings as the caller may see them: another user's job
  // is named only to administrators (and co-members of a shared project).
  StoredFindings FindingsFor(const Identity& who, const JobRecord& j) { return Hidden(who, j, *FindingsOf(j)); }
  StoredFindings Hidden(const Identity& who, const JobRecord& j, const StoredFindings& stored) {
    StoredFindings f = stored;
    for (auto& n : f.anomaly.neighbours) n.job_id = Visible(who, j.cluster, n.job_id);
    for (auto& s : f.slowed) s.job_id = Visible(who, j.cluster, s.job_id);
    return f;
  }

  // A job's page and its /api/jobs/JOB answer as last made, by kind, key id
  // and (pages) user and role; reused while made of the same parts (JobRoute).
  struct Answer {
    std::shared_ptr<const Rendered> rendered;
    std::shared_ptr<const StoredFindings> findings;
    std::string sig;
    std::shared_ptr<const std::string> body;
  };
  std::mutex answers_mu;
  std::map<std::string, Answer> answers;

  Result<AnomalyBoard> Board() {
    auto db = GetDb();
    if (!db.ok()) return db.status();
    MysqlConn& c = (*db)->conn();
    AnomalyBoard b;
    auto open = results::Select<results::open_server_anomalies::Row>(c, "LIMIT 200");
    if (!open.ok()) return open.status();
    for (const auto& r : *open)
      b.open.push_back({r.kind, r.server, r.start_time, r.end_time, r.alerted_at.value_or(""), r.duration_s, r.max_bw_ratio});
    auto jobs = results::Select<results::job_anomaly::Row>(
        c, "WHERE verdict = 'anomalous' ORDER BY computed_at DESC LIMIT 100", {},
        {"cluster", "job_id", "computed_at", "slowdown"});
    if (!jobs.ok()) return jobs.status();
    for (const auto& r : *jobs) b.jobs.push_back({r.cluster, std::to_string(r.job_id), r.computed_at, r.slowdown});
    return b;
  }

  // The stored verdicts of listed jobs, into their verdict column.
  void AddAnomalyVerdicts(std::vector<ListedJob>* jobs) {
    if (jobs->empty()) return;
    auto db = GetDb();
    if (!db.ok()) return;
    std::string where = "WHERE job_id IN (";
    std::vector<SqlParam> p;
    for (size_t i = 0; i < jobs->size(); ++i) {
      where += i ? ", ?" : "?";
      p.push_back(static_cast<int64_t>(std::stoull((*jobs)[i].job_id)));
    }
    auto rows = results::Select<results::job_anomaly::Row>((*db)->conn(), where + ")", p,
                                                            {"cluster", "job_id", "verdict", "slowdown"});
    if (!rows.ok()) return;
    for (const auto& r : *rows)
      for (auto& j : *jobs) {
        if (j.cluster != r.cluster || j.job_id != std::to_string(r.job_id)) continue;
        const std::string& v = r.verdict;
        std::string text = VerdictText(v);
        if (v == "anomalous") {
          char b[48];
          std::snprintf(b, sizeof b, " (%.1fx slower)", r.slowdown);
          text += b;
        }
        j.verdict = j.verdict ? text + "; " + *j.verdict : text;
      }
  }

  // ---- routing ----
  Response Route(const Request& r, bool defer);
  Response RouteAs(const Identity& who, const Request& r);
  Response JobRoute(const Identity& who, const std::string& job, const std::string& cluster, const std::string& sub,
                    bool html);
};

Response Service::Impl::JobRoute(const Identity& who, const std::string& job, const std::string& cluster,
                                  const std::string& sub, bool html) {
  auto not_found = [&] {
    return html ? Html(404, ErrorPage(404, "No such job.")) : ErrorJson(404, "no such job");
  };
  auto failed = [&](const Status& s) {
    Log("job " + job + ": " + s.ToString());
    return html ? Html(503, ErrorPage(503, "The service cannot answer now.")) : ErrorJson(503, "the service cannot answer now");
  };
  // Not a job id at all (JOB%00x, JOB.json, 0101): said so; it tells nothing about any job.
  if (!ValidJobId(job)) {
    const std::string m = "no such job: a job id in a path is the job's number, digits only";
    return html ? Html(404, ErrorPage(404, "No such job: a job id in a path is the job's number, digits only."))
                : ErrorJson(404, m);
  }
  Target t;
  auto found = Resolve(who, job, cluster, &t);
  if (!found.ok()) return failed(found.status());
  // Not in the database and not the caller's: the same answer, so nobody learns whether it exists.
  if (*found == Found::kNo) return not_found();
  if (*found == Found::kAmbiguous) {
    // Only when the caller may see the job on each of its clusters.
    const std::string m = "job " + job + " is on several clusters; add ?cluster=NAME";
    return html ? Html(404, ErrorPage(404, m + ".")) : ErrorJson(404, m);
  }
  const analysis::JobMeta& m = t.meta();
  const std::string cq = ClusterQuery(m.job.cluster);
  auto no_records = [&](const Status& s) {
    if (s.code() == Code::kNotFound)
      return html ? Html(404, ErrorPage(404, "The job has no I/O records (yet)."))
                  : ErrorJson(404, "the job has no I/O records");
    return failed(s);
  };
  if (sub.empty()) {
    auto s = Summary(t);
    if (!s.ok()) return no_records(s.status());
    auto stored = FindingsOf(m.job);
    StoredFindings f = Hidden(who, m.job, *stored);
    // The answer is kept while what it is made of is unchanged (the summary
    // and the job's row it was rendered with, the stored findings, what the
    // caller may see of them and for a page who is asking): a popular page is
    // one shared buffer, not a diagnosis, a render and a copy of the summary
    // per request.
    std::string sig = cq;
    for (const auto& n : f.anomaly.neighbours) sig += "," + n.job_id;
    sig += "\n";
    for (const auto& x : f.slowed) sig += "," + x.job_id;
    // A page shows who is asking (its header), the API's answer does not.
    const std::string mk = html ? "h\n" + t.key_id + "\n" + who.user + (who.admin ? "\n1" : "\n0") : "a\n" + t.key_id;
    {
      std::lock_guard<std::mutex> l(answers_mu);
      auto it = answers.find(mk);
      if (it != answers.end() && it->second.rendered == *s && it->second.findings == stored && it->second.sig == sig) {
        Response x = html ? Html(200, "") : Json(200, "");
        x.shared_body = it->second.body;
        return x;
      }
    }
    const auto diagnosis = Diagnose(*(*s)->summary, AdviceFor(job, *(*s)->summary), &f.anomaly, f.slowed);
    auto body = std::make_shared<const std::string>(
        html ? WithBasePath(JobPage(who, m, *(*s)->summary, diagnosis, &f.anomaly, cq), opt.base_path)
             : analysis::WithMember(*(*s)->api, "diagnosis", DiagnosisJson(diagnosis, false), true));
    {
      std::lock_guard<std::mutex> l(answers_mu);
      if (answers.size() > 4096) answers.clear();
      answers[mk] = {*s, stored, sig, body};
    }
    Response x = html ? Html(200, "") : Json(200, "");
    x.shared_body = body;
    return x;
  }
  if (sub == "series") {
    auto x = XlayerJson(t);
    return x.ok() ? Json(200, std::move(x).value()) : no_records(x.status());
  }
  if (sub == "phases") {
    auto p = PhasesJson(t);
    return p.ok() ? Json(200, std::move(p).value()) : no_records(p.status());
  }
  if (sub == "anomaly") return Json(200, AnomalyJson(FindingsFor(who, m.job).anomaly));
  if (sub == "timeline") {
    auto x = TimelineJsonOf(t);
    return x.ok() ? Json(200, std::move(x).value()) : no_records(x.status());
  }
  if (sub == "neighbours") {  // administrators only (Route checks)
    auto n = NeighboursOf(m.job);
    if (!n.ok()) return failed(n.status());
    return Json(200, NeighboursJson(job, *n));
  }
  if (sub == "advice") {
    auto s = Summary(t);
    if (!s.ok()) return no_records(s.status());
    std::string b;
    JsonWriter w(&b);
    w.BeginArray();
    for (const auto& a : AdviceFor(job, *(*s)->summary)) {
      w.BeginObject();
      w.Kv("kind", a.kind);
      w.Kv("evidence", a.evidence);
      w.Kv("change", a.change);
      w.EndObject();
    }
    w.EndArray();
    return Json(200, b + "\n");
  }
  return not_found();
}

Response Service::Impl::Route(const Request& r, bool defer) {
  const auto parts = SplitPath(r.path);
  if (r.method != "GET" && r.method != "HEAD") {
    Response x = ErrorJson(405, "read-only: GET only");
    x.headers.push_back({"Allow", "GET, HEAD"});
    return x;
  }
  // Static files need no identity (the login page of a proxy may use the style sheet).
  if (parts.size() == 2 && parts[0] == "static") {
    const Asset* a = FindAsset(parts[1]);
    if (!a) return ErrorJson(404, "no such file");
    // Each file's bytes once, shared by every response that sends it.
    static std::mutex static_mu;
    static std::map<const Asset*, std::shared_ptr<const std::string>> bodies;
    Response x;
    x.content_type = std::string(a->content_type);
    {
      std::lock_guard<std::mutex> l(static_mu);
      auto& b = bodies[a];
      if (!b) b = std::make_shared<const std::string>(a->data);
      x.shared_body = b;
    }
    x.headers.push_back({"Cache-Control", "public, max-age=3600"});
    return x;
  }
  const bool api = !parts.empty() && parts[0] == "api";
  // Paths are exact: /api/jobs/101/ or /jobs//101 is not /api/jobs/101.
  if (r.path.empty() || r.path[0] != '/' || (r.path.size() > 1 && r.path.back() == '/') ||
      r.path.find("//") != std::string::npos) {
    const std::string m = "not found: a path with an empty part (a trailing or doubled '/') names nothing";
    return api ? ErrorJson(404, m) : Html(404, ErrorPage(404, "Not found: a path with a trailing or doubled '/' names nothing."));
  }
  // An identity header given twice (in any case): which one is meant is not
  // known (a proxy that appends its header to the client's lets the client
  // choose), so neither is believed.
  for (const auto& [n, name] : {std::pair<int, const std::string*>{r.cred.user_header_count, &opt.identity.user_header},
                                {r.cred.munge_header_count, &opt.identity.munge_header}})
    if (n > 1) {
      const std::string m = "the request has " + std::to_string(n) + " " + *name +
                            " headers; exactly one is allowed (a proxy must replace the client's, not add to it)";
      return api ? ErrorJson(400, m) : Html(400, ErrorPage(400, "The request has " + std::to_string(n) + " " + *name +
                                                                  " headers; exactly one is allowed."));
    }
  auto who = Identify(opt.identity, r.cred);
  if (!who.ok()) {
    if (who.status().code() == Code::kUnavailable) {
      Log(who.status().ToString());
      return api ? ErrorJson(503, "cannot check the credential now") : Html(503, ErrorPage(503, "Cannot check the credential now."));
    }
    Response x = api ? ErrorJson(401, who.status().message()) : Html(401, ErrorPage(401, who.status().message()));
    return x;
  }
  t_may_defer = defer;
  t_deferred = false;
  Response x = RouteAs(*who, r);
  t_may_defer = false;
  if (!t_deferred) return x;
  t_deferred = false;
  // A computation is needed: the caller runs it off its thread, as this same
  // identity (a MUNGE credential is not decoded twice: munged refuses replays).
  Response d;
  d.deferred = [this, id = *who, rq = Request{r.method, r.path, r.query, Credentials{}}]() { return RouteAs(id, rq); };
  return d;
}

Response Service::Impl::RouteAs(const Identity& id, const Request& r) {
  const auto parts = SplitPath(r.path);
  const bool api = !parts.empty() && parts[0] == "api";
  auto q = [&](const char* k) {
    auto it = r.query.find(k);
    return it == r.query.end() ? std::string() : it->second;
  };
  if (api) {
    if (parts.size() == 2 && parts[1] == "me") {
      std::string b;
      JsonWriter w(&b);
      w.BeginObject();
      w.Kv("user", id.user);
      w.Kv("admin", id.admin);
      w.Kv("via", id.via);
      w.EndObject();
      return Json(200, b + "\n");
    }
    if (parts.size() == 2 && parts[1] == "jobs") {
      auto lq = ParseListQuery(r.query);
      if (!lq.ok()) return ErrorJson(400, lq.status().message());
      auto l = List(id, *lq);
      if (!l.ok()) {
        Log("listing jobs: " + l.status().ToString());
        return ErrorJson(503, "the service cannot answer now");
      }
      return Json(200, JobListJson(*l));
    }
    if ((parts.size() == 3 || parts.size() == 4) && parts[1] == "jobs" && (parts.size() == 3 || parts[3] != "neighbours"))
      return JobRoute(id, parts[2], q("cluster"), parts.size() == 4 ? parts[3] : "", false);
    if (parts.size() >= 2 && parts[1] == "admin") {
      if (!id.admin) return ErrorJson(404, "not found");
      if (parts.size() == 3 && parts[2] == "heatmap") {
        auto day = DayStart(q("day"));
        if (!day) return ErrorJson(400, "day=YYYY-MM-DD is required");
        auto h = HeatmapDay(*day);
        if (!h.ok()) {
          Log("heatmap: " + h.status().ToString());
          return ErrorJson(503, "the service cannot answer now");
        }
        return Json(200, std::move(h).value());
      }
      if (parts.size() == 3 && parts[2] == "anomalies") {
        auto b = Board();
        if (!b.ok()) {
          Log("anomalies: " + b.status().ToString());
          return ErrorJson(503, "the service cannot answer now");
        }
        return Json(200, AnomalyBoardJson(*b));
      }
      if (parts.size() == 3 && parts[2] == "lassi") {
        auto day = DayStart(q("day"));
        if (!day) return ErrorJson(400, "day=YYYY-MM-DD is required");
        int64_t window_s = 3600;
        if (std::string w = q("window_s"); !w.empty()) {
          char* end = nullptr;
          window_s = std::strtoll(w.c_str(), &end, 10);
          if (*end || window_s < 60 || window_s > 86400) return ErrorJson(400, "window_s must be 60..86400");
        }
        auto l = LassiDay(*day, window_s);
        if (!l.ok()) {
          Log("lassi: " + l.status().ToString());
          return ErrorJson(503, "the service cannot answer now");
        }
        return Json(200, std::move(l).value());
      }
      if (parts.size() == 5 && parts[2] == "jobs" && parts[4] == "neighbours")
        return JobRoute(id, parts[3], q("cluster"), "neighbours", false);
      if (parts.size() == 5 && parts[2] == "jobs" && parts[4] == "osts") {
        Response x = JobRoute(id, parts[3], q("cluster"), "series", false);
        return x;  // the cross-layer view: its "osts" are the job's bytes per OST
      }
    }
    return ErrorJson(404, "not found");
  }
  if (parts.empty()) {
    Response x = Html(302, ErrorPage(302, "See /jobs."));
    x.headers.push_back({"Location", "/jobs"});
    return x;
  }
  if (parts[0] == "jobs" && parts.size() == 1) {
    auto lq = ParseListQuery(r.query);
    if (!lq.ok()) return Html(400, ErrorPage(400, "Bad filter: " + lq.status().message() + "."));
    bool more = false;
    auto l = List(id, *lq, &more);
    if (!l.ok()) {
      Log("listing jobs: " + l.status().ToString());
      return Html(503, ErrorPage(503, "The service cannot answer now."));
    }
    SortJobs(&*l, lq->sort, lq->desc);
    return Html(200, JobsPage(id, *l, *lq, more));
  }
  if (parts[0] == "jobs" && parts.size() == 2) return JobRoute(id, parts[1], q("cluster"), "", true);
  if (parts[0] == "admin" && parts.size() == 1) {
    if (!id.admin) return Html(404, ErrorPage(404, "Not found."));
    std::string day = q("day");
    if (day.empty()) day = FormatIsoMillis(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count())
                               .substr(0, 10);
    auto start = DayStart(day);
    if (!start) return Html(400, ErrorPage(400, "day must be YYYY-MM-DD."));
    auto hj = HeatmapDay(*start);
    auto h = hj.ok() ? HeatmapFromJson(*hj) : Result<Heatmap>(hj.status());
    if (!h.ok()) {
      Log("heatmap: " + h.status().ToString());
      return Html(503, ErrorPage(503, "The service cannot answer now."));
    }
    std::string job = q("job");
    if (!ValidJobId(job)) job.clear();
    std::optional<Neighbours> n;
    std::string cq;
    if (!job.empty()) {
      Target t;
      if (auto f = Resolve(id, job, q("cluster"), &t); f.ok() && *f == Found::kYes) {
        cq = ClusterQuery(t.meta().job.cluster);
        if (auto got = NeighboursOf(t.meta().job); got.ok()) n = std::move(got).value();
      }
    }
    auto board = Board();
    if (!board.ok()) Log("anomalies: " + board.status().ToString());
    return Html(200, AdminPage(id, *h, day, job, n ? &*n : nullptr, board.ok() ? &*board : nullptr, opt.cluster, cq));
  }
  return Html(404, ErrorPage(404, "Not found."));
}

Service::Service(ServeOptions o) : impl_(std::make_unique<Impl>()) {
  static std::atomic<uint64_t> next{1};
  impl_->opt = std::move(o);
  impl_->serial = next++;
  impl_->owner = this;
}

Service::~Service() = default;

const IdentityOptions& Service::identity_options() const { return impl_->opt.identity; }

namespace {
// A page's links, scripts and redirects under --base-path.
Response Rebased(Response x, const std::string& base) {
  if (base.empty()) return x;
  if (x.deferred) {
    x.deferred = [d = std::move(x.deferred), base] { return Rebased(d(), base); };
    return x;
  }
  if (x.content_type.rfind("text/html", 0) == 0 && !x.shared_body) x.body = WithBasePath(std::move(x.body), base);
  for (auto& [k, v] : x.headers)
    if (k == "Location" && !v.empty() && v[0] == '/') v = base + v;
  return x;
}
}  // namespace

Response Service::Handle(const Request& r, bool defer) {
  // HEAD keeps the body: the HTTP layer sends its length and not the bytes.
  const std::string& base = impl_->opt.base_path;
  // A proxy that passes the prefix on: /iosonar/jobs is /jobs.
  if (!base.empty() && r.path.rfind(base, 0) == 0 && (r.path.size() == base.size() || r.path[base.size()] == '/')) {
    Request stripped = r;
    stripped.path = r.path.size() == base.size() ? "/" : r.path.substr(base.size());
    return Rebased(impl_->Route(stripped, defer), base);
  }
  return Rebased(impl_->Route(r, defer), base);
}

}  // namespace iosonar::serve
