// iosonar serve under load (test/bench/RESULTS.md, section "serve"): a real
// MariaDB job database and Redis (test/testutil), a store with one simulated
// 1,024-node job (4 ranks a node), `iosonar serve` on loopback.
//  1. The first, uncached request for the job's summary (/api/jobs/JOB) and
//     for its per-second cross-layer series: wall time, each on a freshly
//     started server with the Redis keys deleted (RUNS times, median).
//  2. The cached summary (/api/jobs/JOB, with its diagnosis) and the cached
//     job page (/jobs/JOB, the HTML with its panels) under load: wrk
//     (Debian), 64 connections, 10 s, --latency: p50, p99 and requests/s
//     (RUNS times, medians), and the server's CPU time per request (user +
//     system of its process over the run / wrk's requests: steadier than
//     latency on a busy machine), beside the floor of the HTTP layer (a
//     static file), in three setups:
//     - "pinned": the server on CPU 0 (`taskset -c 0`, --threads 1: one
//       epoll thread) and wrk on CPU 1 (`taskset -c 1 wrk -t1`): neither
//       preempts the other;
//     - "shared": as measured before, `--threads 2` and `wrk -t2`, all four
//       threads on the same two cores (the scheduler interleaves them);
//     - "shared, Connection: close": the same with a new TCP connection per
//       request, which is what the server did before the keep-alive fix
//       (libmicrohttpd closed after a response queued in the handler's first call).
//  3. Instructions per cached request (callgrind, stable on a busy machine):
//     the server under `valgrind --tool=callgrind`, counts zeroed after two
//     warm-up requests, then 200 requests on one keep-alive connection
//     (curl), counts dumped: all threads' instructions / 200, for the page,
//     the summary and the static file.
// RUNS: $IOSONAR_BENCH_SERVE_RUNS (default 5). $IOSONAR_BENCH_SERVE_BIN: the
// iosonar binary that serves (default the build's). $IOSONAR_BENCH_SERVE_BASELINE:
// a second iosonar binary (an older build) measured side by side in the same
// run: both servers up, the runs alternating between them path by path.
// $IOSONAR_BENCH_SERVE_SETUPS: the setups to run (comma-separated names, e.g.
// "pinned,shared"; default all).
// A Catch2 program only to reuse the test servers; run by `run-bench-serve`.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "test/bench/bench_clock.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// "1.23ms" / "812.00us" / "1.02s" -> milliseconds
double Ms(const std::string& v) {
  double x = std::stod(v);
  if (v.find("us") != std::string::npos) return x / 1000;
  if (v.find("ms") != std::string::npos) return x;
  if (v.find('s') != std::string::npos) return x * 1000;
  return x;
}

// The user + system CPU seconds a process has used (/proc/PID/stat).
double CpuSeconds(pid_t pid) {
  const std::string st = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = st.rfind(')');
  std::istringstream in(st.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> f; ++i)
    if (i == 14 || i == 15) ticks += std::stod(f);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

int Runs() {
  const char* t = std::getenv("IOSONAR_BENCH_SERVE_RUNS");
  return t && *t ? std::atoi(t) : 5;
}

struct Server {
  std::optional<Child> proc;
  int port = FreePort();
  // cpu: "" = unpinned, else `taskset -c CPU`.
  // bin: "" = $IOSONAR_BENCH_SERVE_BIN, else the build's. wrap: a command before it (valgrind).
  Server(const std::string& store, const std::string& mysql, const std::string& redis, const std::string& log,
         const std::string& threads = "1", const std::string& cpu = "", std::string bin = "",
         const std::vector<std::string>& wrap = {}, int wait_ms = 20000) {
    std::vector<std::string> argv;
    if (!cpu.empty()) argv = {"taskset", "-c", cpu};
    argv.insert(argv.end(), wrap.begin(), wrap.end());
    if (bin.empty()) bin = Env("IOSONAR_BENCH_SERVE_BIN");
    for (const std::string& a : {bin.empty() ? IosonarBin() : bin, std::string("serve"), std::string("--store"), store,
                                 std::string("--mysql"), mysql, std::string("--redis"), redis, std::string("--listen"),
                                 "127.0.0.1:" + std::to_string(port), std::string("--trusted-proxy"),
                                 std::string("127.0.0.1"), std::string("--threads"), threads})
      argv.push_back(a);
    proc.emplace(argv, std::map<std::string, std::string>{}, log);
    REQUIRE(WaitUntil([&] { return !proc->Alive() || CanConnect(port); }, wait_ms));
    REQUIRE(proc->Alive());
  }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

}  // namespace

TEST_CASE("bench: iosonar serve", "[bench]") {
  const int runs = Runs();
  REQUIRE(HaveProgram("wrk"));
  REQUIRE(HaveProgram("taskset"));
  REQUIRE(HaveProgram("curl"));
  TempDir dir;
  MariaDbServer db;
  RedisServer redis;
  auto t0 = bench::Clock::now();
  auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "1024", "--fwd", "16", "--osts", "32",
                  "--duration", "30", "--mysql", db.url(), "--job",
                  "id=5000,user=daemon,name=big,mode=N-N,first=0,nodes=1024,ppn=4,duration=30,period=3,io=1,bytes=16M,req=1M"});
  REQUIRE(sim.exit_code == 0);
  std::printf("store: 1,024-node job 5000 (4 ranks a node) simulated in %.1f s\n", bench::Since(t0));
  auto count = Run({IosonarBin(), "job-summary", "5000", "--store", dir / "store", "--format", "json"});
  REQUIRE(count.exit_code == 0);
  std::smatch m;
  std::regex rec("\"records\":\\s*([0-9]+)");
  if (std::regex_search(count.out, m, rec)) std::printf("trace records of the job: %s\n", m[1].str().c_str());

  const std::map<std::string, std::string> hdr;
  auto curl_ms = [&](const std::string& url) {
    auto t = bench::Clock::now();
    auto r = Run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Remote-User: daemon", url});
    double ms = bench::Since(t) * 1000;
    REQUIRE(r.out == "200");
    return ms;
  };
  std::vector<double> first_summary, first_series, cached_one;
  for (int i = 0; i < runs; ++i) {
    redis.Command({"DEL", "iosonar:job:5000:summary", "iosonar:job:5000:xlayer"});
    Server s(dir / "store", db.url(), redis.url(), dir / ("serve" + std::to_string(i) + ".log"));
    first_summary.push_back(curl_ms(s.Url("/api/jobs/5000")));
    first_series.push_back(curl_ms(s.Url("/api/jobs/5000/series")));
    cached_one.push_back(curl_ms(s.Url("/api/jobs/5000")));
  }
  std::printf("first uncached /api/jobs/5000 (fresh server): median %.0f ms (%.0f..%.0f)\n", Median(first_summary),
              *std::min_element(first_summary.begin(), first_summary.end()),
              *std::max_element(first_summary.begin(), first_summary.end()));
  std::printf("first uncached /api/jobs/5000/series: median %.0f ms (%.0f..%.0f)\n", Median(first_series),
              *std::min_element(first_series.begin(), first_series.end()),
              *std::max_element(first_series.begin(), first_series.end()));
  std::printf("one cached /api/jobs/5000 with curl (process start included): median %.1f ms\n", Median(cached_one));

  // The builds compared: this one ("new") and, when given, a baseline ("old").
  struct Build {
    std::string name, bin;
  };
  std::vector<Build> builds = {{"new", Env("IOSONAR_BENCH_SERVE_BIN")}};
  if (std::string b = Env("IOSONAR_BENCH_SERVE_BASELINE"); !b.empty()) builds.push_back({"old", b});
  const std::vector<std::string> paths = {"/api/jobs/5000", "/jobs/5000", "/static/iosonar.css"};

  // ---- 3. instructions per cached request (callgrind) ----
  std::vector<std::string> cg_table;
  if (HaveProgram("valgrind") && HaveProgram("callgrind_control")) {
    const int n = 200;
    for (const auto& b : builds) {
      const std::string out = dir / ("cg-" + b.name);
      Server s(dir / "store", db.url(), redis.url(), dir / ("serve-cg-" + b.name + ".log"), "1", "", b.bin,
               {"valgrind", "--tool=callgrind", "--callgrind-out-file=" + out + ".%p"}, 120000);
      const std::string pid = std::to_string(s.proc->pid());
      std::string line = "| " + b.name;
      for (const auto& path : paths) {
        curl_ms(s.Url(path));
        curl_ms(s.Url(path));
        REQUIRE(Run({"callgrind_control", "-z", pid}).exit_code == 0);
        std::vector<std::string> argv = {"curl", "-s", "-H", "X-Remote-User: daemon"};
        for (int i = 0; i < n; ++i)
          for (const std::string& a : {std::string("-o"), std::string("/dev/null"), s.Url(path)}) argv.push_back(a);
        REQUIRE(Run(argv).exit_code == 0);
        REQUIRE(Run({"callgrind_control", "-d", pid}).exit_code == 0);
        // The newest dump of this server: out.PID.K, K counting up.
        auto ls = Run({"sh", "-c", "ls -t " + out + "." + pid + ".* | head -1"});
        std::string file = ls.out.substr(0, ls.out.find('\n'));
        std::smatch cm;
        const std::string text = ReadFile(file);
        REQUIRE(std::regex_search(text, cm, std::regex("\nsummary: ([0-9]+)")));
        const double per = std::stod(cm[1].str()) / n;
        std::printf("callgrind %s %s: %.0f instructions per request (%d requests, one connection)\n", b.name.c_str(),
                    path.c_str(), per, n);
        char cell[64];
        std::snprintf(cell, sizeof cell, " | %.0f", per);
        line += cell;
      }
      cg_table.push_back(line + " |");
    }
  }

  struct Setup {
    const char* name;
    std::string threads, server_cpu;
    std::vector<std::string> wrk;  // the command before wrk's own options
  };
  std::vector<Setup> setups = {
      {"pinned", "1", "0", {"taskset", "-c", "1", "wrk", "-t1"}},
      {"shared", "2", "", {"wrk", "-t2"}},
      // What the server did before the keep-alive fix (it closed every
      // connection after one response): each request a new TCP connection.
      {"shared, Connection: close", "2", "", {"wrk", "-t2", "-H", "Connection: close"}},
  };
  if (std::string only = Env("IOSONAR_BENCH_SERVE_SETUPS"); !only.empty()) {
    std::vector<Setup> keep;
    for (const auto& st : setups)
      if (("," + only + ",").find("," + std::string(st.name) + ",") != std::string::npos) keep.push_back(st);
    setups = keep;
  }
  std::vector<std::string> table;
  for (const auto& setup : setups) {
    std::vector<std::unique_ptr<Server>> servers;
    for (const auto& b : builds) {
      servers.push_back(std::make_unique<Server>(dir / "store", db.url(), redis.url(),
                                                 dir / (std::string("serve-wrk-") + setup.name + "-" + b.name + ".log"),
                                                 setup.threads, setup.server_cpu, b.bin));
      Server& s = *servers.back();
      curl_ms(s.Url("/api/jobs/5000"));  // cached in Redis already; warms the job's row
      auto size = Run({"curl", "-s", "-H", "X-Remote-User: daemon", s.Url("/api/jobs/5000")});
      std::printf("%s: summary response: %zu bytes\n", b.name.c_str(), size.out.size());
      auto page = Run({"curl", "-s", "-H", "X-Remote-User: daemon", s.Url("/jobs/5000")});
      std::printf("%s: job page response: %zu bytes\n", b.name.c_str(), page.out.size());
      REQUIRE(page.out.find("<h2>Request sizes</h2>") != std::string::npos);
    }
    // The same load on the cached summary, the cached page and, for the floor
    // of the HTTP layer on this machine, on a static file (no identity, no
    // lookups), alternating run by run (and build by build) so all see the
    // same machine.
    std::map<std::string, std::vector<double>> p50, p99, rps, cpu_us;  // by build + path
    for (int i = 0; i < runs; ++i)
      for (const auto& path : paths)
        for (size_t k = 0; k < builds.size(); ++k) {
          Server& s = *servers[k];
          const std::string key = builds[k].name + " " + path;
          const double cpu0 = CpuSeconds(s.proc->pid());
          std::vector<std::string> argv = setup.wrk;
          for (const std::string& a : {std::string("-c64"), std::string("-d10s"), std::string("--latency"),
                                       std::string("-H"), std::string("X-Remote-User: daemon"), s.Url(path)})
            argv.push_back(a);
          auto w = Run(argv);
          const double cpu = CpuSeconds(s.proc->pid()) - cpu0;
          REQUIRE(w.exit_code == 0);
          std::smatch a, b, c, n;
          std::regex r50("\\n\\s*50%\\s+([0-9.]+[a-z]+)"), r99("\\n\\s*99%\\s+([0-9.]+[a-z]+)"),
              rr("Requests/sec:\\s+([0-9.]+)");
          INFO(w.out);
          REQUIRE(std::regex_search(w.out, a, r50));
          REQUIRE(std::regex_search(w.out, b, r99));
          REQUIRE(std::regex_search(w.out, c, rr));
          REQUIRE(std::regex_search(w.out, n, std::regex("([0-9]+) requests in")));
          CHECK(w.out.find("Non-2xx") == std::string::npos);
          CHECK(w.out.find("Socket errors") == std::string::npos);
          p50[key].push_back(Ms(a[1].str()));
          p99[key].push_back(Ms(b[1].str()));
          rps[key].push_back(std::stod(c[1].str()));
          cpu_us[key].push_back(cpu * 1e6 / std::max(1.0, std::stod(n[1].str())));
          std::printf("%s %s wrk %s run %d: p50 %.2f ms, p99 %.2f ms, %.0f req/s, server CPU %.1f us/request\n",
                      setup.name, builds[k].name.c_str(), path.c_str(), i + 1, p50[key].back(), p99[key].back(),
                      rps[key].back(), cpu_us[key].back());
          std::fflush(stdout);
        }
    for (const auto& path : paths)
      for (const auto& b : builds) {
        const std::string key = b.name + " " + path;
        auto mn = *std::min_element(p99[key].begin(), p99[key].end());
        auto mx = *std::max_element(p99[key].begin(), p99[key].end());
        char line[512];
        std::snprintf(line, sizeof line, "| %s (--threads %s%s) | %s | %s | %.2f ms | %.2f ms (%.2f-%.2f) | %.0f | %.1f us |",
                      setup.name, setup.threads.c_str(), setup.server_cpu.empty() ? "" : ", CPU 0; wrk -t1 on CPU 1",
                      path.c_str(), b.name.c_str(), Median(p50[key]), Median(p99[key]), mn, mx, Median(rps[key]),
                      Median(cpu_us[key]));
        table.push_back(line);
      }
    const std::string floor = builds[0].name + " " + paths.back();
    for (size_t k = 0; k + 1 < paths.size(); ++k) {
      const std::string key = builds[0].name + " " + paths[k];
      char ratio[256];
      std::snprintf(ratio, sizeof ratio, "| %s: %s / static | new | %.2fx | %.2fx | %.2fx | %.2fx |", setup.name,
                    paths[k].c_str(), Median(p50[key]) / Median(p50[floor]), Median(p99[key]) / Median(p99[floor]),
                    Median(rps[key]) / Median(rps[floor]), Median(cpu_us[key]) / Median(cpu_us[floor]));
      table.push_back(ratio);
      if (builds.size() > 1) {
        const std::string old = builds[1].name + " " + paths[k];
        std::snprintf(ratio, sizeof ratio, "| %s: %s new / old | | %.2fx | %.2fx | %.2fx | %.2fx |", setup.name,
                      paths[k].c_str(), Median(p50[key]) / Median(p50[old]), Median(p99[key]) / Median(p99[old]),
                      Median(rps[key]) / Median(rps[old]), Median(cpu_us[key]) / Median(cpu_us[old]));
        table.push_back(ratio);
      }
    }
  }
  if (!cg_table.empty()) {
    std::printf("\ninstructions per cached request (callgrind, all threads, 200 requests on one connection)\n\n");
    std::printf("| build | /api/jobs/5000 | /jobs/5000 | /static/iosonar.css |\n|---|---|---|---|\n");
    for (const auto& l : cg_table) std::printf("%s\n", l.c_str());
  }
  std::printf("\n64 connections, 10 s a run, medians of %d runs (p99: range of the runs)\n\n", runs);
  std::printf("| setup | path | build | p50 | p99 | requests/s | server CPU per request |\n|---|---|---|---|---|---|---|\n");
  for (const auto& l : table) std::printf("%s\n", l.c_str());
  auto la = ReadFile("/proc/loadavg");
  std::printf("load average: %s", la.c_str());
}

}  // namespace iosonar::test
