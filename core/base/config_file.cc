#include "core/base/config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace iosonar {
namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

void AppendUtf8(std::string* out, unsigned cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A cursor over one line (the file's lines are parsed one at a time: no
// multi-line values in this subset).
struct Cursor {
  const std::string& s;
  size_t i = 0;
  void SkipSpace() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  bool AtEndOrComment() {
    SkipSpace();
    return i >= s.size() || s[i] == '#';
  }
};

// One scalar at c.i: its text as the options parser takes it.
Result<std::string> ParseScalar(Cursor& c) {
  const std::string& s = c.s;
  if (c.i >= s.size()) return Status::Invalid("a value is missing");
  char q = s[c.i];
  if (q == '"') {
    if (s.compare(c.i, 3, "\"\"\"") == 0) return Status::Invalid("multi-line strings are not supported");
    std::string out;
    for (size_t j = c.i + 1; j < s.size(); ++j) {
      char ch = s[j];
      if (ch == '"') {
        c.i = j + 1;
        return out;
      }
      if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') return Status::Invalid("control character in a string");
      if (ch != '\\') {
        out.push_back(ch);
        continue;
      }
      if (++j >= s.size()) break;
      switch (s[j]) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'u':
        case 'U': {
          size_t n = s[j] == 'u' ? 4 : 8;
          if (j + n >= s.size()) return Status::Invalid("a \\u escape is cut short");
          unsigned cp = 0;
          for (size_t k = 1; k <= n; ++k) {
            char h = s[j + k];
            int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (v < 0) return Status::Invalid("a \\u escape needs hexadecimal digits");
            cp = cp * 16 + static_cast<unsigned>(v);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return Status::Invalid("a \\u escape names no character");
          AppendUtf8(&out, cp);
          j += n;
          break;
        }
        default: return Status::Invalid(std::string("unknown escape \\") + s[j] + " in a string");
      }
    }
    return Status::Invalid("a string is not closed (no '\"' before the end of the line)");
  }
  if (q == '\'') {
    if (s.compare(c.i, 3, "'''") == 0) return Status::Invalid("multi-line strings are not supported");
    size_t end = s.find('\'', c.i + 1);
    if (end == std::string::npos) return Status::Invalid("a string is not closed (no ' before the end of the line)");
    std::string out = s.substr(c.i + 1, end - c.i - 1);
    c.i = end + 1;
    return out;
  }
  if (q == '{') return Status::Invalid("inline tables are not supported");
  // true, false, or a number: a run of [A-Za-z0-9_+.-]
  size_t j = c.i;
  while (j < s.size() && (IsBareKeyChar(s[j]) || s[j] == '+' || s[j] == '.')) ++j;
  std::string word = s.substr(c.i, j - c.i);
  if (word.empty()) return Status::Invalid(std::string("'") + q + "' cannot start a value (strings are quoted)");
  if (word == "true" || word == "false") {
    c.i = j;
    return word;
  }
  // Integers (decimal, '_' between digits) and floats (decimal point and/or exponent).
  std::string digits;
  bool ok = true, seen_digit = false, seen_dot = false, seen_exp = false;
  for (size_t k = 0; k < word.size() && ok; ++k) {
    char ch = word[k];
    if (ch >= '0' && ch <= '9') {
      digits.push_back(ch);
      seen_digit = true;
    } else if ((ch == '+' || ch == '-') && (k == 0 || word[k - 1] == 'e' || word[k - 1] == 'E')) {
      digits.push_back(ch);
    } else if (ch == '_' && k > 0 && k + 1 < word.size() && std::isdigit(static_cast<unsigned char>(word[k - 1])) &&
               std::isdigit(static_cast<unsigned char>(word[k + 1]))) {
      // digit separator
    } else if (ch == '.' && !seen_dot && !seen_exp && seen_digit && k + 1 < word.size() &&
               std::isdigit(static_cast<unsigned char>(word[k + 1]))) {
      digits.push_back(ch);
      seen_dot = true;
    } else if ((ch == 'e' || ch == 'E') && !seen_exp && seen_digit) {
      digits.push_back(ch);
      seen_exp = true;
      seen_digit = false;
    } else {
      ok = false;
    }
  }
  if (!ok || !seen_digit)
    return Status::Invalid("'" + word + "' is not a value (strings are quoted: \"" + word + "\")");
  c.i = j;
  return digits;
}

Status ParseLine(const std::string& line, std::string* table, ConfigFile* cf, std::set<std::string>* keys,
                 std::set<std::string>* tables, int lineno) {
  Cursor c{line};
  if (c.AtEndOrComment()) return Status::Ok();
  if (line[c.i] == '[') {
    if (c.i + 1 < line.size() && line[c.i + 1] == '[') return Status::Invalid("arrays of tables ([[...]]) are not supported");
    size_t j = c.i + 1;
    while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
    size_t b = j;
    while (j < line.size() && IsBareKeyChar(line[j])) ++j;
    std::string name = line.substr(b, j - b);
    while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
    if (name.empty() || j >= line.size() || line[j] != ']')
      return Status::Invalid("a table header is [name] with a bare name (letters, digits, '-', '_')");
    c.i = j + 1;
    if (!c.AtEndOrComment()) return Status::Invalid("text after the table header");
    if (!tables->insert(name).second) return Status::Invalid("table [" + name + "] appears twice");
    *table = name;
    cf->tables.push_back(name);
    return Status::Ok();
  }
  size_t b = c.i;
  while (c.i < line.size() && IsBareKeyChar(line[c.i])) ++c.i;
  std::string key = line.substr(b, c.i - b);
  if (key.empty()) {
    if (line[b] == '"' || line[b] == '\'') return Status::Invalid("quoted keys are not supported");
    return Status::Invalid(std::string("a line is `key = value`, a [table] or a comment; '") + line[b] + "' starts none");
  }
  c.SkipSpace();
  if (c.i < line.size() && line[c.i] == '.') return Status::Invalid("dotted keys are not supported ('" + key + ".')");
  if (c.i >= line.size() || line[c.i] != '=') return Status::Invalid("'" + key + "' has no '= value'");
  ++c.i;
  c.SkipSpace();
  ConfigEntry e;
  e.table = *table;
  e.key = key;
  e.line = lineno;
  if (c.i < line.size() && line[c.i] == '[') {
    e.is_array = true;
    ++c.i;
    for (;;) {
      c.SkipSpace();
      if (c.i < line.size() && line[c.i] == ']') {
        ++c.i;
        break;
      }
      if (c.i >= line.size() || line[c.i] == '#')
        return Status::Invalid("'" + key + "': an array is not closed on its line (one-line arrays only)");
      if (line[c.i] == '[') return Status::Invalid("'" + key + "': nested arrays are not supported");
      auto v = ParseScalar(c);
      if (!v.ok()) return Status::Invalid("'" + key + "': " + v.status().message());
      e.values.push_back(std::move(*v));
      c.SkipSpace();
      if (c.i < line.size() && line[c.i] == ',') {
        ++c.i;
        continue;
      }
      c.SkipSpace();
      if (c.i < line.size() && line[c.i] == ']') continue;
      return Status::Invalid("'" + key + "': array elements are separated by ','");
    }
  } else {
    auto v = ParseScalar(c);
    if (!v.ok()) return Status::Invalid("'" + key + "': " + v.status().message());
    e.values.push_back(std::move(*v));
  }
  if (!c.AtEndOrComment()) return Status::Invalid("'" + key + "': text after the value");
  std::string id = *table + "\n" + ConfigKeyToOption(key);
  if (!keys->insert(id).second)
    return Status::Invalid("'" + key + "' is set twice" + (table->empty() ? std::string(" at the top level") : " in [" + *table + "]"));
  cf->entries.push_back(std::move(e));
  return Status::Ok();
}

}  // namespace

std::string ConfigKeyToOption(const std::string& key) {
  std::string k = key;
  for (char& ch : k)
    if (ch == '_') ch = '-';
  return k;
}

bool IsTomlConfigPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
}

Result<ConfigFile> ParseConfigText(const std::string& text, const std::string& path) {
  ConfigFile cf;
  cf.path = path;
  std::string table;
  std::set<std::string> keys, tables;
  size_t pos = 0;
  int lineno = 0;
  if (text.find('\0') != std::string::npos) return Status::Invalid(path + ": a NUL byte: not a text file");
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++lineno;
    if (Status s = ParseLine(line, &table, &cf, &keys, &tables, lineno); !s.ok())
      return Status::Invalid(path + ":" + std::to_string(lineno) + ": " + s.message());
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return cf;
}

Result<ConfigFile> LoadConfigFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io(path + ": cannot read the configuration file: " + std::strerror(errno));
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Status::Io(path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) {
      close(fd);
      return Status::Invalid(path + ": larger than 1 MiB: not a configuration file");
    }
  }
  close(fd);
  auto cf = ParseConfigText(text, path);
  if (!cf.ok()) return cf;
  // "-file" keys: the secret's file, readable by its owner only.
  for (ConfigEntry& e : cf->entries) {
    std::string k = ConfigKeyToOption(e.key);
    if (k.size() <= 5 || k.compare(k.size() - 5, 5, "-file") != 0) continue;
    // Options that are themselves paths (tls-key-file does not exist, but
    // e.g. "ca-file" of Elasticsearch) keep their meaning: only keys whose
    // option name without "-file" is a secret-bearing setting are resolved.
    static const char* const kSecretKeys[] = {"mysql", "redis", "es-api-key", "es-password", "output", "smtp"};
    std::string base = k.substr(0, k.size() - 5);
    bool secret = false;
    for (const char* s : kSecretKeys) secret = secret || base == s;
    if (!secret) continue;
    std::string where = cf->Where(e) + "'" + e.key + "': ";
    if (e.is_array || e.values.size() != 1) return Status::Invalid(where + "a secret's file is one path");
    const std::string& f = e.values[0];
    int sfd = open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (sfd < 0) return Status::Io(where + "cannot read " + f + ": " + std::strerror(errno));
    struct stat st{};
    if (fstat(sfd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(sfd);
      return Status::Invalid(where + f + " is not a regular file");
    }
    if ((st.st_mode & 077) != 0) {
      close(sfd);
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return Status::Invalid(where + f + " is readable by others than its owner (mode " + mode +
                             "): chmod 0600 it, owned by the service's user");
    }
    std::string secret_text;
    for (;;) {
      ssize_t n = read(sfd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      secret_text.append(buf, static_cast<size_t>(n));
      if (secret_text.size() > 65536) break;
    }
    close(sfd);
    while (!secret_text.empty() && (secret_text.back() == '\n' || secret_text.back() == '\r')) secret_text.pop_back();
    if (secret_text.empty()) return Status::Invalid(where + f + " is empty");
    if (secret_text.find('\n') != std::string::npos) return Status::Invalid(where + f + " has more than one line");
    e.key = base;
    e.values = {secret_text};
    e.is_secret = true;
  }
  // A secret key and its plain key both set: ambiguous.
  for (size_t a = 0; a < cf->entries.size(); ++a)
    for (size_t b = a + 1; b < cf->entries.size(); ++b)
      if (cf->entries[a].table == cf->entries[b].table &&
          ConfigKeyToOption(cf->entries[a].key) == ConfigKeyToOption(cf->entries[b].key))
        return Status::Invalid(cf->Where(cf->entries[b]) + "'" + cf->entries[b].key +
                               "' is set twice (once through its -file key)");
  return cf;
}

}  // namespace iosonar
