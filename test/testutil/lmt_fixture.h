// A small LMT (Lustre Monitoring Tool) database written by the test, for the
// LMT importer: the tables and columns LMT's schema has (TIMESTAMP_INFO,
// FILESYSTEM_INFO, OSS/OST/MDS_INFO, OPERATION_INFO, OST_DATA, MDS_OPS_DATA,
// ...), filled from a description, so no binary database is kept in the
// repository. Timestamps are LMT's local time, "YYYY-MM-DD HH:MM:SS".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace iosonar::test {

struct LmtFixture {
  std::string fs = "lmtfix";
  std::vector<std::string> timestamps;  // TS_ID 1, 2, ... in order
  struct Ost {
    std::string name, host;
    std::vector<std::pair<int64_t, int64_t>> read_write;  // cumulative READ_BYTES, WRITE_BYTES per timestamp
  };
  std::vector<Ost> osts;
  struct Mds {
    std::string name, host;
  };
  std::vector<Mds> mdss;
  std::vector<std::string> operations;  // OPERATION_INFO names (OPERATION_ID 1, 2, ...)
  // MDS_OPS_DATA: per MDS, per timestamp, per operation, the cumulative SAMPLES.
  std::vector<std::vector<std::vector<int64_t>>> mds_samples;
};

// Writes the database at `path` (FAILs the test on an SQLite error).
void WriteLmtDatabase(const std::string& path, const LmtFixture& f);

// A database that is SQLite but not LMT's (for the importer's error).
void WriteNonLmtDatabase(const std::string& path);

}  // namespace iosonar::test
