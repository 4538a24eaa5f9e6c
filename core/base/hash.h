// FNV-1a (64-bit) for the analyses: stable ids of files, seeds, and the
// event.stream of result records (the same result resent gets the same
// (event.stream, event.seq), so the stores drop the copy; a different result
// gets a different stream).
#pragma once
#include <cstdint>
#include <string_view>

namespace iosonar::analysis {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

inline uint64_t Fnv1a(std::string_view s, uint64_t h = kFnvOffset) {
  for (unsigned char c : s) h = (h ^ c) * kFnvPrime;
  return h;
}

// Hashes a sequence of parts, each closed by a separator byte, so ("ab", "c")
// and ("a", "bc") differ. Id() is non-negative (event.stream is a signed long).
class StreamHash {
 public:
  StreamHash& Add(std::string_view part) {
    h_ = Fnv1a(part, h_);
    h_ = (h_ ^ 0xffu) * kFnvPrime;
    return *this;
  }
  uint64_t Value() const { return h_; }
  int64_t Id() const { return static_cast<int64_t>(h_ & 0x7fffffffffffffffull); }

 private:
  uint64_t h_ = kFnvOffset;
};

}  // namespace iosonar::analysis
