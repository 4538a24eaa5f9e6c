// The configuration file every iosonar daemon reads (/etc/iosonar/iosonar.toml,
// docs/configuration.md): a small subset of TOML, parsed here without a
// library.
//
//   # comment
//   mysql-file = "/etc/iosonar/mysql.url"   # top level: shared settings
//   [collect]                               # one table per command
//   listen = "tcp://0.0.0.0:5171"
//   max-connections = 2048
//   require-client-cert = true
//   trusted-uid = [990, 991]
//
// Values: basic strings ("..." with \" \\ \n \t \uXXXX escapes), literal
// strings ('...'), integers, floats, booleans and one-line arrays of those.
// Keys are bare (letters, digits, '-', '_'); a table appears once, a key once
// per table. Anything else (dotted keys, inline tables, dates, multi-line
// strings) is an error naming its line. Keys are the options of each command
// (`iosonar collect --help`); the flags given on the command line override
// them.
//
// A key ending in "-file" holds the path of a secret: its value is the file's
// content (one line, trailing newline dropped) under the key without "-file"
// (`mysql-file` -> `mysql`). The file must be a regular file readable by its
// owner only (mode 0600 or 0400), else it is refused; the value is never
// printed.
#pragma once
#include <string>
#include <vector>

#include "core/base/status.h"

namespace iosonar {

struct ConfigEntry {
  std::string table;                 // "" = top level
  std::string key;                   // as written ("max-connections")
  std::vector<std::string> values;   // one for a scalar, one per element of an array
  bool is_array = false;
  bool is_secret = false;            // the value came from a "-file" key's file
  int line = 0;
};

struct ConfigFile {
  std::string path;
  std::vector<ConfigEntry> entries;  // in file order
  std::vector<std::string> tables;   // tables in file order

  // "PATH:LINE: " for messages about an entry.
  std::string Where(const ConfigEntry& e) const { return path + ":" + std::to_string(e.line) + ": "; }
};

// Parses TEXT (read from PATH, named in messages). Errors: "PATH:LINE: what".
Result<ConfigFile> ParseConfigText(const std::string& text, const std::string& path);

// Reads and parses PATH, then resolves "-file" keys (their files' permissions
// checked). Errors name the file and line.
Result<ConfigFile> LoadConfigFile(const std::string& path);

// True when PATH names a file of this format (it ends in ".toml"); other
// names are the older `key = value` files (ResolveSetting in cli/).
bool IsTomlConfigPath(const std::string& path);

// Normalizes a key for matching an option name: '_' -> '-'.
std::string ConfigKeyToOption(const std::string& key);

}  // namespace iosonar
