// ParseRecordInsitu: what it accepts, and the exact words it uses to refuse
// (they end up in the dead-letter file, so people read them).
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>

#include "core/records/record.h"
#include "core/records/schema.h"
#include "core/base/timeutil.h"

using namespace iosonar;

namespace {

const std::string kGood =
    R"({"@timestamp":"2026-11-22T07:09:12.123Z","event.dataset":"iosonar.trace","event.stream":1234,"event.seq":0,)"
    R"("host.name":"n1","job.id":"42","process.pid":100,"process.tid":100,"io.op":"write","io.layer":"posix",)"
    R"("file.path":"/tmp/f","file.id":"00112233aabbccdd","io.fd":3,"io.offset":0,"io.size":4096,"io.count":10,)"
    R"("io.bytes":40960,"event.start_ns":1795331352123000000,"event.end_ns":1795331352124000000,"io.duration_ns":5000})";

// Parses a copy (the parser writes into its buffer) and returns the error
// text, "" when the line is valid. rec, if given, receives the record; its
// strings point into *keep.
std::string Parse(const std::string& line, ParsedRecord* rec = nullptr, std::string* keep = nullptr) {
  std::string local;
  std::string& buf = keep ? *keep : local;
  buf = line;
  buf.push_back('\0');  // the byte at line[len] must be writable
  ParsedRecord r;
  Status s = ParseRecordInsitu(buf.data(), line.size(), rec ? rec : &r);
  return s.ok() ? "" : s.message();
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

const FieldValue& Get(const ParsedRecord& r, const char* name) {
  int i = FieldIndex(name);
  REQUIRE(i >= 0);
  return r[static_cast<size_t>(i)];
}

}  // namespace

TEST_CASE("a valid trace line parses into typed values", "[record]") {
  ParsedRecord r;
  std::string buf;
  REQUIRE(Parse(kGood, &r, &buf) == "");
  REQUIRE(r.dataset != nullptr);
  CHECK(r.dataset->name == "iosonar.trace");
  CHECK(Get(r, "@timestamp").i == 1795331352123000000);
  CHECK(Get(r, "@timestamp").s == "2026-11-22T07:09:12.123Z");
  CHECK(Get(r, "event.stream").kind == FieldValue::kInt);
  CHECK(Get(r, "event.stream").i == 1234);
  CHECK(Get(r, "host.name").kind == FieldValue::kString);
  CHECK(Get(r, "host.name").s == "n1");
  CHECK(Get(r, "io.bytes").i == 40960);
  CHECK(Get(r, "event.end_ns").i == 1795331352124000000);
  CHECK(Get(r, "process.rank").kind == FieldValue::kAbsent);  // optional, left out
  CHECK(Get(r, "io.errno").kind == FieldValue::kAbsent);
}

TEST_CASE("valid variants: escapes, CRLF, blanks, epoch-millisecond dates, offsets, field order", "[record]") {
  ParsedRecord r;
  std::string buf;
  SECTION("escaped strings are unescaped") {
    REQUIRE(Parse(Replace(kGood, R"("/tmp/f")", R"("/tmp/a\"b\\c\u00e9")"), &r, &buf) == "");
    CHECK(Get(r, "file.path").s == "/tmp/a\"b\\c\xc3\xa9");
  }
  SECTION("a trailing CR (CRLF framing) and blanks are ignored") {
    CHECK(Parse(kGood + "\r") == "");
    CHECK(Parse(kGood + "  \t") == "");
  }
  SECTION("@timestamp as epoch milliseconds") {
    REQUIRE(Parse(Replace(kGood, R"("2026-11-22T07:09:12.123Z")", "1795331352123"), &r, &buf) == "");
    CHECK(Get(r, "@timestamp").i == 1795331352123000000);
  }
  SECTION("@timestamp with a numeric zone") {
    REQUIRE(Parse(Replace(kGood, "07:09:12.123Z", "09:09:12.123+02:00"), &r, &buf) == "");
    CHECK(Get(r, "@timestamp").i == 1795331352123000000);
  }
  SECTION("fields in any order") {
    std::string reordered = Replace(kGood, R"("host.name":"n1",)", "");
    reordered = Replace(reordered, "{", R"({"host.name":"n1",)");
    REQUIRE(Parse(reordered, &r, &buf) == "");
    CHECK(Get(r, "host.name").s == "n1");
  }
  SECTION("a tracer record") {
    std::string t =
        R"({"@timestamp":"2026-11-22T07:09:12.123Z","event.dataset":"iosonar.tracer","event.stream":7,"event.seq":3,)"
        R"("host.name":"n1","process.pid":9,"event.action":"exit","tracer.raw_ops":10,"tracer.records":2,)"
        R"("tracer.dropped":0,"tracer.spooled":0,"process.command_line":"./a.out -n 4"})";
    REQUIRE(Parse(t, &r, &buf) == "");
    CHECK(r.dataset->name == "iosonar.tracer");
    CHECK(Get(r, "event.action").s == "exit");
  }
  SECTION("a reused record carries nothing over") {
    REQUIRE(Parse(Replace(kGood, R"("io.fd":3,)", R"("io.fd":3,"io.errno":5,)"), &r, &buf) == "");
    CHECK(Get(r, "io.errno").i == 5);
    std::string buf2;
    REQUIRE(Parse(kGood, &r, &buf2) == "");
    CHECK(Get(r, "io.errno").kind == FieldValue::kAbsent);
  }
}

TEST_CASE("malformed and truncated JSON is refused as not JSON", "[record]") {
  CHECK(Parse("{\"@timestamp\":") == "not JSON: Invalid value. at byte 14");
  CHECK(Parse(kGood.substr(0, 100)) == "not JSON: Missing a closing quotation mark in string. at byte 100");
  CHECK(Parse(kGood.substr(0, kGood.size() - 1)) == "not JSON: Missing a comma or '}' after an object member. at byte 422");
  CHECK(Parse("hello") == "not JSON: Invalid value. at byte 0");
  CHECK(Parse("") == "not JSON: The document is empty. at byte 0");
  CHECK(Parse("{'host.name':'n1'}") == "not JSON: Missing a name for object member. at byte 1");
}

TEST_CASE("bytes that are not UTF-8 are refused", "[record]") {
  // The offset is that of the first bad byte.
  CHECK(Parse(Replace(kGood, R"("n1")", "\"n\xff\"")) == "not JSON: invalid UTF-8 at byte 121");
  CHECK(Parse(Replace(kGood, R"("/tmp/f")", "\"/tmp/\xc3\x28\"")) ==
        "not JSON: invalid UTF-8 at byte 227");
  // An overlong encoding of '/' is not valid UTF-8 either.
  CHECK(Parse(Replace(kGood, R"("/tmp/f")", "\"/tmp\xc0\xaf" "f\"")).rfind("not JSON: invalid UTF-8 at byte", 0) == 0);
}

TEST_CASE("unknown fields, wrong types, nesting, nulls and arrays name the field", "[record]") {
  CHECK(Parse(Replace(kGood, R"("io.fd":3,)", R"("io.fd":3,"user.name":"alice",)")) ==
        "unknown field \"user.name\" (not in the record schema)");
  CHECK(Parse(Replace(kGood, R"("io.size":4096)", R"("io.size":"4096")")) == "field io.size: expected long, got string");
  CHECK(Parse(Replace(kGood, R"("io.size":4096)", R"("io.size":4096.5)")) == "field io.size: expected long, got number");
  CHECK(Parse(Replace(kGood, R"("host.name":"n1")", R"("host.name":7)")) == "field host.name: expected keyword, got integer");
  CHECK(Parse(Replace(kGood, R"("io.op":"write")", R"("io.op":true)")) == "field io.op: expected keyword, got boolean");
  CHECK(Parse(Replace(kGood, R"("host.name":"n1")", R"("host.name":{"name":"n1"})")) ==
        "field host.name: nested objects are not allowed (use dotted names)");
  CHECK(Parse(Replace(kGood, R"("host.name":"n1")", R"("host.name":null)")) ==
        "field host.name: null is not allowed (leave the field out)");
  CHECK(Parse(Replace(kGood, R"("io.size":4096)", R"("io.size":[4096])")) == "field io.size: arrays are not allowed");
  CHECK(Parse(Replace(kGood, R"("event.seq":0)", R"("event.seq":18446744073709551615)")) ==
        "field event.seq: integer out of range");
  CHECK(Parse(Replace(kGood, R"("io.fd":3)", R"("io.fd":3,"io.fd":4)")) == "field io.fd: appears twice");
  CHECK(Parse(Replace(kGood, "07:09:12.123Z", "07:09:12.123")) ==
        "field @timestamp: not an ISO 8601 date with a zone: \"2026-11-22T07:09:12.123\"");
  CHECK(Parse("[1,2]") == "a record must be one JSON object, not an array");
  CHECK(Parse("42") == "a record must be one JSON object");
}

TEST_CASE("missing required fields and fields of another dataset", "[record]") {
  CHECK(Parse(Replace(kGood, R"("io.op":"write",)", "")) == "missing required field io.op for dataset iosonar.trace");
  CHECK(Parse(Replace(kGood, R"("event.seq":0,)", "")) == "missing required field event.seq for dataset iosonar.trace");
  CHECK(Parse(Replace(kGood, R"("event.dataset":"iosonar.trace",)", "")) == "missing required field event.dataset");
  CHECK(Parse(Replace(kGood, "iosonar.trace", "iosonar.nope")) == "field event.dataset: unknown dataset \"iosonar.nope\"");
  CHECK(Parse(Replace(kGood, R"("io.fd":3)", R"("io.fd":3,"event.action":"start")")) ==
        "field event.action: not part of dataset iosonar.trace");
  CHECK(Parse("{}") == "missing required field event.dataset");
}

TEST_CASE("trailing garbage after the object", "[record]") {
  CHECK(Parse(kGood + " x") == "trailing data after the JSON object at byte 424");
  CHECK(Parse(kGood + kGood) == "trailing data after the JSON object at byte 423");
  CHECK(Parse(kGood + "}") == "trailing data after the JSON object at byte 423");
}

TEST_CASE("FieldIndex matches the schema table", "[record]") {
  CHECK(FieldIndex("@timestamp") == 0);
  CHECK(FieldIndex("no.such.field") == -1);
  for (size_t i = 0; i < schema::Fields().size(); ++i) CHECK(FieldIndex(schema::Fields()[i].name) == static_cast<int>(i));
  CHECK(schema::Fields().size() <= kMaxFields);
}

// The parser has a fast path for plain lines that falls back to rapidjson
// for anything unusual. Whatever it accepts must be valid JSON that means the
// same to rapidjson (the reference here), and whatever rapidjson refuses as
// JSON it must refuse too.
namespace {

// Checks one line against rapidjson's DOM.
void CheckAgainstReference(const std::string& line) {
  INFO("line: " << line);
  std::string buf;
  ParsedRecord r;
  const std::string err = Parse(line, &r, &buf);
  std::string copy = line;
  rapidjson::Document d;
  d.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseValidateEncodingFlag>(copy.c_str(), copy.size());
  if (d.HasParseError()) {
    CHECK(err != "");
    return;
  }
  if (err != "") return;  // valid JSON, refused for what it says: fine
  REQUIRE(d.IsObject());
  FieldSet seen;
  for (auto m = d.MemberBegin(); m != d.MemberEnd(); ++m) {
    const int i = FieldIndex(std::string_view(m->name.GetString(), m->name.GetStringLength()));
    REQUIRE(i >= 0);
    seen.Set(static_cast<size_t>(i));
    const FieldValue& v = r[static_cast<size_t>(i)];
    const auto& f = schema::Fields()[static_cast<size_t>(i)];
    INFO("field " << f.name);
    if (m->value.IsString()) {
      CHECK(v.kind == FieldValue::kString);
      CHECK(v.s == std::string_view(m->value.GetString(), m->value.GetStringLength()));
    } else if (m->value.IsInt64()) {
      CHECK(v.kind == FieldValue::kInt);
      CHECK(v.i == m->value.GetInt64() * (f.type == schema::Type::kDate ? 1000000 : 1));
    } else if (m->value.IsBool()) {
      CHECK(v.kind == FieldValue::kBool);
      CHECK(v.i == (m->value.GetBool() ? 1 : 0));
    } else {
      FAIL("accepted a value that is not a string, int64 or bool");
    }
  }
  for (size_t i = 0; i < schema::Fields().size(); ++i)
    if (!seen.Test(i)) CHECK(r[i].kind == FieldValue::kAbsent);
}

}  // namespace

TEST_CASE("fast and full parser agree: numbers at the edges", "[record]") {
  for (const char* n : {"0", "-0", "00", "01", "-01", "1", "-1", "9223372036854775807", "9223372036854775808",
                        "-9223372036854775808", "-9223372036854775809", "1234567890123456789", "12345678901234567890",
                        "99999999999999999999", "1.0", "1e3", "1E3", "-", "--1", "+1", "1.", ".5", "0x10", "1 ", " 1"}) {
    CheckAgainstReference(Replace(kGood, R"("io.size":4096)", std::string(R"("io.size":)") + n));
    CheckAgainstReference(Replace(kGood, R"("event.stream":1234)", std::string(R"("event.stream":)") + n));
  }
  std::string buf;
  ParsedRecord r;
  REQUIRE(Parse(Replace(kGood, R"("io.fd":3)", R"("io.fd":-9223372036854775808)"), &r, &buf) == "");
  CHECK(Get(r, "io.fd").i == INT64_MIN);
  CHECK(Parse(Replace(kGood, R"("io.offset":0)", R"("io.offset":-9223372036854775808)")) ==
        "field io.offset: must not be negative (bytes), got -9223372036854775808");
  REQUIRE(Parse(Replace(kGood, R"("io.offset":0)", R"("io.offset":9223372036854775807)"), &r, &buf) == "");
  CHECK(Get(r, "io.offset").i == INT64_MAX);
  REQUIRE(Parse(Replace(kGood, R"("io.offset":0)", R"("io.offset":-0)"), &r, &buf) == "");
  CHECK(Get(r, "io.offset").i == 0);
}

TEST_CASE("fast and full parser agree: blanks, literals, escapes and non-ASCII", "[record]") {
  CheckAgainstReference(" \t" + kGood);
  CheckAgainstReference(Replace(Replace(kGood, R"(":)", R"(" : )"), ",", " ,\n "));
  CheckAgainstReference(Replace(kGood, R"("/tmp/f")", R"("/tmp/\u00e9\n")"));
  CheckAgainstReference(Replace(kGood, R"("/tmp/f")", "\"/tmp/\xc3\xa9t\xc3\xa9\""));
  CheckAgainstReference(Replace(kGood, R"("/tmp/f")", "\"/tmp/\x01\""));
  CheckAgainstReference(Replace(kGood, R"("/tmp/f")", R"("")"));
  CheckAgainstReference(Replace(kGood, R"("n1")", R"("a.very.long.host.name.well.past.sixteen.bytes")"));
  CheckAgainstReference(Replace(kGood, R"("io.op":"write")", R"("io.op":true)"));
  CheckAgainstReference(Replace(kGood, R"("io.op":"write")", R"("io.op":tru)"));
  CheckAgainstReference(Replace(kGood, R"("io.op":"write")", R"("io.op":nul)"));
  CheckAgainstReference(Replace(kGood, R"("@timestamp":"2026-11-22T07:09:12.123Z")", R"("@timestamp":1795331352123)"));
  CheckAgainstReference(Replace(kGood, "07:09:12.123Z", "07:09:12.123z"));
  CheckAgainstReference(Replace(kGood, "07:09:12.123Z", "07:09:12.12Z"));
  CheckAgainstReference(Replace(kGood, "07:09:12.123Z", "07:09:12.1234Z"));
  CheckAgainstReference("{}");
  CheckAgainstReference("{ }");
  CheckAgainstReference("{\"host.name\":\"n1\" }");
  // The ISO fast form and the general parser give the same instant.
  std::string buf;
  ParsedRecord r;
  REQUIRE(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "2024-02-29T23:59:60.999Z"), &r, &buf) == "");
  CHECK(Get(r, "@timestamp").i == *ParseIso8601("2024-02-29T23:59:60.999+00:00"));
  REQUIRE(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "1969-12-31T23:59:59.500Z"), &r, &buf) == "");
  CHECK(Get(r, "@timestamp").i == -500000000);
  CHECK(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "2026-13-22T07:09:12.123Z")).rfind("field @timestamp: not an ISO 8601", 0) == 0);
  // Dates whose epoch ns would not fit an int64 are refused, not wrapped.
  CHECK(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "0000-01-01T00:00:00.000Z")) ==
        "field @timestamp: date out of range (years 1678 to 2261): \"0000-01-01T00:00:00.000Z\"");
  CHECK(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "2262-01-01T00:00:00+00:00")).rfind("field @timestamp: date out of range", 0) == 0);
  REQUIRE(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "1678-01-01T00:00:00.000-14:00"), &r, &buf) == "");
  REQUIRE(Parse(Replace(kGood, "2026-11-22T07:09:12.123Z", "2261-12-31T23:59:59.999+14:00"), &r, &buf) == "");
  CHECK(Parse(Replace(kGood, R"("2026-11-22T07:09:12.123Z")", "9223372036855")) ==
        "field @timestamp: epoch milliseconds out of range: 9223372036855");
  REQUIRE(Parse(Replace(kGood, R"("2026-11-22T07:09:12.123Z")", "-9223372036854"), &r, &buf) == "");
  CHECK(Get(r, "@timestamp").i == -9223372036854000000);
}

TEST_CASE("fast and full parser agree on randomly damaged lines", "[record]") {
  std::mt19937 rng(7);
  const std::string kInteresting = " \t\n\"\\-09.e,:{}[]nt\x80\x01\xc3";
  const std::string tracer =
      R"({"@timestamp":"2026-11-22T07:09:12.123Z","event.dataset":"iosonar.tracer","event.stream":7,"event.seq":3,)"
      R"("host.name":"n1","process.pid":9,"event.action":"exit","tracer.raw_ops":10,"tracer.records":2,)"
      R"("tracer.dropped":0,"tracer.spooled":0,"process.command_line":"./a.out -n 4"})";
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string l = iter % 3 ? kGood : tracer;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !l.empty(); ++e) {
      const size_t pos = rng() % l.size();
      const char c = kInteresting[rng() % kInteresting.size()];
      switch (rng() % 3) {
        case 0: l.erase(pos, 1); break;
        case 1: l.insert(pos, 1, c); break;
        default: l[pos] = c; break;
      }
    }
    CheckAgainstReference(l);
    accepted += Parse(l) == "";
  }
  CHECK(accepted > 100);  // the edits leave some lines valid, so acceptance is exercised too
}

TEST_CASE("the schema fits the record and block limits", "[record][schema]") {
  // Global positions index ParsedRecord::v; the block codec numbers one
  // dataset's fields with at most blocks::kMaxCodes codes.
  CHECK(schema::Fields().size() <= kMaxFields);
  for (const auto& d : schema::Datasets()) {
    INFO("dataset " << d.name);
    CHECK(schema::FieldsOf(d.name).size() <= 64);
    CHECK((d.stream_type == "logs" || d.stream_type == "metrics"));
  }
  // Names are unique.
  for (size_t i = 0; i < schema::Fields().size(); ++i)
    for (size_t j = i + 1; j < schema::Fields().size(); ++j) CHECK(schema::Fields()[i].name != schema::Fields()[j].name);
}

TEST_CASE("field sets beyond the first 64 fields", "[record]") {
  FieldSet a, b;
  a.Set(3);
  a.Set(200);
  b.Set(3);
  CHECK(a.Test(200));
  CHECK_FALSE(a.Test(199));
  CHECK(a.AnyNotIn(b));
  b.Set(200);
  CHECK_FALSE(a.AnyNotIn(b));
  b.Reset();
  CHECK_FALSE(b.Test(3));
}

// A store's whole-_source scan (es_store.cc): only the asked-for fields are
// read; every other top-level key, unknown (Logstash's data_stream object,
// tags array, @version) or known but not asked (even with a value the schema
// would refuse), is skipped with its value; the asked ones are checked as ever.
TEST_CASE("reading only some fields skips the others, nested or invalid, and checks the rest", "[record]") {
  FieldSet only;
  for (const char* f : {"event.dataset", "io.bytes", "host.name"}) only.Set(static_cast<size_t>(FieldIndex(f)));
  auto parse_only = [&](const std::string& line, ParsedRecord* rec, std::string* buf) {
    *buf = line;
    buf->push_back('\0');
    Status s = ParseRecordFieldsInsitu(buf->data(), line.size(), rec, &only);
    return s.ok() ? std::string() : s.message();
  };
  ParsedRecord r;
  std::string buf;
  const std::string logstash = Replace(
      kGood, R"("io.fd":3,)",
      R"("data_stream":{"type":"logs","dataset":"iosonar.trace","x":{"y":[1,{"z":null}]}},"tags":["a",["b"],{}],)"
      R"("@version":"1","user.name":"alice","io.fd":"three","io.size":-1.5,"event.seq":18446744073709551615,"io.op":null,)");
  REQUIRE(parse_only(logstash, &r, &buf) == "");
  CHECK(r.dataset->name == "iosonar.trace");
  CHECK(Get(r, "io.bytes").i == 40960);
  CHECK(Get(r, "host.name").s == "n1");
  CHECK(Get(r, "io.fd").kind == FieldValue::kAbsent);
  CHECK(Get(r, "io.op").kind == FieldValue::kAbsent);
  CHECK(Get(r, "@timestamp").kind == FieldValue::kAbsent);
  // The whole parser with the same line refuses it: the skipping is only for a read of some fields.
  CHECK(Parse(logstash) == "unknown field \"data_stream\" (not in the record schema)");
  // An asked-for field is still checked, after a skipped nested value too.
  CHECK(parse_only(Replace(logstash, R"("io.bytes":40960)", R"("io.bytes":"40960")"), &r, &buf) ==
        "field io.bytes: expected long, got string");
  CHECK(parse_only(Replace(kGood, R"("host.name":"n1")", R"("host.name":["n1"])"), &r, &buf) ==
        "field host.name: arrays are not allowed");
  CHECK(parse_only(Replace(kGood, R"("io.bytes":40960)", R"("io.bytes":40960,"io.bytes":1)"), &r, &buf) ==
        "field io.bytes: appears twice");
  // A skipped value that is not JSON is still not JSON.
  CHECK(parse_only(Replace(kGood, R"("io.fd":3)", R"("io.fd":[1,)"), &r, &buf).rfind("not JSON", 0) == 0);
  // The fast path (plain values, known keys) and the full parser (an escape) give the same record.
  ParsedRecord fast, slow;
  std::string b1, b2;
  REQUIRE(parse_only(kGood, &fast, &b1) == "");
  REQUIRE(parse_only(Replace(kGood, R"("file.path":"/tmp/f")", R"("file.path":"/tmp/\u0066")"), &slow, &b2) == "");
  for (size_t i = 0; i < schema::Fields().size(); ++i) {
    INFO(schema::Fields()[i].name);
    CHECK(fast[i].kind == slow[i].kind);
    CHECK(fast[i].i == slow[i].i);
  }
  CHECK(Get(fast, "file.path").kind == FieldValue::kAbsent);
}

TEST_CASE("the dedupe key: event.stream and event.seq, and a numeric user.id", "[record]") {
  struct Key {
    std::string id;
    int64_t stream;
  };
  auto key = [](const std::string& user_part) {
    ParsedRecord r;
    std::string buf;
    const std::string line = Replace(kGood, "\"host.name\":\"n1\",", "\"host.name\":\"n1\"," + user_part);
    REQUIRE(Parse(line, &r, &buf) == "");
    return Key{DedupeId(r), DedupeStream(r)};
  };
  const Key none = key("");
  CHECK(none.id == "1234-0");
  CHECK(none.stream == 1234);
  const Key u = key("\"user.id\":\"1000\",");
  CHECK(u.id == "1234-0-u1000");
  CHECK(u.stream != 1234);
  CHECK(u.stream >= 0);
  const Key v = key("\"user.id\":\"1001\",");
  CHECK(v.id == "1234-0-u1001");
  CHECK(v.stream != u.stream);
  CHECK(key("\"user.id\":\"1000\",").stream == u.stream);  // the same for the same uid
  // Not a uid (a name, a sign, empty): as without one (only unauthenticated senders write such).
  for (const char* odd : {"\"user.id\":\"x9\",", "\"user.id\":\"-5\",", "\"user.id\":\"\","}) {
    INFO(odd);
    const Key o = key(odd);
    CHECK(o.id == none.id);
    CHECK(o.stream == none.stream);
  }
}
