// FNV-1a (64-bit), the one implementation: stable ids of files (the tracer's
// file.id, compress2), seeds (the simulator), imported streams (the LMT
// importer) and the event.stream of result records (analysis-jobs/lib/
// result_record.h: the same result resent gets the same (event.stream,
// event.seq), so the stores drop the copy; a different result gets a
// different stream).
//
// Header-only and constexpr, with no allocation, exceptions or library calls,
// so the preloaded tracer can use it without the C++ runtime.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace iosonar {

inline constexpr uint64_t kFnvOffset = 14695981039346656037ull;
inline constexpr uint64_t kFnvPrime = 1099511628211ull;

constexpr uint64_t Fnv1a(const char* p, size_t n, uint64_t h = kFnvOffset) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * kFnvPrime;
  return h;
}
constexpr uint64_t Fnv1a(std::string_view s, uint64_t h = kFnvOffset) { return Fnv1a(s.data(), s.size(), h); }

// Hashes a sequence of parts, each closed by a separator byte, so ("ab", "c")
// and ("a", "bc") differ. Id() is non-negative (event.stream is a signed long).
class StreamHash {
 public:
  constexpr StreamHash& Add(std::string_view part) {
    h_ = Fnv1a(part, h_);
    h_ = (h_ ^ 0xffu) * kFnvPrime;
    return *this;
  }
  constexpr uint64_t Value() const { return h_; }
  constexpr int64_t Id() const { return static_cast<int64_t>(h_ & 0x7fffffffffffffffull); }

 private:
  uint64_t h_ = kFnvOffset;
};

static_assert(Fnv1a("") == kFnvOffset);
static_assert(Fnv1a("a") == 0xaf63dc4c8601ec8cull);  // the published FNV-1a-64 test vector

}  // namespace iosonar
