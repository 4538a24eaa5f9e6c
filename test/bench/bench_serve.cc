// iosonar serve under load (test/bench/RESULTS.md, section "serve"): a real
// MariaDB job database and Redis (test/testutil), a store with one simulated
// 1,024-node job (4 ranks a node), `iosonar serve` on loopback.
//  1. The first, uncached request for the job's summary (/api/jobs/JOB) and
//     for its per-second cross-layer series: wall time, each on a freshly
//     started server with the Redis keys deleted (RUNS times, median).
//  2. The cached summary under load: wrk (Debian), 64 connections, 2
//     threads, 10 s, --latency: p50, p99 and requests/s (RUNS times, medians).
// The server's --threads: argv-free, from $IOSONAR_BENCH_SERVE_THREADS (default 2,
// the machine's cores).
// A Catch2 program only to reuse the test servers; run by `run-bench-serve`.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>

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

std::string Threads() {
  const char* t = std::getenv("IOSONAR_BENCH_SERVE_THREADS");
  return t && *t ? t : "2";
}

struct Server {
  std::optional<Child> proc;
  int port = FreePort();
  Server(const std::string& store, const std::string& mysql, const std::string& redis, const std::string& log) {
    proc.emplace(std::vector<std::string>{IosonarBin(), "serve", "--store", store, "--mysql", mysql, "--redis", redis,
                                          "--listen", "127.0.0.1:" + std::to_string(port), "--trusted-proxy",
                                          "127.0.0.1", "--threads", Threads()},
                 std::map<std::string, std::string>{}, log);
    REQUIRE(WaitUntil([&] { return !proc->Alive() || CanConnect(port); }, 20000));
    REQUIRE(proc->Alive());
  }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

}  // namespace

TEST_CASE("bench: iosonar serve", "[bench]") {
  const int runs = 3;
  REQUIRE(HaveProgram("wrk"));
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

  Server s(dir / "store", db.url(), redis.url(), dir / "serve-wrk.log");
  curl_ms(s.Url("/api/jobs/5000"));  // cached in Redis already; warms the job's row
  auto size = Run({"curl", "-s", "-H", "X-Remote-User: daemon", s.Url("/api/jobs/5000")});
  std::printf("summary response: %zu bytes\n", size.out.size());
  // The same load on the cached summary and, for the floor of the HTTP layer
  // on this machine, on a 0.8 KB static file (no identity, no lookups).
  for (const char* path : {"/api/jobs/5000", "/static/iosonar.css"}) {
    std::vector<double> p50, p99, rps;
    for (int i = 0; i < runs; ++i) {
      auto w = Run({"wrk", "-t2", "-c64", "-d10s", "--latency", "-H", "X-Remote-User: daemon", s.Url(path)});
      REQUIRE(w.exit_code == 0);
      std::smatch a, b, c;
      std::regex r50("\\n\\s*50%\\s+([0-9.]+[a-z]+)"), r99("\\n\\s*99%\\s+([0-9.]+[a-z]+)"),
          rr("Requests/sec:\\s+([0-9.]+)");
      REQUIRE(std::regex_search(w.out, a, r50));
      REQUIRE(std::regex_search(w.out, b, r99));
      REQUIRE(std::regex_search(w.out, c, rr));
      INFO(w.out);
      CHECK(w.out.find("Non-2xx") == std::string::npos);
      p50.push_back(Ms(a[1].str()));
      p99.push_back(Ms(b[1].str()));
      rps.push_back(std::stod(c[1].str()));
      std::printf("wrk %s run %d: p50 %.2f ms, p99 %.2f ms, %.0f req/s\n", path, i + 1, p50.back(), p99.back(), rps.back());
    }
    std::printf("%s, 64 connections: p50 %.2f ms, p99 %.2f ms, %.0f req/s (medians of %d)\n", path, Median(p50),
                Median(p99), Median(rps), runs);
  }
  std::printf("server threads: %s\n", Threads().c_str());
  auto la = ReadFile("/proc/loadavg");
  std::printf("load average: %s", la.c_str());
}

}  // namespace iosonar::test
