#include "analysis-jobs/worker/loop.h"

#include <chrono>
#include <ostream>
#include <thread>

#include "analysis-jobs/anomaly/screen.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "analysis-jobs/worker/worker.h"
#include "core/base/timeutil.h"
#include "redis-cache/cache.h"

namespace iosonar::worker {

namespace {

// One job taken from the queue: false on a fatal error (the queue).
bool TakeJob(const QueueItem& it, AnalysisQueue& queue, Store& store, JobDb* db, const anomaly::JobSource& src,
             const LoopOptions& opt, Destinations& dest, std::ostream& out, std::ostream& err) {
  const std::string who = "iosonar " + opt.command + ": ";
  if (it.once && queue.Analysed(it)) {  // the epilog and the poller both queued it
    out << "job " << it.job_id << ": already analysed, queued again by another source: skipped" << std::endl;
    if (Status s = queue.Done(it); !s.ok()) {
      err << who << s.ToString() << "\n";
      return false;
    }
    return true;
  }
  anomaly::JobSource js = src;
  js.cluster = it.cluster;
  if (db && opt.reread_forwarding_map)  // the map may have changed since the last job: read it again
    if (auto f = db->ForwardingMap(); f.ok()) {
      js.node_fwd.clear();
      for (const auto& [n, fw] : *f) js.node_fwd[n] = fw;
    }
  auto res = AnalyzeFinishedJob(store, it.job_id, js, anomaly::Options{}, opt.host);
  if (!res.ok()) {
    err << who << "job " << it.job_id << ": " << res.status().ToString() << "\n";
    if (Status s = queue.Fail(it, res.status().ToString()); !s.ok()) err << who << s.ToString() << "\n";
    return true;
  }
  if (dest.has_output()) dest.Send(res->records);
  if (res->summary) dest.Cache(cache::JobSummaryKey(it.job_id), analysis::SummaryToJson(*res->summary, false));
  if (res->phases) dest.Cache(cache::JobPhasesKey(it.job_id), analysis::PhasesToJson(*res->phases));
  if (res->anomaly) dest.Cache(cache::JobResultKey(it.job_id, "anomaly"), anomaly::ToJson(*res->anomaly, false));
  dest.WithJob(it.job_id, it.cluster, [&](JobDb& d, const JobRecord& job) { return WriteJobOutputs(d, job, *res); });
  out << res->Line() << std::endl;
  if (Status s = queue.Done(it, /*analysed=*/true); !s.ok()) {
    err << who << s.ToString() << "\n";
    return false;
  }
  return true;
}

// The screenings due now: -1 on a fatal error (the state), 1 when a
// screening failed, else 0.
int ScreenDue(Store& store, const LoopOptions& opt, Destinations& dest, std::ostream& out, std::ostream& err) {
  const std::string who = "iosonar " + opt.command + ": ";
  auto st = anomaly::LoadScreenState(opt.screen_state);
  if (!st.ok()) {
    err << who << "--screen-state: " << st.status().ToString() << "\n";
    return -1;
  }
  int rc = 0;
  const auto due = DueScreenings(st->to_ns, NowNs(), opt.screen_every_ns);
  for (auto [from, to] : due) {
    auto res = anomaly::Screen(store, from, to, opt.peaks, anomaly::ScreenOptions{}, &*st);
    if (!res.ok()) {
      err << who << "screening: " << res.status().ToString() << "\n";
      rc = 1;
      break;
    }
    if (dest.has_output()) dest.Send(anomaly::ScreenToRecords(*res, opt.host));
    dest.WithJobDb([&](JobDb& d) { return anomaly::WriteOccurrencesToDb(d.conn(), *res); });
    if (!opt.alert.to.empty()) {
      int sent = 0;
      if (Status s = anomaly::AlertOccurrences(res->occurrences, opt.alert, &st->alerted, &sent); !s.ok())
        err << who << "alert: " << s.ToString() << "\n";
    }
    out << "screened " << FormatIsoMillis(from) << " .. " << FormatIsoMillis(to) << ": " << res->occurrences.size()
        << " occurrence(s)" << std::endl;
  }
  if (Status s = due.empty() ? Status::Ok() : anomaly::SaveScreenState(opt.screen_state, *st); !s.ok()) {
    err << who << "--screen-state: " << s.ToString() << "\n";
    return -1;
  }
  return rc;
}

}  // namespace

int RunWorker(AnalysisQueue& queue, Store& store, JobDb* db, const anomaly::JobSource& src, const LoopOptions& opt,
              Destinations& dest, const volatile std::sig_atomic_t* stop, std::ostream& out, std::ostream& err) {
  auto stopped = [stop] { return stop && *stop; };
  int rc = 0;
  while (!stopped()) {
    auto items = queue.List();
    if (!items.ok()) {
      err << "iosonar " << opt.command << ": " << items.status().ToString() << "\n";
      return 1;
    }
    for (const auto& it : *items) {
      if (stopped()) break;
      if (!TakeJob(it, queue, store, db, src, opt, dest, out, err)) return 1;
    }
    if (!opt.screen_state.empty() && !stopped()) {
      const int s = ScreenDue(store, opt, dest, out, err);
      if (s < 0) return 1;
      if (s > 0) rc = 1;
    }
    if (!opt.follow) break;
    for (int64_t slept = 0; slept < opt.poll_ns && !stopped(); slept += 50000000)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return rc;
}

}  // namespace iosonar::worker
