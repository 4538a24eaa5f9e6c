#include "analysis-jobs/anomaly/alert.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/base/timeutil.h"

namespace iosonar::anomaly {

Status AlertOccurrences(const std::vector<Occurrence>& occ, const AlertOptions& opt, std::set<std::string>* alerted,
                        int* sent) {
  for (const auto& o : occ) {
    if (o.end_ns - o.start_ns < opt.after_ns || alerted->count(o.Id())) continue;
    char line[512];
    std::snprintf(line, sizeof line,
                  "The %s %s has served at most %.0f %% of its peak bandwidth (%.0f MB/s) while busy\n"
                  "from %s to %s (%.1f hours)%s.\n",
                  o.kind == "ost" ? "OST" : "forwarding node", o.name.c_str(), 100 * o.max_bw_ratio, o.peak / 1e6,
                  FormatIsoMillis(o.start_ns).c_str(), FormatIsoMillis(o.end_ns).c_str(),
                  static_cast<double>(o.end_ns - o.start_ns) / 3.6e12, o.open ? ", and still does" : "");
    MailMessage m;
    m.from = opt.from;
    m.to = opt.to;
    m.subject = "iosonar: " + o.kind + " " + o.name + " slow for " +
                std::to_string((o.end_ns - o.start_ns) / 3600000000000ll) + " h";
    m.body = std::string(line) + "\nMore: iosonar screen --store " + opt.store + " --from " +
             FormatIsoMillis(o.start_ns) + " --to " + FormatIsoMillis(o.end_ns) +
             "\n(or SELECT * FROM open_server_anomalies in the job database)\n";
    if (Status s = SendMail(opt.smtp, m); !s.ok()) return s;
    alerted->insert(o.Id());
    ++*sent;
  }
  return Status::Ok();
}

Status AlertJob(const AnomalyResult& r, const AlertOptions& opt, std::set<std::string>* alerted, int* sent) {
  if (r.nodes < opt.job_nodes || r.server_outliers.empty()) return Status::Ok();
  const std::string id = "job:" + r.job_id;
  if (alerted->count(id)) return Status::Ok();
  std::string body = "Job " + r.job_id + " (" + std::to_string(r.nodes) + " nodes, " + r.command +
                     ") was served by lagging servers:\n";
  char line[256];
  for (const auto& o : r.server_outliers) {
    std::snprintf(line, sizeof line, "  %s %s: %.2f of its %d peers' bandwidth, the job waited ~%.0f s\n",
                  o.kind.c_str(), o.name.c_str(), o.bandwidth_ratio, o.peers, o.cost_s);
    body += line;
  }
  body += "\nMore: iosonar anomaly " + r.job_id + " --store " + opt.store + "\n";
  MailMessage m;
  m.from = opt.from;
  m.to = opt.to;
  m.subject = "iosonar: job " + r.job_id + " slowed by " + r.server_outliers[0].kind + " " + r.server_outliers[0].name;
  m.body = body;
  if (Status s = SendMail(opt.smtp, m); !s.ok()) return s;
  alerted->insert(id);
  ++*sent;
  return Status::Ok();
}

Result<std::set<std::string>> LoadAlerted(const std::string& path) {
  std::set<std::string> ids;
  std::ifstream f(path);
  if (!f) {
    if (errno == ENOENT) return ids;
    return Status::Io("cannot read " + path + ": " + std::strerror(errno));
  }
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) ids.insert(line);
  return ids;
}

Status SaveAlerted(const std::string& path, const std::set<std::string>& ids) {
  std::string out;
  for (const auto& i : ids) out += i + "\n";
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  const bool ok = ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) && ::fsync(fd) == 0;
  if (::close(fd) != 0 || !ok) return Status::Io("cannot write " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::Io("cannot rename " + tmp + " to " + path);
  return Status::Ok();
}

}  // namespace iosonar::anomaly
