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

// The text of a URL with its password and secret query values (password=,
// token=, api_key=, ...) replaced by ***, whether it parses or not: for every
// message that names a URL.
std::string RedactUrl(std::string_view text);
// For --output: tcp://, file://, a plain path or "-".
Result<Url> ParseOutputUrl(const std::string& text);

}  // namespace iosonar
