// The rest of stdio (formatted, character and line I/O, the _unlocked
// variants, fseeko) and mmap under the tracer: test/programs/tp_stdio.c uses
// each on one file with bytes and calls fixed by its layout (written out in
// its header comment); the tracer must count exactly those, keep the stdio
// offset, keep errno, and change nothing the program writes.
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "test/integration/trace_util.h"

using namespace iosonar::test;

namespace {
struct Sum {
  int64_t ops = 0, bytes = 0, failed = 0;
};
Sum OpSum(const std::vector<TraceLine>& lines, const std::string& op) {
  Sum s;
  for (const auto& l : lines) {
    if (l.dataset != "iosonar.trace" || l.op != op || !l.path.ends_with("/stdio2.dat")) continue;
    if (l.err) s.failed += l.count;
    else s.ops += l.count, s.bytes += l.bytes;
  }
  return s;
}
}  // namespace

TEST_CASE("tracer: the rest of stdio and mmap: exact bytes and calls, offsets, errno, output unchanged", "[tracer]") {
  // Plain, and fortified as distributions build (fprintf -> __fprintf_chk, ...).
  const std::string prog = GENERATE(as<std::string>{}, "tp_stdio", "tp_stdio_fortify");
  INFO(prog);
  TempDir d;
  std::filesystem::create_directories(d / "plain");
  std::filesystem::create_directories(d / "traced");
  auto plain = Run({ProgramPath(prog), d / "plain"}, {}, "12 34\n");
  INFO("untraced: " << plain.err);
  REQUIRE(plain.exit_code == 0);
  Traced t;
  t.run = Run({ProgramPath(prog), d / "traced"}, {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", d / "out.jsonl"}},
              "12 34\n");
  t.lines = ParseTraceLines(ReadFile(d / "out.jsonl"));
  INFO("traced: " << t.run.err << "\n" << t.run.out);
  REQUIRE(t.run.exit_code == 0);
  // The program's output and its file, byte for byte; errno as untraced
  // (the program counts successful calls that changed it: none).
  CHECK(t.run.out == plain.out);
  CHECK(t.run.out.find("stdin: 2: 12 34") != std::string::npos);
  CHECK(t.run.out.find("errno changed by 0 successful calls") != std::string::npos);
  CHECK(t.run.out.find("fputc on a read stream: -1 errno 9; fputs: -1 errno 9") != std::string::npos);
  CHECK(ReadFile(d / "traced/stdio2.dat") == ReadFile(d / "plain/stdio2.dat"));
  CHECK(ReadFile(d / "traced/stdio2.dat").size() == 360);

  // Layout in tp_stdio.c: 33 writes of 360 bytes, 35 reads of 143 bytes,
  // 5 seeks, 2 failed writes (EBADF).
  Sum w = OpSum(t.lines, "write"), r = OpSum(t.lines, "read"), s = OpSum(t.lines, "seek");
  CHECK(w.ops == 33);
  CHECK(w.bytes == 360);
  CHECK(w.failed == 2);
  CHECK(r.ops == 35);
  CHECK(r.bytes == 143);
  CHECK(s.ops == 5);
  bool fgets_run = false, chars_run = false, fscanf_run = false, vfscanf_run = false;
  for (const auto& l : t.lines) {
    if (l.dataset != "iosonar.trace" || !l.path.ends_with("/stdio2.dat")) continue;
    if (l.op == "read" || l.op == "write" || l.op == "seek") CHECK(l.layer == "stdio");
    if (l.op == "write" && l.err) CHECK(l.err == EBADF);
    if (l.op != "read") continue;
    // The stdio offset follows every call and seek.
    if (l.offset == 0 && l.count == 10 && l.bytes == 70 && l.size == 64) fgets_run = true;
    if (l.offset == 70 && l.count == 20 && l.bytes == 20 && l.size == 1) chars_run = true;
    if (l.offset == 347 && l.count == 1 && l.bytes == 12) fscanf_run = true;
    if (l.offset == 70 && l.count == 1 && l.bytes == 4) vfscanf_run = true;
  }
  CHECK(fgets_run);
  CHECK(chars_run);
  CHECK(fscanf_run);
  CHECK(vfscanf_run);

  // mmap: the two file mappings, as mappings; the anonymous one is not a file.
  int maps = 0;
  for (const auto& l : t.lines) {
    if (l.op != "mmap") continue;
    ++maps;
    CHECK(l.path.ends_with("/stdio2.dat"));
    CHECK(l.layer == "posix");
    CHECK(l.bytes == 0);
    if (l.mmap_prot == "r") {
      CHECK(l.mmap_flags == "private");
      CHECK(l.size == 360);
    } else {
      CHECK(l.mmap_prot == "rw");
      CHECK(l.mmap_flags == "shared");
      CHECK(l.size == 4096);
    }
    CHECK(l.offset == 0);
    CHECK(l.count == 1);
  }
  CHECK(maps == 2);
}
