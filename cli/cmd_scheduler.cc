// `iosonar scheduler prolog|epilog|poll|replay`: the Slurm connector.
#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "analysis-jobs/worker/queue.h"
#include "core/jobdb/jobdb.h"
#include "core/base/timeutil.h"
#include "exporters/scheduler/scheduler.h"

extern char** environ;

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

constexpr const char* kUsage =
    "usage: iosonar scheduler prolog|epilog|poll|replay [--mysql URL] [--spool DIR] [--cluster NAME] [options]\n"
    "\n"
    "Feeds the MySQL job database from Slurm.\n"
    "  prolog, epilog  record the job's start / end from the Slurm prolog environment\n"
    "                  (SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_NODELIST, SLURM_JOB_EXIT_CODE2, ...),\n"
    "                  completed by `scontrol show job -o`. Meant for PrologSlurmctld= and\n"
    "                  EpilogSlurmctld= (once per job, with the exit code); Prolog=/Epilog= work too.\n"
    "                  If MySQL cannot be reached the record goes to the spool; the spool is\n"
    "                  replayed before every write. Exits 0 even when the record could be neither\n"
    "                  written nor spooled (the error goes to stderr): a failing PrologSlurmctld\n"
    "                  would requeue or kill the job. --strict makes that exit 1.\n"
    "  poll            reads `sacct --parsable2` from where the last poll ended (minus 5 minutes),\n"
    "                  or --since, to now, and merges every job and step; malformed lines are\n"
    "                  reported and skipped. Run it from cron to catch up after any downtime.\n"
    "  replay          writes the spooled records to MySQL, oldest first.\n"
    "\n"
    "MySQL URL: --mysql, $IOSONAR_MYSQL or `mysql = URL` in the config file (see iosonar db-migrate).\n"
    "Spool: --spool, $IOSONAR_JOBDB_SPOOL, default /var/spool/iosonar/jobdb.\n"
    "\n"
    "Exit status: 0 done, 1 failed (poll/replay: sacct or MySQL failed; prolog/epilog with --strict:\n"
    "nothing written or spooled), 2 usage error.\n"
    "\n"
    "options";

// prolog/epilog: the job from the Slurm environment (and scontrol); 0 even
// when it could be neither written nor spooled unless strict.
int PrologEpilog(const scheduler::Options& o, const std::string& mode, bool strict) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  scheduler::RecordOutcome out;
  Status st = scheduler::RecordPrologEpilog(o, mode == "epilog", env, &out);
  // The job's end queues it for the analysis worker (`iosonar analyze`), whatever became of the record.
  if (mode == "epilog" && env.count("IOSONAR_ANALYSIS_QUEUE") && env.count("SLURM_JOB_ID"))
    if (Status q = worker::AnalysisQueue(env["IOSONAR_ANALYSIS_QUEUE"]).Enqueue(
            env["SLURM_JOB_ID"], !o.cluster.empty() ? o.cluster : env["SLURM_CLUSTER_NAME"], /*once=*/true);
        !q.ok())
      std::cerr << "iosonar scheduler epilog: analysis queue: " << q.ToString() << "\n";
  if (!out.note.empty()) std::cerr << "iosonar scheduler " << mode << ": note: " << out.note << "\n";
  if (out.replay.replayed || out.replay.bad)
    std::cerr << "iosonar scheduler " << mode << ": replayed " << out.replay.replayed << " spooled record(s), "
              << out.replay.bad << " bad\n";
  if (!st.ok()) return CommandError("scheduler " + mode, strict ? 1 : 0, "job not recorded: ", st.ToString());
  if (out.spooled) std::cerr << "iosonar scheduler " << mode << ": spooled to " << out.spool_path << "\n";
  return 0;
}

// replay: the spooled records into MySQL, oldest first.
int Replay(const scheduler::Options& o) {
  auto db = JobDb::Open(o.mysql_url);
  if (!db.ok()) return CommandError("scheduler replay", 1, db.status().ToString());
  ReplayStats rs;
  Status st = ReplaySpool(o.spool_dir, *db.value(), &rs);
  std::cout << "replayed " << rs.replayed << ", bad " << rs.bad << " (moved to " << o.spool_dir << "/bad)\n";
  if (!st.ok()) return CommandError("scheduler replay", 1, st.ToString());
  return 0;
}

// poll: sacct from --since or the stored mark to now.
int Poll(const scheduler::Options& o, const std::string& since) {
  std::optional<int64_t> since_ns;
  if (!since.empty()) {
    since_ns = ParseIso8601(since);
    if (!since_ns) return CommandError("scheduler poll", 2, "--since '", since, "' is not an ISO 8601 time");
  }
  scheduler::PollStats ps;
  Status st = scheduler::PollSacct(o, since_ns, &ps);
  for (const auto& b : ps.bad) std::cerr << "iosonar scheduler poll: skipped " << b << "\n";
  std::cout << "polled " << FormatIsoMillis(ps.from_ns) << " .. " << FormatIsoMillis(ps.to_ns) << ": " << ps.lines
            << " line(s), " << ps.records << " record(s), " << ps.written << " written, " << ps.bad.size()
            << " skipped\n";
  // Finished jobs go to the analysis worker's queue (`iosonar analyze`) when $IOSONAR_ANALYSIS_QUEUE names one.
  if (const char* q = std::getenv("IOSONAR_ANALYSIS_QUEUE"); q && *q && !ps.ended.empty()) {
    worker::AnalysisQueue queue(q);
    size_t n = 0;
    for (const auto& [cluster, job] : ps.ended) {
      bool queued = false;  // not when the epilog queued it already, or it was analysed
      if (Status e = queue.Enqueue(std::to_string(job), cluster, /*once=*/true, &queued); !e.ok())
        std::cerr << "iosonar scheduler poll: analysis queue: " << e.ToString() << "\n";
      n += queued;
    }
    std::cout << "queued " << n << " finished job(s) for analysis\n";
  }
  if (!st.ok()) return CommandError("scheduler poll", 1, st.ToString());
  return 0;
}

}  // namespace

int CmdScheduler(int argc, char** argv) {
  std::string mode, mysql_flag, spool, cluster, since, config, sacct, scontrol;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                                      //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "the job database")                        //
      ("spool", po::value(&spool)->value_name("DIR"), "spool directory for records MySQL did not take")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "cluster name (default: SLURM_CLUSTER_NAME / sacct's)")  //
      ("since", po::value(&since)->value_name("TIME"), "poll: from this ISO 8601 time instead of the stored mark")  //
      ("no-scontrol", "prolog/epilog: use the environment only")                                     //
      ("strict", "prolog/epilog: exit 1 when the record was neither written nor spooled")                                     //
      ("sacct", po::value(&sacct)->default_value("sacct")->value_name("PROG"), "the sacct program")    //
      ("scontrol", po::value(&scontrol)->default_value("scontrol")->value_name("PROG"), "the scontrol program")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&mode));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("mode", 1);
  po::variables_map vm;
  if (int rc = ParseCommandLine("scheduler", argc, argv, all, &vm, &pos, &desc); rc >= 0) return rc;
  if (mode != "prolog" && mode != "epilog" && mode != "poll" && mode != "replay")
    return UsageError("scheduler",
                      "the mode must be prolog, epilog, poll or replay" + (mode.empty() ? "" : ", not '" + mode + "'"));
  scheduler::Options o;
  o.mysql_url = ResolveSetting(mysql_flag, "IOSONAR_MYSQL", "mysql", config);
  if (!spool.empty()) o.spool_dir = spool;
  else if (const char* e = std::getenv("IOSONAR_JOBDB_SPOOL"); e && *e) o.spool_dir = e;
  o.cluster = cluster;
  o.use_scontrol = !vm.count("no-scontrol");
  o.sacct = sacct;
  o.scontrol = scontrol;

  if (mode == "prolog" || mode == "epilog") return PrologEpilog(o, mode, vm.count("strict") > 0);
  if (o.mysql_url.empty()) return CommandError("scheduler " + mode, 2, "no MySQL URL (--mysql or $IOSONAR_MYSQL)");
  if (mode == "replay") return Replay(o);
  return Poll(o, since);
}

}  // namespace iosonar::cli
