// store-compact (Beacon's second pass applied to the store): stored bytes per
// trace record before and after, the ratio, the compaction's CPU time, and
// what merged blocks cost to read (a full scan of the trace before and
// after), on
//   - a 1,024-node simulated N-N job, ranks in lockstep (`iosonar simulate`);
//   - 1,024 simulated nodes of five jobs (N-N, N-1, N-M, 1-1, a metadata
//     storm), ranks not in lockstep (--variability 0.3);
//   - real traces: the Darshan logs under ../shared/data/pytokio imported
//     (`darshan-import`: DXT and per-file records of real MPI jobs), and tar
//     and git runs traced here with `iosonar run`.
// Medians of REPS runs, each on a fresh copy of the store.
//
// usage: bench_compact IOSONAR_BINARY WORK_DIR [SHARED_DATA_DIR] [REPS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/store/sqlite_store.h"
#include "test/bench/bench_clock.h"

using namespace iosonar;
using iosonar::bench::Clock;
using iosonar::bench::Cpu;
using iosonar::bench::Since;
namespace fs = std::filesystem;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool Sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  if (rc != 0) std::fprintf(stderr, "bench_compact: failed (%d): %s\n", rc, cmd.c_str());
  return rc == 0;
}

// CPU seconds of a full, ordered scan of the store's trace (every field).
double ScanCpu(const std::string& dir, uint64_t* rows) {
  auto st = OpenSqliteStore(dir);
  if (!st.ok()) return -1;
  ScanQuery q;
  q.dataset = "iosonar.trace";
  q.fields = {field::kTimestamp, field::kEventStream, field::kEventSeq, field::kHostName, field::kJobId,
              field::kIoOp,      field::kFilePath,    field::kIoBytes,  field::kIoOffset,  field::kEventEndNs};
  uint64_t n = 0;
  const double c0 = Cpu();
  (void)(*st)->Scan(q, [&](const Row& r) {
    n += r.Has(0);
    return true;
  });
  *rows = n;
  return Cpu() - c0;
}

void Case(const std::string& name, const std::string& store, const std::string& work, int reps) {
  if (!fs::exists(store + "/store.db")) {
    std::printf("| %s | (no store: skipped) |||||||\n", name.c_str());
    return;
  }
  std::vector<double> compact_cpu, compact_wall, scan_before, scan_after;
  CompactReport last;
  uint64_t rows_before = 0, rows_after = 0;
  for (int r = 0; r < reps; ++r) {
    const std::string copy = work + "/copy";
    fs::remove_all(copy);
    fs::copy(store, copy);
    scan_before.push_back(ScanCpu(copy, &rows_before));
    CompactReport rep;
    const double c0 = Cpu();
    const auto t0 = Clock::now();
    Status s = CompactSqliteStore(copy, CompactOptions{}, &rep);
    compact_wall.push_back(Since(t0));
    compact_cpu.push_back(Cpu() - c0);
    if (!s.ok()) {
      std::fprintf(stderr, "bench_compact: %s: %s\n", name.c_str(), s.message().c_str());
      return;
    }
    scan_after.push_back(ScanCpu(copy, &rows_after));
    last = rep;
  }
  const double n = static_cast<double>(last.records);
  std::printf("| %s | %llu | %llu/%llu | %.1f | %.1f | %.2fx | %.3f s (%.2f us/rec) | %.3f -> %.3f s%s |\n", name.c_str(),
              static_cast<unsigned long long>(last.records), static_cast<unsigned long long>(last.merged),
              static_cast<unsigned long long>(last.blocks), static_cast<double>(last.bytes_before) / n,
              static_cast<double>(last.bytes_after) / n,
              static_cast<double>(last.bytes_before) / static_cast<double>(last.bytes_after), Median(compact_cpu),
              Median(compact_cpu) / n * 1e6, Median(scan_before), Median(scan_after),
              rows_before == rows_after ? "" : " ROWS DIFFER");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_compact IOSONAR_BINARY WORK_DIR [SHARED_DATA_DIR] [REPS]\n");
    return 2;
  }
  const std::string bin = argv[1], work = fs::absolute(argv[2]).string();
  const std::string shared = argc > 3 ? argv[3] : "";
  const int reps = argc > 4 ? std::max(1, std::atoi(argv[4])) : 3;
  fs::remove_all(work);
  fs::create_directories(work);
  const std::string q = " >/dev/null 2>&1";

  std::printf("| trace | records | blocks merged | bytes/record before | after | ratio | compaction CPU (median) | "
              "full trace scan CPU before -> after |\n|---|---|---|---|---|---|---|---|\n");
  if (Sh(bin + " simulate --store " + work + "/lockstep --seed 1 --nodes 1024 --duration 60 --job "
               "id=2001,mode=N-N,first=0,nodes=1024,ppn=4,start=0,duration=60" + q))
    Case("simulated, 1,024-node N-N job, 4 ranks a node, lockstep", work + "/lockstep", work, reps);
  if (Sh(bin + " simulate --store " + work + "/mixed --seed 4 --nodes 1024 --duration 60 --variability 0.3 --storm" + q))
    Case("simulated, 1,024 nodes, 5 jobs, variability 0.3", work + "/mixed", work, reps);
  const std::string logs = shared + "/pytokio/tests/inputs";
  // (darshan-import exits 1 when some logs there are refused: the rest is stored.)
  if (!shared.empty() && fs::exists(logs) &&
      (std::system((bin + " darshan-import " + logs + " --store " + work + "/darshan" + q).c_str()), true))
    Case("real: pytokio's Darshan logs, imported", work + "/darshan", work, reps);
  // Real programs traced here (one store each, under the work directory).
  if (Sh("cd " + work + " && " + bin + " run --store " + work + "/tar --job-id 71 -- tar cf " + work + "/inc.tar -C /usr/include ." + q))
    Case("real: tar of /usr/include, traced", work + "/tar", work, reps);
  if (Sh("cd " + work + " && rm -rf g && mkdir g && cp -r /usr/include/linux g/ && " + bin + " run --store " + work + "/git --job-id 72 -- sh -c 'cd g && git init -q && git add -A && git -c user.name=b -c user.email=b@x commit -qm x && "
         "git gc -q'" + q))
    Case("real: git init, add, commit, gc of 700 files, traced", work + "/git", work, reps);
  return 0;
}
