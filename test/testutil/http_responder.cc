// See http_responder.h: a loopback responder that plays Elasticsearch's
// documented responses (contract tests, not Elasticsearch).
#include "test/testutil/http_responder.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <set>

#include "core/base/json.h"
#include "core/base/timeutil.h"

namespace iosonar::test {

// ---------------------------------------------------------------- HTTP server

HttpResponder::HttpResponder(std::function<HttpReply(const HttpRequest&)> handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    return;
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

HttpResponder::~HttpResponder() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> ws;
  {
    std::lock_guard<std::mutex> g(mu_);
    ws.swap(workers_);
  }
  for (auto& t : ws)
    if (t.joinable()) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void HttpResponder::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> g(mu_);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

namespace {

const char* Reason(int s) {
  switch (s) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void HttpResponder::Serve(int fd) {
  std::string in;
  char buf[65536];
  while (!stop_) {
    // Read one request: head, then Content-Length bytes.
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      int pr = ::poll(&p, 1, 50);
      if (stop_) break;
      if (pr <= 0) continue;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      in.append(buf, static_cast<size_t>(n));
    }
    if (stop_) break;
    HttpRequest req;
    std::string head = in.substr(0, head_end);
    size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
    req.method = first.substr(0, sp1);
    std::string target = first.substr(sp1 + 1, sp2 - sp1 - 1);
    if (auto q = target.find('?'); q != std::string::npos) {
      req.query = target.substr(q + 1);
      target.resize(q);
    }
    req.path = target;
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string h = head.substr(pos, e - pos);
      if (auto c = h.find(':'); c != std::string::npos) {
        std::string v = h.substr(c + 1);
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        req.headers[Lower(h.substr(0, c))] = v;
      }
      pos = e + 2;
    }
    size_t clen = 0;
    if (auto cl = req.headers.find("content-length"); cl != req.headers.end()) clen = std::stoul(cl->second);
    in.erase(0, head_end + 4);
    while (in.size() < clen && !stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      in.append(buf, static_cast<size_t>(n));
    }
    req.body = in.substr(0, clen);
    in.erase(0, clen);
    // A gzip-encoded body (the client's --es-gzip) is inflated as Elasticsearch does.
    if (req.Header("content-encoding") == "gzip") {
      std::string plain;
      z_stream z{};
      bool ok = inflateInit2(&z, 15 + 16) == Z_OK;
      z.next_in = reinterpret_cast<Bytef*>(req.body.data());
      z.avail_in = static_cast<uInt>(req.body.size());
      char zb[1 << 16];
      int rc = Z_OK;
      while (ok && rc != Z_STREAM_END) {
        z.next_out = reinterpret_cast<Bytef*>(zb);
        z.avail_out = sizeof zb;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) ok = false;
        plain.append(zb, sizeof zb - z.avail_out);
      }
      inflateEnd(&z);
      req.body = ok ? std::move(plain) : std::string("not gzip");
      req.headers.erase("content-encoding");
      gzip_requests_.fetch_add(1);
    }
    HttpReply rep = handler_(req);
    std::string out = "HTTP/1.1 " + std::to_string(rep.status) + " " + Reason(rep.status) +
                      "\r\nContent-Type: " + rep.content_type + "\r\nContent-Length: " + std::to_string(rep.body.size()) +
                      "\r\n\r\n";
    if (rep.drop_mid_body) {
      out.append(rep.body, 0, rep.body.size() / 2);
      SendAll(fd, out.data(), out.size());
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      return;
    }
    out += rep.body;
    if (!SendAll(fd, out.data(), out.size())) break;
  }
  ::close(fd);
}

// ------------------------------------------------------- the Elasticsearch fake

namespace {

struct Doc {
  std::string id;
  int64_t ts_ms = 0;
  std::string source;
  std::shared_ptr<rapidjson::Document> parsed;
};

struct Pit {
  std::string index;
  std::vector<const Doc*> docs;  // sorted by (ts, event.stream, event.seq)
  std::vector<std::pair<int64_t, int64_t>> key;  // (event.stream, event.seq) of docs[i]
  bool expired = false;
};

std::string Json(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

std::string Quote(std::string_view s) {
  std::string o;
  iosonar::AppendJsonString(&o, s);
  return o;
}

constexpr const char* kShardsOk = "\"_shards\":{\"total\":1,\"successful\":1,\"skipped\":0,\"failed\":0}";

HttpReply Error(int status, const std::string& type, const std::string& reason) {
  HttpReply r;
  r.status = status;
  r.body = "{\"error\":{\"root_cause\":[{\"type\":" + Quote(type) + ",\"reason\":" + Quote(reason) + "}],\"type\":" + Quote(type) +
           ",\"reason\":" + Quote(reason) + "},\"status\":" + std::to_string(status) + "}";
  return r;
}

int64_t DateMs(const rapidjson::Value& v) {
  if (v.IsInt64()) return v.GetInt64();
  if (v.IsString()) {
    auto ns = iosonar::ParseIso8601(v.GetString());
    if (ns) return *ns / 1000000 - (*ns < 0 && *ns % 1000000 != 0);
  }
  return 0;
}

// Evaluates the query subset the ES store sends: match_all, bool.filter of range (epoch_millis on
// @timestamp) and term; anything else is a contract violation.
bool Matches(const Doc& d, const rapidjson::Value& q, std::string* unsupported) {
  if (!q.IsObject()) return true;
  if (q.HasMember("match_all")) return true;
  if (q.HasMember("bool")) {
    const auto& b = q["bool"];
    if (b.HasMember("filter") && b["filter"].IsArray()) {
      for (const auto& f : b["filter"].GetArray())
        if (!Matches(d, f, unsupported)) return false;
    }
    return true;
  }
  if (q.HasMember("range")) {
    for (auto m = q["range"].MemberBegin(); m != q["range"].MemberEnd(); ++m) {
      if (std::string(m->name.GetString()) != "@timestamp") {
        *unsupported = "range on a field other than @timestamp";
        return false;
      }
      const auto& r = m->value;
      if (r.HasMember("gte") && d.ts_ms < r["gte"].GetInt64()) return false;
      if (r.HasMember("lt") && d.ts_ms >= r["lt"].GetInt64()) return false;
    }
    return true;
  }
  if (q.HasMember("term")) {
    for (auto m = q["term"].MemberBegin(); m != q["term"].MemberEnd(); ++m) {
      const char* field = m->name.GetString();
      const auto& want = m->value.IsObject() && m->value.HasMember("value") ? m->value["value"] : m->value;
      if (!d.parsed->HasMember(field)) return false;
      const auto& have = (*d.parsed)[field];
      if (want.IsString()) {
        if (!have.IsString() || std::string(have.GetString()) != want.GetString()) return false;
      } else if (want.IsInt64()) {
        if (!have.IsInt64() || have.GetInt64() != want.GetInt64()) return false;
      } else if (want.IsBool()) {
        if (!have.IsBool() || have.GetBool() != want.GetBool()) return false;
      } else {
        *unsupported = "term with an unsupported value";
        return false;
      }
    }
    return true;
  }
  *unsupported = "query clause not in the supported subset: " + Json(q).substr(0, 100);
  return false;
}

int64_t IntervalMs(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0) return 0;
  int64_t n = std::stoll(s.substr(0, i));
  std::string u = s.substr(i);
  if (u == "ms") return n;
  if (u == "s") return n * 1000;
  if (u == "m") return n * 60000;
  if (u == "h") return n * 3600000;
  if (u == "d") return n * 86400000;
  return 0;
}

}  // namespace

struct FakeElasticsearch::State {
  mutable std::mutex mu;
  std::map<std::string, std::vector<std::unique_ptr<Doc>>> indices;
  std::map<std::string, std::map<std::string, const Doc*>> ids;
  std::map<std::string, Pit> pits;
  int next_pit = 1;
  std::vector<std::string> violations;
  uint64_t plan_requests = 0;  // PIT searches with aggregations (ordered scans' time chunks)
  std::vector<HttpRequest> requests;
  std::map<std::string, std::string> resources;
  struct Fail {
    int status;
    int n;
    std::string path_part;
  };
  std::vector<Fail> fails;
  int drop_n = 0;
  std::string drop_path;
  std::function<int(const std::string&, int)> item_fault;
  std::map<std::string, int> item_attempts;
  int expire_after = -1;
  uint64_t pit_expirations = 0;
  std::string auth;
};

FakeElasticsearch::FakeElasticsearch() : st_(std::make_unique<State>()) {
  server_ = std::make_unique<HttpResponder>([this](const HttpRequest& r) { return Handle(r); });
}
FakeElasticsearch::~FakeElasticsearch() { server_.reset(); }

void FakeElasticsearch::FailNextRequests(int status, int n, const std::string& path_part) {
  std::lock_guard<std::mutex> g(st_->mu);
  st_->fails.push_back({status, n, path_part});
}
void FakeElasticsearch::DropNextResponses(int n, const std::string& path_part) {
  std::lock_guard<std::mutex> g(st_->mu);
  st_->drop_n = n;
  st_->drop_path = path_part;
}
void FakeElasticsearch::SetItemFault(std::function<int(const std::string&, int)> fn) {
  std::lock_guard<std::mutex> g(st_->mu);
  st_->item_fault = std::move(fn);
}
void FakeElasticsearch::ExpirePits() {
  std::lock_guard<std::mutex> g(st_->mu);
  for (auto& [id, p] : st_->pits)
    if (!p.expired) {
      p.expired = true;
      ++st_->pit_expirations;
    }
}
void FakeElasticsearch::ExpirePitsAfterSearches(int n) {
  std::lock_guard<std::mutex> g(st_->mu);
  st_->expire_after = n;
}
void FakeElasticsearch::RequireAuthorization(const std::string& value) {
  std::lock_guard<std::mutex> g(st_->mu);
  st_->auth = value;
}
size_t FakeElasticsearch::DocCount(const std::string& index) const {
  std::lock_guard<std::mutex> g(st_->mu);
  auto it = st_->indices.find(index);
  return it == st_->indices.end() ? 0 : it->second.size();
}
std::map<std::string, std::string> FakeElasticsearch::Docs(const std::string& index) const {
  std::lock_guard<std::mutex> g(st_->mu);
  std::map<std::string, std::string> out;
  auto it = st_->indices.find(index);
  if (it != st_->indices.end())
    for (const auto& d : it->second) out[d->id] = d->source;
  return out;
}
std::vector<std::string> FakeElasticsearch::Indices() const {
  std::lock_guard<std::mutex> g(st_->mu);
  std::vector<std::string> out;
  for (const auto& [k, v] : st_->indices) out.push_back(k);
  return out;
}
std::vector<std::string> FakeElasticsearch::Violations() const {
  std::lock_guard<std::mutex> g(st_->mu);
  return st_->violations;
}
std::vector<HttpRequest> FakeElasticsearch::Requests() const {
  std::lock_guard<std::mutex> g(st_->mu);
  return st_->requests;
}
std::map<std::string, std::string> FakeElasticsearch::Resources() const {
  std::lock_guard<std::mutex> g(st_->mu);
  return st_->resources;
}
uint64_t FakeElasticsearch::plan_requests() const {
  std::lock_guard<std::mutex> lock(st_->mu);
  return st_->plan_requests;
}

uint64_t FakeElasticsearch::pit_expirations() const {
  std::lock_guard<std::mutex> g(st_->mu);
  return st_->pit_expirations;
}

HttpReply FakeElasticsearch::Handle(const HttpRequest& r) {
  State& s = *st_;
  std::lock_guard<std::mutex> g(s.mu);
  s.requests.push_back(r);
  auto violation = [&](const std::string& what) { s.violations.push_back(r.method + " " + r.path + ": " + what); };

  if (!s.auth.empty() && r.Header("authorization") != s.auth) {
    violation("missing or wrong Authorization header: '" + r.Header("authorization") + "'");
    return Error(401, "security_exception", "missing authentication credentials for REST request [" + r.path + "]");
  }
  for (auto& f : s.fails) {
    if (f.n > 0 && r.path.find(f.path_part) != std::string::npos) {
      --f.n;
      if (f.status == 429)
        return Error(429, "es_rejected_execution_exception", "rejected execution of coordinating operation");
      return Error(f.status, "unavailable_shards_exception", "primary shard is not active");
    }
  }
  bool drop = false;
  if (s.drop_n > 0 && r.path.find(s.drop_path) != std::string::npos) {
    --s.drop_n;
    drop = true;
  }
  auto finish = [&](HttpReply rep) {
    rep.drop_mid_body = drop;
    return rep;
  };

  const bool has_body = !r.body.empty();
  rapidjson::Document body;
  if (has_body && r.path != "/_bulk") {
    if (r.Header("content-type").rfind("application/json", 0) != 0)
      violation("JSON body sent with Content-Type '" + r.Header("content-type") + "'");
    body.Parse(r.body.data(), r.body.size());
    if (body.HasParseError()) {
      violation("body is not JSON");
      return Error(400, "parse_exception", "request body is not valid JSON");
    }
  }

  // Cluster info.
  if (r.method == "GET" && r.path == "/")
    return finish({200, "{\"name\":\"loopback\",\"cluster_name\":\"iosonar-contract\",\"version\":{\"number\":\"8.15.0\"},"
                        "\"tagline\":\"You Know, for Search\"}"});

  // The node: a full Elasticsearch distribution's modules.
  if (r.method == "GET" && r.path == "/_nodes/_local")
    return finish({200, "{\"nodes\":{\"n1\":{\"version\":\"8.15.0\",\"build_flavor\":\"default\",\"modules\":["
                        "{\"name\":\"constant-keyword\"},{\"name\":\"data-streams\"},{\"name\":\"x-pack-ilm\"}]}}}"});
  // ILM is there (the responder plays a full Elasticsearch distribution).
  if (r.method == "GET" && r.path == "/_ilm/status") return finish({200, "{\"operation_mode\":\"RUNNING\"}"});

  // Templates and policies.
  for (const char* prefix : {"/_component_template/", "/_index_template/", "/_ilm/policy/"}) {
    if (r.path.rfind(prefix, 0) == 0) {
      if (r.method == "PUT") {
        if (!has_body) violation("PUT without a body");
        s.resources[r.path] = r.body;
        return finish({200, "{\"acknowledged\":true}"});
      }
      if (r.method == "GET") {
        auto it = s.resources.find(r.path);
        if (it == s.resources.end()) return finish(Error(404, "resource_not_found_exception", r.path + " not found"));
        std::string name = r.path.substr(std::strlen(prefix));
        std::string kind = std::string(prefix) == "/_component_template/" ? "component_templates"
                           : std::string(prefix) == "/_index_template/"   ? "index_templates"
                                                                          : "";
        if (kind.empty()) return finish({200, "{" + Quote(name) + ":{\"version\":1,\"policy\":" + it->second + "}}"});
        std::string inner = kind == "component_templates" ? "component_template" : "index_template";
        return finish({200, "{\"" + kind + "\":[{\"name\":" + Quote(name) + ",\"" + inner + "\":" + it->second + "}]}"});
      }
      violation("unsupported method " + r.method);
      return finish(Error(405, "illegal_argument_exception", "method not allowed"));
    }
  }

  if (r.path == "/_bulk") {
    if (r.method != "POST" && r.method != "PUT") violation("_bulk with method " + r.method);
    if (r.Header("content-type").rfind("application/x-ndjson", 0) != 0)
      violation("_bulk Content-Type is '" + r.Header("content-type") + "', not application/x-ndjson");
    if (r.body.empty() || r.body.back() != '\n') violation("_bulk body does not end in a newline");
    std::vector<std::string> lines;
    size_t p = 0;
    while (p < r.body.size()) {
      size_t e = r.body.find('\n', p);
      if (e == std::string::npos) e = r.body.size();
      lines.push_back(r.body.substr(p, e - p));
      p = e + 1;
    }
    if (lines.size() % 2) violation("_bulk: odd number of lines (an action without its source)");
    std::string items;
    bool errors = false;
    for (size_t i = 0; i + 1 < lines.size(); i += 2) {
      rapidjson::Document a;
      a.Parse(lines[i].data(), lines[i].size());
      if (a.HasParseError() || !a.IsObject() || !a.HasMember("create") || !a["create"].HasMember("_index") ||
          !a["create"].HasMember("_id")) {
        violation("_bulk action line " + std::to_string(i + 1) + " is not a create with _index and _id: " + lines[i].substr(0, 120));
        return Error(400, "illegal_argument_exception", "Malformed action/metadata line [" + std::to_string(i + 1) + "]");
      }
      std::string index = a["create"]["_index"].GetString(), id = a["create"]["_id"].GetString();
      auto doc = std::make_unique<Doc>();
      doc->parsed = std::make_shared<rapidjson::Document>();
      doc->parsed->Parse(lines[i + 1].data(), lines[i + 1].size());
      if (!items.empty()) items += ",";
      std::string head = "{\"create\":{\"_index\":" + Quote(".ds-" + index + "-2026.11.22-000001") + ",\"_id\":" + Quote(id);
      if (doc->parsed->HasParseError() || !doc->parsed->IsObject()) {
        violation("_bulk source line " + std::to_string(i + 2) + " is not a JSON object");
        errors = true;
        items += head + ",\"status\":400,\"error\":{\"type\":\"document_parsing_exception\",\"reason\":\"failed to parse\"}}}";
        continue;
      }
      int fault = 0;
      if (s.item_fault) fault = s.item_fault(id, ++s.item_attempts[id]);
      if (fault == 429) {
        errors = true;
        items += head + ",\"status\":429,\"error\":{\"type\":\"es_rejected_execution_exception\",\"reason\":"
                        "\"rejected execution of primary operation\"}}}";
        continue;
      }
      if (fault >= 500) {
        errors = true;
        items += head + ",\"status\":" + std::to_string(fault) +
                 ",\"error\":{\"type\":\"unavailable_shards_exception\",\"reason\":\"primary shard is not active\"}}}";
        continue;
      }
      if (fault >= 400) {
        errors = true;
        items += head + ",\"status\":" + std::to_string(fault) +
                 ",\"error\":{\"type\":\"document_parsing_exception\",\"reason\":\"[1:2] failed to parse field [io.size] of type [long]\"}}}";
        continue;
      }
      auto& known = s.ids[index];
      if (known.count(id)) {
        errors = true;
        items += head + ",\"status\":409,\"error\":{\"type\":\"version_conflict_engine_exception\",\"reason\":" +
                 Quote("[" + id + "]: version conflict, document already exists (current version [1])") + "}}}";
        continue;
      }
      if (!doc->parsed->HasMember("@timestamp")) {
        errors = true;
        items += head + ",\"status\":400,\"error\":{\"type\":\"document_parsing_exception\",\"reason\":"
                        "\"data stream timestamp field [@timestamp] is missing\"}}}";
        continue;
      }
      doc->id = id;
      doc->source = lines[i + 1];
      // As iosonar's trace mapping does (_source.excludes: iosonar.key.*): the group keys are not kept in _source.
      if (doc->source.find("\"iosonar.key.") != std::string::npos && doc->parsed->IsObject()) {
        rapidjson::StringBuffer sb;
        rapidjson::Writer<rapidjson::StringBuffer> w(sb);
        w.StartObject();
        for (auto m = doc->parsed->MemberBegin(); m != doc->parsed->MemberEnd(); ++m) {
          if (std::string_view(m->name.GetString(), m->name.GetStringLength()).starts_with("iosonar.key.")) continue;
          w.Key(m->name.GetString(), m->name.GetStringLength());
          m->value.Accept(w);
        }
        w.EndObject();
        doc->source.assign(sb.GetString(), sb.GetSize());
      }
      doc->ts_ms = DateMs((*doc->parsed)["@timestamp"]);
      known[id] = doc.get();
      s.indices[index].push_back(std::move(doc));
      items += head + ",\"_version\":1,\"result\":\"created\",\"status\":201}}";
    }
    return finish({200, "{\"took\":1,\"errors\":" + std::string(errors ? "true" : "false") + ",\"items\":[" + items + "]}"});
  }

  if (r.path == "/_pit" && r.method == "DELETE") {
    if (!body.IsObject() || !body.HasMember("id")) violation("DELETE /_pit without an id");
    else s.pits.erase(body["id"].GetString());
    return finish({200, "{\"succeeded\":true,\"num_freed\":1}"});
  }

  // /<index>/<endpoint>
  std::string index, endpoint;
  if (r.path.size() > 1) {
    size_t sl = r.path.find('/', 1);
    if (sl != std::string::npos) {
      index = r.path.substr(1, sl - 1);
      endpoint = r.path.substr(sl);
    } else {
      endpoint = r.path;
    }
  }
  auto missing = [&] { return finish(Error(404, "index_not_found_exception", "no such index [" + index + "]")); };

  if (endpoint == "/_refresh") {
    if (r.method != "POST") violation("_refresh with " + r.method);
    if (!s.indices.count(index)) return missing();
    return finish({200, "{\"_shards\":{\"total\":1,\"successful\":1,\"failed\":0}}"});
  }
  if (endpoint == "/_pit") {
    if (r.method != "POST") violation("_pit with " + r.method);
    if (r.query.find("keep_alive=") == std::string::npos) violation("_pit without keep_alive");
    if (!s.indices.count(index)) return missing();
    Pit p;
    p.index = index;
    std::vector<std::pair<const Doc*, std::pair<int64_t, int64_t>>> v;
    for (const auto& d : s.indices[index]) {
      long long st = 0, sq = 0;
      std::sscanf(d->id.c_str(), "%lld-%lld", &st, &sq);
      v.emplace_back(d.get(), std::make_pair(static_cast<int64_t>(st), static_cast<int64_t>(sq)));
    }
    std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) {
      return std::make_pair(a.first->ts_ms, a.second) < std::make_pair(b.first->ts_ms, b.second);
    });
    for (auto& [d, k] : v) {
      p.docs.push_back(d);
      p.key.push_back(k);
    }
    std::string id = "pit-" + std::to_string(s.next_pit++);
    s.pits[id] = std::move(p);
    return finish({200, "{\"id\":" + Quote(id) + "}"});
  }
  if (endpoint == "/_count") {
    if (!s.indices.count(index)) return missing();
    uint64_t n = 0;
    std::string unsupported;
    for (const auto& d : s.indices[index])
      if (!body.IsObject() || !body.HasMember("query") || Matches(*d, body["query"], &unsupported)) ++n;
    if (!unsupported.empty()) violation(unsupported);
    return finish({200, "{\"count\":" + std::to_string(n) + ",\"_shards\":{\"total\":1,\"successful\":1,\"failed\":0}}"});
  }

  if (endpoint == "/_search" && index.empty()) {
    // A PIT search.
    if (!body.IsObject() || !body.HasMember("pit") || !body["pit"].HasMember("id")) {
      violation("search without an index must carry a pit");
      return finish(Error(400, "action_request_validation_exception", "no index and no pit"));
    }
    std::string pid = body["pit"]["id"].GetString();
    auto it = s.pits.find(pid);
    if (it != s.pits.end() && !it->second.expired && s.expire_after == 0) {
      it->second.expired = true;
      ++s.pit_expirations;
      s.expire_after = -1;
    }
    if (it == s.pits.end() || it->second.expired) {
      HttpReply rep;
      rep.status = 404;
      rep.body = "{\"error\":{\"root_cause\":[{\"type\":\"search_context_missing_exception\",\"reason\":\"No search context "
                 "found for id [" + pid + "]\"}],\"type\":\"search_phase_execution_exception\",\"reason\":\"all shards failed\","
                 "\"phase\":\"query\",\"grouped\":true,\"failed_shards\":[{\"shard\":0,\"index\":null,\"reason\":{\"type\":"
                 "\"search_context_missing_exception\",\"reason\":\"No search context found\"}}]},\"status\":404}";
      return finish(rep);
    }
    if (s.expire_after > 0) --s.expire_after;
    Pit& p = it->second;
    if (body.HasMember("aggs")) {
      // An ordered scan's plan (EsClient::TimeChunks): the total, the least
      // and greatest @timestamp (lo, hi), or a date_histogram of @timestamp (t).
      std::string unsupported;
      std::vector<const Doc*> m;
      for (const Doc* d : p.docs)
        if (!body.HasMember("query") || Matches(*d, body["query"], &unsupported)) m.push_back(d);
      if (!unsupported.empty()) violation(unsupported);
      if (body.HasMember("size") && body["size"].GetUint() != 0) violation("PIT aggregation with hits");
      const auto& aggs = body["aggs"];
      std::string out;
      if (aggs.HasMember("lo") && aggs.HasMember("hi") && aggs.MemberCount() == 2) {
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
        for (const Doc* d : m) lo = std::min(lo, d->ts_ms), hi = std::max(hi, d->ts_ms);
        out = m.empty() ? "\"lo\":{\"value\":null},\"hi\":{\"value\":null}"
                        : "\"lo\":{\"value\":" + std::to_string(lo) + ".0},\"hi\":{\"value\":" + std::to_string(hi) + ".0}";
      } else if (aggs.HasMember("t") && aggs.MemberCount() == 1 && aggs["t"].HasMember("date_histogram") &&
                 aggs["t"]["date_histogram"].HasMember("fixed_interval")) {
        const int64_t w = IntervalMs(aggs["t"]["date_histogram"]["fixed_interval"].GetString());
        if (w <= 0) violation("date_histogram without a fixed_interval");
        std::map<int64_t, uint64_t> b;
        for (const Doc* d : m) ++b[w > 0 ? d->ts_ms - (((d->ts_ms % w) + w) % w) : 0];
        out = "\"t\":{\"buckets\":[";
        for (auto bi = b.begin(); bi != b.end(); ++bi)
          out += std::string(bi == b.begin() ? "" : ",") + "{\"key\":" + std::to_string(bi->first) + ",\"doc_count\":" + std::to_string(bi->second) + "}";
        out += "]}";
      } else {
        violation("PIT aggregation outside the supported subset (lo/hi, t)");
      }
      ++s.plan_requests;
      return finish({200, "{\"pit_id\":" + Quote(pid) + ",\"took\":1,\"timed_out\":false," + kShardsOk +
                              ",\"hits\":{\"total\":{\"value\":" + std::to_string(m.size()) +
                              ",\"relation\":\"eq\"},\"max_score\":null,\"hits\":[]},\"aggregations\":{" + out + "}}"});
    }
    // Unordered scans sort on the index order first ([_doc, event.stream, event.seq]); here the
    // documents are kept in @timestamp order, so the timestamp stands for _doc (same sort values).
    if (!body.HasMember("sort") || (Json(body["sort"]) != "[{\"@timestamp\":\"asc\"},{\"event.stream\":\"asc\"},{\"event.seq\":\"asc\"}]" &&
                                    Json(body["sort"]) != "[{\"_doc\":\"asc\"},{\"event.stream\":\"asc\"},{\"event.seq\":\"asc\"}]"))
      violation("PIT search not sorted on @timestamp (or _doc), event.stream, event.seq");
    size_t size = body.HasMember("size") ? body["size"].GetUint() : 10;
    std::tuple<int64_t, int64_t, int64_t> after{std::numeric_limits<int64_t>::min(), 0, 0};
    bool has_after = body.HasMember("search_after");
    if (has_after) {
      const auto& sa = body["search_after"];
      if (!sa.IsArray() || sa.Size() != 3 || !sa[0].IsInt64() || !sa[1].IsInt64() || !sa[2].IsInt64()) {
        violation("search_after is not [long, long, long]");
        return finish(Error(400, "illegal_argument_exception", "search_after has wrong sort values"));
      }
      after = {sa[0].GetInt64(), sa[1].GetInt64(), sa[2].GetInt64()};
    }
    std::string unsupported, hits;
    size_t n = 0;
    for (size_t i = 0; i < p.docs.size() && n < size; ++i) {
      const Doc* d = p.docs[i];
      if (has_after && std::make_tuple(d->ts_ms, p.key[i].first, p.key[i].second) <= after) continue;
      if (body.HasMember("query") && !Matches(*d, body["query"], &unsupported)) continue;
      if (n++) hits += ",";
      hits += "{\"_index\":" + Quote(".ds-" + p.index + "-2026.11.22-000001") + ",\"_id\":" + Quote(d->id) +
              ",\"_score\":null,\"_source\":" + d->source + ",\"sort\":[" + std::to_string(d->ts_ms) + "," +
              std::to_string(p.key[i].first) + "," + std::to_string(p.key[i].second) + "]}";
    }
    if (!unsupported.empty()) violation(unsupported);
    return finish({200, "{\"pit_id\":" + Quote(pid) + ",\"took\":1,\"timed_out\":false," + kShardsOk + ",\"hits\":{\"max_score\":null,\"hits\":[" +
                            hits + "]}}"});
  }

  if (endpoint == "/_search") {
    if (!s.indices.count(index)) return missing();
    if (!body.IsObject() || !body.HasMember("aggs") || !body["aggs"].IsObject() || body["aggs"].MemberCount() != 1) {
      violation("index search outside the supported subset (composite aggregation)");
      return finish(Error(400, "illegal_argument_exception", "unsupported search"));
    }
    const auto& agg = body["aggs"].MemberBegin()->value;
    std::string agg_name = body["aggs"].MemberBegin()->name.GetString();
    if (!agg.HasMember("composite") || !agg["composite"].HasMember("sources")) {
      violation("aggregation is not a composite");
      return finish(Error(400, "illegal_argument_exception", "unsupported aggregation"));
    }
    const auto& comp = agg["composite"];
    size_t size = comp.HasMember("size") ? comp["size"].GetUint() : 10;
    const auto& src = comp["sources"];
    if (!src.IsArray() || src.Size() != 1 || !src[0].IsObject()) {
      violation("composite sources: only one date_histogram source is supported");
      return finish(Error(400, "illegal_argument_exception", "unsupported sources"));
    }
    std::string key_name = src[0].MemberBegin()->name.GetString();
    const auto& dh = src[0].MemberBegin()->value;
    if (!dh.HasMember("date_histogram") || !dh["date_histogram"].HasMember("fixed_interval")) {
      violation("composite source is not a date_histogram with fixed_interval");
      return finish(Error(400, "illegal_argument_exception", "unsupported source"));
    }
    int64_t w = IntervalMs(dh["date_histogram"]["fixed_interval"].GetString());
    if (w <= 0) return finish(Error(400, "illegal_argument_exception", "failed to parse fixed_interval"));
    std::vector<std::pair<std::string, std::string>> sums;  // name, field
    if (agg.HasMember("aggs"))
      for (auto m = agg["aggs"].MemberBegin(); m != agg["aggs"].MemberEnd(); ++m) {
        if (!m->value.HasMember("sum") || !m->value["sum"].HasMember("field")) {
          violation("sub-aggregation other than sum");
          continue;
        }
        sums.emplace_back(m->name.GetString(), m->value["sum"]["field"].GetString());
      }
    int64_t after = std::numeric_limits<int64_t>::min();
    if (comp.HasMember("after")) after = comp["after"][key_name.c_str()].GetInt64();
    std::map<int64_t, std::pair<uint64_t, std::vector<double>>> buckets;
    std::string unsupported;
    for (const auto& d : s.indices[index]) {
      if (body.HasMember("query") && !Matches(*d, body["query"], &unsupported)) continue;
      int64_t k = d->ts_ms / w - (d->ts_ms < 0 && d->ts_ms % w != 0);
      k *= w;
      if (k <= after) continue;
      auto& b = buckets[k];
      if (b.second.empty()) b.second.assign(sums.size(), 0.0);
      ++b.first;
      for (size_t j = 0; j < sums.size(); ++j) {
        const char* f = sums[j].second.c_str();
        if (d->parsed->HasMember(f) && (*d->parsed)[f].IsNumber()) b.second[j] += (*d->parsed)[f].GetDouble();
      }
    }
    if (!unsupported.empty()) violation(unsupported);
    std::string out, last;
    size_t n = 0;
    for (auto& [k, b] : buckets) {
      if (n == size) break;
      if (n++) out += ",";
      last = "{" + Quote(key_name) + ":" + std::to_string(k) + "}";
      out += "{\"key\":" + last + ",\"doc_count\":" + std::to_string(b.first);
      for (size_t j = 0; j < sums.size(); ++j) {
        std::string v;
        iosonar::JsonWriter jw(&v);
        jw.Double(b.second[j]);
        out += "," + Quote(sums[j].first) + ":{\"value\":" + v + "}";
      }
      out += "}";
    }
    std::string res = "{\"took\":1,\"timed_out\":false," + std::string(kShardsOk) + ",\"hits\":{\"hits\":[]},\"aggregations\":{" + Quote(agg_name) + ":{";
    if (n) res += "\"after_key\":" + last + ",";
    res += "\"buckets\":[" + out + "]}}}";
    return finish({200, res});
  }

  violation("endpoint not in the supported subset");
  return finish(Error(400, "illegal_argument_exception", "unsupported endpoint " + r.method + " " + r.path));
}

}  // namespace iosonar::test
