// `iosonar lustre` end to end on fixture trees the test writes and advances
// between samples (2.10 and 2.15 layouts): deltas, rates, a reset, targets
// that appear and vanish, job_stats, brw_stats and client files, through
// `iosonar collect --from-file` into the store; bad input never stops it.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "exporters/framework/exporter.h"
#include "core/records/record.h"
#include "core/store/store.h"
#include "test/integration/lustre_driver.h"
#include "test/integration/lustre_fixture.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fx = iosonar::test::lustrefx;

namespace iosonar::exporters {
extern const Descriptor kLustreExporter;
}

namespace {

constexpr int64_t kBase = 1700000000LL * 1000000000LL;
constexpr int64_t kSec = 1000000000LL;
constexpr uint64_t kMiB = 1 << 20;

// The exporter in-process on a synthetic clock (lustre_driver.h).
struct Driver : LustreDriver {
  explicit Driver(std::vector<std::string> args) : LustreDriver(std::move(args), "testhost") {}
};

// Every line must pass the collector's schema validation.
void CheckValid(const std::string& lines) {
  for (auto& l : SplitLines(lines)) {
    if (l.empty()) continue;
    std::string buf = l;
    buf.push_back('\0');
    ParsedRecord rec;
    Status s = ParseRecordInsitu(buf.data(), l.size(), &rec);
    INFO(l);
    REQUIRE(s.ok());
  }
}

size_t Count(const std::string& lines, const std::string& needle) {
  size_t n = 0;
  for (auto p = lines.find(needle); p != std::string::npos; p = lines.find(needle, p + 1)) ++n;
  return n;
}

using Values = std::map<std::string, double>;
// (tick, key) -> field values, read back from the store.
std::map<std::pair<int, std::string>, Values> ScanStore(Store& st, DatasetId dataset, const std::vector<FieldId>& fields,
                                                       FieldId key_field) {
  std::map<std::pair<int, std::string>, Values> out;
  ScanQuery q;
  q.dataset = dataset;
  q.fields = {field::kTimestamp, key_field};
  for (auto& f : fields) q.fields.push_back(f);
  Status s = st.Scan(q, [&](const Row& r) {
    int tick = static_cast<int>((r.Int(0) - kBase) / kSec);
    Values v;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!r.Has(i + 2)) continue;
      const schema::Field& f = schema::FieldOf(fields[i]);
      v[std::string(f.name)] = f.type == schema::Type::kDouble ? r.Double(i + 2) : static_cast<double>(r.Int(i + 2));
    }
    std::string key(r.Str(1));
    if (out.count({tick, key})) key += "#2";
    out[{tick, key}] = v;
    return true;
  });
  REQUIRE(s.ok());
  return out;
}

void Scenario(fx::Layout layout) {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  auto& o0 = s.osts["fs1-OST0000"];
  o0 = {};
  o0.write_ops = 100, o0.write_bytes = 100 * kMiB, o0.read_ops = 10, o0.read_bytes = 40960, o0.punch = 1, o0.destroy = 1;
  o0.statfs_a = 5, o0.statfs_b = 7, o0.preprw = 110, o0.commitrw = 110, o0.ping = 3;
  o0.pages = {{1, {3, 0}}, {256, {10, 100}}};
  auto& o1 = s.osts["fs1-OST0001"];
  o1.write_ops = 50, o1.write_bytes = 50 * kMiB, o1.statfs_a = 2, o1.ping = 1;
  o1.pages = {{256, {0, 50}}};
  s.mdts["fs1-MDT0000"] = {10, 10, 0, 0, 3};
  s.jobs["fs1-OST0000"]["SLURM_JOB10:0:node1"] = {0, 0, 60, 60 * kMiB, 0, 0, 0};
  s.jobs["fs1-OST0000"]["dd.0"] = {0, 0, 40, 40 * kMiB, 1, 0, 0};
  s.jobs["fs1-MDT0000"]["SLURM_JOB10:0:node1"] = {0, 0, 0, 0, 0, 10, 10};
  s.llite_write_ops = 100, s.llite_write_bytes = 100 * kMiB, s.llite_open = 10;
  s.osc_write_rpcs_256 = 100, s.osc_write_inflight_2 = 100;
  fx::Write(root, s, layout);

  Driver drv({"--proc-root", root});
  // tick 0: baselines only.
  std::string t0 = drv.Sample();
  CHECK(Count(t0, "\"event.dataset\":\"iosonar.oss\"") == 0);
  CHECK(Count(t0, "\"sampler.source\":\"oss\"") == 1);

  // tick 1: everything advances by one second of activity.
  s.snapshot_s += 1;
  o0.write_ops += 10, o0.write_bytes += 10 * kMiB, o0.read_ops += 2, o0.read_bytes += 8192;
  o0.punch += 1, o0.destroy += 1, o0.statfs_a += 1, o0.statfs_b += 2, o0.preprw += 12, o0.commitrw += 12;
  o0.pages[256].second += 10;
  s.mdts["fs1-MDT0000"].open += 5, s.mdts["fs1-MDT0000"].close += 5, s.mdts["fs1-MDT0000"].mkdir += 1;
  s.jobs["fs1-OST0000"]["SLURM_JOB10:0:node1"].write_ops += 4;
  s.jobs["fs1-OST0000"]["SLURM_JOB10:0:node1"].write_bytes += 4 * kMiB;
  s.jobs["fs1-OST0000"]["cp.1"] = {0, 0, 2, 8192, 0, 0, 0};  // a job that appeared
  s.jobs["fs1-MDT0000"]["SLURM_JOB10:0:node1"].open += 5, s.jobs["fs1-MDT0000"]["SLURM_JOB10:0:node1"].close += 5;
  s.llite_write_ops += 10, s.llite_write_bytes += 10 * kMiB;
  s.osc_write_rpcs_256 += 10, s.osc_write_inflight_2 += 10;
  fx::Write(root, s, layout);
  std::string t1 = drv.Sample();
  CHECK(Count(t1, "\"event.dataset\":\"iosonar.jobstats\"") == 3);  // dd.0 did not change
  CHECK(Count(t1, "\"job.id\":\"dd.0\"") == 0);

  // tick 2: OST0001's counters go down (restart), OST0002 appears.
  s.snapshot_s += 1;
  o1.write_ops = 3, o1.write_bytes = 3 * kMiB;
  o1.pages = {{256, {0, 3}}};
  s.osts["fs1-OST0002"].write_ops = 1000;
  s.osts["fs1-OST0002"].write_bytes = 1000 * kMiB;
  o0.write_ops += 1, o0.write_bytes += kMiB;
  s.jobs["fs1-OST0000"].erase("SLURM_JOB10:0:node1");  // cleaned up by Lustre
  fx::Write(root, s, layout);
  drv.Sample();

  // tick 3: OST0001 vanishes, OST0002 writes.
  s.snapshot_s += 1;
  s.osts.erase("fs1-OST0001");
  fx::RemoveTarget(root, "fs1-OST0001");
  s.osts["fs1-OST0002"].write_ops += 5;
  s.osts["fs1-OST0002"].write_bytes += 5 * kMiB;
  fx::Write(root, s, layout);
  std::string t3 = drv.Sample();
  CHECK(Count(t3, "fs1-OST0001") == 0);

  CheckValid(drv.all());
  CHECK(Count(drv.all(), "\"sampler.warnings\":0") == Count(drv.all(), "\"event.dataset\":\"iosonar.sampler\""));

  // Into the store with the real collector.
  WriteFile(d / "lines.jsonl", drv.all());
  auto r = Run({IosonarBin(), "collect", "--store", d / "store", "--from-file", d / "lines.jsonl"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto st = OpenSqliteStore(d / "store");
  REQUIRE(st.ok());
  Store& store = **st;

  auto oss = ScanStore(store, dataset::kOss,
                       {field::kLustreElapsedNs, field::kLustreReset, field::kOssWriteBytes, field::kOssWriteOps,
                        field::kOssReadBytes, field::kOssReadOps, field::kOssStatfs, field::kOssPunch, field::kOssOtherOps,
                        field::kOssWriteBytesPerS, field::kLustreJobsActive},
                       field::kLustreTarget);
  REQUIRE(oss.count({1, "fs1-OST0000"}));
  Values a = oss[{1, "fs1-OST0000"}];
  CHECK(a["lustre.elapsed_ns"] == kSec);  // from snapshot_time
  CHECK(a["oss.write_bytes"] == 10 * kMiB);
  CHECK(a["oss.write_ops"] == 10);
  CHECK(a["oss.read_bytes"] == 8192);
  CHECK(a["oss.read_ops"] == 2);
  CHECK(a["oss.punch"] == 1);
  CHECK(a["oss.statfs"] == (layout == fx::Layout::k210 ? 3 : 1));  // 2.10's two statfs lines are summed
  CHECK(a["oss.other_ops"] == (layout == fx::Layout::k210 ? 26 : 2));  // punch+destroy (+preprw+commitrw)
  CHECK(a["oss.write_bytes_per_s"] == Approx(10.0 * kMiB));
  CHECK(a["lustre.jobs_active"] == 2);
  CHECK(a.count("lustre.reset") == 0);
  REQUIRE(oss.count({1, "fs1-OST0001"}));
  CHECK(oss[{1, "fs1-OST0001"}]["oss.write_ops"] == 0);
  // The reset: flagged, no deltas, never negative.
  REQUIRE(oss.count({2, "fs1-OST0001"}));
  CHECK(oss[{2, "fs1-OST0001"}]["lustre.reset"] == 1);
  CHECK(oss[{2, "fs1-OST0001"}].count("oss.write_ops") == 0);
  CHECK(oss[{2, "fs1-OST0000"}]["oss.write_bytes"] == kMiB);
  CHECK(oss.count({2, "fs1-OST0002"}) == 0);  // appeared: baseline
  CHECK(oss.count({3, "fs1-OST0001"}) == 0);  // vanished
  REQUIRE(oss.count({3, "fs1-OST0002"}));
  CHECK(oss[{3, "fs1-OST0002"}]["oss.write_ops"] == 5);
  CHECK(oss[{3, "fs1-OST0002"}]["oss.write_bytes"] == 5 * kMiB);
  for (auto& [k, v] : oss)
    for (auto& [f, x] : v) CHECK(x >= 0);

  auto mds = ScanStore(store, dataset::kMds,
                       {field::kMdsOpen, field::kMdsClose, field::kMdsMkdir, field::kMdsOps,
                        field::kMdsOpsPerS}, field::kLustreTarget);
  REQUIRE(mds.count({1, "fs1-MDT0000"}));
  Values m = mds[{1, "fs1-MDT0000"}];
  CHECK(m["mds.open"] == 5);
  CHECK(m["mds.close"] == 5);
  CHECK(m["mds.mkdir"] == 1);  // a counter that appears counts from 0
  CHECK(m["mds.ops"] == 11);
  CHECK(m["mds.ops_per_s"] == Approx(11));

  auto jobs = ScanStore(store, dataset::kJobstats,
                        {field::kOssWriteBytes, field::kOssWriteOps, field::kMdsOpen, field::kMdsOps,
                         field::kLustreElapsedNs}, field::kJobId);
  REQUIRE(jobs.count({1, "SLURM_JOB10:0:node1"}));
  REQUIRE(jobs.count({1, "SLURM_JOB10:0:node1#2"}));
  REQUIRE(jobs.count({1, "cp.1"}));
  CHECK(jobs[{1, "cp.1"}]["oss.write_ops"] == 2);  // counted from zero
  CHECK(jobs[{1, "cp.1"}]["oss.write_bytes"] == 8192);
  // One record from the OST, one from the MDT (scan order by target is not promised).
  Values j1 = jobs[{1, "SLURM_JOB10:0:node1"}], j2 = jobs[{1, "SLURM_JOB10:0:node1#2"}];
  if (j1.count("mds.open")) std::swap(j1, j2);
  CHECK(j1["oss.write_ops"] == 4);
  CHECK(j1["oss.write_bytes"] == 4 * kMiB);
  CHECK(j2["mds.open"] == 5);
  CHECK(j2["mds.ops"] == 10);
  CHECK(jobs.count({1, "dd.0"}) == 0);

  auto brw = ScanStore(store, dataset::kBrw, {field::kBrwBucket, field::kBrwRead, field::kBrwWrite},
                       field::kLustreTarget);
  REQUIRE(brw.count({1, "fs1-OST0000"}));
  CHECK(brw[{1, "fs1-OST0000"}]["brw.bucket"] == 256);
  CHECK(brw[{1, "fs1-OST0000"}]["brw.write"] == 10);
  CHECK(brw[{1, "fs1-OST0000"}]["brw.read"] == 0);
  CHECK(brw.count({2, "fs1-OST0001"}) == 0);  // reset: nothing

  auto cl = ScanStore(store, dataset::kClient,
                      {field::kClientWriteBytes, field::kClientWriteOps, field::kClientRpcWrites,
                       field::kClientRpcWritePagesMean,
                       field::kClientRpcWriteInFlightMean, field::kClientWriteInFlight, field::kClientPendingWritePages},
                      field::kLustreTarget);
  REQUIRE(cl.count({1, "fs1-ffff0000deadbeef"}));
  CHECK(cl[{1, "fs1-ffff0000deadbeef"}]["client.write_bytes"] == 10 * kMiB);
  CHECK(cl[{1, "fs1-ffff0000deadbeef"}]["client.write_ops"] == 10);
  REQUIRE(cl.count({1, "fs1-OST0000-osc-ffff0000deadbeef"}));
  Values c = cl[{1, "fs1-OST0000-osc-ffff0000deadbeef"}];
  CHECK(c["client.rpc_writes"] == 10);
  CHECK(c["client.rpc_write_pages_mean"] == Approx(256));
  CHECK(c["client.rpc_write_in_flight_mean"] == Approx(2));
  CHECK(c["client.write_in_flight"] == 3);
  CHECK(c["client.pending_write_pages"] == 17);
}

}  // namespace

TEST_CASE("lustre exporter: deltas, reset, targets that come and go, into the store (2.10 layout)", "[lustre]") {
  Scenario(fx::Layout::k210);
}

TEST_CASE("lustre exporter: deltas, reset, targets that come and go, into the store (2.15 layout)", "[lustre]") {
  Scenario(fx::Layout::k215);
}

TEST_CASE("lustre exporter: bad input is warned about per source and never stops the others", "[lustre]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.osts["fs1-OST0000"].write_bytes = 10 * kMiB;
  s.osts["fs1-OST0001"].write_ops = 10;
  s.mdts["fs1-MDT0000"].open = 1;
  fx::Write(root, s, fx::Layout::k210);
  Driver drv({"--proc-root", root, "--max-file-size", "64K"});
  drv.Sample();

  s.snapshot_s += 1;
  s.osts["fs1-OST0000"].write_ops += 7;
  s.osts["fs1-OST0000"].write_bytes += 7 * kMiB;
  s.osts["fs1-OST0000"].extra = "mystery_op                5 samples [reqs]\nthis is not a counter\nping x samples [reqs]\n";
  s.mdts["fs1-MDT0000"].open += 2;
  fx::Write(root, s, fx::Layout::k210);
  const std::string proc = root + "/proc/fs/lustre";
  // OST0001: truncated mid-line, garbled bytes; its job_stats: garbage; MDT job_stats: empty.
  fx::Put(proc + "/obdfilter/fs1-OST0001/stats", "snapshot_time 1700000001.1 secs.nsecs\nwrite_bytes 12 sam\xff\xfe\x01");
  fx::Put(proc + "/obdfilter/fs1-OST0001/job_stats", "job_stats:\n- job_id: \n  open: { samples: 1 }\n- job_id: x\n  write_bytes: { samples: 1\n{{{{\n");
  fx::Put(proc + "/mdt/fs1-MDT0000/job_stats", "");
  // A huge file where the llite stats are.
  fx::Put(proc + "/llite/fs1-ffff0000deadbeef/stats", std::string(200000, 'x'));
  std::string t1 = drv.Sample();
  CheckValid(t1);
  INFO(t1);
  // OST0000 still gives its right deltas, plus the unknown op.
  CHECK(t1.find("\"lustre.target\":\"fs1-OST0000\",\"lustre.elapsed_ns\":1000000000,\"oss.read_bytes\":0,\"oss.read_ops\":0") !=
        std::string::npos);
  CHECK(t1.find("\"oss.write_ops\":7") != std::string::npos);
  CHECK(t1.find("\"oss.unknown_ops\":5") != std::string::npos);
  CHECK(t1.find("\"mds.open\":2") != std::string::npos);
  // Warnings counted on their sources; the oversized file fails the client source only.
  CHECK(t1.find("\"sampler.source\":\"oss\",\"sampler.ok\":true") != std::string::npos);
  CHECK(t1.find("\"sampler.source\":\"jobstats\",\"sampler.ok\":true") != std::string::npos);
  CHECK(t1.find("\"sampler.source\":\"client\",\"sampler.ok\":false") != std::string::npos);
  CHECK(t1.find("larger than 65536 bytes") != std::string::npos);
  auto warnings_of = [&](const std::string& src) {
    auto p = t1.find("\"sampler.source\":\"" + src + "\"");
    REQUIRE(p != std::string::npos);
    auto w = t1.find("\"sampler.warnings\":", p);
    return std::stoi(t1.substr(w + 19));
  };
  CHECK(warnings_of("oss") >= 4);  // mystery_op (once), the two bad lines, the truncated line
  CHECK(warnings_of("jobstats") >= 3);  // empty id, unclosed brace, no colon
  CHECK(warnings_of("mds") == 0);
  // OST0001's damaged reading is set aside: no record (not a reset, not zeros).
  CHECK(t1.find("fs1-OST0001\"") == std::string::npos);

  // The unknown op is warned about once only.
  s.snapshot_s += 1;
  s.osts["fs1-OST0000"].extra = "mystery_op                9 samples [reqs]\n";
  fx::Write(root, s, fx::Layout::k210);
  std::string t2 = drv.Sample();
  CHECK(t2.find("\"oss.unknown_ops\":4") != std::string::npos);
  CHECK(t2.find("\"sampler.source\":\"oss\",\"sampler.ok\":true,\"sampler.duration_ns\"") != std::string::npos);
}

TEST_CASE("lustre exporter: the real command on a fixture tree, --lctl-dump, and option errors", "[lustre]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.mdts["fs1-MDT0000"].open = 1;
  s.jobs["fs1-OST0000"]["a:b:c"] = {};
  fx::Write(root, s, fx::Layout::k215);
  auto r = Run({IosonarBin(), "lustre", "--proc-root", root, "--count", "3", "--interval", "0.05", "--output", d / "out.jsonl",
                "--host-name", "oss1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string out = ReadFile(d / "out.jsonl");
  CheckValid(out);
  CHECK(Count(out, "\"sampler.source\":\"*\"") == 3);
  CHECK(Count(out, "\"event.dataset\":\"iosonar.oss\"") == 2);  // no record for the baseline
  CHECK(Count(out, "\"host.name\":\"oss1\"") == Count(out, "\n"));

  auto c = Run({IosonarBin(), "collect", "--store", d / "store", "--from-file", d / "out.jsonl"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  auto e = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.oss"});
  CHECK(Count(e.out, "\"lustre.target\":\"fs1-OST0000\"") == 2);

  // An lctl get_param dump as input.
  WriteFile(d / "dump.txt",
            "obdfilter.fs2-OST0003.stats=\nsnapshot_time 1700000000.1 secs.nsecs\nwrite_bytes 4 samples [bytes] 1 1 4\n"
            "obdfilter.fs2-OST0003.job_stats=job_stats:\nmdt.fs2-MDT0000.md_stats=\nsnapshot_time 1700000000.1 secs.nsecs\n"
            "open 5 samples [reqs]\nhealth_check=healthy\n");
  r = Run({IosonarBin(), "lustre", "--lctl-dump", d / "dump.txt", "--count", "2", "--interval", "0.05", "--output", d / "dump.jsonl"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  out = ReadFile(d / "dump.jsonl");
  CheckValid(out);
  CHECK(out.find("\"lustre.fs\":\"fs2\",\"lustre.target\":\"fs2-OST0003\"") != std::string::npos);
  CHECK(out.find("\"lustre.target\":\"fs2-MDT0000\"") != std::string::npos);

  CHECK(Run({IosonarBin(), "lustre", "--proc-root", d / "nothing-here", "--count", "1", "--output", d / "x"}).exit_code == 1);
  CHECK(Run({IosonarBin(), "lustre", "--sources", "oss,bogus"}).exit_code == 2);
  CHECK(Run({IosonarBin(), "lustre", "--jobstats-every", "0"}).exit_code == 2);
  CHECK(Run({IosonarBin(), "lustre", "--job-id", "x", "--proc-root", root}).exit_code == 2);
}

TEST_CASE("lustre exporter: --jobstats-max-jobs keeps the largest jobs, --jobstats-every spreads targets over samples", "[lustre]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  const std::vector<std::string> osts = {"fs1-OST0000", "fs1-OST0001", "fs1-OST0002", "fs1-OST0003", "fs1-OST0004", "fs1-OST0005"};
  for (auto& o : osts) {
    s.osts[o].write_ops = 1;
    for (int k = 0; k < 3; ++k) s.jobs[o]["job" + std::to_string(k)] = {};
  }
  fx::Write(root, s, fx::Layout::k210);
  Driver drv({"--proc-root", root, "--jobstats-every", "2", "--jobstats-max-jobs", "2", "--sources", "oss,jobstats"});
  std::map<std::string, std::vector<int>> read_at;  // target -> ticks with job records
  for (int tick = 0; tick < 6; ++tick) {
    if (tick) {
      s.snapshot_s += 1;
      for (auto& o : osts)
        for (int k = 0; k < 3; ++k) {
          auto& j = s.jobs[o]["job" + std::to_string(k)];
          j.write_ops += static_cast<uint64_t>(k + 1);  // job2 writes most, job0 least
          j.write_bytes += static_cast<uint64_t>(k + 1) * kMiB;
        }
      fx::Write(root, s, fx::Layout::k210);
    }
    std::string out = drv.Sample();
    CheckValid(out);
    for (auto& o : osts) {
      // Job records of this target (theirs span 2 s; the oss records' 1 s).
      const size_t n = Count(out, "\"lustre.target\":\"" + o + "\",\"lustre.elapsed_ns\":2000000000");
      if (n) {
        read_at[o].push_back(tick);
        CHECK(n == 2);  // capped at 2 of 3 changed jobs
      }
    }
    // The job that wrote least is the one dropped; deltas span two samples.
    if (tick >= 2) {
      CHECK(Count(out, "\"job.id\":\"job0\"") == 0);
      CHECK(Count(out, "\"job.id\":\"job2\",\"lustre.fs\":\"fs1\"") > 0);
      CHECK(out.find("\"oss.write_ops\":6") != std::string::npos);  // job2: 3 per sample x 2
      CHECK(out.find("\"lustre.jobs_active\":3,\"lustre.jobs_dropped\":1") != std::string::npos);
    }
  }
  int phase0 = 0, phase1 = 0;
  for (auto& o : osts) {
    INFO(o);
    REQUIRE(read_at[o].size() == 2);  // ticks 2 and 4, or 3 and 5
    CHECK(read_at[o][1] - read_at[o][0] == 2);
    (read_at[o][0] % 2 ? phase1 : phase0)++;
  }
  CHECK(phase0 > 0);  // spread over both phases (fixed target names, fixed hash)
  CHECK(phase1 > 0);
}

// Regression (found by fuzz_lustre): a garbage jump of an unknown op's count
// (or of any counter, or a histogram bucket) by more than 2^63 was emitted as
// a negative delta. Such jumps are now resets.
TEST_CASE("lustre exporter: absurd counter jumps are resets, never negative values", "[lustre]") {
  TempDir d;
  const std::string dump = d / "dump.txt";
  auto write = [&](const std::string& unknown, const std::string& bucket) {
    WriteFile(dump, "mdt.fz-MDT0000.md_stats=\nsnapshot_time 1700000000.1 secs.nsecs\nopen 5 samples [reqs]\nweird_op " +
                        unknown + " samples [reqs]\nosd-ldiskfs.fz-OST0000.brw_stats=\n"
                        "pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n1:\t\t" + bucket + " 0 0 | 1 0 0\n");
  };
  write("1", "1");
  Driver drv({"--lctl-dump", dump});
  drv.Sample();
  write("18000000000000000000", "18000000000000000000");
  std::string out = drv.Sample();
  CheckValid(out);
  INFO(out);
  CHECK(out.find(":-") == std::string::npos);
  CHECK(out.find("\"lustre.target\":\"fz-MDT0000\",\"lustre.elapsed_ns\":1000000000,\"lustre.reset\":true") != std::string::npos);
  CHECK(out.find("iosonar.brw") == std::string::npos);
}
