// `iosonar slurm`: the sacct poller as a sampling exporter. Every interval it
// reads `sacct --parsable2` over the window since the last sample, emits one
// iosonar.job record per job start and per job end seen for the first time,
// and with --mysql merges every job and step into the job database (and keeps
// the poll mark there, so a restarted exporter catches up where it stopped).
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "core/records/fields.h"
#include "exporters/framework/exporter.h"
#include "core/jobdb/jobdb.h"
#include "core/base/timeutil.h"
#include "exporters/scheduler/sacct.h"
#include "exporters/scheduler/scheduler.h"

namespace iosonar::exporters {

namespace {

constexpr OptionSpec kOptions[] = {
    opt::String("mysql", "URL", nullptr, "also merge every job and step into this job database (default $IOSONAR_MYSQL)")
        .Env("IOSONAR_MYSQL"),
    opt::Flag("no-mysql", "records only, even if $IOSONAR_MYSQL is set"),
    opt::String("cluster", "NAME", nullptr, "sacct --clusters NAME, and the job database's cluster key (default: sacct's Cluster)"),
    opt::Time("since", "TIME", nullptr,
              "the first sample reads from this ISO 8601 time (default: the job database's mark minus 5 minutes, else 1 hour ago)"),
    opt::String("sacct", "PROG", "sacct", "the sacct program"),
    opt::String("sacct-file", "FILE", nullptr, "read saved `sacct --parsable2` output (with its header) instead of running sacct"),
    opt::Duration("timeout", "SECONDS", "120", "kill sacct after this long").Above(0).Max(86400),
};

constexpr int64_t kS = 1000000000;

class SlurmExporter : public Exporter {
 public:
  SlurmExporter(const Options& o, std::string mysql, std::optional<int64_t> since, int timeout_ms)
      : mysql_(std::move(mysql)),
        cluster_(o.Get("cluster")),
        sacct_(o.Get("sacct")),
        sacct_file_(o.Get("sacct-file")),
        since_(since),
        timeout_ms_(timeout_ms) {}

  void Collect(Context& ctx) override {
    const int64_t now = ctx.now_ns();
    std::unique_ptr<JobDb> db;
    if (!mysql_.empty()) {
      SourceTimer t(ctx, "mysql");
      auto o = JobDb::Open(mysql_);
      if (o.ok()) db = std::move(o).value();
      else t.Fail(o.status().message());
    }
    const std::string key = cluster_.empty() ? "default" : cluster_;
    if (!from_) {
      if (since_) from_ = since_;
      else if (db) {
        auto mark = db->PolledTo(key);
        if (mark.ok() && mark.value()) from_ = *mark.value() - 5 * 60 * kS;
      }
      if (!from_) from_ = now - 3600 * kS;
    }
    std::string text;
    std::string delim = "|";
    {
      SourceTimer t(ctx, "sacct");
      if (!sacct_file_.empty()) {
        auto r = scheduler::RunCapture({"cat", "--", sacct_file_}, timeout_ms_);
        if (!r.ok()) {
          t.Fail(r.status().message());
          return;
        }
        text = std::move(r).value();
        if (text.find('\x1f') != std::string::npos) delim = "\x1f";
      } else {
        delim = "\x1f";
        std::vector<std::string> argv{sacct_, "--allusers", "--parsable2", "--delimiter=\x1f",
                                      std::string("--format=") + scheduler::kSacctFormat, "--starttime",
                                      SacctTime(*from_), "--endtime", SacctTime(now + kS)};
        if (!cluster_.empty()) argv.insert(argv.end(), {"--clusters", cluster_});
        auto r = scheduler::RunCapture(argv, timeout_ms_);
        if (!r.ok()) {
          t.Fail(r.status().message());
          return;  // the window stays: the next sample re-reads it
        }
        text = std::move(r).value();
      }
    }
    scheduler::SacctParse p = scheduler::ParseSacct(text, key, delim);
    for (const auto& b : p.bad) ctx.Warn("sacct", "line " + std::to_string(b.line) + ": " + b.reason);
    bool db_ok = db != nullptr;
    if (db) {
      SourceTimer t(ctx, "mysql");
      for (const auto& r : p.records) {
        Status s = db->Upsert(r);
        if (s.ok()) continue;
        if (s.code() == Code::kInvalid) {
          ctx.Warn("mysql", s.message());
          continue;
        }
        t.Fail(s.message());
        db_ok = false;
        break;
      }
      if (db_ok) {
        Status s = db->SetPolledTo(key, now);
        if (!s.ok()) t.Fail(s.message());
      }
    }
    for (const auto& r : p.records) {
      if (!r.step.empty()) continue;
      if (r.start_ns) Emit(ctx, r, "start", *r.start_ns);
      if (r.end_ns) Emit(ctx, r, "end", *r.end_ns);
    }
    // The next window starts 5 minutes back (sacct learns of ends late); the
    // emitted set keeps that overlap from repeating records.
    from_ = now - 5 * 60 * kS;
    Prune(now - 24 * 3600 * kS);
  }

 private:
  static std::string SacctTime(int64_t ns) {
    time_t t = static_cast<time_t>(ns / kS);
    struct tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
  }

  void Emit(Context& ctx, const JobRecord& j, const char* event, int64_t ts) {
    Key key{j.cluster, j.job_id, event};
    if (!seen_.insert(key).second) return;  // emitted by an earlier sample (the windows overlap)
    emitted_.emplace(ts, key);
    Record& r = ctx.Begin(dataset::kJob, ts);
    r.Str(field::kJobId, std::to_string(j.job_id));
    r.Str(field::kJobEvent, event);
    r.Str(field::kJobCluster, j.cluster);
    if (j.array_job_id) r.Str(field::kJobArrayId, std::to_string(*j.array_job_id));
    if (j.array_task_id) r.Int(field::kJobArrayTask, *j.array_task_id);
    if (j.user) r.Str(field::kJobUser, *j.user);
    if (j.account) r.Str(field::kJobAccount, *j.account);
    if (j.partition) r.Str(field::kJobPartition, *j.partition);
    if (j.name) r.Str(field::kJobName, *j.name);
    if (j.command) r.Str(field::kJobCommand, *j.command);
    if (j.node_list) r.Str(field::kJobNodes, *j.node_list);
    if (j.node_count) r.Int(field::kJobNodeCount, *j.node_count);
    if (j.task_count) r.Int(field::kJobTaskCount, *j.task_count);
    if (j.start_ns) r.Int(field::kJobStartNs, *j.start_ns);
    if (j.end_ns) r.Int(field::kJobEndNs, *j.end_ns);
    if (j.start_ns && j.end_ns) r.Num(field::kJobDurationS, static_cast<double>(*j.end_ns - *j.start_ns) / 1e9);
    if (j.state) r.Str(field::kJobState, *j.state);
    if (j.exit_code) r.Int(field::kJobExitCode, *j.exit_code);
  }

  void Prune(int64_t older_than) {
    while (!emitted_.empty() && emitted_.begin()->first < older_than) {
      seen_.erase(emitted_.begin()->second);
      emitted_.erase(emitted_.begin());
    }
  }

  using Key = std::tuple<std::string, uint64_t, std::string>;
  std::string mysql_, cluster_, sacct_, sacct_file_;
  std::optional<int64_t> since_, from_;
  int timeout_ms_;
  std::set<std::pair<int64_t, Key>> emitted_;  // by event time, to forget old ones
  std::set<Key> seen_;
};

Result<std::unique_ptr<Exporter>> Create(const Options& o) {
  std::optional<int64_t> since;
  if (o.Has("since")) since = o.TimeNs("since");
  const std::string mysql = o.Flag("no-mysql") ? std::string() : o.Get("mysql");
  return std::unique_ptr<Exporter>(new SlurmExporter(o, mysql, since, static_cast<int>(o.Seconds("timeout") * 1000)));
}

}  // namespace

extern const Descriptor kSlurmExporter;
const Descriptor kSlurmExporter = {
    "slurm",
    "Slurm jobs from sacct: iosonar.job start/end records, merged into the MySQL job database with --mysql",
    "Every interval runs `sacct --allusers --parsable2` over the window since the last sample (the first from\n"
    "--since, else the job database's mark minus 5 minutes, else one hour back; later ones re-read 5 minutes\n"
    "because sacct learns of job ends late) and emits one iosonar.job record per job start and per job end not\n"
    "emitted before (job.event = start | end; @timestamp = that time). With --mysql (or $IOSONAR_MYSQL) every\n"
    "job and step is also merged into the job database and the poll mark advanced, as `iosonar scheduler poll`\n"
    "does. Malformed sacct lines are warnings of the source \"sacct\"; the rest goes on.",
    kOptions,
    60.0,
    &Create,
    nullptr,
};

}  // namespace iosonar::exporters
