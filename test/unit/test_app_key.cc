// One application key for a run whoever reported it (issue 14, LASSi §3:
// runs are grouped "based on the exact command used"): the prolog's record
// (scontrol's Command or SubmitLine, or the line an `sbatch --wrap` script
// wraps) and the sacct poller's (SubmitLine) give the same ApplicationKey.
#include <catch2/catch.hpp>
#include <string>

#include "core/jobdb/jobdb.h"
#include "exporters/scheduler/sacct.h"
#include "exporters/scheduler/scheduler.h"

using namespace iosonar;

namespace {
// The key the job database's record gives (what LASSi's AppSource reads).
std::string KeyOf(const JobRecord& r) { return ApplicationKey(r.command.value_or(""), r.work_dir.value_or("")); }

JobRecord FromSacct(const std::string& submit_line, const std::string& work_dir) {
  const std::string text = "JobIDRaw|Cluster|User|SubmitLine|WorkDir|State\n77|vm|alice|" + submit_line + "|" + work_dir +
                           "|RUNNING\n";
  auto p = scheduler::ParseSacct(text, "vm");
  REQUIRE(p.bad.empty());
  REQUIRE(p.records.size() == 1);
  return p.records[0];
}

JobRecord FromScontrol(const std::string& line) {
  auto r = scheduler::JobFromScontrol(scheduler::ParseScontrolLine(line));
  REQUIRE(r.ok());
  return r.value();
}
}  // namespace

TEST_CASE("application key: prolog (scontrol Command) and sacct poller (SubmitLine) agree", "[appkey][lassi]") {
  // A script job: scontrol's Command is the script's absolute path, sacct's SubmitLine the sbatch line.
  const JobRecord prolog = FromScontrol(
      "JobId=77 JobName=run UserId=alice(1000) GroupId=alice(1000) JobState=RUNNING Command=/home/alice/run.sh "
      "WorkDir=/home/alice NumNodes=2");
  const JobRecord sacct = FromSacct("sbatch -N 2 --time=01:00:00 -p debug ./run.sh", "/home/alice");
  CHECK(KeyOf(prolog) == "/home/alice/run.sh");
  CHECK(KeyOf(sacct) == KeyOf(prolog));
  // scontrol with a SubmitLine (what the prolog stores when Slurm has it) gives the same key as sacct's.
  const JobRecord prolog2 = FromScontrol(
      "JobId=78 JobName=run UserId=alice(1000) GroupId=alice(1000) JobState=RUNNING Command=/home/alice/run.sh "
      "WorkDir=/home/alice SubmitLine=sbatch --exclusive -J run run.sh in.nml");
  JobRecord p2 = prolog2;
  p2.command = "sbatch --exclusive -J run run.sh in.nml";  // RecordPrologEpilog prefers SubmitLine
  CHECK(KeyOf(p2) == "/home/alice/run.sh in.nml");
  CHECK(KeyOf(FromSacct("sbatch --exclusive -J run run.sh in.nml", "/home/alice")) == KeyOf(p2));
}

TEST_CASE("application key: an sbatch --wrap job from the batch script and from sacct agree", "[appkey][lassi]") {
  auto wrapped = scheduler::WrappedCommand(
      "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsrun -n 3 fio --name=x --rw=write\n");
  REQUIRE(wrapped);
  JobRecord prolog;
  prolog.command = *wrapped;
  prolog.work_dir = "/scratch/bob";
  const std::string key = KeyOf(prolog);
  CHECK(key == "srun -n 3 fio --name=x --rw=write");
  CHECK(KeyOf(FromSacct("sbatch -J fio -D /scratch/bob --wrap srun -n 3 fio --name=x --rw=write", "/scratch/bob")) == key);
  CHECK(KeyOf(FromSacct("sbatch -J fio --wrap=srun -n 3 fio --name=x --rw=write", "/scratch/bob")) == key);
  CHECK(ApplicationKey("sbatch --wrap=\"exit 3\"", "") == "exit 3");
}

TEST_CASE("application key: plain command lines keep their words", "[appkey][lassi]") {
  CHECK(ApplicationKey("./wrf.exe  -n 64", "") == "./wrf.exe -n 64");           // no work_dir: as written
  CHECK(ApplicationKey("./wrf.exe -n 64", "/home/a/") == "/home/a/wrf.exe -n 64");
  CHECK(ApplicationKey("python tracer.py", "/home/a") == "python tracer.py");  // an interpreter on PATH
  CHECK(ApplicationKey("/usr/bin/sbatch -N4 job.sh", "/w") == "/w/job.sh");     // -N4 carries its value
  CHECK(ApplicationKey("", "/w").empty());
}
