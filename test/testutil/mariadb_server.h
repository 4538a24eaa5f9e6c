// A real MariaDB server for tests: a fresh datadir under a TempDir
// (mariadb-install-db), mariadbd on a private unix socket and a private
// loopback port, polled until it answers, stopped by pid on destruction.
#pragma once
#include <optional>
#include <string>

#include "test/testutil/testutil.h"

namespace iosonar::test {

class MariaDbServer {
 public:
  MariaDbServer();  // FAILs the test if mariadbd is missing or does not come up
  ~MariaDbServer();
  // mysql://root@localhost/DB?socket=...&create=1 (the database is created on first connect).
  std::string url(const std::string& db = "iosonar") const;
  // The same database over TCP (127.0.0.1:port), for programs that cannot use a socket (slurmdbd).
  std::string tcp_url(const std::string& db = "iosonar") const;
  const std::string& socket() const { return socket_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_.path(); }
  // Stops the server (SIGTERM, waits) / starts it again on the same datadir, socket and port.
  void Stop();
  void Start();
  bool running() const { return proc_.has_value(); }

 private:
  TempDir dir_;
  std::string socket_;
  int port_;
  std::optional<Child> proc_;
};

// True if mariadbd and mariadb-install-db are installed.
bool HaveMariaDb();

}  // namespace iosonar::test
