#include "test/testutil/lmt_fixture.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdio>

namespace iosonar::test {

namespace {

// LMT's tables as its schema declares them (columns untyped, as LMT's SQLite
// databases have them).
constexpr const char* kSchema =
    "CREATE TABLE FILESYSTEM_INFO (FILESYSTEM_ID, FILESYSTEM_NAME, FILESYSTEM_MOUNT_NAME, SCHEMA_VERSION, PRIMARY KEY(FILESYSTEM_ID));"
    "CREATE TABLE OSS_INFO (OSS_ID, FILESYSTEM_ID, HOSTNAME, FAILOVERHOST, PRIMARY KEY(OSS_ID, HOSTNAME));"
    "CREATE TABLE OST_INFO (OST_ID, OSS_ID, OST_NAME, HOSTNAME, OFFLINE, DEVICE_NAME, PRIMARY KEY(OST_ID));"
    "CREATE TABLE MDS_INFO (MDS_ID, FILESYSTEM_ID, MDS_NAME, HOSTNAME, DEVICE_NAME, PRIMARY KEY(MDS_ID));"
    "CREATE TABLE OPERATION_INFO (OPERATION_ID, OPERATION_NAME, UNITS, PRIMARY KEY(OPERATION_ID));"
    "CREATE TABLE TIMESTAMP_INFO (TS_ID, TIMESTAMP, PRIMARY KEY(TS_ID));"
    "CREATE TABLE OST_DATA (OST_ID, TS_ID, READ_BYTES, WRITE_BYTES, PCT_CPU, KBYTES_FREE, KBYTES_USED, INODES_FREE,"
    " INODES_USED, PRIMARY KEY(OST_ID, TS_ID));"
    "CREATE TABLE MDS_DATA (MDS_ID, TS_ID, PCT_CPU, KBYTES_FREE, KBYTES_USED, INODES_FREE, INODES_USED,"
    " PRIMARY KEY(MDS_ID, TS_ID));"
    "CREATE TABLE MDS_OPS_DATA (MDS_ID, TS_ID, OPERATION_ID, SAMPLES, SUM, SUMSQUARES,"
    " PRIMARY KEY(MDS_ID, TS_ID, OPERATION_ID));";

class Db {
 public:
  explicit Db(const std::string& path) {
    std::remove(path.c_str());
    REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
  }
  ~Db() { sqlite3_close(db_); }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    INFO(sql << ": " << (err ? err : ""));
    sqlite3_free(err);
    REQUIRE(rc == SQLITE_OK);
  }
  // One prepared INSERT, run once per call of Row.
  void Insert(const std::string& sql, const std::vector<std::string>& texts, const std::vector<int64_t>& ints) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
    int k = 1;
    for (const auto& i : ints) sqlite3_bind_int64(st, k++, i);
    for (const auto& t : texts) sqlite3_bind_text(st, k++, t.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    INFO(sql);
    REQUIRE(rc == SQLITE_DONE);
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace

void WriteLmtDatabase(const std::string& path, const LmtFixture& f) {
  Db db(path);
  db.Exec(kSchema);
  db.Exec("BEGIN");
  db.Insert("INSERT INTO FILESYSTEM_INFO VALUES(?1, ?2, ?3, '1.1')", {f.fs, "/" + f.fs}, {1});
  for (size_t t = 0; t < f.timestamps.size(); ++t)
    db.Insert("INSERT INTO TIMESTAMP_INFO VALUES(?1, ?2)", {f.timestamps[t]}, {static_cast<int64_t>(t + 1)});
  for (size_t o = 0; o < f.osts.size(); ++o) {
    const auto& ost = f.osts[o];
    const int64_t id = static_cast<int64_t>(o + 1);
    db.Insert("INSERT INTO OSS_INFO VALUES(?1, 1, ?2, '')", {ost.host}, {id});
    db.Insert("INSERT INTO OST_INFO VALUES(?1, ?1, ?2, ?3, 0, '/dev/md1')", {ost.name, ost.host}, {id});
    for (size_t t = 0; t < ost.read_write.size(); ++t)
      db.Insert("INSERT INTO OST_DATA VALUES(?1, ?2, ?3, ?4, 1.5, 1000, 2000, 300, 400)", {},
                {id, static_cast<int64_t>(t + 1), ost.read_write[t].first, ost.read_write[t].second});
  }
  for (size_t m = 0; m < f.mdss.size(); ++m)
    db.Insert("INSERT INTO MDS_INFO VALUES(?1, 1, ?2, ?3, '/dev/md0')", {f.mdss[m].name, f.mdss[m].host},
              {static_cast<int64_t>(m + 1)});
  for (size_t op = 0; op < f.operations.size(); ++op)
    db.Insert("INSERT INTO OPERATION_INFO VALUES(?1, ?2, 'reqs')", {f.operations[op]}, {static_cast<int64_t>(op + 1)});
  for (size_t m = 0; m < f.mds_samples.size(); ++m)
    for (size_t t = 0; t < f.mds_samples[m].size(); ++t)
      for (size_t op = 0; op < f.mds_samples[m][t].size(); ++op)
        db.Insert("INSERT INTO MDS_OPS_DATA VALUES(?1, ?2, ?3, ?4, 0, 0)", {},
                  {static_cast<int64_t>(m + 1), static_cast<int64_t>(t + 1), static_cast<int64_t>(op + 1),
                   f.mds_samples[m][t][op]});
  db.Exec("COMMIT");
}

void WriteNonLmtDatabase(const std::string& path) {
  Db db(path);
  db.Exec("CREATE TABLE jobs (jobid TEXT, user TEXT, start INTEGER); INSERT INTO jobs VALUES ('1', 'alice', 0);");
}

}  // namespace iosonar::test
