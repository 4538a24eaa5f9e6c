// At a centre's scale the collector forwards into an engine cluster, not one
// node: three real OpenSearch nodes on loopback (one replica, the default),
// a simulated day forwarded through the collector, and a data node killed
// with SIGKILL while the collector forwards, then restarted. Every record is
// stored in the cluster exactly once, and job-summary over the cluster equals
// job-summary over the collector's own SQLite store. (Elasticsearch's
// integ-test distribution with security on needs TLS between its nodes as
// well: no cluster of it is made here.)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "core/collector/collector.h"
#include "test/real/real_engine.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {


// The node (of those named) holding the most primary shards of the pattern's indices.
std::string NodeWithMostPrimaries(SearchEngine& e, const std::string& pattern, const std::vector<std::string>& among) {
  auto r = e.Admin("GET", "/_cat/shards/" + pattern + "?format=json&h=prirep,node,state");
  INFO(r.body);
  REQUIRE(r.status == 200);
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  REQUIRE(d.IsArray());
  std::map<std::string, int> primaries;
  for (const auto& s : d.GetArray())
    if (s.HasMember("prirep") && s["prirep"].IsString() && std::string(s["prirep"].GetString()) == "p" && s["node"].IsString())
      ++primaries[s["node"].GetString()];
  std::string best = among.front();
  for (const auto& n : among)
    if (primaries[n] > primaries[best]) best = n;
  return best;
}

}  // namespace

TEST_CASE("real-opensearch-cluster: three nodes, a data node killed mid-forward and restarted: every record once, "
          "job-summary equals SQLite's",
          "[real][opensearch][cluster]") {
  const auto t0 = std::chrono::steady_clock::now();
  auto stage = [&](const char* what) {  // the figures RESULTS.md quotes
    std::cout << "cluster test: " << what << " at "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count() / 1000.0
              << " s\n";
  };
  std::string why;
  auto nodes = SearchEngine::Cluster(3, &why);
  if (nodes.empty()) {
    std::cout << "IOSONAR-SKIP: " << why << "\n";
    return;
  }
  stage("three nodes formed one cluster");
  SearchEngine& e = *nodes[0];  // the node the collector and the analyses talk to
  EnsureTemplates(e);
  TempDir dir;
  auto sim = Run({IosonarBin(), "simulate", "--output", dir / "sim.jsonl", "--nodes", "256", "--fwd", "4", "--osts", "8",
                  "--duration", "300", "--seed", "17", "--slow-ost", "3"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const std::vector<std::string> lines = SplitLines(ReadFile(dir / "sim.jsonl"));
  REQUIRE(lines.size() > 20000);  // 36,141 records, 17 MB

  const std::string ns = UniqueNamespace("cl");
  const std::string pattern = "logs-iosonar.*-" + ns + ",metrics-iosonar.*-" + ns;
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = dir / "store";
  o.batch_records = 500;
  o.forward_output = e.url();
  o.forward.es = e.options(ns);
  o.forward.es.max_attempts = 3;
  o.self_report_ms = 0;  // no record of its own in the counts
  auto c = Collector::Start(o);
  REQUIRE(c.ok());
  Collector& col = **c;
  const size_t pieces = 10, per = (lines.size() + pieces - 1) / pieces;
  int conns = 0;
  auto send = [&](size_t piece) {
    std::string chunk;
    for (size_t i = piece * per; i < std::min(lines.size(), (piece + 1) * per); ++i) chunk += lines[i] + "\n";
    int fd = ConnectLoopback(col.port());
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, chunk));
    close(fd);
    ++conns;
  };
  for (size_t k = 0; k < 3; ++k) send(k);
  REQUIRE(col.Drain(conns, 120000).ok());
  REQUIRE(WaitUntil([&] { return col.stats().forwarded >= col.stats().stored; }, 120000));
  // The data streams exist now: the node (not the one the collector talks to)
  // holding most of their primaries is lost while the next pieces go out.
  const std::string victim = NodeWithMostPrimaries(e, pattern, {"n2", "n3"});
  SearchEngine& lost = *nodes[victim == "n2" ? 1 : 2];
  stage("3 of 10 pieces forwarded");
  send(3);
  lost.Kill();
  stage(("killed " + victim).c_str());
  for (size_t k = 4; k < 7; ++k) send(k);
  REQUIRE(col.Drain(conns, 180000).ok());
  stage("6 more pieces stored");
  lost.Start();  // the same data directory and ports; waits until the cluster counts three nodes again
  stage("restarted, three nodes again");
  for (size_t k = 7; k < pieces; ++k) send(k);
  REQUIRE(col.Drain(conns, 180000).ok());
  // What could not be forwarded while shards moved waits in the forward spool and goes out (the collector backs off up to 30 s).
  CHECK(WaitUntil([&] { return col.stats().forward_spooled == 0; }, 180000));
  stage("forward spool empty");
  REQUIRE(col.Stop().ok());
  const auto st = col.stats();
  INFO("stored " << st.stored << " forwarded " << st.forwarded << " errors " << st.forward_errors << " lost node " << victim);
  CHECK(st.stored + st.duplicates == lines.size());
  CHECK(st.forward_errors == 0);
  CHECK(st.forwarded >= st.stored);  // a batch cut off by the kill is resent: the engine answers 409 for what it has
  // The restarted node's replicas recover: green again, three nodes.
  std::string health;
  CHECK(WaitUntil([&] {
    health = e.Admin("GET", "/_cluster/health/" + pattern + "?wait_for_status=green&timeout=20s").body;
    return health.find("\"status\":\"green\"") != std::string::npos;
  }, 240000));
  INFO(health);
  CHECK(health.find("\"number_of_nodes\":3") != std::string::npos);
  CHECK(CountIn(e, pattern) == st.stored);  // each record once: none lost, none twice
  stage("green, counted");

  // The analyses over the cluster give the collector's SQLite store's answer.
  const auto env = e.Env(ns);
  for (const char* job : {"1000", "1003"}) {
    auto a = Run({IosonarBin(), "job-summary", job, "--format", "json", "--store", dir / "store"}, env);
    auto b = Run({IosonarBin(), "job-summary", job, "--format", "json", "--store", e.url()}, env);
    INFO(job << "\nSQLite: " << a.err << "\ncluster: " << b.err);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    CHECK(a.out.size() > 50);
    CHECK(a.out == b.out);
  }
}
