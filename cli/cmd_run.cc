// `iosonar trace` (run a program under the tracer) and `iosonar run` (the
// main job: trace a program into an embedded collector and print its I/O
// diagnosis; no server needed).
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "redis-cache/cache.h"
#include "cli/command_error.h"
#include "cli/commands.h"
#include "core/collector/collector.h"
#include "core/store/store.h"
#include "core/base/url.h"
#include "core/base/host.h"
#include "exporters/agent/launch.h"
#include "exporters/trace/ring.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

using trace::TraceEnv;

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
  const bool acked = trace::IsAckedOutput(te.output);
  if (!te.output.empty() && !acked) {
    if (auto u = ParseOutputUrl(te.output); !u.ok()) return CommandError("trace", 2, u.status().message());
  }
  std::string lib = FindTracerLib();
  if (lib.empty()) return CommandError("trace", 1, "libiosonar-trace.so not found (set IOSONAR_TRACE_LIB)");
  if (vm["mpi"].as<bool>()) {
    std::string m = trace::FindMpiioLib(lib, "trace");
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
  if (acked) return trace::TraceAcked(cmd, lib, te);
  int rc = trace::RunTraced("trace", cmd, lib, te);
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
  if (job_id.empty()) job_id = trace::NewJobId();
  if (store_dir.empty()) store_dir = "iosonar-run-" + job_id;
  std::error_code ec;
  std::filesystem::create_directories(store_dir, ec);
  if (ec) return CommandError("run", 1, "cannot create store directory ", store_dir, ": ", ec.message());
  store_dir = std::filesystem::canonical(store_dir).string();
  std::string lib = FindTracerLib();
  if (lib.empty()) return CommandError("run", 1, "libiosonar-trace.so not found (set IOSONAR_TRACE_LIB)");
  if (vm["mpi"].as<bool>()) {
    std::string m = trace::FindMpiioLib(lib, "run");
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
  int rc = trace::RunTraced("run", cmd, lib, te);
  rmdir(te.ring_dir.c_str());  // empty unless a process of the program still runs
  // Every traced process flushed at exit or was drained; wait until the collector stored it all.
  if (Status s = (*col)->Drain(0, 30000); !s.ok()) std::cerr << "iosonar run: " << s.message() << "\n";
  CollectorStats cs = (*col)->stats();
  if (Status s = (*col)->Stop(); !s.ok()) std::cerr << "iosonar run: " << s.message() << "\n";
  if (cs.rejected) std::cerr << "iosonar run: " << cs.rejected << " malformed lines set aside in " << store_dir << "/deadletter.jsonl\n";

  return PrintDiagnosis(store_dir, job_id, json_path, redis, rc);
}

}  // namespace iosonar::cli
