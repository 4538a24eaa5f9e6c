// `iosonar collect --es URL`: accepted records are stored and also sent to
// Elasticsearch with _bulk; checked against the loopback responder that
// plays Elasticsearch's documented responses (a contract test).
#include <catch2/catch.hpp>
#include <string>

#include "http_responder.h"
#include "iosonar/timeutil.h"
#include "testutil.h"

using namespace iosonar;

namespace {
std::string Line(int64_t seq) {
  const int64_t ts = 1795331352000000000 + seq * 1000000;
  return "{\"@timestamp\":\"" + FormatIsoMillis(ts) + "\",\"event.dataset\":\"iosonar.tracer\",\"event.stream\":42,\"event.seq\":" +
         std::to_string(seq) + ",\"host.name\":\"n1\",\"process.pid\":7,\"event.action\":\"exit\",\"tracer.raw_ops\":1,"
         "\"tracer.records\":1,\"tracer.dropped\":0,\"tracer.spooled\":0}\n";
}
}  // namespace

TEST_CASE("contract (loopback ES responder): iosonar collect --es forwards accepted records, a resend is stored once",
          "[es][contract]") {
  test::FakeElasticsearch es;
  es.RequireAuthorization("ApiKey a2V5");
  test::TempDir dir;
  std::string data;
  for (int i = 0; i < 500; ++i) data += Line(i);
  data += "{\"not\":\"a record\"}\n";
  test::WriteFile(dir / "in.jsonl", data);
  auto run = [&] {
    return test::Run({test::IosonarBin(), "collect", "--store", dir / "store", "--from-file", dir / "in.jsonl", "--es", es.url()},
                     {{"IOSONAR_ES_API_KEY", "a2V5"}, {"IOSONAR_CONFIG", "/nonexistent"}});
  };
  auto r1 = run();
  INFO(r1.err);
  REQUIRE(r1.exit_code == 0);
  CHECK(r1.err.find("accepted 500, rejected 1, stored 500") != std::string::npos);
  CHECK(r1.err.find("forwarded 500, forward errors 0") != std::string::npos);
  CHECK(es.DocCount("logs-iosonar.tracer-default") == 500);
  auto r2 = run();
  REQUIRE(r2.exit_code == 0);
  CHECK(r2.err.find("duplicates 500") != std::string::npos);
  CHECK(r2.err.find("forwarded 500, forward errors 0") != std::string::npos);  // answered 409: already stored
  CHECK(es.DocCount("logs-iosonar.tracer-default") == 500);
  CHECK(es.Violations().empty());
}

TEST_CASE("contract (loopback ES responder): iosonar collect --es keeps storing when Elasticsearch is down",
          "[es][contract]") {
  test::TempDir dir;
  std::string data;
  for (int i = 0; i < 20; ++i) data += Line(i);
  test::WriteFile(dir / "in.jsonl", data);
  auto r = test::Run({test::IosonarBin(), "collect", "--store", dir / "store", "--from-file", dir / "in.jsonl", "--es",
                      "http://127.0.0.1:" + std::to_string(test::FreePort())},
                     {{"IOSONAR_CONFIG", "/nonexistent"}});
  INFO(r.err);
  CHECK(r.err.find("stored 20") != std::string::npos);
  CHECK(r.err.find("forwarded 0, forward errors 20") != std::string::npos);
}
