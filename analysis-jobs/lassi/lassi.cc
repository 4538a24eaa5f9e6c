#include "analysis-jobs/lassi/lassi.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "analysis-jobs/lib/stats.h"
#include "core/base/json.h"
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
  const uint32_t aid = job_app_[jid];
  const int64_t w = WindowIndex(t_ns);
  const bool new_window = job_cur_.size() <= jid || job_cur_[jid].w != w;
  AddInto(Slot(job_, job_cur_, jid, w), v);
  AddInto(Slot(app_, app_cur_, aid, w), v);
  if (new_window) {
    auto& js = app_jobs_[Pack(aid, w)];
    if (std::find(js.begin(), js.end(), jid) == js.end()) js.push_back(jid);
  }
}

void Accumulator::Merge(const Accumulator& o) {
  std::vector<uint32_t> map(o.names_.size());
  for (size_t i = 0; i < o.names_.size(); ++i) map[i] = Intern(o.names_[i]);
  auto remap = [&](uint64_t k) { return Pack(map[k >> 32], static_cast<int64_t>(static_cast<uint32_t>(k))); };
  for (const auto& [k, v] : o.fs_) AddInto(fs_[remap(k)], v);
  for (const auto& [k, v] : o.job_) AddInto(job_[remap(k)], v);
  for (const auto& [k, v] : o.app_) AddInto(app_[remap(k)], v);
  if (job_app_.size() < names_.size()) job_app_.resize(names_.size(), UINT32_MAX);
  for (size_t j = 0; j < o.job_app_.size(); ++j)
    if (o.job_app_[j] != UINT32_MAX && job_app_[map[j]] == UINT32_MAX) job_app_[map[j]] = map[o.job_app_[j]];
  for (const auto& [k, js] : o.app_jobs_) {
    auto& dst = app_jobs_[remap(k)];
    for (uint32_t j : js)
      if (std::find(dst.begin(), dst.end(), map[j]) == dst.end()) dst.push_back(map[j]);
  }
  for (auto* c : {&fs_cur_, &job_cur_, &app_cur_}) c->clear();  // map lookups may have moved nothing, but be safe
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

void Accumulator::EmitRows(const Grouped& grouped, int64_t wfrom, std::vector<WindowRow>* rows,
                           std::vector<TargetTotal>* totals, bool per_fs_avg, bool is_app) const {
  // per_fs_avg: the average is over all targets' windows of the fs (apps/jobs
  // compared with the fs's application-window average, LASSi Tables 1-2).
  std::map<std::string, OpSums> fs_avg;
  if (per_fs_avg) {
    std::map<std::string, std::vector<OpSums>> all;
    for (const auto& [k, ws] : grouped)
      for (const auto& [w, v] : ws) all[k.first].push_back(*v);
    for (auto& [fs, v] : all) fs_avg[fs] = MeanOf(v);
  }
  for (const auto& [k, ws] : grouped) {
    OpSums avg;
    if (per_fs_avg) {
      avg = fs_avg[k.first];
    } else {
      std::vector<OpSums> v;
      v.reserve(ws.size());
      for (const auto& [w, s] : ws) v.push_back(*s);
      avg = MeanOf(v);
    }
    TargetTotal tot;
    tot.fs = k.first;
    tot.target = k.second;
    for (const auto& [w, s] : ws) {
      if (w < wfrom) continue;
      WindowRow r;
      r.fs = k.first;
      r.target = k.second;
      r.start_ns = w * opt_.window_ns;
      r.x = *s;
      r.risk_oss = RiskOss(*s, avg, opt_.alpha);
      r.risk_mds = RiskMds(*s, avg, opt_.alpha);
      r.read_kb_ops = OpsQuality(s->oss[1], s->oss[0]);
      r.write_kb_ops = OpsQuality(s->oss[3], s->oss[2]);
      if (is_app) {
        auto it = ids_.find(k.first + '\x1f' + k.second);
        if (it != ids_.end()) {
          auto jt = app_jobs_.find(Pack(it->second, w));
          if (jt != app_jobs_.end())
            for (uint32_t j : jt->second) r.jobs.push_back(SplitKey(names_[j]).target);
          std::sort(r.jobs.begin(), r.jobs.end());
        }
      }
      if (totals) {
        tot.risk_oss += r.risk_oss;
        tot.risk_mds += r.risk_mds;
        tot.read_kb += s->oss[0].value_or(0);
        tot.read_ops += s->oss[1].value_or(0);
        tot.write_kb += s->oss[2].value_or(0);
        tot.write_ops += s->oss[3].value_or(0);
        for (const auto& m : s->mds) tot.meta_ops += m.value_or(0);
        if (!tot.windows) tot.first_ns = r.start_ns;
        tot.last_ns = r.start_ns + opt_.window_ns;
        ++tot.windows;
      }
      rows->push_back(std::move(r));
    }
    if (totals && tot.windows) totals->push_back(std::move(tot));
  }
}

namespace {

// LASSi Tables 1-2: per fs per op mean and c_v over the fs windows in [from, to).
template <class Grouped>
std::vector<FsStats> FsStatsOf(const Grouped& fsg, int64_t wfrom) {
  std::vector<FsStats> out;
  for (const auto& [k, ws] : fsg) {
    FsStats st;
    st.fs = k.first;
    auto add = [&](std::string_view name, auto get) {
      std::vector<double> xs;
      for (const auto& [w, s] : ws)
        if (w >= wfrom)
          if (auto v = get(*s)) xs.push_back(*v);
      if (!xs.empty()) st.ops.push_back({std::string(name), ComputeMeanCv(xs)});
    };
    for (const auto& [w, s] : ws) st.windows += w >= wfrom;
    for (size_t i = 0; i < kOssOps; ++i) add(kOssOpNames[i], [i](const OpSums& s) { return s.oss[i]; });
    for (size_t i = 0; i < kMdsOps; ++i) add(kMdsOpNames[i], [i](const OpSums& s) { return s.mds[i]; });
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace

LassiResult Accumulator::Compute() const {
  LassiResult res;
  res.opt = opt_;
  res.records = records_;
  res.records_reset = resets_;
  const int64_t wfrom = WindowIndex(opt_.from_ns);
  const auto fsg = GroupSeries(fs_);
  EmitRows(fsg, wfrom, &res.fs_windows, nullptr, false, false);
  EmitRows(GroupSeries(app_), wfrom, &res.app_windows, &res.apps, true, true);
  EmitRows(GroupSeries(job_), wfrom, &res.job_windows, &res.jobs, true, false);
  // The job's application.
  std::map<std::string, std::string> app_of;
  for (size_t j = 0; j < job_app_.size(); ++j)
    if (job_app_[j] != UINT32_MAX) app_of[names_[j]] = SplitKey(names_[job_app_[j]]).target;
  for (auto& t : res.jobs) t.app = app_of[t.fs + '\x1f' + t.target];
  for (auto& t : res.apps) t.app = t.target;
  res.fs_stats = FsStatsOf(fsg, wfrom);
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
    w.Kv("start", FormatIsoMillis(r.start_ns));
    w.Key("risk_oss");
    w.Double(r.risk_oss);
    w.Key("risk_mds");
    w.Double(r.risk_mds);
    OptNum(w, "read_kb_ops", r.read_kb_ops);
    OptNum(w, "write_kb_ops", r.write_kb_ops);
    w.Key("ops");
    w.BeginObject();
    for (size_t i = 0; i < kOssOps; ++i) OptNum(w, kOssOpNames[i].data(), r.x.oss[i]);
    for (size_t i = 0; i < kMdsOps; ++i) OptNum(w, kMdsOpNames[i].data(), r.x.mds[i]);
    w.EndObject();
    if (!r.jobs.empty()) {
      w.Key("jobs");
      w.BeginArray();
      for (const auto& j : r.jobs) w.String(j);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
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
    w.Key("risk_oss");
    w.Double(t.risk_oss);
    w.Key("risk_mds");
    w.Double(t.risk_mds);
    w.Key("read_kb");
    w.Double(t.read_kb);
    w.Key("write_kb");
    w.Double(t.write_kb);
    w.Key("read_ops");
    w.Double(t.read_ops);
    w.Key("write_ops");
    w.Double(t.write_ops);
    w.Key("meta_ops");
    w.Double(t.meta_ops);
    w.Kv("windows", static_cast<int64_t>(t.windows));
    w.Kv("first", FormatIsoMillis(t.first_ns));
    w.Kv("last", FormatIsoMillis(t.last_ns));
    w.EndObject();
  }
  w.EndArray();
}

std::string ResultToJson(const LassiResult& r, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  w.Kv("analysis", "lassi/1");
  w.Key("alpha");
  w.Double(r.opt.alpha);
  w.Kv("window_s", r.opt.window_ns / 1000000000);
  w.Kv("from", FormatIsoMillis(r.opt.from_ns));
  w.Kv("to", FormatIsoMillis(r.opt.to_ns));
  w.Kv("history_from", FormatIsoMillis(r.opt.history_from_ns));
  w.Kv("records", static_cast<int64_t>(r.records));
  w.Kv("records_reset", static_cast<int64_t>(r.records_reset));
  w.Key("fs_stats");
  w.BeginArray();
  for (const auto& s : r.fs_stats) {
    w.BeginObject();
    w.Kv("fs", s.fs);
    w.Kv("windows", static_cast<int64_t>(s.windows));
    w.Key("ops");
    w.BeginObject();
    for (const auto& o : s.ops) {
      w.Key(o.op);
      w.BeginObject();
      w.Key("mean");
      w.Double(o.stat.mean);
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
  w.EndObject();
  return out;
}

}  // namespace iosonar::lassi
