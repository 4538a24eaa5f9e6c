// Clocks for the benchmark programs: wall time since a point, and this
// process's CPU time (the machines are shared, so both are reported).
#pragma once
#include <time.h>

#include <chrono>
#include <cstdio>

namespace iosonar::bench {

using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds of the whole process so far.
inline double Cpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Seconds this thread has waited on a run queue for a core so far (Linux
// schedstat's run_delay; -1 when /proc does not say): on a shared machine
// the part of the wall time that is neither CPU nor blocking (I/O, locks).
inline double RunQueueWait() {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return -1;
  unsigned long long cpu_ns = 0, wait_ns = 0;
  const int n = std::fscanf(f, "%llu %llu", &cpu_ns, &wait_ns);
  std::fclose(f);
  return n == 2 ? static_cast<double>(wait_ns) / 1e9 : -1;
}

}  // namespace iosonar::bench
