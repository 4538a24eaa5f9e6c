// `iosonar trace` (run a program under the tracer) and `iosonar run` (the
// main job: trace a program into an embedded collector and print its I/O
// diagnosis; no server needed).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <atomic>
#include <thread>
#include <string>
#include <vector>

#include "redis-cache/cache.h"
#include "cli/command_error.h"
#include "cli/commands.h"
#include "core/collector/collector.h"
#include "core/store/store.h"
#include "core/base/url.h"
#include "core/base/host.h"
#include "core/transport/sink.h"
#include "exporters/agent/ring_agent.h"
#include "exporters/trace/ring_drainer.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

struct TraceEnv {
  std::string output;
  std::string job_id;
  std::string spool_dir;
  std::string ring_dir;
  int window_ms = -1;
};

// While the program runs, a drainer ships what its processes' rings hold
// (closed runs, and runs whose window ended while the program computes) and,
// once they die without their exit path (SIGTERM, SIGKILL, a crash), what
// they left; their end is recorded.
struct Drainer {
  Drainer(const char* cmd, const TraceEnv& te) : cmd_(cmd) {
    std::string spool = te.spool_dir.empty() ? "/tmp/iosonar-spool-" + std::to_string(geteuid()) : te.spool_dir;
    std::string err;
    if (!d_.Start(te.ring_dir, te.output.empty() ? "-" : te.output, spool, 500, &err))
      std::fprintf(stderr, "iosonar %s: no ring drainer: %s\n", cmd, err.c_str());
  }
  void Finish() {
    trace::DrainStats st = d_.Stop();
    if (st.rings)
      std::fprintf(stderr, "iosonar %s: shipped the unsent records of %llu process(es) that ended without exiting (%llu lines)\n",
                   cmd_, static_cast<unsigned long long>(st.rings), static_cast<unsigned long long>(st.lines));
  }
  const char* cmd_;
  trace::RingDrainer d_;
};

// `iosonar trace --output lumberjack://...`: acknowledged delivery for the
// tracer too. The program runs in agent mode (IOSONAR_OUTPUT=agent: it sends
// nothing itself) with its rings under a ring root of this run's own, and an
// embedded RingAgent (ring_agent.h, the node agent's code) ships them every
// 500 ms through the Lumberjack sender; a run leaves a ring only once the
// receiver acknowledged it or it is in the sender's spool, so nothing is lost
// when the receiver dies or the program is killed.
bool IsAckedOutput(const std::string& o) {
  return o.starts_with("lumberjack://") || o.starts_with("lumberjacks://") || o.starts_with("beats://") ||
         o.starts_with("beatss://");
}

class EmbeddedAgent {
 public:
  // root: a directory of this run's own holding iosonar-ring-UID.
  bool Start(const std::string& root, const std::string& output, const std::string& spool_dir, bool spool_default,
             std::string* err) {
    SinkOptions so;
    so.spool_dir = spool_dir;
    so.spool_fallback = spool_default;
    auto sink = OpenSink(output, so);
    if (!sink.ok()) {
      *err = sink.status().message();
      return false;
    }
    sink_ = std::move(*sink);
    trace::RingAgent::Options ao;
    ao.ring_root = root;
    ao.host = HostName();
    ao.all_users = false;
    ao.quiet = false;
    // A ring root of this run's own holds only this run's rings: nothing to
    // set aside; what the output dropped is in the summary on stderr.
    ao.report_ns = 0;
    trace::InstallRingGuard();
    agent_ = std::make_unique<trace::RingAgent>(ao, sink_.get());
    th_ = std::thread([this] {
      while (!stop_.load()) {
        agent_->Pass();
        for (int i = 0; i < 50 && !stop_.load(); ++i) usleep(10000);
      }
    });
    return true;
  }
  // Final passes after the program ended: until its rings are gone, or the
  // receiver (and the spool) cannot take them; true if nothing is left.
  bool Finish(const std::string& ring_dir) {
    stop_.store(true);
    if (th_.joinable()) th_.join();
    if (!agent_) return true;
    for (int i = 0; i < 20; ++i) {
      if (agent_->Pass() && RingsLeft(ring_dir) == 0) break;
      usleep(100000);
    }
    const auto& st = agent_->stats();
    const SinkCounters c = sink_->counters();
    std::fprintf(stderr,
                 "iosonar trace: %llu lines shipped (%llu acknowledged, %llu spooled for a later resend, %llu dropped)\n",
                 static_cast<unsigned long long>(st.lines), static_cast<unsigned long long>(c.lines_sent),
                 static_cast<unsigned long long>(c.spooled), static_cast<unsigned long long>(c.dropped));
    return RingsLeft(ring_dir) == 0;
  }
  ~EmbeddedAgent() {
    stop_.store(true);
    if (th_.joinable()) th_.join();
  }
  static size_t RingsLeft(const std::string& dir) {
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec))
      n += it->path().filename().string().starts_with("ring-");
    return n;
  }

 private:
  std::unique_ptr<RecordSink> sink_;
  std::unique_ptr<trace::RingAgent> agent_;
  std::atomic<bool> stop_{false};
  std::thread th_;
};

// Splits argv at "--" (or at the first positional) into options and the command.
void SplitCommand(int argc, char** argv, std::vector<std::string>* opts, std::vector<std::string>* cmd) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    opts->push_back(a);
    // Every option of run and trace but --help and --mpi takes a value; it may follow as the next argument.
    if (a.find('=') == std::string::npos && i + 1 < argc && a != "--help" && a != "-h" && a != "--mpi")
      opts->push_back(argv[++i]);
  }
  for (; i < argc; ++i) cmd->push_back(argv[i]);
}

// --mpi: the MPI-IO layer, libiosonar-mpiio.so ($IOSONAR_MPIIO_LIB, else
// beside the tracer library). "" with a message when it is not there.
std::string FindMpiioLib(const std::string& tracer, const char* cmd) {
  std::string lib;
  if (const char* e = getenv("IOSONAR_MPIIO_LIB"); e && *e) {
    lib = e;
  } else {
    lib = tracer.substr(0, tracer.rfind('/') + 1) + "libiosonar-mpiio.so";
  }
  if (access(lib.c_str(), R_OK) != 0) {
    std::cerr << "iosonar " << cmd << ": --mpi: " << lib
              << " not found (it is built only where MPI's headers are: Debian's libopenmpi-dev; or set IOSONAR_MPIIO_LIB)\n";
    return "";
  }
  return lib;
}

// Forks and execs cmd under the tracer; returns the child's pid.
pid_t SpawnTraced(const std::vector<std::string>& cmd, const std::string& lib, const TraceEnv& te) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  std::string preload = lib;
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!te.output.empty()) setenv("IOSONAR_OUTPUT", te.output.c_str(), 1);
  if (!te.job_id.empty()) setenv("IOSONAR_JOB_ID", te.job_id.c_str(), 1);
  if (!te.spool_dir.empty()) setenv("IOSONAR_SPOOL_DIR", te.spool_dir.c_str(), 1);
  if (!te.ring_dir.empty()) setenv("IOSONAR_RING_DIR", te.ring_dir.c_str(), 1);
  if (te.window_ms >= 0) setenv("IOSONAR_WINDOW_MS", std::to_string(te.window_ms).c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : cmd) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "iosonar: cannot run '%s': %s\n", args[0], std::strerror(errno));
  _exit(127);
}

pid_t g_child = -1;
void ForwardSignal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// Waits for the child, forwarding SIGINT/SIGTERM; returns a shell-style exit code.
int WaitChild(pid_t pid) {
  g_child = pid;
  struct sigaction sa{};
  sa.sa_handler = ForwardSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  g_child = -1;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

std::string NewJobId() {
  char b[64];
  time_t t = time(nullptr);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(b, sizeof b, "run-%Y%m%dT%H%M%SZ", &tm);
  return std::string(b) + "-" + std::to_string(getpid());
}

// The options before the command (SplitCommand) and the command: -1 to go
// on, else the exit status (2 for a bad option or no command, 0 after --help).
int ParseOpts(const char* name, po::options_description& desc, const std::vector<std::string>& opts,
              const std::vector<std::string>& cmd, po::variables_map* vm) {
  try {
    po::store(po::command_line_parser(opts).options(desc).run(), *vm);
    po::notify(*vm);
  } catch (const po::error& e) {
    return CommandError(name, 2, e.what());
  }
  if (vm->count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (cmd.empty())
    return CommandError(name, 2, "no command given (usage: iosonar ", name, " [OPTIONS] -- COMMAND ...)");
  return -1;
}

// After the run: the job's summary from the store (stdout, --json, Redis).
// Returns the program's exit status rc, or 1 for a store failure after a program that succeeded.
int PrintDiagnosis(const std::string& store_dir, const std::string& job_id, const std::string& json_path,
                   const std::string& redis, int rc) {
  auto store = OpenSqliteStore(store_dir);
  if (!store.ok()) return CommandError("run", rc ? rc : 1, store.status().message());
  auto sum = analysis::SummarizeJob(**store, job_id);
  if (!sum.ok()) return CommandError("run", rc, sum.status().message(), " (the program did no traced file I/O?)");
  std::cout << TerminalSafe(analysis::SummaryToTable(*sum));
  std::string json = analysis::SummaryToJson(*sum, true);
  if (!json_path.empty())
    if (Status s = WriteTextFile(json_path, json + "\n"); !s.ok()) std::cerr << "iosonar run: " << s.message() << "\n";
  if (!redis.empty()) {
    if (Status s = cache::CacheJobSummary(redis, job_id, json); !s.ok())
      std::cerr << "iosonar run: summary not cached: " << s.message() << "\n";
    else
      std::cerr << "iosonar run: summary cached in Redis under " << cache::JobSummaryKey(job_id) << "\n";
  }
  std::cerr << "iosonar run: records stored in " << store_dir << "/store.db\n";
  return rc;
}

// iosonar trace with a lumberjack:// output (IsAckedOutput): the program in
// agent mode, its rings under /dev/shm/iosonar-trace-UID-PID/iosonar-ring-UID
// (both 0700, this run's own), shipped by an EmbeddedAgent.
int TraceAcked(const std::vector<std::string>& cmd, const std::string& lib, TraceEnv te) {
  const std::string uid = std::to_string(geteuid());
  std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  // A random suffix (mkdtemp): another user cannot make the name first.
  std::string tmpl = base + "/iosonar-trace-" + uid + "-" + std::to_string(getpid()) + ".XXXXXX";
  if (!mkdtemp(tmpl.data())) return CommandError("trace", 1, "cannot create ", tmpl, ": ", std::strerror(errno));
  const std::string root = tmpl;
  te.ring_dir = root + "/iosonar-ring-" + uid;
  if (int fd = trace::OpenRingDir(te.ring_dir.c_str()); fd >= 0) {
    close(fd);
  } else {
    std::cerr << "iosonar trace: cannot create the ring directory " << te.ring_dir << "\n";
    rmdir(root.c_str());
    return 1;
  }
  const std::string output = te.output;
  const bool spool_default = te.spool_dir.empty();
  if (spool_default) te.spool_dir = "/tmp/iosonar-spool-" + uid;
  EmbeddedAgent agent;
  std::string err;
  if (!agent.Start(root, output, te.spool_dir, spool_default, &err)) {
    std::cerr << "iosonar trace: --output: " << err << "\n";
    rmdir(te.ring_dir.c_str());
    rmdir(root.c_str());
    return 2;
  }
  te.output = "agent";
  pid_t child = SpawnTraced(cmd, lib, te);
  int rc = WaitChild(child);
  if (agent.Finish(te.ring_dir)) {
    rmdir(te.ring_dir.c_str());
    rmdir(root.c_str());
  } else {
    std::cerr << "iosonar trace: records could be neither delivered nor spooled; they stay in " << te.ring_dir
              << " (ship them with `iosonar agent --ring-root " << root << " --output ... --count 1`)\n";
  }
  return rc;
}

}  // namespace

int CmdTrace(int argc, char** argv) {
  std::vector<std::string> opts, cmd;
  SplitCommand(argc, argv, &opts, &cmd);
  TraceEnv te;
  po::options_description desc(
      "usage: iosonar trace [OPTIONS] [--] COMMAND [ARGS...]\n\n"
      "Runs COMMAND with libiosonar-trace.so preloaded. Records (JSON lines) go to --output:\n"
      "tcp://HOST:PORT (the collector or Logstash), a file path, or - (stdout, the default).\n"
      "When the receiver is unreachable they are spooled and resent later.\n"
      "lumberjack://HOST:PORT (also lumberjacks:// with TLS, beats://): acknowledged delivery; the\n"
      "program then sends nothing itself and an embedded agent ships its rings, so nothing is lost\n"
      "when the receiver dies or the program is killed.\n\noptions");
  desc.add_options()("help,h", "show this help")("output,o", po::value(&te.output), "where records go (also $IOSONAR_OUTPUT)")(
      "job-id", po::value(&te.job_id), "job id for the records (default $SLURM_JOB_ID, $IOSONAR_JOB_ID)")(
      "window-ms", po::value(&te.window_ms), "compression time window in ms (default 1000)")(
      "spool-dir", po::value(&te.spool_dir), "spool directory (default /tmp/iosonar-spool-UID)")(
      "mpi", po::bool_switch(), "also record the MPI-IO layer (preloads libiosonar-mpiio.so beside the tracer)");
  po::variables_map vm;
  if (int rc = ParseOpts("trace", desc, opts, cmd, &vm); rc >= 0) return rc;
  te.output = ResolveSetting(te.output, "IOSONAR_OUTPUT", "output");
  const bool acked = IsAckedOutput(te.output);
  if (!te.output.empty() && !acked) {
    if (auto u = ParseOutputUrl(te.output); !u.ok()) return CommandError("trace", 2, u.status().message());
  }
  std::string lib = FindTracerLib();
  if (lib.empty()) return CommandError("trace", 1, "libiosonar-trace.so not found (set IOSONAR_TRACE_LIB)");
  if (vm["mpi"].as<bool>()) {
    std::string m = FindMpiioLib(lib, "trace");
    if (m.empty()) return 1;
    lib += ":" + m;
  }
  // The program's rings in a directory of this run's own (the drainer ships
  // what it finds there to this run's output, never another job's), unless
  // IOSONAR_RING_DIR names one (e.g. to ship what killed processes left there).
  char ring[512];
  bool own_dir = !getenv("IOSONAR_RING_DIR") || !*getenv("IOSONAR_RING_DIR");
  if (own_dir && !acked) {
    bool fell_back = false;
    if (int fd = trace::OpenDefaultRingDir(ring, sizeof ring, &fell_back); fd >= 0) close(fd);
    if (fell_back)
      std::cerr << "iosonar trace: the ring directory of uid " << geteuid()
                << " is taken by another user (not a private directory of ours); using " << ring << "\n";
  } else {
    trace::DefaultRingDir(ring, sizeof ring);
  }
  te.ring_dir = ring;
  if (own_dir) te.ring_dir = std::string(ring) + "/trace-" + std::to_string(getpid());
  if (acked) return TraceAcked(cmd, lib, te);
  pid_t child = SpawnTraced(cmd, lib, te);
  Drainer drain("trace", te);  // started after the fork: the child execs at once
  int rc = WaitChild(child);
  drain.Finish();
  if (own_dir) rmdir(te.ring_dir.c_str());  // empty unless a process of the program still runs
  return rc;
}

int CmdRun(int argc, char** argv) {
  std::vector<std::string> opts, cmd;
  SplitCommand(argc, argv, &opts, &cmd);
  std::string json_path, store_dir, redis, job_id;
  int window_ms = -1;
  po::options_description desc(
      "usage: iosonar run [OPTIONS] [--] COMMAND [ARGS...]\n\n"
      "The main job, no server needed: starts an embedded collector, runs COMMAND under the\n"
      "tracer with a fresh job id, then prints the job's I/O summary (bandwidth, IOPS, request\n"
      "sizes, metadata load, I/O mode) and leaves the record store in a directory.\n"
      "Exits with COMMAND's exit status.\n\noptions");
  desc.add_options()("help,h", "show this help")("json", po::value(&json_path), "also write the summary as JSON to this file")(
      "store", po::value(&store_dir), "store directory (default ./iosonar-run-JOBID)")(
      "redis", po::value(&redis), "cache the summary in Redis (redis://HOST:PORT/DB; also $IOSONAR_REDIS)")(
      "job-id", po::value(&job_id), "job id to use (default: a fresh run-... id)")(
      "window-ms", po::value(&window_ms), "tracer compression window in ms (default 1000)")(
      "mpi", po::bool_switch(), "also record the MPI-IO layer (preloads libiosonar-mpiio.so beside the tracer): "
      "the summary then shows the logical mode of the MPI-IO calls beside the physical one");
  po::variables_map vm;
  if (int rc = ParseOpts("run", desc, opts, cmd, &vm); rc >= 0) return rc;
  redis = ResolveSetting(redis, "IOSONAR_REDIS", "redis");
  if (job_id.empty()) job_id = NewJobId();
  if (store_dir.empty()) store_dir = "iosonar-run-" + job_id;
  std::error_code ec;
  std::filesystem::create_directories(store_dir, ec);
  if (ec) return CommandError("run", 1, "cannot create store directory ", store_dir, ": ", ec.message());
  store_dir = std::filesystem::canonical(store_dir).string();
  std::string lib = FindTracerLib();
  if (lib.empty()) return CommandError("run", 1, "libiosonar-trace.so not found (set IOSONAR_TRACE_LIB)");
  if (vm["mpi"].as<bool>()) {
    std::string m = FindMpiioLib(lib, "run");
    if (m.empty()) return 1;
    lib += ":" + m;
  }

  CollectorOptions co;
  co.listen = "tcp://127.0.0.1:0";
  co.store_dir = store_dir;
  co.redis_url = redis;
  auto col = Collector::Start(co);
  if (!col.ok()) return CommandError("run", 1, "cannot start the embedded collector: ", col.status().message());
  TraceEnv te;
  te.output = "tcp://127.0.0.1:" + std::to_string((*col)->port());
  te.job_id = job_id;
  te.spool_dir = store_dir + "/spool";
  // The rings in a directory of this run's own under the user's ring
  // directory (/dev/shm), never in the store: a store in the job's working
  // directory may be on Lustre or NFS, where a ring per process costs.
  char ring[512];
  if (int fd = trace::OpenDefaultRingDir(ring, sizeof ring); fd >= 0) close(fd);
  te.ring_dir = std::string(ring) + "/run-" + std::to_string(getpid());
  te.window_ms = window_ms;
  std::cerr << "iosonar run: job " << job_id << ", store " << store_dir << "\n";
  pid_t child = SpawnTraced(cmd, lib, te);
  Drainer drain("run", te);  // started after the fork: the child execs at once
  int rc = WaitChild(child);
  drain.Finish();
  rmdir(te.ring_dir.c_str());  // empty unless a process of the program still runs
  // Every traced process flushed at exit or was drained; wait until the collector stored it all.
  if (Status s = (*col)->Drain(0, 30000); !s.ok()) std::cerr << "iosonar run: " << s.message() << "\n";
  CollectorStats cs = (*col)->stats();
  if (Status s = (*col)->Stop(); !s.ok()) std::cerr << "iosonar run: " << s.message() << "\n";
  if (cs.rejected) std::cerr << "iosonar run: " << cs.rejected << " malformed lines set aside in " << store_dir << "/deadletter.jsonl\n";

  return PrintDiagnosis(store_dir, job_id, json_path, redis, rc);
}

}  // namespace iosonar::cli
