// Where an analysis subcommand's results go besides stdout: a result stream
// (--output OUT, any OpenSink target), the Redis cache (--redis URL) and the
// MySQL job database (--mysql URL). One rule for all of them: a failure is an
// error (exit 1, "iosonar CMD: WHAT: why") when the URL was given as a flag,
// a warning ("iosonar CMD: warning: WHAT: why") when it came from the
// environment or the config file (ResolveSetting), and the command goes on
// with the other destinations either way. --output has no environment form.
// A command that reads the job database (LASSi's command lines, xlayer's
// maps) opens it through WithJobDb too, so it is opened once and its failure
// reported once.
//
//   Publisher pub("xlayer", {output, redis_flag, mysql_flag, config});
//   ... print the result ...
//   pub.Send(xlayer::ToRecords(view, HostName()));
//   pub.Cache(cache::JobResultKey(job, "xlayer"), json);
//   pub.WithJobDb([&](JobDb& db) { return WriteSomething(db.conn(), ...); });
//   return std::max(rc, pub.rc());
//
// The Publisher stays in cli/: which destinations are on and how a failure
// counts depend on flags, the environment and the config file, which are the
// command line's business; the analyses only make the records, JSON and rows
// (their *ToRecords, *ToJson, Write*ToDb) and never need it. The analysis
// worker's loop (analysis-jobs/worker/loop.h) sees it as its Destinations.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "analysis-jobs/worker/loop.h"
#include "core/base/status.h"
#include "core/jobdb/jobdb.h"

namespace iosonar::cli {

struct PublishFlags {
  std::string output;  // --output OUT ("" = none)
  std::string redis;   // --redis URL as given ("" = $IOSONAR_REDIS or the config's redis = ...)
  std::string mysql;   // --mysql URL as given ("" = $IOSONAR_MYSQL or the config's mysql = ...)
  std::string config;  // --config FILE
  const char* output_option = "--output";  // the flag's name in messages (lassi: --results-output)
};

class Publisher : public worker::Destinations {
 public:
  Publisher(std::string command, PublishFlags flags);
  ~Publisher() override;
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // The resolved URLs ("" = that destination is off).
  bool has_output() const override { return !flags_.output.empty(); }
  const std::string& redis_url() const { return redis_url_; }
  const std::string& mysql_url() const { return mysql_url_; }

  // Sends '\n'-terminated record lines to --output and flushes. Nothing
  // happens without --output; an empty `lines` only opens the sink.
  void Send(const std::string& lines) override;
  // SET key = value in Redis, when a Redis URL is set.
  void Cache(const std::string& key, const std::string& value) override;
  // Runs fn against the job database, when a MySQL URL is set (the
  // connection is opened once, at the first call; a failed open is reported
  // once and later calls are skipped). fn's error is reported as above.
  void WithJobDb(const std::function<Status(JobDb&)>& fn) override;
  // WithJobDb for the job a command was given (JobDb::FindJob: job_id on
  // `cluster`, or the only cluster with that id): fn(db, job); the lookup's
  // failure is reported like fn's.
  void WithJob(const std::string& job_id, const std::string& cluster,
               const std::function<Status(JobDb&, const JobRecord&)>& fn) override;

  // Reports a failure of a destination by the rule above. where: "cache",
  // "job database", or "--output OUT".
  void Report(const std::string& where, const Status& st, bool given_as_flag);
  // 0, or 1 once a failure was an error.
  int rc() const { return rc_; }

 private:
  std::string command_;
  PublishFlags flags_;
  std::string redis_url_, mysql_url_;
  std::unique_ptr<JobDb> db_;
  bool db_tried_ = false;
  int rc_ = 0;
};

}  // namespace iosonar::cli
