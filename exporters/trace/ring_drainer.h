// The drainer `iosonar trace` and `iosonar run` embed while their program
// runs: every period it takes from the rings in a directory what live
// processes have closed or whose window has ended, and ships what dead ones
// left (ring.h). Records so reach the output within about a window plus a
// period even when the program computes without I/O and has no thread of
// the tracer's. Stop() drains once more, for the processes that just ended.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/transport/line_sender.h"
#include "exporters/trace/ring.h"

namespace iosonar::trace {

class RingDrainer {
 public:
  // output: tcp://, a path or - (as the tracer's IOSONAR_OUTPUT); spool_dir as the tracer's.
  // Returns false (err set) if output is malformed.
  bool Start(const std::string& dir, const std::string& output, const std::string& spool_dir, int period_ms,
             std::string* err);
  DrainStats Stop();  // the final pass, then closes the sender
  ~RingDrainer();

 private:
  std::string dir_, spool_;
  std::unique_ptr<LineSender> sender_;
  std::atomic<bool> stop_{false};
  std::thread th_;
  DrainStats total_;
};

}  // namespace iosonar::trace
