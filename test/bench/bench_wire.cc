// Bytes on the wire per traced operation through the acknowledged agent path,
// with and without Lumberjack compression, side by side in one run:
//
//   iosonar trace --output 'lumberjack://127.0.0.1:RELAY?compression_level=L' -- fio --rw=randread ...
//
// RELAY is a byte-counting TCP relay in this process in front of an in-process
// collector and SQLite store; the bytes counted are every byte the embedded
// agent wrote to the socket (frames, compressed or not; ACKs back are counted
// apart). Operations are the tracer's own count (tracer.raw_ops of the exit
// records, read back from the store with `iosonar store-export`), so B/op is
// wire bytes / operations the program made. Issue 13's target: <= ~8 B/op
// (DXT's compressed log) past the detail budget.
//
//   bench_wire [--size 512m] [--levels 0,3] [--fio-args "..."]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/collector/collector.h"

using namespace iosonar;

namespace {

std::string g_bin = IOSONAR_BINARY_DIR;

// Accepts connections on a loopback port and forwards each to the collector,
// counting the bytes each way.
class Relay {
 public:
  explicit Relay(int target_port) : target_(target_port) {
    lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(lfd_, 16) != 0 ||
        getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::perror("bench_wire: relay");
      std::exit(1);
    }
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~Relay() {
    stop_ = true;
    shutdown(lfd_, SHUT_RDWR);
    acceptor_.join();
    for (auto& t : conns_) t.join();
    close(lfd_);
  }
  int port() const { return port_; }
  uint64_t up() const { return up_; }      // sender -> receiver
  uint64_t down() const { return down_; }  // receiver -> sender (ACKs)
  uint64_t connections() const { return connections_; }

 private:
  void Accept() {
    for (;;) {
      pollfd p{lfd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) {
        if (stop_) return;
        continue;
      }
      int c = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (stop_) return;
        continue;
      }
      ++connections_;
      conns_.emplace_back([this, c] { Pump(c); });
    }
  }
  void Pump(int c) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(target_));
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(c);
      close(s);
      return;
    }
    char buf[1 << 16];
    pollfd p[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
    bool open = true;
    while (open) {
      if (poll(p, 2, 200) < 0) break;
      for (int i = 0; i < 2 && open; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(p[i].fd, buf, sizeof buf);
        if (n <= 0) {
          open = false;
          break;
        }
        (i == 0 ? up_ : down_) += static_cast<uint64_t>(n);
        const int to = i == 0 ? s : c;
        for (ssize_t off = 0; off < n;) {
          ssize_t w = write(to, buf + off, static_cast<size_t>(n - off));
          if (w <= 0) {
            open = false;
            break;
          }
          off += w;
        }
      }
    }
    close(c);
    close(s);
  }
  int target_, lfd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> up_{0}, down_{0}, connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> conns_;
};

int Run(const std::vector<std::string>& argv, const std::string& out_path) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (!out_path.empty() && !freopen(out_path.c_str(), "w", stdout)) _exit(126);
    if (!freopen("/dev/null", "w", stderr)) _exit(126);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

struct Export {
  uint64_t records = 0, trace_records = 0, raw_ops = 0, dropped = 0, io_count = 0, json_bytes = 0;
};

void ReadExport(const std::string& path, Export& e) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return;
  char* line = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0) {
    ++e.records;
    e.json_bytes += static_cast<uint64_t>(n);
    if (std::strstr(line, "\"event.dataset\":\"iosonar.trace\"")) {
      ++e.trace_records;
      if (const char* p = std::strstr(line, "\"io.count\":")) e.io_count += std::strtoull(p + 11, nullptr, 10);
    }
    if (std::strstr(line, "\"event.action\":\"exit\"")) {
      if (const char* p = std::strstr(line, "\"tracer.raw_ops\":")) e.raw_ops += std::strtoull(p + 17, nullptr, 10);
      if (const char* p = std::strstr(line, "\"tracer.dropped\":")) e.dropped += std::strtoull(p + 17, nullptr, 10);
    }
  }
  std::free(line);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  std::string size = "512m", levels = "0,3", extra;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--size")) size = argv[++i];
    else if (!std::strcmp(argv[i], "--levels")) levels = argv[++i];
    else if (!std::strcmp(argv[i], "--fio-args")) extra = argv[++i];
  }
  char tmpl[] = "/dev/shm/iosonar-bench-wire-XXXXXX";
  char tmpl2[] = "/tmp/iosonar-bench-wire-XXXXXX";
  const char* d = mkdtemp(tmpl);
  if (!d) d = mkdtemp(tmpl2);
  if (!d) return 1;
  const std::string dir = d;
  const std::string data = dir + "/w.dat";
  if (Run({"fio", "--name=lay", "--filename=" + data, "--rw=write", "--bs=1M", "--size=" + size}, "/dev/null") != 0) {
    std::fprintf(stderr, "bench_wire: fio is needed\n");
    return 1;
  }
  std::printf("bench_wire: iosonar trace --output lumberjack://...?compression_level=L -- fio --rw=randread --bs=4k "
              "--size=%s %s\n", size.c_str(), extra.c_str());
  std::printf("%-6s %9s %9s %9s %9s %11s %9s %11s %9s %10s %6s\n", "level", "raw ops", "dropped", "records", "trace rec",
              "wire bytes", "wire B/op", "JSON bytes", "JSON B/op", "wire/JSON", "ACK B");
  int rc = 0;
  std::stringstream ls(levels);
  std::string lv;
  for (int run = 0; std::getline(ls, lv, ','); ++run) {
    const std::string store = dir + "/store-" + std::to_string(run) + "-" + lv;
    CollectorOptions o;
    o.listen = "tcp://127.0.0.1:0";
    o.store_dir = store;
    auto c = Collector::Start(o);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 1;
    }
    uint64_t up = 0, down = 0;
    {
      Relay relay(c.value()->port());
      std::vector<std::string> cmd = {g_bin + "/iosonar", "trace", "--spool-dir", dir + "/spool", "--output",
                                      "lumberjack://127.0.0.1:" + std::to_string(relay.port()) +
                                          "?compression_level=" + lv,
                                      "--", "fio", "--name=r", "--filename=" + data, "--rw=randread", "--bs=4k",
                                      "--size=" + size};
      std::stringstream es(extra);
      for (std::string w; es >> w;) cmd.push_back(w);
      if (Run(cmd, "/dev/null") != 0) {
        std::fprintf(stderr, "bench_wire: iosonar trace failed (level %s)\n", lv.c_str());
        rc = 1;
      }
      // Every window was acknowledged (so stored) before `iosonar trace` exited.
      if (!c.value()->Drain(static_cast<int>(relay.connections()), 60000).ok()) rc = 1;
      (void)c.value()->Stop();
      up = relay.up();
      down = relay.down();
    }
    Export e;
    for (const char* ds : {"iosonar.trace", "iosonar.tracer"}) {
      const std::string exp = store + "-" + ds + ".jsonl";
      if (Run({g_bin + "/iosonar", "store-export", "--store", store, "--dataset", ds}, exp) != 0) rc = 1;
      ReadExport(exp, e);
    }
    // The trace records' io.count add up to the tracer's own count of the program's ops, less
    // what the tracer counted as dropped (its ring full while the agent was late).
    if (e.raw_ops == 0 || e.io_count + e.dropped != e.raw_ops) {
      std::fprintf(stderr, "bench_wire: level %s: tracer.raw_ops %" PRIu64 ", io.count summed %" PRIu64
                   ", tracer.dropped %" PRIu64 "\n", lv.c_str(), e.raw_ops, e.io_count, e.dropped);
      rc = 1;
    }
    std::printf("%-6s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %11" PRIu64 " %9.2f %11" PRIu64
                " %9.2f %10.3f %6" PRIu64 "\n",
                lv.c_str(), e.raw_ops, e.dropped, e.records, e.trace_records, up,
                static_cast<double>(up) / static_cast<double>(std::max<uint64_t>(1, e.raw_ops)), e.json_bytes,
                static_cast<double>(e.json_bytes) / static_cast<double>(std::max<uint64_t>(1, e.raw_ops)),
                static_cast<double>(up) / static_cast<double>(std::max<uint64_t>(1, e.json_bytes)), down);
  }
  if (rc != 0) {
    std::fprintf(stderr, "bench_wire: kept %s for a look\n", dir.c_str());
    return rc;
  }
  std::string rm = "rm -rf " + dir;
  return std::system(rm.c_str()) == 0 ? rc : 1;
}
