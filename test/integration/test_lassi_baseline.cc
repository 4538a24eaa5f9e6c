// LASSi against a stored long-term baseline (issue 14): three normal days,
// `iosonar lassi baseline` over them, then a day with a metadata storm. The
// expected risks come from test/oracles/lassi_oracle.py, written from the
// paper's eqs. 1-6 (lassi.txt §2.3, §3.2), over the very records the
// simulator wrote (same seed: the file and the store hold the same records).
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {
constexpr int64_t kS = 1000000000;
const int64_t kDay0 = 1795305600;  // 2026-11-22T00:00:00Z

// One simulated 2-hour day (d = 0, 1, ...): a writer (./wrf.exe), a 1-1 post-processor and,
// on the storm day, a metadata storm (./taskfarm.sh) from 00:30 to 01:00.
std::vector<std::string> DayArgs(int d, bool storm) {
  std::vector<std::string> a = {"simulate", "--seed", std::to_string(d + 1), "--start",
                                std::to_string((kDay0 + d * 86400) * kS), "--nodes", "16", "--osts", "8",
                                "--duration", "7200", "--no-trace", "--no-client",
                                "--job", "id=" + std::to_string(3100 + d) + ",mode=N-N,first=0,nodes=4,duration=7000,period=60,io=5",
                                "--job", "id=" + std::to_string(3200 + d) + ",mode=1-1,first=4,nodes=1,start=600,duration=5000,period=30,io=2"};
  if (storm)
    a.insert(a.end(), {"--job", "id=" + std::to_string(3900 + d) + ",mode=meta,first=8,nodes=8,start=1800,duration=1800,meta=2000"});
  return a;
}

void Simulate(const std::vector<std::string>& args, const std::string& where_flag, const std::string& where) {
  std::vector<std::string> argv = {test::IosonarBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {where_flag, where});
  auto r = test::Run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

std::string Key(const std::string& a, const std::string& b) { return a + "|" + b; }

bool HavePandas() { return test::Run({"/usr/bin/python3", "-c", "import pandas, numpy"}).exit_code == 0; }
}  // namespace

TEST_CASE("LASSi: a metadata storm after normal days, against the stored baseline", "[lassi][report][baseline]") {
  test::TempDir tmp;
  const std::string store = tmp / "store";
  std::string history_lines;
  for (int d = 0; d < 3; ++d) {
    Simulate(DayArgs(d, false), "--store", store);
    Simulate(DayArgs(d, false), "--output", tmp / ("day" + std::to_string(d) + ".jsonl"));
    history_lines += test::ReadFile(tmp / ("day" + std::to_string(d) + ".jsonl"));
  }
  Simulate(DayArgs(3, true), "--store", store);
  Simulate(DayArgs(3, true), "--output", tmp / "storm.jsonl");
  test::WriteFile(tmp / "history.jsonl", history_lines);
  std::string apps;
  for (int d = 0; d < 4; ++d)
    apps += std::to_string(3100 + d) + "\t./wrf.exe -i namelist\n" + std::to_string(3200 + d) + "\tpython post.py\n";
  apps += "3903\t./taskfarm.sh tasks.txt\n";
  test::WriteFile(tmp / "apps.tsv", apps);

  // Without a stored baseline: the report falls back to the analysed range and says so loudly.
  auto fb = test::Run({test::IosonarBin(), "report", "--store", store, "--day", "2026-11-25", "--apps", tmp / "apps.tsv",
                       "--html", tmp / "fb.html", "--json", tmp / "fb.json", "--text", tmp / "fb.txt"});
  INFO(fb.err);
  REQUIRE(fb.exit_code == 0);
  CHECK(fb.err.find("WARNING: no stored LASSi baseline") != std::string::npos);
  CHECK(test::ReadFile(tmp / "fb.html").find("id=\"baseline-warning\"") != std::string::npos);
  CHECK(test::ReadFile(tmp / "fb.txt").find("WARNING: no stored LASSi baseline") != std::string::npos);
  {
    auto d = Json(test::ReadFile(tmp / "fb.json"));
    CHECK(d["lassi"]["baseline"]["fallback"].GetBool());
    CHECK(std::string(d["baseline_warning"].GetString()).find("analysed range") != std::string::npos);
  }

  // The baseline over the three normal days.
  auto b = test::Run({test::IosonarBin(), "lassi", "baseline", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                      "2026-11-25T00:00:00Z", "--apps", tmp / "apps.tsv", "--name", "normal-days", "--json",
                      tmp / "baseline.json"});
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(b.out.find("stored LASSi baseline 'normal-days'") != std::string::npos);
  struct stat sb {};
  REQUIRE(stat((store + "/lassi-baselines.jsonl").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0600);

  // The report of the storm day uses it and says so.
  auto r = test::Run({test::IosonarBin(), "report", "--store", store, "--day", "2026-11-25", "--apps", tmp / "apps.tsv",
                      "--html", tmp / "r.html", "--json", tmp / "r.json", "--text", tmp / "r.txt"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("LASSi baseline 'normal-days'") != std::string::npos);
  CHECK(r.err.find("WARNING") == std::string::npos);
  CHECK(test::ReadFile(tmp / "r.html").find("baseline-warning") == std::string::npos);
  auto d = Json(test::ReadFile(tmp / "r.json"));
  const auto& lassi = d["lassi"];
  CHECK_FALSE(lassi["baseline"]["fallback"].GetBool());
  CHECK(std::string(lassi["baseline"]["name"].GetString()) == "normal-days");

  // Contract: fs_windows and app_windows with fs, start, risk_oss, risk_mds, ops (and app).
  const auto& fw = lassi["fs_windows"];
  const auto& aw = lassi["app_windows"];
  REQUIRE(fw.Size() == 2);  // 00:00 and 01:00
  std::map<std::string, std::pair<double, double>> app_sum;
  std::map<std::string, std::pair<double, double>> storm_app;
  for (const auto& w : aw.GetArray()) {
    REQUIRE(w.HasMember("fs"));
    REQUIRE(w.HasMember("app"));
    REQUIRE(w["ops"].IsObject());
    auto& s = app_sum[Key(w["fs"].GetString(), w["start"].GetString())];
    s.first += w["risk_oss"].GetDouble();
    s.second += w["risk_mds"].GetDouble();
    if (std::string(w["app"].GetString()) == "./taskfarm.sh tasks.txt")
      storm_app[w["start"].GetString()] = {w["risk_oss"].GetDouble(), w["risk_mds"].GetDouble()};
  }
  // The file system's series is the stack of the application series, window by window.
  for (const auto& w : fw.GetArray()) {
    REQUIRE(w["ops"].IsObject());
    const auto& s = app_sum[Key(w["fs"].GetString(), w["start"].GetString())];
    INFO(w["start"].GetString());
    CHECK(w["risk_oss"].GetDouble() == Approx(s.first).margin(1e-9));
    CHECK(w["risk_mds"].GetDouble() == Approx(s.second).margin(1e-9));
  }
  // The storm (00:30-01:00) is in the 00:00 window: risk_mds > 0 for it and the file system.
  REQUIRE(storm_app.count("2026-11-25T00:00:00.000Z"));
  CHECK(storm_app["2026-11-25T00:00:00.000Z"].second > 0);
  CHECK(std::string(fw[0]["start"].GetString()) == "2026-11-25T00:00:00.000Z");
  CHECK(fw[0]["risk_mds"].GetDouble() > 0);
  CHECK(test::ReadFile(tmp / "r.txt").find("peak risk_mds") != std::string::npos);

  if (!HavePandas()) {
    FAIL("/usr/bin/python3 with pandas is not installed (apt-get install python3-pandas)");
  }
  // The baseline: avg_fs per application-hour over the normal days, as the paper's Tables 1-2.
  const std::string oracle = test::SourceDir() + "/test/oracles/lassi_oracle.py";
  auto ob = test::Run({"/usr/bin/python3", oracle, tmp / "history.jsonl", tmp / "apps.tsv", "2", "3600",
                       std::to_string(kDay0), std::to_string(kDay0 + 3 * 86400), std::to_string(kDay0)});
  INFO(ob.err);
  REQUIRE(ob.exit_code == 0);
  auto eb = Json(ob.out);
  auto got_b = Json(test::ReadFile(tmp / "baseline.json"));
  REQUIRE(got_b["fs"].Size() == 1);
  const auto& gfs = got_b["fs"][0];
  const auto& efs = eb["baseline"][gfs["fs"].GetString()];
  size_t compared = 0;
  for (auto m = efs.MemberBegin(); m != efs.MemberEnd(); ++m) {
    INFO(m->name.GetString());
    if (m->value.IsNull()) {
      CHECK(gfs["avg"][m->name.GetString()].IsNull());
      continue;
    }
    CHECK(gfs["avg"][m->name.GetString()].GetDouble() == Approx(m->value.GetDouble()).epsilon(1e-9));
    ++compared;
  }
  CHECK(compared >= 5);
  CHECK(efs["open"].GetDouble() > 0);  // the normal days open files: the storm's opens have a scale
  // The storm day against that baseline.
  test::WriteFile(tmp / "given.json", std::string("{\"fs\":{\"") + gfs["fs"].GetString() + "\":" + [&] {
    std::string s = "{";
    for (auto m = efs.MemberBegin(); m != efs.MemberEnd(); ++m)
      if (!m->value.IsNull()) s += (s.size() > 1 ? "," : "") + std::string("\"") + m->name.GetString() + "\":" +
                                   std::to_string(m->value.GetDouble());
    return s + "}";
  }() + "}}");
  // Given with %f's 6 decimals: compare the risks to a relative 1e-5.
  auto os = test::Run({"/usr/bin/python3", oracle, tmp / "storm.jsonl", tmp / "apps.tsv", "2", "3600",
                       std::to_string(kDay0 + 3 * 86400), std::to_string(kDay0 + 4 * 86400),
                       std::to_string(kDay0 + 3 * 86400), tmp / "given.json"});
  INFO(os.err);
  REQUIRE(os.exit_code == 0);
  auto es = Json(os.out);
  REQUIRE(es["fs_windows"].Size() == fw.Size());
  for (rapidjson::SizeType i = 0; i < fw.Size(); ++i) {
    INFO("fs window " << i);
    CHECK(FormatIsoMillis(es["fs_windows"][i]["start"].GetInt64() * kS) == fw[i]["start"].GetString());
    CHECK(fw[i]["risk_oss"].GetDouble() == Approx(es["fs_windows"][i]["risk_oss"].GetDouble()).epsilon(1e-5));
    CHECK(fw[i]["risk_mds"].GetDouble() == Approx(es["fs_windows"][i]["risk_mds"].GetDouble()).epsilon(1e-5));
  }
  REQUIRE(es["app_windows"].Size() == aw.Size());
  for (rapidjson::SizeType i = 0; i < aw.Size(); ++i) {
    INFO("app window " << i << " " << aw[i]["app"].GetString());
    CHECK(std::string(es["app_windows"][i]["app"].GetString()) == aw[i]["app"].GetString());
    CHECK(aw[i]["risk_oss"].GetDouble() == Approx(es["app_windows"][i]["risk_oss"].GetDouble()).epsilon(1e-5));
    CHECK(aw[i]["risk_mds"].GetDouble() == Approx(es["app_windows"][i]["risk_mds"].GetDouble()).epsilon(1e-5));
  }
}

TEST_CASE("LASSi: simulate --storm after normal days of the generated jobs (ids reused day after day)",
          "[lassi][report][baseline]") {
  test::TempDir tmp;
  const std::string store = tmp / "store";
  std::string apps;
  for (int d = 0; d < 4; ++d) {
    std::vector<std::string> a = {test::IosonarBin(), "simulate", "--store", store, "--seed", std::to_string(d + 1),
                                  "--start", std::to_string((kDay0 + d * 86400) * kS), "--nodes", "16", "--osts", "8",
                                  "--duration", "7200", "--no-trace", "--no-client", "--apps",
                                  tmp / ("apps" + std::to_string(d) + ".tsv")};
    if (d == 3) a.push_back("--storm");
    auto r = test::Run(a);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    apps += test::ReadFile(tmp / ("apps" + std::to_string(d) + ".tsv"));
  }
  test::WriteFile(tmp / "apps.tsv", apps);
  auto b = test::Run({test::IosonarBin(), "lassi", "baseline", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                      "2026-11-25T00:00:00Z", "--apps", tmp / "apps.tsv"});
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  // 4 generated jobs x 2 hours x 3 days: the reused ids are not one long run of zeros.
  CHECK(b.out.find("24 run windows") != std::string::npos);
  auto r = test::Run({test::IosonarBin(), "report", "--store", store, "--day", "2026-11-25", "--apps", tmp / "apps.tsv",
                      "--html", tmp / "r.html", "--json", tmp / "r.json", "--text", tmp / "r.txt"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto d = Json(test::ReadFile(tmp / "r.json"));
  const auto& fw = d["lassi"]["fs_windows"];
  const auto& aw = d["lassi"]["app_windows"];
  REQUIRE(fw.Size() == 2);
  // The storm job (id 1999) is the whole day: its application is in both windows with risk_mds > 0.
  std::string storm_app;
  for (const auto& line : test::SplitLines(apps))
    if (line.rfind("1999\t", 0) == 0) storm_app = line.substr(5);
  REQUIRE_FALSE(storm_app.empty());
  for (const auto& f : fw.GetArray()) {
    double so = 0, sm = 0, storm = 0;
    for (const auto& a : aw.GetArray())
      if (std::string(a["start"].GetString()) == f["start"].GetString()) {
        so += a["risk_oss"].GetDouble();
        sm += a["risk_mds"].GetDouble();
        if (a["app"].GetString() == storm_app) storm = a["risk_mds"].GetDouble();
      }
    INFO(f["start"].GetString());
    CHECK(storm > 0);
    CHECK(f["risk_mds"].GetDouble() > 0);
    CHECK(f["risk_oss"].GetDouble() == Approx(so).margin(1e-9));
    CHECK(f["risk_mds"].GetDouble() == Approx(sm).margin(1e-9));
  }
}
