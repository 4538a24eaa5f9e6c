// What `iosonar probe` costs the node: CPU time of the running probe process
// (from /proc/PID/schedstat, ns on the CPU; getrusage of the reaped child as a
// cross-check) over a steady-state window, at 1 Hz and at a faster rate to
// get the per-probe cost with more resolution.
//
//   bench_probe IOSONAR_BIN [SECONDS_AT_1HZ] [REPS]
//
// The probe writes to a temporary directory under $TMPDIR (page cache: the
// CPU cost of a probe is the system calls and copies, which is what the
// target is about; a slow file system adds wall time, not CPU).
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t SchedNs(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/schedstat");
  long long ns = -1;
  f >> ns;
  return ns;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Sample {
  double cpu_pct;       // steady-state CPU, % of one core
  double per_probe_us;  // CPU per probe (6 ops + records)
  double rusage_pct;    // whole process life incl. start-up, by getrusage
  double maxrss_mib;    // peak resident set
};

Sample RunOnce(const std::string& bin, const std::string& dir, double interval, double seconds) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string iv = std::to_string(interval);
    execl(bin.c_str(), bin.c_str(), "probe", "--dir", dir.c_str(), "--interval", iv.c_str(), "--output", "/dev/null",
          "--allow-small-file", "--quiet", static_cast<char*>(nullptr));
    _exit(127);
  }
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // start-up and first probes out of the window
  int64_t c0 = SchedNs(pid);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  int64_t c1 = SchedNs(pid);
  auto t1 = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  auto end = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(t1 - t0).count();
  double life = std::chrono::duration<double>(end - start).count();
  double cpu = static_cast<double>(c1 - c0) / 1e9;
  double ru_cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  Sample s;
  s.cpu_pct = 100.0 * cpu / wall;
  s.per_probe_us = 1e6 * cpu / (wall / interval);
  s.rusage_pct = 100.0 * ru_cpu / life;
  s.maxrss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  if (c0 < 0 || c1 < 0 || !WIFEXITED(st)) {
    std::fprintf(stderr, "bench_probe: the probe did not run (schedstat %lld..%lld, status %d)\n",
                 static_cast<long long>(c0), static_cast<long long>(c1), st);
    std::exit(1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_probe IOSONAR_BIN [SECONDS_AT_1HZ] [REPS]\n");
    return 2;
  }
  const std::string bin = argv[1];
  const double seconds = argc > 2 ? std::atof(argv[2]) : 20;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  const char* tmp = getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/iosonar-bench-probe-" + std::to_string(getpid());
  std::string pre = bin + " probe --precreate --quiet --dir " + dir + " --file-size 256M --pool-size 1000 --allow-small-file";
  if (std::system(pre.c_str()) != 0) {
    std::fprintf(stderr, "bench_probe: precreate failed: %s\n", pre.c_str());
    return 1;
  }
  std::printf("bench_probe: %s probe --dir %s (256 MiB file, 1000-file pool, page cache), %d reps\n", bin.c_str(),
              dir.c_str(), reps);
  struct Rate {
    double interval, seconds;
  };
  for (Rate rate : {Rate{1.0, seconds}, Rate{0.05, seconds / 4}}) {
    std::vector<double> pct, per, ru, rss;
    for (int i = 0; i < reps; ++i) {
      Sample s = RunOnce(bin, dir, rate.interval, rate.seconds);
      pct.push_back(s.cpu_pct);
      per.push_back(s.per_probe_us);
      ru.push_back(s.rusage_pct);
      rss.push_back(s.maxrss_mib);
      std::printf("  interval %.2f s, %.0f s window: %.4f %% of one core, %.0f us CPU per probe (getrusage over "
                  "the whole life: %.4f %%), peak RSS %.1f MiB\n",
                  rate.interval, rate.seconds, s.cpu_pct, s.per_probe_us, s.rusage_pct, s.maxrss_mib);
      std::fflush(stdout);
    }
    std::printf("interval %.2f s: median %.4f %% of one core, median %.0f us CPU per probe -> at 1 Hz %.4f %% "
                "(target <= 1 %%); median peak RSS %.1f MiB\n",
                rate.interval, Median(pct), Median(per), Median(per) / 1e4, Median(rss));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
