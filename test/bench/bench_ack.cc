// Acknowledged delivery (Lumberjack v2) against the unacknowledged JSON-lines
// path, side by side in one run: the same records, the same in-process
// collector and SQLite store, alternating rounds. A round's time runs until
// every record is stored: for Lumberjack, until the last ACK (the collector
// acknowledges only stored records); for JSON lines, until the collector has
// drained the connection and stored its batch. Lumberjack runs twice per
// round: frames as they are (compression_level=0) and zlib-compressed windows
// (compression_level, default 3 as Filebeat's; 0 = skip the compressed runs).
//
//   bench_ack [RECORDS_PER_ROUND] [ROUNDS] [WINDOW] [COMPRESSION_LEVEL]
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <algorithm>

#include <unistd.h>

#include "core/collector/collector.h"
#include "core/transport/line_sender.h"
#include "core/transport/lumberjack_sender.h"
#include "test/bench/bench_clock.h"

using namespace iosonar;
using namespace iosonar::bench;

namespace {

std::string Lines(int64_t stream, int n) {
  std::string out;
  out.reserve(static_cast<size_t>(n) * 420);
  for (int i = 0; i < n; ++i)
    out += "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" +
           std::to_string(stream) + ",\"event.seq\":" + std::to_string(i) +
           ",\"host.name\":\"n1\",\"job.id\":\"7\",\"process.pid\":1,\"process.tid\":1,\"io.op\":\"write\","
           "\"io.layer\":\"posix\",\"file.path\":\"/scratch/out\",\"io.fd\":3,\"io.offset\":" +
           std::to_string(int64_t{i} * 4096) +
           ",\"io.size\":4096,\"io.count\":1,\"io.bytes\":4096,\"event.start_ns\":1,\"event.end_ns\":2,"
           "\"io.duration_ns\":1}\n";
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const uint32_t window = argc > 3 ? static_cast<uint32_t>(std::atoi(argv[3])) : 1024;
  const int level = argc > 4 ? std::atoi(argv[4]) : 3;
  char tmpl[] = "/tmp/iosonar-bench-ack-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = std::string(tmpl) + "/store";
  auto c = Collector::Start(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  const std::string port = std::to_string(c.value()->port());
  std::vector<double> plain, acked, zacked;
  uint64_t wire[2] = {0, 0};  // bytes the sender wrote: plain frames, compressed
  int64_t stream = 1;
  int connections = 0;
  for (int r = 0; r < rounds; ++r) {
    {  // JSON lines over TCP, no acknowledgement
      const std::string data = Lines(stream++, n);
      auto t0 = Clock::now();
      LineSender s;
      LineSender::Options lo;
      const std::string out = "tcp://127.0.0.1:" + port;
      lo.output = out.c_str();
      char err[256];
      if (!s.Init(lo, err, sizeof err)) return 1;
      for (size_t pos = 0; pos < data.size();) {  // 1 MiB sends, whole lines
        size_t end = std::min(data.size(), pos + (1u << 20));
        end = data.rfind('\n', end - 1) + 1;
        uint64_t lines = 0;
        for (size_t k = pos; k < end; ++k) lines += data[k] == '\n';
        s.Send(data.data() + pos, end - pos, lines);
        pos = end;
      }
      s.Close();
      ++connections;
      if (!c.value()->Drain(connections, 600000).ok()) return 1;
      plain.push_back(Since(t0));
    }
    // Lumberjack v2, every window acknowledged once stored: plain frames, then compressed.
    // (Alternating which goes first.)
    for (int k = 0; k < (level > 0 ? 2 : 1); ++k) {
      const int z = level > 0 && r % 2 ? 1 - k : k;
      const std::string data = Lines(stream++, n);
      auto t0 = Clock::now();
      LumberjackSender s;
      LumberjackSender::Options lo;
      lo.host = "127.0.0.1";
      lo.port = port;
      lo.window = window;
      lo.compression_level = z ? level : 0;
      if (!s.Init(lo).ok()) return 1;
      if (!s.Send(data).ok() || !s.Flush().ok() || s.counters().acked != static_cast<uint64_t>(n)) {
        std::fprintf(stderr, "lumberjack round failed\n");
        return 1;
      }
      (z ? zacked : acked).push_back(Since(t0));
      wire[z] += s.counters().bytes_sent;
      ++connections;
    }
  }
  const int lj_runs = level > 0 ? 2 : 1;
  (void)c.value()->Drain(connections, 600000);
  const auto st = c.value()->stats();
  (void)c.value()->Stop();
  const double mp = Median(plain), ma = Median(acked);
  const uint64_t expect = static_cast<uint64_t>(n) * static_cast<uint64_t>(rounds) * (1 + lj_runs);
  std::printf("bench_ack: %d records x %d rounds, window %u, stored %" PRIu64 " (expected %" PRIu64 ")\n", n, rounds,
              window, st.stored, expect);
  const double per = static_cast<double>(n) * rounds;
  std::printf("  JSON lines, no ack                 median %.3f s  %.0f records/s\n", mp, n / mp);
  std::printf("  Lumberjack, acked, uncompressed    median %.3f s  %.0f records/s  %.1f wire B/record\n", ma, n / ma,
              static_cast<double>(wire[0]) / per);
  if (level > 0) {
    const double mz = Median(zacked);
    std::printf("  Lumberjack, acked, zlib level %d    median %.3f s  %.0f records/s  %.1f wire B/record\n", level, mz,
                n / mz, static_cast<double>(wire[1]) / per);
    std::printf("  acked / plain time: uncompressed %.3f, compressed %.3f (target <= 1.10)\n", ma / mp, mz / mp);
  } else {
    std::printf("  acked / plain time   %.3f (target <= 1.10)\n", ma / mp);
  }
  std::string rm = std::string("rm -rf ") + tmpl;
  return std::system(rm.c_str()) == 0 && st.stored == expect ? 0 : 1;
}
