// `iosonar collect --auth munge` against peers that connect and say nothing,
// or say garbage (issue 39): 1,024 silent connections used to hold every
// slot, and an authenticated sender got 0 of 2,004 records acknowledged.
// Connection hygiene (a handshake deadline, a limit of connections in their
// handshake per address, the oldest of them closed to make room, idle and
// per-uid limits) keeps the real sender's records all acknowledged, counted
// in the statistics, with the collector's RSS under its documented bound.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <regex>
#include <thread>

#include <zlib.h>

#include "core/base/timeutil.h"
#include "core/transport/lumberjack_sender.h"
#include "test/testutil/golden.h"
#include "test/testutil/munge_daemon.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

// A connection to 127.0.0.1:port from the loopback address 127.0.0.src (-1 if refused).
int ConnectFrom(int src, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000000u | static_cast<uint32_t>(src));
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(0x7f000001u);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string Record(int seq) {
  return "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":39,"
         "\"event.seq\":" + std::to_string(seq) + ",\"host.name\":\"n1\",\"job.id\":\"7\",\"process.pid\":1,"
         "\"process.tid\":1,\"io.op\":\"write\",\"io.layer\":\"posix\",\"io.count\":1,\"io.bytes\":4096,"
         "\"event.start_ns\":1,\"event.end_ns\":2,\"io.duration_ns\":1}\n";
}

size_t StoredTrace(const std::string& store) {
  auto exp = Run({IosonarBin(), "store-export", "--store", store, "--dataset", "iosonar.trace"});
  REQUIRE(exp.exit_code == 0);
  return static_cast<size_t>(Count(exp.out, "\n"));
}

long RssKiB(pid_t pid) {
  const std::string st = ReadFile("/proc/" + std::to_string(pid) + "/status");
  auto at = st.find("VmHWM:");  // the peak
  return at == std::string::npos ? -1 : std::stol(st.substr(at + 6));
}

uint64_t Stat(const std::string& log, const std::string& name) {
  std::smatch m;
  std::regex re(name + " ([0-9]+)");
  std::string last;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) last = (*it)[1];
  return last.empty() ? UINT64_MAX : std::stoull(last);
}

// The documented bound (docs/collector.md, "Connection hygiene").
constexpr long kRssBoundKiB = 256 * 1024;

struct Collector {
  int port = FreePort();
  std::unique_ptr<Child> c;
  Collector(const MungeDaemon& m, const TempDir& tmp, std::vector<std::string> extra = {}) {
    WriteFile(tmp / "hosts", "127.0.0.1 n1\n");  // where munged says the test's credentials come from
    std::vector<std::string> a = {IosonarBin(), "collect", "--store", tmp / "st", "--listen",
                                  "tcp://127.0.0.1:" + std::to_string(port), "--auth", "munge", "--munge-socket",
                                  m.socket(), "--munge-host-map", tmp / "hosts"};
    a.insert(a.end(), extra.begin(), extra.end());
    c = std::make_unique<Child>(a, std::map<std::string, std::string>{}, tmp / "collect.log");
    REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  }
};

LumberjackSender::Options SenderOptions(int port, const MungeDaemon& m) {
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = std::to_string(port);
  o.munge = true;
  o.munge_socket = m.socket();
  o.auth_host = "n1";
  o.window = 500;
  return o;
}

}  // namespace

TEST_CASE("collector hygiene: 1,024 silent connections do not lock out an authenticated sender",
          "[collector][auth][hygiene]") {
  signal(SIGPIPE, SIG_IGN);
  MungeDaemon m;
  TempDir tmp;
  Collector col(m, tmp, {"--handshake-timeout", "3000"});
  // 1,024 silent peers from 16 addresses (64 each, the per-address limit),
  // and 100 more from one of them (past its limit: closed at once).
  std::vector<int> silent;
  for (int k = 0; k < 1024; ++k) {
    int fd = ConnectFrom(2 + k / 64, col.port);
    REQUIRE(fd >= 0);
    silent.push_back(fd);
  }
  for (int k = 0; k < 100; ++k) {
    int fd = ConnectFrom(2, col.port);
    if (fd >= 0) silent.push_back(fd);
  }
  LumberjackSender s;
  REQUIRE(s.Init(SenderOptions(col.port, m)).ok());
  std::string lines;
  for (int i = 0; i < 2004; ++i) lines += Record(i);
  REQUIRE(s.Send(lines).ok());
  REQUIRE(s.Flush().ok());
  CHECK(s.counters().acked == 2004);
  CHECK(s.counters().failures == 0);
  // Past the deadline the silent ones are closed (the collector's side ends:
  // reads see EOF). The first was closed to make room for the sender; the
  // last one taken in waits for its deadline.
  char b;
  CHECK(WaitUntil([&] { return recv(silent[1023], &b, 1, MSG_DONTWAIT) == 0; }, 10000));
  const long rss = RssKiB(col.c->pid());
  CHECK(rss > 0);
  CHECK(rss < kRssBoundKiB);
  for (int fd : silent) close(fd);
  REQUIRE(ExitCode(col.c->Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect.log");
  INFO(log);
  CHECK(StoredTrace(tmp / "st") == 2004);
  CHECK(Stat(log, "refused at the per-address limit") >= 100);
  CHECK(Stat(log, "evicted in their handshake") >= 1);
  CHECK(Stat(log, "handshake timeouts") >= 900);
}

TEST_CASE("collector hygiene: a stress run of hostile peers (silent, garbage, bad credentials, churning) keeps "
          "a legitimate sender's records all acknowledged",
          "[collector][auth][hygiene][stress]") {
  signal(SIGPIPE, SIG_IGN);
  MungeDaemon m;
  TempDir tmp;
  Collector col(m, tmp, {"--handshake-timeout", "1000", "--max-connections", "256"});
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> opened{0};
  // Four hostile threads, each from its own addresses, for as long as the sender sends (bounded: 60 s).
  std::vector<std::thread> hostile;
  for (int t = 0; t < 4; ++t) {
    hostile.emplace_back([&, t] {
      std::mt19937 rng(39 + t);
      std::vector<int> held;
      const int64_t until = MonotonicNs() + 60ll * 1000000000;
      while (!stop.load() && MonotonicNs() < until) {
        int fd = ConnectFrom(10 + t * 8 + static_cast<int>(rng() % 8), col.port);
        if (fd < 0) continue;
        ++opened;
        switch (rng() % 4) {
          case 0: break;  // silent, held
          case 1: {       // garbage
            std::string g(1 + rng() % 4096, '\0');
            for (auto& ch : g) ch = static_cast<char>(rng());
            (void)!write(fd, g.data(), g.size());
            break;
          }
          case 2: {  // a forged credential line
            const std::string l = "{\"iosonar.auth\":\"munge\",\"credential\":\"MUNGE:AAAA" + std::to_string(rng()) + ":\"}\n";
            (void)!write(fd, l.data(), l.size());
            break;
          }
          case 3:  // a Lumberjack version byte, then nothing
            (void)!write(fd, "2", 1);
            break;
        }
        held.push_back(fd);
        if (held.size() > 200) {
          close(held.front());
          held.erase(held.begin());
        }
      }
      for (int fd : held) close(fd);
    });
  }
  LumberjackSender::Options o = SenderOptions(col.port, m);
  o.spool_dir = tmp / "spool";
  LumberjackSender s;
  REQUIRE(s.Init(o).ok());
  int seq = 0;
  for (int batch = 0; batch < 20; ++batch) {
    std::string lines;
    for (int i = 0; i < 100; ++i) lines += Record(seq++);
    REQUIRE(s.Send(lines).ok());
    REQUIRE(s.Flush().ok());
  }
  // What a closed connection sent to the spool goes again (bounded retries).
  CHECK(WaitUntil([&] {
    (void)s.Flush();  // connects again once its retry interval is over
    return s.spooled_pending() == 0;
  }, 30000));
  const long rss = RssKiB(col.c->pid());
  stop = true;
  for (auto& th : hostile) th.join();
  CHECK(s.spooled_pending() == 0);
  CHECK(s.counters().acked == 2000);
  CHECK(s.counters().dropped == 0);
  CHECK(opened.load() > 200);
  CHECK(rss < kRssBoundKiB);
  REQUIRE(ExitCode(col.c->Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect.log");
  INFO(log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
  CHECK(StoredTrace(tmp / "st") == 2000);
  // The churn evicts connections in their handshake before any deadline; each counted.
  CHECK(Stat(log, "evicted in their handshake") + Stat(log, "handshake timeouts") > 100);
  CHECK(Stat(log, "auth failures") > 0);
}

TEST_CASE("collector hygiene: 20 zip bombs at once stay within the inflate bound", "[collector][lumberjack][hygiene]") {
  signal(SIGPIPE, SIG_IGN);
  TempDir tmp;
  const int port = FreePort();
  Child col({IosonarBin(), "collect", "--store", tmp / "st", "--listen", "tcp://127.0.0.1:" + std::to_string(port)}, {},
            tmp / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  // One 'C' frame of ~70 KB inflating to 70 MiB of zeros (past the 64 MiB bound).
  const std::string zeros(size_t{70} << 20, '\0');
  uLongf len = compressBound(zeros.size());
  std::string z(len, '\0');
  REQUIRE(compress2(reinterpret_cast<Bytef*>(z.data()), &len, reinterpret_cast<const Bytef*>(zeros.data()),
                    zeros.size(), 9) == Z_OK);
  z.resize(len);
  std::string frame = "2C";
  for (int s = 24; s >= 0; s -= 8) frame += static_cast<char>((len >> s) & 0xff);
  frame += z;
  std::vector<std::thread> bombs;
  for (int k = 0; k < 20; ++k) {
    bombs.emplace_back([&] {
      int fd = ConnectLoopback(port);
      if (fd < 0) return;
      SendAll(fd, frame);
      char b[256];
      while (read(fd, b, sizeof b) > 0) {
      }
      close(fd);
    });
  }
  for (auto& t : bombs) t.join();
  const long rss = RssKiB(col.pid());
  REQUIRE(ExitCode(col.Stop(30000)) == 0);
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  CHECK(Count(dl, "a compressed frame inflates past") == 20);
  // One inflation at a time, within the 64 MiB bound (its pages, not twice
  // them for a growing copy), plus the collector's own ~30 MiB.
  CHECK(rss < 128 * 1024);
}
