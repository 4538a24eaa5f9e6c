// `iosonar serve`'s job page panels and diagnosis against the simulator's
// ground truth (--truth), on a simulated cluster (seeds and sizes the other
// tests do not use): eight runs of one application, a forwarding node slow
// during run 3006 and the OST holding most of run 3008's files slow during
// 3008, `iosonar anomaly --mysql` run on the later runs as an administrator
// would, then the page in headless Chromium (test/browser/check_panels.mjs)
// and the JSON API.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {
namespace {

rapidjson::Document Parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

// The simulated cluster: 8 runs (3001..3008) of ./app on app_nodes nodes.
struct Cluster {
  TempDir dir;
  MariaDbServer db;
  std::string store = dir / "store";
  rapidjson::Document truth;
  std::map<std::string, std::set<std::string>> slow_of;  // job -> the truth's slow servers
  std::optional<Child> server;
  int port = FreePort();

  Cluster(int nodes, int fwd, int app_nodes, int seed) {
    std::vector<std::string> common = {"--nodes", std::to_string(nodes), "--fwd", std::to_string(fwd), "--osts", "8",
                                       "--duration", "480", "--seed", std::to_string(seed), "--maps", dir / "maps.json"};
    for (int k = 0; k < 8; ++k) {
      common.push_back("--job");
      common.push_back("id=" + std::to_string(3001 + k) + ",user=daemon,mode=N-N,first=0,nodes=" +
                       std::to_string(app_nodes) + ",stripes=1,start=" + std::to_string(k * 60) +
                       ",duration=50,period=5,phase=2G,cmd=./app");
    }
    // Which OST holds most of run 3008's files (a dry run gives the layouts).
    auto dry = std::vector<std::string>{IosonarBin(), "simulate", "--output", "/dev/null"};
    dry.insert(dry.end(), common.begin(), common.end());
    REQUIRE(Run(dry).exit_code == 0);
    auto maps = Parse(ReadFile(dir / "maps.json"));
    std::map<int, int> files_on;
    for (const auto& L : maps["layouts"].GetArray())
      if (std::string(L["job_id"].GetString()) == "3008") files_on[L["osts"][0].GetInt()]++;
    int slow_ost = -1;
    for (auto [o, n] : files_on)
      if (slow_ost < 0 || n > files_on[slow_ost]) slow_ost = o;
    auto args = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--truth", dir / "truth.json",
                                         "--mysql", db.url(), "--slow-fwd", "1", "--slow-fwd-from", "300",
                                         "--slow-fwd-to", "360", "--slow-ost", std::to_string(slow_ost),
                                         "--slow-ost-from", "420", "--slow-ost-to", "480"};
    args.insert(args.end(), common.begin(), common.end());
    auto r = Run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    truth.Parse(ReadFile(dir / "truth.json").c_str());
    REQUIRE(truth.IsObject());
    for (const auto& j : truth["jobs"].GetArray())
      for (const auto& n : j["slow_servers"].GetArray()) slow_of[j["job_id"].GetString()].insert(n.GetString());
    // The analysis an administrator runs after each job (its results in MySQL).
    for (int k = 4; k <= 8; ++k) {
      auto a = Run({IosonarBin(), "anomaly", std::to_string(3000 + k), "--store", store, "--mysql", db.url()});
      INFO(a.out << a.err);
      REQUIRE(a.exit_code == 0);
    }
    server.emplace(std::vector<std::string>{IosonarBin(), "serve", "--store", store, "--mysql", db.url(), "--listen",
                                            "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1",
                                            "--admins", "root", "--threads", "2", "--cluster", "sim"},
                   std::map<std::string, std::string>{}, dir / "serve.log");
    REQUIRE(WaitUntil([&] { return !server->Alive() || CanConnect(port); }, 20000));
    REQUIRE(server->Alive());
  }
  ~Cluster() {
    if (server) server->Stop();
  }
  const rapidjson::Value& Truth(const std::string& job) const {
    for (const auto& j : truth["jobs"].GetArray())
      if (job == j["job_id"].GetString()) return j;
    FAIL("job " << job << " is not in the truth");
    return truth;
  }
  // GET as user: (HTTP status, body).
  std::pair<int, std::string> Get(const std::string& path, const std::string& user) {
    auto r = Run({"curl", "-s", "-w", "\n%{http_code}", "-H", "X-Remote-User: " + user,
                  "http://127.0.0.1:" + std::to_string(port) + path});
    REQUIRE(r.exit_code == 0);
    const size_t nl = r.out.rfind('\n');
    return {std::stoi(r.out.substr(nl + 1)), r.out.substr(0, nl)};
  }
};

std::string Ost(int i) {
  char b[32];
  std::snprintf(b, sizeof b, "simfs-OST%04x", i);
  return b;
}

}  // namespace

// On seeds and sizes no other test uses (the diagnosis test in
// test_serve.cc has seed 1, 32 nodes): each job the truth says a slow server
// slowed has that server in its first diagnosis, graded high, on the API and
// first on the page; no job's first diagnosis names a server without a fault.
TEST_CASE("serve: each slowed job's first diagnosis is the simulator's slow server", "[serve][integration][truth]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  REQUIRE(HaveProgram("curl"));
  struct Size {
    int nodes, fwd, app_nodes, seed;
  };
  for (const Size sz : {Size{40, 10, 12, 29}, Size{48, 12, 20, 53}}) {
    INFO(sz.app_nodes << " of " << sz.nodes << " nodes, " << sz.fwd << " forwarding nodes, seed " << sz.seed);
    Cluster c(sz.nodes, sz.fwd, sz.app_nodes, sz.seed);
    CHECK(c.slow_of["3006"] == std::set<std::string>{"fwd001"});
    CHECK(c.slow_of["3008"].size() == 1);
    int slowed = 0;
    for (int k = 4; k <= 8; ++k) {
      const std::string job = std::to_string(3000 + k);
      INFO("job " << job);
      auto [st, body] = c.Get("/api/jobs/" + job, "daemon");
      REQUIRE(st == 200);
      auto d = Parse(body);
      REQUIRE(d.HasMember("diagnosis"));
      REQUIRE(d["diagnosis"].Size() >= 1);
      const auto& first = d["diagnosis"][0];
      const std::string kind = first["kind"].GetString(), cause = first["cause"].GetString();
      INFO("first diagnosis " << kind << ": " << cause);
      const auto& want = c.slow_of[job];
      if (!want.empty()) {
        ++slowed;
        CHECK(kind == "slow_server");
        CHECK(std::string(first["severity"].GetString()) == "high");
        for (const auto& n : want) CHECK(cause.find(n) != std::string::npos);
        // The page says the same first.
        auto [pst, page] = c.Get("/jobs/" + job, "daemon");
        REQUIRE(pst == 200);
        const size_t li = page.find("<ol class=\"diagnosis\"><li");
        REQUIRE(li != std::string::npos);
        CHECK(page.substr(li, 200).find("data-kind=\"slow_server\"") != std::string::npos);
      } else {
        CHECK(kind != "slow_server");  // no server named without a fault
      }
    }
    CHECK(slowed == 2);  // runs 3006 and 3008
  }
}

// The panels draw the store's numbers: what check_panels.mjs reads off the
// drawn SVG equals what the simulator says it wrote (request sizes, op
// counts, per-process bytes, the job's bytes per OST and forwarding node,
// the lagging server), and the admin heat map's legend and idle hours.
TEST_CASE("serve: the job page's panels draw the simulator's numbers in Chromium", "[serve][integration][browser]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  if (!HaveProgram("chromium") || !HaveProgram("npm") || !HaveProgram("curl"))
    FAIL("chromium, npm and curl are needed (scripts/setup.sh --test)");
  const std::string bdir = BinaryDir() + "/test-browser";
  std::filesystem::create_directories(bdir);
  for (const char* f : {"package.json", "package-lock.json", "check_panels.mjs"})
    std::filesystem::copy_file(SourceDir() + "/test/browser/" + f, bdir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  if (!std::filesystem::exists(bdir + "/node_modules/playwright-core")) {
    auto ci = Run({"npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", bdir});
    INFO(ci.out << ci.err);
    REQUIRE(ci.exit_code == 0);
  }
  Cluster c(24, 6, 6, 41);
  const std::string job = "3008";
  const auto& t = c.Truth(job);
  // The expected drawing, from the truth (and the job's specification: 1 MiB
  // requests, one rank a node, every rank alike).
  const int64_t wbytes = t["write_bytes"].GetInt64();
  REQUIRE(wbytes > 0);
  REQUIRE(t["read_bytes"].GetInt64() == 0);
  const int64_t ranks = t["nodes"].GetInt64();
  REQUIRE(wbytes % (1 << 20) == 0);
  rapidjson::Document e(rapidjson::kObjectType);
  auto& a = e.GetAllocator();
  e.AddMember("job", rapidjson::Value(job.c_str(), a), a);
  e.AddMember("rows", ranks, a);
  e.AddMember("row_write_bytes", wbytes / ranks, a);
  e.AddMember("write_ops_100K_1M", wbytes >> 20, a);
  e.AddMember("opens", t["opens"].GetInt64(), a);
  rapidjson::Value servers(rapidjson::kObjectType);
  for (const auto& o : t["osts"].GetArray())
    if (o["job_bytes"].GetInt64() > 0)
      servers.AddMember(rapidjson::Value(Ost(o["ost"].GetInt()).c_str(), a), rapidjson::Value(o["job_bytes"].GetInt64()), a);
  REQUIRE(t.HasMember("forwarding"));
  for (const auto& f : t["forwarding"].GetArray())
    servers.AddMember(rapidjson::Value(f["name"].GetString(), a), rapidjson::Value(f["job_bytes"].GetInt64()), a);
  e.AddMember("servers", servers, a);
  rapidjson::Value lagging(rapidjson::kArrayType);
  REQUIRE(c.slow_of[job].size() == 1);
  for (const auto& n : c.slow_of[job]) lagging.PushBack(rapidjson::Value(n.c_str(), a), a);
  e.AddMember("lagging", lagging, a);
  e.AddMember("runtime_s", static_cast<double>(t["end_ns"].GetInt64() - t["start_ns"].GetInt64()) / 1e9, a);
  e.AddMember("day", "2026-11-22", a);
  std::set<std::string> busy_fwd;  // every job's forwarding nodes
  for (const auto& j : c.truth["jobs"].GetArray())
    for (const auto& f : j["forwarding"].GetArray())
      if (f["job_bytes"].GetInt64() > 0) busy_fwd.insert(f["name"].GetString());
  CHECK(busy_fwd.size() == 2);
  rapidjson::Value busy(rapidjson::kArrayType);
  for (const auto& f : busy_fwd) busy.PushBack(rapidjson::Value(f.c_str(), a), a);
  e.AddMember("busy_forwarding", busy, a);
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  e.Accept(w);
  WriteFile(c.dir / "expected.json", sb.GetString());

  const std::string shots = BinaryDir() + "/test-artifacts/serve-panels";
  std::filesystem::create_directories(shots);
  auto r = Run({"node", bdir + "/check_panels.mjs", "http://127.0.0.1:" + std::to_string(c.port), shots,
                c.dir / "expected.json"});
  INFO(sb.GetString() << "\n" << r.out << r.err << ReadFile(c.dir / "serve.log"));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("ok") != std::string::npos);

  // The API serves the same numbers (the timeline's totals are the truth's).
  auto [st, body] = c.Get("/api/jobs/" + job + "/timeline", "daemon");
  REQUIRE(st == 200);
  auto tl = Parse(body);
  CHECK(std::string(tl["rows_by"].GetString()) == "process");
  CHECK(tl["rows"].Size() == static_cast<size_t>(ranks));
  int64_t sum = 0;
  for (const auto& row : tl["rows"].GetArray()) sum += row["write_bytes"].GetInt64();
  CHECK(sum == wbytes);
  CHECK(c.Get("/api/jobs/" + job + "/timeline", "bin").first == 404);  // another user's job
}

}  // namespace iosonar::test
