// The time convention of server records (docs/analysis.md, "Time of server
// records"): a delta is stamped at its later reading and covers
// [@timestamp - lustre.elapsed_ns, @timestamp). The real Lustre exporter (run
// in-process on a fixture tree it samples twice, on a synthetic clock) and
// the simulator stamp the same interval alike, and the cross-layer view puts
// both in the bucket of that interval, the bucket of the trace runs that
// caused them.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "exporters/framework/exporter.h"
#include "core/collector/ingest.h"
#include "core/store/sqlite_store.h"
#include "core/base/timeutil.h"
#include "test/integration/lustre_driver.h"
#include "test/integration/lustre_fixture.h"
#include "analysis-jobs/simulate/simulate.h"
#include "test/testutil/testutil.h"
#include "analysis-jobs/xlayer/xlayer.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fx = iosonar::test::lustrefx;

namespace iosonar::exporters {
extern const Descriptor kLustreExporter;
}

namespace {

constexpr int64_t kBase = 1700000000LL * 1000000000LL;  // the fixture's first snapshot_time
constexpr int64_t kSec = 1000000000LL;
constexpr int64_t kMiB = 1 << 20;

// The exporter in-process on a synthetic clock (lustre_driver.h).
struct Driver : LustreDriver {
  explicit Driver(std::vector<std::string> args) : LustreDriver(std::move(args), "fwd0") {}
};

std::unique_ptr<Store> StoreOf(const std::string& dir, const std::vector<std::string>& lines) {
  return test::StoreFromLines(dir, [&](const auto& sink) {
    for (const auto& l : lines)
      if (!l.empty())
        if (Status st = sink(l); !st.ok()) return st;
    return Status::Ok();
  });
}

// The @timestamp (epoch ns) of the first line of `dataset` naming `target`.
int64_t StampOf(const std::vector<std::string>& lines, const std::string& dataset, const std::string& target) {
  for (const auto& l : lines) {
    if (l.find("\"event.dataset\":\"" + dataset + "\"") == std::string::npos) continue;
    if (l.find("\"lustre.target\":\"" + target + "\"") == std::string::npos) continue;
    const size_t p = l.find("\"@timestamp\":\"");
    if (p == std::string::npos) continue;
    auto t = ParseIso8601(std::string_view(l).substr(p + 14, 24));
    if (t) return *t;
  }
  return -1;
}

}  // namespace

TEST_CASE("xlayer: a real lustre exporter sample and the simulator put the same second in the same bucket", "[xlayer][lustre]") {
  TempDir d;

  // ---- the real exporter: OST0000, the MDT and the llite mount move during [kBase, kBase + 1 s) ----
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 100, s.osts["fs1-OST0000"].write_bytes = 100 * kMiB;
  s.osts["fs1-OST0001"].write_ops = 50, s.osts["fs1-OST0001"].write_bytes = 50 * kMiB;
  s.mdts["fs1-MDT0000"] = {10, 10, 0, 0, 3};
  s.llite_write_ops = 100, s.llite_write_bytes = 100 * kMiB, s.llite_open = 10;
  fx::Write(root, s, fx::Layout::k215);
  Driver drv({"--proc-root", root});
  drv.Sample();  // tick 0 at kBase: baselines
  s.snapshot_s += 1;
  s.osts["fs1-OST0000"].write_ops += 10, s.osts["fs1-OST0000"].write_bytes += 10 * kMiB;
  s.mdts["fs1-MDT0000"].open += 5, s.mdts["fs1-MDT0000"].close += 5;
  s.llite_write_ops += 10, s.llite_write_bytes += 10 * kMiB;
  fx::Write(root, s, fx::Layout::k215);
  std::vector<std::string> real = SplitLines(drv.Sample());  // tick 1 at kBase + 1 s
  const int64_t real_oss = StampOf(real, "iosonar.oss", "fs1-OST0000");
  REQUIRE(real_oss == kBase + kSec);  // stamped at the later reading, the end of the interval
  // The job's trace: one run of 10 MiB written in that second, from node1 behind fwd0.
  char trace[1024];
  std::snprintf(trace, sizeof trace,
                "{\"@timestamp\":\"%s\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":77,\"event.seq\":1,"
                "\"host.name\":\"node1\",\"job.id\":\"10\",\"process.pid\":5,\"process.rank\":0,\"process.tid\":5,"
                "\"io.op\":\"write\",\"io.layer\":\"posix\",\"file.path\":\"/fs1/out\",\"file.id\":\"00000000000000aa\","
                "\"io.fd\":3,\"io.offset\":0,\"io.size\":1048576,\"io.bytes\":%lld,\"io.count\":10,"
                "\"event.start_ns\":%lld,\"event.end_ns\":%lld,\"io.duration_ns\":500000000}",
                FormatIsoMillis(kBase + 200000000).c_str(), static_cast<long long>(10 * kMiB),
                static_cast<long long>(kBase + 200000000), static_cast<long long>(kBase + 700000000));
  real.push_back(trace);
  auto rstore = StoreOf(d / "real", real);
  char maps_json[512];
  std::snprintf(maps_json, sizeof maps_json,
                "{\"filesystem\":\"fs1\",\"jobs\":[{\"job_id\":\"10\",\"start_ns\":%lld,\"end_ns\":%lld,\"nodes\":[\"node1\"]}],"
                "\"node_forwarding\":{\"node1\":\"fwd0\"},\"layouts\":[{\"path\":\"/fs1/out\",\"osts\":[0],\"mdt\":0}]}",
                static_cast<long long>(kBase), static_cast<long long>(kBase + 2 * kSec));
  auto rmaps = xlayer::MapsFromJson(maps_json);
  REQUIRE(rmaps.ok());
  auto rv = xlayer::Analyze(*rstore, "10", rmaps.value());
  REQUIRE(rv.ok());
  REQUIRE(rv->client.write_bytes.size() == 2);
  CHECK(rv->client.write_bytes == std::vector<double>{10.0 * kMiB, 0});
  CHECK(rv->ost.write_bytes == std::vector<double>{10.0 * kMiB, 0});  // not in bucket 1, where it is stamped
  CHECK(rv->fwd.write_bytes == std::vector<double>{10.0 * kMiB, 0});
  CHECK(rv->mdt.meta_ops[0] >= 10);
  CHECK(rv->mdt.meta_ops[1] == 0);
  REQUIRE(rv->ost_shares.size() == 1);
  CHECK(rv->ost_shares[0].total_bytes == 10.0 * kMiB);
  CHECK(rv->ost_shares[0].share == Approx(1.0));
  CHECK(rv->fs_bytes == 10.0 * kMiB);  // OST0001 did not move
  CHECK(rv->coverage_bytes == Approx(1.0));

  // ---- the simulator: the same two seconds, I/O in the first only, no background load ----
  sim::Config cfg = sim::Sized(3, 4, 1, 2, 2);
  cfg.start_ns = kBase;
  cfg.background_bytes_per_ost_s = 0;
  cfg.background_meta_per_mdt_s = 0;
  auto spec = sim::ParseJobSpec("id=7,mode=N-N,first=0,nodes=4,duration=2,period=2,io=1,bytes=4M");
  REQUIRE(spec.ok());
  cfg.jobs.push_back(*spec);
  std::vector<std::string> simulated;
  sim::SimResult res;
  REQUIRE(sim::Simulate(cfg, [&](std::string_view l) {
            simulated.emplace_back(l);
            return Status::Ok();
          }, &res).ok());
  // Second 0's OSS record is stamped as the exporter stamps the same interval.
  CHECK(StampOf(simulated, "iosonar.oss", "simfs-OST0000") == real_oss);
  auto sstore = StoreOf(d / "sim", simulated);
  auto smaps = xlayer::MapsFromJson(sim::MapsJson(cfg, res));
  REQUIRE(smaps.ok());
  auto sv = xlayer::Analyze(*sstore, "7", smaps.value());
  REQUIRE(sv.ok());
  REQUIRE(sv->client.write_bytes.size() == 2);
  CHECK(sv->client.write_bytes[0] == static_cast<double>(res.jobs[0].bytes));
  CHECK(sv->client.write_bytes[0] > 0);
  CHECK(sv->client.write_bytes[1] == 0);
  // Every layer in the bucket of the trace runs: the job is alone on the file system.
  CHECK(sv->ost.write_bytes == sv->client.write_bytes);
  CHECK(sv->fwd.write_bytes == sv->client.write_bytes);
  CHECK(sv->mdt.meta_ops == sv->client.meta_ops);  // opens in second 0, closes in second 1
  CHECK(sv->client.meta_ops[0] > 0);
  CHECK(sv->client.meta_ops[1] > 0);
  CHECK(sv->coverage_bytes == Approx(1.0));
  CHECK(sv->coverage_opens == Approx(1.0));
}
