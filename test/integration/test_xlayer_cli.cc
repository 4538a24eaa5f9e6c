// The iosonar binary end to end: simulate into a store (and into a real
// MariaDB job database), then xlayer and compress2 on it; the numbers equal
// the ground truth the simulator wrote.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <string>

#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

const rapidjson::Value& TruthOf(const rapidjson::Document& truth, const std::string& id) {
  for (const auto& j : truth["jobs"].GetArray())
    if (j["job_id"].GetString() == id) return j;
  FAIL("job " << id << " not in the truth");
  return truth;
}

void CheckAgainstTruth(const rapidjson::Document& v, const rapidjson::Value& t, int slow_ost) {
  CHECK(v["job"]["bytes"].GetInt64() == t["bytes"].GetInt64());
  CHECK(v["filesystem"]["bytes"].GetDouble() == static_cast<double>(t["fs_bytes"].GetInt64()));
  CHECK(v["coverage"]["bytes"].GetDouble() == Approx(t["coverage_bytes"].GetDouble()).epsilon(1e-12));
  bool slow = false;
  for (const auto& o : t["osts"].GetArray()) {
    char name[32];
    std::snprintf(name, sizeof name, "simfs-OST%04x", o["ost"].GetInt());
    bool found = false;
    for (const auto& s : v["osts"].GetArray()) {
      if (std::string(s["server"].GetString()) != name) continue;
      found = true;
      CHECK(s["share"].GetDouble() == Approx(o["share"].GetDouble()).epsilon(1e-12));
      CHECK(s["job_bytes"].GetDouble() == static_cast<double>(o["job_bytes"].GetInt64()));
    }
    CHECK(found);
    slow |= o["ost"].GetInt() == slow_ost;
  }
  CHECK(slow);
}

}  // namespace

TEST_CASE("xlayer CLI: simulate a slow OST, the view of the job on it equals the ground truth", "[xlayer]") {
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  auto sim = test::Run({bin, "simulate", "--store", dir / "store", "--nodes", "32", "--fwd", "4", "--osts", "8",
                        "--duration", "12", "--seed", "5", "--slow-ost", "2", "--storm", "--maps", dir / "maps.json",
                        "--getstripe", dir / "gs.txt", "--file-perf", dir / "perf.csv", "--truth", dir / "truth.json"});
  REQUIRE(sim.exit_code == 0);
  const auto truth = Json(test::ReadFile(dir / "truth.json"));
  CHECK(test::ReadFile(dir / "perf.csv").rfind("file,bytes,seconds,osts\n", 0) == 0);
  // The job whose files include OST 2.
  std::string job;
  for (const auto& j : truth["jobs"].GetArray())
    for (const auto& o : j["osts"].GetArray())
      if (o["ost"].GetInt() == 2 && job.empty()) job = j["job_id"].GetString();
  REQUIRE_FALSE(job.empty());

  auto a = test::Run({bin, "xlayer", job, "--store", dir / "store", "--maps", dir / "maps.json", "--format", "json"});
  REQUIRE(a.exit_code == 0);
  CheckAgainstTruth(Json(a.out), TruthOf(truth, job), 2);
  // Layouts from lfs getstripe text only (window from the trace).
  auto b = test::Run({bin, "xlayer", job, "--store", dir / "store", "--getstripe", dir / "gs.txt", "--format", "json"});
  REQUIRE(b.exit_code == 0);
  CHECK(Json(b.out)["ost_source"].GetString() == std::string("layouts"));
  auto t = test::Run({bin, "xlayer", job, "--store", dir / "store", "--maps", dir / "maps.json"});
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("coverage (TOKIO)") != std::string::npos);

  auto c = test::Run({bin, "compress2", job, "--store", dir / "store", "--verify"});
  CHECK(c.exit_code == 0);
  CHECK(c.err.find("records identical, job summary identical") != std::string::npos);
  CHECK(Json(c.out)["record_ratio"].GetDouble() > 1.0);

  // Usage and input errors are named, not crashes.
  CHECK(test::Run({bin, "xlayer", job}).exit_code == 2);
  CHECK(test::Run({bin, "xlayer", job, "--store", dir / "nowhere"}).exit_code == 1);
  test::WriteFile(dir / "bad.json", "{\"jobs\": [");
  auto bad = test::Run({bin, "xlayer", job, "--store", dir / "store", "--maps", dir / "bad.json"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("bad.json") != std::string::npos);
  CHECK(test::Run({bin, "simulate", "--store", dir / "s2", "--job", "id=1,nodes=zz"}).exit_code == 2);
}

TEST_CASE("xlayer CLI: jobs, maps and layouts through a real MariaDB job database", "[xlayer][mysql]") {
  if (!test::HaveMariaDb()) {
    FAIL("mariadbd is not installed (scripts/setup.sh --test installs it)");
  }
  test::MariaDbServer db;
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  auto sim = test::Run({bin, "simulate", "--store", dir / "store", "--nodes", "32", "--fwd", "4", "--osts", "8",
                        "--duration", "10", "--seed", "11", "--slow-ost", "4", "--truth", dir / "truth.json", "--mysql",
                        db.url()});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const auto truth = Json(test::ReadFile(dir / "truth.json"));
  std::string job;
  for (const auto& j : truth["jobs"].GetArray())
    for (const auto& o : j["osts"].GetArray())
      if (o["ost"].GetInt() == 4 && job.empty()) job = j["job_id"].GetString();
  REQUIRE_FALSE(job.empty());
  auto a = test::Run({bin, "xlayer", job, "--store", dir / "store", "--mysql", db.url(), "--format", "json"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  const auto v = Json(a.out);
  CHECK(v["window_source"].GetString() == std::string("maps"));
  CHECK(v["forwarding_nodes"].GetArray().Size() > 0);
  CHECK(v["unmapped_nodes"].GetInt() == 0);
  CheckAgainstTruth(v, TruthOf(truth, job), 4);
}

TEST_CASE("xlayer CLI: the view and the compression report are cached in a real redis-server", "[xlayer][redis]") {
  if (!test::HaveProgram("redis-server")) {
    FAIL("redis-server is not installed (scripts/setup.sh --test installs it)");
  }
  test::RedisServer redis;
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  REQUIRE(test::Run({bin, "simulate", "--store", dir / "store", "--nodes", "16", "--fwd", "2", "--osts", "4",
                     "--duration", "6", "--maps", dir / "maps.json"})
              .exit_code == 0);
  auto a = test::Run({bin, "xlayer", "1000", "--store", dir / "store", "--maps", dir / "maps.json", "--format", "json",
                      "--redis", redis.url()});
  REQUIRE(a.exit_code == 0);
  CHECK(redis.Command({"GET", "iosonar:job:1000:xlayer"}) == a.out);  // the JSON as printed, newline included
  auto c = test::Run({bin, "compress2", "1000", "--store", dir / "store", "--redis", redis.url()});
  REQUIRE(c.exit_code == 0);
  CHECK(redis.Command({"GET", "iosonar:job:1000:compress2"}) == c.out);
}

TEST_CASE("simulate CLI: --output writes valid JSON lines, the same for the same seed", "[xlayer][simulate]") {
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  for (const char* f : {"a.jsonl", "b.jsonl"})
    REQUIRE(test::Run({bin, "simulate", "--output", dir / f, "--nodes", "20", "--fwd", "2", "--osts", "6", "--duration",
                       "5", "--seed", "3", "--slow-fwd", "1", "--storm"})
                .exit_code == 0);
  REQUIRE(test::Run({bin, "simulate", "--output", dir / "c.jsonl", "--nodes", "20", "--fwd", "2", "--osts", "6",
                     "--duration", "5", "--seed", "4"})
              .exit_code == 0);
  const std::string a = test::ReadFile(dir / "a.jsonl");
  CHECK(a == test::ReadFile(dir / "b.jsonl"));
  CHECK(a != test::ReadFile(dir / "c.jsonl"));
  // The embedded collector accepts every line (it validates each against the schema).
  auto col = test::Run({bin, "collect", "--store", dir / "store", "--from-file", dir / "a.jsonl"});
  INFO(col.err);
  CHECK(col.exit_code == 0);
  const size_t lines = static_cast<size_t>(std::count(a.begin(), a.end(), '\n'));
  CHECK((col.out + col.err).find("accepted " + std::to_string(lines) + ", rejected 0") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "store/deadletter.jsonl"));
}
