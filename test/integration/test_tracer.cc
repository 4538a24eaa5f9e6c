// The tracer under real programs: it must not change their behaviour, must
// see every process (threads, fork, fork+exec), and must flush at every way a
// process can end. All output passes the collector's schema validation.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "core/collector/collector.h"
#include "core/records/fields.h"
#include "core/store/store.h"
#include "test/integration/trace_util.h"
#include "rapidjson/document.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {
Traced Behaviour(const TempDir& dir, const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv{ProgramPath("tp_behaviour")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunTraced(argv, dir / "out.jsonl", std::move(env));
}
int64_t Exits(const std::vector<TraceLine>& ls) {
  int64_t n = 0;
  for (const auto& l : ls) n += l.action == "exit";
  return n;
}
}  // namespace

TEST_CASE("tracer: failing calls keep their errno and are recorded with it", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"errno", d.path()});
  INFO(t.run.err);
  REQUIRE(t.run.exit_code == 0);
  bool saw_enoent_open = false, saw_ebadf_write = false;
  for (const auto& l : t.lines) {
    if (l.op == "open" && l.err == ENOENT) saw_enoent_open = true;
    if (l.op == "write" && l.err == EBADF) saw_ebadf_write = true;
  }
  CHECK(saw_enoent_open);
  CHECK(saw_ebadf_write);
  // The EOF pread (0 bytes) and the 100-byte pread are one contiguous run.
  auto r = Totals(t.lines, "read", "/ro.dat");
  CHECK(r.bytes == 100);
  CHECK(r.count == 2);
}

TEST_CASE("tracer: successful calls keep the errno the program set, also when the output is down", "[tracer]") {
  // The wrappers read errno only after a call that failed; what runs between
  // the program's call and its return (new runs, sweeps, flushes that fail
  // when the receiver is down, classifying an fd) keeps it.
  for (const char* output : {"file", "refused"}) {
    INFO(output);
    TempDir d;
    std::map<std::string, std::string> env{{"IOSONAR_WINDOW_MS", "1"}, {"IOSONAR_DETAIL_BUDGET", "50"}};
    if (std::string(output) == "refused") {
      env["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:" + std::to_string(FreePort());
      env["IOSONAR_SPOOL_DIR"] = d / "spool";
    }
    auto t = Behaviour(d, {"errnokept", d.path(), "20000"}, env);
    INFO(t.run.err);
    CHECK(t.run.out.find("errno changed by 0 of 61027 successful calls") != std::string::npos);
    CHECK(t.run.exit_code == 0);
    if (std::string(output) == "file") {
      auto w = Totals(t.lines, "write", "/kept.dat");
      CHECK(w.bytes == 1024 * 4096 + 20000 * 4096);
      CHECK(Totals(t.lines, "write", "/raw.dat").bytes == 10);
    }
  }
}

TEST_CASE("tracer: threads are traced under their own tid", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"threads", d.path(), "4"});
  REQUIRE(t.run.exit_code == 0);
  std::set<int64_t> tids;
  int64_t pid = 0;
  for (const auto& l : t.lines)
    if (l.op == "write") {
      tids.insert(l.tid);
      pid = l.pid;
    }
  CHECK(tids.size() == 4);
  CHECK_FALSE(tids.count(pid));  // all writes came from the 4 threads, not main
  for (int i = 0; i < 4; ++i) {
    auto w = Totals(t.lines, "write", "/thread." + std::to_string(i));
    CHECK(w.bytes == 64 * 4096);
    CHECK(w.records == 1);  // one sequential run per thread
  }
}

TEST_CASE("tracer: fork and fork+exec are traced under their own pid, exec flushes first", "[tracer]") {
  TempDir d;
  SECTION("fork") {
    auto t = Behaviour(d, {"fork", d.path()});
    REQUIRE(t.run.exit_code == 0);
    std::set<int64_t> pids_parent, pids_child, streams;
    for (const auto& l : t.lines) {
      if (l.path.ends_with("/parent.dat")) pids_parent.insert(l.pid);
      if (l.path.ends_with("/child.dat")) pids_child.insert(l.pid);
      streams.insert(l.stream);
    }
    REQUIRE(pids_parent.size() == 1);
    REQUIRE(pids_child.size() == 1);
    CHECK(*pids_parent.begin() != *pids_child.begin());
    CHECK(streams.size() == 2);
    CHECK(Totals(t.lines, "write", "/parent.dat").bytes == 20 * 4096);
    CHECK(Totals(t.lines, "write", "/child.dat").bytes == 10 * 4096);  // nothing of the parent's copied into the child
    CHECK(Exits(t.lines) == 2);
  }
  SECTION("fork+exec") {
    auto t = Behaviour(d, {"forkexec", d.path(), ProgramPath("tp_behaviour")});
    REQUIRE(t.run.exit_code == 0);
    CHECK(Totals(t.lines, "write", "/preexec.dat").bytes == 3 * 4096);
    CHECK(Totals(t.lines, "write", "/exec.dat").bytes == 30 * 4096);
    int64_t execs = 0;
    for (const auto& l : t.lines) execs += l.action == "exec";
    CHECK(execs == 1);
  }
}

TEST_CASE("tracer: a program that closes stdout and stderr still flushes", "[tracer]") {
  TempDir d;
  SECTION("records to a file") {
    auto t = Behaviour(d, {"closestd", d.path()});
    REQUIRE(t.run.exit_code == 0);
    CHECK(Totals(t.lines, "write", "/after-close.dat").bytes == 16 * 4096);
  }
  SECTION("records to stdout (-): the tracer keeps its own duplicate of fd 1") {
    auto r = Run({ProgramPath("tp_behaviour"), "closestd", d.path()}, {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", "-"}});
    REQUIRE(r.exit_code == 0);
    auto lines = ParseTraceLines(r.out);
    CHECK(Totals(lines, "write", "/after-close.dat").bytes == 16 * 4096);
  }
}

TEST_CASE("tracer: exit() called from a thread flushes every thread", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"threadexit", d.path()});
  REQUIRE(t.run.exit_code == 0);
  CHECK(Totals(t.lines, "write", "/main-thread.dat").bytes == 4 * 4096);
  CHECK(Totals(t.lines, "write", "/thread-exit.dat").bytes == 8 * 4096);
  CHECK(Exits(t.lines) == 1);
}

TEST_CASE("tracer: interleaved fds, gaps and offsets beyond 4 GiB compress correctly", "[tracer][compression]") {
  TempDir d;
  auto t = Behaviour(d, {"interleave", d.path()});
  REQUIRE(t.run.exit_code == 0);
  std::vector<TraceLine> ia, ib;
  for (const auto& l : t.lines) {
    if (l.op != "write") continue;
    if (l.path.ends_with("/ia.dat")) ia.push_back(l);
    if (l.path.ends_with("/ib.dat")) ib.push_back(l);
  }
  REQUIRE(ia.size() == 2);
  std::sort(ia.begin(), ia.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  CHECK(ia[0].offset == 0);
  CHECK(ia[0].count == 100);
  CHECK(ia[0].size == 4096);
  CHECK(ia[1].offset == 100 * 4096 + (1 << 20));  // the gap after lseek starts a new run
  CHECK(ia[1].count == 2);
  REQUIRE(ib.size() == 2);
  std::sort(ib.begin(), ib.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  CHECK(ib[0].count == 100);
  CHECK(ib[0].size == 8192);
  CHECK(ib[1].offset == (int64_t{5} << 30));
  CHECK(ib[1].count == 3);
  CHECK(ib[1].bytes == 3 * 4096);
}

TEST_CASE("tracer: stdio calls are traced at the stdio layer", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"stdio", d.path()});
  REQUIRE(t.run.exit_code == 0);
  auto w = Totals(t.lines, "write", "/stdio.dat");
  auto r = Totals(t.lines, "read", "/stdio.dat");
  CHECK(w.bytes == 50000);
  CHECK(w.count == 50);
  CHECK(r.bytes == 50000);
  for (const auto& l : t.lines)
    if (l.path.ends_with("/stdio.dat") && (l.op == "write" || l.op == "read")) CHECK(l.layer == "stdio");
}

TEST_CASE("tracer: metadata ops are recorded and repeated ones compress", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"meta", d.path()});
  REQUIRE(t.run.exit_code == 0);
  std::map<std::string, int64_t> counts;
  for (const auto& l : t.lines)
    if (l.dataset == "iosonar.trace" && l.path.find("/sub") != std::string::npos) counts[l.op] += l.count;
  CHECK(counts["mkdir"] == 1);
  CHECK(counts["stat"] == 10);
  CHECK(counts["access"] == 1);
  CHECK(counts["rename"] == 1);
  CHECK(counts["unlink"] == 1);
  CHECK(counts["rmdir"] == 1);
  CHECK(Totals(t.lines, "stat", "/sub/a").records == 1);
}

TEST_CASE("tracer: records carry job id, host and sequence numbers, counters add up", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"write", d / "w.dat", "1000", "4096"}, {{"IOSONAR_JOB_ID", "job-42"}, {"SLURM_JOB_ID", ""}});
  REQUIRE(t.run.exit_code == 0);
  REQUIRE(!t.lines.empty());
  int64_t trace_records = 0;
  for (size_t i = 0; i < t.lines.size(); ++i) {
    CHECK(t.lines[i].job == "job-42");
    CHECK(t.lines[i].seq == static_cast<int64_t>(i));
    trace_records += t.lines[i].dataset == "iosonar.trace";
  }
  const auto& last = t.lines.back();
  REQUIRE(last.action == "exit");
  CHECK(last.records == trace_records);
  CHECK(last.dropped == 0);
  CHECK(last.raw_ops >= 1002);  // open + 1000 writes + close
  auto w = Totals(t.lines, "write", "/w.dat");
  CHECK(w.count == 1000);
  CHECK(w.records == 1);
}

TEST_CASE("tracer: the time window closes runs so per-second bandwidth survives", "[tracer][compression]") {
  TempDir d;
  // A 1 ms window over a write loop long enough to span several windows.
  auto t = Behaviour(d, {"write", d / "w.dat", "20000", "4096"}, {{"IOSONAR_WINDOW_MS", "1"}});
  REQUIRE(t.run.exit_code == 0);
  auto w = Totals(t.lines, "write", "/w.dat");
  CHECK(w.count == 20000);
  CHECK(w.bytes == 20000 * 4096);
  REQUIRE(w.records > 1);
  // Each run lies within its window: its last op started before the window's
  // end, so the span is at most the window plus that op's duration (bounded by
  // the run's summed durations; a loaded machine can stretch one write a lot).
  for (const auto& l : t.lines)
    if (l.op == "write" && l.count > 1) CHECK(l.end - l.start <= 1'000'000 + l.dur + 100'000);
}

TEST_CASE("tracer: IOSONAR_DISABLE=1 turns it off", "[tracer]") {
  TempDir d;
  auto r = Run({ProgramPath("tp_behaviour"), "write", d / "w.dat", "10", "4096"},
               {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", d / "out.jsonl"}, {"IOSONAR_DISABLE", "1"}});
  CHECK(r.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(d / "out.jsonl"));
  CHECK(std::filesystem::file_size(d / "w.dat") == 40960);
}

TEST_CASE("tracer: a bad IOSONAR_OUTPUT is reported in the tracer's log, never on the program's stderr, and the program runs untraced",
          "[tracer]") {
  TempDir d;
  auto r = Run({ProgramPath("tp_behaviour"), "write", d / "w.dat", "10", "4096"},
               {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", "tcp://nohostport"}, {"IOSONAR_LOG", d / "tracer.log"}});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const std::string log = ReadFile(d / "tracer.log");
  CHECK(log.find("tcp://nohostport") != std::string::npos);
  CHECK(log.find("tracing is off") != std::string::npos);
  struct stat st;
  REQUIRE(stat((d / "tracer.log").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("tracer: collector down, then up: spooled records are resent, nothing lost, nothing twice", "[tracer][spool]") {
  TempDir d;
  int port = FreePort();
  std::string out = "tcp://127.0.0.1:" + std::to_string(port);
  std::string spool = d / "spool";
  std::map<std::string, std::string> env{{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", out}, {"IOSONAR_SPOOL_DIR", spool},
                                         {"IOSONAR_JOB_ID", "spooljob"}};
  // 1. Nobody listens: the records go to the spool.
  auto r1 = Run({ProgramPath("tp_behaviour"), "fork", d.path()}, env);
  REQUIRE(r1.exit_code == 0);
  std::string spooled_text;
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(spool)) {
    spooled_text += ReadFile(e.path());
    ++files;
  }
  CHECK(files == 2);  // parent and child each spool their own file
  auto spooled = ParseTraceLines(spooled_text);
  REQUIRE(spooled.size() > 6);
  CHECK(Totals(spooled, "write", "/parent.dat").bytes == 20 * 4096);
  std::filesystem::copy(spool, d / "spool-copy");

  // 2. The collector comes up; the next traced process resends the spool.
  CollectorOptions co;
  co.listen = out;
  co.store_dir = d / "store";
  auto col = Collector::Start(co);
  REQUIRE(col.ok());
  auto r2 = Run({ProgramPath("tp_behaviour"), "write", d / "later.dat", "5", "4096"}, env);
  REQUIRE(r2.exit_code == 0);
  REQUIRE((*col)->Drain(1, 20000).ok());
  CHECK(std::filesystem::is_empty(spool));
  auto s1 = (*col)->stats();
  CHECK(s1.rejected == 0);
  // Everything spooled, plus the second program's own 5 lines (start, open, write run, close, exit).
  CHECK(s1.stored == spooled.size() + 5);
  CHECK(s1.duplicates == 0);

  // 3. The same spool files appear again (a resend that broke half-way):
  //    stored once, counted as duplicates.
  for (const auto& e : std::filesystem::directory_iterator(d / "spool-copy"))
    std::filesystem::copy(e.path(), spool + "/" + e.path().filename().string());
  auto r3 = Run({ProgramPath("tp_behaviour"), "write", d / "later2.dat", "5", "4096"}, env);
  REQUIRE(r3.exit_code == 0);
  REQUIRE((*col)->Drain(2, 20000).ok());
  auto s2 = (*col)->stats();
  CHECK(s2.duplicates == spooled.size());
  REQUIRE((*col)->Stop().ok());
  auto store = OpenSqliteStore(d / "store");
  REQUIRE(store.ok());
  auto all = (*store)->Count("iosonar.trace", {});
  INFO("all trace records: " << (all.ok() ? std::to_string(*all) : all.status().ToString()) << " path " << d / "parent.dat");
  auto n = (*store)->Count("iosonar.trace", {{field::kFilePath, d / "parent.dat"}});
  REQUIRE(n.ok());
  CHECK(*n == static_cast<uint64_t>(Totals(spooled, "write", "/parent.dat").records + Totals(spooled, "open", "/parent.dat").records +
                                    Totals(spooled, "close", "/parent.dat").records));
}

TEST_CASE("tracer: records of a thread that stops doing I/O still leave within a few windows", "[tracer][spool]") {
  TempDir d;
  CollectorOptions co;
  co.listen = "tcp://127.0.0.1:0";
  co.store_dir = d / "store";
  auto col = Collector::Start(co);
  REQUIRE(col.ok());
  std::string out = "tcp://127.0.0.1:" + std::to_string((*col)->port());
  // 100 ms windows; the program then computes for 60 s without any I/O. It is
  // single-threaded, where the flusher thread is opt-in.
  Child prog({ProgramPath("tp_behaviour"), "idle", d.path(), "60000"},
             {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", out}, {"IOSONAR_WINDOW_MS", "100"}, {"IOSONAR_FLUSHER", "1"},
              {"IOSONAR_RING_DIR", d / "ring"}});  // it is stopped by SIGTERM: its ring stays there, not in /dev/shm
  // open, the write run and close (and the tracer's start record) arrive while it is still running.
  bool arrived = WaitUntil([&] { return (*col)->stats().stored >= 4; }, 20000);
  CHECK(prog.Alive());
  CHECK(arrived);
  prog.Stop();
  REQUIRE((*col)->Stop().ok());
  auto store = OpenSqliteStore(d / "store");
  REQUIRE(store.ok());
  auto n = (*store)->Count("iosonar.trace", {{field::kFilePath, d / "before-idle.dat"}});
  REQUIRE(n.ok());
  CHECK(*n == 3);
}

// POSIX AIO: glibc's helper threads do the I/O through internal calls no
// wrapper sees; the ops are taken from the control blocks (submitted by
// aio_read/aio_write, collected by aio_return). fio's posixaio engine, with
// a file laid out beforehand (so fio writes nothing else), must come out with
// exactly the bytes and ops fio reports.
TEST_CASE("tracer: POSIX AIO (fio's posixaio engine) is traced with fio's own totals", "[tracer][fio]") {
  if (!HaveProgram("fio")) FAIL("fio is not installed (scripts/setup.sh --test installs it)");
  TempDir d;
  const std::string file = d / "aio.dat";
  {
    std::string block(1 << 20, 'x');
    FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    for (int i = 0; i < 8; ++i) REQUIRE(std::fwrite(block.data(), 1, block.size(), f) == block.size());
    REQUIRE(std::fclose(f) == 0);
  }
  const std::string json = d / "fio.json";
  auto t = RunTraced({"fio", "--name=aio", "--filename=" + file, "--ioengine=posixaio", "--iodepth=8", "--rw=randrw",
                      "--bs=16k", "--size=8m", "--io_size=16m", "--output-format=json", "--output=" + json},
                     d / "out.jsonl");
  INFO(t.run.err);
  REQUIRE(t.run.exit_code == 0);
  rapidjson::Document j;
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  j.Parse(text.c_str());
  REQUIRE_FALSE(j.HasParseError());
  const auto& job = j["jobs"][0];
  const int64_t rb = job["read"]["io_bytes"].GetInt64(), wb = job["write"]["io_bytes"].GetInt64();
  const int64_t rn = job["read"]["total_ios"].GetInt64(), wn = job["write"]["total_ios"].GetInt64();
  REQUIRE(rb > 0);
  REQUIRE(wb > 0);
  CHECK(rb + wb == 16 << 20);
  auto r = Totals(t.lines, "read", "/aio.dat");
  auto w = Totals(t.lines, "write", "/aio.dat");
  CHECK(r.bytes == rb);
  CHECK(r.count == rn);
  CHECK(w.bytes == wb);
  CHECK(w.count == wn);
  // Each op is timed from submission to collection: never negative.
  for (const auto& l : t.lines)
    if (l.path == file) CHECK(l.end >= l.start);
}

// A signal handler that writes to a traced file while the program's thread is
// inside a traced call: before, the handler's write waited for the slot lock
// its own interrupted thread held, and the program hung (SIGALRM every 20 us
// during 300,000 pwrites hung every run). Now it runs, untraced if it came
// while the tracer held the slot, and each such call is counted in
// tracer.dropped: the handler's traced writes and the dropped count add up to
// the writes the handler made. The main loop's writes are all recorded.
TEST_CASE("tracer: a signal handler's I/O during a traced call neither hangs the program nor goes uncounted",
          "[tracer][signal]") {
  TempDir d;
  auto t = RunTraced({"timeout", "120", ProgramPath("tp_behaviour"), "signalio", d.path(), "300000"}, d / "out.jsonl");
  INFO(t.run.err);
  REQUIRE(t.run.exit_code == 0);  // 124: timed out (the hang)
  const std::string prefix = "handler writes ";
  const size_t at = t.run.out.find(prefix);
  REQUIRE(at != std::string::npos);
  const int64_t handler = std::stoll(t.run.out.substr(at + prefix.size()));
  REQUIRE(handler > 100);  // the timer did fire during the loop
  auto main_w = Totals(t.lines, "write", "/main.dat");
  auto handler_w = Totals(t.lines, "write", "/handler.dat");
  CHECK(main_w.count == 300000);
  CHECK(main_w.bytes == int64_t{300000} * 4096);
  int64_t pid = 0, dropped = -1;
  for (const auto& l : t.lines)
    if (l.path == d / "main.dat") pid = l.pid;
  for (const auto& l : t.lines)
    if (l.dataset == "iosonar.tracer" && l.pid == pid) dropped = std::max(dropped, l.dropped);
  REQUIRE(dropped >= 0);
  CHECK(handler_w.count + dropped == handler);
  CHECK(handler_w.bytes == handler_w.count);
}

// An AIO op the program never collects with aio_return is not recorded (its
// result was never known), and counted as dropped at exit.
TEST_CASE("tracer: AIO never collected with aio_return is counted as dropped", "[tracer]") {
  TempDir d;
  auto t = Behaviour(d, {"aionoreturn", d.path()});
  INFO(t.run.err);
  REQUIRE(t.run.exit_code == 0);
  auto w = Totals(t.lines, "write", "/aio.dat");
  CHECK(w.count == 1);
  CHECK(w.bytes == 4096);
  int64_t dropped = -1;
  for (const auto& l : t.lines)
    if (l.dataset == "iosonar.tracer" && l.action == "exit") dropped = std::max(dropped, l.dropped);
  CHECK(dropped == 1);
}
