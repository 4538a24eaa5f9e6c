// bench_ingest: how fast the collector takes in typical trace records, and
// how fast the analyses read them back.
//
//   (a) parse+validate       IngestBatch::Add without a store (copy, parse, check)
//   (b) +store               IngestBatch into a fresh SQLite store, one
//                            transaction a batch: what the collector's thread does
//   (c) TCP end to end       a Collector in a separate process (so its peak RSS
//                            is its own, not the generator's), fed over loopback
//   (d) store insert alone   BulkWriter::Insert of 64 pre-parsed records (one a
//                            stream) with a new event.seq each time: the
//                            store's share of (b), without the parser
//   (e) job scan             Store::Scan of the job's records with the 17 fields
//                            SummarizeJob asks for (the store filled as in (b))
//   (f) time-range scan      Store::Scan of a tenth of the time span, 4 fields
//
// Only the Store, BulkWriter and IngestBatch interfaces are used, so the
// same file builds against older store implementations for before/after runs.
// Each figure is the median of --runs runs. Usage:
//   bench_ingest [--records N] [--runs R] [--only parse|store|tcp|insert|scan] [--batch N]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/collector/collector.h"
#include "core/collector/ingest.h"
#include "core/records/fields.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"

using namespace iosonar;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time, so a figure means "on one core" even when other processes
// compete for the machine.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

struct Timing {
  double wall = 0, cpu = 0;
};

std::string MakeTempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/iosonar-bench-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  return tmpl;
}

// Trace lines as the tracer writes them: 64 processes (streams) on 16 nodes of
// one job; two thirds data runs (read/write with fd, offset, size, bytes),
// one third metadata ops (open, close, stat, fsync) without them.
std::vector<std::string> MakeLines(size_t n, double* fields_per_line) {
  std::mt19937_64 rng(42);
  struct Proc {
    uint64_t stream;
    int64_t seq = 0;
    int pid;
    int64_t offset = 0;
  };
  std::vector<Proc> procs;
  for (int i = 0; i < 64; ++i) procs.push_back({rng() >> 1, 0, 20000 + i, 0});
  const int64_t base = 1795331352123000000;
  static const char* const kMetaOps[] = {"open", "close", "stat", "fsync"};
  std::vector<std::string> out;
  out.reserve(n);
  size_t fields = 0;
  char buf[1024];
  for (size_t i = 0; i < n; ++i) {
    const int p_i = static_cast<int>(i % procs.size());
    Proc& p = procs[static_cast<size_t>(p_i)];
    int64_t start = base + static_cast<int64_t>(i) * 2000;
    int64_t count = 1 + static_cast<int64_t>(rng() % 64);
    std::string ts = FormatIsoMillis(start);
    int len = std::snprintf(
        buf, sizeof buf,
        "{\"@timestamp\":\"%s\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":%" PRIu64 ",\"event.seq\":%" PRId64
        ",\"host.name\":\"cn%03d\",\"job.id\":\"4242817\",\"process.pid\":%d,\"process.tid\":%d,",
        ts.c_str(), p.stream, p.seq++, p_i / 4, p.pid, p.pid);
    fields += 8;
    if (rng() % 3 != 0) {
      int64_t size = int64_t{1} << (12 + rng() % 9);
      len += std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                           "\"io.op\":\"%s\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/alice/run42/out.%03d\","
                           "\"io.fd\":%d,\"io.offset\":%" PRId64 ",\"io.size\":%" PRId64 ",\"io.count\":%" PRId64
                           ",\"io.bytes\":%" PRId64 ",",
                           rng() % 3 ? "write" : "read", p_i, 3 + p_i % 5, p.offset, size, count, size * count);
      p.offset += size * count;
      fields += 8;
    } else {
      len += std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                           "\"io.op\":\"%s\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/alice/run42/out.%03d\","
                           "\"io.count\":%" PRId64 ",",
                           kMetaOps[rng() % 4], p_i, count);
      fields += 4;
    }
    len += std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                         "\"event.start_ns\":%" PRId64 ",\"event.end_ns\":%" PRId64 ",\"io.duration_ns\":%" PRId64 "}",
                         start, start + count * 1500, count * 1200);
    fields += 3;
    out.emplace_back(buf, static_cast<size_t>(len));
  }
  *fields_per_line = static_cast<double>(fields) / static_cast<double>(n);
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void Report(const char* what, size_t n, const std::vector<Timing>& runs, const std::string& extra = "") {
  std::vector<double> wall, cpu;
  for (const auto& t : runs) {
    wall.push_back(static_cast<double>(n) / t.wall);
    cpu.push_back(static_cast<double>(n) / t.cpu);
  }
  auto [lo, hi] = std::minmax_element(wall.begin(), wall.end());
  std::printf("%-22s %9.0f records/s wall (min %.0f, max %.0f), %9.0f records per CPU-second%s\n", what,
              Median(wall), *lo, *hi, Median(cpu), extra.c_str());
  std::fflush(stdout);
}

Timing RunParse(const std::vector<std::string>& lines, size_t batch_n) {
  IngestBatch batch(nullptr, batch_n);
  double t0 = Seconds(), c0 = ThreadCpuSeconds();
  for (const auto& l : lines) {
    if (Status s = batch.Add(l); !s.ok()) {
      std::fprintf(stderr, "unexpected reject: %s\n", s.message().c_str());
      std::exit(1);
    }
    if (batch.full()) batch.Clear();
  }
  batch.Clear();
  return {Seconds() - t0, ThreadCpuSeconds() - c0};
}

// A new store in dir, or the reason on stderr and exit 1.
std::unique_ptr<Store> OpenOrExit(const std::string& dir) {
  auto st = OpenSqliteStore(dir);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(st).value();
}

Timing RunStore(const std::vector<std::string>& lines, size_t batch_n, uint64_t* db_bytes) {
  std::string dir = MakeTempDir();
  Timing t;
  {
    auto store = OpenOrExit(dir);
    IngestBatch batch(BulkWriterOf(store.get()), batch_n);
    AppendStats as;
    auto flush = [&] {
      if (Status s = batch.Commit(&as); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        std::exit(1);
      }
      batch.Clear();
    };
    double t0 = Seconds(), c0 = ThreadCpuSeconds();
    for (const auto& l : lines) {
      if (!batch.Add(l).ok()) std::exit(1);
      if (batch.full()) flush();
    }
    flush();
    t = {Seconds() - t0, ThreadCpuSeconds() - c0};
    if (as.inserted != lines.size()) {
      std::fprintf(stderr, "stored %" PRIu64 " of %zu\n", as.inserted, lines.size());
      std::exit(1);
    }
  }
  *db_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("store.db", 0) == 0) *db_bytes += e.file_size();
  std::filesystem::remove_all(dir);
  return t;
}

Timing RunInsertOnly(const std::vector<std::string>& lines, size_t n, size_t batch_n) {
  std::string dir = MakeTempDir();
  Timing t;
  {
    auto st = OpenSqliteStore(dir);
    if (!st.ok()) std::exit(1);
    BulkWriter* w = BulkWriterOf(st.value().get());
    // The first 64 lines are one per stream.
    std::vector<std::string> bufs;
    std::vector<std::unique_ptr<ParsedRecord>> recs;
    for (size_t i = 0; i < 64 && i < lines.size(); ++i) {
      bufs.push_back(lines[i] + '\0');
      recs.push_back(std::make_unique<ParsedRecord>());
      if (!ParseRecordInsitu(bufs.back().data(), lines[i].size(), recs.back().get()).ok()) std::exit(1);
    }
    const size_t seq = static_cast<size_t>(FieldIndex("event.seq")), ts = static_cast<size_t>(FieldIndex("@timestamp"));
    AppendStats as;
    double t0 = Seconds(), c0 = ThreadCpuSeconds();
    if (!w->BeginBatch().ok()) std::exit(1);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && i % batch_n == 0 && (!w->CommitBatch().ok() || !w->BeginBatch().ok())) std::exit(1);
      ParsedRecord& r = *recs[i % recs.size()];
      r.v[seq].i = static_cast<int64_t>(i / recs.size());
      r.v[ts].i += 2000;
      if (!w->Insert(r, &as).ok()) std::exit(1);
    }
    if (!w->CommitBatch().ok()) std::exit(1);
    t = {Seconds() - t0, ThreadCpuSeconds() - c0};
    if (as.inserted != n) {
      std::fprintf(stderr, "stored %" PRIu64 " of %zu\n", as.inserted, n);
      std::exit(1);
    }
  }
  std::filesystem::remove_all(dir);
  return t;
}

// Fills a store with the lines as (b) does; the caller removes dir.
std::string FillStore(const std::vector<std::string>& lines, size_t batch_n) {
  std::string dir = MakeTempDir();
  auto store = OpenOrExit(dir);
  IngestBatch batch(BulkWriterOf(store.get()), batch_n);
  AppendStats as;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!batch.Add(lines[i]).ok()) std::exit(1);
    if (batch.full() || i + 1 == lines.size()) {
      if (!batch.Commit(&as).ok()) std::exit(1);
      batch.Clear();
    }
  }
  return dir;
}

volatile int64_t g_sink;

// One scan of an opened store; *rows gets the rows seen.
Timing RunScan(Store& store, const ScanQuery& q, size_t* rows) {
  size_t n = 0;
  int64_t sink = 0;
  double t0 = Seconds(), c0 = ThreadCpuSeconds();
  Status s = store.Scan(q, [&](const Row& row) {
    ++n;
    for (size_t k = 0; k < q.fields.size(); ++k)
      if (row.Has(k)) sink += static_cast<int64_t>(row.Str(k).size()) + row.Int(k);
    return true;
  });
  Timing t{Seconds() - t0, ThreadCpuSeconds() - c0};
  if (!s.ok()) {
    std::fprintf(stderr, "scan: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  g_sink = sink;  // the values were really read
  *rows = n;
  return t;
}

long PeakRssKiB() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

// The collector process: prints its port, drains when told, prints its stats.
int Serve(const std::string& dir, size_t batch_n) {
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = dir;
  o.batch_records = batch_n;
  auto c = Collector::Start(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  double c0 = ProcessCpuSeconds();
  std::printf("%d\n", c.value()->port());
  std::fflush(stdout);
  char cmd[64];
  if (!std::fgets(cmd, sizeof cmd, stdin)) return 1;
  Status s = c.value()->Drain(1, 600000);
  double cpu = ProcessCpuSeconds() - c0;
  CollectorStats st = c.value()->stats();
  std::printf("%s %" PRIu64 " %" PRIu64 " %ld %.6f\n", s.ok() ? "ok" : "fail", st.stored, st.rejected, PeakRssKiB(), cpu);
  std::fflush(stdout);
  (void)c.value()->Stop();
  return 0;
}

Timing RunTcp(const std::string& all, size_t n, size_t batch_n, long* rss_kib) {
  std::string dir = MakeTempDir();
  int to_child[2], from_child[2];
  if (pipe(to_child) || pipe(from_child)) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    std::string b = std::to_string(batch_n);
    execl("/proc/self/exe", "bench_ingest", "--serve", dir.c_str(), "--batch", b.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  FILE* in = fdopen(from_child[0], "r");
  int port = 0;
  if (std::fscanf(in, "%d", &port) != 1) {
    std::fprintf(stderr, "collector process did not start\n");
    std::exit(1);
  }
  double t0 = Seconds();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  for (size_t off = 0; off < all.size();) {
    ssize_t w = write(fd, all.data() + off, all.size() - off);
    if (w <= 0) {
      std::perror("write");
      std::exit(1);
    }
    off += static_cast<size_t>(w);
  }
  close(fd);
  if (write(to_child[1], "drain\n", 6) != 6) std::exit(1);
  char okword[8] = {};
  uint64_t stored = 0, rejected = 0;
  Timing t;
  if (std::fscanf(in, "%7s %" SCNu64 " %" SCNu64 " %ld %lf", okword, &stored, &rejected, rss_kib, &t.cpu) != 5 ||
      std::strcmp(okword, "ok") != 0 || stored != n) {
    std::fprintf(stderr, "collector run failed: %s stored %" PRIu64 " of %zu, rejected %" PRIu64 "\n", okword, stored,
                 n, rejected);
    std::exit(1);
  }
  t.wall = Seconds() - t0;
  close(to_child[1]);
  std::fclose(in);
  int status;
  waitpid(pid, &status, 0);
  std::filesystem::remove_all(dir);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 500000, batch_n = CollectorOptions{}.batch_records;
  int runs = 5;
  std::string only, serve_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--records") n = std::stoul(next());
    else if (a == "--runs") runs = std::stoi(next());
    else if (a == "--only") only = next();
    else if (a == "--batch") batch_n = std::stoul(next());
    else if (a == "--serve") serve_dir = next();
    else {
      std::fprintf(stderr, "usage: bench_ingest [--records N] [--runs R] [--only parse|store|tcp|insert|scan] [--batch N]\n");
      return 2;
    }
  }
  if (!serve_dir.empty()) return Serve(serve_dir, batch_n);

  double fields = 0;
  auto lines = MakeLines(n, &fields);
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size() + 1;
  std::printf("bench_ingest: %zu trace lines, %.0f bytes and %.1f fields a line, batch %zu, %d runs each\n", n,
              static_cast<double>(bytes) / static_cast<double>(n), fields, batch_n, runs);
  if (only.empty() || only == "parse") {
    std::vector<Timing> t;
    for (int r = 0; r < runs; ++r) t.push_back(RunParse(lines, batch_n));
    Report("(a) parse+validate", n, t);
  }
  if (only.empty() || only == "store") {
    std::vector<Timing> t;
    uint64_t db_bytes = 0;
    for (int r = 0; r < runs; ++r) t.push_back(RunStore(lines, batch_n, &db_bytes));
    char extra[96];
    std::snprintf(extra, sizeof extra, "; store.db+wal %.0f bytes/record", static_cast<double>(db_bytes) / static_cast<double>(n));
    Report("(b) +store", n, t, extra);
  }
  if (only.empty() || only == "insert") {
    std::vector<Timing> t;
    for (int r = 0; r < runs; ++r) t.push_back(RunInsertOnly(lines, n, batch_n));
    Report("(d) store insert alone", n, t);
  }
  if (only.empty() || only == "scan") {
    std::string dir = FillStore(lines, batch_n);
    {
      auto st = OpenSqliteStore(dir);
      if (!st.ok()) std::exit(1);
      ScanQuery job;
      job.dataset = dataset::kTrace;
      job.filters = {{field::kJobId, "4242817"}};
      job.fields = {field::kHostName, field::kProcessPid, field::kProcessTid, field::kProcessRank, field::kIoOp,
                    field::kIoLayer, field::kFilePath, field::kFileId, field::kIoFd, field::kIoOffset, field::kIoSize,
                    field::kIoCount, field::kIoBytes, field::kIoErrno, field::kEventStartNs, field::kEventEndNs,
                    field::kIoDurationNs};
      ScanQuery range;
      range.dataset = dataset::kTrace;
      // MakeLines spaces records 2 us apart from its base time.
      const int64_t base = 1795331352123000000, span = static_cast<int64_t>(n) * 2000;
      range.range = {base + span / 2, base + span / 2 + span / 10};
      range.fields = {field::kTimestamp, field::kHostName, field::kIoOp, field::kIoBytes};
      for (const auto* q : {&job, &range}) {
        std::vector<Timing> t;
        size_t rows = 0;
        for (int r = 0; r < runs; ++r) t.push_back(RunScan(*st.value(), *q, &rows));
        char extra[96];
        std::snprintf(extra, sizeof extra, "; %zu rows", rows);
        Report(q == &job ? "(e) job scan" : "(f) time-range scan", rows, t, extra);
      }
    }
    std::filesystem::remove_all(dir);
  }
  if (only.empty() || only == "tcp") {
    std::string all;
    all.reserve(bytes);
    for (const auto& l : lines) {
      all += l;
      all += '\n';
    }
    std::vector<std::string>().swap(lines);
    std::vector<Timing> t;
    long max_rss = 0;
    for (int r = 0; r < runs; ++r) {
      long rss = 0;
      t.push_back(RunTcp(all, n, batch_n, &rss));
      max_rss = std::max(max_rss, rss);
    }
    char extra[96];
    std::snprintf(extra, sizeof extra, "; collector peak RSS %.1f MiB", static_cast<double>(max_rss) / 1024.0);
    Report("(c) TCP -> Collector", n, t, extra);
  }
  return 0;
}
