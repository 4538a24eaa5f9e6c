// Helpers shared by the tests: temporary directories, free loopback ports,
// child processes stopped by their own pid, and a real redis-server started
// on a private port and waited on until it answers PING (no sleeps).
#pragma once
#include <span>
#include <memory>
#include <sys/types.h>
#include <sys/wait.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/records/record.h"
#include "core/store/store.h"

namespace iosonar::test {

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A loopback TCP port nobody listens on right now.
int FreePort();

std::string BinaryDir();   // the CMake build directory
std::string SourceDir();
// The real captures (../shared/data beside the checkout, or the directory
// $IOSONAR_SHARED_DATA names), "" if absent. Only the real-capture checks use
// them, and they are the only tests that may skip: with the message below.
// Everything else runs on the project's own fixtures (test/fixtures/).
std::string SharedDataDir();
std::string RealCapturesSkipped(const std::string& what);
std::string TracerLib();   // path of libiosonar-trace.so
std::string IosonarBin();  // path of the iosonar front command
bool HaveProgram(const std::string& name);  // found on PATH

struct RunResult {
  int exit_code = -1;  // -1 if killed by a signal
  int signal = 0;
  std::string out, err;
};
// In a child just forked (test_pid: the test's getpid() before the fork,
// from_main_thread: OnMainThread() before it): SIGKILL when the test process
// dies, so a killed test leaves no server running. Run, Child and the search
// engines do it (the engines after dropping to their user: a change of
// credentials clears it); nothing for a child a helper thread forked.
void DieWithTest(pid_t test_pid, bool from_main_thread);
bool OnMainThread();

// Runs argv with extra environment entries (KEY=VALUE; KEY= with empty value
// unsets), capturing stdout and stderr.
RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
              const std::string& stdin_data = "");

// A wait status as a shell reports it: the exit code, or 128 + the signal
// that killed it (WEXITSTATUS alone reads a crash as exit code 0).
inline int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// A child process started in the background, stopped by pid on destruction.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
        const std::string& log_path = "");
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  bool Alive();
  // SIGTERM, then wait (SIGKILL after timeout_ms). Returns the exit status as waitpid gives it.
  int Stop(int timeout_ms = 5000);
  int Wait();  // waits for normal exit

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// A real redis-server on a private loopback port with no persistence.
class RedisServer {
 public:
  RedisServer();  // FAILs the test if redis-server is missing or does not answer
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }
  int port() const { return port_; }
  // Runs a command and returns the reply as text (arrays joined by '\n').
  std::string Command(const std::vector<std::string>& args);
  std::vector<std::string> LRange(const std::string& key);

 private:
  TempDir dir_;
  int port_;
  std::optional<Child> proc_;
};

// Polls pred every millisecond until it holds or timeout_ms passes.
bool WaitUntil(const std::function<bool()>& pred, int timeout_ms);

std::string ReadFile(const std::string& path);
// Parsed records with the line buffers they point into (REQUIREs each line valid).
struct ParsedLines {
  std::vector<std::unique_ptr<std::string>> bufs;
  std::vector<std::unique_ptr<ParsedRecord>> recs;
  std::vector<const ParsedRecord*> ptrs;
  void Add(const std::string& line);
  std::span<const ParsedRecord* const> span() const { return ptrs; }
};

// A new SQLite store in dir filled through the collector's batch path with
// the lines produce() hands to its sink (every line validated); REQUIREs that
// all went in, and gives the insert counts.
std::unique_ptr<Store> StoreFromLines(
    const std::string& dir,
    const std::function<Status(const std::function<Status(std::string_view line)>& sink)>& produce,
    AppendStats* stats = nullptr);

// A TCP connection to 127.0.0.1:port (blocking), or -1.
int ConnectLoopback(int port);
// Something listens on 127.0.0.1:port (a connection is made and closed).
bool CanConnect(int port);
// Writes all of data to fd (blocking); false if the peer went away first.
bool SendAll(int fd, const std::string& data);
void WriteFile(const std::string& path, const std::string& data);
std::vector<std::string> SplitLines(const std::string& s);

}  // namespace iosonar::test
