// Reading what the tracer emitted, for the integration tests: every line goes
// through the collector's own schema validation (ParseRecordInsitu), so any
// undeclared or mistyped field fails the test that produced it.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "test/testutil/testutil.h"

namespace iosonar::test {

struct TraceLine {
  std::string dataset, op, layer, path, action, job;
  int64_t pid = 0, tid = 0, fd = -1, offset = -1, size = 0, count = 0, bytes = 0, err = 0, start = 0, end = 0, dur = 0;
  int64_t stream = 0, seq = 0, raw_ops = 0, records = 0, dropped = 0, spooled = 0;
  int64_t threads = 1, merged = 0;  // process.threads (1 when absent), tracer.merged
  int64_t io_uring_sqes = -1;       // tracer.io_uring_sqes (-1 when absent)
  int64_t untraced_execs = 0;       // tracer.untraced_execs (0 when absent)
  std::string untraced_exec;        // tracer.untraced_exec
  bool aggregated = false;
  int64_t stride = 0;
  int64_t ops_seq = 0, ops_strided = 0, ops_random = 0;
  bool has_ops_seq = false;  // io.ops_sequential present (every data record, detail or aggregate)
  std::string mmap_prot, mmap_flags;  // mmap runs
  bool collective = false;            // mpiio runs: mpi.collective
  int64_t comm_size = 0;              // mpiio runs: mpi.comm_size
};

// Parses JSON lines; REQUIREs that each one validates against the schema.
std::vector<TraceLine> ParseTraceLines(const std::string& text);

// Runs argv under the tracer with records going to a file; returns the records.
struct Traced {
  RunResult run;
  std::vector<TraceLine> lines;
};
Traced RunTraced(const std::vector<std::string>& argv, const std::string& out_file,
                 std::map<std::string, std::string> env = {});

std::string ProgramPath(const std::string& name);

// A loopback TCP receiver that keeps everything sent to it, connection after
// connection, until Finish() (call it once the senders have exited).
class LineListener {
 public:
  LineListener();
  ~LineListener();
  int port() const { return port_; }
  std::string Finish();
  std::string Snapshot();  // the complete lines received so far

 private:
  std::mutex mu_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread th_;
  std::string data_;
};  // test programs in the build tree

// Sum of io.bytes and io.count of op records on a path.
struct OpTotals {
  int64_t bytes = 0, count = 0, records = 0;
};
OpTotals Totals(const std::vector<TraceLine>& lines, const std::string& op, const std::string& path_suffix);

}  // namespace iosonar::test
