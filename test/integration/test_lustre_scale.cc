// `iosonar lustre` at an MDS's size and for Prometheus: job_stats streamed
// in chunks (no whole-file copy, no size cap, every changed job emitted by
// default), a timed-out read that keeps the jobs' baseline, and the
// --listen-metrics endpoint parsed by prometheus_client (the reference
// parser) with totals checked against the files and the JSON records.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "core/records/record.h"
#include "test/integration/lustre_driver.h"
#include "test/integration/lustre_fixture.h"
#include "test/testutil/golden.h"
#include "test/testutil/oracle.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;
namespace fx = iosonar::test::lustrefx;

namespace {

using Driver = LustreDriver;
constexpr uint64_t kMiB = 1 << 20;

Driver MakeDriver(std::vector<std::string> args) { return Driver(std::move(args), "mds1"); }

// The integer after "key": in line (-1 if absent).
int64_t IntOf(const std::string& line, const std::string& key) {
  const auto p = line.find("\"" + key + "\":");
  if (p == std::string::npos) return -1;
  return std::stoll(line.substr(p + key.size() + 3));
}

std::string RecordOf(const std::string& lines, const std::string& needle) {
  for (const auto& l : SplitLines(lines))
    if (l.find(needle) != std::string::npos) return l;
  return "";
}

// Every line must pass the collector's schema validation.
void CheckValid(const std::string& lines) {
  for (auto& l : SplitLines(lines)) {
    if (l.empty()) continue;
    std::string buf = l;
    buf.push_back('\0');
    iosonar::ParsedRecord rec;
    iosonar::Status s = iosonar::ParseRecordInsitu(buf.data(), l.size(), &rec);
    INFO(l);
    REQUIRE(s.ok());
  }
}

size_t Samples(const std::string& path) {
  try {
    return Count(ReadFile(path), "\"sampler.source\":\"*\"");
  } catch (...) {
    return 0;
  }
}

}  // namespace

TEST_CASE("lustre exporter: job_stats of 6,000 MDT jobs is streamed in chunks: every changed job emitted by default, "
          "no size cap",
          "[lustre]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.mdts["fs1-MDT0000"].open = 1;
  constexpr int kJobs = 6000;
  auto id = [](int k) { return "app" + std::to_string(k) + ".1000" + std::to_string(k % 13); };
  for (int k = 0; k < kJobs; ++k) s.jobs["fs1-MDT0000"][id(k)] = {};
  fx::Write(root, s, fx::Layout::k215);
  const std::string js = root + "/proc/fs/lustre/mdt/fs1-MDT0000/job_stats";
  struct stat st {};
  REQUIRE(stat(js.c_str(), &st) == 0);
  INFO("job_stats bytes: " << st.st_size);
  REQUIRE(st.st_size > 3 * (1 << 20));  // several 1 MiB chunks, and far over --max-file-size below
  // --max-file-size bounds whole-file reads; job_stats is streamed and not bounded by it.
  Driver drv = MakeDriver({"--proc-root", root, "--sources", "mds,jobstats", "--max-file-size", "64K"});
  CHECK(Count(drv.Sample(), "\"event.dataset\":\"iosonar.jobstats\"") == 0);  // the baseline
  s.snapshot_s += 1;
  s.mdts["fs1-MDT0000"].open += 5;
  int changed = 0;
  for (int k = 0; k < kJobs; ++k) {
    auto& j = s.jobs["fs1-MDT0000"][id(k)];
    j.open += static_cast<uint64_t>(k % 7);  // every 7th job does nothing
    j.close += static_cast<uint64_t>(k % 3);
    if (k % 7 || k % 3) ++changed;
  }
  fx::Write(root, s, fx::Layout::k215);
  const std::string out = drv.Sample();
  CheckValid(out);
  // Every changed job, none dropped (the old default of 1,000 dropped 5 of 6 here), each exact.
  REQUIRE(static_cast<int>(Count(out, "\"event.dataset\":\"iosonar.jobstats\"")) == changed);
  std::map<std::string, std::string> by_id;
  for (const auto& l : SplitLines(out)) {
    if (l.find("\"event.dataset\":\"iosonar.jobstats\"") == std::string::npos) continue;
    const auto p = l.find("\"job.id\":\"") + 10;
    by_id[l.substr(p, l.find('"', p) - p)] = l;
  }
  REQUIRE(static_cast<int>(by_id.size()) == changed);
  for (int k = 0; k < kJobs; ++k) {
    auto it = by_id.find(id(k));
    if (!(k % 7 || k % 3)) {
      CHECK(it == by_id.end());
      continue;
    }
    REQUIRE(it != by_id.end());
    INFO(it->second);
    CHECK(IntOf(it->second, "mds.open") == (k % 7 ? k % 7 : -1));  // a zero delta is left out
    CHECK(IntOf(it->second, "mds.close") == (k % 3 ? k % 3 : -1));
    CHECK(IntOf(it->second, "mds.ops") == k % 7 + k % 3);
    CHECK(IntOf(it->second, "lustre.elapsed_ns") == 1000000000);
  }
  const std::string mds = RecordOf(out, "\"event.dataset\":\"iosonar.mds\"");
  CHECK(IntOf(mds, "lustre.jobs_active") == changed);
  CHECK(IntOf(mds, "lustre.jobs_dropped") == 0);
  const std::string sampler = RecordOf(out, "\"sampler.source\":\"jobstats\"");
  CHECK(sampler.find("\"sampler.ok\":true") != std::string::npos);
  CHECK(IntOf(sampler, "sampler.warnings") == 0);
  // A job Lustre dropped is forgotten; one that comes back counts from zero.
  s.snapshot_s += 1;
  s.jobs["fs1-MDT0000"].erase(id(1));
  fx::Write(root, s, fx::Layout::k215);
  CHECK(Count(drv.Sample(), "\"event.dataset\":\"iosonar.jobstats\"") == 0);
  s.snapshot_s += 1;
  s.jobs["fs1-MDT0000"][id(1)] = {0, 0, 0, 0, 0, 4, 4};
  fx::Write(root, s, fx::Layout::k215);
  const std::string back = RecordOf(drv.Sample(), "\"job.id\":\"" + id(1) + "\"");
  CHECK(IntOf(back, "mds.open") == 4);
}

TEST_CASE("lustre exporter: a job_stats read that times out is a counted warning, and every job keeps its baseline: "
          "the next delta is exact",
          "[lustre][sources]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  for (int k = 0; k < 50; ++k) s.jobs["fs1-OST0000"]["job" + std::to_string(k)].write_ops = 1;
  fx::Write(root, s, fx::Layout::k215);
  // tracefs's trace_pipe stands for a job_stats on a hung server (see
  // test_exporter_sources.cc): a regular file whose read() blocks in the
  // kernel until trace data comes; a write to trace_marker makes it return.
  const std::string tfs = d / "tracefs";
  REQUIRE(mkdir(tfs.c_str(), 0700) == 0);
  auto m = Run({"mount", "-t", "tracefs", "nodev", tfs});
  if (m.exit_code != 0) FAIL("cannot mount tracefs (the test needs root): " + m.err);
  struct Unmount {
    std::string dir;
    ~Unmount() { Run({"umount", "-l", dir}); }
  } unmount{tfs};
  Driver drv = MakeDriver({"--proc-root", root, "--sources", "oss,jobstats", "--read-timeout", "0.2"});
  drv.Sample();  // the baseline
  const std::string js = root + "/proc/fs/lustre/obdfilter/fs1-OST0000/job_stats";
  auto advance = [&] {
    s.snapshot_s += 1;
    s.osts["fs1-OST0000"].write_ops += 1;
    for (auto& [id, j] : s.jobs["fs1-OST0000"]) {
      j.write_ops += 3;
      j.write_bytes += 3 * kMiB;
    }
    fx::Write(root, s, fx::Layout::k215);
  };
  advance();
  REQUIRE(unlink(js.c_str()) == 0);
  REQUIRE(symlink((tfs + "/trace_pipe").c_str(), js.c_str()) == 0);
  const std::string t1 = drv.Sample();
  INFO(t1);
  const std::string src = RecordOf(t1, "\"sampler.source\":\"jobstats\"");
  CHECK(src.find("\"sampler.ok\":false") != std::string::npos);
  CHECK(src.find("did not return within 200 ms") != std::string::npos);
  CHECK(IntOf(src, "sampler.warnings") == 1);  // the timeout is a warning, counted on its source
  CHECK(IntOf(src, "sampler.timeouts") == 1);   // and a timeout, on its source and on the sample's "*"
  CHECK(IntOf(RecordOf(t1, "\"sampler.source\":\"*\""), "sampler.timeouts") == 1);
  CHECK(IntOf(RecordOf(t1, "\"sampler.source\":\"oss\""), "sampler.timeouts") == -1);  // absent where none
  CHECK(Count(t1, "\"event.dataset\":\"iosonar.jobstats\"") == 0);
  {
    // The lean command on the same hung file: its summary on stderr counts
    // the timed-out reads among the warnings (the first read times out, the
    // second finds it still stuck), and each sample's record counts its own.
    // trace_pipe has one reader at a time (the stuck one above): a tracing
    // instance of its own has a trace_pipe that blocks the same way.
    const std::string inst = tfs + "/instances/iosonar-test-" + std::to_string(getpid());
    REQUIRE(mkdir(inst.c_str(), 0700) == 0);
    struct RmInstance {
      std::string dir;
      ~RmInstance() { rmdir(dir.c_str()); }
    } rm_instance{inst};
    REQUIRE(unlink(js.c_str()) == 0);
    REQUIRE(symlink((inst + "/trace_pipe").c_str(), js.c_str()) == 0);
    const std::string out = d / "cmd.jsonl";
    auto r = Run({BinaryDir() + "/iosonar-exporter", "lustre", "--proc-root", root, "--sources", "oss,jobstats",
                  "--read-timeout", "0.2", "--interval", "0.3", "--count", "2", "--output", out, "--host-name", "mds1"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find(" warnings (2 reads timed out)") != std::string::npos);
    CHECK(r.err.find(" 0 warnings") == std::string::npos);
    const std::string lines = ReadFile(out);
    INFO(lines);
    CheckValid(lines);
    CHECK(Count(lines, "\"sampler.timeouts\":1,") + Count(lines, "\"sampler.timeouts\":1}") == 4);  // jobstats and "*", twice
  }
  // The hung read returns (trace data arrives); the file is back with two intervals' worth of counts.
  advance();
  REQUIRE(unlink(js.c_str()) == 0);
  fx::Write(root, s, fx::Layout::k215);
  std::string out;
  int tick = 1;
  for (int tries = 0; tries < 50; ++tries) {
    {
      FILE* f = std::fopen((tfs + "/trace_marker").c_str(), "w");
      REQUIRE(f);
      std::fputs("iosonar-test\n", f);
      std::fclose(f);
    }
    usleep(50000);
    out = drv.Sample();
    ++tick;
    if (RecordOf(out, "\"sampler.source\":\"jobstats\"").find("\"sampler.ok\":true") != std::string::npos) break;
  }
  INFO(out);
  REQUIRE(RecordOf(out, "\"sampler.source\":\"jobstats\"").find("\"sampler.ok\":true") != std::string::npos);
  // Every job: the 6 writes of both intervals, over the whole time since its baseline.
  REQUIRE(Count(out, "\"event.dataset\":\"iosonar.jobstats\"") == 50);
  for (int k = 0; k < 50; ++k) {
    const std::string r = RecordOf(out, "\"job.id\":\"job" + std::to_string(k) + "\"");
    INFO(r);
    CHECK(IntOf(r, "oss.write_ops") == 6);
    CHECK(IntOf(r, "oss.write_bytes") == static_cast<int64_t>(6 * kMiB));
    CHECK(IntOf(r, "lustre.elapsed_ns") == static_cast<int64_t>(tick) * 1000000000);
  }
}

TEST_CASE("lustre exporter: --listen-metrics is parsed by prometheus_client, its counters equal the files' and their "
          "change equals the JSON records' sums",
          "[lustre][prometheus]") {
  if (Run({"/usr/bin/python3", "-c", "import prometheus_client"}).exit_code != 0)
    FAIL("python3-prometheus-client is not installed (scripts/setup.sh --test installs it)");
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  for (const char* o : {"fs1-OST0000", "fs1-OST0001"}) {
    auto& ost = s.osts[o];
    ost.read_ops = 4, ost.read_bytes = 4 * kMiB, ost.write_ops = 9, ost.write_bytes = 9 * kMiB, ost.punch = 2;
    ost.pages = {{1, {3, 1}}, {256, {4, 8}}};
  }
  s.mdts["fs1-MDT0000"].open = 11;
  s.mdts["fs1-MDT0000"].getattr = 5;
  s.jobs["fs1-OST0000"]["job \"a\""] = {2, 2 * kMiB, 7, 7 * kMiB, 1};  // a quote to escape
  s.jobs["fs1-OST0001"]["job.b"] = {0, 0, 3, 3 * kMiB, 0};
  s.jobs["fs1-MDT0000"]["job.b"] = {0, 0, 0, 0, 0, 6, 6};
  fx::Write(root, s, fx::Layout::k215);
  const int port = FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  const std::string out = d / "out.jsonl";
  Child exp({BinaryDir() + "/iosonar-exporter", "lustre", "--proc-root", root, "--interval", "0.3", "--output", out,
             "--listen-metrics", "127.0.0.1:" + std::to_string(port), "--host-name", "oss1"},
            {}, d / "exp.log");
  REQUIRE(WaitUntil([&] { return Samples(out) >= 1; }, 20000));
  auto scrape = [&] {
    rapidjson::Document doc = RunOracle("prom_scrape.py", {url});
    std::map<std::string, double> v;
    for (auto it = doc["samples"].MemberBegin(); it != doc["samples"].MemberEnd(); ++it)
      v[it->name.GetString()] = it->value.GetDouble();
    CHECK(std::string(doc["content_type"].GetString()) == "text/plain; version=0.0.4; charset=utf-8");
    CHECK(std::string(doc["families"]["lustre_write_bytes"].GetString()) == "counter");
    CHECK(std::string(doc["families"]["lustre_job_stats"].GetString()) == "counter");
    CHECK(std::string(doc["families"]["lustre_brw_pages_per_bulk_rw"].GetString()) == "histogram");
    return v;
  };
  // What the files say, as the endpoint must have it.
  auto check_files = [&](std::map<std::string, double>& v) {
    for (const auto& [name, o] : s.osts) {
      const std::string l = "{component=ost,target=" + name + "}";
      CHECK(v["lustre_write_bytes_total" + l] == static_cast<double>(o.write_bytes));
      CHECK(v["lustre_write_samples_total" + l] == static_cast<double>(o.write_ops));
      CHECK(v["lustre_read_bytes_total" + l] == static_cast<double>(o.read_bytes));
      CHECK(v["lustre_stats_total{component=ost,operation=punch,target=" + name + "}"] == static_cast<double>(o.punch));
      // brw "pages per bulk r/w": cumulative buckets (row N holds values up to N: 1 -> le 1, 256 -> le 256),
      // +Inf and count = all.
      const auto b1 = o.pages.at(1), b256 = o.pages.at(256);
      const std::string h = "lustre_brw_pages_per_bulk_rw_";
      CHECK(v[h + "bucket{component=ost,le=1,operation=write,target=" + name + "}"] == static_cast<double>(b1.second));
      CHECK(v[h + "bucket{component=ost,le=256,operation=write,target=" + name + "}"] ==
            static_cast<double>(b1.second + b256.second));
      CHECK(v[h + "bucket{component=ost,le=+Inf,operation=read,target=" + name + "}"] ==
            static_cast<double>(b1.first + b256.first));
      CHECK(v[h + "count{component=ost,operation=read,target=" + name + "}"] == static_cast<double>(b1.first + b256.first));
    }
    CHECK(v["lustre_stats_total{component=mdt,operation=open,target=fs1-MDT0000}"] == static_cast<double>(s.mdts["fs1-MDT0000"].open));
    const auto& ja = s.jobs["fs1-OST0000"]["job \"a\""];
    CHECK(v["lustre_job_write_bytes_total{component=ost,jobid=job \"a\",target=fs1-OST0000}"] ==
          static_cast<double>(ja.write_bytes));
    CHECK(v["lustre_job_read_samples_total{component=ost,jobid=job \"a\",target=fs1-OST0000}"] ==
          static_cast<double>(ja.read_ops));
    CHECK(v["lustre_job_stats_total{component=ost,jobid=job \"a\",operation=punch,target=fs1-OST0000}"] ==
          static_cast<double>(ja.punch));
    CHECK(v["lustre_job_write_bytes_total{component=ost,jobid=job.b,target=fs1-OST0001}"] ==
          static_cast<double>(s.jobs["fs1-OST0001"]["job.b"].write_bytes));
    CHECK(v["lustre_job_stats_total{component=mdt,jobid=job.b,operation=open,target=fs1-MDT0000}"] ==
          static_cast<double>(s.jobs["fs1-MDT0000"]["job.b"].open));
  };
  auto m1 = scrape();
  check_files(m1);
  // Every counter moves; the endpoint follows, and what it gained is what the records say.
  s.snapshot_s += 1;
  for (auto& [name, o] : s.osts) {
    o.write_ops += 5, o.write_bytes += 5 * kMiB, o.punch += 1;
    o.pages[256].second += 5;
  }
  s.mdts["fs1-MDT0000"].open += 3;
  s.jobs["fs1-OST0000"]["job \"a\""].write_bytes += 2 * kMiB;
  s.jobs["fs1-OST0000"]["job \"a\""].write_ops += 2;
  s.jobs["fs1-OST0000"]["job \"a\""].punch += 1;
  s.jobs["fs1-MDT0000"]["job.b"].open += 4;
  fx::Write(root, s, fx::Layout::k215);
  const size_t n = Samples(out);
  REQUIRE(WaitUntil([&] { return Samples(out) >= n + 2; }, 20000));
  auto m2 = scrape();
  check_files(m2);
  // The sums of the JSON deltas over the run.
  std::map<std::string, int64_t> sum;
  for (const auto& l : SplitLines(ReadFile(out))) {
    const auto t = l.find("\"lustre.target\":\"");
    if (t == std::string::npos) continue;
    const std::string target = l.substr(t + 17, l.find('"', t + 17) - t - 17);
    if (l.find("\"event.dataset\":\"iosonar.oss\"") != std::string::npos) {
      sum["oss.write_bytes " + target] += IntOf(l, "oss.write_bytes");
      sum["oss.punch " + target] += std::max<int64_t>(0, IntOf(l, "oss.punch"));
    } else if (l.find("\"event.dataset\":\"iosonar.mds\"") != std::string::npos) {
      sum["mds.open " + target] += std::max<int64_t>(0, IntOf(l, "mds.open"));
    } else if (l.find("\"event.dataset\":\"iosonar.jobstats\"") != std::string::npos) {
      if (l.find("\"job.id\":\"job \\\"a\\\"\"") != std::string::npos) sum["job a write_bytes"] += IntOf(l, "oss.write_bytes");
      if (l.find("\"job.id\":\"job.b\"") != std::string::npos && target == "fs1-MDT0000")
        sum["job b open"] += IntOf(l, "mds.open");
    } else if (l.find("\"event.dataset\":\"iosonar.brw\"") != std::string::npos && l.find("\"brw.hist\":\"pages\"") != std::string::npos &&
               IntOf(l, "brw.bucket") == 256) {
      sum["brw 256 write " + target] += IntOf(l, "brw.write");
    }
  }
  for (const char* o : {"fs1-OST0000", "fs1-OST0001"}) {
    const std::string t = o;
    INFO(t);
    const std::string l = "{component=ost,target=" + t + "}";
    CHECK(sum["oss.write_bytes " + t] == static_cast<int64_t>(m2["lustre_write_bytes_total" + l] - m1["lustre_write_bytes_total" + l]));
    CHECK(sum["oss.write_bytes " + t] == static_cast<int64_t>(5 * kMiB));
    const std::string p = "lustre_stats_total{component=ost,operation=punch,target=" + t + "}";
    CHECK(sum["oss.punch " + t] == static_cast<int64_t>(m2[p] - m1[p]));
    const std::string b = "lustre_brw_pages_per_bulk_rw_bucket{component=ost,le=256,operation=write,target=" + t + "}";
    const std::string b1 = "lustre_brw_pages_per_bulk_rw_bucket{component=ost,le=1,operation=write,target=" + t + "}";
    CHECK(sum["brw 256 write " + t] == static_cast<int64_t>((m2[b] - m2[b1]) - (m1[b] - m1[b1])));
  }
  const std::string mo = "lustre_stats_total{component=mdt,operation=open,target=fs1-MDT0000}";
  CHECK(sum["mds.open fs1-MDT0000"] == static_cast<int64_t>(m2[mo] - m1[mo]));
  const std::string ja = "lustre_job_write_bytes_total{component=ost,jobid=job \"a\",target=fs1-OST0000}";
  CHECK(sum["job a write_bytes"] == static_cast<int64_t>(m2[ja] - m1[ja]));
  CHECK(sum["job a write_bytes"] == static_cast<int64_t>(2 * kMiB));
  const std::string jb = "lustre_job_stats_total{component=mdt,jobid=job.b,operation=open,target=fs1-MDT0000}";
  CHECK(sum["job b open"] == static_cast<int64_t>(m2[jb] - m1[jb]));
  CHECK(sum["job b open"] == 4);
  // Bad requests are answered, not served, and the exporter goes on.
  auto c = Run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:" + std::to_string(port) + "/nope"});
  CHECK(c.out == "404");
  c = Run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", url});
  CHECK(c.out == "405");
  CHECK(exp.Alive());
  CHECK(exp.Stop() == 0);
}

// The OSS's ost_io service stats in the format of the real captures
// (../shared/data/lustre/whamcloud-lustrefs-exporter/lustre-collector/src/
// fixtures/valid/valid.txt, `ost.OSS.ost_io.stats`): up to 2.14 under
// /proc/fs/lustre, since 2.15 under debugfs with start_time/elapsed_time.
namespace {
void WriteOstIo(const std::string& root, fx::Layout l, int64_t snap_s, int64_t start_s, uint64_t waits, uint64_t wait_usec) {
  const std::string dir = root + (l == fx::Layout::k215 ? "/sys/kernel/debug/lustre" : "/proc/fs/lustre") + "/ost/OSS/ost_io";
  REQUIRE(Run({"mkdir", "-p", dir}).exit_code == 0);
  char b[1024];
  std::snprintf(b, sizeof b, "snapshot_time             %lld.303855291 secs.nsecs\n", (long long)snap_s);
  std::string t = b;
  if (l == fx::Layout::k215) {
    std::snprintf(b, sizeof b, "start_time                %lld.030341682 secs.nsecs\nelapsed_time              %lld.972894566 secs.nsecs\n",
                  (long long)start_s, (long long)(snap_s - start_s));
    t += b;
  }
  std::snprintf(b, sizeof b,
                "req_waittime              %llu samples [usec] 4 20340 %llu 6817957300\n"
                "req_qdepth                %llu samples [reqs] 0 7 16886 22078\n"
                "req_active                %llu samples [reqs] 1 45 30475809 333897005\n"
                "req_timeout               %llu samples [sec] 15 15 70354695 1055320425\n"
                "reqbuf_avail              9577644 samples [bufs] 63 64 612800114 39208553870\n"
                "ost_read                  2442845 samples [usec] 234 49945 5185766973 19501455670833\n"
                "ost_write                 2247452 samples [usec] 148 69989 4660586823 21667999297975\n",
                (unsigned long long)waits, (unsigned long long)wait_usec, (unsigned long long)waits,
                (unsigned long long)waits, (unsigned long long)waits);
  t += b;
  WriteFile(dir + "/stats", t);
}
}  // namespace

TEST_CASE("lustre exporter: the OSS's ost_io req_waittime is each OST record's oss.ost_io_wait_ns (mean wait per "
          "request over the interval), absent without requests or across a reset",
          "[lustre][sources]") {
  for (const fx::Layout l : {fx::Layout::k210, fx::Layout::k215}) {
    INFO((l == fx::Layout::k215 ? "2.15 layout (debugfs)" : "2.10 layout (/proc)"));
    TempDir d;
    const std::string root = d / "root";
    fx::State s;
    s.osts["fs1-OST0000"].write_ops = 10;
    s.osts["fs1-OST0001"].write_ops = 20;
    fx::Write(root, s, l);
    uint64_t waits = 4690313, usec = 100079668;
    WriteOstIo(root, l, s.snapshot_s, s.start_s, waits, usec);
    Driver drv = MakeDriver({"--proc-root", root, "--sources", "oss"});
    const std::string t0 = drv.Sample();  // the baseline
    CHECK(Count(t0, "oss.ost_io_wait_ns") == 0);
    auto advance = [&](uint64_t dwaits, uint64_t dusec) {
      s.snapshot_s += 1;
      for (auto& [n, o] : s.osts) o.write_ops += 5;
      fx::Write(root, s, l);
      waits += dwaits;
      usec += dusec;
      WriteOstIo(root, l, s.snapshot_s, s.start_s, waits, usec);
    };
    // 2,000 requests waited 174,321 µs in all: 87.1605 µs each.
    advance(2000, 174321);
    std::string t = drv.Sample();
    INFO(t);
    CheckValid(t);
    REQUIRE(Count(t, "\"event.dataset\":\"iosonar.oss\"") == 2);
    for (const char* ost : {"fs1-OST0000", "fs1-OST0001"}) {
      const std::string r = RecordOf(t, std::string("\"lustre.target\":\"") + ost + "\"");
      CHECK(IntOf(r, "oss.ost_io_wait_ns") == 87160);
    }
    CHECK(RecordOf(t, "\"sampler.source\":\"oss\"").find("\"sampler.ok\":true") != std::string::npos);
    // No request in the interval: no wait to report.
    advance(0, 0);
    t = drv.Sample();
    CHECK(Count(t, "\"event.dataset\":\"iosonar.oss\"") == 2);
    CHECK(Count(t, "oss.ost_io_wait_ns") == 0);
    // The OSS restarted (counters back near zero): no value, the reading is the new baseline.
    waits = 100;
    usec = 5000;
    if (l == fx::Layout::k215) s.start_s += 5;
    advance(0, 0);
    t = drv.Sample();
    CHECK(Count(t, "oss.ost_io_wait_ns") == 0);
    advance(10, 1234);  // 123.4 µs each
    t = drv.Sample();
    CHECK(IntOf(RecordOf(t, "\"lustre.target\":\"fs1-OST0000\""), "oss.ost_io_wait_ns") == 123400);
  }
}

TEST_CASE("lustre exporter: --listen-metrics carries the OSS's ost_io request waits as a summary whose rate ratio is "
          "the records' oss.ost_io_wait_ns",
          "[lustre][prometheus]") {
  if (Run({"/usr/bin/python3", "-c", "import prometheus_client"}).exit_code != 0)
    FAIL("python3-prometheus-client is not installed (scripts/setup.sh --test installs it)");
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.osts["fs1-OST0001"].write_ops = 20;
  fx::Write(root, s, fx::Layout::k215);
  uint64_t waits = 4690313, usec = 100079668;
  WriteOstIo(root, fx::Layout::k215, s.snapshot_s, s.start_s, waits, usec);
  const int port = FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  const std::string out = d / "out.jsonl";
  Child exp({BinaryDir() + "/iosonar-exporter", "lustre", "--proc-root", root, "--sources", "oss", "--interval", "0.3",
             "--output", out, "--listen-metrics", "127.0.0.1:" + std::to_string(port), "--host-name", "oss1"},
            {}, d / "exp.log");
  REQUIRE(WaitUntil([&] { return Samples(out) >= 1; }, 20000));
  const std::string sum = "lustre_ost_io_request_wait_seconds_sum{}", count = "lustre_ost_io_request_wait_seconds_count{}";
  auto scrape = [&] {
    rapidjson::Document doc = RunOracle("prom_scrape.py", {url});
    CHECK(std::string(doc["families"]["lustre_ost_io_request_wait_seconds"].GetString()) == "summary");
    std::map<std::string, double> v;
    for (auto it = doc["samples"].MemberBegin(); it != doc["samples"].MemberEnd(); ++it)
      v[it->name.GetString()] = it->value.GetDouble();
    return v;
  };
  // The file's counters, in seconds.
  auto m1 = scrape();
  CHECK(m1[count] == static_cast<double>(waits));
  CHECK(m1[sum] == Approx(static_cast<double>(usec) / 1e6).epsilon(1e-12));
  // 2,000 requests waited 174,321 us in all: 87.1605 us each.
  s.snapshot_s += 1;
  for (auto& [n, o] : s.osts) o.write_ops += 5;
  fx::Write(root, s, fx::Layout::k215);
  waits += 2000;
  usec += 174321;
  WriteOstIo(root, fx::Layout::k215, s.snapshot_s, s.start_s, waits, usec);
  const size_t n = Samples(out);
  REQUIRE(WaitUntil([&] { return Samples(out) >= n + 2; }, 20000));
  auto m2 = scrape();
  CHECK(m2[count] == static_cast<double>(waits));
  CHECK(m2[sum] == Approx(static_cast<double>(usec) / 1e6).epsilon(1e-12));
  const double mean_ns = (m2[sum] - m1[sum]) / (m2[count] - m1[count]) * 1e9;
  CHECK(mean_ns == Approx(87160.5).margin(0.01));
  // The records of the sample that saw the requests carry the same mean (whole ns).
  int with_wait = 0;
  for (const auto& l : SplitLines(ReadFile(out))) {
    if (l.find("\"event.dataset\":\"iosonar.oss\"") == std::string::npos || IntOf(l, "oss.ost_io_wait_ns") < 0) continue;
    ++with_wait;
    CHECK(IntOf(l, "oss.ost_io_wait_ns") == static_cast<int64_t>(mean_ns));
  }
  CHECK(with_wait == 2);  // one sample, both OSTs
  CHECK(exp.Stop() == 0);
}
