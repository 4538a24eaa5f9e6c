#include "test/integration/trace_util.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "core/records/record.h"

namespace iosonar::test {

namespace {
int64_t I(const ParsedRecord& r, const char* f, int64_t dflt = 0) {
  const auto& v = r.v[static_cast<size_t>(FieldIndex(f))];
  return v.kind == FieldValue::kAbsent ? dflt : v.i;
}
std::string S(const ParsedRecord& r, const char* f) {
  const auto& v = r.v[static_cast<size_t>(FieldIndex(f))];
  return v.kind == FieldValue::kString ? std::string(v.s) : std::string();
}
}  // namespace

std::vector<TraceLine> ParseTraceLines(const std::string& text) {
  std::vector<TraceLine> out;
  ParsedRecord rec;
  for (const auto& line : SplitLines(text)) {
    std::vector<char> buf(line.begin(), line.end());
    buf.push_back('\0');
    Status st = ParseRecordInsitu(buf.data(), line.size(), &rec);
    INFO("line: " << line);
    REQUIRE(st.ToString() == "ok");
    TraceLine t;
    t.dataset = S(rec, "event.dataset");
    t.op = S(rec, "io.op");
    t.layer = S(rec, "io.layer");
    t.path = S(rec, "file.path");
    t.action = S(rec, "event.action");
    t.job = S(rec, "job.id");
    t.pid = I(rec, "process.pid");
    t.tid = I(rec, "process.tid");
    t.fd = I(rec, "io.fd", -1);
    t.offset = I(rec, "io.offset", -1);
    t.size = I(rec, "io.size");
    t.count = I(rec, "io.count");
    t.bytes = I(rec, "io.bytes");
    t.err = I(rec, "io.errno");
    t.start = I(rec, "event.start_ns");
    t.end = I(rec, "event.end_ns");
    t.dur = I(rec, "io.duration_ns");
    t.stream = I(rec, "event.stream");
    t.seq = I(rec, "event.seq");
    t.raw_ops = I(rec, "tracer.raw_ops");
    t.records = I(rec, "tracer.records");
    t.dropped = I(rec, "tracer.dropped");
    t.spooled = I(rec, "tracer.spooled");
    t.threads = I(rec, "process.threads", 1);
    t.merged = I(rec, "tracer.merged");
    t.io_uring_sqes = I(rec, "tracer.io_uring_sqes", -1);
    t.untraced_execs = I(rec, "tracer.untraced_execs");
    t.untraced_exec = S(rec, "tracer.untraced_exec");
    const auto& agg = rec.v[static_cast<size_t>(FieldIndex("io.aggregated"))];
    t.aggregated = agg.kind == FieldValue::kBool && agg.i != 0;
    t.ops_seq = I(rec, "io.ops_sequential");
    t.has_ops_seq = I(rec, "io.ops_sequential", -1) >= 0;
    t.stride = I(rec, "io.stride");
    t.ops_strided = I(rec, "io.ops_strided");
    t.ops_random = I(rec, "io.ops_random");
    t.mmap_prot = S(rec, "io.mmap_prot");
    t.mmap_flags = S(rec, "io.mmap_flags");
    const auto& coll = rec.v[static_cast<size_t>(FieldIndex("mpi.collective"))];
    t.collective = coll.kind == FieldValue::kBool && coll.i != 0;
    t.comm_size = I(rec, "mpi.comm_size");
    out.push_back(t);
  }
  return out;
}

LineListener::LineListener() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd_ >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(fd_, 64) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  port_ = ntohs(a.sin_port);
  th_ = std::thread([this] {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      int r = poll(&p, 1, 50);
      if (r == 0 && stop_.load()) return;  // nothing pending and the senders are gone
      if (r <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[65536];
      ssize_t n;
      while ((n = read(c, buf, sizeof buf)) > 0) {
        std::lock_guard<std::mutex> l(mu_);
        data_.append(buf, static_cast<size_t>(n));
      }
      close(c);
    }
  });
}

LineListener::~LineListener() {
  if (th_.joinable()) Finish();
}

std::string LineListener::Snapshot() {
  std::lock_guard<std::mutex> l(mu_);
  size_t end = data_.rfind('\n');
  return end == std::string::npos ? std::string() : data_.substr(0, end + 1);
}

std::string LineListener::Finish() {
  stop_ = true;
  th_.join();
  close(fd_);
  return data_;
}

std::string ProgramPath(const std::string& name) { return BinaryDir() + "/test/" + name; }

Traced RunTraced(const std::vector<std::string>& argv, const std::string& out_file,
                 std::map<std::string, std::string> env) {
  env.emplace("LD_PRELOAD", TracerLib());
  env.emplace("IOSONAR_OUTPUT", out_file);
  Traced t;
  t.run = Run(argv, env);
  t.lines = ParseTraceLines(ReadFile(out_file));
  return t;
}

OpTotals Totals(const std::vector<TraceLine>& lines, const std::string& op, const std::string& path_suffix) {
  OpTotals t;
  for (const auto& l : lines) {
    if (l.dataset != "iosonar.trace" || l.op != op) continue;
    if (l.path.size() < path_suffix.size() || l.path.compare(l.path.size() - path_suffix.size(), path_suffix.size(), path_suffix) != 0)
      continue;
    t.bytes += l.bytes;
    t.count += l.count;
    ++t.records;
  }
  return t;
}

}  // namespace iosonar::test
