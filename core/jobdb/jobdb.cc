// The MySQL job database. See jobdb.h and mysql-schema/.
#include "core/jobdb/jobdb.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "core/jobdb/hostlist.h"
#include "core/base/timeutil.h"

namespace iosonar {

namespace {

constexpr const char* kJobCols =
    "j.cluster, j.job_id, j.step, j.array_job_id, j.array_task_id, j.user_name, j.uid, j.group_name, j.gid, "
    "j.account, j.partition_name, j.job_name, j.command, j.work_dir, j.node_list, j.node_count, j.task_count, "
    "UNIX_TIMESTAMP(j.submit_time), UNIX_TIMESTAMP(j.start_time), UNIX_TIMESTAMP(j.end_time), j.state, "
    "j.exit_code, j.exit_signal, j.source, j.app_key";

std::optional<int64_t> ToInt(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || p != s->data() + s->size()) return std::nullopt;
  return v;
}

// "1490000000.123456" (UNIX_TIMESTAMP of a DATETIME(6)) -> epoch ns, exactly.
std::optional<int64_t> DecimalSecondsToNs(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  size_t dot = s->find('.');
  auto secs = ToInt(s->substr(0, dot));
  if (!secs) return std::nullopt;
  int64_t frac = 0;
  if (dot != std::string::npos) {
    std::string f = s->substr(dot + 1, 9);
    f.resize(9, '0');
    auto fv = ToInt(f);
    if (!fv) return std::nullopt;
    frac = *fv;
  }
  return *secs * 1000000000 + frac;
}

JobRecord RowToJob(const SqlRow& r) {
  JobRecord j;
  j.cluster = r[0].value_or("");
  j.job_id = static_cast<uint64_t>(ToInt(r[1]).value_or(0));
  j.step = r[2].value_or("");
  j.array_job_id = ToInt(r[3]);
  j.array_task_id = ToInt(r[4]);
  j.user = r[5];
  j.uid = ToInt(r[6]);
  j.group = r[7];
  j.gid = ToInt(r[8]);
  j.account = r[9];
  j.partition = r[10];
  j.name = r[11];
  j.command = r[12];
  j.work_dir = r[13];
  j.node_list = r[14];
  j.node_count = ToInt(r[15]);
  j.task_count = ToInt(r[16]);
  j.submit_ns = DecimalSecondsToNs(r[17]);
  j.start_ns = DecimalSecondsToNs(r[18]);
  j.end_ns = DecimalSecondsToNs(r[19]);
  j.state = r[20];
  j.exit_code = ToInt(r[21]);
  j.exit_signal = ToInt(r[22]);
  j.source = r[23].value_or("");
  if (r.size() > 24) j.app_key = r[24];
  return j;
}

SqlParam Time(const std::optional<int64_t>& ns) { return ns ? SqlParam(SqlDatetime(*ns)) : SqlNull(); }

bool RealNodeList(const std::optional<std::string>& s) {
  return s && !s->empty() && *s != "None assigned" && *s != "(null)" && *s != "None";
}

}  // namespace

std::string SqlDatetime(int64_t ns) {
  int64_t secs = ns / 1000000000, rem = ns % 1000000000;
  if (rem < 0) {
    rem += 1000000000;
    --secs;
  }
  time_t t = static_cast<time_t>(secs);
  struct tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%06lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(rem / 1000));
  return buf;
}

namespace {
std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> w;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n') ++j;
    if (j > i) w.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return w;
}
std::string Unquote(std::string s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) return s.substr(1, s.size() - 2);
  return s;
}
std::string Join(const std::vector<std::string>& w, size_t from) {
  std::string out;
  for (size_t i = from; i < w.size(); ++i) out += (out.empty() ? "" : " ") + w[i];
  return out;
}
std::string Absolute(const std::string& path, std::string_view work_dir) {
  if (path.empty() || path[0] == '/' || work_dir.empty()) return path;
  std::string p = path;
  while (p.rfind("./", 0) == 0) p = p.substr(2);
  std::string d(work_dir);
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/" + p;
}
// sbatch's short options that take a value as the next word (sbatch(1)).
bool ShortTakesValue(char c) { return std::string_view("AabcCdDeiJLMmnNopqStwxGF").find(c) != std::string_view::npos; }
// Long options without a value (every other long option takes one, as --opt=V or --opt V).
bool LongIsFlag(std::string_view o) {
  for (std::string_view f : {"--exclusive", "--requeue", "--no-requeue", "--hold", "--parsable", "--wait", "--test-only",
                             "--overcommit", "--spread-job", "--use-min-nodes", "--contiguous", "--ignore-pbs", "--quiet",
                             "--verbose", "--reboot", "--no-kill", "--oversubscribe", "--get-user-env", "--help",
                             "--usage", "--version", "--export-file"})
    if (o == f) return true;
  return false;
}
}  // namespace

std::string ApplicationKeyOf(const JobRecord& r) {
  if (r.app_key) return *r.app_key;
  if (!r.command) return "";
  return ApplicationKey(*r.command, r.work_dir.value_or(""), r.name.value_or(""));
}

std::string ApplicationKey(std::string_view command, std::string_view work_dir, std::string_view job_name) {
  const std::vector<std::string> w = Words(command);
  // The value of -J / --job-name takes as many words as the job's name.
  const size_t name_words = std::max<size_t>(1, Words(job_name).size());
  if (w.empty()) return "";
  const std::string& first = w[0];
  const bool sbatch = first == "sbatch" || (first.size() > 7 && first.compare(first.size() - 7, 7, "/sbatch") == 0);
  if (!sbatch) {
    std::vector<std::string> out = w;
    if (out[0].find('/') != std::string::npos) out[0] = Absolute(out[0], work_dir);
    return Join(out, 0);
  }
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "--wrap") return Unquote(Join(w, i + 1));
    if (a.rfind("--wrap=", 0) == 0) {
      std::vector<std::string> rest = {a.substr(7)};
      rest.insert(rest.end(), w.begin() + static_cast<long>(i) + 1, w.end());
      return Unquote(Join(rest, 0));
    }
    if (a == "--") continue;
    if (a == "-J" || a == "--job-name") {
      i += name_words;  // the name's words
      continue;
    }
    if (a.rfind("--job-name=", 0) == 0 || (a.size() > 2 && a.rfind("-J", 0) == 0)) {
      i += name_words - 1;  // the first word of the name is attached
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      if (a.find('=') == std::string::npos && !LongIsFlag(a)) ++i;  // its value is the next word
      continue;
    }
    if (a.size() >= 2 && a[0] == '-') {
      if (a.size() == 2 && ShortTakesValue(a[1])) ++i;  // -N 4 (but -N4 carries its value)
      continue;
    }
    std::vector<std::string> out(w.begin() + static_cast<long>(i), w.end());
    out[0] = Absolute(out[0], work_dir);
    return Join(out, 0);
  }
  return Join(w, 0);  // sbatch without a script (reads stdin): nothing better
}

Result<std::unique_ptr<JobDb>> JobDb::Open(const std::string& url) {
  auto c = MysqlConn::Connect(url);
  if (!c.ok()) return c.status();
  return std::unique_ptr<JobDb>(new JobDb(std::move(c).value()));
}

Result<int> JobDb::SchemaVersion() {
  auto t = conn_->Query(
      "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = "
      "'schema_migrations'");
  if (!t.ok()) return t.status();
  if (t->empty() || ToInt((*t)[0][0]).value_or(0) == 0) return 0;
  auto r = conn_->Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  if (!r.ok()) return r.status();
  return static_cast<int>(ToInt((*r)[0][0]).value_or(0));
}

Status JobDb::Migrate(int* applied) {
  if (applied) *applied = 0;
  auto lock = conn_->Query("SELECT GET_LOCK('iosonar.migrate', 120)");
  if (!lock.ok()) return lock.status();
  if (lock->empty() || (*lock)[0][0].value_or("0") != "1")
    return Status::Unavailable("db-migrate: another migration holds the lock 'iosonar.migrate' (waited 120 s)");
  auto release = [&] { (void)conn_->Query("SELECT RELEASE_LOCK('iosonar.migrate')"); };
  auto made = conn_->Exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INT NOT NULL PRIMARY KEY, name VARCHAR(128) NOT NULL, "
      "applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
  if (!made.ok()) {
    release();
    return made.status();
  }
  auto have = conn_->Query("SELECT version FROM schema_migrations");
  if (!have.ok()) {
    release();
    return have.status();
  }
  std::set<int64_t> done;
  for (const auto& row : *have) done.insert(ToInt(row[0]).value_or(-1));
  for (const auto& m : BuiltinMigrations()) {
    if (done.count(m.version)) continue;
    for (const auto& stmt : SplitSqlStatements(m.sql)) {
      auto r = conn_->Exec(stmt);
      if (!r.ok()) {
        release();
        return Status(r.status().code(), "migration " + std::to_string(m.version) + "_" + m.name + ": " +
                                              r.status().message());
      }
    }
    auto rec = conn_->Exec("INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                           {static_cast<int64_t>(m.version), m.name});
    if (!rec.ok()) {
      release();
      return rec.status();
    }
    if (applied) ++*applied;
  }
  release();
  return Status::Ok();
}

Status JobDb::Upsert(const JobRecord& r) {
  std::vector<std::string> nodes;
  const bool set_nodes = r.step.empty() && RealNodeList(r.node_list);
  if (set_nodes) {
    auto e = ExpandHostlist(*r.node_list);
    if (!e.ok())
      return Status::Invalid("job " + std::to_string(r.job_id) + " on " + r.cluster + ": " + e.status().message());
    nodes = std::move(e).value();
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  }
  if (r.cluster.empty()) return Status::Invalid("job " + std::to_string(r.job_id) + ": no cluster name");
  // The state is assigned before end_time: MySQL evaluates these left to right.
  static constexpr std::string_view kUpsert =
      "INSERT INTO jobs (cluster, job_id, step, array_job_id, array_task_id, user_name, uid, group_name, gid, account, "
      "partition_name, job_name, command, work_dir, node_list, node_count, task_count, submit_time, start_time, "
      "end_time, state, exit_code, exit_signal, source, app_key) VALUES "
      "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE "
      // The run's application key is written once: the first path to report it fixes it.
      "app_key = COALESCE(app_key, VALUES(app_key)), "
      "array_job_id = COALESCE(VALUES(array_job_id), array_job_id), "
      "array_task_id = COALESCE(VALUES(array_task_id), array_task_id), "
      "user_name = COALESCE(VALUES(user_name), user_name), uid = COALESCE(VALUES(uid), uid), "
      "group_name = COALESCE(VALUES(group_name), group_name), gid = COALESCE(VALUES(gid), gid), "
      "account = COALESCE(VALUES(account), account), "
      "partition_name = COALESCE(VALUES(partition_name), partition_name), "
      // sacct rewrites '"' in job names as '`': its name only fills a missing one (the prolog's is exact).
      "job_name = IF(VALUES(source) = 'sacct' AND job_name IS NOT NULL, job_name, "
      "COALESCE(VALUES(job_name), job_name)), command = COALESCE(VALUES(command), command), "
      "work_dir = COALESCE(VALUES(work_dir), work_dir), node_list = COALESCE(VALUES(node_list), node_list), "
      "node_count = COALESCE(VALUES(node_count), node_count), task_count = COALESCE(VALUES(task_count), task_count), "
      "submit_time = COALESCE(VALUES(submit_time), submit_time), "
      "start_time = COALESCE(VALUES(start_time), start_time), "
      "state = IF(VALUES(end_time) IS NULL AND end_time IS NOT NULL, state, COALESCE(VALUES(state), state)), "
      "exit_code = COALESCE(VALUES(exit_code), exit_code), exit_signal = COALESCE(VALUES(exit_signal), exit_signal), "
      "end_time = COALESCE(VALUES(end_time), end_time), source = VALUES(source)";
  const std::string app_key = ApplicationKeyOf(r);
  return conn_->Transaction([&]() -> Status {
    auto ins = conn_->Exec(kUpsert, {r.cluster, static_cast<int64_t>(r.job_id), r.step, SqlOpt(r.array_job_id),
                                     SqlOpt(r.array_task_id), SqlOpt(r.user), SqlOpt(r.uid), SqlOpt(r.group),
                                     SqlOpt(r.gid), SqlOpt(r.account), SqlOpt(r.partition), SqlOpt(r.name),
                                     SqlOpt(r.command), SqlOpt(r.work_dir), SqlOpt(r.node_list), SqlOpt(r.node_count),
                                     SqlOpt(r.task_count), Time(r.submit_ns), Time(r.start_ns), Time(r.end_ns),
                                     SqlOpt(r.state), SqlOpt(r.exit_code), SqlOpt(r.exit_signal), r.source,
                                     app_key.empty() ? SqlParam(SqlNull()) : SqlParam(app_key)});
    if (!ins.ok()) return ins.status();
    if (set_nodes) {
      auto del = conn_->Exec("DELETE FROM job_nodes WHERE cluster = ? AND job_id = ?",
                             {r.cluster, static_cast<int64_t>(r.job_id)});
      if (!del.ok()) return del.status();
      constexpr size_t kChunk = 64;
      for (size_t i = 0; i < nodes.size(); i += kChunk) {
        size_t n = std::min(kChunk, nodes.size() - i);
        std::string sql = "INSERT IGNORE INTO job_nodes (cluster, job_id, node) VALUES ";
        std::vector<SqlParam> params;
        for (size_t k = 0; k < n; ++k) {
          sql += k ? ", (?, ?, ?)" : "(?, ?, ?)";
          params.push_back(r.cluster);
          params.push_back(static_cast<int64_t>(r.job_id));
          params.push_back(nodes[i + k]);
        }
        auto a = conn_->Exec(sql, params);
        if (!a.ok()) return a.status();
      }
    }
    return Status::Ok();
  });
}

Result<std::vector<JobRecord>> JobDb::SelectJobs(std::string_view tail, const std::vector<SqlParam>& params) {
  std::string sql = std::string("SELECT DISTINCT ") + kJobCols + " " + std::string(tail);
  auto rows = conn_->Query(sql, params);
  if (!rows.ok()) return rows.status();
  std::vector<JobRecord> out;
  for (const auto& row : *rows) out.push_back(RowToJob(row));
  return out;
}

Result<std::vector<JobRecord>> JobDb::EarlierRunsByCommand(const std::string& cluster, const std::string& command,
                                                          int64_t before_ns, size_t limit) {
  return SelectJobs("FROM jobs j WHERE j.cluster = ? AND j.step = '' AND j.command = ? AND j.end_time IS NOT NULL "
                    "AND j.end_time <= ? ORDER BY UNIX_TIMESTAMP(j.start_time) DESC LIMIT " + std::to_string(limit),
                    {cluster, command, SqlDatetime(before_ns)});
}

Result<std::vector<JobRecord>> JobDb::EarlierRunsOfApp(const std::string& cluster, const std::string& app_key,
                                                      const std::string& command, int64_t before_ns, size_t limit) {
  auto rows = SelectJobs(
      "FROM jobs j WHERE j.cluster = ? AND j.step = '' AND (j.app_key = ? OR (j.app_key IS NULL AND j.command = ?)) "
      "AND j.end_time IS NOT NULL AND j.end_time <= ? ORDER BY UNIX_TIMESTAMP(j.start_time) DESC LIMIT " +
          std::to_string(limit),
      {cluster, app_key, command, SqlDatetime(before_ns)});
  if (!rows.ok()) return rows.status();
  std::vector<JobRecord> out;
  for (auto& r : *rows)  // a row without a key belongs to the application when its computed key is this one
    if (ApplicationKeyOf(r) == app_key) out.push_back(std::move(r));
  return out;
}

Result<std::optional<JobRecord>> JobDb::Get(const std::string& cluster, uint64_t job_id, const std::string& step) {
  auto r = SelectJobs("FROM jobs j WHERE j.cluster = ? AND j.job_id = ? AND j.step = ?",
                      {cluster, static_cast<int64_t>(job_id), step});
  if (!r.ok()) return r.status();
  if (r->empty()) return std::optional<JobRecord>();
  return std::optional<JobRecord>(std::move(r->front()));
}

Result<std::vector<std::string>> JobDb::ClustersOf(uint64_t job_id) {
  auto rows = conn_->Query("SELECT DISTINCT cluster FROM jobs WHERE job_id = ? AND step = '' ORDER BY cluster",
                           {static_cast<int64_t>(job_id)});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (const auto& r : *rows) out.push_back(r[0].value_or(""));
  return out;
}

Result<std::vector<std::string>> JobDb::JobNodes(const std::string& cluster, uint64_t job_id) {
  auto rows = conn_->Query("SELECT node FROM job_nodes WHERE cluster = ? AND job_id = ? ORDER BY node",
                           {cluster, static_cast<int64_t>(job_id)});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (const auto& r : *rows) out.push_back(r[0].value_or(""));
  return out;
}

Result<std::vector<JobRecord>> JobDb::JobsOnNode(const std::string& node, int64_t t_ns, const std::string& cluster) {
  std::string t = SqlDatetime(t_ns);
  std::string tail =
      "FROM jobs j JOIN job_nodes n ON n.cluster = j.cluster AND n.job_id = j.job_id "
      "WHERE j.step = '' AND n.node = ? AND j.start_time <= ? AND (j.end_time IS NULL OR j.end_time >= ?)";
  std::vector<SqlParam> p{node, t, t};
  if (!cluster.empty()) {
    tail += " AND j.cluster = ?";
    p.push_back(cluster);
  }
  tail += " ORDER BY j.start_time, j.job_id";
  return SelectJobs(tail, p);
}

// The overlap of J's run (me) and another job's run (j); an unended run lasts until now.
static constexpr const char* kOverlap =
    " AND j.start_time <= COALESCE(me.end_time, UTC_TIMESTAMP(6)) AND COALESCE(j.end_time, UTC_TIMESTAMP(6)) >= "
    "me.start_time AND j.job_id <> me.job_id";

Result<std::vector<JobRecord>> JobDb::JobsSharingForwardingNode(const std::string& cluster, uint64_t job_id) {
  return SelectJobs(std::string("FROM jobs me "
                                "JOIN job_nodes mn ON mn.cluster = me.cluster AND mn.job_id = me.job_id "
                                "JOIN node_forwarding mf ON mf.node = mn.node "
                                "JOIN node_forwarding xf ON xf.fwd_node = mf.fwd_node "
                                "JOIN job_nodes xn ON xn.node = xf.node AND xn.cluster = me.cluster "
                                "JOIN jobs j ON j.cluster = xn.cluster AND j.job_id = xn.job_id AND j.step = '' "
                                "WHERE me.cluster = ? AND me.job_id = ? AND me.step = ''") +
                        kOverlap + " ORDER BY j.start_time, j.job_id",
                    {cluster, static_cast<int64_t>(job_id)});
}

Result<std::vector<JobRecord>> JobDb::JobsSharingOst(const std::string& cluster, uint64_t job_id) {
  return SelectJobs(std::string("FROM jobs me "
                                "JOIN job_osts mo ON mo.cluster = me.cluster AND mo.job_id = me.job_id "
                                "JOIN job_osts xo ON xo.filesystem = mo.filesystem AND xo.ost = mo.ost "
                                "JOIN jobs j ON j.cluster = xo.cluster AND j.job_id = xo.job_id AND j.step = '' "
                                "WHERE me.cluster = ? AND me.job_id = ? AND me.step = ''") +
                        kOverlap + " ORDER BY j.start_time, j.job_id",
                    {cluster, static_cast<int64_t>(job_id)});
}

Status JobDb::SetForwardingNode(const std::string& node, const std::string& fwd) {
  auto r = conn_->Exec(
      "INSERT INTO node_forwarding (node, fwd_node) VALUES (?, ?) ON DUPLICATE KEY UPDATE fwd_node = VALUES(fwd_node)",
      {node, fwd});
  return r.ok() ? Status::Ok() : r.status();
}

Status JobDb::AddJobOst(const std::string& cluster, uint64_t job_id, const std::string& fs, const std::string& ost) {
  auto r = conn_->Exec("INSERT IGNORE INTO job_osts (cluster, job_id, filesystem, ost) VALUES (?, ?, ?, ?)",
                       {cluster, static_cast<int64_t>(job_id), fs, ost});
  return r.ok() ? Status::Ok() : r.status();
}

namespace {

// INSERT ... VALUES (?, ...), (?, ...) ... tail with `width` params a row,
// up to kRows rows a statement.
Status BulkInsert(MysqlConn& c, const char* head, const char* tail, size_t width, const std::vector<SqlParam>& params) {
  constexpr size_t kRows = 500;
  std::string row = "(?";
  for (size_t i = 1; i < width; ++i) row += ", ?";
  row += ")";
  for (size_t at = 0; at < params.size(); at += kRows * width) {
    const size_t end = std::min(params.size(), at + kRows * width);
    std::string sql = head;
    for (size_t k = at; k < end; k += width) sql += (k == at ? "" : ", ") + row;
    auto r = c.Exec(sql + tail, std::vector<SqlParam>(params.begin() + static_cast<std::ptrdiff_t>(at),
                                                      params.begin() + static_cast<std::ptrdiff_t>(end)));
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

}  // namespace

Status JobDb::PutForwardingNodes(const std::vector<std::pair<std::string, std::string>>& node_fwd) {
  std::vector<SqlParam> params;
  for (const auto& [node, fwd] : node_fwd) {
    params.push_back(node);
    params.push_back(fwd);
  }
  return BulkInsert(*conn_, "INSERT INTO node_forwarding (node, fwd_node) VALUES ",
                    " ON DUPLICATE KEY UPDATE fwd_node = VALUES(fwd_node)", 2, params);
}

Status JobDb::PutFilesystemOsts(const std::string& filesystem,
                                const std::vector<std::pair<std::string, std::string>>& ost_oss) {
  std::vector<SqlParam> params;
  for (const auto& [ost, oss] : ost_oss) {
    params.push_back(filesystem);
    params.push_back(ost);
    params.push_back(oss);
  }
  return BulkInsert(*conn_, "INSERT INTO filesystem_osts (filesystem, ost, oss) VALUES ",
                    " ON DUPLICATE KEY UPDATE oss = VALUES(oss)", 3, params);
}

Status JobDb::PutFileLayouts(const std::vector<FileLayoutRow>& layouts) {
  std::vector<SqlParam> params;
  for (const auto& L : layouts) {
    std::string osts;
    for (size_t i = 0; i < L.osts.size(); ++i) osts += (i ? "," : "") + std::to_string(L.osts[i]);
    params.push_back(L.cluster);
    params.push_back(static_cast<int64_t>(L.job_id));
    params.push_back(SqlOpt(L.filesystem));
    params.push_back(L.path);
    params.push_back(L.stripe_size);
    params.push_back(osts);
    params.push_back(static_cast<int64_t>(L.mdt));
  }
  return BulkInsert(*conn_, "INSERT INTO file_layouts (cluster, job_id, filesystem, path, stripe_size, osts, mdt) VALUES ",
                    " ON DUPLICATE KEY UPDATE stripe_size = VALUES(stripe_size), osts = VALUES(osts), mdt = VALUES(mdt)",
                    7, params);
}

Result<std::vector<std::pair<std::string, std::string>>> JobDb::ForwardingMap() {
  auto rows = conn_->Query("SELECT node, fwd_node FROM node_forwarding ORDER BY node");
  if (!rows.ok()) return rows.status();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : *rows)
    if (r.size() == 2 && r[0] && r[1]) out.emplace_back(*r[0], *r[1]);
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> JobDb::JobForwardingNodes(const std::string& cluster,
                                                                                   uint64_t job_id) {
  auto fw = conn_->Query("SELECT nf.node, nf.fwd_node FROM node_forwarding nf JOIN job_nodes jn ON jn.node = nf.node "
                         "WHERE jn.cluster = ? AND jn.job_id = ?",
                         {cluster, static_cast<int64_t>(job_id)});
  if (!fw.ok()) return fw.status();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& row : fw.value())
    if (row.size() == 2 && row[0] && row[1]) out.emplace_back(*row[0], *row[1]);
  return out;
}

Result<std::vector<FileLayoutRow>> JobDb::FileLayouts(const std::string& cluster, uint64_t job_id) {
  auto lay = conn_->Query("SELECT filesystem, path, stripe_size, osts, mdt FROM file_layouts WHERE cluster = ? AND job_id = ?",
                          {cluster, static_cast<int64_t>(job_id)});
  if (!lay.ok()) return lay.status();
  std::vector<FileLayoutRow> out;
  for (const auto& row : lay.value()) {
    if (row.size() != 5 || !row[1] || !row[3]) continue;
    FileLayoutRow L;
    L.cluster = cluster;
    L.job_id = job_id;
    L.filesystem = row[0];
    L.path = *row[1];
    L.stripe_size = row[2] ? std::strtoll(row[2]->c_str(), nullptr, 10) : 0;
    L.mdt = row[4] ? std::atoi(row[4]->c_str()) : -1;
    std::stringstream ss(*row[3]);
    std::string tok;
    while (std::getline(ss, tok, ','))
      if (!tok.empty()) L.osts.push_back(std::atoi(tok.c_str()));
    out.push_back(std::move(L));
  }
  return out;
}

Result<JobRecord> JobDb::FindJob(const std::string& job_id, const std::string& cluster) {
  char* end = nullptr;
  const unsigned long long numeric = std::strtoull(job_id.c_str(), &end, 10);
  if (job_id.empty() || *end != '\0' || job_id[0] == '-')
    return Status::Invalid("job id '" + job_id + "' is not a Slurm job number");
  std::string cl = cluster;
  if (cl.empty()) {
    auto cls = ClustersOf(numeric);
    if (!cls.ok()) return cls.status();
    if (cls->empty()) return Status::NotFound("job " + job_id + " is not in the job database");
    if (cls->size() > 1) return Status::Invalid("job " + job_id + " exists on several clusters; give --cluster");
    cl = cls->front();
  }
  auto g = Get(cl, numeric);
  if (!g.ok()) return g.status();
  if (!g.value()) return Status::NotFound("job " + job_id + " on " + cl + " is not in the job database");
  return *g.value();
}

Status JobDb::WriteJobSummary(const JobSummaryRow& s) {
  JobSummaryRow row = s;
  row.computed_at = SqlDatetime(NowNs());
  return results::Replace(*conn_, row);
}

Result<std::vector<JobListing>> JobDb::ListJobs(const JobListFilter& f, size_t limit) {
  std::vector<SqlParam> p;
  std::string who;
  auto any_of = [&](const char* col, const std::vector<std::string>& vals) {
    if (vals.empty()) return;
    who += std::string(who.empty() ? "" : " OR ") + col + " IN (";
    for (size_t i = 0; i < vals.size(); ++i) {
      who += i ? ", ?" : "?";
      p.push_back(vals[i]);
    }
    who += ")";
  };
  if (!f.all) {
    if (!f.user.empty()) {
      who = "j.user_name = ?";
      p.push_back(f.user);
    }
    any_of("j.account", f.accounts);
    any_of("j.group_name", f.groups);
    if (who.empty()) return std::vector<JobListing>();
  }
  std::string narrow;
  if (!f.only_user.empty()) {
    narrow += " AND j.user_name = ?";
    p.push_back(f.only_user);
  }
  if (!f.state.empty()) {
    narrow += " AND j.state LIKE CONCAT(?, '%')";
    std::string st;
    for (char c : f.state)  // a prefix, not a pattern
      if (c != '%' && c != '_' && c != '\\') st += c;
    p.push_back(st);
  }
  if (f.verdict == "none") {
    narrow += " AND NOT EXISTS (SELECT 1 FROM job_anomaly a WHERE a.cluster = j.cluster AND a.job_id = j.job_id)";
  } else if (!f.verdict.empty()) {
    narrow += " AND EXISTS (SELECT 1 FROM job_anomaly a WHERE a.cluster = j.cluster AND a.job_id = j.job_id AND a.verdict = ?)";
    p.push_back(f.verdict);
  }
  if (f.start_from_ns) {
    narrow += " AND j.start_time >= ?";
    p.push_back(SqlDatetime(*f.start_from_ns));
  }
  if (f.start_to_ns) {
    narrow += " AND j.start_time < ?";
    p.push_back(SqlDatetime(*f.start_to_ns));
  }
  p.push_back(static_cast<int64_t>(limit));
  p.push_back(static_cast<int64_t>(f.offset));
  // The job_summary columns a listing shows (job_id first: NULL for a job with no summary).
  static const std::vector<std::string> kListed = {"job_id",       "runtime_s",     "read_bytes",   "write_bytes",
                                                   "read_bw_avg",  "read_bw_peak",  "write_bw_avg", "write_bw_peak",
                                                   "meta_ops",     "io_mode_read",  "io_mode_write"};
  std::string sql = std::string("SELECT ") + kJobCols + ", " + results::SelectList("s", kListed) +
                    " FROM jobs j LEFT JOIN job_summary s ON s.cluster = j.cluster AND s.job_id = j.job_id "
                    "WHERE j.step = ''" +
                    (who.empty() ? std::string() : " AND (" + who + ")") + narrow +
                    " ORDER BY j.start_time IS NULL, j.start_time DESC, j.job_id DESC LIMIT ? OFFSET ?";
  auto rows = conn_->Query(sql, p);
  if (!rows.ok()) return rows.status();
  std::vector<JobListing> out;
  constexpr size_t k = 24;  // the columns of kJobCols
  for (const auto& r : *rows) {
    JobListing l{RowToJob(r), std::nullopt};
    if (r.size() > k && r[k]) {
      JobSummaryRow s;
      results::ReadColumns(s, r, k, kListed);
      s.cluster = l.job.cluster;
      s.job_id = l.job.job_id;
      l.summary = std::move(s);
    }
    out.push_back(std::move(l));
  }
  return out;
}

Result<std::optional<int64_t>> JobDb::PolledTo(const std::string& cluster) {
  auto rows = conn_->Query("SELECT UNIX_TIMESTAMP(polled_to) FROM poll_state WHERE cluster = ?", {cluster});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<int64_t>();
  return DecimalSecondsToNs((*rows)[0][0]);
}

Status JobDb::SetPolledTo(const std::string& cluster, int64_t t_ns) {
  auto r = conn_->Exec(
      "INSERT INTO poll_state (cluster, polled_to) VALUES (?, ?) ON DUPLICATE KEY UPDATE polled_to = VALUES(polled_to)",
      {cluster, SqlDatetime(t_ns)});
  return r.ok() ? Status::Ok() : r.status();
}

// ---- spool ----------------------------------------------------------------------

namespace {

std::string Escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else o.push_back(c);
  }
  return o;
}

std::optional<std::string> Unescape(std::string_view s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      o.push_back(s[i]);
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    if (s[i] == '\\') o.push_back('\\');
    else if (s[i] == 'n') o.push_back('\n');
    else if (s[i] == 'r') o.push_back('\r');
    else return std::nullopt;
  }
  return o;
}

template <typename F>
void ForEachField(JobRecord& r, F&& f) {
  f("array_job_id", r.array_job_id);
  f("array_task_id", r.array_task_id);
  f("user", r.user);
  f("uid", r.uid);
  f("group", r.group);
  f("gid", r.gid);
  f("account", r.account);
  f("partition", r.partition);
  f("name", r.name);
  f("command", r.command);
  f("work_dir", r.work_dir);
  f("node_list", r.node_list);
  f("node_count", r.node_count);
  f("task_count", r.task_count);
  f("submit_ns", r.submit_ns);
  f("start_ns", r.start_ns);
  f("end_ns", r.end_ns);
  f("state", r.state);
  f("exit_code", r.exit_code);
  f("exit_signal", r.exit_signal);
  f("app_key", r.app_key);
}

}  // namespace

std::string JobRecordToSpoolText(const JobRecord& rc) {
  JobRecord r = rc;
  std::string out = "iosonar-job-record 1\n";
  out += "cluster=" + Escape(r.cluster) + "\n";
  out += "job_id=" + std::to_string(r.job_id) + "\n";
  out += "step=" + Escape(r.step) + "\n";
  out += "source=" + Escape(r.source) + "\n";
  ForEachField(r, [&](const char* key, auto& v) {
    if (!v) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, std::string>) out += std::string(key) + "=" + Escape(*v) + "\n";
    else out += std::string(key) + "=" + std::to_string(*v) + "\n";
  });
  return out;
}

Result<JobRecord> JobRecordFromSpoolText(std::string_view text) {
  JobRecord r;
  size_t pos = 0;
  int line_no = 0;
  bool header = false, have_id = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return Status::Invalid("spooled record: truncated (no newline at the end)");
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    auto bad = [&](const std::string& what) {
      return Status::Invalid("spooled record line " + std::to_string(line_no) + ": " + what);
    };
    if (!header) {
      if (line != "iosonar-job-record 1") return bad("not an iosonar job record (want 'iosonar-job-record 1')");
      header = true;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad("no '='");
    std::string key(line.substr(0, eq));
    auto val = Unescape(line.substr(eq + 1));
    if (!val) return bad("bad escape in the value of " + key);
    if (key == "cluster") r.cluster = *val;
    else if (key == "step") r.step = *val;
    else if (key == "source") r.source = *val;
    else if (key == "job_id") {
      auto v = ToInt(*val);
      if (!v || *v < 0) return bad("job_id is not a number");
      r.job_id = static_cast<uint64_t>(*v);
      have_id = true;
    } else {
      bool known = false, ok = true;
      ForEachField(r, [&](const char* k, auto& v) {
        if (key != k) return;
        known = true;
        if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, std::string>) v = *val;
        else {
          auto n = ToInt(*val);
          if (n) v = *n;
          else ok = false;
        }
      });
      if (!known) return bad("unknown key '" + key + "'");
      if (!ok) return bad(key + " is not a number");
    }
  }
  if (!header || !have_id) return Status::Invalid("spooled record: empty or without job_id");
  return r;
}

Status SpoolJobRecord(const std::string& dir, const JobRecord& r, std::string* path_out) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io("spool: cannot create " + dir + ": " + ec.message());
  static int counter = 0;
  char name[160];
  std::snprintf(name, sizeof name, "%020lld-%08d-%04d-%llu.job", static_cast<long long>(NowNs()),
                static_cast<int>(getpid()), counter++ % 10000, static_cast<unsigned long long>(r.job_id));
  std::string final_path = dir + "/" + name;
  std::string tmp = dir + "/.tmp-" + name;
  std::string text = JobRecordToSpoolText(r);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("spool: create " + tmp, errno);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp.c_str());
      return Status::FromErrno("spool: write " + tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    return Status::FromErrno("spool: sync " + tmp, e);
  }
  if (rename(tmp.c_str(), final_path.c_str()) != 0) return Status::FromErrno("spool: rename to " + final_path, errno);
  if (path_out) *path_out = final_path;
  return Status::Ok();
}

Status ReplaySpool(const std::string& dir, JobDb& db, ReplayStats* stats) {
  ReplayStats local;
  if (!stats) stats = &local;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return Status::Ok();  // nothing was ever spooled
    return Status::FromErrno("replay: opendir " + dir, errno);
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".job") == 0 && n[0] != '.') names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    std::string path = dir + "/" + n;
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    auto rec = JobRecordFromSpoolText(ss.str());
    Status st = rec.ok() ? db.Upsert(rec.value()) : rec.status();
    if (st.ok()) {
      unlink(path.c_str());
      ++stats->replayed;
      continue;
    }
    if (st.code() == Code::kUnavailable || st.code() == Code::kRetry) {  // down or busy: keep it and the rest
      ++stats->failed;
      return st;
    }
    // The record itself is bad (or the database refuses it): set it aside with the reason.
    std::string bad_dir = dir + "/bad";
    mkdir(bad_dir.c_str(), 0700);
    rename(path.c_str(), (bad_dir + "/" + n).c_str());
    std::ofstream reason(bad_dir + "/" + n + ".reason", std::ios::binary);
    reason << path << ": " << st.ToString() << "\n";
    ++stats->bad;
  }
  return Status::Ok();
}

}  // namespace iosonar
