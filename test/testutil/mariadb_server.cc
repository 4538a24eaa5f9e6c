#include "test/testutil/mariadb_server.h"

#include <mysql.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace iosonar::test {

bool HaveMariaDb() {
  return (HaveProgram("mariadbd") || access("/usr/sbin/mariadbd", X_OK) == 0) && HaveProgram("mariadb-install-db");
}

namespace {
std::string Mariadbd() { return HaveProgram("mariadbd") ? "mariadbd" : "/usr/sbin/mariadbd"; }

RunResult InstallDb(const std::string& datadir, const std::string& tmpdir) {
  return Run({"mariadb-install-db", "--no-defaults", "--datadir=" + datadir, "--tmpdir=" + tmpdir,
              "--auth-root-authentication-method=normal", "--skip-test-db", "--user=root", "--skip-name-resolve"},
             {{"TMPDIR", tmpdir}});
}

// A freshly bootstrapped datadir, made once per build tree and mariadbd
// binary (its size and time in the name) under a lock, copied for each
// server: mariadb-install-db took 2-8 s per server, and ~40 servers start in
// one run of the suite. "" if it could not be made (each server then
// bootstraps its own).
std::string DatadirTemplate() {
  namespace fs = std::filesystem;
  std::error_code ec;
  struct stat st {};
  if (stat("/usr/sbin/mariadbd", &st) != 0) return "";  // (Debian's; elsewhere each server bootstraps its own)
  const fs::path root = fs::path(BinaryDir()) / "test-artifacts";
  fs::create_directories(root, ec);
  const fs::path tmpl = root / ("mariadb-datadir-" + std::to_string(st.st_size) + "-" + std::to_string(st.st_mtime));
  const int lock = open((tmpl.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return "";
  flock(lock, LOCK_EX);  // ctest runs tests side by side: one bootstraps, the others wait for it
  std::string made;
  if (fs::exists(tmpl / ".complete")) {
    made = tmpl;
  } else {
    const fs::path work = tmpl.string() + ".work";
    fs::remove_all(work, ec);
    fs::create_directories(work / "tmp", ec);
    auto r = InstallDb(work / "data", work / "tmp");
    if (r.exit_code == 0 && std::ofstream(work / "data/.complete").good()) {
      fs::remove_all(tmpl, ec);
      fs::rename(work / "data", tmpl, ec);
      if (!ec) made = tmpl;
    }
    fs::remove_all(work, ec);
  }
  close(lock);
  return made;
}
}  // namespace

MariaDbServer::MariaDbServer() : socket_(dir_ / "mysql.sock"), port_(FreePort()) {
  if (!HaveMariaDb()) FAIL("mariadbd / mariadb-install-db are not installed (scripts/setup.sh --test installs them)");
  // A private tmpdir: servers bootstrapping at the same time must not share temporary table names.
  std::filesystem::create_directories(dir_ / "tmp");
  const std::string tmpl = DatadirTemplate();
  std::error_code ec;
  if (!tmpl.empty())
    std::filesystem::copy(tmpl, dir_ / "data",
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  if (tmpl.empty() || ec) {
    std::filesystem::remove_all(dir_ / "data", ec);
    auto r = InstallDb(dir_ / "data", dir_ / "tmp");
    if (r.exit_code != 0) FAIL("mariadb-install-db failed: " << r.out << r.err);
  }
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
