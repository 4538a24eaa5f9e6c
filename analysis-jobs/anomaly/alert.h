// Alerts to the administrators (Beacon §4.2): one e-mail per system anomaly
// occurrence that has lasted at least `after` (Beacon: 96 hours), and one per
// large job (>= job_nodes nodes) with lagging forwarding nodes or OSTs;
// never twice for the same occurrence or job (the ids already alerted are
// kept by the caller: the screening state, an alert state file). Each mail
// carries the evidence and the command that shows more.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analysis-jobs/anomaly/anomaly.h"
#include "analysis-jobs/anomaly/screen.h"
#include "core/base/status.h"
#include "core/transport/smtp.h"

namespace iosonar::anomaly {

struct AlertOptions {
  SmtpOptions smtp;
  std::string from;             // sender address
  std::vector<std::string> to;  // administrators
  int64_t after_ns = 96ll * 3600 * 1000000000;
  int64_t job_nodes = 1024;
  std::string store;            // named in the command that shows more
};

// Sends what is due and not in *alerted; adds what was sent to *alerted and
// counts it in *sent. Stops at the first failure (what was sent stays recorded).
Status AlertOccurrences(const std::vector<Occurrence>& occ, const AlertOptions& opt, std::set<std::string>* alerted,
                        int* sent);
Status AlertJob(const AnomalyResult& r, const AlertOptions& opt, std::set<std::string>* alerted, int* sent);

// Alert ids, one a line (a missing file is an empty set); written 0600 atomically.
Result<std::set<std::string>> LoadAlerted(const std::string& path);
Status SaveAlerted(const std::string& path, const std::set<std::string>& ids);

}  // namespace iosonar::anomaly
