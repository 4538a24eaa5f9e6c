// Service URLs, the one way iosonar names a service everywhere:
//   redis://[:PASS@]HOST:PORT[/DB]   unix:///PATH/redis.sock[?db=N]
//   mysql://USER:PASS@HOST:PORT/DB[?socket=PATH]
//   https://USER:PASS@HOST:9200      http://...
//   tcp://HOST:PORT                  (a JSON-lines receiver: collector or Logstash)
//   lumberjack://HOST[:5044]         (beats:// too: Lumberjack v2, acknowledged delivery)
//   file:///PATH, a plain path, or "-" (stdout) for --output
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar {

struct Url {
  std::string scheme;  // lower case; "file" for plain paths, "stdout" for "-"
  std::string user, password;
  std::string host;
  int port = 0;        // 0 = the scheme's default
  std::string path;    // without the leading '/' for redis/mysql (db name), absolute for unix/file
  std::map<std::string, std::string> query;
  std::string ToString(bool redact_password = true) const;
};

// Errors name the URL and what is wrong with it.
Result<Url> ParseUrl(const std::string& text);

// The text of a URL, or a message naming any number of URLs, with their
// passwords (scheme://user:PASS@host) and secret query values (password=,
// token=, api_key=, ...) replaced by ***, whether they parse or not: the one
// redaction every message that names a URL or an option goes through.
std::string RedactUrl(std::string_view text);
// A secret kept in a file (--es-password-file ...): its first line, without
// the line end. Errors name the file (never its content).
Result<std::string> ReadSecretFile(const std::string& path);
// For --output: tcp://, file://, a plain path or "-".
Result<Url> ParseOutputUrl(const std::string& text);

}  // namespace iosonar
