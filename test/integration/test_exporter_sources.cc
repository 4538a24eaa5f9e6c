// Exporters never block on a source and never skip one silently: a FIFO
// where job_stats should be, a symbolic-link loop where md_stats should be, a
// hanging `lfs` with a child of its own.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>

#include "test/integration/lustre_driver.h"
#include "test/integration/lustre_fixture.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;
namespace fx = iosonar::test::lustrefx;

namespace {

// Processes whose command line contains `marker` (reads /proc).
int CountProcesses(const std::string& marker) {
  int n = 0;
  DIR* d = opendir("/proc");
  REQUIRE(d);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string cmd;
    try {
      cmd = ReadFile(std::string("/proc/") + e->d_name + "/cmdline");
    } catch (...) {
      continue;
    }
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(marker) != std::string::npos && cmd.find("/bin/sh") == std::string::npos) ++n;
  }
  closedir(d);
  return n;
}

std::string SourceRecord(const std::string& lines, const std::string& source) {
  for (const auto& l : SplitLines(lines))
    if (l.find("\"sampler.source\":\"" + source + "\"") != std::string::npos) return l;
  return "";
}

}  // namespace

TEST_CASE("lustre exporter: a FIFO job_stats and a link loop md_stats are reported, other sources go on", "[lustre][sources]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.mdts["fs1-MDT0000"].open = 1;
  fx::Write(root, s, fx::Layout::k210);
  const std::string proc = root + "/proc/fs/lustre";
  const std::string js = proc + "/obdfilter/fs1-OST0000/job_stats";
  const std::string md = proc + "/mdt/fs1-MDT0000/md_stats";
  REQUIRE(unlink(js.c_str()) == 0);
  REQUIRE(mkfifo(js.c_str(), 0600) == 0);  // nothing ever writes it: a read would block forever
  REQUIRE(unlink(md.c_str()) == 0);
  REQUIRE(symlink(md.c_str(), md.c_str()) == 0);  // a link to itself: ELOOP

  LustreDriver drv({"--proc-root", root}, "testhost");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string t = drv.Sample();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(t);
  CHECK(secs < 5.0);  // a blocking read would hang here until ctest's timeout
  const std::string jobs = SourceRecord(t, "jobstats");
  CHECK(jobs.find("\"sampler.ok\":false") != std::string::npos);
  CHECK(jobs.find("job_stats: not a regular file (a FIFO), not read") != std::string::npos);
  const std::string mds = SourceRecord(t, "mds");
  CHECK(mds.find("\"sampler.ok\":false") != std::string::npos);
  CHECK(mds.find("Too many levels of symbolic links") != std::string::npos);
  // The OST's own statistics were read as usual.
  CHECK(SourceRecord(t, "oss").find("\"sampler.ok\":true") != std::string::npos);
  // The next sample gives the OST's deltas (the first only sets the baseline).
  const std::string t2 = drv.Sample();
  CHECK(t2.find("\"lustre.target\":\"fs1-OST0000\"") != std::string::npos);
  CHECK(SourceRecord(t2, "jobstats").find("not a regular file (a FIFO)") != std::string::npos);  // every sample
}

TEST_CASE("health: a hanging lfs with a child of its own is killed with its child, no process left", "[health][sources]") {
  TempDir d;
  REQUIRE(mkdir((d / "bin").c_str(), 0755) == 0);
  // The marker is a sleep length no other process uses.
  const std::string marker = std::to_string(3000000 + getpid() % 100000);
  WriteFile(d / "bin/lfs", "#!/bin/sh\nsleep " + marker + " &\nsleep " + marker + "\n");
  WriteFile(d / "bin/lctl", "#!/bin/sh\nexit 0\n");
  chmod((d / "bin/lfs").c_str(), 0755);
  chmod((d / "bin/lctl").c_str(), 0755);
  const std::string path = d.path() + "/bin:" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  auto r = Run({IosonarBin(), "health", "--count", "2", "--interval", "0.01", "--timeout", "0.3", "--output",
                d / "h.jsonl"},
               {{"PATH", path}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const std::string out = ReadFile(d / "h.jsonl");
  CHECK(Count(out, "lfs: no answer within 0.300 s (killed)") == 2);
  CHECK(CountProcesses("sleep " + marker) == 0);
}
