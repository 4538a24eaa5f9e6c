// The one retry policy (core/transport/backoff.h): doubling from the initial
// delay to the cap, jitter kept within [delay/2, delay], and the skip-while-down
// state the collector uses for Redis and forwarding.
#include <catch2/catch.hpp>
#include <random>

#include "core/transport/backoff.h"

using iosonar::Backoff;

TEST_CASE("backoff doubles from the initial delay up to the cap", "[backoff]") {
  constexpr Backoff b(1000, 30000);
  CHECK(b.Delay(0) == 1000);
  CHECK(b.Delay(1) == 2000);
  CHECK(b.Delay(4) == 16000);
  CHECK(b.Delay(5) == 30000);  // 32000 capped
  CHECK(b.Delay(200) == 30000);  // no overflow however many failures
  CHECK(Backoff(0, 100).Delay(3) == 0);
  CHECK(Backoff(100, 100).Delay(3) == 100);
}

TEST_CASE("jittered backoff stays within [delay/2, delay] and varies", "[backoff]") {
  const Backoff b(100, 10000);
  std::mt19937_64 rng(42);
  bool varied = false;
  int64_t first = b.JitteredDelay(3, rng);
  for (int i = 0; i < 200; ++i) {
    const int64_t d = b.JitteredDelay(3, rng);
    CHECK(d >= 400);
    CHECK(d <= 800);
    varied |= d != first;
  }
  CHECK(varied);
  CHECK(Backoff(0, 100).JitteredDelay(2, rng) == 0);
}

TEST_CASE("a down destination is skipped for 1, 2, 4 ... delays and tried again after a success", "[backoff]") {
  Backoff b(10, 35);
  CHECK(b.Due(0));
  b.Failed(100);
  CHECK_FALSE(b.Due(109));
  CHECK(b.Due(110));
  b.Failed(110);
  CHECK_FALSE(b.Due(129));
  CHECK(b.Due(130));
  b.Failed(130);
  CHECK(b.Due(170));
  b.Failed(170);  // 80 capped to 35
  CHECK_FALSE(b.Due(204));
  CHECK(b.Due(205));
  b.Succeeded();
  b.Failed(300);  // the doubling starts over
  CHECK_FALSE(b.Due(309));
  CHECK(b.Due(310));
}
