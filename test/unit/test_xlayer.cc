// The cross-layer view on a small simulated cluster with a slow OST: the
// shares and coverage factors equal the simulator's ground truth; the
// `lfs getstripe` parser on both of its text forms.
#include <catch2/catch.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "core/collector/ingest.h"
#include "core/records/record.h"
#include "core/store/sqlite_store.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/simulate/simulate.h"
#include "test/testutil/testutil.h"
#include "analysis-jobs/xlayer/xlayer.h"

using namespace iosonar;

namespace {

sim::Config SlowOstCluster() {
  sim::Config cfg = sim::Sized(42, 40, 4, 12, 15, 2);
  cfg.faults.slow_ost = 5;
  cfg.faults.storm_job = "1999";
  sim::GenerateJobs(&cfg);
  for (auto& j : cfg.jobs) j.bytes_per_rank_s = 4 << 20;
  return cfg;
}

std::unique_ptr<Store> SimulateInto(const std::string& dir, const sim::Config& cfg, sim::SimResult* res) {
  AppendStats stats;
  auto store = test::StoreFromLines(dir, [&](const auto& sink) { return sim::Simulate(cfg, sink, res); }, &stats);
  CHECK(stats.inserted == res->lines);
  CHECK(stats.duplicates == 0);
  return store;
}

}  // namespace

TEST_CASE("xlayer: the view of the job on a slow OST matches the simulator's ground truth", "[xlayer]") {
  test::TempDir dir;
  const sim::Config cfg = SlowOstCluster();
  sim::SimResult res;
  auto store = SimulateInto(dir.path(), cfg, &res);
  auto maps = xlayer::MapsFromJson(sim::MapsJson(cfg, res));
  REQUIRE(maps.ok());

  size_t checked = 0;
  for (const sim::JobTruth& t : res.jobs) {
    if (!t.ost_bytes.count(cfg.faults.slow_ost)) continue;
    INFO("job " << t.id);
    auto v = xlayer::Analyze(*store, t.id, maps.value());
    REQUIRE(v.ok());
    CHECK(v->window_source == "maps");
    CHECK(v->start_ns == t.start_ns);
    CHECK(v->end_ns == t.end_ns);
    CHECK(v->ost_source == "layouts");
    CHECK(v->job_bytes == t.bytes);
    CHECK(v->job_opens == t.opens);
    CHECK(v->fs_bytes == Approx(static_cast<double>(t.fs_bytes)).epsilon(0));
    CHECK(v->coverage_bytes == Approx(static_cast<double>(t.bytes) / static_cast<double>(t.fs_bytes)).epsilon(1e-12));
    CHECK(v->coverage_opens == Approx(static_cast<double>(t.opens) / static_cast<double>(t.fs_opens)).epsilon(1e-12));
    REQUIRE(v->ost_shares.size() == t.ost_bytes.size());
    bool saw_slow = false;
    for (const auto& s : v->ost_shares) {
      const int o = xlayer::OstIndexOf(s.server);
      REQUIRE(t.ost_bytes.count(o));
      CHECK(s.job_bytes == static_cast<double>(t.ost_bytes.at(o)));
      CHECK(s.total_bytes == static_cast<double>(t.ost_total_bytes.at(o)));
      CHECK(s.share == Approx(static_cast<double>(t.ost_bytes.at(o)) / static_cast<double>(t.ost_total_bytes.at(o))).epsilon(1e-12));
      CHECK_FALSE(s.estimated);
      if (o == cfg.faults.slow_ost) {
        saw_slow = true;
        CHECK(s.in_flight_mean == Approx(4));  // the forwarding nodes' RPCs queue up on it (1 / its 0.25 rate)
      } else {
        CHECK(s.in_flight_mean == Approx(1));
      }
    }
    CHECK(saw_slow);
    // Client bytes, series summed, equal the job's; the forwarding layer sees at least as much.
    CHECK(v->client.TotalBytes() == static_cast<double>(t.bytes));
    CHECK(v->fwd.TotalBytes() >= static_cast<double>(t.bytes));
    double fwd_job = 0;
    for (const auto& s : v->fwd_shares) {
      fwd_job += s.job_bytes;
      CHECK(s.share <= 1.0);
    }
    CHECK(fwd_job == static_cast<double>(t.bytes));
    for (const auto& [f, b] : t.fwd_bytes) {
      auto it = std::find_if(v->fwd_shares.begin(), v->fwd_shares.end(), [&](const auto& s) { return s.server == sim::FwdName(f); });
      REQUIRE(it != v->fwd_shares.end());
      CHECK(it->job_bytes == static_cast<double>(b));
    }
    // Without maps: window from the trace, OSTs from job_stats; the same shares.
    auto bare = xlayer::Analyze(*store, t.id, xlayer::Maps{});
    REQUIRE(bare.ok());
    CHECK(bare->window_source == "trace");
    CHECK(bare->ost_source == "jobstats");
    CHECK(bare->start_ns == t.start_ns);
    REQUIRE(bare->ost_shares.size() == t.ost_bytes.size());
    for (const auto& s : bare->ost_shares) CHECK(s.job_bytes == static_cast<double>(t.ost_bytes.at(xlayer::OstIndexOf(s.server))));
    ++checked;
  }
  CHECK(checked > 0);

  // The storm job: its share of the metadata load and its stats coverage.
  auto storm = std::find_if(res.jobs.begin(), res.jobs.end(), [](const auto& t) { return t.id == "1999"; });
  REQUIRE(storm != res.jobs.end());
  auto v = xlayer::Analyze(*store, "1999", maps.value());
  REQUIRE(v.ok());
  CHECK(v->job_stats == storm->stats);
  CHECK(v->coverage_stats == Approx(static_cast<double>(storm->stats) / static_cast<double>(storm->fs_stats)).epsilon(1e-12));
  CHECK(v->coverage_stats > 0.5);
  REQUIRE_FALSE(v->mdt_shares.empty());
  CHECK(v->mdt_shares[0].share > 0.5);
  CHECK(xlayer::ToJson(*v).find("\"coverage\"") != std::string::npos);
  CHECK(xlayer::ToTable(*v).find("coverage (TOKIO)") != std::string::npos);

  auto none = xlayer::Analyze(*store, "no-such-job", xlayer::Maps{});
  CHECK(none.status().code() == Code::kNotFound);
}

TEST_CASE("xlayer: lfs getstripe text, plain and composite, round trip with the simulator", "[xlayer]") {
  const sim::Config cfg = SlowOstCluster();
  sim::SimResult res;
  REQUIRE(sim::Simulate(cfg, [](std::string_view) { return Status::Ok(); }, &res).ok());
  std::vector<xlayer::ParseIssue> issues;
  auto layouts = xlayer::ParseGetstripe(sim::GetstripeText(res), &issues);
  CHECK(issues.empty());
  REQUIRE(layouts.size() == res.layouts.size());
  for (size_t i = 0; i < layouts.size(); ++i) {
    CHECK(layouts[i].path == res.layouts[i].path);
    CHECK(layouts[i].osts == res.layouts[i].osts);
    CHECK(layouts[i].stripe_size == res.layouts[i].stripe_size);
  }

  // A composite (PFL) layout as Lustre 2.10+ prints it, an uninstantiated
  // component, a directory default (no objects) and a broken obdidx row.
  const std::string pfl =
      "/lustre/scratch/pfl_file\n"
      "  lcm_layout_gen:    3\n"
      "  lcm_mirror_count:  1\n"
      "  lcm_entry_count:   3\n"
      "    lcme_id:             1\n"
      "    lcme_mirror_id:      0\n"
      "    lcme_flags:          init\n"
      "    lcme_extent.e_start: 0\n"
      "    lcme_extent.e_end:   4194304\n"
      "      lmm_stripe_count:  1\n"
      "      lmm_stripe_size:   1048576\n"
      "      lmm_pattern:       raid0\n"
      "      lmm_layout_gen:    0\n"
      "      lmm_stripe_offset: 7\n"
      "      lmm_objects:\n"
      "      - 0: { l_ost_idx: 7, l_fid: [0x100070000:0x2a:0x0] }\n"
      "\n"
      "    lcme_id:             2\n"
      "    lcme_mirror_id:      0\n"
      "    lcme_flags:          init\n"
      "    lcme_extent.e_start: 4194304\n"
      "    lcme_extent.e_end:   EOF\n"
      "      lmm_stripe_count:  2\n"
      "      lmm_stripe_size:   4194304\n"
      "      lmm_pattern:       raid0\n"
      "      lmm_layout_gen:    0\n"
      "      lmm_stripe_offset: 2\n"
      "      lmm_objects:\n"
      "      - 0: { l_ost_idx: 2, l_fid: [0x100020000:0x2b:0x0] }\n"
      "      - 1: { l_ost_idx: 3, l_fid: [0x100030000:0x2b:0x0] }\n"
      "\n"
      "    lcme_id:             3\n"
      "    lcme_flags:          0\n"
      "    lcme_extent.e_start: EOF\n"
      "    lcme_extent.e_end:   EOF\n"
      "      lmm_stripe_count:  4\n"
      "      lmm_stripe_size:   4194304\n"
      "      lmm_pattern:       raid0\n"
      "      lmm_layout_gen:    0\n"
      "      lmm_stripe_offset: -1\n"
      "\n"
      "/lustre/scratch/dir\n"
      "stripe_count:  1 stripe_size:   1048576 pattern:       0 stripe_offset: -1\n"
      "\n"
      "/lustre/scratch/plain\n"
      "lmm_stripe_count:  2\n"
      "lmm_stripe_size:   1048576\n"
      "lmm_pattern:       1\n"
      "lmm_layout_gen:    0\n"
      "lmm_stripe_offset: 10\n"
      "\tobdidx\t\t objid\t\t objid\t\t group\n"
      "\t    10\t       3212\t      0xc8c\t             0\n"
      "\t  oops\t       3213\t      0xc8d\t             0\n"
      "\t    11\t       3214\t      0xc8e\t             0\n";
  issues.clear();
  auto l = xlayer::ParseGetstripe(pfl, &issues);
  REQUIRE(l.size() == 2);
  CHECK(l[0].path == "/lustre/scratch/pfl_file");
  CHECK(l[0].osts == std::vector<int>{7, 2, 3});
  CHECK(l[0].stripe_size == 1048576);
  CHECK(l[1].path == "/lustre/scratch/plain");
  CHECK(l[1].osts == std::vector<int>{10, 11});
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].line == 53);
  CHECK(xlayer::OstIndexOf("simfs-OST000a-osc-ffff880000000001") == 10);
  CHECK(xlayer::OstIndexOf("simfs-MDT0000") == -1);
  CHECK(xlayer::MdtIndexOf("simfs-MDT0001") == 1);
}

TEST_CASE("xlayer: malformed maps JSON is an error naming the place", "[xlayer]") {
  auto m = xlayer::MapsFromJson("{\"jobs\": [ {\"job_id\": 5} ]}");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find("jobs[0]") != std::string::npos);
  auto bad = xlayer::MapsFromJson("{\"jobs\": [");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("offset") != std::string::npos);
}

TEST_CASE("xlayer: a slow forwarding node shows in the forwarding layer of the jobs behind it", "[xlayer]") {
  test::TempDir dir;
  sim::Config cfg = sim::Sized(8, 32, 4, 8, 10);
  cfg.faults.slow_fwd = 1;  // nodes 8-15
  cfg.jobs.push_back(*sim::ParseJobSpec("id=300,mode=N-1,first=4,nodes=8,duration=10,period=1,io=1,bytes=4M"));
  sim::SimResult res;
  auto store = SimulateInto(dir.path(), cfg, &res);
  auto maps = xlayer::MapsFromJson(sim::MapsJson(cfg, res));
  REQUIRE(maps.ok());
  auto v = xlayer::Analyze(*store, "300", maps.value());
  REQUIRE(v.ok());
  REQUIRE(v->fwd_shares.size() == 2);  // nodes 4-7 behind fwd000, 8-11 behind fwd001
  CHECK(v->fwd_shares[0].server == "fwd000");
  CHECK(v->fwd_shares[0].in_flight_mean == Approx(1));
  CHECK(v->fwd_shares[1].server == "fwd001");
  CHECK(v->fwd_shares[1].in_flight_mean == Approx(4));  // 1 / its 0.25 rate
  CHECK(v->fwd_shares[0].job_bytes == static_cast<double>(res.jobs[0].fwd_bytes.at(0)));
  CHECK(v->fwd_shares[1].job_bytes == static_cast<double>(res.jobs[0].fwd_bytes.at(1)));
  CHECK(v->fwd_shares[0].share == Approx(1.0));  // the only job: all the forwarding traffic is its own
}

TEST_CASE("xlayer: a server record counts over the interval ts - elapsed to ts, split over the buckets it overlaps", "[xlayer]") {
  // docs/analysis.md, "Time of server records".
  const int64_t T0 = 1800000000LL * 1000000000LL, S = 1000000000LL, M = 1 << 20;
  auto oss = [&](int seq, int64_t ts, int64_t elapsed, int64_t wb, bool reset) {
    std::string l = "{\"@timestamp\":\"" + FormatIsoMillis(ts) +
                    "\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":1,\"event.seq\":" + std::to_string(seq) +
                    ",\"host.name\":\"oss0\",\"lustre.fs\":\"fs\",\"lustre.target\":\"fs-OST0000\"";
    if (elapsed > 0) l += ",\"lustre.elapsed_ns\":" + std::to_string(elapsed);
    if (reset) l += ",\"lustre.reset\":true";
    else l += ",\"oss.write_bytes\":" + std::to_string(wb) + ",\"oss.write_ops\":1";
    return l + "}";
  };
  std::vector<std::string> lines = {
      oss(1, T0 + 3 * S / 2, S, 2 * M, false),  // [0.5, 1.5): half in bucket 0, half in bucket 1
      oss(2, T0 + 2 * S, S, 0, true),           // reset: no deltas, skipped
      oss(3, T0 + 3 * S, 0, 4 * M, false),      // no elapsed: the bucket just before ts, 2
      oss(4, T0 + 7 * S / 2, S, 8 * M, false),  // [2.5, 3.5): half in bucket 2, half after the window
      oss(5, T0, S, 16 * M, false),             // [-1, 0): before the window
      "{\"@timestamp\":\"" + FormatIsoMillis(T0 + S / 10) +
          "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":2,\"event.seq\":1,\"host.name\":\"n1\",\"job.id\":\"j\","
          "\"process.pid\":5,\"process.rank\":0,\"process.tid\":5,\"io.op\":\"write\",\"io.layer\":\"posix\","
          "\"file.path\":\"/fs/f\",\"file.id\":\"00000000000000aa\",\"io.fd\":3,\"io.offset\":0,\"io.size\":1048576,"
          "\"io.bytes\":1048576,\"io.count\":1,\"io.duration_ns\":100000000,\"event.start_ns\":" +
          std::to_string(T0 + S / 10) + ",\"event.end_ns\":" + std::to_string(T0 + S / 5) + "}",
  };
  test::TempDir dir;
  auto store = OpenSqliteStore(dir.path());
  REQUIRE(store.ok());
  std::vector<std::string> bufs(lines.size());
  std::vector<ParsedRecord> recs(lines.size());
  std::vector<const ParsedRecord*> ptrs;
  for (size_t i = 0; i < lines.size(); ++i) {
    bufs[i] = lines[i] + '\0';
    INFO(lines[i]);
    REQUIRE(ParseRecordInsitu(bufs[i].data(), lines[i].size(), &recs[i]).message() == "");
    ptrs.push_back(&recs[i]);
  }
  AppendStats as;
  REQUIRE(store.value()->Append(ptrs, &as).ok());
  auto maps = xlayer::MapsFromJson("{\"filesystem\":\"fs\",\"jobs\":[{\"job_id\":\"j\",\"start_ns\":" + std::to_string(T0) +
                                   ",\"end_ns\":" + std::to_string(T0 + 3 * S) +
                                   ",\"nodes\":[\"n1\"]}],\"layouts\":[{\"path\":\"/fs/f\",\"osts\":[0]}]}");
  REQUIRE(maps.ok());
  auto v = xlayer::Analyze(*store.value(), "j", maps.value());
  REQUIRE(v.ok());
  CHECK(v->ost.write_bytes == std::vector<double>{1.0 * M, 1.0 * M, 8.0 * M});
  CHECK(v->ost.data_ops == std::vector<double>{0.5, 0.5, 1.5});
  REQUIRE(v->ost_shares.size() == 1);
  CHECK(v->ost_shares[0].total_bytes == 10.0 * M);
  CHECK(v->fs_bytes == 10.0 * M);
  CHECK(v->client.write_bytes == std::vector<double>{1.0 * M, 0, 0});
}
