// `iosonar store-check` and the commands on a store with a damaged block: the
// damage is named with its range, the rest reads, --repair moves it aside.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <string>

#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {
void FlipFirstByteOfBiggestBlock(const std::string& db_path, int64_t* id) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT id FROM blocks WHERE dataset = 'iosonar.trace' AND job_id = '1000' ORDER BY n DESC LIMIT 1",
                             -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  *id = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_blob* blob = nullptr;
  REQUIRE(sqlite3_blob_open(db, "main", "blocks", "data", *id, 1, &blob) == SQLITE_OK);
  unsigned char b = 0;
  REQUIRE(sqlite3_blob_read(blob, &b, 1, 20) == SQLITE_OK);
  b ^= 0x10;
  REQUIRE(sqlite3_blob_write(blob, &b, 1, 20) == SQLITE_OK);
  sqlite3_blob_close(blob);
  sqlite3_close(db);
}
}  // namespace

TEST_CASE("store-check: a damaged block is named, job-summary of other jobs is unchanged, --repair moves it aside",
          "[store-check]") {
  TempDir tmp;
  const std::string store = tmp / "st";
  auto sim = Run({IosonarBin(), "simulate", "--store", store, "--seed", "3", "--duration", "60", "--nodes", "16",
                  "--fwd", "2", "--osts", "4", "--mdts", "1"});
  REQUIRE(sim.exit_code == 0);
  auto clean = Run({IosonarBin(), "store-check", "--store", store});
  INFO(clean.out << clean.err);
  CHECK(clean.exit_code == 0);
  CHECK(clean.out.find("no damaged block") != std::string::npos);
  const auto other_before = Run({IosonarBin(), "job-summary", "1001", "--store", store, "--format", "json"});
  REQUIRE(other_before.exit_code == 0);

  int64_t id = 0;
  FlipFirstByteOfBiggestBlock(store + "/store.db", &id);
  auto bad = Run({IosonarBin(), "store-check", "--store", store, "--format", "json"});
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find("\"block\": " + std::to_string(id)) != std::string::npos);
  CHECK(bad.out.find("\"reason\": \"checksum mismatch\"") != std::string::npos);
  CHECK(bad.out.find("\"job\": \"1000\"") != std::string::npos);

  // Another job's summary is byte-identical; the damaged job's summary says on stderr what it missed.
  const auto other_after = Run({IosonarBin(), "job-summary", "1001", "--store", store, "--format", "json"});
  CHECK(other_after.exit_code == 0);
  CHECK(other_after.out == other_before.out);
  // (Job 1000's trace fits in that one block: its summary finds no trace, and says why just before.)
  const auto damaged = Run({IosonarBin(), "job-summary", "1000", "--store", store, "--format", "json"});
  CHECK(damaged.err.find("block " + std::to_string(id) + " (iosonar.trace, job 1000, ") != std::string::npos);
  CHECK(damaged.err.find("is damaged: checksum mismatch; skipped") != std::string::npos);

  auto fix = Run({IosonarBin(), "store-check", "--store", store, "--repair"});
  INFO(fix.out << fix.err);
  CHECK(fix.exit_code == 0);
  CHECK(fix.out.find("1 damaged block(s) moved to damaged_blocks") != std::string::npos);
  auto again = Run({IosonarBin(), "store-check", "--store", store});
  CHECK(again.exit_code == 0);
  CHECK(Run({IosonarBin(), "store-check", "--store", tmp / "none"}).exit_code == 1);
  CHECK(Run({IosonarBin(), "store-check"}).exit_code == 2);
}
