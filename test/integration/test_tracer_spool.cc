// The spool cannot be turned against its user: a spool directory another
// local user prepared (owned by nobody, world-writable, holding links to the
// victim's private file and to /dev/zero, and a FIFO) is refused; nothing is
// read through its entries, the program neither hangs nor fails, and records
// spool to a fresh private directory instead. Entries that are not regular
// files of ours are never opened even in our own directory.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "test/integration/trace_util.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {
const char kSecret[] = "{\"secret\":\"PRIVATE-7f3a9c\"}\n";

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

// Runs the traced program in the background and waits for it (a hang fails the test, not the suite).
int RunBounded(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const std::string& log) {
  Child c(argv, env, log);
  bool exited = WaitUntil([&] { return !c.Alive(); }, 30000);
  CHECK(exited);
  return exited ? c.Wait() : c.Stop(1000);
}

void Plant(const std::string& dir, const std::string& priv) {
  auto r = Run({"sh", "-c",
                "ln -s '" + priv + "' '" + dir + "/iosonar-0000000000000001.jsonl' && ln -s /dev/zero '" + dir +
                    "/iosonar-0000000000000002.jsonl' && mkfifo '" + dir + "/iosonar-0000000000000003.jsonl'"});
  REQUIRE(r.exit_code == 0);
}
}  // namespace

TEST_CASE("tracer: a spool directory prepared by another user is refused, nothing is read through it", "[tracer][spool]") {
  REQUIRE(geteuid() == 0);  // the suite runs as root (it also starts MariaDB, Slurm, munge)
  REQUIRE(HaveProgram("setpriv"));
  TempDir d;
  fs::permissions(d.path(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  std::string pub = d / "pub", evil = d / "pub/spool", priv = d / "private.jsonl";
  fs::create_directory(pub);
  fs::permissions(pub, fs::perms::all | fs::perms::sticky_bit);
  WriteFile(priv, kSecret);
  fs::permissions(priv, fs::perms::owner_read | fs::perms::owner_write);
  // The other user (nobody) makes the directory and plants links and a FIFO in it.
  auto mk = Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", "mkdir -m 0777 '" + evil + "'"});
  REQUIRE(mk.exit_code == 0);
  REQUIRE(fs::exists(evil));
  Plant(evil, priv);  // as root: nobody could not link a file it cannot reach; the links' owner does not matter
  const auto planted = Entries(evil);

  std::map<std::string, std::string> env{{"LD_PRELOAD", TracerLib()}, {"IOSONAR_SPOOL_DIR", evil}};
  SECTION("receiver up: the spool would be resent at connect") {
    LineListener rx;
    env["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:" + std::to_string(rx.port());
    int st = RunBounded({ProgramPath("tp_behaviour"), "write", d / "w.dat", "10", "4096"}, env, d / "log");
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    std::string got = rx.Finish();
    CHECK(got.find("PRIVATE-7f3a9c") == std::string::npos);
    CHECK(got.find('\0') == std::string::npos);
    auto lines = ParseTraceLines(got);
    CHECK(Totals(lines, "write", "/w.dat").bytes == 10 * 4096);
    CHECK(ReadFile(d / "log").find("refused") == std::string::npos);  // never on the program's own stderr
  }
  SECTION("receiver down: records spool to a fresh private directory, not into the other user's") {
    env["IOSONAR_OUTPUT"] = "tcp://127.0.0.1:" + std::to_string(FreePort());
    int st = RunBounded({ProgramPath("tp_behaviour"), "write", d / "w.dat", "10", "4096"}, env, d / "log");
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    CHECK(Entries(evil) == planted);
    std::string fresh;
    for (const auto& e : Entries(pub))
      if (e.rfind("spool.", 0) == 0) fresh = pub + "/" + e;
    REQUIRE(!fresh.empty());
    struct stat sb;
    REQUIRE(lstat(fresh.c_str(), &sb) == 0);
    CHECK(S_ISDIR(sb.st_mode));
    CHECK(sb.st_uid == geteuid());
    CHECK((sb.st_mode & 0777) == 0700);
    std::string text;
    for (const auto& e : fs::directory_iterator(fresh)) text += ReadFile(e.path());
    CHECK(Totals(ParseTraceLines(text), "write", "/w.dat").bytes == 10 * 4096);
  }
}

TEST_CASE("tracer: links, FIFOs and devices in our own spool directory are never opened", "[tracer][spool]") {
  TempDir d;
  std::string spool = d / "spool", priv = d / "private.jsonl";
  fs::create_directory(spool);
  fs::permissions(spool, fs::perms::owner_all);
  WriteFile(priv, kSecret);
  Plant(spool, priv);
  LineListener rx;
  std::map<std::string, std::string> env{{"LD_PRELOAD", TracerLib()},
                                         {"IOSONAR_SPOOL_DIR", spool},
                                         {"IOSONAR_OUTPUT", "tcp://127.0.0.1:" + std::to_string(rx.port())}};
  int st = RunBounded({ProgramPath("tp_behaviour"), "write", d / "w.dat", "10", "4096"}, env, d / "log");
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  std::string got = rx.Finish();
  CHECK(got.find("PRIVATE-7f3a9c") == std::string::npos);
  CHECK(got.find('\0') == std::string::npos);
  CHECK(Totals(ParseTraceLines(got), "write", "/w.dat").bytes == 10 * 4096);
  CHECK(Entries(spool).size() == 3);  // left alone, not deleted either
  CHECK(ReadFile(priv) == kSecret);
}
