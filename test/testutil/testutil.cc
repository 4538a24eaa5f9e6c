#include "test/testutil/testutil.h"

#include "core/store/sqlite_store.h"

#include "core/collector/ingest.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace iosonar::test {

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/iosonar-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) FAIL("mkdtemp: " << strerror(errno));
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {
// Whether a server could bind port on every address now (no listener, no
// connection and no TIME_WAIT socket holds it).
bool Bindable(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}
}  // namespace

// A port below the kernel's ephemeral range: a port from that range (what
// binding port 0 gives) can be taken by any outgoing connection, or be held by
// one in TIME_WAIT, before the server the test starts binds it (seen: slurmdbd
// "Address already in use" after a stress test's thousands of connections).
// Each port handed out is held by a lock file for this process's lifetime, so
// the tests ctest runs side by side never get the same one.
int FreePort() {
  int lo = 32768;
  if (std::ifstream r("/proc/sys/net/ipv4/ip_local_port_range"); r) r >> lo;
  const int first = 10000, last = lo - 1;
  // The lock files' directory: ours, a real directory, private ("" if another
  // user made that name first: then the ports come as the kernel gives them).
  static const std::string dir = [] {
    std::string d = "/tmp/iosonar-test-ports-" + std::to_string(getuid());
    mkdir(d.c_str(), 0700);
    struct stat st {};
    const bool ours = lstat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
                      (st.st_mode & 077) == 0;
    return ours ? d : std::string();
  }();
  static unsigned seed = static_cast<unsigned>(getpid()) * 2654435761u ^ static_cast<unsigned>(time(nullptr));
  if (!dir.empty() && last - first >= 1000) {
    for (int attempt = 0; attempt < 2000; ++attempt) {
      const int port = first + static_cast<int>(rand_r(&seed) % static_cast<unsigned>(last - first + 1));
      const std::string lock = dir + "/" + std::to_string(port);
      int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd < 0) continue;
      if (flock(fd, LOCK_EX | LOCK_NB) != 0 || !Bindable(port)) {
        close(fd);
        continue;
      }
      return port;  // fd stays open (and locked) until this process exits
    }
  }
  // A range too narrow to pick from: what the kernel gives for port 0.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string BinaryDir() { return IOSONAR_BINARY_DIR; }
std::string SourceDir() { return IOSONAR_SOURCE_DIR; }
std::string SharedDataDir() {
  const char* env = getenv("IOSONAR_SHARED_DATA");
  std::string d = env && *env ? std::string(env) : SourceDir() + "/../shared/data";
  return std::filesystem::is_directory(d) ? std::filesystem::canonical(d).string() : "";
}
std::string RealCapturesSkipped(const std::string& what) {
  const char* env = getenv("IOSONAR_SHARED_DATA");
  return "skipped, a real-capture check (" + what + "): the real captures (" +
         (env && *env ? "$IOSONAR_SHARED_DATA=" + std::string(env) : "../shared/data beside the checkout") +
         ") are not there";
}
std::string TracerLib() { return BinaryDir() + "/libiosonar-trace.so"; }
std::string IosonarBin() { return BinaryDir() + "/iosonar"; }

bool HaveProgram(const std::string& name) {
  const char* path = getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  return access(("/usr/sbin/" + name).c_str(), X_OK) == 0;
}

namespace {
void ApplyEnv(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env) {
    if (v.empty()) unsetenv(k.c_str());
    else setenv(k.c_str(), v.c_str(), 1);
  }
}
std::vector<char*> Argv(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  return a;
}
}  // namespace

// Only for a child the test's main thread forked: the signal comes when the
// forking thread ends, and a helper thread ends long before the test.
void DieWithTest(pid_t test_pid, bool from_main_thread) {
  if (!from_main_thread) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != test_pid) _exit(126);  // the test died before the line above
}

bool OnMainThread() { return gettid() == getpid(); }

RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& stdin_data) {
  int in[2], out[2], err[2];
  REQUIRE(pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(pipe2(err, O_CLOEXEC) == 0);
  auto args = Argv(argv);
  const pid_t self = getpid();
  const bool main_thread = OnMainThread();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    DieWithTest(self, main_thread);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    ApplyEnv(env);
    execvp(args[0], args.data());
    fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  std::thread writer([&] {
    size_t off = 0;
    while (off < stdin_data.size()) {
      ssize_t n = write(in[1], stdin_data.data() + off, stdin_data.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(in[1]);
  });
  RunResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  writer.join();
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  return r;
}

Child::Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& log_path) {
  auto args = Argv(argv);
  const pid_t self = getpid();
  const bool main_thread = OnMainThread();
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    DieWithTest(self, main_thread);
    if (!log_path.empty()) {
      int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
    }
    ApplyEnv(env);
    execvp(args[0], args.data());
    _exit(127);
  }
}

Child::~Child() {
  if (!reaped_) Stop();
}

bool Child::Alive() {
  if (reaped_) return false;
  pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

int Child::Stop(int timeout_ms) {
  if (reaped_) return status_;
  kill(pid_, SIGTERM);
  if (!WaitUntil([&] { return !Alive(); }, timeout_ms)) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return status_;
}

int Child::Wait() {
  if (!reaped_) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return status_;
}

bool WaitUntil(const std::function<bool()>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

RedisServer::RedisServer() : port_(FreePort()) {
  std::string bin = "redis-server";
  if (!HaveProgram(bin)) FAIL("redis-server is not installed (scripts/setup.sh --test installs it)");
  proc_.emplace(std::vector<std::string>{bin, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir",
                                         dir_.path(), "--save", "", "--appendonly", "no", "--daemonize", "no"},
                std::map<std::string, std::string>{}, dir_ / "redis.log");
  bool up = WaitUntil(
      [&] {
        if (!proc_->Alive()) return true;
        redisContext* c = redisConnect("127.0.0.1", port_);
        bool ok = false;
        if (c && !c->err) {
          auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
          ok = r && r->type == REDIS_REPLY_STATUS && std::string(r->str) == "PONG";
          if (r) freeReplyObject(r);
        }
        if (c) redisFree(c);
        return ok;
      },
      10000);
  if (!up || !proc_->Alive()) FAIL("redis-server did not answer PING on port " << port_ << ": " << ReadFile(dir_ / "redis.log"));
}

std::string RedisServer::Command(const std::vector<std::string>& args) {
  redisContext* c = redisConnect("127.0.0.1", port_);
  REQUIRE(c);
  REQUIRE(!c->err);
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.c_str());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  std::string out;
  if (r) {
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR)
      out.assign(r->str, r->len);
    else if (r->type == REDIS_REPLY_INTEGER)
      out = std::to_string(r->integer);
    else if (r->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out.push_back('\n');
        if (r->element[i]->str) out.append(r->element[i]->str, r->element[i]->len);
      }
    freeReplyObject(r);
  }
  redisFree(c);
  return out;
}

std::vector<std::string> RedisServer::LRange(const std::string& key) {
  redisContext* c = redisConnect("127.0.0.1", port_);
  REQUIRE(c);
  auto* r = static_cast<redisReply*>(redisCommand(c, "LRANGE %s 0 -1", key.c_str()));
  std::vector<std::string> out;
  if (r && r->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
  if (r) freeReplyObject(r);
  redisFree(c);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string line;
  while (std::getline(ss, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

void ParsedLines::Add(const std::string& line) {
  bufs.push_back(std::make_unique<std::string>(line + '\0'));
  recs.push_back(std::make_unique<ParsedRecord>());
  Status s = ParseRecordInsitu(bufs.back()->data(), line.size(), recs.back().get());
  INFO(line);
  REQUIRE(s.message() == "");
  ptrs.push_back(recs.back().get());
}

std::unique_ptr<Store> StoreFromLines(
    const std::string& dir,
    const std::function<Status(const std::function<Status(std::string_view line)>& sink)>& produce,
    AppendStats* stats) {
  auto store = OpenSqliteStore(dir);
  REQUIRE(store.ok());
  BulkWriter* w = BulkWriterOf(store.value().get());
  REQUIRE(w);
  IngestBatch batch(w, 4096);
  AppendStats local;
  Status st = produce([&](std::string_view line) -> Status {
    if (batch.full()) {
      if (Status c = batch.Commit(&local); !c.ok()) return c;
      batch.Clear();
    }
    Status a = batch.Add(line);  // validates with ParseRecordInsitu
    if (!a.ok()) return Status::Invalid(a.message() + ": " + std::string(line.substr(0, 200)));
    return a;
  });
  INFO(st.message());
  REQUIRE(st.ok());
  if (!batch.empty()) REQUIRE(batch.Commit(&local).ok());
  if (stats) *stats = local;
  return std::move(store).value();
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool CanConnect(int port) {
  int fd = ConnectLoopback(port);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace iosonar::test
