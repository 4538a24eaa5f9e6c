// the check: a 1,024-node job striped over a slow OST, simulated, and
// `iosonar bad-ost` on the simulator's per-file performance names that OST.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <string>

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
