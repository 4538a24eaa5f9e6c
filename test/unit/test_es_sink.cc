// OpenSink: one output string picks the transport (sink.h). The
// Elasticsearch sink's behaviour is in test_es_client.cc (contract tests).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "core/transport/sink.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

TEST_CASE("sink: the output string picks the transport", "[es][sink]") {
  CHECK(IsElasticsearchOutput("https://es:9200"));
  CHECK(IsElasticsearchOutput("http://127.0.0.1:9200"));
  CHECK(IsElasticsearchOutput("es+https://es:9200"));
  CHECK(IsElasticsearchOutput("es+http://es:9200"));
  CHECK_FALSE(IsElasticsearchOutput("tcp://logstash:5170"));
  CHECK_FALSE(IsElasticsearchOutput("/var/log/x.jsonl"));
  CHECK_FALSE(IsElasticsearchOutput("-"));

  test::TempDir dir;
  SECTION("file: lines appended as they are") {
    auto s = OpenSink(dir / "out.jsonl", SinkOptions{});
    REQUIRE(s.ok());
    CHECK((*s)->kind() == "file");
    REQUIRE((*s)->Send("{\"a\":1}\n{\"a\":2}\n", 2).ok());
    REQUIRE((*s)->Flush().ok());
    CHECK((*s)->counters().lines_sent == 2);
    CHECK(test::ReadFile(dir / "out.jsonl") == "{\"a\":1}\n{\"a\":2}\n");
    CHECK_FALSE((*s)->Send("{\"no newline\":1}", 1).ok());
  }
  SECTION("tcp: an unreachable receiver spools, then the lines are resent") {
    SinkOptions o;
    o.spool_dir = dir / "spool";
    std::filesystem::create_directories(o.spool_dir);
    auto s = OpenSink("tcp://127.0.0.1:" + std::to_string(test::FreePort()), o);
    REQUIRE(s.ok());
    CHECK((*s)->kind() == "tcp");
    REQUIRE((*s)->Send("{\"a\":1}\n", 1).ok());
    CHECK((*s)->counters().spooled == 1);
  }
  SECTION("stdout") {
    auto s = OpenSink("-", SinkOptions{});
    REQUIRE(s.ok());
    CHECK((*s)->kind() == "stdout");
  }
  SECTION("malformed outputs are refused with the string named") {
    auto bad = OpenSink("tcp://nohostport", SinkOptions{});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("tcp://nohostport") != std::string::npos);
  }
}
