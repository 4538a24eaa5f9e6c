// The tracer never touches what is not its own: a program that closes every
// descriptor (close_range, closefrom, a close loop) or dup2()s over the
// tracer's, and then opens its own files at the lowest numbers, finds in them
// exactly its own bytes (tp_behaviour checks and fails otherwise), keeps its
// errno, and every record still arrives, with each output kind.
#include <catch2/catch.hpp>
#include <string>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {
void CheckAllRecords(const std::vector<TraceLine>& lines) {
  REQUIRE(!lines.empty());
  int64_t trace = 0;
  for (const auto& l : lines) trace += l.dataset == "iosonar.trace";
  const auto& last = lines.back();
  REQUIRE(last.action == "exit");
  CHECK(last.dropped == 0);
  CHECK(last.records == trace);  // every record the tracer made arrived
  for (int k = 0; k < 2; ++k) {
    auto w = Totals(lines, "write", "/data." + std::to_string(k));
    CHECK(w.bytes == 200 * 4096);
    CHECK(w.count == 200);
  }
  for (int i = 0; i < 3; ++i) CHECK(Totals(lines, "write", "/before." + std::to_string(i)).bytes == 4 * 4096);
}
}  // namespace

TEST_CASE("tracer: close_range, closefrom, a close loop and dup2 leave the tracer's descriptors alone", "[tracer][fds]") {
  for (std::string how : {"close_range", "closefrom", "loop", "dup2"}) {
    DYNAMIC_SECTION(how) {
      std::map<std::string, std::string> env{{"LD_PRELOAD", TracerLib()}, {"IOSONAR_WINDOW_MS", "1"}};
      SECTION("file output") {
        TempDir d;
        auto t = RunTraced({ProgramPath("tp_behaviour"), "closeall", d.path(), how}, d / "out.jsonl", {{"IOSONAR_WINDOW_MS", "1"}});
        INFO(t.run.err);
        REQUIRE(t.run.exit_code == 0);
        CheckAllRecords(t.lines);
      }
      SECTION("stdout output") {
        TempDir d;
        env["IOSONAR_OUTPUT"] = "-";
        auto r = Run({ProgramPath("tp_behaviour"), "closeall", d.path(), how}, env);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        CheckAllRecords(ParseTraceLines(r.out));
      }
      SECTION("tcp output") {
        TempDir d;
        LineListener rx;
        env["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:" + std::to_string(rx.port());
        env["IOSONAR_SPOOL_DIR"] = d / "spool";
        auto r = Run({ProgramPath("tp_behaviour"), "closeall", d.path(), how}, env);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        CheckAllRecords(ParseTraceLines(rx.Finish()));
      }
    }
  }
}
