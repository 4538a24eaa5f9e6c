// What the tools print and spool (issue 39): a planted password never
// appears on any error path (one redaction for every URL or option printed;
// secrets from files and the environment); a full disk never leaves a spool
// fragment the next record is glued to, a fragment left by an older writer
// is skipped, a hard link in the spool is never shipped; stored control
// characters reach the terminal escaped.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {
constexpr const char* kPlanted = "PLANTED7s3cr3t";

// A small tmpfs of our own, unmounted on destruction.
struct SmallFs {
  std::string dir;
  explicit SmallFs(const std::string& d, const std::string& size) : dir(d) {
    fs::create_directories(dir);
    REQUIRE(mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0700").c_str()) == 0);
  }
  ~SmallFs() { umount2(dir.c_str(), MNT_DETACH); }
};
}  // namespace

TEST_CASE("redaction: a planted password appears on no error path", "[redact][collector][agent][trace]") {
  TempDir d;
  std::string all;  // everything every command printed
  auto run = [&](const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {}) {
    auto r = Run(argv, env);
    all += r.out + r.err;
    return r;
  };
  const std::string closed = std::to_string(FreePort());
  const std::string url = std::string("http://elastic:") + kPlanted + "@127.0.0.1:" + closed;
  // 1. collect --es with the password in the URL, forwarding failing (nobody listens).
  {
    const int port = FreePort();
    Child col({IosonarBin(), "collect", "--store", d / "st", "--listen", "tcp://127.0.0.1:" + std::to_string(port),
               "--es", url},
              {}, d / "collect.log");
    REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    SendAll(fd,
            "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":5,"
            "\"event.seq\":1,\"host.name\":\"n1\",\"process.pid\":1,\"process.tid\":1,\"io.op\":\"write\","
            "\"io.layer\":\"posix\",\"io.count\":1,\"io.bytes\":1,\"event.start_ns\":1,\"event.end_ns\":2,"
            "\"io.duration_ns\":1}\n");
    close(fd);
    CHECK(WaitUntil([&] { return ReadFile(d / "collect.log").find("forward to") != std::string::npos; }, 20000));
    col.Stop(20000);
    const std::string log = ReadFile(d / "collect.log");
    all += log;
    CHECK(log.find("elastic:***@127.0.0.1") != std::string::npos);
  }
  // 2. A bad --es URL, a bad --output for the agent and for trace, a sink that cannot be opened.
  run({IosonarBin(), "collect", "--store", d / "st2", "--from-file", "/dev/null", "--es",
       std::string("es+https://u:") + kPlanted + "@"});
  run({BinaryDir() + "/iosonar-exporter", "agent", "--ring-root", d / "none", "--count", "1", "--output",
       std::string("lumberjack://u:") + kPlanted + "@127.0.0.1:" + closed + "?compression_level=12"});
  run({BinaryDir() + "/iosonar-exporter", "agent", "--ring-root", d / "none", "--count", "1", "--output",
       std::string("tcp://u:") + kPlanted + "@127.0.0.1:" + closed + "?token=" + kPlanted});
  run({IosonarBin(), "trace", "--output", std::string("lumberjack://u:") + kPlanted + "@127.0.0.1:" + closed + "?bogus=1",
       "--", "true"});
  run({IosonarBin(), "es-setup", "--es", url});
  // 3. The password from a file, or the environment: not in the arguments, and never printed.
  WriteFile(d / "pw", std::string(kPlanted) + "\n");
  chmod((d / "pw").c_str(), 0600);
  auto f = run({IosonarBin(), "collect", "--store", d / "st3", "--from-file", "/dev/null", "--es",
                "http://elastic@127.0.0.1:" + closed, "--es-password-file", d / "pw"});
  CHECK(f.exit_code == 0);
  auto missing = run({IosonarBin(), "collect", "--store", d / "st3", "--from-file", "/dev/null", "--es",
                      "http://elastic@127.0.0.1:" + closed, "--es-password-file", d / "nope"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("secret file " + d / "nope") != std::string::npos);
  run({IosonarBin(), "collect", "--store", d / "st4", "--from-file", "/dev/null", "--es", "http://elastic@127.0.0.1:" + closed},
      {{"IOSONAR_ES_PASSWORD", kPlanted}});
  INFO(all);
  CHECK(all.find(kPlanted) == std::string::npos);
  CHECK(all.find("***") != std::string::npos);  // the errors were printed, redacted
}

TEST_CASE("spool: a full disk leaves no fragment, and a fragment or a hard link in the spool is never shipped",
          "[tracer][spool][hostile]") {
  REQUIRE(geteuid() == 0);  // mounts a small tmpfs
  TempDir d;
  SmallFs small(d / "fs", "48k");
  const std::string spool = d / "fs/spool";
  REQUIRE(mkdir(spool.c_str(), 0700) == 0);
  // A root-only file on the same file system, hard-linked into the spool by "someone".
  WriteFile(d / "fs/private", "{\"LINKED-SECRET\":1}\n");
  REQUIRE(chmod((d / "fs/private").c_str(), 0600) == 0);
  REQUIRE(link((d / "fs/private").c_str(), (spool + "/iosonar-00000000000000fe.jsonl").c_str()) == 0);
  // A fragment an older writer left (a full disk cut its write short).
  WriteFile(spool + "/iosonar-00000000000000fd.jsonl", "{\"@");
  // Programs spool (nobody listens) until the disk is full.
  std::map<std::string, std::string> env{{"LD_PRELOAD", TracerLib()},
                                         {"IOSONAR_OUTPUT", "tcp://127.0.0.1:" + std::to_string(FreePort())},
                                         {"IOSONAR_SPOOL_DIR", spool}};
  for (int k = 0; k < 200; ++k) {
    auto r = Run({ProgramPath("tp_behaviour"), "write", d / "w.dat", "3", "4096"}, env);
    REQUIRE(r.exit_code == 0);
  }
  // Full: some writes failed. Every file of ours ends at a line's end.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(spool)) {
    const std::string name = e.path().filename();
    if (name == "iosonar-00000000000000fd.jsonl" || name == "iosonar-00000000000000fe.jsonl") continue;
    const std::string text = ReadFile(e.path());
    ++files;
    INFO(name);
    CHECK((text.empty() || text.back() == '\n'));
  }
  CHECK(files > 0);
  // The receiver comes back: the next program resends the spool; every line it gets is whole JSON.
  LineListener rx;
  env["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:" + std::to_string(rx.port());
  auto r = Run({ProgramPath("tp_behaviour"), "write", d / "v.dat", "3", "4096"}, env);
  REQUIRE(r.exit_code == 0);
  const std::string got = rx.Finish();
  CHECK(got.find("LINKED-SECRET") == std::string::npos);
  CHECK(got.find("{\"@{") == std::string::npos);
  auto lines = ParseTraceLines(got);  // REQUIREs every line valid against the schema
  CHECK(Totals(lines, "write", "/v.dat").bytes == 3 * 4096);
  CHECK(Totals(lines, "write", "/w.dat").count > 0);
  CHECK(fs::exists(d / "fs/private"));
}

TEST_CASE("terminal: control characters in stored fields are printed escaped by job-summary",
          "[terminal][job-summary]") {
  TempDir d;
  const std::string rec =
      "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":7,"
      "\"event.seq\":1,\"host.name\":\"n1\",\"job.id\":\"39\",\"process.pid\":1,\"process.tid\":1,"
      "\"io.op\":\"write\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/\\u001b[2J\\u001b]0;owned\\u0007x.dat\","
      "\"io.count\":4,\"io.bytes\":16384,\"event.start_ns\":1763795352123000000,\"event.end_ns\":1763795352124000000,"
      "\"io.duration_ns\":1000000}\n";
  WriteFile(d / "in.jsonl", rec);
  auto c = Run({IosonarBin(), "collect", "--store", d / "st", "--from-file", d / "in.jsonl"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  auto r = Run({IosonarBin(), "job-summary", "--store", d / "st", "39"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK(r.out.find("/scratch/\\x1b[2J\\x1b]0;owned\\x07x.dat") != std::string::npos);
}

TEST_CASE("spool: a 150 MB unterminated garbage line in a Lumberjack spool is skipped in bounded memory",
          "[spool][lumberjack][agent]") {
  REQUIRE(access("/usr/bin/time", X_OK) == 0);
  TempDir d;
  const std::string spool = d / "spool";
  REQUIRE(mkdir(spool.c_str(), 0700) == 0);
  const std::string good =
      "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":9,"
      "\"event.seq\":1,\"host.name\":\"n1\",\"process.pid\":1,\"process.tid\":1,\"io.op\":\"write\","
      "\"io.layer\":\"posix\",\"io.count\":1,\"io.bytes\":1,\"event.start_ns\":1,\"event.end_ns\":2,"
      "\"io.duration_ns\":1}\n";
  {
    std::string junk(1 << 20, 'x');
    FILE* f = fopen((spool + "/lj-1-1.jsonl").c_str(), "w");
    REQUIRE(f);
    fwrite(good.data(), 1, good.size(), f);
    for (int k = 0; k < 150; ++k) fwrite(junk.data(), 1, junk.size(), f);  // no line end
    fclose(f);
  }
  const int port = FreePort();
  Child col({IosonarBin(), "collect", "--store", d / "st", "--listen", "tcp://127.0.0.1:" + std::to_string(port)}, {},
            d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto r = Run({"/usr/bin/time", "-f", "maxrss %M", "-o", d / "time", BinaryDir() + "/iosonar-exporter", "agent",
                "--ring-root", d / "none", "--output", "lumberjack://127.0.0.1:" + std::to_string(port), "--spool-dir",
                spool, "--count", "1", "--no-sampler-records"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const std::string t = ReadFile(d / "time");
  const long rss_kib = std::stol(t.substr(t.find("maxrss ") + 7));
  CHECK(rss_kib < 64 * 1024);  // the spool's bound, not the line's 150 MB
  REQUIRE(ExitCode(col.Stop(30000)) == 0);
  auto a = Run({IosonarBin(), "store-export", "--store", d / "st"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.find("\"event.stream\":9") != std::string::npos);  // the whole line before it went out
  CHECK(!fs::exists(spool + "/lj-1-1.jsonl"));                    // and the file is done
}
