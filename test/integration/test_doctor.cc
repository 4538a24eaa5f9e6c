// `iosonar-exporter doctor` on this machine, with real parts: a real munged
// (its own key and socket), a real `iosonar collect`, a real node agent, and a
// Lustre tree (the project's 2.15 fixture) with jobid_var written by the test.
// First every check but the clock passes; then each part is broken the way a
// node breaks (agent stopped, collector stopped, a ring directory of the wrong
// mode, jobid_var "disable", munged's socket gone, no Lustre) and each check
// must say FAIL with a fix, exit 1. The clock check's verdict is compared with
// the kernel's own (adjtimex, asked by the test).
#include <sys/stat.h>
#include <sys/timex.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>

#include "test/testutil/munge_daemon.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {

std::string Line(const std::string& out, const std::string& check) {
  for (const auto& l : SplitLines(out))
    if (l.size() > 6 && l.substr(6, check.size() + 1) == check + " ") return l;
  return "";
}

}  // namespace

TEST_CASE("doctor: every check passes on a node that has it all, and fails with a fix when each part breaks",
          "[doctor][agent][munge]") {
  if (!HaveMunge()) FAIL("needs munge (scripts/setup.sh --test)");
  TempDir d;
  const std::string lean = BinaryDir() + "/iosonar-exporter";
  // The node: a ring root, a Lustre tree, munged, a collector and an agent.
  const std::string shm = d / "shm";
  fs::create_directories(shm + "/iosonar-ring-0");
  chmod(shm.c_str(), 01777);
  chmod((shm + "/iosonar-ring-0").c_str(), 0700);
  const std::string proc = d / "lustre";
  fs::copy(SourceDir() + "/test/fixtures/lustre/2.15", proc, fs::copy_options::recursive);
  fs::create_directories(proc + "/sys/fs/lustre");
  WriteFile(proc + "/sys/fs/lustre/jobid_var", "SLURM_JOB_ID\n");
  MungeDaemon munge;
  const int port = FreePort();
  auto collector = std::make_unique<Child>(
      std::vector<std::string>{IosonarBin(), "collect", "--store", d / "store", "--listen", "tcp://127.0.0.1:" + std::to_string(port)},
      std::map<std::string, std::string>{}, d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto agent = std::make_unique<Child>(
      std::vector<std::string>{lean, "agent", "--ring-root", shm, "--output", "lumberjack://127.0.0.1:" + std::to_string(port)},
      std::map<std::string, std::string>{}, d / "agent.log");
  // The agent is up once its process shows its argv (the doctor reads /proc).
  REQUIRE(WaitUntil([&] { return ReadFile("/proc/" + std::to_string(agent->pid()) + "/cmdline").find("agent") != std::string::npos; }, 10000));

  // The configuration file names the collector, as on a deployed node.
  WriteFile(d / "iosonar.toml", "output = \"lumberjack://127.0.0.1:" + std::to_string(port) +
                                    "\"\nmunge-socket = \"" + munge.socket() + "\"\n[doctor]\nproc-root = \"" + proc +
                                    "\"\nring-root = \"" + shm + "\"\n");
  const std::vector<std::string> all_but_clock = {lean, "doctor", "--config", d / "iosonar.toml", "--checks",
                                                  "agent,collector,ring,lustre,jobstats,munge"};
  auto good = Run(all_but_clock);
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  for (const char* c : {"agent", "collector", "ring", "lustre", "jobstats", "munge"})
    CHECK_THAT(Line(good.out, c), Catch::StartsWith("ok"));
  CHECK_THAT(Line(good.out, "jobstats"), Catch::Contains("SLURM_JOB_ID"));
  CHECK_THAT(Line(good.out, "agent"), Catch::Contains("pid " + std::to_string(agent->pid())));

  // The clock: the doctor's verdict is the kernel's.
  timex t{};
  int state = ntp_adjtime(&t);
  const bool synced = state != TIME_ERROR && !(t.status & STA_UNSYNC);
  auto clock = Run({lean, "doctor", "--checks", "clock"});
  CHECK(clock.exit_code == (synced ? 0 : 1));
  CHECK_THAT(Line(clock.out, "clock"), Catch::StartsWith(synced ? "ok" : "FAIL"));

  // Break each part.
  agent->Stop(10000);
  agent.reset();
  collector->Stop(30000);
  collector.reset();
  fs::create_directories(shm + "/iosonar-ring-1234");
  chmod((shm + "/iosonar-ring-1234").c_str(), 0755);  // not 0700, not uid 1234's
  WriteFile(proc + "/sys/fs/lustre/jobid_var", "disable\n");
  WriteFile(d / "broken.toml", "output = \"lumberjack://127.0.0.1:" + std::to_string(port) +
                                   "\"\nmunge-socket = \"" + d / "no-munge.socket" + "\"\n[doctor]\nproc-root = \"" + proc +
                                   "\"\nring-root = \"" + shm + "\"\n");
  auto broken = Run({lean, "doctor", "--config", d / "broken.toml", "--checks", "agent,collector,ring,lustre,jobstats,munge"});
  INFO(broken.out << broken.err);
  CHECK(broken.exit_code == 1);
  for (const char* c : {"agent", "collector", "ring", "jobstats", "munge"}) {
    CHECK_THAT(Line(broken.out, c), Catch::StartsWith("FAIL"));
  }
  CHECK_THAT(Line(broken.out, "lustre"), Catch::StartsWith("ok"));  // still readable
  CHECK_THAT(broken.out, Catch::Contains("fix: systemctl enable --now iosonar-agent"));
  CHECK_THAT(broken.out, Catch::Contains("iosonar-ring-1234 is not a 0700 directory of its uid"));
  CHECK_THAT(broken.out, Catch::Contains("fix: lctl set_param -P jobid_var=SLURM_JOB_ID"));
  CHECK_THAT(broken.out, Catch::Contains("127.0.0.1:" + std::to_string(port) + ": Connection refused"));
  CHECK_THAT(broken.err, Catch::Contains("5 checks failed"));

  // No Lustre at all, and no collector configured.
  auto bare = Run({lean, "doctor", "--proc-root", d / "empty", "--output", "-", "--checks", "lustre,jobstats,collector"},
                  {{"IOSONAR_CONFIG", ""}, {"IOSONAR_OUTPUT", ""}});
  INFO(bare.out);
  CHECK(bare.exit_code == 1);
  CHECK_THAT(Line(bare.out, "lustre"), Catch::StartsWith("FAIL") && Catch::Contains("no Lustre statistics"));
  CHECK_THAT(Line(bare.out, "collector"), Catch::StartsWith("FAIL") && Catch::Contains("no collector configured"));
}
