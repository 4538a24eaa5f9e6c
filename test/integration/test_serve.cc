// `iosonar serve` against real servers: a MariaDB job database and a store
// filled by `iosonar simulate` with jobs of two users (daemon, uid 1, and bin,
// uid 2: users every Debian system has) and an administrator (root), a real
// Redis cache and a real munged. Checks isolation (URL, API, list), the
// trusted-proxy rule, MUNGE credentials, HTML escaping, the cache and its
// single flight, the OpenAPI file, and (in headless Chromium) the pages.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <rapidjson/document.h>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "test/testutil/mariadb_server.h"
#include "test/testutil/munge_daemon.h"
#include "test/testutil/sim_truth.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {
namespace {

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// GET path from 127.0.0.1:port, the connection made from source_ip, with
// these header lines ("Name: value") as they are (a name may come twice).
HttpResult GetLines(int port, const std::string& path, const std::vector<std::string>& header_lines,
                    const std::string& source_ip = "127.0.0.1") {
  HttpResult r;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, source_ip.c_str(), &src.sin_addr);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0);
  // A safety net, not a timing assertion: a server that never answers fails
  // the test instead of hanging it.
  timeval tv{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  for (const auto& line : header_lines) req += line + "\r\n";
  req += "\r\n";
  REQUIRE(SendAll(fd, req));
  std::string resp;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t head_end = resp.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  std::string head = resp.substr(0, head_end);
  r.status = std::stoi(head.substr(9, 3));
  size_t at = head.find("\r\n");
  while (at != std::string::npos) {
    size_t next = head.find("\r\n", at + 2);
    std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string k = line.substr(0, colon);
      for (auto& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[k] = line.substr(colon + 2);
    }
    at = next;
  }
  std::string body = resp.substr(head_end + 4);
  if (r.headers["transfer-encoding"] == "chunked") {
    std::string out;
    size_t p = 0;
    while (p < body.size()) {
      size_t eol = body.find("\r\n", p);
      size_t n = std::stoul(body.substr(p, eol - p), nullptr, 16);
      if (n == 0) break;
      out += body.substr(eol + 2, n);
      p = eol + 2 + n + 2;
    }
    body = out;
  }
  r.body = body;
  return r;
}

// GET path from 127.0.0.1:port, the connection made from source_ip.
HttpResult Get(int port, const std::string& path, const std::map<std::string, std::string>& headers = {},
               const std::string& source_ip = "127.0.0.1") {
  std::vector<std::string> lines;
  for (const auto& [k, v] : headers) lines.push_back(k + ": " + v);
  return GetLines(port, path, lines, source_ip);
}

std::map<std::string, std::string> As(const std::string& user) { return {{"X-Remote-User", user}}; }

// /api/jobs/JOB is job-summary's JSON with the diagnosis added as its last
// member: the body without it, to compare with the command's output.
std::string WithoutDiagnosis(const std::string& body) {
  const size_t at = body.find(",\n  \"diagnosis\": ");
  const size_t close = body.rfind("\n}");
  if (at == std::string::npos || close == std::string::npos || close < at) return body;
  return body.substr(0, at) + body.substr(close);
}

bool Lists(const std::string& list_json, const std::string& job) {
  return list_json.find("\"job_id\": \"" + job + "\"") != std::string::npos;
}

constexpr const char* kEvilName = "<script>alert(1)</script>";

// The world of these tests: database, store, Redis, munged and the server.
struct World {
  TempDir dir;
  MariaDbServer db;
  RedisServer redis;
  MungeDaemon munge;
  int port = FreePort();
  std::optional<Child> server;
  std::string log = dir / "serve.log";

  World() {
    // daemon: 101 (N-1 over 16 processes, a name with HTML) and 103; bin: 102.
    auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "16", "--fwd", "2", "--osts", "4",
                    "--duration", "30", "--mysql", db.url(),
                    "--job", std::string("id=101,user=daemon,name=") + kEvilName + ",mode=N-1,first=0,nodes=4,ppn=4,duration=12,period=3,io=1,bytes=4M,req=64K",
                    "--job", "id=102,user=bin,name=bins-app,mode=N-N,first=4,nodes=4,ppn=1,duration=10,period=2,io=1,bytes=8M",
                    "--job", "id=103,user=daemon,name=second,mode=1-1,first=8,nodes=1,ppn=1,duration=8,period=2,io=1,bytes=8M"});
    REQUIRE(sim.exit_code == 0);
    // bin's job 104 on a second cluster, beta, whose records are in a store of its own.
    auto beta = Run({IosonarBin(), "simulate", "--cluster", "beta", "--store", dir / "beta", "--nodes", "4", "--fwd", "1",
                     "--osts", "2", "--duration", "10", "--mysql", db.url(), "--job",
                     "id=104,user=bin,name=on-beta,mode=N-N,first=0,nodes=2,ppn=1,duration=8,period=2,io=1,bytes=4M"});
    REQUIRE(beta.exit_code == 0);
    server.emplace(std::vector<std::string>{IosonarBin(), "serve", "--store", dir / "store", "--cluster-store",
                                            "beta=" + std::string(dir / "beta"), "--mysql", db.url(),
                                            "--redis", redis.url(), "--listen", "127.0.0.1:" + std::to_string(port),
                                            "--trusted-proxy", "127.0.0.1", "--admins", "root", "--munge-socket",
                                            munge.socket(), "--threads", "4", "--cluster", "sim"},
                   std::map<std::string, std::string>{}, log);
    REQUIRE(WaitUntil([&] { return !server->Alive() || CanConnect(port); }, 20000));
    REQUIRE(server->Alive());
  }
  ~World() {
    if (server) server->Stop();
  }
  HttpResult Get(const std::string& path, const std::map<std::string, std::string>& h = {},
                 const std::string& src = "127.0.0.1") {
    return test::Get(port, path, h, src);
  }
};

}  // namespace

// The checks that change nothing the others look at share one World, in
// this order (the user's checks before the administrator computes other
// users' jobs); those that change the server's state, below, get one each.
TEST_CASE("serve: isolation, identity, escaping and the API contract", "[serve][integration]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  World w;

  {
    INFO("no identity is 401, on the API and the pages");
    for (const char* p : {"/api/jobs", "/api/jobs/101", "/jobs", "/jobs/101", "/admin", "/api/me"})
      CHECK(w.Get(p).status == 401);
    // static files need none
    auto js = w.Get("/static/uplot.js");
    CHECK(js.status == 200);
    CHECK(js.body.find("uPlot") != std::string::npos);
  }

  {
    INFO("a user header from an address that is not a trusted proxy is ignored");
    CHECK(w.Get("/api/jobs", As("root"), "127.0.0.2").status == 401);
    CHECK(w.Get("/api/jobs/101", As("daemon"), "127.0.0.2").status == 401);
  }

  {
    INFO("an identity header given twice, in any case, is refused with 400: neither is believed");
    // a proxy that appends X-Remote-User to the client's own would otherwise let the client pick
    for (const auto& lines : std::vector<std::vector<std::string>>{
             {"X-Remote-User: root", "X-Remote-User: daemon"},
             {"X-Remote-User: daemon", "x-remote-user: root"},
             {"X-REMOTE-USER: daemon", "X-Remote-User: daemon"},  // even the same name twice
             {"X-Munge-Credential: " + w.munge.Credential(1, 1), "X-Munge-Credential: MUNGE:garbage:"}}) {
      auto api = GetLines(w.port, "/api/jobs/102", lines);
      INFO(lines[0] << " / " << lines[1]);
      CHECK(api.status == 400);
      CHECK(api.body.find("headers; exactly one is allowed") != std::string::npos);
      CHECK(api.body.find("bins-app") == std::string::npos);
      auto page = GetLines(w.port, "/jobs", lines);
      CHECK(page.status == 400);
      CHECK(page.body.find("exactly one is allowed") != std::string::npos);
    }
    // one of each is fine (the credential decides), and one header still works
    CHECK(GetLines(w.port, "/api/me", {"X-Remote-User: root", "X-Munge-Credential: " + w.munge.Credential(1, 1)})
              .body.find("\"user\":\"daemon\"") != std::string::npos);
    CHECK(GetLines(w.port, "/api/jobs/101", {"X-Remote-User: daemon"}).status == 200);
  }

  {
    INFO("each user sees their own jobs only: by list, by API, by URL");
    auto mine = w.Get("/api/jobs", As("daemon"));
    REQUIRE(mine.status == 200);
    CHECK(Lists(mine.body, "101"));
    CHECK(Lists(mine.body, "103"));
    CHECK_FALSE(Lists(mine.body, "102"));
    // parameters choose nothing: no all= or job= widens a listing, and user=
    // only narrows it (bin's jobs that daemon may see: none)
    auto param = w.Get("/api/jobs?all=1&job=102", As("daemon"));
    CHECK(param.body == mine.body);
    auto narrowed = w.Get("/api/jobs?user=bin&all=1", As("daemon"));
    CHECK(narrowed.status == 200);
    CHECK(narrowed.body == "[]\n");
    CHECK(w.Get("/jobs?user=bin&sort=user", As("daemon")).body.find("bins-app") == std::string::npos);
    auto theirs = w.Get("/api/jobs", As("bin"));
    CHECK(Lists(theirs.body, "102"));
    CHECK_FALSE(Lists(theirs.body, "101"));
    CHECK_FALSE(Lists(theirs.body, "103"));
    // Another user's job answers exactly like a job that does not exist.
    auto other = w.Get("/api/jobs/102", As("daemon"));
    auto none = w.Get("/api/jobs/999999", As("daemon"));
    CHECK(other.status == 404);
    CHECK(other.body == none.body);
    for (const char* p : {"/api/jobs/102/series", "/api/jobs/102/phases", "/api/jobs/102/advice", "/jobs/102"})
      CHECK(w.Get(p, As("daemon")).status == 404);
    CHECK(w.Get("/jobs/101", As("bin")).status == 404);
    // ... and nothing of it was computed or cached for the asker
    CHECK(w.redis.Command({"EXISTS", "iosonar:job:102:summary"}) == "0");
    // the administration pages are not there for users
    CHECK(w.Get("/admin", As("daemon")).status == 404);
    CHECK(w.Get("/api/admin/heatmap?day=2026-11-22", As("daemon")).status == 404);
    CHECK(w.Get("/api/admin/jobs/101/osts", As("daemon")).status == 404);
    CHECK(w.Get("/api/admin/lassi?day=2026-11-22", As("daemon")).status == 404);
    CHECK(w.Get("/api/admin/jobs/101/neighbours", As("daemon")).status == 404);
    // a job id that is no number names no job
    CHECK(w.Get("/api/jobs/..%2f102", As("daemon")).status == 404);
    CHECK(w.Get("/api/jobs/0101", As("daemon")).status == 404);  // only the canonical form
  }

  {
    INFO("a MUNGE credential of daemon gives daemon's view, once");
    std::string cred = w.munge.Credential(1, 1);
    // from an untrusted address, with a forged user header beside it: the credential decides
    auto me = w.Get("/api/me", {{"X-Munge-Credential", cred}, {"X-Remote-User", "root"}}, "127.0.0.2");
    REQUIRE(me.status == 200);
    CHECK(me.body.find("\"user\":\"daemon\"") != std::string::npos);
    CHECK(me.body.find("\"admin\":false") != std::string::npos);
    // munged refuses a replayed credential
    CHECK(w.Get("/api/jobs", {{"X-Munge-Credential", cred}}, "127.0.0.2").status == 401);
    auto list = w.Get("/api/jobs", {{"X-Munge-Credential", w.munge.Credential(1, 1)}}, "127.0.0.2");
    REQUIRE(list.status == 200);
    CHECK(Lists(list.body, "101"));
    CHECK_FALSE(Lists(list.body, "102"));
    CHECK(w.Get("/api/jobs/102", {{"X-Munge-Credential", w.munge.Credential(1, 1)}}, "127.0.0.2").status == 404);
    CHECK(w.Get("/api/jobs/102", {{"X-Munge-Credential", w.munge.Credential(2, 2)}}, "127.0.0.2").status == 200);
    CHECK(w.Get("/api/jobs", {{"X-Munge-Credential", "MUNGE:garbage:"}}).status == 401);
  }

  {
    INFO("a job id in a path is exact: a NUL, a trailing or doubled '/' name no job");
    REQUIRE(w.Get("/api/jobs/101", As("daemon")).status == 200);
    for (const char* p : {"/api/jobs/101%00x", "/api/jobs/101%00", "/api/jobs/101/", "/api/jobs//101",
                          "/api/jobs/101/series/", "/api/jobs/101%00/series", "/jobs/101/", "/jobs/101%00x",
                          "/api/jobs/101%2f", "/api/admin/jobs/101%00/neighbours"}) {
      auto r = w.Get(p, As(std::string(p).find("admin") != std::string::npos ? "root" : "daemon"));
      INFO(p << " -> " << r.status << " " << r.body);
      CHECK(r.status == 404);
      CHECK(r.body.find("job_id") == std::string::npos);  // not job 101's summary
      const bool says_why = r.body.find("digits only") != std::string::npos ||
                            r.body.find("trailing or doubled") != std::string::npos;
      CHECK(says_why);
    }
    // an escaped digit is still the same id (only %00 is kept as it is)
    CHECK(w.Get("/api/jobs/10%31", As("daemon")).status == 200);
  }

  {
    INFO("the job page shows a job name with HTML as text, under a strict CSP");
    auto page = w.Get("/jobs/101", As("daemon"));
    REQUIRE(page.status == 200);
    CHECK(page.body.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(page.body.find(kEvilName) == std::string::npos);
    const std::string csp = page.headers["content-security-policy"];
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("unsafe-inline") == std::string::npos);
    CHECK(page.headers["x-content-type-options"] == "nosniff");
    auto list = w.Get("/jobs", As("daemon"));
    CHECK(list.body.find("&lt;script&gt;") != std::string::npos);
    CHECK(list.body.find(kEvilName) == std::string::npos);
  }

  {
    INFO("the administrator sees both users' jobs and the heatmap");
    auto all = w.Get("/api/jobs", As("root"));
    CHECK(Lists(all.body, "101"));
    CHECK(Lists(all.body, "102"));
    CHECK(w.Get("/api/jobs/102", As("root")).status == 200);
    CHECK(w.Get("/jobs/101", As("root")).status == 200);
    auto hm = w.Get("/api/admin/heatmap?day=2026-11-22", As("root"));
    REQUIRE(hm.status == 200);
    CHECK(hm.body.find("simfs-OST0000") != std::string::npos);
    // the day is over: cached under the key scheme, and the page reads it back
    CHECK(w.redis.Command({"GET", "iosonar:heatmap:v2:2026-11-22"}) == hm.body);
    auto lassi = w.Get("/api/admin/lassi?day=2026-11-22", As("root"));
    REQUIRE(lassi.status == 200);
    CHECK(lassi.body.find("\"fs\":\"simfs\"") != std::string::npos);
    CHECK(w.Get("/api/admin/lassi?day=22.11.2026", As("root")).status == 400);
    {
      // One reading: the admin page's LASSi of a day is what `iosonar lassi
      // --day D --mysql URL` prints for it, number for number, with and
      // without a stored baseline.
      auto same_as_cli = [&](const rapidjson::Value& served) {
        auto cli = Run({IosonarBin(), "lassi", "--store", w.dir / "store", "--day", "2026-11-22", "--mysql", w.db.url(),
                        "--format", "json"});
        INFO(cli.err);
        REQUIRE(cli.exit_code == 0);
        rapidjson::Document c;
        c.Parse(cli.out.c_str());
        REQUIRE_FALSE(c.HasParseError());
        REQUIRE(c.HasMember("fs_windows"));
        REQUIRE(c["fs_windows"].Size() > 0);
        CHECK(served["fs_windows"] == c["fs_windows"]);
        CHECK(served["baseline"] == c["baseline"]);
        CHECK(served == c);
      };
      // avg_fs: without a stored baseline the day's averages (the fallback,
      // said in the JSON); once `lassi baseline --mysql` stored one, that
      // one, under a cache key of its own (the cached fallback is not served).
      rapidjson::Document d0;
      d0.Parse(lassi.body.c_str());
      REQUIRE_FALSE(d0.HasParseError());
      CHECK(d0["lassi"]["baseline"]["fallback"].GetBool());
      same_as_cli(d0["lassi"]);
      auto b = Run({IosonarBin(), "lassi", "baseline", "--store", w.dir / "store", "--from", "2026-11-22T00:00:00Z",
                    "--to", "2026-11-23T00:00:00Z", "--mysql", w.db.url(), "--name", "serve-test"});
      INFO(b.out << b.err);
      REQUIRE(b.exit_code == 0);
      auto again = w.Get("/api/admin/lassi?day=2026-11-22", As("root"));
      REQUIRE(again.status == 200);
      rapidjson::Document d1;
      d1.Parse(again.body.c_str());
      REQUIRE_FALSE(d1.HasParseError());
      CHECK_FALSE(d1["lassi"]["baseline"]["fallback"].GetBool());
      CHECK(std::string(d1["lassi"]["baseline"]["name"].GetString()) == "serve-test");
      CHECK(std::string(d1["lassi"]["baseline"]["source"].GetString()) == "mysql lassi_baseline");
      same_as_cli(d1["lassi"]);
    }
    // 101 (nodes 0-3) and 102 (nodes 4-7) ran at once behind forwarding node fwd000
    auto nb = w.Get("/api/admin/jobs/101/neighbours", As("root"));
    REQUIRE(nb.status == 200);
    CHECK(nb.body.find("\"job_id\":\"102\"") != std::string::npos);
    CHECK(w.Get("/api/admin/jobs/999999/neighbours", As("root")).status == 404);
    auto page = w.Get("/admin?day=2026-11-22&job=102", As("root"));
    CHECK(page.body.find("href=\"/jobs/101\"") != std::string::npos);  // 102's neighbour
    CHECK(page.status == 200);
    CHECK(page.body.find("<svg") != std::string::npos);
  }

  {
    INFO("every route is in docs/openapi.yaml and responses have the declared fields");
    TempDir samples;
    auto save = [&](const std::string& name, const std::string& path, const std::string& user) {
      auto r = w.Get(path, As(user));
      REQUIRE(r.status == 200);
      WriteFile(samples / name, r.body);
    };
    save("GET_api_me", "/api/me", "daemon");
    save("GET_api_jobs", "/api/jobs", "daemon");
    save("GET_api_jobs_job", "/api/jobs/101", "daemon");
    save("GET_api_jobs_job_series", "/api/jobs/101/series", "daemon");
    save("GET_api_jobs_job_phases", "/api/jobs/101/phases", "daemon");
    save("GET_api_jobs_job_advice", "/api/jobs/101/advice", "daemon");
    save("GET_api_admin_heatmap", "/api/admin/heatmap?day=2026-11-22", "root");
    save("GET_api_admin_jobs_job_osts", "/api/admin/jobs/101/osts", "root");
    save("GET_api_admin_lassi", "/api/admin/lassi?day=2026-11-22", "root");
    save("GET_api_admin_jobs_job_neighbours", "/api/admin/jobs/101/neighbours", "root");
    save("GET_api_jobs_job_anomaly", "/api/jobs/101/anomaly", "daemon");
    save("GET_api_jobs_job_timeline", "/api/jobs/101/timeline", "daemon");
    save("GET_api_admin_anomalies", "/api/admin/anomalies", "root");
    auto routes = Run({IosonarBin(), "serve", "--print-routes"});
    REQUIRE(routes.exit_code == 0);
    WriteFile(samples / "routes.txt", routes.out);
    auto check = Run({"python3", SourceDir() + "/test/static/check_openapi.py", SourceDir() + "/docs/openapi.yaml",
                      samples / "routes.txt", samples.path()});
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);
  }
}

TEST_CASE("serve: cache, running jobs and stored verdicts", "[serve][integration]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  World w;

  SECTION("the API's summary is job-summary's JSON, cached in Redis, computed once") {
    auto api = w.Get("/api/jobs/101", As("daemon"));
    REQUIRE(api.status == 200);
    auto cli = Run({IosonarBin(), "job-summary", "101", "--store", w.dir / "store", "--mysql", w.db.url(), "--format",
                    "json"});
    REQUIRE(cli.exit_code == 0);
    CHECK(api.body.find("\"diagnosis\": [") != std::string::npos);
    CHECK(WithoutDiagnosis(api.body) == cli.out);
    const std::string cached = w.redis.Command({"GET", "iosonar:job:101:summary"});
    CHECK(cached.find("\"job_id\":\"101\"") != std::string::npos);
    // Eight concurrent first requests for job 103: one computation.
    std::vector<std::thread> ts;
    std::vector<HttpResult> rs(8);
    for (size_t i = 0; i < rs.size(); ++i)
      ts.emplace_back([&, i] { rs[i] = test::Get(w.port, "/api/jobs/103", As("daemon")); });
    for (auto& t : ts) t.join();
    for (const auto& r : rs) {
      CHECK(r.status == 200);
      CHECK(r.body == rs[0].body);
    }
    const std::string log = ReadFile(w.log);
    size_t n = 0;
    for (size_t at = log.find("computed the summary of job 103"); at != std::string::npos;
         at = log.find("computed the summary of job 103", at + 1))
      ++n;
    CHECK(n == 1);
    // later requests are served from the cache: still one computation
    CHECK(w.Get("/api/jobs/103", As("daemon")).body == rs[0].body);
    CHECK(ReadFile(w.log).find("computed the summary of job 103") == log.find("computed the summary of job 103"));
    // the list now has the numbers and a verdict from the cached summaries
    auto list = w.Get("/api/jobs", As("daemon"));
    CHECK(list.body.find("\"verdict\": \"N-1 with many processes") != std::string::npos);
  }

  SECTION("a running job's results are computed on each request, never cached as final; once over, cached") {
    auto sql = [&](const std::string& q) {
      auto r = Run({"mariadb", "--socket=" + w.db.socket(), "-uroot", "iosonar", "-e", q});
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
    };
    auto count = [&](const std::string& log, const std::string& what) {
      const std::string text = ReadFile(log);
      size_t n = 0;
      for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    auto ended = Run({"mariadb", "--socket=" + w.db.socket(), "-uroot", "iosonar", "-N", "-B", "-e",
                      "SELECT end_time FROM jobs WHERE job_id = 103 AND step = ''"});
    REQUIRE(ended.exit_code == 0);
    const std::string end_time = ended.out.substr(0, ended.out.find('\n'));
    REQUIRE(end_time.rfind("2026-", 0) == 0);
    sql("UPDATE jobs SET state = 'RUNNING', end_time = NULL WHERE job_id = 103");
    for (int i = 0; i < 2; ++i) {
      CHECK(w.Get("/api/jobs/103/series", As("daemon")).status == 200);
      CHECK(w.Get("/api/jobs/103/phases", As("daemon")).status == 200);
      CHECK(w.Get("/api/jobs/103", As("daemon")).status == 200);
    }
    CHECK(count(w.log, "computed the cross-layer view of job 103") == 2);
    CHECK(count(w.log, "computed the phases of job 103") == 2);
    for (const char* k : {"iosonar:job:103:summary", "iosonar:job:103:xlayer", "iosonar:job:103:phases"}) {
      INFO(k);
      CHECK(w.redis.Command({"EXISTS", k}) == "0");
    }
    // The job ended (long ago): a server that reads the row now caches its results.
    sql("UPDATE jobs SET state = 'COMPLETED', end_time = '" + end_time + "' WHERE job_id = 103");
    const int port = FreePort();
    const std::string log = w.dir / "serve-ended.log";
    Child s({IosonarBin(), "serve", "--store", w.dir / "store", "--mysql", w.db.url(), "--redis", w.redis.url(),
             "--listen", "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1", "--cluster", "sim"},
            {}, log);
    REQUIRE(WaitUntil([&] { return !s.Alive() || CanConnect(port); }, 20000));
    auto a = test::Get(port, "/api/jobs/103/series", As("daemon"));
    auto b = test::Get(port, "/api/jobs/103/series", As("daemon"));
    CHECK(a.status == 200);
    CHECK(b.body == a.body);
    CHECK(count(log, "computed the cross-layer view of job 103") == 1);
    CHECK(w.redis.Command({"GET", "iosonar:job:103:xlayer"}) == a.body);
  }

  SECTION("with Redis unreachable results are served, computed once and kept in memory") {
    const int port = FreePort();
    const std::string log = w.dir / "serve-noredis.log";
    Child s({IosonarBin(), "serve", "--store", w.dir / "store", "--mysql", w.db.url(), "--redis",
             "redis://127.0.0.1:" + std::to_string(FreePort()) + "/0", "--listen", "127.0.0.1:" + std::to_string(port),
             "--trusted-proxy", "127.0.0.1"},
            {}, log);
    REQUIRE(WaitUntil([&] { return !s.Alive() || CanConnect(port); }, 20000));
    // the cross-layer view: no other in-memory layer in front of the cache
    auto a = test::Get(port, "/api/jobs/101/series", As("daemon"));
    auto b = test::Get(port, "/api/jobs/101/series", As("daemon"));
    CHECK(a.status == 200);
    CHECK(b.body == a.body);
    const std::string text = ReadFile(log);
    size_t n = 0;
    for (size_t at = text.find("computed the cross-layer view of job 101"); at != std::string::npos;
         at = text.find("computed the cross-layer view of job 101", at + 1))
      ++n;
    CHECK(n == 1);
    CHECK(text.find("kept in memory meanwhile") != std::string::npos);
  }

  SECTION("stored anomaly verdicts: shown to the owner, neighbours named only when the caller may see them") {
    auto sql = Run({"mariadb", "--socket=" + w.db.socket(), "-uroot", "iosonar", "-e",
                    "INSERT INTO job_anomaly VALUES ('sim', 101, UTC_TIMESTAMP(6), 'anomalous', 4, 3.5, '{}');"
                    "INSERT INTO job_anomaly_neighbour VALUES ('sim', 101, 0, '102', 'fwd000', 'high_mdops', 450),"
                    " ('sim', 101, 1, '103', 'fwd000', 'high_bw', 10);"
                    "INSERT INTO job_server_outlier VALUES ('sim', 101, 'ost', 'simfs-OST0001', 0.4, 2.5);"
                    "INSERT INTO server_anomaly VALUES ('ost', 'simfs-OST0002', '2026-11-22 00:00:00',"
                    " '2026-11-22 01:00:00', 3600, 0.2, 1e9, 1, NULL, UTC_TIMESTAMP(6));"});
    REQUIRE(sql.exit_code == 0);
    auto mine = w.Get("/api/jobs/101/anomaly", As("daemon"));
    REQUIRE(mine.status == 200);
    CHECK(mine.body.find("\"verdict\":\"anomalous\"") != std::string::npos);
    CHECK(mine.body.find("\"job_id\":\"102\"") == std::string::npos);  // bin's job: not named
    CHECK(mine.body.find("\"job_id\":null") != std::string::npos);
    CHECK(mine.body.find("\"job_id\":\"103\"") != std::string::npos);  // daemon's own
    CHECK(mine.body.find("simfs-OST0001") != std::string::npos);
    auto page = w.Get("/jobs/101", As("daemon"));
    CHECK(page.body.find("another job") != std::string::npos);
    CHECK(page.body.find("href=\"/jobs/102\"") == std::string::npos);
    CHECK(w.Get("/api/jobs/101/anomaly", As("root")).body.find("\"job_id\":\"102\"") != std::string::npos);
    CHECK(w.Get("/api/jobs/101/anomaly", As("bin")).status == 404);
    CHECK(w.Get("/api/jobs", As("daemon")).body.find("I/O anomaly (3.5x slower)") != std::string::npos);
    auto board = w.Get("/api/admin/anomalies", As("root"));
    REQUIRE(board.status == 200);
    CHECK(board.body.find("simfs-OST0002") != std::string::npos);
    CHECK(board.body.find("\"job_id\":\"101\"") != std::string::npos);
    CHECK(w.Get("/api/admin/anomalies", As("daemon")).status == 404);
    CHECK(w.Get("/admin?day=2026-11-22", As("root")).body.find("simfs-OST0002") != std::string::npos);
    // not analysed: said so
    auto none = w.Get("/api/jobs/103/anomaly", As("daemon"));
    CHECK(none.body.find("\"analysed\":false") != std::string::npos);
    // pages say the stored codes in words (the JSON keeps the codes)
    CHECK(page.body.find("many metadata operations") != std::string::npos);
    CHECK(page.body.find("high_mdops") == std::string::npos);
    CHECK(page.body.find("<strong>I/O anomaly</strong>") != std::string::npos);
    CHECK(mine.body.find("\"evidence\":\"high_mdops\"") != std::string::npos);
    REQUIRE(Run({"mariadb", "--socket=" + w.db.socket(), "-uroot", "iosonar", "-e",
                 "INSERT INTO job_anomaly VALUES ('sim', 103, UTC_TIMESTAMP(6), 'not_enough_history', 2, 0, '{}');"})
                .exit_code == 0);
    // A job's stored findings are read at most once a second: the new verdict shows within it.
    HttpResult few;
    CHECK(WaitUntil([&] {
      few = w.Get("/jobs/103", As("daemon"));
      return few.body.find("Not judged") != std::string::npos;
    }, 10000));
    REQUIRE(few.status == 200);
    CHECK(few.body.find("Not judged") != std::string::npos);
    CHECK(few.body.find("2 earlier runs") != std::string::npos);
    for (const char* p : {"/jobs/103", "/jobs", "/api/jobs"}) {
      INFO(p);
      CHECK(w.Get(p, As("daemon")).body.find("not_enough_history") == std::string::npos);
    }
    CHECK(w.Get("/api/jobs", As("daemon")).body.find("too few earlier runs to compare with") != std::string::npos);
  }

}

TEST_CASE("serve: pages in headless Chromium have plots for each user", "[serve][integration][browser]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  if (!HaveProgram("chromium") || !HaveProgram("npm"))
    FAIL("chromium and npm are needed (scripts/setup.sh --test installs chromium; npm is a build dependency)");
  // playwright-core as pinned in test/browser/package-lock.json, installed once into the build tree.
  const std::string bdir = BinaryDir() + "/test-browser";
  std::filesystem::create_directories(bdir);
  for (const char* f : {"package.json", "package-lock.json", "check_pages.mjs"})
    std::filesystem::copy_file(SourceDir() + "/test/browser/" + f, bdir + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  if (!std::filesystem::exists(bdir + "/node_modules/playwright-core")) {
    auto ci = Run({"npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", bdir});
    INFO(ci.out << ci.err);
    REQUIRE(ci.exit_code == 0);
  }
  World w;
  // Job 101 slowed by a lagging OST (as `iosonar anomaly --mysql` stores it): its page's first finding.
  REQUIRE(Run({"mariadb", "--socket=" + w.db.socket(), "-uroot", "iosonar", "-e",
               "INSERT INTO job_anomaly VALUES ('sim', 101, UTC_TIMESTAMP(6), 'anomalous', 4, 3.5, '{}');"
               "INSERT INTO job_server_outlier VALUES ('sim', 101, 'ost', 'simfs-OST0001', 0.3, 2.5);"})
              .exit_code == 0);
  const std::string shots = BinaryDir() + "/test-artifacts/serve";
  std::filesystem::create_directories(shots);
  auto r = Run({"node", bdir + "/check_pages.mjs", "http://127.0.0.1:" + std::to_string(w.port), shots});
  INFO(r.out << r.err << ReadFile(w.log));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("daemon /jobs/101: first finding slow_server: high Slowed ~3.5x by OST simfs-OST0001") !=
        std::string::npos);
  CHECK(r.out.find("daemon /jobs/101: peaks read 0 write ") != std::string::npos);

  // The same pages mounted under /iosonar (--base-path), every script and
  // API request under the prefix: plots drawn, the same checks pass.
  const int port2 = FreePort();
  Child prefixed({IosonarBin(), "serve", "--store", w.dir / "store", "--cluster-store",
                  "beta=" + std::string(w.dir / "beta"), "--mysql", w.db.url(), "--redis", w.redis.url(), "--listen",
                  "127.0.0.1:" + std::to_string(port2), "--trusted-proxy", "127.0.0.1", "--admins", "root",
                  "--cluster", "sim", "--base-path", "/iosonar"},
                 {}, w.dir / "prefixed.log");
  REQUIRE(WaitUntil([&] { return !prefixed.Alive() || CanConnect(port2); }, 20000));
  const std::string pshots = shots + "/prefixed";
  std::filesystem::create_directories(pshots);
  auto rp = Run({"node", bdir + "/check_pages.mjs", "http://127.0.0.1:" + std::to_string(port2) + "/iosonar", pshots});
  INFO(rp.out << rp.err << ReadFile(w.dir / "prefixed.log"));
  CHECK(rp.exit_code == 0);
  CHECK(rp.out.find("daemon /jobs/101: plots 2,") != std::string::npos);
  // 101: 4 nodes x 4 processes, all writing; behind fwd000, on the 4 OSTs.
  CHECK(rp.out.find("daemon /jobs/101: timeline rows 16, server lines") != std::string::npos);
  CHECK(r.out.find("daemon /jobs/101: timeline rows 16, server lines") != std::string::npos);
  CHECK(rp.out.find("root /admin: heatmap cells 432, plots 2") != std::string::npos);
  CHECK(r.out.find("daemon /jobs/101: plots 2,") != std::string::npos);
  // The LASSi chart says which avg_fs it used: no baseline is stored here.
  CHECK(r.out.find("root /admin: LASSi baseline (avg_fs): no stored baseline with 3600 s windows; averages of "
                   "2026-11-22T00:00:00.000Z to 2026-11-23T00:00:00.000Z.") != std::string::npos);
  CHECK(r.out.find("bin /jobs/102: plots 2,") != std::string::npos);
  // a job of another cluster than the default: the page's charts ask for it with ?cluster=
  CHECK(r.out.find("bin /jobs/104?cluster=beta: plots 2,") != std::string::npos);
  // Bytes of 4 OSTs + 2 forwarding nodes (144 cells), the 4 OSTs' IOPS, disk
  // I/O time and ost_io wait (3 x 96); the job's per-OST chart and LASSi's risk
  CHECK(r.out.find("root /admin: heatmap cells 432, plots 2") != std::string::npos);
  CHECK(std::filesystem::file_size(shots + "/job-101.png") > 10000);
  CHECK(std::filesystem::file_size(shots + "/admin-heatmap.png") > 10000);
}

}  // namespace iosonar::test

namespace iosonar::test {

TEST_CASE("serve: HTTPS with a certificate, and shared projects by Unix group", "[serve][integration]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  REQUIRE(HaveProgram("openssl"));
  REQUIRE(HaveProgram("curl"));
  TempDir dir;
  MariaDbServer db;
  // bin's job 202 belongs to the Unix group "daemon" (daemon's primary group).
  auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "4", "--fwd", "1", "--osts", "2",
                  "--duration", "10", "--mysql", db.url(), "--job",
                  "id=201,user=daemon,mode=1-1,first=0,nodes=1,duration=4", "--job",
                  "id=202,user=bin,mode=1-1,first=1,nodes=1,duration=4", "--job",
                  "id=203,user=bin,mode=1-1,first=2,nodes=1,duration=4"});
  REQUIRE(sim.exit_code == 0);
  auto upd = Run({"mariadb", "--socket=" + db.socket(), "-uroot", "iosonar", "-e",
                  "UPDATE jobs SET group_name = 'daemon' WHERE job_id = 202; "
                  "UPDATE jobs SET group_name = 'bin' WHERE job_id IN (201, 203)"});
  REQUIRE(upd.exit_code == 0);
  auto cert = Run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir / "key.pem", "-out",
                   dir / "cert.pem", "-days", "1", "-subj", "/CN=localhost"});
  REQUIRE(cert.exit_code == 0);
  const int port = FreePort();
  Child server({IosonarBin(), "serve", "--store", dir / "store", "--mysql", db.url(), "--listen",
                "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1", "--share-by", "group",
                "--tls-cert", dir / "cert.pem", "--tls-key", dir / "key.pem"},
               {}, dir / "serve.log");
  REQUIRE(WaitUntil([&] { return !server.Alive() || CanConnect(port); }, 20000));
  REQUIRE(server.Alive());
  auto get = [&](const std::string& path, const std::string& user) {
    return Run({"curl", "-s", "--cacert", dir / "cert.pem", "--resolve", "localhost:" + std::to_string(port) + ":127.0.0.1",
                "-w", "\n%{http_code}", "-H", "X-Remote-User: " + user,
                "https://localhost:" + std::to_string(port) + path});
  };
  auto list = get("/api/jobs", "daemon");
  REQUIRE(list.exit_code == 0);  // the certificate verified: TLS works
  CHECK(list.out.substr(list.out.size() - 3) == "200");
  CHECK(list.out.find("\"job_id\": \"201\"") != std::string::npos);
  CHECK(list.out.find("\"job_id\": \"202\"") != std::string::npos);  // shared through the group daemon
  CHECK(list.out.find("\"job_id\": \"203\"") == std::string::npos);
  auto shared = get("/api/jobs/202", "daemon");
  CHECK(shared.out.substr(shared.out.size() - 3) == "200");
  auto other = get("/api/jobs/203", "daemon");
  CHECK(other.out.substr(other.out.size() - 3) == "404");
  // plain HTTP to the HTTPS port gets no answer from the service
  auto plain = Run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Remote-User: daemon",
                    "http://127.0.0.1:" + std::to_string(port) + "/api/jobs"});
  CHECK(plain.out != "200");
}

}  // namespace iosonar::test

namespace iosonar::test {

TEST_CASE("serve: libmicrohttpd and GnuTLS are loaded by serve only, not linked into iosonar", "[serve][integration]") {
  REQUIRE(HaveProgram("ldd"));
  auto full = Run({"ldd", IosonarBin()});
  REQUIRE(full.exit_code == 0);
  INFO(full.out);
  CHECK(full.out.find("libc.so") != std::string::npos);  // ldd did list the libraries
  CHECK(full.out.find("libmicrohttpd") == std::string::npos);
  CHECK(full.out.find("libgnutls") == std::string::npos);
  CHECK(full.out.find("libmariadb") != std::string::npos);  // the control: linked
}

}  // namespace iosonar::test

namespace iosonar::test {

TEST_CASE("serve: bad command lines are usage errors that name the option", "[serve][integration]") {
  const std::string bin = IosonarBin();
  auto help = Run({bin, "serve", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--trusted-proxy") != std::string::npos);
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::string m = "mysql://root@localhost/x?socket=/nonexistent";
  for (const Case& c : std::vector<Case>{
           {{"--mysql", m, "--listen", "127.0.0.1:1"}, "--store"},
           {{"--store", "/tmp", "--listen", "127.0.0.1:1"}, "--mysql"},
           {{"--store", "/tmp", "--mysql", m}, "--listen"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--trusted-proxy", "proxy.example"}, "--trusted-proxy proxy.example"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--share-by", "project"}, "--share-by"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "localhost"}, "--listen localhost"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--threads", "0"}, "--threads"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--compute-threads", "0"}, "--compute-threads"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--compute-queue", "0"}, "--compute-queue"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--cluster", "a/b"}, "--cluster 'a/b'"},
           {{"--store", "/tmp", "--mysql", m, "--listen", "127.0.0.1:1", "--cluster-store", "beta"}, "--cluster-store 'beta'"},
       }) {
    std::vector<std::string> argv{bin, "serve"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = Run(argv, {{"IOSONAR_MYSQL", ""}, {"IOSONAR_REDIS", ""}, {"IOSONAR_CONFIG", "/nonexistent"}});
    INFO(c.says << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  // A port already taken: cannot start (1), saying where.
  TempDir d;
  const int port = FreePort();
  Child first({bin, "serve", "--store", d.path(), "--mysql", m, "--listen", "127.0.0.1:" + std::to_string(port)}, {},
              d / "first.log");
  REQUIRE(WaitUntil([&] { return !first.Alive() || CanConnect(port); }, 20000));
  auto second = Run({bin, "serve", "--store", d.path(), "--mysql", m, "--listen", "127.0.0.1:" + std::to_string(port)});
  CHECK(second.exit_code == 1);
  CHECK(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(port)) != std::string::npos);
}

}  // namespace iosonar::test

namespace iosonar::test {

namespace {
size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

// Deterministic (no timing): the test-only hook IOSONAR_SERVE_TEST_HOLD=JOB:FIFO
// holds the computation of JOB's summary until a byte is written to FIFO.
TEST_CASE("serve: an uncached computation holds no server thread, and its queue is bounded", "[serve][integration]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  TempDir dir;
  MariaDbServer db;
  RedisServer redis;
  auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "8", "--fwd", "1", "--osts", "2",
                  "--duration", "12", "--mysql", db.url(), "--job",
                  "id=101,user=daemon,mode=N-N,first=0,nodes=2,ppn=2,duration=8,period=2,io=1,bytes=4M", "--job",
                  "id=102,user=bin,mode=1-1,first=2,nodes=1,duration=8,period=2,io=1,bytes=4M", "--job",
                  "id=103,user=daemon,mode=1-1,first=3,nodes=1,duration=8,period=2,io=1,bytes=4M"});
  REQUIRE(sim.exit_code == 0);
  const std::string fifo = dir / "hold";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const int port = FreePort();
  const std::string log = dir / "serve.log";
  // One server thread, one worker, at most 3 computations waiting.
  Child server({IosonarBin(), "serve", "--store", dir / "store", "--mysql", db.url(), "--redis", redis.url(), "--listen",
                "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1", "--admins", "root", "--threads",
                "1", "--compute-threads", "1", "--compute-queue", "3"},
               {{"IOSONAR_SERVE_TEST_HOLD", "101:" + fifo}}, log);
  REQUIRE(WaitUntil([&] { return !server.Alive() || CanConnect(port); }, 20000));
  REQUIRE(server.Alive());

  // 103 computed and cached before (through the worker: nothing held).
  auto cached = Get(port, "/api/jobs/103", As("daemon"));
  REQUIRE(cached.status == 200);
  CHECK(Count(ReadFile(log), "computing off the server thread: GET /api/jobs/103") == 1);

  // Four concurrent first requests for 101: one computation, held by the hook;
  // the other three wait in the queue (which is then full).
  std::vector<HttpResult> held(4);
  std::vector<std::thread> ts;
  bool released = false;
  auto release = [&] {
    if (released) return;
    released = true;
    int fd = open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // the held worker has it open for reading
    if (fd >= 0) {
      CHECK(write(fd, "x", 1) == 1);
      close(fd);
    }
  };
  struct Guard {  // releases and joins even when a REQUIRE below fails
    std::function<void()> f;
    ~Guard() { f(); }
  } guard{[&] {
    release();
    for (auto& t : ts)
      if (t.joinable()) t.join();
  }};
  // The first, and once the worker holds it, three more.
  ts.emplace_back([&] { held[0] = test::Get(port, "/api/jobs/101", As("daemon")); });
  REQUIRE(WaitUntil([&] { return Count(ReadFile(log), "test hook: holding the summary of job 101") == 1; }, 60000));
  for (size_t i = 1; i < held.size(); ++i)
    ts.emplace_back([&, i] { held[i] = test::Get(port, "/api/jobs/101", As("daemon")); });
  REQUIRE(WaitUntil(
      [&] {
        const std::string t = ReadFile(log);
        return Count(t, "test hook: holding the summary of job 101") == 1 &&
               Count(t, "computing off the server thread: GET /api/jobs/101") == 4;
      },
      60000));

  // While it is held, the one server thread still answers: a cached summary,
  // the job list, a static file.
  auto again = Get(port, "/api/jobs/103", As("daemon"));
  CHECK(again.status == 200);
  CHECK(again.body == cached.body);
  auto list = Get(port, "/api/jobs", As("daemon"));
  CHECK(list.status == 200);
  CHECK(Lists(list.body, "103"));
  CHECK(Get(port, "/static/iosonar.css").status == 200);
  // Another computation finds the queue full: 503 with Retry-After, nothing computed.
  auto busy = Get(port, "/api/jobs/102", As("bin"));
  CHECK(busy.status == 503);
  CHECK(busy.headers["retry-after"] == "5");
  CHECK(redis.Command({"EXISTS", "iosonar:job:102:summary"}) == "0");
  // ... still isolation first: another user's job is 404, not 503
  CHECK(Get(port, "/api/jobs/102", As("daemon")).status == 404);

  // Released: all four get the job's summary, computed once.
  release();
  for (auto& t : ts) t.join();
  auto cli = Run({IosonarBin(), "job-summary", "101", "--store", dir / "store", "--mysql", db.url(), "--format", "json"});
  REQUIRE(cli.exit_code == 0);
  for (const auto& r : held) {
    CHECK(r.status == 200);
    CHECK(WithoutDiagnosis(r.body) == cli.out);
  }
  const std::string text = ReadFile(log);
  CHECK(Count(text, "computed the summary of job 101") == 1);
  CHECK(Count(text, "test hook: released the summary of job 101") == 1);
  // The queue has room again.
  CHECK(Get(port, "/api/jobs/102", As("bin")).status == 200);
  // The HTML page of an uncached job is deferred as well, and answers.
  auto page = Get(port, "/jobs/102", As("bin"));
  CHECK(page.status == 200);
  CHECK(page.body.find("Job 102") != std::string::npos);
}

// Sites run several Slurm clusters into one job database, and job ids repeat
// across them: job 5000 on alpha (daemon's, 8 MiB a rank) and on beta (bin's,
// 2 MiB a rank), each cluster with its own store.
TEST_CASE("serve: the same job id on two clusters: each user sees their own, 404 for the other's",
          "[serve][integration]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  TempDir dir;
  MariaDbServer db;
  RedisServer redis;
  auto a = Run({IosonarBin(), "simulate", "--cluster", "alpha", "--store", dir / "alpha", "--nodes", "4", "--fwd", "1",
                "--osts", "2", "--duration", "10", "--mysql", db.url(), "--job",
                "id=5000,user=daemon,name=on-alpha,mode=N-N,first=0,nodes=2,ppn=1,duration=8,period=2,io=1,bytes=8M"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto b = Run({IosonarBin(), "simulate", "--cluster", "beta", "--store", dir / "beta", "--nodes", "4", "--fwd", "1",
                "--osts", "2", "--duration", "10", "--mysql", db.url(), "--job",
                "id=5000,user=bin,name=on-beta,mode=N-N,first=0,nodes=2,ppn=1,duration=8,period=2,io=1,bytes=2M"});
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  auto start = [&](const std::vector<std::string>& extra, const std::string& name, int* port) {
    *port = FreePort();
    std::vector<std::string> argv{IosonarBin(), "serve", "--store", dir / "alpha", "--cluster-store",
                                  "beta=" + std::string(dir / "beta"), "--mysql", db.url(), "--redis", redis.url(),
                                  "--listen", "127.0.0.1:" + std::to_string(*port), "--trusted-proxy", "127.0.0.1",
                                  "--admins", "root"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Child>(argv, std::map<std::string, std::string>{}, dir / name);
  };
  int port = 0;
  auto server = start({"--cluster", "alpha"}, "serve.log", &port);
  REQUIRE(WaitUntil([&] { return !server->Alive() || CanConnect(port); }, 20000));
  REQUIRE(server->Alive());
  auto get = [&](const std::string& path, const std::string& user) { return Get(port, path, As(user)); };

  // daemon: job 5000 is alpha's (the default cluster); beta's is not theirs.
  auto mine = get("/api/jobs/5000", "daemon");
  REQUIRE(mine.status == 200);
  CHECK(mine.body.find("\"cluster\": \"alpha\"") != std::string::npos);
  CHECK(mine.body.find("on-alpha") != std::string::npos);
  auto not_mine = get("/api/jobs/5000?cluster=beta", "daemon");
  CHECK(not_mine.status == 404);
  CHECK(not_mine.body == get("/api/jobs/999999?cluster=beta", "daemon").body);
  CHECK(not_mine.body == get("/api/jobs/5000?cluster=gamma", "daemon").body);
  CHECK(get("/api/jobs/5000?cluster=..%2falpha", "daemon").status == 404);
  for (const char* p : {"/api/jobs/5000/series?cluster=beta", "/api/jobs/5000/phases?cluster=beta",
                        "/api/jobs/5000/advice?cluster=beta", "/jobs/5000?cluster=beta"})
    CHECK(get(p, "daemon").status == 404);
  // bin: the other way round.
  CHECK(get("/api/jobs/5000", "bin").status == 404);
  auto theirs = get("/api/jobs/5000?cluster=beta", "bin");
  REQUIRE(theirs.status == 200);
  CHECK(theirs.body.find("\"cluster\": \"beta\"") != std::string::npos);
  CHECK(theirs.body.find("on-beta") != std::string::npos);
  // Each from its own cluster's store: the CLI over each store agrees.
  for (const auto& [cluster, body] : {std::pair<std::string, std::string>{"alpha", mine.body}, {"beta", theirs.body}}) {
    auto cli = Run({IosonarBin(), "job-summary", "5000", "--cluster", cluster, "--store", dir / cluster, "--mysql",
                    db.url(), "--format", "json"});
    REQUIRE(cli.exit_code == 0);
    CHECK(WithoutDiagnosis(body) == cli.out);
  }
  CHECK(mine.body != theirs.body);
  // The default cluster keeps the plain key; the other's is qualified.
  CHECK(redis.Command({"EXISTS", "iosonar:job:5000:summary"}) == "1");
  CHECK(redis.Command({"EXISTS", "iosonar:job:5000@beta:summary"}) == "1");
  CHECK(redis.Command({"GET", "iosonar:job:5000:summary"}) != redis.Command({"GET", "iosonar:job:5000@beta:summary"}));
  // Lists: each their own, with the cluster; links to beta's job carry it.
  auto dl = get("/api/jobs", "daemon");
  CHECK(dl.body.find("on-alpha") != std::string::npos);
  CHECK(dl.body.find("on-beta") == std::string::npos);
  auto bl = get("/api/jobs", "bin");
  CHECK(bl.body.find("on-beta") != std::string::npos);
  CHECK(bl.body.find("on-alpha") == std::string::npos);
  CHECK(get("/jobs", "bin").body.find("href=\"/jobs/5000?cluster=beta\"") != std::string::npos);
  CHECK(get("/jobs", "daemon").body.find("href=\"/jobs/5000\"") != std::string::npos);
  auto page = get("/jobs/5000?cluster=beta", "bin");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("on-beta") != std::string::npos);
  CHECK(page.body.find("data-query=\"?cluster=beta\"") != std::string::npos);
  CHECK(get("/api/jobs/5000/series?cluster=beta", "bin").status == 200);
  // The administrator sees both, by cluster.
  CHECK(get("/api/jobs/5000", "root").body.find("on-alpha") != std::string::npos);
  CHECK(get("/api/jobs/5000?cluster=beta", "root").body.find("on-beta") != std::string::npos);
  server->Stop();

  // Without --cluster: a job id is the one cluster's that the caller may see;
  // on several (the administrator) ?cluster= is needed.
  int port2 = 0;
  auto server2 = start({}, "serve2.log", &port2);
  REQUIRE(WaitUntil([&] { return !server2->Alive() || CanConnect(port2); }, 20000));
  REQUIRE(server2->Alive());
  CHECK(Get(port2, "/api/jobs/5000", As("daemon")).body == mine.body);
  CHECK(Get(port2, "/api/jobs/5000", As("bin")).body == theirs.body);
  auto several = Get(port2, "/api/jobs/5000", As("root"));
  CHECK(several.status == 404);
  CHECK(several.body.find("several clusters") != std::string::npos);
  CHECK(Get(port2, "/api/jobs/5000?cluster=alpha", As("root")).body == mine.body);
  CHECK(redis.Command({"EXISTS", "iosonar:job:5000@alpha:summary"}) == "1");  // ambiguous id: qualified keys
  // and for daemon the other cluster's job stays invisible
  CHECK(Get(port2, "/api/jobs/5000?cluster=beta", As("daemon")).status == 404);
}

}  // namespace iosonar::test

namespace iosonar::test {

namespace {
// The codes of the diagnosis, the anomaly verdicts and the evidence: for
// scripts (the JSON), never for readers (the pages).
const char* const kInternalCodes[] = {"not_enough_history", "high_mdops", "high_bw", "high_iops", "n1_mode",
                                      "slow_server", "slowed_others", "nothing_found", "slower_than_history",
                                      "n1_many_processes", "small_requests", "metadata_heavy", "not_judged",
                                      "as_before"};

// The text a reader sees: the HTML without its tags (attributes such as
// data-kind="..." are for scripts, not shown).
std::string VisibleText(const std::string& html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    else if (c == '>') in_tag = false;
    else if (!in_tag) out += c;
  }
  return out;
}
}  // namespace

// A simulated day (the anomaly tests' application: eight runs of one
// application, the fifth to seventh... through a slow forwarding node, the
// last on a slow OST beside a metadata storm), its anomaly verdicts stored by
// `iosonar anomaly --mysql`: each job the simulator's --truth says was slowed
// by a server gets a first diagnosis naming that server; the storm's page
// names the job it slowed (to its owner as "another user's job", the other
// user's job); no page shows an internal code.
TEST_CASE("serve: the diagnosis names the truth's cause first and the offender what it slowed",
          "[serve][integration][truth]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  TempDir dir;
  MariaDbServer db;
  auto args = [&](const std::string& out) {
    std::vector<std::string> a = {IosonarBin(), "simulate", "--store", out, "--nodes", "32", "--fwd", "8", "--osts",
                                  "8", "--duration", "480", "--maps", dir / "maps.json"};
    for (int k = 0; k < 8; ++k)
      a.insert(a.end(), {"--job", "id=" + std::to_string(3001 + k) + ",user=daemon,mode=N-N,first=0,nodes=14,stripes=1,start=" +
                                      std::to_string(k * 60) + ",duration=50,period=5,phase=2G,cmd=./app%20-n%2014"});
    a.insert(a.end(), {"--job", "id=3999,user=bin,name=storm,mode=meta,first=14,nodes=2,start=420,duration=60,meta=200,cmd=./storm",
                       "--job", "id=3998,user=daemon,mode=N-N,first=16,nodes=8,stripes=2,start=420,duration=60,bytes=8M,period=1,io=1,cmd=./other"});
    return a;
  };
  // A dry run for the layouts: the slow OST is the one most of 3008's files are on.
  REQUIRE(Run(args(dir / "dry")).exit_code == 0);
  rapidjson::Document maps;
  maps.Parse(ReadFile(dir / "maps.json").c_str());
  REQUIRE(maps.IsObject());
  std::map<int, int> files_on;
  for (const auto& L : maps["layouts"].GetArray())
    if (std::string(L["job_id"].GetString()) == "3008") files_on[L["osts"][0].GetInt()]++;
  int slow_ost = -1;
  for (auto [o, n] : files_on)
    if (slow_ost < 0 || n > files_on[slow_ost]) slow_ost = o;
  REQUIRE(slow_ost >= 0);
  const std::string store = dir / "store";
  auto sim = args(store);
  sim.insert(sim.end(), {"--mysql", db.url(), "--truth", dir / "truth.json", "--slow-fwd", "1", "--slow-fwd-from", "300",
                         "--slow-fwd-to", "360", "--slow-ost", std::to_string(slow_ost), "--slow-ost-from", "420",
                         "--slow-ost-to", "480"});
  auto r = Run(sim);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto slow_of = SlowServersOf(JsonObject(ReadFile(dir / "truth.json")));
  const std::vector<std::string> jobs = {"3001", "3002", "3003", "3004", "3005", "3006", "3007", "3008", "3998", "3999"};
  for (const auto& j : jobs) {
    auto a = Run({IosonarBin(), "anomaly", j, "--store", store, "--mysql", db.url(), "--format", "json"});
    INFO(j << ": " << a.err);
    // The storm moves no data: it has no I/O phases to compare, only its metadata load.
    if (j == "3999") CHECK(a.err.find("no read or write records") != std::string::npos);
    else REQUIRE(a.exit_code == 0);
  }
  const int port = FreePort();
  Child server({IosonarBin(), "serve", "--store", store, "--mysql", db.url(), "--listen",
                "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1", "--admins", "root"},
               {}, dir / "serve.log");
  REQUIRE(WaitUntil([&] { return !server.Alive() || CanConnect(port); }, 20000));
  REQUIRE(server.Alive());

  int slowed = 0;
  for (const auto& j : jobs) {
    INFO("job " << j);
    const std::string owner = j == "3999" ? "bin" : "daemon";
    auto api = Get(port, "/api/jobs/" + j, As(owner));
    REQUIRE(api.status == 200);
    rapidjson::Document d;
    d.Parse(api.body.c_str());
    REQUIRE(d.IsObject());
    REQUIRE(d.HasMember("diagnosis"));
    REQUIRE(d["diagnosis"].IsArray());
    REQUIRE(d["diagnosis"].Size() >= 1);
    const auto& first = d["diagnosis"][0];
    for (const char* k : {"kind", "severity", "cause", "evidence", "action"}) REQUIRE(first[k].IsString());
    REQUIRE(first["cost_s"].IsNumber());
    const std::string cause = first["cause"].GetString();
    auto page = Get(port, "/jobs/" + j, As(owner));
    REQUIRE(page.status == 200);
    const std::string text = VisibleText(page.body);
    if (!slow_of[j].empty()) {
      ++slowed;
      // The first diagnosis names a server the truth names, as the slow server.
      bool named = false;
      for (const auto& s : slow_of[j]) named |= cause.find(s) != std::string::npos;
      INFO(cause);
      CHECK(named);
      CHECK(std::string(first["kind"].GetString()) == "slow_server");
      CHECK(std::string(first["severity"].GetString()) == "high");
      CHECK(first["cost_s"].GetDouble() > 0);
      // On the page: the diagnosis comes first, and nothing says all is well.
      const size_t diag = text.find("Diagnosis"), summary = text.find("Summary");
      CHECK(diag < summary);
      CHECK(text.find(cause) > diag);
      CHECK(text.find(cause) < summary);
      CHECK(text.find("Nothing to change") == std::string::npos);
    }
    // No internal code where a reader looks.
    for (const char* code : kInternalCodes) CHECK(text.find(code) == std::string::npos);
  }
  CHECK(slowed >= 3);  // the runs through fwd001 and the run on the OST (at least)

  // The storm named first suspect of 3008's anomaly: its page says so. Its
  // owner (bin) may not see daemon's job: "another user's job"; the
  // administrator sees the id.
  auto storm = Get(port, "/api/jobs/3999", As("bin"));
  CHECK(storm.body.find("\"kind\":\"slowed_others\"") != std::string::npos);
  CHECK(storm.body.find("Your job slowed 1 other job (another user's job)") != std::string::npos);
  CHECK(storm.body.find("3008") == std::string::npos);
  auto storm_admin = Get(port, "/jobs/3999", As("root"));
  CHECK(VisibleText(storm_admin.body).find("Your job slowed 1 other job (job 3008)") != std::string::npos);
  // Its owner's page says it too (first, before any advice), without the other user's job id.
  auto storm_page = Get(port, "/jobs/3999", As("bin"));
  REQUIRE(storm_page.status == 200);
  const std::string storm_text = VisibleText(storm_page.body);
  INFO(storm_text.substr(0, 1500));
  const size_t slowed_at = storm_text.find("Your job slowed 1 other job (another user&#39;s job)");
  CHECK(slowed_at != std::string::npos);
  CHECK(slowed_at < storm_text.find("Summary"));
  CHECK(storm_text.find("3008") == std::string::npos);
  // No page shows an internal code: the job lists (each user's, the
  // administrator's, filtered by verdict), the administration page of the
  // day, the storm's page for its owner.
  for (const auto& [path, user] : std::vector<std::pair<std::string, std::string>>{
           {"/jobs", "daemon"}, {"/jobs", "bin"}, {"/jobs", "root"}, {"/jobs?verdict=anomalous", "root"},
           {"/jobs?verdict=too-few", "daemon"}, {"/admin?day=2026-11-22", "root"}, {"/jobs/3999", "bin"}}) {
    INFO(path << " as " << user);
    auto pg = Get(port, path, As(user));
    REQUIRE(pg.status == 200);
    const std::string t = VisibleText(pg.body);
    for (const char* code : kInternalCodes) CHECK(t.find(code) == std::string::npos);
  }
  // The offender's metadata advice is there too.
  CHECK(storm.body.find("\"kind\":\"metadata_heavy\"") != std::string::npos);
  // A job nobody slowed and nothing to advise: the one "nothing found" entry is info.
  auto calm = Get(port, "/api/jobs/3002", As("daemon"));
  CHECK(calm.body.find("\"severity\":\"high\"") == std::string::npos);

  // Mounted under /iosonar behind a proxy (docs/serve.md's Apache example):
  // every link, script and style sheet of the pages carries the prefix and
  // answers, from a proxy that strips the prefix and from one that passes it on.
  const int port2 = FreePort();
  Child prefixed({IosonarBin(), "serve", "--store", store, "--mysql", db.url(), "--listen",
                  "127.0.0.1:" + std::to_string(port2), "--trusted-proxy", "127.0.0.1", "--admins", "root",
                  "--base-path", "/iosonar/"},
                 {}, dir / "serve2.log");
  REQUIRE(WaitUntil([&] { return !prefixed.Alive() || CanConnect(port2); }, 20000));
  REQUIRE(prefixed.Alive());
  auto root = Get(port2, "/", As("daemon"));
  CHECK(root.status == 302);
  CHECK(root.headers["location"] == "/iosonar/jobs");
  size_t urls = 0;
  for (const char* path : {"/jobs/3008", "/jobs", "/admin?day=2026-11-22"}) {
    const std::string user = std::string(path).rfind("/admin", 0) == 0 ? "root" : "daemon";
    for (const std::string& via : {std::string(path), "/iosonar" + std::string(path)}) {
      INFO(via);
      auto pg = Get(port2, via, As(user));
      REQUIRE(pg.status == 200);
      for (const char* attr : {"href=\"", "src=\"", "action=\""})
        for (size_t at = pg.body.find(attr); at != std::string::npos; at = pg.body.find(attr, at + 1)) {
          const size_t from = at + std::strlen(attr), to = pg.body.find('"', from);
          std::string url = pg.body.substr(from, to - from);
          INFO(url);
          if (url.rfind("http", 0) == 0) continue;
          REQUIRE(url.rfind("/iosonar/", 0) == 0);
          for (size_t amp = url.find("&amp;"); amp != std::string::npos; amp = url.find("&amp;")) url.replace(amp, 5, "&");
          CHECK(Get(port2, url, As(user)).status == 200);
          ++urls;
        }
    }
  }
  CHECK(urls > 20);
}

// First runs of applications (unique commands: no earlier runs, so no
// verdict against history), stored by `iosonar anomaly --mysql`: the one a
// slow OST slowed gets that OST as its first finding, whether the site
// samples brw_stats and osc records or only the trace and job_stats (then
// the job's time per I/O through each OST, placed by the job database's
// file layouts); a one-file job on one forwarding node has no peer to
// compare its servers with, and without brw/osc records its page says "Not
// judged: first runs of this application", never "Nothing to change".
// Checked against the simulator's --truth.
TEST_CASE("serve: a first run slowed by a server is told so, and one nothing judged says so",
          "[serve][integration][truth]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  TempDir dir;
  int slowed_pages = 0, unjudged_pages = 0;
  for (const bool server_records : {false, true}) {
    INFO((server_records ? "brw/osc records" : "trace + job_stats only"));
    MariaDbServer db;
    const std::string tag = server_records ? "r" : "t";
    std::vector<std::string> common = {
        "--nodes", "16", "--fwd", "4", "--osts", "8", "--duration", "80", "--seed", "41", "--maps", dir / "maps.json",
        "--job", "id=9001,user=daemon,mode=N-N,first=0,nodes=12,stripes=1,start=0,duration=60,period=5,phase=1G,log=64K,cmd=./first",
        "--job", "id=9002,user=daemon,mode=1-1,first=12,nodes=4,stripes=1,start=0,duration=40,bytes=64M,period=2,io=1,cmd=./single"};
    auto dry = std::vector<std::string>{IosonarBin(), "simulate", "--output", "/dev/null"};
    dry.insert(dry.end(), common.begin(), common.end());
    REQUIRE(Run(dry).exit_code == 0);
    rapidjson::Document maps;
    maps.Parse(ReadFile(dir / "maps.json").c_str());
    REQUIRE(maps.IsObject());
    // The slow OST: the one with most of 9001's checkpoint files, not 9002's.
    std::map<int, int> files_on;
    int single_ost = -1;
    for (const auto& L : maps["layouts"].GetArray()) {
      const std::string job = L["job_id"].GetString(), path = L["path"].GetString();
      if (job == "9002") single_ost = L["osts"][0].GetInt();
      if (job == "9001" && path.find("/out.") != std::string::npos) files_on[L["osts"][0].GetInt()]++;
    }
    int slow_ost = -1;
    for (auto [o, n] : files_on)
      if (o != single_ost && (slow_ost < 0 || n > files_on[slow_ost])) slow_ost = o;
    REQUIRE(slow_ost >= 0);
    const std::string store = dir / ("store" + tag);
    auto sim = std::vector<std::string>{IosonarBin(), "simulate", "--store", store, "--mysql", db.url(), "--truth",
                                        dir / "truth.json", "--slow-ost", std::to_string(slow_ost)};
    if (!server_records) sim.insert(sim.end(), {"--no-client", "--no-brw"});
    sim.insert(sim.end(), common.begin(), common.end());
    auto r = Run(sim);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto slow_of = SlowServersOf(JsonObject(ReadFile(dir / "truth.json")));
    REQUIRE(slow_of["9001"].size() == 1);
    REQUIRE(slow_of["9002"].empty());
    for (const std::string j : {"9001", "9002"}) {
      auto a = Run({IosonarBin(), "anomaly", j, "--store", store, "--mysql", db.url(), "--format", "json"});
      INFO(j << ": " << a.err);
      REQUIRE(a.exit_code == 0);
      CHECK(a.out.find("\"verdict\": \"not_enough_history\"") != std::string::npos);
    }
    const int port = FreePort();
    Child server({IosonarBin(), "serve", "--store", store, "--mysql", db.url(), "--listen",
                  "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1"},
                 {}, dir / ("serve" + tag + ".log"));
    REQUIRE(WaitUntil([&] { return !server.Alive() || CanConnect(port); }, 20000));
    REQUIRE(server.Alive());
    for (const std::string j : {"9001", "9002"}) {
      INFO("job " << j);
      auto api = Get(port, "/api/jobs/" + j, As("daemon"));
      REQUIRE(api.status == 200);
      rapidjson::Document d;
      d.Parse(api.body.c_str());
      REQUIRE(d.IsObject());
      REQUIRE(d["diagnosis"].IsArray());
      REQUIRE(d["diagnosis"].Size() >= 1);
      const auto& first = d["diagnosis"][0];
      const std::string kind = first["kind"].GetString(), cause = first["cause"].GetString();
      INFO(cause);
      auto page = Get(port, "/jobs/" + j, As("daemon"));
      REQUIRE(page.status == 200);
      const std::string text = VisibleText(page.body);
      const size_t diag = text.find("Diagnosis"), summary = text.find("Summary");
      for (const char* code : kInternalCodes) CHECK(text.find(code) == std::string::npos);
      bool any_slow_server = false;
      for (const auto& x : d["diagnosis"].GetArray()) any_slow_server |= std::string(x["kind"].GetString()) == "slow_server";
      if (!slow_of[j].empty()) {
        CHECK(kind == "slow_server");
        CHECK(cause.find(*slow_of[j].begin()) != std::string::npos);
        CHECK(cause.find("(the server, not your code)") != std::string::npos);
        CHECK(text.find(cause) > diag);
        CHECK(text.find(cause) < summary);
        CHECK(text.find("Nothing to change") == std::string::npos);
        ++slowed_pages;
      } else {
        CHECK_FALSE(any_slow_server);  // no false alarm
        if (!server_records) {
          // One OST, one forwarding node, no brw/osc: nothing compared its servers.
          CHECK(kind == "not_judged");
          CHECK(cause == "Not judged: first runs of this application");
          CHECK(text.find("Not judged: first runs of this application") != std::string::npos);
          CHECK(text.find("Nothing to change") == std::string::npos);
          CHECK(text.find("could not be compared with their peers") != std::string::npos);
          ++unjudged_pages;
        } else {
          // Its OST's brw_stats service time against the other OSTs': judged, none lagged.
          CHECK(text.find("compared with their peers: none lagged") != std::string::npos);
        }
      }
    }
  }
  CHECK(slowed_pages == 2);
  CHECK(unjudged_pages == 1);
}

}  // namespace iosonar::test

namespace iosonar::test {

namespace {
std::vector<std::string> ListedIds(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  std::vector<std::string> ids;
  if (!d.IsArray()) return ids;
  for (const auto& j : d.GetArray()) ids.push_back(j["job_id"].GetString());
  return ids;
}
}  // namespace

// 620 more jobs of daemon (every tenth FAILED, one an hour from 2026-10-01)
// and 5 of bin's: the list pages past --list-limit (500), and its filters
// narrow what each user may see, never widen it.
TEST_CASE("serve: the job list pages past 500 jobs and filters by user, state, verdict and date",
          "[serve][integration]") {
  if (!HaveMariaDb()) FAIL("mariadbd is not installed (scripts/setup.sh --test)");
  TempDir dir;
  MariaDbServer db;
  auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "4", "--fwd", "1", "--osts", "2",
                  "--duration", "10", "--mysql", db.url(), "--job", "id=1,user=daemon,mode=1-1,first=0,nodes=1,duration=4"});
  REQUIRE(sim.exit_code == 0);
  auto sql = Run({"mariadb", "--socket=" + db.socket(), "-uroot", "iosonar", "-e",
                  "INSERT INTO jobs (cluster, job_id, step, user_name, node_count, start_time, end_time, state, source) "
                  "SELECT 'sim', 10000 + seq, '', 'daemon', 2, '2026-10-01' + INTERVAL seq - 1 HOUR, "
                  "'2026-10-01' + INTERVAL seq - 1 HOUR + INTERVAL 30 MINUTE, "
                  "IF(seq % 10 = 0, 'FAILED', 'COMPLETED'), 'sacct' FROM seq_1_to_620;"
                  "INSERT INTO jobs (cluster, job_id, step, user_name, start_time, end_time, state, source) "
                  "SELECT 'sim', 20000 + seq, '', 'bin', '2026-10-02', '2026-10-02 01:00', 'COMPLETED', 'sacct' "
                  "FROM seq_1_to_5;"
                  "INSERT INTO job_anomaly VALUES ('sim', 10007, UTC_TIMESTAMP(6), 'anomalous', 4, 3, '{}'),"
                  " ('sim', 10008, UTC_TIMESTAMP(6), 'normal', 4, 0, '{}'), ('sim', 20001, UTC_TIMESTAMP(6), 'anomalous', 4, 2, '{}');"});
  INFO(sql.err);
  REQUIRE(sql.exit_code == 0);
  const int port = FreePort();
  Child server({IosonarBin(), "serve", "--store", dir / "store", "--mysql", db.url(), "--listen",
                "127.0.0.1:" + std::to_string(port), "--trusted-proxy", "127.0.0.1", "--admins", "root"},
               {}, dir / "serve.log");
  REQUIRE(WaitUntil([&] { return !server.Alive() || CanConnect(port); }, 20000));
  REQUIRE(server.Alive());
  auto ids = [&](const std::string& q, const std::string& user) {
    auto r = Get(port, "/api/jobs" + q, As(user));
    INFO(q << ": " << r.body);
    REQUIRE(r.status == 200);
    return ListedIds(r.body);
  };

  // Paging: 500, then the other 121 of daemon's 621, then nothing; no job twice, none of bin's.
  auto p1 = ids("", "daemon"), p2 = ids("?page=2", "daemon"), p3 = ids("?page=3", "daemon");
  CHECK(p1.size() == 500);
  CHECK(p2.size() == 121);
  CHECK(p3.empty());
  std::set<std::string> all(p1.begin(), p1.end());
  all.insert(p2.begin(), p2.end());
  CHECK(all.size() == 621);
  for (const auto& id : all) CHECK(id.rfind("2000", 0) != 0);
  REQUIRE(p1.size() >= 2);
  CHECK(p1[0] == "1");  // latest start first: the simulated job (2026-11-22), then the latest inserted
  CHECK(p1[1] == "10620");
  auto page1 = Get(port, "/jobs", As("daemon"));
  CHECK(page1.body.find("rel=\"next\" href=\"/jobs?page=2\"") != std::string::npos);
  auto page2 = Get(port, "/jobs?page=2&state=completed", As("daemon"));
  CHECK(page2.body.find("rel=\"next\"") == std::string::npos);  // 559 COMPLETED of daemon's: no third page
  CHECK(page2.body.find("rel=\"prev\" href=\"/jobs?state=COMPLETED\"") != std::string::npos);
  CHECK(page2.body.find("<th><a href=\"/jobs?state=COMPLETED&amp;sort=runtime") != std::string::npos);

  // Filters.
  auto failed = ids("?state=FAILED", "daemon");
  CHECK(failed.size() == 62);
  for (const auto& id : failed) CHECK(std::stoi(id) % 10 == 0);
  auto day2 = ids("?from=2026-10-02&to=2026-10-02", "daemon");  // hours 24-47
  CHECK(day2.size() == 24);
  CHECK(ids("?from=2026-10-02&to=2026-10-02", "root").size() == 29);  // and bin's five
  CHECK(ids("?verdict=anomalous", "daemon") == std::vector<std::string>{"10007"});
  CHECK(ids("?verdict=normal", "daemon") == std::vector<std::string>{"10008"});
  CHECK(ids("?verdict=none&state=FAILED", "daemon").size() == 62);
  CHECK(ids("?user=bin", "daemon").empty());  // narrows, never widens
  CHECK(ids("?user=bin", "root").size() == 5);
  CHECK(ids("?user=bin&verdict=anomalous", "root") == std::vector<std::string>{"20001"});
  // The page shows run time and nodes.
  auto fl = Get(port, "/jobs?state=FAILED&from=2026-10-01&to=2026-10-01", As("daemon"));
  CHECK(fl.body.find("<td class=\"n\">30 min 00 s</td><td class=\"n\">2</td>") != std::string::npos);
  // Bad filters are 400s that name the parameter.
  auto bad = Get(port, "/api/jobs?from=2026-02-30x", As("daemon"));
  CHECK(bad.status == 400);
  CHECK(bad.body.find("from: a day") != std::string::npos);
  CHECK(Get(port, "/jobs?page=0", As("daemon")).status == 400);
}

}  // namespace iosonar::test
