// A process that dies without its exit path (SIGTERM as Slurm sends it at the
// time limit, SIGKILL, a crash) or leaves by _exit loses nothing: what it had
// not sent was in its ring, which `iosonar run` drains after the program
// ends, with the process's end recorded. The program's signal dispositions
// stay the defaults (SIGTERM kills it, no handler runs).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;

TEST_CASE("tracer: SIGTERM, SIGKILL, SIGSEGV and _exit after I/O: every byte reaches the store, the end is recorded",
          "[tracer][death]") {
  for (std::string how : {"SIGTERM", "SIGKILL", "segv", "_exit"}) {
    DYNAMIC_SECTION(how) {
      TempDir d;
      std::string store = d / "store";
      std::string prog_how = how == "segv" || how == "_exit" ? how : "wait";
      Child run({IosonarBin(), "run", "--store", store, "--job-id", "die-" + how, "--", ProgramPath("tp_behaviour"), "die",
                 d.path(), prog_how},
                {}, d / "run.log");
      REQUIRE(WaitUntil([&] { return std::filesystem::exists(d / "ready"); }, 30000));
      int pid = std::stoi(ReadFile(d / "ready"));
      if (how == "SIGTERM") REQUIRE(kill(pid, SIGTERM) == 0);
      if (how == "SIGKILL") REQUIRE(kill(pid, SIGKILL) == 0);
      REQUIRE(WaitUntil([&] { return !run.Alive(); }, 60000));
      int st = run.Wait();
      INFO(ReadFile(d / "run.log"));
      REQUIRE(WIFEXITED(st));
      int expect = how == "SIGTERM" ? 128 + SIGTERM : how == "SIGKILL" ? 128 + SIGKILL : how == "segv" ? 128 + SIGSEGV : 3;
      CHECK(WEXITSTATUS(st) == expect);  // iosonar run exits with the program's status
      auto ex = Run({IosonarBin(), "store-export", "--store", store});
      auto ex2 = Run({IosonarBin(), "store-export", "--store", store, "--dataset", "iosonar.tracer"});
      REQUIRE(ex.exit_code == 0);
      REQUIRE(ex2.exit_code == 0);
      auto lines = ParseTraceLines(ex.out + ex2.out);
      auto w = Totals(lines, "write", "/die.dat");
      CHECK(w.bytes == (2048 + 100) * 4096);
      CHECK(w.count == 2048 + 100);
      auto r = Totals(lines, "read", "/die.dat");
      CHECK(r.bytes == 16 * 4096);
      CHECK(r.count == 16);
      int64_t ends = 0, starts = 0;
      for (const auto& l : lines) {
        if (l.dataset != "iosonar.tracer" || l.pid != pid) continue;
        starts += l.action == "start";
        ends += l.action == (how == "_exit" ? "exit" : "killed");
      }
      CHECK(starts == 1);
      CHECK(ends == 1);
      // Nothing left behind: the ring was shipped and removed.
      CHECK((!std::filesystem::exists(store + "/ring") || std::filesystem::is_empty(store + "/ring")));
    }
  }
}

TEST_CASE("tracer: a single-threaded program that writes, then computes, has its records out within 3 s", "[tracer][death][realtime]") {
  TempDir d;
  LineListener rx;
  // No flusher thread (single-threaded, IOSONAR_FLUSHER unset): the drainer
  // of `iosonar trace` takes the runs from the program's ring.
  Child trace({IosonarBin(), "trace", "--output", "tcp://127.0.0.1:" + std::to_string(rx.port()), "--", ProgramPath("tp_behaviour"),
               "die", d.path(), "wait"},
              {{"IOSONAR_RING_DIR", d / "ring"}, {"IOSONAR_FLUSHER", ""}}, d / "trace.log");
  REQUIRE(WaitUntil([&] { return std::filesystem::exists(d / "ready"); }, 30000));
  int pid = std::stoi(ReadFile(d / "ready"));
  // The program now sleeps; within 3 s every byte it wrote and read is out.
  bool out = WaitUntil(
      [&] {
        auto lines = ParseTraceLines(rx.Snapshot());
        return Totals(lines, "write", "/die.dat").bytes == (2048 + 100) * 4096 && Totals(lines, "read", "/die.dat").bytes == 16 * 4096;
      },
      3000);
  CHECK(out);
  CHECK(kill(pid, 0) == 0);  // still running
  REQUIRE(kill(pid, SIGKILL) == 0);
  REQUIRE(WaitUntil([&] { return !trace.Alive(); }, 30000));
  // After its death nothing is shipped twice (the live drain took the runs out of the ring).
  auto lines = ParseTraceLines(rx.Finish());
  INFO(ReadFile(d / "trace.log"));
  CHECK(Totals(lines, "write", "/die.dat").bytes == (2048 + 100) * 4096);
  CHECK(Totals(lines, "write", "/die.dat").count == 2048 + 100);
  CHECK(Totals(lines, "read", "/die.dat").count == 16);
  int64_t killed = 0;
  for (const auto& l : lines) killed += l.action == "killed" && l.pid == pid;
  CHECK(killed == 1);
}

// A killed process's AIO ops it never collected with aio_return (their result
// was never known to the tracer) are not recorded, and not lost silently:
// the ring carries their count, and the "killed" record's tracer.dropped
// has it (the exit path counts them itself: test_tracer.cc).
TEST_CASE("tracer: a process killed with AIO ops it never collected has them counted as dropped", "[tracer][death]") {
  TempDir d;
  std::string store = d / "store";
  auto run = Run({IosonarBin(), "run", "--store", store, "--job-id", "aiokill", "--", ProgramPath("tp_behaviour"), "aiokill",
                  d.path()});
  INFO(run.err);
  CHECK(run.exit_code == 128 + SIGKILL);
  auto ex = Run({IosonarBin(), "store-export", "--store", store});
  auto ex2 = Run({IosonarBin(), "store-export", "--store", store, "--dataset", "iosonar.tracer"});
  REQUIRE(ex.exit_code == 0);
  REQUIRE(ex2.exit_code == 0);
  auto lines = ParseTraceLines(ex.out + ex2.out);
  CHECK(Totals(lines, "write", "/aio.dat").count == 0);
  int64_t killed = 0, dropped = -1;
  for (const auto& l : lines) {
    if (l.dataset != "iosonar.tracer" || l.action != "killed") continue;
    ++killed;
    dropped = l.dropped;
  }
  CHECK(killed == 1);
  CHECK(dropped == 2);
  CHECK(std::filesystem::file_size(d / "aio.dat") == 2 * 4096);  // the program's own bytes, untouched
}
