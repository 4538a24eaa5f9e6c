// `iosonar es-setup` end to end against the loopback responder that plays
// Elasticsearch's documented responses (a contract test: what the command
// sends, not a run against Elasticsearch).
#include <catch2/catch.hpp>
#include <string>

#include "test/testutil/http_responder.h"
#include "core/store/es_templates.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

TEST_CASE("contract (loopback ES responder): iosonar es-setup PUTs every artifact, idempotently, with auth",
          "[es][contract]") {
  test::FakeElasticsearch es;
  es.RequireAuthorization("Basic ZWxhc3RpYzpzZWNyZXQ=");
  auto arts = GenerateEsTemplates(EsTemplateOptions{});
  REQUIRE(arts.ok());
  auto run = [&] {
    return test::Run({test::IosonarBin(), "es-setup", "--url", es.url(), "--user", "elastic", "--retention", "90d"},
                     {{"IOSONAR_ES_PASSWORD", "secret"}, {"IOSONAR_CONFIG", "/nonexistent"}});
  };
  auto r1 = run();
  INFO(r1.out << r1.err);
  REQUIRE(r1.exit_code == 0);
  CHECK(r1.out.find(std::to_string(arts->size()) + " created, 0 updated, 0 kept, 0 failed") != std::string::npos);
  size_t custom = 0;
  for (const auto& a : *arts) custom += a.api_path.ends_with("@custom");
  REQUIRE(custom > 0);
  auto res = es.Resources();
  CHECK(res.size() == arts->size());
  for (const auto& a : *arts) CHECK(res.count(a.api_path));
  CHECK(res["/_ilm/policy/iosonar-raw"].find("\"90d\"") != std::string::npos);
  // PUT order: the policies and components exist before an index template names them.
  std::vector<std::string> puts;
  for (const auto& q : es.Requests())
    if (q.method == "PUT") puts.push_back(q.path);
  REQUIRE(puts.size() == arts->size());
  for (size_t i = 0; i < puts.size(); ++i) CHECK(puts[i] == (*arts)[i].api_path);

  // The operator's @custom templates are kept as they are on a second run.
  const std::string custom_path = "/_component_template/logs-iosonar.trace@custom";
  REQUIRE(es.Resources().count(custom_path));
  auto r2 = run();
  REQUIRE(r2.exit_code == 0);
  CHECK(r2.out.find("0 created, " + std::to_string(arts->size() - custom) + " updated, " + std::to_string(custom) +
                    " kept, 0 failed") != std::string::npos);
  CHECK(r2.out.find("kept " + custom_path + " (the operator's)") != std::string::npos);
  size_t custom_puts = 0;
  for (const auto& q : es.Requests())
    if (q.method == "PUT" && q.path == custom_path) ++custom_puts;
  CHECK(custom_puts == 1);  // the first run's only
  CHECK(es.Violations().empty());
}

TEST_CASE("contract (loopback ES responder): iosonar es-setup fails clearly on an unreachable server and bad options",
          "[es][contract]") {
  auto r = test::Run({test::IosonarBin(), "es-setup", "--url", "http://127.0.0.1:" + std::to_string(test::FreePort())},
                     {{"IOSONAR_CONFIG", "/nonexistent"}});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("does not answer") != std::string::npos);
  auto bad = test::Run({test::IosonarBin(), "es-setup", "--url", "http://127.0.0.1:1", "--retention", "forever"},
                       {{"IOSONAR_CONFIG", "/nonexistent"}});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("forever") != std::string::npos);
  auto scheme = test::Run({test::IosonarBin(), "es-setup", "--url", "ftp://x"}, {{"IOSONAR_CONFIG", "/nonexistent"}});
  CHECK(scheme.exit_code == 2);
}
