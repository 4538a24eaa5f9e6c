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

namespace {

// Seconds of the day in an @timestamp "....THH:MM:SS.mmmZ".
double TimeOfDay(const std::string& line) {
  const auto p = line.find("\"@timestamp\":\"");
  REQUIRE(p != std::string::npos);
  const std::string t = line.substr(p + 14 + 11, 12);  // HH:MM:SS.mmm
  return std::stoi(t.substr(0, 2)) * 3600.0 + std::stoi(t.substr(3, 2)) * 60.0 + std::stod(t.substr(6));
}

}  // namespace

TEST_CASE("lustre exporter: a read that blocks inside the kernel is abandoned at its deadline and reported, the "
          "other sources keep their interval",
          "[lustre][sources]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.osts["fs1-OST0001"].write_ops = 5;
  fx::Write(root, s, fx::Layout::k210);
  // tracefs's trace_pipe stands for a Lustre file on a hung server: the kernel
  // calls it a regular file, and read() blocks inside the kernel until trace
  // data comes (none does: no tracer or event is enabled).
  const std::string tfs = d / "tracefs";
  REQUIRE(mkdir(tfs.c_str(), 0700) == 0);
  auto m = Run({"mount", "-t", "tracefs", "nodev", tfs});
  if (m.exit_code != 0) FAIL("cannot mount tracefs (the test needs root): " + m.err);
  struct Unmount {
    std::string dir;
    ~Unmount() { Run({"umount", "-l", dir}); }
  } unmount{tfs};
  REQUIRE(ReadFile(tfs + "/current_tracer") == "nop\n");
  const std::string hung = root + "/proc/fs/lustre/obdfilter/fs1-OST0001/stats";
  REQUIRE(unlink(hung.c_str()) == 0);
  REQUIRE(symlink((tfs + "/trace_pipe").c_str(), hung.c_str()) == 0);

  const int samples = 6;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Run({IosonarBin(), "lustre", "--proc-root", root, "--per-file-sources", "--count", std::to_string(samples),
                "--interval", "0.5", "--read-timeout", "0.2", "--output", d / "out.jsonl", "--host-name", "oss1"});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(secs < samples * 0.5 + 2.0);  // without the watchdog the first sample never ends
  const auto lines = SplitLines(ReadFile(d / "out.jsonl"));
  std::vector<std::string> good, bad;
  for (const auto& l : lines) {
    if (l.find("\"sampler.source\":\"obdfilter/fs1-OST0000/stats\"") != std::string::npos) good.push_back(l);
    if (l.find("\"sampler.source\":\"obdfilter/fs1-OST0001/stats\"") != std::string::npos) bad.push_back(l);
  }
  // The healthy OST: read in every sample, every 0.5 s.
  REQUIRE(good.size() == static_cast<size_t>(samples));
  for (size_t k = 0; k < good.size(); ++k) {
    INFO(good[k]);
    CHECK(good[k].find("\"sampler.ok\":true") != std::string::npos);
    if (k > 0) CHECK(TimeOfDay(good[k]) - TimeOfDay(good[k - 1]) < 0.5 + 0.15);
  }
  CHECK(Count(ReadFile(d / "out.jsonl"), "\"lustre.target\":\"fs1-OST0000\"") >= samples - 1);  // deltas after the baseline
  // The hung one: abandoned once at its deadline, then not read again while that read is stuck.
  REQUIRE(bad.size() == static_cast<size_t>(samples));
  CHECK(bad[0].find("\"sampler.ok\":false") != std::string::npos);
  CHECK(bad[0].find("the read did not return within 200 ms (blocked in the kernel?)") != std::string::npos);
  for (size_t k = 1; k < bad.size(); ++k) {
    INFO(bad[k]);
    CHECK(bad[k].find("\"sampler.ok\":false") != std::string::npos);
    CHECK(bad[k].find("has not returned (blocked in the kernel?): not read again until it does") != std::string::npos);
    CHECK(bad[k].find("\"sampler.warnings\":1") != std::string::npos);  // each sample's missed read is a warning
  }
  // The summary counts them as warnings too (it once said "0 warnings" while the records said ok:false).
  CHECK(r.err.find(", 6 warnings (6 reads timed out),") != std::string::npos);
}
