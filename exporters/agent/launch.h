// Running a program under the tracer (`iosonar trace`, `iosonar run`;
// cli/cmd_run.cc parses their options and calls these): the preload and
// environment of the child, the drainer that ships what its processes'
// rings hold while it runs, and for an acknowledged output
// (lumberjack://) an embedded ring agent (ring_agent.h) the program hands
// its records to.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace iosonar::trace {

// What the traced program is told (IOSONAR_OUTPUT, IOSONAR_JOB_ID, ...;
// empty or -1: not set).
struct TraceEnv {
  std::string output;
  std::string job_id;
  std::string spool_dir;
  std::string ring_dir;
  int window_ms = -1;
};

// True for the outputs with acknowledged delivery (lumberjack://,
// lumberjacks://, beats://, beatss://): TraceAcked ships them.
bool IsAckedOutput(const std::string& output);

// --mpi: the MPI-IO layer, libiosonar-mpiio.so ($IOSONAR_MPIIO_LIB, else
// beside the tracer library `tracer`). "" with a message on stderr naming
// the command `cmd` when it is not there.
std::string FindMpiioLib(const std::string& tracer, const char* cmd);

// Forks and execs cmd with lib preloaded and te in its environment; returns
// the child's pid (an exec failure: the child exits 127 after saying so).
pid_t SpawnTraced(const std::vector<std::string>& cmd, const std::string& lib, const TraceEnv& te);
// Waits for the child, forwarding SIGINT/SIGTERM to it; a shell-style exit
// status (128 + the signal for a killed child).
int WaitChild(pid_t pid);

// "run-YYYYMMDDTHHMMSSZ-PID": a fresh job id for `iosonar run`.
std::string NewJobId();

// Runs cmd under the tracer with a drainer shipping its rings in te.ring_dir
// to te.output (`cmd` names the command in messages); its exit status.
int RunTraced(const char* cmd_name, const std::vector<std::string>& cmd, const std::string& lib, const TraceEnv& te);

// `iosonar trace` with an acknowledged output (IsAckedOutput): the program
// in agent mode, its rings under /dev/shm/iosonar-trace-UID-PID.XXXXXX/
// iosonar-ring-UID (0700, this run's own), shipped by an embedded agent
// through a spool; what could be neither delivered nor spooled stays in the
// ring directory (said on stderr). The program's exit status, or 1/2 when it
// could not be started.
int TraceAcked(const std::vector<std::string>& cmd, const std::string& lib, TraceEnv te);

}  // namespace iosonar::trace
