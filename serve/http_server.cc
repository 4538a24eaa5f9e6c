#include "serve/http_server.h"

#include <dlfcn.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace iosonar::serve {

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
  decltype(&MHD_create_response_from_buffer) create_response_from_buffer = nullptr;
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
          Sym(h, "MHD_create_response_from_buffer", &m.create_response_from_buffer) &&
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

MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                     size_t* upload_size, void** con_cls) {
  auto* service = static_cast<Service*>(cls);
  // A body is never read: answer at once (GET/HEAD have none; the rest get 405).
  if (*upload_size != 0) {
    *upload_size = 0;
    return MHD_YES;
  }
  (void)con_cls;
  Request r;
  r.method = method ? method : "";
  r.path = url ? url : "/";
  mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, AddArg, &r.query);
  const MHD_ConnectionInfo* ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  r.cred.peer = ci ? ci->client_addr : nullptr;
  const auto& idopt = service->identity_options();
  r.cred.user_header = mhd.lookup_connection_value(c, MHD_HEADER_KIND, idopt.user_header.c_str());
  r.cred.munge_credential = mhd.lookup_connection_value(c, MHD_HEADER_KIND, idopt.munge_header.c_str());
  Response x = service->Handle(r);
  MHD_Response* resp =
      mhd.create_response_from_buffer(x.body.size(), x.body.data(), MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  mhd.add_response_header(resp, "Content-Type", x.content_type.c_str());
  for (const auto& [k, v] : SecurityHeaders()) {
    bool overridden = false;
    for (const auto& h : x.headers) overridden = overridden || strcasecmp(h.first.c_str(), k.c_str()) == 0;
    if (!overridden) mhd.add_response_header(resp, k.c_str(), v.c_str());
  }
  for (const auto& [k, v] : x.headers) mhd.add_response_header(resp, k.c_str(), v.c_str());
  MHD_Result ret = mhd.queue_response(c, static_cast<unsigned>(x.status), resp);
  mhd.destroy_response(resp);
  return ret;
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

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
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
  const unsigned threads = static_cast<unsigned>(o.threads < 1 ? 1 : o.threads);
  if (tls)
    srv->daemon_ = mhd.start_daemon(flags, static_cast<uint16_t>(port), nullptr, nullptr, &OnRequest, service,
                                    MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr),
                                    MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
                                    static_cast<unsigned>(o.connection_timeout_s), MHD_OPTION_HTTPS_MEM_CERT,
                                    cert.c_str(), MHD_OPTION_HTTPS_MEM_KEY, key.c_str(), MHD_OPTION_END);
  else
    srv->daemon_ = mhd.start_daemon(flags, static_cast<uint16_t>(port), nullptr, nullptr, &OnRequest, service,
                                    MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr),
                                    MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
                                    static_cast<unsigned>(o.connection_timeout_s), MHD_OPTION_END);
  if (!srv->daemon_) return Status::Io("cannot listen on " + o.listen + (tls ? " (or the TLS certificate/key is bad)" : ""));
  const MHD_DaemonInfo* di = mhd.get_daemon_info(srv->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  srv->port_ = di ? di->port : port;
  return srv;
}

HttpServer::~HttpServer() {
  if (daemon_) mhd.stop_daemon(daemon_);
}

}  // namespace iosonar::serve
