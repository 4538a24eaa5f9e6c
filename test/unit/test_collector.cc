// The collector over real loopback sockets: good lines stored, bad ones in the
// dead-letter file with reason, source and line number, resends counted as
// duplicates; and IngestFile through the same path.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/collector/collector.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "test/testutil/http_responder.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::TempDir;


namespace {

std::string Line(int64_t stream, int64_t seq, const std::string& host = "n1") {
  int64_t ts = 1795331352123000000 + seq * 1000000;
  return "{\"@timestamp\":\"" + FormatIsoMillis(ts) + "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" +
         std::to_string(stream) + ",\"event.seq\":" + std::to_string(seq) + ",\"host.name\":\"" + host +
         "\",\"job.id\":\"42\",\"process.pid\":100,\"process.tid\":100,\"io.op\":\"write\",\"io.layer\":\"posix\","
         "\"file.path\":\"/tmp/f\",\"file.id\":\"00112233aabbccdd\",\"io.fd\":3,\"io.offset\":0,\"io.size\":4096,"
         "\"io.count\":10,\"io.bytes\":40960,\"event.start_ns\":" +
         std::to_string(ts) + ",\"event.end_ns\":" + std::to_string(ts + 1000000) + ",\"io.duration_ns\":5000}";
}

// A loopback client; "tcp 127.0.0.1:PORT" is how the collector names it.
class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    source_ = "tcp 127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  }
  ~Client() { Close(); }
  void Send(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = write(fd_, data.data() + off, data.size() - off);
      REQUIRE(n > 0);
      off += static_cast<size_t>(n);
    }
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  const std::string& source() const { return source_; }

 private:
  int fd_ = -1;
  std::string source_;
};

// For sender threads: Catch2 assertions are not thread-safe, so this one
// reports failure by its result.
bool SendInPieces(int port, const std::string& data, size_t piece) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  for (size_t off = 0; ok && off < data.size();) {
    ssize_t n = write(fd, data.data() + off, std::min(piece, data.size() - off));
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  close(fd);
  return ok;
}

struct DeadLetter {
  std::string reason, source, line;
  int64_t line_no = 0;
};

std::vector<DeadLetter> ReadDeadLetters(const std::string& path) {
  std::vector<DeadLetter> out;
  for (const auto& l : iosonar::test::SplitLines(iosonar::test::ReadFile(path))) {
    rapidjson::Document d;
    d.Parse(l.c_str(), l.size());
    INFO(l);
    REQUIRE_FALSE(d.HasParseError());
    REQUIRE(d.IsObject());
    REQUIRE(d.MemberCount() == 4);
    DeadLetter dl;
    dl.reason = d["reason"].GetString();
    dl.source = d["source"].GetString();
    dl.line_no = d["line_no"].GetInt64();
    dl.line.assign(d["line"].GetString(), d["line"].GetStringLength());
    out.push_back(dl);
  }
  return out;
}

std::unique_ptr<Collector> StartCollector(CollectorOptions o) {
  if (o.listen == CollectorOptions{}.listen) o.listen = "tcp://127.0.0.1:0";
  auto c = Collector::Start(o);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  REQUIRE(c.value()->port() > 0);
  return std::move(c.value());
}

uint64_t StoredCount(const std::string& dir) {
  auto s = OpenSqliteStore(dir);
  REQUIRE(s.ok());
  auto n = s.value()->Count("iosonar.trace", {});
  REQUIRE(n.ok());
  return *n;
}

void Drain(Collector* c, int connections) {
  Status s = c->Drain(connections, 20000);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

}  // namespace

TEST_CASE("collector: good lines are stored, bad ones set aside with reason and source", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  auto c = StartCollector(o);

  Client cl(c->port());
  std::string data;
  data += Line(1, 0) + "\n";                                    // line 1
  data += "{\"event.dataset\":\"iosonar.trace\",\n";            // line 2: cut short
  data += "\n   \n";                                            // lines 3, 4: blank, ignored
  data += Line(1, 1) + "\r\n";                                  // line 5: CRLF framing is fine
  std::string bad_utf8 = Line(1, 2, "n\xff\xfe");
  data += bad_utf8 + "\n";                                      // line 6: not UTF-8
  data += "{\"nope\":1}\n";                                     // line 7: unknown field
  data += Line(1, 3) + " trailing\n";                           // line 8: garbage after the object
  data += Line(1, 4) + "\n";                                    // line 9
  cl.Send(data);
  cl.Close();
  Drain(c.get(), 1);

  CollectorStats st = c->stats();
  CHECK(st.connections == 1);
  CHECK(st.open_connections == 0);
  CHECK(st.lines == 7);
  CHECK(st.accepted == 3);
  CHECK(st.rejected == 4);
  CHECK(st.stored == 3);
  CHECK(st.duplicates == 0);
  CHECK(st.redis_pushed == 0);
  CHECK(StoredCount(dir.path()) == 3);

  auto dl = ReadDeadLetters(dir / "deadletter.jsonl");
  REQUIRE(dl.size() == 4);
  for (const auto& d : dl) CHECK(d.source == cl.source());
  CHECK(dl[0].line_no == 2);
  CHECK(dl[0].reason.rfind("not JSON: ", 0) == 0);
  CHECK(dl[0].line == "{\"event.dataset\":\"iosonar.trace\",");
  CHECK(dl[1].line_no == 6);
  CHECK(dl[1].reason.rfind("not JSON: invalid UTF-8 at byte", 0) == 0);
  // The dead-letter file stays valid JSON: bad bytes become U+FFFD.
  CHECK(dl[1].line == Line(1, 2, "n\xef\xbf\xbd\xef\xbf\xbd"));
  CHECK(dl[2].line_no == 7);
  CHECK(dl[2].reason == "unknown field \"nope\" (not in the record schema)");
  CHECK(dl[3].line_no == 8);
  CHECK(dl[3].reason.rfind("trailing data after the JSON object", 0) == 0);
  CHECK(dl[3].line == Line(1, 3) + " trailing");
  REQUIRE(c->Stop().ok());
}

TEST_CASE("collector: oversized lines are set aside and the connection goes on", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  o.dead_letter_path = dir / "bad.jsonl";
  o.max_line_bytes = 2000;
  auto c = StartCollector(o);

  std::string huge = "{\"host.name\":\"" + std::string(200000, 'x') + "\"}";  // far past the buffer
  std::string big = "{\"host.name\":\"" + std::string(3000, 'y') + "\"}";     // within one read
  Client cl(c->port());
  cl.Send(Line(2, 0) + "\n" + huge + "\n" + Line(2, 1) + "\n" + big + "\n" + Line(2, 2) + "\n");
  cl.Close();
  Drain(c.get(), 1);

  CollectorStats st = c->stats();
  CHECK(st.lines == 5);
  CHECK(st.stored == 3);
  CHECK(st.rejected == 2);
  auto dl = ReadDeadLetters(dir / "bad.jsonl");
  REQUIRE(dl.size() == 2);
  CHECK(dl[0].reason == "oversized line (" + std::to_string(huge.size()) + " bytes > 2000)");
  CHECK(dl[0].line_no == 2);
  CHECK(dl[0].line == huge.substr(0, 4096));  // an oversized line keeps its first 4 KiB
  CHECK(dl[1].reason == "oversized line (" + std::to_string(big.size()) + " bytes > 2000)");
  CHECK(dl[1].line_no == 4);
  CHECK(dl[1].line == big);
  CHECK(StoredCount(dir.path()) == 3);
}

TEST_CASE("collector: a last line without newline is truncated", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  auto c = StartCollector(o);
  Client cl(c->port());
  std::string full = Line(3, 1);
  cl.Send(Line(3, 0) + "\n" + full);  // complete JSON, but the newline never came
  cl.Close();
  Drain(c.get(), 1);
  CHECK(c->stats().stored == 1);
  CHECK(c->stats().rejected == 1);
  auto dl = ReadDeadLetters(dir / "deadletter.jsonl");
  REQUIRE(dl.size() == 1);
  CHECK(dl[0].reason == "truncated line at end of stream");
  CHECK(dl[0].line_no == 2);
  CHECK(dl[0].line == full);
  CHECK(dl[0].source == cl.source());
}

TEST_CASE("collector: resending the same records counts duplicates", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  o.batch_records = 100;  // several batches
  auto c = StartCollector(o);
  std::string data;
  for (int i = 0; i < 1000; ++i) data += Line(4, i) + "\n";
  {
    Client cl(c->port());
    cl.Send(data);
  }
  Drain(c.get(), 1);
  CHECK(c->stats().stored == 1000);
  {
    Client cl(c->port());
    cl.Send(data);
  }
  Drain(c.get(), 2);
  CollectorStats st = c->stats();
  CHECK(st.accepted == 2000);
  CHECK(st.stored == 1000);
  CHECK(st.duplicates == 1000);
  CHECK(st.rejected == 0);
  REQUIRE(c->Stop().ok());
  CHECK(StoredCount(dir.path()) == 1000);
}

TEST_CASE("collector: concurrent senders are all stored", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  o.batch_records = 512;
  auto c = StartCollector(o);
  constexpr int kSenders = 4, kEach = 5000;
  std::vector<std::string> payload(kSenders);
  for (int s = 0; s < kSenders; ++s)
    for (int i = 0; i < kEach; ++i) payload[static_cast<size_t>(s)] += Line(100 + s, i) + "\n";
  std::vector<std::thread> threads;
  std::vector<char> sent(kSenders, 0);
  for (int s = 0; s < kSenders; ++s)
    threads.emplace_back([&, s] {
      // Small writes, so lines straddle reads.
      sent[static_cast<size_t>(s)] = SendInPieces(c->port(), payload[static_cast<size_t>(s)], 777);
    });
  for (auto& t : threads) t.join();
  for (char ok : sent) REQUIRE(ok);
  Drain(c.get(), kSenders);
  CollectorStats st = c->stats();
  CHECK(st.connections == kSenders);
  CHECK(st.stored == kSenders * kEach);
  CHECK(st.rejected == 0);
  CHECK(StoredCount(dir.path()) == kSenders * kEach);
}

// `iosonar run` waits for its traced processes, then calls Drain(0): senders
// that had connected, written and closed could still be in the listen
// backlog, so Drain returned at once and Stop() never accepted them.
TEST_CASE("regression: Drain(0) and Stop() take in senders still in the listen backlog", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  auto c = StartCollector(o);
  constexpr int kSenders = 20;
  for (int s = 0; s < kSenders; ++s) REQUIRE(SendInPieces(c->port(), Line(300 + s, 0) + "\n", 1 << 20));
  Drain(c.get(), 0);
  CHECK(c->stats().connections == kSenders);
  CHECK(c->stats().stored == kSenders);

  for (int s = 0; s < kSenders; ++s) REQUIRE(SendInPieces(c->port(), Line(400 + s, 0) + "\n", 1 << 20));
  REQUIRE(c->Stop().ok());
  CHECK(c->stats().stored == 2 * kSenders);
  CHECK(StoredCount(dir.path()) == 2 * kSenders);
}

TEST_CASE("collector: a partial batch is stored within the flush interval", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  o.flush_interval_ms = 50;
  auto c = StartCollector(o);
  Client cl(c->port());  // stays open
  cl.Send(Line(5, 0) + "\n" + Line(5, 1) + "\n");
  CHECK(iosonar::test::WaitUntil([&] { return c->stats().stored == 2; }, 10000));
  CHECK(c->stats().open_connections == 1);
}

TEST_CASE("collector: Stop stores what was received from open connections", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  o.flush_interval_ms = 60000;  // only Stop() will flush
  auto c = StartCollector(o);
  Client cl(c->port());
  cl.Send(Line(6, 0) + "\n" + Line(6, 1) + "\n" + "{\"event.data");
  REQUIRE(iosonar::test::WaitUntil([&] { return c->stats().accepted == 2; }, 10000));
  CHECK(c->stats().stored == 0);
  REQUIRE(c->Stop().ok());
  CHECK(c->stats().stored == 2);
  CHECK(c->stats().open_connections == 0);
  REQUIRE(c->Stop().ok());  // twice is fine
  auto dl = ReadDeadLetters(dir / "deadletter.jsonl");
  REQUIRE(dl.size() == 1);
  CHECK(dl[0].reason == "truncated line at collector shutdown");
  CHECK(dl[0].line == "{\"event.data");
  CHECK(StoredCount(dir.path()) == 2);
}

TEST_CASE("collector: Drain times out naming what it waited for", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.store_dir = dir.path();
  auto c = StartCollector(o);
  Status s = c->Drain(1, 50);
  CHECK(s.code() == Code::kUnavailable);
  CHECK(s.message().find("drain timed out after 50 ms (connections 0 of 1 expected") != std::string::npos);
}

TEST_CASE("collector: start-up errors say what was wrong", "[collector]") {
  TempDir dir;
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  auto r = Collector::Start(o);
  CHECK(r.status().message() == "collector: no store directory given");
  o.store_dir = dir.path();
  o.listen = "udp://127.0.0.1:5170";
  r = Collector::Start(o);
  CHECK(r.status().code() == Code::kInvalid);
  CHECK(r.status().message().find("udp://127.0.0.1:5170") != std::string::npos);
  o.listen = "tcp://127.0.0.1:99999";
  CHECK(Collector::Start(o).status().message().find("not a number from 0 to 65535") != std::string::npos);
  // A port somebody already listens on.
  o.listen = "tcp://127.0.0.1:0";
  auto first = StartCollector(o);
  o.listen = "tcp://127.0.0.1:" + std::to_string(first->port());
  r = Collector::Start(o);
  CHECK_FALSE(r.ok());
  CHECK(r.status().message().find("Address already in use") != std::string::npos);
  o.listen = "tcp://127.0.0.1:0";
  o.redis_url = "http://x:1";
  CHECK(Collector::Start(o).status().message().find("bad Redis URL") != std::string::npos);
}

TEST_CASE("IngestFile runs the same validation and names the file in dead letters", "[collector]") {
  TempDir dir;
  std::string file = dir / "records.jsonl";
  iosonar::test::WriteFile(file, Line(7, 0) + "\n" + "not json\n" + Line(7, 1) + "\n" + Line(7, 0) + "\n" + Line(7, 2));
  CollectorOptions o;
  o.store_dir = dir / "store";
  auto r = IngestFile(o, file);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->lines == 5);
  CHECK(r->accepted == 3);
  CHECK(r->stored == 2);
  CHECK(r->duplicates == 1);
  CHECK(r->rejected == 2);
  auto dl = ReadDeadLetters(dir / "store/deadletter.jsonl");
  REQUIRE(dl.size() == 2);
  CHECK(dl[0].source == file);
  CHECK(dl[0].line_no == 2);
  CHECK(dl[0].reason.rfind("not JSON", 0) == 0);
  CHECK(dl[1].line_no == 5);
  CHECK(dl[1].reason == "truncated line at end of stream");

  auto missing = IngestFile(o, dir / "nope.jsonl");
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK(missing.status().message().find("nope.jsonl") != std::string::npos);
}

// The forward spool is resent in pieces of forward_spool_chunk_bytes, never
// read whole: the output (a loopback responder answering _bulk) takes five
// pieces and then fails; the acknowledged offset is kept in
// forward-spool.jsonl.sent and the next run sends the rest from there. Every
// record arrives exactly once and no more than a piece and a line is held.
TEST_CASE("collector: the forward spool is resent in bounded pieces from where the output acknowledged",
          "[collector][forward]") {
  TempDir dir;
  std::mutex mu;
  int accept_requests = 0;  // bulk requests still answered 200; then 503
  std::map<std::string, int> created;  // _id -> times sent in an answered request
  iosonar::test::HttpResponder out([&](const iosonar::test::HttpRequest& r) {
    iosonar::test::HttpReply rep;
    if (r.path != "/_bulk") return rep;
    std::lock_guard<std::mutex> g(mu);
    if (accept_requests == 0) {
      rep.status = 503;
      rep.body = "{\"error\":\"down\"}";
      return rep;
    }
    if (accept_requests > 0) --accept_requests;
    rep.body = "{\"errors\":false,\"items\":[";
    size_t pos = 0, k = 0;
    while (pos < r.body.size()) {
      size_t nl = r.body.find('\n', pos);
      if (nl == std::string::npos) nl = r.body.size();
      std::string_view action(r.body.data() + pos, nl - pos);
      pos = r.body.find('\n', nl + 1);  // skip the source line
      pos = pos == std::string::npos ? r.body.size() : pos + 1;
      auto id = action.find("\"_id\":\"");
      if (id == std::string_view::npos) return iosonar::test::HttpReply{400, "{\"error\":\"no _id\"}"};
      id += 7;
      ++created[std::string(action.substr(id, action.find('"', id) - id))];
      rep.body += std::string(k++ ? "," : "") + "{\"create\":{\"status\":201}}";
    }
    rep.body += "]}";
    return rep;
  });
  std::string lines;
  for (int i = 0; i < 3000; ++i) lines += Line(77, i) + "\n";
  iosonar::test::WriteFile(dir / "in.jsonl", lines);
  iosonar::test::WriteFile(dir / "empty.jsonl", "");
  CollectorOptions o;
  o.store_dir = dir / "store";
  o.forward_output = out.url();
  o.forward.es.max_attempts = 1;
  o.forward_spool_chunk_bytes = 16384;
  const std::string spool = dir / "store/forward-spool.jsonl";
  // The output is down: every record is stored and spooled.
  auto r0 = IngestFile(o, dir / "in.jsonl");
  REQUIRE(r0.ok());
  CHECK(r0->stored == 3000);
  CHECK(r0->forward_spooled == 3000);
  struct stat sb {};
  REQUIRE(stat(spool.c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0600);
  CHECK(static_cast<size_t>(sb.st_size) > 20 * o.forward_spool_chunk_bytes);
  // Five pieces go through, then the output fails again.
  { std::lock_guard<std::mutex> g(mu); accept_requests = 5; }
  auto r1 = IngestFile(o, dir / "empty.jsonl");
  REQUIRE(r1.ok());
  CHECK(r1->forwarded > 0);
  CHECK(r1->forwarded < 3000);
  CHECK(r1->forward_spooled == 3000 - r1->forwarded);
  CHECK(r1->forward_spool_buffer_max > 0);
  CHECK(r1->forward_spool_buffer_max <= o.forward_spool_chunk_bytes + 1024);
  CHECK(created.size() == r1->forwarded);
  REQUIRE(stat((spool + ".sent").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0600);
  // The output is back: the rest from the acknowledged offset, nothing twice.
  { std::lock_guard<std::mutex> g(mu); accept_requests = -1; }
  auto r2 = IngestFile(o, dir / "empty.jsonl");
  REQUIRE(r2.ok());
  CHECK(r2->forwarded == 3000 - r1->forwarded);
  CHECK(r2->forward_spooled == 0);
  CHECK(r2->forward_spool_buffer_max <= o.forward_spool_chunk_bytes + 1024);
  CHECK(created.size() == 3000);
  for (const auto& [id, n] : created) {
    INFO(id);
    CHECK(n == 1);
  }
  CHECK(stat(spool.c_str(), &sb) != 0);
  CHECK(stat((spool + ".sent").c_str(), &sb) != 0);
}
