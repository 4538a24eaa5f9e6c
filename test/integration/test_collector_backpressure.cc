// A store that cannot write (here: a file-size limit set on the running
// collector, so its writes fail with EFBIG as on a full disk) means
// back-pressure, not loss: the collector holds the batch, stops reading,
// says so, and stores everything once it can write again.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {




std::string Lines(int from, int n) {
  std::string out;
  for (int i = from; i < from + n; ++i)
    out += "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":5,"
           "\"event.seq\":" + std::to_string(i) + ",\"host.name\":\"n1\",\"job.id\":\"7\",\"process.pid\":1,"
           "\"process.tid\":1,\"io.op\":\"write\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/out\",\"io.fd\":3,"
           "\"io.offset\":" + std::to_string(int64_t{i} * 4096) + ",\"io.size\":4096,\"io.count\":1,\"io.bytes\":4096,"
           "\"event.start_ns\":1,\"event.end_ns\":2,\"io.duration_ns\":1}\n";
  return out;
}


}  // namespace

TEST_CASE("collector back-pressure: the store cannot write, reading stops, nothing is lost once it can",
          "[collector][backpressure]") {
  TempDir tmp;
  const int port = FreePort();
  Child c({IosonarBin(), "collect", "--store", tmp / "st", "--listen", "tcp://127.0.0.1:" + std::to_string(port)}, {},
          tmp / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  // Every write of the collector past 64 KiB of a file now fails (its log stays
  // below that, so it can still say what happens).
  rlimit lim{65536, RLIM_INFINITY};
  REQUIRE(prlimit(c.pid(), RLIMIT_FSIZE, &lim, nullptr) == 0);
  const int n = 40000;  // ~16 MB: more than the socket buffers hold, so the sender has to wait
  int fd = ConnectLoopback(port);
  REQUIRE(fd >= 0);
  std::thread sender([&] { SendAll(fd, Lines(0, n)); });
  const std::string log = tmp / "collect.log";
  REQUIRE(WaitUntil([&] { return ReadFile(log).find("the store cannot write") != std::string::npos; }, 30000));
  INFO(ReadFile(log));
  CHECK(ReadFile(log).find("not reading from senders") != std::string::npos);
  // The disk has room again.
  rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  REQUIRE(prlimit(c.pid(), RLIMIT_FSIZE, &unlimited, nullptr) == 0);
  sender.join();
  close(fd);
  REQUIRE(WaitUntil([&] { return ReadFile(log).find("the store writes again") != std::string::npos; }, 30000));
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  const std::string final_log = ReadFile(log);
  INFO(final_log);
  // n records plus the collector's own two (the stall and the resume, below).
  CHECK(final_log.find("stored " + std::to_string(n + 2) + ",") != std::string::npos);
  CHECK(final_log.find("store errors 0,") != std::string::npos);
  CHECK(final_log.find("store stalls 0") == std::string::npos);
  auto exp = Run({IosonarBin(), "store-export", "--store", tmp / "st"});
  REQUIRE(exp.exit_code == 0);
  size_t lines = 0;
  for (char ch : exp.out) lines += ch == '\n';
  CHECK(lines == static_cast<size_t>(n));  // store-export: iosonar.trace unless --dataset
  // The stall and the resume are in the data, as the collector's own sampler records.
  auto self = Run({IosonarBin(), "store-export", "--store", tmp / "st", "--dataset", "iosonar.sampler"});
  REQUIRE(self.exit_code == 0);
  INFO(self.out);
  CHECK(self.out.find("\"sampler.name\":\"collector\",\"sampler.source\":\"store\",\"sampler.ok\":false") != std::string::npos);
  CHECK(self.out.find("the store cannot write (") != std::string::npos);
  CHECK(self.out.find("\"sampler.ok\":true") != std::string::npos);
  CHECK(self.out.find("held records stored, reading resumes") != std::string::npos);
}
