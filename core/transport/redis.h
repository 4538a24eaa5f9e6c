// A small synchronous Redis client on hiredis, named by a service URL:
//   redis://[[USER]:PASS@]HOST[:PORT][/DB]     unix:///PATH/redis.sock[?db=N]
// Connect() applies the timeout to connecting and to every command, sends
// AUTH when the URL has a password and SELECTs the database.
//
// A command that fails because the connection broke (server restart, idle
// timeout) is retried once on a fresh connection. A retried RPUSH may thus be
// applied twice if the server had taken it before the break: consumers of
// the list dedupe on (event.stream, event.seq).
//
// Errors are Status values naming the URL with its password redacted.
// Not thread-safe: one RedisClient per thread.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

struct redisContext;
struct redisReply;

namespace iosonar {

struct RedisReply {
  enum Type { kNil, kString, kStatus, kInteger, kArray };
  Type type = kNil;
  std::string str;  // kString, kStatus
  int64_t integer = 0;
  std::vector<RedisReply> elements;  // kArray
};

class RedisClient {
 public:
  static Result<std::unique_ptr<RedisClient>> Connect(const std::string& url, int timeout_ms = 2000);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // RPUSH key v1 v2 ...: values go to the list in order. Sent as pipelined
  // RPUSH commands of at most kPushChunk values each.
  Status RPushBatch(std::string_view key, std::span<const std::string_view> values);
  // SET key value [EX ttl_seconds] (no expiry when ttl_seconds <= 0).
  Status Set(std::string_view key, std::string_view value, int ttl_seconds = 0);
  // The value, or nullopt when the key does not exist.
  Result<std::optional<std::string>> Get(std::string_view key);
  // Any other command; a Redis error reply becomes a Status.
  Result<RedisReply> Command(std::span<const std::string_view> args);

  const std::string& url() const { return redacted_url_; }  // password shown as ***
  static constexpr size_t kPushChunk = 1000;

 private:
  RedisClient() = default;
  Status Open();
  Status Reconnect();
  // Sends the commands (each a list of arguments) pipelined and collects
  // their replies; retries once on a fresh connection if the link broke.
  Status Pipeline(const std::vector<std::span<const std::string_view>>& cmds, std::vector<RedisReply>* replies,
                  const char* what);
  Status PipelineOnce(const std::vector<std::span<const std::string_view>>& cmds, std::vector<RedisReply>* replies,
                      const char* what, bool* broken);

  redisContext* ctx_ = nullptr;
  std::string host_, unix_path_, user_, password_, redacted_url_;
  int port_ = 6379, db_ = 0, timeout_ms_ = 2000;
  std::vector<const char*> argv_;  // scratch, reused across calls
  std::vector<size_t> argl_;
};

}  // namespace iosonar
