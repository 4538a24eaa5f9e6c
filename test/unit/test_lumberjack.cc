// Lumberjack v2 frames (core/transport/lumberjack.h) as the collector decodes
// them: the layout of the Beats protocol's public description (window 'W',
// JSON 'J', compressed 'C', ACK 'A'; big-endian u32), split anywhere, bounded.
#include <zlib.h>

#include <catch2/catch.hpp>
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
