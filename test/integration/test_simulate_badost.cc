// the check: a 1,024-node job striped over a slow OST, simulated, and
// `iosonar bad-ost` on the simulator's per-file performance names that OST.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "test/testutil/testutil.h"

using namespace iosonar::test;

TEST_CASE("simulate + bad-ost: a 1,024-node job over a slow OST, bad-ost names that OST", "[simulate][badost]") {
  TempDir dir;
  const std::string perf = dir / "perf.csv";
  for (int slow : {13, 40}) {
    INFO("slow OST " << slow);
    auto sim = Run({IosonarBin(), "simulate", "--output", "/dev/null", "--nodes", "1024", "--fwd", "16", "--osts", "64",
                    "--duration", "20", "--seed", std::to_string(slow), "--job",
                    "id=7001,mode=N-N,first=0,nodes=1024,ppn=1,stripes=4,start=0,duration=20,period=5,io=2,bytes=64M,req=1M",
                    "--slow-ost", std::to_string(slow), "--file-perf", perf});
    REQUIRE(sim.exit_code == 0);
    CHECK(SplitLines(ReadFile(perf)).size() == 1025);  // header + one row per rank's file

    // Default thresholds (p 0.05): the slow OST is the most negatively correlated.
    auto all = Run({IosonarBin(), "bad-ost", perf, "-c", "0", "--format", "json"});
    REQUIRE(all.exit_code == 0);
    rapidjson::Document d;
    d.Parse(all.out.c_str());
    REQUIRE(d.IsObject());
    CHECK(d["files"].GetInt() == 1024);
    const auto& res = d["results"];
    REQUIRE(res.IsArray());
    REQUIRE(res.Size() >= 1);
    int most = -1;
    double lowest = 2;
    for (const auto& r : res.GetArray())
      if (r["coefficient"].GetDouble() < lowest) {
        lowest = r["coefficient"].GetDouble();
        most = r["ost"].GetInt();
      }
    CHECK(most == slow);
    CHECK(lowest < -0.9);

    // Contiguous stripes make the slow OST's neighbours correlate too (their
    // files share it); a strict threshold leaves exactly the slow one.
    auto strict = Run({IosonarBin(), "bad-ost", perf, "-c", "0.8", "-p", "1e-5", "--format", "json"});
    REQUIRE(strict.exit_code == 0);
    rapidjson::Document s;
    s.Parse(strict.out.c_str());
    REQUIRE(s.IsObject());
    REQUIRE(s["results"].Size() == 1);
    CHECK(s["results"][0]["ost"].GetInt() == slow);

    // The result stream: one record per OST tested; the same analysis resent
    // carries the same (event.stream, event.seq), other thresholds other ids.
    std::string streams[3];
    int k = 0;
    for (const char* c : {"0.8", "0.8", "0.5"}) {
      const std::string out = dir / ("out" + std::to_string(slow) + "-" + std::to_string(k) + ".jsonl");
      auto r = Run({IosonarBin(), "bad-ost", perf, "-c", c, "-p", "1e-5", "--output", out, "--job-id", "7001"});
      REQUIRE(r.exit_code == 0);
      const auto lines = SplitLines(ReadFile(out));
      REQUIRE(lines.size() >= 64);  // every OST some file is striped over
      int64_t seq = 0;
      for (const auto& l : lines) {
        rapidjson::Document rec;
        rec.Parse(l.c_str());
        REQUIRE(rec.IsObject());
        CHECK(std::string(rec["event.dataset"].GetString()) == "iosonar.result.bad_ost");
        CHECK(rec["event.seq"].GetInt64() == seq++);
        if (seq == 1) streams[k] = std::to_string(rec["event.stream"].GetInt64());
        CHECK(std::to_string(rec["event.stream"].GetInt64()) == streams[k]);
      }
      ++k;
    }
    CHECK(streams[0] == streams[1]);
    CHECK(streams[0] != streams[2]);
  }
}

// `bad-ost --job --store`: the per-file table built from the job's trace
// records and `lfs getstripe` output equals the simulator's own per-file
// performance (its ground truth: bytes and time in the calls of each file),
// and every OST's Pearson r and p equal scipy.stats.pearsonr on that table
// (test/oracles/badost_table.py, written from TOKIO's definition).
TEST_CASE("bad-ost --job --store: the table from traces and layouts, r and p as scipy's", "[simulate][badost][oracle]") {
  if (Run({"/usr/bin/python3", "-c", "import scipy.stats"}).exit_code != 0)
    FAIL("/usr/bin/python3 with scipy is not installed (apt-get install python3-scipy)");
  TempDir dir;
  auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "64", "--fwd", "4", "--osts", "16",
                  "--duration", "20", "--seed", "5", "--job",
                  "id=7002,mode=N-N,first=0,nodes=64,ppn=1,stripes=2,start=0,duration=20,period=5,io=2,bytes=16M,req=1M",
                  "--slow-ost", "5", "--getstripe", dir / "getstripe.txt", "--file-perf", dir / "truth.csv"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  auto r = Run({IosonarBin(), "bad-ost", "--job", "7002", "--store", dir / "store", "--getstripe", dir / "getstripe.txt",
                "--table", dir / "table.csv", "-p", "1", "-c", "0", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The table against the simulator's truth, file by file.
  auto rows = [](const std::string& text) {
    std::map<std::string, std::vector<std::string>> m;
    for (const auto& l : SplitLines(text)) {
      if (l.rfind("file,", 0) == 0) continue;
      std::vector<std::string> f;
      size_t a = 0;
      for (size_t b; (b = l.find(',', a)) != std::string::npos; a = b + 1) f.push_back(l.substr(a, b - a));
      f.push_back(l.substr(a));
      m[f[0]] = f;
    }
    return m;
  };
  const auto truth = rows(ReadFile(dir / "truth.csv")), got = rows(ReadFile(dir / "table.csv"));
  REQUIRE(truth.size() == 64);
  REQUIRE(got.size() == truth.size());
  for (const auto& [file, t] : truth) {
    INFO(file);
    REQUIRE(got.count(file));
    const auto& g = got.at(file);
    CHECK(std::stod(g[1]) == std::stod(t[1]));                             // bytes
    CHECK(std::stod(g[2]) == Approx(std::stod(t[2])).epsilon(1e-6));       // seconds (%.9g there)
    CHECK(g[3] == t[3]);                                                    // OSTs
  }
  // r and p against scipy on the table.
  auto o = Run({"/usr/bin/python3", SourceDir() + "/test/oracles/badost_table.py", dir / "table.csv"});
  INFO(o.err);
  REQUIRE(o.exit_code == 0);
  rapidjson::Document want, d;
  want.Parse(o.out.c_str());
  d.Parse(r.out.c_str());
  REQUIRE(want.IsObject());
  REQUIRE(d.IsObject());
  CHECK(d["files"].GetInt() == 64);
  REQUIRE(d["results"].Size() == want.MemberCount());
  int most = -1;
  double lowest = 2;
  for (const auto& e : d["results"].GetArray()) {
    const std::string ost = std::to_string(e["ost"].GetInt());
    INFO("OST " << ost);
    REQUIRE(want.HasMember(ost.c_str()));
    CHECK(e["coefficient"].GetDouble() == Approx(want[ost.c_str()]["r"].GetDouble()).epsilon(1e-9).margin(1e-12));
    CHECK(e["p-value"].GetDouble() == Approx(want[ost.c_str()]["p"].GetDouble()).epsilon(1e-6).margin(1e-300));
    if (e["coefficient"].GetDouble() < lowest) lowest = e["coefficient"].GetDouble(), most = e["ost"].GetInt();
  }
  CHECK(most == 5);  // the slow OST
  // Usage: --job without --store, or without layouts.
  CHECK(Run({IosonarBin(), "bad-ost", "--job", "7002"}).exit_code == 2);
  CHECK(Run({IosonarBin(), "bad-ost", "--job", "7002", "--store", dir / "store"}).exit_code == 2);
}
