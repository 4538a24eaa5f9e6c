// The SQLite store through the Store interface: append with dedupe, scans
// with ranges and filters, bucket sums, counts, errors naming what was wrong;
// its layout, and refusing other layouts. Blocks, seq intervals and field
// codes in depth: test_store_blocks.cc.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/collector/collector.h"
#include "core/records/fields.h"
#include "core/records/record.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::TempDir;

namespace {

constexpr int64_t kT0 = 1795331352000000000;  // 2026-11-22T07:09:12Z, a whole second
constexpr int64_t kSec = 1000000000;

struct TraceSpec {
  int64_t stream = 1234, seq = 0, ts = kT0;
  std::string job = "42", host = "n1", op = "write";
  int64_t pid = 100, bytes = 4096, count = 1;
  bool with_job = true;
};

std::string TraceLine(const TraceSpec& s) {
  std::string l = "{\"@timestamp\":\"" + FormatIsoMillis(s.ts) +
                  "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" + std::to_string(s.stream) +
                  ",\"event.seq\":" + std::to_string(s.seq) + ",\"host.name\":\"" + s.host + "\"";
  if (s.with_job) l += ",\"job.id\":\"" + s.job + "\"";
  l += ",\"process.pid\":" + std::to_string(s.pid) + ",\"process.tid\":" + std::to_string(s.pid) + ",\"io.op\":\"" +
       s.op + "\",\"io.layer\":\"posix\",\"file.path\":\"/tmp/f\",\"io.fd\":3,\"io.size\":4096,\"io.count\":" +
       std::to_string(s.count) + ",\"io.bytes\":" + std::to_string(s.bytes) +
       ",\"event.start_ns\":" + std::to_string(s.ts) + ",\"event.end_ns\":" + std::to_string(s.ts + 1000) +
       ",\"io.duration_ns\":500}";
  return l;
}

using Records = iosonar::test::ParsedLines;

std::unique_ptr<Store> Open(const TempDir& dir) {
  auto s = OpenSqliteStore(dir.path());
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s.value());
}

// Ten records, one a second, two jobs, two pids.
Records TenRecords() {
  Records r;
  for (int i = 0; i < 10; ++i) {
    TraceSpec s;
    s.seq = i;
    s.ts = kT0 + i * kSec;
    s.job = i % 2 ? "7" : "42";
    s.pid = 100 + i % 2;
    s.bytes = 1000 * (i + 1);
    s.count = i + 1;
    r.Add(TraceLine(s));
  }
  return r;
}

std::vector<std::vector<std::string>> SqlRows(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  INFO(sql);
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  std::vector<std::vector<std::string>> out;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const auto* t = sqlite3_column_text(st, c);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST_CASE("append stores records once, a resend counts as duplicates", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  Records r = TenRecords();
  AppendStats st;
  REQUIRE(store->Append(r.span(), &st).ok());
  CHECK(st.inserted == 10);
  CHECK(st.duplicates == 0);
  AppendStats again;
  REQUIRE(store->Append(r.span(), &again).ok());
  CHECK(again.inserted == 0);
  CHECK(again.duplicates == 10);
  // Same stream and seq, different content: still the same record.
  Records dup;
  TraceSpec s;
  s.seq = 3;
  s.host = "other";
  dup.Add(TraceLine(s));
  s.stream = 99;  // a new stream is a new record
  dup.Add(TraceLine(s));
  AppendStats third;
  REQUIRE(store->Append(dup.span(), &third).ok());
  CHECK(third.inserted == 1);
  CHECK(third.duplicates == 1);
  auto n = store->Count("iosonar.trace", {});
  REQUIRE(n.ok());
  CHECK(*n == 11);
  CHECK(store->Append({}, nullptr).ok());
}

TEST_CASE("the store layout: blocks, stream ranges, field codes, a format version", "[store]") {
  TempDir dir;
  { auto store = Open(dir); }
  std::string db = dir / "store.db";
  auto tables = SqlRows(db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name");
  REQUIRE(tables.size() == 3);
  CHECK(tables[0][0] == "blocks");
  CHECK(tables[1][0] == "fields");
  CHECK(tables[2][0] == "streams");
  CHECK(SqlRows(db, "PRAGMA user_version")[0][0] == std::to_string(kStoreFormat));
  CHECK(SqlRows(db, "PRAGMA journal_mode")[0][0] == "wal");
  // Every field of every dataset has a code, derived from the schema; the
  // dataset itself is the block's, so event.dataset has none.
  for (const auto& d : schema::Datasets()) {
    auto codes = SqlRows(db, "SELECT name, type FROM fields WHERE dataset = '" + std::string(d.name) + "' ORDER BY code");
    std::vector<std::vector<std::string>> want;
    for (const auto* f : schema::FieldsOf(d.name))
      if (f->name != "event.dataset") want.push_back({std::string(f->name), std::string(schema::TypeName(f->type))});
    CHECK(codes == want);
  }
  auto idx = SqlRows(db, "SELECT name FROM pragma_index_list('blocks') ORDER BY name");
  REQUIRE(idx.size() == 2);
  CHECK(idx[0][0] == "blocks_job");
  CHECK(idx[1][0] == "blocks_time");
}

TEST_CASE("dates are stored as epoch ns, absent fields as absent", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  Records r;
  TraceSpec s;
  s.ts = kT0 + 123 * 1000000;
  s.with_job = false;
  r.Add(TraceLine(s));
  REQUIRE(store->Append(r.span(), nullptr).ok());
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.fields = {field::kTimestamp, field::kJobId, field::kEventDataset};
  int rows = 0;
  REQUIRE(store
              ->Scan(q,
                     [&](const Row& row) {
                       ++rows;
                       CHECK(row.Int(0) == kT0 + 123000000);
                       CHECK(row.Str(0) == std::to_string(kT0 + 123000000));  // as the old INTEGER column read
                       CHECK_FALSE(row.Has(1));
                       CHECK(row.Str(2) == "iosonar.trace");
                       return true;
                     })
              .ok());
  CHECK(rows == 1);
}

TEST_CASE("scan returns the asked-for fields in time order, within the range, matching the filters", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  // Appended out of time order on purpose.
  Records r = TenRecords();
  std::reverse(r.ptrs.begin(), r.ptrs.end());
  REQUIRE(store->Append(r.span(), nullptr).ok());

  struct Got {
    int64_t ts, seq;
    std::string host, job;
  };
  auto scan = [&](ScanQuery q) {
    q.dataset = dataset::kTrace;
    q.fields = {field::kTimestamp, field::kEventSeq, field::kHostName, field::kJobId};
    std::vector<Got> out;
    Status s = store->Scan(q, [&](const Row& row) {
      REQUIRE(row.Has(0));
      out.push_back({row.Int(0), row.Int(1), std::string(row.Str(2)), std::string(row.Str(3))});
      return true;
    });
    INFO(s.ToString());
    REQUIRE(s.ok());
    return out;
  };

  SECTION("everything, in time order") {
    auto got = scan({});
    REQUIRE(got.size() == 10);
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].ts == kT0 + static_cast<int64_t>(i) * kSec);
      CHECK(got[i].seq == static_cast<int64_t>(i));
      CHECK(got[i].host == "n1");
    }
  }
  SECTION("a time range is [start, end)") {
    ScanQuery q;
    q.range = {kT0 + 2 * kSec, kT0 + 5 * kSec};
    auto got = scan(q);
    REQUIRE(got.size() == 3);
    CHECK(got.front().seq == 2);
    CHECK(got.back().seq == 4);
  }
  SECTION("keyword and long filters, all must hold") {
    ScanQuery q;
    q.filters = {{field::kJobId, "42"}};
    auto got = scan(q);
    REQUIRE(got.size() == 5);
    for (auto& g : got) CHECK(g.job == "42");
    q.filters.push_back({field::kProcessPid, "100"});
    CHECK(scan(q).size() == 5);
    q.filters.back().equals = "101";
    CHECK(scan(q).empty());
    q.filters = {{field::kJobId, "42' OR '1'='1"}};  // bound, not spliced into the SQL
    CHECK(scan(q).empty());
  }
  SECTION("filters and range together") {
    ScanQuery q;
    q.filters = {{field::kJobId, "7"}};
    q.range.start_ns = kT0 + 4 * kSec;
    auto got = scan(q);
    REQUIRE(got.size() == 3);
    CHECK(got[0].seq == 5);
  }
  SECTION("the callback can stop early") {
    ScanQuery q;
    q.dataset = dataset::kTrace;
    q.fields = {field::kEventSeq};
    int calls = 0;
    REQUIRE(store->Scan(q, [&](const Row&) { return ++calls < 3; }).ok());
    CHECK(calls == 3);
  }
  SECTION("absent values are reported as absent") {
    Records more;
    TraceSpec s;
    s.seq = 100;
    s.ts = kT0 - kSec;
    s.with_job = false;
    more.Add(TraceLine(s));
    REQUIRE(store->Append(more.span(), nullptr).ok());
    ScanQuery q;
    q.dataset = dataset::kTrace;
    q.fields = {field::kJobId, field::kIoErrno, field::kIoBytes};
    q.range.end_ns = kT0;
    int rows = 0;
    REQUIRE(store
                ->Scan(q,
                       [&](const Row& row) {
                         ++rows;
                         CHECK_FALSE(row.Has(0));
                         CHECK_FALSE(row.Has(1));
                         CHECK(row.Has(2));
                         CHECK(row.Int(2) == 4096);
                         CHECK(row.Double(2) == 4096.0);
                         return true;
                       })
                .ok());
    CHECK(rows == 1);
  }
}

TEST_CASE("bad queries are refused, naming the dataset or field", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  auto noop = [](const Row&) { return true; };
  auto scan_error = [&](ScanQuery q) {
    if (q.dataset.empty()) q.dataset = dataset::kTrace;
    Status s = store->Scan(q, noop);
    CHECK(s.code() == Code::kInvalid);
    return s.message();
  };
  // Fields are ids, so an unknown name cannot be asked for; an empty id can.
  CHECK(scan_error({"iosonar.nope", {}, {}, {field::kHostName}}) ==
        "unknown dataset \"iosonar.nope\" (not in the record schema)");
  CHECK(scan_error({"", {}, {}, {FieldId{}}}) == "no field given (an empty field id)");
  CHECK(scan_error({"", {}, {}, {field::kTracerDropped}}) == "field tracer.dropped is not part of dataset iosonar.trace");
  CHECK(scan_error({"", {}, {{FieldId{}, "1"}}, {field::kHostName}}) == "no field given (an empty field id)");
  CHECK(scan_error({"", {}, {{field::kProcessPid, "12x"}}, {field::kHostName}}) ==
        "filter on process.pid: \"12x\" is not an integer");
  CHECK(scan_error({"", {}, {{field::kProcessPid, ""}}, {field::kHostName}}) ==
        "filter on process.pid: \"\" is not an integer");
  CHECK(scan_error({"", {}, {{field::kTimestamp, "1"}}, {field::kHostName}}) ==
        "cannot filter on @timestamp: it is a date (only keyword and long fields can be filtered)");

  auto c = store->Count("iosonar.nope", {});
  CHECK(c.status().code() == Code::kInvalid);
  CHECK(c.status().message() == "unknown dataset \"iosonar.nope\" (not in the record schema)");
  c = store->Count("iosonar.trace", {{field::kEventAction, "exit"}});
  CHECK(c.status().message() == "field event.action is not part of dataset iosonar.trace");

  BucketQuery bq;
  bq.dataset = dataset::kTrace;
  bq.sum_fields = {field::kHostName};
  auto b = store->BucketSums(bq);
  CHECK(b.status().message() == "cannot sum field host.name: it is a keyword, not a number");
  bq.sum_fields = {field::kIoBytes};
  bq.bucket_ns = 0;
  CHECK(store->BucketSums(bq).status().message() == "bucket width must be positive, got 0");

  ParsedRecord unparsed;
  const ParsedRecord* p = &unparsed;
  CHECK(store->Append(std::span<const ParsedRecord* const>(&p, 1), nullptr).code() == Code::kInvalid);
}

TEST_CASE("bucket sums per fixed-width, epoch-aligned bucket", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  Records r;
  // kT0 is 2 s past a multiple of 10 s: two records in each of three 10 s
  // buckets, the first starting at kT0 - 2 s.
  const int64_t offsets[] = {-2, 7, 8, 17, 18, 27};
  int64_t seq = 0;
  for (int64_t off : offsets) {
    TraceSpec s;
    s.seq = seq++;
    s.ts = kT0 + off * kSec;
    s.bytes = 100 * seq;
    s.count = 1;
    s.job = off >= 18 ? "7" : "42";
    r.Add(TraceLine(s));
  }
  REQUIRE(store->Append(r.span(), nullptr).ok());
  BucketQuery q;
  q.dataset = dataset::kTrace;
  q.bucket_ns = 10 * kSec;
  q.sum_fields = {field::kIoBytes, field::kIoCount};
  auto b = store->BucketSums(q);
  REQUIRE(b.ok());
  REQUIRE(b->size() == 3);
  const int64_t first = (kT0 - 2 * kSec) / q.bucket_ns * q.bucket_ns;
  CHECK((*b)[0].start_ns == first);
  CHECK((*b)[0].doc_count == 2);
  CHECK((*b)[0].sums == std::vector<double>{300, 2});
  CHECK((*b)[1].start_ns == first + q.bucket_ns);
  CHECK((*b)[1].sums == std::vector<double>{700, 2});
  CHECK((*b)[2].start_ns == first + 2 * q.bucket_ns);
  CHECK((*b)[2].sums == std::vector<double>{1100, 2});

  q.filters = {{field::kJobId, "7"}};
  b = store->BucketSums(q);
  REQUIRE(b.ok());
  uint64_t docs = 0;
  for (auto& bk : *b) docs += bk.doc_count;
  CHECK(docs == 2);

  q.filters.clear();
  q.range = {kT0, kT0 + 10 * kSec};
  b = store->BucketSums(q);
  REQUIRE(b.ok());
  REQUIRE(b->size() == 2);
  CHECK((*b)[0].doc_count == 1);  // kT0 + 7 s: the bucket starts before the range, the record is in it
  CHECK((*b)[1].doc_count == 1);

  auto n = store->Count("iosonar.trace", {{field::kJobId, "42"}});
  REQUIRE(n.ok());
  CHECK(*n == 4);
}

TEST_CASE("bucket start is floored for times before the epoch", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  Records r;
  TraceSpec s;
  s.ts = -1500000000;  // 1969-12-31T23:59:58.5Z
  std::string line = TraceLine(s);  // event.start_ns/end_ns are never negative: only @timestamp is before the epoch
  line.replace(line.find("\"event.start_ns\":-1500000000"), 28, "\"event.start_ns\":0");
  line.replace(line.find("\"event.end_ns\":-1499999000"), 26, "\"event.end_ns\":0");
  r.Add(line);
  REQUIRE(store->Append(r.span(), nullptr).ok());
  BucketQuery q;
  q.dataset = dataset::kTrace;
  q.sum_fields = {field::kIoBytes};
  auto b = store->BucketSums(q);
  REQUIRE(b.ok());
  REQUIRE(b->size() == 1);
  CHECK((*b)[0].start_ns == -2 * kSec);
}

TEST_CASE("records of several datasets in one append go to their own tables", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  Records r;
  r.Add(TraceLine({}));
  r.Add(R"({"@timestamp":"2026-11-22T07:09:12.123Z","event.dataset":"iosonar.tracer","event.stream":1234,)"
        R"("event.seq":1,"host.name":"n1","process.pid":100,"event.action":"exit","tracer.raw_ops":10,)"
        R"("tracer.records":2,"tracer.dropped":0,"tracer.spooled":0,"process.command_line":"./a.out"})");
  AppendStats st;
  REQUIRE(store->Append(r.span(), &st).ok());
  CHECK(st.inserted == 2);
  CHECK(*store->Count("iosonar.trace", {}) == 1);
  CHECK(*store->Count("iosonar.tracer", {{field::kEventAction, "exit"}}) == 1);
}

TEST_CASE("the store persists across reopening", "[store]") {
  TempDir dir;
  Records r = TenRecords();
  {
    auto store = Open(dir);
    REQUIRE(store->Append(r.span(), nullptr).ok());
  }
  auto store = Open(dir);
  CHECK(*store->Count("iosonar.trace", {}) == 10);
  AppendStats st;
  REQUIRE(store->Append(r.span(), &st).ok());
  CHECK(st.duplicates == 10);
}

TEST_CASE("a store.db of the old row-per-record layout is refused, naming the file, and left alone", "[store]") {
  TempDir dir;
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir / "store.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "CREATE TABLE trace (\"@timestamp\" INTEGER, \"event.dataset\" TEXT, \"event.stream\" INTEGER,"
                         " \"event.seq\" INTEGER, \"host.name\" TEXT, UNIQUE(\"event.stream\",\"event.seq\"));"
                         "INSERT INTO trace VALUES (1, 'iosonar.trace', 5, 0, 'old');",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = OpenSqliteStore(dir.path());
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == Code::kInvalid);
  CHECK(s.status().message() == "store " + (dir / "store.db") +
                                    " was created by an older iosonar (one SQLite row per record); remove it or use a "
                                    "new --store directory");
  // Nothing was added to it.
  CHECK(SqlRows(dir / "store.db", "SELECT name FROM sqlite_master ORDER BY name") ==
        std::vector<std::vector<std::string>>{{"sqlite_autoindex_trace_1"}, {"trace"}});
  CHECK(SqlRows(dir / "store.db", "SELECT \"host.name\" FROM trace")[0][0] == "old");
  // The collector refuses it the same way.
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = dir.path();
  CHECK(Collector::Start(o).status().message() == s.status().message());
}

TEST_CASE("a store.db of a newer format is refused", "[store]") {
  TempDir dir;
  { auto store = Open(dir); }
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir / "store.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, ("PRAGMA user_version=" + std::to_string(kStoreFormatMerged + 1)).c_str(), nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = OpenSqliteStore(dir.path());
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("was created by a newer iosonar") != std::string::npos);
  CHECK(s.status().message().find(dir / "store.db") != std::string::npos);
}

TEST_CASE("a file that is not a database is refused, naming it", "[store]") {
  TempDir dir;
  iosonar::test::WriteFile(dir / "store.db", std::string(8192, 'x'));
  auto s = OpenSqliteStore(dir.path());
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find(dir / "store.db") != std::string::npos);
}

TEST_CASE("opening a store in an unusable directory fails with the path", "[store]") {
  TempDir dir;
  iosonar::test::WriteFile(dir / "file", "x");
  auto s = OpenSqliteStore(dir / "file");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find(dir / "file") != std::string::npos);
}

// Regression: the block decoder and the scan tracked present fields in one
// 64-bit mask over schema positions; once the schema grew past 64 fields, a
// field at position >= 64 that one record had and the next lacked came back
// with the first record's value (and presence tests read the wrong bit).
TEST_CASE("fields at schema positions beyond 64: absent stays absent, present reads right", "[store]") {
  const int punch = FieldIndex("oss.punch");
  const int sync = FieldIndex("oss.sync");
  REQUIRE(punch >= 64);
  REQUIRE(sync >= 64);
  TempDir dir;
  auto store = Open(dir);
  Records r;
  auto line = [](int seq, const std::string& extra) {
    return "{\"@timestamp\":\"2026-11-22T00:00:0" + std::to_string(seq) +
           ".000Z\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":9,\"event.seq\":" + std::to_string(seq) +
           ",\"host.name\":\"oss1\",\"lustre.fs\":\"fs\",\"lustre.target\":\"fs-OST0000\"" + extra + "}";
  };
  r.Add(line(0, ",\"oss.punch\":5,\"oss.sync\":1"));
  r.Add(line(1, ""));
  r.Add(line(2, ",\"oss.sync\":7"));
  REQUIRE(store->Append(r.span(), nullptr).ok());
  ScanQuery q;
  q.dataset = dataset::kOss;
  q.fields = {field::kEventSeq, field::kOssPunch, field::kOssSync};
  std::vector<std::string> got;
  REQUIRE(store
              ->Scan(q,
                     [&](const Row& row) {
                       got.push_back(std::to_string(row.Int(0)) + ":" + (row.Has(1) ? std::to_string(row.Int(1)) : "-") +
                                     ":" + (row.Has(2) ? std::to_string(row.Int(2)) : "-"));
                       return true;
                     })
              .ok());
  CHECK(got == std::vector<std::string>{"0:5:1", "1:-:-", "2:-:7"});
  BucketQuery bq;
  bq.dataset = dataset::kOss;
  bq.bucket_ns = 10'000'000'000;
  bq.sum_fields = {field::kOssPunch, field::kOssSync};
  auto buckets = store->BucketSums(bq);
  REQUIRE(buckets.ok());
  REQUIRE(buckets->size() == 1);
  const std::vector<double> sums = (*buckets)[0].sums;
  CHECK(sums == std::vector<double>{5, 8});
}

TEST_CASE("an unordered scan returns the rows of the ordered one, in any order, with range, filters and stop", "[store]") {
  TempDir dir;
  SqliteStoreOptions o;
  auto opened = OpenSqliteStore(dir.path(), o);
  REQUIRE(opened.ok());
  Store& store = *opened.value();
  // Three appends (three blocks per job) whose times interleave, two jobs, several hosts and ops.
  for (int batch = 0; batch < 3; ++batch) {
    Records r;
    for (int i = 0; i < 40; ++i) {
      TraceSpec s;
      s.seq = batch * 100 + i;
      s.ts = kT0 + (i * 3 + batch) * kSec / 7;
      s.job = i % 3 ? "42" : "7";
      s.host = "n" + std::to_string(i % 5);
      s.op = i % 4 ? "write" : "read";
      s.bytes = 1000 + i;
      r.Add(TraceLine(s));
    }
    REQUIRE(store.Append(r.span(), nullptr).ok());
  }
  auto rows = [&](ScanQuery q, size_t stop_after) {
    q.dataset = dataset::kTrace;
    q.fields = {field::kTimestamp, field::kEventSeq, field::kHostName, field::kIoOp, field::kIoBytes,
                field::kProcessRank};
    std::vector<std::string> out;
    Status s = store.Scan(q, [&](const Row& row) {
      out.push_back(std::to_string(row.Int(0)) + "/" + std::to_string(row.Int(1)) + "/" + std::string(row.Str(2)) + "/" +
                    std::string(row.Str(3)) + "/" + std::to_string(row.Int(4)) + "/" + (row.Has(5) ? "rank" : "-"));
      return out.size() < stop_after;
    });
    REQUIRE(s.ok());
    return out;
  };
  for (int variant = 0; variant < 3; ++variant) {
    ScanQuery q;
    if (variant >= 1) q.filters = {{field::kJobId, "42"}};
    if (variant >= 2) q.range = {kT0 + 2 * kSec, kT0 + 10 * kSec};
    auto ordered = rows(q, SIZE_MAX);
    q.ordered = false;
    auto any = rows(q, SIZE_MAX);
    REQUIRE_FALSE(ordered.empty());
    CHECK(any.size() == ordered.size());
    std::sort(ordered.begin(), ordered.end());
    std::sort(any.begin(), any.end());
    CHECK(any == ordered);
    CHECK(rows(q, 5).size() == 5);  // the callback's false stops it
  }
}
