#include "analysis-jobs/lassi/lassi.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "analysis-jobs/lib/stats.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::lassi {

const std::array<FieldId, kOssOps> kOssFields = {field::kOssReadBytes, field::kOssReadOps, field::kOssWriteBytes,
                                                 field::kOssWriteOps, field::kOssOtherOps};
const std::array<FieldId, kMdsOps> kMdsFields = {
    field::kMdsOpen, field::kMdsClose, field::kMdsGetattr, field::kMdsSetattr, field::kMdsMkdir, field::kMdsRmdir,
    field::kMdsMknod, field::kMdsLink, field::kMdsUnlink, field::kMdsRename, field::kMdsGetxattr, field::kMdsSetxattr,
    field::kMdsStatfs, field::kMdsSync, field::kMdsCrossdirRename, field::kMdsSamedirRename};

double RiskTerm(std::optional<double> x, std::optional<double> avg, double alpha) {
  if (!x || !avg || !(*avg > 0) || !(alpha > 0)) return 0;
  const double scaled = alpha * *avg;
  const double r = (*x - scaled) / scaled;
  return r > 0 ? r : 0;
}

double RiskOss(const OpSums& x, const OpSums& avg, double alpha) {
  double s = 0;
  for (size_t i = 0; i < kOssOps; ++i) s += RiskTerm(x.oss[i], avg.oss[i], alpha);
  return s;
}

double RiskMds(const OpSums& x, const OpSums& avg, double alpha) {
  double s = 0;
  for (size_t i = 0; i < kMdsOps; ++i) s += RiskTerm(x.mds[i], avg.mds[i], alpha);
  return s;
}

std::optional<double> OpsQuality(std::optional<double> ops, std::optional<double> kb) {
  if (!ops || !kb || !(*kb > 0)) return std::nullopt;
  return *ops * 1024.0 / *kb;
}

OpSums MeanOf(std::span<const OpSums> windows) {
  std::array<double, kOssOps> so{};
  std::array<size_t, kOssOps> no{};
  std::array<double, kMdsOps> sm{};
  std::array<size_t, kMdsOps> nm{};
  for (const auto& w : windows) {
    for (size_t i = 0; i < kOssOps; ++i)
      if (w.oss[i]) so[i] += *w.oss[i], ++no[i];
    for (size_t i = 0; i < kMdsOps; ++i)
      if (w.mds[i]) sm[i] += *w.mds[i], ++nm[i];
  }
  OpSums m;
  for (size_t i = 0; i < kOssOps; ++i)
    if (no[i]) m.oss[i] = so[i] / static_cast<double>(no[i]);
  for (size_t i = 0; i < kMdsOps; ++i)
    if (nm[i]) m.mds[i] = sm[i] / static_cast<double>(nm[i]);
  return m;
}

MeanCv ComputeMeanCv(std::span<const double> xs) {
  MeanCv m;
  m.n = xs.size();
  if (xs.empty()) return m;
  double s = 0;
  for (double x : xs) s += x;
  m.mean = s / static_cast<double>(xs.size());
  if (xs.size() < 2 || m.mean == 0) return m;
  double ss = 0;
  for (double x : xs) ss += (x - m.mean) * (x - m.mean);
  m.cv = std::sqrt(ss / static_cast<double>(xs.size() - 1)) / m.mean;
  return m;
}

// Pearson and the incomplete beta come from analysis-jobs/lib/stats.h (one
// implementation, checked against scipy in test_badost and test_lassi).
double RegularizedIncompleteBeta(double a, double b, double x) { return analysis::stats::RegularizedIncompleteBeta(a, b, x); }

Pearson ComputePearson(std::span<const double> x, std::span<const double> y) {
  Pearson p;
  p.n = std::min(x.size(), y.size());
  const analysis::stats::PearsonResult s = analysis::stats::Pearson(x, y);
  if (!s.ok) return p;  // fewer than 2 pairs, or a constant column: r undefined
  p.r = s.r;
  if (p.n >= 3) p.p = s.p;
  return p;
}

// --- accumulation -------------------------------------------------------------
static void AddInto(OpSums& dst, const OpSums& v) {
  for (size_t i = 0; i < kOssOps; ++i)
    if (v.oss[i]) dst.oss[i] = dst.oss[i].value_or(0) + *v.oss[i];
  for (size_t i = 0; i < kMdsOps; ++i)
    if (v.mds[i]) dst.mds[i] = dst.mds[i].value_or(0) + *v.mds[i];
}

uint32_t Accumulator::Intern(std::string_view key) {
  buf_.assign(key);
  auto it = ids_.find(buf_);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(buf_);
  ids_.emplace(buf_, id);
  return id;
}

int64_t Accumulator::WindowIndex(int64_t t_ns) const {
  int64_t w = t_ns / opt_.window_ns;
  if (t_ns < 0 && t_ns % opt_.window_ns) --w;
  return w;
}

OpSums& Accumulator::Slot(std::unordered_map<uint64_t, OpSums>& m, std::vector<Cursor>& cur, uint32_t id,
                          int64_t w) {
  if (cur.size() <= id) cur.resize(names_.size());
  Cursor& c = cur[id];
  if (c.w != w) {
    c.w = w;
    c.sums = &m[Pack(id, w)];  // unordered_map nodes are stable: the pointer survives rehashing
  }
  return *c.sums;
}

uint32_t Accumulator::ServerSeries(std::string_view fs) { return Intern(fs); }

uint32_t Accumulator::JobSeries(std::string_view fs, std::string_view job, std::string_view app) {
  std::string k(fs);
  k += '\x1f';
  const size_t base = k.size();
  k += job;
  const uint32_t jid = Intern(k);
  k.resize(base);
  if (app.empty()) k += "job ", k += job;
  else k += app;
  const uint32_t aid = Intern(k);
  if (job_app_.size() <= jid) job_app_.resize(names_.size(), UINT32_MAX);
  if (job_app_[jid] == UINT32_MAX) job_app_[jid] = aid;
  return jid;
}

void Accumulator::AddServerAt(uint32_t series, int64_t t_ns, const OpSums& v) {
  ++records_;
  if (t_ns < opt_.history_from_ns || t_ns >= opt_.to_ns) return;
  AddInto(Slot(fs_, fs_cur_, series, WindowIndex(t_ns)), v);
}

void Accumulator::AddJobAt(uint32_t jid, int64_t t_ns, const OpSums& v) {
  ++records_;
  if (t_ns < opt_.history_from_ns || t_ns >= opt_.to_ns) return;
  AddInto(Slot(job_, job_cur_, jid, WindowIndex(t_ns)), v);
}

void Accumulator::SetJobRun(std::string_view job, int64_t start_ns, int64_t end_ns) {
  if (end_ns > start_ns) runs_[std::string(job)] = {start_ns, end_ns};
}

void Accumulator::Merge(const Accumulator& o) {
  std::vector<uint32_t> map(o.names_.size());
  for (size_t i = 0; i < o.names_.size(); ++i) map[i] = Intern(o.names_[i]);
  auto remap = [&](uint64_t k) { return Pack(map[k >> 32], static_cast<int64_t>(static_cast<uint32_t>(k))); };
  for (const auto& [k, v] : o.fs_) AddInto(fs_[remap(k)], v);
  for (const auto& [k, v] : o.job_) AddInto(job_[remap(k)], v);
  if (job_app_.size() < names_.size()) job_app_.resize(names_.size(), UINT32_MAX);
  for (size_t j = 0; j < o.job_app_.size(); ++j)
    if (o.job_app_[j] != UINT32_MAX && job_app_[map[j]] == UINT32_MAX) job_app_[map[j]] = map[o.job_app_[j]];
  for (const auto& [j, r] : o.runs_) runs_.emplace(j, r);
  for (auto* c : {&fs_cur_, &job_cur_}) c->clear();  // map lookups may have moved nothing, but be safe
  records_ += o.records_;
  resets_ += o.resets_;
}

void Accumulator::AddServer(std::string_view fs, int64_t t_ns, const OpSums& v) {
  AddServerAt(ServerSeries(fs), t_ns, v);
}

void Accumulator::AddJob(std::string_view fs, std::string_view job, std::string_view app, int64_t t_ns,
                         const OpSums& v) {
  AddJobAt(JobSeries(fs, job, app), t_ns, v);
}

namespace {
struct Split {
  std::string fs, target;
};
Split SplitKey(const std::string& k) {
  auto p = k.find('\x1f');
  if (p == std::string::npos) return {k, ""};
  return {k.substr(0, p), k.substr(p + 1)};
}
}  // namespace

Accumulator::Grouped Accumulator::GroupSeries(const std::unordered_map<uint64_t, OpSums>& m) const {
  Grouped out;
  for (const auto& [k, v] : m) {
    auto s = SplitKey(names_[k >> 32]);
    out[{s.fs, s.target}].emplace_back(static_cast<int64_t>(static_cast<uint32_t>(k)), &v);
  }
  for (auto& [k, v] : out) std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return out;
}

const BaselineFs* Baseline::Find(std::string_view fs_name) const {
  for (const auto& f : fs)
    if (f.fs == fs_name) return &f;
  return nullptr;
}

struct Accumulator::Filled {
  using Key = std::pair<std::string, std::string>;  // (fs, job or application)
  std::map<Key, std::map<int64_t, OpSums>> jobs, apps;
  std::map<Key, std::map<int64_t, std::vector<std::string>>> app_jobs;  // the jobs running in an app window
  std::map<Key, std::string> app_of_job;
};

Accumulator::Filled Accumulator::FillRuns() const {
  Filled f;
  // The ops each file system's job_stats carry at all: in a run's window a
  // carried op without a record is 0 (job_stats list only changed counters).
  std::map<std::string, std::pair<std::array<bool, kOssOps>, std::array<bool, kMdsOps>>> carried;
  std::map<uint32_t, std::vector<std::pair<int64_t, const OpSums*>>> by_job;
  for (const auto& [k, v] : job_) {
    const uint32_t jid = static_cast<uint32_t>(k >> 32);
    by_job[jid].emplace_back(static_cast<int64_t>(static_cast<uint32_t>(k)), &v);
    auto& c = carried[SplitKey(names_[jid]).fs];
    for (size_t i = 0; i < kOssOps; ++i) c.first[i] = c.first[i] || v.oss[i].has_value();
    for (size_t i = 0; i < kMdsOps; ++i) c.second[i] = c.second[i] || v.mds[i].has_value();
  }
  const int64_t wlo = WindowIndex(opt_.history_from_ns), whi = WindowIndex(opt_.to_ns - 1);
  for (auto& [jid, ws] : by_job) {
    const Split js = SplitKey(names_[jid]);
    const std::string app = job_app_.size() > jid && job_app_[jid] != UINT32_MAX ? SplitKey(names_[job_app_[jid]]).target
                                                                                  : "job " + js.target;
    const auto& c = carried[js.fs];
    auto& series = f.jobs[{js.fs, js.target}];
    for (const auto& [w, v] : ws) series[w] = *v;
    auto fill = [&](int64_t from, int64_t to) {  // windows [from, to], clipped to the history
      for (int64_t w = std::max(from, wlo); w <= std::min(to, whi); ++w) {
        OpSums& x = series[w];
        for (size_t i = 0; i < kOssOps; ++i)
          if (c.first[i] && !x.oss[i]) x.oss[i] = 0;
        for (size_t i = 0; i < kMdsOps; ++i)
          if (c.second[i] && !x.mds[i]) x.mds[i] = 0;
      }
    };
    std::vector<int64_t> wins;
    for (const auto& [w, v] : ws) wins.push_back(w);
    std::sort(wins.begin(), wins.end());
    // Runs without scheduler data: consecutive record windows, a silence of at
    // most max_silent_ns between them filled with zeros.
    const int64_t max_gap = opt_.max_silent_ns / opt_.window_ns;
    size_t k = 0;
    while (k < wins.size()) {
      size_t e = k;
      while (e + 1 < wins.size() && wins[e + 1] - wins[e] - 1 <= max_gap) ++e;
      fill(wins[k], wins[e]);
      k = e + 1;
    }
    if (auto r = runs_.find(js.target); r != runs_.end())
      fill(WindowIndex(r->second.first), WindowIndex(r->second.second - 1));
    f.app_of_job[{js.fs, js.target}] = app;
    auto& as = f.apps[{js.fs, app}];
    auto& aj = f.app_jobs[{js.fs, app}];
    for (const auto& [w, x] : series) {
      AddInto(as[w], x);
      aj[w].push_back(js.target);
    }
  }
  for (auto& [k, m] : f.app_jobs)
    for (auto& [w, v] : m) std::sort(v.begin(), v.end());
  return f;
}

Baseline Accumulator::BaselineOf(const Filled& f) const {
  Baseline b;
  b.fallback = true;
  b.source = "analysed range";
  b.from_ns = opt_.history_from_ns;
  b.to_ns = opt_.to_ns;
  b.window_ns = opt_.window_ns;
  // avg_fs per application-hour, the application being one run (LASSi §3.3:
  // "per application per hour", statistics attributed "to individual
  // application launches"): the mean over the run windows, concurrent runs
  // of one command never summed first.
  std::map<std::string, std::vector<OpSums>> per_fs;
  for (const auto& [k, ws] : f.jobs)
    for (const auto& [w, x] : ws) per_fs[k.first].push_back(x);
  for (auto& [fs, xs] : per_fs) b.fs.push_back({fs, xs.size(), MeanOf(xs)});
  return b;
}

Baseline Accumulator::ComputeBaseline() const {
  Baseline b = BaselineOf(FillRuns());
  b.fallback = false;
  b.source.clear();
  return b;
}

namespace {

WindowRow RowOf(const std::string& fs, const std::string& target, int64_t start_ns, const OpSums& x, const OpSums& avg,
                double alpha) {
  WindowRow r;
  r.fs = fs;
  r.target = target;
  r.start_ns = start_ns;
  r.x = x;
  r.risk_oss = RiskOss(x, avg, alpha);
  r.risk_mds = RiskMds(x, avg, alpha);
  r.read_kb_ops = OpsQuality(x.oss[1], x.oss[0]);
  r.write_kb_ops = OpsQuality(x.oss[3], x.oss[2]);
  return r;
}

void AddToTotal(TargetTotal& tot, const WindowRow& r, int64_t window_ns) {
  tot.risk_oss += r.risk_oss;
  tot.risk_mds += r.risk_mds;
  tot.read_kb += r.x.oss[0].value_or(0);
  tot.read_ops += r.x.oss[1].value_or(0);
  tot.write_kb += r.x.oss[2].value_or(0);
  tot.write_ops += r.x.oss[3].value_or(0);
  for (const auto& m : r.x.mds) tot.meta_ops += m.value_or(0);
  if (!tot.windows) tot.first_ns = r.start_ns;
  tot.last_ns = r.start_ns + window_ns;
  ++tot.windows;
}

// LASSi Tables 1-2: per op mean and c_v over a file system's windows (application-hours, or server windows).
FsStats StatsOf(const std::string& fs, const std::vector<const OpSums*>& ws, bool per_app_hour) {
  FsStats st;
  st.fs = fs;
  st.windows = ws.size();
  st.per_app_hour = per_app_hour;
  auto add = [&](std::string_view name, auto get) {
    std::vector<double> xs;
    for (const OpSums* s : ws)
      if (auto v = get(*s)) xs.push_back(*v);
    if (!xs.empty()) st.ops.push_back({std::string(name), ComputeMeanCv(xs)});
  };
  for (size_t i = 0; i < kOssOps; ++i) add(kOssOpNames[i], [i](const OpSums& s) { return s.oss[i]; });
  for (size_t i = 0; i < kMdsOps; ++i) add(kMdsOpNames[i], [i](const OpSums& s) { return s.mds[i]; });
  return st;
}

}  // namespace

LassiResult Accumulator::Compute() const {
  LassiResult res;
  res.opt = opt_;
  res.records = records_;
  res.records_reset = resets_;
  const int64_t wfrom = WindowIndex(opt_.from_ns);
  const Filled f = FillRuns();
  const Baseline range = BaselineOf(f);
  res.baseline = opt_.baseline ? *opt_.baseline : range;
  // avg_fs of a file system: the baseline's, else the analysed range's (and say so).
  std::set<std::string> fallback;
  auto avg_of = [&](const std::string& fs) -> OpSums {
    if (const BaselineFs* b = res.baseline.Find(fs)) return b->avg;
    if (!res.baseline.fallback) fallback.insert(fs);
    const BaselineFs* b = range.Find(fs);
    return b ? b->avg : OpSums{};
  };
  // Runs (jobs) first: each run window against avg_fs (LASSi's unit of
  // application is one run, §3.3). Windows before `from` count only for the
  // long-term application profiles.
  struct RunSums {  // one run's windows of a span
    size_t windows = 0;
    double risk_oss = 0, risk_mds = 0;
    OpSums sum;  // op sums over its windows (quality of the run)
  };
  std::map<Filled::Key, std::map<int64_t, std::pair<double, double>>> job_risk;  // (fs, job) -> w -> risk
  std::map<Filled::Key, std::pair<RunSums, RunSums>> run_sums;  // (fs, job) -> (history, [from, to))
  std::map<std::string, std::vector<const OpSums*>> app_hours;  // per fs, run windows in [from, to): Tables 1-2
  for (const auto& [k, ws] : f.jobs) {
    const OpSums avg = avg_of(k.first);
    TargetTotal tot;
    tot.fs = k.first;
    tot.target = k.second;
    tot.app = f.app_of_job.at(k);
    auto& jr = job_risk[k];
    auto& [hist, range_sums] = run_sums[k];
    for (const auto& [w, x] : ws) {
      WindowRow r = RowOf(k.first, k.second, w * opt_.window_ns, x, avg, opt_.alpha);
      jr[w] = {r.risk_oss, r.risk_mds};
      for (RunSums* rs : {&hist, w >= wfrom ? &range_sums : nullptr}) {
        if (!rs) continue;
        ++rs->windows;
        rs->risk_oss += r.risk_oss;
        rs->risk_mds += r.risk_mds;
        AddInto(rs->sum, x);
      }
      if (w < wfrom) continue;
      app_hours[k.first].push_back(&x);
      AddToTotal(tot, r, opt_.window_ns);
      res.job_windows.push_back(std::move(r));
    }
    if (tot.windows) res.jobs.push_back(std::move(tot));
  }
  // An application's runs: averages of per-run values.
  auto profile = [&](const std::vector<std::string>& jobs, const std::string& fs, bool in_range) {
    RunProfile p;
    double rq = 0, wq = 0;
    size_t nrq = 0, nwq = 0;
    for (const auto& j : jobs) {
      const RunSums& rs = in_range ? run_sums.at({fs, j}).second : run_sums.at({fs, j}).first;
      if (!rs.windows) continue;
      ++p.runs;
      p.run_windows += rs.windows;
      p.risk_oss += rs.risk_oss;
      p.risk_mds += rs.risk_mds;
      p.read_kb += rs.sum.oss[0].value_or(0);
      p.read_ops += rs.sum.oss[1].value_or(0);
      p.write_kb += rs.sum.oss[2].value_or(0);
      p.write_ops += rs.sum.oss[3].value_or(0);
      for (const auto& m : rs.sum.mds) p.meta_ops += m.value_or(0);
      if (auto q = OpsQuality(rs.sum.oss[1], rs.sum.oss[0])) rq += *q, ++nrq;
      if (auto q = OpsQuality(rs.sum.oss[3], rs.sum.oss[2])) wq += *q, ++nwq;
    }
    if (p.runs) {
      p.risk_oss /= static_cast<double>(p.runs);
      p.risk_mds /= static_cast<double>(p.runs);
      const double h = static_cast<double>(p.run_windows);
      for (double* v : {&p.read_kb, &p.read_ops, &p.write_kb, &p.write_ops, &p.meta_ops}) *v /= h;
    }
    if (nrq) p.read_kb_ops = rq / static_cast<double>(nrq);
    if (nwq) p.write_kb_ops = wq / static_cast<double>(nwq);
    return p;
  };
  // Applications: per window the sum of their runs' risks (the file system's
  // risk is the sum over its runs); the ops shown are the runs' sums.
  std::map<std::string, std::map<int64_t, std::pair<double, double>>> fs_app_risk;
  std::map<std::string, std::map<int64_t, std::vector<std::string>>> fs_apps;
  for (const auto& [k, ws] : f.apps) {
    TargetTotal tot;
    tot.fs = k.first;
    tot.target = tot.app = k.second;
    const auto& jobs = f.app_jobs.at(k);
    std::set<std::string> all_jobs;
    for (const auto& [w, x] : ws) {
      const auto jt = jobs.find(w);
      double ro = 0, rm = 0;
      if (jt != jobs.end())
        for (const auto& j : jt->second) {
          const auto& jr = job_risk.at({k.first, j});
          if (auto it = jr.find(w); it != jr.end()) ro += it->second.first, rm += it->second.second;
          all_jobs.insert(j);
        }
      if (w < wfrom) continue;
      WindowRow r = RowOf(k.first, k.second, w * opt_.window_ns, x, OpSums{}, opt_.alpha);
      r.risk_oss = ro;
      r.risk_mds = rm;
      if (jt != jobs.end()) r.jobs = jt->second;
      auto& fr = fs_app_risk[k.first][w];
      fr.first += r.risk_oss;
      fr.second += r.risk_mds;
      fs_apps[k.first][w].push_back(k.second);
      AddToTotal(tot, r, opt_.window_ns);
      res.app_windows.push_back(std::move(r));
    }
    const std::vector<std::string> runs(all_jobs.begin(), all_jobs.end());
    res.app_profiles.push_back({k.first, k.second, profile(runs, k.first, false)});
    if (tot.windows) {
      tot.per_run = profile(runs, k.first, true);
      res.apps.push_back(std::move(tot));
    }
  }
  // File systems: with applications, the stack of their risks in each window
  // (server windows and application windows both listed; x = the server sums);
  // without job_stats, the server windows against their own mean.
  const Grouped fsg = GroupSeries(fs_);
  std::set<std::string> all_fs;
  for (const auto& [k, ws] : fsg) all_fs.insert(k.first);
  std::set<std::string> with_apps;
  for (const auto& [k, ws] : f.apps) all_fs.insert(k.first), with_apps.insert(k.first);
  for (const std::string& fs : all_fs) {
    std::map<int64_t, const OpSums*> server;
    if (auto it = fsg.find({fs, ""}); it != fsg.end())
      for (const auto& [w, s] : it->second) server[w] = s;
    if (!with_apps.count(fs)) {
      std::vector<OpSums> all;
      for (const auto& [w, s] : server) all.push_back(*s);
      const OpSums avg = MeanOf(all);
      std::vector<const OpSums*> in_range;
      for (const auto& [w, s] : server) {
        if (w < wfrom) continue;
        WindowRow r = RowOf(fs, "", w * opt_.window_ns, *s, avg, opt_.alpha);
        r.server_basis = true;
        res.fs_windows.push_back(std::move(r));
        in_range.push_back(s);
      }
      res.fs_stats.push_back(StatsOf(fs, in_range, false));
      continue;
    }
    std::set<int64_t> windows;
    for (const auto& [w, s] : server)
      if (w >= wfrom) windows.insert(w);
    for (const auto& [w, rk] : fs_app_risk[fs]) windows.insert(w);
    static const OpSums kUnknown;
    for (int64_t w : windows) {
      auto sv = server.find(w);
      WindowRow r = RowOf(fs, "", w * opt_.window_ns, sv == server.end() ? kUnknown : *sv->second, OpSums{}, opt_.alpha);
      if (auto rk = fs_app_risk[fs].find(w); rk != fs_app_risk[fs].end()) {
        r.risk_oss = rk->second.first;
        r.risk_mds = rk->second.second;
        r.apps = fs_apps[fs][w];
      }
      res.fs_windows.push_back(std::move(r));
    }
    res.fs_stats.push_back(StatsOf(fs, app_hours[fs], true));
  }
  res.fallback_fs.assign(fallback.begin(), fallback.end());
  return res;
}

// --- JSON ---------------------------------------------------------------------
static void OptNum(JsonWriter& w, const char* k, std::optional<double> v) {
  w.Key(k);
  if (v && std::isfinite(*v)) w.Double(*v);
  else w.Null();
}

static void WriteRows(JsonWriter& w, const char* key, const std::vector<WindowRow>& rows, const char* target_key) {
  w.Key(key);
  w.BeginArray();
  for (const auto& r : rows) {
    w.BeginObject();
    w.Kv("fs", r.fs);
    if (target_key) w.Kv(target_key, r.target);
    KvAll(w, "start", FormatIsoMillis(r.start_ns), "risk_oss", r.risk_oss, "risk_mds", r.risk_mds);
    OptNum(w, "read_kb_ops", r.read_kb_ops);
    OptNum(w, "write_kb_ops", r.write_kb_ops);
    w.Key("ops");
    w.BeginObject();
    for (size_t i = 0; i < kOssOps; ++i) OptNum(w, kOssOpNames[i].data(), r.x.oss[i]);
    for (size_t i = 0; i < kMdsOps; ++i) OptNum(w, kMdsOpNames[i].data(), r.x.mds[i]);
    w.EndObject();
    for (auto [k, list] : {std::pair{"jobs", &r.jobs}, {"apps", &r.apps}}) {
      if (list->empty()) continue;
      w.Key(k);
      w.BeginArray();
      for (const auto& j : *list) w.String(j);
      w.EndArray();
    }
    if (!target_key) w.Kv("basis", r.server_basis ? "server" : "applications");
    w.EndObject();
  }
  w.EndArray();
}

static void RunProfileJson(JsonWriter& w, const RunProfile& p) {
  w.BeginObject();
  KvAll(w, "runs", static_cast<int64_t>(p.runs), "run_windows", static_cast<int64_t>(p.run_windows),
        "risk_oss", p.risk_oss, "risk_mds", p.risk_mds);
  for (auto [k, v] : {std::pair{"read_kb", p.read_kb}, {"write_kb", p.write_kb}, {"read_ops", p.read_ops},
                      {"write_ops", p.write_ops}, {"meta_ops", p.meta_ops}}) {
    w.Key(k);
    w.Double(v);
  }
  OptNum(w, "read_kb_ops", p.read_kb_ops);
  OptNum(w, "write_kb_ops", p.write_kb_ops);
  w.EndObject();
}

static void WriteTotals(JsonWriter& w, const char* key, const std::vector<TargetTotal>& ts, bool jobs) {
  w.Key(key);
  w.BeginArray();
  for (const auto& t : ts) {
    w.BeginObject();
    w.Kv("fs", t.fs);
    if (jobs) {
      w.Kv("job", t.target);
      w.Kv("app", t.app);
    } else {
      w.Kv("app", t.target);
    }
    KvAll(w, "risk_oss", t.risk_oss, "risk_mds", t.risk_mds, "read_kb", t.read_kb, "write_kb", t.write_kb,
          "read_ops", t.read_ops, "write_ops", t.write_ops, "meta_ops", t.meta_ops,
          "windows", static_cast<int64_t>(t.windows), "first", FormatIsoMillis(t.first_ns),
          "last", FormatIsoMillis(t.last_ns));
    if (!jobs) {
      w.Key("per_run");
      RunProfileJson(w, t.per_run);
    }
    w.EndObject();
  }
  w.EndArray();
}

std::string BaselineWarning(const LassiResult& r) {
  if (r.baseline.fallback)
    return "no stored LASSi baseline: avg_fs is the average per run-hour of the analysed range " +
           FormatIsoMillis(r.baseline.from_ns) + " - " + FormatIsoMillis(r.baseline.to_ns) +
           " itself, not the file system's long-term average (run `iosonar lassi baseline` over past weeks)";
  if (!r.fallback_fs.empty()) {
    std::string s = "the LASSi baseline '" + r.baseline.name + "' has no average for";
    for (const auto& f : r.fallback_fs) s += " " + f;
    return s + ": the analysed range's average is used there";
  }
  return "";
}

std::string BaselineTag(const Options& o) {
  if (o.baseline) return "stored:" + o.baseline->name + "@" + std::to_string(o.baseline->computed_at_ns);
  return "history:" + std::to_string(std::min(o.history_from_ns, o.from_ns));
}

std::string BaselineDescription(const Baseline& b) {
  if (b.fallback) return "the analysed range (no stored baseline)";
  uint64_t hours = 0;
  for (const auto& f : b.fs) hours += f.app_hours;
  return "'" + b.name + "' from " + b.source + ": " + std::to_string(hours) + " run windows of " +
         std::to_string(b.window_ns / 1000000000) + " s over " + FormatIsoMillis(b.from_ns) + " - " +
         FormatIsoMillis(b.to_ns) + ", computed " + FormatIsoMillis(b.computed_at_ns);
}

void BaselineJson(JsonWriter& w, const Baseline& b, const std::vector<std::string>* fallback_fs) {
  w.BeginObject();
  w.Kv("name", b.name);
  w.Kv("source", b.source);
  w.Key("fallback");
  w.Bool(b.fallback);
  if (b.computed_at_ns) w.Kv("computed_at", FormatIsoMillis(b.computed_at_ns));
  KvAll(w, "from", FormatIsoMillis(b.from_ns), "to", FormatIsoMillis(b.to_ns), "window_s", b.window_ns / 1000000000);
  if (fallback_fs) {
    w.Key("fallback_fs");
    w.BeginArray();
    for (const auto& f : *fallback_fs) w.String(f);
    w.EndArray();
  }
  BaselineFsJson(w, b.fs, false);
  w.EndObject();
}

void BaselineFsJson(JsonWriter& w, const std::vector<BaselineFs>& fs, bool omit_missing) {
  auto op = [&](std::string_view name, const std::optional<double>& v) {
    if (!v && omit_missing) return;
    w.Key(name);
    if (v && std::isfinite(*v)) w.Double(*v);
    else w.Null();
  };
  w.Key("fs");
  w.BeginArray();
  for (const auto& f : fs) {
    w.BeginObject();
    w.Kv("fs", f.fs);
    w.Kv("app_hours", static_cast<int64_t>(f.app_hours));
    w.Key("avg");
    w.BeginObject();
    for (size_t i = 0; i < kOssOps; ++i) op(kOssOpNames[i], f.avg.oss[i]);
    for (size_t i = 0; i < kMdsOps; ++i) op(kMdsOpNames[i], f.avg.mds[i]);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
}

std::string ResultToJson(const LassiResult& r, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  w.Kv("analysis", "lassi/1");
  // LASSi's unit of application (§3.3): risk and ops per run and window; an
  // application's (command's) and the file system's risk are sums over runs.
  KvAll(w, "unit", "run", "alpha", r.opt.alpha, "window_s", r.opt.window_ns / 1000000000,
        "from", FormatIsoMillis(r.opt.from_ns), "to", FormatIsoMillis(r.opt.to_ns),
        "history_from", FormatIsoMillis(r.opt.history_from_ns), "records", static_cast<int64_t>(r.records),
        "records_reset", static_cast<int64_t>(r.records_reset));
  w.Key("baseline");
  BaselineJson(w, r.baseline, &r.fallback_fs);
  w.Key("fs_stats");
  w.BeginArray();
  for (const auto& s : r.fs_stats) {
    w.BeginObject();
    KvAll(w, "fs", s.fs, "windows", static_cast<int64_t>(s.windows),
          "per", s.per_app_hour ? "application-hour" : "server window (no job_stats)");
    w.Key("ops");
    w.BeginObject();
    for (const auto& o : s.ops) {
      w.Key(o.op);
      w.BeginObject();
      w.Kv("mean", o.stat.mean);
      OptNum(w, "cv", o.stat.cv);
      w.Kv("n", static_cast<int64_t>(o.stat.n));
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  WriteRows(w, "fs_windows", r.fs_windows, nullptr);
  WriteRows(w, "app_windows", r.app_windows, "app");
  WriteRows(w, "job_windows", r.job_windows, "job");
  WriteTotals(w, "apps", r.apps, false);
  WriteTotals(w, "jobs", r.jobs, true);
  // The applications' long-term profiles: per-run averages over [history_from, to).
  w.Key("app_profiles");
  w.BeginArray();
  for (const auto& p : r.app_profiles) {
    w.BeginObject();
    w.Kv("fs", p.fs);
    w.Kv("app", p.app);
    w.Key("per_run");
    RunProfileJson(w, p.per_run);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace iosonar::lassi
