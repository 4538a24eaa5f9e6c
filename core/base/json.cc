#include "core/base/json.h"

#include <charconv>
#include <cmath>

namespace iosonar {

namespace {
// Length of the valid UTF-8 sequence at s[0..n), or 0 if invalid.
size_t Utf8Len(const unsigned char* s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}
}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  for (size_t i = 0; i < n;) {
    // A run of printable ASCII other than '"' and '\\' (ids, names, numbers:
    // almost everything) is copied in one go.
    size_t j = i;
    while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\') ++j;
    if (j > i) {
      out->append(reinterpret_cast<const char*>(p + i), j - i);
      i = j;
      if (i == n) break;
    }
    unsigned char c = p[i];
    if (c == '"') { out->append("\\\""); ++i; continue; }
    if (c == '\\') { out->append("\\\\"); ++i; continue; }
    if (c < 0x20) {
      switch (c) {
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
      }
      ++i;
      continue;
    }
    size_t len = Utf8Len(p + i, n - i);
    if (len == 0) {
      out->append("\\ufffd");
      ++i;
      continue;
    }
    out->append(reinterpret_cast<const char*>(p + i), len);
    i += len;
  }
  out->push_back('"');
}

void JsonWriter::Newline() {
  if (!indent_) return;
  out_->push_back('\n');
  out_->append(first_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::Sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back()) out_->push_back(',');
  first_.back() = false;
  Newline();
}

void JsonWriter::Open(char c) {
  Sep();
  out_->push_back(c);
  first_.push_back(true);
}

void JsonWriter::Close(char c) {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  out_->push_back(c);
}

void JsonWriter::Key(std::string_view k) {
  Sep();
  AppendJsonString(out_, k);
  out_->append(indent_ ? ": " : ":");
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  Sep();
  AppendJsonString(out_, s);
}

void JsonWriter::Int(int64_t v) {
  Sep();
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  out_->append(b, r.ptr);
}

void JsonWriter::Double(double v) {
  Sep();
  if (!std::isfinite(v)) {
    out_->append("null");
    return;
  }
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  out_->append(b, r.ptr);
}

void JsonWriter::Bool(bool b) {
  Sep();
  out_->append(b ? "true" : "false");
}

void JsonWriter::Null() {
  Sep();
  out_->append("null");
}

}  // namespace iosonar
