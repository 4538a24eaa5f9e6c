// The Slurm connector. See scheduler.h.
#include "exporters/scheduler/scheduler.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/base/redact.h"
#include "core/base/timeutil.h"
#include "exporters/scheduler/sacct.h"

namespace iosonar::scheduler {

Result<std::string> RunCapture(const std::vector<std::string>& argv, int timeout_ms) {
  int outp[2], errp[2];
  if (pipe2(outp, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  if (pipe2(errp, O_CLOEXEC) != 0) {
    close(outp[0]);
    close(outp[1]);
    return Status::FromErrno("pipe", errno);
  }
  pid_t pid = fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout kills its children too
    dup2(outp[1], 1);
    dup2(errp[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    std::fprintf(stderr, "cannot run %s: %s\n", a[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  close(outp[1]);
  close(errp[1]);
  std::string out, err;
  int64_t deadline = MonotonicNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  bool open_out = true, open_err = true, timed_out = false;
  while (open_out || open_err) {
    int64_t left_ms = (deadline - MonotonicNs()) / 1000000;
    if (left_ms <= 0) {
      timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{open_out ? outp[0] : -1, POLLIN, 0}, {open_err ? errp[0] : -1, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(left_ms));
    if (n < 0 && errno == EINTR) continue;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r > 0) (i == 0 ? out : err).append(buf, static_cast<size_t>(r));
      else (i == 0 ? open_out : open_err) = false;
    }
  }
  close(outp[0]);
  close(errp[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string cmd = argv.empty() ? "" : argv[0];
  if (timed_out) return Status::Unavailable(cmd + ": no answer within " + std::to_string(timeout_ms) + " ms");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!err.empty() && (err.back() == '\n')) err.pop_back();
    return Status::Unavailable(cmd + " failed (" +
                               (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                  : "signal " + std::to_string(WTERMSIG(status))) +
                               "): " + err);
  }
  return out;
}

namespace {

// Fills what the environment lacks from scontrol; the environment's bytes win where both have a value.
void Complete(JobRecord* r, const JobRecord& sc, bool epilog) {
  auto fill = [](auto& dst, const auto& src) {
    if (!dst && src) dst = src;
  };
  fill(r->array_job_id, sc.array_job_id);
  fill(r->array_task_id, sc.array_task_id);
  fill(r->user, sc.user);
  fill(r->uid, sc.uid);
  fill(r->group, sc.group);
  fill(r->gid, sc.gid);
  fill(r->account, sc.account);
  fill(r->partition, sc.partition);
  fill(r->name, sc.name);
  fill(r->work_dir, sc.work_dir);
  fill(r->node_list, sc.node_list);
  fill(r->node_count, sc.node_count);
  fill(r->task_count, sc.task_count);
  fill(r->submit_ns, sc.submit_ns);
  // The command LASSi groups runs by: Slurm's SubmitLine where it has one, else the batch script.
  fill(r->command, sc.command);
  if (sc.start_ns) r->start_ns = sc.start_ns;  // the real start, not the prolog's clock
  if (epilog && !r->exit_code && sc.exit_code) {
    r->exit_code = sc.exit_code;
    r->exit_signal = sc.exit_signal;
  }
  if (epilog && sc.state && *sc.state != "COMPLETING" && *sc.state != "RUNNING" && *sc.state != "CONFIGURING")
    r->state = sc.state;
  if (r->cluster.empty()) r->cluster = sc.cluster;
}

}  // namespace

std::optional<std::string> WrappedCommand(std::string_view script) {
  // sbatch --wrap writes "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nCMD\n".
  size_t l1 = script.find('\n');
  if (l1 == std::string_view::npos || script.substr(0, 2) != "#!") return std::nullopt;
  size_t l2 = script.find('\n', l1 + 1);
  if (l2 == std::string_view::npos) return std::nullopt;
  if (script.substr(l1 + 1, l2 - l1 - 1).rfind("# This script was created by sbatch --wrap", 0) != 0) return std::nullopt;
  std::string_view rest = script.substr(l2 + 1);
  while (!rest.empty() && (rest.front() == '\n')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == '\n')) rest.remove_suffix(1);
  if (rest.empty()) return std::nullopt;
  return std::string(rest);
}

Status RecordPrologEpilog(const Options& o, bool epilog, const std::map<std::string, std::string>& env,
                          RecordOutcome* out) {
  RecordOutcome local;
  if (!out) out = &local;
  auto rec = JobFromEnvironment(env, epilog, NowNs());
  if (!rec.ok()) return rec.status();
  JobRecord r = std::move(rec).value();
  if (!o.cluster.empty()) r.cluster = o.cluster;
  if (o.use_scontrol) {
    auto text = RunCapture({o.scontrol, "show", "job", "-o", std::to_string(r.job_id)}, 10000);
    if (text.ok()) {
      auto kv = ParseScontrolLine(text.value());
      auto sc = JobFromScontrol(kv);
      if (sc.ok()) {
        const bool submit_line = kv.count("SubmitLine") && !kv["SubmitLine"].empty();
        if (submit_line) sc->command = RedactedCommandLine(kv["SubmitLine"]);
        Complete(&r, sc.value(), epilog);
        // The application key, from the same words sacct's SubmitLine gives (ApplicationKey):
        // a SubmitLine as it is; a batch job's Command (the script as typed and its
        // arguments) as the sbatch line without options.
        if (submit_line)
          r.app_key = ApplicationKey(*sc->command, r.work_dir.value_or(""), r.name.value_or(""));
        else if (sc->command)
          r.app_key = ApplicationKey(kv["BatchFlag"] == "0" ? *sc->command : "sbatch " + *sc->command,
                                     r.work_dir.value_or(""));
        if (r.app_key && r.app_key->empty()) r.app_key.reset();
      } else {
        out->note += "scontrol: " + sc.status().message() + "; ";
      }
    } else {
      out->note += text.status().message() + "; ";
    }
    // A job submitted with `sbatch --wrap CMD` has no script path: its command is the wrapped line.
    if (!r.command && !epilog) {
      auto script = RunCapture({o.scontrol, "write", "batch_script", std::to_string(r.job_id), "-"}, 10000);
      if (script.ok())
        if (auto cmd = WrappedCommand(script.value())) {
          r.command = RedactedCommandLine(std::move(*cmd));
          r.app_key = ApplicationKey("sbatch --wrap " + *r.command, r.work_dir.value_or(""));  // as sacct's "--wrap CMD"
        }
    }
  }
  if (r.cluster.empty()) r.cluster = "default";
  if (!o.mysql_url.empty()) {
    auto db = JobDb::Open(o.mysql_url);
    Status st = db.ok() ? Status::Ok() : db.status();
    if (st.ok()) st = ReplaySpool(o.spool_dir, *db.value(), &out->replay);
    if (st.ok()) st = db.value()->Upsert(r);
    if (st.ok()) {
      out->written = true;
      return st;
    }
    if (st.code() == Code::kInvalid) return st;  // a bad record stays bad in the spool
    out->note += "MySQL: " + st.message() + "; ";
  }
  Status sp = SpoolJobRecord(o.spool_dir, r, &out->spool_path);
  if (!sp.ok()) return sp;
  out->spooled = true;
  return Status::Ok();
}

namespace {

std::string SacctTime(int64_t ns) {
  time_t t = static_cast<time_t>(ns / 1000000000);
  struct tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

Status PollSacct(const Options& o, std::optional<int64_t> since_ns, PollStats* st) {
  PollStats local;
  if (!st) st = &local;
  if (o.mysql_url.empty()) return Status::Invalid("poll needs a MySQL URL (--mysql or $IOSONAR_MYSQL)");
  auto db = JobDb::Open(o.mysql_url);
  if (!db.ok()) return db.status();
  const std::string key = o.cluster.empty() ? "default" : o.cluster;
  int64_t now = NowNs();
  int64_t ended_from = 0;
  if (!since_ns) {
    auto mark = db.value()->PolledTo(key);
    if (!mark.ok()) return mark.status();
    since_ns = mark.value() ? *mark.value() - o.poll_overlap_ns : now - o.poll_first_window_ns;
    ended_from = mark.value() ? *mark.value() : *since_ns;
  } else {
    ended_from = *since_ns;
  }
  st->from_ns = *since_ns;
  st->to_ns = now;
  static constexpr const char* kDelim = "\x1f";  // cannot appear in a job name typed by a user; '|' can
  std::vector<std::string> argv{o.sacct, "--allusers", "--parsable2", std::string("--delimiter=") + kDelim,
                                std::string("--format=") + kSacctFormat, "--starttime", SacctTime(*since_ns),
                                "--endtime", SacctTime(now + 1000000000)};
  if (!o.cluster.empty()) argv.insert(argv.end(), {"--clusters", o.cluster});
  auto text = RunCapture(argv, 120000);
  if (!text.ok()) return text.status();
  SacctParse p = ParseSacct(text.value(), key, kDelim);
  st->lines = p.lines;
  st->records = p.records.size();
  for (const auto& b : p.bad) st->bad.push_back("sacct line " + std::to_string(b.line) + ": " + b.reason + ": " + b.text);
  Status first_err;
  for (const auto& r : p.records) {
    Status w = db.value()->Upsert(r);
    if (w.ok()) {
      ++st->written;
      if (r.step.empty() && r.end_ns && *r.end_ns >= ended_from && *r.end_ns <= now)
        st->ended.emplace_back(r.cluster, r.job_id);
    } else if (w.code() == Code::kInvalid) {
      st->bad.push_back("job " + std::to_string(r.job_id) + (r.step.empty() ? "" : "." + r.step) + ": " + w.message());
    } else {
      return w;  // the database failed: the mark stays, the next poll re-reads this window
    }
  }
  return db.value()->SetPolledTo(key, now);
}

}  // namespace iosonar::scheduler
