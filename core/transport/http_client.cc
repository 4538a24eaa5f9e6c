#include "core/transport/http_client.h"

#include "core/base/url.h"
#include "core/base/timeutil.h"
#include "core/transport/smtp.h"

#include <curl/curl.h>  // types and constants only: the functions come from CurlApi()
#include <dlfcn.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <mutex>
#include <vector>

namespace iosonar {
namespace {

// libcurl's functions, looked up at run time. A binary that links libcurl
// (the full `iosonar`) has them in the process already (RTLD_DEFAULT finds
// them); a binary that does not (`iosonar-exporter`, the lean node exporter)
// dlopen()s libcurl.so.4 the first time an Elasticsearch output is opened,
// so the lean binary maps neither libcurl nor OpenSSL unless it needs them.
struct CurlFns {
  CURLcode (*global_init)(long);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};
// (SendMail, at the end of this file, uses the same loader for SMTP.)

template <typename F>
bool Sym(void* h, const char* name, F* out) {
  void* p = dlsym(h, name);
  if (!p) return false;
  *out = reinterpret_cast<F>(p);
  return true;
}

bool Fill(void* h, CurlFns* f) {
  return Sym(h, "curl_global_init", &f->global_init) && Sym(h, "curl_easy_init", &f->easy_init) &&
         Sym(h, "curl_easy_setopt", &f->easy_setopt) && Sym(h, "curl_easy_perform", &f->easy_perform) &&
         Sym(h, "curl_easy_getinfo", &f->easy_getinfo) && Sym(h, "curl_easy_cleanup", &f->easy_cleanup) &&
         Sym(h, "curl_easy_strerror", &f->easy_strerror) && Sym(h, "curl_slist_append", &f->slist_append) &&
         Sym(h, "curl_slist_free_all", &f->slist_free_all);
}

// The library names tried, in order; IOSONAR_LIBCURL overrides (tests use it
// to check the error when libcurl cannot be loaded).
Result<const CurlFns*> LoadCurl() {
  static CurlFns fns{};
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    if (Fill(RTLD_DEFAULT, &fns)) return;  // linked in (the full iosonar)
    fns = CurlFns{};
    std::string tried;
    const char* env = getenv("IOSONAR_LIBCURL");
    const char* names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"};
    std::vector<const char*> order;
    if (env && *env) order.push_back(env);
    else order.assign(std::begin(names), std::end(names));
    for (const char* n : order) {
      void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        tried += std::string(tried.empty() ? "" : "; ") + (e ? e : n);
        continue;
      }
      if (Fill(h, &fns)) {
        error.clear();
        return;
      }
      tried += std::string(tried.empty() ? "" : "; ") + n + ": missing curl_* symbols";
      fns = CurlFns{};
      dlclose(h);
    }
    error = "Elasticsearch output needs libcurl at run time (Debian package libcurl4), which could not be loaded (" +
            tried + "); install it, or send to tcp:// (Logstash or `iosonar collect`) instead";
  });
  if (!fns.easy_init) return Status::Unavailable(error);
  return &fns;
}

size_t OnBody(char* p, size_t size, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, size * n);
  return size * n;
}

class CurlClient final : public HttpClient {
 public:
  CurlClient(const CurlFns& c, std::string base, const EsOptions& opts) : c_(c), base_(std::move(base)), opts_(opts) {}
  ~CurlClient() override {
    // IOSONAR_HTTP_STATS=1: what this client moved (the benchmarks count requests and bytes with it).
    if (const char* v = std::getenv("IOSONAR_HTTP_STATS"); v && (*v == '1' || *v == '2') && requests_ > 0)
      std::fprintf(stderr, "iosonar: http %s: %llu requests, %llu body bytes sent, %llu body bytes received\n",
                   RedactUrl(base_).c_str(), static_cast<unsigned long long>(requests_),
                   static_cast<unsigned long long>(sent_), static_cast<unsigned long long>(received_));
    if (headers_) c_.slist_free_all(headers_);
    if (h_) c_.easy_cleanup(h_);
  }

  Status Init() {
    static std::once_flag once;
    std::call_once(once, [this] { c_.global_init(CURL_GLOBAL_DEFAULT); });
    h_ = c_.easy_init();
    if (!h_) return Status::Internal("curl_easy_init failed");
    c_.easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    c_.easy_setopt(h_, CURLOPT_TCP_KEEPALIVE, 1L);
    c_.easy_setopt(h_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts_.connect_timeout_ms));
    c_.easy_setopt(h_, CURLOPT_TIMEOUT_MS, static_cast<long>(opts_.request_timeout_ms));
    c_.easy_setopt(h_, CURLOPT_WRITEFUNCTION, OnBody);
    c_.easy_setopt(h_, CURLOPT_WRITEDATA, &body_);
    c_.easy_setopt(h_, CURLOPT_ACCEPT_ENCODING, "");  // gzip responses if the server offers
    if (opts_.insecure) {
      c_.easy_setopt(h_, CURLOPT_SSL_VERIFYPEER, 0L);
      c_.easy_setopt(h_, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
      c_.easy_setopt(h_, CURLOPT_SSL_VERIFYPEER, 1L);
      c_.easy_setopt(h_, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (!opts_.ca_file.empty()) c_.easy_setopt(h_, CURLOPT_CAINFO, opts_.ca_file.c_str());
    if (!opts_.api_key.empty()) {
      auth_header_ = "Authorization: ApiKey " + opts_.api_key;
    } else if (!opts_.user.empty()) {
      c_.easy_setopt(h_, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      c_.easy_setopt(h_, CURLOPT_USERNAME, opts_.user.c_str());
      c_.easy_setopt(h_, CURLOPT_PASSWORD, opts_.password.c_str());
    }
    return Status::Ok();
  }

  Result<HttpResponse> Request(std::string_view method, std::string_view path, std::string_view body,
                               std::string_view content_type, std::string_view content_encoding) override {
    std::string url = base_;
    url.append(path);
    body_.clear();
    if (headers_) {
      c_.slist_free_all(headers_);
      headers_ = nullptr;
    }
    std::string ct = "Content-Type: " + std::string(content_type);
    headers_ = c_.slist_append(headers_, ct.c_str());
    headers_ = c_.slist_append(headers_, "Accept: application/json");
    headers_ = c_.slist_append(headers_, "Expect:");  // no 100-continue round trip
    if (!content_encoding.empty()) {
      const std::string ce = "Content-Encoding: " + std::string(content_encoding);
      headers_ = c_.slist_append(headers_, ce.c_str());
    }
    if (!auth_header_.empty()) headers_ = c_.slist_append(headers_, auth_header_.c_str());
    std::string m(method);
    c_.easy_setopt(h_, CURLOPT_URL, url.c_str());
    c_.easy_setopt(h_, CURLOPT_HTTPHEADER, headers_);
    c_.easy_setopt(h_, CURLOPT_NOBODY, 0L);
    if (m == "GET" && body.empty()) {
      c_.easy_setopt(h_, CURLOPT_HTTPGET, 1L);
      c_.easy_setopt(h_, CURLOPT_CUSTOMREQUEST, nullptr);
    } else if (m == "HEAD") {
      c_.easy_setopt(h_, CURLOPT_NOBODY, 1L);
      c_.easy_setopt(h_, CURLOPT_CUSTOMREQUEST, nullptr);
    } else {
      c_.easy_setopt(h_, CURLOPT_POST, 1L);
      c_.easy_setopt(h_, CURLOPT_POSTFIELDS, body.data());
      c_.easy_setopt(h_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      c_.easy_setopt(h_, CURLOPT_CUSTOMREQUEST, m == "POST" ? nullptr : m.c_str());
    }
    ++requests_;
    sent_ += body.size();
    const auto t0 = std::chrono::steady_clock::now();
    CURLcode rc = c_.easy_perform(h_);
    received_ += body_.size();
    if (trace_) {
      // IOSONAR_HTTP_STATS=2: each request as well, with the engine's "took" (where to look when an analysis is slow).
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const size_t tk = body_.find("\"took\":");
      const long took = tk != std::string::npos && tk < 4096 ? std::strtol(body_.c_str() + tk + 7, nullptr, 10) : -1;
      std::fprintf(stderr, "iosonar: http %s %s: %.1f ms, took %ld ms, %zu body bytes sent, %zu received\n", m.c_str(),
                   std::string(path.substr(0, 120)).c_str(), ms, took, body.size(), body_.size());
    }
    if (rc != CURLE_OK)
      return Status::Unavailable(m + " " + RedactUrl(url) + ": " + c_.easy_strerror(rc));
    HttpResponse r;
    c_.easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &r.status);
    char* ctype = nullptr;
    c_.easy_getinfo(h_, CURLINFO_CONTENT_TYPE, &ctype);
    if (ctype) r.content_type = ctype;
    r.body = std::move(body_);
    body_.clear();
    return r;
  }

  const std::string& base_url() const override { return base_; }

 private:
  const CurlFns& c_;
  std::string base_;
  EsOptions opts_;
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  const bool trace_ = [] {
    const char* v = std::getenv("IOSONAR_HTTP_STATS");
    return v && *v == '2';
  }();
  std::string auth_header_;
  std::string body_;
  uint64_t requests_ = 0, sent_ = 0, received_ = 0;
};

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::Open(const std::string& base_url, const EsOptions& opts) {
  std::string base = base_url;
  if (base.rfind("es+", 0) == 0) base.erase(0, 3);
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0)
    return Status::Invalid("Elasticsearch URL '" + base_url + "': expected http(s)://HOST:PORT or es+http(s)://HOST:PORT");
  while (!base.empty() && base.back() == '/') base.pop_back();
  auto fns = LoadCurl();
  if (!fns.ok()) return fns.status();
  auto c = std::make_unique<CurlClient>(**fns, base, opts);
  if (auto st = c->Init(); !st.ok()) return st;
  return std::unique_ptr<HttpClient>(std::move(c));
}

// ---- SMTP (core/transport/smtp.h) ----

std::string FormatMail(const MailMessage& msg, int64_t date_ns, const std::string& message_id) {
  auto clean = [](std::string v) {  // no header injection through CR/LF
    for (char& c : v)
      if (c == '\r' || c == '\n') c = ' ';
    return v;
  };
  std::string to;
  for (const auto& t : msg.to) to += (to.empty() ? "" : ", ") + ("<" + clean(t) + ">");
  const time_t secs = static_cast<time_t>(date_ns / 1000000000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char date[64];
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  std::string out = std::string("Date: ") + date + "\r\nFrom: <" + clean(msg.from) + ">\r\nTo: " + to +
                    "\r\nSubject: " + clean(msg.subject) + "\r\nMessage-ID: <" + clean(message_id) +
                    ">\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
                    "Content-Transfer-Encoding: 8bit\r\n\r\n";
  for (char c : msg.body) {
    if (c == '\n') out += "\r\n";
    else if (c != '\r') out += c;
  }
  if (out.size() < 2 || out.compare(out.size() - 2, 2, "\r\n") != 0) out += "\r\n";
  return out;
}

namespace {
struct Upload {
  const std::string* data;
  size_t off = 0;
};
size_t OnRead(char* buf, size_t size, size_t n, void* ud) {
  auto* u = static_cast<Upload*>(ud);
  const size_t k = std::min(size * n, u->data->size() - u->off);
  std::memcpy(buf, u->data->data() + u->off, k);
  u->off += k;
  return k;
}
}  // namespace

Status SendMail(const SmtpOptions& smtp, const MailMessage& msg) {
  if (smtp.url.rfind("smtp://", 0) != 0 && smtp.url.rfind("smtps://", 0) != 0)
    return Status::Invalid("mail server must be smtp://HOST[:PORT] or smtps://HOST[:PORT], not '" + smtp.url + "'");
  if (msg.to.empty()) return Status::Invalid("no recipients for the alert");
  auto api = LoadCurl();
  if (!api.ok()) return api.status();
  const CurlFns& c = **api;
  c.global_init(CURL_GLOBAL_DEFAULT);
  CURL* h = c.easy_init();
  if (!h) return Status::Internal("curl_easy_init failed");
  const std::string from = "<" + msg.from + ">";
  curl_slist* rcpt = nullptr;
  for (const auto& t : msg.to) rcpt = c.slist_append(rcpt, ("<" + t + ">").c_str());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const int64_t now = NowNs();
  const std::string text = FormatMail(msg, now, std::to_string(now) + ".iosonar@" + host);
  Upload up{&text};
  c.easy_setopt(h, CURLOPT_URL, smtp.url.c_str());
  c.easy_setopt(h, CURLOPT_MAIL_FROM, from.c_str());
  c.easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt);
  c.easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
  c.easy_setopt(h, CURLOPT_READDATA, &up);
  c.easy_setopt(h, CURLOPT_UPLOAD, 1L);
  c.easy_setopt(h, CURLOPT_TIMEOUT, smtp.timeout_s);
  c.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (smtp.require_tls) c.easy_setopt(h, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
  if (!smtp.user.empty()) {
    c.easy_setopt(h, CURLOPT_USERNAME, smtp.user.c_str());
    c.easy_setopt(h, CURLOPT_PASSWORD, smtp.password.c_str());
  }
  const CURLcode rc = c.easy_perform(h);
  c.slist_free_all(rcpt);
  c.easy_cleanup(h);
  if (rc != CURLE_OK)
    return Status::Unavailable("mail to " + smtp.url + " failed: " + c.easy_strerror(rc));
  return Status::Ok();
}

}  // namespace iosonar
