// iosonar serve's parts that need no servers: the trusted-proxy address
// rule, the listen address, single flight, routing without an identity,
// HTML escaping of job lists, sorting.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <memory>
#include <thread>

#include <rapidjson/document.h>

#include "serve/assets.h"
#include "serve/http_server.h"
#include "serve/identity.h"
#include "serve/pages.h"
#include "serve/service.h"
#include "serve/single_flight.h"
#include "serve/timeline.h"

namespace iosonar::serve {
namespace {

sockaddr_storage V4(const char* ip) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  inet_pton(AF_INET, ip, &a->sin_addr);
  return ss;
}
sockaddr_storage V6(const char* ip) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
  a->sin6_family = AF_INET6;
  inet_pton(AF_INET6, ip, &a->sin6_addr);
  return ss;
}
bool Match(const char* rule, const sockaddr_storage& ss) {
  auto m = AddressMatch::Parse(rule);
  REQUIRE(m.ok());
  return m->Matches(reinterpret_cast<const sockaddr*>(&ss));
}

}  // namespace

TEST_CASE("serve: trusted-proxy addresses and CIDR blocks", "[serve]") {
  CHECK(Match("127.0.0.1", V4("127.0.0.1")));
  CHECK_FALSE(Match("127.0.0.1", V4("127.0.0.2")));
  CHECK(Match("10.1.0.0/16", V4("10.1.255.7")));
  CHECK_FALSE(Match("10.1.0.0/16", V4("10.2.0.1")));
  CHECK(Match("10.1.2.3/31", V4("10.1.2.2")));
  CHECK_FALSE(Match("10.1.2.3/31", V4("10.1.2.4")));
  CHECK(Match("0.0.0.0/0", V4("192.0.2.1")));
  CHECK(Match("::1", V6("::1")));
  CHECK_FALSE(Match("::1", V4("127.0.0.1")));
  CHECK(Match("fd00::/8", V6("fd12::1")));
  // an IPv4 peer on a dual-stack socket
  CHECK(Match("192.0.2.1", V6("::ffff:192.0.2.1")));
  CHECK_FALSE(Match("192.0.2.1", V6("::ffff:192.0.2.2")));
  CHECK_FALSE(AddressMatch::Parse("proxy.example.org").ok());
  CHECK_FALSE(AddressMatch::Parse("10.0.0.0/33").ok());
  CHECK_FALSE(AddressMatch::Parse("10.0.0.0/x").ok());
}

TEST_CASE("serve: a user header counts only from a trusted proxy", "[serve]") {
  IdentityOptions o;
  o.trusted_proxies.push_back(*AddressMatch::Parse("127.0.0.1"));
  o.admins = {"boss"};
  auto trusted = V4("127.0.0.1"), other = V4("127.0.0.9");
  auto id = Identify(o, {reinterpret_cast<sockaddr*>(&trusted), "alice", nullptr});
  REQUIRE(id.ok());
  CHECK(id->user == "alice");
  CHECK_FALSE(id->admin);
  CHECK(id->via == "proxy");
  CHECK(Identify(o, {reinterpret_cast<sockaddr*>(&other), "alice", nullptr}).status().code() == Code::kNotFound);
  CHECK(Identify(o, {reinterpret_cast<sockaddr*>(&trusted), nullptr, nullptr}).status().code() == Code::kNotFound);
  CHECK(Identify(o, {reinterpret_cast<sockaddr*>(&trusted), "boss", nullptr})->admin);
  // root's primary group is root: membership by primary gid counts
  o.admin_group = "root";
  CHECK(Identify(o, {reinterpret_cast<sockaddr*>(&trusted), "root", nullptr})->admin);
  CHECK_FALSE(Identify(o, {reinterpret_cast<sockaddr*>(&trusted), "daemon", nullptr})->admin);
}

// The group cache (--group-ttl, --group-cache): NSS is asked once per user
// per TTL; a membership changed in the directory is seen once the TTL has
// passed (an injected clock and directory); at most N users are kept, the
// least recently used pushed out first.
TEST_CASE("serve: group lookups are cached for the TTL, changes seen after it, the cache bounded", "[serve]") {
  std::map<std::string, std::vector<std::string>> directory = {{"alice", {"alice", "users"}}, {"bob", {"bob"}}};
  std::map<std::string, int> asked;
  int64_t now = 1000;
  constexpr int64_t kS = 1000000000;
  auto cache = std::make_shared<GroupCache>(
      60 * kS, 3, [&](const std::string& u) { ++asked[u]; return directory[u]; }, [&] { return now; });

  IdentityOptions o;
  o.trusted_proxies.push_back(*AddressMatch::Parse("127.0.0.1"));
  o.admin_group = "hpcadm";
  o.share_by = "group";
  o.group_cache = cache;
  auto peer = V4("127.0.0.1");
  auto who = [&](const char* user) {
    auto id = Identify(o, {reinterpret_cast<sockaddr*>(&peer), user, nullptr});
    REQUIRE(id.ok());
    return *id;
  };
  // A page load: a dozen requests, one question to NSS.
  for (int i = 0; i < 12; ++i) {
    auto id = who("alice");
    CHECK_FALSE(id.admin);
    CHECK(id.groups == std::vector<std::string>{"alice", "users"});
  }
  CHECK(asked["alice"] == 1);
  CHECK(cache->lookups() == 1);
  // alice joins the administrators' group and leaves "users": not yet seen within the TTL ...
  directory["alice"] = {"alice", "hpcadm"};
  now += 59 * kS;
  CHECK_FALSE(who("alice").admin);
  CHECK(asked["alice"] == 1);
  // ... seen once it has passed.
  now += 1 * kS;
  auto id = who("alice");
  CHECK(id.admin);
  CHECK(id.groups == std::vector<std::string>{"alice", "hpcadm"});
  CHECK(asked["alice"] == 2);
  // Bounded: 3 users at most; the least recently used goes first.
  for (const char* u : {"bob", "carol", "alice", "dave"}) who(u);  // bob is the least recently used when dave comes
  CHECK(cache->size() == 3);
  who("alice");
  who("carol");
  CHECK(asked["alice"] == 2);  // kept
  CHECK(asked["carol"] == 1);
  who("bob");  // pushed out: asked again
  CHECK(asked["bob"] == 2);
  CHECK(cache->size() == 3);
  for (int i = 0; i < 1000; ++i) cache->GroupsOf("user" + std::to_string(i));
  CHECK(cache->size() == 3);

  // TTL 0: NSS every time. And the real NSS through the cache: root's primary group counts.
  GroupCache every(0, 8, [&](const std::string& u) { ++asked[u]; return directory[u]; });
  every.GroupsOf("bob");
  every.GroupsOf("bob");
  CHECK(asked["bob"] == 4);
  CHECK(every.size() == 0);
  IdentityOptions real;
  real.trusted_proxies = o.trusted_proxies;
  real.admin_group = "root";
  real.group_cache = std::make_shared<GroupCache>();
  CHECK(Identify(real, {reinterpret_cast<sockaddr*>(&peer), "root", nullptr})->admin);
  CHECK(Identify(real, {reinterpret_cast<sockaddr*>(&peer), "root", nullptr})->admin);
  CHECK_FALSE(Identify(real, {reinterpret_cast<sockaddr*>(&peer), "daemon", nullptr})->admin);
  CHECK(real.group_cache->lookups() == 2);
}

TEST_CASE("serve: listen addresses", "[serve]") {
  std::string h;
  int p = 0;
  REQUIRE(ParseListen("127.0.0.1:8080", &h, &p).ok());
  CHECK(h == "127.0.0.1");
  CHECK(p == 8080);
  REQUIRE(ParseListen("[::1]:0", &h, &p).ok());
  CHECK(h == "::1");
  CHECK(p == 0);
  CHECK_FALSE(ParseListen("8080", &h, &p).ok());
  CHECK_FALSE(ParseListen(":8080", &h, &p).ok());
  CHECK_FALSE(ParseListen("localhost:http", &h, &p).ok());
  CHECK_FALSE(ParseListen("localhost:70000", &h, &p).ok());
}

TEST_CASE("serve: concurrent callers of one key share one computation", "[serve]") {
  SingleFlight<int> sf;
  std::atomic<int> runs{0};
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> waiting{0};
  auto slow = [&] {
    runs++;
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return release; });
    return 42;
  };
  std::vector<std::thread> ts;
  std::vector<int> got(8, 0);
  std::atomic<int> leaders{0};
  for (size_t i = 0; i < got.size(); ++i)
    ts.emplace_back([&, i] {
      bool led = false;
      waiting++;
      got[i] = sf.Do("job", slow, &led);
      if (led) leaders++;
    });
  // Every caller has entered Do before the leader may finish (the leader blocks on release).
  while (waiting.load() < 8) std::this_thread::yield();
  while (runs.load() == 0) std::this_thread::yield();
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : ts) t.join();
  for (int v : got) CHECK(v == 42);
  // Callers that entered after the flight landed would lead a new one; the
  // ones that entered while it flew (at least the leader) shared it.
  CHECK(runs.load() == leaders.load());
  CHECK(runs.load() >= 1);
  CHECK(runs.load() < 8);
  // A later call flies again (results are not remembered).
  release = true;
  CHECK(sf.Do("job", [] { return 7; }) == 7);
}

TEST_CASE("serve: without an identity only static files answer", "[serve]") {
  ServeOptions o;
  o.store = "/nonexistent";
  o.mysql = "mysql://nobody@localhost/none?socket=/nonexistent";
  o.quiet = true;
  Service s(o);
  for (const char* p : {"/api/jobs", "/api/jobs/1", "/jobs", "/jobs/1", "/admin", "/api/admin/heatmap"}) {
    Request r;
    r.path = p;
    CHECK(s.Handle(r).status == 401);
  }
  Request post;
  post.method = "POST";
  post.path = "/api/jobs";
  CHECK(s.Handle(post).status == 405);
  Request st;
  st.path = "/static/uplot.js";
  auto js = s.Handle(st);
  CHECK(js.status == 200);
  CHECK(js.content_type.rfind("text/javascript", 0) == 0);
  st.path = "/static/nothing.js";
  CHECK(s.Handle(st).status == 404);
  st.path = "/static/../service.cc";  // not a static file: a route that needs an identity
  CHECK(s.Handle(st).status == 401);
  // The bundled licence travels with the library.
  REQUIRE(FindAsset("uplot-LICENSE.txt"));
  CHECK(FindAsset("uplot-LICENSE.txt")->data.find("MIT") != std::string_view::npos);
}

TEST_CASE("serve: two identity headers are a 400, paths and job ids are exact", "[serve]") {
  ServeOptions o;
  o.store = "/nonexistent";
  o.mysql = "mysql://nobody@localhost/none?socket=/nonexistent";  // never reached below
  o.quiet = true;
  o.identity.trusted_proxies.push_back(*AddressMatch::Parse("127.0.0.1"));
  Service s(o);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr);
  Request r;
  r.cred.peer = reinterpret_cast<const sockaddr*>(&peer);
  r.cred.user_header = "root";
  r.cred.user_header_count = 2;
  for (const char* p : {"/api/jobs", "/api/me", "/jobs", "/admin"}) {
    r.path = p;
    auto x = s.Handle(r);
    CHECK(x.status == 400);
    CHECK(x.body.find("2 X-Remote-User headers") != std::string::npos);
  }
  r.cred.user_header_count = 1;
  r.cred.munge_header_count = 3;
  r.path = "/api/me";
  CHECK(s.Handle(r).status == 400);
  CHECK(s.Handle(r).body.find("3 X-Munge-Credential headers") != std::string::npos);
  r.cred.munge_header_count = 0;
  CHECK(s.Handle(r).status == 200);  // one header: root
  for (const char* p : {"/api/jobs/1/", "/api/jobs//1", "/jobs/1/", "/api/me/"}) {
    r.path = p;
    auto x = s.Handle(r);
    INFO(p);
    CHECK(x.status == 404);
    CHECK(x.Body().find("trailing or doubled") != std::string::npos);
  }
  // what the HTTP layer gives for /api/jobs/1%00x: not job 1 (no database is asked)
  for (const char* p : {"/api/jobs/1%00x", "/jobs/1%00x", "/api/jobs/1x/series", "/api/jobs/01"}) {
    r.path = p;
    auto x = s.Handle(r);
    INFO(p);
    CHECK(x.status == 404);
    CHECK(x.Body().find("digits only") != std::string::npos);
  }
}

TEST_CASE("serve: stored codes are shown in words", "[serve]") {
  CHECK(VerdictText("not_enough_history") == "too few earlier runs to compare with");
  CHECK(VerdictText("anomalous") == "I/O anomaly");
  CHECK(VerdictText("normal").find('_') == std::string::npos);
  CHECK(VerdictText("some_new_code") == "some new code");
  CHECK(EvidenceText("high_mdops,n1_mode") == "many metadata operations, N-1 I/O (many processes on one file)");
  CHECK(EvidenceText("") == "");
  CHECK(ServerKindText("ost") == "OST");
  CHECK(ServerKindText("forwarding") == "forwarding node");
}

TEST_CASE("serve: job lists escape what users typed, and sort", "[serve]") {
  Identity who{"al<i>ce", false, "proxy", {}};
  std::vector<ListedJob> jobs(3);
  jobs[0].job_id = "10";
  jobs[0].name = "<img src=x onerror=alert(1)>";
  jobs[0].summarized = true;
  jobs[0].read_bytes = 5;
  jobs[1].job_id = "9";
  jobs[1].name = "b\"'&";
  jobs[1].summarized = true;
  jobs[1].read_bytes = 50;
  jobs[2].job_id = "11";
  ListQuery lq;
  lq.sort = "bytes";
  std::string h = JobsPage(who, jobs, lq, false);
  CHECK(h.find("<img") == std::string::npos);
  CHECK(h.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(h.find("b&quot;&#39;&amp;") != std::string::npos);
  CHECK(h.find("al&lt;i&gt;ce") != std::string::npos);
  SortJobs(&jobs, "bytes", true);
  CHECK(jobs[0].job_id == "9");
  CHECK(jobs[2].job_id == "11");
  SortJobs(&jobs, "job", false);
  CHECK(jobs[0].job_id == "9");
  CHECK(jobs[1].job_id == "10");
  const std::string js = JobListJson(jobs);
  CHECK(js.find("\"job_id\": \"9\"") != std::string::npos);
  CHECK(js.find("\"bytes\": null") != std::string::npos);  // job 11 is not summarized
}

TEST_CASE("serve: the job list's filters are checked, kept in its links, and page on", "[serve]") {
  auto q = ParseListQuery({{"user", "daemon"}, {"state", "completed"}, {"verdict", "anomalous"}, {"from", "2026-11-01"},
                           {"to", "2026-11-22"}, {"page", "3"}, {"sort", "runtime"}, {"order", "asc"}});
  REQUIRE(q.ok());
  CHECK(q->state == "COMPLETED");
  CHECK(q->page == 3);
  CHECK(ListLink(*q, 4) == "?user=daemon&amp;state=COMPLETED&amp;verdict=anomalous&amp;from=2026-11-01&amp;to=2026-11-22"
                           "&amp;sort=runtime&amp;order=asc&amp;page=4");
  CHECK(ListLink(ListQuery{}, 1) == "");
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"user", "a b"}, {"user", "<x>"}, {"state", "RUN%"}, {"verdict", "slow"}, {"from", "2026-13-01"},
           {"to", "yesterday"}, {"page", "0"}, {"page", "-1"}, {"page", "99999999"}}) {
    INFO(k << "=" << v);
    auto bad = ParseListQuery({{k, v}});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().rfind(k + ":", 0) == 0);  // names the parameter
  }
  std::vector<ListedJob> jobs(2);
  jobs[0].job_id = "1";
  jobs[0].start_ns = 0;
  jobs[0].end_ns = 3725LL * 1000000000;
  jobs[0].nodes = 128;
  jobs[1].job_id = "2";
  Identity who{"daemon", false, "proxy", {}};
  const std::string h = JobsPage(who, jobs, *q, true);
  CHECK(h.find("<td class=\"n\">1 h 02 min</td><td class=\"n\">128</td>") != std::string::npos);
  CHECK(h.find("rel=\"next\" href=\"/jobs?user=daemon&amp;state=COMPLETED") != std::string::npos);
  CHECK(h.find("page=4\">older jobs") != std::string::npos);
  CHECK(h.find("page=2\">&larr; newer jobs") != std::string::npos);
  CHECK(h.find("<option value=\"anomalous\" selected>") != std::string::npos);
  CHECK(h.find("\"too-few\">too few earlier runs") != std::string::npos);
  CHECK(h.find("not_enough_history") == std::string::npos);  // no internal code, not even as a value
  CHECK(JobListJson(jobs).find("\"runtime_s\": 3725") != std::string::npos);
}

TEST_CASE("serve: the heatmap's OST IOPS and latency where sampled, rounded, on the admin page", "[serve]") {
  Heatmap h;
  h.day_start_ns = 1795305600000000000;  // 2026-11-22
  for (const char* n : {"fs-OST0000", "fs-OST0001"}) {
    HeatRow r;
    r.name = n;
    h.osts.push_back(r);
  }
  h.osts[0].iops[0] = 1000.0 / 3;  // 333.333...
  h.osts[0].io_ms[0] = 1.23456789;
  h.osts[0].wait_ms[0] = 0.0556;
  h.osts[1].iops[0] = 1000;
  h.osts[1].io_ms[0] = 6.5;
  h.osts[1].iops[1] = 0;  // sampled, no operations: idle
  const std::string j = HeatmapJson(h);
  CHECK(j.find("333.3,") != std::string::npos);
  CHECK(j.find("333.33") == std::string::npos);  // rounded
  CHECK(j.find("1.235,") != std::string::npos);
  CHECK(j.find("\"ost_io_wait_ms\":[0.056,null") != std::string::npos);
  auto back = HeatmapFromJson(j);
  REQUIRE(back.ok());
  REQUIRE(back->osts.size() == 2);
  CHECK(back->osts[1].io_ms[0] == 6.5);
  CHECK(back->osts[1].iops[1] == 0);
  CHECK(std::isnan(back->osts[1].iops[2]));
  CHECK(std::isnan(back->osts[1].wait_ms[0]));
  const std::string page = AdminPage(Identity{"root", true, "proxy", {}}, *back, "2026-11-22", "");
  for (const char* kind : {"ost-iops", "ost-io-time", "ost-wait"})
    CHECK(page.find(std::string("data-kind=\"") + kind + "\"") != std::string::npos);
  // Levels against the largest (1000 IOPS: 333.3 is low, below a third; 6.5 ms high), idle, not sampled.
  CHECK(page.find("data-level=\"low\" data-server=\"fs-OST0000\" data-hour=\"0\" data-value=\"333.300\"") !=
        std::string::npos);
  CHECK(page.find("data-level=\"high\" data-server=\"fs-OST0001\" data-hour=\"0\" data-value=\"1000.000\"") !=
        std::string::npos);
  CHECK(page.find("data-level=\"idle\" data-server=\"fs-OST0001\" data-hour=\"1\"") != std::string::npos);
  CHECK(page.find("data-level=\"none\" data-server=\"fs-OST0001\" data-hour=\"2\"") != std::string::npos);
  CHECK(page.find("fs-OST0001 2:00 not sampled") != std::string::npos);
  CHECK(page.find("<li data-level=\"none\">") != std::string::npos);
  CHECK(page.find("6.50 ms (high)") != std::string::npos);
}

TEST_CASE("serve: a cached heatmap reads back as it was written", "[serve]") {
  Heatmap h;
  h.day_start_ns = 1795305600000000000;  // 2026-11-22
  h.osts.push_back({"fs-OST0000", {}});
  h.osts[0].peak[0] = 1.5e9;
  h.osts[0].peak[23] = 3;
  h.forwarding.push_back({"fwd<0>", {}});
  auto back = HeatmapFromJson(HeatmapJson(h));
  REQUIRE(back.ok());
  CHECK(back->day_start_ns == h.day_start_ns);
  REQUIRE(back->osts.size() == 1);
  CHECK(back->osts[0].name == "fs-OST0000");
  CHECK(back->osts[0].peak == h.osts[0].peak);
  REQUIRE(back->forwarding.size() == 1);
  CHECK(back->forwarding[0].name == "fwd<0>");
  CHECK_FALSE(HeatmapFromJson("{\"day\":\"2026-11-22\",\"osts\":[{\"name\":\"x\",\"peak\":[1]}],\"forwarding\":[]}").ok());
  CHECK_FALSE(HeatmapFromJson("[]").ok());
  // Not sampled: no IOPS or latency map, and the JSON says null.
  CHECK(HeatmapJson(h).find("\"iops\":[null,") != std::string::npos);
  CHECK(std::isnan(back->osts[0].iops[0]));
  CHECK(AdminPage(Identity{"root", true, "proxy", {}}, *back, "2026-11-22", "").find("No OST operation counts this day.") !=
        std::string::npos);
  // the SVG escapes server names
  Identity admin{"root", true, "proxy", {}};
  std::string page = AdminPage(admin, *back, "2026-11-22", "");
  CHECK(page.find("fwd&lt;0&gt;") != std::string::npos);
  CHECK(page.find("fwd<0>") == std::string::npos);
}

}  // namespace iosonar::serve

namespace iosonar::serve {

namespace {
// A job of 100 s on 4 processes: 40 s of writes (10 s each), 4 KiB requests.
analysis::JobSummary SmallWrites() {
  analysis::JobSummary s;
  s.job_id = "7";
  s.runtime_s = 100;
  s.io_phase_s = 40;
  s.processes_with_io = 4;
  s.write.busy_s = 40;
  s.busy_s = 44;  // 4 s of metadata and other calls
  return s;
}
report::Advice SmallAdvice() { return {"7", "", "", "small requests", "20000 writes of 4 KiB on average", "Buffer."}; }
}  // namespace

TEST_CASE("serve: the diagnosis puts what cost the most time first", "[serve][diagnosis]") {
  const auto s = SmallWrites();
  SECTION("nothing to say: one info entry") {
    auto d = Diagnose(s, {}, nullptr, {});
    REQUIRE(d.size() == 1);
    CHECK(d[0].kind == "nothing_found");
    CHECK(d[0].severity == "info");
  }
  SECTION("an advice rule: its cost is a process's time in those calls") {
    auto d = Diagnose(s, {SmallAdvice()}, nullptr, {});
    REQUIRE(d.size() == 1);
    CHECK(d[0].kind == "small_requests");
    CHECK(d[0].cost_s == Approx(10));
    CHECK(d[0].severity == "high");  // 10 % of the run
    CHECK(d[0].action == "Buffer.");
  }
  SECTION("a slow server of an anomalous job comes first, and never 'nothing to change' above it") {
    AnomalyView a;
    a.analysed = true;
    a.verdict = "anomalous";
    a.history_runs = 6;
    a.slowdown = 4;
    a.outliers = {{.kind = "forwarding", .server = "fwd001", .bandwidth_ratio = 0.5, .cost_s = 3},
                  {.kind = "ost", .server = "simfs-OST0005", .bandwidth_ratio = 0.25, .cost_s = 30}};
    auto d = Diagnose(s, {SmallAdvice()}, &a, {});
    REQUIRE(d.size() == 2);
    CHECK(d[0].kind == "slow_server");
    CHECK(d[0].severity == "high");
    CHECK(d[0].cost_s == Approx(30));  // the costliest server's, not the lowest ratio's
    CHECK(d[0].cause == "Slowed ~4.0x by OST simfs-OST0005 (the server, not your code)");
    CHECK(d[0].evidence.find("fwd001") != std::string::npos);
    // at normal speed the small writes would have taken a quarter of the time
    CHECK(d[1].kind == "small_requests");
    CHECK(d[1].cost_s == Approx(2.5));
    for (const auto& x : d) CHECK(x.kind != "nothing_found");
  }
  SECTION("anomalous without a lagging server: the first neighbour, hidden when the caller may not see it") {
    AnomalyView a;
    a.analysed = true;
    a.verdict = "anomalous";
    a.slowdown = 2;
    a.neighbours = {{"", "fwd003", "high_mdops", 1200}};
    auto d = Diagnose(s, {}, &a, {});
    REQUIRE(d.size() == 1);
    CHECK(d[0].kind == "interference");
    CHECK(d[0].cost_s == Approx(20));  // 40 s of I/O, half of it lost
    CHECK(d[0].cause.find("another user's job") != std::string::npos);
    CHECK(d[0].evidence.find("many metadata operations") != std::string::npos);
    CHECK(d[0].evidence.find("high_mdops") == std::string::npos);
  }
  SECTION("the offender is told whom it slowed") {
    auto d = Diagnose(s, {}, nullptr, {{"3008", 4, "fwd003", "high_mdops"}, {"", 2, "fwd003", "high_mdops"}});
    REQUIRE(d.size() == 1);
    CHECK(d[0].kind == "slowed_others");
    CHECK(d[0].severity == "high");
    CHECK(d[0].cause == "Your job slowed 2 other jobs (job 3008 and another user's job)");
  }
  SECTION("a first run's lagging server comes first, above any advice, never under 'nothing to change'") {
    AnomalyView a;
    a.analysed = true;
    a.verdict = "not_enough_history";
    a.history_runs = 0;
    a.server_check = "client_time";
    a.outliers = {{.kind = "ost", .server = "simfs-OST0003", .bandwidth_ratio = 0.25, .cost_s = 30}};
    auto d = Diagnose(s, {SmallAdvice()}, &a, {});
    REQUIRE(d.size() == 2);
    CHECK(d[0].kind == "slow_server");
    CHECK(d[0].cause == "Slowed ~4.0x by OST simfs-OST0003 (the server, not your code)");
    CHECK(d[0].severity == "high");  // 30 s of a 100 s run
    CHECK(d[1].kind == "small_requests");
    // Even when its cost is unknown it is a finding, not "nothing to change".
    a.outliers[0].cost_s = 0;
    d = Diagnose(SmallWrites(), {}, &a, {});
    REQUIRE(d.size() == 1);
    CHECK(d[0].kind == "slow_server");
    CHECK(d[0].severity != "info");
  }
  SECTION("no history and no server compared: not judged, never 'nothing to change'") {
    AnomalyView a;
    a.analysed = true;
    a.verdict = "not_enough_history";
    a.history_runs = 0;
    for (const char* check : {"none", ""}) {  // "": a row stored before server_check
      a.server_check = check;
      auto d = Diagnose(s, {}, &a, {});
      REQUIRE(d.size() == 1);
      CHECK(d[0].kind == "not_judged");
      CHECK(d[0].cause == "Not judged: first runs of this application");
      // An advice rule still comes first; still no "nothing to change".
      d = Diagnose(s, {SmallAdvice()}, &a, {});
      REQUIRE(d.size() == 2);
      CHECK(d[0].kind == "small_requests");
      CHECK(d[1].kind == "not_judged");
    }
    // Some servers compared, one not (the job's only forwarding node): still not judged, and it is named.
    a.server_check = "client_time";
    a.unjudged = {"fwd000"};
    auto d = Diagnose(s, {}, &a, {});
    REQUIRE(d.size() == 1);
    CHECK(d[0].kind == "not_judged");
    CHECK(d[0].evidence.find("fwd000 (the others did not lag) could not be compared") != std::string::npos);
    a.unjudged.clear();  // all compared, none lagged: nothing found, and too few runs said
    d = Diagnose(s, {}, &a, {});
    REQUIRE(d.size() == 2);
    CHECK(d[0].kind == "nothing_found");
    CHECK(d[1].kind == "not_judged");
  }
  SECTION("too little history is info, in words") {
    AnomalyView a;
    a.analysed = true;
    a.verdict = "not_enough_history";
    a.history_runs = 1;
    a.server_check = "brw_osc";  // the servers were compared: none lagged
    auto d = Diagnose(s, {}, &a, {});
    REQUIRE(d.size() == 2);
    CHECK(d[0].kind == "nothing_found");
    CHECK(d[1].kind == "not_judged");
    for (const auto& x : d) CHECK(x.cause.find('_') == std::string::npos);
    CHECK(DiagnosisJson(d, false).find("\"severity\":\"info\"") != std::string::npos);
    // Seconds to the millisecond in the JSON, ratios to 0.001: no 17-digit fractions.
    d[0].cost_s = 100.0 / 3;
    CHECK(DiagnosisJson(d, false).find("\"cost_s\":33.333}") != std::string::npos);
    a.slowdown = 4.0 / 3;
    CHECK(AnomalyJson(a).find("\"slowdown\":1.333,") != std::string::npos);
  }
}

}  // namespace iosonar::serve

namespace iosonar::serve {

TEST_CASE("serve: --base-path puts every link of a page under the prefix", "[serve][base-path]") {
  CHECK(*NormalizeBasePath("/iosonar/") == "/iosonar");
  CHECK(*NormalizeBasePath("/a/b-c_d.e~f") == "/a/b-c_d.e~f");
  CHECK(*NormalizeBasePath("/") == "");
  for (const char* bad : {"", "iosonar", "/a//b", "/a/../b", "/a b", "/a\"b", "/a?x"}) {
    INFO(bad);
    CHECK_FALSE(NormalizeBasePath(bad).ok());
  }
  const std::string page = "<a href=\"/jobs\">x</a><script src=\"/static/iosonar.js\"></script>"
                           "<form action=\"/admin\"></form><td>href=&quot;/jobs&quot;</td><a href=\"https://e/x\">";
  const std::string r = WithBasePath(page, "/iosonar");
  CHECK(r == "<a href=\"/iosonar/jobs\">x</a><script src=\"/iosonar/static/iosonar.js\"></script>"
             "<form action=\"/iosonar/admin\"></form><td>href=&quot;/jobs&quot;</td><a href=\"https://e/x\">");
  CHECK(WithBasePath(page, "") == page);

  ServeOptions o;
  o.store = "/nonexistent";
  o.mysql = "mysql://nobody@localhost/none?socket=/nonexistent";
  o.quiet = true;
  o.base_path = "/iosonar";
  Service s(o);
  Request r1;
  r1.path = "/iosonar/static/iosonar.css";  // a proxy that passes the prefix on
  CHECK(s.Handle(r1).status == 200);
  r1.path = "/static/iosonar.css";  // one that strips it
  CHECK(s.Handle(r1).status == 200);
  r1.path = "/iosonarx/static/iosonar.css";  // not the prefix
  CHECK(s.Handle(r1).status == 401);
  r1.path = "/iosonar/jobs";
  auto page401 = s.Handle(r1);
  CHECK(page401.status == 401);
  CHECK(page401.Body().find("href=\"/iosonar/static/iosonar.css\"") != std::string::npos);
  CHECK(page401.Body().find("href=\"/iosonar/jobs\"") != std::string::npos);
  CHECK(page401.Body().find("href=\"/static") == std::string::npos);
}

}  // namespace iosonar::serve

namespace iosonar::serve {

TEST_CASE("serve timeline: rows per process, bytes spread over the columns they span, servers", "[serve]") {
  constexpr int64_t s = 1000000000;
  const int64_t t0 = 1795305600 * s;
  std::vector<TimelineRun> runs = {
      // rank 1 writes 300 bytes over [0.5 s, 3.5 s): 50, 100, 100, 50 by second
      {"cn0", 11, 1, "write", "posix", 300, t0 + s / 2, t0 + 3 * s + s / 2, 3 * s},
      // rank 0 reads 10 bytes in a zero-length run at 2 s, and opens (no bytes)
      {"cn0", 10, 0, "read", "posix", 10, t0 + 2 * s, t0 + 2 * s, 0},
      {"cn0", 10, 0, "open", "posix", 0, t0, t0 + s / 10, s / 10},
      // the MPI-IO view of rank 1's bytes: not counted again
      {"cn0", 11, 1, "write", "mpiio", 300, t0 + s / 2, t0 + 3 * s + s / 2, 3 * s},
      // a process on another node behind another forwarding node
      {"cn1", 20, std::nullopt, "write", "posix", 40, t0 + s, t0 + s, 0},
  };
  std::vector<JobstatsRow> js = {{"fs-OST0001", t0 + 2 * s, 64, 0},
                                 {"fs-OST0001", t0 + 3 * s, 36, 0},
                                 {"fs-MDT0000", t0 + s, 5, 0},
                                 // a 2 s sample: spread over [2 s, 4 s)
                                 {"fs-OST0002", t0 + 4 * s, 40, 2 * s}};
  std::map<std::string, std::string> fwd = {{"cn0", "fwd0"}, {"cn1", "fwd1"}};
  auto t = BuildTimeline("7", runs, js, fwd);
  CHECK(t.start_ns == t0);
  CHECK(t.bucket_ns == s);
  REQUIRE(t.buckets == 4);
  CHECK(t.rows_by == "process");
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].name == "rank 0");
  CHECK(t.rows[0].read == std::vector<double>{0, 0, 10, 0});
  CHECK(t.rows[1].name == "rank 1");
  CHECK(t.rows[1].write == std::vector<double>{50, 100, 100, 50});
  CHECK(t.rows[1].write_bytes == 300);  // the mpiio run left out
  CHECK(t.rows[2].name == "cn1:20");
  REQUIRE(t.servers.size() == 4);
  CHECK(t.servers[0].name == "fwd0");
  CHECK(t.servers[0].total_bytes == 310);
  CHECK(t.servers[0].active_s == 4);
  CHECK(t.servers[1].name == "fwd1");
  CHECK(t.servers[2].name == "fs-OST0001");  // MDT rows are no OST
  CHECK(t.servers[2].bytes == std::vector<double>{0, 64, 36, 0});  // each record in the second it covers
  CHECK(t.servers[2].active_s == 2);
  CHECK(t.servers[3].name == "fs-OST0002");
  CHECK(t.servers[3].bytes == std::vector<double>{0, 0, 20, 20});
  CHECK(t.servers[3].active_s == 2);
  // Past max_rows processes: one row per node, the busiest nodes kept.
  TimelineOptions o;
  o.max_rows = 1;
  auto n = BuildTimeline("7", runs, js, fwd, o);
  CHECK(n.rows_by == "node");
  REQUIRE(n.rows.size() == 1);
  CHECK(n.rows[0].name == "cn0");
  CHECK(n.rows[0].write_bytes + n.rows[0].read_bytes == 310);
  CHECK(n.rows_omitted == 1);
  // Columns: a 1,000 s job in 240 or fewer whole-second columns.
  std::vector<TimelineRun> longrun = {{"cn0", 1, 0, "write", "posix", 1000, t0, t0 + 1000 * s, 1000 * s}};
  auto l = BuildTimeline("8", longrun, {}, {});
  CHECK(l.bucket_ns == 5 * s);
  CHECK(l.buckets == 200);
  double sum = 0;
  for (double v : l.rows[0].write) sum += v;
  CHECK(sum == Approx(1000));
  CHECK(TimelineJson(t).find("\"rows_by\":\"process\"") != std::string::npos);

  // The JSON: whole bytes per bucket that add up to the total, seconds to
  // the microsecond (no 17-digit fractions). 100 bytes over [0, 3 s) by
  // second are 33.3 each.
  std::vector<TimelineRun> thirds = {{"cn0", 1, 0, "write", "posix", 100, t0, t0 + 3 * s, s / 3}};
  auto th = BuildTimeline("9", thirds, {}, {});
  REQUIRE(th.rows.size() == 1);
  REQUIRE(th.rows[0].write.size() >= 3);
  CHECK(th.rows[0].write[0] == Approx(100.0 / 3));
  const std::string j = TimelineJson(th);
  rapidjson::Document d;
  d.Parse(j.c_str());
  REQUIRE(d.IsObject());
  const auto& w = d["rows"][0]["write"];
  int64_t total = 0;
  for (const auto& v : w.GetArray()) {
    REQUIRE(v.IsInt64());
    CHECK((v.GetInt64() == 33 || v.GetInt64() == 34 || v.GetInt64() == 0));
    total += v.GetInt64();
  }
  CHECK(total == 100);
  CHECK(d["rows"][0]["busy_s"].GetDouble() == 0.333333);
  CHECK(j.find("33333333") == std::string::npos);
}

}  // namespace iosonar::serve
