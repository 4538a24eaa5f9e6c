// The collector and the Redis client against a real redis-server (started on
// a private port by test/testutil): accepted lines reach the Redis list
// complete and in arrival order; a Redis outage costs only the Redis copy.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/collector/collector.h"
#include "core/transport/redis.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::RedisServer;
using iosonar::test::TempDir;

namespace {

std::string Line(int64_t stream, int64_t seq) {
  int64_t ts = 1795331352123000000 + seq * 1000000;
  return "{\"@timestamp\":\"" + FormatIsoMillis(ts) + "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" +
         std::to_string(stream) + ",\"event.seq\":" + std::to_string(seq) +
         ",\"host.name\":\"n1\",\"job.id\":\"42\",\"process.pid\":100,\"process.tid\":100,\"io.op\":\"read\","
         "\"io.layer\":\"posix\",\"file.path\":\"/tmp/f\",\"io.fd\":3,\"io.offset\":0,\"io.size\":4096,\"io.count\":1,"
         "\"io.bytes\":4096,\"event.start_ns\":" +
         std::to_string(ts) + ",\"event.end_ns\":" + std::to_string(ts + 1000) + ",\"io.duration_ns\":900}";
}

void SendAll(int port, const std::string& data) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  for (size_t off = 0; off < data.size();) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    REQUIRE(n > 0);
    off += static_cast<size_t>(n);
  }
  close(fd);
}

std::unique_ptr<RedisClient> Connect(const std::string& url) {
  auto c = RedisClient::Connect(url);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return std::move(c.value());
}

}  // namespace

TEST_CASE("collector pushes accepted lines to Redis, complete and in order", "[redis][collector]") {
  RedisServer redis;
  TempDir dir;
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = dir.path();
  o.redis_url = redis.url();
  o.redis_list = "iosonar:test:ingest";
  o.batch_records = 1000;  // several batches and several RPUSH chunks
  auto started = Collector::Start(o);
  INFO(started.status().ToString());
  REQUIRE(started.ok());
  auto& c = started.value();

  std::vector<std::string> want;
  std::string first, second;
  for (int i = 0; i < 7500; ++i) {
    want.push_back(Line(11, i));
    first += want.back() + "\n";
    if (i == 100) first += "this is not a record\n";  // rejected lines are not pushed
  }
  for (int i = 0; i < 2500; ++i) {
    want.push_back(Line(12, i));
    second += want.back() + "\r\n";  // pushed without the CR
  }
  SendAll(c->port(), first);
  Status d = c->Drain(1, 30000);
  INFO(d.ToString());
  REQUIRE(d.ok());
  SendAll(c->port(), second);
  d = c->Drain(2, 30000);
  REQUIRE(d.ok());

  CollectorStats st = c->stats();
  CHECK(st.accepted == 10000);
  CHECK(st.rejected == 1);
  CHECK(st.redis_pushed == 10000);
  CHECK(st.redis_errors == 0);
  auto got = redis.LRange("iosonar:test:ingest");
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      INFO("first difference at index " << i);
      CHECK(got[i] == want[i]);
      break;
    }
  }
}

TEST_CASE("collector keeps storing while Redis is down, and pushes again when it is back", "[redis][collector]") {
  TempDir dir;
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = dir.path();
  const int redis_port = iosonar::test::FreePort();
  o.redis_url = "redis://127.0.0.1:" + std::to_string(redis_port) + "/0";
  o.redis_list = "iosonar:test:ingest";
  auto started = Collector::Start(o);  // an unreachable server is not a start-up error
  INFO(started.status().ToString());
  REQUIRE(started.ok());
  auto& c = started.value();
  std::string data;
  for (int i = 0; i < 300; ++i) data += Line(21, i) + "\n";
  SendAll(c->port(), data);
  REQUIRE(c->Drain(1, 30000).ok());
  CollectorStats st = c->stats();
  CHECK(st.stored == 300);
  CHECK(st.redis_pushed == 0);
  CHECK(st.redis_errors == 300);

  // Redis comes up on the configured port; the collector retries with backoff.
  TempDir redis_dir;
  iosonar::test::Child server({"redis-server", "--port", std::to_string(redis_port), "--bind", "127.0.0.1", "--dir",
                               redis_dir.path(), "--save", "", "--appendonly", "no"},
                              {}, redis_dir / "redis.log");
  REQUIRE(iosonar::test::WaitUntil([&] { return RedisClient::Connect(o.redis_url).ok(); }, 10000));
  int seq = 1000, conns = 1;
  bool pushed = iosonar::test::WaitUntil(
      [&] {
        SendAll(c->port(), Line(21, seq++) + "\n");
        REQUIRE(c->Drain(++conns, 30000).ok());
        return c->stats().redis_pushed > 0;
      },
      40000);
  REQUIRE(pushed);
  st = c->stats();
  CHECK(st.stored == 300 + static_cast<uint64_t>(seq - 1000));
  CHECK(st.redis_pushed + st.redis_errors == st.accepted);
  auto client = Connect(o.redis_url);
  std::vector<std::string_view> llen{"LLEN", "iosonar:test:ingest"};
  CHECK(client->Command(llen)->integer == static_cast<int64_t>(st.redis_pushed));
  REQUIRE(c->Stop().ok());
}

TEST_CASE("RedisClient: SET with TTL, GET, missing keys, RPUSH in chunks", "[redis]") {
  RedisServer redis;
  auto c = Connect(redis.url());
  CHECK(c->url() == redis.url());
  const std::string binary("hello\nworld\0x", 13);
  REQUIRE(c->Set("k1", binary, 0).ok());
  auto v = c->Get("k1");
  REQUIRE(v.ok());
  REQUIRE(v->has_value());
  CHECK(**v == binary);
  REQUIRE(c->Set("k2", "v", 100).ok());
  int64_t ttl = std::stoll(redis.Command({"TTL", "k2"}));
  CHECK(ttl > 90);
  CHECK(ttl <= 100);
  CHECK(redis.Command({"TTL", "k1"}) == "-1");
  auto missing = c->Get("nope");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());

  std::vector<std::string> vals;
  for (size_t i = 0; i < 2 * RedisClient::kPushChunk + 17; ++i) vals.push_back("v" + std::to_string(i));
  vals.push_back(std::string("bin\0ary", 7));
  std::vector<std::string_view> views(vals.begin(), vals.end());
  REQUIRE(c->RPushBatch("list", views).ok());
  CHECK(redis.LRange("list") == vals);
  REQUIRE(c->RPushBatch("list", {}).ok());

  // A Redis error reply is an error, and the connection stays usable.
  Status wrong = c->RPushBatch("k1", views);
  CHECK_FALSE(wrong.ok());
  CHECK(wrong.message().find("WRONGTYPE") != std::string::npos);
  std::vector<std::string_view> incr{"INCRBY", "counter", "5"};
  auto r = c->Command(incr);
  REQUIRE(r.ok());
  CHECK(r->type == RedisReply::kInteger);
  CHECK(r->integer == 5);
}

TEST_CASE("RedisClient: database from the URL, reconnect after the link is cut", "[redis]") {
  RedisServer redis;
  auto c = Connect("redis://127.0.0.1:" + std::to_string(redis.port()) + "/3");
  REQUIRE(c->Set("in3", "x").ok());
  CHECK(redis.Command({"GET", "in3"}) == "");  // db 0 does not have it
  auto c0 = Connect(redis.url());
  std::vector<std::string_view> sel{"EXISTS", "in3"};
  CHECK(c0->Command(sel)->integer == 0);

  // Cut every client connection but the one asking; the next call reconnects.
  CHECK(std::stoll(redis.Command({"CLIENT", "KILL", "TYPE", "normal"})) >= 2);
  auto v = c->Get("in3");
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  CHECK(v->value_or("") == "x");  // still db 3 after reconnecting
}

TEST_CASE("RedisClient: AUTH with the URL's password, errors with the password redacted", "[redis]") {
  RedisServer redis;
  std::string port = std::to_string(redis.port());
  CHECK(redis.Command({"CONFIG", "SET", "requirepass", "s3cret"}) == "OK");
  auto c = Connect("redis://:s3cret@127.0.0.1:" + port + "/0");
  REQUIRE(c->Set("a", "1").ok());
  CHECK(c->url().find("s3cret") == std::string::npos);

  auto bad = RedisClient::Connect("redis://:wrong@127.0.0.1:" + port + "/0");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("AUTH") != std::string::npos);
  CHECK(bad.status().message().find("wrong") == std::string::npos);
  CHECK(bad.status().message().find("***") != std::string::npos);

  auto down = RedisClient::Connect("redis://:s3cret@127.0.0.1:" + std::to_string(iosonar::test::FreePort()), 500);
  REQUIRE_FALSE(down.ok());
  CHECK(down.status().code() == Code::kUnavailable);
  CHECK(down.status().message().find("s3cret") == std::string::npos);
  CHECK(down.status().message().find("connect") != std::string::npos);

  auto badurl = RedisClient::Connect("redis://127.0.0.1:" + port + "/x");
  CHECK(badurl.status().message().find("database \"x\" is not a number") != std::string::npos);
}

TEST_CASE("RedisClient: unix socket URL with ?db=N", "[redis]") {
  TempDir dir;
  std::string sock = dir / "redis.sock";
  iosonar::test::Child server({"redis-server", "--port", "0", "--unixsocket", sock, "--dir", dir.path(), "--save", "",
                               "--appendonly", "no"},
                              {}, dir / "redis.log");
  std::string url = "unix://" + sock + "?db=2";
  REQUIRE(iosonar::test::WaitUntil([&] { return RedisClient::Connect(url).ok(); }, 10000));
  auto c = Connect(url);
  CHECK(c->url() == "unix://" + sock);
  REQUIRE(c->Set("k", "v").ok());
  auto c0 = Connect("unix://" + sock);
  std::vector<std::string_view> exists{"EXISTS", "k"};
  CHECK(c0->Command(exists)->integer == 0);  // it went to db 2
  CHECK(c->Get("k")->value_or("") == "v");
}
