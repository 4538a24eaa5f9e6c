// summarize-job, scoreboard and bad-ost through the CLI, on jobs traced into
// a store by `iosonar run` (no job database: users are unknown, applications
// come from the tracer's command lines).
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "core/jobdb/jobdb.h"
#include "core/jobdb/mysql.h"
#include "test/testutil/mariadb_server.h"
#include "test/integration/trace_util.h"

using namespace iosonar::test;

TEST_CASE("summarize-job and scoreboard on two traced jobs", "[summarize][run]") {
  TempDir d;
  const long long mib = 1 << 20;
  auto a = Run({IosonarBin(), "run", "--store", d / "store", "--job-id", "101", "--", ProgramPath("tp_checkpoint"),
                d.path(), "2", std::to_string(8 * mib), "2200"},  // > 2 s: an empty bucket between them
               {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/"}});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto b = Run({IosonarBin(), "run", "--store", d / "store", "--job-id", "102", "--", ProgramPath("tp_checkpoint"),
                d / "b", "1", std::to_string(2 * mib), "0"},
               {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/"}});
  // job 102's directory does not exist: the program fails its open, which is traced too.
  CHECK(b.exit_code != 0);

  auto csv = Run({IosonarBin(), "summarize-job", "101", "102", "--store", d / "store"});
  INFO(csv.err);
  REQUIRE(csv.exit_code == 0);
  std::istringstream lines(csv.out);
  std::string header, r1, r2;
  std::getline(lines, header);
  std::getline(lines, r1);
  std::getline(lines, r2);
  CHECK(header.rfind("_jobid,", 0) == 0);
  CHECK(r1.rfind("101,", 0) == 0);
  CHECK(r2.rfind("102,", 0) == 0);

  auto js = Run({IosonarBin(), "summarize-job", "101", "--store", d / "store", "--format", "json"});
  REQUIRE(js.exit_code == 0);
  rapidjson::Document j;
  j.Parse(js.out.c_str());
  REQUIRE_FALSE(j.HasParseError());
  REQUIRE(j.Size() == 1);
  CHECK(std::string(j[0]["darshan_app"].GetString()) == "tp_checkpoint");
  CHECK(j[0]["iosonar_write_bytes"].GetInt64() >= 16 * mib);
  CHECK(j[0]["iosonar_write_phases"].GetInt() == 2);
  CHECK(j[0]["darshan_nprocs"].GetInt() == 1);
  CHECK(j[0]["darshan_io_time"].GetDouble() > 0);
  CHECK(std::string(j[0]["darshan_biggest_write_api"].GetString()) == "posix");

  // Cached in Redis under the documented keys.
  {
    RedisServer redis;
    auto c = Run({IosonarBin(), "summarize-job", "101", "--store", d / "store", "--redis", redis.url()});
    REQUIRE(c.exit_code == 0);
    rapidjson::Document cj;
    cj.Parse(redis.Command({"GET", "iosonar:job:101:tokio_summary"}).c_str());
    REQUIRE_FALSE(cj.HasParseError());
    CHECK(cj["iosonar_write_phases"].GetInt() == 2);
    auto p = Run({IosonarBin(), "phases", "101", "--store", d / "store", "--redis", redis.url()});
    REQUIRE(p.exit_code == 0);
    rapidjson::Document pj;
    pj.Parse(redis.Command({"GET", "iosonar:job:101:phases"}).c_str());
    REQUIRE_FALSE(pj.HasParseError());
    CHECK(pj["write_phases"].GetInt() == 2);
  }

  auto missing = Run({IosonarBin(), "summarize-job", "101", "999", "--store", d / "store"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("999") != std::string::npos);
  CHECK(missing.out.find("101,") != std::string::npos);  // the rest still goes out

  auto sb = Run({IosonarBin(), "scoreboard", "--store", d / "store", "--format", "json"});
  INFO(sb.err);
  REQUIRE(sb.exit_code == 0);
  rapidjson::Document s;
  s.Parse(sb.out.c_str());
  REQUIRE_FALSE(s.HasParseError());
  CHECK(s["jobs"].GetInt() == 2);
  CHECK(std::string(s["users"]["by_bytes"][0]["user"].GetString()) == "unknown");
  CHECK(std::string(s["applications"]["by_bytes"][0]["application"].GetString()) == "tp_checkpoint");
  CHECK(s["applications"]["by_bytes"][0]["jobs"].GetInt() == 2);
  CHECK(s["users"]["by_bytes"][0]["write_bytes"].GetInt64() >= 16 * mib);

  // A period before the jobs has none.
  auto early = Run({IosonarBin(), "scoreboard", "--store", d / "store", "--to", "2001-01-01T00:00:00Z", "--format", "json"});
  REQUIRE(early.exit_code == 0);
  rapidjson::Document e;
  e.Parse(early.out.c_str());
  CHECK(e["jobs"].GetInt() == 0);
  CHECK(Run({IosonarBin(), "scoreboard", "--store", d / "store", "--from", "yesterday"}).exit_code == 2);
}

TEST_CASE("bad-ost CLI: names the slow OST, sets aside bad rows with their line", "[badost]") {
  TempDir d;
  // 40 files over 8 OSTs, two OSTs each; files on OST 5 take three times as long.
  std::string csv = "file,bytes,seconds,osts\n";
  for (int i = 0; i < 40; ++i) {
    const int o1 = i % 8, o2 = (i * 3 + 1) % 8 == o1 ? (o1 + 1) % 8 : (i * 3 + 1) % 8;
    double secs = 1.0 + 0.01 * (i % 7);
    if (o1 == 5 || o2 == 5) secs *= 3;
    csv += "/f" + std::to_string(i) + "," + std::to_string(1 << 30) + "," + std::to_string(secs) + "," +
           std::to_string(o1) + ";" + std::to_string(o2) + "\n";
  }
  csv += "/zero,100,0,1;2\n";
  WriteFile(d / "files.csv", csv);
  auto r = Run({IosonarBin(), "bad-ost", d / "files.csv", "-p", "1e-3", "-c", "0.5", "--format", "json"});
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("files.csv:42:") != std::string::npos);
  rapidjson::Document j;
  j.Parse(r.out.c_str());
  REQUIRE_FALSE(j.HasParseError());
  REQUIRE(j["results"].Size() == 1);
  CHECK(std::string(j["results"][0]["ost_name"].GetString()) == "OST#5");
  CHECK(j["results"][0]["coefficient"].GetDouble() < -0.5);
  CHECK(j["zero_io_time"].GetInt() == 1);
  auto t = Run({IosonarBin(), "bad-ost", d / "files.csv", "-p", "1e-3", "-c", "0.5"});
  CHECK(t.out.find("OST#5") != std::string::npos);
  CHECK(t.out.find("unhealthy") != std::string::npos);
  CHECK(Run({IosonarBin(), "bad-ost", d / "nope.csv"}).exit_code == 1);
  CHECK(Run({IosonarBin(), "bad-ost"}).exit_code == 2);
}

TEST_CASE("summarize-job and scoreboard join the MySQL job database", "[summarize][mysql]") {
  TempDir d;
  const long long mib = 1 << 20;
  for (const char* job : {"201", "202"}) {
    auto a = Run({IosonarBin(), "run", "--store", d / "store", "--job-id", job, "--", ProgramPath("tp_checkpoint"),
                  d.path(), "1", std::to_string((job[2] == '1' ? 4 : 1) * mib), "0"},
                 {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/"}});
    INFO(a.err);
    REQUIRE(a.exit_code == 0);
  }
  auto plain = Run({IosonarBin(), "summarize-job", "201", "--store", d / "store", "--format", "json"});
  REQUIRE(plain.exit_code == 0);
  rapidjson::Document p;
  p.Parse(plain.out.c_str());
  REQUIRE_FALSE(p.HasParseError());
  const int64_t t0 = p[0]["darshan_start_time"].GetInt64();
  const int64_t s = 1000000000;

  MariaDbServer server;
  {
    auto db = iosonar::JobDb::Open(server.url());
    REQUIRE(db.ok());
    REQUIRE(db.value()->Migrate().ok());
    auto job = [&](uint64_t id, const char* user, const char* cmd, int64_t start, int64_t end, int64_t nodes) {
      iosonar::JobRecord r;
      r.cluster = "vm";
      r.job_id = id;
      r.source = "sacct";
      r.user = user;
      r.command = cmd;
      r.name = "job" + std::to_string(id);
      r.start_ns = start * s;
      r.end_ns = end * s;
      r.node_count = nodes;
      r.state = "COMPLETED";
      auto st = db.value()->Upsert(r);
      INFO(st.ToString());
      REQUIRE(st.ok());
    };
    job(201, "alice", "/apps/bin/vpic input.deck", t0 - 5, t0 + 60, 4);
    job(202, "bob", "/apps/bin/hacc --restart", t0 - 5, t0 + 60, 2);
    job(203, "carol", "/apps/bin/ior", t0 + 30, t0 + 600, 8);  // overlaps 201 by 30 s
    job(204, "dave", "/apps/bin/ior", t0 - 7200, t0 - 3600, 16);  // before: not concurrent
  }
  auto js = Run({IosonarBin(), "summarize-job", "201", "--store", d / "store", "--format", "json", "--mysql",
                 server.url()});
  INFO(js.err);
  REQUIRE(js.exit_code == 0);
  rapidjson::Document j;
  j.Parse(js.out.c_str());
  REQUIRE_FALSE(j.HasParseError());
  CHECK(std::string(j[0]["iosonar_user"].GetString()) == "alice");
  CHECK(j[0]["_datetime_start"].GetDouble() == Approx(static_cast<double>(t0 - 5)));
  CHECK(j[0]["jobsdb_concurrent_jobs"].GetInt() == 2);  // 202 and 203
  CHECK(j[0]["jobsdb_concurrent_nodes"].GetInt() == 10);
  CHECK(j[0]["jobsdb_concurrent_nodehrs"].GetDouble() == Approx((2 * 65 + 8 * 30) / 3600.0));

  // Results into the job database: the row and the phases.
  auto ph = Run({IosonarBin(), "phases", "201", "--store", d / "store", "--mysql", server.url()});
  INFO(ph.err);
  REQUIRE(ph.exit_code == 0);
  {
    auto conn = iosonar::MysqlConn::Connect(server.url());
    REQUIRE(conn.ok());
    auto rows = conn.value()->Query(
        "SELECT phase_no, direction, bytes, duration_s FROM job_phases WHERE cluster = 'vm' AND job_id = 201 ORDER BY phase_no");
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 1);
    CHECK(*(*rows)[0][1] == "write");
    CHECK(std::stoll(*(*rows)[0][2]) >= 4 * mib);
    auto t = conn.value()->Query("SELECT row_json FROM job_tokio_summary WHERE cluster = 'vm' AND job_id = 201");
    REQUIRE(t.ok());
    REQUIRE(t->size() == 1);
    rapidjson::Document tj;
    tj.Parse((*t)[0][0]->c_str());
    REQUIRE_FALSE(tj.HasParseError());
    CHECK(std::string(tj["iosonar_user"].GetString()) == "alice");
  }
  // A traced job the database does not know: the phases print, the write fails (exit 1 with --mysql).
  auto unknown = Run({IosonarBin(), "phases", "202", "--store", d / "store", "--mysql", server.url(), "--cluster", "other"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("not in the job database") != std::string::npos);

  auto sb = Run({IosonarBin(), "scoreboard", "--store", d / "store", "--format", "json", "--mysql", server.url()});
  INFO(sb.err);
  REQUIRE(sb.exit_code == 0);
  rapidjson::Document b;
  b.Parse(sb.out.c_str());
  REQUIRE_FALSE(b.HasParseError());
  CHECK(b["jobs"].GetInt() == 2);
  CHECK(std::string(b["users"]["by_bytes"][0]["user"].GetString()) == "alice");
  CHECK(std::string(b["users"]["by_bytes"][1]["user"].GetString()) == "bob");
  CHECK(std::string(b["applications"]["by_bytes"][0]["application"].GetString()) == "vpic");
  CHECK(std::string(b["applications"]["by_bytes"][1]["application"].GetString()) == "hacc");

  // --mysql given and the database is down: an error, not a silent fallback.
  server.Stop();
  auto down = Run({IosonarBin(), "scoreboard", "--store", d / "store", "--mysql", server.url()});
  CHECK(down.exit_code == 1);
}
