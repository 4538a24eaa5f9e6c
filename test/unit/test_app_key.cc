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

// Captured from the real Slurm 22.05 of the tests (Debian 12): `sbatch --parsable -J "my run 'q'" -N 1
// --time=00:05:00 ./run.sh in.nml "two words" --flag=3 n=4` run in /tmp/numslurm/w. scontrol has no
// SubmitLine; its Command is the script as typed and its arguments, unquoted.
TEST_CASE("application key: Slurm 22.05's scontrol Command and sacct's SubmitLine of one script job agree", "[appkey][lassi]") {
  const std::string line =
      "JobId=1 JobName=my run 'q' UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 "
      "Account=(null) QOS=(null) JobState=CONFIGURING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 "
      "Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:05:00 TimeMin=N/A SubmitTime=2026-11-26T11:15:47 "
      "Partition=debug AllocNode:Sid=localhost:7440 NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 "
      "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) "
      "Command=./run.sh in.nml two words --flag=3 n=4 WorkDir=/tmp/numslurm/w StdErr=/tmp/numslurm/w/slurm-1.out "
      "StdIn=/dev/null StdOut=/tmp/numslurm/w/slurm-1.out Power= \n";
  auto kv = scheduler::ParseScontrolLine(line);
  CHECK(kv["Command"] == "./run.sh in.nml two words --flag=3 n=4");  // n=4 is an argument, not a key
  CHECK(kv.count("n") == 0);
  CHECK(kv["WorkDir"] == "/tmp/numslurm/w");
  CHECK(kv["JobName"] == "my run 'q'");
  CHECK(kv["StdIn"] == "/dev/null");
  const std::string want = "/tmp/numslurm/w/run.sh in.nml two words --flag=3 n=4";
  // The prolog keys the Command as the sbatch line without options.
  CHECK(ApplicationKey("sbatch " + kv["Command"], kv["WorkDir"]) == want);
  // sacct (same job): SubmitLine with a job name of three words; the name's word count skips it.
  const std::string text =
      "JobIDRaw|Cluster|JobName|SubmitLine|WorkDir|State\n1|vm|my run 'q'|sbatch --parsable -J my run 'q' -N 1 "
      "--time=00:05:00 ./run.sh in.nml two words --flag=3 n=4|/tmp/numslurm/w|COMPLETED\n";
  auto p = scheduler::ParseSacct(text, "vm");
  REQUIRE(p.bad.empty());
  REQUIRE(p.records.size() == 1);
  CHECK(ApplicationKeyOf(p.records[0]) == want);
  CHECK(ApplicationKey("sbatch --job-name=my run 'q' ./run.sh in.nml two words --flag=3 n=4", "/tmp/numslurm/w",
                       "my run 'q'") == want);
  CHECK(ApplicationKey("sbatch -Jmy run 'q' ./run.sh a", "/w", "my run 'q'") == "/w/run.sh a");
  // Without the name the words of a spaced name would be taken for the script: the key says so.
  CHECK(ApplicationKey("sbatch -J my run 'q' ./run.sh a", "/w") != "/w/run.sh a");
  // A stored key wins over recomputing.
  JobRecord r = p.records[0];
  r.app_key = "stored";
  CHECK(ApplicationKeyOf(r) == "stored");
  // A --wrap job: the prolog keys the wrapped line as "sbatch --wrap LINE", as sacct's SubmitLine has it.
  CHECK(ApplicationKey("sbatch --wrap echo 'a  b' n=4", "/w") ==
        ApplicationKey("sbatch --parsable -J wrapped -D /w --wrap echo 'a  b' n=4", "/w", "wrapped"));
}
