// Tracer benchmarks (see RESULTS.md): overhead on fio, cost per intercepted
// call (ns and callgrind instructions), first-pass compression ratios and
// bytes on the wire, and the RSS the tracer adds.
//
//   bench_tracer [--pairs N] [--seconds S] [--quick] [--lib PATH]
//                [--only overhead,percall,fio4k,fio4k-read,fio4k-write,compression,memory]
// fio4k: rounds of untraced, timing floor (libiosonar-timing-floor.so: only the
// clock reads) and traced fio runs of S seconds (2), then perf's profile share.
// --lib measures another build of the tracer (an older one, for before/after).
// Needs fio and valgrind on PATH, the build tree's libiosonar-trace.so and
// tp_pattern. Traced and untraced runs alternate so both see the same noise.
#include <rapidjson/document.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string g_bin = IOSONAR_BINARY_DIR;
std::string g_lib = g_bin + "/libiosonar-trace.so";
std::string g_dir;  // tmpfs work directory

struct Proc {
  int status = 0;
  long maxrss_kb = 0;
  double wall_s = 0;
  std::string out;
};

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs argv with extra env; stdout captured to a file we read back.
Proc RunCmd(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, bool quiet_stderr = false) {
  std::string outf = g_dir + "/cmd.out";
  std::fflush(stdout);  // or the child's copy of the buffer is printed again
  double t0 = Now();
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (!freopen(outf.c_str(), "w", stdout)) _exit(126);
    if (quiet_stderr && !freopen("/dev/null", "w", stderr)) _exit(126);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  Proc p;
  rusage ru{};
  wait4(pid, &p.status, 0, &ru);
  p.wall_s = Now() - t0;
  p.maxrss_kb = ru.ru_maxrss;
  std::ifstream in(outf);
  std::stringstream ss;
  ss << in.rdbuf();
  p.out = ss.str();
  if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0) {
    std::fprintf(stderr, "bench_tracer: command failed: %s\n", argv[0].c_str());
    std::exit(1);
  }
  return p;
}

std::map<std::string, std::string> TraceEnv(const std::string& out) {
  return {{"LD_PRELOAD", g_lib}, {"IOSONAR_OUTPUT", out}, {"IOSONAR_SPOOL_DIR", g_dir + "/spool"}};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double FioBw(const std::string& json, const char* dir) {
  rapidjson::Document d;
  d.Parse(json.c_str() + std::min(json.find('{'), json.size()));
  if (d.HasParseError()) return 0;
  return static_cast<double>(d["jobs"][0][dir]["bw_bytes"].GetInt64());
}

// The median of per-round ratios a/b.
double MedianRatio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (b[i] > 0) r.push_back(a[i] / b[i]);
  return r.empty() ? 0 : Median(r);
}

void Overhead(const char* bs, const char* size, int pairs, int seconds, const char* rw = "write") {
  std::string file = g_dir + "/fio.dat";
  const char* dir = strstr(rw, "read") ? "read" : "write";
  // Time-based runs over a page-cache file: every run lasts the same, long
  // enough that start-up and the tracer's exit flush do not count.
  // Pinned to one CPU (taskset, util-linux): on these VMs the spread of
  // unpinned tmpfs runs is +-30 %, pinned a few %.
  std::vector<std::string> fio{"taskset", "-c", "1", "fio", "--name=o", "--filename=" + file, std::string("--rw=") + rw, std::string("--bs=") + bs,
                               std::string("--size=") + size, "--time_based", "--runtime=" + std::to_string(seconds),
                               "--output-format=json"};
  RunCmd(fio, {});  // warm up: file exists, page cache populated
  // Three variants per round, in an order that rotates so drift favours none:
  // untraced; the timing floor (a preload that only reads the TSC around each
  // call, as the tracer does: what any tracer that times every call pays);
  // the tracer.
  const std::string floor_lib = g_bin + "/libiosonar-timing-floor.so";
  const bool have_floor = access(floor_lib.c_str(), R_OK) == 0;
  std::vector<double> plain, floor, traced;
  for (int i = 0; i < pairs; ++i) {
    double bw[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      const int v = (i + k) % 3;
      if (v == 0) bw[0] = FioBw(RunCmd(fio, {}).out, dir);
      if (v == 1 && have_floor) bw[1] = FioBw(RunCmd(fio, {{"LD_PRELOAD", floor_lib}}).out, dir);
      if (v == 2) bw[2] = FioBw(RunCmd(fio, TraceEnv(g_dir + "/trace.jsonl")).out, dir);
    }
    plain.push_back(bw[0]);
    floor.push_back(bw[1]);
    traced.push_back(bw[2]);
    unlink((g_dir + "/trace.jsonl").c_str());
  }
  std::printf("fio %s bs=%-3s file=%-4s %ds, %d rounds: untraced median %8.1f MiB/s  traced median %8.1f MiB/s  "
              "traced/untraced: ratio of medians %.3f, median of the rounds' ratios %.3f\n",
              rw, bs, size, seconds, pairs, Median(plain) / 1048576, Median(traced) / 1048576, Median(traced) / Median(plain),
              MedianRatio(traced, plain));
  if (have_floor)
    std::printf("fio %s bs=%-3s timing floor (TSC read around each call, nothing else): median %8.1f MiB/s, "
                "floor/untraced: ratio of medians %.3f, median of the rounds' ratios %.3f; traced/floor %.3f\n",
                rw, bs, Median(floor) / 1048576, Median(floor) / Median(plain), MedianRatio(floor, plain), MedianRatio(traced, floor));
  // The runs are CPU-bound on tmpfs: other tenants of the machine only ever
  // slow a run down, so each side's best run is its least disturbed one
  // (the estimator PerCall uses: min of the times).
  double best_plain = *std::max_element(plain.begin(), plain.end());
  double best_traced = *std::max_element(traced.begin(), traced.end());
  std::printf("fio %s bs=%-3s best of %d: untraced %8.1f MiB/s  traced %8.1f MiB/s  traced/untraced %.3f", rw, bs,
              pairs, best_plain / 1048576, best_traced / 1048576, best_traced / best_plain);
  if (have_floor) std::printf("  floor/untraced %.3f", *std::max_element(floor.begin(), floor.end()) / best_plain);
  std::printf("\n");
  unlink(file.c_str());
}

// The tracer's share of a traced fio run's CPU time, from perf's software
// clock samples (perf record -e cpu-clock: works without hardware counters,
// in VMs). Unlike the bandwidth ratios it hardly moves with the machine's
// load, because both parts slow down together; it counts the time spent in
// the tracer's own code (the clock reads included), not what it costs the
// rest of the process in caches. Skipped when perf is not installed.
void ProfileShare(const char* rw, const char* size) {
  if (system("perf record -q -e cpu-clock -o /dev/null true > /dev/null 2>&1") != 0) {
    std::printf("fio %s profile: perf not available, skipped\n", rw);
    return;
  }
  std::string file = g_dir + "/fio.dat", data = g_dir + "/perf.data";
  // The tracer's environment after perf (env), so perf itself is not traced.
  std::vector<std::string> fio{"perf", "record", "-q", "-e", "cpu-clock", "-F", "10000", "-o", data, "--", "env"};
  for (const auto& [k, v] : TraceEnv(g_dir + "/trace.jsonl")) fio.push_back(k + "=" + v);
  for (const char* a : {"taskset", "-c", "1", "fio", "--name=o", "--bs=4k", "--time_based", "--runtime=3", "--output-format=json"})
    fio.push_back(a);
  fio.push_back("--filename=" + file);
  fio.push_back(std::string("--rw=") + rw);
  fio.push_back(std::string("--size=") + size);
  RunCmd(fio, {}, true);
  std::string report = g_dir + "/perf.txt";
  std::string cmd = "perf report -i " + data + " --no-children --sort dso -g none --stdio > " + report + " 2>/dev/null";
  double share = 0;  // no line for the tracer: no sample in its code
  bool samples = false;
  if (system(cmd.c_str()) == 0) {
    std::ifstream in(report);
    std::string line;
    while (std::getline(in, line)) {
      samples |= !line.empty() && line[0] != '#' && line.find('%') != std::string::npos;
      if (line.find(g_lib.substr(g_lib.rfind('/') + 1)) != std::string::npos) share = std::atof(line.c_str()) / 100;
    }
  }
  if (!samples) {  // a failed record or report is not a 0 % share
    std::printf("fio %s profile: perf recorded or reported no samples, skipped\n", rw);
  } else {
    std::printf("fio %s profile (perf cpu-clock, 3 s traced): %.2f %% of the process's samples in the tracer's code, "
                "so traced/untraced >= %.3f by this measure\n", rw, share * 100, 1 - share);
  }
  unlink(data.c_str());
  unlink(report.c_str());
  unlink(file.c_str());
  unlink((g_dir + "/trace.jsonl").c_str());
}

void PerCall(int reps, const char* mode, const char* what, const std::map<std::string, std::string>& extra = {}) {
  std::string file = g_dir + "/loop.dat";
  const long n = 1000000;
  std::vector<std::string> loop{g_bin + "/test/tp_pattern", mode, file, "4096", std::to_string(n)};
  double best_plain = 1e9, best_traced = 1e9;
  for (int i = 0; i < reps; ++i) {
    best_plain = std::min(best_plain, RunCmd(loop, {}).wall_s);
    auto te = TraceEnv(g_dir + "/t.jsonl");
    te.insert(extra.begin(), extra.end());
    best_traced = std::min(best_traced, RunCmd(loop, te).wall_s);
    unlink((g_dir + "/t.jsonl").c_str());
  }
  std::printf("%s (%ld calls, min of %d): untraced %.1f ns/call, traced %.1f ns/call, added %.1f ns/call\n", what, n,
              reps, best_plain / static_cast<double>(n) * 1e9, best_traced / static_cast<double>(n) * 1e9,
              (best_traced - best_plain) / static_cast<double>(n) * 1e9);
  // callgrind: instructions are deterministic for a given binary and input.
  if (system("valgrind --version > /dev/null 2>&1") != 0) {
    std::printf("callgrind: valgrind not installed, skipped\n");
    return;
  }
  auto instr = [&](long calls, bool traced) {
    std::string cg = g_dir + "/cg.out";
    std::vector<std::string> v{"valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg, g_bin + "/test/tp_pattern",
                               mode, file, "4096", std::to_string(calls)};
    auto env = traced ? TraceEnv(g_dir + "/cg.jsonl") : std::map<std::string, std::string>{};
    if (traced) env.insert(extra.begin(), extra.end());
    // The flusher thread wakes on wall-clock time, and valgrind slows the
    // program ~50x: leave it out so the count is the per-call cost alone.
    if (traced) env["IOSONAR_FLUSHER"] = "0";
    // Nor may the count depend on wall-clock time: under valgrind's ~50x
    // slowdown (more on a loaded machine) 1 s windows and sweeps close and
    // format runs by time, and every second's first budgeted records are
    // formatted. Runs here close only by the pattern (a 100 s window).
    if (traced) env.emplace("IOSONAR_WINDOW_MS", "100000");
    RunCmd(v, env, /*quiet_stderr=*/true);
    std::ifstream in(cg);
    std::string line;
    long long total = 0;
    while (std::getline(in, line))
      if (line.rfind("summary:", 0) == 0 || line.rfind("totals:", 0) == 0) total = std::atoll(line.c_str() + line.find(':') + 1);
    unlink((g_dir + "/cg.jsonl").c_str());
    return total;
  };
  // The difference between two loop lengths cancels start-up and exit costs.
  long long p1 = instr(10000, false), p2 = instr(30000, false);
  long long t1 = instr(10000, true), t2 = instr(30000, true);
  double per_plain = static_cast<double>(p2 - p1) / 20000, per_traced = static_cast<double>(t2 - t1) / 20000;
  std::printf("  callgrind instructions per call (user space): untraced %.1f, traced %.1f, added %.1f\n", per_plain,
              per_traced, per_traced - per_plain);
}

struct Ratio {
  long long raw = 0, records = 0, bytes = 0;
};

Ratio CountTrace(const std::string& path) {
  Ratio r;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    r.bytes += static_cast<long long>(line.size()) + 1;
    if (line.find("\"event.dataset\":\"iosonar.trace\"") != std::string::npos) {
      ++r.records;
    } else if (line.find("\"event.action\":\"exit\"") != std::string::npos) {
      auto p = line.find("\"tracer.raw_ops\":");
      r.raw += std::atoll(line.c_str() + p + 17);
    }
  }
  return r;
}

void Compression() {
  std::string t = g_dir + "/c.jsonl";
  std::string f = g_dir + "/c.dat";
  struct Case {
    std::string name;
    std::vector<std::string> argv;
  };
  std::string tp = g_bin + "/test/tp_pattern";
  std::vector<Case> cases = {
      {"fio seq write 4k 256m", {"fio", "--name=c", "--filename=" + f, "--rw=write", "--bs=4k", "--size=256m"}},
      {"fio seq read 4k 256m", {"fio", "--name=c", "--filename=" + f, "--rw=read", "--bs=4k", "--size=256m"}},
      {"fio rand write 4k 64m", {"fio", "--name=c", "--filename=" + f, "--rw=randwrite", "--bs=4k", "--size=64m"}},
      {"fio rand read 4k 512m", {"fio", "--name=c", "--filename=" + f, "--rw=randread", "--bs=4k", "--size=512m"}},
      {"seq write 4k x 65536 (tp_pattern)", {tp, "seq-write", f, "4096", "65536"}},
      {"rand write 4k x 16384 (tp_pattern)", {tp, "rand-write", f, "4096", "16384"}},
      {"strided shared file, 4 procs x 4096 x 4k", {tp, "strided", f, "4096", "4096", "4"}},
  };
  std::printf("%-42s %10s %8s %10s %12s %12s\n", "workload", "raw ops", "records", "ops/record", "wire B/op", "B/record");
  for (const auto& c : cases) {
    unlink(t.c_str());
    if (c.name.find("read") != std::string::npos)
      RunCmd({"fio", "--name=lay", "--filename=" + f, "--rw=write", "--bs=1M", c.name.find("512m") != std::string::npos ? "--size=512m" : "--size=256m"}, {});
    RunCmd(c.argv, TraceEnv(t));
    Ratio r = CountTrace(t);
    std::printf("%-42s %10lld %8lld %10.1f %12.2f %12.1f\n", c.name.c_str(), r.raw, r.records,
                static_cast<double>(r.raw) / static_cast<double>(std::max(1LL, r.records)),
                static_cast<double>(r.bytes) / static_cast<double>(std::max(1LL, r.raw)),
                static_cast<double>(r.bytes) / static_cast<double>(std::max(1LL, r.records)));
    unlink(f.c_str());
  }
}

void Memory() {
  std::string tp = g_bin + "/test/tp_pattern";
  std::string f = g_dir + "/m.dat";
  std::vector<std::string> seq{tp, "rand-write", f, "4096", "100000"};
  long plain = RunCmd(seq, {}).maxrss_kb;
  long traced = RunCmd(seq, TraceEnv(g_dir + "/m.jsonl")).maxrss_kb;
  std::printf("max RSS, 100k random 4 KiB writes: untraced %ld KiB, traced %ld KiB, added %ld KiB\n", plain, traced, traced - plain);
  std::vector<std::string> th{g_bin + "/test/tp_behaviour", "threads", g_dir, "32"};
  plain = RunCmd(th, {}).maxrss_kb;
  traced = RunCmd(th, TraceEnv(g_dir + "/m.jsonl")).maxrss_kb;
  std::printf("max RSS, 32 threads each writing a file: untraced %ld KiB, traced %ld KiB, added %ld KiB\n", plain, traced,
              traced - plain);
  unlink(f.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int pairs = 11, seconds = 2;
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--lib") && i + 1 < argc) g_lib = argv[++i];
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::max(1, std::atoi(argv[++i]));
  }
  auto want = [&](const char* s) { return only.empty() || ("," + only + ",").find(std::string(",") + s + ",") != std::string::npos; };
  char tmpl[] = "/dev/shm/iosonar-bench-XXXXXX";
  char tmpl2[] = "/tmp/iosonar-bench-XXXXXX";
  const char* d = mkdtemp(tmpl);
  if (!d) d = mkdtemp(tmpl2);
  g_dir = d;
  std::printf("work directory %s (tmpfs when /dev/shm exists), tracer %s\n\n", g_dir.c_str(), g_lib.c_str());
  if (want("overhead")) {
    std::printf("== overhead on fio (traced vs untraced, alternating)\n");
    Overhead("1M", "64m", quick ? 3 : pairs, quick ? 1 : 2);
    Overhead("4k", "64m", quick ? 3 : pairs, quick ? 1 : 2);
  }
  // fio4k-read / fio4k-write: one of the two jobs (more rounds of it in the same time).
  const bool fio_read = want("fio4k") || want("fio4k-read"), fio_write = want("fio4k") || want("fio4k-write");
  if (fio_read || fio_write) {
    std::printf("\n== fio 4 KiB random read and sequential write (untraced, timing floor, traced; rotating)\n");
    if (fio_read) Overhead("4k", "256m", quick ? 3 : pairs, quick ? 1 : seconds, "randread");
    if (fio_write) Overhead("4k", "64m", quick ? 3 : pairs, quick ? 1 : seconds, "write");
    if (fio_read) ProfileShare("randread", "256m");
    if (fio_write) ProfileShare("write", "64m");
  }
  if (want("percall")) {
    std::printf("\n== cost per intercepted call\n");
    PerCall(quick ? 2 : 9, "pwrite-loop", "sequential 4 KiB pwrite loop, runs compress");
    // Every call its own record: no detail budget (else how many are formatted depends on the seconds elapsed).
    PerCall(quick ? 2 : 9, "pwrite-same", "4 KiB pwrite at one offset, one record per call (IOSONAR_DETAIL_BUDGET=0)",
            {{"IOSONAR_DETAIL_BUDGET", "0"}});
    PerCall(quick ? 2 : 9, "pwrite-rand",
            "4 KiB pwrite at never-adjacent random offsets, one record per call (IOSONAR_DETAIL_BUDGET=0)",
            {{"IOSONAR_DETAIL_BUDGET", "0"}});
    // Past the detail budget (here from the first record: 1 record/s) runs fold into aggregates.
    PerCall(quick ? 2 : 9, "pwrite-rand", "the same past the detail budget (IOSONAR_DETAIL_BUDGET=1)",
            {{"IOSONAR_DETAIL_BUDGET", "1"}});
    // fio --rw=randread's psync engine: pread of whole blocks at random offsets, past the budget and within it.
    PerCall(quick ? 2 : 9, "pread-rand", "4 KiB pread at never-adjacent random offsets past the detail budget (IOSONAR_DETAIL_BUDGET=1)",
            {{"IOSONAR_DETAIL_BUDGET", "1"}});
  }
  if (want("compression")) {
    std::printf("\n== first-pass compression\n");
    Compression();
  }
  if (want("memory")) {
    std::printf("\n== memory\n");
    Memory();
  }
  std::string rm = "rm -rf " + g_dir;
  return system(rm.c_str()) == 0 ? 0 : 1;
}
