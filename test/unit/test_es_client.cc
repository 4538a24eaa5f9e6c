// Contract tests of the Elasticsearch client and sink against a loopback
// responder that plays Elasticsearch's documented responses
// (test/testutil/http_responder.h). These are NOT tests against a running
// Elasticsearch (none can be installed here): they check what the client
// sends (method, path, headers, NDJSON) and how it handles the answers
// Elasticsearch documents, including failures, and that across retries
// nothing is lost and nothing is stored twice.
#include <algorithm>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "test/testutil/http_responder.h"
#include "core/transport/es_client.h"
#include "core/records/record.h"
#include "core/records/fields.h"
#include "core/transport/sink.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::FakeElasticsearch;

namespace {

constexpr int64_t kT0 = 1795331352000000000;  // 2026-11-22T07:09:12Z
const char* kTraceIndex = "logs-iosonar.trace-default";

// A valid iosonar.trace line; ts advances every 3 records so ties occur.
std::string Line(int64_t stream, int64_t seq) {
  const int64_t ts = kT0 + (seq / 3) * 1000000;
  return "{\"@timestamp\":\"" + FormatIsoMillis(ts) + "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" +
         std::to_string(stream) + ",\"event.seq\":" + std::to_string(seq) +
         ",\"host.name\":\"n1\",\"job.id\":\"77\",\"process.pid\":10,\"process.tid\":10,\"io.op\":\"write\","
         "\"io.layer\":\"posix\",\"io.count\":1,\"io.bytes\":" + std::to_string(4096 + seq) +
         ",\"event.start_ns\":" + std::to_string(ts) + ",\"event.end_ns\":" + std::to_string(ts + 100) +
         ",\"io.duration_ns\":50}\n";
}

std::string Lines(int64_t stream, int64_t from, int64_t to) {
  std::string s;
  for (int64_t i = from; i < to; ++i) s += Line(stream, i);
  return s;
}

SinkOptions FastOptions() {
  SinkOptions o;
  o.es.backoff_initial_ms = 1;
  o.es.backoff_max_ms = 4;
  o.es.max_attempts = 6;
  return o;
}

std::unique_ptr<RecordSink> OpenEs(const std::string& url, const SinkOptions& o) {
  auto s = OpenSink(url, o);
  REQUIRE(s.ok());
  REQUIRE((*s)->kind() == "elasticsearch");
  return std::move(*s);
}

// Every stored id once, and exactly the expected ids.
void RequireExactly(const FakeElasticsearch& es, int64_t stream, int64_t n, const std::set<int64_t>& missing = {}) {
  auto docs = es.Docs(kTraceIndex);
  REQUIRE(es.DocCount(kTraceIndex) == docs.size());  // no _id stored twice
  std::set<std::string> want;
  for (int64_t i = 0; i < n; ++i)
    if (!missing.count(i)) want.insert(std::to_string(stream) + "-" + std::to_string(i));
  std::set<std::string> have;
  for (auto& [id, src] : docs) have.insert(id);
  REQUIRE(have == want);
}

}  // namespace

TEST_CASE("contract (loopback ES responder): bulk create into the data stream, NDJSON, batches by count and bytes",
          "[es][contract]") {
  FakeElasticsearch es;
  SinkOptions o = FastOptions();
  o.es.max_batch_docs = 400;
  auto sink = OpenEs(es.url(), o);
  REQUIRE(sink->Send(Lines(9, 0, 1000), 1000).ok());
  REQUIRE(sink->Flush().ok());
  CHECK(es.Violations().empty());
  RequireExactly(es, 9, 1000);
  auto reqs = es.Requests();
  REQUIRE(reqs.size() == 3);  // 400 + 400 + 200
  for (const auto& r : reqs) {
    CHECK(r.method == "POST");
    CHECK(r.path == "/_bulk");
    CHECK(r.Header("content-type") == "application/x-ndjson");
    CHECK(r.body.back() == '\n');
  }
  CHECK(sink->counters().lines_sent == 1000);
  // The stored source is the line as sent, and it validates against the schema.
  auto docs = es.Docs(kTraceIndex);
  std::string src = docs.at("9-5");
  ParsedRecord rec;
  src.push_back('\0');
  REQUIRE(ParseRecordInsitu(src.data(), src.size() - 1, &rec).message() == "");

  SECTION("bytes bound") {
    FakeElasticsearch es2;
    SinkOptions o2 = FastOptions();
    o2.es.max_batch_bytes = 16 << 10;
    auto s2 = OpenEs(es2.url(), o2);
    REQUIRE(s2->Send(Lines(9, 0, 500), 500).ok());
    REQUIRE(s2->Flush().ok());
    auto r2 = es2.Requests();
    REQUIRE(r2.size() > 5);
    for (const auto& r : r2) CHECK(r.body.size() <= o2.es.max_batch_bytes);
    RequireExactly(es2, 9, 500);
  }
}

TEST_CASE("contract (loopback ES responder): gzip on _bulk: the bodies go compressed, every record stored once",
          "[es][contract]") {
  FakeElasticsearch es;
  SinkOptions o = FastOptions();
  o.es.gzip = true;
  o.es.max_batch_docs = 400;
  auto sink = OpenEs(es.url(), o);
  REQUIRE(sink->Send(Lines(9, 0, 1000), 1000).ok());
  REQUIRE(sink->Flush().ok());
  CHECK(es.Violations().empty());
  RequireExactly(es, 9, 1000);
  CHECK(es.gzip_requests() == 3);  // 400 + 400 + 200, each Content-Encoding: gzip
  CHECK(sink->counters().lines_sent == 1000);
  // A resend: 409s, nothing twice.
  REQUIRE(sink->Send(Lines(9, 0, 1000), 1000).ok());
  REQUIRE(sink->Flush().ok());
  CHECK(sink->counters().already_stored == 1000);
  RequireExactly(es, 9, 1000);
}

TEST_CASE("contract (loopback ES responder): mixed 201/400/409/429/503 items: nothing lost, nothing twice",
          "[es][contract]") {
  FakeElasticsearch es;
  test::TempDir dir;
  SinkOptions o = FastOptions();
  o.es.dead_letter_path = dir / "es-deadletter.jsonl";
  // 0..199 are stored once first, so resending them answers 409.
  {
    auto first = OpenEs(es.url(), o);
    REQUIRE(first->Send(Lines(5, 0, 200), 200).ok());
    REQUIRE(first->Flush().ok());
  }
  std::set<int64_t> bad;  // answered 400: set aside, never stored
  es.SetItemFault([&](const std::string& id, int attempt) {
    int64_t seq = std::stoll(id.substr(id.find('-') + 1));
    if (seq < 200) return 0;  // stored already: answered 409
    if (seq % 97 == 13) return 400;
    if (seq % 5 == 0 && attempt == 1) return 429;
    if (seq % 7 == 0 && attempt <= 2) return 503;
    return 0;
  });
  for (int64_t i = 200; i < 1000; ++i)
    if (i % 97 == 13) bad.insert(i);
  auto sink = OpenEs(es.url(), o);
  REQUIRE(sink->Send(Lines(5, 0, 1000), 1000).ok());
  REQUIRE(sink->Flush().ok());
  auto c = sink->counters();
  CHECK(es.Violations().empty());
  CHECK(c.already_stored == 200);
  CHECK(c.rejected == bad.size());
  CHECK(c.lines_sent == 800 - bad.size());
  CHECK(c.retried > 0);
  RequireExactly(es, 5, 1000, bad);
  auto dead = test::SplitLines(test::ReadFile(o.es.dead_letter_path));
  REQUIRE(dead.size() == bad.size());
  CHECK(dead[0].find("document_parsing_exception") != std::string::npos);
  CHECK(dead[0].find("\"status\":400") != std::string::npos);
}

TEST_CASE("contract (loopback ES responder): whole-request 429 and 5xx are retried, then succeed", "[es][contract]") {
  FakeElasticsearch es;
  es.FailNextRequests(429, 2, "/_bulk");
  es.FailNextRequests(503, 1, "/_bulk");
  auto sink = OpenEs(es.url(), FastOptions());
  REQUIRE(sink->Send(Lines(3, 0, 300), 300).ok());
  REQUIRE(sink->Flush().ok());
  CHECK(es.Requests().size() == 4);
  CHECK(sink->counters().retried == 3);
  RequireExactly(es, 3, 300);
}

TEST_CASE("contract (loopback ES responder): retries are bounded, giving up is an error, not a hang",
          "[es][contract]") {
  FakeElasticsearch es;
  es.FailNextRequests(503, 1000, "/_bulk");
  SinkOptions o = FastOptions();
  o.es.max_attempts = 3;
  auto sink = OpenEs(es.url(), o);
  REQUIRE(sink->Send(Lines(3, 0, 10), 10).ok());
  Status st = sink->Flush();
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("503") != std::string::npos);
  CHECK(es.Requests().size() == 3);
  CHECK(sink->counters().dropped == 10);
}

TEST_CASE("contract (loopback ES responder): connection dropped mid-response: the resend is a 409, stored once",
          "[es][contract]") {
  FakeElasticsearch es;
  es.DropNextResponses(1, "/_bulk");  // processed, then the connection is cut half-way through the answer
  auto sink = OpenEs(es.url(), FastOptions());
  REQUIRE(sink->Send(Lines(4, 0, 250), 250).ok());
  REQUIRE(sink->Flush().ok());
  auto c = sink->counters();
  CHECK(c.already_stored == 250);  // the first (processed) request's answer was lost
  CHECK(c.lines_sent == 0);
  CHECK(es.Requests().size() == 2);
  RequireExactly(es, 4, 250);
}

TEST_CASE("contract (loopback ES responder): unreachable server is an error after the retries", "[es][contract]") {
  SinkOptions o = FastOptions();
  o.es.max_attempts = 2;
  auto sink = OpenEs("http://127.0.0.1:" + std::to_string(test::FreePort()), o);
  REQUIRE(sink->Send(Lines(1, 0, 5), 5).ok());
  Status st = sink->Flush();
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::kUnavailable);
}

TEST_CASE("contract (loopback ES responder): basic auth and API key headers", "[es][contract]") {
  SECTION("basic") {
    FakeElasticsearch es;
    es.RequireAuthorization("Basic ZWxhc3RpYzpzZWNyZXQ=");  // elastic:secret
    SinkOptions o = FastOptions();
    o.es.user = "elastic";
    o.es.password = "secret";
    auto sink = OpenEs("es+" + es.url(), o);
    REQUIRE(sink->Send(Lines(2, 0, 3), 3).ok());
    REQUIRE(sink->Flush().ok());
    CHECK(es.Violations().empty());
    CHECK(es.DocCount(kTraceIndex) == 3);
  }
  SECTION("api key") {
    FakeElasticsearch es;
    es.RequireAuthorization("ApiKey aWQ6a2V5");
    SinkOptions o = FastOptions();
    o.es.api_key = "aWQ6a2V5";
    auto sink = OpenEs(es.url(), o);
    REQUIRE(sink->Send(Lines(2, 0, 3), 3).ok());
    REQUIRE(sink->Flush().ok());
    CHECK(es.Violations().empty());
  }
  SECTION("wrong credentials are not retried forever: 401 is an error") {
    FakeElasticsearch es;
    es.RequireAuthorization("ApiKey right");
    SinkOptions o = FastOptions();
    o.es.api_key = "wrong";
    auto sink = OpenEs(es.url(), o);
    REQUIRE(sink->Send(Lines(2, 0, 3), 3).ok());
    Status st = sink->Flush();
    REQUIRE_FALSE(st.ok());
    CHECK(st.message().find("401") != std::string::npos);
    CHECK(es.Requests().size() == 1);
  }
}

TEST_CASE("contract (loopback ES responder): lines that fail the schema are set aside before sending",
          "[es][contract]") {
  FakeElasticsearch es;
  test::TempDir dir;
  SinkOptions o = FastOptions();
  o.es.dead_letter_path = dir / "dl.jsonl";
  auto sink = OpenEs(es.url(), o);
  std::string data = Line(8, 0) + "{\"event.dataset\":\"iosonar.trace\",\"bogus\":1}\n" + Line(8, 1);
  REQUIRE(sink->Send(data, 3).ok());
  REQUIRE(sink->Flush().ok());
  CHECK(sink->counters().rejected == 1);
  CHECK(es.DocCount(kTraceIndex) == 2);
  CHECK(test::ReadFile(o.es.dead_letter_path).find("bogus") != std::string::npos);
}

TEST_CASE("contract (loopback ES responder): PIT + search_after scan survives an expired PIT", "[es][contract]") {
  FakeElasticsearch es;
  {
    auto sink = OpenEs(es.url(), FastOptions());
    REQUIRE(sink->Send(Lines(6, 0, 1000), 1000).ok());
    REQUIRE(sink->Flush().ok());
  }
  EsOptions eo = FastOptions().es;
  auto c = EsClient::Open(es.url(), eo);
  REQUIRE(c.ok());
  es.ExpirePitsAfterSearches(3);
  std::vector<std::string> seen;
  int64_t last_ts = 0;
  bool ordered = true;
  Status st = (*c)->ScanPit(kTraceIndex, "{\"match_all\":{}}", 64, [&](std::string_view src) {
    std::string s(src);
    s.push_back('\0');
    ParsedRecord rec;
    REQUIRE(ParseRecordInsitu(s.data(), s.size() - 1, &rec).ok());
    int64_t ts = rec.v[static_cast<size_t>(FieldIndex("@timestamp"))].i;
    if (ts < last_ts) ordered = false;
    last_ts = ts;
    seen.push_back(DocId(rec));
    return true;
  });
  REQUIRE(st.message() == "");
  CHECK(es.pit_expirations() == 1);
  CHECK((*c)->pit_reopens() == 1);
  CHECK(es.plan_requests() == 2);  // the time chunks of the ordered scan: lo/hi, then the histogram
  CHECK(ordered);
  CHECK(seen.size() == 1000);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 1000);
  CHECK(es.Violations().empty());
  // Every PIT opened was closed.
  int opened = 0, closed = 0;
  for (const auto& r : es.Requests()) {
    if (r.path.find("/_pit") != std::string::npos && r.method == "POST") ++opened;
    if (r.path == "/_pit" && r.method == "DELETE") ++closed;
  }
  CHECK(opened == 2);
  CHECK(closed == 1);  // the expired one needs no close
}

TEST_CASE("contract (loopback ES responder): a search answered 5xx mid-scan is retried", "[es][contract]") {
  FakeElasticsearch es;
  {
    auto sink = OpenEs(es.url(), FastOptions());
    REQUIRE(sink->Send(Lines(6, 0, 300), 300).ok());
    REQUIRE(sink->Flush().ok());
  }
  auto c = EsClient::Open(es.url(), FastOptions().es);
  REQUIRE(c.ok());
  es.FailNextRequests(502, 1, "/_search");
  es.DropNextResponses(1, "/_search");
  size_t n = 0;
  REQUIRE((*c)->ScanPit(kTraceIndex, "{\"match_all\":{}}", 100, [&](std::string_view) { return ++n, true; }).ok());
  CHECK(n == 300);
}

TEST_CASE("contract: the client asks the engine what it is (GET /, else /_nodes/_local) and uses its PIT API",
          "[es][contract]") {
  // An OpenSearch: GET / names the distribution; PIT is /_search/point_in_time with pit_id.
  std::vector<std::string> seen;
  std::mutex mu;
  test::HttpResponder os([&](const test::HttpRequest& r) {
    std::lock_guard<std::mutex> g(mu);
    seen.push_back(r.method + " " + r.path);
    if (r.path == "/") return test::HttpReply{200, R"({"version":{"distribution":"opensearch","number":"2.19.1"}})"};
    if (r.path.ends_with("/_search/point_in_time") && r.method == "POST")
      return test::HttpReply{200, R"({"pit_id":"P1","_shards":{"total":1,"successful":1,"failed":0}})"};
    if (r.path == "/_search")
      return test::HttpReply{200, R"({"pit_id":"P1","timed_out":false,"_shards":{"total":1,"successful":1,"failed":0},)"
                                  R"("hits":{"hits":[{"_id":"1-0","_source":{"a":1},"sort":[5,1,0]}]}})"};
    if (r.path == "/_search/point_in_time" && r.method == "DELETE") return test::HttpReply{200, "{}"};
    return test::HttpReply{400, R"({"error":"no handler found for uri"})"};
  });
  EsOptions o;
  o.max_attempts = 1;
  auto c = EsClient::Open(os.url(), o);
  REQUIRE(c.ok());
  auto e = (*c)->Engine(true);
  REQUIRE(e.ok());
  CHECK(e->opensearch());
  CHECK(e->major == 2);
  CHECK_FALSE(e->ism);  // "no handler found" for _plugins/_ism
  CHECK_FALSE(e->ilm);
  CHECK(e->Describe() == "OpenSearch 2.19.1, no ISM plugin");
  int rows = 0;
  REQUIRE((*c)->ScanPit("logs-x", "{\"match_all\":{}}", 10, [&](std::string_view) { return ++rows, true; }).ok());
  CHECK(rows == 1);
  std::lock_guard<std::mutex> g(mu);
  CHECK(std::find(seen.begin(), seen.end(), "POST /logs-x/_search/point_in_time") != seen.end());
  CHECK(std::find(seen.begin(), seen.end(), "DELETE /_search/point_in_time") != seen.end());
  CHECK(std::find(seen.begin(), seen.end(), "GET /_plugins/_ism/policies") != seen.end());

  // An Elasticsearch without its rest-root module answers GET / with 405: the node says what it is.
  test::HttpResponder es([&](const test::HttpRequest& r) {
    if (r.path == "/") return test::HttpReply{405, R"({"error":"Incorrect HTTP method for uri [/] and method [GET], allowed: [DELETE]"})"};
    if (r.path == "/_nodes/_local")
      return test::HttpReply{200, R"({"nodes":{"x":{"version":"8.15.5","build_flavor":"default","modules":[{"name":"x-pack-core"}]}}})"};
    return test::HttpReply{405, R"({"error":"Incorrect HTTP method"})"};
  });
  auto c2 = EsClient::Open(es.url(), o);
  REQUIRE(c2.ok());
  auto e2 = (*c2)->Engine(true);
  REQUIRE(e2.ok());
  CHECK_FALSE(e2->opensearch());
  CHECK(e2->minor == 15);
  CHECK_FALSE(e2->ilm);
  CHECK_FALSE(e2->constant_keyword);
  CHECK_FALSE(e2->bool_dimension());
}

TEST_CASE("contract: a search with failed shards or timed_out is an error, never a partial answer", "[es][contract]") {
  for (const std::string partial : {R"("timed_out":true,"_shards":{"total":2,"successful":2,"failed":0})",
                                    R"("timed_out":false,"_shards":{"total":2,"successful":1,"failed":1,"failures":[{"reason":{"type":"node_disconnected_exception","reason":"gone"}}]})"}) {
    test::HttpResponder srv([&](const test::HttpRequest& r) {
      if (r.path == "/") return test::HttpReply{200, R"({"version":{"number":"8.15.5"}})"};
      if (r.path.ends_with("/_pit")) return test::HttpReply{200, R"({"id":"P"})"};
      if (r.path.ends_with("/_count")) return test::HttpReply{200, "{\"count\":3," + partial + "}"};
      if (r.path == "/_search")
        return test::HttpReply{200, "{" + partial + R"(,"hits":{"hits":[{"_id":"1-0","_source":{},"sort":[1,1,0]}]}})"};
      if (r.path.ends_with("/_search"))
        return test::HttpReply{200, "{" + partial + R"(,"aggregations":{"pages":{"buckets":[]}}})"};
      return test::HttpReply{200, "{}"};
    });
    EsOptions o;
    o.max_attempts = 1;
    auto c = EsClient::Open(srv.url(), o);
    REQUIRE(c.ok());
    INFO(partial);
    int rows = 0;
    Status s = (*c)->ScanPit("i", "{\"match_all\":{}}", 10, [&](std::string_view) { return ++rows, true; });
    CHECK_FALSE(s.ok());
    CHECK(rows == 0);
    CHECK(s.message().find("partial answer is not used") != std::string::npos);
    auto n = (*c)->CountDocs("i", "{\"match_all\":{}}");
    CHECK_FALSE(n.ok());
    Status a = (*c)->CompositePages("i", "{\"match_all\":{}}", "[]", "", 10, [](std::string_view) { return true; });
    CHECK_FALSE(a.ok());
  }
}

TEST_CASE("group keys: each part as <bytes>:<text> and decoded back, a key too long left out, added to a document", "[es]") {
  test::ParsedLines lines;
  lines.Add("{\"@timestamp\":\"2026-11-22T00:00:00.000Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":1,\"event.seq\":2,"
            "\"host.name\":\"n1\",\"job.id\":\"j\",\"process.pid\":-7,\"process.tid\":1,\"io.op\":\"write\",\"io.layer\":\"posix\","
            "\"file.path\":\"/a/12:b:\",\"file.id\":\"ff\",\"io.size\":4096,\"io.count\":1,\"io.bytes\":4096,\"event.start_ns\":1,\"event.end_ns\":2,\"io.duration_ns\":1}");
  const GroupKeyField* file = GroupKeyFor("iosonar.trace", GroupKeyFields()[0].parts);
  REQUIRE(file != nullptr);
  CHECK(std::string(file->name) == "iosonar.key.file");
  CHECK(GroupKeyFor("iosonar.client", file->parts) == nullptr);
  const std::vector<FieldId> two = {field::kIoOp, field::kIoLayer};
  CHECK(GroupKeyFor("iosonar.trace", two) == nullptr);
  for (const GroupKeyField& k : GroupKeyFields()) CHECK(std::string_view(k.name).starts_with("iosonar.key."));
  // io.fd is absent: "" (as Groups gives an absent key)
  auto key = EncodeGroupKey(*file, *lines.ptrs[0]);
  REQUIRE(key);
  CHECK(*key == "5:posix5:write2:ff8:/a/12:b:2:n12:-70:");
  std::vector<std::string> parts;
  REQUIRE(DecodeGroupKey(*key, 7, &parts));
  CHECK(parts == std::vector<std::string>{"posix", "write", "ff", "/a/12:b:", "n1", "-7", ""});
  for (std::string_view bad : {"", "5:posix", "5:posi", "x:posix", "5posix", "99999999:a", "5:posix5:write2:ff8:/a/12:b:2:n12:-70:0:"})
    CHECK_FALSE(DecodeGroupKey(bad, 7, &parts));
  CHECK_FALSE(DecodeGroupKey("5:posix5:write2:ff8:/a/12:b:2:n12:-70:", 6, &parts));

  std::string doc = "{\"a\":1} \n";
  AddGroupKeys(&doc, *lines.ptrs[0]);
  CHECK(doc == "{\"a\":1,\"iosonar.key.file\":\"5:posix5:write2:ff8:/a/12:b:2:n12:-70:\",\"iosonar.key.op\":\"5:posix5:write4:40960:\","
               "\"iosonar.key.layer_op\":\"5:posix5:write\",\"iosonar.key.host\":\"5:posix2:n15:write\","
               "\"iosonar.key.path\":\"5:posix8:/a/12:b:5:write\"}");
  std::string empty = "{}";
  AddGroupKeys(&empty, *lines.ptrs[0]);
  CHECK(empty.starts_with("{\"iosonar.key.file\":"));

  test::ParsedLines longp;
  longp.Add("{\"@timestamp\":\"2026-11-22T00:00:00.000Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":1,\"event.seq\":2,"
            "\"host.name\":\"n1\",\"job.id\":\"j\",\"process.pid\":7,\"process.tid\":1,\"io.op\":\"write\",\"io.layer\":\"posix\","
            "\"file.path\":\"/" + std::string(kMaxGroupKeyBytes, 'x') + "\",\"io.count\":1,\"io.bytes\":4096,\"event.start_ns\":1,\"event.end_ns\":2,\"io.duration_ns\":1}");
  CHECK_FALSE(EncodeGroupKey(*file, *longp.ptrs[0]));
  std::string d2 = "{\"a\":1}";
  AddGroupKeys(&d2, *longp.ptrs[0]);
  CHECK(d2.find("iosonar.key.file") == std::string::npos);
  CHECK(d2.find("iosonar.key.op") != std::string::npos);
}
