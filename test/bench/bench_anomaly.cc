// Anomaly detection benchmarks (Beacon's automatic diagnosis), on one core,
// from the embedded SQLite store, with data from the simulator:
//  1. `anomaly` of a 1,024-node job against its 50 earlier runs (target < 5 s):
//     51 runs of one application (N-N, 1,024 nodes behind 8 forwarding nodes,
//     64 OSTs, one stripe a file, 2 GiB checkpoints per rank every ~7 s, 40 s
//     each), the last one on a slow OST; history from an apps map.
//  2. the hourly screening of a TaihuLight-size system (400 OSTs, 288
//     forwarding nodes) over one hour of 1 s samples (target < 10 s):
//     server, brw and client records, one small job so some OSTs have work.
//  3. screening a whole day of the same system sampled every 10 s (the
//     exporter's --interval 10; target < 10 s): a 256-node job all day
//     (file per process over 256 OSTs, through 64 forwarding nodes), one OST
//     slow for 3 hours and one forwarding node for 2 (both must be found,
//     nothing else).
// Medians of REPS runs; wall and CPU seconds (the machine is shared).
//
// usage: bench_anomaly [DIR [REPS [anomaly|hour|day]]]   (stores in DIR are
// reused when present; the third argument runs one part only)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis-jobs/anomaly/anomaly.h"
#include "analysis-jobs/anomaly/screen.h"
#include "analysis-jobs/simulate/simulate.h"
#include "core/store/sqlite_store.h"
#include "test/bench/bench_clock.h"

using namespace iosonar;
using iosonar::bench::Clock;
using iosonar::bench::Cpu;
using iosonar::bench::RunQueueWait;
using iosonar::bench::Since;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Wall, CPU and run-queue seconds of each repetition; where the wall time
// beyond the CPU went: waiting for a core (run queue) or blocked (I/O, locks).
struct Timing {
  std::vector<double> wall, cpu, queued;
  Clock::time_point t0;
  double c0 = 0, q0 = 0;
  void Start() {
    t0 = Clock::now();
    c0 = Cpu();
    q0 = RunQueueWait();
  }
  void Stop() {
    wall.push_back(Since(t0));
    cpu.push_back(Cpu() - c0);
    queued.push_back(RunQueueWait() - q0);
  }
  std::string Text(const char* target) const {
    std::vector<double> blocked;
    for (size_t i = 0; i < wall.size(); ++i) blocked.push_back(wall[i] - cpu[i] - queued[i]);
    char b[256];
    std::snprintf(b, sizeof b,
                  "median of %zu: %.3f s wall, %.3f s CPU, %.3f s waiting for a core, %.3f s blocked (target < %s)",
                  wall.size(), Median(wall), Median(cpu), Median(queued), Median(blocked), target);
    return b;
  }
};

sim::Config History() {
  sim::Config cfg = sim::Sized(18, 1024, 8, 64, 51 * 45);
  cfg.background_bytes_per_ost_s = 0;
  for (int k = 0; k < 51; ++k) {
    auto j = sim::ParseJobSpec("id=" + std::to_string(6000 + k) + ",mode=N-N,first=0,nodes=1024,stripes=1,start=" +
                               std::to_string(k * 45) + ",duration=40,period=5,phase=2G,cmd=./lammps%20-in%20ckpt");
    cfg.jobs.push_back(*j);
  }
  cfg.faults.slow_ost = 9;
  cfg.faults.slow_ost_from_s = 50 * 45;
  return cfg;
}

// A system of 288 forwarding nodes and 400 OSTs with one long job: the
// screening's hour (Screening) and its day with two faults (Day).
sim::Config System(uint64_t seed, int duration_s, const std::string& job) {
  sim::Config cfg = sim::Sized(seed, 288 * 4, 288, 400, duration_s, 4);
  cfg.emit_trace = false;
  cfg.jobs.push_back(*sim::ParseJobSpec(job));
  return cfg;
}

sim::Config Screening() {
  return System(7, 3600, "id=7000,mode=N-N,first=0,nodes=64,stripes=1,start=0,duration=3600,period=5,io=2,bytes=64M");
}

sim::Config Day() {
  sim::Config cfg =
      System(9, 86400, "id=7100,mode=N-N,first=0,nodes=256,stripes=1,start=0,duration=86400,period=5,io=2,bytes=64M");
  cfg.interval_s = 10;
  cfg.faults.slow_ost = 17;
  cfg.faults.slow_ost_from_s = 6 * 3600;
  cfg.faults.slow_ost_to_s = 9 * 3600;
  cfg.faults.slow_fwd = 5;
  cfg.faults.slow_fwd_from_s = 14 * 3600;
  cfg.faults.slow_fwd_to_s = 16 * 3600;
  return cfg;
}

std::unique_ptr<Store> Fill(const std::string& dir, const sim::Config& cfg, const char* what) {
  const bool have = std::filesystem::exists(dir + "/store.db");
  auto st = OpenSqliteStore(dir);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.status().ToString().c_str());
    std::exit(1);
  }
  if (!have) {
    sim::SimResult res;
    const auto t0 = Clock::now();
    if (Status s = sim::SimulateIntoStore(cfg, *st.value(), &res); !s.ok()) {
      std::fprintf(stderr, "simulate: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    std::printf("%s: %llu records simulated into %s in %.1f s\n", what, static_cast<unsigned long long>(res.lines),
                dir.c_str(), Since(t0));
  }
  return std::move(st.value());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/tmp/bench_anomaly";
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const std::string only = argc > 3 ? argv[3] : "";
  if (!only.empty() && only != "anomaly" && only != "hour" && only != "day") {
    std::fprintf(stderr, "bench_anomaly: the part to run is anomaly, hour or day, not '%s'\n", only.c_str());
    return 2;
  }
  auto run = [&](const char* part) { return only.empty() || only == part; };
  std::filesystem::create_directories(dir);

  if (run("anomaly")) {
    const sim::Config cfg = History();
    auto store = Fill(dir + "/history", cfg, "history");
    anomaly::JobSource src;
    for (const auto& j : cfg.jobs) src.apps[j.id] = sim::CommandOf(j);
    for (int n = 0; n < cfg.nodes; ++n) src.node_fwd[sim::NodeName(n)] = sim::FwdName(sim::FwdOf(cfg, n));
    anomaly::Options opt;
    Timing tm;
    std::string verdict;
    size_t hist = 0, outliers = 0;
    for (int r = 0; r < reps; ++r) {
      tm.Start();
      auto res = anomaly::Analyze(*store, "6050", src, opt);
      tm.Stop();
      if (!res.ok()) {
        std::fprintf(stderr, "anomaly: %s\n", res.status().ToString().c_str());
        return 1;
      }
      verdict = res->verdict;
      hist = res->history.size();
      outliers = res->server_outliers.size();
    }
    std::printf("anomaly, 1,024-node job vs %zu earlier runs: verdict %s, %zu lagging servers; %s\n", hist, verdict.c_str(),
                outliers, tm.Text("5 s").c_str());
  }
  if (run("hour")) {
    const sim::Config cfg = Screening();
    auto store = Fill(dir + "/screening", cfg, "screening");
    Timing tm;
    size_t servers = 0;
    uint64_t records = 0;
    for (int r = 0; r < reps; ++r) {
      tm.Start();
      auto res = anomaly::Screen(*store, cfg.start_ns, cfg.start_ns + 3600ll * 1000000000, {}, anomaly::ScreenOptions{}, nullptr);
      tm.Stop();
      if (!res.ok()) {
        std::fprintf(stderr, "screen: %s\n", res.status().ToString().c_str());
        return 1;
      }
      servers = res->servers;
      records = res->records;
    }
    std::printf("screening, %zu servers, %llu records (1 h of 1 s samples): %s\n", servers,
                static_cast<unsigned long long>(records), tm.Text("10 s").c_str());
  }
  if (run("day")) {
    const sim::Config cfg = Day();
    auto store = Fill(dir + "/day", cfg, "day");
    Timing tm;
    size_t servers = 0;
    uint64_t records = 0;
    std::string found;
    for (int r = 0; r < reps; ++r) {
      tm.Start();
      auto res = anomaly::Screen(*store, cfg.start_ns, cfg.start_ns + 86400ll * 1000000000, {}, anomaly::ScreenOptions{}, nullptr);
      tm.Stop();
      if (!res.ok()) {
        std::fprintf(stderr, "screen: %s\n", res.status().ToString().c_str());
        return 1;
      }
      servers = res->servers;
      records = res->records;
      found.clear();
      for (const auto& o : res->occurrences)
        found += " " + o.name + " " + std::to_string((o.end_ns - o.start_ns) / 60000000000) + " min (" + o.rule + ")";
    }
    std::printf("screening a day, %zu servers, %llu records (10 s samples): found%s; %s\n", servers,
                static_cast<unsigned long long>(records), found.c_str(), tm.Text("10 s").c_str());
  }
  return 0;
}
