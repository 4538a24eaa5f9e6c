// Allocation-free JSON line builder over a caller-owned char buffer.
// Used on paths that must not allocate (the LD_PRELOAD tracer's flush) and by
// JsonWriter. Not thread-safe; one builder per buffer. On overflow the builder
// marks itself failed and stops writing; the caller checks ok().
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/records/fields.h"

namespace iosonar {

class JsonLine {
 public:
  JsonLine(char* buf, size_t cap) : buf_(buf), cap_(cap) {}
  void Begin() { Raw("{", 1); first_ = true; }
  void End() { Raw("}\n", 2); }
  // Keys are field ids (core/records/fields.h): the name comes pre-rendered
  // with its quotes and colon, and for an id known at compile time (the
  // field::k... constants) the copy has a compile-time length once inlined.
  __attribute__((always_inline)) void Key(FieldId k) {
    const std::string_view key = k.key();  // "name":
    if (len_ + key.size() + 1 > cap_) {
      failed_ = true;
      return;
    }
    char* p = buf_ + len_;
    if (!first_) *p++ = ',';
    first_ = false;
    memcpy(p, key.data(), key.size());
    p += key.size();
    len_ = static_cast<size_t>(p - buf_);
  }
  void Str(const char* s, size_t n);
  void Str(const char* s) { Str(s, strlen(s)); }
  void Str(std::string_view s) { Str(s.data(), s.size()); }
  void Int(int64_t v);
  void Uint(uint64_t v);
  void Bool(bool b) { b ? Raw("true", 4) : Raw("false", 5); }
  // @timestamp format: 2026-11-22T07:09:12.123Z from ns since the epoch.
  void IsoMillis(int64_t epoch_ns);
  __attribute__((always_inline)) void KStr(FieldId k, const char* s) { Key(k); Str(s); }
  __attribute__((always_inline)) void KStr(FieldId k, const char* s, size_t n) { Key(k); Str(s, n); }
  __attribute__((always_inline)) void KStr(FieldId k, std::string_view s) { Key(k); Str(s.data(), s.size()); }
  __attribute__((always_inline)) void KInt(FieldId k, int64_t v) { Key(k); Int(v); }
  // Appends bytes as they are (pre-rendered JSON).
  void Raw(const char* s, size_t n) {
    if (len_ + n > cap_) { failed_ = true; return; }
    memcpy(buf_ + len_, s, n);
    len_ += n;
  }
  bool ok() const { return !failed_; }
  size_t size() const { return len_; }
  void Reset() { len_ = 0; failed_ = false; first_ = true; }
  void Truncate(size_t n) { len_ = n; failed_ = false; }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool failed_ = false;
  bool first_ = true;
};

// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
void CivilFromDays(int64_t z, int* y, unsigned* m, unsigned* d);

}  // namespace iosonar
