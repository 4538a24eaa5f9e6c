// What the tests of the simulator's diagnoses share: the simulated names of
// servers, the screening command over the simulated two hours, a --peak file
// and the truth file's slow servers per job (the simulator's --truth, written
// outside the code under test), and the SMTP server their alerts go to.
#pragma once
#include <rapidjson/document.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "test/testutil/testutil.h"

namespace iosonar::test {

// The simulator's names: "simfs-OST%04x" and "fwd%03d".
std::string SimOstName(int ost);
std::string SimFwdName(int fwd);

// `iosonar screen --store STORE --from 2026-11-22T00:00:00Z --to TO` and then
// `more` (the simulated runs start at 2026-11-22 00:00).
std::vector<std::string> ScreenArgs(const std::string& store, std::vector<std::string> more,
                                    const std::string& to = "2026-11-22T02:00:00Z");

// `iosonar anomaly JOB --store STORE --apps DIR/apps.tsv --maps DIR/maps.json --format json`.
std::vector<std::string> AnomalyArgs(const std::string& job, const std::string& store, const std::string& dir);

// A --peak file's text: each of the first `osts` OSTs at ost_peak bytes/s,
// then each of the first `fwd` forwarding nodes at fwd_peak.
std::string PeaksText(int osts, const std::string& ost_peak, int fwd = 0, const std::string& fwd_peak = "");

// The parsed output of a run that printed one JSON object (REQUIRE'd).
rapidjson::Document JsonObject(const std::string& text);

// maps["layouts"]: how many of JOB's files start on each OST, and the OST
// with the most of them (-1 if none).
std::map<int, int> FilesPerOst(const rapidjson::Value& maps, const std::string& job);
int MostFiles(const std::map<int, int>& files_on);

// truth["jobs"]: each job's id -> its slow_servers.
std::map<std::string, std::set<std::string>> SlowServersOf(const rapidjson::Value& truth);

// A real SMTP server (python3-aiosmtpd, FAILs if it is missing) on a free
// loopback port, writing each message it accepts into the Maildir DIR/mail.
class SmtpMailbox {
 public:
  explicit SmtpMailbox(const TempDir& dir);
  std::string url() const { return "smtp://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> Delivered() const;  // the messages' file names
  std::string Read(const std::string& name) const { return ReadFile(mbox_ + "/new/" + name); }

 private:
  int port_;
  std::string mbox_;
  std::unique_ptr<Child> smtpd_;
};

}  // namespace iosonar::test
