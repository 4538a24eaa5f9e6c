// The analysis results declared once (core/results/results.def): the
// CREATE TABLE statements generated from the table are those of the
// migrations (mysql-schema/), line by line with their comments, so the table
// can stand for the schema; and the generated INSERT/SELECT name its columns.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/results/results.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {

// The statement's lines as (code with white space folded, comment), blank lines dropped.
std::vector<std::pair<std::string, std::string>> Lines(const std::string& sql) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(sql);
  for (std::string line; std::getline(in, line);) {
    std::string comment;
    if (size_t c = line.find("--"); c != std::string::npos) {
      comment = line.substr(c + 2);
      line.resize(c);
      comment.erase(0, comment.find_first_not_of(' '));
      comment.erase(comment.find_last_not_of(' ') + 1);
    }
    std::string code;
    std::istringstream words(line);
    for (std::string w; words >> w;) code += (code.empty() ? "" : " ") + w;
    if (!code.empty() || !comment.empty()) out.emplace_back(code, comment);
  }
  return out;
}

constexpr const char* kAnyNote = "\x01";  // a column an ALTER added: its note is the table's business

struct MigratedTable {
  int migration = 0;
  std::vector<std::pair<std::string, std::string>> lines;  // as Lines()
};

// Every table of mysql-schema/*.sql as the migrations leave it: its CREATE
// TABLE, then, in migration order, the ALTER TABLE forms the migrations use
// (ADD COLUMN IF NOT EXISTS name type AFTER col; DROP PRIMARY KEY, ADD
// PRIMARY KEY (...)). Another ALTER of a result table is recorded in *unknown.
std::map<std::string, MigratedTable> MigrationTables(std::vector<std::string>* unknown) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(test::SourceDir() + "/mysql-schema"))
    if (e.path().extension() == ".sql") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, MigratedTable> out;
  static const std::regex create(R"(CREATE TABLE IF NOT EXISTS (\w+) \([\s\S]*?\n\) ENGINE=[^;\n]*;)");
  static const std::regex add(R"(ADD COLUMN IF NOT EXISTS (\w+) (.+) AFTER (\w+))");
  static const std::regex pk(R"(DROP PRIMARY KEY, ADD (PRIMARY KEY \(.*\)))");
  for (const auto& path : files) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    const int migration = std::stoi(path.filename().string().substr(0, 3));
    for (std::sregex_iterator it(text.begin(), text.end(), create), end; it != end; ++it)
      out[(*it)[1]] = {migration, Lines((*it)[0])};
    // The ALTERs, one statement a time, comments dropped.
    std::string code;
    for (const auto& [c, note] : Lines(text)) code += c + "\n";
    std::istringstream stmts(code);
    for (std::string st; std::getline(stmts, st, ';');) {
      for (char& ch : st)
        if (ch == '\n') ch = ' ';
      st.erase(0, st.find_first_not_of(' '));
      if (st.rfind("ALTER TABLE ", 0) != 0) continue;
      const std::string table = st.substr(12, st.find(' ', 12) - 12);
      auto t = out.find(table);
      if (t == out.end() || !results::FindTable(table)) continue;  // only the result tables
      auto& lines = t->second.lines;
      std::smatch m;
      if (std::regex_search(st, m, add)) {
        auto after = std::find_if(lines.begin(), lines.end(),
                                  [&](const auto& l) { return l.first.rfind(m[3].str() + " ", 0) == 0; });
        if (after == lines.end()) {
          unknown->push_back(path.filename().string() + ": " + st);
          continue;
        }
        lines.insert(after + 1, {m[1].str() + " " + m[2].str() + ",", kAnyNote});
      } else if (std::regex_search(st, m, pk)) {
        for (auto& l : lines)
          if (l.first.rfind("PRIMARY KEY (", 0) == 0) l.first = m[1].str() + (l.first.back() == ',' ? "," : "");
      } else {
        unknown->push_back(path.filename().string() + ": " + st);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("results: the generated CREATE TABLE of every result table is its migration's", "[results][schema]") {
  std::vector<std::string> unknown;
  const auto migrations = MigrationTables(&unknown);
  INFO("an ALTER of a form this test does not apply: " << (unknown.empty() ? "" : unknown.front()));
  CHECK(unknown.empty());
  REQUIRE(results::Tables().size() == 15);
  for (const auto& t : results::Tables()) {
    INFO("table " << t.name);
    auto m = migrations.find(t.name);
    REQUIRE(m != migrations.end());
    CHECK(m->second.migration == t.migration);
    const auto& want = m->second.lines;
    const auto got = Lines(results::MysqlCreateTable(t));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("line " << i + 1 << ": " << want[i].first);
      CHECK(got[i].first == want[i].first);
      if (want[i].second != kAnyNote) CHECK(got[i].second == want[i].second);
    }
  }
  // Every statement of the whole DDL is one of the tables, in order.
  const std::string all = results::MysqlDdl();
  CHECK(all.find("CREATE TABLE IF NOT EXISTS job_summary (") < all.find("CREATE TABLE IF NOT EXISTS probe_baseline ("));
}

// Every view's last CREATE OR REPLACE VIEW in the migrations, code only
// (comments dropped, white space folded), with the migration that made it.
std::map<std::string, std::pair<int, std::string>> MigrationViews() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(test::SourceDir() + "/mysql-schema"))
    if (e.path().extension() == ".sql") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, std::pair<int, std::string>> out;
  for (const auto& path : files) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string code;
    for (const auto& [c, note] : Lines(ss.str()))
      if (!c.empty()) code += (code.empty() ? "" : " ") + c;
    const int migration = std::stoi(path.filename().string().substr(0, 3));
    static const std::regex view(R"(CREATE OR REPLACE VIEW (\w+) AS [^;]*;)");
    for (std::sregex_iterator it(code.begin(), code.end(), view), end; it != end; ++it)
      out[(*it)[1]] = {migration, (*it)[0]};
  }
  return out;
}

TEST_CASE("results: the generated CREATE VIEW of every view is its last migration's", "[results][schema]") {
  const auto migrations = MigrationViews();
  REQUIRE(results::Views().size() == migrations.size());  // every view of the schema is declared
  for (const auto& v : results::Views()) {
    INFO("view " << v.name);
    auto m = migrations.find(v.name);
    REQUIRE(m != migrations.end());
    CHECK(m->second.first == v.migration);
    std::string got;
    for (const auto& [c, note] : Lines(results::MysqlCreateView(v))) got += (got.empty() ? "" : " ") + c;
    CHECK(got == m->second.second);
    CHECK(results::FindTable(v.name) == nullptr);
    CHECK(results::FindView(v.name) == &v);
  }
  // The columns declared are those the view returns, in order.
  const auto* open = results::FindView("open_server_anomalies");
  REQUIRE(open != nullptr);
  CHECK(results::SelectSql(*open, {}) ==
        "SELECT kind, server, CAST(start_time AS CHAR), CAST(end_time AS CHAR), duration_s, max_bw_ratio, "
        "CAST(alerted_at AS CHAR) FROM open_server_anomalies");
  CHECK(results::MysqlDdl().find("-- open_server_anomalies (migration 35, a view, `iosonar screen`)") !=
        std::string::npos);
}

TEST_CASE("results: a row's JSON names its columns, NULL as null", "[results]") {
  results::probe_slowdown::Row r;
  r.fs = "scratch";
  r.op = "stat";
  r.n = 3;
  r.median_s = 0.5;
  r.interval_start = "2026-11-22 07:00:00.000000";
  std::string out;
  JsonWriter w(&out, 0);
  results::WriteJson(w, r, {"fs", "op", "n", "median_s", "slowdown_median", "interval_start"});
  CHECK(out == R"({"fs":"scratch","op":"stat","n":3,"median_s":0.5,"slowdown_median":null,)"
               R"("interval_start":"2026-11-22 07:00:00.000000"})");
  r.slowdown_median = 2;
  out.clear();
  JsonWriter all(&out, 0);
  results::WriteJson(all, r);
  CHECK(out.find(R"("slowdown_median":2,)") != std::string::npos);
  CHECK(out.rfind(R"({"fs":"scratch","op":"stat","interval_start":)", 0) == 0);  // every column, in table order
}

TEST_CASE("results: the one INSERT and SELECT of a table name its columns in order", "[results]") {
  const auto* t = results::FindTable("job_anomaly");
  REQUIRE(t != nullptr);
  CHECK(results::InsertSql(*t) ==
        "INSERT INTO job_anomaly (cluster, job_id, computed_at, verdict, history_runs, slowdown, result_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
  CHECK(results::SelectSql(*t, {"verdict", "computed_at"}) ==
        "SELECT verdict, CAST(computed_at AS CHAR) FROM job_anomaly");
  CHECK(results::UpsertSql(*results::FindTable("job_tokio_summary")) ==
        "INSERT INTO job_tokio_summary (cluster, job_id, computed_at, row_json) VALUES (?, ?, ?, ?) "
        "ON DUPLICATE KEY UPDATE computed_at = VALUES(computed_at), row_json = VALUES(row_json)");
  CHECK(results::ReplaceSql(*results::FindTable("job_tokio_summary")) ==
        "REPLACE INTO job_tokio_summary (cluster, job_id, computed_at, row_json) VALUES (?, ?, ?, ?)");
  // A key column with a prefix length (lassi_risk's target(255)) is still a key column.
  CHECK(results::UpsertSql(*results::FindTable("lassi_risk")).find("target = VALUES") == std::string::npos);
  // The screening's upsert of an occurrence: alerted_at kept, the largest ratio kept.
  const results::UpsertRule occurrence{.keep = {"alerted_at"}, .greatest = {"max_bw_ratio"}};
  CHECK(results::UpsertSql(*results::FindTable("server_anomaly"), occurrence) ==
        "INSERT INTO server_anomaly (kind, server, start_time, end_time, duration_s, max_bw_ratio, peak, still_open, "
        "alerted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE end_time = "
        "VALUES(end_time), duration_s = VALUES(duration_s), max_bw_ratio = GREATEST(max_bw_ratio, "
        "VALUES(max_bw_ratio)), peak = VALUES(peak), still_open = VALUES(still_open), updated_at = VALUES(updated_at)");
  // A listing's join reads the columns it names through the generated readers.
  CHECK(results::SelectList("s", {"job_id", "io_mode_read"}) == "s.job_id, s.io_mode_read");
  results::job_summary::Row js;
  results::ReadColumns(js, {std::string("x"), std::string("7"), std::nullopt, std::string("N-1")}, 1,
                       {"job_id", "runtime_s", "io_mode_read"});
  CHECK(js.job_id == 7);
  CHECK(js.runtime_s == 0);
  CHECK(js.io_mode_read == "N-1");
  CHECK(results::FindTable("jobs") == nullptr);  // the scheduler's table is no analysis result
  CHECK(results::SqlDatetimeNs("1970-01-01 00:00:01.500000") == 1500000000);
  CHECK(results::SqlDatetimeNs("2026-11-22 07:00:00") == *ParseIso8601("2026-11-22T07:00:00Z"));
  CHECK_FALSE(results::SqlDatetimeNs("yesterday").has_value());
}

// The result streams declared beside the tables (results.def STREAM): every
// field of every result dataset stands in a stream of it, each MAP column is
// of its table and fits its field's type, and no field stands twice.
TEST_CASE("results: every result stream field is declared once, typed as its column", "[results][schema]") {
  using results::Type;
  std::map<std::string, std::set<std::string>> declared;  // dataset -> its fields in the streams
  for (const auto& s : results::Streams()) {
    INFO("stream of " << s.table << " (" << s.dataset << ")");
    const results::Table* t = results::FindTable(s.table);
    REQUIRE(t != nullptr);
    REQUIRE(schema::FindDataset(s.dataset) != nullptr);
    CHECK(std::string_view(s.dataset).rfind("iosonar.result.", 0) == 0);
    CHECK(results::FindStream(s.table) == &s);  // one stream a table
    std::set<std::string> in_stream;
    for (const auto& f : s.fields) {
      INFO("field " << f.field);
      const schema::Field* sf = schema::FindField(f.field);
      REQUIRE(sf != nullptr);
      CHECK(schema::FieldInDataset(*sf, s.dataset));
      CHECK(sf->datasets != "*");  // the head is the analysis's
      CHECK(in_stream.insert(f.field).second);
      declared[s.dataset].insert(f.field);
      if (!f.column) {
        CHECK(std::string_view(f.note).size() > 0);  // DERIVED says from what
        continue;
      }
      const results::Column* c = nullptr;
      for (const auto& col : t->columns)
        if (std::string_view(col.name) == f.column) c = &col;
      REQUIRE(c != nullptr);
      switch (c->type) {
        case Type::kText:
        case Type::kOptText:
          CHECK(sf->type == schema::Type::kKeyword);
          break;
        case Type::kUint:
        case Type::kInt:
        case Type::kOptUint:
        case Type::kOptInt:
          CHECK((sf->type == schema::Type::kLong || sf->type == schema::Type::kBool));
          break;
        case Type::kDouble:
        case Type::kOptDouble:
          CHECK(sf->type == schema::Type::kDouble);
          break;
        default:
          FAIL("a time column is no stream field: make it DERIVED (" << c->name << ")");
      }
    }
  }
  // Every field of a result dataset outside the head, in some stream of it.
  // bad-ost keeps no job-database table: its stream is declared in fields.def alone.
  size_t datasets = 0;
  for (const auto& d : schema::Datasets()) {
    const std::string name(d.name);
    if (name.rfind("iosonar.result.", 0) != 0) continue;
    ++datasets;
    INFO("dataset " << name);
    if (name == "iosonar.result.bad_ost") {
      CHECK(declared.count(name) == 0);
      continue;
    }
    for (const schema::Field* f : schema::FieldsOf(name))
      if (f->datasets != "*") CHECK(declared[name].count(std::string(f->name)) == 1);
  }
  CHECK(datasets == declared.size() + 1);
}

TEST_CASE("results: a row's stream fields are its columns, typed as the fields", "[results]") {
  std::string out;
  JsonWriter w(&out, 0);
  w.BeginObject();
  results::job_server_share::Row share{"c", 7, "ost", "fs-OST0001", "", "", "", 1.5, 3, 0.5, 2, 4, std::nullopt, 1};
  std::vector<std::string> derived;
  results::WriteStreamFields(w, share, [&](std::string_view f) {
    derived.emplace_back(f);
    w.Kv(f, 60);
  });
  w.EndObject();
  // Table order of the MAPs, the DERIVED one where it stands; NULL left out; 1 as a bool.
  CHECK(out == R"({"share.layer":"ost","share.server":"fs-OST0001","share.window_ns":60,"share.job_bytes":1.5,)"
               R"("share.total_bytes":3,"share.fraction":0.5,"share.job_ops":2,"share.total_ops":4,"share.estimated":true})");
  CHECK(derived == std::vector<std::string>{"share.window_ns"});
  share.in_flight_mean = 2.25;
  share.estimated = 0;
  out.clear();
  JsonWriter w2(&out, 0);
  w2.BeginObject();
  results::WriteStreamFields(w2, share, [](std::string_view) {});
  w2.EndObject();
  CHECK(out.find(R"("share.in_flight_mean":2.25,"share.estimated":false})") != std::string::npos);
  // An optional keyword of an empty Text column is left out; a required one stays.
  results::scoreboard::Row sb;
  sb.who = "user";
  for (const char* cluster : {"", "c1"}) {
    sb.cluster = cluster;
    out.clear();
    JsonWriter w3(&out, 0);
    w3.BeginObject();
    results::WriteStreamFields(w3, sb, [](std::string_view) {});
    w3.EndObject();
    CHECK((out.find("scoreboard.cluster") != std::string::npos) == (*cluster != 0));
    CHECK(out.find(R"("scoreboard.who":"user")") != std::string::npos);
    CHECK(out.find(R"("scoreboard.metric":"")") != std::string::npos);
  }
}
