// `iosonar analyze`: the analysis worker. Parses the options, opens the
// store and the job database and runs the worker loop
// (analysis-jobs/worker/loop.h), which takes finished jobs from the durable
// queue, analyses and publishes them and screens the system every hour.
#include <boost/program_options.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "analysis-jobs/anomaly/screen.h"
#include "analysis-jobs/lassi/results.h"
#include "analysis-jobs/worker/loop.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/publish.h"
#include "core/base/host.h"
#include "core/store/es_store.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {
constexpr const char* kUsage =
    "usage: iosonar analyze --queue DIR --enqueue JOB_ID [--cluster NAME]\n"
    "       iosonar analyze --queue DIR --store DIR|URL [--follow] [--apps FILE | --mysql URL] [--maps FILE]\n"
    "                       [--redis URL] [--output OUT] [--poll 2s]\n"
    "                       [--screen-every 1h --screen-state FILE [--peak FILE] [--alert-to ADDRS --smtp URL]]\n"
    "\n"
    "The analysis worker. Finished jobs wait in the queue DIR (one file each; the\n"
    "Slurm epilog adds them when $IOSONAR_ANALYSIS_QUEUE names the queue, or\n"
    "--enqueue). For each, oldest first: the job summary, the I/O phases and the\n"
    "anomaly analysis, cached in Redis (iosonar:job:JOB:summary, :phases, :anomaly),\n"
    "written to MySQL (job_summary, job_phases, job_anomaly...) and sent as result\n"
    "records; a job is removed from the queue only once analysed, so jobs that end\n"
    "while the worker is down are analysed when it is back. A job without records\n"
    "moves to DIR/failed/ with the reason. Without --follow the queue is drained\n"
    "once; with it the worker polls the queue and, with --screen-state, screens\n"
    "the OSTs and forwarding nodes for every whole hour (iosonar screen), e-mailing\n"
    "occurrences past --alert-after. SIGTERM/SIGINT stop it between jobs.\n"
    "\n"
    "options";

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

}  // namespace

int CmdAnalyze(int argc, char** argv) {
  std::string queue_dir, enqueue, cluster, store_dir, apps, maps, redis_flag, mysql_flag, output, config;
  std::string poll = "2s", screen_every = "1h", screen_state, peak, alert_to, smtp_flag, alert_after = "96h";
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                                //
      ("queue", po::value(&queue_dir)->value_name("DIR"), "the queue directory (or $IOSONAR_ANALYSIS_QUEUE)")  //
      ("enqueue", po::value(&enqueue)->value_name("JOB_ID"), "add a finished job to the queue and exit")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster (with --enqueue)")       //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store")                        //
      ("follow", "keep running: poll the queue, screen every hour")                                      //
      ("poll", po::value(&poll)->default_value("2s")->value_name("DUR"), "queue poll interval (--follow; s, m, h or ms)")  //
      ("apps", po::value(&apps)->value_name("FILE"), "JOB_ID<TAB>COMMAND LINE per job (no job database)")  //
      ("maps", po::value(&maps)->value_name("FILE"), "node -> forwarding map as JSON")                  //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache results in Redis")                     //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: history and result rows")    //
      ("output", po::value(&output)->value_name("OUT"), "send result records to OUT")                   //
      ("screen-every", po::value(&screen_every)->default_value("1h")->value_name("DUR"), "screening period (--follow)")  //
      ("screen-state", po::value(&screen_state)->value_name("FILE"), "screening state; screening is on when given")  //
      ("peak", po::value(&peak)->value_name("FILE"), "known peak bandwidth per server for the screening")  //
      ("alert-to", po::value(&alert_to)->value_name("ADDRS"), "e-mail occurrences past --alert-after (comma-separated)")  //
      ("alert-after", po::value(&alert_after)->default_value("96h")->value_name("DUR"), "Beacon: 96 h")  //
      ("smtp", po::value(&smtp_flag)->value_name("URL"), "mail server smtp://HOST:PORT ($IOSONAR_SMTP)")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseCommandLine("analyze", argc, argv, desc, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("analyze", m); };
  if (queue_dir.empty())
    if (const char* q = std::getenv("IOSONAR_ANALYSIS_QUEUE")) queue_dir = q;
  if (queue_dir.empty()) return usage_error("missing --queue DIR (or $IOSONAR_ANALYSIS_QUEUE)");
  worker::AnalysisQueue queue(queue_dir);
  if (!enqueue.empty()) {
    if (Status s = queue.Enqueue(enqueue, cluster); !s.ok())
      return CommandError("analyze", s.code() == Code::kInvalid ? 2 : 1, s.ToString());
    return 0;
  }
  if (store_dir.empty()) return usage_error("missing --store DIR");
  std::optional<int64_t> poll_ns;
  if (poll.size() > 2 && poll.compare(poll.size() - 2, 2, "ms") == 0) {
    auto ms = lassi::ParseDuration(poll.substr(0, poll.size() - 2) + "s");
    if (ms) poll_ns = *ms / 1000;
  } else {
    poll_ns = lassi::ParseDuration(poll);
  }
  auto every_ns = lassi::ParseDuration(screen_every);
  auto after_ns = lassi::ParseDuration(alert_after);
  if (!poll_ns || *poll_ns <= 0) return usage_error("--poll: not a positive duration: '" + poll + "'");
  if (!every_ns || *every_ns <= 0) return usage_error("--screen-every: not a positive duration: '" + screen_every + "'");
  if (!after_ns || *after_ns < 0) return usage_error("--alert-after: not a duration: '" + alert_after + "'");
  worker::LoopOptions opt;
  opt.poll_ns = *poll_ns;
  opt.screen_every_ns = *every_ns;
  opt.screen_state = screen_state;

  anomaly::JobSource src;
  if (Status st = LoadJobSourceFiles(apps, maps, &src); !st.ok()) return usage_error(st.message());
  if (!peak.empty()) {
    auto p = anomaly::LoadPeaks(peak);
    if (!p.ok()) return usage_error("--peak: " + p.status().message());
    opt.peaks = std::move(*p);
  }
  anomaly::AlertOptions& alert = opt.alert;
  if (!alert_to.empty()) {
    if (screen_state.empty()) return usage_error("--alert-to needs --screen-state FILE");
    alert.smtp.url = ResolveSetting(smtp_flag, "IOSONAR_SMTP", "smtp", config);
    if (alert.smtp.url.empty()) return usage_error("--alert-to needs --smtp URL (or $IOSONAR_SMTP)");
    if (const char* pw = std::getenv("IOSONAR_SMTP_PASSWORD")) alert.smtp.password = pw;
    for (size_t pos = 0; pos <= alert_to.size();) {
      size_t c = alert_to.find(',', pos);
      if (c == std::string::npos) c = alert_to.size();
      if (c > pos) alert.to.push_back(alert_to.substr(pos, c - pos));
      pos = c + 1;
    }
    alert.from = "iosonar@" + HostName();
    alert.after_ns = *after_ns;
    alert.store = store_dir;
  }
  Publisher pub("analyze", {output, redis_flag, mysql_flag, config});
  std::unique_ptr<JobDb> db;
  if (!pub.mysql_url().empty() && src.apps.empty()) {
    auto d = JobDb::Open(pub.mysql_url());
    if (!d.ok()) return CommandError("analyze", 1, "job database: ", d.status().ToString());
    db = std::move(*d);
    src.db = db.get();
  }
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("analyze", 1, store.status().ToString());
  opt.follow = vm.count("follow") > 0;
  opt.reread_forwarding_map = maps.empty();
  opt.host = HostName();
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  const int rc = worker::RunWorker(queue, *store.value(), db.get(), src, opt, pub, &g_stop, std::cout, std::cerr);
  return std::max(rc, pub.rc());
}

}  // namespace iosonar::cli
