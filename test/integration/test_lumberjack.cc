// Acknowledged delivery end to end: a Lumberjack v2 (Beats) sender and the
// collector. The collector acknowledges an event only once it is stored, the
// sender keeps every record until acknowledged (spooling it while the
// receiver is away), so a collector killed with SIGKILL mid-stream loses
// nothing and stores nothing twice.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/transport/lumberjack_sender.h"
#include "test/integration/lumberjack_util.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

TEST_CASE("lumberjack: every record acknowledged once stored, and JSON lines on the same port still work",
          "[lumberjack][collector]") {
  TempDir tmp;
  const int port = FreePort();
  Child c({IosonarBin(), "collect", "--store", tmp / "st", "--listen", "tcp://127.0.0.1:" + std::to_string(port)}, {},
          tmp / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  // zlib 'C' frames (compression_level 3, the default, as Filebeat's) and plain JSON frames (0).
  const int level = GENERATE(3, 0);
  INFO("compression_level " << level);
  LumberjackSender s;
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = std::to_string(port);
  o.window = 500;
  o.compression_level = level;
  REQUIRE(s.Init(o).ok());
  size_t json_bytes = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string lines = TraceLines("n1", i * 1000, 1000);
    json_bytes += lines.size();
    REQUIRE(s.Send(lines).ok());
  }
  REQUIRE(s.Flush().ok());
  CHECK(s.counters().acked == 10000);
  CHECK(s.counters().windows == 20);
  CHECK(s.counters().dropped == 0);
  CHECK(s.counters().spooled == 0);
  if (level == 0) {
    CHECK(s.counters().compressed_frames == 0);
    CHECK(s.counters().bytes_sent == 20 * 6 + 10000 * 10 + json_bytes - 10000);  // frames as they are
  } else {
    CHECK(s.counters().compressed_frames == 20);  // one per window (each ~190 KB inflated)
    CHECK(s.counters().bytes_sent * 10 < json_bytes);  // these records compress more than 10:1
  }
  // A JSON-lines sender beside it.
  int fd = ConnectLoopback(port);
  REQUIRE(fd >= 0);
  SendAll(fd, TraceLines("n1", 10000, 100));
  close(fd);
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect.log");
  INFO(log);
  CHECK(log.find("stored 10100,") != std::string::npos);
  CHECK(StoredRecords(tmp / "st") == 10100);
}

TEST_CASE("lumberjack: collector killed with SIGKILL mid-stream and restarted: 0 lost, 0 stored twice, counts true",
          "[lumberjack][collector]") {
  TempDir tmp;
  const int port = FreePort();
  const std::vector<std::string> argv = {IosonarBin(), "collect", "--store", tmp / "st", "--listen",
                                         "tcp://127.0.0.1:" + std::to_string(port)};
  auto c = std::make_unique<Child>(argv, std::map<std::string, std::string>{}, tmp / "collect1.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  REQUIRE(mkdir((tmp / "spool").c_str(), 0700) == 0);
  LumberjackSender s;
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = std::to_string(port);
  o.window = 256;
  o.spool_dir = tmp / "spool";
  o.retry_interval_ms = 50;
  o.ack_timeout_ms = 2000;
  o.compression_level = GENERATE(3, 0);  // compressed windows (the default), and plain
  INFO("compression_level " << o.compression_level);
  REQUIRE(s.Init(o).ok());
  const int n = 30000;
  SendThroughCollectorKill(s, c, argv, tmp.path(), port, n);
  CHECK(s.counters().resent == s.counters().spooled);
  CHECK(s.counters().failures > 0);
  CHECK((s.counters().compressed_frames > 0) == (o.compression_level > 0));
  REQUIRE(ExitCode(c->Stop(30000)) == 0);
  CHECK(StoredRecords(tmp / "st") == static_cast<size_t>(n));  // none lost, none twice
  // The spool holds nothing once everything is acknowledged (the sender's own
  // file is emptied now and removed when the sender ends).
  auto bytes = Run({"/bin/sh", "-c", "cat '" + tmp / "spool" + "'/* 2>/dev/null | wc -c"});
  CHECK(bytes.out == "0\n");
}

TEST_CASE("lumberjack: a compressed frame inflating past the collector's max-buffer-bytes bound is refused, the sender's "
          "cut at a smaller bound goes through",
          "[lumberjack][collector]") {
  TempDir tmp;
  const int port = FreePort();
  // A 2 MB bound; one window of 8,000 records is ~3.6 MB of frames.
  Child c({IosonarBin(), "collect", "--store", tmp / "st", "--listen", "tcp://127.0.0.1:" + std::to_string(port),
           "--max-buffer-bytes", "2000000"},
          {}, tmp / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto deliver = [&](size_t cut, int from) {
    LumberjackSender s;
    LumberjackSender::Options o;
    o.host = "127.0.0.1";
    o.port = std::to_string(port);
    o.window = 8000;
    o.ack_timeout_ms = 5000;
    o.compress_max_inflated = cut;
    REQUIRE(s.Init(o).ok());
    (void)s.Send(TraceLines("n1", from, 8000));
    (void)s.Flush();
    return s.counters();
  };
  auto whole = deliver(size_t{4} << 20, 0);  // one 'C' frame for the window: past the bound
  CHECK(whole.compressed_frames == 1);
  CHECK(whole.acked == 0);
  CHECK(whole.dropped == 8000);  // no spool here: counted, not lost silently
  auto cut = deliver(size_t{1} << 20, 100000);  // frames of <= 1 MiB
  CHECK(cut.compressed_frames >= 3);
  CHECK(cut.acked == 8000);
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  CHECK(StoredRecords(tmp / "st") == 8000);
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  INFO(dl);
  CHECK(dl.find("a compressed frame inflates past 2000000 bytes") != std::string::npos);
}

TEST_CASE("lumberjack: a spool directory another user could write to is refused", "[lumberjack]") {
  TempDir tmp;
  REQUIRE(mkdir((tmp / "open").c_str(), 0777) == 0);
  REQUIRE(chmod((tmp / "open").c_str(), 0777) == 0);
  LumberjackSender s;
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = "1";
  o.spool_dir = tmp / "open";
  CHECK(s.Init(o).message() == "spool directory " + tmp / "open" +
                                   ": writable by others (mode 777): refusing to use it (chmod 700)");
  REQUIRE(symlink((tmp / "open").c_str(), (tmp / "link").c_str()) == 0);
  o.spool_dir = tmp / "link";
  CHECK(s.Init(o).message().find("not a directory (a symbolic link is not followed)") != std::string::npos);
}
