// The main job end to end: `iosonar run` on the bundled demo workload with a
// real redis-server — tracer, embedded collector, SQLite store, job summary,
// Redis ingest list and summary cache.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include "test/integration/trace_util.h"

using namespace iosonar::test;

TEST_CASE("run: the demo workload's diagnosis, stored, cached in Redis and readable again", "[run][redis]") {
  TempDir d;
  RedisServer redis;
  auto r = Run({IosonarBin(), "run", "--store", d / "store", "--json", d / "summary.json", "--redis", redis.url(), "--job-id",
                "demo-1", "--", BinaryDir() + "/iosonar-demo-workload", d / "data", "4", "8"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The readable table names the modes.
  CHECK(r.out.find("I/O summary of job demo-1") != std::string::npos);
  CHECK(r.out.find("N-1") != std::string::npos);
  CHECK(r.out.find("N-N") != std::string::npos);

  rapidjson::Document s;
  s.Parse(ReadFile(d / "summary.json").c_str());
  REQUIRE_FALSE(s.HasParseError());
  const int64_t mib = 1 << 20;
  CHECK(std::string(s["job_id"].GetString()) == "demo-1");
  CHECK(s["runtime_s"].GetDouble() > 0);
  CHECK(s["read"]["bytes"].GetInt64() == 8 * mib);            // 4 ranks read 2 MiB each of the shared input
  // The input, 4 checkpoints, and each rank's 20 fprintf lines "rank R step I\n"
  // to its small files (stdio: 10 of 14 bytes and 10 of 15 bytes a rank).
  CHECK(s["write"]["bytes"].GetInt64() == 8 * mib + 4 * 8 * mib + 4 * (10 * 14 + 10 * 15));
  CHECK(s["read"]["ops"].GetInt64() == 32);                   // 256 KiB reads
  CHECK(s["write"]["ops"].GetInt64() == 40 + 4 * 20);         // 1 MiB writes, and the fprintf calls
  CHECK(s["read"]["bw_peak"].GetDouble() >= s["read"]["bw_avg"].GetDouble());
  CHECK(s["write"]["bw_avg"].GetDouble() > 0);
  CHECK(s["meta"]["ops"].GetInt64() >= 4 * 20 * 3);          // open, close, stat of the small files
  CHECK(s["meta"]["ops_per_s"].GetDouble() > 0);
  CHECK(s["processes_with_io"].GetInt64() == 5);
  CHECK(s["nodes_with_io"].GetInt64() == 1);
  CHECK(s["files"].GetInt64() == 5 + 4 * 4);  // input, checkpoints, and 4 small files a rank (log.R.0-3)
  CHECK(std::string(s["io_mode"]["read"].GetString()) == "N-1");
  CHECK(std::string(s["io_mode"]["write"].GetString()) == "N-N");

  // Cached under the documented key, the same document.
  std::string cached = redis.Command({"GET", "iosonar:job:demo-1:summary"});
  rapidjson::Document c;
  c.Parse(cached.c_str());
  REQUIRE_FALSE(c.HasParseError());
  CHECK(c["write"]["bytes"].GetInt64() == s["write"]["bytes"].GetInt64());
  CHECK(std::string(c["io_mode"]["write"].GetString()) == "N-N");

  // Every record the collector accepted went to the Redis ingest list, in a valid form.
  auto list = redis.LRange("iosonar:ingest");
  REQUIRE(list.size() > 10);
  std::string joined;
  for (const auto& l : list) joined += l + "\n";
  auto lines = ParseTraceLines(joined);
  CHECK(Totals(lines, "write", "/ckpt.0").bytes == 8 * mib);

  // The analysis job reads the same store and agrees.
  auto js = Run({IosonarBin(), "job-summary", "demo-1", "--store", d / "store", "--format", "json"});
  REQUIRE(js.exit_code == 0);
  rapidjson::Document j2;
  j2.Parse(js.out.c_str());
  REQUIRE_FALSE(j2.HasParseError());
  CHECK(j2["read"]["bytes"].GetInt64() == s["read"]["bytes"].GetInt64());
  CHECK(std::string(j2["io_mode"]["read"].GetString()) == "N-1");

  // The store exports as JSON lines that pass the schema and hold the same bytes.
  auto ex = Run({IosonarBin(), "store-export", "--store", d / "store", "--job", "demo-1"});
  REQUIRE(ex.exit_code == 0);
  auto exported = ParseTraceLines(ex.out);
  CHECK(Totals(exported, "write", "/ckpt.0").bytes == 8 * mib);
  CHECK(Totals(exported, "read", "/input.dat").bytes == 8 * mib);
  auto none = Run({IosonarBin(), "store-export", "--store", d / "store", "--job", "other"});
  CHECK(none.exit_code == 0);
  CHECK(none.out.empty());
}

TEST_CASE("run: the program's exit status comes back, no I/O is said plainly", "[run]") {
  TempDir d;
  auto r = Run({IosonarBin(), "run", "--store", d / "store", "--", "sh", "-c", "exit 3"});
  CHECK(r.exit_code == 3);
  auto missing = Run({IosonarBin(), "run", "--store", d / "s2", "--", d / "no-such-program"});
  CHECK(missing.exit_code == 127);
  CHECK(missing.err.find("no-such-program") != std::string::npos);
  auto usage = Run({IosonarBin(), "run"});
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.find("no command") != std::string::npos);
  auto unknown = Run({IosonarBin(), "job-summary", "nope", "--store", d / "store"});
  CHECK(unknown.exit_code == 1);
}

TEST_CASE("run: every subcommand answers --help", "[run]") {
  for (const char* sub : {"run", "trace", "collect", "job-summary", "schema", "store-export"}) {
    auto r = Run({IosonarBin(), sub, "--help"});
    INFO(sub << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("usage") != std::string::npos);
  }
  auto top = Run({IosonarBin(), "--help"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("job-summary") != std::string::npos);
}

TEST_CASE("trace: iosonar trace runs a program under the tracer with --output", "[run]") {
  TempDir d;
  auto r = Run({IosonarBin(), "trace", "--output", d / "t.jsonl", "--job-id", "tr-1", "--", ProgramPath("tp_behaviour"), "write",
                d / "w.dat", "16", "4096"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = ParseTraceLines(ReadFile(d / "t.jsonl"));
  auto w = Totals(lines, "write", "/w.dat");
  CHECK(w.bytes == 16 * 4096);
  CHECK(w.records == 1);
  for (const auto& l : lines) CHECK(l.job == "tr-1");
  auto bad = Run({IosonarBin(), "trace", "--output", "redis://x:1", "--", "true"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("redis://x:1") != std::string::npos);
}
