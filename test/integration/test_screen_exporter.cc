// `iosonar screen` on records the real exporter wrote: two OSS nodes, each an
// `iosonar-exporter lustre` process reading its own fake Lustre 2.10 tree
// (formats copied from the HP lustre_exporter capture in ../shared/data:
// obdfilter stats, job_stats, osd-zfs brw_stats with its "I/O time
// (1/1000s)" histogram, ost/OSS/ost_io/stats), sending to a live collector.
// A writer thread advances the counters as Lustre would, with the wall clock
// (snapshot_time is the time of the update): the I/Os each job does on each
// OST at a known rate, each I/O's service time into brw_stats, each
// request's wait into ost_io's req_waittime. The ground truth is that model:
// one OST is slow (32 ms per I/O, few I/Os) during a known window and
// healthy around it; the healthy OSTs' I/Os take 1 ms, 5-30 % of them 2 ms
// (brw_stats' next row); another OST is healthy but carries one small job
// (2 I/Os a second). Screening must name the slow OST over that window and
// nothing else, with and without a --peak file.
//
// The time scale is shrunk so the test takes ~10 s: the exporters sample
// every 0.2 s and screening judges 1 s buckets (`--bucket 1s`) with a 3 s
// minimum duration instead of 1 min and 60 min; the rules are the same code.
#include <rapidjson/document.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/timeutil.h"
#include "test/integration/lustre_fixture.h"
#include "test/testutil/golden.h"
#include "test/testutil/sim_truth.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

constexpr uint64_t kIo = 1 << 20;  // every I/O moves 1 MiB (256 pages)
constexpr double kSlowFrom = 2.0, kSlowTo = 7.0;  // s after t0: the slow OST's window
constexpr double kRunFor = 9.0;                   // s of sampling
constexpr double kStep = 0.05;                    // s between counter updates

struct Share {
  std::string job;
  double rate, slow_rate;  // I/Os per second, healthy and in the slow window
};
struct Ost {
  std::string name, oss;
  double hi_share;              // healthy: this share of its I/Os took 2 ms, the rest 1 ms (disk jitter)
  double slow_svc_ms;           // in the window every I/O took this long (0: not slowed)
  double wait_us, slow_wait_us;  // each request's wait for an ost_io thread
  std::vector<Share> shares;
  // Counters as Lustre keeps them.
  std::map<std::string, double> acc;        // job -> I/Os so far (fractional)
  std::map<std::string, uint64_t> job_ios;  // job -> whole I/Os
  uint64_t ios = 0;
  double hi_acc = 0;                     // I/Os at 2 ms so far (fractional)
  std::map<uint64_t, uint64_t> io_time;  // ms bucket -> I/Os
};
struct Oss {
  uint64_t samples = 0;
  double sum_us = 0;
};

// The scene: oss1 serves OST0000-0002, oss2 OST0003-0005. OST0004 is slow in
// the window; OST0001 is healthy and lightly loaded (job 1003 only).
std::vector<Ost> Scene() {
  return {
      {"fs1-OST0000", "oss1", 0.10, 0, 60, 60, {{"1001", 100, 100}, {"1002", 100, 100}}, {}, {}, 0, 0, {}},
      {"fs1-OST0001", "oss1", 0.05, 0, 60, 60, {{"1003", 2, 2}}, {}, {}, 0, 0, {}},
      {"fs1-OST0002", "oss1", 0.30, 0, 60, 60, {{"1002", 150, 150}}, {}, {}, 0, 0, {}},
      {"fs1-OST0003", "oss2", 0.20, 0, 60, 60, {{"1001", 90, 90}, {"1002", 90, 90}}, {}, {}, 0, 0, {}},
      {"fs1-OST0004", "oss2", 0.15, 32, 60, 4000, {{"1001", 75, 4}, {"1002", 75, 4}}, {}, {}, 0, 0, {}},
      {"fs1-OST0005", "oss2", 0.25, 0, 60, 60, {{"1002", 120, 120}}, {}, {}, 0, 0, {}},
  };
}

std::string Snap(int64_t ns) {
  char b[64];
  std::snprintf(b, sizeof b, "%lld.%09lld", static_cast<long long>(ns / 1000000000), static_cast<long long>(ns % 1000000000));
  return b;
}

// The files of one OSS's tree, in the layout of the 2.10.1 capture.
void WriteTree(const std::string& root, const std::string& oss_name, const std::vector<Ost>& osts, const Oss& oss,
               int64_t now_ns) {
  const std::string proc = root + "/proc/fs/lustre";
  const std::string snap = Snap(now_ns);
  char b[512];
  for (const auto& o : osts) {
    if (o.oss != oss_name) continue;
    // obdfilter stats (2.10: statfs twice, preprw/commitrw)
    std::string t = "snapshot_time             " + snap + " secs.nsecs\n";
    if (o.ios) {
      std::snprintf(b, sizeof b, "write_bytes               %llu samples [bytes] %llu %llu %llu\n",
                    static_cast<unsigned long long>(o.ios), static_cast<unsigned long long>(kIo),
                    static_cast<unsigned long long>(kIo), static_cast<unsigned long long>(o.ios * kIo));
      t += b;
    }
    t += "create                    2 samples [reqs]\nstatfs                    353 samples [reqs]\n"
         "connect                   1 samples [reqs]\nstatfs                    1244 samples [reqs]\n";
    if (o.ios) {
      std::snprintf(b, sizeof b, "preprw                    %llu samples [reqs]\ncommitrw                  %llu samples [reqs]\n",
                    static_cast<unsigned long long>(o.ios), static_cast<unsigned long long>(o.ios));
      t += b;
    }
    t += "ping                      141 samples [reqs]\n";
    lustrefx::Put(proc + "/obdfilter/" + o.name + "/stats", t);
    // job_stats (2.10: bare ids, whole-second snapshot_time)
    std::string j = "job_stats:\n";
    for (const auto& [job, n] : o.job_ios) {
      j += "- job_id:          " + job + "\n  snapshot_time:   " + std::to_string(now_ns / 1000000000) + "\n";
      j += "  read_bytes:      { samples:           0, unit: bytes, min:       0, max:       0, sum:               0 }\n";
      std::snprintf(b, sizeof b, "  write_bytes:     { samples: %11llu, unit: bytes, min: %7llu, max: %7llu, sum: %15llu }\n",
                    static_cast<unsigned long long>(n), static_cast<unsigned long long>(n ? kIo : 0),
                    static_cast<unsigned long long>(n ? kIo : 0), static_cast<unsigned long long>(n * kIo));
      j += b;
      for (const char* op : {"getattr", "setattr", "punch", "sync", "destroy", "create", "statfs", "get_info", "set_info",
                             "quotactl"}) {
        std::snprintf(b, sizeof b, "  %-16s { samples:           0, unit:  reqs }\n", (std::string(op) + ":").c_str());
        j += b;
      }
    }
    lustrefx::Put(proc + "/obdfilter/" + o.name + "/job_stats", j);
    // brw_stats in the OSD, reached from obdfilter by a symlink
    std::string w = "snapshot_time:         " + snap + " (secs.nsecs)\n\n";
    w += "                           read      |     write\npages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n";
    std::snprintf(b, sizeof b, "256:\t\t         0   0   0   | %4llu 100 100\n", static_cast<unsigned long long>(o.ios));
    w += b;
    w += "\n                           read      |     write\nI/O time (1/1000s)     ios   % cum % |  ios         % cum %\n";
    for (const auto& [ms, n] : o.io_time) {
      std::snprintf(b, sizeof b, "%llu:\t\t         0   0   0   | %4llu   0   0\n", static_cast<unsigned long long>(ms),
                    static_cast<unsigned long long>(n));
      w += b;
    }
    w += "\n                           read      |     write\ndisk I/O size          ios   % cum % |  ios         % cum %\n";
    std::snprintf(b, sizeof b, "1M:\t\t         0   0   0   | %4llu 100 100\n", static_cast<unsigned long long>(o.ios));
    w += b;
    lustrefx::Put(proc + "/osd-zfs/" + o.name + "/brw_stats", w);
    const std::string link = proc + "/obdfilter/" + o.name + "/brw_stats";
    if (::access(link.c_str(), F_OK) != 0 && ::symlink(("../../osd-zfs/" + o.name + "/brw_stats").c_str(), link.c_str()) != 0)
      std::perror("symlink");
  }
  // The OSS's ost_io service (the real file's lines; req_waittime: min max sum sumsq in usec)
  std::string s = "snapshot_time             " + snap + " secs.nsecs\n";
  if (oss.samples) {
    const auto sum = static_cast<unsigned long long>(std::llround(oss.sum_us));
    std::snprintf(b, sizeof b,
                  "req_waittime              %llu samples [usec] 4 6360 %llu %llu\n"
                  "req_qdepth                %llu samples [reqs] 0 4 1751 2055\n"
                  "req_active                %llu samples [reqs] 1 12 8137871 20192223\n"
                  "ost_write                 %llu samples [usec] 71 684976 13836421716 530120972832328\n",
                  static_cast<unsigned long long>(oss.samples), sum, sum * 100, static_cast<unsigned long long>(oss.samples),
                  static_cast<unsigned long long>(oss.samples), static_cast<unsigned long long>(oss.samples));
    s += b;
  }
  lustrefx::Put(proc + "/ost/OSS/ost_io/stats", s);
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Advances every counter from t_prev to t (ns after t0) and rewrites both trees.
void Advance(std::vector<Ost>& osts, std::map<std::string, Oss>& oss, double t_prev, double t) {
  const bool slow = t > kSlowFrom && t <= kSlowTo;  // the I/Os completing in (t_prev, t]
  for (auto& o : osts) {
    for (const auto& sh : o.shares) {
      double& a = o.acc[sh.job];
      const auto before = static_cast<uint64_t>(a);
      a += (slow ? sh.slow_rate : sh.rate) * (t - t_prev);
      const uint64_t n = static_cast<uint64_t>(a) - before;
      o.job_ios[sh.job] += n;
      o.ios += n;
      if (slow && o.slow_svc_ms > 0) {
        o.io_time[static_cast<uint64_t>(o.slow_svc_ms)] += n;
      } else {  // brw_stats' log2 rows: "1" holds 0-1 ms, "2" 2 ms
        const auto hi_before = static_cast<uint64_t>(o.hi_acc);
        o.hi_acc += static_cast<double>(n) * o.hi_share;
        const uint64_t hi = static_cast<uint64_t>(o.hi_acc) - hi_before;
        o.io_time[2] += hi;
        o.io_time[1] += n - hi;
      }
      oss[o.oss].samples += n;
      oss[o.oss].sum_us += static_cast<double>(n) * (slow ? o.slow_wait_us : o.wait_us);
    }
  }
}

std::string Iso(int64_t ns) { return FormatIsoMillis(ns); }

}  // namespace

TEST_CASE("screen: on records the real iosonar-exporter wrote, the slow OST is named, the lightly loaded one is not",
          "[screen][exporter]") {
  TempDir d;
  std::vector<Ost> osts = Scene();
  std::map<std::string, Oss> oss;
  const std::string roots[2] = {d / "oss1", d / "oss2"};
  const int64_t t0 = WallNs();
  for (int i = 0; i < 2; ++i) WriteTree(roots[i], i ? "oss2" : "oss1", osts, oss[i ? "oss2" : "oss1"], t0);

  const int port = FreePort();
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  Child collector({IosonarBin(), "collect", "--store", d / "store", "--listen", url}, {}, d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));

  // The counters move with the wall clock while the exporters sample.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    double t_prev = 0;
    for (int k = 1; !stop; ++k) {
      const int64_t due = t0 + static_cast<int64_t>(k * kStep * 1e9);
      std::this_thread::sleep_until(std::chrono::system_clock::time_point(std::chrono::nanoseconds(due)));
      const int64_t now = WallNs();
      const double t = static_cast<double>(now - t0) / 1e9;
      Advance(osts, oss, t_prev, t);
      t_prev = t;
      for (int i = 0; i < 2; ++i) WriteTree(roots[i], i ? "oss2" : "oss1", osts, oss[i ? "oss2" : "oss1"], now);
    }
  });
  const int count = static_cast<int>(kRunFor / 0.2);
  std::vector<std::unique_ptr<Child>> exporters;
  for (int i = 0; i < 2; ++i)
    exporters.push_back(std::make_unique<Child>(
        std::vector<std::string>{BinaryDir() + "/iosonar-exporter", "lustre", "--proc-root", roots[i], "--sources",
                                 "oss,jobstats,brw", "--interval", "0.2", "--count", std::to_string(count), "--output",
                                 url, "--host-name", i ? "oss2" : "oss1", "--quiet"},
        std::map<std::string, std::string>{}, d / ("exporter" + std::to_string(i) + ".log")));
  int rc[2];
  for (int i = 0; i < 2; ++i) rc[i] = ExitCode(exporters[i]->Wait());
  stop = true;
  writer.join();
  const int64_t t_end = WallNs();
  for (int i = 0; i < 2; ++i) {
    INFO(ReadFile(d / ("exporter" + std::to_string(i) + ".log")));
    REQUIRE(rc[i] == 0);
  }
  // Every sample of both exporters is in the store (each ends with its "*" sampler record).
  auto samples = [&] {
    auto e = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.sampler"});
    return Count(e.out, "\"sampler.source\":\"*\"");
  };
  REQUIRE(WaitUntil([&] { return samples() == 2 * count; }, 20000));
  CHECK(ExitCode(collector.Stop()) == 0);
  // The exporters read what the writer wrote: brw I/O times and the OSS waits went in.
  auto brw = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.brw"});
  REQUIRE(Count(brw.out, "\"brw.hist\":\"io_time_ms\",\"brw.bucket\":32") > 0);
  auto oss_recs = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.oss"});
  REQUIRE(Count(oss_recs.out, "\"oss.ost_io_wait_ns\":") > 0);

  const int64_t from = t0 / 1000000 * 1000000;  // ms, as --from carries it
  std::vector<std::string> args = {IosonarBin(), "screen",         "--store", d / "store", "--from", Iso(from),
                                   "--to",       Iso(t_end + 1000000), "--bucket", "1s", "--min-duration", "3s",
                                   "--format",   "json"};
  WriteFile(d / "peaks.txt", [] {
    std::string p;
    for (int i = 0; i < 6; ++i) p += "fs1-OST000" + std::to_string(i) + " 419430400\n";  // 400 MiB/s each
    return p;
  }());
  for (bool with_peak : {false, true}) {
    INFO((with_peak ? "with" : "without") << " --peak (OST0001 moves ~2 MiB/s, 0.5 % of its peak)");
    auto a = args;
    if (with_peak) a.insert(a.end(), {"--peak", d / "peaks.txt"});
    auto r = Run(a);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto doc = JsonObject(r.out);
    const auto& occ = doc["occurrences"];
    REQUIRE(occ.Size() == 1);  // neither the lightly loaded OST0001 nor any healthy peer
    CHECK(std::string(occ[0]["kind"].GetString()) == "ost");
    CHECK(std::string(occ[0]["name"].GetString()) == "fs1-OST0004");
    CHECK(std::string(occ[0]["rule"].GetString()).find("demand") == 0);
    // Over the window the writer made it slow, to a bucket (1 s) and the sampling's lag.
    const double start = static_cast<double>(*ParseIso8601(occ[0]["start"].GetString()) - t0) / 1e9;
    const double end = static_cast<double>(*ParseIso8601(occ[0]["end"].GetString()) - t0) / 1e9;
    CHECK(std::fabs(start - kSlowFrom) <= 1.3);
    CHECK(std::fabs(end - kSlowTo) <= 1.3);
    // The evidence is what the writer put in: 32 ms per I/O against peers of 1-2 ms;
    // its OSS (oss2) waited longer for ost_io threads than oss1.
    const auto& e = occ[0]["evidence"];
    CHECK(e["service_ms"].GetDouble() >= 16);
    CHECK(e["service_ms"].GetDouble() <= 32);
    CHECK(e["peer_service_ms"].GetDouble() >= 1);
    CHECK(e["peer_service_ms"].GetDouble() <= 2);
    CHECK(std::string(e["oss"].GetString()) == "oss2");
    CHECK(e["ost_io_wait_ms"].GetDouble() > e["peer_ost_io_wait_ms"].GetDouble());
    CHECK(e["peer_ost_io_wait_ms"].GetDouble() == Approx(0.06).margin(0.001));
  }
}
