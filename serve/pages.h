// The server-rendered pages of `iosonar serve` and the JSON of the job list.
// Everything that comes from users or the job database (job names, commands,
// paths, user names) is HTML-escaped; data for the charts travels as JSON
// fetched from the API by /static/iosonar.js (no inline script: the
// Content-Security-Policy forbids it).
#pragma once
#include <array>
#include <limits>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis-jobs/job-summary/job_meta.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/report/report.h"
#include "core/base/status.h"
#include "serve/diagnosis.h"
#include "serve/identity.h"

namespace iosonar::serve {

// One job of "my jobs": the job database's row and, when the job has been
// summarized (Redis cache or job_summary), its numbers.
struct ListedJob {
  std::string job_id, cluster, user, name, state;
  std::optional<int64_t> start_ns, end_ns, nodes;
  bool summarized = false;
  uint64_t read_bytes = 0, write_bytes = 0;
  double bandwidth = 0;   // read + write average bandwidth, bytes/s
  std::string mode;       // "write N-1, read none"
  std::optional<std::string> verdict;  // the advice kinds, or "no issue found" (needs the full summary)
  std::string cluster_query;  // "" or "?cluster=NAME" (a job of another cluster than the default): links
};

std::string JobListJson(const std::vector<ListedJob>& jobs);

// The job list's filters and page, as the URL gives them (/jobs?user=U&state=S
// &verdict=V&from=YYYY-MM-DD&to=YYYY-MM-DD&page=N&sort=K&order=asc|desc):
// they narrow what the caller may see, never widen it.
struct ListQuery {
  // As given ("" = any); to is inclusive (a day); verdict anomalous, normal,
  // too-few (job_anomaly's not_enough_history) or none (not analysed).
  std::string user, state, verdict, from, to;
  size_t page = 1;                             // pages of --list-limit jobs, latest start first
  std::string sort;
  bool desc = true;
};
// Parses and checks the query; an Invalid status names the parameter.
Result<ListQuery> ParseListQuery(const std::map<std::string, std::string>& query);
// "?user=...&amp;page=N..." (HTML-escaped, for an href) of q on page `page`; "" when nothing is set.
std::string ListLink(const ListQuery& q, size_t page);
// sort: job, start, bytes, bandwidth, mode, verdict, name, user, state (default start); desc order.
void SortJobs(std::vector<ListedJob>* jobs, const std::string& sort, bool desc);
// more: a next page exists.
std::string JobsPage(const Identity& who, const std::vector<ListedJob>& jobs, const ListQuery& q, bool more);

std::string AnomalyJson(const AnomalyView& a);
// The stored codes in words for pages (the JSON keeps the codes):
// a verdict (normal, anomalous, not_enough_history), a neighbour's
// comma-separated evidence (high_mdops, high_bw, high_iops, n1_mode) and a
// server kind (ost, forwarding). An unknown code is shown without '_'.
std::string VerdictText(const std::string& verdict);
std::string EvidenceText(const std::string& evidence);
std::string ServerKindText(const std::string& kind);

// cluster_query: "" or "?cluster=NAME", added to the links of the job and its neighbours (same cluster).
// diagnosis: Diagnose()'s findings, shown first.
std::string JobPage(const Identity& who, const analysis::JobMeta& meta, const analysis::JobSummary& s,
                    const std::vector<Diagnosis>& diagnosis, const AnomalyView* anomaly = nullptr,
                    const std::string& cluster_query = "");

// What the administrators' page lists of the anomaly detection: open system
// occurrences (open_server_anomalies) and the latest anomalous jobs.
struct AnomalyBoard {
  struct Occurrence {
    std::string kind, server, start, end, alerted;
    double duration_s = 0, max_bw_ratio = 0;
  };
  struct Job {
    std::string cluster, job_id, computed;
    double slowdown = 0;
  };
  std::vector<Occurrence> open;
  std::vector<Job> jobs;
};
std::string AnomalyBoardJson(const AnomalyBoard& b);

// Hourly peak load of one server over a day (Beacon Fig. 5): the largest
// bytes/s of its records in each hour (0 when it has none). For OSTs also
// where sampled (NaN: no record of that kind in the hour): the largest IOPS
// (oss.read_ops + write_ops a second), the mean disk I/O time of the hour's
// I/Os (brw_stats io_time_ms, each I/O at its bucket's lower bound) and the
// largest ost_io request wait of its OSS (oss.ost_io_wait_ns).
struct HeatRow {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string name;
  std::array<double, 24> peak{};
  std::array<double, 24> iops = Unsampled(), io_ms = Unsampled(), wait_ms = Unsampled();
  static std::array<double, 24> Unsampled() {
    std::array<double, 24> a;
    a.fill(kNone);
    return a;
  }
};
struct Heatmap {
  int64_t day_start_ns = 0;
  std::vector<HeatRow> osts, forwarding;
};
std::string HeatmapJson(const Heatmap& h);
// Reads back what HeatmapJson wrote (a cached heatmap).
Result<Heatmap> HeatmapFromJson(std::string_view json);
// The jobs that shared a forwarding node / an OST with a job during its run
// (Beacon's interference suspects; administrators only).
struct Neighbours {
  std::vector<JobRecord> forwarding, osts;
};
std::string NeighboursJson(const std::string& job, const Neighbours& n);
// job: "" or a job the administrator asked for; n: its neighbours (when job is set and known).
// default_cluster: the service's --cluster (links to jobs of others carry ?cluster=);
// job_query: "" or "?cluster=NAME" of the job asked for.
std::string AdminPage(const Identity& who, const Heatmap& h, const std::string& day, const std::string& job,
                      const Neighbours* n = nullptr, const AnomalyBoard* board = nullptr,
                      const std::string& default_cluster = "", const std::string& job_query = "");

std::string ErrorPage(int status, const std::string& message);

// A page's root-relative URLs (href="/...", src="/...", action="/...": all a
// page of ours has; what users typed is escaped and cannot look like one)
// under base ("/iosonar"), for a service mounted under a path prefix.
std::string WithBasePath(std::string html, const std::string& base);

// A heat map cell's level (Beacon Fig. 5's legend) from its peak v against the
// largest peak top of the map: "idle" (v = 0), "low" (below top/3), "mid"
// (below 2 top/3), "high".
std::string HeatLevel(double v, double top);

// Bytes as "1.5 GiB", rates as "1.5 GiB/s".
std::string HumanBytes(double b);

}  // namespace iosonar::serve
