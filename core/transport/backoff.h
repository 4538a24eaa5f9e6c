// The retry policy every destination that can be down shares (the
// collector's Redis push and forwarding, the Elasticsearch client): after the
// n-th failure in a row (n = 0 for the first) wait initial * 2^n, at most max.
// Units are the caller's (ns, ms).
//
// Two ways to use it:
//  - a loop that retries one request: sleep Delay(attempt) or, so the retries
//    of many clients spread out, JitteredDelay(attempt, rng);
//  - a destination skipped while it is down, so its retries never stall the
//    caller: Due(now) before trying, Failed(now) after a failure,
//    Succeeded() after a success.
// Not thread-safe: one owner.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>

namespace iosonar {

class Backoff {
 public:
  constexpr Backoff(int64_t initial, int64_t max) : initial_(initial), max_(max) {}

  // initial * 2^n, at most max; 0 when initial <= 0.
  constexpr int64_t Delay(int n) const {
    if (initial_ <= 0) return 0;
    int64_t d = initial_;
    for (int i = 0; i < n && d < max_; ++i) d *= 2;
    return std::min(d, max_);
  }
  // Full jitter, kept at least half the delay: uniform in [Delay/2, Delay],
  // so retries spread out but each still waits a meaningful time.
  template <class Rng>
  int64_t JitteredDelay(int n, Rng& rng) const {
    const int64_t d = Delay(n);
    if (d <= 0) return 0;
    return std::uniform_int_distribution<int64_t>(d / 2, d)(rng);
  }

  bool Due(int64_t now) const { return now >= next_; }
  void Failed(int64_t now) {
    next_ = now + Delay(failures_);
    if (failures_ < 62) ++failures_;
  }
  void Succeeded() { failures_ = 0; }

 private:
  int64_t initial_, max_;
  int failures_ = 0;
  int64_t next_ = 0;
};

}  // namespace iosonar
