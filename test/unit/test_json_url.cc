// The JSON codec (JsonLine, JsonWriter, AppendJsonString), ISO 8601 time and service URLs.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "core/base/json.h"
#include "core/records/json_line.h"
#include "core/records/schema.h"
#include "core/base/timeutil.h"
#include "core/base/url.h"

using namespace iosonar;

TEST_CASE("json: JsonLine escapes and round-trips through a real parser", "[json]") {
  char buf[512];
  JsonLine j(buf, sizeof buf);
  j.Begin();
  // Keys are field ids; which ones does not matter here.
  j.KStr(field::kFilePath, "quote\" backslash\\ nl\n tab\t ctl\x01 é");
  j.KInt(field::kIoOffset, INT64_MIN);
  j.KInt(field::kIoBytes, INT64_MAX);
  j.Key(field::kTimestamp);
  j.IsoMillis(int64_t{1795331352123456789});
  j.End();
  REQUIRE(j.ok());
  std::string line(buf, j.size());
  REQUIRE(line.back() == '\n');
  rapidjson::Document d;
  d.Parse(line.c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(std::string(d["file.path"].GetString()) == "quote\" backslash\\ nl\n tab\t ctl\x01 é");
  CHECK(d["io.offset"].GetInt64() == INT64_MIN);
  CHECK(d["io.bytes"].GetInt64() == INT64_MAX);
  CHECK(std::string(d["@timestamp"].GetString()) == "2026-11-22T07:09:12.123Z");
}

TEST_CASE("json: JsonLine refuses to overflow its buffer", "[json]") {
  char buf[16];
  JsonLine j(buf, sizeof buf);
  j.Begin();
  j.KStr(field::kHostName, "a long value that does not fit");
  CHECK_FALSE(j.ok());
  CHECK(j.size() <= sizeof buf);
}

TEST_CASE("json: AppendJsonString replaces invalid UTF-8 so the output stays valid", "[json]") {
  std::string out;
  static const char kMixed[] = "ok \xff\xfe bad \xc3\xa9 good \xed\xa0\x80 surrogate";
  AppendJsonString(&out, std::string(kMixed, sizeof kMixed - 1));
  rapidjson::Document d;
  d.Parse<rapidjson::kParseValidateEncodingFlag>(out.c_str());
  REQUIRE_FALSE(d.HasParseError());
  std::string s = d.GetString();
  CHECK(s.find("\xef\xbf\xbd") != std::string::npos);
  CHECK(s.find("\xc3\xa9") != std::string::npos);
}

TEST_CASE("json: JsonWriter nests objects and arrays, pretty or compact", "[json]") {
  for (int indent : {0, 2}) {
    std::string out;
    JsonWriter w(&out, indent);
    w.BeginObject();
    w.Kv("a", 1);
    w.Key("b");
    w.BeginArray();
    w.Double(0.5);
    w.String("x");
    w.Null();
    w.EndArray();
    w.Key("c");
    w.BeginObject();
    w.Kv("d", true);
    w.EndObject();
    w.Kv("nan", std::nan(""));
    w.EndObject();
    rapidjson::Document d;
    d.Parse(out.c_str());
    INFO(out);
    REQUIRE_FALSE(d.HasParseError());
    CHECK(d["a"].GetInt() == 1);
    CHECK(d["b"][0].GetDouble() == 0.5);
    CHECK(d["b"][2].IsNull());
    CHECK(d["c"]["d"].GetBool());
    CHECK(d["nan"].IsNull());
  }
}

TEST_CASE("time: ISO 8601 parse and format", "[json]") {
  CHECK(ParseIso8601("1970-01-01T00:00:00Z") == 0);
  CHECK(ParseIso8601("2026-11-22T07:09:12.123Z") == int64_t{1795331352123000000});
  CHECK(ParseIso8601("2026-11-22T08:09:12.123+01:00") == int64_t{1795331352123000000});
  CHECK(ParseIso8601("2000-02-29T12:00:00.5Z") == int64_t{951825600500000000});
  CHECK_FALSE(ParseIso8601("2026-11-22T07:09:12").has_value());  // no zone: ambiguous
  CHECK_FALSE(ParseIso8601("2026-13-22T07:09:12Z").has_value());
  CHECK_FALSE(ParseIso8601("yesterday").has_value());
  CHECK_FALSE(ParseIso8601("9999-12-31T23:59:59Z").has_value());  // beyond int64 epoch ns
  CHECK_FALSE(ParseIso8601("0001-01-01T00:00:00Z").has_value());
  CHECK(ParseIso8601("2261-12-31T23:59:59Z").has_value());
  CHECK(FormatIsoMillis(int64_t{951825600500000000}) == "2000-02-29T12:00:00.500Z");
  CHECK(FormatIsoMillis(-1000000) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("url: service URLs parse with defaults, credentials and queries", "[url]") {
  auto r = ParseUrl("redis://:s3cret@cache.example:6380/2");
  REQUIRE(r.ok());
  CHECK(r->host == "cache.example");
  CHECK(r->port == 6380);
  CHECK(r->password == "s3cret");
  CHECK(r->path == "2");
  CHECK(r->ToString() == "redis://:***@cache.example:6380/2");
  auto m = ParseUrl("mysql://iosonar:p%40ss@db:3306/jobs?socket=/run/mysqld/mysqld.sock");
  REQUIRE(m.ok());
  CHECK(m->user == "iosonar");
  CHECK(m->password == "p@ss");
  CHECK(m->path == "jobs");
  CHECK(m->query.at("socket") == "/run/mysqld/mysqld.sock");
  auto e = ParseUrl("https://elastic:pw@[::1]:9200");
  REQUIRE(e.ok());
  CHECK(e->host == "::1");
  CHECK(e->port == 9200);
  CHECK(ParseUrl("redis://localhost")->port == 6379);
  CHECK(ParseUrl("unix:///run/redis.sock?db=3")->path == "/run/redis.sock");
}

TEST_CASE("url: bad URLs name what is wrong", "[url]") {
  auto a = ParseUrl("localhost:6379");
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().message().find("SCHEME://") != std::string::npos);
  auto b = ParseUrl("redis://host:port");
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("not a number") != std::string::npos);
  CHECK_FALSE(ParseUrl("tcp://host").ok());
  CHECK_FALSE(ParseUrl("redis://:99999").ok());
  CHECK(ParseOutputUrl("-")->scheme == "stdout");
  CHECK(ParseOutputUrl("/var/log/x.jsonl")->scheme == "file");
  CHECK(ParseOutputUrl("tcp://logstash:5044")->port == 5044);
  CHECK_FALSE(ParseOutputUrl("redis://x:1").ok());
}

TEST_CASE("schema: every field is well formed and every dataset has its required core", "[schema]") {
  std::set<std::string_view> names;
  for (const auto& f : schema::Fields()) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);  // unique
    CHECK_FALSE(f.description.empty());
    CHECK_FALSE(f.datasets.empty());
    if (f.datasets != "*") {
      std::string ds(f.datasets);
      for (size_t p = 0; p < ds.size();) {
        auto sp = ds.find(' ', p);
        CHECK(schema::FindDataset(ds.substr(p, sp - p)) != nullptr);
        p = sp == std::string::npos ? ds.size() : sp + 1;
      }
    }
  }
  for (const auto& d : schema::Datasets()) {
    auto fs = schema::FieldsOf(d.name);
    auto has = [&](std::string_view n) { return std::any_of(fs.begin(), fs.end(), [&](auto* f) { return f->name == n; }); };
    CHECK(has("@timestamp"));
    CHECK(has("event.dataset"));
    CHECK(has("event.stream"));
    CHECK(has("event.seq"));
    CHECK((d.stream_type == "logs" || d.stream_type == "metrics"));
  }
  rapidjson::Document doc;
  doc.Parse(schema::ToJson().c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(doc["fields"].Size() == schema::Fields().size());
}
