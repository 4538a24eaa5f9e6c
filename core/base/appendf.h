// printf into a std::string (appended).
#pragma once
#include <cstdarg>
#include <cstdio>
#include <string>

namespace iosonar {

[[gnu::format(printf, 2, 3)]] inline void Appendf(std::string* out, const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    const size_t at = out->size();
    out->resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(out->data() + at, static_cast<size_t>(n) + 1, fmt, ap2);
    out->resize(at + static_cast<size_t>(n));
  }
  va_end(ap2);
}

}  // namespace iosonar
