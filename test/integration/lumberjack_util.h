// Shared by the Lumberjack tests over plain TCP and over TLS: the records
// they send, the count the store ends with, and the run that kills the
// collector with SIGKILL mid-stream and restarts it.
#pragma once
#include <signal.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/transport/lumberjack_sender.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {

// n iosonar.trace lines of host, event.seq from `from` on (4 KiB writes).
inline std::string TraceLines(const std::string& host, int from, int n) {
  std::string out;
  for (int i = from; i < from + n; ++i)
    out += "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":9,"
           "\"event.seq\":" + std::to_string(i) + ",\"host.name\":\"" + host + "\",\"job.id\":\"7\",\"process.pid\":1,"
           "\"process.tid\":1,\"io.op\":\"write\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/out\",\"io.fd\":3,"
           "\"io.offset\":" + std::to_string(int64_t{i} * 4096) + ",\"io.size\":4096,\"io.count\":1,\"io.bytes\":4096,"
           "\"event.start_ns\":1,\"event.end_ns\":2,\"io.duration_ns\":1}\n";
  return out;
}

// The records in an embedded store (store-export's lines).
inline size_t StoredRecords(const std::string& store) {
  auto exp = Run({IosonarBin(), "store-export", "--store", store});
  REQUIRE(exp.exit_code == 0);
  size_t n = 0;
  for (char ch : exp.out) n += ch == '\n';
  return n;
}

// Sends n records of host n1 in chunks of 100 through s while the collector
// (*c, started from argv, listening on port) is killed with SIGKILL from
// another thread once 8,000 were handed over (so the kill lands at any point
// of a window), and restarted (log DIR/collect2.log) after 16,000; then waits
// until everything is acknowledged and nothing is left in the spool.
inline void SendThroughCollectorKill(LumberjackSender& s, std::unique_ptr<Child>& c, const std::vector<std::string>& argv,
                                     const std::string& dir, int port, int n) {
  const int chunk = 100;
  bool killed = false, restarted = false;
  std::atomic<int> handed{0};
  const pid_t first = c->pid();
  std::thread killer([&] {
    if (WaitUntil([&] { return handed.load() >= 8000; }, 60000)) kill(first, SIGKILL);  // (no REQUIRE off the test's thread)
  });
  for (int i = 0; i < n; i += chunk) {
    (void)s.Send(TraceLines("n1", i, chunk));
    handed = i + chunk;
    if (!killed && i >= 12000) {
      killer.join();
      c->Stop(5000);  // reaps it
      killed = true;
    }
    if (killed && !restarted && i >= 16000) {
      CHECK(s.counters().spooled > 0);  // the sender kept them while the collector was away
      c = std::make_unique<Child>(argv, std::map<std::string, std::string>{}, dir + "/collect2.log");
      REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
      restarted = true;
    }
  }
  if (killer.joinable()) killer.join();
  REQUIRE(WaitUntil([&] { return s.Flush().ok() && s.spooled_pending() == 0; }, 30000));
  INFO("acked " << s.counters().acked << " resent " << s.counters().resent << " spooled " << s.counters().spooled
                << " dropped " << s.counters().dropped << " failures " << s.counters().failures);
  CHECK(s.counters().dropped == 0);
  CHECK(s.counters().acked == static_cast<uint64_t>(n));  // each record acknowledged exactly once
  CHECK(s.counters().failures > 0);
}

}  // namespace iosonar::test
