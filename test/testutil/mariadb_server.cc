#include "test/testutil/mariadb_server.h"

#include <mysql.h>

#include <catch2/catch.hpp>
#include <filesystem>

namespace iosonar::test {

bool HaveMariaDb() {
  return (HaveProgram("mariadbd") || access("/usr/sbin/mariadbd", X_OK) == 0) && HaveProgram("mariadb-install-db");
}

namespace {
std::string Mariadbd() { return HaveProgram("mariadbd") ? "mariadbd" : "/usr/sbin/mariadbd"; }
}  // namespace

MariaDbServer::MariaDbServer() : socket_(dir_ / "mysql.sock"), port_(FreePort()) {
  if (!HaveMariaDb()) FAIL("mariadbd / mariadb-install-db are not installed (scripts/setup.sh --test installs them)");
  // A private tmpdir: servers bootstrapping at the same time must not share temporary table names.
  std::filesystem::create_directories(dir_ / "tmp");
  auto r = Run({"mariadb-install-db", "--no-defaults", "--datadir=" + (dir_ / "data"), "--tmpdir=" + (dir_ / "tmp"),
                "--auth-root-authentication-method=normal", "--skip-test-db", "--user=root", "--skip-name-resolve"},
               {{"TMPDIR", dir_ / "tmp"}});
  if (r.exit_code != 0) FAIL("mariadb-install-db failed: " << r.out << r.err);
  Start();
}

MariaDbServer::~MariaDbServer() { Stop(); }

void MariaDbServer::Start() {
  if (proc_) return;
  proc_.emplace(std::vector<std::string>{Mariadbd(), "--no-defaults", "--datadir=" + (dir_ / "data"),
                                         "--tmpdir=" + (dir_ / "tmp"), "--socket=" + socket_, "--port=" + std::to_string(port_),
                                         "--bind-address=127.0.0.1", "--pid-file=" + (dir_ / "mariadbd.pid"),
                                         "--user=root", "--log-error=" + (dir_ / "error.log"),
                                         "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
                                         "--innodb-flush-log-at-trx-commit=2", "--skip-name-resolve",
                                         "--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin"},
                std::map<std::string, std::string>{}, dir_ / "mariadbd.out");
  bool up = WaitUntil(
      [&] {
        if (!proc_->Alive()) return true;
        MYSQL* m = mysql_init(nullptr);
        unsigned t = 1;
        mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &t);
        bool ok = mysql_real_connect(m, "localhost", "root", nullptr, nullptr, 0, socket_.c_str(), 0) != nullptr;
        mysql_close(m);
        return ok;
      },
      30000);
  if (!up || !proc_->Alive()) {
    std::string log = ReadFile(dir_ / "error.log");
    proc_.reset();
    FAIL("mariadbd did not answer on " << socket_ << ": " << log);
  }
}

void MariaDbServer::Stop() {
  if (!proc_) return;
  proc_->Stop(30000);
  proc_.reset();
}

std::string MariaDbServer::url(const std::string& db) const {
  return "mysql://root@localhost/" + db + "?socket=" + socket_ + "&create=1";
}

std::string MariaDbServer::tcp_url(const std::string& db) const {
  return "mysql://root@127.0.0.1:" + std::to_string(port_) + "/" + db + "?create=1";
}

}  // namespace iosonar::test
