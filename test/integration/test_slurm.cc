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

  // PrologSlurmctld / EpilogSlurmctld: slurmctld runs them with a bare
  // environment, so the wrapper names the config. A "paused" file makes them
  // skip, standing in for connector downtime the poller must catch up on.
  const std::string spool = work / "spool";
  for (const char* mode : {"prolog", "epilog"})
    WriteScript(work / (std::string(mode) + ".sh"),
                "[ -e " + work / "paused" + " ] && exit 0\nexport SLURM_CONF=" + work / "slurm-conf-path" +
                    "\nexport SLURM_CONF=$(cat $SLURM_CONF)\nexport IOSONAR_MYSQL='" + url +
                    "'\nexport IOSONAR_JOBDB_SPOOL=" + spool + "\nexec " + IosonarBin() + " scheduler " + mode +
                    " >> " + work / (std::string(mode) + ".log") + " 2>&1\n");
  SlurmClusterOptions so;
  so.prolog_slurmctld = work / "prolog.sh";
  so.epilog_slurmctld = work / "epilog.sh";
  so.mysql_host = "127.0.0.1";
  so.mysql_port = mysql.port();
  SlurmCluster slurm(so);
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
