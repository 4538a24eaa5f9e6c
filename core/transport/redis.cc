#include "core/transport/redis.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>

#include "core/base/url.h"

namespace iosonar {
namespace {

RedisReply Convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING: out.type = RedisReply::kString; out.str.assign(r->str, r->len); break;
    case REDIS_REPLY_STATUS: out.type = RedisReply::kStatus; out.str.assign(r->str, r->len); break;
    case REDIS_REPLY_INTEGER: out.type = RedisReply::kInteger; out.integer = r->integer; break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default: out.type = RedisReply::kNil; break;
  }
  return out;
}

bool ParseDb(const std::string& s, int* db) {
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  *db = std::stoi(s);
  return true;
}

}  // namespace

Result<std::unique_ptr<RedisClient>> RedisClient::Connect(const std::string& url, int timeout_ms) {
  auto u = ParseUrl(url);
  if (!u.ok()) return u.status();
  std::unique_ptr<RedisClient> c(new RedisClient());
  c->redacted_url_ = u->ToString(true);
  c->timeout_ms_ = timeout_ms > 0 ? timeout_ms : 2000;
  c->user_ = u->user;
  c->password_ = u->password;
  std::string db_text;
  if (u->scheme == "redis") {
    c->host_ = u->host;
    c->port_ = u->port;
    db_text = u->path;
  } else if (u->scheme == "unix") {
    c->unix_path_ = u->path;
  } else {
    return Status::Invalid("bad Redis URL \"" + c->redacted_url_ +
                           "\": expected redis://[:PASS@]HOST:PORT[/DB] or unix:///PATH[?db=N]");
  }
  if (auto it = u->query.find("db"); it != u->query.end()) db_text = it->second;
  if (!db_text.empty() && !ParseDb(db_text, &c->db_))
    return Status::Invalid("bad Redis URL \"" + c->redacted_url_ + "\": database \"" + db_text + "\" is not a number");
  if (auto s = c->Open(); !s.ok()) return s;
  return c;
}

RedisClient::~RedisClient() {
  if (ctx_) redisFree(ctx_);
}

Status RedisClient::Open() {
  if (ctx_) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  timeval tv{timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000};
  redisContext* c = unix_path_.empty() ? redisConnectWithTimeout(host_.c_str(), port_, tv)
                                       : redisConnectUnixWithTimeout(unix_path_.c_str(), tv);
  if (!c) return Status::Unavailable("redis " + redacted_url_ + ": cannot allocate a connection");
  if (c->err) {
    Status s = Status::Unavailable("redis " + redacted_url_ + ": connect: " + c->errstr);
    redisFree(c);
    return s;
  }
  redisSetTimeout(c, tv);
  auto simple = [&](std::vector<std::string> args, const char* what) -> Status {
    std::vector<const char*> av;
    std::vector<size_t> al;
    for (const auto& a : args) {
      av.push_back(a.data());
      al.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(av.size()), av.data(), al.data()));
    if (!r) return Status::Unavailable("redis " + redacted_url_ + ": " + what + ": " + c->errstr);
    Status s;
    if (r->type == REDIS_REPLY_ERROR)
      s = Status::Invalid("redis " + redacted_url_ + ": " + what + " refused: " + std::string(r->str, r->len));
    freeReplyObject(r);
    return s;
  };
  Status s;
  if (!password_.empty())
    s = user_.empty() ? simple({"AUTH", password_}, "AUTH") : simple({"AUTH", user_, password_}, "AUTH");
  if (s.ok() && db_ != 0) s = simple({"SELECT", std::to_string(db_)}, "SELECT");
  if (!s.ok()) {
    redisFree(c);
    return s;
  }
  ctx_ = c;
  return Status::Ok();
}

Status RedisClient::Reconnect() { return Open(); }

Status RedisClient::PipelineOnce(const std::vector<std::span<const std::string_view>>& cmds,
                                 std::vector<RedisReply>* replies, const char* what, bool* broken) {
  *broken = false;
  for (const auto& args : cmds) {
    argv_.clear();
    argl_.clear();
    for (auto a : args) {
      argv_.push_back(a.data());
      argl_.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, static_cast<int>(argv_.size()), argv_.data(), argl_.data()) != REDIS_OK) {
      *broken = true;
      return Status::Unavailable("redis " + redacted_url_ + ": " + what + ": " + ctx_->errstr);
    }
  }
  Status first_error;
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw) {
      *broken = true;
      return Status::Unavailable("redis " + redacted_url_ + ": " + what + ": " +
                                 (ctx_->errstr[0] ? ctx_->errstr : "connection lost"));
    }
    auto* r = static_cast<redisReply*>(raw);
    // Keep reading after an error reply: every reply must be consumed for
    // the connection to stay in step.
    if (r->type == REDIS_REPLY_ERROR) {
      if (first_error.ok()) first_error = Status::Io("redis " + redacted_url_ + ": " + what + ": " + std::string(r->str, r->len));
    } else if (replies) {
      replies->push_back(Convert(r));
    }
    freeReplyObject(r);
  }
  return first_error;
}

Status RedisClient::Pipeline(const std::vector<std::span<const std::string_view>>& cmds,
                             std::vector<RedisReply>* replies, const char* what) {
  if (!ctx_)
    if (auto s = Open(); !s.ok()) return s;
  bool broken = false;
  size_t had = replies ? replies->size() : 0;
  Status s = PipelineOnce(cmds, replies, what, &broken);
  if (!broken) return s;
  if (replies) replies->resize(had);
  if (auto rs = Reconnect(); !rs.ok()) return rs;
  s = PipelineOnce(cmds, replies, what, &broken);
  if (broken) {
    redisFree(ctx_);  // the next call starts with a fresh connection attempt
    ctx_ = nullptr;
  }
  return s;
}

Status RedisClient::RPushBatch(std::string_view key, std::span<const std::string_view> values) {
  if (values.empty()) return Status::Ok();
  // One argument vector for all chunks: "RPUSH key" is re-placed before each
  // chunk's values, so each chunk is a contiguous span of it.
  std::vector<std::string_view> args;
  size_t chunks = (values.size() + kPushChunk - 1) / kPushChunk;
  args.reserve(values.size() + 2 * chunks);
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t off = 0; off < values.size(); off += kPushChunk) {
    size_t n = std::min(kPushChunk, values.size() - off);
    size_t start = args.size();
    args.push_back("RPUSH");
    args.push_back(key);
    args.insert(args.end(), values.begin() + static_cast<std::ptrdiff_t>(off),
                values.begin() + static_cast<std::ptrdiff_t>(off + n));
    ranges.emplace_back(start, args.size() - start);
  }
  std::vector<std::span<const std::string_view>> cmds;
  for (auto [start, n] : ranges) cmds.emplace_back(args.data() + start, n);
  return Pipeline(cmds, nullptr, "RPUSH");
}

Status RedisClient::Set(std::string_view key, std::string_view value, int ttl_seconds) {
  std::string ttl = std::to_string(ttl_seconds);
  std::vector<std::string_view> args{"SET", key, value};
  if (ttl_seconds > 0) {
    args.push_back("EX");
    args.push_back(ttl);
  }
  return Pipeline({std::span<const std::string_view>(args)}, nullptr, "SET");
}

Result<std::optional<std::string>> RedisClient::Get(std::string_view key) {
  std::vector<std::string_view> args{"GET", key};
  std::vector<RedisReply> replies;
  if (auto s = Pipeline({std::span<const std::string_view>(args)}, &replies, "GET"); !s.ok()) return s;
  if (replies.empty() || replies[0].type == RedisReply::kNil) return std::optional<std::string>();
  if (replies[0].type != RedisReply::kString)
    return Status::Io("redis " + redacted_url_ + ": GET: unexpected reply type");
  return std::optional<std::string>(std::move(replies[0].str));
}

Result<RedisReply> RedisClient::Command(std::span<const std::string_view> args) {
  if (args.empty()) return Status::Invalid("redis: empty command");
  std::vector<RedisReply> replies;
  std::string what(args[0]);
  if (auto s = Pipeline({args}, &replies, what.c_str()); !s.ok()) return s;
  if (replies.empty()) return Status::Internal("redis " + redacted_url_ + ": no reply");
  return std::move(replies[0]);
}

}  // namespace iosonar
