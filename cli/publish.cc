// See publish.h.
#include "cli/publish.h"

#include <unistd.h>

#include <iostream>
#include <utility>

#include "redis-cache/cache.h"
#include "cli/commands.h"
#include "core/base/hash.h"
#include "core/transport/sink.h"

namespace iosonar::cli {

Publisher::Publisher(std::string command, PublishFlags flags) : command_(std::move(command)), flags_(std::move(flags)) {
  redis_url_ = ResolveSetting(flags_.redis, "IOSONAR_REDIS", "redis", flags_.config);
  mysql_url_ = ResolveSetting(flags_.mysql, "IOSONAR_MYSQL", "mysql", flags_.config);
}

Publisher::~Publisher() = default;

void Publisher::Report(const std::string& where, const Status& st, bool given_as_flag) {
  if (st.ok()) return;
  std::cerr << "iosonar " << command_ << ": " << (given_as_flag ? "" : "warning: ") << where << ": " << st.ToString()
            << "\n";
  if (given_as_flag) rc_ = 1;
}

void Publisher::Send(const std::string& lines, size_t n) {
  if (flags_.output.empty()) return;
  Status st;
  auto sink = OpenSink(flags_.output, SinkOptions{});
  if (!sink.ok()) {
    st = sink.status();
  } else if (!lines.empty()) {
    st = sink.value()->Send(lines, n);
    if (st.ok()) st = sink.value()->Flush();
  }
  Report("--output " + flags_.output, st, true);
}

void Publisher::Cache(const std::string& key, const std::string& value) {
  if (redis_url_.empty()) return;
  Report("cache", cache::CacheResult(redis_url_, key, value), !flags_.redis.empty());
}

void Publisher::WithJobDb(const std::function<Status(JobDb&)>& fn) {
  if (mysql_url_.empty()) return;
  if (!db_tried_) {
    db_tried_ = true;
    auto db = JobDb::Open(mysql_url_);
    if (!db.ok()) {
      Report("job database", db.status(), !flags_.mysql.empty());
      return;
    }
    db_ = std::move(db).value();
  }
  if (!db_) return;
  Report("job database", fn(*db_), !flags_.mysql.empty());
}

std::string HostName() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return host;
}

int64_t ResultStreamId(std::initializer_list<std::string_view> parts) {
  StreamHash h;
  for (std::string_view p : parts) h.Add(p);
  return h.Id();
}

}  // namespace iosonar::cli
