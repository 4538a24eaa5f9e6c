// The sacct --parsable2 and scontrol parsers: the project's own sacct
// fixtures (test/fixtures/slurm), the raw capture of NERSC Edison job 4478544
// where the real captures are (a real-capture check), malformed lines set
// aside with their line number while the rest is parsed, and the
// prolog/epilog environment.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "core/jobdb/hostlist.h"
#include "exporters/scheduler/sacct.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::scheduler;

namespace {
// Time conversions in these tests are in UTC.
struct UtcTz {
  UtcTz() {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

// One job on 128 nodes with its steps, as both sacct captures (the project's
// fixture and NERSC's) hold it: ids, cluster, steps, the node list, the times.
struct JobExpect {
  uint64_t job_id;
  std::string cluster;
  std::set<std::string> steps;
  std::string first_node, batch_node;
  int64_t start_s;
};

void CheckJobOn128Nodes(const SacctParse& p, const JobExpect& e) {
  std::set<std::string> steps;
  const JobRecord* job = nullptr;
  for (const auto& r : p.records) {
    CHECK(r.job_id == e.job_id);
    CHECK(r.cluster == e.cluster);
    steps.insert(r.step);
    if (r.step.empty()) job = &r;
  }
  CHECK(steps == e.steps);
  REQUIRE(job);
  REQUIRE(job->node_list);
  auto nodes = ExpandHostlist(*job->node_list);
  REQUIRE(nodes.ok());
  CHECK(nodes->size() == 128);
  CHECK(std::set<std::string>(nodes->begin(), nodes->end()).size() == 128);
  CHECK(nodes->front() == e.first_node);
  // Start and a 12 min 36 s run (read as UTC here).
  REQUIRE(job->start_ns);
  REQUIRE(job->end_ns);
  CHECK(*job->start_ns == e.start_s * 1000000000);
  CHECK(*job->end_ns - *job->start_ns == (12 * 60 + 36) * 1000000000LL);
  for (const auto& r : p.records)
    if (r.step == "batch") CHECK(r.node_list == std::optional<std::string>(e.batch_node));
}
}  // namespace

TEST_CASE("sacct (fixture): raw sacct -p of a job on 128 nodes in compact form", "[sacct][fixtures]") {
  UtcTz tz;
  SacctParse p = ParseSacct(test::ReadFile(test::FixturesDir() + "/slurm/sacct-p-nodes.txt"), "fixc");
  INFO((p.bad.empty() ? "" : p.bad[0].reason));
  CHECK(p.bad.empty());
  CHECK(p.lines == 6);
  REQUIRE(p.records.size() == 6);
  CheckJobOn128Nodes(p, {3001, "fixc", {"", "batch", "extern", "0", "1", "2"}, "nid01000", "nid01000", 1795139942LL});
  auto nodes = ExpandHostlist(*std::find_if(p.records.begin(), p.records.end(), [](const JobRecord& r) {
                                 return r.step.empty();
                               })->node_list);
  REQUIRE(nodes.ok());
  CHECK(nodes->back() == "nid01231");
}

TEST_CASE("sacct (fixture): the poller's columns, steps, an array task, pending, cancelled and failed jobs", "[sacct][fixtures]") {
  UtcTz tz;
  SacctParse p = ParseSacct(test::ReadFile(test::FixturesDir() + "/slurm/sacct-parsable2.txt"), "ignored");
  INFO((p.bad.empty() ? "" : p.bad[0].reason));
  CHECK(p.bad.empty());
  REQUIRE(p.records.size() == 9);
  std::map<std::string, const JobRecord*> by;
  for (const auto& r : p.records) by[std::to_string(r.job_id) + (r.step.empty() ? "" : "." + r.step)] = &r;
  REQUIRE(by.count("2001"));
  const JobRecord& j = *by["2001"];
  CHECK(j.cluster == "fixc");
  CHECK(j.user == std::optional<std::string>("alice"));
  CHECK(j.account == std::optional<std::string>("climate"));
  CHECK(j.name == std::optional<std::string>("wrf \"run 7\" é"));
  CHECK(j.node_count == std::optional<int64_t>(32));
  CHECK(j.task_count == std::optional<int64_t>(1024));
  CHECK(*j.end_ns - *j.start_ns == (42 * 60 + 30) * 1000000000LL);
  CHECK(ExpandHostlist(*j.node_list)->size() == 32);
  CHECK(by.count("2001.batch") + by.count("2001.extern") + by.count("2001.0") + by.count("2001.1") == 4);
  const JobRecord& a = *by.at("2003");
  CHECK(a.array_job_id == std::optional<int64_t>(2002));
  CHECK(a.array_task_id == std::optional<int64_t>(1));
  CHECK(a.end_ns == std::nullopt);
  const JobRecord& pend = *by.at("2004");
  CHECK(pend.start_ns == std::nullopt);
  CHECK(pend.node_list == std::nullopt);
  const JobRecord& c = *by.at("2005");
  CHECK(c.state == std::optional<std::string>("CANCELLED"));
  CHECK(c.exit_signal == std::optional<int64_t>(15));
  CHECK(c.account == std::nullopt);
  const JobRecord& f = *by.at("2006");
  CHECK(f.state == std::optional<std::string>("FAILED"));
  CHECK(f.exit_code == std::optional<int64_t>(3));
  CHECK(ExpandHostlist(*f.node_list)->size() == 3);
}

TEST_CASE("sacct (real capture): the Edison capture parses to 128 nodes", "[sacct][real-capture]") {
  UtcTz tz;
  std::string data = test::SharedDataDir();
  if (data.empty()) {
    WARN(test::RealCapturesSkipped("the Edison sacct capture"));
    return;
  }
  std::string path = data + "/pytokio/history/9fc052a1cea3a5b9376b2f4bacd9c5e9238decaf/tests/inputs/sample.slurm";
  std::string text = test::ReadFile(path);
  REQUIRE(!text.empty());
  SacctParse p = ParseSacct(text, "edison");
  INFO((p.bad.empty() ? "" : p.bad[0].reason));
  CHECK(p.bad.empty());
  CHECK(p.lines == 11);
  REQUIRE(p.records.size() == 11);
  CheckJobOn128Nodes(p, {4478544, "edison", {"", "batch", "extern", "0", "1", "2", "3", "4", "5", "6", "7"}, "nid05398",
                         "nid05301", 1489975142LL});
}

TEST_CASE("sacct: every column of the poller's format", "[sacct]") {
  UtcTz tz;
  std::string hdr = std::string(kSacctFormat);
  for (auto& c : hdr)
    if (c == ',') c = '|';
  std::string text = hdr +
                     "\n"
                     "41|40_1|vm|alice|1000|users|100|acct|debug|my \"job\"; rm -rf / \\ é|sbatch --array=0-2 run.sh|/home/alice|vm|1|3|2026-11-22T09:00:00|2026-11-22T09:00:01|2026-11-22T09:00:11|COMPLETED|0:0\n"
                     "41.batch|40_1.batch|vm|||||||batch||||1|1||2026-11-22T09:00:01|2026-11-22T09:00:11|FAILED|3:0\n"
                     "42|42|vm|bob|1001|users|100||debug|x||/tmp|None assigned|0||2026-11-22T09:01:00|Unknown|Unknown|CANCELLED by 0|0:15\n";
  SacctParse p = ParseSacct(text, "ignored");
  REQUIRE(p.bad.empty());
  REQUIRE(p.records.size() == 3);
  const JobRecord& a = p.records[0];
  CHECK(a.cluster == "vm");
  CHECK(a.job_id == 41u);
  CHECK(a.step.empty());
  CHECK(a.array_job_id == std::optional<int64_t>(40));
  CHECK(a.array_task_id == std::optional<int64_t>(1));
  CHECK(a.user == std::optional<std::string>("alice"));
  CHECK(a.uid == std::optional<int64_t>(1000));
  CHECK(a.name == std::optional<std::string>("my \"job\"; rm -rf / \\ é"));
  CHECK(a.command == std::optional<std::string>("sbatch --array=0-2 run.sh"));
  CHECK(a.task_count == std::optional<int64_t>(3));
  CHECK(a.state == std::optional<std::string>("COMPLETED"));
  CHECK(a.exit_code == std::optional<int64_t>(0));
  CHECK(*a.end_ns - *a.start_ns == 10000000000LL);
  CHECK(p.records[1].step == "batch");
  CHECK(p.records[1].exit_code == std::optional<int64_t>(3));
  CHECK(p.records[1].user == std::nullopt);
  const JobRecord& c = p.records[2];
  CHECK(c.state == std::optional<std::string>("CANCELLED"));
  CHECK(c.exit_signal == std::optional<int64_t>(15));
  CHECK(c.node_list == std::nullopt);
  CHECK(c.start_ns == std::nullopt);
  CHECK(c.account == std::nullopt);
}

TEST_CASE("sacct: malformed lines are counted and set aside, the rest goes on", "[sacct]") {
  UtcTz tz;
  std::string text =
      "JobIDRaw|JobID|NodeList|Start|End|State|ExitCode|NNodes\r\n"
      "1|1|n[1-2]|2026-11-22T09:00:00|2026-11-22T09:00:05|COMPLETED|0:0|2\r\n"
      "2|2|n[1-2|2026-11-22T09:00:00|2026-11-22T09:00:05|COMPLETED|0:0|2\n"       // bad host list
      "3|3|n1|2026-11-22 09:00:00|2026-11-22T09:00:05|COMPLETED|0:0|1\n"          // bad time
      "4|4|n1|2026-11-22T09:00:00|2026-11-22T09:00:05|COMPLETED|0:0\n"            // field missing
      "x5|x5|n1|2026-11-22T09:00:00|2026-11-22T09:00:05|COMPLETED|0:0|1\n"        // bad id
      "6|6|n1|2026-11-22T09:00:00|2026-11-22T09:00:05|COMPLETED|zero|1\n"         // bad exit code
      "7|7|n1|2026-11-22T09:00:00|2026-11-22T09:00:05|COMPLETED|0:0|many\n"       // bad number
      "8|8|n1|2026-13-22T09:00:00|2026-11-22T09:00:05|COMPLETED|0:0|1\n"          // month 13
      "9|9|n[3-4]|2026-11-22T09:00:00|2026-11-22T09:00:05|FAILED|1:0|2";          // last line, no newline
  SacctParse p = ParseSacct(text, "c");
  REQUIRE(p.records.size() == 2);
  CHECK(p.records[0].job_id == 1u);
  CHECK(p.records[1].job_id == 9u);
  CHECK(p.lines == 9);
  REQUIRE(p.bad.size() == 7);
  CHECK(p.bad[0].line == 3);
  CHECK_THAT(p.bad[0].reason, Catch::Contains("NodeList") && Catch::Contains("never closed"));
  CHECK_THAT(p.bad[1].reason, Catch::Contains("Start"));
  CHECK_THAT(p.bad[2].reason, Catch::Contains("7 fields"));
  CHECK_THAT(p.bad[3].reason, Catch::Contains("JobIDRaw"));
  CHECK_THAT(p.bad[4].reason, Catch::Contains("ExitCode"));
  CHECK_THAT(p.bad[5].reason, Catch::Contains("NNodes"));
  CHECK(p.bad[6].line == 9);

  // No header at all: one bad entry, nothing parsed.
  SacctParse none = ParseSacct("1|2|3\n", "c");
  CHECK(none.records.empty());
  CHECK_FALSE(none.bad.empty());
  CHECK(ParseSacct("", "c").records.empty());
}

TEST_CASE("sacct: another delimiter keeps '|' in job names", "[sacct]") {
  std::string text = "JobIDRaw\x1fJobName\x1fState\n5\x1f" "a|b|c\x1f" "RUNNING\n";
  SacctParse p = ParseSacct(text, "c", "\x1f");
  REQUIRE(p.records.size() == 1);
  CHECK(p.records[0].name == std::optional<std::string>("a|b|c"));
}

TEST_CASE("scontrol: one-line job records, values with spaces", "[sacct]") {
  UtcTz tz;
  std::string line =
      "JobId=17 ArrayJobId=15 ArrayTaskId=2 JobName=my job name UserId=root(0) GroupId=root(0) MCS_label=N/A "
      "Priority=1 Account=(null) JobState=RUNNING Reason=None ExitCode=0:0 SubmitTime=2026-11-22T09:00:00 "
      "StartTime=2026-11-22T09:00:02 EndTime=Unknown Partition=debug NodeList=vm NumNodes=1 NumCPUs=2 NumTasks=3 "
      "Command=/tmp/run.sh WorkDir=/tmp/w d\n";
  auto kv = ParseScontrolLine(line);
  CHECK(kv["JobName"] == "my job name");
  CHECK(kv["WorkDir"] == "/tmp/w d");
  auto r = JobFromScontrol(kv);
  REQUIRE(r.ok());
  CHECK(r->job_id == 17u);
  CHECK(r->array_job_id == std::optional<int64_t>(15));
  CHECK(r->user == std::optional<std::string>("root"));
  CHECK(r->uid == std::optional<int64_t>(0));
  CHECK(r->account == std::nullopt);
  CHECK(r->command == std::optional<std::string>("/tmp/run.sh"));
  CHECK(r->task_count == std::optional<int64_t>(3));
  CHECK(*r->start_ns - *r->submit_ns == 2000000000LL);
  CHECK_FALSE(JobFromScontrol(ParseScontrolLine("slurm_load_jobs error: Invalid job id specified")).ok());
}

TEST_CASE("prolog/epilog environment", "[sacct]") {
  std::map<std::string, std::string> env{{"SLURM_JOB_ID", "77"},         {"SLURM_JOB_USER", "alice"},
                                         {"SLURM_JOB_UID", "1000"},      {"SLURM_JOB_NODELIST", "n[01-03]"},
                                         {"SLURM_JOB_NAME", "a'b\"c;\\"}, {"SLURM_CLUSTER_NAME", "vm"},
                                         {"SLURM_JOB_EXIT_CODE2", "3:0"}};
  auto pro = JobFromEnvironment(env, false, 1000);
  REQUIRE(pro.ok());
  CHECK(pro->start_ns == std::optional<int64_t>(1000));
  CHECK(pro->state == std::optional<std::string>("RUNNING"));
  CHECK(pro->node_count == std::optional<int64_t>(3));
  CHECK(pro->exit_code == std::nullopt);
  auto epi = JobFromEnvironment(env, true, 2000);
  REQUIRE(epi.ok());
  CHECK(epi->end_ns == std::optional<int64_t>(2000));
  CHECK(epi->exit_code == std::optional<int64_t>(3));
  CHECK(epi->state == std::optional<std::string>("FAILED"));
  CHECK(epi->name == std::optional<std::string>("a'b\"c;\\"));
  env.erase("SLURM_JOB_ID");
  CHECK_FALSE(JobFromEnvironment(env, true, 0).ok());
  env["SLURM_JOB_ID"] = "12;drop";
  CHECK_FALSE(JobFromEnvironment(env, true, 0).ok());
  env["SLURM_JOB_ID"] = "12";
  env["SLURM_JOB_NODELIST"] = "n[1-";
  auto bad = JobFromEnvironment(env, true, 0);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("SLURM_JOB_NODELIST"));
}

TEST_CASE("spool text round-trips byte for byte", "[sacct][spool]") {
  JobRecord r;
  r.cluster = "vm";
  r.job_id = 5;
  r.source = "epilog";
  r.name = std::string("line1\nline2\r\\n \xff\xfe \xc3\xa9 ;'\"") + std::string(1, '\0') + "after NUL";
  r.command = "";
  r.exit_code = -1;
  r.end_ns = 1795331887883910359;
  auto back = JobRecordFromSpoolText(JobRecordToSpoolText(r));
  REQUIRE(back.ok());
  CHECK(back.value() == r);
  CHECK_FALSE(JobRecordFromSpoolText("garbage\n").ok());
  CHECK_FALSE(JobRecordFromSpoolText("iosonar-job-record 1\njob_id=5\nbogus=1\n").ok());
  CHECK_FALSE(JobRecordFromSpoolText("iosonar-job-record 1\njob_id=5").ok());  // truncated
}

TEST_CASE("sacct: times beyond what nanoseconds since 1970 hold are refused, not overflowed", "[sacct]") {
  // Found by fuzz_sacct (scripts/fuzz.sh): year 7027 overflowed int64 nanoseconds.
  bool bad = false;
  CHECK(!iosonar::scheduler::ParseSlurmTime("7027-01-01T00:00:00", &bad));
  CHECK(bad);
  CHECK(!iosonar::scheduler::ParseSlurmTime("2026-01-01T-1:00:00", &bad));
  CHECK(bad);
  auto ok = iosonar::scheduler::ParseSlurmTime("2261-12-31T00:00:00", &bad);
  CHECK(!bad);
  CHECK(ok);
}
