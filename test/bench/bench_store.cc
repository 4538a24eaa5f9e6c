// bench_store: the embedded SQLite store at 10^7 records: ingest, full and
// filtered scans, and bucketed sums, each with its time and peak memory.
//
// Records: iosonar.trace, 1 ms apart (10^7 records span 2.8 h), 16 jobs
// running at a time, 160 jobs in all (job.id changes every 10^6 records).
// Each phase runs in its own forked process, so its peak RSS (wait4's
// ru_maxrss) is its own. Read phases are the median of --runs runs.
//   bench_store [--records N] [--runs R] [--dir DIR] [--keep]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/collector/ingest.h"
#include "core/records/fields.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"

using namespace iosonar;

namespace {

constexpr int64_t kT0 = 1795331352000000000;
constexpr int64_t kMs = 1000000;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string Job(uint64_t i) { return std::to_string(1000 + i % 16 + 16 * (i / 1000000)); }

std::string Line(uint64_t i) {
  const int64_t ts = kT0 + static_cast<int64_t>(i) * kMs;
  char b[1024];
  int n = std::snprintf(
      b, sizeof b,
      "{\"@timestamp\":\"%s\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":%llu,\"event.seq\":%llu,"
      "\"host.name\":\"n%llu\",\"job.id\":\"%s\",\"process.pid\":%llu,\"process.tid\":%llu,\"io.op\":\"%s\","
      "\"io.layer\":\"posix\",\"file.path\":\"/scratch/j/f%llu\",\"io.fd\":3,\"io.offset\":%llu,\"io.size\":1048576,"
      "\"io.count\":4,\"io.bytes\":4194304,\"event.start_ns\":%lld,\"event.end_ns\":%lld,\"io.duration_ns\":%llu}",
      FormatIsoMillis(ts).c_str(), static_cast<unsigned long long>(1 + i % 64), static_cast<unsigned long long>(i / 64),
      static_cast<unsigned long long>(i % 64 / 4), Job(i).c_str(), static_cast<unsigned long long>(100 + i % 64),
      static_cast<unsigned long long>(100 + i % 64), i % 3 ? "write" : "read", static_cast<unsigned long long>(i % 64),
      static_cast<unsigned long long>((i / 64) * 4194304), static_cast<long long>(ts), static_cast<long long>(ts + 800000),
      static_cast<unsigned long long>(500000 + i % 1000));
  return std::string(b, static_cast<size_t>(n));
}

struct PhaseResult {
  double seconds = 0;
  long max_rss_kb = 0;
  double value = 0;  // what the phase counted (rows, buckets), for the log
};

// Runs fn in a child; the child writes {seconds, value} through a pipe.
PhaseResult InChild(const std::function<std::pair<double, double>()>& fn) {
  int p[2];
  if (pipe(p) != 0) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    auto r = fn();
    double out[2] = {r.first, r.second};
    if (write(p[1], out, sizeof out) != static_cast<ssize_t>(sizeof out)) _exit(1);
    _exit(0);
  }
  close(p[1]);
  double in[2] = {0, 0};
  if (read(p[0], in, sizeof in) != static_cast<ssize_t>(sizeof in)) {
    std::fprintf(stderr, "bench_store: a phase failed\n");
    std::exit(1);
  }
  close(p[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  return {in[0], ru.ru_maxrss, in[1]};
}

std::unique_ptr<Store> OpenOrDie(const std::string& dir) {
  auto s = OpenSqliteStore(dir);
  if (!s.ok()) {
    std::fprintf(stderr, "bench_store: %s\n", s.status().message().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = 10000000;
  int runs = 3;
  std::string dir;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--records") && i + 1 < argc) n = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--keep")) keep = true;
  }
  if (dir.empty()) {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/iosonar-bench-store-XXXXXX";
    if (!mkdtemp(tmpl.data())) return 1;
    dir = tmpl;
  }
  const bool fresh = !std::filesystem::exists(dir + "/store.db");
  std::printf("bench_store: %llu iosonar.trace records in %s (%s), reads median of %d runs\n",
              static_cast<unsigned long long>(n), dir.c_str(), fresh ? "generated now" : "reused", runs);
  if (fresh) {
    auto r = InChild([&] {
      auto st = OpenOrDie(dir);
      IngestBatch batch(BulkWriterOf(st.get()), 8192);
      const double t0 = Now();
      AppendStats stats;
      for (uint64_t i = 0; i < n; ++i) {
        if (!batch.Add(Line(i)).ok()) std::exit(1);
        if (batch.full()) {
          if (!batch.Commit(&stats).ok()) std::exit(1);
          batch.Clear();
        }
      }
      if (!batch.Commit(&stats).ok()) std::exit(1);
      return std::make_pair(Now() - t0, static_cast<double>(stats.inserted));
    });
    std::printf("ingest (generate + parse + store, one core): %.1f s, %.0f records/s, peak RSS %ld MiB, store.db %.0f MiB\n",
                r.seconds, r.value / r.seconds, r.max_rss_kb / 1024,
                static_cast<double>(std::filesystem::file_size(dir + "/store.db")) / 1048576.0);
  }
  struct Read {
    const char* name;
    double covered;                    // records the query reads
    std::function<double(Store&)> fn;  // returns rows/buckets seen
  };
  const double nd = static_cast<double>(n);
  const int64_t span = static_cast<int64_t>(n) * kMs;
  std::vector<Read> reads = {
      {"count all", nd, [](Store& s) { return static_cast<double>(*s.Count("iosonar.trace", {})); }},
      {"scan all, 3 fields", nd,
       [](Store& s) {
         ScanQuery q;
         q.dataset = dataset::kTrace;
         q.fields = {field::kTimestamp, field::kIoBytes, field::kJobId};
         double rows = 0, bytes = 0;
         (void)s.Scan(q, [&](const Row& r) { return ++rows, bytes += static_cast<double>(r.Int(1)), true; });
         return rows;
       }},
      {"scan one job (1/160), 17 fields", nd / 160,
       [](Store& s) {
         ScanQuery q;
         q.dataset = dataset::kTrace;
         q.filters = {{field::kJobId, "1005"}};
         q.fields = {field::kTimestamp, field::kHostName, field::kProcessPid, field::kProcessTid, field::kProcessRank,
                     field::kIoOp, field::kIoLayer, field::kFilePath, field::kFileId, field::kIoFd, field::kIoOffset,
                     field::kIoSize, field::kIoCount, field::kIoBytes, field::kEventStartNs, field::kEventEndNs,
                     field::kIoDurationNs};
         double rows = 0;
         (void)s.Scan(q, [&](const Row&) { return ++rows, true; });
         return rows;
       }},
      {"scan 1/10 of the time, 4 fields", nd / 10,
       [span](Store& s) {
         ScanQuery q;
         q.dataset = dataset::kTrace;
         q.range = {kT0 + span / 2, kT0 + span / 2 + span / 10};
         q.fields = {field::kTimestamp, field::kHostName, field::kIoOp, field::kIoBytes};
         double rows = 0;
         (void)s.Scan(q, [&](const Row&) { return ++rows, true; });
         return rows;
       }},
      {"bucket sums, 1 s buckets, 2 sums", nd,
       [](Store& s) {
         BucketQuery q;
         q.dataset = dataset::kTrace;
         q.bucket_ns = 1000000000;
         q.sum_fields = {field::kIoBytes, field::kIoCount};
         return static_cast<double>(s.BucketSums(q)->size());
       }},
      {"bucket sums, 60 s buckets, writes only", nd * 2 / 3,
       [](Store& s) {
         BucketQuery q;
         q.dataset = dataset::kTrace;
         q.bucket_ns = 60000000000;
         q.filters = {{field::kIoOp, "write"}};
         q.sum_fields = {field::kIoBytes, field::kIoDurationNs};
         return static_cast<double>(s.BucketSums(q)->size());
       }},
      {"bucket sums, 1 s buckets, one job", nd / 160,
       [](Store& s) {
         BucketQuery q;
         q.dataset = dataset::kTrace;
         q.bucket_ns = 1000000000;
         q.filters = {{field::kJobId, "1005"}};
         q.sum_fields = {field::kIoBytes};
         return static_cast<double>(s.BucketSums(q)->size());
       }},
  };
  for (const auto& rd : reads) {
    std::vector<double> secs;
    long rss = 0;
    double value = 0;
    for (int r = 0; r < runs; ++r) {
      auto res = InChild([&] {
        auto st = OpenOrDie(dir);
        const double t0 = Now();
        double v = rd.fn(*st);
        return std::make_pair(Now() - t0, v);
      });
      secs.push_back(res.seconds);
      rss = std::max(rss, res.max_rss_kb);
      value = res.value;
    }
    std::sort(secs.begin(), secs.end());
    const double med = secs[secs.size() / 2];
    std::printf("%-40s %8.3f s  %12.0f rows|buckets  %10.0f records/s  peak RSS %ld MiB\n", rd.name, med, value,
                rd.covered / med,
                rss / 1024);
  }
  if (!keep && fresh) std::filesystem::remove_all(dir);
  return 0;
}
