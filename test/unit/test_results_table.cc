// The analysis results declared once (analysis-jobs/lib/results.def): the
// CREATE TABLE statements generated from the table are those of the
// migrations (mysql-schema/), line by line with their comments, so the table
// can stand for the schema; and the generated INSERT/SELECT name its columns.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "analysis-jobs/lib/results.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {

// Each CREATE TABLE statement of mysql-schema/*.sql by table name, with the
// migration number of its file.
std::map<std::string, std::pair<int, std::string>> MigrationTables() {
  std::map<std::string, std::pair<int, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator(test::SourceDir() + "/mysql-schema")) {
    if (e.path().extension() != ".sql") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    const int migration = std::stoi(e.path().filename().string().substr(0, 3));
    // Up to the table options (a column's comment may hold a ';').
    static const std::regex create(R"(CREATE TABLE IF NOT EXISTS (\w+) \([\s\S]*?\n\) ENGINE=[^;\n]*;)");
    for (std::sregex_iterator it(text.begin(), text.end(), create), end; it != end; ++it)
      out[(*it)[1]] = {migration, (*it)[0]};
  }
  return out;
}

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

}  // namespace

TEST_CASE("results: the generated CREATE TABLE of every result table is its migration's", "[results][schema]") {
  const auto migrations = MigrationTables();
  REQUIRE(results::Tables().size() == 15);
  for (const auto& t : results::Tables()) {
    INFO("table " << t.name);
    auto m = migrations.find(t.name);
    REQUIRE(m != migrations.end());
    CHECK(m->second.first == t.migration);
    const auto want = Lines(m->second.second);
    const auto got = Lines(results::MysqlCreateTable(t));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("line " << i + 1 << ": " << want[i].first);
      CHECK(got[i].first == want[i].first);
      CHECK(got[i].second == want[i].second);
    }
  }
  // Every statement of the whole DDL is one of the tables, in order.
  const std::string all = results::MysqlDdl();
  CHECK(all.find("CREATE TABLE IF NOT EXISTS job_summary (") < all.find("CREATE TABLE IF NOT EXISTS probe_baseline ("));
}

TEST_CASE("results: the one INSERT and SELECT of a table name its columns in order", "[results]") {
  const auto* t = results::FindTable("job_anomaly");
  REQUIRE(t != nullptr);
  CHECK(results::InsertSql(*t) ==
        "INSERT INTO job_anomaly (cluster, job_id, computed_at, verdict, history_runs, slowdown, result_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
  CHECK(results::SelectSql(*t, {"verdict", "computed_at"}) ==
        "SELECT verdict, CAST(computed_at AS CHAR) FROM job_anomaly");
  CHECK(results::FindTable("jobs") == nullptr);  // the scheduler's table is no analysis result
  CHECK(results::SqlDatetimeNs("1970-01-01 00:00:01.500000") == 1500000000);
  CHECK(results::SqlDatetimeNs("2026-11-22 07:00:00") == *ParseIso8601("2026-11-22T07:00:00Z"));
  CHECK_FALSE(results::SqlDatetimeNs("yesterday").has_value());
}
