// `iosonar lmt-import`, `lassi`, `slowdown` and `report` end to end:
// real LMT data from NERSC Edison (../shared/data), a synthetic day with
// job_stats and probe records, and the report in headless Chromium.
#include <zlib.h>

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/records/record.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "test/testutil/lmt_fixture.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
namespace fs = std::filesystem;

namespace {
constexpr int64_t kS = 1000000000;

std::string LmtDir() {
  const std::string d = test::SharedDataDir();
  if (d.empty()) return "";
  const std::string p = d + "/pytokio/tests/inputs";
  return fs::exists(p + "/snx11025_2018-01-28.sqlite3") ? p : "";
}

// Every line is a valid record of the schema.
void AllValid(const std::string& lines, const char* dataset) {
  size_t n = 0;
  for (auto& l : test::SplitLines(lines)) {
    if (l.empty()) continue;
    std::string b = l;
    b.push_back('\0');
    ParsedRecord rec;
    Status st = ParseRecordInsitu(b.data(), l.size(), &rec);
    INFO(l);
    REQUIRE(st.ok());
    if (dataset) CHECK(std::string(rec.dataset->name) == dataset);
    ++n;
  }
  CHECK(n > 0);
}

// Decodes an 8-bit RGB/RGBA PNG; counts non-white and saturated ("colored") pixels.
struct PngStats {
  uint32_t w = 0, h = 0;
  uint64_t nonwhite = 0, colored = 0;
  std::string error;
};
PngStats DecodePng(const std::string& data) {
  PngStats s;
  if (data.size() < 8 || std::memcmp(data.data(), "\x89PNG\r\n\x1a\n", 8) != 0) return s.error = "not a PNG", s;
  auto be32 = [&](size_t p) {
    return (uint32_t(uint8_t(data[p])) << 24) | (uint32_t(uint8_t(data[p + 1])) << 16) |
           (uint32_t(uint8_t(data[p + 2])) << 8) | uint8_t(data[p + 3]);
  };
  size_t pos = 8, bpp = 0;
  std::string idat;
  while (pos + 8 <= data.size()) {
    const uint32_t n = be32(pos);
    const std::string kind = data.substr(pos + 4, 4);
    if (kind == "IHDR") {
      s.w = be32(pos + 8);
      s.h = be32(pos + 12);
      const int depth = uint8_t(data[pos + 16]), ctype = uint8_t(data[pos + 17]);
      if (depth != 8 || (ctype != 2 && ctype != 6)) return s.error = "unsupported PNG format", s;
      bpp = ctype == 2 ? 3 : 4;
    } else if (kind == "IDAT") {
      idat += data.substr(pos + 8, n);
    }
    pos += 12 + n;
  }
  const size_t stride = s.w * bpp;
  std::vector<uint8_t> raw((stride + 1) * s.h);
  uLongf len = raw.size();
  if (uncompress(raw.data(), &len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK || len != raw.size())
    return s.error = "bad zlib data", s;
  std::vector<uint8_t> prev(stride, 0), line(stride);
  for (uint32_t y = 0; y < s.h; ++y) {
    const uint8_t f = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? line[x - bpp] : 0, b = prev[x], c = x >= bpp ? prev[x - bpp] : 0;
      int pr = 0;
      switch (f) {
        case 1: pr = a; break;
        case 2: pr = b; break;
        case 3: pr = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pr = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: break;
      }
      line[x] = static_cast<uint8_t>(in[x] + pr);
    }
    for (size_t x = 0; x < stride; x += bpp) {
      const int r = line[x], g = line[x + 1], b = line[x + 2];
      const int mn = std::min({r, g, b}), mx = std::max({r, g, b});
      s.nonwhite += mn < 240;
      s.colored += mx - mn > 60;
    }
    prev = line;
  }
  return s;
}

// A synthetic day: fs "scratch" with 4 OSTs and 1 MDT every 60 s, job_stats
// of four jobs (one writing in 4 KiB requests, one metadata-heavy, one bursty),
// and probe records every 60 s with a slow hour.
void WriteSyntheticDay(const std::string& store_dir, int64_t day) {
  auto store = OpenSqliteStore(store_dir);
  REQUIRE(store.ok());
  std::vector<std::string> lines;
  int64_t seq = 0;
  for (int64_t t = day; t < day + 86400 * kS; t += 60 * kS) {
    const int64_t minute = (t - day) / (60 * kS);
    const bool burst = minute >= 600 && minute < 660;      // 10:00-11:00: a burst of writes
    const bool md_burst = minute >= 900 && minute < 960;   // 15:00-16:00: metadata storm
    for (int ost = 0; ost < 4; ++ost) {
      const int64_t wb = (burst ? 400 : 10) << 20;
      lines.push_back("{\"@timestamp\":\"" + FormatIsoMillis(t) +
                      "\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":11,\"event.seq\":" + std::to_string(++seq) +
                      ",\"host.name\":\"oss1\",\"lustre.fs\":\"scratch\",\"lustre.target\":\"scratch-OST000" +
                      std::to_string(ost) + "\",\"oss.read_bytes\":" + std::to_string(5 << 20) +
                      ",\"oss.read_ops\":5,\"oss.write_bytes\":" + std::to_string(wb) +
                      ",\"oss.write_ops\":" + std::to_string(wb >> 20) + ",\"oss.other_ops\":3}");
    }
    lines.push_back("{\"@timestamp\":\"" + FormatIsoMillis(t) +
                    "\",\"event.dataset\":\"iosonar.mds\",\"event.stream\":12,\"event.seq\":" + std::to_string(++seq) +
                    ",\"host.name\":\"mds1\",\"lustre.fs\":\"scratch\",\"lustre.target\":\"scratch-MDT0000\",\"mds.open\":" +
                    std::to_string(md_burst ? 50000 : 100) + ",\"mds.close\":" + std::to_string(md_burst ? 50000 : 100) +
                    ",\"mds.getattr\":200,\"mds.mkdir\":" + std::to_string(md_burst ? 3000 : 1) + "}");
    auto job = [&](const char* id, int64_t wb, int64_t wops, int64_t opens) {
      lines.push_back("{\"@timestamp\":\"" + FormatIsoMillis(t) +
                      "\",\"event.dataset\":\"iosonar.jobstats\",\"event.stream\":13,\"event.seq\":" +
                      std::to_string(++seq) +
                      ",\"host.name\":\"oss1\",\"lustre.fs\":\"scratch\",\"lustre.target\":\"scratch-OST0000\",\"job.id\":\"" +
                      id + "\",\"oss.write_bytes\":" + std::to_string(wb) + ",\"oss.write_ops\":" + std::to_string(wops) +
                      ",\"mds.open\":" + std::to_string(opens) + ",\"mds.close\":" + std::to_string(opens) + "}");
    };
    job("5001", 8 << 20, 8, 2);                                            // well-behaved, all day
    if (minute < 720) job("5002", 4 << 20, 1024, 1);                       // 4 KiB writes
    if (md_burst) job("5003", 1 << 20, 1, 40000);                          // metadata-heavy
    if (burst) job("5004", 1600LL << 20, 1600, 4);                         // the burst
    for (const char* op : {"write", "read", "stat", "create"}) {
      const int64_t base = std::string(op) == "write" ? 20000000 : 500000;
      const int64_t lat = base * (md_burst ? 8 : 1) + (minute % 7) * base / 10;
      lines.push_back("{\"@timestamp\":\"" + FormatIsoMillis(t + 30 * kS) +
                      "\",\"event.dataset\":\"iosonar.probe\",\"event.stream\":14,\"event.seq\":" + std::to_string(++seq) +
                      ",\"host.name\":\"login1\",\"lustre.fs\":\"scratch\",\"probe.dir\":\"/scratch/probe\",\"probe.op\":\"" +
                      op + "\",\"probe.latency_ns\":" + std::to_string(lat) + ",\"probe.ok\":true}");
    }
  }
  std::vector<std::string> bufs;
  std::vector<ParsedRecord> recs(lines.size());
  std::vector<const ParsedRecord*> ptrs;
  bufs.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    bufs.push_back(lines[i]);
    bufs.back().push_back('\0');
    Status st = ParseRecordInsitu(bufs.back().data(), lines[i].size(), &recs[i]);
    INFO(lines[i]);
    REQUIRE(st.ok());
    ptrs.push_back(&recs[i]);
  }
  AppendStats as;
  REQUIRE(store.value()->Append(ptrs, &as).ok());
  REQUIRE(as.inserted == lines.size());
}
}  // namespace

TEST_CASE("lmt-import on an LMT database written by the test: deltas, a reset, MDS ops, the UTC offset", "[lassi][report]") {
  test::TempDir tmp;
  test::LmtFixture f;
  f.timestamps = {"2026-01-28 00:00:00", "2026-01-28 00:00:05", "2026-01-28 00:00:10",
                  "2026-01-28 00:00:15", "2026-01-28 00:00:20", "2026-01-28 00:00:25"};
  f.osts = {{"lmtfix-OST0000", "oss1", {{0, 0}, {100, 1000}, {300, 3000}, {600, 6000}, {1000, 10000}, {1500, 15000}}},
            // the OSS restarted before the 4th reading: its counters start again
            {"lmtfix-OST0001", "oss2", {{5000, 5000}, {5100, 5200}, {5200, 5400}, {10, 20}, {110, 220}, {210, 420}}},
            {"lmtfix-OST0002", "oss2", {{7, 7}, {7, 7}, {7, 7}, {7, 7}, {7, 7}, {7, 7}}}};
  f.mdss = {{"lmtfix-MDT0000", "mds1"}};
  f.operations = {"open", "close", "getattr", "mkdir", "frob_op"};  // frob_op: no field of iosonar.mds
  f.mds_samples.resize(1);
  for (int64_t t = 0; t < 6; ++t) f.mds_samples[0].push_back({10 * t, 10 * t, 100 * t, t / 2, 5 * t});
  test::WriteLmtDatabase(tmp / "lmt.sqlite3", f);

  auto r = test::Run({test::IosonarBin(), "lmt-import", "--lmt-sqlite", tmp / "lmt.sqlite3", "--output",
                      tmp / "rec.jsonl", "--utc-offset", "-08:00"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // 3 OSTs x 5 deltas, 1 MDS x 5; the restarted OST's first reading after the restart is a reset.
  CHECK(r.out.find("15 iosonar.oss and 5 iosonar.mds records, 1 counter resets") != std::string::npos);
  const std::string lines = test::ReadFile(tmp / "rec.jsonl");
  AllValid(lines, nullptr);
  auto all = test::SplitLines(lines);
  REQUIRE(all.size() == 20);
  CHECK(all[0].find("\"@timestamp\":\"2026-01-28T08:00:05.000Z\"") != std::string::npos);  // 00:00:05 Pacific
  CHECK(all[0].find("\"host.name\":\"oss1\",\"lustre.fs\":\"lmtfix\",\"lustre.target\":\"lmtfix-OST0000\","
                    "\"lustre.elapsed_ns\":5000000000,\"oss.read_bytes\":100,\"oss.write_bytes\":1000") != std::string::npos);
  CHECK(all[4].find("\"oss.read_bytes\":500,\"oss.write_bytes\":5000") != std::string::npos);
  CHECK(all[7].find("\"lustre.target\":\"lmtfix-OST0001\"") != std::string::npos);
  CHECK(all[7].find("\"lustre.reset\":true") != std::string::npos);
  CHECK(all[7].find("oss.read_bytes") == std::string::npos);  // unknown, not a negative delta
  CHECK(all[8].find("\"oss.read_bytes\":100,\"oss.write_bytes\":200") != std::string::npos);
  CHECK(all[10].find("\"oss.read_bytes\":0,\"oss.write_bytes\":0") != std::string::npos);  // an idle OST
  CHECK(lines.find(":-") == std::string::npos);
  size_t mds = 0;
  for (const auto& l : all) {
    if (l.find("\"iosonar.mds\"") == std::string::npos) continue;
    ++mds;
    CHECK(l.find("\"lustre.target\":\"lmtfix-MDT0000\"") != std::string::npos);
    CHECK(l.find("\"mds.open\":10") != std::string::npos);
    CHECK(l.find("\"mds.getattr\":100") != std::string::npos);
    CHECK(l.find("frob_op") == std::string::npos);
  }
  CHECK(mds == 5);

  // Not an LMT database: a clear error naming the file, exit 1.
  test::WriteNonLmtDatabase(tmp / "other.sqlite3");
  auto bad = test::Run({test::IosonarBin(), "lmt-import", "--lmt-sqlite", tmp / "other.sqlite3", "--output", tmp / "bad.jsonl"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("other.sqlite3: not an LMT database?") != std::string::npos);
}

TEST_CASE("lmt-import + lassi on the NERSC Edison LMT capture (real captures)", "[lassi][report][real-capture]") {
  const std::string dir = LmtDir();
  if (dir.empty()) {
    WARN(test::RealCapturesSkipped("lmt-import and lassi on the Edison LMT database"));
    return;
  }
  test::TempDir tmp;
  auto r = test::Run({test::IosonarBin(), "lmt-import", "--lmt-sqlite", dir + "/snx11025_2018-01-28.sqlite3", "--store",
                      tmp / "store", "--utc-offset", "-08:00"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // 24 OSTs x 61 readings -> 24 x 60 deltas; 1 MDT -> 60; no resets in this capture.
  CHECK(r.out.find("1440 iosonar.oss and 60 iosonar.mds records, 0 counter resets") != std::string::npos);
  CHECK(r.out.find("2018-01-28T08:00:00.000Z") != std::string::npos);  // 00:00 Pacific

  // Records re-read from the store validate against the schema.
  auto ex = test::Run({test::IosonarBin(), "store-export", "--store", tmp / "store", "--dataset", "iosonar.oss"});
  REQUIRE(ex.exit_code == 0);
  AllValid(ex.out, "iosonar.oss");

  // 30 s windows: the capture is 5 minutes, so hourly windows would give a single window
  // (risk 0 by construction: x = avg < alpha*avg).
  auto l = test::Run({test::IosonarBin(), "lassi", "--store", tmp / "store", "--from", "2018-01-28T08:00:00Z", "--to",
                      "2018-01-28T08:05:30Z", "--window", "30s", "--format", "json", "--results-output",
                      tmp / "risk.jsonl"});
  INFO(l.err);
  REQUIRE(l.exit_code == 0);
  rapidjson::Document d;
  d.Parse(l.out.c_str());
  REQUIRE_FALSE(d.HasParseError());
  const auto& fw = d["fs_windows"];
  // Deltas stamped 08:00:05 .. 08:05:00 cover [08:00:00, 08:05:00): exactly 10
  // windows of 30 s (the one stamped 08:05:00 covers [08:04:55, 08:05:00)).
  REQUIRE(fw.Size() == 10);
  CHECK(fw[0]["start"].GetString() == std::string("2018-01-28T08:00:00.000Z"));
  CHECK(fw[9]["start"].GetString() == std::string("2018-01-28T08:04:30.000Z"));
  double total_kb = 0;
  size_t undefined_quality = 0;
  for (const auto& w : fw.GetArray()) {
    CHECK(std::string(w["fs"].GetString()) == "snx11025");
    CHECK(w["risk_oss"].GetDouble() >= 0);
    total_kb += w["ops"]["read_kb"].GetDouble() + w["ops"]["write_kb"].GetDouble();
    undefined_quality += w["read_kb_ops"].IsNull() && w["write_kb_ops"].IsNull() && w["ops"]["read_ops"].IsNull();
  }
  CHECK(total_kb > 0);
  CHECK(undefined_quality == fw.Size());  // LMT has no OST op counts
  // Tables 1-2: mean and c_v of the MDS ops.
  const auto& st = d["fs_stats"][0]["ops"];
  REQUIRE(st.HasMember("open"));
  CHECK(st["open"]["mean"].GetDouble() > 0);
  CHECK(st["getattr"]["cv"].IsNumber());
  AllValid(test::ReadFile(tmp / "risk.jsonl"), "iosonar.result.risk");

  // Hourly: the series computes (one window for a 5-minute capture).
  auto h = test::Run({test::IosonarBin(), "lassi", "--store", tmp / "store", "--day", "2018-01-28", "--format", "json"});
  REQUIRE(h.exit_code == 0);
  rapidjson::Document dh;
  dh.Parse(h.out.c_str());
  REQUIRE_FALSE(dh.HasParseError());
  CHECK(dh["fs_windows"].Size() == 1);
}

TEST_CASE("lmt-import turns a counter reset into unknown, never negative (real captures)", "[lassi][report][real-capture]") {
  const std::string dir = LmtDir();
  if (dir.empty()) {
    WARN(test::RealCapturesSkipped("lmt-import on the captured LMT database with a reset"));
    return;
  }
  test::TempDir tmp;
  auto r = test::Run({test::IosonarBin(), "lmt-import", "--lmt-sqlite", dir + "/lmtdb-reset.sqlite3", "--output",
                      tmp / "rec.jsonl", "--utc-offset", "-07:00"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(" 0 counter resets") == std::string::npos);
  const std::string lines = test::ReadFile(tmp / "rec.jsonl");
  size_t resets = 0;
  for (auto& l : test::SplitLines(lines)) {
    if (l.empty()) continue;
    CHECK(l.find(":-") == std::string::npos);  // no negative value anywhere
    resets += l.find("\"lustre.reset\":true") != std::string::npos;
  }
  CHECK(resets >= 1);
  AllValid(lines, nullptr);

  // Not an LMT database: a clear error naming the file, exit 1.
  auto bad = test::Run({test::IosonarBin(), "lmt-import", "--lmt-sqlite", dir + "/sample_nersc_jobsdb.sqlite3",
                        "--output", tmp / "bad.jsonl"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("sample_nersc_jobsdb.sqlite3: not an LMT database?") != std::string::npos);
}

TEST_CASE("report from the Edison LMT capture renders (real captures)", "[lassi][report][real-capture]") {
  const std::string dir = LmtDir();
  if (dir.empty()) {
    WARN(test::RealCapturesSkipped("the report on the Edison LMT database"));
    return;
  }
  test::TempDir tmp;
  REQUIRE(test::Run({test::IosonarBin(), "lmt-import", "--lmt-sqlite", dir + "/snx11025_2018-01-28.sqlite3", "--store",
                     tmp / "store", "--utc-offset", "-08:00"})
              .exit_code == 0);
  auto r = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--from", "2018-01-28T08:00:00Z", "--to",
                      "2018-01-28T08:05:30Z", "--window", "30s", "--html", tmp / "r.html", "--json", tmp / "r.json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("File system snx11025: 10 windows") != std::string::npos);  // [08:00, 08:05) in 30 s
  const std::string html = test::ReadFile(tmp / "r.html");
  CHECK(html.find("snx11025: risk_oss and risk_mds") != std::string::npos);
  CHECK(html.find("no OST op counts") != std::string::npos);
  rapidjson::Document d;
  d.Parse(test::ReadFile(tmp / "r.json").c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(d["lassi"]["fs_windows"].Size() == 10);
}

TEST_CASE("report for a synthetic day: apps, advice, slowdown, self-contained HTML, Chromium", "[lassi][report]") {
  test::TempDir tmp;
  const int64_t day = *ParseIso8601("2026-11-20T00:00:00Z");
  WriteSyntheticDay(tmp / "store", day);
  test::WriteFile(tmp / "apps.tsv", "5001\t./wrf.exe namelist.input\n5002\tpython logger.py --every 1s\n"
                                    "5003\t./taskfarm.sh tasks.txt\n5004\tsrun ./ior -w -b 1g\n");
  // Runs of one command: the slow ones overlapped the burst and the storm.
  test::WriteFile(tmp / "runs.tsv", "7001\t2026-11-20T09:00:00Z\t2026-11-20T12:00:00Z\n"
                                    "7002\t2026-11-20T01:00:00Z\t2026-11-20T02:30:00Z\n"
                                    "7003\t2026-11-20T14:00:00Z\t2026-11-20T17:30:00Z\n"
                                    "7004\t2026-11-20T20:00:00Z\t2026-11-20T21:00:00Z\n"
                                    "bad line\n");
  auto r = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--day", "2026-11-20", "--apps",
                      tmp / "apps.tsv", "--html", tmp / "r.html", "--json", tmp / "r.json", "--text", tmp / "r.txt",
                      "--runs", tmp / "runs.tsv"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string text = test::ReadFile(tmp / "r.txt");
  INFO(text);
  CHECK(text.find("File system scratch: 24 windows") != std::string::npos);
  CHECK(text.find("peak risk_oss") != std::string::npos);
  CHECK(text.find("T10:00:00.000Z") != std::string::npos);  // the write burst hour
  CHECK(text.find("T15:00:00.000Z") != std::string::npos);  // the metadata storm
  CHECK(text.find("job 5002 (python logger.py --every 1s): small requests") != std::string::npos);
  CHECK(text.find("job 5003 (./taskfarm.sh tasks.txt): metadata-heavy") != std::string::npos);
  CHECK(text.find("job 5001 (") == std::string::npos);  // well-behaved: no advice
  CHECK(text.find("create max ") != std::string::npos);  // probe slowdown summary
  CHECK(text.find("Slowdown analysis (4 runs on scratch): runtime vs risk_oss r ") != std::string::npos);
  CHECK(r.err.find("runs.tsv:5: expected JOB<TAB>START<TAB>END, skipped") != std::string::npos);
  const std::string html = test::ReadFile(tmp / "r.html");
  CHECK(html.find("srun ./ior -w -b 1g") != std::string::npos);
  CHECK(html.find("(LASSi Fig. 6)") != std::string::npos);
  // Self-contained: nothing loaded from elsewhere.
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  rapidjson::Document d;
  d.Parse(test::ReadFile(tmp / "r.json").c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(d["advice"].Size() >= 2);
  CHECK(d["slowdown"]["rows"].Size() == 4 * 144);
  // The metadata storm (15:00-16:00, latencies x8) shows as slowdown; elsewhere ~1.
  const int64_t storm0 = day + 15 * 3600 * kS, storm1 = day + 16 * 3600 * kS;
  size_t slow_in = 0, slow_out = 0;
  for (const auto& row : d["slowdown"]["rows"].GetArray()) {
    const int64_t st = *ParseIso8601(row["start"].GetString());
    const double sd = row["slowdown_median"].GetDouble();
    if (st >= storm0 && st < storm1) slow_in += sd > 5;
    else slow_out += sd > 1.5;
  }
  CHECK(slow_in == 4 * 6);
  CHECK(slow_out == 0);

  // lassi: fs, app and job result records validate; Pearson over the runs of one command
  auto l = test::Run({test::IosonarBin(), "lassi", "--store", tmp / "store", "--day", "2026-11-20", "--apps",
                      tmp / "apps.tsv", "--results-output", tmp / "risk.jsonl", "--runs", tmp / "runs.tsv"});
  INFO(l.err);
  REQUIRE(l.exit_code == 0);
  CHECK(l.out.find("slowdown analysis on scratch (4 runs)") != std::string::npos);
  CHECK(l.out.find("runtime vs risk_oss: r = ") != std::string::npos);
  const std::string risk = test::ReadFile(tmp / "risk.jsonl");
  AllValid(risk, "iosonar.result.risk");
  CHECK(risk.find("\"result.app\":\"python logger.py --every 1s\"") != std::string::npos);
  CHECK(risk.find("\"job.id\":\"5004\"") != std::string::npos);

  // slowdown: result records validate
  auto s = test::Run({test::IosonarBin(), "slowdown", "--store", tmp / "store", "--day", "2026-11-20",
                      "--results-output", tmp / "sd.jsonl"});
  REQUIRE(s.exit_code == 0);
  AllValid(test::ReadFile(tmp / "sd.jsonl"), "iosonar.result.slowdown");

  // Headless Chromium: no console errors, the inline script ran, the plots are drawn.
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) {
    FAIL("/usr/bin/chromium is not installed (apt-get install chromium)");
  }
  test::TempDir profile;
  const std::vector<std::string> common = {chromium,
                                           "--headless",
                                           "--no-sandbox",
                                           "--disable-gpu",
                                           "--disable-quic",
                                           "--no-first-run",
                                           "--disable-background-networking",
                                           "--disable-component-update",
                                           "--disable-sync",
                                           "--enable-logging=stderr",
                                           "--v=0",
                                           "--user-data-dir=" + profile.path()};
  auto shot = common;
  shot.insert(shot.end(), {"--screenshot=" + (tmp / "shot.png"), "--window-size=1200,2000", "file://" + (tmp / "r.html")});
  auto c = test::Run(shot);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(c.err.find("Uncaught") == std::string::npos);
  CHECK(c.err.find(":CONSOLE(") == std::string::npos);  // console messages of the page
  auto png = DecodePng(test::ReadFile(tmp / "shot.png"));
  REQUIRE(png.error.empty());
  CHECK(png.w == 1200);
  CHECK(png.h == 2000);
  CHECK(png.nonwhite > 50000);  // text, axes, plots
  CHECK(png.colored > 5000);    // coloured series: lines and stacked bars drawn
  test::TempDir profile2;
  auto dom = common;
  dom.back() = "--user-data-dir=" + profile2.path();
  dom.insert(dom.end(), {"--dump-dom", "file://" + (tmp / "r.html")});
  auto dd = test::Run(dom);
  REQUIRE(dd.exit_code == 0);
  CHECK(dd.out.find("data-plots=\"") != std::string::npos);
  CHECK(dd.out.find("data-plots=\"0\"") == std::string::npos);
}
