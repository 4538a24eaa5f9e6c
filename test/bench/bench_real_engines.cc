// Real engines side by side with the SQLite store, on the same simulated
// records (a Catch2 program: the engines are started by test/testutil's
// SearchEngine, as in the real-engine tests):
//   - ingest: `iosonar collect --from-file` into the SQLite store alone, and
//     the same with --es (the collector forwarding every record to the
//     engine's data streams); records/s wall, and bytes/record stored
//     (SQLite: store.db; engine: primary store size after a flush and a
//     force-merge to one segment);
//   - the analyses: `iosonar xlayer` and `job-summary` of the simulated job
//     from the engine and from SQLite, wall time (median of 3).
// usage: bench_real_engines [catch options]; IOSONAR_BENCH_DURATION (s of
// simulated time, default 900: ~10^6 records), IOSONAR_BENCH_ENGINES
// (opensearch,es), IOSONAR_BENCH_REPEAT (runs of each analysis on an
// engine, default 3; the median is reported). Requests and body bytes of
// each engine analysis are counted (IOSONAR_HTTP_STATS=1).
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "test/testutil/search_engine.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double TimeRun(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, RunResult* out = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Run(argv, env);
  const double s = Seconds(t0);
  INFO(argv[1] << ": " << r.err.substr(0, 2000));
  REQUIRE(r.exit_code == 0);
  if (out) *out = r;
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint64_t FileSize(const std::string& p) {
  struct stat sb {};
  return stat(p.c_str(), &sb) == 0 ? static_cast<uint64_t>(sb.st_size) : 0;
}

// Sum of a _cat/indices column over the backing indices (the answer is JSON:
// [{"COLUMN":"123"},...], bytes=b makes sizes plain numbers).
uint64_t SumColumn(const std::string& body, const std::string& column) {
  uint64_t s = 0;
  const std::string key = "\"" + column + "\":\"";
  for (size_t p = body.find(key); p != std::string::npos; p = body.find(key, p + 1))
    s += std::strtoull(body.c_str() + p + key.size(), nullptr, 10);
  INFO(body);
  CHECK(s > 0);
  return s;
}

// "iosonar: http URL: N requests, S body bytes sent, R body bytes received"
// (IOSONAR_HTTP_STATS=1) summed over a run's clients.
std::string HttpStats(const std::string& err) {
  unsigned long long req = 0, sent = 0, recv = 0;
  for (size_t p = err.find("iosonar: http "); p != std::string::npos; p = err.find("iosonar: http ", p + 1)) {
    unsigned long long a = 0, b = 0, c = 0;
    const size_t colon = err.find(": ", p + 14);
    if (colon != std::string::npos &&
        std::sscanf(err.c_str() + colon + 2, "%llu requests, %llu body bytes sent, %llu body bytes received", &a, &b, &c) == 3) {
      req += a;
      sent += b;
      recv += c;
    }
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "%llu requests, %.2f MB sent, %.2f MB received", req, static_cast<double>(sent) / 1e6,
                static_cast<double>(recv) / 1e6);
  return buf;
}

}  // namespace

TEST_CASE("bench: real engines against the SQLite store", "[.bench]") {
  const char* dur_env = std::getenv("IOSONAR_BENCH_DURATION");
  const std::string duration = dur_env && *dur_env ? dur_env : "900";
  const char* eng_env = std::getenv("IOSONAR_BENCH_ENGINES");
  const std::string engines = eng_env && *eng_env ? eng_env : "opensearch,es";
  TempDir dir;
  const std::string job = "id=5000,mode=N-N,first=0,nodes=256,ppn=4,stripes=4,start=0,duration=" + duration +
                          ",period=1,io=1,bytes=4M,req=64K";
  REQUIRE(Run({IosonarBin(), "simulate", "--output", dir / "sim.jsonl", "--nodes", "256", "--fwd", "4", "--osts", "16",
               "--duration", duration, "--seed", "5", "--job", job, "--maps", dir / "maps.json"})
              .exit_code == 0);
  const std::string data = ReadFile(dir / "sim.jsonl");
  const auto n = static_cast<uint64_t>(std::count(data.begin(), data.end(), '\n'));
  std::printf("simulated %llu records (%.1f MB of JSON lines), job 5000: 256 nodes x 4 ranks x %s s\n",
              static_cast<unsigned long long>(n), static_cast<double>(data.size()) / 1e6, duration.c_str());

  // SQLite alone.
  const double t_sq = TimeRun({IosonarBin(), "collect", "--store", dir / "sq", "--from-file", dir / "sim.jsonl"},
                              {{"IOSONAR_CONFIG", "/nonexistent"}});
  const uint64_t sq_bytes = FileSize(dir / "sq/store.db") + FileSize(dir / "sq/store.db-wal");
  std::printf("| SQLite store (collect --from-file) | %.0f rec/s | %.1f B/record |\n", static_cast<double>(n) / t_sq,
              static_cast<double>(sq_bytes) / static_cast<double>(n));
  std::vector<double> xs, js;
  for (int i = 0; i < 3; ++i) {
    xs.push_back(TimeRun({IosonarBin(), "xlayer", "5000", "--store", dir / "sq", "--maps", dir / "maps.json", "--format", "json"},
                         {{"IOSONAR_CONFIG", "/nonexistent"}}));
    js.push_back(TimeRun({IosonarBin(), "job-summary", "5000", "--store", dir / "sq", "--format", "json"},
                         {{"IOSONAR_CONFIG", "/nonexistent"}}));
  }
  const double sq_x = Median(xs), sq_j = Median(js);
  std::printf("| SQLite | xlayer %.2f s | job-summary %.2f s |\n", sq_x, sq_j);

  for (const EngineKind kind : {EngineKind::kOpenSearch, EngineKind::kElasticsearch}) {
    const std::string key = kind == EngineKind::kOpenSearch ? "opensearch" : "es";
    if (engines.find(key) == std::string::npos) continue;
    std::string skip;
    SearchEngine* e = SearchEngine::Shared(kind, &skip);
    if (!e) {
      std::printf("%s: %s\n", key.c_str(), skip.c_str());
      continue;
    }
    auto env = e->Env("bench");
    env["IOSONAR_HTTP_STATS"] = "1";
    REQUIRE(Run({IosonarBin(), "es-setup", "--url", e->url()}, env).exit_code == 0);
    std::vector<std::string> argv = {IosonarBin(), "collect", "--store", dir / ("fw-" + key), "--from-file",
                                     dir / "sim.jsonl", "--es", e->url(), "--es-namespace", "bench"};
    if (kind == EngineKind::kElasticsearch) argv.insert(argv.end(), {"--es-user", "iosonar", "--es-ca-file", e->ca_file()});
    RunResult rr;
    const double t_fw = TimeRun(argv, env, &rr);
    CHECK(rr.err.find("forwarded " + std::to_string(n) + ", forward errors 0") != std::string::npos);
    const std::string all = "/logs-iosonar.*-bench,metrics-iosonar.*-bench";
    REQUIRE(e->Admin("POST", all + "/_refresh").status == 200);
    REQUIRE(e->Admin("POST", all + "/_flush").status == 200);
    const uint64_t before = SumColumn(e->Admin("GET", "/_cat/indices/" + all.substr(1) + "?h=pri.store.size&bytes=b&expand_wildcards=all").body, "pri.store.size");
    REQUIRE(e->Admin("POST", all + "/_forcemerge?max_num_segments=1").status == 200);
    const uint64_t after = SumColumn(e->Admin("GET", "/_cat/indices/" + all.substr(1) + "?h=pri.store.size&bytes=b&expand_wildcards=all").body, "pri.store.size");
    const uint64_t docs = SumColumn(e->Admin("GET", "/_cat/indices/" + all.substr(1) + "?h=docs.count&expand_wildcards=all").body, "docs.count");
    CHECK(docs == n);
    std::printf("| collect --from-file --es (%s): SQLite store + forward | %.0f rec/s | %.1f B/record (%.1f before force-merge) |\n",
                e->name().c_str(), static_cast<double>(n) / t_fw, static_cast<double>(after) / static_cast<double>(n),
                static_cast<double>(before) / static_cast<double>(n));
    xs.clear();
    js.clear();
    RunResult a, b;
    const char* rep_env = std::getenv("IOSONAR_BENCH_REPEAT");
    const int repeat = rep_env && std::atoi(rep_env) > 0 ? std::atoi(rep_env) : 3;
    for (int i = 0; i < repeat; ++i) {
      xs.push_back(TimeRun({IosonarBin(), "xlayer", "5000", "--store", e->url(), "--maps", dir / "maps.json", "--format", "json"},
                           env, &a));
      js.push_back(TimeRun({IosonarBin(), "job-summary", "5000", "--store", e->url(), "--format", "json"}, env, &b));
    }
    auto sa = Run({IosonarBin(), "xlayer", "5000", "--store", dir / "sq", "--maps", dir / "maps.json", "--format", "json"},
                  {{"IOSONAR_CONFIG", "/nonexistent"}});
    CHECK(a.out == sa.out);
    auto sb = Run({IosonarBin(), "job-summary", "5000", "--store", dir / "sq", "--format", "json"}, {{"IOSONAR_CONFIG", "/nonexistent"}});
    CHECK(b.out == sb.out);
    std::printf("| %s | xlayer %.2f s (%.1fx SQLite; %s) | job-summary %.2f s (%.1fx SQLite; %s) |\n", e->name().c_str(),
                Median(xs), Median(xs) / sq_x, HttpStats(a.err).c_str(), Median(js), Median(js) / sq_j, HttpStats(b.err).c_str());
    std::fflush(stdout);
  }
}
