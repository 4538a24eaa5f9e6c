// The node agent (`iosonar-exporter agent`) and the tracer's agent mode
// (IOSONAR_OUTPUT=agent), end to end with a real `iosonar collect` over
// Lumberjack: processes that die by any signal lose nothing, a sleeping
// single-threaded program's records are stored within 3 s without a thread
// of the tracer's, a collector killed with SIGKILL mid-stream loses nothing
// and stores nothing twice, and rings are read as hostile input (directories
// of other users that are links, not theirs or group-writable are refused;
// crafted rings are skipped, reported once, and never crash the agent).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <memory>
#include <set>
#include <sstream>

#include "exporters/trace/ring.h"
#include "exporters/agent/ring_agent.h"
#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {

std::string LeanBin() { return BinaryDir() + "/iosonar-exporter"; }

// A ring directory as the tracer makes it: ROOT/iosonar-ring-UID, 0700.
std::string RingDir(const std::string& root, uid_t uid) {
  std::string d = root + "/iosonar-ring-" + std::to_string(uid);
  fs::create_directories(root);
  mkdir(d.c_str(), 0700);
  REQUIRE(chmod(d.c_str(), 0700) == 0);
  REQUIRE(chown(d.c_str(), uid, 0) == 0);
  return d;
}

std::map<std::string, std::string> AgentEnv(const std::string& ring_dir) {
  return {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", "agent"}, {"IOSONAR_RING_DIR", ring_dir}, {"IOSONAR_FLUSHER", ""}};
}

bool DirEmpty(const std::string& d) { return !fs::exists(d) || fs::is_empty(d); }
// Ring files (ring-*) in a ring directory.
int RingFiles(const std::string& d) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(d)) n += e.path().filename().string().rfind("ring-", 0) == 0;
  return n;
}

struct Collector {
  Collector(const std::string& store, int p, const std::string& log)
      : argv{IosonarBin(), "collect", "--store", store, "--listen", "tcp://127.0.0.1:" + std::to_string(p)}, port(p) {
    Start(log);
  }
  void Start(const std::string& log) {
    c = std::make_unique<Child>(argv, std::map<std::string, std::string>{}, log);
    REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  }
  std::vector<std::string> argv;
  int port;
  std::unique_ptr<Child> c;
};

// A real agent shipping the rings under D/shm to the collector on port
// (lumberjack), then `more`.
std::vector<std::string> ShippingAgent(const TempDir& d, int port, std::vector<std::string> more) {
  std::vector<std::string> a = {LeanBin(), "agent", "--ring-root", d / "shm", "--output",
                                "lumberjack://127.0.0.1:" + std::to_string(port)};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// The same, spooling to D/spool (made here, 0700) while the collector is away.
std::vector<std::string> SpoolingAgent(const TempDir& d, int port, const std::string& interval) {
  REQUIRE(mkdir((d / "spool").c_str(), 0700) == 0);
  return ShippingAgent(d, port, {"--spool-dir", d / "spool", "--interval", interval});
}

// Runs tp_behaviour writing 4 KiB to D/w0, D/w1, ... under an environment:
// exit 0, nothing on the program's stderr (the tracer's words go to its
// log), the file whole.
struct Writes {
  const TempDir& d;
  int runs = 0;
  void operator()(const std::map<std::string, std::string>& e) {
    const std::string f = d / ("w" + std::to_string(runs++));
    auto r = Run({ProgramPath("tp_behaviour"), "write", f, "1", "4096"}, e);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(fs::file_size(f) == 4096);
  }
};

std::vector<TraceLine> Stored(const std::string& store) {
  auto a = Run({IosonarBin(), "store-export", "--store", store});
  auto b = Run({IosonarBin(), "store-export", "--store", store, "--dataset", "iosonar.tracer"});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  return ParseTraceLines(a.out + b.out);
}

// No (event.stream, event.seq) twice.
size_t Duplicates(const std::vector<TraceLine>& lines) {
  std::set<std::pair<int64_t, int64_t>> keys;
  size_t dup = 0;
  for (const auto& l : lines) dup += !keys.emplace(l.stream, l.seq).second;
  return dup;
}

// Ships what the rings under d/shm hold (left by processes that ran with no
// agent) through a real agent and collector; returns what was stored.
std::vector<TraceLine> ShipLeftRings(const TempDir& d, const std::string& ring) {
  const int port = FreePort();
  Collector col(d / "store", port, d / "collect.log");
  {
    Child agent(ShippingAgent(d, port, {"--interval", "0.1"}), {}, d / "agent.log");
    // (A ring whose buffer spilled holds up to 16 slots of runs: tens of
    // thousands of lines into the store, slow on a loaded machine.)
    REQUIRE(WaitUntil([&] { return DirEmpty(ring); }, 90000));
  }
  col.c->Stop(30000);
  return Stored(d / "store");
}

}  // namespace

TEST_CASE("agent: SIGTERM, SIGKILL, SIGSEGV and _exit under IOSONAR_OUTPUT=agent: every byte stored, exact, the end recorded",
          "[tracer][agent][death]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  const int port = FreePort();
  Collector col(d / "store", port, d / "collect.log");
  Child agent(SpoolingAgent(d, port, "0.2"), {}, d / "agent.log");
  const std::vector<std::string> hows = {"SIGTERM", "SIGKILL", "segv", "_exit"};
  std::map<std::string, int> pids;
  std::vector<std::unique_ptr<Child>> progs;
  for (const auto& how : hows) {
    fs::create_directories(d / how);
    std::string prog_how = how == "segv" || how == "_exit" ? how : "wait";
    progs.push_back(std::make_unique<Child>(std::vector<std::string>{ProgramPath("tp_behaviour"), "die", d / how, prog_how},
                                            AgentEnv(ring), d / (how + ".log")));
  }
  for (size_t i = 0; i < hows.size(); ++i) {
    const std::string& how = hows[i];
    REQUIRE(WaitUntil([&] { return fs::exists(d / (how + "/ready")); }, 30000));
    pids[how] = std::stoi(ReadFile(d / (how + "/ready")));
    if (how == "SIGTERM") REQUIRE(kill(pids[how], SIGTERM) == 0);
    if (how == "SIGKILL") REQUIRE(kill(pids[how], SIGKILL) == 0);
    REQUIRE(WaitUntil([&] { return !progs[i]->Alive(); }, 30000));
  }
  // Shipped and acknowledged (the collector acknowledges once stored): the agent removes the rings.
  bool gone = WaitUntil([&] { return DirEmpty(ring); }, 20000);
  INFO(ReadFile(d / "agent.log"));
  REQUIRE(gone);
  REQUIRE(ExitCode(agent.Stop(10000)) == 0);
  REQUIRE(ExitCode(col.c->Stop(30000)) == 0);
  auto lines = Stored(d / "store");
  CHECK(Duplicates(lines) == 0);
  for (const auto& how : hows) {
    INFO(how);
    auto w = Totals(lines, "write", "/" + how + "/die.dat");
    CHECK(w.bytes == (2048 + 100) * 4096);
    CHECK(w.count == 2048 + 100);
    auto r = Totals(lines, "read", "/" + how + "/die.dat");
    CHECK(r.bytes == 16 * 4096);
    CHECK(r.count == 16);
    int64_t starts = 0, ends = 0, other_ends = 0;
    for (const auto& l : lines) {
      if (l.dataset != "iosonar.tracer" || l.pid != pids[how]) continue;
      starts += l.action == "start";
      if (l.action == (how == "_exit" ? "exit" : "killed")) {
        ++ends;
        CHECK(l.records > 0);
        CHECK(l.raw_ops >= 2048 + 100 + 16);
      } else if (l.action != "start") {
        ++other_ends;
      }
    }
    CHECK(starts == 1);
    CHECK(ends == 1);
    CHECK(other_ends == 0);
  }
}

TEST_CASE("agent mode: a buffer filled by detail runs while no agent drains keeps room for the aggregates: ops exact, "
          "none dropped",
          "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  // No budget: every run is a detail run, so random preads fill the 1,024-run
  // buffer at once, with no agent running; the rest fold into aggregates, and
  // each second boundary closes one (1.5 million preads take seconds).
  auto env = AgentEnv(ring);
  env["IOSONAR_DETAIL_BUDGET"] = "0";
  auto r = Run({ProgramPath("tp_pattern"), "pread-rand", d / "f", "4096", "1500000"}, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_FALSE(DirEmpty(ring));
  auto lines = ShipLeftRings(d, ring);
  int64_t reads = 0, aggregated = 0, dropped = 0;
  for (const auto& l : lines) {
    if (l.dataset == "iosonar.trace" && l.op == "read") reads += l.count, aggregated += l.aggregated ? l.count : 0;
    if (l.dataset == "iosonar.tracer") dropped = std::max(dropped, l.dropped);
  }
  CHECK(dropped == 0);
  CHECK(reads == 1500000);
  CHECK(aggregated > 0);  // the buffer did fill: the rest went into aggregates
}

TEST_CASE("agent mode with no agent: rings waiting in the directory are bounded by IOSONAR_RING_MAX_FILES, the program "
          "unchanged, the rest shipped when a drainer comes",
          "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  auto env = AgentEnv(ring);
  env["IOSONAR_RING_MAX_FILES"] = "5";
  env["IOSONAR_LOG"] = d / "tracer.log";
  for (int i = 0; i < 12; ++i) {
    auto r = Run({ProgramPath("tp_behaviour"), "write", d / ("w" + std::to_string(i)), "1", "4096"}, env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());  // the tracer's words go to its log, never the program's stderr
    CHECK(fs::file_size(d / ("w" + std::to_string(i))) == 4096);
  }
  int rings = 0;
  for (const auto& e : fs::directory_iterator(ring)) rings += e.path().filename().string().rfind("ring-", 0) == 0;
  CHECK(rings == 5);
  const std::string log = ReadFile(d / "tracer.log");
  CHECK(log.find("5 rings wait unshipped (IOSONAR_RING_MAX_FILES") != std::string::npos);
  // The five that waited are shipped whole by the next drainer.
  auto lines = ShipLeftRings(d, ring);
  std::set<std::string> files;
  for (const auto& l : lines)
    if (l.dataset == "iosonar.trace" && l.op == "write" && l.bytes == 4096) files.insert(fs::path(l.path).filename());
  CHECK(files.size() == 5);
  CHECK(DirEmpty(ring));
}

TEST_CASE("agent: a single-threaded program that writes, then sleeps, has its records stored within 3 s",
          "[tracer][agent][realtime]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  const int port = FreePort();
  Collector col(d / "store", port, d / "collect.log");
  Child agent(ShippingAgent(d, port, {"--interval", "0.25"}), {}, d / "agent.log");
  Child prog({ProgramPath("tp_behaviour"), "die", d.path(), "wait"}, AgentEnv(ring), d / "prog.log");
  REQUIRE(WaitUntil([&] { return fs::exists(d / "ready"); }, 30000));
  const int pid = std::stoi(ReadFile(d / "ready"));
  // No thread of the tracer's in the program: only its own.
  CHECK(fs::exists("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid)));
  size_t threads = 0;
  for (auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) threads += e.is_directory();
  CHECK(threads == 1);
  // While it sleeps, every byte it wrote and read is in the store within 3 s.
  bool stored = WaitUntil(
      [&] {
        auto a = Run({IosonarBin(), "store-export", "--store", d / "store"});
        if (a.exit_code != 0) return false;
        auto lines = ParseTraceLines(a.out);
        return Totals(lines, "write", "/die.dat").bytes == (2048 + 100) * 4096 &&
               Totals(lines, "read", "/die.dat").bytes == 16 * 4096;
      },
      3000);
  CHECK(stored);
  CHECK(kill(pid, 0) == 0);  // still sleeping
  REQUIRE(kill(pid, SIGKILL) == 0);
  REQUIRE(WaitUntil([&] { return !prog.Alive(); }, 10000));
  REQUIRE(WaitUntil([&] { return DirEmpty(ring); }, 20000));
  agent.Stop(10000);
  col.c->Stop(30000);
  auto lines = Stored(d / "store");
  CHECK(Duplicates(lines) == 0);
  CHECK(Totals(lines, "write", "/die.dat").count == 2048 + 100);  // nothing shipped twice after the death
  int64_t killed = 0;
  for (const auto& l : lines) killed += l.action == "killed" && l.pid == pid;
  CHECK(killed == 1);
  // Every record names the ring's owner (user.id), checked by the agent.
  auto exported = Run({IosonarBin(), "store-export", "--store", d / "store"});
  REQUIRE(exported.exit_code == 0);
  const std::string uid_field = "\"user.id\":\"" + std::to_string(geteuid()) + "\"";
  size_t with_uid = 0, total = 0;
  for (const auto& l : SplitLines(exported.out)) total += !l.empty(), with_uid += l.find(uid_field) != std::string::npos;
  CHECK(total > 0);
  CHECK(with_uid == total);
}

TEST_CASE("agent: collector killed with SIGKILL while the agent ships, restarted: 0 lost, 0 stored twice",
          "[tracer][agent][lumberjack]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  const int port = FreePort();
  Collector col(d / "store", port, d / "collect1.log");
  Child agent(SpoolingAgent(d, port, "0.1"), {}, d / "agent.log");
  // 24 programs one after another, each 3,000 pwrites at never-adjacent
  // offsets and no detail budget: one record per op (past a slot's buffer
  // between two passes, exact per-interval aggregates).
  auto env = AgentEnv(ring);
  env["IOSONAR_DETAIL_BUDGET"] = "0";
  const int programs = 24, ops = 3000;
  for (int i = 0; i < programs; ++i) {
    if (i == 8) REQUIRE(kill(col.c->pid(), SIGKILL) == 0);  // mid-stream: windows in flight, rings being shipped
    if (i == 8) col.c->Stop(5000);                           // reaps it
    if (i == 14) col.Start(d / "collect2.log");
    auto r = Run({ProgramPath("tp_pattern"), "pwrite-rand", d / ("f" + std::to_string(i)), "4096", std::to_string(ops)}, env);
    REQUIRE(r.exit_code == 0);
  }
  bool gone = WaitUntil([&] { return DirEmpty(ring); }, 60000);
  // The agent's spool is resent once the collector is back; then it is empty.
  bool spool_empty = WaitUntil(
      [&] {
        for (auto& e : fs::directory_iterator(d / "spool"))
          if (e.file_size() > 0) return false;
        return true;
      },
      60000);
  CHECK(gone);
  CHECK(spool_empty);
  REQUIRE(ExitCode(agent.Stop(10000)) == 0);
  // The outage happened while the agent shipped: it spooled, and then everything was acknowledged.
  const std::string log = ReadFile(d / "agent.log");
  INFO(log);
  auto at = log.find("spooled ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoll(log.substr(at + 8)) > 0);
  CHECK(log.find("dropped 0)") != std::string::npos);
  REQUIRE(ExitCode(col.c->Stop(30000)) == 0);
  auto lines = Stored(d / "store");
  CHECK(Duplicates(lines) == 0);
  int64_t bytes = 0, count = 0, exits = 0;
  for (const auto& l : lines) {
    if (l.dataset == "iosonar.trace" && l.op == "write") {
      bytes += l.bytes;
      count += l.count;
    }
    exits += l.dataset == "iosonar.tracer" && l.action == "exit";
  }
  CHECK(count == int64_t{programs} * ops);
  CHECK(bytes == int64_t{programs} * ops * 4096);
  CHECK(exits == programs);
}

TEST_CASE("trace --output lumberjack://: the program in agent mode, killed or exiting, every byte acknowledged once",
          "[tracer][agent][lumberjack][trace]") {
  TempDir d;
  const int port = FreePort();
  Collector col(d / "store", port, d / "collect.log");
  REQUIRE(mkdir((d / "spool").c_str(), 0700) == 0);
  const std::string out = "lumberjack://127.0.0.1:" + std::to_string(port);
  // SIGKILL of the program while `iosonar trace` runs it (the ready file holds the program's pid).
  fs::create_directories(d / "k");
  Child tr({IosonarBin(), "trace", "--output", out, "--spool-dir", d / "spool", "--job-id", "ack-1", "--",
            ProgramPath("tp_behaviour"), "die", d / "k", "wait"},
           {{"IOSONAR_FLUSHER", ""}}, d / "trace-k.log");
  REQUIRE(WaitUntil([&] { return fs::exists(d / "k/ready"); }, 30000));
  const int pid = std::stoi(ReadFile(d / "k/ready"));
  REQUIRE(kill(pid, SIGKILL) == 0);
  const int st = tr.Wait();
  INFO(ReadFile(d / "trace-k.log"));
  CHECK(WEXITSTATUS(st) == 128 + SIGKILL);
  // An exiting program under the same output.
  fs::create_directories(d / "x");
  auto r = Run({IosonarBin(), "trace", "--output", out, "--spool-dir", d / "spool", "--job-id", "ack-2", "--",
                ProgramPath("tp_behaviour"), "die", d / "x", "_exit"});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find(" 0 spooled for a later resend, 0 dropped)") != std::string::npos);
  // Nothing left behind: the run's ring root is gone.
  for (auto& e : fs::directory_iterator("/dev/shm"))
    CHECK(e.path().filename().string().find("iosonar-trace-" + std::to_string(geteuid()) + "-") == std::string::npos);
  REQUIRE(ExitCode(col.c->Stop(30000)) == 0);
  auto lines = Stored(d / "store");
  CHECK(Duplicates(lines) == 0);
  for (const std::string how : {"k", "x"}) {
    INFO(how);
    auto w = Totals(lines, "write", "/" + how + "/die.dat");
    CHECK(w.bytes == (2048 + 100) * 4096);
    CHECK(w.count == 2048 + 100);
    auto rd = Totals(lines, "read", "/" + how + "/die.dat");
    CHECK(rd.bytes == 16 * 4096);
    CHECK(rd.count == 16);
  }
  int64_t killed = 0, exited = 0;
  for (const auto& l : lines) {
    killed += l.dataset == "iosonar.tracer" && l.action == "killed" && l.pid == pid;
    exited += l.dataset == "iosonar.tracer" && l.action == "exit";
  }
  CHECK(killed == 1);
  CHECK(exited == 1);
}

namespace {

// A ring as a traced program leaves it when it exits in agent mode (finished, unsent), moved to dir.
std::string MakeEndedRing(const TempDir& d, const std::string& tag) {
  const std::string src_root = d / ("src-" + tag);
  const std::string src = RingDir(src_root, geteuid());
  fs::create_directories(d / ("data-" + tag));
  auto r = Run({ProgramPath("tp_behaviour"), "die", d / ("data-" + tag), "_exit"}, AgentEnv(src));
  REQUIRE(r.exit_code == 3);
  std::string name;
  for (auto& e : fs::directory_iterator(src)) name = e.path().filename();
  REQUIRE(!name.empty());
  return src + "/" + name;
}

void PlaceRing(const std::string& ring, const std::string& dir, uid_t uid) {
  std::string to = dir + "/" + fs::path(ring).filename().string();
  fs::copy_file(ring, to, fs::copy_options::overwrite_existing);
  REQUIRE(chown(to.c_str(), uid, 0) == 0);
  REQUIRE(chmod(to.c_str(), 0600) == 0);
}

}  // namespace

TEST_CASE("agent: as root, ring directories of another uid that are links, not theirs or group-writable are refused",
          "[tracer][agent][hostile]") {
  REQUIRE(geteuid() == 0);  // the agent's privileged case; the suite runs as root here
  TempDir d;
  const std::string ring = MakeEndedRing(d, "a");
  const std::string root = d / "shm";
  fs::create_directories(root);
  // The control: a proper directory of uid 65531 with its own ring is shipped.
  PlaceRing(ring, RingDir(root, 65531), 65531);
  // A link to a proper-looking directory of uid 65534.
  const std::string real = RingDir(d / "elsewhere", 65534);
  PlaceRing(ring, real, 65534);
  REQUIRE(symlink(real.c_str(), (root + "/iosonar-ring-65534").c_str()) == 0);
  // A directory named for uid 65533 but owned by 65534.
  const std::string wrong = RingDir(root, 65533);
  REQUIRE(chown(wrong.c_str(), 65534, 0) == 0);
  PlaceRing(ring, wrong, 65534);
  PlaceRing(ring, wrong, 65533);
  // Group-writable.
  const std::string gw = RingDir(root, 65532);
  REQUIRE(chmod(gw.c_str(), 0770) == 0);
  PlaceRing(ring, gw, 65532);
  // A proper directory holding a ring of another uid, and a link to a ring.
  const std::string other = RingDir(root, 65530);
  PlaceRing(ring, other, 65531);
  const std::string name = fs::path(ring).filename();
  const std::string linked = RingDir(root, 65528);
  REQUIRE(symlink(ring.c_str(), (linked + "/" + name).c_str()) == 0);

  auto r = Run({LeanBin(), "agent", "--ring-root", root, "--output", d / "out.jsonl", "--count", "1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = ParseTraceLines(ReadFile(d / "out.jsonl"));
  // Only the control ring went out (one start, one exit, its writes once).
  CHECK(Totals(lines, "write", "/die.dat").bytes == (2048 + 100) * 4096);
  CHECK(!fs::exists(root + "/iosonar-ring-65531/" + name));  // shipped and removed
  CHECK(fs::exists(real + "/" + name));                      // untouched
  CHECK(fs::exists(wrong + "/" + name));
  CHECK(fs::exists(gw + "/" + name));
  CHECK(fs::exists(other + "/" + name));
  CHECK(fs::exists(ring));  // the link's target
  CHECK(r.err.find("iosonar-ring-65534: not opened as a directory") != std::string::npos);
  CHECK(r.err.find("iosonar-ring-65533: owned by uid 65534") != std::string::npos);
  CHECK(r.err.find("iosonar-ring-65532: owned by uid 65532 with mode 0770") != std::string::npos);
  CHECK(r.err.find("iosonar-ring-65530/" + name + ": not a regular file of uid 65530") != std::string::npos);
  CHECK(r.err.find("iosonar-ring-65528/" + name) != std::string::npos);
}

namespace {

// Applies fn to a mapping of a copy of ring named name in dir.
template <typename Fn>
void Craft(const std::string& ring, const std::string& dir, const std::string& name, Fn&& fn) {
  std::string to = dir + "/" + name;
  fs::copy_file(ring, to, fs::copy_options::overwrite_existing);
  int fd = open(to.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  void* m = mmap(nullptr, trace::kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(m != MAP_FAILED);
  fn(static_cast<char*>(m), fd);
  munmap(m, trace::kRingBytes);
  close(fd);
}

}  // namespace

TEST_CASE("agent: crafted malformed rings are skipped, reported once, and never crash the agent", "[tracer][agent][hostile]") {
  using namespace iosonar::trace;
  TempDir d;
  const std::string ring = MakeEndedRing(d, "m");
  const std::string name = fs::path(ring).filename();
  const int pid = std::stoi(name.substr(5));
  const std::string root = d / "shm";
  const std::string dir = RingDir(root, geteuid());
  auto nm = [&](int k) { return "ring-" + std::to_string(pid) + "-" + std::string(15, '0') + std::to_string(k) + ".bin"; };
  Craft(ring, dir, nm(1), [](char* b, int) { RingHead(b)->slots_hwm = 100000; });
  // More runs held than a buffer holds, either way round the circle.
  Craft(ring, dir, nm(2), [](char* b, int) { RingSlots(b)[0].tail = RingHead(b)->shipped[0] + (1u << 30); });
  Craft(ring, dir, nm(3), [](char* b, int) { RingSlots(b)[0].tail = RingHead(b)->shipped[0] - 7; });
  Craft(ring, dir, nm(4), [](char* b, int) { memset(RingSlots(b)[0].comp_mem, 0x7f, sizeof RingSlots(b)[0].comp_mem); });
  Craft(ring, dir, nm(5), [](char* b, int) { memset(RingSlots(b)[0].agg_mem, 0xff, sizeof RingSlots(b)[0].agg_mem); });
  Craft(ring, dir, nm(6), [](char* b, int) { RingHead(b)->ns_per_tick = std::nan(""); });
  Craft(ring, dir, nm(7), [](char* b, int) { memset(RingHead(b)->job, 'j', sizeof RingHead(b)->job); });
  Craft(ring, dir, nm(8), [](char* b, int) { RingHead(b)->cmdline_len = 1u << 31; });
  Craft(ring, dir, nm(9), [](char* b, int) { RingHead(b)->pid = 1; });  // not the file name's pid
  Craft(ring, dir, nm(10), [](char*, int fd) { REQUIRE(ftruncate(fd, 8192) == 0); });
  Craft(ring, dir, nm(11), [](char* b, int) { memset(b, 0x41, 4096); });
  // Well-formed where it matters, hostile in content: paths without a NUL, a
  // huge clock offset and counts, an unknown op. Shipped, never crashing.
  Craft(ring, dir, nm(12), [](char* b, int) {
    for (int i = 0; i < kPathSlots; ++i) {
      PathSlot& p = RingPaths(b)[i];
      if (p.id) memset(p.path, 'A', sizeof p.path);
    }
    RingHead(b)->tick0 = ~uint64_t{0} / 3;
    RingHead(b)->real0 = int64_t{1} << 61;
    Slot& s = RingSlots(b)[0];
    const uint32_t first = RingHead(b)->shipped[0];
    for (uint32_t k = 0; k < SlotHeld(s.tail, first) && k < 4; ++k) {
      s.at(first + k).op = static_cast<Op>(200);
      s.at(first + k).dur = ~uint64_t{0};
      s.at(first + k).count = ~uint64_t{0};
    }
  });
  Craft(ring, dir, nm(13), [](char*, int) {});  // an intact copy: shipped

  auto r = iosonar::test::Run({LeanBin(), "agent", "--ring-root", root, "--output", d / "out.jsonl", "--count", "3"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (int k : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11}) {
    INFO(k);
    size_t at = r.err.find(nm(k) + ": malformed ring");
    CHECK(at != std::string::npos);
    CHECK(r.err.find(nm(k) + ": malformed ring", at + 1) == std::string::npos);  // once, over three passes
    CHECK(fs::exists(dir + "/" + nm(k)));                                          // left where it is
  }
  CHECK(r.err.find(nm(10) + ": not a regular file of uid") != std::string::npos);  // the wrong size
  // Each set aside once over the three passes, in the summary and in the
  // agent's own iosonar.sampler records, which go out with the data.
  CHECK(r.err.find("10 malformed rings, 1 refused") != std::string::npos);
  {
    int64_t warnings = 0, reports = 0, output_ok = 0;
    std::string error;
    std::istringstream in(ReadFile(d / "out.jsonl"));
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"sampler.name\":\"agent\"") == std::string::npos) continue;
      CHECK(line.find("\"event.dataset\":\"iosonar.sampler\"") != std::string::npos);
      CHECK(ParseTraceLines(line + "\n").size() == 1);  // valid JSON and schema, whatever the names
      if (line.find("\"sampler.source\":\"output\"") != std::string::npos) {
        output_ok += line.find("\"sampler.ok\":true") != std::string::npos;
        continue;
      }
      ++reports;
      size_t w = line.find("\"sampler.warnings\":");
      REQUIRE(w != std::string::npos);
      int64_t n = std::atoll(line.c_str() + w + 19);
      warnings += n;
      if (n > 0) {
        CHECK(line.find("\"sampler.ok\":false") != std::string::npos);
        size_t e = line.find("\"sampler.error\":\"");
        REQUIRE(e != std::string::npos);
        error = line.substr(e);
      }
    }
    CHECK(reports >= 2);  // the pass that found them, and the last word at stop
    CHECK(output_ok == reports);
    CHECK(warnings == 11);
    CHECK(error.find("ring-" + std::to_string(pid) + "-") != std::string::npos);
  }
  CHECK(!fs::exists(dir + "/" + nm(12)));
  CHECK(!fs::exists(dir + "/" + nm(13)));
  // The intact copy's records are all there (the hostile one's may fail the schema: its owner's loss only).
  auto text = ReadFile(d / "out.jsonl");
  CHECK(text.find("\"file.path\":\"" + (d / "data-m") + "/die.dat\"") != std::string::npos);
  CHECK(text.find(std::string(200, 'A')) != std::string::npos);
  CHECK(text.find(std::string(sizeof(PathSlot::path), 'A')) == std::string::npos);  // cut at the slot's end
}

TEST_CASE("agent: a ring file named with bytes that are not UTF-8 is refused and named in valid JSON", "[tracer][agent][hostile]") {
  TempDir d;
  const std::string dir = RingDir(d / "shm", geteuid());
  const std::string odd = "ring-\xff\xfe\"x.bin";  // not UTF-8, a quote: refused (not a ring's size)
  int fd = open((dir + "/" + odd).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  close(fd);
  auto r = iosonar::test::Run({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "out.jsonl", "--count", "1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("0 malformed rings, 1 refused") != std::string::npos);
  const std::string text = ReadFile(d / "out.jsonl");
  auto lines = ParseTraceLines(text);  // every line valid JSON (UTF-8) and schema
  CHECK(lines.size() == 4);            // two reports of two sources: the pass's, the last word
  CHECK(text.find("ring-??\\\"x.bin: not a regular file") != std::string::npos);
}

TEST_CASE("agent: a finished ring with every slot full goes out in parts: memory bounded by --flush-bytes, every line once",
          "[tracer][agent][hostile]") {
  using namespace iosonar::trace;
  TempDir d;
  const std::string ring = MakeEndedRing(d, "f");
  const std::string name = fs::path(ring).filename();
  const std::string dir = RingDir(d / "shm", geteuid());
  // What a program with 128 threads leaves when no agent drained it for a
  // while (or what its owner can write): every slot's buffer full.
  constexpr int kSlots = 128;
  Craft(ring, dir, name, [&](char* b, int) {
    Slot* s = RingSlots(b);
    const uint32_t first = RingHead(b)->shipped[0], held = SlotHeld(s[0].tail, first);
    REQUIRE(held > 0);
    for (uint32_t k = held; k < kBufRuns; ++k) s[0].at(first + k) = s[0].at(first + k % held);
    s[0].tail = first + kBufRuns;
    for (int i = 1; i < kSlots; ++i) {
      memcpy(static_cast<void*>(&s[i]), &s[0], sizeof(Slot));
      s[i].tid = s[0].tid + i;
      s[i].index = i;
      RingHead(b)->shipped[i] = first;
    }
    RingHead(b)->slots_hwm = kSlots;
  });
  auto r = iosonar::test::Run({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "out.jsonl", "--count", "1",
                "--flush-bytes", "1M"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(!fs::exists(dir + "/" + name));  // shipped whole, removed
  auto lines = ParseTraceLines(ReadFile(d / "out.jsonl"));
  CHECK(Duplicates(lines) == 0);
  int64_t trace = 0, records = -1, merged = -1;
  for (const auto& l : lines) {
    trace += l.dataset == "iosonar.trace";
    if (l.dataset == "iosonar.tracer" && l.action != "start") records = l.records, merged = l.merged;
  }
  CHECK(records >= int64_t{kSlots} * kBufRuns);
  CHECK(records - merged == trace);  // the end record counts what went out (some merged across the copies' threads)
  // ~60 MB of lines went out; the agent never held more than a part of them.
  size_t at = r.err.find("at most ");
  REQUIRE(at != std::string::npos);
  const long long held = std::atoll(r.err.c_str() + at + 8);
  CHECK(held >= (1 << 20));
  CHECK(held < (3 << 20));
  CHECK(fs::file_size(d / "out.jsonl") > size_t{40} << 20);
}

TEST_CASE("agent: a ring truncated while it is read is abandoned (SIGBUS guarded), not a crash", "[tracer][agent][hostile]") {
  using namespace iosonar::trace;
  TempDir d;
  const std::string ring = MakeEndedRing(d, "t");
  const std::string name = fs::path(ring).filename();
  int fd = open(ring.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  void* m = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(m != MAP_FAILED);
  InstallRingGuard();
  RingReader reader;
  TakeParams p;
  p.name_pid = std::stoi(name.substr(5));
  p.alive = false;
  p.host = "h";
  RingTake t;
  std::string why;
  REQUIRE(reader.Take(static_cast<char*>(m), kRingBytes, p, &t, &why));  // intact: taken whole
  CHECK(t.remove);
  CHECK(t.runs > 0);
  // The owner truncates the file under the mapping: the slot pages are gone.
  REQUIRE(ftruncate(fd, 4096) == 0);
  CHECK(!reader.Take(static_cast<char*>(m), kRingBytes, p, &t, &why));
  CHECK(why == "truncated while read");
  REQUIRE(ftruncate(fd, 0) == 0);
  RingHeader h;
  CHECK(!reader.Header(static_cast<char*>(m), kRingBytes, &h, &why));
  CHECK(why == "truncated while read");
  munmap(m, kRingBytes);
  close(fd);
}

namespace {

// Bytes and ops per (op, path below dir, layer): what a run of a program did, as its records say.
std::map<std::string, std::pair<int64_t, int64_t>> Activity(const std::vector<TraceLine>& lines, const std::string& dir) {
  std::map<std::string, std::pair<int64_t, int64_t>> m;
  for (const auto& l : lines) {
    if (l.dataset != "iosonar.trace" || l.path.rfind(dir + "/", 0) != 0) continue;
    auto& v = m[l.op + " " + l.layer + " " + l.path.substr(dir.size())];
    v.first += l.bytes;
    v.second += l.count;
  }
  return m;
}

}  // namespace

TEST_CASE("agent mode: threads, fork, exec, a thread that exits the process: the same bytes and ops as the tracer's own output",
          "[tracer][agent]") {
  const std::vector<std::vector<std::string>> modes = {{"threads", "8"}, {"fork"}, {"forkexec", ProgramPath("tp_behaviour")},
                                                       {"threadexit"}, {"interleave"}, {"stdio"}, {"meta"}};
  for (const auto& mode : modes) {
    DYNAMIC_SECTION(mode[0]) {
      TempDir d;
      fs::create_directories(d / "own");
      fs::create_directories(d / "agent");
      auto argv = [&](const std::string& dir) {
        std::vector<std::string> a = {ProgramPath("tp_behaviour"), mode[0], dir};
        a.insert(a.end(), mode.begin() + 1, mode.end());
        return a;
      };
      // The tracer sending for itself, into a file: the reference.
      auto own = RunTraced(argv(d / "own"), d / "own.jsonl");
      // The same program in agent mode; the agent ships it once it has ended.
      const std::string ring = RingDir(d / "shm", geteuid());
      auto r = Run(argv(d / "agent"), AgentEnv(ring));
      CHECK(r.exit_code == own.run.exit_code);
      auto a = Run({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "agent.jsonl", "--count", "1"});
      INFO(a.err);
      REQUIRE(a.exit_code == 0);
      CHECK(DirEmpty(ring));
      auto lines = ParseTraceLines(ReadFile(d / "agent.jsonl"));
      auto want = Activity(own.lines, d / "own");
      CHECK(!want.empty());
      CHECK(Activity(lines, d / "agent") == want);
      CHECK(Duplicates(lines) == 0);
      // Every process instance (event.stream) starts once and ends once.
      std::map<int64_t, std::pair<int, int>> ends;
      for (const auto& l : lines) {
        if (l.dataset != "iosonar.tracer") continue;
        if (l.action == "start") ++ends[l.stream].first;
        else ++ends[l.stream].second;
      }
      std::set<int64_t> streams;  // of the traced processes (the agent's own iosonar.sampler records aside)
      for (const auto& l : lines)
        if (l.dataset != "iosonar.sampler") streams.insert(l.stream);
      CHECK(ends.size() == streams.size());
      for (auto [stream, se] : ends) {
        INFO(stream);
        CHECK(se.first == 1);
        CHECK(se.second == 1);
      }
    }
  }
}

// Agent mode: a process killed with AIO ops it never collected (their result
// never reached the tracer) has them counted in its "killed" record, from the
// count its ring keeps (ring.h aio_pending), as `iosonar run` counts them.
TEST_CASE("agent mode: a process killed with uncollected AIO ops has them counted as dropped", "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  auto r = Run({ProgramPath("tp_behaviour"), "aiokill", d.path()}, AgentEnv(ring));
  INFO(r.err);
  REQUIRE(r.signal == SIGKILL);
  REQUIRE_FALSE(DirEmpty(ring));
  auto lines = ShipLeftRings(d, ring);
  CHECK(Totals(lines, "write", "/aio.dat").count == 0);
  int64_t killed = 0, dropped = -1;
  for (const auto& l : lines)
    if (l.dataset == "iosonar.tracer" && l.action == "killed") ++killed, dropped = l.dropped;
  CHECK(killed == 1);
  CHECK(dropped == 2);
}

TEST_CASE("agent mode: an exec that fails leaves the ring live: the I/O after it is stored, the end is its exit",
          "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  {
    // The agent passes every 0.1 s while the program, its exec failed, waits 0.6 s before writing.
    Child agent({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "out.jsonl", "--interval", "0.1"}, {},
                d / "agent.log");
    auto r = Run({ProgramPath("tp_behaviour"), "execfail", d.path(), "600"}, AgentEnv(ring));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);  // the exec failed with ENOENT, as without the tracer
    REQUIRE(WaitUntil([&] { return DirEmpty(ring); }, 20000));
  }
  auto lines = ParseTraceLines(ReadFile(d / "out.jsonl"));
  CHECK(Duplicates(lines) == 0);
  CHECK(Totals(lines, "write", "/before.dat").bytes == 4096);
  CHECK(Totals(lines, "write", "/after.dat").bytes == 8192);
  std::vector<std::string> ends;
  for (const auto& l : lines)
    if (l.dataset == "iosonar.tracer" && l.action != "start") ends.push_back(l.action);
  CHECK(ends == std::vector<std::string>{"exit"});
}

// The agent merges the runs of a process's threads (thread_merge.h): four
// threads writing the blocks of one file in turns (each a strided run) become
// one contiguous run, and their aggregates past the detail budget one per
// file and interval; bytes and ops stay exact, and the end record says how
// many records were merged. --no-thread-merge ships each thread's as it was.
TEST_CASE("agent: the runs of threads that share a file are merged (turns into one contiguous run, aggregates per "
          "interval), bytes and ops exact, and --no-thread-merge keeps them apart",
          "[tracer][agent][merge]") {
  constexpr int kThreads = 4, kBlocks = 256, kReads = 5000;
  for (bool merge : {true, false}) {
    TempDir d;
    const std::string ring = RingDir(d / "shm", geteuid());
    auto env = AgentEnv(ring);
    env["IOSONAR_WINDOW_MS"] = "60000";  // no window ends inside the program's short life
    env["IOSONAR_DETAIL_BUDGET"] = "50";
    auto r = Run({ProgramPath("tp_behaviour"), "turns", d.path(), std::to_string(kThreads), std::to_string(kBlocks),
                  std::to_string(kReads)},
                 env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<std::string> argv = {LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "agent.jsonl", "--count", "1"};
    if (!merge) argv.push_back("--no-thread-merge");
    auto a = Run(argv);
    INFO(a.err);
    REQUIRE(a.exit_code == 0);
    CHECK(DirEmpty(ring));
    auto lines = ParseTraceLines(ReadFile(d / "agent.jsonl"));
    CHECK(Duplicates(lines) == 0);
    // Exact either way.
    auto w = Totals(lines, "write", "/turns.dat");
    CHECK(w.count == kThreads * kBlocks);
    CHECK(w.bytes == int64_t{kThreads} * kBlocks * 4096);
    auto rd = Totals(lines, "read", "/turns.dat");
    CHECK(rd.count == kThreads * kReads);
    CHECK(rd.bytes == int64_t{kThreads} * kReads * 4096);
    // The end record: records less merged is the number of trace lines.
    int64_t records = -1, merged = -1, trace = 0;
    for (const auto& l : lines) {
      if (l.dataset == "iosonar.trace") ++trace;
      if (l.dataset == "iosonar.tracer" && l.action == "exit") records = l.records, merged = l.merged;
    }
    CHECK(records - merged == trace);
    std::vector<TraceLine> writes, aggs;
    for (const auto& l : lines) {
      if (l.dataset != "iosonar.trace" || l.path.size() < 10 || l.path.substr(l.path.size() - 10) != "/turns.dat") continue;
      if (l.op == "write") writes.push_back(l);
      if (l.op == "read" && l.aggregated) aggs.push_back(l);
    }
    REQUIRE(!aggs.empty());
    if (merge) {
      CHECK(merged >= kThreads - 1);
      REQUIRE(writes.size() == 1);  // the four threads' turns: one contiguous run
      CHECK(writes[0].threads == kThreads);
      CHECK(writes[0].offset == 0);
      CHECK(writes[0].stride == 0);
      CHECK(writes[0].ops_seq >= kThreads * kBlocks - 1);  // in offset order, each block follows the one before
      // Past the budget: one aggregate per budget interval (1 s; the reads take far less than 2 s).
      CHECK(aggs.size() <= 3);
      int64_t most = 0;
      for (const auto& l : aggs) most = std::max(most, l.threads);
      CHECK(most == kThreads);
    } else {
      CHECK(merged == 0);
      CHECK(writes.size() == kThreads);  // a strided run per thread
      for (const auto& l : writes) CHECK(l.threads == 1);
      CHECK(aggs.size() >= kThreads);
    }
  }
}

TEST_CASE("agent mode: runs that find no room anywhere in the ring fold into the file's aggregates of the lost table: "
          "ops and bytes exact, none dropped",
          "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  auto env = AgentEnv(ring);
  env["IOSONAR_DETAIL_BUDGET"] = "0";
  // No agent; 600,000 pwrites of 512 sizes at random offsets, each call its
  // own run: the thread's slot and every spill slot of the ring (512 x 1,024
  // runs) fill, and the aggregates (one key per size) then fill the places
  // kept for them. What comes after is the lost table's (one aggregate per
  // file and key): before it, 75,698 of these ops were dropped.
  const int64_t n = 600000, bs = 512;
  const std::string file = d / "f";
  auto r = Run({ProgramPath("tp_pattern"), "pwrite-sizes", file, std::to_string(bs), std::to_string(n)}, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto a = Run({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "out.jsonl", "--interval", "0.1", "--count", "5",
                "--no-sampler-records"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  REQUIRE(RingFiles(ring) == 0);
  auto lines = ParseTraceLines(ReadFile(d / "out.jsonl"));
  int64_t ops = 0, bytes = 0, dropped = -1, records = 0, trace_lines = 0;
  std::set<std::string> paths;
  for (const auto& l : lines) {
    if (l.dataset == "iosonar.trace" && l.op == "write") ops += l.count, bytes += l.bytes, paths.insert(l.path);
    if (l.dataset == "iosonar.trace") ++trace_lines;
    if (l.dataset == "iosonar.tracer" && l.action == "exit") dropped = l.dropped, records = l.records;
  }
  int64_t want = 0;
  for (int64_t i = 0; i < n; ++i) want += 1 + i % bs;
  CHECK(dropped == 0);
  CHECK(ops == n);
  CHECK(bytes == want);
  CHECK(paths == std::set<std::string>{file});  // every record names the file, the lost table's too
  CHECK(records == trace_lines);
  CHECK(trace_lines > 512 * 1024);  // the ring did fill: every slot, then the lost table
}

TEST_CASE("agent mode with no agent: rings of processes that are gone are reclaimed by later processes after "
          "IOSONAR_RING_GRACE_S, never a live process's, nor while an agent holds the directory",
          "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  auto env = AgentEnv(ring);
  env["IOSONAR_LOG"] = d / "tracer.log";
  Writes write{d};
  SECTION("grace 3600 s (the default is an hour): stamped, none removed; a ring never finished goes at once") {
    env["IOSONAR_RING_GRACE_S"] = "3600";
    // What a process killed between making its ring and naming it leaves (no such pid).
    std::ofstream(ring + "/new-4194303-0000000000000001.bin") << "x";
    for (int i = 0; i < 6; ++i) write(env);
    CHECK(RingFiles(ring) == 6);
    CHECK_FALSE(fs::exists(ring + "/new-4194303-0000000000000001.bin"));
    CHECK(ReadFile(d / "tracer.log").find("new-4194303-0000000000000001.bin: a ring never finished by a process that is "
                                          "gone; removed") != std::string::npos);
  }
  SECTION("grace 0: removed at once, a live process's ring stays, an agent's lock on the directory holds them") {
    env["IOSONAR_RING_GRACE_S"] = "0";
    // A live traced process with a ring: a shell that wrote a file and waits.
    Child live({"sh", "-c", "echo x > \"$0\"; exec sleep 60", d / "live"}, env, d / "live.log");
    REQUIRE(WaitUntil([&] { return fs::exists(d / "live") && fs::file_size(d / "live") == 2 && RingFiles(ring) == 1; }, 10000));
    const std::string live_ring = fs::begin(fs::directory_iterator(ring))->path();
    for (int i = 0; i < 12; ++i) write(env);
    // Each new process removes the rings of gone ones it looks at (two): its own and the live one's stay.
    CHECK(RingFiles(ring) == 2);
    CHECK(fs::exists(live_ring));
    const std::string log = ReadFile(d / "tracer.log");
    CHECK(log.find("is gone and no agent took the ring for 0 s; removed") != std::string::npos);
    // An agent holds the directory (a shared flock): nothing is reclaimed.
    int dfd = open(ring.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dfd >= 0);
    REQUIRE(flock(dfd, LOCK_SH) == 0);
    for (int i = 0; i < 5; ++i) write(env);
    CHECK(RingFiles(ring) == 7);
    close(dfd);
    // No agent again: each process removes the gone ones among the two it
    // looks at (picked at random: the live one may be one), and adds its own.
    for (int i = 0; i < 60 && RingFiles(ring) > 2; ++i) {
      const int before = RingFiles(ring);
      write(env);
      CHECK(RingFiles(ring) <= before);
    }
    CHECK(RingFiles(ring) == 2);
    CHECK(fs::exists(live_ring));
    live.Stop();
    // The real agent holds its directories while it runs.
    Child agent({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "out.jsonl", "--interval", "0.1",
                 "--no-sampler-records"},
                {}, d / "agent.log");
    REQUIRE(WaitUntil([&] { return RingFiles(ring) == 0; }, 30000));
    int probe = open(ring.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(probe >= 0);
    CHECK(flock(probe, LOCK_EX | LOCK_NB) != 0);
    close(probe);
  }
}

TEST_CASE("tracer: a numeric IOSONAR_* setting that is not a whole number in range falls back to its default, said in "
          "the tracer's log, never on the program's stderr",
          "[tracer][agent]") {
  TempDir d;
  const std::string ring = RingDir(d / "shm", geteuid());
  // 1,024 rings waiting (names only, of pids that do not exist: left alone,
  // not being rings): the default IOSONAR_RING_MAX_FILES is reached.
  for (int i = 0; i < 1024; ++i) std::ofstream(ring + "/ring-" + std::to_string(4194304 + i) + "-0.bin");
  auto env = AgentEnv(ring);
  env["IOSONAR_LOG"] = d / "tracer.log";
  Writes write{d};
  for (const char* bad : {"abc", "-1", "5x", " 5", "99999999999999999999999", "1000001"}) {
    INFO(bad);
    env["IOSONAR_RING_MAX_FILES"] = bad;
    write(env);
    CHECK(RingFiles(ring) == 1024);  // bounded by the default, not unbounded
    CHECK(ReadFile(d / "tracer.log").find("IOSONAR_RING_MAX_FILES=\"" + std::string(bad) +
                                          "\" is not a whole number from 0 to 1000000; the default, 1024, is used") !=
          std::string::npos);
  }
  CHECK(ReadFile(d / "tracer.log").find("1024 rings wait unshipped (IOSONAR_RING_MAX_FILES") != std::string::npos);
  env["IOSONAR_RING_MAX_FILES"] = "0";  // a number: no bound, as documented
  write(env);
  CHECK(RingFiles(ring) == 1025);
  // The others.
  env["IOSONAR_RING_MAX_FILES"] = "";
  env["IOSONAR_WINDOW_MS"] = "-5";
  env["IOSONAR_DETAIL_BUDGET"] = "4k";
  env["IOSONAR_SPOOL_MAX_MB"] = "1e3";
  env["IOSONAR_FLUSHER"] = "yes";
  env["IOSONAR_RING_GRACE_S"] = "soon";
  write(env);
  const std::string log = ReadFile(d / "tracer.log");
  for (const char* v : {"IOSONAR_WINDOW_MS=\"-5\"", "IOSONAR_DETAIL_BUDGET=\"4k\"", "IOSONAR_SPOOL_MAX_MB=\"1e3\"",
                        "IOSONAR_FLUSHER=\"yes\" is not a whole number from 0 to 1; the default, auto, is used",
                        "IOSONAR_RING_GRACE_S=\"soon\""}) {
    INFO(v);
    CHECK(log.find(v) != std::string::npos);
  }
}

TEST_CASE("tracer: threads beyond the ring's 512 slots have their ops folded into the file's aggregate of the lost "
          "table: bytes exact, none dropped, in file and agent modes",
          "[tracer][agent]") {
  TempDir d;
  const std::string file = d / "many.dat";
  const int n = 600;  // threads alive at once: 88 or more find no slot
  auto count = [&](const std::vector<TraceLine>& lines, const char* end) {
    int64_t ops = 0, bytes = 0, dropped = -1;
    for (const auto& l : lines) {
      if (l.dataset == "iosonar.trace" && l.op == "write" && l.path == file) ops += l.count, bytes += l.bytes;
      if (l.dataset == "iosonar.tracer" && l.action == end) dropped = l.dropped;
    }
    CHECK(ops == n);
    CHECK(bytes == 100 * n);
    CHECK(dropped == 0);
  };
  SECTION("file") {
    auto t = RunTraced({ProgramPath("tp_behaviour"), "manythreads", file, std::to_string(n)}, d / "out.jsonl",
                       {{"IOSONAR_RING_DIR", RingDir(d / "shm", geteuid())}});
    INFO(t.run.err);
    REQUIRE(t.run.exit_code == 0);
    CHECK(t.run.err.empty());
    count(t.lines, "exit");
  }
  SECTION("agent") {
    const std::string ring = RingDir(d / "shm", geteuid());
    auto r = Run({ProgramPath("tp_behaviour"), "manythreads", file, std::to_string(n)}, AgentEnv(ring));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    auto a = Run({LeanBin(), "agent", "--ring-root", d / "shm", "--output", d / "out.jsonl", "--interval", "0.1", "--count",
                  "3", "--no-sampler-records"});
    REQUIRE(a.exit_code == 0);
    REQUIRE(RingFiles(ring) == 0);
    count(ParseTraceLines(ReadFile(d / "out.jsonl")), "exit");
  }
  CHECK(fs::file_size(file) == 100 * n);
}
