// The store detects and contains damage: CRC-32C per block, verified on every
// read; a damaged block is reported with its range and skipped while the rest
// reads; store-check finds and moves damaged blocks aside; format-2 stores
// (no checksums) are upgraded in place; store files are private whatever the
// umask.
#include <sqlite3.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/base/crc32c.h"
#include "core/records/fields.h"
#include "core/records/record.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::TempDir;

namespace {

// CRC-32C bit by bit from the polynomial's definition (reflected 0x1EDC6F41),
// independent of the table and SSE4.2 paths under test.
uint32_t BitwiseCrc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

constexpr int64_t kT0 = 1795331352000000000;  // 2026-11-22T07:09:12Z

std::string Line(int64_t seq, const std::string& job, int64_t ts) {
  return "{\"@timestamp\":\"" + FormatIsoMillis(ts) +
         "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":77,\"event.seq\":" + std::to_string(seq) +
         ",\"host.name\":\"n1\",\"job.id\":\"" + job +
         "\",\"process.pid\":100,\"process.tid\":100,\"io.op\":\"write\",\"io.layer\":\"posix\","
         "\"file.path\":\"/scratch/f\",\"io.fd\":3,\"io.offset\":" + std::to_string(seq * 4096) +
         ",\"io.size\":4096,\"io.count\":1,\"io.bytes\":4096,\"event.start_ns\":" + std::to_string(ts) +
         ",\"event.end_ns\":" + std::to_string(ts + 1000) + ",\"io.duration_ns\":500}";
}

// Three jobs, 300 records each: three blocks.
void Fill(const std::string& dir) {
  auto st = OpenSqliteStore(dir);
  REQUIRE(st.ok());
  std::vector<std::string> bufs;
  std::vector<ParsedRecord> recs(900);
  std::vector<const ParsedRecord*> ptrs;
  bufs.reserve(900);
  for (int i = 0; i < 900; ++i) {
    const std::string job = std::to_string(1000 + i / 300);
    bufs.push_back(Line(i, job, kT0 + int64_t{i} * 1000000) + '\0');
    REQUIRE(ParseRecordInsitu(bufs.back().data(), bufs.back().size() - 1, &recs[i]).ok());
    ptrs.push_back(&recs[i]);
  }
  AppendStats a;
  REQUIRE((*st)->Append(ptrs, &a).ok());
  REQUIRE(a.inserted == 900);
}

std::vector<std::string> Export(const std::string& dir, std::vector<BlockDamage>* damage = nullptr) {
  SqliteStoreOptions o;
  o.quiet_damage = true;
  auto st = OpenSqliteStore(dir, o);
  REQUIRE(st.ok());
  ScanQuery q;
  q.dataset = dataset::kTrace;
  std::vector<std::string> lines;
  REQUIRE(ExportJsonLines(**st, q, [&](std::string_view l) {
            lines.emplace_back(l);
            return true;
          }).ok());
  if (damage) *damage = (*st)->Damage();
  return lines;
}

void Sql(const std::string& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir + "/store.db").c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO(sql << ": " << (err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

int64_t SqlInt(const std::string& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir + "/store.db").c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// Flips bit `bit` of byte `at` of block `id`'s data, in place.
void FlipBit(const std::string& dir, int64_t id, int64_t at, int bit) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir + "/store.db").c_str(), &db) == SQLITE_OK);
  sqlite3_blob* blob = nullptr;
  REQUIRE(sqlite3_blob_open(db, "main", "blocks", "data", id, 1, &blob) == SQLITE_OK);
  REQUIRE(at < sqlite3_blob_bytes(blob));
  uint8_t b = 0;
  REQUIRE(sqlite3_blob_read(blob, &b, 1, static_cast<int>(at)) == SQLITE_OK);
  b ^= static_cast<uint8_t>(1u << bit);
  REQUIRE(sqlite3_blob_write(blob, &b, 1, static_cast<int>(at)) == SQLITE_OK);
  sqlite3_blob_close(blob);
  sqlite3_close(db);
}

}  // namespace

TEST_CASE("crc32c: the check value and any split agree with a bitwise CRC-32C", "[store][crc]") {
  CHECK(Crc32c("123456789", 9) == 0xE3069283u);  // the catalogue's check value for CRC-32/ISCSI
  CHECK(Crc32c("", 0) == 0u);
  std::mt19937_64 rng(5);
  std::vector<uint8_t> buf(4099);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t n : {1u, 7u, 8u, 9u, 63u, 64u, 1000u, 4099u}) {
    INFO(n);
    CHECK(Crc32c(buf.data(), n) == BitwiseCrc32c(buf.data(), n));
    const size_t cut = n / 3;
    CHECK(Crc32c(buf.data() + cut, n - cut, Crc32c(buf.data(), cut)) == BitwiseCrc32c(buf.data(), n));
  }
}

TEST_CASE("store: one flipped bit in a block is reported with its range and only that block is skipped",
          "[store][damage]") {
  TempDir tmp;
  const std::string dir = tmp / "st";
  Fill(dir);
  const auto clean = Export(dir);
  REQUIRE(clean.size() == 900);
  const int64_t id = SqlInt(dir, "SELECT id FROM blocks WHERE job_id = '1001'");
  FlipBit(dir, id, 40, 3);
  std::vector<BlockDamage> damage;
  const auto lines = Export(dir, &damage);
  // The other two jobs' records read, unchanged; job 1001's block is missing, none altered.
  std::vector<std::string> expected;
  for (const auto& l : clean)
    if (l.find("\"job.id\":\"1001\"") == std::string::npos) expected.push_back(l);
  CHECK(lines == expected);
  REQUIRE(damage.size() == 1);
  CHECK(damage[0].id == id);
  CHECK(damage[0].job == "1001");
  CHECK(damage[0].records == 300);
  CHECK(damage[0].reason == "checksum mismatch");
  CHECK(damage[0].Describe().find("job 1001, 2026-11-22T07:09:12.300Z .. 2026-11-22T07:09:12.599Z, 300 records") !=
        std::string::npos);

  CheckReport r;
  REQUIRE(CheckSqliteStore(dir, false, &r).ok());
  CHECK(r.blocks == 3);
  CHECK(r.records == 600);
  REQUIRE(r.damaged.size() == 1);
  CHECK(r.repaired == 0);
  CheckReport r2;
  REQUIRE(CheckSqliteStore(dir, true, &r2).ok());
  CHECK(r2.repaired == 1);
  CHECK(SqlInt(dir, "SELECT count(*) FROM damaged_blocks") == 1);
  CHECK(SqlInt(dir, "SELECT count(*) FROM blocks") == 2);
  CheckReport r3;
  REQUIRE(CheckSqliteStore(dir, false, &r3).ok());
  CHECK(r3.damaged.empty());
  CHECK(r3.records == 600);
}

TEST_CASE("store: 40 random single-bit flips never change a value silently", "[store][damage]") {
  TempDir tmp;
  const std::string src = tmp / "src";
  Fill(src);
  const auto clean = Export(src);
  const int64_t id = SqlInt(src, "SELECT id FROM blocks WHERE job_id = '1000'");
  const int64_t size = SqlInt(src, "SELECT length(data) FROM blocks WHERE id = " + std::to_string(id));
  std::vector<std::string> without;
  for (const auto& l : clean)
    if (l.find("\"job.id\":\"1000\"") == std::string::npos) without.push_back(l);
  std::mt19937_64 rng(40);
  for (int k = 0; k < 40; ++k) {
    const std::string dir = tmp / ("flip" + std::to_string(k));
    std::filesystem::copy(src, dir);
    const int64_t at = static_cast<int64_t>(rng() % static_cast<uint64_t>(size));
    const int bit = static_cast<int>(rng() % 8);
    FlipBit(dir, id, at, bit);
    std::vector<BlockDamage> damage;
    const auto lines = Export(dir, &damage);
    INFO("byte " << at << " bit " << bit);
    CHECK(lines == without);
    CHECK(damage.size() == 1);
  }
}

TEST_CASE("store: a format-2 store (no checksums) is upgraded in place and still reads", "[store][damage]") {
  TempDir tmp;
  const std::string dir = tmp / "st";
  Fill(dir);
  const auto clean = Export(dir);
  Sql(dir,
      "CREATE TABLE b2 AS SELECT id, dataset, job_id, ts_min, ts_max, n, data FROM blocks; DROP TABLE blocks;"
      "CREATE TABLE blocks(id INTEGER PRIMARY KEY, dataset TEXT NOT NULL, job_id TEXT, ts_min INTEGER NOT NULL,"
      " ts_max INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL);"
      "INSERT INTO blocks SELECT * FROM b2; DROP TABLE b2;"
      "CREATE INDEX blocks_time ON blocks(dataset, ts_min, ts_max);"
      "CREATE INDEX blocks_job ON blocks(job_id, dataset, ts_min); PRAGMA user_version=2;");
  CHECK(Export(dir) == clean);
  CHECK(SqlInt(dir, "PRAGMA user_version") == kStoreFormat);
  CheckReport r;
  REQUIRE(CheckSqliteStore(dir, false, &r).ok());
  CHECK(r.unverified == 3);
  CHECK(r.records == 900);
  CHECK(r.damaged.empty());
}

TEST_CASE("store: the directory is 0700 and store.db, its WAL and shm 0600 under umask 022", "[store][files]") {
  TempDir tmp;
  const mode_t old = umask(022);
  const std::string dir = tmp / "a/st";
  Fill(dir);
  {
    auto st = OpenSqliteStore(dir);  // keeps the WAL and shm open while we look
    REQUIRE(st.ok());
    ScanQuery q;
    q.dataset = dataset::kTrace;
    REQUIRE((*st)->Scan(q, [](const Row&) { return false; }).ok());
    struct stat sb;
    REQUIRE(stat(dir.c_str(), &sb) == 0);
    CHECK((sb.st_mode & 07777) == 0700);
    for (const char* f : {"/store.db", "/store.db-wal", "/store.db-shm"}) {
      INFO(f);
      REQUIRE(stat((dir + f).c_str(), &sb) == 0);
      CHECK((sb.st_mode & 07777) == 0600);
    }
  }
  umask(old);
  // A symbolic link where store.db would be is not followed.
  const std::string evil = tmp / "evil";
  std::filesystem::create_directories(evil);
  std::filesystem::create_symlink(tmp / "target", evil + "/store.db");
  CHECK(!CreatePrivateFile(evil + "/store.db").ok());
  CHECK(!std::filesystem::exists(tmp / "target"));
}
