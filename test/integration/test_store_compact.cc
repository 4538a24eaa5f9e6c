// `iosonar store-compact`: Beacon's second pass applied to the store. The
// analyses' outputs (job summary and I/O mode, phases, anomaly, LASSi,
// scoreboard, summarize-job, cross-layer view, compress2) and the exported
// records are byte-identical before and after; a compaction killed in the
// middle of a transaction loses nothing; the files stay 0600.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

// Every analysis output of the simulated day, in one string (stdout only:
// xlayer prints its timing on stderr).
std::string Outputs(const std::string& store) {
  const std::vector<std::vector<std::string>> cmds = {
      {"job-summary", "1000", "--format", "json"},
      {"job-summary", "1001", "--format", "json"},
      {"job-summary", "1002", "--format", "json"},
      {"job-summary", "1003", "--format", "json"},
      {"job-summary", "1999", "--format", "json"},
      {"phases", "1000", "--format", "json"},
      {"phases", "1001", "--format", "json"},
      {"anomaly", "1000"},
      {"anomaly", "1002"},
      {"lassi", "--day", "2026-11-22"},
      {"scoreboard", "--format", "json"},
      {"summarize-job", "1000", "1001", "1002", "1003", "1999", "--format", "json"},
      {"xlayer", "1001"},
      {"compress2", "1000"},
      {"store-export", "--dataset", "iosonar.trace"},
  };
  std::string all;
  for (auto argv : cmds) {
    argv.insert(argv.begin(), IosonarBin());
    argv.push_back("--store");
    argv.push_back(store);
    const auto r = Run(argv);
    INFO(argv[1] << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.size() > 2);
    all += "== " + argv[1] + "\n" + r.out;
  }
  return all;
}

std::string Json(const std::string& out, const std::string& key) {
  const auto at = out.find("\"" + key + "\": ");
  if (at == std::string::npos) return "";
  const auto from = at + key.size() + 4;
  return out.substr(from, out.find_first_of(",\n}", from) - from);
}

int Mode(const std::string& path) {
  struct stat sb;
  return stat(path.c_str(), &sb) == 0 ? static_cast<int>(sb.st_mode & 0777) : -1;
}

}  // namespace

TEST_CASE("store-compact: every analysis reads the same before and after, on 1,024 nodes", "[store-compact]") {
  TempDir tmp;
  const std::string store = tmp / "st";
  // Five jobs over 1,024 nodes (N-N, N-1, N-M, 1-1 and a metadata storm), ranks not in lockstep.
  auto sim = Run({IosonarBin(), "simulate", "--store", store, "--seed", "4", "--nodes", "1024", "--duration", "60",
                  "--variability", "0.3", "--storm"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const std::string before = Outputs(store);

  auto c = Run({IosonarBin(), "store-compact", "--store", store, "--format", "json"});
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);
  const auto blocks = std::stoll(Json(c.out, "blocks"));
  CHECK(blocks > 10);
  CHECK(Json(c.out, "merged_blocks") == Json(c.out, "blocks"));
  CHECK(Json(c.out, "kept_blocks") == "0");
  const double per_before = std::stod(Json(c.out, "bytes_per_record_before"));
  const double per_after = std::stod(Json(c.out, "bytes_per_record_after"));
  // The stored bytes per trace record fall by at least Beacon's lower
  // lossless ratio (2.1x): what the first pass repeats per rank is kept once.
  CHECK(per_after * 2.1 < per_before);
  CHECK(std::stoll(Json(c.out, "bytes_after")) < std::stoll(Json(c.out, "bytes_before")));

  const std::string after = Outputs(store);
  CHECK(after == before);  // byte for byte, every analysis and every record

  // store-check verifies the merged blocks (checksum, then a full decode).
  auto check = Run({IosonarBin(), "store-check", "--store", store, "--format", "json"});
  INFO(check.out);
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("\"damaged\": []") != std::string::npos);

  // A second run finds nothing left; --vacuum shrinks the file; modes stay 0600.
  auto again = Run({IosonarBin(), "store-compact", "--store", store, "--vacuum", "--format", "json"});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(Json(again.out, "merged_blocks") == "0");
  CHECK(Json(again.out, "already_merged") == std::to_string(blocks));
  CHECK(std::stoll(Json(again.out, "file_bytes_after")) < std::stoll(Json(again.out, "file_bytes_before")));
  CHECK(Mode(store + "/store.db") == 0600);
  for (const char* side : {"-wal", "-shm"}) {
    const int m = Mode(store + "/store.db" + side);
    if (m >= 0) CHECK(m == 0600);
  }
  CHECK(Mode(store) == 0700);
  CHECK(Outputs(store) == before);

  // A collector appending to the compacted store: new first-pass blocks beside merged ones.
  auto more = Run({IosonarBin(), "simulate", "--store", store, "--seed", "5", "--nodes", "64", "--duration", "10",
                   "--job", "id=3001,mode=N-1,first=0,nodes=64,ppn=2"});
  REQUIRE(more.exit_code == 0);
  auto s3001 = Run({IosonarBin(), "job-summary", "3001", "--store", store, "--format", "json"});
  CHECK(s3001.exit_code == 0);
  auto s1000 = Run({IosonarBin(), "job-summary", "1000", "--store", store, "--format", "json"});
  CHECK(s1000.exit_code == 0);
  CHECK(before.find("== job-summary\n" + s1000.out) == 0);  // job 1000's summary comes first
}

TEST_CASE("store-compact: killed inside a transaction, nothing is lost, and run again it finishes", "[store-compact]") {
  TempDir tmp;
  const std::string store = tmp / "st";
  auto sim = Run({IosonarBin(), "simulate", "--store", store, "--seed", "9", "--nodes", "1024", "--duration", "40", "--storm"});
  REQUIRE(sim.exit_code == 0);
  const std::string before = Outputs(store);

  // Two blocks a transaction; SIGKILL after the 5th block: two transactions
  // committed, the third (block 5) not.
  auto killed = Run({IosonarBin(), "store-compact", "--store", store, "--blocks-per-transaction", "2"},
                    {{"IOSONAR_TEST_COMPACT_KILL_AFTER", "4"}});
  CHECK(killed.exit_code == -1);
  CHECK(killed.signal == 9);
  CHECK(Mode(store + "/store.db") == 0600);

  auto check = Run({IosonarBin(), "store-check", "--store", store});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("no damaged block") != std::string::npos);
  CHECK(Outputs(store) == before);

  auto dry = Run({IosonarBin(), "store-compact", "--store", store, "--dry-run", "--format", "json"});
  INFO(dry.out);
  CHECK(Json(dry.out, "already_merged") == "4");

  auto rest = Run({IosonarBin(), "store-compact", "--store", store, "--format", "json"});
  INFO(rest.out << rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(Json(rest.out, "already_merged") == "4");
  CHECK(std::stoll(Json(rest.out, "merged_blocks")) > 0);
  CHECK(Outputs(store) == before);
  CHECK(Mode(store + "/store.db") == 0600);
}

TEST_CASE("store-compact: options are checked, a missing store is named", "[store-compact]") {
  TempDir tmp;
  auto none = Run({IosonarBin(), "store-compact", "--store", tmp / "none"});
  CHECK(none.exit_code == 1);
  CHECK(none.err.find("no store.db in " + (tmp / "none")) != std::string::npos);
  CHECK(Run({IosonarBin(), "store-compact"}).exit_code == 2);
  auto bad_time = Run({IosonarBin(), "store-compact", "--store", tmp / "none", "--before", "yesterday"});
  CHECK(bad_time.exit_code == 2);
  CHECK(bad_time.err.find("'yesterday' is not an ISO 8601 time") != std::string::npos);
  CHECK(Run({IosonarBin(), "store-compact", "--store", tmp / "none", "--blocks-per-transaction", "0"}).exit_code == 2);

  // --before: only blocks wholly before the time are merged.
  const std::string store = tmp / "st";
  REQUIRE(Run({IosonarBin(), "simulate", "--store", store, "--seed", "2", "--nodes", "64", "--duration", "30"}).exit_code == 0);
  auto early = Run({IosonarBin(), "store-compact", "--store", store, "--before", "2026-11-22T00:00:00Z", "--format", "json"});
  REQUIRE(early.exit_code == 0);
  CHECK(Json(early.out, "blocks") == "0");
  auto late = Run({IosonarBin(), "store-compact", "--store", store, "--before", "2026-11-23T00:00:00Z", "--format", "json"});
  REQUIRE(late.exit_code == 0);
  CHECK(std::stoll(Json(late.out, "merged_blocks")) > 0);
}
