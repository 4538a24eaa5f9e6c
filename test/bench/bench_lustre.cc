// `iosonar lustre` at 1 Hz on a generated fixture of 100 OSTs with 100 jobs
// each (10,000 job_stats entries, the DDN 2.14 / 2.15 format with sumsq and
// hist maps), their stats and brw_stats, and one MDT. The real command runs
// as a child process; between its samples this program advances the
// counters (all OST stats and brw_stats, and 10% or 100% of the jobs).
// Both binaries run side by side: the full `iosonar` and the lean
// `iosonar-exporter` (same exporter, no libcurl/OpenSSL/MariaDB/SQLite linked).
// Reported: per-sample collect time (the exporter's own "*" self-report,
// median / p90 / max), CPU per sample and peak RSS of the child (wait4).
// Targets: <= 20 ms per sample, <= 10 MiB RSS.
//
//   bench_lustre [--samples N] [--interval S] [--dump FILE] [--scenario K] [--in-process-only]
//                [--read-timeout MS]   (in process: the read watchdog's deadline; 0 = no watchdog)
//                [--mdt-jobs N]        (the MDT's job_stats has N entries, 2.14 format: an MDS's size)
//                [--scrape PORT]       (the command serves --listen-metrics 127.0.0.1:PORT, scraped after each sample)
//                [--lean-only]         (only iosonar-exporter as the command)
//                [--command-only]      (no in-process runs)
//                [--peer NAME URLPATH COMMAND]  (repeatable: another exporter, given at run time, side by side)
//   BENCH_LUSTRE_IOSONAR=/path/to/iosonar bench_lustre   (measure another build of the command)
//
// --peer: COMMAND runs as `/bin/sh -c COMMAND` (it ends in `exec BINARY ...`, so that
// the shell becomes the peer: its RSS and CPU are measured) with $BENCH_LUSTRE_ROOT
// (the fixture's root, holding proc/ and sys/) and $BENCH_LUSTRE_PORT (where
// it is to serve); `lctl` and `lnetctl` first on its PATH are this program,
// printing what `lctl get_param` prints from the fixture. It is scraped at
// http://127.0.0.1:PORT/URLPATH once per sample, the fixture advanced between
// scrapes. Nothing is fetched or built by this program.
//
// --dump FILE: write every record the in-process runs emitted to FILE,
// except iosonar.sampler lines (they carry measured durations), so two
// builds of the exporter can be compared byte for byte on the same inputs.
#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "exporters/framework/exporter.h"
#include "exporters/lustre/lustre.h"

extern char** environ;

namespace {

constexpr int kOsts = 100, kJobsPerOst = 100;
int g_mdt_jobs = 0;  // --mdt-jobs N: the MDT's job_stats has N entries (an MDS's size: 10,000s)

void MkdirP(const std::string& p) {
  for (size_t i = p.find('/', 1); i != std::string::npos; i = p.find('/', i + 1)) mkdir(p.substr(0, i).c_str(), 0755);
  mkdir(p.c_str(), 0755);
}

void Put(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

struct Job {
  uint64_t w = 0, wb = 0, r = 0, rb = 0, punch = 0;
  int64_t snap = 1723114647;  // Lustre's per-job snapshot_time is the job's last update
};

struct Fixture {
  std::string root;
  int64_t snap = 1723114647;
  std::vector<std::vector<Job>> jobs = std::vector<std::vector<Job>>(kOsts, std::vector<Job>(kJobsPerOst));
  std::vector<uint64_t> ost_w = std::vector<uint64_t>(kOsts, 1000);
  struct MdtJob {
    uint64_t open = 0, getattr = 0, setattr = 0;
    int64_t snap = 1724140459;
  };
  std::vector<MdtJob> mdt_jobs = std::vector<MdtJob>(static_cast<size_t>(g_mdt_jobs));
  uint64_t step = 0;
  std::string mdt_text;
  std::vector<std::string> mdt_entries;
  std::vector<bool> mdt_dirty;

  // The MDT's job_stats in the format of the real 2.14 (DDN) captures
  // (../shared/data/lustre/whamcloud-lustrefs-exporter/.../jobstats_only/2.14.0_164.txt):
  // every op listed in every entry, with sumsq, and an empty hist map on the
  // byte counters. ~3.3 KiB an entry.
  void WriteMdtJobs(const std::string& proc) {
    if (g_mdt_jobs == 0) return;
    static const char* const kOps[] = {"open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename",
                                       "getattr", "setattr", "getxattr", "setxattr", "statfs", "sync",
                                       "samedir_rename", "parallel_rename_file", "parallel_rename_dir",
                                       "crossdir_rename", "read", "write", "read_bytes", "write_bytes", "punch",
                                       "migrate"};
    // Only the entries that changed are formatted again (the rest kept).
    if (mdt_entries.size() != mdt_jobs.size()) {
      mdt_entries.assign(mdt_jobs.size(), std::string());
      mdt_dirty.assign(mdt_jobs.size(), true);
    }
    char b[512];
    for (int j = 0; j < g_mdt_jobs; ++j) {
      if (!mdt_dirty[static_cast<size_t>(j)]) continue;
      mdt_dirty[static_cast<size_t>(j)] = false;
      const MdtJob& x = mdt_jobs[static_cast<size_t>(j)];
      std::string& e = mdt_entries[static_cast<size_t>(j)];
      e.clear();
      std::snprintf(b, sizeof b,
                    "- job_id:          \"SLURM_JOB%d:0:cn%04d\"\n  snapshot_time:   %lld.176791282 secs.nsecs\n"
                    "  start_time:      1724138039.056524190 secs.nsecs\n  elapsed_time:    2420.120267092 secs.nsecs\n",
                    100000 + j, j % 4096, static_cast<long long>(x.snap));
      e += b;
      for (const char* op : kOps) {
        uint64_t v = 0;
        if (!std::strcmp(op, "open") || !std::strcmp(op, "close")) v = x.open;
        else if (!std::strcmp(op, "getattr")) v = x.getattr;
        else if (!std::strcmp(op, "setattr")) v = x.setattr;
        const bool bytes = !std::strcmp(op, "read_bytes") || !std::strcmp(op, "write_bytes");
        std::snprintf(b, sizeof b,
                      "  %-16s { samples: %11llu, unit: %s, min:        %s, max: %8s, sum: %16llu, sumsq: %18llu%s }\n",
                      (std::string(op) + ":").c_str(), (unsigned long long)v, bytes ? "bytes" : "usecs", v ? "9" : "0",
                      v ? "1241" : "0", (unsigned long long)(v * 57), (unsigned long long)(v * 57 * 60),
                      bytes ? ", hist: {  }" : "");
        e += b;
      }
    }
    std::string& t = mdt_text;
    t.assign("job_stats:\n");
    for (const std::string& e : mdt_entries) t += e;
    Put(proc + "/mdt/bench-MDT0000/job_stats", t);
  }

  static std::string Name(int i) {
    char b[32];
    std::snprintf(b, sizeof b, "bench-OST%04x", i);
    return b;
  }

  void Write() {
    const std::string proc = root + "/proc/fs/lustre";
    char b[2048];
    std::string t;
    for (int i = 0; i < kOsts; ++i) {
      const std::string n = Name(i);
      const uint64_t w = ost_w[static_cast<size_t>(i)];
      t.clear();
      std::snprintf(b, sizeof b,
                    "snapshot_time             %lld.040584137 secs.nsecs\nstart_time                1704403917.045921397 secs.nsecs\n"
                    "elapsed_time              520199.994662740 secs.nsecs\n",
                    static_cast<long long>(snap));
      t += b;
      std::snprintf(b, sizeof b,
                    "read_bytes                %llu samples [bytes] 1048576 1048576 %llu 1875207185567318016\n"
                    "write_bytes               %llu samples [bytes] 1048576 1048576 %llu 1873640381497737216\n"
                    "read                      %llu samples [usecs] 966 411413 3265635927 10987721691189\n"
                    "write                     %llu samples [usecs] 345 69396350 6335271385 264311938051850251\n"
                    "destroy                   480013 samples [usecs] 19 7320483 113487024 660015562831354\n"
                    "create                    85 samples [usecs] 432 702932 9625730 2213291981300\n"
                    "statfs                    %llu samples [usecs] 0 35 1098349 6379453\n"
                    "set_info                  53469 samples [usecs] 1 43 409201 3723413\n",
                    (unsigned long long)w / 2, (unsigned long long)(w / 2 << 20), (unsigned long long)w,
                    (unsigned long long)(w << 20), (unsigned long long)w / 2, (unsigned long long)w,
                    (unsigned long long)(406158 + step));
      t += b;
      Put(proc + "/obdfilter/" + n + "/stats", t);
      t.clear();
      std::snprintf(b, sizeof b,
                    "snapshot_time:            %lld.050780452 secs.nsecs\nstart_time:               1704403915.835730745 secs.nsecs\n"
                    "elapsed_time:             520201.215049707 secs.nsecs\n\n",
                    static_cast<long long>(snap));
      t += b;
      const char* hists[] = {"pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %",
                             "discontiguous pages    rpcs  % cum % |  rpcs        % cum %",
                             "disk I/Os in flight    ios   % cum % |  ios         % cum %",
                             "I/O time (1/1000s)     ios   % cum % |  ios         % cum %",
                             "disk I/O size          ios   % cum % |  ios         % cum %"};
      for (const char* h : hists) {
        t += "                           read      |     write\n";
        t += h;
        t += "\n";
        for (int k = 0; k < 10; ++k) {
          std::snprintf(b, sizeof b, "%d:\t\t%10llu   0   0   | %8llu   0   0\n", 1 << k, (unsigned long long)(k == 8 ? w / 2 : k),
                        (unsigned long long)(k == 8 ? w : k));
          t += b;
        }
        t += "\n";
      }
      Put(root + "/sys/kernel/debug/lustre/osd-zfs/" + n + "/brw_stats", t);
      t = "job_stats:\n";
      for (int j = 0; j < kJobsPerOst; ++j) {
        const Job& x = jobs[static_cast<size_t>(i)][static_cast<size_t>(j)];
        std::snprintf(b, sizeof b,
                      "- job_id:          \"SLURM_JOB%d:0:node%03d\"\n  snapshot_time:   %lld.887515895 secs.nsecs\n"
                      "  start_time:      1723102025.057286226 secs.nsecs\n  elapsed_time:    12622.830229669 secs.nsecs\n",
                      i * kJobsPerOst + j, j, static_cast<long long>(x.snap));
        t += b;
        std::snprintf(b, sizeof b,
                      "  read_bytes:      { samples: %11llu, unit: bytes, min:    4096, max: 16777216, sum: %16llu, sumsq: %18llu, hist: { 4K: 1, 1M: %llu } }\n"
                      "  write_bytes:     { samples: %11llu, unit: bytes, min:    4096, max: 16777216, sum: %16llu, sumsq: %18llu, hist: { 32K: 1, 64K: 1, 128K: 4, 16M: %llu } }\n",
                      (unsigned long long)x.r, (unsigned long long)x.rb, (unsigned long long)x.rb * 9, (unsigned long long)x.r,
                      (unsigned long long)x.w, (unsigned long long)x.wb, (unsigned long long)x.wb * 7, (unsigned long long)x.w);
        t += b;
        std::snprintf(b, sizeof b,
                      "  read:            { samples: %11llu, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }\n"
                      "  write:           { samples: %11llu, unit: usecs, min:       65, max:    34699, sum:          7304967, sumsq:        80724646151 }\n",
                      (unsigned long long)x.r, (unsigned long long)x.w);
        t += b;
        for (const char* op : {"getattr", "setattr", "punch", "sync", "destroy", "create", "statfs", "get_info", "set_info", "quotactl", "prealloc"}) {
          std::snprintf(b, sizeof b,
                        "  %-16s { samples: %11llu, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }\n",
                        (std::string(op) + ":").c_str(), (unsigned long long)(std::strcmp(op, "punch") == 0 ? x.punch : 0));
          t += b;
        }
      }
      Put(proc + "/obdfilter/" + n + "/job_stats", t);
    }
    WriteMdtJobs(proc);
    Put(proc + "/mdt/bench-MDT0000/md_stats",
        "snapshot_time             " + std::to_string(snap) + ".133334020 secs.nsecs\nopen " + std::to_string(100 + step) +
            " samples [usecs] 1 2 3 4\nclose " + std::to_string(100 + step) + " samples [usecs] 1 2 3 4\n");
  }

  void Advance(int percent_jobs) {
    ++step;
    ++snap;
    for (int i = 0; i < kOsts; ++i) {
      ost_w[static_cast<size_t>(i)] += 100;
      for (int j = 0; j < kJobsPerOst; ++j) {
        if ((j + static_cast<int>(step)) % 100 >= percent_jobs) continue;
        Job& x = jobs[static_cast<size_t>(i)][static_cast<size_t>(j)];
        x.w += 4;
        x.wb += 4 << 20;
        x.punch += 1;
        x.snap = snap;
      }
    }
    for (size_t j = 0; j < mdt_jobs.size(); ++j) {
      if ((static_cast<int>(j) + static_cast<int>(step)) % 100 >= percent_jobs) continue;
      MdtJob& x = mdt_jobs[j];
      x.open += 3;
      x.getattr += 7;
      x.setattr += 1;
      x.snap = snap;
      mdt_dirty[j] = true;
    }
    Write();
  }
};

std::string Slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The samples a growing output file holds so far, reading only what was
// appended since the last call (the file grows by MBs a sample at 50,000 jobs).
struct SampleCounter {
  std::string path;
  off_t off = 0;
  size_t count = 0;
  std::string carry;
  size_t Poll() {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return count;
    char b[1 << 16];
    ssize_t n;
    while ((n = pread(fd, b, sizeof b, off)) > 0) {
      off += n;
      carry.append(b, static_cast<size_t>(n));
      const size_t nl = carry.rfind('\n');
      if (nl == std::string::npos) continue;
      static const std::string kStar = "\"sampler.source\":\"*\"";
      for (size_t p = carry.find(kStar); p != std::string::npos && p < nl; p = carry.find(kStar, p + 1)) ++count;
      carry.erase(0, nl + 1);
    }
    close(fd);
    return count;
  }
};

// GET path (default /metrics) from 127.0.0.1:port: bytes of the body (0 on failure).
size_t Scrape(int port, const std::string& path = "/metrics") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return 0;
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
  if (write(fd, req.data(), req.size()) < 0) {
    close(fd);
    return 0;
  }
  size_t total = 0;
  char b[1 << 16];
  ssize_t n;
  bool in_body = false;
  std::string head;
  while ((n = read(fd, b, sizeof b)) > 0) {
    if (in_body) {
      total += static_cast<size_t>(n);
      continue;
    }
    head.append(b, static_cast<size_t>(n));
    const size_t e = head.find("\r\n\r\n");
    if (e != std::string::npos) {
      in_body = true;
      total += head.size() - e - 4;
    }
  }
  close(fd);
  return total;
}
int g_scrape_port = 0;  // --scrape PORT: the command also serves --listen-metrics and is scraped after each sample
std::vector<double> g_scrape_ms;
std::vector<size_t> g_scrape_bytes;
bool g_lean_only = false;
bool g_command_only = false;  // --command-only: no in-process runs


struct Result {
  std::vector<double> ms;
  double cpu_ms_per_sample = 0, maxrss_mib = 0, anon_mib = 0;
  double records_per_sample = 0;
};

// Peak RSS of the child so far (VmHWM of its own address space). wait4's
// ru_maxrss is not used: posix_spawn's vfork makes it include this
// process's RSS at the exec.
// RssAnon: the part that is the process's own (heap, buffers), not the
// binary's and shared libraries' file pages.
double g_anon_peak = 0;

// The command measured: for "iosonar", $BENCH_LUSTRE_IOSONAR if set (e.g. an
// older build, for a side-by-side run), else this build's; "iosonar-exporter"
// is always this build's lean binary.
std::string BinaryPath(const std::string& binary) {
  const char* e = std::getenv("BENCH_LUSTRE_IOSONAR");
  if (binary == "iosonar" && e && *e) return e;
  return std::string(IOSONAR_BINARY_DIR) + "/" + binary;
}
double VmHwmMib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  double hwm = 0;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::strtod(line.c_str() + 6, nullptr) / 1024.0;
    if (line.rfind("RssAnon:", 0) == 0) g_anon_peak = std::max(g_anon_peak, std::strtod(line.c_str() + 8, nullptr) / 1024.0);
  }
  return hwm;
}

// binary: "iosonar" (the full front command) or "iosonar-exporter" (the lean one).
Result RunOnce(Fixture& fx, const std::string& binary, int samples, double interval, int percent, int every) {
  const std::string out = fx.root + "/out.jsonl";
  unlink(out.c_str());
  const std::string bin = BinaryPath(binary);
  const std::string count = std::to_string(samples), iv = std::to_string(interval);
  std::vector<std::string> args = {bin, "lustre", "--proc-root", fx.root, "--interval", iv, "--count", count,
                                   "--output", out, "--quiet", "--host-name", "bench", "--jobstats-every",
                                   std::to_string(every)};
  if (g_scrape_port) {
    args.push_back("--listen-metrics");
    args.push_back("127.0.0.1:" + std::to_string(g_scrape_port));
  }
  SampleCounter counter{out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, bin.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    std::perror("posix_spawn");
    std::exit(1);
  }
  // After each sample (seen in the output) advance the counters, well
  // before the next tick.
  double hwm = 0;
  g_anon_peak = 0;
  for (int k = 1; k < samples; ++k) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (counter.Poll() < static_cast<size_t>(k)) {
      hwm = std::max(hwm, VmHwmMib(pid));
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "bench_lustre: no sample %d from the exporter\n", k);
        kill(pid, SIGTERM);
        std::exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (g_scrape_port && k > 1) {  // between samples: one scrape, timed from here
      const auto s0 = std::chrono::steady_clock::now();
      const size_t bytes = Scrape(g_scrape_port);
      g_scrape_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
      g_scrape_bytes.push_back(bytes);
      hwm = std::max(hwm, VmHwmMib(pid));
    }
    fx.Advance(percent);
  }
  // Until it exits (its last sample is running).
  for (int i = 0; i < 4000; ++i) {
    double h = VmHwmMib(pid);
    if (h == 0) break;
    hwm = std::max(hwm, h);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Result r;
  // The "*" self-reports (duration) and the line count, read line by line.
  size_t lines = 0;
  {
    std::ifstream f(out);
    std::string line;
    while (std::getline(f, line)) {
      ++lines;
      if (line.find("\"sampler.source\":\"*\"") == std::string::npos) continue;
      auto d = line.find("\"sampler.duration_ns\":");
      r.ms.push_back(std::strtod(line.c_str() + d + 22, nullptr) / 1e6);
    }
  }
  unlink(out.c_str());
  r.cpu_ms_per_sample = (static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3) / samples;
  r.maxrss_mib = hwm;
  r.anon_mib = g_anon_peak;
  r.records_per_sample = static_cast<double>(lines) / samples;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::fprintf(stderr, "bench_lustre: exporter exit status %d\n", status);
  return r;
}

// The same exporter in this process, for CPU time per sample that the
// machine's load does not blur: the process's CPU time around
// Collect+FinishTick (the process's, not the thread's: the files are read on
// the exporter's reader thread, lustre/read_watchdog.h).
struct InProc {
  std::vector<double> cpu_ms, wall_ms;
  double bytes_per_sample = 0;
  double heap_mib = 0;  // malloc'd and still in use at the end (exporter state + buffers)
};

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

FILE* g_dump = nullptr;
int g_read_timeout_ms = 500;  // --read-timeout MS (0: no watchdog, reads in the sampling thread)

InProc RunInProcess(Fixture& fx, int samples, int percent, int every) {
  iosonar::lustre::LustreOptions o;
  o.proc_root = fx.root;
  o.jobstats_every = every;
  o.read_timeout_ms = g_read_timeout_ms;
  auto exp = iosonar::lustre::MakeLustreExporter(o);
  iosonar::exporters::Context ctx("bench", "", 1, "lustre");
  ctx.set_quiet(true);
  InProc r;
  size_t bytes = 0;
  for (int k = 0; k < samples; ++k) {
    if (k) fx.Advance(percent);
    const int64_t t = k;
    ctx.StartTick(static_cast<uint64_t>(k), 1700000000000000000LL + t * 1000000000LL, 1000000000LL + t * 1000000000LL, 1000000000LL);
    const double c0 = ThreadCpuMs();
    const auto w0 = std::chrono::steady_clock::now();
    exp->Collect(ctx);
    const std::string& out = ctx.FinishTick(1);
    const double c1 = ThreadCpuMs();
    if (g_dump) {
      std::string_view rest = out;
      while (!rest.empty()) {
        const size_t nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl == std::string_view::npos ? rest.size() : nl + 1);
        rest.remove_prefix(line.size());
        if (line.find("\"event.dataset\":\"iosonar.sampler\"") == std::string_view::npos)
          std::fwrite(line.data(), 1, line.size(), g_dump);
      }
    }
    if (k) {  // sample 0 is the baseline
      r.cpu_ms.push_back(c1 - c0);
      r.wall_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count());
      bytes += out.size();
    }
  }
  r.bytes_per_sample = static_cast<double>(bytes) / std::max(1, samples - 1);
  struct mallinfo2 mi = mallinfo2();
  r.heap_mib = static_cast<double>(mi.uordblks + mi.hblkhd) / 1048576.0;
  return r;
}

// The command on an empty tree: what the binary and its shared libraries
// take before any Lustre data.
double IdleRssMib(const std::string& root, const std::string& binary) {
  const std::string empty = root + "/empty";
  MkdirP(empty + "/proc/fs/lustre");
  const std::string bin = BinaryPath(binary);
  std::vector<std::string> args = {bin, "lustre", "--proc-root", empty, "--interval", "0.2", "--count", "4", "--output", "/dev/null", "--quiet"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, bin.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 0;
  double hwm = 0;
  for (int i = 0; i < 4000; ++i) {
    double h = VmHwmMib(pid);
    if (h == 0 && i > 10) break;
    hwm = std::max(hwm, h);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return hwm;
}

double Pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

// --- Peers: other exporters run as given at run time (nothing fetched or built here) ---

// Invoked as `lctl` or `lnetctl` (a symlink to this program in a directory put
// first on a peer's PATH): what the real lctl prints for `get_param P...`,
// read from the fixture under $BENCH_LUSTRE_ROOT: each parameter that matches
// as "name=value" (one line) or "name=\n" + the file (several lines), the name
// being the path under proc/fs/lustre, sys/fs/lustre or sys/kernel/debug/lustre
// with '/' as '.'. `set_param` and `lnetctl` print nothing (no LNet here).
int FakeLctl(int argc, char** argv) {
  const char* root = std::getenv("BENCH_LUSTRE_ROOT");
  const std::string self = argv[0];
  const std::string base = self.substr(self.rfind('/') + 1);
  if (base != "lctl" || !root || argc < 2 || std::string(argv[1]) != "get_param") return 0;
  static const char* const kBases[] = {"/proc/fs/lustre/", "/sys/fs/lustre/", "/sys/kernel/debug/lustre/"};
  std::vector<char> buf(1 << 20);
  int missing = 0;
  for (int i = 2; i < argc; ++i) {
    std::string pat = argv[i];
    if (pat.rfind('-', 0) == 0) continue;  // -n, -N: not used by the peers measured
    std::replace(pat.begin(), pat.end(), '.', '/');
    bool any = false;
    std::vector<std::string> seen;
    for (const char* b : kBases) {
      const std::string prefix = std::string(root) + b;
      glob_t g{};
      if (glob((prefix + pat).c_str(), 0, nullptr, &g) == 0) {
        for (size_t k = 0; k < g.gl_pathc; ++k) {
          std::string name = std::string(g.gl_pathv[k]).substr(prefix.size());
          std::replace(name.begin(), name.end(), '/', '.');
          if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
          const int fd = open(g.gl_pathv[k], O_RDONLY);
          if (fd < 0) continue;
          struct stat st{};
          if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            continue;
          }
          seen.push_back(name);
          any = true;
          ssize_t n = read(fd, buf.data(), buf.size());
          const bool multi = n > 0 && std::memchr(buf.data(), '\n', static_cast<size_t>(n)) != buf.data() + n - 1;
          std::fputs(name.c_str(), stdout);
          std::fputs(multi ? "=\n" : "=", stdout);
          while (n > 0) {
            std::fwrite(buf.data(), 1, static_cast<size_t>(n), stdout);
            n = read(fd, buf.data(), buf.size());
          }
          close(fd);
        }
      }
      globfree(&g);
    }
    if (!any) {
      std::fprintf(stderr, "error: get_param: param_path '%s': No such file or directory\n", argv[i]);
      ++missing;
    }
  }
  std::fflush(stdout);
  return missing ? 2 : 0;
}

struct Peer {
  std::string name, path, command;  // --peer NAME URLPATH COMMAND
};
std::vector<Peer> g_peers;
std::string g_self;  // this program's path (lctl/lnetctl link to it)

bool Connectable(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

struct PeerResult {
  double cpu_ms_per_scrape = 0, maxrss_mib = 0, anon_mib = 0;
  std::vector<double> scrape_ms;
  std::vector<size_t> bytes;
};

// A peer exporter as a child (`/bin/sh -c COMMAND`, ending in exec, with
// BENCH_LUSTRE_ROOT = the fixture, BENCH_LUSTRE_PORT = the port it is to
// serve on, and lctl/lnetctl = this program first on PATH). Once it accepts
// connections it is scraped `samples` times, the fixture advanced between
// scrapes as between the iosonar command's samples; then SIGTERM. CPU is
// wait4's (the peer and the lctl processes it ran and waited for) over the
// scrapes; peak RSS is the peer's VmHWM (lctl's own not included).
PeerResult RunPeer(Fixture& fx, const Peer& p, int samples, int percent, int port) {
  const std::string bindir = fx.root + "/peerbin";
  MkdirP(bindir);
  for (const char* n : {"lctl", "lnetctl"}) {
    unlink((bindir + "/" + n).c_str());
    if (symlink(g_self.c_str(), (bindir + "/" + n).c_str()) != 0) std::perror("symlink");
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("PATH=", 0) == 0) continue;
    env.push_back(kv);
  }
  const char* path = std::getenv("PATH");
  env.push_back("PATH=" + bindir + ":" + (path ? path : "/usr/bin:/bin"));
  env.push_back("BENCH_LUSTRE_ROOT=" + fx.root);
  env.push_back("BENCH_LUSTRE_PORT=" + std::to_string(port));
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", c = "-c", cmd = p.command;
  char* argv[] = {sh.data(), c.data(), cmd.data(), nullptr};
  pid_t pid;
  PeerResult r;
  if (posix_spawn(&pid, sh.c_str(), nullptr, nullptr, argv, envp.data()) != 0) {
    std::perror("posix_spawn");
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!Connectable(port)) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid || std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "bench_lustre: peer %s did not listen on port %d\n", p.name.c_str(), port);
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  g_anon_peak = 0;
  double hwm = 0;
  for (int k = 0; k < samples; ++k) {
    if (k) fx.Advance(percent);
    const auto s0 = std::chrono::steady_clock::now();
    r.bytes.push_back(Scrape(port, p.path));
    r.scrape_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
    hwm = std::max(hwm, VmHwmMib(pid));
  }
  kill(pid, SIGTERM);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  r.cpu_ms_per_scrape = (static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3) / samples;
  r.maxrss_mib = hwm;
  r.anon_mib = g_anon_peak;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  {
    const std::string a0 = argv[0];
    const std::string base = a0.substr(a0.rfind('/') + 1);
    if (base == "lctl" || base == "lnetctl") return FakeLctl(argc, argv);
  }
  {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) g_self.assign(self, static_cast<size_t>(n));
  }
  // --peer NAME URLPATH COMMAND (repeatable): taken out before the other options are read.
  {
    int w = 1;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--peer") {
        if (i + 3 >= argc) {
          std::fprintf(stderr, "bench_lustre: --peer needs NAME URLPATH COMMAND\n");
          return 2;
        }
        g_peers.push_back({argv[i + 1], argv[i + 2], argv[i + 3]});
        i += 3;
        continue;
      }
      argv[w++] = argv[i];
    }
    argc = w;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int samples = 20;
  double interval = 1.0;
  bool inproc_only = false;
  int only_scenario = -1;  // --scenario K: only the K-th (0-based) scenario (for profiling)
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--in-process-only") inproc_only = true;
  for (int i = 1; i + 1 < argc; ++i) {  // options with a value (flags are read below)
    const std::string a = argv[i];
    if (a == "--in-process-only" || a == "--lean-only" || a == "--command-only") continue;
    if (a == "--samples") samples = std::atoi(argv[i + 1]);
    else if (std::string(argv[i]) == "--interval") interval = std::atof(argv[i + 1]);
    else if (std::string(argv[i]) == "--dump") g_dump = std::fopen(argv[i + 1], "w");
    else if (std::string(argv[i]) == "--scenario") only_scenario = std::atoi(argv[i + 1]);
    else if (std::string(argv[i]) == "--read-timeout") g_read_timeout_ms = std::atoi(argv[i + 1]);
    else if (std::string(argv[i]) == "--mdt-jobs") g_mdt_jobs = std::atoi(argv[i + 1]);
    else if (std::string(argv[i]) == "--scrape") g_scrape_port = std::atoi(argv[i + 1]);
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--lean-only") g_lean_only = true;
    if (std::string(argv[i]) == "--command-only") g_command_only = true;
  }
  // On tmpfs, as /proc and /sys are in memory: the fixture's rewrites must
  // not cost disk I/O that the exporter would wait behind.
  char tmpl_shm[] = "/dev/shm/bench_lustre_XXXXXX";
  char tmpl_tmp[] = "/tmp/bench_lustre_XXXXXX";
  char* tmpl = mkdtemp(tmpl_shm);
  if (!tmpl) tmpl = mkdtemp(tmpl_tmp);
  if (!tmpl) return 1;
  Fixture fx;
  fx.root = tmpl;
  for (int i = 0; i < kOsts; ++i) {
    MkdirP(fx.root + "/proc/fs/lustre/obdfilter/" + Fixture::Name(i));
    MkdirP(fx.root + "/sys/kernel/debug/lustre/osd-zfs/" + Fixture::Name(i));
  }
  MkdirP(fx.root + "/proc/fs/lustre/mdt/bench-MDT0000");
  const auto g0 = std::chrono::steady_clock::now();
  fx.Write();
  const double gen_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count();
  std::string js = Slurp(fx.root + "/proc/fs/lustre/obdfilter/" + Fixture::Name(0) + "/job_stats");
  std::printf("bench_lustre: %d OSTs x %d jobs = %d job_stats entries (%.0f KiB of job_stats per OST, %.1f MiB in all; "
              "fixture written in %.0f ms), %d samples at %.1f s\n",
              kOsts, kJobsPerOst, kOsts * kJobsPerOst, static_cast<double>(js.size()) / 1024,
              static_cast<double>(js.size()) * kOsts / 1048576.0, gen_ms, samples, interval);
  if (g_mdt_jobs)
    std::printf("bench_lustre: the MDT's job_stats: %d entries, %.1f MiB\n", g_mdt_jobs,
                static_cast<double>(fx.mdt_text.size()) / 1048576.0);
  std::printf("\nin process (process CPU time of Collect + formatting, per sample after the baseline):\n");
  std::printf("%-40s %14s %11s %14s %12s %9s\n", "scenario", "median CPU ms", "p90 CPU ms", "median wall ms", "KiB out/smpl",
              "heap MiB");
  const std::pair<int, int> kScenarios[] = {{10, 1}, {100, 1}, {100, 2}};  // % of jobs changing, --jobstats-every
  auto Name = [](int percent, int every) {
    char name[64];
    std::snprintf(name, sizeof name, "%d%% of jobs change%s", percent, every > 1 ? ", --jobstats-every 2" : "");
    return std::string(name);
  };
  for (int si = 0; si < 3 && !g_command_only; ++si) {
    const auto [percent, every] = kScenarios[si];
    if (only_scenario >= 0 && si != only_scenario) continue;
    InProc r = RunInProcess(fx, samples, percent, every);
    const std::string name = Name(percent, every);
    std::printf("%-40s %14.2f %11.2f %14.2f %12.0f %9.1f\n", name.c_str(), Pct(r.cpu_ms, 0.5), Pct(r.cpu_ms, 0.9), Pct(r.wall_ms, 0.5),
                r.bytes_per_sample / 1024, r.heap_mib);
  }
  if (g_dump) std::fclose(g_dump);
  g_dump = nullptr;
  if (inproc_only) {
    if (std::getenv("BENCH_LUSTRE_KEEP")) {
      std::printf("fixture kept in %s\n", tmpl);
      return 0;
    }
    std::string rm = std::string("rm -rf ") + tmpl;
    return std::system(rm.c_str()) == 0 ? 0 : 1;
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  std::printf("\nload average now %.2f on %ld CPUs: wall times include waiting for a CPU\n", load[0], sysconf(_SC_NPROCESSORS_ONLN));
  // Both binaries side by side: the full front command and the lean
  // node exporter (no libcurl/OpenSSL/MariaDB/SQLite/hiredis linked).
  std::vector<const char*> kBinaries = {"iosonar", "iosonar-exporter"};
  if (g_lean_only) kBinaries = {"iosonar-exporter"};
  std::printf("\nthe command on an empty tree (binary and shared libraries only):\n");
  std::printf("%-18s %10s %10s\n", "binary", "RSS MiB", "anon MiB");
  for (const char* b : kBinaries) {
    g_anon_peak = 0;
    const double idle = IdleRssMib(fx.root, b);
    std::printf("%-18s %10.1f %10.1f   vs target: RSS %.1f / 10 MiB = %.2fx\n", b, idle, g_anon_peak, idle, idle / 10.0);
  }
  std::printf("\nthe real command (BINARY lustre --interval %.1f as a child; wall time from its own self-report, "
              "CPU from wait4, peak RSS = the child's VmHWM):\n", interval);
  std::printf("%-40s %-17s %9s %9s %9s %12s %10s %10s %12s\n", "scenario", "binary", "median ms", "p90 ms", "max ms",
              "cpu ms/smpl", "RSS MiB", "anon MiB", "records/smpl");
  for (int si = 0; si < 3; ++si) {
    const auto [percent, every] = kScenarios[si];
    if (only_scenario >= 0 && si != only_scenario) continue;
    double lean_cpu = 0;
    for (const char* b : kBinaries) {
      Result r = RunOnce(fx, b, samples, interval, percent, every);
      std::vector<double> steady(r.ms.begin() + (r.ms.size() > 1 ? 1 : 0), r.ms.end());  // sample 0 is the baseline
      const std::string name = Name(percent, every);
      std::printf("%-40s %-17s %9.2f %9.2f %9.2f %12.2f %10.1f %10.1f %12.0f\n", name.c_str(), b, Pct(steady, 0.5),
                  Pct(steady, 0.9), Pct(steady, 1.0), r.cpu_ms_per_sample, r.maxrss_mib, r.anon_mib, r.records_per_sample);
      const double rss_target = g_mdt_jobs ? 16.0 : 10.0;
      std::printf("  vs targets: CPU %.1f ms per sample / 20 ms = %.2fx, wall median %.1f ms / 20 ms = %.2fx, RSS %.1f / %.0f MiB = "
                  "%.2fx\n",
                  r.cpu_ms_per_sample, r.cpu_ms_per_sample / 20.0, Pct(steady, 0.5), Pct(steady, 0.5) / 20.0, r.maxrss_mib,
                  rss_target, r.maxrss_mib / rss_target);
      if (!g_scrape_ms.empty()) {
        std::vector<double> kib;
        for (size_t x : g_scrape_bytes) kib.push_back(static_cast<double>(x) / 1024);
        std::printf("  scrapes of /metrics between samples: %zu, median %.1f ms, %.0f KiB (min %.0f KiB)\n",
                    g_scrape_ms.size(), Pct(g_scrape_ms, 0.5), Pct(kib, 0.5), Pct(kib, 0.0));
        g_scrape_ms.clear();
        g_scrape_bytes.clear();
      }
      if (std::string(b) == "iosonar-exporter") lean_cpu = r.cpu_ms_per_sample;
    }
    for (size_t pi = 0; pi < g_peers.size(); ++pi) {
      const Peer& p = g_peers[pi];
      const int port = (g_scrape_port ? g_scrape_port : 19400) + 1 + static_cast<int>(pi);
      PeerResult r = RunPeer(fx, p, samples, percent, port);
      std::vector<double> kib;
      for (size_t x : r.bytes) kib.push_back(static_cast<double>(x) / 1024);
      const std::string name = Name(percent, every);
      std::printf("%-40s %-17s %9.2f %9.2f %9.2f %12.2f %10.1f %10.1f %12s\n", name.c_str(), p.name.c_str(), Pct(r.scrape_ms, 0.5),
                  Pct(r.scrape_ms, 0.9), Pct(r.scrape_ms, 1.0), r.cpu_ms_per_scrape, r.maxrss_mib, r.anon_mib, "-");
      std::printf("  peer %s: %zu scrapes of %s (wall ms above), median %.0f KiB (min %.0f KiB); CPU per scrape %.1f ms = %.1fx "
                  "iosonar-exporter's per sample\n",
                  p.name.c_str(), r.scrape_ms.size(), p.path.c_str(), Pct(kib, 0.5), Pct(kib, 0.0), r.cpu_ms_per_scrape,
                  lean_cpu > 0 ? r.cpu_ms_per_scrape / lean_cpu : 0.0);
    }
  }
  std::string cmd = std::string("rm -rf ") + tmpl;
  if (std::system(cmd.c_str()) != 0) return 1;
  return 0;
}
