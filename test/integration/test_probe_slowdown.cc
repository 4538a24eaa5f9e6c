// Probe slowdown against a long baseline (issue 14; Kunkel & Betke §3.3:
// s = t_observed / t_expected, t_expected the median of all observed values
// of the op; §4.5: over a 30-day period): 30 normal days of probes from two
// hosts, then a day on which stat and create take 4x as long; without and
// with a stored baseline (`iosonar slowdown baseline`, in the file beside
// the store and in the real MariaDB). The expected factors are computed here
// from the definition (numpy's linear quantile), not by iosonar.
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/base/timeutil.h"
#include "core/jobdb/mysql.h"
#include "core/store/store.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {
constexpr int64_t kS = 1000000000;

// Hyndman-Fan type 7 median of a copy (numpy's default method='linear').
double Median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const double h = static_cast<double>(x.size() - 1) * 0.5;
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}


// 30 normal days of probes from two hosts before 2026-12-31, then that day
// with stat and create 4x as slow; every sample kept for the expectations.
struct ProbeDays {
  int64_t slow_day = 0, t0 = 0;
  std::vector<std::string> ops = {"write", "read", "stat", "delete", "create"};
  std::vector<std::string> hosts = {"login1", "login2"};
  struct Sample {
    int64_t t;
    std::string host, op;
    double s;
  };
  std::vector<Sample> samples;  // in time order (as written)
  // Latencies of op (and host, if given) with t in [from, to). The samples of
  // each op are indexed once (in time order), so each call looks only at its
  // window: the checks ask for thousands of windows (at -O0).
  std::vector<double> Of(const std::string& op, int64_t from, int64_t to, const std::string& host = "") const {
    if (by_op_.empty())
      for (const auto& v : samples) by_op_[v.op].push_back(&v);
    std::vector<double> x;
    const auto& of = by_op_[op];
    auto it = std::lower_bound(of.begin(), of.end(), from, [](const Sample* v, int64_t t) { return v->t < t; });
    for (; it != of.end() && (*it)->t < to; ++it)
      if (host.empty() || (*it)->host == host) x.push_back((*it)->s);
    return x;
  }
  // Median(Of(...)), remembered: a baseline's median is asked for once per row.
  double MedianOf(const std::string& op, int64_t from, int64_t to, const std::string& host = "") const {
    const std::string key = op + "|" + std::to_string(from) + "|" + std::to_string(to) + "|" + host;
    auto it = medians_.find(key);
    if (it == medians_.end()) it = medians_.emplace(key, Median(Of(op, from, to, host))).first;
    return it->second;
  }

 private:
  mutable std::map<std::string, std::vector<const Sample*>> by_op_;
  mutable std::map<std::string, double> medians_;
};

ProbeDays WriteProbeDays(const std::string& store) {
  ProbeDays p;
  p.slow_day = *ParseIso8601("2026-12-31T00:00:00Z");
  p.t0 = p.slow_day - 30 * 86400 * kS;
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> ln(std::log(0.002), 0.3);
  int64_t seq = 0;
  test::StoreFromLines(store, [&](const std::function<Status(std::string_view)>& sink) -> Status {
    for (int64_t t = p.t0; t < p.slow_day + 86400 * kS; t += 600 * kS)
      for (size_t h = 0; h < p.hosts.size(); ++h)
        for (const auto& op : p.ops) {
          double lat = ln(rng);
          if (t >= p.slow_day && (op == "stat" || op == "create")) lat *= 4;
          const auto ns = static_cast<int64_t>(std::llround(lat * 1e9));
          const int64_t at = t + static_cast<int64_t>(h) * kS;
          p.samples.push_back({at, p.hosts[h], op, static_cast<double>(ns) / 1e9});
          const std::string line = "{\"@timestamp\":\"" + FormatIsoMillis(at) +
                                   "\",\"event.dataset\":\"iosonar.probe\",\"event.stream\":" + std::to_string(20 + h) +
                                   ",\"event.seq\":" + std::to_string(++seq) + ",\"host.name\":\"" + p.hosts[h] +
                                   "\",\"lustre.fs\":\"scratch\",\"probe.dir\":\"/scratch/probe\",\"probe.op\":\"" + op +
                                   "\",\"probe.latency_ns\":" + std::to_string(ns) + ",\"probe.ok\":true}";
          if (Status st = sink(line); !st.ok()) return st;
        }
    return Status::Ok();
  });
  return p;
}

rapidjson::Document ReadJson(const std::string& path) {
  rapidjson::Document d;
  d.Parse(test::ReadFile(path).c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

// Every row's t_expected and slowdown of the median against the medians of
// [base_from, base_to), per host for host rows; the slow ops above 1. With
// more intervals than the 10 minutes (serve's 10 min and 4 h), only the 10
// minute rows are looked at.
void CheckRows(const rapidjson::Value& sd, const ProbeDays& p, int64_t base_from, int64_t base_to, const char* kind) {
  rapidjson::Document keep;  // the 10-minute rows
  keep.SetObject();
  rapidjson::Value rows_v(rapidjson::kArrayType), host_v(rapidjson::kArrayType);
  for (const auto& [from, to] : {std::pair{"rows", &rows_v}, std::pair{"host_rows", &host_v}})
    for (const auto& row : sd[from].GetArray())
      if (row["interval_s"].GetInt64() == 600) to->PushBack(rapidjson::Value(row, keep.GetAllocator()), keep.GetAllocator());
  const auto& rows = rows_v;
  REQUIRE(rows.Size() == p.ops.size() * 144);
  size_t slow_rows = 0;
  for (const auto& row : rows.GetArray()) {
    const std::string op = row["op"].GetString();
    const int64_t start = *ParseIso8601(row["start"].GetString());
    INFO(op << " " << row["start"].GetString());
    CHECK(std::string(row["baseline_kind"].GetString()) == kind);
    const double t_expected = p.MedianOf(op, base_from, base_to);
    CHECK(row["baseline_median"].GetDouble() == Approx(t_expected).epsilon(1e-12));
    const double expected = Median(p.Of(op, start, start + 600 * kS)) / t_expected;
    CHECK(row["slowdown_median"].GetDouble() == Approx(expected).epsilon(1e-9));
    if (op == "stat" || op == "create") {
      slow_rows += expected > 1;
      CHECK(row["slowdown_median"].GetDouble() > 1);
    }
  }
  CHECK(slow_rows == 2 * 144);
  const auto& hr = host_v;
  REQUIRE(hr.Size() == p.hosts.size() * p.ops.size() * 144);
  for (const auto& row : hr.GetArray()) {
    const std::string host = row["host"].GetString(), op = row["op"].GetString();
    CHECK(std::string(row["baseline_kind"].GetString()) == kind);
    CHECK(row["baseline_median"].GetDouble() == Approx(p.MedianOf(op, base_from, base_to, host)).epsilon(1e-12));
  }
}
}  // namespace

TEST_CASE("probe slowdown: a slow day after 30 normal days, no stored baseline: the history, said loudly", "[report][probe-slowdown]") {
  test::TempDir tmp;
  const ProbeDays p = WriteProbeDays(tmp / "store");
  auto r = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--day", "2026-12-31", "--html",
                      tmp / "r.html", "--json", tmp / "r.json", "--text", tmp / "r.txt"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const rapidjson::Document d = ReadJson(tmp / "r.json");
  const auto& sd = d["slowdown"];
  CHECK(std::string(sd["baseline"].GetString()) == "history");
  CHECK(sd["rows_without_history"].GetInt() == 0);
  CheckRows(sd, p, p.t0, p.slow_day, "history");
  // No stored baseline: said in the JSON, the HTML, the text and on stderr.
  CHECK_THAT(std::string(d["slowdown_baseline_warning"].GetString()),
             Catch::StartsWith("no stored probe baseline: t_expected is the median of the probe records of the 30 days"));
  const std::string html = test::ReadFile(tmp / "r.html");
  CHECK(html.find("Per probing host") != std::string::npos);
  CHECK(html.find("id=\"slowdown-baseline-warning\"><b>WARNING:</b> no stored probe baseline") != std::string::npos);
  CHECK(test::ReadFile(tmp / "r.txt").find("WARNING: no stored probe baseline") != std::string::npos);
  CHECK(r.err.find("WARNING: no stored probe baseline") != std::string::npos);
}

// With `slowdown baseline` stored (the file beside the store, then the job
// database), `slowdown` and `report` take t_expected from it without reading
// the history: the baseline here covers only the first 20 of the 30 days, so
// its medians differ from the 30-day ones and the expectations below (medians
// of those 20 days, computed here) hold only if the stored one was used.
TEST_CASE("probe slowdown: a slow day against the stored baseline (file and MySQL)", "[report][probe-slowdown][mysql]") {
  test::TempDir tmp;
  const ProbeDays p = WriteProbeDays(tmp / "store");
  const int64_t b_to = p.t0 + 20 * 86400 * kS;
  auto b = test::Run({test::IosonarBin(), "slowdown", "baseline", "--store", tmp / "store", "--from",
                      FormatIsoMillis(p.t0), "--to", FormatIsoMillis(b_to), "--name", "first-20-days"});
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(b.out.find("stored probe baseline 'first-20-days' from file " + tmp / "store" + "/probe-baselines.jsonl") !=
        std::string::npos);
  struct stat st {};
  REQUIRE(stat((tmp / "store/probe-baselines.jsonl").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(Median(p.Of("stat", p.t0, b_to)) != Median(p.Of("stat", p.t0, p.slow_day)));  // the test can tell them apart

  auto r = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--day", "2026-12-31", "--html",
                      tmp / "r.html", "--json", tmp / "r.json", "--text", tmp / "r.txt"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("probe slowdown baseline: stored probe baseline 'first-20-days'") != std::string::npos);
  {
    const rapidjson::Document d = ReadJson(tmp / "r.json");
    const auto& sd = d["slowdown"];
    CHECK(std::string(sd["baseline"].GetString()) == "stored");
    CHECK(std::string(sd["stored_baseline"]["name"].GetString()) == "first-20-days");
    CHECK(std::string(sd["stored_baseline"]["from"].GetString()) == FormatIsoMillis(p.t0));
    CHECK(std::string(sd["stored_baseline"]["to"].GetString()) == FormatIsoMillis(b_to));
    CHECK(std::string(d["slowdown_baseline_warning"].GetString()).empty());
    CheckRows(sd, p, p.t0, b_to, "stored");
  }
  const std::string html = test::ReadFile(tmp / "r.html");
  CHECK(html.find("id=\"slowdown-baseline\">Baseline median (t_expected): stored probe baseline "
                  "&#39;first-20-days&#39;") != std::string::npos);  // the name HTML-escaped
  CHECK(html.find("slowdown-baseline-warning") == std::string::npos);
  CHECK(test::ReadFile(tmp / "r.txt").find("t_expected: stored probe baseline 'first-20-days'") != std::string::npos);

  // `slowdown` alone: the same rows; --baseline-days asks for the history instead.
  auto s = test::Run({test::IosonarBin(), "slowdown", "--store", tmp / "store", "--day", "2026-12-31", "--intervals",
                      "10m", "--format", "json"});
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  {
    rapidjson::Document d;
    d.Parse(s.out.c_str());
    REQUIRE_FALSE(d.HasParseError());
    CheckRows(d, p, p.t0, b_to, "stored");
  }
  auto h = test::Run({test::IosonarBin(), "slowdown", "--store", tmp / "store", "--day", "2026-12-31", "--intervals",
                      "10m", "--format", "json", "--baseline-days", "30"});
  REQUIRE(h.exit_code == 0);
  {
    rapidjson::Document d;
    d.Parse(h.out.c_str());
    REQUIRE_FALSE(d.HasParseError());
    CheckRows(d, p, p.t0, p.slow_day, "history");
  }
  auto bad = test::Run({test::IosonarBin(), "slowdown", "--store", tmp / "store", "--day", "2026-12-31", "--baseline",
                        "nope"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("no probe baseline named 'nope' (stored: first-20-days)") != std::string::npos);

  // The job database: the baseline in probe_baseline (migration 038), read back by report --mysql.
  if (!test::HaveMariaDb()) FAIL("needs mariadb-server (scripts/setup.sh --test)");
  test::MariaDbServer mysql;
  const std::string url = mysql.url("iosonar");
  auto m = test::Run({test::IosonarBin(), "db-migrate", "--mysql", url});
  INFO(m.out << m.err);
  REQUIRE(m.exit_code == 0);
  auto bm = test::Run({test::IosonarBin(), "slowdown", "baseline", "--store", tmp / "store", "--from",
                       FormatIsoMillis(p.t0), "--to", FormatIsoMillis(b_to), "--mysql", url});
  INFO(bm.out << bm.err);
  REQUIRE(bm.exit_code == 0);
  const std::string name = FormatIsoMillis(p.t0) + ".." + FormatIsoMillis(b_to);  // the default name
  CHECK(bm.out.find("stored probe baseline '" + name + "' from mysql probe_baseline") != std::string::npos);
  auto rm = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--day", "2026-12-31", "--mysql", url,
                       "--html", tmp / "m.html", "--json", tmp / "m.json", "--text", tmp / "m.txt"});
  INFO(rm.err);
  REQUIRE(rm.exit_code == 0);
  const rapidjson::Document d = ReadJson(tmp / "m.json");
  CHECK(std::string(d["slowdown"]["stored_baseline"]["name"].GetString()) == name);
  CHECK(std::string(d["slowdown"]["stored_baseline"]["source"].GetString()) == "mysql probe_baseline");
  CheckRows(d["slowdown"], p, p.t0, b_to, "stored");
}

// `iosonar serve`'s daily administrator page takes t_expected as `slowdown`
// and `report --mysql` do: with no stored baseline the 30 days before, with
// the warning on the page; once `slowdown baseline --mysql` stored one (here
// the first 20 days only, so the expectations tell it from the 30-day
// history), that one, named on the page. The API's JSON is checked row by row
// against the medians computed here; the page in headless Chromium.
TEST_CASE("probe slowdown: serve's daily page uses the stored baseline, else the 30 days with a warning",
          "[serve][probe-slowdown][mysql][browser]") {
  if (!test::HaveMariaDb()) FAIL("needs mariadb-server (scripts/setup.sh --test)");
  if (!test::HaveProgram("chromium") || !test::HaveProgram("npm") || !test::HaveProgram("curl"))
    FAIL("chromium, npm and curl are needed (scripts/setup.sh --test)");
  const std::string bdir = test::BinaryDir() + "/test-browser";
  std::filesystem::create_directories(bdir);
  for (const char* f : {"package.json", "package-lock.json", "check_slowdown.mjs"})
    std::filesystem::copy_file(test::SourceDir() + "/test/browser/" + f, bdir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  if (!std::filesystem::exists(bdir + "/node_modules/playwright-core")) {
    auto ci = test::Run({"npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", bdir});
    INFO(ci.out << ci.err);
    REQUIRE(ci.exit_code == 0);
  }
  test::TempDir tmp;
  const ProbeDays p = WriteProbeDays(tmp / "store");
  const int64_t b_to = p.t0 + 20 * 86400 * kS;
  test::MariaDbServer mysql;
  const std::string url = mysql.url("iosonar");
  auto m = test::Run({test::IosonarBin(), "db-migrate", "--mysql", url});
  INFO(m.out << m.err);
  REQUIRE(m.exit_code == 0);
  const int port = test::FreePort();
  const std::string log = tmp / "serve.log";
  test::Child server({test::IosonarBin(), "serve", "--store", tmp / "store", "--mysql", url, "--listen",
                      "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1", "--admins", "root"},
                     {}, log);
  REQUIRE(test::WaitUntil([&] { return !server.Alive() || test::CanConnect(port); }, 20000));
  REQUIRE(server.Alive());
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto api = [&]() {
    auto r = test::Run({"curl", "-s", "-H", "X-Remote-User: root", base + "/api/admin/lassi?day=2026-12-31"});
    INFO(r.err << test::ReadFile(log));
    REQUIRE(r.exit_code == 0);
    auto d = std::make_unique<rapidjson::Document>();
    d->Parse(r.out.c_str());
    INFO(r.out.substr(0, 500));
    REQUIRE_FALSE(d->HasParseError());
    REQUIRE(d->HasMember("slowdown"));
    return d;
  };
  auto page = [&]() {
    auto r = test::Run({"node", bdir + "/check_slowdown.mjs", base, "2026-12-31", "root"});
    INFO(r.out << r.err << test::ReadFile(log));
    CHECK(r.exit_code == 0);
    return r.out;
  };

  // No stored baseline: the 30 days before, said in the JSON and on the page.
  {
    auto d = api();
    const auto& sd = (*d)["slowdown"];
    CHECK(std::string(sd["baseline"].GetString()) == "history");
    CHECK_THAT(std::string(sd["baseline_warning"].GetString()),
               Catch::StartsWith("no stored probe baseline: t_expected is the median of the probe records of the 30 days"));
    CheckRows(sd, p, p.t0, p.slow_day, "history");
    const std::string shown = page();
    CHECK(shown.find("baseline: Baseline median (t_expected): the probe records of the 30 days before "
                     "2026-12-31T00:00:00.000Z") != std::string::npos);
    CHECK(shown.find("warning: WARNING: no stored probe baseline") != std::string::npos);
    CHECK(shown.find("rows: 20") != std::string::npos);
  }

  // The first 20 days stored in the job database: that baseline, named.
  auto b = test::Run({test::IosonarBin(), "slowdown", "baseline", "--store", tmp / "store", "--from",
                      FormatIsoMillis(p.t0), "--to", FormatIsoMillis(b_to), "--name", "first-20-days", "--mysql", url});
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(Median(p.Of("stat", p.t0, b_to)) != Median(p.Of("stat", p.t0, p.slow_day)));  // the test can tell them apart
  {
    auto d = api();
    const auto& sd = (*d)["slowdown"];
    CHECK(std::string(sd["baseline"].GetString()) == "stored");
    CHECK(std::string(sd["stored_baseline"]["name"].GetString()) == "first-20-days");
    CHECK(std::string(sd["stored_baseline"]["source"].GetString()) == "mysql probe_baseline");
    CHECK(std::string(sd["baseline_warning"].GetString()).empty());
    CheckRows(sd, p, p.t0, b_to, "stored");
    const std::string shown = page();
    CHECK(shown.find("baseline: Baseline median (t_expected): stored probe baseline 'first-20-days' from mysql "
                     "probe_baseline") != std::string::npos);
    CHECK(shown.find("warning:") == std::string::npos);
  }
}

// Kunkel & Betke §3.1, §4.6: reads faster than the device's plausible floor
// were served by the page cache. A warm-cache day (100 reads at 40 us, 20 at
// 8 ms; stats at 1 ms): the stored baseline keeps t_expected over the 20
// storage reads and says 100 were left out, in the job database's
// probe_baseline (migration 039) as in the baseline file, and `report`
// reads the count back from MySQL.
TEST_CASE("probe slowdown: cache-served samples are counted in MySQL's probe_baseline", "[probe-slowdown][mysql]") {
  if (!test::HaveMariaDb()) FAIL("needs mariadb-server (scripts/setup.sh --test)");
  test::TempDir tmp;
  const int64_t day = *ParseIso8601("2026-12-30T00:00:00Z");
  int64_t seq = 0;
  test::StoreFromLines(tmp / "store", [&](const std::function<Status(std::string_view)>& sink) -> Status {
    for (int d = 0; d < 2; ++d)
      for (int i = 0; i < 120; ++i) {
        const int64_t t = day + d * 86400 * kS + i * 60 * kS;
        for (const auto& [op, ns] : {std::pair<std::string, int64_t>{"read", i < 100 ? 40000 : 8000000},
                                     std::pair<std::string, int64_t>{"stat", 1000000}}) {
          const std::string line = "{\"@timestamp\":\"" + FormatIsoMillis(t) +
                                   "\",\"event.dataset\":\"iosonar.probe\",\"event.stream\":30,\"event.seq\":" +
                                   std::to_string(++seq) +
                                   ",\"host.name\":\"login1\",\"lustre.fs\":\"scratch\",\"probe.dir\":\"/scratch/probe\","
                                   "\"probe.op\":\"" + op + "\",\"probe.bytes\":" + (op == "read" ? "1048576" : "0") +
                                   ",\"probe.latency_ns\":" + std::to_string(ns) + ",\"probe.ok\":true}";
          if (Status st = sink(line); !st.ok()) return st;
        }
      }
    return Status::Ok();
  });
  test::MariaDbServer mysql;
  const std::string url = mysql.url("iosonar");
  REQUIRE(test::Run({test::IosonarBin(), "db-migrate", "--mysql", url}).exit_code == 0);
  const std::string from = FormatIsoMillis(day), to = FormatIsoMillis(day + 86400 * kS);
  auto file = test::Run({test::IosonarBin(), "slowdown", "baseline", "--store", tmp / "store", "--from", from, "--to", to});
  INFO(file.out << file.err);
  REQUIRE(file.exit_code == 0);
  auto db = test::Run(
      {test::IosonarBin(), "slowdown", "baseline", "--store", tmp / "store", "--from", from, "--to", to, "--mysql", url});
  INFO(db.out << db.err);
  REQUIRE(db.exit_code == 0);
  auto c = MysqlConn::Connect(url);
  REQUIRE(c.ok());
  auto rows = (*c)->Query("SELECT host, op, samples, cache_served, median_s FROM probe_baseline ORDER BY host, op");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);  // (fs row '', login1) x (read, stat)
  for (const auto& r : *rows) {
    INFO(r[0].value_or("") << " " << r[1].value_or(""));
    const bool read = r[1].value_or("") == "read";
    CHECK(std::stoll(r[2].value_or("-1")) == (read ? 20 : 120));
    CHECK(std::stoll(r[3].value_or("-1")) == (read ? 100 : 0));
    CHECK(std::stod(r[4].value_or("-1")) == Approx(read ? 0.008 : 0.001));
  }
  // The file beside the store says the same.
  const std::string lines = test::ReadFile(tmp / "store/probe-baselines.jsonl");
  CHECK(lines.find("\"cache_served\":100") != std::string::npos);
  // report --mysql reads the stored baseline back, the count with it.
  auto rep = test::Run({test::IosonarBin(), "report", "--store", tmp / "store", "--day", "2026-12-31", "--mysql", url,
                        "--json", tmp / "r.json", "--text", tmp / "r.txt", "--html", tmp / "r.html"});
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  const rapidjson::Document d = ReadJson(tmp / "r.json");
  CHECK(std::string(d["slowdown"]["stored_baseline"]["source"].GetString()) == "mysql probe_baseline");
  size_t read_rows = 0;
  for (const auto& row : d["slowdown"]["rows"].GetArray())
    if (std::string(row["op"].GetString()) == "read") {
      ++read_rows;
      CHECK(row["baseline_cache_served"].GetInt64() == 100);
      CHECK(row["baseline_median"].GetDouble() == Approx(0.008));
    }
  CHECK(read_rows > 0);
}
