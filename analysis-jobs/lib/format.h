// Small text formatting shared by the analysis jobs' tables.
#pragma once
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>

#include "core/base/hash.h"

namespace iosonar::analysis::format {

// Bytes with a binary unit and one decimal ("512 B", "1.5 GiB").
inline std::string Bytes1(double b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t u = 0;
  while (b >= 1024 && u + 1 < std::size(kUnits)) {
    b /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, kUnits[u]);
  return buf;
}

// s without leading and trailing blanks, tabs and carriage returns.
inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// 16 lowercase hex digits.
inline std::string Hex16(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, h);
  return b;
}

// The file.id the tracer gives a file: 16 hex digits of FNV-1a-64 over its
// absolute path (the schema's definition).
inline std::string FileIdOf(std::string_view path) { return Hex16(Fnv1a(path)); }

}  // namespace iosonar::analysis::format
