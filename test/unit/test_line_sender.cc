// The line sender's spool: receiver down, then up. Nothing lost, nothing twice.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "core/transport/line_sender.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {
// A loopback receiver that collects everything sent to it until the peer closes.
class Receiver {
 public:
  explicit Receiver(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd_, 8) == 0);
    th_ = std::thread([this] {
      int c = accept(fd_, nullptr, nullptr);
      char buf[65536];
      ssize_t n;
      while ((n = read(c, buf, sizeof buf)) > 0) data_.append(buf, static_cast<size_t>(n));
      close(c);
    });
  }
  std::string Finish() {
    th_.join();
    close(fd_);
    return data_;
  }

 private:
  int fd_;
  std::thread th_;
  std::string data_;
};
}  // namespace

TEST_CASE("line sender: unreachable receiver spools, the next connect resends once", "[spool]") {
  TempDir d;
  int port = FreePort();
  std::string out = "tcp://127.0.0.1:" + std::to_string(port);
  std::string spool = d / "spool";
  LineSender::Options o;
  o.output = out.c_str();
  o.spool_dir = spool.c_str();
  o.retry_interval_ms = 0;
  LineSender s;
  char err[128];
  REQUIRE(s.Init(o, err, sizeof err));
  s.set_stream(0xabc);
  CHECK(s.Send("{\"a\":1}\n{\"a\":2}\n", 16, 2));
  CHECK(s.Send("{\"a\":3}\n", 8, 1));
  CHECK(s.counters().lines_spooled == 3);
  CHECK(ReadFile(spool + "/iosonar-0000000000000abc.jsonl") == "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n");

  // Someone else's leftover spool file is resent too.
  WriteFile(spool + "/iosonar-00000000000000ff.jsonl", "{\"b\":1}\n");
  Receiver rx(port);
  CHECK(s.Send("{\"a\":4}\n", 8, 1));
  s.Close();
  std::string got = rx.Finish();
  // Spooled lines first (own file first, in order), then the new line; each exactly once.
  CHECK(got.find("{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n") == 0);
  CHECK(got.find("{\"b\":1}\n") != std::string::npos);
  CHECK(got.size() == 4 * 8 + 8);
  CHECK(got.substr(got.size() - 8) == "{\"a\":4}\n");
  CHECK(std::filesystem::is_empty(spool));
  auto c = s.counters();
  CHECK(c.lines_resent == 4);
  CHECK(c.lines_sent == 1);
  CHECK(c.lines_dropped == 0);
}

TEST_CASE("line sender: the spool is bounded, what does not fit is counted as dropped", "[spool]") {
  TempDir d;
  std::string out = "tcp://127.0.0.1:" + std::to_string(FreePort());
  std::string spool = d / "spool";
  LineSender::Options o;
  o.output = out.c_str();
  o.spool_dir = spool.c_str();
  o.spool_max_bytes = 20;
  LineSender s;
  char err[128];
  REQUIRE(s.Init(o, err, sizeof err));
  CHECK(s.Send("0123456789012345678\n", 20, 1));
  CHECK_FALSE(s.Send("x\n", 2, 1));
  CHECK(s.counters().lines_dropped == 1);
  CHECK(s.counters().lines_spooled == 1);
}

TEST_CASE("line sender: file and stdout outputs, malformed outputs are refused", "[spool]") {
  TempDir d;
  std::string path = d / "out.jsonl";
  LineSender::Options o;
  o.output = path.c_str();
  LineSender s;
  char err[128];
  REQUIRE(s.Init(o, err, sizeof err));
  CHECK(s.Send("{}\n", 3, 1));
  CHECK(s.Send("{}\n", 3, 1));
  s.Close();
  CHECK(ReadFile(path) == "{}\n{}\n");
  for (const char* bad : {"tcp://host", "tcp://:12", "tcp://h:99999", "redis://x:1"}) {
    LineSender b;
    LineSender::Options ob;
    ob.output = bad;
    INFO(bad);
    CHECK_FALSE(b.Init(ob, err, sizeof err));
    CHECK(std::string(err).find(bad) != std::string::npos);
  }
}
