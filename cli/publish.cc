// See publish.h.
#include "cli/publish.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "redis-cache/cache.h"
#include "cli/commands.h"
#include "core/store/es_store.h"
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

void Publisher::Send(const std::string& lines) {
  if (flags_.output.empty()) return;
  Status st;
  // An Elasticsearch output authenticates and names its namespace as --store does (found on a
  // real Elasticsearch with security: result records were sent without credentials).
  SinkOptions so;
  so.es = EsOptionsFromEnv();
  auto sink = OpenSink(flags_.output, so);
  if (!sink.ok()) {
    st = sink.status();
  } else if (!lines.empty()) {
    st = sink.value()->Send(lines, static_cast<size_t>(std::count(lines.begin(), lines.end(), '\n')));
    if (st.ok()) st = sink.value()->Flush();
  }
  Report(std::string(flags_.output_option) + " " + flags_.output, st, true);
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

void Publisher::WithJob(const std::string& job_id, const std::string& cluster,
                        const std::function<Status(JobDb&, const JobRecord&)>& fn) {
  WithJobDb([&](JobDb& db) -> Status {
    auto job = db.FindJob(job_id, cluster);
    if (!job.ok()) return job.status();
    return fn(db, *job);
  });
}

}  // namespace iosonar::cli
