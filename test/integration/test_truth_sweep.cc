// Screening (`iosonar screen`) and server attribution (`iosonar anomaly`
// server_outliers) on scenarios no other test uses and nothing was tuned to:
// seeds 101, 257 and 911 and cluster sizes the other tests do not simulate,
// each checked against the simulator's --truth (issue 32's "done when").
//  - screening: a saturated slow OST that recovers, a one-rank job on an
//    OST of its own (lightly loaded, healthy), and a forwarding node slowed
//    while the OST is too (overlapping faults), on clusters of 3 to 16 OSTs
//    (3: a slow OST with two peers) with and without --peak: the
//    occurrences are exactly the truth's faults (no false alarm, no miss),
//    a slow OST's evidence shows its OSS's ost_io requests waiting longer;
//  - attribution: runs of one application, a forwarding node slow during
//    one run and an OST during another, on 6 to 40 nodes (2 to 10
//    forwarding nodes): no job names a server its truth does not, and every
//    anomalous job whose truth names slow servers names them all.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test/testutil/sim_truth.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

constexpr int64_t kStart = 1795305600000000000;  // 2026-11-22T00:00:00Z, the simulator's start

rapidjson::Document Json(const std::string& text) { return JsonObject(text); }

int64_t IsoSeconds(const std::string& iso) {  // 2026-11-22THH:MM:SS.000Z -> seconds after 00:00
  REQUIRE(iso.size() >= 19);
  return std::stoi(iso.substr(11, 2)) * 3600 + std::stoi(iso.substr(14, 2)) * 60 + std::stoi(iso.substr(17, 2));
}

// The layouts of a dry run: OST index of each file's first stripe, per job.
std::map<std::string, std::vector<int>> Layouts(const std::vector<std::string>& common, const std::string& dir) {
  auto dry = std::vector<std::string>{IosonarBin(), "simulate", "--output", "/dev/null", "--duration", "2", "--maps",
                                      dir + "/maps.json"};
  dry.insert(dry.end(), common.begin(), common.end());
  REQUIRE(Run(dry).exit_code == 0);
  auto maps = Json(ReadFile(dir + "/maps.json"));
  std::map<std::string, std::vector<int>> out;
  for (const auto& L : maps["layouts"].GetArray()) out[L["job_id"].GetString()].push_back(L["osts"][0].GetInt());
  return out;
}

}  // namespace

TEST_CASE("truth sweep: screening finds exactly the truth's slow servers on held-out seeds and sizes",
          "[screen][simulate][truth]") {
  TempDir dir;
  struct Size {
    int ranks, osts, fwd;
  };
  // 3 OSTs: the slow one has two peers; 2 forwarding nodes: the slow one has one.
  for (const Size sz : {Size{12, 3, 2}, Size{20, 5, 4}, Size{64, 16, 8}})
    for (int seed : {101, 257, 911}) {
      INFO(sz.ranks << " ranks, " << sz.osts << " OSTs, " << sz.fwd << " forwarding nodes, seed " << seed);
      // Job 500: file per process, one stripe, bandwidth-bound all along.
      // Job 501: one rank at 32 MiB/s on the compute node after them.
      const std::vector<std::string> common = {
          "--nodes", std::to_string(sz.ranks + 1), "--fwd", std::to_string(sz.fwd), "--osts", std::to_string(sz.osts),
          "--seed", std::to_string(seed), "--job",
          "id=500,mode=N-N,first=0,nodes=" + std::to_string(sz.ranks) + ",stripes=1,start=0,duration=7200,period=1,phase=8192G",
          "--job", "id=501,mode=1-1,first=" + std::to_string(sz.ranks) + ",nodes=1,stripes=1,start=0,duration=7200,bytes=32M,period=1,io=1"};
      auto layouts = Layouts(common, dir.path());
      std::map<int, int> files_on;
      for (int o : layouts["500"]) files_on[o]++;
      int slow = -1;  // the OST with most of job 500's files: saturated
      for (auto [o, n] : files_on)
        if (slow < 0 || n > files_on[slow]) slow = o;
      REQUIRE(files_on[slow] >= 2);
      // The OST slow 00:15-01:25 (then it recovers); forwarding node 0 slow
      // 00:40-01:50 (overlapping the OST's fault for 45 minutes).
      const std::string store = dir / ("s" + std::to_string(sz.osts) + "_" + std::to_string(seed));
      auto args = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--duration", "7200", "--no-trace",
                                           "--slow-ost", std::to_string(slow), "--slow-ost-from", "900", "--slow-ost-to",
                                           "5100", "--slow-fwd", "0", "--slow-fwd-from", "2400", "--slow-fwd-to", "6600",
                                           "--truth", dir / "truth.json"};
      args.insert(args.end(), common.begin(), common.end());
      auto sim = Run(args);
      INFO(sim.err);
      REQUIRE(sim.exit_code == 0);
      auto truth = Json(ReadFile(dir / "truth.json"));
      struct Fault {
        std::string kind, name;
        int64_t from_s, to_s;
      };
      std::vector<Fault> faults;
      for (const auto& f : truth["faults"].GetArray())
        faults.push_back({f["kind"].GetString(), f["name"].GetString(), (f["from_ns"].GetInt64() - kStart) / 1000000000,
                          (f["to_ns"].GetInt64() - kStart) / 1000000000});
      REQUIRE(faults.size() == 2);
      for (bool with_peak : {false, true}) {
        INFO("--peak " << with_peak);
        std::vector<std::string> a = ScreenArgs(store, {"--format", "json"});
        if (with_peak) {  // a nominal peak of 6 ranks' worth per OST and 8 per forwarding node
          WriteFile(dir / "peaks.txt", PeaksText(sz.osts, "6442450944", sz.fwd, "8589934592"));
          a.insert(a.end(), {"--peak", dir / "peaks.txt"});
        }
        auto r = Run(a);
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        auto d = Json(r.out);
        const auto& occ = d["occurrences"];
        std::set<std::string> found;
        for (const auto& o : occ.GetArray()) {
          const std::string name = o["name"].GetString(), kind = o["kind"].GetString();
          INFO("occurrence " << kind << " " << name << " " << o["start"].GetString() << " .. " << o["end"].GetString());
          const Fault* match = nullptr;
          for (const auto& f : faults)
            if (f.name == name && f.kind == kind) match = &f;
          REQUIRE(match);  // no false alarm
          found.insert(name);
          CHECK(std::abs(IsoSeconds(o["start"].GetString()) - match->from_s) <= 120);
          CHECK(std::abs(IsoSeconds(o["end"].GetString()) - match->to_s) <= 120);
          CHECK(std::string(o["rule"].GetString()).find("demand") != std::string::npos);
          CHECK(o["evidence"]["cost_ratio"].GetDouble() >= 2);
          CHECK_FALSE(o["open"].GetBool());  // both recovered before 02:00
          // Evidence: the OSS's ost_io request wait against the other OSSes'
          // (4 OSTs an OSS: with 5 or more OSTs there are peers).
          const auto& e = o["evidence"];
          if (kind == "ost" && sz.osts > 4) {
            REQUIRE(e.HasMember("ost_io_wait_ms"));
            CHECK(e["ost_io_wait_ms"].GetDouble() > e["peer_ost_io_wait_ms"].GetDouble());
            CHECK(std::string(e["oss"].GetString()).rfind("oss", 0) == 0);
          } else {
            CHECK_FALSE(e.HasMember("ost_io_wait_ms"));
          }
        }
        for (const auto& f : faults) {
          INFO("fault " << f.kind << " " << f.name);
          CHECK(found.count(f.name) == 1);  // no miss
        }
        CHECK(occ.Size() == faults.size());  // one occurrence each
      }
    }
}

TEST_CASE("truth sweep: attribution names exactly the truth's slow servers on held-out seeds and sizes",
          "[anomaly][simulate][truth]") {
  TempDir dir;
  struct Size {
    int nodes, fwd, osts, app_nodes;
  };
  // 6 app nodes behind 2 forwarding nodes (one peer each) on 4 OSTs; 11 behind 3 of 6 on 6; 40 behind 10 on 12.
  for (const Size sz : {Size{12, 4, 4, 6}, Size{24, 6, 6, 11}, Size{40, 10, 12, 40}})
    for (int seed : {101, 257, 911}) {
      INFO(sz.app_nodes << " app nodes, " << sz.fwd << " forwarding nodes, " << sz.osts << " OSTs, seed " << seed);
      std::vector<std::string> common = {"--nodes", std::to_string(sz.nodes), "--fwd", std::to_string(sz.fwd), "--osts",
                                         std::to_string(sz.osts), "--seed", std::to_string(seed),
                                         "--apps", dir / "apps.tsv"};
      for (int k = 0; k < 8; ++k) {
        common.push_back("--job");
        common.push_back("id=" + std::to_string(5001 + k) + ",mode=N-N,first=0,nodes=" + std::to_string(sz.app_nodes) +
                         ",stripes=1,start=" + std::to_string(k * 60) + ",duration=50,period=5,phase=2G,cmd=./sweep");
      }
      auto layouts = Layouts(common, dir.path());
      std::map<int, int> files_on;
      for (int o : layouts["5007"]) files_on[o]++;
      int slow_ost = -1;
      for (auto [o, n] : files_on)
        if (slow_ost < 0 || n > files_on[slow_ost]) slow_ost = o;
      // The last forwarding node the application uses slow during run 5005,
      // the OST with most of its files during run 5007.
      const int last_fwd = (sz.app_nodes - 1) * sz.fwd / sz.nodes;  // sim::FwdOf: contiguous blocks of nodes
      const std::string store = dir / ("a" + std::to_string(sz.app_nodes) + "_" + std::to_string(seed));
      auto args = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--duration", "480", "--truth",
                                           dir / "truth.json", "--maps", dir / "maps.json", "--slow-fwd", std::to_string(last_fwd),
                                           "--slow-fwd-from", "240", "--slow-fwd-to", "300", "--slow-ost",
                                           std::to_string(slow_ost), "--slow-ost-from", "360", "--slow-ost-to", "420"};
      args.insert(args.end(), common.begin(), common.end());
      auto r = Run(args);
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      auto truth = Json(ReadFile(dir / "truth.json"));
      auto slow_of = SlowServersOf(truth);
      REQUIRE(slow_of["5005"].size() == 1);
      REQUIRE(slow_of["5007"].size() == 1);
      int anomalous_with_truth = 0;
      for (int k = 4; k <= 8; ++k) {
        const std::string job = std::to_string(5000 + k);
        INFO("job " << job);
        auto a = Run(AnomalyArgs(job, store, dir.path()));
        INFO(a.out << a.err);
        REQUIRE(a.exit_code == 0);
        auto d = Json(a.out);
        std::set<std::string> named;
        for (const auto& o : d["server_outliers"].GetArray()) named.insert(o["name"].GetString());
        const auto& want = slow_of[job];
        for (const auto& n : named) CHECK(want.count(n) == 1);  // no false alarm
        const bool anomalous = std::string(d["verdict"].GetString()) == "anomalous";
        if (anomalous && !want.empty()) {
          anomalous_with_truth++;
          CHECK(named == want);  // no miss
        }
        if (want.empty()) CHECK_FALSE(anomalous);
      }
      CHECK(anomalous_with_truth == 2);  // the runs through the slow servers are slower than their history
    }
}
