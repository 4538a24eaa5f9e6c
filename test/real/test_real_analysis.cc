// The analyses over a store in a real engine give byte-identical output to
// the same records in SQLite: job-summary, xlayer, summarize-job, lassi and
// report (HTML, JSON, text), on simulated records of several jobs.
#include <catch2/catch.hpp>

#include "analysis-jobs/job-summary/job_summary.h"
#include "core/store/es_store.h"
#include "test/real/real_engine.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

void AnalysesIdentical(SearchEngine& e) {
  EnsureTemplates(e);
  TempDir dir;
  auto sim = Run({IosonarBin(), "simulate", "--output", dir / "sim.jsonl", "--nodes", "16", "--fwd", "2", "--osts", "4",
                  "--duration", "8", "--seed", "7", "--slow-ost", "1", "--maps", dir / "maps.json", "--getstripe",
                  dir / "gs.txt"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const std::vector<std::string> lines = SplitLines(ReadFile(dir / "sim.jsonl"));
  REQUIRE(lines.size() > 100);
  // The same records into SQLite (the collector's batch path) and into the engine (the ES store).
  AppendStats sq;
  auto sqlite = StoreFromLines(dir / "store", [&](const std::function<Status(std::string_view)>& sink) {
    for (const auto& l : lines)
      if (Status s = sink(l); !s.ok()) return s;
    return Status::Ok();
  }, &sq);
  REQUIRE(sq.inserted == lines.size());
  sqlite.reset();
  const std::string ns = UniqueNamespace("an");
  {
    auto es = OpenElasticsearchStore(e.url(), e.options(ns));
    REQUIRE(es.ok());
    ParsedLines pl;
    for (const auto& l : lines) pl.Add(l);
    AppendStats as;
    REQUIRE((*es)->Append(pl.span(), &as).message() == "");
    REQUIRE(as.inserted == lines.size());
  }
  // Searchable now, not at the next refresh_interval (5 s): the analyses run in other processes.
  REQUIRE(e.Admin("POST", "/logs-iosonar.*-" + ns + ",metrics-iosonar.*-" + ns + "/_refresh").status == 200);
  const auto env = e.Env(ns);
  const std::string from = "2026-11-22T00:00:00Z", to = "2026-11-22T01:00:00Z";
  const std::vector<std::vector<std::string>> commands = {
      {"job-summary", "1000", "--format", "json"},
      {"job-summary", "1001", "--format", "table"},
      {"xlayer", "1000", "--maps", dir / "maps.json", "--getstripe", dir / "gs.txt", "--format", "json"},
      {"summarize-job", "1000", "1001", "1002", "--format", "csv"},
      {"lassi", "--from", from, "--to", to, "--window", "1m", "--format", "json"},
  };
  for (const auto& c : commands) {
    auto with = [&](const std::string& store) {
      std::vector<std::string> argv = {IosonarBin()};
      argv.insert(argv.end(), c.begin(), c.end());
      argv.push_back("--store");
      argv.push_back(store);
      return Run(argv, env);
    };
    auto a = with(dir / "store");
    auto b = with(e.url());
    INFO(c[0] << " " << c[1] << "\nSQLite: " << a.err << "\n" << e.name() << ": " << b.err);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    CHECK(a.out.size() > 50);
    CHECK(a.out == b.out);
  }
  // job-summary took the sums path (Groups and Span: no trace record read)
  // on the engine and on SQLite, and both equal Summarize over the records.
  {
    auto es = OpenElasticsearchStore(e.url(), e.options(ns));
    REQUIRE(es.ok());
    auto sq_store = OpenSqliteStore(dir / "store");
    REQUIRE(sq_store.ok());
    auto a = analysis::SummarizeJobFromSums(**sq_store, "1000");
    auto b = analysis::SummarizeJobFromSums(**es, "1000");
    INFO(a.status().ToString() << " / " << b.status().ToString());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->has_value());
    REQUIRE(b->has_value());
    auto runs = analysis::ReadTraceRuns(**sq_store, "1000");
    REQUIRE(runs.ok());
    analysis::JobSummary c = analysis::Summarize(*runs);
    c.job_id = "1000";
    CHECK(analysis::SummaryToJson(**a) == analysis::SummaryToJson(**b));
    CHECK(analysis::SummaryToJson(**a) == analysis::SummaryToJson(c));
  }
  // report: its three files.
  for (const std::string& s : {std::string("sq"), std::string("es")}) {
    auto r = Run({IosonarBin(), "report", "--store", s == "sq" ? dir / "store" : e.url(), "--from", from, "--to", to,
                  "--window", "1m", "--html", dir / (s + ".html"), "--json", dir / (s + ".json"), "--text", dir / (s + ".txt")},
                 env);
    INFO(s << ": " << r.err);
    REQUIRE(r.exit_code == 0);
  }
  for (const char* ext : {".html", ".json", ".txt"}) {
    INFO(ext);
    const std::string a = ReadFile(dir / (std::string("sq") + ext)), b = ReadFile(dir / (std::string("es") + ext));
    CHECK(a.size() > 50);
    CHECK(a == b);
  }
}
REAL_ENGINE_TEST("job-summary, xlayer, summarize-job, lassi and report give the same bytes as on SQLite", "[analysis]",
                 AnalysesIdentical)

}  // namespace
