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
//
// "[.bench10m]" (run-bench-engines-10m): issue 12's 1,024-node job with ~10^7
// trace records (1,024 nodes x 16 ranks x IOSONAR_BENCH10M_DURATION s, default
// 610, of one 4 MiB write run a second, as bench_xlayer), SQLite against the
// engines. The collector's forwarding is not measured: the engine is loaded
// directly with _bulk bodies of 8,192 `create`s (the collector's data streams
// and _id "<event.stream>-<event.seq>", the project's EsClient::Bulk), two
// requests in flight, with refresh_interval -1 and translog.durability async
// on the backing indices for the load only (restored, then _refresh). Then
// xlayer and job-summary of the job from SQLite and from each engine (median
// of IOSONAR_BENCH_REPEAT, default 3), requests and bytes, outputs compared
// byte for byte. IOSONAR_ENGINE_HEAP (default here 3g) sizes the engine's heap.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/records/record.h"
#include "core/transport/es_client.h"
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

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// The first line of each data stream in the file, and the number of lines
// (all, and those of iosonar.trace): one pass, without parsing.
struct FileScan {
  uint64_t lines = 0, trace = 0, bytes = 0;
  std::map<std::string, std::string> first;  // event.dataset -> its first line
};

FileScan ScanFile(const std::string& path) {
  FileScan fs;
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line;
  const std::string key = "\"event.dataset\":\"";
  while (std::getline(in, line)) {
    ++fs.lines;
    fs.bytes += line.size() + 1;
    const size_t p = line.find(key);
    const size_t q = p == std::string::npos ? p : line.find('"', p + key.size());
    if (q == std::string::npos) FAIL(path << ":" << fs.lines << ": no event.dataset: " << line.substr(0, 300));
    const std::string_view ds(line.data() + p + key.size(), q - p - key.size());
    if (ds == "iosonar.trace") ++fs.trace;
    if (!fs.first.count(std::string(ds))) fs.first[std::string(ds)] = line;
  }
  return fs;
}

// Lines -> BulkDocs as the collector's EsSink makes them (the line as sent
// with its group keys, the data stream of its dataset, "<event.stream>-<event.seq>").
void ToDocs(const std::vector<std::string>& lines, const std::string& ns, std::vector<BulkDoc>* docs) {
  ParsedRecord rec;
  std::string buf;
  for (const auto& l : lines) {
    buf.assign(l);
    buf.push_back('\0');
    const Status st = ParseRecordInsitu(buf.data(), l.size(), &rec);
    INFO(l.substr(0, 300));
    REQUIRE(st.ok());
    BulkDoc d;
    d.index = DataStreamName(*rec.dataset, ns);
    d.id = DocId(rec);
    d.source = l;
    AddGroupKeys(&d.source, rec);
    docs->push_back(std::move(d));
  }
}

struct LoadResult {
  BulkStats stats;
  double seconds = 0;
};

// The whole file into the engine: `streams` threads, each with its own
// EsClient (one keep-alive connection), taking 8,192 lines at a time.
LoadResult LoadDirect(SearchEngine* e, const std::string& ns, const std::string& path, int streams, uint64_t expect) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::mutex mu;
  std::vector<BulkStats> per(static_cast<size_t>(streams));
  std::vector<std::string> errors(static_cast<size_t>(streams));
  std::atomic<uint64_t> done{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto worker = [&](size_t w) {
    EsOptions o = e->options(ns);
    o.max_batch_docs = 8192;
    o.max_batch_bytes = 64u << 20;  // the doc count bounds the body (~4 MB)
    o.request_timeout_ms = 600000;
    auto c = EsClient::Open(e->url(), o);
    if (!c.ok()) {
      errors[w] = c.status().message();
      return;
    }
    std::vector<std::string> lines;
    for (;;) {
      lines.clear();
      {
        std::lock_guard<std::mutex> g(mu);
        std::string l;
        while (lines.size() < 8192 && std::getline(in, l)) lines.push_back(std::move(l));
      }
      if (lines.empty()) return;
      std::vector<BulkDoc> docs;
      docs.reserve(lines.size());
      ParsedRecord rec;
      std::string buf;
      for (auto& l : lines) {
        buf.assign(l);
        buf.push_back('\0');
        if (const Status st = ParseRecordInsitu(buf.data(), l.size(), &rec); !st.ok()) {
          errors[w] = "bad line: " + st.message();
          return;
        }
        BulkDoc d;
        d.index = DataStreamName(*rec.dataset, ns);
        d.id = DocId(rec);
        d.source = std::move(l);
        AddGroupKeys(&d.source, rec);
        docs.push_back(std::move(d));
      }
      std::vector<BulkRejected> rej;
      const size_t k = docs.size();
      if (const Status st = (*c)->Bulk(std::move(docs), &per[w], &rej); !st.ok()) {
        errors[w] = st.message();
        return;
      }
      if (!rej.empty()) {
        errors[w] = "rejected: " + rej.front().reason;
        return;
      }
      const uint64_t before = done.fetch_add(k);
      if ((before + k) / 1000000 != before / 1000000) {
        std::printf("  loaded %llu of %llu (%.0f records/s, load average %s)\n", static_cast<unsigned long long>(before + k),
                    static_cast<unsigned long long>(expect), static_cast<double>(before + k) / Seconds(t0), LoadAvg().c_str());
        std::fflush(stdout);
      }
    }
  };
  std::vector<std::thread> ts;
  for (int w = 0; w < streams; ++w) ts.emplace_back(worker, static_cast<size_t>(w));
  for (auto& t : ts) t.join();
  LoadResult r;
  r.seconds = Seconds(t0);
  for (size_t w = 0; w < per.size(); ++w) {
    INFO("loader " << w << ": " << errors[w]);
    CHECK(errors[w].empty());
    r.stats.created += per[w].created;
    r.stats.already_stored += per[w].already_stored;
    r.stats.rejected += per[w].rejected;
    r.stats.item_retries += per[w].item_retries;
    r.stats.request_retries += per[w].request_retries;
    r.stats.requests += per[w].requests;
    r.stats.bytes += per[w].bytes;
  }
  return r;
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
    // The request cache off, so each timed run computes its aggregations.
    REQUIRE(e->Admin("PUT", all + "/_settings?expand_wildcards=all", R"({"index":{"requests.cache.enable":false}})").status == 200);
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

TEST_CASE("bench: 10^7 trace records of a 1,024-node job, engines loaded directly, against SQLite", "[.bench10m]") {
  const char* dur_env = std::getenv("IOSONAR_BENCH10M_DURATION");
  const std::string duration = dur_env && *dur_env ? dur_env : "610";
  const char* eng_env = std::getenv("IOSONAR_BENCH_ENGINES");
  const std::string engines = eng_env && *eng_env ? eng_env : "opensearch,es";
  const char* rep_env = std::getenv("IOSONAR_BENCH_REPEAT");
  const int repeat = rep_env && std::atoi(rep_env) > 0 ? std::atoi(rep_env) : 3;
  if (!std::getenv("IOSONAR_ENGINE_HEAP")) setenv("IOSONAR_ENGINE_HEAP", "3g", 1);
  TempDir dir;
  const std::string job = "id=5000,mode=N-N,first=0,nodes=1024,ppn=16,stripes=4,start=0,duration=" + duration +
                          ",period=1,io=1,bytes=4M,req=64K";
  const std::vector<std::string> sim = {IosonarBin(), "simulate", "--output", dir / "sim.jsonl", "--nodes", "1024", "--fwd", "8",
                                        "--osts", "64", "--duration", duration, "--seed", "2026", "--job", job, "--maps",
                                        dir / "maps.json"};
  std::printf("load average %s\n", LoadAvg().c_str());
  const double t_sim = TimeRun(sim, {{"IOSONAR_CONFIG", "/nonexistent"}});
  const FileScan fs = ScanFile(dir / "sim.jsonl");
  const uint64_t n = fs.lines;
  std::printf("simulated %llu records (%llu iosonar.trace, job 5000 = 1,024 nodes x 16 ranks x %s s; %.1f MB of JSON lines) in %.0f s;"
              " datasets:", static_cast<unsigned long long>(n), static_cast<unsigned long long>(fs.trace), duration.c_str(),
              static_cast<double>(fs.bytes) / 1e6, t_sim);
  for (const auto& [ds, l] : fs.first) std::printf(" %s", ds.c_str());
  std::printf("\n");
  std::fflush(stdout);

  const std::map<std::string, std::string> sq_env = {{"IOSONAR_CONFIG", "/nonexistent"}};
  const double t_sq = TimeRun({IosonarBin(), "collect", "--store", dir / "sq", "--from-file", dir / "sim.jsonl"}, sq_env);
  const uint64_t sq_bytes = FileSize(dir / "sq/store.db") + FileSize(dir / "sq/store.db-wal");
  std::printf("| SQLite store (collect --from-file) | %.0f rec/s | %.1f B/record | load average %s |\n",
              static_cast<double>(n) / t_sq, static_cast<double>(sq_bytes) / static_cast<double>(n), LoadAvg().c_str());
  std::fflush(stdout);
  const std::vector<std::string> xl = {"xlayer", "5000", "--maps", dir / "maps.json", "--format", "json"};
  const std::vector<std::string> js = {"job-summary", "5000", "--format", "json"};
  auto argv_for = [&](const std::vector<std::string>& cmd, const std::string& store) {
    std::vector<std::string> a = {IosonarBin()};
    a.insert(a.end(), cmd.begin(), cmd.end());
    a.insert(a.end(), {"--store", store});
    return a;
  };
  std::vector<double> xs, jss;
  RunResult sq_x, sq_j;
  for (int i = 0; i < repeat; ++i) {
    xs.push_back(TimeRun(argv_for(xl, dir / "sq"), sq_env, &sq_x));
    jss.push_back(TimeRun(argv_for(js, dir / "sq"), sq_env, &sq_j));
  }
  const double sq_xm = Median(xs), sq_jm = Median(jss);
  std::printf("| SQLite | xlayer %.2f s | job-summary %.2f s | load average %s |\n", sq_xm, sq_jm, LoadAvg().c_str());
  std::fflush(stdout);

  for (const EngineKind kind : {EngineKind::kOpenSearch, EngineKind::kElasticsearch}) {
    const std::string key = kind == EngineKind::kOpenSearch ? "opensearch" : "es";
    if (engines.find(key) == std::string::npos) continue;
    std::string skip;
    SearchEngine* e = SearchEngine::Shared(kind, &skip);
    if (!e) {
      std::printf("%s: %s\n", key.c_str(), skip.c_str());
      continue;
    }
    const std::string ns = "bench";
    auto env = e->Env(ns);
    env["IOSONAR_HTTP_STATS"] = "1";
    REQUIRE(Run({IosonarBin(), "es-setup", "--url", e->url()}, env).exit_code == 0);
    // The data streams exist before the load (each made by its first record,
    // which the load sends again: 409, already stored), so their backing
    // indices can be set for a bulk load.
    std::vector<std::string> streams;
    {
      std::vector<std::string> firsts;
      for (const auto& [ds, l] : fs.first) firsts.push_back(l);
      std::vector<BulkDoc> docs;
      ToDocs(firsts, ns, &docs);
      for (const auto& d : docs) streams.push_back(d.index);
      auto c = EsClient::Open(e->url(), e->options(ns));
      REQUIRE(c.ok());
      BulkStats st;
      std::vector<BulkRejected> rej;
      REQUIRE((*c)->Bulk(std::move(docs), &st, &rej).ok());
      REQUIRE(st.created == fs.first.size());
    }
    std::string all;
    for (const auto& s : streams) all += (all.empty() ? "" : ",") + s;
    {
      auto r = e->Admin("PUT", "/" + all + "/_settings", R"({"index":{"refresh_interval":"-1","translog.durability":"async"}})");
      INFO(r.body);
      REQUIRE(r.status == 200);
    }
    std::printf("%s: heap %s, load average %s; loading %llu records, 2 requests in flight\n", e->name().c_str(),
                std::getenv("IOSONAR_ENGINE_HEAP"), LoadAvg().c_str(), static_cast<unsigned long long>(n));
    std::fflush(stdout);
    const LoadResult lr = LoadDirect(e, ns, dir / "sim.jsonl", 2, n);
    CHECK(lr.stats.created + lr.stats.already_stored == n);
    CHECK(lr.stats.already_stored == fs.first.size());
    CHECK(lr.stats.rejected == 0);
    const auto t_fin = std::chrono::steady_clock::now();
    {
      // The request cache off: every timed run computes its aggregations
      // (a repeat would otherwise be answered from the cache: 1.5 s instead
      // of ~20 s for job-summary at 10^7).
      auto r = e->Admin("PUT", "/" + all + "/_settings",
                        R"({"index":{"refresh_interval":null,"translog.durability":"request","requests.cache.enable":false}})");
      INFO(r.body);
      REQUIRE(r.status == 200);
    }
    REQUIRE(e->Admin("POST", "/" + all + "/_refresh").status == 200);
    REQUIRE(e->Admin("POST", "/" + all + "/_flush").status == 200);
    const double fin = Seconds(t_fin);
    const std::string cat = "/_cat/indices/" + all + "?expand_wildcards=all&bytes=b&h=pri.store.size,docs.count";
    const std::string cat_body = e->Admin("GET", cat + "&format=json").body;
    const uint64_t stored = SumColumn(cat_body, "pri.store.size");
    const uint64_t docs = SumColumn(cat_body, "docs.count");
    CHECK(docs == n);
    // Every trace document carries its group keys (as the collector writes them).
    for (const GroupKeyField& k : GroupKeyFields()) {
      const std::string body = e->Admin("POST", "/logs-iosonar.trace-" + ns + "/_count",
                                        std::string("{\"query\":{\"exists\":{\"field\":\"") + k.name + "\"}}}").body;
      INFO(k.name << ": " << body);
      CHECK(body.find("\"count\":" + std::to_string(fs.trace) + ",") != std::string::npos);
    }
    std::printf("| %s direct _bulk load | %.0f rec/s (%.0f s; + %.1f s settings restored, refresh, flush) | %.1f B/record "
                "(primary store, no force-merge) | %llu requests, %.1f MB sent, %llu request retries, %llu item retries | "
                "load average %s |\n",
                e->name().c_str(), static_cast<double>(n) / lr.seconds, lr.seconds, fin,
                static_cast<double>(stored) / static_cast<double>(n), static_cast<unsigned long long>(lr.stats.requests),
                static_cast<double>(lr.stats.bytes) / 1e6, static_cast<unsigned long long>(lr.stats.request_retries),
                static_cast<unsigned long long>(lr.stats.item_retries), LoadAvg().c_str());
    std::printf("%s segments: %s\n", e->name().c_str(),
                e->Admin("GET", "/_cat/indices/" + all + "?expand_wildcards=all&h=index,docs.count,pri.store.size,segments.count").body.c_str());
    std::fflush(stdout);
    xs.clear();
    jss.clear();
    RunResult a, b;
    for (int i = 0; i < repeat; ++i) {
      xs.push_back(TimeRun(argv_for(xl, e->url()), env, &a));
      jss.push_back(TimeRun(argv_for(js, e->url()), env, &b));
    }
    CHECK(a.out == sq_x.out);
    CHECK(b.out == sq_j.out);
    std::printf("| %s | xlayer %.2f s (%.1fx SQLite; %s) | job-summary %.2f s (%.1fx SQLite; %s) | load average %s |\n",
                e->name().c_str(), Median(xs), Median(xs) / sq_xm, HttpStats(a.err).c_str(), Median(jss), Median(jss) / sq_jm,
                HttpStats(b.err).c_str(), LoadAvg().c_str());
    std::printf("  runs: xlayer");
    for (double x : xs) std::printf(" %.2f", x);
    std::printf(" s; job-summary");
    for (double x : jss) std::printf(" %.2f", x);
    std::printf(" s\n");
    std::fflush(stdout);
    // IOSONAR_BENCH10M_HOLD=FILE: keep the loaded engine and the SQLite store
    // for a look by hand; FILE names them and the run goes on once it is removed.
    if (const char* hold = std::getenv("IOSONAR_BENCH10M_HOLD"); hold && *hold) {
      WriteFile(hold, "url=" + e->url() + "\nsqlite=" + (dir / "sq") + "\nmaps=" + (dir / "maps.json") + "\nca=" + e->ca_file() + "\n");
      std::printf("holding: %s names the engine and the store; remove it to go on\n", hold);
      std::fflush(stdout);
      while (access(hold, F_OK) == 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    e->Stop();  // its heap back before the next engine starts
  }
}

// "[.bench-forward]" (run-bench-forward): is the collector or the engine the
// bound when forwarding? The same simulated records, in one run, alternately
// (a) `iosonar collect --from-file --es` (the collector's forward path: each
// stored batch of 8,192 lines posted as one _bulk, synchronously), (b) the
// same without --es (the collector's own share: parse + SQLite), and (c) a
// plain loader: one `curl` process posting the same NDJSON (`create` with the
// collector's data stream and _id, the line with its group keys, as
// EsClient builds it) in bodies of 8,192 documents over one keep-alive
// connection, one request in flight. Each run writes to its own namespace
// (fresh data streams, nothing already stored). OpenSearch only.
// IOSONAR_BENCH_FORWARD_DURATION (s of simulated time, default 30),
// IOSONAR_BENCH_REPEAT (runs of each, default 3; medians reported).
TEST_CASE("bench: the collector's forward rate against a plain _bulk loader on OpenSearch", "[.bench-forward]") {
  if (!HaveProgram("curl")) FAIL("curl is not installed");
  const char* dur_env = std::getenv("IOSONAR_BENCH_FORWARD_DURATION");
  const std::string duration = dur_env && *dur_env ? dur_env : "30";
  const char* rep_env = std::getenv("IOSONAR_BENCH_REPEAT");
  const int repeat = rep_env && std::atoi(rep_env) > 0 ? std::atoi(rep_env) : 3;
  TempDir dir;
  const std::string job = "id=5000,mode=N-N,first=0,nodes=256,ppn=4,stripes=4,start=0,duration=" + duration +
                          ",period=1,io=1,bytes=4M,req=64K";
  REQUIRE(Run({IosonarBin(), "simulate", "--output", dir / "sim.jsonl", "--nodes", "256", "--fwd", "4", "--osts", "16",
               "--duration", duration, "--seed", "5", "--job", job})
              .exit_code == 0);
  std::vector<std::string> lines;
  {
    std::ifstream in(dir / "sim.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(std::move(l));
  }
  const uint64_t n = lines.size();
  std::string skip;
  SearchEngine* e = SearchEngine::Shared(EngineKind::kOpenSearch, &skip);
  if (!e) {
    std::printf("opensearch: %s\n", skip.c_str());
    return;
  }
  auto env = e->Env("bench");
  env["IOSONAR_HTTP_STATS"] = "1";
  env["IOSONAR_CONFIG"] = "/nonexistent";
  REQUIRE(Run({IosonarBin(), "es-setup", "--url", e->url()}, env).exit_code == 0);
  std::printf("%llu records, %s; load average %s\n", static_cast<unsigned long long>(n), e->name().c_str(), LoadAvg().c_str());
  // The loader's bodies for namespace ns, built before the clock starts; the curl command line.
  constexpr size_t kBatch = 8192;
  auto prepare = [&](const std::string& ns) {
    std::vector<std::string> argv = {"curl", "-sS", "--no-progress-meter"};
    size_t bodies = 0;
    for (size_t first = 0; first < lines.size(); first += kBatch, ++bodies) {
      std::vector<std::string> chunk(lines.begin() + static_cast<std::ptrdiff_t>(first),
                                     lines.begin() + static_cast<std::ptrdiff_t>(std::min(lines.size(), first + kBatch)));
      std::vector<BulkDoc> docs;
      ToDocs(chunk, ns, &docs);
      std::string body;
      for (const auto& d : docs) AppendBulkCreate(&body, d);
      const std::string f = dir / (ns + "-" + std::to_string(bodies) + ".ndjson");
      WriteFile(f, body);
      if (bodies) argv.push_back("--next");
      argv.insert(argv.end(), {"-H", "Content-Type: application/x-ndjson", "--data-binary", "@" + f, "-o",
                               dir / (ns + "-" + std::to_string(bodies) + ".answer"), e->url() + "/_bulk"});
    }
    return std::make_pair(argv, bodies);
  };
  auto count_docs = [&](const std::string& ns) {
    const std::string all = "logs-iosonar.*-" + ns + ",metrics-iosonar.*-" + ns;
    REQUIRE(e->Admin("POST", "/" + all + "/_refresh").status == 200);
    return SumColumn(e->Admin("GET", "/_cat/indices/" + all + "?h=docs.count&expand_wildcards=all").body, "docs.count");
  };
  std::vector<double> fw, sq, ld;
  for (int i = 0; i < repeat; ++i) {
    // (a) the collector forwarding
    const std::string fns = "fwd" + std::to_string(i);
    RunResult rr;
    fw.push_back(TimeRun({IosonarBin(), "collect", "--store", dir / fns, "--from-file", dir / "sim.jsonl", "--es", e->url(),
                          "--es-namespace", fns},
                         env, &rr));
    CHECK(rr.err.find("forwarded " + std::to_string(n) + ", forward errors 0") != std::string::npos);
    CHECK(count_docs(fns) == n);
    std::printf("  collector forward %d: %.2f s (%s); load average %s\n", i, fw.back(), HttpStats(rr.err).c_str(),
                LoadAvg().c_str());
    // (b) the collector alone
    sq.push_back(TimeRun({IosonarBin(), "collect", "--store", dir / ("sq" + std::to_string(i)), "--from-file",
                          dir / "sim.jsonl"},
                         env));
    // (c) the plain loader
    const std::string lns = "load" + std::to_string(i);
    auto [argv, bodies] = prepare(lns);
    RunResult lr;
    ld.push_back(TimeRun(argv, {}, &lr));
    for (size_t b = 0; b < bodies; ++b) {
      const std::string answer = ReadFile(dir / (lns + "-" + std::to_string(b) + ".answer"));
      INFO(answer.substr(0, 500));
      REQUIRE(answer.find("\"errors\":false") != std::string::npos);
    }
    CHECK(count_docs(lns) == n);
    std::printf("  plain _bulk loader %d: %.2f s (%zu requests); collector alone %.2f s; load average %s\n", i, ld.back(),
                bodies, sq.back(), LoadAvg().c_str());
    std::fflush(stdout);
  }
  const double f = Median(fw), s = Median(sq), l = Median(ld);
  std::printf("| collector: collect --from-file --es (store + forward) | %.0f records/s | %.2f s |\n", static_cast<double>(n) / f, f);
  std::printf("| collector alone: collect --from-file (store) | %.0f records/s | %.2f s |\n", static_cast<double>(n) / s, s);
  std::printf("| plain _bulk loader (curl, %zu-document bodies, 1 in flight) | %.0f records/s | %.2f s |\n", kBatch,
              static_cast<double>(n) / l, l);
  std::printf("collector forward / plain loader rate: %.2f; forward time minus the collector alone: %.2f s (%.0f records/s)\n",
              l / f, f - s, static_cast<double>(n) / (f - s));
  std::printf("runs (s): forward");
  for (double x : fw) std::printf(" %.2f", x);
  std::printf("; alone");
  for (double x : sq) std::printf(" %.2f", x);
  std::printf("; loader");
  for (double x : ld) std::printf(" %.2f", x);
  std::printf("; load average %s\n", LoadAvg().c_str());
  std::fflush(stdout);
}
