// The MySQL job database (schema in mysql-schema/, applied by Migrate): jobs
// as the scheduler reports them, their nodes, the administrator's static maps
// (node -> forwarding node, job -> OSTs), job-summary results, and the query
// API the analyses use ("which jobs ran on node N at time t", "which jobs
// shared a forwarding node or an OST with job J during its run").
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/jobdb/mysql.h"
#include "core/results/results.h"
#include "core/base/status.h"

namespace iosonar {

// One job (step == "") or job step as the scheduler reports it. Absent
// values are nullopt and never overwrite what the database already has.
struct JobRecord {
  std::string cluster;
  uint64_t job_id = 0;   // Slurm JobIDRaw
  std::string step;      // "" for the job; "batch", "extern", "0", ... for steps
  std::optional<int64_t> array_job_id, array_task_id;
  std::optional<std::string> user, group, account, partition, name, command, work_dir, node_list, state;
  std::optional<int64_t> uid, gid, node_count, task_count, exit_code, exit_signal;
  std::optional<int64_t> submit_ns, start_ns, end_ns;  // epoch ns, UTC
  std::string source;  // who reported it: prolog, epilog, sacct
  // The application key (ApplicationKey), computed once by whoever reports
  // the run (jobs.app_key, migration 037): the prolog from scontrol's
  // Command (as "sbatch COMMAND") or the --wrap line, the sacct poller from
  // SubmitLine, WorkDir and JobName. Upsert computes it from command,
  // work_dir and name when absent, and keeps the first key stored for a run.
  std::optional<std::string> app_key;
  bool operator==(const JobRecord&) const = default;
};

// The application a run belongs to (LASSi groups runs "based on the exact
// command used"), one key whoever reported the job. What each path has
// (Slurm 22.05, found with the real Slurm of the tests): scontrol's Command
// is the batch script as typed followed by its arguments, joined by single
// spaces without quotes ("./run.sh in.nml two words n=4"), "(null)" for an
// `sbatch --wrap` job (whose batch script holds the wrapped line), and no
// SubmitLine; sacct's SubmitLine is sbatch's argv joined the same way
// ("sbatch -J my run -N 1 ./run.sh in.nml two words n=4"), WorkDir and
// JobName as the prolog's. The key of all of them: for an sbatch line, the
// wrapped command for --wrap (the rest of the line after --wrap /
// --wrap=, outer quotes removed), else the script made absolute against
// work_dir, then its arguments; sbatch's options are dropped (the value of
// -J/--job-name spans as many words as job_name has, so a job name with
// spaces is not taken for the script; any other option value with a space
// is not told apart). The prolog keys scontrol's Command as "sbatch
// COMMAND" and a wrapped line as "sbatch --wrap LINE", so both paths go
// through this one function over the same words. A command that is no
// sbatch line keeps its words, its first made absolute when it is a relative
// path with a '/' (./run.sh) and work_dir is known. Runs of whitespace become
// one space.
std::string ApplicationKey(std::string_view command, std::string_view work_dir, std::string_view job_name = "");
// The key a record gives: its app_key if it has one, else ApplicationKey of
// its command, work_dir and name ("" without a command).
std::string ApplicationKeyOf(const JobRecord& r);

// The job_summary row (the numbers of analysis::JobSummary that are
// columns), as core/results/results.def declares it.
using JobSummaryRow = results::job_summary::Row;

// Which jobs a listing holds (JobDb::ListJobs): every job (all), else the
// jobs of `user` and those whose account / group is one of `accounts` /
// `groups`. An empty filter matches nothing.
struct JobListFilter {
  bool all = false;
  std::string user;
  std::vector<std::string> accounts, groups;
  // Narrowing what the caller may see (never widening it): the owner
  // (jobs.user_name), the state's prefix (COMPLETED, RUNNING, FAILED ...),
  // the stored anomaly verdict (job_anomaly.verdict; "none": not analysed),
  // a start time in [start_from_ns, start_to_ns), and the page: the listing
  // skips `offset` jobs of its order (latest start first).
  std::string only_user, state, verdict;
  std::optional<int64_t> start_from_ns, start_to_ns;
  size_t offset = 0;
};

// A job of a listing with the job_summary numbers when `job-summary` wrote
// them (summary_json is left empty).
struct JobListing {
  JobRecord job;
  std::optional<JobSummaryRow> summary;
};

// One row of file_layouts: a file of a job and its striping.
struct FileLayoutRow {
  std::string cluster;
  uint64_t job_id = 0;
  std::optional<std::string> filesystem;
  std::string path;
  int64_t stripe_size = 0;  // 0: unknown
  std::vector<int> osts;    // OST indices in stripe order (the column holds "0,4,7")
  int mdt = -1;             // -1: unknown
};

// The migrations compiled into the binary (mysql-schema/NNN_name.sql).
struct Migration {
  int version;
  std::string name;
  std::string_view sql;
};
const std::vector<Migration>& BuiltinMigrations();

// Formats epoch ns as a DATETIME(6) literal in UTC ("2026-11-22 09:15:02.123456").
std::string SqlDatetime(int64_t epoch_ns);

class JobDb {
 public:
  // url: mysql://... (see mysql.h).
  static Result<std::unique_ptr<JobDb>> Open(const std::string& url);

  // Applies the migrations not yet recorded in schema_migrations, in order,
  // under a named lock (concurrent runs wait). *applied = how many ran.
  Status Migrate(int* applied = nullptr);
  Result<int> SchemaVersion();  // 0 before any migration

  // Inserts or merges one record (fields present in r overwrite, absent ones
  // keep the stored value; a record without an end time does not overwrite
  // the state of a job that has ended). For the job itself (step ""), a
  // node_list replaces the job's job_nodes rows. One transaction.
  Status Upsert(const JobRecord& r);

  Result<std::optional<JobRecord>> Get(const std::string& cluster, uint64_t job_id, const std::string& step = "");
  // Clusters that have a job with this id (job-summary's --cluster default).
  Result<std::vector<std::string>> ClustersOf(uint64_t job_id);
  // The job (step "") a user names: job_id must be a number; the cluster is
  // `cluster`, or the only one with this id. Errors say why not (Invalid: not
  // a number, or on several clusters; NotFound: not in the database).
  Result<JobRecord> FindJob(const std::string& job_id, const std::string& cluster);
  Result<std::vector<std::string>> JobNodes(const std::string& cluster, uint64_t job_id);

  // Jobs (step "") whose run [start, end] contains t on node (an unended job runs until now).
  Result<std::vector<JobRecord>> JobsOnNode(const std::string& node, int64_t t_ns, const std::string& cluster = "");
  // Other jobs whose run overlaps J's and that had a node behind one of the
  // forwarding nodes of J's nodes (node_forwarding).
  Result<std::vector<JobRecord>> JobsSharingForwardingNode(const std::string& cluster, uint64_t job_id);
  // Other jobs whose run overlaps J's and that used one of J's OSTs (job_osts).
  Result<std::vector<JobRecord>> JobsSharingOst(const std::string& cluster, uint64_t job_id);

  // Earlier runs of one application: jobs (step "") on `cluster` that ended
  // before before_ns, the most recent first, at most `limit`. By key: the
  // runs whose jobs.app_key is app_key, and the rows without an app_key
  // (written before migration 037) whose command is `command` and whose key
  // computed from it (ApplicationKeyOf) is app_key. By command (for a job
  // whose own row has no app_key): the runs with this exact command line.
  Result<std::vector<JobRecord>> EarlierRunsOfApp(const std::string& cluster, const std::string& app_key,
                                                  const std::string& command, int64_t before_ns, size_t limit);
  Result<std::vector<JobRecord>> EarlierRunsByCommand(const std::string& cluster, const std::string& command,
                                                      int64_t before_ns, size_t limit);

  // The administrator's maps and the analyses' OST lists.
  Status SetForwardingNode(const std::string& node, const std::string& fwd_node);
  Status AddJobOst(const std::string& cluster, uint64_t job_id, const std::string& filesystem, const std::string& ost);
  // The same maps in bulk (a whole simulated cluster: 40,960 nodes one
  // statement each would take minutes): upserts of node -> forwarding node,
  // of a file system's OST -> OSS, and of file layouts.
  Status PutForwardingNodes(const std::vector<std::pair<std::string, std::string>>& node_fwd);
  Status PutFilesystemOsts(const std::string& filesystem, const std::vector<std::pair<std::string, std::string>>& ost_oss);
  Status PutFileLayouts(const std::vector<FileLayoutRow>& layouts);
  // node -> forwarding node of each of the job's nodes that has one.
  Result<std::vector<std::pair<std::string, std::string>>> JobForwardingNodes(const std::string& cluster, uint64_t job_id);
  // The whole node -> forwarding node map (for the jobs beside a job: its
  // neighbours' nodes are not its own).
  Result<std::vector<std::pair<std::string, std::string>>> ForwardingMap();
  // The job's file layouts; rows without a path or OSTs are left out.
  Result<std::vector<FileLayoutRow>> FileLayouts(const std::string& cluster, uint64_t job_id);

  Status WriteJobSummary(const JobSummaryRow& s);
  // Jobs (step "") matching f, latest start first (unstarted last), at most limit.
  Result<std::vector<JobListing>> ListJobs(const JobListFilter& f, size_t limit);

  // The sacct poller's mark: where the last successful poll of a cluster ended.
  Result<std::optional<int64_t>> PolledTo(const std::string& cluster);
  Status SetPolledTo(const std::string& cluster, int64_t t_ns);

  MysqlConn& conn() { return *conn_; }

 private:
  explicit JobDb(std::unique_ptr<MysqlConn> c) : conn_(std::move(c)) {}
  Result<std::vector<JobRecord>> SelectJobs(std::string_view where_sql, const std::vector<SqlParam>& params);
  std::unique_ptr<MysqlConn> conn_;
};

// The spool (records the prolog/epilog/poller could not write because MySQL
// was down): one file per record, written atomically (temp + rename), named
// so that lexical order is the order they were written in. Byte exact.
std::string JobRecordToSpoolText(const JobRecord& r);
Result<JobRecord> JobRecordFromSpoolText(std::string_view text);
Status SpoolJobRecord(const std::string& dir, const JobRecord& r, std::string* path = nullptr);

struct ReplayStats {
  uint64_t replayed = 0;  // written and removed from the spool
  uint64_t failed = 0;    // left in the spool (MySQL failed); replay stops at the first
  uint64_t bad = 0;       // unreadable files, moved to DIR/bad/ with a .reason file
};
// Replays every spooled record in order; stops at the first database error
// (the rest wait for the next replay). The Status is that error, if any.
Status ReplaySpool(const std::string& dir, JobDb& db, ReplayStats* stats);

}  // namespace iosonar
