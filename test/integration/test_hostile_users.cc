// Another local user against the tracer, the node agent and `iosonar trace`
// (issue 39): the test makes two real local users (useradd, as root) and one
// of them attacks the other's per-user directories, or floods the root agent
// with junk directories, while the other's program runs. Nothing of the
// victim's may be lost, nothing may go to the victim program's stderr, and
// the tools say on their own logs what they refused.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {

struct User {
  uid_t uid;
  gid_t gid;
};

// A local system user made for the tests (kept: made once per machine).
User LocalUser(const std::string& name) {
  if (!getpwnam(name.c_str())) {
    auto r = Run({"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name});
    INFO(r.err);
    // Another test process may have made it meanwhile.
    REQUIRE((r.exit_code == 0 || getpwnam(name.c_str())));
  }
  const passwd* p = getpwnam(name.c_str());
  REQUIRE(p);
  return {p->pw_uid, p->pw_gid};
}

std::vector<std::string> As(const User& u, std::vector<std::string> argv) {
  std::vector<std::string> v{"setpriv", "--reuid=" + std::to_string(u.uid), "--regid=" + std::to_string(u.gid),
                             "--clear-groups", "--"};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

std::string LeanBin() { return BinaryDir() + "/iosonar-exporter"; }

// Copies of what the other users run, in a directory they can reach
// whatever the build directory's permissions.
struct Bins {
  std::string dir, tp, lib, iosonar;
  explicit Bins(const TempDir& d) : dir(d / "bin") {
    fs::create_directories(dir);
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    auto put = [&](const std::string& from, const std::string& name) {
      fs::copy_file(from, dir + "/" + name, fs::copy_options::overwrite_existing);
      REQUIRE(chmod((dir + "/" + name).c_str(), 0755) == 0);
      return dir + "/" + name;
    };
    tp = put(ProgramPath("tp_behaviour"), "tp_behaviour");
    lib = put(TracerLib(), "libiosonar-trace.so");
    iosonar = put(IosonarBin(), "iosonar");
  }
};

// What every case starts with: root (it makes users and runs as them),
// setpriv, the victim and the attacker, and a directory both can reach.
struct Hostile {
  Hostile() {
    REQUIRE(geteuid() == 0);
    REQUIRE(HaveProgram("setpriv"));
    victim = LocalUser("iosonar-t-victim");
    attacker = LocalUser("iosonar-t-attack");
    REQUIRE(chmod(d.path().c_str(), 0755) == 0);
  }
  User victim{}, attacker{};
  TempDir d;
};

// A directory anyone can use, like /dev/shm or /tmp (sticky).
std::string Public(const TempDir& d, const std::string& name) {
  std::string p = d / name;
  fs::create_directories(p);
  REQUIRE(chmod(p.c_str(), 01777) == 0);
  return p;
}

std::map<std::string, std::string> AgentMode(const std::string& ring_root, const std::string& lib) {
  return {{"LD_PRELOAD", lib}, {"IOSONAR_OUTPUT", "agent"}, {"IOSONAR_RING_ROOT", ring_root},
          {"IOSONAR_RING_DIR", ""}, {"IOSONAR_FLUSHER", ""}};
}

// The sum of N in the agent's "N <what> this pass" lines.
uint64_t CountedThisPass(const std::string& err, const std::string& what) {
  std::regex re("iosonar agent: ([0-9]+) " + what + " this pass");
  uint64_t n = 0;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it)
    n += std::stoull((*it)[1]);
  return n;
}

size_t LinesWith(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (const auto& l : SplitLines(text)) n += l.find(what) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("hostile users: a ring directory made first by another user does not erase the victim's records",
          "[tracer][agent][hostile][users]") {
  Hostile h;
  const User &victim = h.victim, &attacker = h.attacker;
  const TempDir& d = h.d;
  const std::string root = Public(d, "shm");
  const std::string data = Public(d, "data");
  const std::string taken = root + "/iosonar-ring-" + std::to_string(victim.uid);
  REQUIRE(Run(As(attacker, {"mkdir", "-m", "700", taken})).exit_code == 0);
  const Bins bin(d);

  auto prog = Run(As(victim, {bin.tp, "write", data + "/w.dat", "300", "4096"}), AgentMode(root, bin.lib));
  INFO(prog.err);
  REQUIRE(prog.exit_code == 0);
  CHECK(prog.err.find("iosonar") == std::string::npos);  // nothing on the program's own stderr
  // The victim's tracer used a private directory of its own beside the taken one.
  std::string fallback;
  for (const auto& e : fs::directory_iterator(root))
    if (e.path().filename().string().rfind("iosonar-ring-" + std::to_string(victim.uid) + ".", 0) == 0)
      fallback = e.path();
  REQUIRE(!fallback.empty());
  struct stat st;
  REQUIRE(lstat(fallback.c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK(st.st_uid == victim.uid);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(fs::is_empty(taken));  // nothing went into the attacker's directory

  // The root agent ships it, and says on its own log what it refused.
  auto r = Run({LeanBin(), "agent", "--ring-root", root, "--output", d / "out.jsonl", "--count", "2", "--interval", "0.1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = ParseTraceLines(ReadFile(d / "out.jsonl"));
  auto w = Totals(lines, "write", "/w.dat");
  CHECK(w.bytes == 300 * 4096);
  CHECK(w.count == 300);
  CHECK(r.err.find(taken + ": owned by uid " + std::to_string(attacker.uid)) != std::string::npos);
  CHECK(r.err.find("private iosonar-ring-" + std::to_string(victim.uid) + ".SUFFIX") != std::string::npos);
  CHECK(fs::is_empty(fallback));  // shipped and removed

  // A second program of the victim's finds the same private directory (no new one per process).
  auto again = Run(As(victim, {bin.tp, "write", data + "/v.dat", "5", "4096"}), AgentMode(root, bin.lib));
  REQUIRE(again.exit_code == 0);
  size_t privates = 0;
  for (const auto& e : fs::directory_iterator(root))
    privates += e.path().filename().string().rfind("iosonar-ring-" + std::to_string(victim.uid) + ".", 0) == 0;
  CHECK(privates == 1);
  CHECK(!fs::is_empty(fallback));
}

TEST_CASE("hostile users: a planted spool link and pre-made run directories do not stop `trace --output lumberjack://`",
          "[tracer][agent][hostile][users][trace]") {
  Hostile h;
  const User &victim = h.victim, &attacker = h.attacker;
  const TempDir& d = h.d;
  const std::string data = Public(d, "data");
  const std::string vu = std::to_string(victim.uid);
  // Leftovers of an earlier run of this test (names in the real /tmp and /dev/shm).
  auto clean = [&] {
    fs::remove("/tmp/iosonar-spool-" + vu);
    for (const auto& e : fs::directory_iterator("/tmp"))
      if (e.path().filename().string().rfind("iosonar-spool-" + vu + ".", 0) == 0) fs::remove_all(e.path());
    std::vector<fs::path> junk;
    for (const auto& e : fs::directory_iterator("/dev/shm"))
      if (e.path().filename().string().rfind("iosonar-trace-" + vu + "-", 0) == 0) junk.push_back(e.path());
    for (const auto& p : junk) fs::remove_all(p);
  };
  clean();
  // The attacker: /tmp/iosonar-spool-VICTIM a link to a directory of theirs,
  // and /dev/shm/iosonar-trace-VICTIM-PID for the next 3,000 pids.
  const std::string theirs = Public(d, "theirs");
  REQUIRE(chown(theirs.c_str(), attacker.uid, attacker.gid) == 0);
  REQUIRE(Run(As(attacker, {"ln", "-s", theirs, "/tmp/iosonar-spool-" + vu})).exit_code == 0);
  const long next_pid = std::stol(ReadFile("/proc/sys/kernel/ns_last_pid"));
  {
    std::ofstream names(d / "names");
    for (long p = next_pid; p < next_pid + 3000; ++p) names << "/dev/shm/iosonar-trace-" << vu << "-" << p << "\n";
  }
  REQUIRE(Run(As(attacker, {"sh", "-c", "xargs mkdir -m 700 < '" + d / "names" + "'"})).exit_code == 0);

  const int port = FreePort();
  Child col({IosonarBin(), "collect", "--store", d / "store", "--listen", "tcp://127.0.0.1:" + std::to_string(port)}, {},
            d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  const Bins bin(d);
  auto r = Run(As(victim, {bin.iosonar, "trace", "--output", "lumberjack://127.0.0.1:" + std::to_string(port), "--",
                           bin.tp, "write", data + "/w.dat", "200", "4096"}),
               {{"IOSONAR_FLUSHER", ""}, {"IOSONAR_TRACE_LIB", bin.lib}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // Said on the tool's own stderr: the spool it could not use and the one it used.
  CHECK(r.err.find("spool directory /tmp/iosonar-spool-" + vu + " is not a private directory") != std::string::npos);
  CHECK(r.err.find("spooling to /tmp/iosonar-spool-" + vu + ".") != std::string::npos);
  CHECK(r.err.find("0 dropped") != std::string::npos);
  CHECK(fs::is_empty(theirs));
  REQUIRE(ExitCode(col.Stop(30000)) == 0);
  auto a = Run({IosonarBin(), "store-export", "--store", d / "store"});
  REQUIRE(a.exit_code == 0);
  auto w = Totals(ParseTraceLines(a.out), "write", "/w.dat");
  CHECK(w.bytes == 200 * 4096);
  CHECK(w.count == 200);
  clean();
}

TEST_CASE("hostile users: 30,000 junk ring directories of one user cost the root agent one line per pass, and "
          "another user's job loses nothing",
          "[tracer][agent][hostile][users][flood]") {
  Hostile h;
  const User &victim = h.victim, &attacker = h.attacker;
  const TempDir& d = h.d;
  const std::string root = Public(d, "shm");
  const std::string data = Public(d, "data");
  constexpr int kJunk = 30000;
  REQUIRE(Run(As(attacker, {"sh", "-c",
                            "cd '" + root + "' && seq 100000 " + std::to_string(100000 + kJunk - 1) +
                                " | sed 's/^/iosonar-ring-/' | xargs mkdir -m 700"}))
              .exit_code == 0);
  // And junk files in the attacker's own directory (not rings: refused, remembered).
  const std::string own = root + "/iosonar-ring-" + std::to_string(attacker.uid);
  REQUIRE(Run(As(attacker, {"sh", "-c",
                            "mkdir -m 700 '" + own + "' && cd '" + own +
                                "' && seq 1 5000 | sed 's/^/ring-/; s/$/-0.bin/' | xargs touch"}))
              .exit_code == 0);

  Child agent({LeanBin(), "agent", "--ring-root", root, "--output", d / "out.jsonl", "--interval", "0.2",
               "--report-interval", "1"},
              {}, d / "agent.log");
  // The victim's job: 15,000 writes, in agent mode, while the agent works through the junk.
  constexpr int kOps = 15000;
  const Bins bin(d);
  auto prog = Run(As(victim, {bin.tp, "write", data + "/w.dat", std::to_string(kOps), "512"}), AgentMode(root, bin.lib));
  REQUIRE(prog.exit_code == 0);
  auto stored = [&] { return Totals(ParseTraceLines(ReadFile(d / "out.jsonl")), "write", "/w.dat"); };
  REQUIRE(WaitUntil([&] { return fs::exists(d / "out.jsonl") && stored().count == kOps; }, 30000));
  REQUIRE(ExitCode(agent.Stop(30000)) == 0);
  const std::string log = ReadFile(d / "agent.log");
  INFO(log.substr(0, 4000));
  auto w = stored();
  CHECK(w.count == kOps);
  CHECK(w.bytes == int64_t{kOps} * 512);
  // Every junk directory and file counted once, in a handful of lines.
  CHECK(CountedThisPass(log, "ring directories not their uid's") == kJunk);
  CHECK(CountedThisPass(log, "ring files refused") == 5000);
  CHECK(LinesWith(log, "this pass") <= 8);
  CHECK(log.size() < 64 * 1024);
  // The agent's own sampler records carry the counts.
  uint64_t warnings = 0;
  for (const auto& l : SplitLines(ReadFile(d / "out.jsonl"))) {
    if (l.find("\"sampler.source\":\"rings\"") == std::string::npos) continue;
    auto at = l.find("\"sampler.warnings\":");
    REQUIRE(at != std::string::npos);
    warnings += std::stoull(l.substr(at + 19));
  }
  CHECK(warnings == kJunk + 5000);
}
