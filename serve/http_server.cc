#include "serve/http_server.h"

#include <dlfcn.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

namespace iosonar::serve {

// The workers of uncached computations: a fixed number of threads and a
// bounded number of tasks waiting for one (Reserve says whether there is room).
class WorkerPool {
 public:
  WorkerPool(int threads, int queue) : bound_(queue) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~WorkerPool() { Stop(); }
  // Room for one more task (then Push it); false when the queue is full or stopping.
  bool Reserve(int* waiting) {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ || waiting_ >= bound_) return false;
    *waiting = ++waiting_;
    return true;
  }
  void Push(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> l(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  // Runs what was reserved, then joins the threads.
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return !tasks_.empty() || (stopping_ && waiting_ == 0); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
        --waiting_;
      }
      task();
      cv_.notify_all();  // a stopping pool may be done now
    }
  }
  const int bound_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  int waiting_ = 0;  // reserved and not yet started
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// The mark of a request whose first call was seen (OnRequest).
namespace {
char seen;
}  // namespace

// What the request handler is given.
struct Context {
  Service* service;
  WorkerPool* pool;
  int retry_after_s;
  bool quiet;
};

namespace {

// libmicrohttpd is loaded when a server starts, not linked: it and GnuTLS
// (which it needs) would add ~3 MB to the resident size of every iosonar
// command, the exporters included. decltype names the real signatures.
struct Mhd {
  decltype(&MHD_start_daemon) start_daemon = nullptr;
  decltype(&MHD_stop_daemon) stop_daemon = nullptr;
  decltype(&MHD_get_daemon_info) get_daemon_info = nullptr;
  decltype(&MHD_get_connection_values) get_connection_values = nullptr;
  decltype(&MHD_get_connection_info) get_connection_info = nullptr;
  decltype(&MHD_lookup_connection_value) lookup_connection_value = nullptr;
  decltype(&MHD_create_response_from_buffer_with_free_callback_cls) create_response_from_buffer_cls = nullptr;
  decltype(&MHD_suspend_connection) suspend_connection = nullptr;
  decltype(&MHD_resume_connection) resume_connection = nullptr;
  decltype(&MHD_add_response_header) add_response_header = nullptr;
  decltype(&MHD_queue_response) queue_response = nullptr;
  decltype(&MHD_destroy_response) destroy_response = nullptr;
  decltype(&MHD_is_feature_supported) is_feature_supported = nullptr;
};

Mhd mhd;

template <typename F>
bool Sym(void* h, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(h, name));
  return *f != nullptr;
}

Status LoadMhd() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    const char* names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
    std::string tried;
    for (const char* n : names) {
      void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        tried += std::string(tried.empty() ? "" : "; ") + (e ? e : n);
        continue;
      }
      Mhd m;
      if (Sym(h, "MHD_start_daemon", &m.start_daemon) && Sym(h, "MHD_stop_daemon", &m.stop_daemon) &&
          Sym(h, "MHD_get_daemon_info", &m.get_daemon_info) &&
          Sym(h, "MHD_get_connection_values", &m.get_connection_values) &&
          Sym(h, "MHD_get_connection_info", &m.get_connection_info) &&
          Sym(h, "MHD_lookup_connection_value", &m.lookup_connection_value) &&
          Sym(h, "MHD_create_response_from_buffer_with_free_callback_cls", &m.create_response_from_buffer_cls) &&
          Sym(h, "MHD_suspend_connection", &m.suspend_connection) &&
          Sym(h, "MHD_resume_connection", &m.resume_connection) &&
          Sym(h, "MHD_add_response_header", &m.add_response_header) && Sym(h, "MHD_queue_response", &m.queue_response) &&
          Sym(h, "MHD_destroy_response", &m.destroy_response) &&
          Sym(h, "MHD_is_feature_supported", &m.is_feature_supported)) {
        mhd = m;
        return;
      }
      tried += std::string(tried.empty() ? "" : "; ") + n + ": missing MHD_* symbols";
      dlclose(h);
    }
    error = "iosonar serve needs libmicrohttpd at run time (Debian package libmicrohttpd12), which could not be loaded (" +
            tried + ")";
  });
  return mhd.start_daemon ? Status::Ok() : Status::Unavailable(error);
}

MHD_Result AddArg(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* q = static_cast<std::map<std::string, std::string>*>(cls);
  if (key) q->emplace(key, value ? value : "");
  return MHD_YES;
}

// Counts the request's headers named like the identity headers (without case).
struct HeaderCount {
  const std::string* user_header;
  const std::string* munge_header;
  int user = 0, munge = 0;
};

MHD_Result CountHeader(void* cls, MHD_ValueKind, const char* key, const char*) {
  auto* n = static_cast<HeaderCount*>(cls);
  if (key && strcasecmp(key, n->user_header->c_str()) == 0) ++n->user;
  if (key && strcasecmp(key, n->munge_header->c_str()) == 0) ++n->munge;
  return MHD_YES;
}

// The URL's and arguments' %XX escapes decoded in place, as libmicrohttpd's
// own MHD_http_unescape does, except %00: it is kept as the three characters,
// so /api/jobs/101%00x names "101%00x" (no job), not "101" (the C string the
// request handler is given would end at a decoded NUL).
size_t Unescape(void*, MHD_Connection*, char* s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  char* w = s;
  for (const char* r = s; *r;) {
    int hi = 0, lo = 0;
    if (r[0] == '%' && (hi = hex(r[1])) >= 0 && (lo = hex(r[2])) >= 0 && (hi | lo) != 0) {
      *w++ = static_cast<char>(hi * 16 + lo);
      r += 3;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
  return static_cast<size_t>(w - s);
}

// A request answered by a worker: the answer, once done (the connection is
// suspended until then). Lives in the connection's *con_cls until the request completes.
struct Pending {
  Response resp;
  std::atomic<bool> done{false};
};

// A libmicrohttpd response made once per shared body (a cached page, summary
// or static file) and queued for every request that sends it, as its manual
// allows: no response object, six header copies and their frees per request.
// libmicrohttpd counts a response's references (each queued connection holds
// one); the cache holds one and, through the response, the body. An entry
// whose body nobody else holds any more (the service replaced the answer) is
// dropped when another is added; at most kMax are kept.
class ResponseCache {
 public:
  static constexpr size_t kMax = 256;
  // Queues on c the response for x's shared body and headers, made by make
  // the first time; nullopt if make failed (the caller sends x itself).
  std::optional<MHD_Result> Queue(MHD_Connection* c, const Response& x, const std::function<MHD_Response*()>& make) {
    // Under the lock: no other thread can drop the cache's reference between
    // finding the response and queueing it (which takes the connection's).
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(x.shared_body.get());
    if (it == map_.end() || it->second.body != x.shared_body || it->second.content_type != x.content_type ||
        it->second.headers != x.headers) {
      MHD_Response* r = make();
      if (!r) return std::nullopt;
      if (it != map_.end()) {
        mhd.destroy_response(it->second.resp);
        map_.erase(it);
      }
      // The entry, the response's own hold: 2 = nobody else sends this body any more.
      for (auto e = map_.begin(); e != map_.end();) {
        if (e->second.body.use_count() <= 2 || map_.size() >= kMax) {
          mhd.destroy_response(e->second.resp);
          e = map_.erase(e);
        } else {
          ++e;
        }
      }
      it = map_.emplace(x.shared_body.get(), Entry{x.shared_body, x.content_type, x.headers, r}).first;
    }
    return mhd.queue_response(c, static_cast<unsigned>(x.status), it->second.resp);
  }

 private:
  struct Entry {
    std::shared_ptr<const std::string> body;
    std::string content_type;
    std::vector<std::pair<std::string, std::string>> headers;
    MHD_Response* resp;
  };
  std::mutex mu_;
  std::map<const std::string*, Entry> map_;
};

ResponseCache& Responses() {
  static ResponseCache* c = new ResponseCache;  // never destroyed: queued responses may outlive a server
  return *c;
}

void AddHeaders(MHD_Response* resp, const Response& x) {
  mhd.add_response_header(resp, "Content-Type", x.content_type.c_str());
  for (const auto& [k, v] : SecurityHeaders()) {
    bool overridden = false;
    for (const auto& h : x.headers) overridden = overridden || strcasecmp(h.first.c_str(), k.c_str()) == 0;
    if (!overridden) mhd.add_response_header(resp, k.c_str(), v.c_str());
  }
  for (const auto& [k, v] : x.headers) mhd.add_response_header(resp, k.c_str(), v.c_str());
}

// Queues x on c: the body is handed to libmicrohttpd without a copy (a shared
// body by reference: the last response using it releases it).
MHD_Result Send(MHD_Connection* c, Response& x) {
  MHD_Response* resp = nullptr;
  if (x.shared_body) {
    // A cached answer: its response object is reused (ResponseCache).
    auto queued = Responses().Queue(c, x, [&]() -> MHD_Response* {
      auto* hold = new std::shared_ptr<const std::string>(x.shared_body);
      MHD_Response* made = mhd.create_response_from_buffer_cls(
          (*hold)->size(), const_cast<char*>((*hold)->data()),
          [](void* p) { delete static_cast<std::shared_ptr<const std::string>*>(p); }, hold);
      if (!made) {
        delete hold;
        return nullptr;
      }
      AddHeaders(made, x);
      return made;
    });
    if (queued) return *queued;
  }
  if (x.shared_body) {
    auto* hold = new std::shared_ptr<const std::string>(std::move(x.shared_body));
    resp = mhd.create_response_from_buffer_cls(
        (*hold)->size(), const_cast<char*>((*hold)->data()),
        [](void* p) { delete static_cast<std::shared_ptr<const std::string>*>(p); }, hold);
    if (!resp) delete hold;
  } else {
    auto* hold = new std::string(std::move(x.body));
    resp = mhd.create_response_from_buffer_cls(
        hold->size(), hold->data(), [](void* p) { delete static_cast<std::string*>(p); }, hold);
    if (!resp) delete hold;
  }
  if (!resp) return MHD_NO;
  AddHeaders(resp, x);
  MHD_Result ret = mhd.queue_response(c, static_cast<unsigned>(x.status), resp);
  mhd.destroy_response(resp);
  return ret;
}

MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                     size_t* upload_size, void** con_cls) {
  auto* ctx = static_cast<Context*>(cls);
  // The first call only marks the request as seen: libmicrohttpd 0.9.75
  // closes the connection after a response queued in the first call (no
  // keep-alive: every request a new TCP connection, measured), and keeps it
  // open for one queued in the next.
  if (*con_cls == nullptr) {
    *con_cls = &seen;
    return MHD_YES;
  }
  if (*con_cls != &seen) {  // resumed: the worker's answer
    auto* p = static_cast<Pending*>(*con_cls);
    if (!p->done.load(std::memory_order_acquire)) return MHD_YES;
    return Send(c, p->resp);
  }
  // A body is never read (GET/HEAD have none; the rest get 405 once it is skipped).
  if (*upload_size != 0) {
    *upload_size = 0;
    return MHD_YES;
  }
  Service* service = ctx->service;
  Request r;
  r.method = method ? method : "";
  r.path = url ? url : "/";
  mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, AddArg, &r.query);
  const MHD_ConnectionInfo* ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  r.cred.peer = ci ? ci->client_addr : nullptr;
  const auto& idopt = service->identity_options();
  r.cred.user_header = mhd.lookup_connection_value(c, MHD_HEADER_KIND, idopt.user_header.c_str());
  r.cred.munge_credential = mhd.lookup_connection_value(c, MHD_HEADER_KIND, idopt.munge_header.c_str());
  HeaderCount count{&idopt.user_header, &idopt.munge_header};
  mhd.get_connection_values(c, MHD_HEADER_KIND, CountHeader, &count);
  r.cred.user_header_count = count.user;
  r.cred.munge_header_count = count.munge;
  Response x = service->Handle(r, true);
  if (x.deferred) {
    int waiting = 0;
    if (!ctx->pool->Reserve(&waiting)) {
      if (!ctx->quiet) std::cerr << "iosonar serve: busy (the computation queue is full): " + r.method + " " + r.path + "\n";
      Response busy;
      busy.status = 503;
      busy.body = "{\"error\": \"too many computations are waiting; retry later\"}\n";
      busy.headers.push_back({"Retry-After", std::to_string(ctx->retry_after_s)});
      return Send(c, busy);
    }
    if (!ctx->quiet)
      std::cerr << "iosonar serve: computing off the server thread: " + r.method + " " + r.path + " (" +
                       std::to_string(waiting) + " waiting)\n";
    auto* p = new Pending;
    *con_cls = p;
    mhd.suspend_connection(c);
    ctx->pool->Push([p, c, work = std::move(x.deferred)] {
      p->resp = work();
      p->done.store(true, std::memory_order_release);
      mhd.resume_connection(c);
    });
    return MHD_YES;
  }
  return Send(c, x);
}

void OnCompleted(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
  if (*con_cls != &seen) delete static_cast<Pending*>(*con_cls);
  *con_cls = nullptr;
}

Result<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Io("cannot read the TLS " + std::string(what) + " " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

Status ParseListen(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    return Status::Invalid("--listen " + text + ": expected HOST:PORT");
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  char* end = nullptr;
  long p = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end || p < 0 || p > 65535) return Status::Invalid("--listen " + text + ": the port is not a number in 0..65535");
  if (h.empty()) return Status::Invalid("--listen " + text + ": no host (use 0.0.0.0 or [::] for all addresses)");
  *host = h;
  *port = static_cast<int>(p);
  return Status::Ok();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpOptions& o, Service* service) {
  std::string host;
  int port = 0;
  if (Status s = ParseListen(o.listen, &host, &port); !s.ok()) return s;
  if (Status s = LoadMhd(); !s.ok()) return s;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  if (int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &ai); e != 0 || !ai)
    return Status::Invalid("--listen " + o.listen + ": " + gai_strerror(e));
  sockaddr_storage addr{};
  std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
  const bool v6 = ai->ai_family == AF_INET6;
  freeaddrinfo(ai);

  // TURBO: no shutdown() before close, optimistic reads (epoll); suspend/resume: deferred computations.
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  std::string cert, key;
  const bool tls = !o.tls_cert.empty() || !o.tls_key.empty();
  if (tls) {
    if (o.tls_cert.empty() || o.tls_key.empty()) return Status::Invalid("TLS needs both --tls-cert and --tls-key");
    if (mhd.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      return Status::Unavailable("this libmicrohttpd was built without TLS");
    auto c = ReadPem(o.tls_cert, "certificate");
    if (!c.ok()) return c.status();
    auto k = ReadPem(o.tls_key, "key");
    if (!k.ok()) return k.status();
    cert = *c;
    key = *k;
    flags |= MHD_USE_TLS;
  }
  std::unique_ptr<HttpServer> srv(new HttpServer());
  srv->pool_ = std::make_unique<WorkerPool>(o.compute_threads < 1 ? 1 : o.compute_threads,
                                            o.compute_queue < 1 ? 1 : o.compute_queue);
  srv->ctx_ = std::make_unique<Context>(Context{service, srv->pool_.get(), o.retry_after_s, o.quiet});
  // One polling thread: no pool (libmicrohttpd warns about a pool of 0 or 1).
  const auto threads = static_cast<intptr_t>(o.threads);
  std::vector<MHD_OptionItem> opts;
  opts.push_back({MHD_OPTION_SOCK_ADDR, 0, &addr});
  if (threads > 1) opts.push_back({MHD_OPTION_THREAD_POOL_SIZE, threads, nullptr});
  opts.push_back({MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(o.connection_timeout_s), nullptr});
  opts.push_back({MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&OnCompleted), nullptr});
  opts.push_back({MHD_OPTION_UNESCAPE_CALLBACK, reinterpret_cast<intptr_t>(&Unescape), nullptr});
  if (tls) {
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(cert.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(key.c_str())});
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  srv->daemon_ = mhd.start_daemon(flags, static_cast<uint16_t>(port), nullptr, nullptr, &OnRequest, srv->ctx_.get(),
                                  MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
  if (!srv->daemon_) return Status::Io("cannot listen on " + o.listen + (tls ? " (or the TLS certificate/key is bad)" : ""));
  const MHD_DaemonInfo* di = mhd.get_daemon_info(srv->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  srv->port_ = di ? di->port : port;
  return srv;
}

HttpServer::~HttpServer() {
  // Computations still queued or running finish and resume their connections
  // first: stopping the daemon with a suspended connection is not allowed.
  if (pool_) pool_->Stop();
  if (daemon_) mhd.stop_daemon(daemon_);
}

}  // namespace iosonar::serve
