// `iosonar screen`: Beacon's hourly system screening (analysis-jobs/anomaly/screen.h):
// OSTs and forwarding nodes slow for the work they have (against their peers
// in the same minutes; under a fraction of a known peak while saturated) for
// a minimum duration.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>

#include "analysis-jobs/anomaly/alert.h"
#include "analysis-jobs/anomaly/screen.h"
#include "analysis-jobs/lassi/results.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/publish.h"
#include "core/base/host.h"
#include "core/base/timeutil.h"
#include "core/store/es_store.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {
constexpr const char* kUsage =
    "usage: iosonar screen --store DIR|URL --from T --to T [--peak FILE] [--fraction 0.3] [--peer-factor 2]\n"
    "                      [--min-duration 60m] [--bucket 1m] [--state FILE] [--only ost|forwarding]\n"
    "                      [--format table|json] [--output OUT] [--mysql URL] [--alert-to ADDRS --smtp URL [--alert-after 96h]]\n"
    "\n"
    "Beacon's system screening, judged against demand: an OST or forwarding node\n"
    "slow for the work it has for at least --min-duration is an anomaly occurrence.\n"
    "Rule demand: its cost per request (brw_stats I/O time per I/O; RPCs in flight\n"
    "its clients' OSCs saw, against the same clients' queues to other servers) is\n"
    "--peer-factor x its peers' in the same bucket. Rule bandwidth (with --peak FILE,\n"
    "NAME BYTES_PER_S per line): its largest bandwidth is under --fraction of the\n"
    "peak while its queue is saturated. An idle bucket ends an occurrence. Run it\n"
    "every hour with --state FILE: occurrences that cross hours are continued and\n"
    "reported once as new. Times: ISO 8601 (2026-11-22T00:00:00Z). docs/anomaly.md.\n"
    "\n"
    "Exit status: 0 done, 1 store or state failure, 2 usage error.\n"
    "\n"
    "options";
}  // namespace

int CmdScreen(int argc, char** argv) {
  std::string store_dir, from, to, peak, fraction_s, min_duration = "60m", bucket = "1m", state_path, only, format = "table";
  std::string output, config, mysql_flag, smtp_flag, alert_to, alert_from, alert_after = "96h", smtp_user;
  anomaly::ScreenOptions opt;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                                  //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store (directory or Elasticsearch URL)")  //
      ("from", po::value(&from)->value_name("T"), "start of the range (ISO 8601)")                 //
      ("to", po::value(&to)->value_name("T"), "end of the range (ISO 8601)")                       //
      ("peak", po::value(&peak)->value_name("FILE"), "known peak bandwidth per server: NAME BYTES_PER_S")  //
      ("fraction", po::value(&opt.fraction)->default_value(opt.fraction, "0.3"), "under this fraction of the peak (Beacon: 30 %)")  //
      ("peer-factor", po::value(&opt.peer_factor)->default_value(opt.peer_factor, "2"), "slow when its cost per request is this many times its peers'")  //
      ("min-duration", po::value(&min_duration)->default_value("60m")->value_name("DUR"), "for at least this long (Beacon: 60 minutes)")  //
      ("bucket", po::value(&bucket)->default_value("1m")->value_name("DUR"), "the window each server is judged in")  //
      ("state", po::value(&state_path)->value_name("FILE"), "carry open occurrences and observed peaks between runs")  //
      ("only", po::value(&only)->value_name("KIND"), "ost or forwarding (default both)")            //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "table or json")     //
      ("output", po::value(&output)->value_name("OUT"), "also send iosonar.result.anomaly records to OUT")  //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: upsert the occurrences into server_anomaly")  //
      ("alert-to", po::value(&alert_to)->value_name("ADDRS"), "e-mail the administrators (comma-separated) once per occurrence")  //
      ("alert-after", po::value(&alert_after)->default_value("96h")->value_name("DUR"), "... that has lasted this long (Beacon: 96 h)")  //
      ("alert-from", po::value(&alert_from)->value_name("ADDR"), "sender (default iosonar@HOST)")  //
      ("smtp", po::value(&smtp_flag)->value_name("URL"), "mail server smtp://HOST:PORT or smtps:// ($IOSONAR_SMTP, config smtp =)")  //
      ("smtp-user", po::value(&smtp_user)->value_name("USER"), "SMTP AUTH user (password from $IOSONAR_SMTP_PASSWORD)")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseCommandLine("screen", argc, argv, desc, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("screen", m); };
  if (store_dir.empty()) return usage_error("missing --store DIR");
  if (from.empty() || to.empty()) return usage_error("give --from T and --to T");
  auto f = ParseIso8601(from), t = ParseIso8601(to);
  if (!f) return usage_error("--from: not an ISO 8601 time: '" + from + "'");
  if (!t) return usage_error("--to: not an ISO 8601 time: '" + to + "'");
  if (*t <= *f) return usage_error("--to must be after --from");
  if (format != "table" && format != "json") return usage_error("--format must be table or json, not '" + format + "'");
  if (!(opt.fraction > 0 && opt.fraction <= 1)) return usage_error("--fraction must be in (0, 1]");
  if (!(opt.peer_factor > 1)) return usage_error("--peer-factor must be > 1");
  auto md = lassi::ParseDuration(min_duration);
  if (!md || *md < 0) return usage_error("--min-duration: not a duration: '" + min_duration + "'");
  opt.min_duration_ns = *md;
  auto bk = lassi::ParseDuration(bucket);
  if (!bk || *bk <= 0) return usage_error("--bucket: not a positive duration: '" + bucket + "'");
  opt.bucket_ns = *bk;
  if (!only.empty()) {
    if (only != "ost" && only != "forwarding") return usage_error("--only must be ost or forwarding, not '" + only + "'");
    opt.osts = only == "ost";
    opt.forwarding = only == "forwarding";
  }
  anomaly::AlertOptions alert;
  if (!alert_to.empty()) {
    if (state_path.empty()) return usage_error("--alert-to needs --state FILE (to send each alert once)");
    alert.smtp.url = ResolveSetting(smtp_flag, "IOSONAR_SMTP", "smtp", config);
    if (alert.smtp.url.empty()) return usage_error("--alert-to needs --smtp URL (or $IOSONAR_SMTP)");
    alert.smtp.user = smtp_user;
    if (const char* pw = std::getenv("IOSONAR_SMTP_PASSWORD")) alert.smtp.password = pw;
    size_t pos = 0;
    while (pos <= alert_to.size()) {
      size_t c = alert_to.find(',', pos);
      if (c == std::string::npos) c = alert_to.size();
      if (c > pos) alert.to.push_back(alert_to.substr(pos, c - pos));
      pos = c + 1;
    }
    alert.from = alert_from.empty() ? "iosonar@" + HostName() : alert_from;
    auto after = lassi::ParseDuration(alert_after);
    if (!after || *after < 0) return usage_error("--alert-after: not a duration: '" + alert_after + "'");
    alert.after_ns = *after;
    alert.store = store_dir;
  }
  std::map<std::string, double> peaks;
  if (!peak.empty()) {
    auto p = anomaly::LoadPeaks(peak);
    if (!p.ok()) return usage_error("--peak: " + p.status().message());
    peaks = std::move(*p);
  }
  anomaly::ScreenState state;
  if (!state_path.empty()) {
    auto s = anomaly::LoadScreenState(state_path);
    if (!s.ok()) return CommandError("screen", 1, "--state: ", s.status().ToString());
    state = std::move(*s);
  }
  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("screen", 1, store.status().ToString());
  auto res = anomaly::Screen(*store.value(), *f, *t, peaks, opt, state_path.empty() ? nullptr : &state);
  if (!res.ok()) return CommandError("screen", 1, res.status().ToString());
  if (format == "json") std::cout << anomaly::ScreenToJson(*res);
  else std::cout << TerminalSafe(anomaly::ScreenToTable(*res));
  int rc = 0;
  if (!alert.to.empty()) {
    int sent = 0;
    Status s = anomaly::AlertOccurrences(res->occurrences, alert, &state.alerted, &sent);
    if (!s.ok()) {
      rc = CommandError("screen", 1, "alert: ", s.ToString());
    }
    if (sent) std::cerr << "iosonar screen: " << sent << " alert(s) sent\n";
  }
  if (!state_path.empty())
    if (Status s = anomaly::SaveScreenState(state_path, state); !s.ok())
      return CommandError("screen", 1, "--state: ", s.ToString());
  Publisher pub("screen", {output, "", mysql_flag, config});
  if (pub.has_output()) pub.Send(anomaly::ScreenToRecords(*res, HostName()));
  pub.WithJobDb([&](JobDb& db) { return anomaly::WriteOccurrencesToDb(db.conn(), *res); });
  return std::max(rc, pub.rc());
}

}  // namespace iosonar::cli
