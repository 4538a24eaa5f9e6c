// Parsers for sacct and scontrol output. See sacct.h.
#include "exporters/scheduler/sacct.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <ctime>

#include "core/base/redact.h"
#include "core/jobdb/hostlist.h"

namespace iosonar::scheduler {

const char* const kSacctFormat =
    "JobIDRaw,JobID,Cluster,User,UID,Group,GID,Account,Partition,JobName,SubmitLine,WorkDir,NodeList,NNodes,NTasks,"
    "Submit,Start,End,State,ExitCode";

namespace {

std::string Lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

std::optional<int64_t> Int(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> Split(std::string_view s, std::string_view delim) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    size_t d = s.find(delim, pos);
    if (d == std::string_view::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, d - pos));
    pos = d + delim.size();
  }
}

// "4478544.extern" -> (4478544, "extern"); "120_3.batch" with want_array -> array ids.
struct JobIdParts {
  std::optional<int64_t> id;
  std::string step;
  std::optional<int64_t> array_job, array_task;
};

JobIdParts SplitJobId(std::string_view s) {
  JobIdParts p;
  size_t dot = s.find('.');
  std::string_view head = s.substr(0, dot);
  if (dot != std::string_view::npos) p.step = std::string(s.substr(dot + 1));
  size_t us = head.find('_');
  if (us != std::string_view::npos) {
    p.array_job = Int(head.substr(0, us));
    p.array_task = Int(head.substr(us + 1));  // "[5-7]" (pending) stays absent
    return p;
  }
  p.id = Int(head);
  return p;
}

std::optional<std::string> Text(std::string_view v) {
  if (v.empty() || v == "(null)") return std::nullopt;
  return std::string(v);
}

std::string StateWord(std::string_view s) {
  size_t sp = s.find(' ');  // "CANCELLED by 1000"
  return std::string(s.substr(0, sp));
}

// "3:0" -> (3, 0).
bool ExitCode(std::string_view s, std::optional<int64_t>* code, std::optional<int64_t>* sig) {
  size_t c = s.find(':');
  auto a = Int(s.substr(0, c));
  if (!a) return false;
  *code = a;
  if (c != std::string_view::npos) {
    auto b = Int(s.substr(c + 1));
    if (!b) return false;
    *sig = b;
  }
  return true;
}

// "root(0)" -> ("root", 0).
void NameAndId(std::string_view s, std::optional<std::string>* name, std::optional<int64_t>* id) {
  size_t p = s.find('(');
  if (p != std::string_view::npos && s.back() == ')') {
    *name = Text(s.substr(0, p));
    *id = Int(s.substr(p + 1, s.size() - p - 2));
  } else {
    *name = Text(s);
  }
}

}  // namespace

std::optional<int64_t> ParseSlurmTime(std::string_view s, bool* bad) {
  *bad = false;
  if (s.empty() || s == "Unknown" || s == "None" || s == "(null)") return std::nullopt;
  struct tm tm{};
  int y, mo, d, h, mi, se;
  char tail;
  std::string z(s);
  if (s.size() != 19 || std::sscanf(z.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6 ||
      mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60 ||
      y < 1678 || y > 2261) {  // nanoseconds since 1970 in int64 (found by fuzz_sacct: year 7027 overflowed)
    *bad = true;
    return std::nullopt;
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  tm.tm_isdst = -1;
  time_t t = mktime(&tm);
  if (t == static_cast<time_t>(-1) || t > INT64_MAX / 1000000000 || t < INT64_MIN / 1000000000) {
    *bad = true;
    return std::nullopt;
  }
  return static_cast<int64_t>(t) * 1000000000;
}

SacctParse ParseSacct(std::string_view text, const std::string& cluster, std::string_view delim) {
  SacctParse out;
  std::map<std::string, size_t> col;
  std::vector<std::string> header;  // the header's own spelling, for messages
  size_t ncols = 0;
  bool have_header = false;
  size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto fields = Split(line, delim);
    if (!have_header) {
      header.assign(fields.begin(), fields.end());
      for (size_t i = 0; i < fields.size(); ++i) col[Lower(fields[i])] = i;
      ncols = fields.size();
      if (!col.count("jobidraw") && !col.count("jobid")) {
        out.bad.push_back({line_no, "the first line is not a sacct header with a JobIDRaw or JobID column",
                           std::string(line.substr(0, 200))});
        col.clear();
        continue;  // the next line may be the header
      }
      have_header = true;
      continue;
    }
    ++out.lines;
    auto bad = [&](const std::string& why) { out.bad.push_back({line_no, why, std::string(line.substr(0, 200))}); };
    if (fields.size() != ncols) {
      bad("has " + std::to_string(fields.size()) + " fields, the header has " + std::to_string(ncols));
      continue;
    }
    auto get = [&](const char* name) -> std::optional<std::string_view> {
      auto it = col.find(name);
      if (it == col.end()) return std::nullopt;
      return fields[it->second];
    };
    JobRecord r;
    r.source = "sacct";
    r.cluster = cluster;
    if (auto c = get("cluster"); c && !c->empty()) r.cluster = std::string(*c);
    std::string why;
    if (auto raw = get("jobidraw")) {
      JobIdParts p = SplitJobId(*raw);
      if (!p.id || *p.id < 0) why = "JobIDRaw '" + std::string(*raw) + "' is not a job id";
      else {
        r.job_id = static_cast<uint64_t>(*p.id);
        r.step = p.step;
      }
      if (auto jid = get("jobid")) {
        JobIdParts a = SplitJobId(*jid);
        r.array_job_id = a.array_job;
        r.array_task_id = a.array_task;
      }
    } else {
      auto jid = get("jobid");
      JobIdParts p = SplitJobId(*jid);
      if (!p.id || *p.id < 0) why = "JobID '" + std::string(*jid) + "' is not a plain job id (array and heterogeneous jobs need JobIDRaw)";
      else {
        r.job_id = static_cast<uint64_t>(*p.id);
        r.step = p.step;
      }
    }
    if (!why.empty()) {
      bad(why);
      continue;
    }
    auto name_of = [&](const char* lower) { return header[col.at(lower)]; };
    auto text_col = [&](const char* name, std::optional<std::string>* dst) {
      if (auto v = get(name)) *dst = Text(*v);
    };
    auto int_col = [&](const char* name, std::optional<int64_t>* dst) {
      auto v = get(name);
      if (!v || v->empty()) return;
      auto n = Int(*v);
       if (!n) why = name_of(name) + " '" + std::string(*v) + "' is not a number";
      else *dst = n;
    };
    auto time_col = [&](const char* name, std::optional<int64_t>* dst) {
      auto v = get(name);
      if (!v) return;
      bool b = false;
      *dst = ParseSlurmTime(*v, &b);
      if (b) why = name_of(name) + " '" + std::string(*v) + "' is not a time YYYY-MM-DDTHH:MM:SS";
    };
    text_col("user", &r.user);
    int_col("uid", &r.uid);
    text_col("group", &r.group);
    int_col("gid", &r.gid);
    text_col("account", &r.account);
    text_col("partition", &r.partition);
    text_col("jobname", &r.name);
    text_col("submitline", &r.command);
    if (r.command) r.command = RedactedCommandLine(std::move(*r.command));  // no password in the job DB
    text_col("workdir", &r.work_dir);
    text_col("nodelist", &r.node_list);
    if (r.node_list && (*r.node_list == "None assigned" || *r.node_list == "None")) r.node_list.reset();
    int_col("nnodes", &r.node_count);
    int_col("ntasks", &r.task_count);
    time_col("submit", &r.submit_ns);
    time_col("start", &r.start_ns);
    time_col("end", &r.end_ns);
    if (auto s = get("state"); s && !s->empty()) r.state = StateWord(*s);
    if (auto e = get("exitcode"); e && !e->empty())
      if (!ExitCode(*e, &r.exit_code, &r.exit_signal)) why = "ExitCode '" + std::string(*e) + "' is not N:S";
    if (r.node_list) {
      auto hosts = ExpandHostlist(*r.node_list);
      if (!hosts.ok()) why = "NodeList: " + hosts.status().message();
    }
    if (!why.empty()) {
      bad(why);
      continue;
    }
    out.records.push_back(std::move(r));
  }
  if (!have_header && out.bad.empty()) out.bad.push_back({0, "no sacct header line (empty input)", ""});
  return out;
}

std::map<std::string, std::string> ParseScontrolLine(std::string_view line) {
  std::map<std::string, std::string> kv;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  // A token starts a new pair when it looks like Key=...; otherwise it continues the previous value.
  auto is_key_start = [](std::string_view tok) {
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    if (!std::isalpha(static_cast<unsigned char>(tok[0]))) return false;
    for (size_t i = 0; i < eq; ++i) {
      char c = tok[i];
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '/' || c == '_' || c == '-')) return false;
    }
    return true;
  };
  // Command= holds the batch script's arguments as typed, which may look like
  // Key=Value (n=4): it runs up to the last " WorkDir=", the key Slurm prints after it.
  size_t cmd_at = line.find(" Command=");
  size_t cmd_end = std::string_view::npos;
  if (cmd_at != std::string_view::npos) {
    cmd_end = line.rfind(" WorkDir=");
    if (cmd_end == std::string_view::npos || cmd_end < cmd_at) cmd_at = std::string_view::npos;
  }
  std::string key;
  size_t pos = 0;
  while (pos < line.size()) {
    if (cmd_at != std::string_view::npos && pos == cmd_at + 1) {  // Command=... up to " WorkDir="
      kv["Command"] = std::string(line.substr(cmd_at + 9, cmd_end - (cmd_at + 9)));
      key = "Command";
      pos = cmd_end + 1;
      continue;
    }
    size_t sp = line.find(' ', pos);
    if (sp == std::string_view::npos) sp = line.size();
    std::string_view tok = line.substr(pos, sp - pos);
    pos = sp + 1;
    if (is_key_start(tok)) {
      size_t eq = tok.find('=');
      key = std::string(tok.substr(0, eq));
      kv[key] = std::string(tok.substr(eq + 1));
    } else if (!key.empty()) {
      kv[key] += " " + std::string(tok);
    }
  }
  return kv;
}

Result<JobRecord> JobFromScontrol(const std::map<std::string, std::string>& kv) {
  JobRecord r;
  auto get = [&](const char* k) -> std::optional<std::string> {
    auto it = kv.find(k);
    if (it == kv.end()) return std::nullopt;
    return it->second;
  };
  auto id = get("JobId");
  if (!id || !Int(*id)) return Status::Invalid("scontrol: no numeric JobId");
  r.job_id = static_cast<uint64_t>(*Int(*id));
  if (auto v = get("ArrayJobId")) r.array_job_id = Int(*v);
  if (auto v = get("ArrayTaskId")) r.array_task_id = Int(*v);
  if (auto v = get("UserId")) NameAndId(*v, &r.user, &r.uid);
  if (auto v = get("GroupId")) NameAndId(*v, &r.group, &r.gid);
  if (auto v = get("Account")) r.account = Text(*v);
  if (auto v = get("Partition")) r.partition = Text(*v);
  if (auto v = get("JobName")) r.name = Text(*v);
  if (auto v = get("Command")) {
    r.command = Text(*v);
    if (r.command) r.command = RedactedCommandLine(std::move(*r.command));
  }
  if (auto v = get("WorkDir")) r.work_dir = Text(*v);
  if (auto v = get("NodeList")) r.node_list = Text(*v);
  if (auto v = get("NumNodes")) r.node_count = Int(v->substr(0, v->find('-')));
  if (auto v = get("NumTasks")) r.task_count = Int(*v);
  bool b = false;
  if (auto v = get("SubmitTime")) r.submit_ns = ParseSlurmTime(*v, &b);
  if (auto v = get("StartTime")) r.start_ns = ParseSlurmTime(*v, &b);
  if (auto v = get("JobState")) r.state = StateWord(*v);
  if (auto v = get("ExitCode")) ExitCode(*v, &r.exit_code, &r.exit_signal);
  if (auto v = get("ClusterName")) r.cluster = *v;
  return r;
}

Result<JobRecord> JobFromEnvironment(const std::map<std::string, std::string>& env, bool epilog, int64_t now_ns) {
  auto get = [&](const char* k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  JobRecord r;
  auto id = get("SLURM_JOB_ID");
  if (!id) id = get("SLURM_JOBID");
  if (!id || !Int(*id) || *Int(*id) < 0)
    return Status::Invalid("no numeric SLURM_JOB_ID in the environment (run from a Slurm prolog/epilog)");
  r.job_id = static_cast<uint64_t>(*Int(*id));
  r.source = epilog ? "epilog" : "prolog";
  if (auto v = get("SLURM_CLUSTER_NAME")) r.cluster = *v;
  if (auto v = get("SLURM_ARRAY_JOB_ID")) r.array_job_id = Int(*v);
  if (auto v = get("SLURM_ARRAY_TASK_ID")) r.array_task_id = Int(*v);
  if (auto v = get("SLURM_JOB_USER")) r.user = Text(*v);
  if (auto v = get("SLURM_JOB_UID")) r.uid = Int(*v);
  if (auto v = get("SLURM_JOB_GROUP")) r.group = Text(*v);
  if (auto v = get("SLURM_JOB_GID")) r.gid = Int(*v);
  if (auto v = get("SLURM_JOB_ACCOUNT")) r.account = Text(*v);
  if (auto v = get("SLURM_JOB_PARTITION")) r.partition = Text(*v);
  if (auto v = get("SLURM_JOB_NAME")) r.name = *v;
  if (auto v = get("SLURM_JOB_WORK_DIR")) r.work_dir = Text(*v);
  if (auto v = get("SLURM_JOB_NODELIST")) r.node_list = Text(*v);
  if (r.node_list) {
    auto hosts = ExpandHostlist(*r.node_list);
    if (!hosts.ok()) return Status::Invalid("SLURM_JOB_NODELIST: " + hosts.status().message());
    r.node_count = static_cast<int64_t>(hosts->size());
  }
  if (epilog) {
    r.end_ns = now_ns;
    // SLURM_JOB_EXIT_CODE2 is "exit:signal" (EpilogSlurmctld); SLURM_JOB_EXIT_CODE the wait() status.
    if (auto v = get("SLURM_JOB_EXIT_CODE2")) {
      if (!ExitCode(*v, &r.exit_code, &r.exit_signal))
        return Status::Invalid("SLURM_JOB_EXIT_CODE2 '" + *v + "' is not N:S");
    } else if (auto w = get("SLURM_JOB_EXIT_CODE"); w && Int(*w)) {
      int64_t st = *Int(*w);
      r.exit_code = (st >> 8) & 0xff;
      r.exit_signal = st & 0x7f;
    }
    if (r.exit_code) r.state = (*r.exit_code == 0 && r.exit_signal.value_or(0) == 0) ? "COMPLETED" : "FAILED";
  } else {
    r.start_ns = now_ns;
    r.state = "RUNNING";
  }
  return r;
}

}  // namespace iosonar::scheduler
