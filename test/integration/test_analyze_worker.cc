// `iosonar analyze`, the analysis worker: a job whose end is queued (by the
// Slurm epilog path) while the worker is stopped is analysed once the worker
// starts; a job queued while it runs is analysed too; the queue survives the
// worker being stopped by pid in between.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <ctime>
#include <string>
#include <vector>

#include "exporters/scheduler/sacct.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

// Four normal runs of one application, then a fifth through a slow forwarding node.
std::vector<std::string> SimArgs(const std::string& store, const std::string& dir) {
  std::vector<std::string> a = {IosonarBin(), "simulate", "--store", store, "--nodes", "32", "--fwd", "8", "--osts",
                                "8", "--duration", "300", "--maps", dir + "/maps.json", "--apps", dir + "/apps.tsv",
                                "--slow-fwd", "1", "--slow-fwd-from", "240", "--slow-fwd-to", "300"};
  for (int k = 0; k < 5; ++k) {
    a.push_back("--job");
    a.push_back("id=" + std::to_string(3001 + k) + ",mode=N-N,first=0,nodes=14,stripes=1,start=" + std::to_string(k * 60) +
                ",duration=50,period=5,phase=2G,cmd=./app%20-n%2014");
  }
  return a;
}

// The records sent for job J: its iosonar.result.anomaly job record's verdict, or "".
std::string VerdictIn(const std::string& path, const std::string& job) {
  for (const auto& l : SplitLines(ReadFile(path)))
    if (l.find("\"iosonar.result.anomaly\"") != std::string::npos && l.find("\"job.id\":\"" + job + "\"") != std::string::npos &&
        l.find("\"result.analysis\":\"job\"") != std::string::npos) {
      const size_t at = l.find("\"result.reason\":\"");
      if (at != std::string::npos) return l.substr(at + 17, l.find('"', at + 17) - at - 17);
    }
  return "";
}

}  // namespace

TEST_CASE("analyze: a job that ends while the worker is stopped is analysed after it starts", "[analyze][worker]") {
  TempDir dir;
  const std::string store = dir / "store", queue = dir / "queue", out = dir / "results.jsonl";
  auto sim = Run(SimArgs(store, dir.path()));
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const std::vector<std::string> worker = {IosonarBin(), "analyze", "--follow", "--queue", queue, "--store", store,
                                           "--apps", dir / "apps.tsv", "--maps", dir / "maps.json", "--output", out,
                                           "--poll", "100ms"};
  auto epilog = [&](const std::string& job) {
    // The Slurm epilog path: the job's end is recorded (spooled here: no MySQL) and queued.
    auto r = Run({IosonarBin(), "scheduler", "epilog", "--no-scontrol", "--spool", dir / "spool"},
                 {{"SLURM_JOB_ID", job}, {"SLURM_JOB_USER", "alice"}, {"SLURM_JOB_UID", "1000"},
                  {"SLURM_CLUSTER_NAME", "sim"}, {"IOSONAR_ANALYSIS_QUEUE", queue}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  };
  auto queued = [&] {
    auto ls = Run({"/bin/sh", "-c", "ls " + queue + " | grep -v -e '^failed$' -e '^done$' || true"});
    return SplitLines(ls.out).size();
  };

  // The worker runs and is stopped; job 3004 ends while it is down.
  {
    Child w(worker, {}, dir / "worker1.log");
    REQUIRE(WaitUntil([&] { return ::access((queue + "/failed").c_str(), F_OK) == 0; }, 10000));
  }
  epilog("3004");
  epilog("3005");
  CHECK(queued() == 2);
  CHECK(VerdictIn(out, "3004").empty());

  // Started again, it drains what was queued meanwhile, oldest first.
  {
    Child w(worker, {}, dir / "worker2.log");
    REQUIRE(WaitUntil([&] { return !VerdictIn(out, "3005").empty(); }, 30000));
    CHECK(VerdictIn(out, "3004") == "normal");
    CHECK(VerdictIn(out, "3005") == "anomalous");
    // The entry goes once the results are out (after the done/ marker is written).
    CHECK(WaitUntil([&] { return queued() == 0; }, 10000));
    // A job queued while it runs is taken too.
    auto r = Run({IosonarBin(), "analyze", "--queue", queue, "--enqueue", "3003"});
    REQUIRE(r.exit_code == 0);
    REQUIRE(WaitUntil([&] { return !VerdictIn(out, "3003").empty(); }, 30000));
    CHECK(VerdictIn(out, "3003") == "not_enough_history");  // two earlier runs only
    // The end of 3005 seen again by an automatic source (the sacct poller or a
    // repeated epilog): not queued, so not analysed twice.
    epilog("3005");
    CHECK(queued() == 0);
  }
  const std::string log = ReadFile(dir / "worker2.log");
  CHECK(log.find("job 3004: normal") < log.find("job 3005: anomalous"));
  CHECK(log.find("job 3005: anomalous") == log.rfind("job 3005: anomalous"));
  // The result records, stored (as the collector stores the worker's
  // --output in a deployment), give the daily report its anomaly section.
  auto c = Run({IosonarBin(), "collect", "--store", store, "--from-file", out});
  REQUIRE(c.exit_code == 0);
  auto rep = Run({IosonarBin(), "report", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                  "2026-11-22T01:00:00Z", "--html", dir / "report.html", "--text", dir / "report.txt"});
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  const std::string text = ReadFile(dir / "report.txt");
  const size_t at = text.find("I/O anomalies\n");
  REQUIRE(at != std::string::npos);
  const std::string section = text.substr(at, text.find("\n\n", at) - at);
  CHECK(section == "I/O anomalies\n  job 3005: 4.0x its history");  // 3003 and 3004 are not anomalous
  CHECK(ReadFile(dir / "report.html").find("<h2>I/O anomalies") != std::string::npos);
  // A job id that is not one is refused.
  auto bad = Run({IosonarBin(), "analyze", "--queue", queue, "--enqueue", "../x"});
  CHECK(bad.exit_code == 2);
}

TEST_CASE("analyze: the sacct poller queues each finished job once", "[analyze][worker][sacct]") {
  MariaDbServer server;
  TempDir d;
  REQUIRE(Run({IosonarBin(), "db-migrate", "--mysql", server.url()}).exit_code == 0);
  // A stand-in sacct (the real one runs in test_slurm.cc): job 81 ended a
  // minute ago, job 82 still runs.
  auto sacct_time = [](time_t t) {
    struct tm tm {};
    gmtime_r(&t, &tm);
    char b[32];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    return std::string(b);
  };
  const time_t now = time(nullptr);
  std::string hdr = iosonar::scheduler::kSacctFormat;
  for (auto& c : hdr)
    if (c == ',') c = '\x1f';
  auto row = [](std::vector<std::string> f) {
    std::string s;
    for (size_t i = 0; i < f.size(); ++i) s += (i ? "\x1f" : "") + f[i];
    return s + "\n";
  };
  WriteFile(d / "sacct.out",
            hdr + "\n" +
                row({"81", "81", "vm", "bob", "1001", "users", "100", "a", "debug", "app", "srun ./app", "/home/bob", "n1",
                     "1", "1", sacct_time(now - 600), sacct_time(now - 600), sacct_time(now - 60), "COMPLETED", "0:0"}) +
                row({"82", "82", "vm", "bob", "1001", "users", "100", "a", "debug", "app", "srun ./app", "/home/bob", "n2",
                     "1", "1", sacct_time(now - 300), sacct_time(now - 300), "Unknown", "RUNNING", "0:0"}));
  WriteFile(d / "sacct", "#!/bin/sh\ncat " + d / "sacct.out" + "\n");
  REQUIRE(::chmod((d / "sacct").c_str(), 0755) == 0);
  const std::string queue = d / "queue";
  const std::vector<std::string> poll = {IosonarBin(), "scheduler", "poll", "--mysql", server.url(), "--sacct", d / "sacct",
                                         "--cluster", "vm"};
  auto r = Run(poll, {{"TZ", "UTC"}, {"IOSONAR_ANALYSIS_QUEUE", queue}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("queued 1 finished job(s) for analysis") != std::string::npos);
  auto entries = [&] { return SplitLines(Run({"/bin/sh", "-c", "ls " + queue + " | grep -v -e '^failed$' -e '^done$' || true"}).out); };
  REQUIRE(entries().size() == 1);
  CHECK(entries()[0].find("-81") != std::string::npos);
  // The next poll re-reads the overlap but queues nothing again.
  r = Run(poll, {{"TZ", "UTC"}, {"IOSONAR_ANALYSIS_QUEUE", queue}});
  REQUIRE(r.exit_code == 0);
  CHECK(entries().size() == 1);
}
