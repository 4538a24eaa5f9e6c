// Reading health sources: saved files (plain or gzip) and the live commands.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/base/timeutil.h"
#include "exporters/health/health.h"

namespace iosonar::health {

namespace {
constexpr size_t kMaxSourceBytes = size_t{256} << 20;  // a sane bound on one command output or file

int64_t MonoMs() { return MonotonicNs() / 1000000; }

// Children killed after a timeout that did not exit at once (a process stuck
// in the file system can take a while to die): reaped later, by pid.
std::vector<pid_t>& Strays() {
  static std::vector<pid_t> v;
  return v;
}
void ReapStrays() {
  auto& v = Strays();
  for (size_t i = 0; i < v.size();)
    if (waitpid(v[i], nullptr, WNOHANG) != 0) v[i] = v.back(), v.pop_back();
    else ++i;
}
}  // namespace

bool ReadSource(const std::string& path, std::string* out, std::string* error) {
  out->clear();
  // gzopen reads plain files as they are, so one path serves both.
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    *error = path + ": " + std::strerror(errno ? errno : ENOMEM);
    return false;
  }
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int zerr = 0;
      const char* msg = gzerror(f, &zerr);
      *error = path + ": " + (zerr == Z_ERRNO ? std::strerror(errno) : msg);
      gzclose(f);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > kMaxSourceBytes) {
      *error = path + ": larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
      gzclose(f);
      return false;
    }
  }
  gzclose(f);
  return true;
}

bool RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* error, int timeout_ms) {
  out->clear();
  ReapStrays();
  int p[2];
  int ep[2];  // exec failure report: the child writes its errno here
  if (pipe2(p, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close(p[0]), close(p[1]), close(ep[0]), close(ep[1]);
    return false;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout kills what it started too (lfs forks)
    dup2(p[1], 1);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(args[0], args.data());
    int e = errno;
    ssize_t ignored = write(ep[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before any kill (either call wins the race)
  close(p[1]);
  close(ep[1]);
  char buf[1 << 16];
  bool too_big = false, timed_out = false;
  const int64_t deadline = MonoMs() + timeout_ms;
  for (;;) {
    if (timeout_ms > 0) {
      int64_t left = deadline - MonoMs();
      pollfd pf{p[0], POLLIN, 0};
      int pr = left > 0 ? poll(&pf, 1, static_cast<int>(left)) : 0;
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) {
        timed_out = true;
        break;
      }
    }
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out->size() < kMaxSourceBytes) out->append(buf, static_cast<size_t>(n));
    else too_big = true;
  }
  close(p[0]);
  if (timed_out) {
    kill(-pid, SIGKILL);  // the whole group: a grandchild left behind would hold the file system once per sample
    kill(pid, SIGKILL);
    close(ep[0]);
    int st = 0;
    pid_t r = 0;
    for (int i = 0; i < 100 && (r = waitpid(pid, &st, WNOHANG)) == 0; ++i) usleep(10000);
    if (r == 0) Strays().push_back(pid);
    *error = argv[0] + ": no answer within " + std::to_string(timeout_ms / 1000.0).substr(0, 5) + " s (killed)";
    return false;
  }
  int exec_errno = 0;
  ssize_t got = read(ep[0], &exec_errno, sizeof exec_errno);
  close(ep[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (got == sizeof exec_errno) {
    *error = argv[0] + ": " + (exec_errno == ENOENT ? std::string("command not found") : std::strerror(exec_errno));
    return false;
  }
  if (WIFSIGNALED(st)) {
    *error = argv[0] + ": killed by signal " + std::to_string(WTERMSIG(st));
    return false;
  }
  if (WEXITSTATUS(st) != 0) {
    *error = argv[0] + ": exit status " + std::to_string(WEXITSTATUS(st));
    return false;
  }
  if (too_big) {
    *error = argv[0] + ": output larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
    return false;
  }
  return true;
}

}  // namespace iosonar::health
