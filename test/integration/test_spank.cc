// The Slurm SPANK plugin (exporters/trace/spank/spank_iosonar.c) in a real
// one-node Slurm (munged, slurmctld, slurmd: test/testutil/slurm_cluster.h)
// whose plugstack.conf loads it with the site default on and output=agent:
// a job's tasks run under the tracer, its records go through a real node
// agent (`iosonar-exporter agent`) into a real `iosonar collect` and are
// stored under the Slurm job id; a job submitted with `--iosonar=off` runs
// without the tracer and nothing of it is stored; a setuid program (the
// loader's secure mode ignores the preload) and a static one (no loader)
// run unharmed inside a traced job. The bytes are checked against what the
// job wrote (dd: 25 writes of 4,096 bytes), and every daemon is stopped by pid.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>

#include "test/integration/trace_util.h"
#include "test/testutil/slurm_cluster.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {

std::vector<TraceLine> StoredJob(const std::string& store, const std::string& job) {
  auto a = Run({IosonarBin(), "store-export", "--store", store, "--job", job});
  REQUIRE(a.exit_code == 0);
  return ParseTraceLines(a.out);
}

int64_t WrittenTo(const std::vector<TraceLine>& lines, const std::string& path) {
  int64_t b = 0;
  for (const auto& l : lines)
    if (l.dataset == "iosonar.trace" && l.op == "write" && l.path == path) b += l.bytes;
  return b;
}

}  // namespace

TEST_CASE("spank: the plugin traces a real Slurm job into the store, --iosonar=off does not, setuid and static "
          "programs run unharmed",
          "[slurm][spank][agent]") {
  if (!HaveSlurm(false)) FAIL("needs munge, slurmctld, slurmd and slurm-client (scripts/setup.sh --test)");
  const std::string plugin = BinaryDir() + "/spank_iosonar.so";
  if (!fs::exists(plugin)) FAIL("spank_iosonar.so was not built: libslurm-dev (slurm/spank.h) is missing (scripts/setup.sh --test)");
  struct passwd* nobody = getpwnam("nobody");
  REQUIRE(nobody != nullptr);

  TempDir d;
  chmod(d.path().c_str(), 0755);  // the setuid program (as nobody) writes under it
  const std::string shm = d / "shm";
  fs::create_directories(shm + "/iosonar-ring-0");
  chmod((shm + "/iosonar-ring-0").c_str(), 0700);

  // The node's collector and agent, as a site runs them.
  const int port = FreePort();
  Child collector({IosonarBin(), "collect", "--store", d / "store", "--listen", "tcp://127.0.0.1:" + std::to_string(port)},
                  {}, d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  Child agent({BinaryDir() + "/iosonar-exporter", "agent", "--ring-root", shm, "--output",
               "lumberjack://127.0.0.1:" + std::to_string(port), "--interval", "0.1"},
              {}, d / "agent.log");

  // plugstack.conf: the site default on, the tracer of this build, agent mode.
  WriteFile(d / "plugstack.conf", "required " + plugin + " default=on tracer=" + TracerLib() +
                                      " output=agent ring_root=" + shm + "\n");
  SlurmClusterOptions o;
  o.plugstack = d / "plugstack.conf";
  SlurmCluster slurm(o);

  // The setuid copy: owned by nobody, mode 4755 (run by root, so AT_SECURE).
  const std::string setuid_prog = d / "tp_setuid";
  fs::copy_file(ProgramPath("tp_secure"), setuid_prog);
  REQUIRE(chown(setuid_prog.c_str(), nobody->pw_uid, nobody->pw_gid) == 0);
  REQUIRE(chmod(setuid_prog.c_str(), 04755) == 0);
  fs::create_directories(d / "out");
  chown((d / "out").c_str(), nobody->pw_uid, nobody->pw_gid);

  const std::string dd = " 2>/dev/null; dd if=/dev/zero bs=4096 count=25 status=none of=";
  std::string off = slurm.Submit({"--iosonar=off", "-D", d.path(), "-o", d / "off.out", "--wrap",
                                  "echo \"LD_PRELOAD=[$LD_PRELOAD] IOSONAR_DISABLE=[$IOSONAR_DISABLE]\"" + dd + d / "off.dat"});
  std::string on = slurm.Submit({"-D", d.path(), "-o", d / "on.out", "--wrap",
                                 "echo \"LD_PRELOAD=[$LD_PRELOAD] IOSONAR_JOB_ID=[$IOSONAR_JOB_ID] "
                                 "IOSONAR_OUTPUT=[$IOSONAR_OUTPUT]\"" + dd + d / "on.dat; " + setuid_prog + " " +
                                     d / "out/setuid.txt; echo setuid_rc=$?; " + ProgramPath("tp_secure_static") + " " +
                                     d / "out/static.txt; echo static_rc=$?"});
  REQUIRE(slurm.WaitDone({off, on}, 90000));
  const std::string on_out = ReadFile(d / "on.out"), off_out = ReadFile(d / "off.out");
  INFO("on.out:\n" << on_out << "off.out:\n" << off_out << slurm.Logs());

  // What the plugin put into the tasks' environment.
  CHECK_THAT(on_out, Catch::Contains("LD_PRELOAD=[" + TracerLib() + "]") &&
                         Catch::Contains("IOSONAR_JOB_ID=[" + on + "]") && Catch::Contains("IOSONAR_OUTPUT=[agent]"));
  CHECK_THAT(off_out, Catch::Contains("LD_PRELOAD=[] IOSONAR_DISABLE=[1]"));
  // Unharmed: both ran to the end, wrote their file, and said how the loader treated them.
  CHECK_THAT(on_out, Catch::Contains("secure=1 traced=0 euid=" + std::to_string(nobody->pw_uid) + " ok") &&
                         Catch::Contains("setuid_rc=0"));
  CHECK_THAT(on_out, Catch::Contains("secure=0 traced=0 euid=0 ok") && Catch::Contains("static_rc=0"));
  CHECK(ReadFile(d / "out/setuid.txt") == "written by tp_secure\n");
  CHECK(ReadFile(d / "out/static.txt") == "written by tp_secure\n");
  CHECK(fs::file_size(d / "on.dat") == 102400);
  CHECK(fs::file_size(d / "off.dat") == 102400);

  // The traced job's writes reach the store through the agent, under its Slurm job id.
  std::vector<TraceLine> stored;
  bool arrived = WaitUntil(
      [&] {
        stored = StoredJob(d / "store", on);
        return WrittenTo(stored, d / "on.dat") == 102400;
      },
      30000);
  INFO("agent.log:\n" << ReadFile(d / "agent.log") << "collect.log:\n" << ReadFile(d / "collect.log"));
  REQUIRE(arrived);
  for (const auto& l : stored) CHECK(l.job == on);
  // Shipped and acknowledged: the agent empties the ring directory. By then
  // the opted-out job (which ended before) would have been shipped too, had
  // it been traced: nothing of it is stored, under its id or its file.
  REQUIRE(WaitUntil([&] { return fs::is_empty(shm + "/iosonar-ring-0"); }, 20000));
  REQUIRE(ExitCode(agent.Stop(10000)) == 0);
  collector.Stop(30000);
  CHECK(StoredJob(d / "store", off).empty());
  auto all = Run({IosonarBin(), "store-export", "--store", d / "store"});
  REQUIRE(all.exit_code == 0);
  CHECK_THAT(all.out, !Catch::Contains(d / "off.dat"));
  // The setuid program's file was not traced (the loader ignored the preload).
  CHECK_THAT(all.out, !Catch::Contains(d / "out/setuid.txt") && !Catch::Contains(d / "out/static.txt"));
}
