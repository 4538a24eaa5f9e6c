// Lumberjack v2 frames (core/transport/lumberjack.h) as the collector decodes
// them: the layout of the Beats protocol's public description (window 'W',
// JSON 'J', compressed 'C', ACK 'A'; big-endian u32), split anywhere, bounded.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "core/collector/lumberjack_decoder.h"
#include "core/transport/lumberjack.h"

using namespace iosonar;
namespace lj = iosonar::lumberjack;

namespace {

struct Got : LumberjackDecoder::Handler {
  std::vector<uint32_t> windows;
  std::vector<std::pair<uint32_t, std::string>> events;
  void Window(uint32_t n) override { windows.push_back(n); }
  void Event(uint32_t seq, std::string_view json) override { events.emplace_back(seq, std::string(json)); }
};

std::string W(uint32_t n) {
  std::string f = "2W";
  lj::PutU32(&f, n);
  return f;
}
std::string J(uint32_t seq, const std::string& payload) {
  std::string f = "2J";
  lj::PutU32(&f, seq);
  lj::PutU32(&f, static_cast<uint32_t>(payload.size()));
  return f + payload;
}
std::string C(const std::string& inner) {
  uLongf n = compressBound(inner.size());
  std::string z(n, '\0');
  REQUIRE(compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(inner.data()), inner.size(),
                    3) == Z_OK);
  z.resize(n);
  std::string f = "2C";
  lj::PutU32(&f, static_cast<uint32_t>(z.size()));
  return f + z;
}

}  // namespace

TEST_CASE("lumberjack: frames decode whole and split at every byte", "[lumberjack]") {
  // Bytes written out by hand from the protocol description, not by PutU32.
  const std::string hand = std::string("2W\0\0\0\2", 6) + std::string("2J\0\0\0\1\0\0\0\2{}", 12) +
                           std::string("2J\0\0\0\2\0\0\0\3[1]", 13);
  REQUIRE(hand == W(2) + J(1, "{}") + J(2, "[1]"));
  for (size_t step : {size_t{1}, size_t{3}, size_t{7}, hand.size()}) {
    LumberjackDecoder d(1024, 4096, 65536);
    Got g;
    for (size_t i = 0; i < hand.size(); i += step)
      REQUIRE(d.Feed(hand.data() + i, std::min(step, hand.size() - i), &g).ok());
    CHECK(g.windows == std::vector<uint32_t>{2});
    REQUIRE(g.events.size() == 2);
    CHECK(g.events[0] == std::make_pair(1u, std::string("{}")));
    CHECK(g.events[1] == std::make_pair(2u, std::string("[1]")));
    CHECK(d.buffered() == 0);
  }
}

TEST_CASE("lumberjack: a compressed frame holds frames, as Filebeat sends them", "[lumberjack]") {
  std::string inner = W(3);
  for (uint32_t i = 1; i <= 3; ++i) inner += J(i, "{\"n\":" + std::to_string(i) + "}");
  const std::string wire = C(inner);
  LumberjackDecoder d(1024, 4096, 65536);
  Got g;
  REQUIRE(d.Feed(wire.data(), wire.size() - 1, &g).ok());  // all but its last byte: nothing yet
  CHECK(g.events.empty());
  REQUIRE(d.Feed(wire.data() + wire.size() - 1, 1, &g).ok());
  REQUIRE(g.events.size() == 3);
  CHECK(g.events[2].second == "{\"n\":3}");
}

TEST_CASE("lumberjack: protocol errors name what was wrong and where, bounds hold", "[lumberjack]") {
  auto err = [](const std::string& bytes, size_t max_event = 1024, size_t max_inflated = 65536) {
    LumberjackDecoder d(max_event, 8192, max_inflated);
    Got g;
    return d.Feed(bytes.data(), bytes.size(), &g).message();
  };
  CHECK(err("1W\0\0\0\1") == "lumberjack: protocol version 1 is not supported (send version 2, as Beats do) at stream offset 0");
  CHECK(err(W(1) + "2X....") == "lumberjack: unknown frame type 'X' at stream offset 6");
  CHECK(err(W(1) + "2D") == "lumberjack: v1 data frames ('D') are not supported: send JSON frames ('J') at stream offset 6");
  CHECK(err(W(1) + "2A\0\0\0\1") == "lumberjack: an ACK frame from the sender at stream offset 6");
  CHECK(err(J(1, std::string(2000, 'x'))) == "lumberjack: an event of 2000 bytes (the bound is 1024) at stream offset 0");
  CHECK(err(C(C(J(1, "{}")))) == "lumberjack: a compressed frame inside a compressed frame at stream offset 0");
  std::string bad = "2C";
  lj::PutU32(&bad, 5);
  CHECK(err(bad + "hello").find("lumberjack: bad zlib data in a compressed frame") == 0);
  // A zip bomb: 1 MB of zeros in a small frame, against a 64 KiB inflation bound.
  CHECK(err(C(J(1, std::string(1 << 20, '0'))), 2 << 20, 65536) ==
        "lumberjack: a compressed frame inflates past 65536 bytes at stream offset 0");
  // A zlib stream cut short (a sender that lied about its length), and a frame over the bound.
  {
    std::string whole = C(J(1, std::string(300, 'q')));
    std::string cut = "2C";
    lj::PutU32(&cut, static_cast<uint32_t>(whole.size() - 6 - 4));
    cut += whole.substr(6, whole.size() - 6 - 4);
    CHECK(err(cut) == "lumberjack: a compressed frame ends before its zlib stream does at stream offset 0");
    std::string huge = "2C";
    lj::PutU32(&huge, 9000);
    CHECK(err(huge) == "lumberjack: a compressed frame of 9000 bytes (the bound is 8192) at stream offset 0");
  }
  // A compressed frame whose content ends inside a frame.
  CHECK(err(C(J(1, "{}").substr(0, 8))) == "lumberjack: a compressed frame ends inside a frame at stream offset 0");
}

#include "core/transport/sink.h"

TEST_CASE("lumberjack output URLs: TLS by scheme or tls=1, Logstash's option names, bad files named", "[lumberjack][sink]") {
  using iosonar::OpenSink;
  using iosonar::SinkOptions;
  auto r = OpenSink("lumberjacks://127.0.0.1:1?ca=/nonexistent/ca.pem", SinkOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("CA file /nonexistent/ca.pem") != std::string::npos);
  r = OpenSink("lumberjack://127.0.0.1:1?tls=1&ssl_certificate_authorities=/nonexistent/ca2.pem", SinkOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("CA file /nonexistent/ca2.pem") != std::string::npos);
  r = OpenSink("lumberjack://127.0.0.1:1?cert=/x.pem&key=/x.key", SinkOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("without TLS (use lumberjacks:// or tls=1)") != std::string::npos);
  r = OpenSink("lumberjacks://127.0.0.1:1?cert=/x.pem", SinkOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("both or neither") != std::string::npos);
  r = OpenSink("lumberjacks://127.0.0.1:1?verify=none", SinkOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("unknown parameter 'verify'") != std::string::npos);
  CHECK(OpenSink("lumberjacks://127.0.0.1:1", SinkOptions{}).ok());  // the system's CAs
}

// ---- the sender's compressed frames, read back by hand (zlib's inflate, the
// frame layout written out here), not through LumberjackDecoder.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "core/transport/lumberjack_sender.h"

namespace {

bool ReadN(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

uint32_t U32(const unsigned char* u) {
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

// What one receiver connection saw: per window, its size, and per 'C' frame
// the inflated size; every event in order; acknowledges each whole window.
struct Seen {
  std::vector<uint32_t> windows;
  std::vector<size_t> inflated;  // bytes of frames each 'C' frame held
  std::vector<std::string> events;
  size_t wire_bytes = 0, json_frames_outside = 0;
  std::string error;
};

void Receive(int lfd, Seen* s) {
  int fd = accept(lfd, nullptr, nullptr);
  if (fd < 0) return;
  auto fail = [&](const std::string& e) { s->error = e; };
  unsigned char h[10];
  while (ReadN(fd, reinterpret_cast<char*>(h), 6)) {
    s->wire_bytes += 6;
    if (h[0] != '2' || h[1] != 'W') return fail("expected a window frame");
    const uint32_t n = U32(h + 2);
    s->windows.push_back(n);
    uint32_t got = 0;
    while (got < n) {
      if (!ReadN(fd, reinterpret_cast<char*>(h), 2)) return fail("closed inside a window");
      s->wire_bytes += 2;
      if (h[0] == '2' && h[1] == 'J') {  // uncompressed
        if (!ReadN(fd, reinterpret_cast<char*>(h + 2), 8)) return fail("short J");
        std::string ev(U32(h + 6), '\0');
        if (!ReadN(fd, ev.data(), ev.size())) return fail("short J payload");
        s->wire_bytes += 8 + ev.size();
        if (U32(h + 2) != ++got) return fail("J seq out of order");
        s->events.push_back(ev);
        ++s->json_frames_outside;
        continue;
      }
      if (h[0] != '2' || h[1] != 'C') return fail("expected J or C");
      if (!ReadN(fd, reinterpret_cast<char*>(h + 2), 4)) return fail("short C");
      std::string z(U32(h + 2), '\0');
      if (!ReadN(fd, z.data(), z.size())) return fail("short C payload");
      s->wire_bytes += 4 + z.size();
      std::string plain(8u << 20, '\0');
      uLongf len = plain.size();
      if (uncompress(reinterpret_cast<Bytef*>(plain.data()), &len, reinterpret_cast<const Bytef*>(z.data()),
                     z.size()) != Z_OK)
        return fail("not a zlib stream");
      plain.resize(len);
      s->inflated.push_back(len);
      for (size_t p = 0; p < plain.size();) {
        const auto* u = reinterpret_cast<const unsigned char*>(plain.data() + p);
        if (plain.size() - p < 10 || u[0] != '2' || u[1] != 'J') return fail("not a J frame inside C");
        if (U32(u + 2) != ++got) return fail("seq out of order inside C");
        const uint32_t l = U32(u + 6);
        if (plain.size() - p - 10 < l) return fail("J frame cut inside C");
        s->events.emplace_back(plain.substr(p + 10, l));
        p += 10 + l;
      }
    }
    if (got != n) return fail("more events than the window");
    const char ack[6] = {'2', 'A', static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                         static_cast<char>(n)};
    if (write(fd, ack, 6) != 6) return fail("ack write");
  }
  close(fd);
}

}  // namespace

TEST_CASE("lumberjack sender: compression_level puts each window in zlib 'C' frames, cut at the inflated bound",
          "[lumberjack][sender]") {
  const int level = GENERATE(0, 1, 3, 9);
  const size_t cap = GENERATE(size_t{4} << 20, size_t{5000});
  INFO("compression_level " << level << ", cut at " << cap);
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(lfd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  REQUIRE(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(lfd, 1) == 0);
  REQUIRE(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen) == 0);
  Seen seen;
  std::thread rx(Receive, lfd, &seen);
  std::string lines, one_big(7000, 'b');
  std::vector<std::string> want;
  for (int i = 0; i < 1000; ++i) {
    want.push_back(i == 500 ? "{\"big\":\"" + one_big + "\"}"
                            : "{\"event.seq\":" + std::to_string(i) + ",\"file.path\":\"/scratch/a\",\"io.op\":\"read\"}");
    lines += want.back() + "\n";
  }
  {
    LumberjackSender s;
    LumberjackSender::Options o;
    o.host = "127.0.0.1";
    o.port = std::to_string(ntohs(a.sin_port));
    o.window = 300;
    o.compression_level = level;
    o.compress_max_inflated = cap;
    REQUIRE(s.Init(o).ok());
    REQUIRE(s.Send(lines).ok());
    REQUIRE(s.Flush().ok());
    CHECK(s.counters().acked == 1000);
    CHECK(s.counters().windows == 4);
    CHECK(s.counters().bytes_sent == seen.wire_bytes);
    CHECK(s.counters().compressed_frames == seen.inflated.size());
  }  // the sender closes: the receiver's loop ends
  rx.join();
  close(lfd);
  REQUIRE(seen.error == "");
  CHECK(seen.windows == std::vector<uint32_t>{300, 300, 300, 100});
  CHECK(seen.events == want);
  if (level == 0) {
    CHECK(seen.inflated.empty());
    CHECK(seen.json_frames_outside == 1000);
    CHECK(seen.wire_bytes == 4 * 6 + 1000 * 10 + lines.size() - 1000);
  } else {
    CHECK(seen.json_frames_outside == 0);
    CHECK(seen.wire_bytes < (lines.size() + 1000 * 10) / 2);  // repetitive JSON: well under half
    if (cap > 100000) {
      CHECK(seen.inflated.size() == 4);  // one per window
    } else {
      // ~48 B frames: about 100 per 5000 B frame; the 7 KB event alone in its own
      for (size_t n : seen.inflated) CHECK((n <= cap || n == 10 + want[500].size()));
      CHECK(std::count(seen.inflated.begin(), seen.inflated.end(), 10 + want[500].size()) == 1);
      CHECK(seen.inflated.size() >= (1000 * 48 + 7000) / cap + 4);
    }
  }
}

TEST_CASE("lumberjack sender: compression_level from the URL, 0..9, else a clear error", "[lumberjack][sink]") {
  using iosonar::OpenSink;
  using iosonar::SinkOptions;
  CHECK(OpenSink("lumberjack://127.0.0.1:1?compression_level=0", SinkOptions{}).ok());
  CHECK(OpenSink("lumberjacks://127.0.0.1:1?compression_level=9", SinkOptions{}).ok());
  for (const char* bad : {"10", "-1", "x", ""}) {
    auto r = OpenSink(std::string("lumberjack://127.0.0.1:1?compression_level=") + bad, SinkOptions{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == std::string("output 'lumberjack://127.0.0.1:1?compression_level=") + bad +
                                      "': compression_level must be 0 (off) to 9, not '" + bad + "'");
  }
  LumberjackSender s;
  LumberjackSender::Options o;
  o.host = "h";
  o.port = "1";
  o.compression_level = 10;
  CHECK(s.Init(o).message() == "lumberjack output: compression_level must be 0 (off) to 9, not 10");
}
