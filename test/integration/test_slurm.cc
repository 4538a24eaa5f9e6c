// The Slurm connector end to end, with real parts only: a private MariaDB, a
// one-node Slurm (munged, slurmdbd accounting into that MariaDB, slurmctld,
// slurmd; generated slurm.conf under a TempDir; private ports), the
// PrologSlurmctld/EpilogSlurmctld pair running `iosonar scheduler
// prolog|epilog`, an sbatch job whose `srun -n 3` runs fio under `iosonar
// trace` into an embedded collector, an array job and a failing job. Checks
// that they arrive in MySQL with the right nodes, times, user, command, state
// and exit code, that `scheduler poll` (real sacct) catches up on a job the
// prolog/epilog missed, that the `iosonar slurm` exporter emits valid
// iosonar.job start/end records for them, and that job-summary joins the job's metadata with
// its traced records. Every server is stopped by pid at the end.
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "core/collector/collector.h"
#include "core/jobdb/jobdb.h"
#include "core/records/record.h"
#include "core/base/timeutil.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/slurm_cluster.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

constexpr int64_t kS = 1000000000;

void WriteScript(const std::string& path, const std::string& body) {
  WriteFile(path, "#!/bin/sh\n" + body);
  chmod(path.c_str(), 0755);
}

JobRecord MustGet(JobDb& db, const std::string& cluster, const std::string& id) {
  auto g = db.Get(cluster, std::stoull(id));
  INFO("job " << id << ": " << g.status().ToString());
  REQUIRE(g.ok());
  REQUIRE(g.value());
  return *g.value();
}

// PrologSlurmctld / EpilogSlurmctld: slurmctld runs them with a bare
// environment, so the wrapper names the config (written to
// WORK/slurm-conf-path once the cluster is up). A "paused" file makes them
// skip, standing in for connector downtime the poller must catch up on.
// The options of a cluster running them, with accounting in the MariaDB at mysql_port.
SlurmClusterOptions PrologEpilogCluster(const TempDir& work, const std::string& url, const std::string& spool,
                                        int mysql_port) {
  for (const char* mode : {"prolog", "epilog"})
    WriteScript(work / (std::string(mode) + ".sh"),
                "[ -e " + work / "paused" + " ] && exit 0\nexport SLURM_CONF=$(cat " + work / "slurm-conf-path" +
                    ")\nexport IOSONAR_MYSQL='" + url + "'\nexport IOSONAR_JOBDB_SPOOL=" + spool + "\nexec " +
                    IosonarBin() + " scheduler " + mode + " >> " + work / (std::string(mode) + ".log") + " 2>&1\n");
  SlurmClusterOptions so;
  so.prolog_slurmctld = work / "prolog.sh";
  so.epilog_slurmctld = work / "epilog.sh";
  so.mysql_host = "127.0.0.1";
  so.mysql_port = mysql_port;
  return so;
}

}  // namespace

TEST_CASE("slurm: prolog/epilog and sacct poll feed the job database, job-summary joins", "[slurm][mysql]") {
  if (!HaveSlurm(true) || !HaveMariaDb() || !HaveProgram("fio"))
    FAIL("needs munge, slurmctld, slurmd, slurmdbd, slurm-client, mariadb-server and fio (scripts/setup.sh --test)");
  const int64_t t0 = NowNs() - 2 * kS;  // sacct times are whole seconds
  MariaDbServer mysql;
  const std::string url = mysql.url("iosonar");
  {
    auto m = Run({IosonarBin(), "db-migrate", "--mysql", url});
    INFO(m.out << m.err);
    REQUIRE(m.exit_code == 0);
  }
  TempDir work;
  // The embedded collector the tracer sends to.
  CollectorOptions co;
  co.listen = "tcp://127.0.0.1:0";
  co.store_dir = work / "store";
  std::filesystem::create_directories(co.store_dir);
  auto coll = Collector::Start(co);
  INFO(coll.status().ToString());
  REQUIRE(coll.ok());
  const std::string output = "tcp://127.0.0.1:" + std::to_string(coll.value()->port());

  // The prolog/epilog pair (PrologEpilogCluster); "paused" stands for connector downtime.
  const std::string spool = work / "spool";
  SlurmCluster slurm(PrologEpilogCluster(work, url, spool, mysql.port()));
  WriteFile(work / "slurm-conf-path", slurm.conf());
  const std::string cl = slurm.cluster();

  // 1. srun -n 3 of traced fio, each task writing its own 2 MiB file; a hostile job name.
  const std::string fio_name = std::string("fio 'traced'; \"q\" \\ \xc3\xa9");
  const std::string fio_cmd = "srun -n 3 sh -c 'exec " + IosonarBin() + " trace --output " + output +
                              " -- fio --name=t --filename=" + work.path() +
                              "/f.$SLURM_PROCID --rw=write --bs=64k --size=2m --ioengine=psync'";
  std::string fio_job = slurm.Submit({"-n", "3", "-J", fio_name, "-D", work.path(), "--wrap", fio_cmd});
  // 2. an array of three tasks; 3. a job that fails with exit code 3.
  std::string arr_job = slurm.Submit({"--array=0-2", "-J", "arr", "-D", work.path(), "--wrap", "echo $SLURM_ARRAY_TASK_ID"});
  std::string bad_job = slurm.Submit({"-J", "fails", "-D", work.path(), "--wrap", "exit 3"});
  INFO(slurm.Logs());
  REQUIRE(slurm.WaitDone({fio_job, arr_job, bad_job}, 90000));
  // EpilogSlurmctld runs after the job has left squeue's running set: wait for its records.
  auto db = JobDb::Open(url);
  REQUIRE(db.ok());
  auto ended = [&](const std::string& id) {
    auto g = db.value()->Get(cl, std::stoull(id));
    return g.ok() && g.value() && g.value()->end_ns.has_value();
  };
  REQUIRE(WaitUntil([&] { return ended(fio_job) && ended(bad_job); }, 30000));
  const int64_t t1 = NowNs() + 2 * kS;
  INFO("prolog log: " << ReadFile(work / "prolog.log") << "\nepilog log: " << ReadFile(work / "epilog.log"));

  // --- what the prolog/epilog pair recorded -------------------------------------
  JobRecord f = MustGet(*db.value(), cl, fio_job);
  CHECK(f.source == "epilog");
  CHECK(f.name == std::optional<std::string>(fio_name));  // byte for byte
  CHECK(f.user == std::optional<std::string>("root"));
  CHECK(f.uid == std::optional<int64_t>(0));
  CHECK(f.partition == std::optional<std::string>("debug"));
  CHECK(f.node_list == std::optional<std::string>(slurm.node()));
  CHECK(f.node_count == std::optional<int64_t>(1));
  CHECK(f.task_count == std::optional<int64_t>(3));
  CHECK(f.command == std::optional<std::string>(fio_cmd));  // the --wrap line, from the batch script
  CHECK(f.work_dir == std::optional<std::string>(work.path()));
  CHECK(f.state == std::optional<std::string>("COMPLETED"));
  CHECK(f.exit_code == std::optional<int64_t>(0));
  REQUIRE(f.start_ns);
  REQUIRE(f.end_ns);
  CHECK(*f.start_ns >= t0);
  CHECK(*f.start_ns <= *f.end_ns);
  CHECK(*f.end_ns <= t1);
  CHECK(db.value()->JobNodes(cl, std::stoull(fio_job)).value() == std::vector<std::string>{slurm.node()});

  JobRecord b = MustGet(*db.value(), cl, bad_job);
  CHECK(b.state == std::optional<std::string>("FAILED"));
  CHECK(b.exit_code == std::optional<int64_t>(3));
  CHECK(b.command == std::optional<std::string>("exit 3"));

  // The array's tasks: each its own job id, all with array_job_id = the array's id.
  auto tasks = db.value()->conn().Query(
      "SELECT array_task_id, state, exit_code, end_time IS NOT NULL FROM jobs WHERE cluster = ? AND array_job_id = ? "
      "AND step = '' ORDER BY array_task_id",
      {cl, static_cast<int64_t>(std::stoull(arr_job))});
  REQUIRE(tasks.ok());
  REQUIRE(WaitUntil(
      [&] {
        auto t = db.value()->conn().Query(
            "SELECT COUNT(*) FROM jobs WHERE cluster = ? AND array_job_id = ? AND step = '' AND end_time IS NOT NULL",
            {cl, static_cast<int64_t>(std::stoull(arr_job))});
        return t.ok() && t.value()[0][0] == std::optional<std::string>("3");
      },
      30000));
  tasks = db.value()->conn().Query(
      "SELECT array_task_id, state, exit_code FROM jobs WHERE cluster = ? AND array_job_id = ? AND step = '' "
      "ORDER BY array_task_id",
      {cl, static_cast<int64_t>(std::stoull(arr_job))});
  REQUIRE(tasks.ok());
  CHECK(tasks.value() == std::vector<SqlRow>{{"0", "COMPLETED", "0"}, {"1", "COMPLETED", "0"}, {"2", "COMPLETED", "0"}});

  // --- the sacct poller: steps, SubmitLine, and a job the prolog/epilog missed --------
  WriteFile(work / "paused", "");
  std::string missed = slurm.Submit({"-J", "missed", "-D", work.path(), "--wrap", "exit 7"});
  REQUIRE(slurm.WaitDone({missed}, 60000));
  CHECK_FALSE(db.value()->Get(cl, std::stoull(missed)).value().has_value());
  // sacct learns of the end from slurmctld asynchronously: poll until the job's end is there.
  RunResult poll;
  REQUIRE(WaitUntil(
      [&] {
        poll = slurm.Cmd({IosonarBin(), "scheduler", "poll", "--mysql", url, "--since", FormatIsoMillis(t0)});
        auto g = db.value()->Get(cl, std::stoull(missed));
        return poll.exit_code != 0 || (g.ok() && g.value() && g.value()->end_ns);
      },
      60000));
  INFO("poll: " << poll.out << poll.err);
  REQUIRE(poll.exit_code == 0);
  CHECK_THAT(poll.out, Catch::Contains(" 0 skipped"));
  JobRecord m = MustGet(*db.value(), cl, missed);
  CHECK(m.source == "sacct");
  CHECK(m.state == std::optional<std::string>("FAILED"));
  CHECK(m.exit_code == std::optional<int64_t>(7));
  CHECK(m.user == std::optional<std::string>("root"));
  CHECK(m.node_list == std::optional<std::string>(slurm.node()));
  REQUIRE(m.command);
  CHECK_THAT(*m.command, Catch::StartsWith("sbatch") && Catch::Contains("--wrap") && Catch::Contains("exit 7"));
  CHECK(db.value()->JobNodes(cl, std::stoull(missed)).value() == std::vector<std::string>{slurm.node()});
  // The poll merged the fio job's steps and its SubmitLine; the exact name from the prolog stays
  // (sacct prints '"' in job names as '`').
  f = MustGet(*db.value(), cl, fio_job);
  CHECK(f.name == std::optional<std::string>(fio_name));
  REQUIRE(f.command);
  CHECK_THAT(*f.command, Catch::StartsWith("sbatch") && Catch::Contains("srun -n 3"));
  CHECK(f.state == std::optional<std::string>("COMPLETED"));
  auto steps = db.value()->conn().Query("SELECT step FROM jobs WHERE cluster = ? AND job_id = ? ORDER BY step",
                                        {cl, static_cast<int64_t>(std::stoull(fio_job))});
  REQUIRE(steps.ok());
  std::set<std::string> step_names;
  for (const auto& r : steps.value()) step_names.insert(*r[0]);
  CHECK(step_names.count(""));
  CHECK(step_names.count("batch"));
  CHECK(step_names.count("0"));  // the srun
  // A second poll from the stored mark re-reads only the overlap and changes nothing.
  auto again = slurm.Cmd({IosonarBin(), "scheduler", "poll", "--mysql", url});
  CHECK(again.exit_code == 0);
  CHECK(MustGet(*db.value(), cl, missed) == m);

  // --- the same poller as a sampling exporter: iosonar.job records from the real sacct --
  auto exp = slurm.Cmd({IosonarBin(), "slurm", "--count", "1", "--output", work / "jobs.jsonl", "--mysql", url,
                        "--since", FormatIsoMillis(t0), "--host-name", "ctl", "--quiet"});
  INFO("slurm exporter: " << exp.out << exp.err);
  CHECK(exp.exit_code == 0);
  std::map<std::string, std::string> events;  // "JOB event" -> line
  for (const auto& l : SplitLines(ReadFile(work / "jobs.jsonl"))) {
    std::string buf = l + '\0';
    ParsedRecord rec;
    Status s = ParseRecordInsitu(buf.data(), l.size(), &rec);
    INFO(l << ": " << s.ToString());
    REQUIRE(s.ok());
    if (std::string(rec.dataset->name) != "iosonar.job") continue;
    auto field = [&](const char* k) {
      const auto& v = rec[static_cast<size_t>(FieldIndex(k))];
      return v.kind == FieldValue::kString ? std::string(v.s) : std::to_string(v.i);
    };
    events[field("job.id") + " " + field("job.event")] = l;
  }
  for (const auto& id : {fio_job, bad_job, missed}) {
    CHECK(events.count(id + " start"));
    CHECK(events.count(id + " end"));
  }
  CHECK_THAT(events[bad_job + " end"], Catch::Contains("\"job.exit_code\":3") && Catch::Contains("\"job.state\":\"FAILED\""));
  // (sacct has no task count on the job's own row, only on its steps: job.task_count is absent here.)
  CHECK_THAT(events[fio_job + " end"], Catch::Contains("\"job.nodes\":\"" + slurm.node() + "\"") &&
                                           Catch::Contains("\"job.state\":\"COMPLETED\""));

  // --- job-summary joins the job database and the traced records ---------------------
  Status drained = coll.value()->Drain(3, 20000);
  INFO(drained.ToString());
  REQUIRE(coll.value()->Stop().ok());
  auto js = Run({IosonarBin(), "job-summary", fio_job, "--store", co.store_dir, "--mysql", url, "--format", "json"});
  INFO("job-summary: " << js.out << js.err);
  REQUIRE(js.exit_code == 0);
  rapidjson::Document d;
  d.Parse(js.out.c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(d["write"]["bytes"].GetInt64() == 3 * 2 * 1024 * 1024);
  CHECK(d["processes_with_io"].GetInt64() >= 3);
  CHECK(std::string(d["io_mode"]["write"].GetString()) == "N-N");
  REQUIRE(d.HasMember("job"));
  CHECK(std::string(d["job"]["user"].GetString()) == "root");
  CHECK(std::string(d["job"]["name"].GetString()) == fio_name);
  CHECK(std::string(d["job"]["state"].GetString()) == "COMPLETED");
  CHECK(d["job"]["nodes"].Size() == 1);
  CHECK(std::string(d["job"]["nodes"][0].GetString()) == slurm.node());
  auto row = db.value()->conn().Query("SELECT write_bytes, io_mode_write FROM job_summary WHERE cluster = ? AND job_id = ?",
                                      {cl, static_cast<int64_t>(std::stoull(fio_job))});
  REQUIRE(row.ok());
  REQUIRE(row->size() == 1);
  CHECK(row.value()[0] == SqlRow{std::to_string(3 * 2 * 1024 * 1024), "N-N"});
  auto app = db.value()->conn().Query("SELECT runs, summarized FROM app_stats WHERE cluster = ? AND command = ?",
                                      {cl, *f.command});
  REQUIRE(app.ok());
  CHECK(app.value() == std::vector<SqlRow>{{"1", "1"}});
  // The table form shows the metadata above the summary.
  auto tbl = Run({IosonarBin(), "job-summary", fio_job, "--store", co.store_dir, "--mysql", url});
  CHECK(tbl.exit_code == 0);
  CHECK_THAT(tbl.out, Catch::Contains("(job database)") && Catch::Contains("COMPLETED"));
  CHECK((!std::filesystem::exists(spool) || std::filesystem::is_empty(spool)));
}

// Issue 14: one application key for a run whichever path records it. Slurm
// 22.05's scontrol prints a batch job's Command as the script as typed and
// its arguments ("./run.sh in.nml two words n=4", no quotes, no SubmitLine);
// sacct's SubmitLine is sbatch's argv joined the same way, options and a job
// name with spaces included. The prolog (database A, then also polled) and
// the sacct poller alone (database B) must store the same jobs.app_key for
// the same run, and a second run of the application that only the poller saw
// gets that key too. The expected key is written out here: the script made
// absolute against the working directory, then its arguments.
TEST_CASE("slurm: a script job with arguments has one application key from the prolog and from sacct", "[slurm][mysql][appkey]") {
  if (!HaveSlurm(true) || !HaveMariaDb())
    FAIL("needs munge, slurmctld, slurmd, slurmdbd, slurm-client and mariadb-server (scripts/setup.sh --test)");
  const int64_t t0 = NowNs() - 2 * kS;
  MariaDbServer mysql;
  const std::string url_a = mysql.url("jobs_prolog"), url_b = mysql.url("jobs_sacct");
  for (const auto& u : {url_a, url_b}) {
    auto m = Run({IosonarBin(), "db-migrate", "--mysql", u});
    INFO(m.out << m.err);
    REQUIRE(m.exit_code == 0);
  }
  TempDir work;
  const std::string spool = work / "spool";
  SlurmCluster slurm(PrologEpilogCluster(work, url_a, spool, mysql.port()));
  WriteFile(work / "slurm-conf-path", slurm.conf());
  const std::string cl = slurm.cluster();
  WriteScript(work / "run.sh", "echo \"$@\"\n");
  // sbatch runs in `work` (the script path relative to it); the job name has spaces.
  const std::vector<std::string> submit = {"-J", "my run 'q'", "-N", "1", "--time=00:05:00", "-D", work.path(),
                                           "./run.sh", "in.nml", "two words", "--flag=3", "n=4"};
  auto sbatch = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv{"sh", "-c", "cd \"$0\" && exec sbatch --parsable \"$@\"", work.path()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = slurm.Cmd(argv);
    INFO("sbatch: " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out.substr(0, r.out.find_first_of(";\n"));
  };
  const std::string expected = work.path() + "/run.sh in.nml two words --flag=3 n=4";
  const std::string run1 = sbatch(submit);
  const std::string wrap1 = sbatch({"-J", "wrapped", "-D", work.path(), "--wrap", "echo 'a  b' n=4"});
  INFO(slurm.Logs());
  REQUIRE(slurm.WaitDone({run1, wrap1}, 60000));
  auto db_a = JobDb::Open(url_a);
  auto db_b = JobDb::Open(url_b);
  REQUIRE(db_a.ok());
  REQUIRE(db_b.ok());
  REQUIRE(WaitUntil(
      [&] {
        auto a = db_a.value()->Get(cl, std::stoull(run1)), w = db_a.value()->Get(cl, std::stoull(wrap1));
        return a.ok() && a.value() && a.value()->end_ns && w.ok() && w.value() && w.value()->end_ns;
      },
      30000));
  INFO("prolog log: " << ReadFile(work / "prolog.log") << "\nepilog log: " << ReadFile(work / "epilog.log"));
  // What the prolog/epilog pair stored (before any poll).
  JobRecord p1 = MustGet(*db_a.value(), cl, run1), pw = MustGet(*db_a.value(), cl, wrap1);
  CHECK(p1.command == std::optional<std::string>("./run.sh in.nml two words --flag=3 n=4"));  // scontrol's Command
  CHECK(p1.app_key == std::optional<std::string>(expected));
  CHECK(pw.app_key == std::optional<std::string>("echo 'a b' n=4"));
  // A second run of the same application that the prolog does not see.
  WriteFile(work / "paused", "");
  const std::string run2 = sbatch(submit);
  REQUIRE(slurm.WaitDone({run2}, 60000));
  // Poll both databases until sacct has the second run's end.
  for (const auto& u : {url_a, url_b}) {
    RunResult poll;
    auto& db = u == url_a ? *db_a.value() : *db_b.value();
    REQUIRE(WaitUntil(
        [&] {
          poll = slurm.Cmd({IosonarBin(), "scheduler", "poll", "--mysql", u, "--since", FormatIsoMillis(t0)});
          auto g = db.Get(cl, std::stoull(run2));
          return poll.exit_code != 0 || (g.ok() && g.value() && g.value()->end_ns);
        },
        60000));
    INFO("poll: " << poll.out << poll.err);
    REQUIRE(poll.exit_code == 0);
  }
  const JobRecord s1 = MustGet(*db_b.value(), cl, run1), s2 = MustGet(*db_b.value(), cl, run2),
                  sw = MustGet(*db_b.value(), cl, wrap1);
  REQUIRE(s1.command);
  CHECK_THAT(*s1.command, Catch::StartsWith("sbatch --parsable -J my run 'q' -N 1"));  // sacct's SubmitLine
  CHECK(s1.source == "sacct");
  // The sacct poller alone gives each run the key the prolog gave.
  CHECK(s1.app_key == std::optional<std::string>(expected));
  CHECK(s2.app_key == std::optional<std::string>(expected));
  CHECK(sw.app_key == pw.app_key);
  // In the database both paths wrote, the runs keep one key; the second run (sacct only) has it too.
  CHECK(MustGet(*db_a.value(), cl, run1).app_key == std::optional<std::string>(expected));
  CHECK(MustGet(*db_a.value(), cl, run1).source == "sacct");  // the poll did write over the row
  CHECK(MustGet(*db_a.value(), cl, run2).app_key == std::optional<std::string>(expected));
  CHECK(MustGet(*db_a.value(), cl, wrap1).app_key == pw.app_key);
  // app_stats groups the two runs as one application.
  auto app = db_a.value()->conn().Query("SELECT runs FROM app_stats WHERE cluster = ? AND app_key = ?", {cl, expected});
  REQUIRE(app.ok());
  CHECK(app.value() == std::vector<SqlRow>{{"2"}});
}
