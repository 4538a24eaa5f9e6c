// LASSi metrics: hand-checked cases from the paper's definitions
// and an independent pandas computation on the same records.
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/records/record.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/lassi/baseline.h"
#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/lassi_store.h"
#include "analysis-jobs/lassi/results.h"
#include "test/testutil/oracle.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::lassi;

namespace {
constexpr int64_t kS = 1000000000;

OpSums Oss(std::optional<double> rkb, std::optional<double> rops, std::optional<double> wkb,
           std::optional<double> wops, std::optional<double> other) {
  OpSums s;
  s.oss = {rkb, rops, wkb, wops, other};
  return s;
}
}  // namespace

TEST_CASE("LASSi risk term: positive, zero and negative contributions", "[lassi]") {
  // x = 10, avg = 2, alpha = 2: (10 - 4)/4 = 1.5
  CHECK(RiskTerm(10, 2, 2) == Approx(1.5));
  // exactly alpha * avg: 0
  CHECK(RiskTerm(4, 2, 2) == 0);
  // below: negative, ignored
  CHECK(RiskTerm(1, 2, 2) == 0);
  // nothing ever moved (avg 0) or unknown: no contribution, never inf/nan
  CHECK(RiskTerm(5, 0, 2) == 0);
  CHECK(RiskTerm(std::nullopt, 2, 2) == 0);
  CHECK(RiskTerm(5, std::nullopt, 2) == 0);
  // alpha 1: (3 - 1)/1 = 2
  CHECK(RiskTerm(3, 1, 1) == Approx(2));
}

TEST_CASE("LASSi risk_oss sums only the positive terms (eq. 3)", "[lassi]") {
  OpSums avg = Oss(100, 10, 100, 10, 5);
  OpSums x = Oss(600, 10, 100, 40, 0);
  // read_kb (600-200)/200 = 2; read_ops (10-20)/20 < 0; write_kb < 0; write_ops (40-20)/20 = 1; other < 0
  CHECK(RiskOss(x, avg, 2) == Approx(3.0));
  CHECK(RiskMds(x, avg, 2) == 0);
  OpSums m, ma;
  m.mds[0] = 90;    // open: (90-20)/20 = 3.5
  ma.mds[0] = 10;
  m.mds[15] = 4;    // samedir_rename: (4-4)/4 = 0
  ma.mds[15] = 2;
  m.mds[4] = 1;     // mkdir: avg unknown -> 0
  CHECK(RiskMds(m, ma, 2) == Approx(3.5));
}

TEST_CASE("LASSi ops quality (eqs. 5-6): undefined where nothing moved", "[lassi]") {
  CHECK(*OpsQuality(1, 1024) == Approx(1.0));    // one 1 MiB op: optimal
  CHECK(*OpsQuality(256, 1024) == Approx(256));  // 4 KiB requests
  CHECK_FALSE(OpsQuality(0, 0).has_value());
  CHECK_FALSE(OpsQuality(5, 0).has_value());
  CHECK_FALSE(OpsQuality(std::nullopt, 100).has_value());  // LMT: no op counts
}

TEST_CASE("LASSi mean and c_v (eq. 1), Pearson with p-value", "[lassi]") {
  std::vector<double> xs = {2, 4, 4, 4, 5, 5, 7, 9};
  auto m = ComputeMeanCv(xs);
  CHECK(m.mean == Approx(5));
  // sample sd = sqrt(32/7)
  CHECK(*m.cv == Approx(std::sqrt(32.0 / 7) / 5));
  std::vector<double> zero = {0, 0, 0};
  CHECK_FALSE(ComputeMeanCv(zero).cv.has_value());
  // Perfect correlation; and a hand-checked case: x=1..5, y=2,4,5,4,5 -> r = 0.7745966692, p = 0.1240 (t = 2.121, df = 3)
  std::vector<double> x = {1, 2, 3, 4, 5}, y = {2, 4, 5, 4, 5};
  auto p = ComputePearson(x, y);
  CHECK(*p.r == Approx(0.7745966692414834));
  CHECK(*p.p == Approx(0.12402706265755456).epsilon(1e-9));
  std::vector<double> c = {3, 3, 3, 3, 3};
  CHECK_FALSE(ComputePearson(x, c).r.has_value());
  // I_x(a, b) at known points: I_0.5(2, 2) = 0.5, I_0.3(1, 1) = 0.3
  CHECK(RegularizedIncompleteBeta(2, 2, 0.5) == Approx(0.5));
  CHECK(RegularizedIncompleteBeta(1, 1, 0.3) == Approx(0.3));
}

TEST_CASE("LASSi accumulator: windows, fs averages, resets and empty windows", "[lassi]") {
  Options o;
  o.window_ns = 60 * kS;
  o.from_ns = o.history_from_ns = 0;
  o.to_ns = 240 * kS;
  Accumulator acc(o);
  // Two OSTs of fs "a": window 0 sums to read_kb 30; window 1 to 10; window 2: 200; window 3 nothing moved.
  acc.AddServer("a", 1 * kS, Oss(10, std::nullopt, 0, std::nullopt, 1));
  acc.AddServer("a", 5 * kS, Oss(20, std::nullopt, 0, std::nullopt, 1));
  acc.AddServer("a", 61 * kS, Oss(10, std::nullopt, 0, std::nullopt, 1));
  acc.AddServer("a", 130 * kS, Oss(200, std::nullopt, 0, std::nullopt, 1));
  acc.AddServer("a", 190 * kS, Oss(0, std::nullopt, 0, std::nullopt, 0));
  acc.CountReset();
  auto r = acc.Compute();
  REQUIRE(r.fs_windows.size() == 4);
  // avg read_kb = (30 + 10 + 200 + 0)/4 = 60; alpha*avg = 120; window 2: (200-120)/120
  CHECK(r.fs_windows[2].risk_oss == Approx(80.0 / 120 + 0 /* other: avg 1, (1-2)/2 < 0 */));
  // window 0: other = 2, avg other = 4/4 = 1 -> (2-2)/2 = 0; read_kb 30 < 120
  CHECK(r.fs_windows[0].risk_oss == 0);
  CHECK(r.fs_windows[3].risk_oss == 0);
  CHECK_FALSE(r.fs_windows[3].read_kb_ops.has_value());  // nothing moved, and no op counts
  CHECK(r.records_reset == 1);
  REQUIRE(r.fs_stats.size() == 1);
  CHECK(r.fs_stats[0].ops[0].op == "read_kb");
  CHECK(r.fs_stats[0].ops[0].stat.mean == Approx(60));
}

TEST_CASE("LASSi puts an end-stamped server record in the window of its interval", "[lassi]") {
  // Server records cover [@timestamp - lustre.elapsed_ns, @timestamp): the one
  // stamped exactly at a window's end belongs to that window, not the next.
  Options o;
  o.window_ns = 60 * kS;
  o.from_ns = o.history_from_ns = 0;
  o.to_ns = 180 * kS;
  auto feed = [&](Accumulator& acc, Store* store) {
    std::vector<std::string> lines = {
        // [0, 60): window 0
        R"({"@timestamp":"1970-01-01T00:01:00.000Z","event.dataset":"iosonar.oss","event.stream":1,"event.seq":1,"host.name":"o","lustre.fs":"a","lustre.target":"a-OST0000","lustre.elapsed_ns":60000000000,"oss.read_bytes":1024})",
        // no elapsed: the instant before 60 s, window 0
        R"({"@timestamp":"1970-01-01T00:01:00.000Z","event.dataset":"iosonar.oss","event.stream":1,"event.seq":2,"host.name":"o","lustre.fs":"a","lustre.target":"a-OST0001","oss.read_bytes":2048})",
        // [80, 100): window 1
        R"({"@timestamp":"1970-01-01T00:01:40.000Z","event.dataset":"iosonar.oss","event.stream":1,"event.seq":3,"host.name":"o","lustre.fs":"a","lustre.target":"a-OST0000","lustre.elapsed_ns":20000000000,"oss.read_bytes":4096})",
        // [170, 190): its middle, 180 s, is past `to`: left out
        R"({"@timestamp":"1970-01-01T00:03:10.000Z","event.dataset":"iosonar.oss","event.stream":1,"event.seq":4,"host.name":"o","lustre.fs":"a","lustre.target":"a-OST0000","lustre.elapsed_ns":20000000000,"oss.read_bytes":8192})",
        // [150, 170): window 2
        R"({"@timestamp":"1970-01-01T00:02:50.000Z","event.dataset":"iosonar.oss","event.stream":1,"event.seq":5,"host.name":"o","lustre.fs":"a","lustre.target":"a-OST0000","lustre.elapsed_ns":20000000000,"oss.read_bytes":16384})",
        // [170, 186): middle 178 s, window 2, though stamped after `to` (the store scan reaches past it)
        R"({"@timestamp":"1970-01-01T00:03:06.000Z","event.dataset":"iosonar.oss","event.stream":1,"event.seq":6,"host.name":"o","lustre.fs":"a","lustre.target":"a-OST0001","lustre.elapsed_ns":16000000000,"oss.read_bytes":32768})",
    };
    std::vector<std::string> bufs;
    std::vector<ParsedRecord> recs(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      bufs.push_back(lines[i]);
      bufs.back().push_back('\0');
    }
    std::vector<const ParsedRecord*> ptrs;
    for (size_t i = 0; i < lines.size(); ++i) {
      INFO(lines[i]);
      REQUIRE(ParseRecordInsitu(bufs[i].data(), lines[i].size(), &recs[i]).ok());
      if (store) ptrs.push_back(&recs[i]);
      else AddParsedRecord(recs[i], acc, nullptr);
    }
    if (store) {
      AppendStats as;
      REQUIRE(store->Append(ptrs, &as).ok());
      REQUIRE(FeedFromStore(*store, acc, nullptr).ok());
    }
  };
  auto check = [](const LassiResult& r) {
    REQUIRE(r.fs_windows.size() == 3);
    CHECK(r.fs_windows[0].start_ns == 0);
    CHECK(r.fs_stats[0].ops[0].op == "read_kb");
    // read_kb per window: 1 + 2, 4, 16 + 32
    CHECK(r.fs_stats[0].ops[0].stat.mean == Approx((3.0 + 4.0 + 48.0) / 3));
  };
  Accumulator parsed(o);
  feed(parsed, nullptr);
  check(parsed.Compute());
  test::TempDir dir;
  auto st = OpenSqliteStore(dir / "store");
  REQUIRE(st.ok());
  Accumulator scanned(o);
  feed(scanned, st.value().get());
  check(scanned.Compute());
}

// ---- the pandas oracle ---------------------------------------------------------
namespace {
std::string Iso(int64_t ns) { return FormatIsoMillis(ns); }

bool HavePandas() {
  auto rr = test::Run({"/usr/bin/python3", "-c", "import pandas, numpy"});
  return rr.exit_code == 0;
}

void Near(const rapidjson::Value& v, std::optional<double> got, const std::string& what) {
  INFO(what);
  if (v.IsNull()) {
    CHECK_FALSE(got.has_value());
  } else {
    REQUIRE(got.has_value());
    CHECK(*got == Approx(v.GetDouble()).epsilon(1e-9).margin(1e-12));
  }
}
}  // namespace

TEST_CASE("LASSi risk and ops equal an independent pandas computation", "[lassi][oracle]") {
  if (!HavePandas()) {
    FAIL("/usr/bin/python3 with pandas is not installed (apt-get install python3-pandas)");
  }
  test::TempDir dir;
  std::mt19937_64 rng(7);
  const int64_t t0 = 1800000000LL * kS;  // 2027-01-15
  std::string lines, apps = "101\t./wrf.exe -n 64\n102\t./wrf.exe -n 64\n103\tpython tracer.py\n";
  int64_t seq = 0;
  auto rnd = [&](int hi) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(hi)); };
  // 2 file systems x 3 OSTs + 1 MDT, every 30 s for 2 hours (history) ; jobstats for 4 jobs.
  for (int64_t t = t0; t < t0 + 7200 * kS; t += 30 * kS) {
    for (const char* fs : {"fsa", "fsb"}) {
      for (int ost = 0; ost < 3; ++ost) {
        std::string l = "{\"@timestamp\":\"" + Iso(t) + "\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":1,\"event.seq\":" +
                        std::to_string(++seq) + ",\"host.name\":\"oss\",\"lustre.fs\":\"" + fs +
                        "\",\"lustre.target\":\"" + fs + "-OST000" + std::to_string(ost) + "\"";
        // OSS records carry their interval (end-stamped, 30 s); the others have
        // none (counted just before @timestamp): both attributions are checked.
        l += ",\"lustre.elapsed_ns\":30000000000";
        if (rnd(40) == 0) {
          l += ",\"lustre.reset\":true}";
        } else {
          // bursts: occasionally 50x
          const int64_t burst = rnd(20) == 0 ? 50 : 1;
          const int64_t rb = rnd(3) == 0 ? 0 : rnd(1 << 20) * burst;
          l += ",\"oss.read_bytes\":" + std::to_string(rb) + ",\"oss.read_ops\":" + std::to_string(rb ? rnd(300) + 1 : 0) +
               ",\"oss.write_bytes\":" + std::to_string(rnd(1 << 22) * burst) +
               ",\"oss.write_ops\":" + std::to_string(rnd(100)) + ",\"oss.other_ops\":" + std::to_string(rnd(50)) + "}";
        }
        lines += l + "\n";
      }
      std::string m = "{\"@timestamp\":\"" + Iso(t) + "\",\"event.dataset\":\"iosonar.mds\",\"event.stream\":2,\"event.seq\":" +
                      std::to_string(++seq) + ",\"host.name\":\"mds\",\"lustre.target\":\"" + fs + "-MDT0000\"";
      const int64_t burst = rnd(15) == 0 ? 30 : 1;
      m += ",\"mds.open\":" + std::to_string(rnd(1000) * burst) + ",\"mds.close\":" + std::to_string(rnd(1000)) +
           ",\"mds.getattr\":" + std::to_string(rnd(500)) + ",\"mds.mkdir\":" + std::to_string(rnd(3)) +
           ",\"mds.samedir_rename\":" + std::to_string(rnd(2)) + "}";
      lines += m + "\n";
      for (const char* job : {"101", "102", "103", "104"}) {
        if (rnd(3) == 0) continue;
        std::string j = "{\"@timestamp\":\"" + Iso(t) + "\",\"event.dataset\":\"iosonar.jobstats\",\"event.stream\":3,\"event.seq\":" +
                        std::to_string(++seq) + ",\"host.name\":\"oss\",\"lustre.fs\":\"" + fs +
                        "\",\"lustre.target\":\"" + fs + "-OST0001\",\"job.id\":\"" + job + "\"";
        const int64_t wb = rnd(5) == 0 ? 0 : rnd(1 << 20) * (std::string(job) == "103" ? 40 : 1);
        j += ",\"oss.write_bytes\":" + std::to_string(wb) + ",\"oss.write_ops\":" + std::to_string(wb ? rnd(200) + 1 : 0);
        if (rnd(2)) j += ",\"mds.open\":" + std::to_string(rnd(100)) + ",\"mds.unlink\":" + std::to_string(rnd(10));
        lines += j + "}\n";
      }
    }
  }
  test::WriteFile(dir / "records.jsonl", lines);
  test::WriteFile(dir / "apps.tsv", apps);
  std::map<std::string, std::string> app_map = {{"101", "./wrf.exe -n 64"}, {"102", "./wrf.exe -n 64"},
                                                {"103", "python tracer.py"}};

  Options o;
  o.alpha = 2;
  o.window_ns = 600 * kS;
  o.history_from_ns = t0;
  o.from_ns = t0 + 3600 * kS;
  o.to_ns = t0 + 7200 * kS;
  Accumulator acc(o);
  ParsedRecord rec;
  size_t parsed = 0;
  for (auto& l : test::SplitLines(lines)) {
    std::string buf = l;
    buf.push_back('\0');
    Status st = ParseRecordInsitu(buf.data(), l.size(), &rec);
    REQUIRE(st.ok());
    AddParsedRecord(rec, acc, [&](std::string_view j) {
      auto it = app_map.find(std::string(j));
      return it == app_map.end() ? std::string() : it->second;
    });
    ++parsed;
  }
  auto res = acc.Compute();
  const rapidjson::Document d =
      test::RunOracle("lassi_oracle.py", {dir / "records.jsonl", dir / "apps.tsv", "2", "600", std::to_string(o.from_ns / kS),
                                          std::to_string(o.to_ns / kS), std::to_string(o.history_from_ns / kS)});
  const auto& fw = d["fs_windows"];
  REQUIRE(fw.Size() == res.fs_windows.size());
  REQUIRE(fw.Size() == 12);  // 2 fs x 6 windows of 10 min in the reported hour
  double some_risk = 0;
  for (rapidjson::SizeType i = 0; i < fw.Size(); ++i) {
    const auto& e = fw[i];
    const auto& g = res.fs_windows[i];
    CHECK(e["fs"].GetString() == g.fs);
    CHECK(e["start"].GetInt64() * kS == g.start_ns);
    Near(e["risk_oss"], g.risk_oss, "fs risk_oss " + g.fs);
    Near(e["risk_mds"], g.risk_mds, "fs risk_mds " + g.fs);
    Near(e["read_kb_ops"], g.read_kb_ops, "read_kb_ops");
    Near(e["write_kb_ops"], g.write_kb_ops, "write_kb_ops");
    some_risk += g.risk_oss + g.risk_mds;
  }
  CHECK(some_risk > 0);  // the bursts made some risk: the comparison is not all zeros
  const auto& aw = d["app_windows"];
  REQUIRE(aw.Size() == res.app_windows.size());
  REQUIRE(aw.Size() > 0);
  // Both sorted by (fs, app, start).
  double app_risk = 0;
  for (rapidjson::SizeType i = 0; i < aw.Size(); ++i) {
    const auto& e = aw[i];
    const auto& g = res.app_windows[i];
    CHECK(e["app"].GetString() == g.target);
    CHECK(e["start"].GetInt64() * kS == g.start_ns);
    Near(e["risk_oss"], g.risk_oss, "app risk_oss " + g.target);
    Near(e["risk_mds"], g.risk_mds, "app risk_mds " + g.target);
    Near(e["write_kb_ops"], g.write_kb_ops, "app write_kb_ops");
    app_risk += g.risk_oss;
  }
  CHECK(app_risk > 0);
  // Tables 1-2: mean and c_v.
  for (const auto& s : res.fs_stats) {
    const auto& es = d["fs_stats"][s.fs.c_str()];
    for (const auto& op : s.ops) {
      INFO(s.fs + " " + op.op);
      REQUIRE(es.HasMember(op.op.c_str()));
      CHECK(op.stat.mean == Approx(es[op.op.c_str()]["mean"].GetDouble()).epsilon(1e-12));
      Near(es[op.op.c_str()]["cv"], op.stat.cv, "cv");
    }
  }
}

TEST_CASE("LASSi per run: a benign task farm adds no risk, one heavy run is not averaged away", "[lassi][oracle]") {
  if (!HavePandas()) {
    FAIL("/usr/bin/python3 with pandas is not installed (apt-get install python3-pandas)");
  }
  // LASSi §3.3: metrics "per application per hour", statistics attributed "to
  // individual application launches": the unit is one run. Hourly windows
  // over a day on one file system. Ten runs of one command (./cfd -n 64,
  // jobs 1..10) every hour do 100 opens and write 1,000 KiB; job 10 does
  // 1,000 opens (10x) in hour 22. A task farm of 50 runs of ./task.sh (jobs
  // 101..150) does the same 100 opens and 1,000 KiB each in hours 20 and 21.
  const int64_t H = 3600 * kS, t0 = 1800000000LL * kS / H * H;
  std::string lines, apps;
  int64_t seq = 0;
  auto rec = [&](int64_t t, const std::string& job, int64_t opens, int64_t wbytes) {
    lines += "{\"@timestamp\":\"" + Iso(t) + "\",\"event.dataset\":\"iosonar.jobstats\",\"event.stream\":3,\"event.seq\":" +
             std::to_string(++seq) + ",\"host.name\":\"oss\",\"lustre.fs\":\"scratch\",\"lustre.target\":\"scratch-OST0000\"," +
             "\"job.id\":\"" + job + "\",\"mds.open\":" + std::to_string(opens) + ",\"oss.write_bytes\":" +
             std::to_string(wbytes) + ",\"oss.write_ops\":1}\n";  // one request a window
  };
  for (int j = 1; j <= 10; ++j) apps += std::to_string(j) + "\t./cfd -n 64\n";
  for (int j = 101; j <= 150; ++j) apps += std::to_string(j) + "\t./task.sh\n";
  for (int h = 0; h < 24; ++h) {
    for (int j = 1; j <= 10; ++j) rec(t0 + h * H + 1800 * kS, std::to_string(j), j == 10 && h == 22 ? 1000 : 100, 1024000);
    if (h == 20 || h == 21)
      for (int j = 101; j <= 150; ++j) rec(t0 + h * H + 1800 * kS, std::to_string(j), 100, 1024000);
  }
  test::TempDir dir;
  test::WriteFile(dir / "records.jsonl", lines);
  test::WriteFile(dir / "apps.tsv", apps);
  Options o;
  o.window_ns = H;
  o.history_from_ns = o.from_ns = t0;
  o.to_ns = t0 + 24 * H;
  Accumulator acc(o);
  ParsedRecord pr;
  for (auto& l : test::SplitLines(lines)) {
    std::string buf = l;
    buf.push_back('\0');
    REQUIRE(ParseRecordInsitu(buf.data(), l.size(), &pr).ok());
    AddParsedRecord(pr, acc, [](std::string_view j) {
      return std::string(std::stoi(std::string(j)) > 100 ? "./task.sh" : "./cfd -n 64");
    });
  }
  const LassiResult res = acc.Compute();
  // The paper's answer by hand: avg_fs(open) per run-hour over the 240 + 100
  // run-hours = (339 * 100 + 1000) / 340; the heavy run-hour's risk is
  // (1000 - 2a) / 2a; every other run-hour (100 <= 2a) is 0.
  const double a = (339.0 * 100 + 1000) / 340, heavy = (1000 - 2 * a) / (2 * a);
  REQUIRE(res.baseline.fs.size() == 1);
  CHECK(res.baseline.fs[0].app_hours == 340);
  CHECK(*res.baseline.fs[0].avg.mds[0] == Approx(a));
  for (const auto& w : res.fs_windows) {
    INFO("fs window at hour " << (w.start_ns - t0) / H);
    CHECK(w.risk_oss == 0);  // write_kb is the same in every run-hour: never above 2 avg
    CHECK(w.risk_mds == Approx((w.start_ns - t0) / H == 22 ? heavy : 0.0).margin(1e-12));
  }
  for (const auto& w : res.app_windows)
    if (w.target == "./task.sh") CHECK(w.risk_mds == 0);  // 50 benign runs: 50 times 0, not the risk of 5,000 opens
  size_t seen_heavy = 0;
  for (const auto& w : res.job_windows)
    if (w.target == "10" && w.start_ns == t0 + 22 * H) {
      CHECK(w.risk_mds == Approx(heavy));
      ++seen_heavy;
    }
  CHECK(seen_heavy == 1);
  // The application's profile: the average of its runs' values (one run of ten carries the risk).
  bool saw_cfd = false;
  for (const auto& t : res.apps)
    if (t.app == "./cfd -n 64") {
      saw_cfd = true;
      CHECK(t.per_run.runs == 10);
      CHECK(t.per_run.run_windows == 240);
      CHECK(t.per_run.risk_mds == Approx(heavy / 10));
      CHECK(t.per_run.meta_ops == Approx((239.0 * 100 + 1000) / 240));
      CHECK(t.per_run.write_kb == Approx(1000));
      CHECK(*t.per_run.write_kb_ops == Approx(1024.0 * 24 / 24000));  // a 1 MiB op per 1,000 KiB
      CHECK(t.risk_mds == Approx(heavy));
    }
  CHECK(saw_cfd);
  // And the same through the pandas oracle, window by window.
  const rapidjson::Document d = test::RunOracle(
      "lassi_oracle.py", {dir / "records.jsonl", dir / "apps.tsv", "2", "3600", std::to_string(o.from_ns / kS),
                          std::to_string(o.to_ns / kS), std::to_string(o.history_from_ns / kS)});
  const auto& fw = d["fs_windows"];
  REQUIRE(fw.Size() == res.fs_windows.size());
  REQUIRE(fw.Size() == 24);
  for (rapidjson::SizeType i = 0; i < fw.Size(); ++i) {
    CHECK(fw[i]["start"].GetInt64() * kS == res.fs_windows[i].start_ns);
    Near(fw[i]["risk_mds"], res.fs_windows[i].risk_mds, "fs risk_mds");
    Near(fw[i]["risk_oss"], res.fs_windows[i].risk_oss, "fs risk_oss");
  }
  const auto& aw = d["app_windows"];
  REQUIRE(aw.Size() == res.app_windows.size());
  for (rapidjson::SizeType i = 0; i < aw.Size(); ++i) {
    CHECK(aw[i]["app"].GetString() == res.app_windows[i].target);
    Near(aw[i]["risk_mds"], res.app_windows[i].risk_mds, "app risk_mds");
    Near(aw[i]["write_kb_ops"], res.app_windows[i].write_kb_ops, "app write_kb_ops");
  }
  const auto& jw = d["job_windows"];
  REQUIRE(jw.Size() == res.job_windows.size());
  std::map<std::pair<std::string, int64_t>, double> mine;
  for (const auto& w : res.job_windows) mine[{w.target, w.start_ns}] = w.risk_mds;
  for (rapidjson::SizeType i = 0; i < jw.Size(); ++i) {
    auto it = mine.find({jw[i]["job"].GetString(), jw[i]["start"].GetInt64() * kS});
    REQUIRE(it != mine.end());
    Near(jw[i]["risk_mds"], it->second, "job risk_mds");
  }
}

TEST_CASE("Pearson p-value equals scipy.stats.pearsonr", "[lassi][oracle]") {
  if (test::Run({"/usr/bin/python3", "-c", "import scipy.stats"}).exit_code != 0) {
    FAIL("/usr/bin/python3 with scipy is not installed (apt-get install python3-scipy)");
  }
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd;
  for (int n : {3, 5, 8, 30, 200}) {
    std::vector<double> x, y;
    for (int i = 0; i < n; ++i) {
      x.push_back(nd(rng));
      y.push_back(0.3 * x.back() + nd(rng));
    }
    std::string xs = "[", ys = "[";
    for (int i = 0; i < n; ++i) {
      char b[64];
      std::snprintf(b, sizeof b, "%.17g", x[i]);
      xs += std::string(i ? "," : "") + b;
      std::snprintf(b, sizeof b, "%.17g", y[i]);
      ys += std::string(i ? "," : "") + b;
    }
    auto rr = test::Run({"/usr/bin/python3", "-c",
                         "import scipy.stats,sys; r,p=scipy.stats.pearsonr(" + xs + "]," + ys +
                             "]); print(repr(float(r)), repr(float(p)))"});
    REQUIRE(rr.exit_code == 0);
    double er = 0, ep = 0;
    REQUIRE(std::sscanf(rr.out.c_str(), "%lf %lf", &er, &ep) == 2);
    auto p = ComputePearson(x, y);
    INFO("n=" << n);
    CHECK(*p.r == Approx(er).epsilon(1e-12));
    CHECK(*p.p == Approx(ep).epsilon(1e-9).margin(1e-15));
  }
}

TEST_CASE("LASSi accumulator: merging split feeds equals one feed", "[lassi]") {
  Options o;
  o.window_ns = 60 * kS;
  o.from_ns = o.history_from_ns = 0;
  o.to_ns = 600 * kS;
  Accumulator all(o), a(o), b(o);
  std::mt19937_64 rng(5);
  for (int64_t t = 0; t < 600 * kS; t += 5 * kS) {
    OpSums s = Oss(static_cast<double>(rng() % 1000), static_cast<double>(rng() % 10), static_cast<double>(rng() % 5000),
                   std::nullopt, 1);
    OpSums m;
    m.mds[0] = static_cast<double>(rng() % 100);
    const std::string job = std::to_string(rng() % 4);
    const std::string app = job == "3" ? "" : "app" + std::to_string(std::stoi(job) % 2);
    all.AddServer("fs", t, s);
    all.AddJob("fs", job, app, t, m);
    b.AddServer("fs", t, s);  // servers in one, jobs in the other, as FeedFromStoreParallel does
    a.AddJob("fs", job, app, t, m);
  }
  all.CountReset();
  b.CountReset();
  a.Merge(b);
  CHECK(ResultToJson(a.Compute(), false) == ResultToJson(all.Compute(), false));
}

TEST_CASE("LASSi risk records: a resend has the same stream, another result another", "[lassi][results]") {
  auto compute = [](double alpha, double read_kb) {
    Options o;
    o.alpha = alpha;
    o.window_ns = 60 * kS;
    o.from_ns = o.history_from_ns = 0;
    o.to_ns = 120 * kS;
    Accumulator acc(o);
    acc.AddServer("a", 1 * kS, Oss(read_kb, std::nullopt, 0, std::nullopt, 1));
    acc.AddServer("a", 61 * kS, Oss(10, std::nullopt, 0, std::nullopt, 1));
    return acc.Compute();
  };
  // (event.stream, event.seq) of each line, checking the lines parse as records.
  auto ids = [](const std::string& lines) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& l : test::SplitLines(lines)) {
      if (l.empty()) continue;
      std::string b = l + '\0';
      ParsedRecord rec;
      INFO(l);
      REQUIRE(ParseRecordInsitu(b.data(), l.size(), &rec).ok());
      rapidjson::Document d;
      d.Parse(l.c_str());
      out.emplace_back(d["event.stream"].GetInt64(), d["event.seq"].GetInt64());
    }
    return out;
  };
  const auto a = ids(RiskRecords(compute(2, 300), "h"));
  REQUIRE(a.size() == 2);
  CHECK(a[0].second == 1);
  CHECK(a[1].second == 2);
  CHECK(a[0].first == a[1].first);
  CHECK(a[0].first >= 0);
  CHECK(ids(RiskRecords(compute(2, 300), "h")) == a);         // recomputed or resent: the same ids
  CHECK(ids(RiskRecords(compute(3, 300), "h"))[0].first != a[0].first);  // other options
  CHECK(ids(RiskRecords(compute(2, 301), "h"))[0].first != a[0].first);  // other data
}

TEST_CASE("LASSi application-hours: a run's silent windows are zero, against avg_fs per application-hour", "[lassi]") {
  // Hourly windows 0..5. Job 1 (app A) has job_stats in windows 0 and 3 and
  // its run reaches into window 5; job 2 (app B) only in window 1.
  Options o;
  o.window_ns = 3600 * kS;
  o.from_ns = o.history_from_ns = 0;
  o.to_ns = 6 * 3600 * kS;
  Accumulator acc(o);
  OpSums w;
  w.oss[2] = 100;  // write_kb
  w.mds[0] = 10;   // open
  acc.AddJob("fs", "1", "A", 10 * kS, w);
  acc.AddJob("fs", "1", "A", 3 * 3600 * kS + 10 * kS, w);
  OpSums big;
  big.oss[2] = 1000;
  big.mds[0] = 100;
  acc.AddJob("fs", "2", "B", 3600 * kS + 10 * kS, big);
  acc.SetJobRun("1", 0, 5 * 3600 * kS + 1);
  auto r = acc.Compute();
  // App A: windows 0..5 (6 application-hours; 1, 2, 4, 5 are zeros); app B: window 1.
  size_t a = 0, b = 0;
  for (const auto& x : r.app_windows) (x.target == "A" ? a : b)++;
  CHECK(a == 6);
  CHECK(b == 1);
  // avg_fs per application-hour over the 7 application-hours, by hand:
  // write_kb (100 + 100 + 1000) / 7, open (10 + 10 + 100) / 7.
  REQUIRE(r.baseline.fs.size() == 1);
  CHECK(r.baseline.fallback);
  CHECK(r.baseline.fs[0].app_hours == 7);
  CHECK(*r.baseline.fs[0].avg.oss[2] == Approx(1200.0 / 7));
  CHECK(*r.baseline.fs[0].avg.mds[0] == Approx(120.0 / 7));
  CHECK_FALSE(r.baseline.fs[0].avg.oss[0].has_value());  // read_kb never carried: unknown, not 0
  // B's window against it (eq. 2): write_kb (1000 - 2a)/2a + open (100 - 2a')/2a'.
  const double aw = 2 * 1200.0 / 7, ao = 2 * 120.0 / 7;
  for (const auto& x : r.app_windows)
    if (x.target == "B") {
      CHECK(x.risk_oss == Approx((1000 - aw) / aw));
      CHECK(x.risk_mds == Approx((100 - ao) / ao));
    }
  // The file system's risk in each window is the sum of its applications'.
  for (const auto& f : r.fs_windows) {
    double so = 0, sm = 0;
    for (const auto& x : r.app_windows)
      if (x.start_ns == f.start_ns) so += x.risk_oss, sm += x.risk_mds;
    CHECK(f.risk_oss == Approx(so));
    CHECK(f.risk_mds == Approx(sm));
  }
  // A stored baseline replaces the range's average.
  Baseline stored;
  stored.name = "long";
  stored.window_ns = o.window_ns;
  stored.fs.push_back({"fs", 1000, {}});
  stored.fs[0].avg.oss[2] = 10;
  Options o2 = o;
  o2.baseline = stored;
  Accumulator acc2(o2);
  acc2.AddJob("fs", "2", "B", 3600 * kS + 10 * kS, big);
  auto r2 = acc2.Compute();
  REQUIRE(r2.app_windows.size() == 1);
  CHECK(r2.app_windows[0].risk_oss == Approx((1000 - 20.0) / 20.0));
  CHECK(r2.app_windows[0].risk_mds == 0);  // the stored baseline has no open average: no scale
  CHECK_FALSE(r2.baseline.fallback);
  CHECK(BaselineWarning(r2).empty());
}

TEST_CASE("LASSi application-hours: a silence longer than max_silent_ns ends a run without scheduler data", "[lassi]") {
  // Job 7 writes at 00:00 and 02:00 (a 1 h silence: zero) and again 22 h later
  // (the id reused the next day: not 21 hours of zeros).
  Options o;
  o.window_ns = 3600 * kS;
  o.from_ns = o.history_from_ns = 0;
  o.to_ns = 48 * 3600 * kS;
  Accumulator acc(o);
  OpSums w;
  w.oss[2] = 50;
  for (int h : {0, 2, 24}) acc.AddJob("fs", "7", "A", h * 3600 * kS + kS, w);
  auto r = acc.Compute();
  std::vector<int64_t> hours;
  for (const auto& x : r.app_windows) hours.push_back(x.start_ns / (3600 * kS));
  CHECK(hours == std::vector<int64_t>{0, 1, 2, 24});
  CHECK(r.baseline.fs[0].app_hours == 4);
  CHECK(*r.baseline.fs[0].avg.oss[2] == Approx(150.0 / 4));
  // With the run known from the scheduler, the whole run counts.
  Accumulator acc2(o);
  for (int h : {0, 2, 24}) acc2.AddJob("fs", "7", "A", h * 3600 * kS + kS, w);
  acc2.SetJobRun("7", 0, 25 * 3600 * kS);
  CHECK(acc2.Compute().baseline.fs[0].app_hours == 25);
}

TEST_CASE("LASSi baselines: file round trip (0600), newest of the window, a named one, bad lines named", "[lassi]") {
  test::TempDir d;
  const std::string path = BaselineFileOf(d.path());
  Baseline a;
  a.name = "old";
  a.computed_at_ns = 100;
  a.from_ns = 1;
  a.to_ns = 2;
  a.window_ns = 3600 * kS;
  a.fs.push_back({"scratch", 720, {}});
  a.fs[0].avg.oss[2] = 1234.5;
  a.fs[0].avg.mds[0] = 0.25;
  Baseline b = a;
  b.name = "new";
  b.computed_at_ns = 200;
  Baseline c = a;
  c.name = "ten-minutes";
  c.computed_at_ns = 300;
  c.window_ns = 600 * kS;
  for (const auto* x : {&a, &b, &c}) REQUIRE(AppendBaselineFile(path, *x).ok());
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto all = ReadBaselineFile(path);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].source == "file " + path);
  CHECK((*all)[0].fs[0].app_hours == 720);
  CHECK(*(*all)[0].fs[0].avg.oss[2] == 1234.5);
  CHECK(*(*all)[0].fs[0].avg.mds[0] == 0.25);
  CHECK_FALSE((*all)[0].fs[0].avg.oss[0].has_value());
  auto newest = SelectBaseline(*all, "", 3600 * kS);
  REQUIRE(newest.ok());
  REQUIRE(newest->has_value());
  CHECK((*newest)->name == "new");  // the newest of the hourly ones, not the 10-minute one
  auto named = SelectBaseline(*all, "old", 3600 * kS);
  REQUIRE(named.ok());
  CHECK((*named)->name == "old");
  auto none = SelectBaseline(*all, "", 60 * kS);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto missing = SelectBaseline(*all, "nope", 3600 * kS);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("stored: old, new, ten-minutes") != std::string::npos);
  // No file yet: no baselines, not an error.
  auto empty = ReadBaselineFile(d / "none.jsonl");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
  // A bad line is named by file and line.
  test::WriteFile(d / "bad.jsonl", BaselineLine(a) + "{\"name\":\"x\",\"computed_at_ns\":1,\"from_ns\":0,\"to_ns\":1,"
                                                     "\"window_s\":3600,\"fs\":[{\"fs\":\"s\",\"avg\":{\"bogus\":1}}]}\n");
  auto bad = ReadBaselineFile(d / "bad.jsonl");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.jsonl:2: unknown op 'bogus'") != std::string::npos);
}
