// `iosonar-exporter agent` (also `iosonar agent`): the node agent of the
// tracer (ring_agent.h). One per node, started by systemd or the Slurm
// prolog; every --interval it drains the rings of the node's traced
// processes and ships them to --output (lumberjack:// for acknowledged
// delivery, with --spool-dir), recording each process's end.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/base/host.h"
#include "core/base/timeutil.h"
#include "core/transport/sink.h"
#include "exporters/framework/exporter.h"
#include "exporters/agent/ring_agent.h"
#include "core/base/url.h"

namespace iosonar::exporters {
namespace {

std::atomic<bool> g_agent_stop{false};
void OnStop(int) { g_agent_stop.store(true); }

constexpr OptionSpec kAgentOptions[] = {
    opt::String("ring-root", "DIR", "/dev/shm",
                "where the tracers' ring directories (iosonar-ring-UID) are; as root every user's is drained, "
                "otherwise only this user's")
        .Env("IOSONAR_RING_ROOT"),
    opt::Bytes("flush-bytes", "BYTES", "8M",
               "ship and commit within a pass once this much is pending; the ring of a process that ended goes "
               "out in parts of this size")
        .Min(4096),
    opt::Duration("report-interval", "SECONDS", "60",
                  "the agent's own iosonar.sampler records (rings and directories set aside, lines shipped, "
                  "records its output dropped): this often, at once when a ring is set aside, and at stop")
        .Above(0),
    opt::Flag("no-thread-merge",
              "ship each thread's runs as the tracer made them (by default the runs of a process's threads that "
              "continue each other, take turns on a file, or aggregate the same file in one interval are merged; "
              "process.threads counts them)"),
};

Result<std::unique_ptr<Exporter>> NoLoop(const Options&) {
  return Status::Internal("agent: runs its own loop");
}

int RunAgent(const Options& opts) {
  trace::RingAgent::Options ao;
  ao.ring_root = opts.Get("ring-root");
  ao.host = opts.Get("host-name");
  if (ao.host.empty()) ao.host = HostName();
  ao.all_users = geteuid() == 0;
  ao.flush_bytes = static_cast<size_t>(opts.Bytes("flush-bytes"));
  ao.quiet = opts.Flag("quiet");
  ao.merge_threads = !opts.Flag("no-thread-merge");
  ao.report_ns = opts.Flag("no-sampler-records") ? 0 : static_cast<int64_t>(opts.Seconds("report-interval") * 1e9);
  SinkOptions so;
  so.spool_dir = opts.Get("spool-dir");
  so.es.user = opts.Get("es-user");
  so.es.ca_file = opts.Get("es-ca-file");
  so.es.insecure = opts.Flag("es-insecure");
  if (const char* pw = getenv("IOSONAR_ES_PASSWORD"); pw && *pw) so.es.password = pw;
  if (const char* k = getenv("IOSONAR_ES_API_KEY"); k && *k) so.es.api_key = k;
  if (opts.Get("output") == "agent") {  // IOSONAR_OUTPUT=agent is for the traced programs
    std::fprintf(stderr, "%s agent: --output agent: the agent ships to a receiver (lumberjack://HOST:PORT, tcp://, a file)\n",
                 ProgramName());
    return 2;
  }
  auto sink = OpenSink(opts.Get("output"), so);
  if (!sink.ok()) {
    std::fprintf(stderr, "%s agent: --output: %s\n", ProgramName(), RedactUrl(sink.status().message()).c_str());
    return 2;
  }
  trace::InstallRingGuard();
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  trace::RingAgent agent(ao, sink.value().get());
  const double iv = opts.Has("interval") ? opts.Seconds("interval") : 0.5;
  const int64_t interval_ns = static_cast<int64_t>(iv * 1e9);
  const int64_t count = opts.Int("count");
  int64_t next = MonotonicNs();
  uint64_t passes = 0;
  while (!g_agent_stop.load()) {
    agent.Pass();
    ++passes;
    if (count > 0 && passes >= static_cast<uint64_t>(count)) break;
    next += interval_ns;
    if (next < MonotonicNs()) next = MonotonicNs();
    timespec ts{static_cast<time_t>(next / 1000000000), static_cast<long>(next % 1000000000)};
    while (!g_agent_stop.load() && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  if (g_agent_stop.load()) agent.Pass();  // what ended just now
  agent.Finish();
  const auto& st = agent.stats();
  const SinkCounters c = sink.value()->counters();
  if (!opts.Flag("quiet"))
    std::fprintf(stderr,
                 "%s agent: %llu passes, %llu lines (%llu trace records, %llu merged across threads), %llu rings of ended processes, "
                 "%llu malformed rings, %llu refused, %llu failed flushes (sent %llu, spooled %llu, dropped %llu); "
                 "at most %llu bytes of lines held for one ring\n",
                 ProgramName(), static_cast<unsigned long long>(st.passes), static_cast<unsigned long long>(st.lines),
                 static_cast<unsigned long long>(st.runs), static_cast<unsigned long long>(st.merged),
                 static_cast<unsigned long long>(st.rings_finished),
                 static_cast<unsigned long long>(st.malformed), static_cast<unsigned long long>(st.refused),
                 static_cast<unsigned long long>(st.flush_failures), static_cast<unsigned long long>(c.lines_sent),
                 static_cast<unsigned long long>(c.spooled), static_cast<unsigned long long>(c.dropped),
                 static_cast<unsigned long long>(st.max_take_bytes));
  return 0;
}

}  // namespace

extern const Descriptor kAgentExporter;
const Descriptor kAgentExporter = {
    "agent",
    "the node agent of the tracer: ships every traced process's ring (IOSONAR_OUTPUT=agent)",
    "The node agent of the tracer, one per node (systemd or the Slurm prolog). Every --interval (default\n"
    "0.5 s) it drains the shared-memory rings of the node's traced processes (RING_ROOT/iosonar-ring-UID;\n"
    "as root every user's, verified: a directory of that uid, mode 0700, no links followed), ships their\n"
    "records to --output and records each process's end. Processes traced with IOSONAR_OUTPUT=agent send\n"
    "nothing themselves: their runs leave the ring only once the output holds them (lumberjack:// is\n"
    "acknowledged, with --spool-dir for a receiver that is away), so nothing is lost when a job is killed\n"
    "or the collector restarts. Rings of dead processes that sent for themselves are shipped too. What\n"
    "it sets aside (a malformed ring, a refused directory) and what its output drops reach the data as its\n"
    "own iosonar.sampler records (sampler.name \"agent\", sources \"rings\" and \"output\").",
    kAgentOptions,
    0.5,
    NoLoop,
    RunAgent,
};

}  // namespace iosonar::exporters
