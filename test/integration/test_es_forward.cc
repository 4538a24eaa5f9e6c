// `iosonar collect --es URL`: accepted records are stored and also sent to
// Elasticsearch with _bulk; checked against the loopback responder that
// plays Elasticsearch's documented responses (a contract test).
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <string>

#include "test/testutil/http_responder.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

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

TEST_CASE("contract (loopback ES responder): iosonar collect --es keeps storing when Elasticsearch is down, "
          "spools the records and sends them when it is back",
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
  CHECK(r.err.find("forwarded 0, forward errors 0") != std::string::npos);
  CHECK(r.err.find("forward spooled 20") != std::string::npos);
  struct stat sb {};
  REQUIRE(stat((dir / "store/forward-spool.jsonl").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0600);
  // Elasticsearch is back: the next run sends the spool first (nothing new to read).
  test::FakeElasticsearch es;
  test::WriteFile(dir / "empty.jsonl", "");
  auto r2 = test::Run({test::IosonarBin(), "collect", "--store", dir / "store", "--from-file", dir / "empty.jsonl", "--es",
                       es.url()},
                      {{"IOSONAR_CONFIG", "/nonexistent"}});
  INFO(r2.err);
  CHECK(r2.err.find("forwarded 20, forward errors 0") != std::string::npos);
  CHECK(r2.err.find("forward spooled 0") != std::string::npos);
  CHECK(es.DocCount("logs-iosonar.tracer-default") == 20);
  CHECK(stat((dir / "store/forward-spool.jsonl").c_str(), &sb) != 0);
  CHECK(es.Violations().empty());
}

namespace {
// Trace runs of one job: 4 ranks on 2 nodes, N-N writes and N-1 reads, some metadata ops.
std::string TraceLines() {
  std::string out;
  int64_t seq = 0;
  for (int rank = 0; rank < 4; ++rank) {
    for (int k = 0; k < 40; ++k) {
      const int64_t ts = 1795331352000000000 + (k * 37 + rank * 5) * 1000000LL;
      const bool write = k % 2 == 0;
      std::string path = write ? "/scratch/out." + std::to_string(rank) : std::string("/scratch/input");
      out += "{\"@timestamp\":\"" + FormatIsoMillis(ts) +
             "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" + std::to_string(900 + rank) +
             ",\"event.seq\":" + std::to_string(seq++) + ",\"host.name\":\"n" + std::to_string(rank / 2) +
             "\",\"job.id\":\"4242\",\"process.pid\":" + std::to_string(100 + rank) + ",\"process.tid\":" +
             std::to_string(100 + rank) + ",\"process.rank\":" + std::to_string(rank) + ",\"io.op\":\"" +
             (k % 10 == 9 ? "stat" : write ? "write" : "read") + "\",\"io.layer\":\"posix\",\"file.path\":\"" + path +
             "\",\"io.fd\":3,\"io.offset\":" + std::to_string(k * 1048576) + ",\"io.size\":1048576,\"io.count\":4,\"io.bytes\":" +
             (k % 10 == 9 ? "0" : "4194304") + ",\"event.start_ns\":" + std::to_string(ts) + ",\"event.end_ns\":" +
             std::to_string(ts + 2000000) + ",\"io.duration_ns\":1500000}\n";
    }
  }
  return out;
}
}  // namespace

// job-summary's equality with SQLite over Elasticsearch and OpenSearch is
// checked on the real engines (test/real/test_real_analysis.cc): it sums in
// the engine (composite aggregations), which this responder does not speak.
// What the responder can do that a real engine will not on demand: refuse the
// aggregation. Then the command fails naming the request; no summary is made
// from part of the records.
TEST_CASE("contract (loopback ES responder): job-summary fails naming the request when the engine refuses its "
          "aggregations, and prints no summary",
          "[es][contract]") {
  test::FakeElasticsearch es;
  test::TempDir dir;
  test::WriteFile(dir / "trace.jsonl", TraceLines());
  auto in = test::Run({test::IosonarBin(), "collect", "--store", dir / "store", "--from-file", dir / "trace.jsonl", "--es", es.url()},
                      {{"IOSONAR_CONFIG", "/nonexistent"}});
  INFO(in.err);
  REQUIRE(in.exit_code == 0);
  REQUIRE(es.DocCount("logs-iosonar.trace-default") == 160);
  auto sq = test::Run({test::IosonarBin(), "job-summary", "4242", "--store", dir / "store", "--format", "json"},
                      {{"IOSONAR_CONFIG", "/nonexistent"}});
  REQUIRE(sq.exit_code == 0);
  CHECK(sq.out.find("\"N-N\"") != std::string::npos);
  auto el = test::Run({test::IosonarBin(), "job-summary", "4242", "--store", es.url(), "--format", "json"},
                      {{"IOSONAR_CONFIG", "/nonexistent"}});
  INFO(el.err);
  CHECK(el.exit_code == 1);
  CHECK(el.out.empty());
  CHECK(el.err.find("search logs-iosonar.trace-default: HTTP 400") != std::string::npos);
  CHECK(el.err.find("unsupported search") != std::string::npos);
}
