// See launch.h.
#include "exporters/agent/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "core/base/host.h"
#include "core/transport/sink.h"
#include "exporters/agent/ring_agent.h"
#include "exporters/trace/ring.h"
#include "exporters/trace/ring_drainer.h"

namespace iosonar::trace {

namespace {

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
    DrainStats st = d_.Stop();
    if (st.rings)
      std::fprintf(stderr, "iosonar %s: shipped the unsent records of %llu process(es) that ended without exiting (%llu lines)\n",
                   cmd_, static_cast<unsigned long long>(st.rings), static_cast<unsigned long long>(st.lines));
  }
  const char* cmd_;
  RingDrainer d_;
};

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
    RingAgent::Options ao;
    ao.ring_root = root;
    ao.host = HostName();
    ao.all_users = false;
    ao.quiet = false;
    // A ring root of this run's own holds only this run's rings: nothing to
    // set aside; what the output dropped is in the summary on stderr.
    ao.report_ns = 0;
    InstallRingGuard();
    agent_ = std::make_unique<RingAgent>(ao, sink_.get());
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
  std::unique_ptr<RingAgent> agent_;
  std::atomic<bool> stop_{false};
  std::thread th_;
};

}  // namespace

bool IsAckedOutput(const std::string& o) {
  return o.starts_with("lumberjack://") || o.starts_with("lumberjacks://") || o.starts_with("beats://") ||
         o.starts_with("beatss://");
}

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

namespace {
pid_t g_child = -1;
void ForwardSignal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}
}  // namespace

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

int RunTraced(const char* cmd_name, const std::vector<std::string>& cmd, const std::string& lib, const TraceEnv& te) {
  pid_t child = SpawnTraced(cmd, lib, te);
  Drainer drain(cmd_name, te);  // started after the fork: the child execs at once
  int rc = WaitChild(child);
  drain.Finish();
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
  if (!mkdtemp(tmpl.data())) {
    std::cerr << "iosonar trace: cannot create " << tmpl << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  const std::string root = tmpl;
  te.ring_dir = root + "/iosonar-ring-" + uid;
  if (int fd = OpenRingDir(te.ring_dir.c_str()); fd >= 0) {
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

}  // namespace iosonar::trace
