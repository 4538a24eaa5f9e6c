// Inside the SQLite store: the block encoding, the seq intervals behind
// "nothing twice", and how blocks, jobs, batches and several store objects
// interact. The Store-level behaviour is in test_sqlite_store.cc.
#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "core/store/internal/block_codec.h"
#include "core/collector/ingest.h"
#include "core/records/record.h"
#include "core/store/internal/seq_ranges.h"
#include "core/store/sqlite_store.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::TempDir;

namespace {

constexpr int64_t kT0 = 1795331352000000000;  // 2026-11-22T07:09:12Z
constexpr int64_t kMs = 1000000;

// ---- block codec ---------------------------------------------------------------

// A code table with every type, whatever the schema has: values are put
// straight into ParsedRecord slots 10..16, so the codec is tested on its own.
blocks::DatasetCodes AllTypes() {
  blocks::DatasetCodes c;
  c.dataset = "test.dataset";
  c.dataset_field = 1;
  c.Set(0, 10, schema::Type::kLong);
  c.Set(1, 11, schema::Type::kDate);
  c.Set(2, 12, schema::Type::kKeyword);
  c.Set(3, 13, schema::Type::kDouble);
  c.Set(4, 14, schema::Type::kBool);
  c.Set(5, 15, schema::Type::kKeyword);
  c.Set(63, 16, schema::Type::kLong);  // the highest code: a 10-byte mask
  return c;
}

struct Value {
  bool present = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
};
using Rec = std::vector<Value>;  // slots 10..16

void Fill(const Rec& in, ParsedRecord* r) {
  r->Clear();
  for (size_t k = 0; k < in.size(); ++k) {
    if (!in[k].present) continue;
    FieldValue& v = r->v[10 + k];
    switch (k) {
      case 0:
      case 6: v.kind = FieldValue::kInt; v.i = in[k].i; break;
      case 1:  // dates come from the parser as their text plus epoch ns
        v.kind = in[k].i % 2 ? FieldValue::kString : FieldValue::kInt;
        v.i = in[k].i;
        v.s = "text is not stored";
        break;
      case 2:
      case 5: v.kind = FieldValue::kString; v.s = in[k].s; break;
      case 3: v.kind = FieldValue::kDouble; v.d = in[k].d; break;
      case 4: v.kind = FieldValue::kBool; v.i = in[k].i; break;
    }
  }
}

void CheckSame(const Rec& want, const ParsedRecord& got, const FieldSet& present, size_t n) {
  INFO("record " << n);
  CHECK(present.Test(1));
  CHECK(got.v[1].s == "test.dataset");
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("slot " << 10 + k);
    const FieldValue& v = got.v[10 + k];
    CHECK(present.Test(10 + k) == want[k].present);
    if (!want[k].present) {
      CHECK(v.kind == FieldValue::kAbsent);
      continue;
    }
    switch (k) {
      case 0:
      case 1:
      case 6: CHECK(v.kind == FieldValue::kInt); CHECK(v.i == want[k].i); break;
      case 2:
      case 5: CHECK(v.kind == FieldValue::kString); CHECK(v.s == want[k].s); break;
      case 3:
        CHECK(v.kind == FieldValue::kDouble);
        CHECK(std::bit_cast<uint64_t>(v.d) == std::bit_cast<uint64_t>(want[k].d));
        break;
      case 4: CHECK(v.kind == FieldValue::kBool); CHECK(v.i == want[k].i); break;
    }
  }
}

std::vector<Rec> EdgeRecords() {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<Rec> out;
  auto rec = [&](int64_t l, int64_t date, std::string k1, double d, int64_t b, std::string k2, int64_t hi) {
    out.push_back({{true, l, 0, {}}, {true, date, 0, {}}, {true, 0, 0, std::move(k1)}, {true, 0, d, {}},
                   {true, b, 0, {}}, {true, 0, 0, std::move(k2)}, {true, hi, 0, {}}});
  };
  rec(0, kT0, "", 0.0, 0, "", 0);
  rec(0, kT0, "", -0.0, 1, "", 0);                 // empty strings repeated
  rec(-1, kT0 + 1, "a", 1.5, 0, "", -1);
  rec(kMin, kMin, "a", -1e300, 1, "x", kMax);      // deltas that wrap around
  rec(kMax, kMax, "b", kInf, 0, "x", kMin);
  rec(kMin, kMin, "", -kInf, 1, "", kMin);
  rec(1, -1, std::string(300, 'p'), std::numeric_limits<double>::quiet_NaN(), 1, std::string("nul\0inside", 10), 1);
  rec(1, -1, std::string(300, 'p'), std::numeric_limits<double>::denorm_min(), 0, std::string("nul\0inside", 10), 1);
  rec(2, -kT0, "\xff\xfe not UTF-8 either", 5e-324, 1, "y", 2);
  out.push_back(Rec(7));  // nothing at all
  Rec some(7);
  some[2] = {true, 0, 0, "a"};  // a repeat across a record without the field
  out.push_back(some);
  out.push_back(some);
  return out;
}

std::vector<uint8_t> Encode(const blocks::DatasetCodes& codes, const std::vector<Rec>& recs) {
  blocks::BlockEncoder enc(&codes);
  ParsedRecord r;
  for (const auto& x : recs) {
    Fill(x, &r);
    enc.Add(r);
  }
  CHECK(enc.records() == recs.size());
  auto span = enc.Finish();
  return {span.begin(), span.end()};
}

}  // namespace

TEST_CASE("block codec: every field type round-trips, edge values included", "[store][blocks]") {
  const auto codes = AllTypes();
  std::vector<Rec> recs = EdgeRecords();
  // And random records: presence, small and large values, repeats.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3000; ++i) {
    Rec x(7);
    for (auto& v : x) v.present = rng() % 4 != 0;
    x[0].i = static_cast<int64_t>(rng()) >> (rng() % 64);
    x[1].i = kT0 + static_cast<int64_t>(rng() % 1000000);
    x[2].s = std::string("host") + std::to_string(rng() % 3);
    x[3].d = std::ldexp(static_cast<double>(rng() % 1000) - 500, static_cast<int>(rng() % 200) - 100);
    x[4].i = static_cast<int64_t>(rng() % 2);
    x[5].s = std::string(rng() % 40, static_cast<char>('a' + rng() % 26));
    x[6].i = static_cast<int64_t>(rng());
    recs.push_back(x);
  }
  const auto blob = Encode(codes, recs);
  blocks::BlockDecoder dec;
  std::string err;
  REQUIRE(dec.Open(&codes, blob.data(), blob.size(), &err));
  CHECK(dec.left() == recs.size());
  ParsedRecord got;
  got.Clear();
  FieldSet present;
  size_t n = 0;
  while (dec.Next(&got, &present, &err)) {
    REQUIRE(n < recs.size());
    CheckSame(recs[n], got, present, n);
    ++n;
  }
  CHECK(err == "");
  CHECK(n == recs.size());
}

TEST_CASE("block codec: a damaged block is reported, never overrun", "[store][blocks]") {
  const auto codes = AllTypes();
  const auto blob = Encode(codes, EdgeRecords());
  auto decode_all = [&](const std::vector<uint8_t>& b, std::string* err) {
    blocks::BlockDecoder dec;
    if (!dec.Open(&codes, b.data(), b.size(), err)) return false;
    ParsedRecord r;
    r.Clear();
    FieldSet present;
    while (dec.Next(&r, &present, err)) {
    }
    return err->empty();
  };
  std::string err;
  REQUIRE(decode_all(blob, &err));
  // Every truncation is an error (the count in the header says more is due).
  for (size_t len = 0; len < blob.size(); ++len) {
    // A copy of exactly len bytes, so a sanitizer sees any read past it.
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(len));
    err.clear();
    INFO("length " << len);
    CHECK_FALSE(decode_all(cut, &err));
    CHECK(err != "");
  }
  // Random damage: decoding may or may not notice, but stays in bounds.
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    auto bad = blob;
    bad[blocks::kHeaderBytes + rng() % (bad.size() - blocks::kHeaderBytes)] ^= static_cast<uint8_t>(1 + rng() % 255);
    err.clear();
    (void)decode_all(bad, &err);
  }
  auto wrong = blob;
  wrong[0] = 99;
  err.clear();
  CHECK_FALSE(decode_all(wrong, &err));
  CHECK(err == "unknown block format 99");
  // A code the table does not have.
  blocks::DatasetCodes fewer = AllTypes();
  fewer.by_code[63].used = false;
  blocks::BlockDecoder dec;
  REQUIRE(dec.Open(&fewer, blob.data(), blob.size(), &err));
  ParsedRecord r;
  r.Clear();
  FieldSet present;
  CHECK_FALSE(dec.Next(&r, &present, &err));
  CHECK(err.find("unknown field code 63") != std::string::npos);
}

// ---- seq intervals -------------------------------------------------------------

TEST_CASE("seq ranges: merging out-of-order seqs and gaps filled later", "[store][ranges]") {
  SeqRanges r;
  for (int64_t s = 0; s < 10; ++s) CHECK(r.Insert(s));
  for (int64_t s = 20; s < 30; ++s) CHECK(r.Insert(s));
  CHECK(r.ToText() == "0-9,20-29");
  CHECK_FALSE(r.Insert(5));
  CHECK_FALSE(r.Insert(20));
  CHECK(r.Insert(15));
  CHECK(r.ToText() == "0-9,15,20-29");
  CHECK(r.Insert(10));                       // joins the interval before
  CHECK(r.Insert(14));                       // joins the one after
  CHECK(r.ToText() == "0-10,14-15,20-29");
  for (int64_t s : {12, 11, 13}) CHECK(r.Insert(s));  // 13 bridges two intervals
  CHECK(r.ToText() == "0-15,20-29");
  for (int64_t s = 19; s >= 16; --s) CHECK(r.Insert(s));
  CHECK(r.ToText() == "0-29");
  CHECK(r.intervals().size() == 1);
  CHECK(r.Contains(0));
  CHECK(r.Contains(29));
  CHECK_FALSE(r.Contains(30));
  CHECK_FALSE(r.Contains(-1));
}

TEST_CASE("seq ranges: extremes and negative values, text round trip", "[store][ranges]") {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  SeqRanges r;
  for (int64_t s : {kMax, kMin, kMax - 1, kMin + 1, int64_t{-5}, int64_t{-3}, int64_t{-4}, int64_t{0}}) CHECK(r.Insert(s));
  CHECK_FALSE(r.Insert(kMax));
  CHECK_FALSE(r.Insert(kMin));
  const std::string text = r.ToText();
  CHECK(text == "-9223372036854775808--9223372036854775807,-5--3,0,9223372036854775806-9223372036854775807");
  SeqRanges back;
  REQUIRE(SeqRanges::FromText(text, &back));
  CHECK(back.intervals() == r.intervals());
  REQUIRE(SeqRanges::FromText("", &back));
  CHECK(back.empty());
  for (const char* bad : {"1-0", "0-1,1-2", "0-1,2-3", "3,1", "a", "1,", ",1", "1--", "1-2-3", " 1", "1 ", "0-1,,5"}) {
    INFO(bad);
    SeqRanges keep = r;
    CHECK_FALSE(SeqRanges::FromText(bad, &keep));
    CHECK(keep.intervals() == r.intervals());  // unchanged on error
  }
}

TEST_CASE("seq ranges agree with a set under random inserts", "[store][ranges]") {
  std::mt19937 rng(3);
  for (int round = 0; round < 50; ++round) {
    SeqRanges r;
    std::set<int64_t> ref;
    const int domain = 5 + static_cast<int>(rng() % 200);
    for (int i = 0; i < 300; ++i) {
      const int64_t s = static_cast<int64_t>(rng() % static_cast<unsigned>(domain)) - 20;
      CHECK(r.Insert(s) == ref.insert(s).second);
    }
    // Sorted, disjoint, not adjacent, covering exactly the set.
    std::set<int64_t> covered;
    const auto& iv = r.intervals();
    for (size_t k = 0; k < iv.size(); ++k) {
      REQUIRE(iv[k].first <= iv[k].second);
      if (k) REQUIRE(iv[k - 1].second + 1 < iv[k].first);
      for (int64_t s = iv[k].first; s <= iv[k].second; ++s) covered.insert(s);
    }
    CHECK(covered == ref);
    for (int64_t s = -25; s < domain; ++s) CHECK(r.Contains(s) == (ref.count(s) == 1));
    SeqRanges back;
    REQUIRE(SeqRanges::FromText(r.ToText(), &back));
    CHECK(back.intervals() == iv);
  }
}

// ---- the store --------------------------------------------------------------------

namespace {

struct Spec {
  int64_t stream = 1, seq = 0, ts = kT0;
  std::string job = "42";
  bool with_job = true;
  int64_t pid = 100, bytes = 4096;
};

std::string Line(const Spec& s) {
  std::string l = "{\"@timestamp\":\"" + FormatIsoMillis(s.ts) +
                  "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" + std::to_string(s.stream) +
                  ",\"event.seq\":" + std::to_string(s.seq) + ",\"host.name\":\"n1\"";
  if (s.with_job) l += ",\"job.id\":\"" + s.job + "\"";
  l += ",\"process.pid\":" + std::to_string(s.pid) + ",\"process.tid\":" + std::to_string(s.pid) +
       ",\"io.op\":\"write\",\"io.layer\":\"posix\",\"file.path\":\"/tmp/f\",\"io.size\":4096,\"io.count\":1"
       ",\"io.bytes\":" +
       std::to_string(s.bytes) + ",\"event.start_ns\":" + std::to_string(s.ts) +
       ",\"event.end_ns\":" + std::to_string(s.ts + 1000) + ",\"io.duration_ns\":500}";
  return l;
}

struct Records {
  std::vector<std::unique_ptr<std::string>> bufs;
  std::vector<std::unique_ptr<ParsedRecord>> recs;
  std::vector<const ParsedRecord*> ptrs;
  void Add(const Spec& s) {
    const std::string line = Line(s);
    bufs.push_back(std::make_unique<std::string>(line + '\0'));
    recs.push_back(std::make_unique<ParsedRecord>());
    Status st = ParseRecordInsitu(bufs.back()->data(), line.size(), recs.back().get());
    INFO(line);
    REQUIRE(st.message() == "");
    ptrs.push_back(recs.back().get());
  }
  std::span<const ParsedRecord* const> span() const { return ptrs; }
};

std::unique_ptr<Store> Open(const TempDir& dir, SqliteStoreOptions o = {}) {
  auto s = OpenSqliteStore(dir.path(), o);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s.value());
}

AppendStats Append(Store& store, const Records& r) {
  AppendStats st;
  Status s = store.Append(r.span(), &st);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return st;
}

std::vector<std::vector<std::string>> SqlRows(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  INFO(sql);
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  std::vector<std::vector<std::string>> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(st); ++c) {
      const auto* t = sqlite3_column_text(st, c);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out.push_back(row);
  }
  CHECK(rc == SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

struct Got {
  int64_t ts, stream, seq;
  std::string job;
  bool operator==(const Got&) const = default;
};

std::vector<Got> ScanAll(Store& store, ScanQuery q) {
  q.dataset = dataset::kTrace;
  q.fields = {field::kTimestamp, field::kEventStream, field::kEventSeq, field::kJobId};
  std::vector<Got> out;
  Status s = store.Scan(q, [&](const Row& row) {
    out.push_back({row.Int(0), row.Int(1), row.Int(2), row.Has(3) ? std::string(row.Str(3)) : "-"});
    return true;
  });
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

}  // namespace

TEST_CASE("store: nothing twice across blocks and across reopening", "[store]") {
  TempDir dir;
  SqliteStoreOptions o;
  o.block_records = 3;
  Records first;
  for (int64_t i = 0; i < 10; ++i) first.Add({.seq = i, .ts = kT0 + i * kMs});
  {
    auto store = Open(dir, o);
    CHECK(Append(*store, first).inserted == 10);
    CHECK(SqlRows(dir / "store.db", "SELECT count(*), sum(n), max(n) FROM blocks")[0] ==
          std::vector<std::string>{"4", "10", "3"});
    auto again = Append(*store, first);
    CHECK(again.inserted == 0);
    CHECK(again.duplicates == 10);
  }
  auto store = Open(dir, o);
  AppendStats st = Append(*store, first);
  CHECK(st.inserted == 0);
  CHECK(st.duplicates == 10);
  Records overlap;  // half old, half new
  for (int64_t i = 5; i < 15; ++i) overlap.Add({.seq = i, .ts = kT0 + i * kMs});
  st = Append(*store, overlap);
  CHECK(st.inserted == 5);
  CHECK(st.duplicates == 5);
  CHECK(*store->Count("iosonar.trace", {}) == 15);
  auto got = ScanAll(*store, {});
  REQUIRE(got.size() == 15);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].seq == static_cast<int64_t>(i));
  CHECK(SqlRows(dir / "store.db", "SELECT stream, ranges FROM streams")[0] == std::vector<std::string>{"1", "0-14"});
}

TEST_CASE("store: duplicates inside one batch, gaps filled by later batches", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  Records r;
  for (int64_t s : {0, 1, 2, 5, 6, 9, 2, 6}) r.Add({.seq = s, .ts = kT0 + s * kMs});
  AppendStats st = Append(*store, r);
  CHECK(st.inserted == 6);
  CHECK(st.duplicates == 2);
  CHECK(SqlRows(dir / "store.db", "SELECT ranges FROM streams WHERE stream = 1")[0][0] == "0-2,5-6,9");
  Records fill;
  for (int64_t s : {8, 3, 7, 4, 9}) fill.Add({.seq = s, .ts = kT0 + s * kMs});
  st = Append(*store, fill);
  CHECK(st.inserted == 4);
  CHECK(st.duplicates == 1);
  CHECK(SqlRows(dir / "store.db", "SELECT ranges FROM streams WHERE stream = 1")[0][0] == "0-9");
  auto got = ScanAll(*store, {});
  REQUIRE(got.size() == 10);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].seq == static_cast<int64_t>(i));
}

TEST_CASE("store: per-job scans with jobs interleaved in one batch", "[store]") {
  TempDir dir;
  SqliteStoreOptions o;
  o.block_records = 4;
  auto store = Open(dir, o);
  Records r;
  const std::vector<std::string> jobs = {"a", "b", "c"};
  for (int64_t i = 0; i < 30; ++i) {
    Spec s{.stream = 10 + i % 3, .seq = i / 3, .ts = kT0 + i * kMs, .job = jobs[static_cast<size_t>(i % 3)]};
    if (i % 10 == 9) s.with_job = false;  // and some records of no job
    r.Add(s);
  }
  CHECK(Append(*store, r).inserted == 30);
  // A block holds one job's records (NULL: no job.id), at most 4.
  CHECK(SqlRows(dir / "store.db",
                "SELECT coalesce(job_id, '-'), count(*), sum(n) FROM blocks GROUP BY job_id ORDER BY job_id") ==
        std::vector<std::vector<std::string>>{{"-", "1", "3"}, {"a", "3", "9"}, {"b", "3", "9"}, {"c", "3", "9"}});
  for (const auto& job : jobs) {
    ScanQuery q;
    q.filters = {{field::kJobId, job}};
    auto got = ScanAll(*store, q);
    std::vector<Got> want;
    for (int64_t i = 0; i < 30; ++i)
      if (jobs[static_cast<size_t>(i % 3)] == job && i % 10 != 9) want.push_back({kT0 + i * kMs, 10 + i % 3, i / 3, job});
    CHECK(got == want);
    CHECK(*store->Count("iosonar.trace", {{field::kJobId, job}}) == want.size());
    q.range = {kT0 + 10 * kMs, kT0 + 20 * kMs};
    got = ScanAll(*store, q);
    std::erase_if(want, [](const Got& g) { return g.ts < kT0 + 10 * kMs || g.ts >= kT0 + 20 * kMs; });
    CHECK(got == want);
  }
  CHECK(*store->Count("iosonar.trace", {{field::kJobId, "a"}, {field::kProcessPid, "100"}}) == 9);
  CHECK(*store->Count("iosonar.trace", {{field::kJobId, "a"}, {field::kJobId, "b"}}) == 0);
  CHECK(*store->Count("iosonar.trace", {{field::kJobId, "nope"}}) == 0);
  CHECK(ScanAll(*store, {}).size() == 30);
}

TEST_CASE("store: scans merge overlapping blocks into time order, ties in arrival order", "[store]") {
  TempDir dir;
  SqliteStoreOptions o;
  o.block_records = 3;
  auto store = Open(dir, o);
  std::mt19937 rng(9);
  std::vector<Got> arrived;
  int64_t seq = 0;
  for (int batch = 0; batch < 12; ++batch) {
    Records r;
    const int n = 1 + static_cast<int>(rng() % 9);
    for (int i = 0; i < n; ++i) {
      const int64_t ts = kT0 + static_cast<int64_t>(rng() % 20) * kMs;  // many ties, blocks overlap
      const std::string job = rng() % 2 ? "x" : "y";
      r.Add({.stream = 5, .seq = seq, .ts = ts, .job = job});
      arrived.push_back({ts, 5, seq++, job});
    }
    Append(*store, r);
  }
  auto want = arrived;
  std::stable_sort(want.begin(), want.end(), [](const Got& a, const Got& b) { return a.ts < b.ts; });
  CHECK(ScanAll(*store, {}) == want);
  ScanQuery q;
  q.filters = {{field::kJobId, "x"}};
  q.range = {kT0 + 5 * kMs, kT0 + 15 * kMs};
  auto want_x = want;
  std::erase_if(want_x, [](const Got& g) { return g.job != "x" || g.ts < kT0 + 5 * kMs || g.ts >= kT0 + 15 * kMs; });
  CHECK(ScanAll(*store, q) == want_x);
  // Stopping early stops.
  int calls = 0;
  ScanQuery all;
  all.dataset = dataset::kTrace;
  REQUIRE(store->Scan(all, [&](const Row&) { return ++calls < 7; }).ok());
  CHECK(calls == 7);
  // Bucket sums see every record once.
  BucketQuery bq;
  bq.dataset = dataset::kTrace;
  bq.bucket_ns = 5 * kMs;
  bq.sum_fields = {field::kIoCount};
  auto b = store->BucketSums(bq);
  REQUIRE(b.ok());
  double total = 0;
  for (const auto& bk : *b) total += bk.sums[0];
  CHECK(total == static_cast<double>(arrived.size()));
}

TEST_CASE("store: an aborted batch leaves no trace, in the file or in the dedupe state", "[store]") {
  TempDir dir;
  auto store = Open(dir);
  BulkWriter* w = BulkWriterOf(store.get());
  REQUIRE(w);
  Records r;
  for (int64_t i = 0; i < 5; ++i) r.Add({.seq = i});
  REQUIRE(w->BeginBatch().ok());
  AppendStats st;
  for (const auto* p : r.ptrs) REQUIRE(w->Insert(*p, &st).ok());
  CHECK(st.inserted == 5);
  w->AbortBatch();
  CHECK(*store->Count("iosonar.trace", {}) == 0);
  st = Append(*store, r);
  CHECK(st.inserted == 5);
  CHECK(st.duplicates == 0);
  CHECK(*store->Count("iosonar.trace", {}) == 5);
}

TEST_CASE("store: two store objects on one file keep each other's records once", "[store]") {
  TempDir dir;
  auto a = Open(dir);
  auto b = Open(dir);
  Records r1;
  for (int64_t i = 0; i < 10; ++i) r1.Add({.seq = i});
  CHECK(Append(*a, r1).inserted == 10);
  AppendStats st = Append(*b, r1);  // b had no intervals cached yet
  CHECK(st.duplicates == 10);
  Records r2;
  for (int64_t i = 10; i < 20; ++i) r2.Add({.seq = i});
  CHECK(Append(*b, r2).inserted == 10);
  Records r3;  // a has stream 1 cached as 0-9: it must notice b's commit
  for (int64_t i = 15; i < 25; ++i) r3.Add({.seq = i});
  st = Append(*a, r3);
  CHECK(st.inserted == 5);
  CHECK(st.duplicates == 5);
  CHECK(*a->Count("iosonar.trace", {}) == 25);
  CHECK(*b->Count("iosonar.trace", {}) == 25);
}

TEST_CASE("store: with few streams cached, the dropped ones are read back", "[store]") {
  TempDir dir;
  SqliteStoreOptions o;
  o.max_cached_streams = 2;
  auto store = Open(dir, o);
  for (int64_t s = 0; s < 10; ++s) {
    Records r;
    r.Add({.stream = 1000 + s, .seq = 0});
    r.Add({.stream = 1000 + s, .seq = 1});
    CHECK(Append(*store, r).inserted == 2);
  }
  Records all;
  for (int64_t s = 0; s < 10; ++s) all.Add({.stream = 1000 + s, .seq = 1});
  AppendStats st = Append(*store, all);
  CHECK(st.inserted == 0);
  CHECK(st.duplicates == 10);
}

TEST_CASE("store: a field code whose field this binary lacks is read and dropped", "[store]") {
  TempDir dir;
  Records old;
  old.Add({.seq = 0, .bytes = 111});
  { Append(*Open(dir), old); }
  // As if io.bytes had been renamed in the schema since: its old code now
  // names a field this binary does not know.
  SqlRows(dir / "store.db", "UPDATE fields SET name = 'io.bytes_old' WHERE name = 'io.bytes'");
  auto store = Open(dir);
  // io.bytes got a new code; the old one stays for the old blocks.
  CHECK(SqlRows(dir / "store.db", "SELECT count(*) FROM fields WHERE name LIKE 'io.bytes%'")[0][0] == "2");
  Records fresh;
  fresh.Add({.seq = 1, .ts = kT0 + kMs, .bytes = 222});
  Append(*store, fresh);
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.fields = {field::kEventSeq, field::kIoBytes, field::kIoSize};
  std::vector<std::string> got;
  REQUIRE(store->Scan(q, [&](const Row& row) {
                  got.push_back(std::to_string(row.Int(0)) + ":" + (row.Has(1) ? std::to_string(row.Int(1)) : "-") +
                                ":" + std::to_string(row.Int(2)));
                  return true;
                }).ok());
  CHECK(got == std::vector<std::string>{"0:-:4096", "1:222:4096"});
}

TEST_CASE("store: the collector's batch path fills blocks per dataset and job", "[store]") {
  TempDir dir;
  SqliteStoreOptions o;
  o.block_records = 100;
  auto store = Open(dir, o);
  IngestBatch batch(BulkWriterOf(store.get()), 1000);
  for (int64_t i = 0; i < 250; ++i) REQUIRE(batch.Add(Line({.seq = i, .ts = kT0 + i * kMs})).ok());
  // The tracer numbers a process's records of both datasets in one sequence:
  // (event.stream, event.seq) names one record whatever its dataset.
  auto tracer = [](int seq) {
    return R"({"@timestamp":"2026-11-22T07:09:12.123Z","event.dataset":"iosonar.tracer","event.stream":1,)"
           R"("event.seq":)" + std::to_string(seq) +
           R"(,"host.name":"n1","process.pid":100,"event.action":"exit","tracer.raw_ops":10,)"
           R"("tracer.records":2,"tracer.dropped":0,"tracer.spooled":0})";
  };
  REQUIRE(batch.Add(tracer(250)).ok());
  REQUIRE(batch.Add(tracer(7)).ok());                                           // taken by a trace record
  for (int64_t i = 0; i < 10; ++i) REQUIRE(batch.Add(Line({.seq = i})).ok());  // resent within the batch
  AppendStats st;
  REQUIRE(batch.Commit(&st).ok());
  CHECK(st.inserted == 251);
  CHECK(st.duplicates == 11);
  CHECK(SqlRows(dir / "store.db", "SELECT dataset, n FROM blocks ORDER BY id") ==
        std::vector<std::vector<std::string>>{
            {"iosonar.trace", "100"}, {"iosonar.trace", "100"}, {"iosonar.trace", "50"}, {"iosonar.tracer", "1"}});
  CHECK(*store->Count("iosonar.tracer", {{field::kEventAction, "exit"}}) == 1);
}

TEST_CASE("ExportJsonLines writes records that parse back into the same records", "[store]") {
  TempDir a, b;
  auto src = Open(a);
  IngestBatch batch(BulkWriterOf(src.get()), 100);
  const std::vector<std::string> lines = {
      Line({.seq = 0, .ts = kT0 + 5 * kMs}),
      R"({"@timestamp":"2026-11-22T07:09:12.123456789Z","event.dataset":"iosonar.trace","event.stream":2,"event.seq":0,)"
      R"("host.name":"n\u00e9","process.pid":1,"process.tid":1,"io.op":"read","io.layer":"stdio",)"
      R"("file.path":"/tmp/a \"b\"\\c\n","io.count":1,"event.start_ns":0,"event.end_ns":0,"io.duration_ns":0,"io.errno":2})",
      R"({"@timestamp":"1969-12-31T23:59:59.999999Z","event.dataset":"iosonar.trace","event.stream":2,"event.seq":1,)"
      R"("host.name":"","process.pid":1,"process.tid":1,"io.op":"read","io.layer":"stdio","io.count":1,)"
      R"("io.fd":-9223372036854775808,"event.start_ns":0,"event.end_ns":9223372036854775807,"io.duration_ns":0})",
      R"({"@timestamp":"2026-11-22T07:09:12.123Z","event.dataset":"iosonar.tracer","event.stream":2,"event.seq":2,)"
      R"("host.name":"n1","process.pid":9,"event.action":"exit","tracer.raw_ops":10,"tracer.records":2,)"
      R"("tracer.dropped":0,"tracer.spooled":0,"process.command_line":"./a.out -n 4 'x y'"})",
  };
  for (const auto& l : lines) REQUIRE(batch.Add(l).ok());
  REQUIRE(batch.Commit(nullptr).ok());

  auto export_all = [](Store& s) {
    std::vector<std::string> out;
    for (const char* ds : {"iosonar.trace", "iosonar.tracer"}) {
      ScanQuery q;
      q.dataset = ds;
      Status st = ExportJsonLines(s, q, [&](std::string_view l) {
        out.emplace_back(l);
        return true;
      });
      REQUIRE(st.ok());
    }
    return out;
  };
  const auto first = export_all(*src);
  REQUIRE(first.size() == 4);
  CHECK(first[0] ==
        R"({"@timestamp":"1969-12-31T23:59:59.999999Z","event.dataset":"iosonar.trace","event.stream":2,"event.seq":1,)"
        R"("host.name":"","process.pid":1,"process.tid":1,"io.op":"read","io.layer":"stdio","io.fd":-9223372036854775808,)"
        R"("io.count":1,"event.start_ns":0,"event.end_ns":9223372036854775807,"io.duration_ns":0})");
  CHECK(first[2].find(R"("@timestamp":"2026-11-22T07:09:12.123456789Z")") != std::string::npos);
  CHECK(first[2].find(R"("file.path":"/tmp/a \"b\"\\c\n")") != std::string::npos);
  CHECK(first[3].find(R"("process.command_line":"./a.out -n 4 'x y'")") != std::string::npos);

  auto dst = Open(b);
  IngestBatch again(BulkWriterOf(dst.get()), 100);
  for (const auto& l : first) REQUIRE(again.Add(l).message() == "");
  AppendStats st;
  REQUIRE(again.Commit(&st).ok());
  CHECK(st.inserted == 4);
  CHECK(export_all(*dst) == first);
  // Filters and ranges apply as in Scan.
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, "42"}};
  int n = 0;
  REQUIRE(ExportJsonLines(*src, q, [&](std::string_view) { return ++n < 100; }).ok());
  CHECK(n == 1);
}
