#include "core/base/url.h"

#include <algorithm>
#include <cctype>
#include <fstream>

namespace iosonar {
namespace {

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool SecretKey(std::string_view k) {
  std::string l(k);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* s : {"password", "passwd", "pass", "pwd", "secret", "token", "api_key", "apikey", "key"})
    if (l == s) return true;
  return false;
}

}  // namespace

std::string RedactUrl(std::string_view text) {
  // Every URL in the text (a message may name several, or quote one): each
  // scheme://USER:PASS@ gets *** for PASS, each secret query value too. A
  // URL ends at white space, a quote or a bracket.
  std::string out(text);
  static constexpr const char* kEnd = " \t\r\n'\"<>()[]{},;";
  size_t from = 0;
  for (;;) {
    const size_t sep = out.find("://", from);
    if (sep == std::string::npos) return out;
    const size_t auth = sep + 3;
    size_t url_end = out.find_first_of(kEnd, auth);
    if (url_end == std::string::npos) url_end = out.size();
    size_t auth_end = out.find_first_of("/?#", auth);
    if (auth_end == std::string::npos || auth_end > url_end) auth_end = url_end;
    const size_t at = auth_end > auth ? out.rfind('@', auth_end - 1) : std::string::npos;
    if (at != std::string::npos && at >= auth) {
      const size_t colon = out.find(':', auth);
      if (colon != std::string::npos && colon < at) {
        const size_t cut = at - colon - 1;
        out.replace(colon + 1, cut, "***");
        auth_end = auth_end - cut + 3;
        url_end = url_end - cut + 3;
      }
    }
    const size_t q = out.find('?', auth_end);
    if (q != std::string::npos && q < url_end) {
      size_t p = q + 1;
      while (p < url_end) {
        size_t amp = out.find('&', p);
        if (amp == std::string::npos || amp > url_end) amp = url_end;
        const size_t eq = out.find('=', p);
        if (eq != std::string::npos && eq < amp && SecretKey(std::string_view(out).substr(p, eq - p))) {
          const size_t len = amp - eq - 1;
          out.replace(eq + 1, len, "***");
          url_end = url_end - len + 3;
          amp = eq + 4;
        }
        p = amp + 1;
      }
    }
    from = std::max(url_end, auth);
  }
}

Result<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Invalid("secret file " + path + ": cannot be read");
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.empty()) return Status::Invalid("secret file " + path + ": its first line is empty");
  return line;
}

Result<Url> ParseUrl(const std::string& text) {
  Url u;
  auto bad = [&](const std::string& why) { return Status::Invalid("bad URL \"" + RedactUrl(text) + "\": " + why); };
  auto sep = text.find("://");
  if (sep == std::string::npos || sep == 0) return bad("expected SCHEME://...");
  u.scheme = text.substr(0, sep);
  std::transform(u.scheme.begin(), u.scheme.end(), u.scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string rest = text.substr(sep + 3);
  if (auto q = rest.find('?'); q != std::string::npos) {
    std::string qs = rest.substr(q + 1);
    rest.resize(q);
    size_t p = 0;
    while (p <= qs.size() && !qs.empty()) {
      auto amp = qs.find('&', p);
      std::string kv = qs.substr(p, amp == std::string::npos ? std::string::npos : amp - p);
      if (!kv.empty()) {
        auto eq = kv.find('=');
        u.query[PercentDecode(kv.substr(0, eq))] = eq == std::string::npos ? "" : PercentDecode(kv.substr(eq + 1));
      }
      if (amp == std::string::npos) break;
      p = amp + 1;
    }
  }
  if (u.scheme == "unix" || u.scheme == "file") {
    if (rest.empty() || rest[0] != '/') return bad("expected an absolute path after " + u.scheme + "://");
    u.path = PercentDecode(rest);
    return u;
  }
  std::string authority = rest, path;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    authority = rest.substr(0, slash);
    path = rest.substr(slash + 1);
  }
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto colon = userinfo.find(':');
    u.user = PercentDecode(userinfo.substr(0, colon));
    if (colon != std::string::npos) u.password = PercentDecode(userinfo.substr(colon + 1));
  }
  std::string hostport = authority;
  if (!hostport.empty() && hostport[0] == '[') {  // [IPv6]:port
    auto close = hostport.find(']');
    if (close == std::string::npos) return bad("unterminated [IPv6] host");
    u.host = hostport.substr(1, close - 1);
    hostport = hostport.substr(close + 1);
    if (!hostport.empty() && hostport[0] != ':') return bad("junk after ]");
    hostport = hostport.empty() ? "" : hostport.substr(1);
  } else {
    auto colon = hostport.rfind(':');
    u.host = hostport.substr(0, colon);
    hostport = colon == std::string::npos ? "" : hostport.substr(colon + 1);
  }
  if (!hostport.empty()) {
    if (!std::all_of(hostport.begin(), hostport.end(), [](unsigned char c) { return std::isdigit(c); }) || hostport.size() > 5)
      return bad("port \"" + hostport + "\" is not a number");
    u.port = std::stoi(hostport);
    if (u.port <= 0 || u.port > 65535) return bad("port out of range");
  }
  if (u.host.empty()) return bad("missing host");
  u.path = PercentDecode(path);
  if (u.port == 0) {
    if (u.scheme == "redis") u.port = 6379;
    else if (u.scheme == "mysql") u.port = 3306;
    else if (u.scheme == "https" || u.scheme == "http") u.port = 9200;
    else if (u.scheme == "tcp") return bad("tcp:// needs a port");
    else if (u.scheme == "lumberjack" || u.scheme == "beats" || u.scheme == "lumberjacks" || u.scheme == "beatss")
      u.port = 5044;  // Logstash's beats input
  }
  return u;
}

Result<Url> ParseOutputUrl(const std::string& text) {
  if (text.empty()) return Status::Invalid("empty --output (use tcp://HOST:PORT, a file path or -)");
  if (text == "-") {
    Url u;
    u.scheme = "stdout";
    return u;
  }
  if (text.find("://") == std::string::npos) {
    Url u;
    u.scheme = "file";
    u.path = text;
    return u;
  }
  auto r = ParseUrl(text);
  if (!r.ok()) return r;
  if (r->scheme != "tcp" && r->scheme != "file")
    return Status::Invalid("bad --output \"" + RedactUrl(text) + "\": expected tcp://HOST:PORT, a file path or -");
  return r;
}

std::string Url::ToString(bool redact_password) const {
  if (scheme == "stdout") return "-";
  if (scheme == "unix" || scheme == "file") return scheme + "://" + path;
  std::string s = scheme + "://";
  if (!user.empty() || !password.empty()) {
    s += user;
    if (!password.empty()) s += ":" + std::string(redact_password ? "***" : password);
    s += "@";
  }
  s += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port) s += ":" + std::to_string(port);
  if (!path.empty()) s += "/" + path;
  bool first = true;
  for (const auto& [k, v] : query) {
    s += first ? "?" : "&";
    first = false;
    s += k + "=" + (redact_password && SecretKey(k) ? std::string("***") : v);
  }
  return s;
}

}  // namespace iosonar
