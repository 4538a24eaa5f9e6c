// Where a simulation goes besides the embedded store: a record sink, and the
// job database (the jobs and maps an administrator's tools would write).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "analysis-jobs/simulate/simulate.h"
#include "core/jobdb/hostlist.h"

namespace iosonar::sim {

Status SimulateToSink(const Config& cfg, RecordSink& sink, SimResult* result) {
  std::string buf;
  uint64_t n = 0;
  Status st = Simulate(cfg, [&](std::string_view line) -> Status {
    buf.append(line);
    buf.push_back('\n');
    if (++n >= 4096) {
      Status s = sink.Send(buf, n);
      buf.clear();
      n = 0;
      return s;
    }
    return Status::Ok();
  }, result);
  if (st.ok() && n) st = sink.Send(buf, n);
  if (st.ok()) st = sink.Flush();
  return st;
}

namespace {

// The simulated job k as the scheduler would report it.
Result<JobRecord> JobOf(const Config& cfg, const JobTruth& t, const JobSpec& s) {
  JobRecord j;
  j.cluster = cfg.cluster;
  char* end = nullptr;
  j.job_id = std::strtoull(t.id.c_str(), &end, 10);
  if (t.id.empty() || *end) return Status::Invalid("--mysql needs numeric job ids, not '" + t.id + "'");
  j.user = s.user;
  j.name = s.name;
  j.command = CommandOf(s);
  j.node_list = CompressHostlist(t.nodes);
  j.node_count = static_cast<int64_t>(t.nodes.size());
  j.task_count = static_cast<int64_t>(t.nodes.size()) * s.procs_per_node;
  j.submit_ns = t.start_ns;
  j.start_ns = t.start_ns;
  j.end_ns = t.end_ns;
  j.state = "COMPLETED";
  j.exit_code = 0;
  j.source = "sacct";
  return j;
}

}  // namespace

Status WriteToJobDb(JobDb& db, const Config& cfg, const SimResult& r) {
  if (Status s = db.Migrate(); !s.ok()) return s;
  for (size_t k = 0; k < r.jobs.size() && k < cfg.jobs.size(); ++k) {
    auto j = JobOf(cfg, r.jobs[k], cfg.jobs[k]);
    if (!j.ok()) return j.status();
    if (Status st = db.Upsert(*j); !st.ok()) return st;
    for (const auto& [o, b] : r.jobs[k].ost_bytes)
      if (Status st = db.AddJobOst(cfg.cluster, j->job_id, cfg.fs, OstName(cfg.fs, o)); !st.ok()) return st;
  }
  std::vector<std::pair<std::string, std::string>> fwd, osts;
  for (int n = 0; n < cfg.nodes; ++n) fwd.emplace_back(NodeName(n), FwdName(FwdOf(cfg, n)));
  if (Status s = db.PutForwardingNodes(fwd); !s.ok()) return s;
  for (int o = 0; o < cfg.osts; ++o) {
    char oss[16];
    std::snprintf(oss, sizeof oss, "oss%03d", o / std::max(1, cfg.osts_per_oss));
    osts.emplace_back(OstName(cfg.fs, o), oss);
  }
  if (Status s = db.PutFilesystemOsts(cfg.fs, osts); !s.ok()) return s;
  std::vector<FileLayoutRow> layouts;
  for (const auto& L : r.layouts) {
    FileLayoutRow row;
    row.cluster = cfg.cluster;
    row.job_id = static_cast<uint64_t>(std::strtoll(L.job_id.c_str(), nullptr, 10));
    row.filesystem = cfg.fs;
    row.path = L.path;
    row.stripe_size = L.stripe_size;
    row.osts = L.osts;
    row.mdt = L.mdt;
    layouts.push_back(std::move(row));
  }
  return db.PutFileLayouts(layouts);
}

}  // namespace iosonar::sim
