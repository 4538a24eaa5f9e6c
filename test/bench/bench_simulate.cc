// Simulator output rate (records/s: formatting only, and into the embedded
// SQLite store through the collector's batch path, which validates every
// line), and the second-pass compression ratio on the simulator's workloads
// (compare Beacon's Table 8: 2-4x).
//
// usage: bench_simulate [REPS]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis-jobs/compress2/compress2.h"
#include "test/bench/bench_clock.h"
#include "core/collector/ingest.h"
#include "core/store/sqlite_store.h"
#include "analysis-jobs/simulate/simulate.h"

using namespace iosonar;
using iosonar::bench::Clock;
using iosonar::bench::Cpu;
using iosonar::bench::Since;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string TempDir() {
  char tmpl[] = "/tmp/bench_simulate.XXXXXX";
  char *d = mkdtemp(tmpl);
  if (!d) std::abort();
  return d;
}


struct Rate {
  double secs;  // wall
  uint64_t lines, bytes;
  double cpu = 0;
};

Rate RunNull(const sim::Config &cfg) {
  sim::SimResult r;
  const auto t0 = Clock::now();
  const double c0 = Cpu();
  Status st = sim::Simulate(
      cfg, [](std::string_view) { return Status::Ok(); }, &r);
  const double s = Since(t0);
  const double c = Cpu() - c0;
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    std::exit(1);
  }
  return {s, r.lines, r.bytes, c};
}

Rate RunStore(const sim::Config &cfg, const std::string &dir, sim::SimResult *r) {
  auto store = OpenSqliteStore(dir);
  if (!store.ok()) std::abort();
  IngestBatch batch(BulkWriterOf(store.value().get()), 8192);
  AppendStats stats;
  const auto t0 = Clock::now();
  const double c0 = Cpu();
  Status st = sim::Simulate(
      cfg,
      [&](std::string_view l) -> Status {
        if (batch.full()) {
          if (Status c = batch.Commit(&stats); !c.ok()) return c;
          batch.Clear();
        }
        return batch.Add(l);
      },
      r);
  if (st.ok() && !batch.empty()) st = batch.Commit(&stats);
  const double s = Since(t0);
  const double c = Cpu() - c0;
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    std::exit(1);
  }
  return {s, r->lines, r->bytes, c};
}

}  // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;

  std::printf("== simulator output rate (median of %d) ==\n", reps);
  struct Case {
    const char *name;
    int nodes, fwd, osts, mdts, secs;
  } cases[] = {{"4,096 nodes / 64 fwd / 96 OSTs, 20 s", 4096, 64, 96, 1, 20},
               {"TaihuLight 40,960 / 288 / 400, 5 s", 40960, 288, 400, 4, 5}};
  for (const auto &c : cases) {
    sim::Config cfg;
    cfg.nodes = c.nodes;
    cfg.fwd = c.fwd;
    cfg.osts = c.osts;
    cfg.mdts = c.mdts;
    cfg.duration_s = c.secs;
    cfg.faults.storm_job = "1999";
    cfg.faults.slow_ost = 3;
    sim::GenerateJobs(&cfg);
    for (auto &j : cfg.jobs) j.io_period_s = 1;  // I/O every second: the densest output
    std::vector<double> null_rate, store_rate, null_cpu, store_cpu;
    Rate last{};
    for (int i = 0; i < reps; ++i) {
      last = RunNull(cfg);
      null_rate.push_back(static_cast<double>(last.lines) / last.secs);
      null_cpu.push_back(static_cast<double>(last.lines) / last.cpu);
    }
    for (int i = 0; i < reps; ++i) {
      const std::string dir = TempDir();
      sim::SimResult r;
      Rate s = RunStore(cfg, dir, &r);
      store_rate.push_back(static_cast<double>(s.lines) / s.secs);
      store_cpu.push_back(static_cast<double>(s.lines) / s.cpu);
      std::filesystem::remove_all(dir);
    }
    std::printf(
        "%-40s %9llu records %6.1f MB | format only %6.0f k rec/s (per "
        "CPU-s %6.0f k) | into SQLite store "
        "%5.0f k rec/s (per CPU-s %5.0f k)\n",
        c.name, static_cast<unsigned long long>(last.lines), static_cast<double>(last.bytes) / 1e6,
        Median(null_rate) / 1e3, Median(null_cpu) / 1e3, Median(store_rate) / 1e3, Median(store_cpu) / 1e3);
  }

  for (double variability : {0.0, 0.3}) {
    std::printf(
        "\n== second-pass compression on the simulator's workloads "
        "(Beacon Table 8: 2-4x), variability %.1f ==\n",
        variability);
    sim::Config cfg;
    cfg.variability = variability;
    cfg.nodes = 1024;
    cfg.fwd = 16;
    cfg.osts = 64;
    cfg.duration_s = 30;
    cfg.faults.storm_job = "1999";
    sim::GenerateJobs(&cfg);
    for (auto &j : cfg.jobs) j.procs_per_node = 4;
    cfg.emit_client = cfg.emit_servers = false;
    const std::string dir = TempDir();
    sim::SimResult r;
    RunStore(cfg, dir, &r);
    auto store = OpenSqliteStore(dir);
    std::printf("%-6s %-5s %6s %10s | %9s %9s %7s | %9s %9s\n", "job", "mode", "nodes", "records", "groups",
                "rec ratio", "bytes x", "lossy grp", "lossy x");
    for (size_t k = 0; k < r.jobs.size(); ++k) {
      auto recs = compress2::LoadJob(*store.value(), r.jobs[k].id);
      if (!recs.ok()) continue;
      auto c = compress2::Compress(recs.value());
      compress2::Options lo;
      lo.lossy = true;
      auto l = compress2::Compress(recs.value(), lo);
      std::printf("%-6s %-5s %6zu %10llu | %9zu %8.1fx %6.2fx | %9zu %6.2fx\n", r.jobs[k].id.c_str(),
                  std::string(sim::ModeName(cfg.jobs[k].mode)).c_str(), r.jobs[k].nodes.size(),
                  static_cast<unsigned long long>(c.records), c.groups.size(), c.record_ratio(), c.byte_ratio(),
                  l.groups.size(), l.byte_ratio());
    }
    std::filesystem::remove_all(dir);
  }
  return 0;
}
