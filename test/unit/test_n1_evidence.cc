// anomaly's n1_mode evidence (Beacon §4.3): the neighbour's decided I/O mode
// with Beacon's size condition, not "a file touched by two processes".
// Inputs built by hand; the expected answers follow from Beacon's definitions
// ("N-1": all processes share one file; disruptive "particularly when N is
// large (e.g., over 32 compute nodes)").
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "analysis-jobs/anomaly/anomaly.h"

using iosonar::analysis::TraceRun;

namespace {
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kT0 = int64_t{1700000000} * 1000000000;

TraceRun Data(int node, const std::string& op, const std::string& file, int64_t bytes) {
  TraceRun r;
  r.host = "n" + std::to_string(node);
  r.pid = 100;
  r.tid = 100;
  r.op = op;
  r.layer = "posix";
  r.file_path = "/scratch/" + file;
  r.file_id = "id-" + file;
  r.size = kMiB;
  r.count = bytes / kMiB;
  r.bytes = bytes;
  r.start_ns = r.end_ns = kT0;
  return r;
}
}  // namespace

TEST_CASE("n1_mode: an N-N job reading one shared input is not an N-1 interferer", "[anomaly][beacon]") {
  // 64 nodes: each reads the same 1 MiB input file, then writes 64 MiB to its own file.
  std::vector<TraceRun> runs;
  for (int n = 0; n < 64; ++n) {
    runs.push_back(Data(n, "read", "input.nml", kMiB));
    runs.push_back(Data(n, "write", "out." + std::to_string(n), 64 * kMiB));
  }
  // The rule before: a file touched by more than one process -- input.nml is.
  CHECK_FALSE(iosonar::anomaly::N1Evidence(runs, 32).has_value());
}

TEST_CASE("n1_mode: an N-1 job over more than 32 nodes is, a small one is not", "[anomaly][beacon]") {
  auto shared = [](int nodes, const std::string& op) {
    std::vector<TraceRun> runs;
    for (int n = 0; n < nodes; ++n) runs.push_back(Data(n, op, "shared.dat", 16 * kMiB));
    return runs;
  };
  auto w64 = iosonar::anomaly::N1Evidence(shared(64, "write"), 32);
  REQUIRE(w64.has_value());
  CHECK(w64->first == "write N-1 from 64 processes on 64 nodes");
  CHECK(w64->second == 64);
  // AWP's N-1 read of its input (Beacon §4.3) counts as well.
  auto r40 = iosonar::anomaly::N1Evidence(shared(40, "read"), 32);
  REQUIRE(r40.has_value());
  CHECK(r40->first.rfind("read N-1", 0) == 0);
  // Beacon's size condition: over 32 nodes, so 32 are not enough, nor 8.
  CHECK_FALSE(iosonar::anomaly::N1Evidence(shared(32, "write"), 32).has_value());
  CHECK_FALSE(iosonar::anomaly::N1Evidence(shared(8, "write"), 32).has_value());
  CHECK(iosonar::anomaly::N1Evidence(shared(8, "write"), 4).has_value());  // the threshold is an option
  CHECK_FALSE(iosonar::anomaly::N1Evidence({}, 32).has_value());
}
