// `iosonar doctor` / `iosonar-exporter doctor` (docs/deployment.md, "Checking
// a node"): what a node's deployment needs, each check printed as ok or FAIL
// with how to fix it; exit status 1 when anything failed. A one-shot on the
// exporter framework, so it reads /etc/iosonar/iosonar.toml like the daemons
// (its [doctor] table and the shared top level: `output` is the collector the
// node sends to).
//
// Checks (--checks picks some):
//   agent      an `iosonar-exporter agent` (or `iosonar agent`) process draining
//              this --ring-root runs
//   collector  the output's host:port accepts a TCP connection (2 s)
//   ring       --ring-root is a sticky, world-writable directory (tmpfs /dev/shm),
//              and every iosonar-ring-UID in it is a directory of that UID, mode 0700
//   lustre     Lustre statistics under --proc-root are readable
//   jobstats   job_stats can name jobs: jobid_var is set and not "disable"
//              (clients), or the servers' job_stats files are there
//   munge      munged answers: a credential is encoded and decoded
//   clock      the kernel's clock is synchronized (adjtimex: not STA_UNSYNC)
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/munge.h"
#include "core/base/url.h"
#include "exporters/framework/exporter.h"

namespace iosonar::exporters {
namespace {

constexpr OptionSpec kOptions[] = {
    opt::List("checks", "LIST", "agent,collector,ring,lustre,jobstats,munge,clock",
              "agent,collector,ring,lustre,jobstats,munge,clock", "which checks to run (comma-separated)"),
    opt::String("proc-root", "DIR", "/", "where proc/fs/lustre and sys/fs/lustre are (as `iosonar lustre`)"),
    opt::String("ring-root", "DIR", "/dev/shm", "where the tracer's ring directories are (the agent's --ring-root)"),
    opt::String("munge-socket", "PATH", "", "munged's socket (default: libmunge's)"),
};

struct Report {
  int failed = 0;
  void Ok(const char* check, const std::string& what) { std::printf("ok    %-10s %s\n", check, what.c_str()); }
  void Fail(const char* check, const std::string& what, const std::string& fix) {
    ++failed;
    std::printf("FAIL  %-10s %s\n      fix: %s\n", check, what.c_str(), fix.c_str());
  }
};

std::string Slurp(const std::string& path, bool* ok = nullptr) {
  std::ifstream f(path, std::ios::binary);
  if (ok) *ok = static_cast<bool>(f);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string Join(const std::string& root, const std::string& rel) {
  if (root.empty() || root == "/") return "/" + rel;
  return (root.back() == '/' ? root : root + "/") + rel;
}

// The agent: a process whose argv is [.../iosonar-exporter|.../iosonar, agent, ...]
// draining ring_root (its --ring-root, default /dev/shm).
void CheckAgent(Report& r, const std::string& ring_root) {
  DIR* d = opendir("/proc");
  if (!d) return r.Fail("agent", "cannot read /proc", "run the doctor on the node itself");
  std::vector<std::string> others;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::string cmd = Slurp(std::string("/proc/") + e->d_name + "/cmdline");
    std::vector<std::string> argv;
    for (size_t b = 0; b < cmd.size();) {
      size_t z = cmd.find('\0', b);
      argv.push_back(cmd.substr(b, z == std::string::npos ? std::string::npos : z - b));
      if (z == std::string::npos) break;
      b = z + 1;
    }
    if (argv.size() < 2 || argv[1] != "agent") continue;
    std::string base = argv[0].substr(argv[0].rfind('/') + 1);
    if (base != "iosonar-exporter" && base != "iosonar") continue;
    std::string root = "/dev/shm";
    for (size_t i = 2; i < argv.size(); ++i) {
      if (argv[i] == "--ring-root" && i + 1 < argv.size()) root = argv[i + 1];
      if (argv[i].rfind("--ring-root=", 0) == 0) root = argv[i].substr(12);
    }
    if (root == ring_root) {
      closedir(d);
      return r.Ok("agent", std::string(base) + " agent running (pid " + e->d_name + "), draining " + ring_root);
    }
    others.push_back(std::string(e->d_name) + " drains " + root);
  }
  closedir(d);
  r.Fail("agent", "no iosonar agent drains " + ring_root + (others.empty() ? "" : " (pid " + others[0] + ")"),
         "systemctl enable --now iosonar-agent (package iosonar-node); traced jobs' records wait in their rings until it runs");
}

void CheckCollector(Report& r, const std::string& output) {
  if (output.empty() || output == "-" || output == "agent")
    return r.Fail("collector", "no collector configured (output is '" + output + "')",
                  "set output = \"lumberjack://COLLECTOR:5171?auth=munge\" at the top of /etc/iosonar/iosonar.toml");
  auto u = ParseUrl(output);
  if (!u.ok()) return r.Fail("collector", u.status().message(), "fix output in /etc/iosonar/iosonar.toml");
  if (u->scheme != "tcp" && u->scheme != "lumberjack" && u->scheme != "lumberjacks" && u->scheme != "beats" &&
      u->scheme != "http" && u->scheme != "https" && u->scheme != "es+https" && u->scheme != "es+http")
    return r.Fail("collector", "output " + RedactUrl(output) + " is not a network receiver",
                  "nodes send to the collector: lumberjack://COLLECTOR:5171?auth=munge");
  int port = u->port;
  if (port == 0) port = u->scheme.rfind("lumberjack", 0) == 0 || u->scheme == "beats" ? 5044 : u->scheme == "http" ? 80 : 443;
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  std::string where = u->host + ":" + std::to_string(port);
  if (int rc = getaddrinfo(u->host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return r.Fail("collector", where + ": " + gai_strerror(rc), "check the host name in output (DNS, /etc/hosts)");
  std::string err = "no address";
  bool up = false;
  for (addrinfo* a = res; a && !up; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, 2000);
      if (rc == 0) {
        err = "no answer within 2 s";
        rc = -1;
      } else if (rc > 0) {
        int so = 0;
        socklen_t len = sizeof so;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
        rc = so ? -1 : 0;
        if (so) err = std::strerror(so);
      }
    } else if (rc != 0) {
      err = std::strerror(errno);
    }
    up = rc == 0;
    close(fd);
  }
  freeaddrinfo(res);
  if (up) return r.Ok("collector", where + " accepts connections (" + RedactUrl(output) + ")");
  r.Fail("collector", where + ": " + err,
         "start the collector (systemctl start iosonar-collector on the analysis host) or open the port in the firewall");
}

void CheckRing(Report& r, const std::string& root) {
  struct stat st{};
  if (lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return r.Fail("ring", root + " is not a directory", "mount a tmpfs on " + root + " (the tracer keeps its rings there)");
  if ((st.st_mode & 01777) != 01777) {
    char m[8];
    std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return r.Fail("ring", root + " has mode " + m + ", not 1777: users' tracers cannot make their ring directories",
                  "chmod 1777 " + root);
  }
  DIR* d = opendir(root.c_str());
  if (!d) return r.Fail("ring", std::string("cannot read ") + root + ": " + std::strerror(errno), "run the doctor as root");
  std::vector<std::string> bad;
  int n = 0;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("iosonar-ring-", 0) != 0) continue;
    ++n;
    std::string p = root + "/" + name;
    struct stat s{};
    char* end = nullptr;
    unsigned long uid = std::strtoul(name.c_str() + 13, &end, 10);
    if (lstat(p.c_str(), &s) != 0 || !S_ISDIR(s.st_mode) || !end || *end || s.st_uid != uid || (s.st_mode & 0777) != 0700)
      bad.push_back(p);
  }
  closedir(d);
  if (!bad.empty())
    return r.Fail("ring", bad[0] + " is not a 0700 directory of its uid" +
                              (bad.size() > 1 ? " (and " + std::to_string(bad.size() - 1) + " more)" : std::string()),
                  "the agent refuses it: remove it (rm -rf " + bad[0] + "); the tracer makes it anew");
  r.Ok("ring", root + " is 1777; " + std::to_string(n) + " ring director" + (n == 1 ? "y" : "ies") + " in order");
}

void CheckLustre(Report& r, const std::string& proc_root) {
  // Client (llite, osc) or server (obdfilter, mdt) statistics.
  const char* kDirs[] = {"proc/fs/lustre/llite", "proc/fs/lustre/osc", "proc/fs/lustre/obdfilter", "proc/fs/lustre/mdt",
                         "sys/kernel/debug/lustre/llite", "sys/kernel/debug/lustre/osc", "sys/fs/lustre/llite"};
  std::vector<std::string> found;
  std::string unreadable;
  for (const char* rel : kDirs) {
    std::string dir = Join(proc_root, rel);
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string f = dir + "/" + e->d_name + "/stats";
      if (access(f.c_str(), F_OK) != 0) f = dir + "/" + e->d_name + "/md_stats";
      if (access(f.c_str(), F_OK) != 0) continue;
      bool ok = false;
      std::string text = Slurp(f, &ok);
      if (ok && !text.empty()) found.push_back(f);
      else if (unreadable.empty()) unreadable = f;
    }
    closedir(d);
  }
  if (!found.empty())
    return r.Ok("lustre", std::to_string(found.size()) + " statistics file" + (found.size() == 1 ? "" : "s") +
                              " readable (" + found[0] + ")");
  if (!unreadable.empty()) return r.Fail("lustre", unreadable + " cannot be read", "run iosonar-exporter lustre as root (its unit does)");
  r.Fail("lustre", "no Lustre statistics under " + Join(proc_root, "proc/fs/lustre") + " or " + Join(proc_root, "sys/kernel/debug/lustre"),
         "load the Lustre modules and mount the file system (or mount debugfs: mount -t debugfs none /sys/kernel/debug)");
}

void CheckJobStats(Report& r, const std::string& proc_root) {
  for (const char* rel : {"sys/fs/lustre/jobid_var", "proc/fs/lustre/jobid_var"}) {
    bool ok = false;
    std::string v = Trim(Slurp(Join(proc_root, rel), &ok));
    if (!ok) continue;
    if (v.empty() || v == "disable")
      return r.Fail("jobstats", Join(proc_root, rel) + " is '" + v + "': job_stats cannot name jobs",
                    "lctl set_param -P jobid_var=SLURM_JOB_ID (on the MGS; or jobid_name=%j)");
    return r.Ok("jobstats", "jobid_var is " + v);
  }
  for (const char* rel : {"proc/fs/lustre/obdfilter", "proc/fs/lustre/mdt"}) {
    std::string dir = Join(proc_root, rel);
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string f = dir + "/" + e->d_name + "/job_stats";
      if (access(f.c_str(), R_OK) == 0) {
        closedir(d);
        return r.Ok("jobstats", f + " is there (a server)");
      }
    }
    closedir(d);
  }
  r.Fail("jobstats", "no jobid_var and no servers' job_stats under " + Join(proc_root, ""),
         "mount Lustre, then lctl set_param -P jobid_var=SLURM_JOB_ID on the MGS");
}

void CheckMunge(Report& r, const std::string& socket) {
  auto c = MungeEncode(socket, "iosonar-doctor");
  if (!c.ok())
    return r.Fail("munge", c.status().message(),
                  "systemctl enable --now munge (the cluster's /etc/munge/munge.key on every node); `?auth=munge` senders need it");
  auto d = MungeDecode(socket, *c);
  if (!d.ok()) return r.Fail("munge", "a credential made here does not decode: " + d.status().message(), "check munged's key and clock");
  r.Ok("munge", "munged encodes and decodes (uid " + std::to_string(d->uid) + ")");
}

void CheckClock(Report& r) {
  timex t{};
  int state = ntp_adjtime(&t);
  if (state == -1) return r.Fail("clock", std::string("adjtimex: ") + std::strerror(errno), "run the doctor on the node itself");
  if (state == TIME_ERROR || (t.status & STA_UNSYNC))
    return r.Fail("clock", "the kernel says the clock is not synchronized (maximum error " + std::to_string(t.maxerror / 1000) + " ms)",
                  "enable time synchronization: apt install chrony (or systemctl enable --now systemd-timesyncd); records "
                  "of different nodes are compared by time");
  r.Ok("clock", "synchronized (estimated error " + std::to_string(t.esterror) + " us)");
}

int OneShot(const Options& o) {
  Report r;
  const std::string ring_root = o.Get("ring-root");
  if (o.Contains("checks", "agent")) CheckAgent(r, ring_root);
  if (o.Contains("checks", "collector")) CheckCollector(r, o.Get("output"));
  if (o.Contains("checks", "ring")) CheckRing(r, ring_root);
  if (o.Contains("checks", "lustre")) CheckLustre(r, o.Get("proc-root"));
  if (o.Contains("checks", "jobstats")) CheckJobStats(r, o.Get("proc-root"));
  if (o.Contains("checks", "munge")) CheckMunge(r, o.Get("munge-socket"));
  if (o.Contains("checks", "clock")) CheckClock(r);
  std::fflush(stdout);
  if (r.failed) std::fprintf(stderr, "%s doctor: %d check%s failed\n", ProgramName(), r.failed, r.failed == 1 ? "" : "s");
  return r.failed ? 1 : 0;
}

Result<std::unique_ptr<Exporter>> Create(const Options&) {
  return Status::Invalid("doctor is a one-shot check, not a sampler");
}

}  // namespace

extern const Descriptor kDoctorExporter;
const Descriptor kDoctorExporter = {
    "doctor",
    "check this node's deployment: agent, collector, ring directory, Lustre, job_stats, MUNGE, clock",
    "Checks what a node needs and prints each check as ok or FAIL with how to fix it; exit status 1 when any\n"
    "check failed. The collector is --output (from /etc/iosonar/iosonar.toml's top level, as the daemons read it).",
    kOptions,
    1.0,
    &Create,
    &OneShot,
};

}  // namespace iosonar::exporters
