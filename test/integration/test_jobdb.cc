// The job database against a real MariaDB (mariadbd on a private socket and
// port under a TempDir, stopped by pid): migrations are idempotent, records
// merge (a late prolog does not undo an epilog), hostile job names are stored
// byte for byte, the query API answers, the connection survives a server
// restart, and an epilog while MySQL is down is spooled and replayed.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "core/jobdb/jobdb.h"
#include "core/jobdb/mysql.h"
#include "core/base/timeutil.h"
#include "test/testutil/mariadb_server.h"
#include "exporters/scheduler/sacct.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::MariaDbServer;
using iosonar::test::TempDir;

namespace {

constexpr int64_t kS = 1000000000;

std::unique_ptr<JobDb> OpenDb(const std::string& url) {
  auto db = JobDb::Open(url);
  INFO(db.status().ToString());
  REQUIRE(db.ok());
  Status st = db.value()->Migrate();
  INFO(st.ToString());
  REQUIRE(st.ok());
  return std::move(db).value();
}

JobRecord Job(uint64_t id, const std::string& nodes, int64_t start_s, std::optional<int64_t> end_s) {
  JobRecord r;
  r.cluster = "vm";
  r.job_id = id;
  r.source = "sacct";
  r.user = "alice";
  r.node_list = nodes;
  r.start_ns = start_s * kS;
  if (end_s) r.end_ns = *end_s * kS;
  r.state = end_s ? "COMPLETED" : "RUNNING";
  return r;
}

std::vector<uint64_t> Ids(const Result<std::vector<JobRecord>>& r) {
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  std::vector<uint64_t> out;
  for (const auto& j : r.value()) out.push_back(j.job_id);
  return out;
}

}  // namespace

TEST_CASE("jobdb: migrations are idempotent and recorded", "[mysql][jobdb]") {
  MariaDbServer server;
  auto db = JobDb::Open(server.url());
  REQUIRE(db.ok());
  CHECK(db.value()->SchemaVersion().value() == 0);
  int applied = -1;
  REQUIRE(db.value()->Migrate(&applied).ok());
  CHECK(applied == static_cast<int>(BuiltinMigrations().size()));
  CHECK(db.value()->SchemaVersion().value() == BuiltinMigrations().back().version);
  REQUIRE(db.value()->Migrate(&applied).ok());
  CHECK(applied == 0);
  // The CLI says the same, and agrees on the version.
  auto r = test::Run({test::IosonarBin(), "db-migrate", "--mysql", server.url()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("applied 0 migration(s)") &&
                        Catch::Contains("schema version " + std::to_string(BuiltinMigrations().back().version)));
  auto t = db.value()->conn().Query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name");
  REQUIRE(t.ok());
  std::set<std::string> tables;
  for (const auto& row : t.value()) tables.insert(*row[0]);
  for (const char* want : {"jobs", "job_nodes", "node_forwarding", "node_filesystems", "filesystem_osts", "job_osts",
                           "job_summary", "poll_state", "schema_migrations", "user_stats", "app_stats"})
    CHECK(tables.count(want));
  // A bad URL is an error naming it, not a crash.
  auto bad = test::Run({test::IosonarBin(), "db-migrate", "--mysql", "mysql://root@localhost/x?socket=/nonexistent"});
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.err, Catch::Contains("/nonexistent"));
}

TEST_CASE("jobdb: prolog, epilog and a late prolog merge into one job", "[mysql][jobdb]") {
  MariaDbServer server;
  auto db = OpenDb(server.url());
  JobRecord pro;
  pro.cluster = "vm";
  pro.job_id = 10;
  pro.source = "prolog";
  pro.user = "alice";
  pro.node_list = "n[01-03]";
  pro.start_ns = 1795331887123456000;
  pro.state = "RUNNING";
  JobRecord epi;
  epi.cluster = "vm";
  epi.job_id = 10;
  epi.source = "epilog";
  epi.end_ns = 1795331897654321000;
  epi.exit_code = 3;
  epi.exit_signal = 0;
  epi.state = "FAILED";
  REQUIRE(db->Upsert(pro).ok());
  REQUIRE(db->Upsert(epi).ok());
  REQUIRE(db->Upsert(pro).ok());  // replayed late: must not undo the end
  auto g = db->Get("vm", 10);
  REQUIRE(g.ok());
  REQUIRE(g.value());
  const JobRecord& j = *g.value();
  CHECK(j.user == std::optional<std::string>("alice"));
  CHECK(j.start_ns == pro.start_ns);  // microsecond precision, exact
  CHECK(j.end_ns == epi.end_ns);
  CHECK(j.state == std::optional<std::string>("FAILED"));
  CHECK(j.exit_code == std::optional<int64_t>(3));
  CHECK(db->JobNodes("vm", 10).value() == std::vector<std::string>{"n01", "n02", "n03"});
  // A malformed host list is refused before anything is written.
  JobRecord bad = pro;
  bad.job_id = 11;
  bad.node_list = "n[1-";
  Status st = db->Upsert(bad);
  CHECK(st.code() == Code::kInvalid);
  CHECK(db->Get("vm", 11).value() == std::nullopt);
}

TEST_CASE("jobdb: hostile job names are stored byte for byte", "[mysql][jobdb]") {
  MariaDbServer server;
  auto db = OpenDb(server.url());
  const std::vector<std::string> names = {
      "it's a \"job\"; DROP TABLE jobs; --",
      "back\\slash \\' \\\" \\0 \\n",
      "Müller – 計算 🚀 ж",
      std::string("nul\0inside", 10),
      std::string("latin1 \xe9\xe8 and broken utf-8 \xc3\x28 \xff"),
      "'); DELETE FROM jobs WHERE ('1'='1",
      "",
      std::string(5000, 'x') + "|" + std::string(5000, 'y'),
  };
  for (size_t i = 0; i < names.size(); ++i) {
    JobRecord r = Job(100 + i, "n1", 1000, 2000);
    r.name = names[i];
    r.command = "srun -n 3 ./a.out --label '" + names[i] + "'";
    r.work_dir = "/home/" + names[i];
    Status st = db->Upsert(r);
    INFO(i << ": " << st.ToString());
    REQUIRE(st.ok());
  }
  for (size_t i = 0; i < names.size(); ++i) {
    auto g = db->Get("vm", 100 + i);
    REQUIRE(g.ok());
    REQUIRE(g.value());
    INFO(i);
    CHECK(g.value()->name == std::optional<std::string>(names[i]));
    CHECK(g.value()->command == std::optional<std::string>("srun -n 3 ./a.out --label '" + names[i] + "'"));
    CHECK(g.value()->work_dir == std::optional<std::string>("/home/" + names[i]));
  }
  auto n = db->conn().Query("SELECT COUNT(*) FROM jobs");
  REQUIRE(n.ok());
  CHECK(n.value()[0][0] == std::optional<std::string>(std::to_string(names.size())));
}

TEST_CASE("jobdb: the query API (node at time t, shared forwarding node, shared OST)", "[mysql][jobdb]") {
  MariaDbServer server;
  auto db = OpenDb(server.url());
  // Jobs on n1..n4 over time; n1,n2 sit behind fwd1, n3,n4 behind fwd2.
  REQUIRE(db->Upsert(Job(1, "n[1-2]", 1000, 2000)).ok());
  REQUIRE(db->Upsert(Job(2, "n2", 1500, 2500)).ok());
  REQUIRE(db->Upsert(Job(3, "n3", 1800, 1900)).ok());
  REQUIRE(db->Upsert(Job(4, "n4", 3000, std::nullopt)).ok());  // still running
  REQUIRE(db->Upsert(Job(5, "n1", 2100, 2200)).ok());          // after job 1
  for (auto [node, fwd] : {std::pair{"n1", "fwd1"}, {"n2", "fwd1"}, {"n3", "fwd2"}, {"n4", "fwd2"}})
    REQUIRE(db->SetForwardingNode(node, fwd).ok());
  CHECK(Ids(db->JobsOnNode("n2", 1600 * kS)) == std::vector<uint64_t>{1, 2});
  CHECK(Ids(db->JobsOnNode("n2", 2400 * kS)) == std::vector<uint64_t>{2});
  CHECK(Ids(db->JobsOnNode("n1", 999 * kS)).empty());
  CHECK(Ids(db->JobsOnNode("n4", NowNs())) == std::vector<uint64_t>{4});
  CHECK(Ids(db->JobsOnNode("n2", 1600 * kS, "othercluster")).empty());
  // Job 1 (n1,n2 -> fwd1, 1000..2000) shares fwd1 with job 2 (overlaps), not with 3 (fwd2) nor 5 (later).
  CHECK(Ids(db->JobsSharingForwardingNode("vm", 1)) == std::vector<uint64_t>{2});
  CHECK(Ids(db->JobsSharingForwardingNode("vm", 3)).empty());
  REQUIRE(db->AddJobOst("vm", 1, "scratch", "OST0001").ok());
  REQUIRE(db->AddJobOst("vm", 3, "scratch", "OST0001").ok());
  REQUIRE(db->AddJobOst("vm", 5, "scratch", "OST0001").ok());
  REQUIRE(db->AddJobOst("vm", 2, "scratch", "OST0002").ok());
  CHECK(Ids(db->JobsSharingOst("vm", 1)) == std::vector<uint64_t>{3});
  CHECK(Ids(db->JobsSharingOst("vm", 2)).empty());
  // The statistics views.
  JobSummaryRow s;
  s.cluster = "vm";
  s.job_id = 1;
  s.read_bytes = 1000;
  s.write_bytes = 24;
  s.io_mode_read = "N-1";
  s.io_mode_write = "N-N";
  s.summary_json = "{}";
  REQUIRE(db->WriteJobSummary(s).ok());
  auto us = db->conn().Query("SELECT user_name, jobs, summarized, read_bytes, write_bytes FROM user_stats");
  REQUIRE(us.ok());
  REQUIRE(us->size() == 1);
  CHECK(us.value()[0] == SqlRow{"alice", "5", "1", "1000", "24"});
}

TEST_CASE("jobdb: saved sacct -p output (fixture) lands as one job on 128 nodes", "[mysql][jobdb][sacct]") {
  auto p = scheduler::ParseSacct(test::ReadFile(test::SourceDir() + "/test/fixtures/slurm/sacct-p-nodes.txt"), "fixc");
  REQUIRE(p.records.size() == 6);
  MariaDbServer server;
  auto db = OpenDb(server.url());
  for (const auto& r : p.records) REQUIRE(db->Upsert(r).ok());
  CHECK(db->JobNodes("fixc", 3001).value().size() == 128);
  auto steps = db->conn().Query("SELECT COUNT(*) FROM jobs WHERE job_id = 3001");
  CHECK(steps.value()[0][0] == std::optional<std::string>("6"));
  // The batch step ran on nid01000 only; that node's jobs at the batch step's time include the job.
  auto on = db->JobsOnNode("nid01000", *p.records[0].start_ns + 60 * kS, "fixc");
  CHECK(Ids(on) == std::vector<uint64_t>{3001});
  CHECK(Ids(db->JobsOnNode("nid01099", *p.records[0].start_ns + 60 * kS, "fixc")).empty());  // between the ranges
}

TEST_CASE("jobdb (real captures): the Edison sacct capture lands as one job on 128 nodes", "[mysql][jobdb][sacct][real-capture]") {
  std::string data = test::SharedDataDir();
  if (data.empty()) {
    WARN(test::RealCapturesSkipped("the Edison sacct capture in the job database"));
    return;
  }
  std::string text =
      test::ReadFile(data + "/pytokio/history/9fc052a1cea3a5b9376b2f4bacd9c5e9238decaf/tests/inputs/sample.slurm");
  auto p = scheduler::ParseSacct(text, "edison");
  REQUIRE(p.records.size() == 11);
  MariaDbServer server;
  auto db = OpenDb(server.url());
  for (const auto& r : p.records) REQUIRE(db->Upsert(r).ok());
  CHECK(db->JobNodes("edison", 4478544).value().size() == 128);
  auto steps = db->conn().Query("SELECT COUNT(*) FROM jobs WHERE job_id = 4478544");
  CHECK(steps.value()[0][0] == std::optional<std::string>("11"));
  // The batch step ran on nid05301 only; that node's jobs at the batch step's time include the job.
  auto on = db->JobsOnNode("nid05301", *p.records[0].start_ns + 60 * kS, "edison");
  CHECK(Ids(on) == std::vector<uint64_t>{4478544});
}

TEST_CASE("jobdb: the connection survives a server restart", "[mysql][jobdb]") {
  MariaDbServer server;
  auto db = OpenDb(server.url());
  REQUIRE(db->Upsert(Job(1, "n1", 1000, 2000)).ok());
  server.Stop();
  Status down = db->Upsert(Job(2, "n1", 1000, 2000));
  CHECK(down.code() == Code::kUnavailable);
  server.Start();
  Status up = db->Upsert(Job(3, "n1", 1000, 2000));  // reconnects
  INFO(up.ToString());
  CHECK(up.ok());
  CHECK(db->Get("vm", 3).value().has_value());
}

TEST_CASE("scheduler: an epilog while MySQL is down is spooled and replayed", "[mysql][jobdb][spool]") {
  MariaDbServer server;
  { OpenDb(server.url()); }
  TempDir spool_parent;
  const std::string spool = spool_parent / "a/b";  // created (with its parents) on first use
  std::map<std::string, std::string> env{
      {"IOSONAR_MYSQL", server.url()}, {"IOSONAR_JOBDB_SPOOL", spool}, {"SLURM_CLUSTER_NAME", "vm"},
      {"SLURM_JOB_ID", "501"},         {"SLURM_JOB_USER", "alice"},          {"SLURM_JOB_NODELIST", "vm"},
      {"SLURM_JOB_NAME", "naïve 'name'; \\"}};
  auto run = [&](const std::string& mode, std::map<std::string, std::string> e) {
    auto r = test::Run({test::IosonarBin(), "scheduler", mode, "--no-scontrol"}, e);
    INFO(mode << ": " << r.out << r.err);
    CHECK(r.exit_code == 0);
    return r;
  };
  run("prolog", env);
  server.Stop();
  auto e = env;
  e["SLURM_JOB_EXIT_CODE2"] = "3:0";
  auto down = run("epilog", e);  // MySQL is down: spooled, still exit 0
  CHECK_THAT(down.err, Catch::Contains("spooled to"));
  std::vector<std::string> spooled;
  for (const auto& f : std::filesystem::directory_iterator(spool)) spooled.push_back(f.path().string());
  REQUIRE(spooled.size() == 1);
  // A second job starts while MySQL is still down.
  auto e2 = env;
  e2["SLURM_JOB_ID"] = "502";
  run("prolog", e2);
  server.Start();
  // `scheduler replay` writes both, oldest first.
  auto rep = test::Run({test::IosonarBin(), "scheduler", "replay"}, env);
  INFO(rep.out << rep.err);
  CHECK(rep.exit_code == 0);
  CHECK_THAT(rep.out, Catch::Contains("replayed 2"));
  auto db = OpenDb(server.url());
  auto j = db->Get("vm", 501).value();
  REQUIRE(j);
  CHECK(j->state == std::optional<std::string>("FAILED"));
  CHECK(j->exit_code == std::optional<int64_t>(3));
  CHECK(j->end_ns.has_value());
  CHECK(j->name == std::optional<std::string>("naïve 'name'; \\"));
  CHECK(db->Get("vm", 502).value().has_value());
  CHECK(std::filesystem::is_empty(spool));

  // Down again: the spooled record is replayed by the next prolog, before its own record.
  server.Stop();
  auto e3 = env;
  e3["SLURM_JOB_ID"] = "503";
  e3["SLURM_JOB_EXIT_CODE2"] = "0:0";
  run("epilog", e3);
  server.Start();
  auto e4 = env;
  e4["SLURM_JOB_ID"] = "504";
  auto next = run("prolog", e4);
  CHECK_THAT(next.err, Catch::Contains("replayed 1"));
  auto db2 = OpenDb(server.url());
  CHECK(db2->Get("vm", 503).value().has_value());
  CHECK(db2->Get("vm", 504).value().has_value());
  // A corrupt spool file is set aside with its reason; the rest is replayed.
  test::WriteFile(spool + "/00000000000000000001-1-1-1.job", "not a record\n");
  auto rep2 = test::Run({test::IosonarBin(), "scheduler", "replay"}, env);
  CHECK(rep2.exit_code == 0);
  CHECK_THAT(rep2.out, Catch::Contains("bad 1"));
  CHECK(std::filesystem::exists(spool + "/bad/00000000000000000001-1-1-1.job.reason"));
  // Without a job id there is nothing to record: said on stderr; exit 0 (a failing
  // PrologSlurmctld would requeue the job) unless --strict.
  auto none = env;
  none.erase("SLURM_JOB_ID");
  none["SLURM_JOB_ID"] = "";
  auto lax = test::Run({test::IosonarBin(), "scheduler", "prolog", "--no-scontrol"}, none);
  CHECK(lax.exit_code == 0);
  CHECK_THAT(lax.err, Catch::Contains("job not recorded") && Catch::Contains("SLURM_JOB_ID"));
  CHECK(test::Run({test::IosonarBin(), "scheduler", "prolog", "--no-scontrol", "--strict"}, none).exit_code == 1);
}

TEST_CASE("scheduler poll: malformed sacct lines are skipped, the rest written, MySQL down keeps the mark",
          "[mysql][jobdb][sacct]") {
  MariaDbServer server;
  { OpenDb(server.url()); }
  TempDir d;
  // A stand-in sacct printing what the real one prints with the poller's options
  // (the real one is exercised in test_slurm.cc); one line is malformed.
  std::string hdr = scheduler::kSacctFormat;
  for (auto& c : hdr)
    if (c == ',') c = '\x1f';
  auto row = [](std::vector<std::string> f) {
    std::string s;
    for (size_t i = 0; i < f.size(); ++i) s += (i ? "\x1f" : "") + f[i];
    return s + "\n";
  };
  std::string out = hdr + "\n" +
                    row({"71", "71", "vm", "bob", "1001", "users", "100", "a", "debug", "name|with|pipes", "sbatch x.sh",
                         "/home/bob", "n[1-2]", "2", "4", "2026-11-22T09:00:00", "2026-11-22T09:00:01",
                         "2026-11-22T09:10:01", "TIMEOUT", "0:15"}) +
                    row({"72", "72", "vm", "bob", "1001", "users", "100", "a", "debug", "bad", "", "/", "n[1-", "2", "",
                         "2026-11-22T09:00:00", "2026-11-22T09:00:01", "Unknown", "RUNNING", "0:0"}) +
                    row({"71.batch", "71.batch", "vm", "", "", "", "", "a", "", "batch", "", "", "n1", "1", "1",
                         "2026-11-22T09:00:01", "2026-11-22T09:00:01", "2026-11-22T09:10:01", "CANCELLED", "0:15"});
  test::WriteFile(d / "sacct.out", out);
  test::WriteFile(d / "sacct", "#!/bin/sh\necho \"$@\" > " + d / "sacct.args" + "\ncat " + d / "sacct.out" + "\n");
  chmod((d / "sacct").c_str(), 0755);
  std::vector<std::string> argv{test::IosonarBin(), "scheduler", "poll", "--mysql", server.url(), "--sacct", d / "sacct",
                                "--cluster", "vm"};
  auto r = test::Run(argv, {{"TZ", "UTC"}});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("3 line(s), 2 record(s), 2 written, 1 skipped"));
  CHECK_THAT(r.err, Catch::Contains("sacct line 3") && Catch::Contains("never closed"));
  CHECK_THAT(test::ReadFile(d / "sacct.args"), Catch::Contains("--starttime") && Catch::Contains("--clusters vm"));
  auto db = OpenDb(server.url());
  auto j = db->Get("vm", 71).value();
  REQUIRE(j);
  CHECK(j->name == std::optional<std::string>("name|with|pipes"));
  CHECK(j->state == std::optional<std::string>("TIMEOUT"));
  CHECK(j->exit_signal == std::optional<int64_t>(15));
  CHECK(j->task_count == std::optional<int64_t>(4));
  CHECK(*j->end_ns - *j->start_ns == 600 * kS);
  CHECK(db->JobNodes("vm", 71).value() == std::vector<std::string>{"n1", "n2"});
  CHECK(db->Get("vm", 71, "batch").value().has_value());
  CHECK_FALSE(db->Get("vm", 72).value().has_value());
  auto mark = db->PolledTo("vm");
  REQUIRE(mark.ok());
  REQUIRE(mark.value());
  // MySQL down: the poll fails (exit 1) and the mark stays where it was.
  server.Stop();
  auto down = test::Run(argv, {{"TZ", "UTC"}});
  CHECK(down.exit_code == 1);
  server.Start();
  auto db2 = OpenDb(server.url());
  CHECK(db2->PolledTo("vm").value() == mark.value());
  // The next poll starts 5 minutes before the mark (the overlap).
  auto up = test::Run(argv, {{"TZ", "UTC"}});
  CHECK(up.exit_code == 0);
  std::string args = test::ReadFile(d / "sacct.args");
  std::string want = SqlDatetime(*mark.value() - 300 * kS).substr(0, 19);
  want[10] = 'T';
  CHECK_THAT(args, Catch::Contains("--starttime " + want));
}

TEST_CASE("hostlist CLI: expand, compress, and a clear error", "[hostlist]") {
  auto e = test::Run({test::IosonarBin(), "hostlist", "expand", "nid[05398-05399,05401]"});
  CHECK(e.exit_code == 0);
  CHECK(e.out == "nid05398\nnid05399\nnid05401\n");
  auto c = test::Run({test::IosonarBin(), "hostlist", "compress", "node001,node002,node003,gpu1,gpu2"});
  CHECK(c.exit_code == 0);
  CHECK(c.out == "node[001-003],gpu[1-2]\n");
  auto bad = test::Run({test::IosonarBin(), "hostlist", "expand", "nid[1-"});
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.err, Catch::Contains("never closed") && Catch::Contains("offset 3"));
  CHECK(test::Run({test::IosonarBin(), "hostlist", "shuffle", "a"}).exit_code == 2);
}

TEST_CASE("SQL files split into statements outside quotes and comments", "[jobdb]") {
  auto s = SplitSqlStatements("-- a comment; with a semicolon\nCREATE TABLE t (a INT); /* x; y */ INSERT INTO t "
                              "VALUES ('a;b', \"c;d\", `e;f`);\n# hash; comment\n  ;  SELECT 'it''s; ok'");
  REQUIRE(s.size() == 3);
  CHECK(s[0] == "CREATE TABLE t (a INT)");
  CHECK_THAT(s[1], Catch::Contains("'a;b'") && Catch::Contains("\"c;d\"") && Catch::Contains("`e;f`"));
  CHECK(s[2] == "SELECT 'it''s; ok'");
  for (const auto& m : BuiltinMigrations()) CHECK_FALSE(SplitSqlStatements(m.sql).empty());
}
