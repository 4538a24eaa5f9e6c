// Every analysis subcommand's results go to MySQL, the Redis cache and a
// result stream (cli/publish.h): xlayer, compress2 and scoreboard on a
// simulated cluster whose jobs are in a real MariaDB job database, with a
// real redis-server. The rows are checked against the command's own JSON.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/jobdb/mysql.h"
#include "core/records/record.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  INFO(text.substr(0, 400));
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

// Every line validates against the schema; returns them parsed as JSON, by dataset.
std::map<std::string, std::vector<rapidjson::Document>> ValidRecords(const std::string& lines) {
  std::map<std::string, std::vector<rapidjson::Document>> out;
  for (const auto& l : test::SplitLines(lines)) {
    if (l.empty()) continue;
    std::string b = l;
    b.push_back('\0');
    ParsedRecord rec;
    Status st = ParseRecordInsitu(b.data(), l.size(), &rec);
    INFO(l << "\n" << st.ToString());
    REQUIRE(st.ok());
    out[std::string(rec.dataset->name)].push_back(Json(l));
  }
  return out;
}

std::vector<SqlRow> Query(const std::string& url, const std::string& sql, const std::vector<SqlParam>& params = {}) {
  auto c = MysqlConn::Connect(url);
  REQUIRE(c.ok());
  auto r = c.value()->Query(sql, params);
  INFO(sql << ": " << r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

double D(const std::optional<std::string>& s) { return s ? std::stod(*s) : -1; }
int64_t I(const std::optional<std::string>& s) { return s ? std::stoll(*s) : -1; }

// A URL that cannot be reached: a socket in a directory that does not exist.
std::string BadMysqlUrl(const test::TempDir& d) { return "mysql://root@localhost/iosonar?socket=" + (d / "nowhere/mysql.sock"); }

}  // namespace

TEST_CASE("xlayer and compress2 results land in MariaDB, Redis and a result stream", "[results][mysql][redis]") {
  if (!test::HaveMariaDb() || !test::HaveProgram("redis-server")) {
    FAIL("mariadbd or redis-server is not installed (scripts/setup.sh --test installs it)");
  }
  test::MariaDbServer db;
  test::RedisServer redis;
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  auto sim = test::Run({bin, "simulate", "--store", dir / "store", "--nodes", "32", "--fwd", "4", "--osts", "8",
                        "--duration", "10", "--seed", "7", "--slow-ost", "3", "--truth", dir / "truth.json", "--mysql",
                        db.url()});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const auto truth = Json(test::ReadFile(dir / "truth.json"));
  REQUIRE(truth["jobs"].Size() > 0);
  const std::string job = truth["jobs"][0]["job_id"].GetString();

  // ---- xlayer ----
  auto a = test::Run({bin, "xlayer", job, "--store", dir / "store", "--mysql", db.url(), "--format", "json", "--redis",
                      redis.url(), "--output", dir / "xlayer.jsonl"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  const auto v = Json(a.out);
  CHECK(redis.Command({"GET", "iosonar:job:" + job + ":xlayer"}) == a.out);

  auto xrow = Query(db.url(),
                    "SELECT cluster, job_bytes, fs_bytes, coverage_bytes, coverage_opens, coverage_stats, ost_source, "
                    "window_source, UNIX_TIMESTAMP(window_start), UNIX_TIMESTAMP(window_end), view_json, nodes "
                    "FROM job_xlayer WHERE job_id = ?",
                    {static_cast<int64_t>(std::stoll(job))});
  REQUIRE(xrow.size() == 1);
  const auto& r = xrow[0];
  CHECK(*r[0] == "sim");
  CHECK(I(r[1]) == v["job"]["bytes"].GetInt64());
  CHECK(D(r[2]) == Approx(v["filesystem"]["bytes"].GetDouble()).epsilon(1e-12));
  CHECK(D(r[3]) == Approx(v["coverage"]["bytes"].GetDouble()).epsilon(1e-12));
  CHECK(D(r[4]) == Approx(v["coverage"]["opens"].GetDouble()).epsilon(1e-12));
  CHECK(D(r[5]) == Approx(v["coverage"]["stats"].GetDouble()).epsilon(1e-12));
  CHECK(*r[6] == v["ost_source"].GetString());
  CHECK(*r[7] == v["window_source"].GetString());
  CHECK(D(r[8]) == Approx(static_cast<double>(v["start_ns"].GetInt64()) / 1e9));
  CHECK(D(r[9]) == Approx(static_cast<double>(v["end_ns"].GetInt64()) / 1e9));
  CHECK(*r[10] == a.out);
  CHECK(I(r[11]) == v["nodes"].GetInt64());

  // One job_server_share row per server of the view, with its numbers.
  size_t servers = 0;
  const std::pair<const char*, const char*> layers[] = {{"forwarding", "forwarding"}, {"osts", "ost"}, {"mdts", "mdt"}};
  for (const auto& [member, layer] : layers) {
    for (const auto& s : v[member].GetArray()) {
      ++servers;
      auto rows = Query(db.url(),
                        "SELECT job_bytes, total_bytes, share, job_ops, total_ops, estimated FROM job_server_share "
                        "WHERE cluster = 'sim' AND job_id = ? AND layer = ? AND server = ?",
                        {static_cast<int64_t>(std::stoll(job)), std::string(layer), std::string(s["server"].GetString())});
      INFO(layer << " " << s["server"].GetString());
      REQUIRE(rows.size() == 1);
      CHECK(D(rows[0][0]) == Approx(s["job_bytes"].GetDouble()).epsilon(1e-12));
      CHECK(D(rows[0][1]) == Approx(s["total_bytes"].GetDouble()).epsilon(1e-12));
      CHECK(D(rows[0][2]) == Approx(s["share"].GetDouble()).epsilon(1e-12));
      CHECK(D(rows[0][3]) == Approx(s["job_ops"].GetDouble()).epsilon(1e-12));
      CHECK(D(rows[0][4]) == Approx(s["total_ops"].GetDouble()).epsilon(1e-12));
      CHECK(I(rows[0][5]) == (s.HasMember("estimated") ? 1 : 0));
    }
  }
  REQUIRE(servers > 0);
  const auto count_shares = [&] {
    return I(Query(db.url(), "SELECT COUNT(*) FROM job_server_share WHERE job_id = ?",
                   {static_cast<int64_t>(std::stoll(job))})[0][0]);
  };
  CHECK(count_shares() == static_cast<int64_t>(servers));
  // The administrator's question, "which job floods this OST": with a second
  // job's view stored, the ranking of an OST both used follows their shares.
  REQUIRE(truth["jobs"].Size() > 1);
  const std::string job2 = truth["jobs"][1]["job_id"].GetString();
  auto b = test::Run({bin, "xlayer", job2, "--store", dir / "store", "--mysql", db.url(), "--format", "json"});
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  const auto v2 = Json(b.out);
  bool compared = false;
  for (const auto& o1 : v["osts"].GetArray()) {
    for (const auto& o2 : v2["osts"].GetArray()) {
      if (std::string(o1["server"].GetString()) != o2["server"].GetString()) continue;
      if (o1["share"].GetDouble() == o2["share"].GetDouble()) continue;
      auto rank = Query(db.url(),
                        "SELECT job_id, share FROM job_server_share WHERE layer = 'ost' AND server = ? "
                        "ORDER BY share DESC",
                        {std::string(o1["server"].GetString())});
      REQUIRE(rank.size() == 2);
      const bool first_wins = o1["share"].GetDouble() > o2["share"].GetDouble();
      CHECK(*rank[0][0] == (first_wins ? job : job2));
      CHECK(*rank[1][0] == (first_wins ? job2 : job));
      compared = true;
    }
  }
  CHECK(compared);  // seed 7: jobs 1000 and 1001 share OSTs 0, 5, 6, 7
  CHECK(I(Query(db.url(), "SELECT COUNT(*) FROM job_xlayer")[0][0]) == 2);

  // The stream: every line validates and carries the view's numbers.
  const std::string xl = test::ReadFile(dir / "xlayer.jsonl");
  {
    auto recs = ValidRecords(xl);
    REQUIRE(recs["iosonar.result.xlayer"].size() == 1);
    const auto& x = recs["iosonar.result.xlayer"][0];
    CHECK(std::string(x["job.id"].GetString()) == job);
    CHECK(x["xlayer.job_bytes"].GetInt64() == v["job"]["bytes"].GetInt64());
    CHECK(x["xlayer.coverage_bytes"].GetDouble() == Approx(v["coverage"]["bytes"].GetDouble()).epsilon(1e-12));
    CHECK(x["xlayer.window_ns"].GetInt64() == v["end_ns"].GetInt64() - v["start_ns"].GetInt64());
    REQUIRE(recs["iosonar.result.server_share"].size() == servers);
    for (const auto& s : recs["iosonar.result.server_share"]) {
      const std::string layer = s["share.layer"].GetString();
      const char* member = layer == "ost" ? "osts" : layer == "mdt" ? "mdts" : "forwarding";
      bool found = false;
      for (const auto& e : v[member].GetArray()) {
        if (std::string(e["server"].GetString()) != s["share.server"].GetString()) continue;
        found = true;
        CHECK(s["share.fraction"].GetDouble() == Approx(e["share"].GetDouble()).epsilon(1e-12));
        CHECK(s["share.job_bytes"].GetDouble() == Approx(e["job_bytes"].GetDouble()).epsilon(1e-12));
      }
      CHECK(found);
    }
  }

  // Rerun: the rows are replaced (a stale row of the job goes), not duplicated;
  // the stream repeats with the same event.stream/event.seq (a resend dedupes).
  {
    auto c = MysqlConn::Connect(db.url());
    REQUIRE(c.ok());
    REQUIRE(c.value()
                ->Exec("INSERT INTO job_server_share (cluster, job_id, layer, server, computed_at, window_start, "
                       "window_end, job_bytes, total_bytes, share, job_ops, total_ops, estimated) VALUES ('sim', ?, "
                       "'ost', 'stale-OST9999', NOW(), NOW(), NOW(), 1, 1, 1, 0, 0, 0)",
                       {static_cast<int64_t>(std::stoll(job))})
                .ok());
  }
  CHECK(count_shares() == static_cast<int64_t>(servers) + 1);
  auto a2 = test::Run({bin, "xlayer", job, "--store", dir / "store", "--mysql", db.url(), "--format", "json",
                       "--output", dir / "xlayer2.jsonl"});
  INFO(a2.err);
  REQUIRE(a2.exit_code == 0);
  CHECK(count_shares() == static_cast<int64_t>(servers));
  CHECK(I(Query(db.url(), "SELECT COUNT(*) FROM job_xlayer")[0][0]) == 2);
  CHECK(test::ReadFile(dir / "xlayer2.jsonl") == xl);

  // ---- compress2 ----
  auto c = test::Run({bin, "compress2", job, "--store", dir / "store", "--mysql", db.url(), "--redis", redis.url(),
                      "--output", dir / "c.jsonl"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const auto cj = Json(c.out);
  CHECK(redis.Command({"GET", "iosonar:job:" + job + ":compress2"}) == c.out);
  auto crow = [&](int lossy) {
    return Query(db.url(),
                 "SELECT records, record_groups, processes, record_ratio, baseline_bytes, compressed_bytes, byte_ratio "
                 "FROM job_compression WHERE cluster = 'sim' AND job_id = ? AND lossy = ?",
                 {static_cast<int64_t>(std::stoll(job)), static_cast<int64_t>(lossy)});
  };
  auto check_row = [&](const std::vector<SqlRow>& rows, const rapidjson::Document& j) {
    REQUIRE(rows.size() == 1);
    CHECK(I(rows[0][0]) == j["records"].GetInt64());
    CHECK(I(rows[0][1]) == j["groups"].GetInt64());
    CHECK(I(rows[0][2]) == j["processes"].GetInt64());
    CHECK(D(rows[0][3]) == Approx(j["record_ratio"].GetDouble()).epsilon(1e-12));
    CHECK(I(rows[0][4]) == j["baseline_bytes"].GetInt64());
    CHECK(I(rows[0][5]) == j["compressed_bytes"].GetInt64());
    CHECK(D(rows[0][6]) == Approx(j["byte_ratio"].GetDouble()).epsilon(1e-12));
  };
  check_row(crow(0), cj);
  {
    auto recs = ValidRecords(test::ReadFile(dir / "c.jsonl"));
    REQUIRE(recs["iosonar.result.compression"].size() == 1);
    const auto& x = recs["iosonar.result.compression"][0];
    CHECK(std::string(x["compress.mode"].GetString()) == "lossless");
    CHECK(x["compress.records"].GetInt64() == cj["records"].GetInt64());
    CHECK(x["compress.groups"].GetInt64() == cj["groups"].GetInt64());
    CHECK(x["compress.record_ratio"].GetDouble() == Approx(cj["record_ratio"].GetDouble()).epsilon(1e-12));
  }
  // Lossy is its own row (and key); a lossless rerun replaces the lossless row.
  auto l = test::Run({bin, "compress2", job, "--store", dir / "store", "--lossy", "--mysql", db.url(), "--redis",
                      redis.url()});
  REQUIRE(l.exit_code == 0);
  check_row(crow(1), Json(l.out));
  CHECK(redis.Command({"GET", "iosonar:job:" + job + ":compress2_lossy"}) == l.out);
  REQUIRE(test::Run({bin, "compress2", job, "--store", dir / "store", "--mysql", db.url()}).exit_code == 0);
  check_row(crow(0), cj);
  CHECK(I(Query(db.url(), "SELECT COUNT(*) FROM job_compression")[0][0]) == 2);

  // ---- a bad --mysql URL: an error naming the job database, the JSON still printed ----
  for (const std::string cmd : {"xlayer", "compress2"}) {
    std::vector<std::string> base = {bin, cmd, job, "--store", dir / "store"};
    if (cmd == "xlayer") base.insert(base.end(), {"--format", "json"});
    std::vector<std::string> flag = base;
    flag.insert(flag.end(), {"--mysql", BadMysqlUrl(dir)});
    auto bad = test::Run(flag);
    INFO(cmd << ": " << bad.err);
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("iosonar " + cmd + ": job database: ") != std::string::npos);
    CHECK(bad.err.find("nowhere/mysql.sock") != std::string::npos);
    CHECK(Json(bad.out)["job_id"].GetString() == job);
    // The same URL from the environment: a warning, exit 0.
    auto env = test::Run(base, {{"IOSONAR_MYSQL", BadMysqlUrl(dir)}, {"IOSONAR_CONFIG", dir / "none.conf"}});
    INFO(env.err);
    CHECK(env.exit_code == 0);
    CHECK(env.err.find("iosonar " + cmd + ": warning: job database: ") != std::string::npos);
    CHECK(Json(env.out)["job_id"].GetString() == job);
  }
  // An unwritable --output is an error too, after the JSON.
  auto badout = test::Run({bin, "compress2", job, "--store", dir / "store", "--output", dir / "nowhere/x.jsonl"});
  CHECK(badout.exit_code == 1);
  CHECK(badout.err.find("--output") != std::string::npos);
  CHECK(Json(badout.out)["records"].GetInt64() == cj["records"].GetInt64());
}

TEST_CASE("scoreboard and phases results land in MariaDB, Redis and a result stream", "[results][mysql][redis]") {
  if (!test::HaveMariaDb() || !test::HaveProgram("redis-server")) {
    FAIL("mariadbd or redis-server is not installed (scripts/setup.sh --test installs it)");
  }
  test::MariaDbServer db;
  test::RedisServer redis;
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  auto sim = test::Run({bin, "simulate", "--store", dir / "store", "--nodes", "24", "--fwd", "2", "--osts", "4",
                        "--duration", "8", "--seed", "9", "--truth", dir / "truth.json", "--mysql", db.url()});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const std::string from = "2000-01-01T00:00:00.000Z", to = "2100-01-01T00:00:00.000Z";
  auto run = [&](const std::vector<std::string>& extra, const char* limit = "3") {
    std::vector<std::string> args = {bin,   "scoreboard", "--store", dir / "store", "--from", from, "--to", to,
                                     "--format", "json", "--limit", limit, "--cluster", "sim"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::Run(args);
  };
  auto sb = run({"--mysql", db.url(), "--redis", redis.url(), "--output", dir / "sb.jsonl"});
  INFO(sb.err);
  REQUIRE(sb.exit_code == 0);
  const auto j = Json(sb.out);
  REQUIRE(j["jobs"].GetInt() > 0);
  CHECK(redis.Command({"GET", "iosonar:scoreboard:sim:" + from + ":" + to}) + "\n" == sb.out);

  // Rows: one per (who, metric, rank), equal to the JSON's rankings.
  size_t expected = 0;
  for (const auto& [who, member, key] : {std::tuple{"user", "users", "user"},
                                         std::tuple{"application", "applications", "application"}}) {
    for (const char* metric : {"bytes", "ops", "meta"}) {
      const auto& ranking = j[member][(std::string("by_") + metric).c_str()];
      auto rows = Query(db.url(),
                        "SELECT rank_no, name, jobs, read_bytes, write_bytes, data_ops, meta_ops, period_jobs, "
                        "TIMESTAMPDIFF(SECOND, '1970-01-01', period_from), TIMESTAMPDIFF(SECOND, '1970-01-01', period_to) FROM scoreboard "
                        "WHERE cluster = 'sim' AND fs = '' AND node_local = 0 AND who = ? AND metric = ? ORDER BY rank_no",
                        {std::string(who), std::string(metric)});
      INFO(who << " by " << metric);
      REQUIRE(rows.size() == ranking.Size());
      expected += rows.size();
      for (rapidjson::SizeType i = 0; i < ranking.Size(); ++i) {
        const auto& e = ranking[i];
        CHECK(I(rows[i][0]) == static_cast<int64_t>(i) + 1);
        CHECK(*rows[i][1] == e[key].GetString());
        CHECK(I(rows[i][2]) == e["jobs"].GetInt64());
        CHECK(I(rows[i][3]) == e["read_bytes"].GetInt64());
        CHECK(I(rows[i][4]) == e["write_bytes"].GetInt64());
        CHECK(I(rows[i][5]) == e["data_ops"].GetInt64());
        CHECK(I(rows[i][6]) == e["meta_ops"].GetInt64());
        CHECK(I(rows[i][7]) == j["jobs"].GetInt64());
        CHECK(D(rows[i][8]) == Approx(946684800.0));
        CHECK(D(rows[i][9]) == Approx(4102444800.0));
      }
    }
  }
  REQUIRE(expected > 0);
  // One board per storage system (TOKIO §IV-B; migration 039), equal to the JSON's file_systems.
  size_t fs_rows = 0;
  REQUIRE(j["file_systems"].Size() > 0);
  for (const auto& f : j["file_systems"].GetArray()) {
    for (const auto& [who, member, key] : {std::tuple{"user", "users", "user"},
                                           std::tuple{"application", "applications", "application"}}) {
      for (const char* metric : {"bytes", "ops", "meta"}) {
        const auto& ranking = f[member][(std::string("by_") + metric).c_str()];
        auto rows = Query(db.url(),
                          "SELECT rank_no, name, jobs, read_bytes, write_bytes, data_ops, meta_ops, period_jobs, node_local "
                          "FROM scoreboard WHERE cluster = 'sim' AND fs = ? AND who = ? AND metric = ? ORDER BY rank_no",
                          {std::string(f["fs"].GetString()), std::string(who), std::string(metric)});
        INFO(f["fs"].GetString() << ": " << who << " by " << metric);
        REQUIRE(rows.size() == ranking.Size());
        fs_rows += rows.size();
        for (rapidjson::SizeType i = 0; i < ranking.Size(); ++i) {
          const auto& e = ranking[i];
          CHECK(I(rows[i][0]) == static_cast<int64_t>(i) + 1);
          CHECK(*rows[i][1] == e[key].GetString());
          CHECK(I(rows[i][2]) == e["jobs"].GetInt64());
          CHECK(I(rows[i][3]) == e["read_bytes"].GetInt64());
          CHECK(I(rows[i][4]) == e["write_bytes"].GetInt64());
          CHECK(I(rows[i][5]) == e["data_ops"].GetInt64());
          CHECK(I(rows[i][6]) == e["meta_ops"].GetInt64());
          CHECK(I(rows[i][7]) == f["jobs"].GetInt64());
          CHECK(I(rows[i][8]) == (f["node_local"].GetBool() ? 1 : 0));
        }
      }
    }
  }
  CHECK(fs_rows > 0);
  CHECK(I(Query(db.url(), "SELECT COUNT(*) FROM scoreboard")[0][0]) == static_cast<int64_t>(expected + fs_rows));
  // The users came from the job database (the simulator's alice, bob, carol).
  CHECK(std::string(j["users"]["by_bytes"][0]["user"].GetString()) != "unknown");
  {
    auto recs = ValidRecords(test::ReadFile(dir / "sb.jsonl"));
    const auto& v = recs["iosonar.result.scoreboard"];
    REQUIRE(v.size() == expected);
    for (const auto& r : v) {
      const std::string who = r["scoreboard.who"].GetString();
      const auto& e = j[who == "user" ? "users" : "applications"]
                       [(std::string("by_") + r["scoreboard.metric"].GetString()).c_str()]
                       [static_cast<rapidjson::SizeType>(r["scoreboard.rank"].GetInt() - 1)];
      CHECK(std::string(r["scoreboard.name"].GetString()) == e[who.c_str()].GetString());
      CHECK(r["scoreboard.write_bytes"].GetInt64() == e["write_bytes"].GetInt64());
      CHECK(r["scoreboard.meta_ops"].GetInt64() == e["meta_ops"].GetInt64());
      CHECK(std::string(r["@timestamp"].GetString()) == to);
    }
  }
  // Rerun with a smaller limit: the period's rows are replaced, not added to.
  auto sb2 = run({"--mysql", db.url()}, "1");
  REQUIRE(sb2.exit_code == 0);
  CHECK(I(Query(db.url(), "SELECT COUNT(*) FROM scoreboard WHERE fs = ''")[0][0]) == 6);
  CHECK(I(Query(db.url(), "SELECT COUNT(*) FROM scoreboard")[0][0]) ==
        6 * (1 + static_cast<int64_t>(Json(sb2.out)["file_systems"].Size())));
  CHECK(I(Query(db.url(), "SELECT MAX(rank_no) FROM scoreboard")[0][0]) == 1);

  // A bad --mysql URL given as a flag: exit 1, a clear message, the JSON still printed.
  auto bad = run({"--mysql", BadMysqlUrl(dir)});
  INFO(bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("iosonar scoreboard: job database: ") != std::string::npos);
  CHECK(Json(bad.out)["jobs"].GetInt() == j["jobs"].GetInt());
  auto warn = test::Run({bin, "scoreboard", "--store", dir / "store", "--format", "json"},
                        {{"IOSONAR_MYSQL", BadMysqlUrl(dir)}, {"IOSONAR_CONFIG", dir / "none.conf"}});
  CHECK(warn.exit_code == 0);
  CHECK(warn.err.find("iosonar scoreboard: warning: job database: ") != std::string::npos);

  // phases through the same helper: rows, cache, stream; a bad flag URL is an error after the JSON.
  const auto truth = Json(test::ReadFile(dir / "truth.json"));
  const std::string job = truth["jobs"][0]["job_id"].GetString();
  auto ph = test::Run({bin, "phases", job, "--store", dir / "store", "--format", "json", "--mysql", db.url(), "--redis",
                       redis.url(), "--output", dir / "ph.jsonl"});
  INFO(ph.err);
  REQUIRE(ph.exit_code == 0);
  const auto pj = Json(ph.out);
  auto prow = Query(db.url(), "SELECT COUNT(*) FROM job_phases WHERE cluster = 'sim' AND job_id = ?",
                    {static_cast<int64_t>(std::stoll(job))});
  CHECK(I(prow[0][0]) == static_cast<int64_t>(pj["phases"].Size()));
  CHECK(Json(redis.Command({"GET", "iosonar:job:" + job + ":phases"}))["phases"].Size() == pj["phases"].Size());
  CHECK(ValidRecords(test::ReadFile(dir / "ph.jsonl"))["iosonar.result.phase"].size() == pj["phases"].Size());
  auto phbad = test::Run({bin, "phases", job, "--store", dir / "store", "--format", "json", "--mysql", BadMysqlUrl(dir)});
  CHECK(phbad.exit_code == 1);
  CHECK(phbad.err.find("iosonar phases: job database: ") != std::string::npos);
  CHECK(Json(phbad.out)["phases"].Size() == pj["phases"].Size());
}
