// Fork safety (issue 38): a multithreaded program forks while its other
// threads do their first traced I/O (the ring's set-up), record or flush; the
// children do I/O and exit. No child may wait on state a thread that did not
// come along held: tp_forkrace counts a trial that does not end within its
// timeout as a hang. Run in every output mode (a file, tcp:// to a receiver,
// agent mode with a real node agent), and every fork child's records must be
// there with its bytes. The long run (thousands of forks per mode) is the
// bench target bench_forkrace (test/bench/RESULTS.md).
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {

// "trials T forks F hangs H failures X" → F (REQUIREs H == X == 0).
int64_t ForksMade(const RunResult& r) {
  INFO(r.out << r.err);
  long long trials = -1, forks = -1, hangs = -1, failures = -1;
  REQUIRE(sscanf(r.out.c_str(), "trials %lld forks %lld hangs %lld failures %lld", &trials, &forks, &hangs, &failures) == 4);
  CHECK(hangs == 0);
  CHECK(failures == 0);
  REQUIRE(r.exit_code == 0);
  return forks;
}

// Every fork child writes, reads back and removes DIR/cPID.dat (1-4 blocks of
// 4 KiB): its records must say so, bytes exact, and there must be one such
// child per fork the program counted.
void CheckChildren(const std::vector<TraceLine>& lines, int64_t forks) {
  std::map<int64_t, std::pair<int64_t, int64_t>> rw;  // pid -> (read bytes, written bytes)
  for (const auto& l : lines) {
    const auto slash = l.path.rfind('/');
    if (l.dataset != "iosonar.trace" || slash == std::string::npos || l.path.compare(slash, 2, "/c") != 0) continue;
    REQUIRE(l.path.substr(slash + 2) == std::to_string(l.pid) + ".dat");
    if (l.op == "read") rw[l.pid].first += l.bytes;
    if (l.op == "write") rw[l.pid].second += l.bytes;
  }
  CHECK(static_cast<int64_t>(rw.size()) == forks);
  for (const auto& [pid, b] : rw) {
    INFO("fork child " << pid);
    CHECK(b.first == b.second);
    CHECK(b.second % 4096 == 0);
    CHECK(b.second >= 4096);
    CHECK(b.second <= 4 * 4096);
  }
}

// A ring root on tmpfs, as the default (/dev/shm): the trials make a ring per process.
struct ShmDir {
  ShmDir() : path("/dev/shm/iosonar-forktest-" + std::to_string(getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ShmDir() { fs::remove_all(path); }
  std::string path;
};

int Trials() {
  const char* t = getenv("IOSONAR_FORKRACE_TRIALS");
  return t && *t ? atoi(t) : 120;
}

}  // namespace

TEST_CASE("tracer: forks taken while other threads set up the ring, record or flush never hang, in file, tcp and agent modes",
          "[tracer][fork]") {
  const std::string trials = std::to_string(Trials());
  TempDir d;
  ShmDir shm;
  const std::string ring = shm.path + "/iosonar-ring-" + std::to_string(geteuid());
  const std::string prog = ProgramPath("tp_forkrace");
  // A window of 1 ms: threads close runs and flush all the time, so forks land inside flushes too.
  std::map<std::string, std::string> env{{"LD_PRELOAD", TracerLib()}, {"IOSONAR_RING_DIR", ring}, {"IOSONAR_WINDOW_MS", "1"}};

  SECTION("file") {
    env["IOSONAR_OUTPUT"] = d / "out.jsonl";
    auto r = Run({prog, d.path(), trials, "6", "10000"}, env);
    CheckChildren(ParseTraceLines(ReadFile(d / "out.jsonl")), ForksMade(r));
  }
  SECTION("tcp") {
    LineListener l;
    env["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:" + std::to_string(l.port());
    auto r = Run({prog, d.path(), trials, "6", "10000"}, env);
    CheckChildren(ParseTraceLines(l.Finish()), ForksMade(r));
  }
  SECTION("agent") {
    env["IOSONAR_OUTPUT"] = "agent";
    Child agent({BinaryDir() + "/iosonar-exporter", "agent", "--ring-root", shm.path, "--output", d / "agent.jsonl",
                 "--interval", "0.1"},
                {}, d / "agent.log");
    auto r = Run({prog, d.path(), trials, "6", "10000"}, env);
    const int64_t forks = ForksMade(r);
    // Every process has ended: the agent ships each ring and removes it.
    REQUIRE(WaitUntil([&] { return !fs::exists(ring) || fs::is_empty(ring); }, 60000));
    REQUIRE(ExitCode(agent.Stop(10000)) == 0);
    INFO(ReadFile(d / "agent.log"));
    CheckChildren(ParseTraceLines(ReadFile(d / "agent.jsonl")), forks);
  }
}
