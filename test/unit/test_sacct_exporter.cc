// `iosonar slurm` (the sacct poller as a sampling exporter) on saved sacct
// output: one iosonar.job record per job start and end, each validated
// against the schema; steps and pending jobs give none; a malformed line is a
// warning and the rest goes on; the overlapping next sample repeats nothing.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "exporters/framework/exporter.h"
#include "core/records/record.h"
#include "core/records/schema.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::exporters;

namespace iosonar::exporters {
extern const Descriptor kSlurmExporter;
}

namespace {

std::string Field(const std::string& line, const std::string& key) {
  std::string k = "\"" + key + "\":";
  size_t p = line.find(k);
  if (p == std::string::npos) return "";
  p += k.size();
  size_t e = line[p] == '"' ? line.find('"', p + 1) + 1 : line.find_first_of(",}", p);
  return line.substr(p, e - p);
}

}  // namespace

TEST_CASE("slurm exporter: job start/end records from saved sacct output", "[sacct][exporter]") {
  setenv("TZ", "UTC", 1);
  tzset();
  test::TempDir d;
  std::string text =
      "JobIDRaw|JobID|Cluster|User|Partition|JobName|SubmitLine|NodeList|NNodes|NTasks|Start|End|State|ExitCode\n"
      "100|100|vm|alice|debug|a \"q\" é|sbatch run.sh|n[01-02]|2|4|2026-11-22T09:00:00|2026-11-22T09:10:00|COMPLETED|0:0\n"
      "100.batch|100.batch|vm||||||1|1|2026-11-22T09:00:00|2026-11-22T09:10:00|COMPLETED|0:0\n"
      "101|99_1|vm|bob|debug|arr||n03|1||2026-11-22T09:05:00|Unknown|RUNNING|0:0\n"
      "102|102|vm|bob|debug|wait||None assigned|1||Unknown|Unknown|PENDING|0:0\n"
      "103|103|vm|bob|debug|bad||n[1-|1||2026-11-22T09:05:00|Unknown|RUNNING|0:0\n";
  test::WriteFile(d / "sacct.txt", text);
  std::vector<std::string> args{"slurm", "--no-mysql", "--sacct-file", d / "sacct.txt", "--since", "2026-11-22T08:00:00Z"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  auto opts = ParseOptions(kSlurmExporter, static_cast<int>(argv.size()), argv.data());
  INFO(opts.status().ToString());
  REQUIRE(opts.ok());
  auto exp = kSlurmExporter.create(*opts);
  REQUIRE(exp.ok());
  Context ctx("n1", "", 42, "slurm");
  ctx.set_quiet(true);
  ctx.StartTick(0, 1795338000000000000, 1000, 60000000000);
  REQUIRE((*exp)->Init(ctx).ok());
  (*exp)->Collect(ctx);
  auto lines = test::SplitLines(ctx.FinishTick(1000));
  CHECK(ctx.warnings_total() == 1);  // job 103's node list

  std::map<std::string, std::string> jobs;  // "id event" -> line
  for (const auto& l : lines) {
    std::string buf = l + '\0';
    ParsedRecord r;
    Status s = ParseRecordInsitu(buf.data(), l.size(), &r);
    INFO(l << "\n" << s.ToString());
    REQUIRE(s.ok());
    if (std::string(r.dataset->name) == "iosonar.job")
      jobs[Field(l, "job.id") + " " + Field(l, "job.event")] = l;
  }
  CHECK(jobs.size() == 3);
  REQUIRE(jobs.count("\"100\" \"start\""));
  REQUIRE(jobs.count("\"100\" \"end\""));
  REQUIRE(jobs.count("\"101\" \"start\""));
  const std::string& end = jobs["\"100\" \"end\""];
  CHECK(Field(end, "@timestamp") == "\"2026-11-22T09:10:00.000Z\"");
  CHECK(Field(end, "job.duration_s") == "600");
  CHECK(Field(end, "job.state") == "\"COMPLETED\"");
  CHECK(Field(end, "job.exit_code") == "0");
  CHECK(Field(end, "job.nodes") == "\"n[01-02]\"");
  CHECK(Field(end, "job.node_count") == "2");
  CHECK(Field(end, "job.command") == "\"sbatch run.sh\"");
  CHECK(Field(end, "job.user") == "\"alice\"");
  CHECK(Field(end, "job.cluster") == "\"vm\"");
  const std::string& arr = jobs["\"101\" \"start\""];
  CHECK(Field(arr, "job.array_id") == "\"99\"");
  CHECK(Field(arr, "job.array_task") == "1");
  CHECK(Field(arr, "job.end_ns").empty());

  // The next sample reads an overlapping window: nothing is emitted twice.
  ctx.StartTick(1, 1795338060000000000, 60000001000, 60000000000);
  (*exp)->Collect(ctx);
  for (const auto& l : test::SplitLines(ctx.FinishTick(1000))) CHECK(l.find("\"iosonar.job\"") == std::string::npos);
}

TEST_CASE("slurm exporter: bad options are refused", "[sacct][exporter]") {
  // The option table declares --since a time and --timeout a duration in
  // (0, 86400]: the framework refuses them before the exporter is made.
  for (std::vector<std::string> args : {std::vector<std::string>{"slurm", "--since", "yesterday"},
                                        std::vector<std::string>{"slurm", "--timeout", "0"}}) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    auto opts = ParseOptions(kSlurmExporter, static_cast<int>(argv.size()), argv.data());
    REQUIRE_FALSE(opts.ok());
    CHECK(opts.status().message().find(args[1] + ": ") == 0);
    CHECK(opts.status().message().find("'" + args[2] + "'") != std::string::npos);
  }
}
