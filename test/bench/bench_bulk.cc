// bench_bulk: the cost of turning records into Elasticsearch _bulk bodies,
// on one core (thread CPU time), and the bytes each record costs on the wire.
//
//   (a) sink path    a JSON line -> schema check (ParseRecordInsitu), data
//                    stream name, _id, `create` action + the line as source:
//                    what `--output https://...` (EsSink) does per record
//   (b) store path   a ParsedRecord -> JSON source re-rendered from the
//                    fields + action: what the ES store's Append does
// Bytes/record is the NDJSON (action + source + 2 newlines) over records.
// Each figure is the median of --runs runs. Nothing is sent anywhere: the
// network and Elasticsearch's side are not measured here.
//   bench_bulk [--records N] [--runs R]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/es_client.h"
#include "core/records/record.h"
#include "core/base/timeutil.h"

using namespace iosonar;

namespace {

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Typical tracer records (the README's example shape): 20 fields, ~400 bytes.
std::string Line(uint64_t i) {
  const int64_t ts = 1795331887883000000 + static_cast<int64_t>(i) * 1000000;
  char b[1024];
  int n = std::snprintf(
      b, sizeof b,
      "{\"@timestamp\":\"%s\",\"event.seq\":%llu,\"event.dataset\":\"iosonar.trace\",\"event.stream\":1762340152154796899,"
      "\"host.name\":\"n17\",\"job.id\":\"4242\",\"process.pid\":4960,\"process.rank\":3,\"process.tid\":4960,\"io.op\":\"write\","
      "\"io.layer\":\"posix\",\"file.path\":\"/scratch/run/ckpt.%llu\",\"file.id\":\"eeb3b6e3ec27bd2f\",\"io.fd\":3,\"io.offset\":%llu,"
      "\"io.size\":4096,\"io.bytes\":4096000,\"io.count\":1000,\"event.start_ns\":%lld,\"event.end_ns\":%lld,\"io.duration_ns\":2951080}",
      FormatIsoMillis(ts).c_str(), static_cast<unsigned long long>(i), static_cast<unsigned long long>(i % 64),
      static_cast<unsigned long long>(i * 4096000), static_cast<long long>(ts), static_cast<long long>(ts + 3268838));
  return std::string(b, static_cast<size_t>(n));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 1000000;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--records")) n = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
  }
  std::vector<std::string> lines;
  lines.reserve(n);
  size_t line_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    lines.push_back(Line(i));
    line_bytes += lines.back().size() + 1;
  }
  std::printf("bench_bulk: %zu iosonar.trace records, %.1f bytes/line as JSON lines, median of %d runs\n", n,
              static_cast<double>(line_bytes) / static_cast<double>(n), runs);

  // (a) the sink path, flushing an 8 MiB body at a time as the sink does.
  std::vector<double> ta;
  size_t bytes_a = 0;
  for (int r = 0; r < runs; ++r) {
    std::string body, buf;
    body.reserve(9u << 20);
    ParsedRecord rec;
    bytes_a = 0;
    const double t0 = CpuNow();
    for (const auto& l : lines) {
      buf.assign(l);
      buf.push_back('\0');
      if (!ParseRecordInsitu(buf.data(), l.size(), &rec).ok()) return 1;
      BulkDoc d;
      d.index = DataStreamName(*rec.dataset, "default");
      d.id = DocId(rec);
      d.source.assign(l);
      AppendBulkCreate(&body, d);
      if (body.size() >= (8u << 20)) {
        bytes_a += body.size();
        body.clear();
      }
    }
    bytes_a += body.size();
    ta.push_back(CpuNow() - t0);
  }
  // (b) the store path from parsed records.
  std::vector<std::unique_ptr<std::string>> bufs;
  std::vector<ParsedRecord> recs(std::min<size_t>(n, 100000));
  for (size_t i = 0; i < recs.size(); ++i) {
    bufs.push_back(std::make_unique<std::string>(lines[i] + '\0'));
    if (!ParseRecordInsitu(bufs.back()->data(), lines[i].size(), &recs[i]).ok()) return 1;
  }
  std::vector<double> tb;
  size_t bytes_b = 0;
  for (int r = 0; r < runs; ++r) {
    std::string body;
    body.reserve(9u << 20);
    bytes_b = 0;
    const double t0 = CpuNow();
    for (size_t i = 0; i < n; ++i) {
      const ParsedRecord& rec = recs[i % recs.size()];
      BulkDoc d;
      d.index = DataStreamName(*rec.dataset, "default");
      d.id = DocId(rec);
      AppendRecordJson(&d.source, rec);
      AppendBulkCreate(&body, d);
      if (body.size() >= (8u << 20)) {
        bytes_b += body.size();
        body.clear();
      }
    }
    bytes_b += body.size();
    tb.push_back(CpuNow() - t0);
  }
  const double ma = Median(ta), mb = Median(tb);
  std::printf("(a) sink path  (line -> check -> bulk):   %8.0f records/s on one core  %.1f bytes/record NDJSON  (%.0f ns/record)\n",
              static_cast<double>(n) / ma, static_cast<double>(bytes_a) / static_cast<double>(n), ma * 1e9 / static_cast<double>(n));
  std::printf("(b) store path (record -> JSON -> bulk):  %8.0f records/s on one core  %.1f bytes/record NDJSON  (%.0f ns/record)\n",
              static_cast<double>(n) / mb, static_cast<double>(bytes_b) / static_cast<double>(n), mb * 1e9 / static_cast<double>(n));
  std::printf("    NDJSON overhead over the JSON line: %.1f bytes/record (the create action and newline)\n",
              static_cast<double>(bytes_a - line_bytes) / static_cast<double>(n));
  return 0;
}
