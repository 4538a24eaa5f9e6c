// `iosonar probe` for real on a temporary directory: precreate, a few probes,
// and the records reaching the collector's store, over TCP and from a file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "core/records/record.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

// probe.op -> count, after checking every line validates.
std::map<std::string, int> OpsOf(const std::string& jsonl) {
  std::map<std::string, int> ops;
  const int op_i = FieldIndex("probe.op");
  for (const auto& l : SplitLines(jsonl)) {
    std::string buf = l + '\0';
    ParsedRecord r;
    INFO(l);
    REQUIRE(ParseRecordInsitu(buf.data(), l.size(), &r).ok());
    if (r.dataset->name == "iosonar.probe") ++ops[std::string(r[static_cast<size_t>(op_i)].s)];
  }
  return ops;
}

const std::map<std::string, int> kThreeEach = {{"create", 3}, {"delete", 3}, {"read", 3},
                                               {"small_read", 3}, {"stat", 3}, {"write", 3}};

}  // namespace

TEST_CASE("probe: precreate, three probes to a file, collect --from-file, store-export", "[probe]") {
  TempDir d;
  auto pre = Run({IosonarBin(), "probe", "--precreate", "--dir", d / "p", "--file-size", "4M", "--pool-size", "10", "--allow-small-file"});
  INFO(pre.err);
  REQUIRE(pre.exit_code == 0);
  CHECK(pre.err.find("pool 10 files") != std::string::npos);

  auto r = Run({IosonarBin(), "probe", "--dir", d / "p", "--allow-small-file", "--count", "3", "--interval", "0.05", "--output", d / "out.jsonl",
                "--host-name", "probe-host"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("3 samples, 24 records") != std::string::npos);  // 6 ops + 2 self-reports per sample
  CHECK(OpsOf(ReadFile(d / "out.jsonl")) == kThreeEach);

  auto c = Run({IosonarBin(), "collect", "--store", d / "store", "--from-file", d / "out.jsonl"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  auto ex = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.probe"});
  REQUIRE(ex.exit_code == 0);
  CHECK(OpsOf(ex.out) == kThreeEach);
  CHECK(ex.out.find("\"host.name\":\"probe-host\"") != std::string::npos);
  auto sampler = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.sampler"});
  CHECK(SplitLines(sampler.out).size() == 6);

  // The pool rotated by three: files 3..12 remain.
  CHECK_FALSE(ReadFile(d / "p/iosonar-probe-pool/00000000000000000003").empty());
  CHECK(ReadFile(d / "p/iosonar-probe-pool/00000000000000000012").size() == 3901);
}

TEST_CASE("probe: records reach a live collector over TCP", "[probe]") {
  TempDir d;
  REQUIRE(Run({IosonarBin(), "probe", "--precreate", "--dir", d / "p", "--file-size", "2M", "--pool-size", "4", "--allow-small-file"}).exit_code == 0);
  const int port = FreePort();
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  Child collector({IosonarBin(), "collect", "--store", d / "store", "--listen", url}, {}, d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto r = Run({IosonarBin(), "probe", "--dir", d / "p", "--allow-small-file", "--count", "3", "--interval", "0.02", "--output", url});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("sent 24") != std::string::npos);
  int st = collector.Stop();  // SIGTERM: drains, stores, exits
  CHECK(WIFEXITED(st));
  auto ex = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.probe"});
  REQUIRE(ex.exit_code == 0);
  CHECK(OpsOf(ex.out) == kThreeEach);
}

TEST_CASE("probe: clear errors without precreate and for bad options", "[probe]") {
  TempDir d;
  auto r = Run({IosonarBin(), "probe", "--dir", d / "nothing", "--count", "1"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("--precreate") != std::string::npos);
  auto b = Run({IosonarBin(), "probe", "--precreate", "--dir", d / "p", "--file-size", "lots"});
  CHECK(b.exit_code == 2);
  CHECK(b.err.find("--file-size") != std::string::npos);
  auto h = Run({IosonarBin(), "probe", "--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("--precreate") != std::string::npos);
}
