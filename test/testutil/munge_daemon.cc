#include "test/testutil/munge_daemon.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>

namespace iosonar::test {

namespace {
std::string Munged() { return HaveProgram("munged") ? "munged" : "/usr/sbin/munged"; }
}  // namespace

bool HaveMunge() {
  return (HaveProgram("munged") || access("/usr/sbin/munged", X_OK) == 0) && HaveProgram("munge") &&
         HaveProgram("setpriv");
}

MungeDaemon::MungeDaemon() {
  if (!HaveMunge()) FAIL("munge is not installed (scripts/setup.sh --test installs munge)");
  const std::string d = dir_.path();
  chmod(d.c_str(), 0711);
  mkdir((d + "/run").c_str(), 0755);
  chmod((d + "/run").c_str(), 0755);
  socket_ = d + "/run/munge.sock";
  std::random_device rd;
  std::string key(1024, '\0');
  for (auto& c : key) c = static_cast<char>(rd() & 0xff);
  WriteFile(d + "/munge.key", key);
  chmod((d + "/munge.key").c_str(), 0600);
  proc_.emplace(std::vector<std::string>{Munged(), "--foreground", "--force", "--socket=" + socket_,
                                         "--key-file=" + d + "/munge.key", "--pid-file=" + d + "/munged.pid",
                                         "--log-file=" + d + "/munged.log", "--seed-file=" + d + "/munged.seed",
                                         "--num-threads=2"},
                std::map<std::string, std::string>{}, d + "/munged.out");
  int64_t tries = 0;
  bool up = WaitUntil(
      [&] {
        if (!proc_->Alive()) return true;
        if (++tries % 50) return false;  // run munge every 50 ms, not every millisecond
        return Run({"munge", "-S", socket_, "-n"}).exit_code == 0;
      },
      30000);
  if (!up || !proc_->Alive()) FAIL("munged did not come up: " << ReadFile(d + "/munged.out") << ReadFile(d + "/munged.log"));
}

MungeDaemon::~MungeDaemon() {
  if (proc_) proc_->Stop();
}

std::string MungeDaemon::Credential(int uid, int gid) const {
  auto r = Run({"setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(gid), "--clear-groups", "munge",
                "-S", socket_, "-n"});
  REQUIRE(r.exit_code == 0);
  std::string c = r.out;
  while (!c.empty() && (c.back() == '\n' || c.back() == '\r')) c.pop_back();
  REQUIRE(!c.empty());
  return c;
}

}  // namespace iosonar::test
