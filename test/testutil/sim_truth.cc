#include "test/testutil/sim_truth.h"

#include <catch2/catch.hpp>
#include <sstream>

namespace iosonar::test {

namespace {
std::string ZeroPadded(const std::string& digits, size_t width) {
  return std::string(width > digits.size() ? width - digits.size() : 0, '0') + digits;
}
}  // namespace

std::string SimOstName(int ost) {
  std::ostringstream hex;
  hex << std::hex << ost;
  return "simfs-OST" + ZeroPadded(hex.str(), 4);
}
std::string SimFwdName(int fwd) { return "fwd" + ZeroPadded(std::to_string(fwd), 3); }

std::vector<std::string> AnomalyArgs(const std::string& job, const std::string& store, const std::string& dir) {
  return {IosonarBin(), "anomaly", job, "--store", store, "--apps", dir + "/apps.tsv",
          "--maps", dir + "/maps.json", "--format", "json"};
}

std::vector<std::string> ScreenArgs(const std::string& store, std::vector<std::string> more, const std::string& to) {
  std::vector<std::string> a = {IosonarBin(), "screen", "--store", store, "--from", "2026-11-22T00:00:00Z", "--to", to};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string PeaksText(int osts, const std::string& ost_peak, int fwd, const std::string& fwd_peak) {
  std::string peaks;
  for (int o = 0; o < osts; ++o) peaks += SimOstName(o) + " " + ost_peak + "\n";
  for (int f = 0; f < fwd; ++f) peaks += SimFwdName(f) + " " + fwd_peak + "\n";
  return peaks;
}

rapidjson::Document JsonObject(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  INFO(text);
  REQUIRE(d.IsObject());
  return d;
}

std::map<int, int> FilesPerOst(const rapidjson::Value& maps, const std::string& job) {
  std::map<int, int> files_on;
  for (const auto& L : maps["layouts"].GetArray())
    if (L["job_id"].GetString() == job) files_on[L["osts"][0].GetInt()]++;
  return files_on;
}

int MostFiles(const std::map<int, int>& files_on) {
  int most = -1;
  for (auto [o, n] : files_on)
    if (most < 0 || n > files_on.at(most)) most = o;
  return most;
}

std::map<std::string, std::set<std::string>> SlowServersOf(const rapidjson::Value& truth) {
  std::map<std::string, std::set<std::string>> slow_of;
  for (const auto& j : truth["jobs"].GetArray())
    for (const auto& n : j["slow_servers"].GetArray()) slow_of[j["job_id"].GetString()].insert(n.GetString());
  return slow_of;
}

SmtpMailbox::SmtpMailbox(const TempDir& dir) : port_(FreePort()), mbox_(dir / "mail") {
  if (Run({"/usr/bin/python3", "-c", "import aiosmtpd"}).exit_code != 0) {
    FAIL("python3-aiosmtpd is not installed (scripts/setup.sh --test installs it)");
  }
  smtpd_ = std::make_unique<Child>(std::vector<std::string>{"/usr/bin/python3", "-m", "aiosmtpd", "-n", "-l",
                                                            "127.0.0.1:" + std::to_string(port_), "-c",
                                                            "aiosmtpd.handlers.Mailbox", mbox_},
                                   std::map<std::string, std::string>{}, dir / "smtpd.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port_); }, 20000));
}

std::vector<std::string> SmtpMailbox::Delivered() const {
  return SplitLines(Run({"/bin/sh", "-c", "ls " + mbox_ + "/new 2>/dev/null"}).out);
}

}  // namespace iosonar::test
