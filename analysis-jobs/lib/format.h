// Small text formatting shared by the analysis jobs' tables.
#pragma once
#include <cstdio>
#include <iterator>
#include <string>

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

}  // namespace iosonar::analysis::format
