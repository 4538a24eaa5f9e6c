// Clocks for the benchmark programs: wall time since a point, and this
// process's CPU time (the machines are shared, so both are reported).
#pragma once
#include <time.h>

#include <chrono>

namespace iosonar::bench {

using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds of the whole process so far.
inline double Cpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace iosonar::bench
