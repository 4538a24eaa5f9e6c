#include "iosonar/http_client.h"

#include <curl/curl.h>

#include <mutex>

namespace iosonar {
namespace {

size_t OnBody(char* p, size_t size, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, size * n);
  return size * n;
}

class CurlClient final : public HttpClient {
 public:
  CurlClient(std::string base, const EsOptions& opts) : base_(std::move(base)), opts_(opts) {}
  ~CurlClient() override {
    if (headers_) curl_slist_free_all(headers_);
    if (h_) curl_easy_cleanup(h_);
  }

  Status Init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    h_ = curl_easy_init();
    if (!h_) return Status::Internal("curl_easy_init failed");
    curl_easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h_, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts_.connect_timeout_ms));
    curl_easy_setopt(h_, CURLOPT_TIMEOUT_MS, static_cast<long>(opts_.request_timeout_ms));
    curl_easy_setopt(h_, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(h_, CURLOPT_WRITEDATA, &body_);
    curl_easy_setopt(h_, CURLOPT_ACCEPT_ENCODING, "");  // gzip responses if the server offers
    if (opts_.insecure) {
      curl_easy_setopt(h_, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h_, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
      curl_easy_setopt(h_, CURLOPT_SSL_VERIFYPEER, 1L);
      curl_easy_setopt(h_, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (!opts_.ca_file.empty()) curl_easy_setopt(h_, CURLOPT_CAINFO, opts_.ca_file.c_str());
    if (!opts_.api_key.empty()) {
      auth_header_ = "Authorization: ApiKey " + opts_.api_key;
    } else if (!opts_.user.empty()) {
      curl_easy_setopt(h_, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(h_, CURLOPT_USERNAME, opts_.user.c_str());
      curl_easy_setopt(h_, CURLOPT_PASSWORD, opts_.password.c_str());
    }
    return Status::Ok();
  }

  Result<HttpResponse> Request(std::string_view method, std::string_view path, std::string_view body,
                               std::string_view content_type) override {
    std::string url = base_;
    url.append(path);
    body_.clear();
    if (headers_) {
      curl_slist_free_all(headers_);
      headers_ = nullptr;
    }
    std::string ct = "Content-Type: " + std::string(content_type);
    headers_ = curl_slist_append(headers_, ct.c_str());
    headers_ = curl_slist_append(headers_, "Accept: application/json");
    headers_ = curl_slist_append(headers_, "Expect:");  // no 100-continue round trip
    if (!auth_header_.empty()) headers_ = curl_slist_append(headers_, auth_header_.c_str());
    std::string m(method);
    curl_easy_setopt(h_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(h_, CURLOPT_NOBODY, 0L);
    if (m == "GET" && body.empty()) {
      curl_easy_setopt(h_, CURLOPT_HTTPGET, 1L);
      curl_easy_setopt(h_, CURLOPT_CUSTOMREQUEST, nullptr);
    } else if (m == "HEAD") {
      curl_easy_setopt(h_, CURLOPT_NOBODY, 1L);
      curl_easy_setopt(h_, CURLOPT_CUSTOMREQUEST, nullptr);
    } else {
      curl_easy_setopt(h_, CURLOPT_POST, 1L);
      curl_easy_setopt(h_, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(h_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(h_, CURLOPT_CUSTOMREQUEST, m == "POST" ? nullptr : m.c_str());
    }
    CURLcode rc = curl_easy_perform(h_);
    if (rc != CURLE_OK)
      return Status::Unavailable(m + " " + url + ": " + curl_easy_strerror(rc));
    HttpResponse r;
    curl_easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &r.status);
    char* ctype = nullptr;
    curl_easy_getinfo(h_, CURLINFO_CONTENT_TYPE, &ctype);
    if (ctype) r.content_type = ctype;
    r.body = std::move(body_);
    body_.clear();
    return r;
  }

  const std::string& base_url() const override { return base_; }

 private:
  std::string base_;
  EsOptions opts_;
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  std::string auth_header_;
  std::string body_;
};

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::Open(const std::string& base_url, const EsOptions& opts) {
  std::string base = base_url;
  if (base.rfind("es+", 0) == 0) base.erase(0, 3);
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0)
    return Status::Invalid("Elasticsearch URL '" + base_url + "': expected http(s)://HOST:PORT or es+http(s)://HOST:PORT");
  while (!base.empty() && base.back() == '/') base.pop_back();
  auto c = std::make_unique<CurlClient>(base, opts);
  if (auto st = c->Init(); !st.ok()) return st;
  return std::unique_ptr<HttpClient>(std::move(c));
}

}  // namespace iosonar
