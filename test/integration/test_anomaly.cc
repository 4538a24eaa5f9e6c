// `iosonar anomaly` on simulated clusters (the checks of Beacon's job I/O
// anomaly detection): normal runs of one application are normal; a run
// through a slow forwarding node and a run on a slow OST beside a metadata
// storm are anomalous, the lagging server is named and the storm is the
// first neighbour with high_mdops; a 1,024-node job on a slow OST names it.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test/testutil/mariadb_server.h"
#include "test/testutil/sim_truth.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

rapidjson::Document Json(const RunResult& r) {
  INFO(r.err);
  return JsonObject(r.out);
}

// The application: 14 nodes (4 per forwarding node: fwd000-fwd002, and two
// behind fwd003), N-N, one stripe a file, 2 GiB per rank per checkpoint at
// 1 GiB/s, 5 s of compute between checkpoints; run k starts at k*60 s. The
// storm (2 nodes behind fwd003, 1,200 metadata ops/s) and a light N-N job
// run beside run 3008.
std::vector<std::string> SimArgs(const std::string& store, const std::string& dir) {
  std::vector<std::string> a = {IosonarBin(), "simulate", "--store", store, "--nodes", "32", "--fwd", "8", "--osts",
                                "8", "--duration", "480", "--maps", dir + "/maps.json", "--apps", dir + "/apps.tsv"};
  for (int k = 0; k < 8; ++k) {
    a.push_back("--job");
    a.push_back("id=" + std::to_string(3001 + k) + ",mode=N-N,first=0,nodes=14,stripes=1,start=" + std::to_string(k * 60) +
                ",duration=50,period=5,phase=2G,cmd=./app%20-n%2014");
  }
  a.insert(a.end(), {"--job", "id=3999,mode=meta,first=14,nodes=2,start=420,duration=60,meta=200,cmd=./storm", "--job",
                     "id=3998,mode=N-N,first=16,nodes=8,stripes=2,start=420,duration=60,bytes=8M,period=1,io=1,cmd=./other"});
  return a;
}

}  // namespace

TEST_CASE("anomaly: normal runs normal, slow forwarding node and slow OST + storm anomalous", "[anomaly][simulate]") {
  TempDir dir;
  // A dry run for the layouts: the slow OST is the one most of run 3008's
  // files are on (a rank alone at a quarter speed moves under 2 % of the
  // job's bandwidth: the phase finder sees that trickle as no phase).
  auto dry = SimArgs(dir / "dry", dir.path());
  auto r = Run(dry);
  REQUIRE(r.exit_code == 0);
  const auto maps = JsonObject(ReadFile(dir / "maps.json"));
  auto files_on = FilesPerOst(maps, "3008");
  const int slow_ost = MostFiles(files_on);
  REQUIRE(slow_ost >= 0);
  REQUIRE(files_on[slow_ost] >= 2);
  const std::string ost_name = SimOstName(slow_ost);

  const std::string store = dir / "store";
  auto args = SimArgs(store, dir.path());
  args.insert(args.end(), {"--slow-fwd", "1", "--slow-fwd-from", "360", "--slow-fwd-to", "420", "--slow-ost",
                           std::to_string(slow_ost), "--slow-ost-from", "420", "--slow-ost-to", "480"});
  r = Run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto anomaly = [&](const std::string& job, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {IosonarBin(), "anomaly", job, "--store", store, "--apps", dir / "apps.tsv",
                                  "--maps", dir / "maps.json", "--format", "json"};
    a.insert(a.end(), extra.begin(), extra.end());
    auto res = Run(a);
    INFO(res.err);
    REQUIRE(res.exit_code == 0);
    return Json(res);
  };

  // Too few earlier runs: no guess.
  auto d = anomaly("3002");
  CHECK(std::string(d["verdict"].GetString()) == "not_enough_history");
  CHECK(d["history_runs"].GetInt() == 1);

  for (const char* job : {"3004", "3005", "3006"}) {
    INFO("job " << job);
    d = anomaly(job);
    CHECK(std::string(d["verdict"].GetString()) == "normal");
    CHECK(d["history_runs"].GetInt() == std::stoi(job) - 3001);
    REQUIRE(d["phases"].Size() >= 5);
    for (const auto& p : d["phases"].GetArray()) {
      CHECK(p["cluster"].GetInt() >= 0);
      CHECK(p["duration_s"].GetDouble() > 0);
      CHECK(p["bytes"].GetUint64() > 0);
    }
    CHECK(d["neighbours"].Size() == 0);
    CHECK(d["server_outliers"].Size() == 0);
  }

  // Through the slow forwarding node: 4 of 14 ranks at a quarter of their
  // bandwidth, so each checkpoint takes 4x as long; the node is named.
  d = anomaly("3007");
  CHECK(std::string(d["verdict"].GetString()) == "anomalous");
  bool noise = false;
  for (const auto& p : d["phases"].GetArray()) noise |= p["cluster"].GetInt() == -1;
  CHECK(noise);
  CHECK(d["slowdown"].GetDouble() > 3);
  bool fwd_named = false;
  for (const auto& o : d["server_outliers"].GetArray())
    if (std::string(o["kind"].GetString()) == "forwarding") {
      CHECK(std::string(o["name"].GetString()) == "fwd001");
      CHECK(o["bandwidth_ratio"].GetDouble() < 0.5);
      fwd_named = true;
    }
  CHECK(fwd_named);
  // The OSTs behind it are not blamed: their brw_stats service times match
  // their peers', and the deeper queues towards them come from fwd001 alone.
  for (const auto& o : d["server_outliers"].GetArray()) {
    CHECK(std::string(o["kind"].GetString()) == "forwarding");
    CHECK(std::string(o["evidence"]["measure"].GetString()) == "queue_depth");
    CHECK(o["evidence"]["peer_ratio"].GetDouble() >= 2);
  }
  CHECK(d["explained_servers"].Size() == 0);
  auto table = Run({IosonarBin(), "anomaly", "3007", "--store", store, "--apps", dir / "apps.tsv", "--maps",
                    dir / "maps.json"});
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("by fwd001 (the server, not your code)") != std::string::npos);

  // On the slow OST beside the storm: anomalous, the storm first with
  // high_mdops (it shares fwd003), the OST named.
  d = anomaly("3008");
  CHECK(std::string(d["verdict"].GetString()) == "anomalous");
  REQUIRE(d["neighbours"].Size() >= 2);
  const auto& first = d["neighbours"][0];
  CHECK(std::string(first["job_id"].GetString()) == "3999");
  bool mdops = false;
  for (const auto& e : first["evidence"].GetArray()) mdops |= std::string(e.GetString()) == "high_mdops";
  CHECK(mdops);
  CHECK(std::string(first["shared"][0].GetString()) == "fwd003");
  REQUIRE(d["server_outliers"].Size() == 1);  // the OST, not the forwarding nodes queueing on it
  CHECK(std::string(d["server_outliers"][0]["kind"].GetString()) == "ost");
  CHECK(std::string(d["server_outliers"][0]["name"].GetString()) == ost_name);
  CHECK(std::string(d["server_outliers"][0]["evidence"]["measure"].GetString()) == "service_ms");
  // Against its own earlier runs it is slower too (healthy in runs 3001-3007).
  CHECK(d["server_outliers"][0]["evidence"]["history_ratio"].GetDouble() >= 2);
  CHECK(std::string(d["server_outliers"][0]["evidence"]["rule"].GetString()) == "peers+history");
  // Beacon's threshold is configurable: above the storm's rate it is no evidence.
  d = anomaly("3008", {"--high-mdops", "5000"});
  for (const auto& n : d["neighbours"].GetArray())
    for (const auto& e : n["evidence"].GetArray()) CHECK(std::string(e.GetString()) != "high_mdops");

  // Bad input names what is wrong.
  auto bad = Run({IosonarBin(), "anomaly", "3008", "--store", store, "--eps", "0"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--eps") != std::string::npos);
}

TEST_CASE("anomaly: a 1,024-node job on a slow OST names that OST", "[anomaly][simulate]") {
  TempDir dir;
  for (int slow : {5, 12}) {
    INFO("slow OST " << slow);
    const std::string store = dir / ("big" + std::to_string(slow));
    auto r = Run({IosonarBin(), "simulate", "--store", store, "--nodes", "1024", "--fwd", "8", "--osts", "16",
                  "--duration", "30", "--seed", std::to_string(slow), "--job",
                  "id=5000,mode=N-N,first=0,nodes=1024,stripes=1,start=0,duration=30,period=5,phase=2G", "--slow-ost",
                  std::to_string(slow), "--maps", dir / "bigmaps.json"});
    REQUIRE(r.exit_code == 0);
    auto a = Run({IosonarBin(), "anomaly", "5000", "--store", store, "--maps", dir / "bigmaps.json", "--format", "json"});
    INFO(a.err);
    REQUIRE(a.exit_code == 0);
    auto d = Json(a);
    CHECK(std::string(d["verdict"].GetString()) == "not_enough_history");
    REQUIRE(d["server_outliers"].Size() == 1);
    const std::string name = SimOstName(slow);
    CHECK(std::string(d["server_outliers"][0]["name"].GetString()) == name);
    CHECK(std::string(d["server_outliers"][0]["kind"].GetString()) == "ost");
    // A quarter of the bandwidth; loads per OST differ a little (files land by hash).
    CHECK(d["server_outliers"][0]["bandwidth_ratio"].GetDouble() < 0.5);
    // Every job is attributed whatever its size (--large-job-nodes only
    // gates the I/O-time comparison used without brw/osc records).
    a = Run({IosonarBin(), "anomaly", "5000", "--store", store, "--maps", dir / "bigmaps.json", "--format", "json",
             "--large-job-nodes", "2048"});
    REQUIRE(a.exit_code == 0);
    CHECK(Json(a)["server_outliers"].Size() == 1);
  }
  // A lagging server inside a job of >= 1,024 nodes is e-mailed at once, and once.
  SmtpMailbox mailbox(dir);
  for (int run = 0; run < 2; ++run) {
    auto a = Run({IosonarBin(), "anomaly", "5000", "--store", dir / "big5", "--maps", dir / "bigmaps.json",
                  "--alert-to", "admin@example.org", "--alert-state", dir / "alerted", "--smtp", mailbox.url()});
    INFO(a.err);
    REQUIRE(a.exit_code == 0);
  }
  const auto mails = mailbox.Delivered();
  REQUIRE(mails.size() == 1);
  const std::string text = mailbox.Read(mails[0]);
  CHECK(text.find("Subject: iosonar: job 5000 slowed by ost simfs-OST0005") != std::string::npos);
  CHECK(text.find("iosonar anomaly 5000 --store") != std::string::npos);
}

TEST_CASE("anomaly: history from the job database, results in MySQL and as records", "[anomaly][mysql]") {
  MariaDbServer db;
  TempDir dir;
  const std::string store = dir / "store";
  auto args = SimArgs(store, dir.path());
  // fwd003 (nodes 12-15: two of the application's ranks and the storm) is slow for runs 3007 and 3008.
  args.insert(args.end(), {"--slow-fwd", "3", "--slow-fwd-from", "360", "--slow-fwd-to", "480", "--mysql", db.url()});
  auto r = Run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string rec = dir / "anomaly.jsonl";
  // No --apps: the command lines, node counts and the forwarding map come from MySQL.
  auto a = Run({IosonarBin(), "anomaly", "3007", "--store", store, "--mysql", db.url(), "--format", "json", "--output", rec});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto d = Json(a);
  CHECK(std::string(d["verdict"].GetString()) == "anomalous");
  CHECK(d["history_runs"].GetInt() == 6);
  std::string fwd;
  for (const auto& o : d["server_outliers"].GetArray())
    if (std::string(o["kind"].GetString()) == "forwarding") fwd += std::string(o["name"].GetString()) + " ";
  CHECK(fwd == "fwd003 ");
  // The neighbours' nodes are mapped from the job database too: the storm shares fwd003.
  auto a8 = Run({IosonarBin(), "anomaly", "3008", "--store", store, "--mysql", db.url(), "--format", "json"});
  REQUIRE(a8.exit_code == 0);
  auto d8 = Json(a8);
  CHECK(std::string(d8["verdict"].GetString()) == "anomalous");
  REQUIRE(d8["neighbours"].Size() >= 1);
  CHECK(std::string(d8["neighbours"][0]["job_id"].GetString()) == "3999");
  CHECK(std::string(d8["neighbours"][0]["shared"][0].GetString()) == "fwd003");
  a = Run({IosonarBin(), "anomaly", "3005", "--store", store, "--mysql", db.url(), "--format", "json"});
  REQUIRE(a.exit_code == 0);
  CHECK(std::string(Json(a)["verdict"].GetString()) == "normal");

  // The records are schema-valid: one for the job, one per neighbour and server outlier.
  ParsedLines lines;
  const auto text = SplitLines(ReadFile(rec));
  for (const auto& l : text) lines.Add(l);
  CHECK(text.size() == 1 + d["neighbours"].Size() + d["server_outliers"].Size());
  CHECK(text[0].find("\"result.reason\":\"anomalous\"") != std::string::npos);

  auto q = Run({"/usr/bin/mariadb", "-S", db.socket(), "-uroot", "-N", "-B", "iosonar", "-e",
                "SELECT job_id, verdict, history_runs FROM job_anomaly ORDER BY job_id; "
                "SELECT kind, server FROM job_server_outlier WHERE job_id = 3007 AND kind = 'forwarding'"});
  INFO(q.err);
  REQUIRE(q.exit_code == 0);
  CHECK(q.out == "3005\tnormal\t4\n3007\tanomalous\t6\n3008\tanomalous\t7\nforwarding\tfwd003\n");

  // The job summary shows the verdict (a light touch: one line under the job's metadata).
  auto js = Run({IosonarBin(), "job-summary", "3007", "--store", store, "--mysql", db.url()});
  INFO(js.err);
  REQUIRE(js.exit_code == 0);
  CHECK(js.out.find("I/O anomaly: anomalous against 6 earlier runs, slowest phase 4.0x its history") != std::string::npos);
  CHECK(js.out.find("slowed ~4.0x by fwd003 (the server, not your code)") != std::string::npos);
  js = Run({IosonarBin(), "job-summary", "3007", "--store", store, "--mysql", db.url(), "--format", "json"});
  REQUIRE(js.exit_code == 0);
  auto jd = Json(js);
  REQUIRE(jd.HasMember("anomaly"));
  CHECK(std::string(jd["anomaly"]["verdict"].GetString()) == "anomalous");
  CHECK(jd["anomaly"]["history_runs"].GetInt() == 6);
  CHECK(jd.HasMember("job"));
  js = Run({IosonarBin(), "job-summary", "3001", "--store", store, "--mysql", db.url()});
  REQUIRE(js.exit_code == 0);
  CHECK(js.out.find("I/O anomaly") == std::string::npos);  // never analysed
}

// The history is the earlier runs of the job's application as the prolog or
// the sacct poller keyed it (jobs.app_key), not of its command line: runs
// with the same command but another key (script arguments the key tells
// apart) are not compared, a run with the same key but a differently written
// command is. A row without a key (before migration 037) belongs to the
// application when the key computed from its command is the job's; a job
// whose own row has no key falls back to its command line, and says so.
TEST_CASE("anomaly: earlier runs are the job's app_key, not its command", "[anomaly][mysql]") {
  MariaDbServer db;
  TempDir dir;
  const std::string store = dir / "store";
  auto args = SimArgs(store, dir.path());
  args.insert(args.end(), {"--mysql", db.url()});
  auto r = Run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto sql = [&](const std::string& q) {
    auto res = Run({"/usr/bin/mariadb", "-S", db.socket(), "-uroot", "-N", "-B", "iosonar", "-e", q});
    INFO(q << "\n" << res.err);
    REQUIRE(res.exit_code == 0);
    return res.out;
  };
  // Every run of the application has one command and one key.
  REQUIRE(sql("SELECT COUNT(DISTINCT command), COUNT(DISTINCT app_key), COUNT(*) FROM jobs "
              "WHERE job_id BETWEEN 3001 AND 3008") == "1\t1\t8\n");
  const std::string key = sql("SELECT app_key FROM jobs WHERE job_id = 3005");
  REQUIRE(key.size() > 1);
  // 3001 and 3003: the same command, another application (other arguments in the key).
  sql("UPDATE jobs SET app_key = CONCAT(app_key, ' other.nml') WHERE job_id IN (3001, 3003)");
  // 3004: the same key, its command written differently.
  sql("UPDATE jobs SET command = './app  -n 14' WHERE job_id = 3004");
  // 3002: a row from before the key column, whose command keys to the job's key.
  sql("UPDATE jobs SET app_key = NULL WHERE job_id IN (3002, 3006)");

  auto a = Run({IosonarBin(), "anomaly", "3005", "--store", store, "--mysql", db.url(), "--format", "json"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto d = Json(a);
  std::vector<std::string> hist;
  for (const auto& h : d["history"].GetArray()) hist.push_back(h.GetString());
  CHECK(hist == std::vector<std::string>{"3004", "3002"});
  CHECK(std::string(d["history_match"].GetString()) == "app_key");
  CHECK(std::string(d["app_key"].GetString()) + "\n" == key);
  auto t = Run({IosonarBin(), "anomaly", "3005", "--store", store, "--mysql", db.url()});
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("history: earlier runs with the same application key (jobs.app_key): " + key) != std::string::npos);

  // 3006 has no key: its history is the runs with its exact command line, whatever their key.
  a = Run({IosonarBin(), "anomaly", "3006", "--store", store, "--mysql", db.url(), "--format", "json"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  d = Json(a);
  hist.clear();
  for (const auto& h : d["history"].GetArray()) hist.push_back(h.GetString());
  CHECK(hist == std::vector<std::string>{"3005", "3003", "3002", "3001"});
  CHECK(std::string(d["history_match"].GetString()) == "command");
  t = Run({IosonarBin(), "anomaly", "3006", "--store", store, "--mysql", db.url()});
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("history: earlier runs with the same command line (the job database has no app_key for this job)") !=
        std::string::npos);
}

// Against the simulator's --truth on seeds and sizes nothing was tuned to:
// eight runs of one application; a forwarding node of it slow during run 6,
// the OST with most of run 8's files slow during run 8. No job names a server
// its truth does not (false alarms 0), and every anomalous job whose truth
// has a slow server names it (misses 0), also when the job has only two
// forwarding nodes.
TEST_CASE("anomaly: server attribution matches the simulator's truth over seeds and sizes", "[anomaly][simulate][truth]") {
  TempDir dir;
  struct Size {
    int nodes, fwd, app_nodes;
  };
  for (const Size sz : {Size{32, 8, 8}, Size{32, 8, 14}, Size{48, 12, 20}})
    for (int seed : {2, 13}) {
      INFO(sz.app_nodes << " app nodes behind " << sz.app_nodes * sz.fwd / sz.nodes << "+ forwarding nodes, seed " << seed);
      std::vector<std::string> common = {"--nodes", std::to_string(sz.nodes), "--fwd", std::to_string(sz.fwd), "--osts",
                                         "8", "--duration", "480", "--seed", std::to_string(seed), "--maps",
                                         dir / "maps.json", "--apps", dir / "apps.tsv"};
      for (int k = 0; k < 8; ++k) {
        common.push_back("--job");
        common.push_back("id=" + std::to_string(3001 + k) + ",mode=N-N,first=0,nodes=" + std::to_string(sz.app_nodes) +
                         ",stripes=1,start=" + std::to_string(k * 60) + ",duration=50,period=5,phase=2G,cmd=./app");
      }
      auto dry = std::vector<std::string>{IosonarBin(), "simulate", "--output", "/dev/null"};
      dry.insert(dry.end(), common.begin(), common.end());
      REQUIRE(Run(dry).exit_code == 0);
      rapidjson::Document maps;
      maps.Parse(ReadFile(dir / "maps.json").c_str());
      const int slow_ost = MostFiles(FilesPerOst(maps, "3008"));
      const std::string store = dir / ("t" + std::to_string(sz.app_nodes) + "_" + std::to_string(seed));
      auto args = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--truth", dir / "truth.json",
                                           "--slow-fwd", "1", "--slow-fwd-from", "300", "--slow-fwd-to", "360",
                                           "--slow-ost", std::to_string(slow_ost), "--slow-ost-from", "420",
                                           "--slow-ost-to", "480"};
      args.insert(args.end(), common.begin(), common.end());
      auto r = Run(args);
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      rapidjson::Document truth;
      truth.Parse(ReadFile(dir / "truth.json").c_str());
      REQUIRE(truth.IsObject());
      REQUIRE(truth["faults"].Size() == 2);
      auto slow_of = SlowServersOf(truth);
      CHECK(slow_of["3006"] == std::set<std::string>{"fwd001"});
      CHECK(slow_of["3008"].size() == 1);
      int anomalous_with_truth = 0;
      for (int k = 4; k <= 8; ++k) {
        const std::string job = std::to_string(3000 + k);
        INFO("job " << job);
        auto a = Run(AnomalyArgs(job, store, dir.path()));
        INFO(a.err);
        REQUIRE(a.exit_code == 0);
        auto d = Json(a);
        std::set<std::string> named;
        for (const auto& o : d["server_outliers"].GetArray()) named.insert(o["name"].GetString());
        const auto& want = slow_of[job];
        for (const auto& n : named) CHECK(want.count(n) == 1);  // no false alarm
        if (std::string(d["verdict"].GetString()) == "anomalous" && !want.empty()) {
          anomalous_with_truth++;
          CHECK(named == want);  // no miss
        }
        if (want.empty()) CHECK(std::string(d["verdict"].GetString()) != "anomalous");
      }
      CHECK(anomalous_with_truth == 2);  // runs 6 and 8 are slower than their history
    }
}

// A first run of an application (its command is unique: no earlier runs,
// verdict not_enough_history) slowed by a server is told which one from the
// server's peers inside the job, whether the site samples the OSTs'
// brw_stats and the clients' osc records or only the trace and job_stats
// (then the job's own time per I/O through each server, placed by its files'
// layouts); a healthy first run names none. Every case against the
// simulator's --truth: per seed, fault (an OST, a forwarding node, none) and
// record set, two first-run jobs, the first with a light latency-bound log
// file beside its checkpoints (a healthy OST with little work and a low
// bandwidth, which must not be named).
TEST_CASE("anomaly: a first run's slow server is named against the truth, with or without brw/osc records",
          "[anomaly][simulate][truth]") {
  TempDir dir;
  int cases = 0, slowed = 0, healthy = 0, light = 0;
  for (int seed : {3, 17, 29})
    for (const std::string fault : {"ost", "fwd", "none"})
      for (const bool server_records : {true, false}) {
        INFO("seed " << seed << ", slow " << fault << (server_records ? ", brw/osc records" : ", trace + job_stats only"));
        const std::string tag = std::to_string(seed);
        std::vector<std::string> common = {
            "--nodes", "16", "--fwd", "4", "--osts", "8", "--duration", "80", "--seed", tag, "--maps",
            dir / "maps.json", "--apps", dir / "apps.tsv", "--job",
            "id=8001,mode=N-N,first=0,nodes=12,stripes=1,start=0,duration=60,period=5,phase=1G,log=64K,cmd=./first%20" + tag,
            "--job", "id=8002,mode=N-N,first=12,nodes=4,stripes=1,start=10,duration=40,bytes=32M,period=2,io=1,cmd=./other%20" + tag};
        auto dry = std::vector<std::string>{IosonarBin(), "simulate", "--output", "/dev/null"};
        dry.insert(dry.end(), common.begin(), common.end());
        REQUIRE(Run(dry).exit_code == 0);
        const auto maps = JsonObject(ReadFile(dir / "maps.json"));
        const int slow_ost = MostFiles(FilesPerOst(maps, "8001"));
        REQUIRE(slow_ost >= 0);
        // The log's OST (the light load) is healthy in every case here.
        std::string log_ost;
        for (const auto& L : maps["layouts"].GetArray())
          if (std::string(L["path"].GetString()).find("/log") != std::string::npos) log_ost = SimOstName(L["osts"][0].GetInt());
        REQUIRE(!log_ost.empty());
        const std::string store = dir / ("s" + tag + fault + (server_records ? "r" : "t"));
        auto args = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--truth", dir / "truth.json"};
        if (fault == "ost") args.insert(args.end(), {"--slow-ost", std::to_string(slow_ost)});
        if (fault == "fwd") args.insert(args.end(), {"--slow-fwd", "1"});
        if (!server_records) args.insert(args.end(), {"--no-client", "--no-brw"});
        args.insert(args.end(), common.begin(), common.end());
        auto r = Run(args);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        const auto truth = JsonObject(ReadFile(dir / "truth.json"));
        auto slow_of = SlowServersOf(truth);
        if (fault == "ost") CHECK(slow_of["8001"] == std::set<std::string>{SimOstName(slow_ost)});
        if (fault == "fwd") CHECK(slow_of["8001"] == std::set<std::string>{"fwd001"});
        if (fault == "none") CHECK(slow_of["8001"].empty());
        for (const std::string job : {"8001", "8002"}) {
          INFO("job " << job);
          auto a = Run(AnomalyArgs(job, store, dir.path()));
          INFO(a.err);
          REQUIRE(a.exit_code == 0);
          const auto d = JsonObject(a.out);
          CHECK(std::string(d["verdict"].GetString()) == "not_enough_history");
          CHECK(d["history_runs"].GetInt() == 0);
          std::set<std::string> named;
          for (const auto& o : d["server_outliers"].GetArray()) {
            named.insert(o["name"].GetString());
            CHECK(o["bandwidth_ratio"].GetDouble() < 0.5);
            CHECK(std::string(o["evidence"]["rule"].GetString()) == (server_records ? "peers" : "client_time"));
          }
          INFO("named " << named.size() << ", truth " << slow_of[job].size());
          CHECK(named == slow_of[job]);  // no miss, no false alarm
          CHECK(named.count(log_ost) == slow_of[job].count(log_ost));
          if (job == "8001" && !slow_of[job].count(log_ost)) ++light;
          CHECK(std::string(d["server_check"]["method"].GetString()) == (server_records ? "brw_osc" : "client_time"));
          ++cases;
          (slow_of[job].empty() ? healthy : slowed)++;
        }
      }
  CHECK(cases == 36);
  CHECK(slowed >= 12);   // every 8001 run with a fault, and 8002's when the fault reaches it
  CHECK(healthy >= 12);  // every run without a fault, and 8002's when it misses it
  CHECK(light >= 12);
}

// A slow server with one peer: a first run of two ranks, a file each, one
// of its OSTs slowed. With brw/osc records the slow OST's service time
// against the other OSTs' names it; with the trace and job_stats only, the
// other file's OST is the peer when the files are on two OSTs, and when
// both are on one OST nothing can compare it: server_check says so
// ("none") rather than naming nothing as if all were well. A healthy run
// names none. Against the simulator's --truth, six seeds.
TEST_CASE("anomaly: a first run's slow server with one peer is named, or said unjudged", "[anomaly][simulate][truth]") {
  TempDir dir;
  int named_cases = 0, unjudged_cases = 0, healthy_cases = 0;
  for (int seed = 1; seed <= 6; ++seed)
    for (const bool slow : {true, false})
      for (const bool server_records : {true, false}) {
        INFO("seed " << seed << (slow ? ", slow OST" : ", healthy") << (server_records ? ", brw/osc" : ", trace + job_stats"));
        const std::string tag = std::to_string(seed);
        std::vector<std::string> common = {"--nodes", "8", "--fwd", "2", "--osts", "8", "--duration", "60", "--seed", tag,
                                           "--maps", dir / "maps.json", "--apps", dir / "apps.tsv", "--job",
                                           "id=8101,mode=N-N,first=0,nodes=2,stripes=1,start=0,duration=40,period=5,phase=1G,cmd=./two%20" + tag};
        auto dry = std::vector<std::string>{IosonarBin(), "simulate", "--output", "/dev/null"};
        dry.insert(dry.end(), common.begin(), common.end());
        REQUIRE(Run(dry).exit_code == 0);
        const auto files_on = FilesPerOst(JsonObject(ReadFile(dir / "maps.json")), "8101");
        REQUIRE(!files_on.empty());
        const int slow_ost = files_on.rbegin()->first;  // one of its OSTs
        const std::string store = dir / ("p" + tag + (slow ? "s" : "h") + (server_records ? "r" : "t"));
        auto args = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--truth", dir / "truth.json"};
        if (slow) args.insert(args.end(), {"--slow-ost", std::to_string(slow_ost)});
        if (!server_records) args.insert(args.end(), {"--no-client", "--no-brw"});
        args.insert(args.end(), common.begin(), common.end());
        auto r = Run(args);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        const auto truth = SlowServersOf(JsonObject(ReadFile(dir / "truth.json")))["8101"];
        CHECK(truth.size() == (slow ? 1u : 0u));
        auto a = Run(AnomalyArgs("8101", store, dir.path()));
        INFO(a.err);
        REQUIRE(a.exit_code == 0);
        const auto d = JsonObject(a.out);
        CHECK(std::string(d["verdict"].GetString()) == "not_enough_history");
        std::set<std::string> named;
        for (const auto& o : d["server_outliers"].GetArray()) named.insert(o["name"].GetString());
        const std::string method = d["server_check"]["method"].GetString();
        if (!server_records && files_on.size() == 1) {
          // Both files on one OST behind one forwarding node: nothing beside it.
          CHECK(method == "none");
          CHECK(named.empty());
          CHECK(d["server_check"]["unjudged"].Size() == 2);
          ++unjudged_cases;
        } else {
          CHECK(named == truth);  // no miss, no false alarm
          (truth.empty() ? healthy_cases : named_cases)++;
          if (!truth.empty()) CHECK(d["server_outliers"][0]["peers"].GetInt() >= 1);
        }
      }
  CHECK(named_cases + unjudged_cases + healthy_cases == 24);
  CHECK(named_cases >= 8);
  CHECK(unjudged_cases >= 2);
}
