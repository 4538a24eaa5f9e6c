// The Lustre exporter's read watchdog, with a read function of the test's
// (an injected ReadFn that waits on the test's latch: the integration test in
// test_exporter_sources.cc blocks a real read inside the kernel instead).
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <string>

#include "exporters/lustre/read_watchdog.h"
#include "test/testutil/testutil.h"

using iosonar::lustre::ReadWatchdog;

TEST_CASE("read watchdog: a read past its deadline is abandoned, its path skipped until it returns, threads bounded",
          "[lustre][watchdog]") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int calls = 0;
  ReadWatchdog wd(
      [&](const std::string& path, std::string* buf, size_t* len, int64_t, std::string*, bool*) {
        {
          std::unique_lock lk(mu);
          ++calls;
          if (path.starts_with("hang")) cv.wait(lk, [&] { return release; });
        }
        *buf = "text of " + path;
        *len = buf->size();
        return true;
      },
      100, 2);
  std::string buf, err;
  size_t len = 0;
  bool vanished = false;
  CHECK(wd.Read("ok1", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kOk);
  CHECK(buf.substr(0, len) == "text of ok1");
  CHECK(wd.Read("hang1", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kTimedOut);
  CHECK(err == "hang1: the read did not return within 100 ms (blocked in the kernel?): abandoned for this sample, "
               "not read again until it returns");
  CHECK(wd.Read("hang1", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kStillStuck);  // not started again
  CHECK(wd.Read("ok2", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kOk);  // a new reader thread
  CHECK(buf.substr(0, len) == "text of ok2");
  CHECK(wd.Read("hang2", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kTimedOut);
  CHECK(wd.stuck() == 2);
  // The bound (2 stuck threads): nothing more is started, not even a healthy file.
  CHECK(wd.Read("ok3", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kTooManyStuck);
  CHECK(err.find("2 reads are blocked (the bound of reader threads)") != std::string::npos);
  {
    std::lock_guard lk(mu);
    CHECK(calls == 4);  // ok1, hang1, ok2, hang2
    release = true;
  }
  cv.notify_all();
  REQUIRE(iosonar::test::WaitUntil([&] { return wd.stuck() == 0; }, 10000));
  CHECK(wd.Read("hang1", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kOk);  // read again once returned
  CHECK(wd.Read("ok3", &buf, &len, 1 << 20, &err, &vanished) == ReadWatchdog::kOk);
  CHECK(buf.substr(0, len) == "text of ok3");
}
