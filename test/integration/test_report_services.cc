// LASSi and slowdown results into a real MariaDB (lassi_risk,
// probe_slowdown; command lines from the job database) and a real Redis.
#include <catch2/catch.hpp>
#include <string>

#include "core/jobdb/jobdb.h"
#include "core/jobdb/mysql.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {
// A small day: one OST with a write burst at 10:00, job_stats of two jobs, probes.
std::string Records() {
  std::string out;
  int64_t seq = 0;
  const int64_t day = 1795132800LL;  // 2026-11-20T00:00:00Z
  for (int m = 0; m < 1440; m += 5) {
    char ts[64];
    const int64_t t = day + m * 60;
    std::snprintf(ts, sizeof ts, "2026-11-20T%02d:%02d:00.000Z", m / 60, m % 60);
    (void)t;
    const long long wb = (m >= 600 && m < 660 ? 500LL : 5LL) << 20;
    out += std::string("{\"@timestamp\":\"") + ts + "\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":5,\"event.seq\":" +
           std::to_string(++seq) + ",\"host.name\":\"oss\",\"lustre.fs\":\"work\",\"lustre.target\":\"work-OST0000\","
           "\"oss.read_bytes\":1048576,\"oss.read_ops\":1,\"oss.write_bytes\":" + std::to_string(wb) +
           ",\"oss.write_ops\":" + std::to_string(wb >> 20) + "}\n";
    for (const char* job : {"801", "802"})
      out += std::string("{\"@timestamp\":\"") + ts + "\",\"event.dataset\":\"iosonar.jobstats\",\"event.stream\":5,\"event.seq\":" +
             std::to_string(++seq) + ",\"host.name\":\"oss\",\"lustre.fs\":\"work\",\"lustre.target\":\"work-OST0000\","
             "\"job.id\":\"" + job + "\",\"oss.write_bytes\":" + std::to_string(std::string(job) == "801" ? wb : 1 << 20) +
             ",\"oss.write_ops\":1}\n";
    out += std::string("{\"@timestamp\":\"") + ts + "\",\"event.dataset\":\"iosonar.probe\",\"event.stream\":5,\"event.seq\":" +
           std::to_string(++seq) + ",\"host.name\":\"login\",\"probe.dir\":\"/work/probe\",\"probe.op\":\"stat\","
           "\"probe.latency_ns\":" + std::to_string(100000 + (m % 11) * 1000) + ",\"probe.ok\":true}\n";
  }
  return out;
}
}  // namespace

TEST_CASE("lassi and slowdown write MySQL rows and Redis keys", "[lassi][report][services]") {
  if (!test::HaveMariaDb() || !test::HaveProgram("redis-server")) {
    FAIL("needs mariadbd and redis-server (bash scripts/setup.sh --test)");
  }
  test::TempDir tmp;
  test::WriteFile(tmp / "rec.jsonl", Records());
  auto c = test::Run({test::IosonarBin(), "collect", "--store", tmp / "store", "--from-file", tmp / "rec.jsonl"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  test::MariaDbServer db;
  test::RedisServer redis;
  REQUIRE(test::Run({test::IosonarBin(), "db-migrate", "--mysql", db.url()}).exit_code == 0);
  {
    auto jdb = JobDb::Open(db.url());
    REQUIRE(jdb.ok());
    JobRecord r;
    r.cluster = "c1";
    r.job_id = 801;
    r.command = "./burst.exe --all";
    r.source = "sacct";
    REQUIRE(jdb.value()->Upsert(r).ok());
  }
  auto l = test::Run({test::IosonarBin(), "lassi", "--store", tmp / "store", "--day", "2026-11-20", "--mysql", db.url(),
                      "--redis", redis.url()});
  INFO(l.err);
  REQUIRE(l.exit_code == 0);
  auto conn = MysqlConn::Connect(db.url());
  REQUIRE(conn.ok());
  auto fsrows = conn.value()->Query(
      "SELECT DATE_FORMAT(window_start, '%H'), risk_oss FROM lassi_risk WHERE kind='fs' AND fs='work' ORDER BY risk_oss DESC");
  REQUIRE(fsrows.ok());
  REQUIRE(fsrows->size() == 24);
  CHECK(*(*fsrows)[0][0] == "10");  // the burst hour carries the highest risk
  CHECK(std::stod(*(*fsrows)[0][1]) > 1);
  auto app = conn.value()->Query("SELECT COUNT(*) FROM lassi_risk WHERE kind='app' AND target='./burst.exe --all'");
  REQUIRE(app.ok());
  CHECK(*(*app)[0][0] == "24");  // the command line came from the job database
  auto other = conn.value()->Query("SELECT COUNT(*) FROM lassi_risk WHERE kind='app' AND target='job 802'");
  REQUIRE(other.ok());
  CHECK(*(*other)[0][0] == "24");  // not in the job database: stands alone
  CHECK(redis.Command({"EXISTS", "iosonar:lassi:all:2026-11-20T00:00:00.000Z:2026-11-21T00:00:00.000Z:3600"}) == "1");
  CHECK(l.err.find("WARNING: no stored LASSi baseline") != std::string::npos);

  // A baseline into lassi_baseline (migration 036); lassi then uses it and says so.
  auto b = test::Run({test::IosonarBin(), "lassi", "baseline", "--store", tmp / "store", "--from",
                      "2026-11-20T00:00:00Z", "--to", "2026-11-21T00:00:00Z", "--mysql", db.url(), "--name", "day1"});
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  auto bl = conn.value()->Query(
      "SELECT COUNT(DISTINCT fs), MAX(app_windows), window_s FROM lassi_baseline WHERE name='day1' GROUP BY window_s");
  REQUIRE(bl.ok());
  REQUIRE(bl->size() == 1);
  CHECK(std::stoi(*(*bl)[0][0]) >= 1);
  CHECK(std::stoi(*(*bl)[0][1]) >= 24);
  CHECK(*(*bl)[0][2] == "3600");
  auto l2 = test::Run({test::IosonarBin(), "lassi", "--store", tmp / "store", "--day", "2026-11-20", "--mysql", db.url(),
                       "--format", "json"});
  INFO(l2.err);
  REQUIRE(l2.exit_code == 0);
  CHECK(l2.err.find("LASSi baseline 'day1' from mysql lassi_baseline") != std::string::npos);
  CHECK(l2.err.find("WARNING") == std::string::npos);
  CHECK(l2.out.find("\"source\": \"mysql lassi_baseline\"") != std::string::npos);
  // A named baseline that does not exist is an error naming it.
  auto l3 = test::Run({test::IosonarBin(), "lassi", "--store", tmp / "store", "--day", "2026-11-20", "--mysql", db.url(),
                       "--baseline", "nope"});
  CHECK(l3.exit_code == 1);
  CHECK(l3.err.find("no LASSi baseline named 'nope' (stored: day1)") != std::string::npos);

  auto s = test::Run({test::IosonarBin(), "slowdown", "--store", tmp / "store", "--day", "2026-11-20", "--mysql",
                      db.url(), "--redis", redis.url()});
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  auto sd = conn.value()->Query("SELECT COUNT(*), MIN(n), MAX(slowdown_median) FROM probe_slowdown WHERE op='stat'");
  REQUIRE(sd.ok());
  CHECK(*(*sd)[0][0] == std::to_string(144 + 6));  // 10 min and 4 h intervals
  CHECK(std::stod(*(*sd)[0][2]) > 0.9);
  const std::string cached =
      redis.Command({"GET", "iosonar:slowdown:all:2026-11-20T00:00:00.000Z:2026-11-21T00:00:00.000Z"});
  CHECK(cached.find("\"quantile_method\"") != std::string::npos);
}
