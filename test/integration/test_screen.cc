// `iosonar screen` on a simulated cluster (Beacon's hourly screening, Table
// 2): an OST slowed to a quarter for 70 minutes while a job writes to it is
// one occurrence of about 70 minutes, also when screened hour by hour with a
// state file; slowed for 50 minutes it is none; the forwarding node in front
// of it, busy with other work, is not an occurrence.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <sys/stat.h>

#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

rapidjson::Document Json(const RunResult& r) {
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  INFO(r.out << r.err);
  REQUIRE(d.IsObject());
  return d;
}

// Job 100: one rank writing without pause (a 8 TiB phase at 1 GiB/s) to one
// OST; job 101: three ranks behind the same forwarding node writing 512 MiB/s
// each to other OSTs (so the forwarding node stays busy near its peak).
const char* kJob100 = "id=100,mode=1-1,first=0,nodes=1,stripes=1,start=0,duration=7200,phase=8192G";
const char* kJob101 = "id=101,mode=N-N,first=1,nodes=3,stripes=1,start=0,duration=7200,bytes=512M,period=1,io=1";

}  // namespace

TEST_CASE("screen: an OST slowed for 70 minutes is one ~70 min occurrence, 50 minutes none", "[screen][simulate]") {
  TempDir dir;
  auto dry = Run({IosonarBin(), "simulate", "--output", "/dev/null", "--nodes", "8", "--fwd", "2", "--osts", "8",
                  "--duration", "2", "--job", kJob100, "--job", kJob101, "--maps", dir / "maps.json"});
  REQUIRE(dry.exit_code == 0);
  rapidjson::Document maps;
  maps.Parse(ReadFile(dir / "maps.json").c_str());
  REQUIRE(maps.IsObject());
  int ost = -1;
  std::set<int> others;
  for (const auto& L : maps["layouts"].GetArray()) {
    if (std::string(L["job_id"].GetString()) == "100") ost = L["osts"][0].GetInt();
    else others.insert(L["osts"][0].GetInt());
  }
  REQUIRE(ost >= 0);
  REQUIRE(others.count(ost) == 0);  // job 101 keeps off the slow OST
  char name[32];
  std::snprintf(name, sizeof name, "simfs-OST%04x", ost);

  for (int minutes : {70, 50}) {
    INFO("slowed for " << minutes << " minutes");
    const std::string store = dir / ("store" + std::to_string(minutes));
    auto sim = Run({IosonarBin(), "simulate", "--store", store, "--nodes", "8", "--fwd", "2", "--osts", "8", "--duration",
                    "7200", "--job", kJob100, "--job", kJob101, "--slow-ost", std::to_string(ost), "--slow-ost-from",
                    "1200", "--slow-ost-to", std::to_string(1200 + minutes * 60)});
    REQUIRE(sim.exit_code == 0);
    auto r = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                  "2026-11-22T02:00:00Z", "--format", "json"});
    REQUIRE(r.exit_code == 0);
    auto d = Json(r);
    const auto& occ = d["occurrences"];
    if (minutes == 50) {
      CHECK(occ.Size() == 0);
      continue;
    }
    REQUIRE(occ.Size() == 1);
    CHECK(std::string(occ[0]["kind"].GetString()) == "ost");
    CHECK(std::string(occ[0]["name"].GetString()) == name);
    CHECK(std::string(occ[0]["start"].GetString()) == "2026-11-22T00:20:00.000Z");
    CHECK(std::fabs(occ[0]["duration_s"].GetDouble() - 70 * 60) <= 60);
    // A quarter of the rank's bandwidth plus the untraced background (< 16 MiB/s).
    CHECK(occ[0]["max_bw_ratio"].GetDouble() < 0.3);
    CHECK(occ[0]["max_bw_ratio"].GetDouble() > 0.2);
    CHECK(occ[0]["end"].IsString());

    // Hour by hour with a state file: nothing in the first hour (40 minutes
    // so far), then one occurrence from 00:20, reported as new once.
    const std::string state = dir / "state.json";
    auto h1 = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                   "2026-11-22T01:00:00Z", "--format", "json", "--state", state});
    REQUIRE(h1.exit_code == 0);
    CHECK(Json(h1)["occurrences"].Size() == 0);
    struct stat st {};
    REQUIRE(::stat(state.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    auto h2 = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T01:00:00Z", "--to",
                   "2026-11-22T02:00:00Z", "--format", "json", "--state", state});
    REQUIRE(h2.exit_code == 0);
    auto d2 = Json(h2);
    REQUIRE(d2["occurrences"].Size() == 1);
    CHECK(std::string(d2["occurrences"][0]["start"].GetString()) == "2026-11-22T00:20:00.000Z");
    CHECK(std::fabs(d2["occurrences"][0]["duration_s"].GetDouble() - 70 * 60) <= 60);
    CHECK(d2["occurrences"][0]["new"].GetBool());

    // Records: one per occurrence, schema-valid.
    auto o = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                  "2026-11-22T02:00:00Z", "--output", dir / "occ.jsonl"});
    REQUIRE(o.exit_code == 0);
    const auto recs = SplitLines(ReadFile(dir / "occ.jsonl"));
    REQUIRE(recs.size() == 1);
    ParsedLines parsed;
    parsed.Add(recs[0]);
    CHECK(recs[0].find(name) != std::string::npos);

    // MySQL: screened up to 01:25 the occurrence is open (the view lists it);
    // screened to 02:00 the same row (same start) is closed.
    if (HaveMariaDb()) {
      MariaDbServer db;
      auto mig = Run({IosonarBin(), "db-migrate", "--mysql", db.url()});
      REQUIRE(mig.exit_code == 0);
      auto view = [&] {
        auto q = Run({"/usr/bin/mariadb", "-S", db.socket(), "-uroot", "-N", "-B", "iosonar", "-e",
                      "SELECT kind, server, start_time, duration_s FROM open_server_anomalies"});
        REQUIRE(q.exit_code == 0);
        return q.out;
      };
      auto m1 = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                     "2026-11-22T01:25:00Z", "--mysql", db.url()});
      INFO(m1.err);
      REQUIRE(m1.exit_code == 0);
      CHECK(view() == "ost\t" + std::string(name) + "\t2026-11-22 00:20:00.000000\t3900\n");
      auto m2 = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                     "2026-11-22T02:00:00Z", "--mysql", db.url()});
      REQUIRE(m2.exit_code == 0);
      CHECK(view().empty());
    } else {
      FAIL("mariadb-server is not installed (scripts/setup.sh --test installs it)");
    }

    // The worker screens every whole hour not yet screened (here: since the
    // state's 00:00 up to now), continuing the occurrence across hours.
    const std::string wstate = dir / ("worker-state" + std::to_string(minutes) + ".json");
    WriteFile(wstate, "{\"to_ns\": 1795305600000000000}\n");  // 2026-11-22T00:00:00Z
    const std::string wout = dir / ("worker" + std::to_string(minutes) + ".jsonl");
    auto w = Run({IosonarBin(), "analyze", "--queue", dir / "queue", "--store", store, "--screen-state", wstate,
                  "--output", wout});
    INFO(w.err);
    REQUIRE(w.exit_code == 0);
    CHECK(w.out.find("screened 2026-11-22T00:00:00.000Z .. 2026-11-22T01:00:00.000Z: 0 occurrence(s)") != std::string::npos);
    CHECK(w.out.find("screened 2026-11-22T01:00:00.000Z .. 2026-11-22T02:00:00.000Z: 1 occurrence(s)") != std::string::npos);
    const auto wrecs = SplitLines(ReadFile(wout));
    REQUIRE(wrecs.size() == 1);
    CHECK(wrecs[0].find(name) != std::string::npos);
    CHECK(wrecs[0].find("\"result.interval_ns\":4200000000000") != std::string::npos);  // 70 min

    // A known peak from a file: 10x the observed one puts every busy server under 30 %.
    const std::string peaks = dir / "peaks.txt";
    FILE* f = std::fopen(peaks.c_str(), "w");
    REQUIRE(f);
    std::fprintf(f, "# name bytes/s\n%s 1e12\n", name);
    std::fclose(f);
    auto p = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                  "2026-11-22T02:00:00Z", "--format", "json", "--peak", peaks, "--only", "ost"});
    REQUIRE(p.exit_code == 0);
    auto dp = Json(p);
    REQUIRE(dp["occurrences"].Size() == 1);
    CHECK(std::fabs(dp["occurrences"][0]["duration_s"].GetDouble() - 7200) <= 60);
  }
  // Bad input is named.
  auto bad = Run({IosonarBin(), "screen", "--store", dir / "store70", "--from", "yesterday", "--to", "2026-11-22T02:00:00Z"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--from") != std::string::npos);
}

TEST_CASE("screen: an occurrence beyond --alert-after is e-mailed once to a real SMTP server", "[screen][alert]") {
  if (Run({"/usr/bin/python3", "-c", "import aiosmtpd"}).exit_code != 0) {
    FAIL("python3-aiosmtpd is not installed (scripts/setup.sh --test installs it)");
  }
  TempDir dir;
  auto dry = Run({IosonarBin(), "simulate", "--output", "/dev/null", "--nodes", "8", "--fwd", "2", "--osts", "8",
                  "--duration", "2", "--job", kJob100, "--job", kJob101, "--maps", dir / "maps.json"});
  REQUIRE(dry.exit_code == 0);
  rapidjson::Document maps;
  maps.Parse(ReadFile(dir / "maps.json").c_str());
  int ost = -1;
  for (const auto& L : maps["layouts"].GetArray())
    if (std::string(L["job_id"].GetString()) == "100") ost = L["osts"][0].GetInt();
  REQUIRE(ost >= 0);
  const std::string store = dir / "store";
  auto sim = Run({IosonarBin(), "simulate", "--store", store, "--nodes", "8", "--fwd", "2", "--osts", "8", "--duration",
                  "7200", "--job", kJob100, "--job", kJob101, "--slow-ost", std::to_string(ost), "--slow-ost-from",
                  "1200", "--slow-ost-to", "5400"});
  REQUIRE(sim.exit_code == 0);

  // aiosmtpd's Mailbox handler writes each message it accepts into a Maildir.
  const int port = FreePort();
  const std::string mbox = dir / "mail";
  Child smtpd({"/usr/bin/python3", "-m", "aiosmtpd", "-n", "-l", "127.0.0.1:" + std::to_string(port), "-c",
               "aiosmtpd.handlers.Mailbox", mbox},
              {}, dir / "smtpd.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto delivered = [&] {
    auto ls = Run({"/bin/sh", "-c", "ls " + mbox + "/new 2>/dev/null"});
    return SplitLines(ls.out);
  };
  const std::string smtp = "smtp://127.0.0.1:" + std::to_string(port);
  // The 70-minute occurrence is past a 60-minute --alert-after; the first
  // run sends, the second (same state) does not.
  for (int run = 0; run < 2; ++run) {
    auto r = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                  "2026-11-22T02:00:00Z", "--only", "ost", "--state", dir / "state.json", "--alert-to",
                  "admin@example.org,oncall@example.org", "--alert-after", "60m", "--smtp", smtp});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  auto mails = delivered();
  REQUIRE(mails.size() == 1);
  const std::string text = ReadFile(mbox + "/new/" + mails[0]);
  char name[32];
  std::snprintf(name, sizeof name, "simfs-OST%04x", ost);
  CHECK(text.find(std::string("Subject: iosonar: ost ") + name) != std::string::npos);
  CHECK(text.find("To: <admin@example.org>, <oncall@example.org>") != std::string::npos);
  CHECK(text.find("iosonar screen --store") != std::string::npos);
  // Not yet due with the default 96 hours: nothing sent, nothing recorded.
  auto r = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to",
                "2026-11-22T02:00:00Z", "--state", dir / "state2.json", "--alert-to", "admin@example.org", "--smtp", smtp});
  REQUIRE(r.exit_code == 0);
  CHECK(delivered().size() == 1);
  // A server that does not answer is an error naming it.
  r = Run({IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to", "2026-11-22T02:00:00Z",
           "--state", dir / "state3.json", "--alert-to", "admin@example.org", "--alert-after", "1m", "--smtp",
           "smtp://127.0.0.1:" + std::to_string(FreePort())});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("smtp://127.0.0.1") != std::string::npos);
}
