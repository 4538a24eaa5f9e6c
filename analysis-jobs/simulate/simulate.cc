#include "analysis-jobs/simulate/simulate.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <unordered_map>

#include "analysis-jobs/lib/format.h"
#include "core/base/hash.h"
#include "core/collector/ingest.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"

namespace iosonar::sim {
namespace {

constexpr int64_t kSec = 1000000000;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}


// What every server/client delta record carries after its head: the file
// system, the target and the interval (1 s; @timestamp is its end).
// The interval of the records being emitted (Config::interval_s; 1 s by default).
thread_local int64_t g_interval_ns = kSec;

void ServerTarget(JsonLine& j, const std::string& fs, const std::string& target) {
  j.KStr(field::kLustreFs, fs.c_str());
  j.KStr(field::kLustreTarget, target.c_str());
  j.KInt(field::kLustreElapsedNs, g_interval_ns);
}

// A number as the exporter prints a mean: integral values without a fraction.
void Num(JsonLine& j, double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    j.Int(static_cast<int64_t>(v));
    return;
  }
  char b[32];
  const int n = std::snprintf(b, sizeof b, "%.4g", v);
  j.Raw(b, static_cast<size_t>(n));
}

// A small deterministic generator (xorshift64*), seeded through SplitMix.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(SplitMix(seed) | 1) {}
  uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  uint64_t Below(uint64_t n) { return n ? Next() % n : 0; }
};

struct Stream {
  int64_t id = 0;
  int64_t seq = 0;
};

struct FileState {
  int layout = -1;  // index into SimResult::layouts
};

struct JobState {
  const JobSpec* spec = nullptr;
  size_t truth = 0;
  int nranks = 0;
  std::vector<int> files;         // layout index per job file
  std::vector<Stream> streams;    // per rank
  std::vector<int> rank_file;     // file index (into files) per rank, -1: no I/O
  std::vector<int64_t> rank_off;  // next offset per rank (N-N)
  std::vector<int64_t> rank_end;  // where each rank's previous data op ended (-1: none yet)
  int log_layout = -1;            // JobSpec::log_bytes: the log's layout index
  int64_t log_off = 0;
  int64_t iter = 0;               // I/O seconds so far (shared-file offsets)
  // Bandwidth-bound phases (JobSpec::phase_bytes): bytes each rank has left
  // in the current phase, and the job-relative second the next phase starts.
  std::vector<int64_t> phase_left;
  int next_phase = 0;
  bool in_phase = false;
};

class Emitter {
 public:
  Emitter(const std::function<Status(std::string_view)>& out, SimResult* r, const Config& cfg)
      : out_(out), r_(r), cfg_(cfg) {}
  JsonLine& Begin(DatasetId ds, int64_t ts_ns, Stream& st, const std::string& host) {
    j_.Reset();
    skip_ = ds == dataset::kTrace    ? !cfg_.emit_trace
            : ds == dataset::kClient ? !cfg_.emit_client
            : ds == dataset::kBrw    ? !(cfg_.emit_servers && cfg_.emit_brw)
                                     : !cfg_.emit_servers;
    j_.Begin();
    j_.Key(field::kTimestamp);
    j_.IsoMillis(ts_ns);
    j_.KInt(field::kEventSeq, st.seq++);
    j_.KStr(field::kEventDataset, ds.name());
    j_.KInt(field::kEventStream, st.id);
    j_.KStr(field::kHostName, host.data(), host.size());
    dataset_ = ds.index();
    return j_;
  }
  Status End() {
    j_.Raw("}", 1);
    if (!j_.ok()) return Status::Internal("simulate: record longer than its buffer");
    if (skip_) return Status::Ok();
    r_->lines++;
    r_->bytes += j_.size() + 1;
    by_ds_[dataset_]++;
    return out_(std::string_view(buf_, j_.size()));
  }
  void Finish() {
    for (size_t i = 0; i < kDatasetCount; ++i)
      if (by_ds_[i]) r_->lines_by_dataset[std::string(kAllDatasets[i].name())] += by_ds_[i];
  }

 private:
  const std::function<Status(std::string_view)>& out_;
  SimResult* r_;
  char buf_[2048];
  JsonLine j_{buf_, sizeof buf_};
  const Config& cfg_;
  bool skip_ = false;
  size_t dataset_ = 0;                       // DatasetId::index() of the open record
  std::array<uint64_t, kDatasetCount> by_ds_{};  // lines per dataset
};

std::string MountName(const Config& cfg, int fwd) {
  char b[64];
  std::snprintf(b, sizeof b, "%s-ffff8800%08x", cfg.fs.c_str(), static_cast<unsigned>(fwd));
  return b;
}

}  // namespace

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kNN: return "N-N";
    case Mode::kN1: return "N-1";
    case Mode::kNM: return "N-M";
    case Mode::k11: return "1-1";
    case Mode::kMeta: return "meta";
  }
  return "?";
}

Result<Mode> ParseMode(std::string_view s) {
  for (Mode m : {Mode::kNN, Mode::kN1, Mode::kNM, Mode::k11, Mode::kMeta})
    if (ModeName(m) == s) return m;
  return Status::Invalid("unknown I/O mode '" + std::string(s) + "' (N-N, N-1, N-M, 1-1 or meta)");
}

std::string NodeName(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "cn%05d", i);
  return b;
}
std::string FwdName(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "fwd%03d", i);
  return b;
}
std::string OstName(const std::string& fs, int i) {
  char b[32];
  std::snprintf(b, sizeof b, "-OST%04x", static_cast<unsigned>(i));
  return fs + b;
}
std::string MdtName(const std::string& fs, int i) {
  char b[32];
  std::snprintf(b, sizeof b, "-MDT%04x", static_cast<unsigned>(i));
  return fs + b;
}
int FwdOf(const Config& cfg, int node) {
  // Contiguous blocks of compute nodes share a forwarding node (TaihuLight: 256 -> 1... here N/F).
  return static_cast<int>(static_cast<int64_t>(node) * cfg.fwd / std::max(1, cfg.nodes));
}

Config Sized(uint64_t seed, int nodes, int fwd, int osts, int duration_s, int mdts) {
  Config c;
  c.seed = seed;
  c.nodes = nodes;
  c.fwd = fwd;
  c.osts = osts;
  c.mdts = mdts;
  c.duration_s = duration_s;
  return c;
}

Result<JobSpec> ParseJobSpec(std::string_view text) {
  JobSpec j;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view kv = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) return Status::Invalid("job spec: '" + std::string(kv) + "' is not key=value");
    const std::string key(kv.substr(0, eq)), val(kv.substr(eq + 1));
    auto num = [&](int64_t* out) -> Status {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(val.c_str(), &end, 10);
      if (end == val.c_str() || errno) return Status::Invalid("job spec: " + key + "=" + val + " is not a number");
      int64_t mul = 1;
      std::string_view suf(end);
      if (suf == "K" || suf == "k") mul = 1ll << 10;
      else if (suf == "M") mul = 1ll << 20;
      else if (suf == "G") mul = 1ll << 30;
      else if (!suf.empty()) return Status::Invalid("job spec: " + key + "=" + val + " has an unknown suffix");
      if (v < 0) return Status::Invalid("job spec: " + key + "=" + val + " is negative");
      *out = static_cast<int64_t>(v) * mul;
      return Status::Ok();
    };
    int64_t v = 0;
    auto as_int = [&](int* out) -> Status {
      Status s = num(&v);
      if (s.ok() && v > INT32_MAX) return Status::Invalid("job spec: " + key + "=" + val + " is too large");
      if (s.ok()) *out = static_cast<int>(v);
      return s;
    };
    Status s;
    if (key == "id") j.id = val;
    else if (key == "user") j.user = val;
    else if (key == "name") j.name = val;
    else if (key == "mode") {
      auto m = ParseMode(val);
      if (!m.ok()) return m.status();
      j.mode = m.value();
    } else if (key == "first") s = as_int(&j.first_node);
    else if (key == "nodes") s = as_int(&j.nodes);
    else if (key == "ppn") s = as_int(&j.procs_per_node);
    else if (key == "stripes") s = as_int(&j.stripe_count);
    else if (key == "m") s = as_int(&j.m_files);
    else if (key == "start") s = as_int(&j.start_s);
    else if (key == "duration") s = as_int(&j.duration_s);
    else if (key == "period") s = as_int(&j.io_period_s);
    else if (key == "io") s = as_int(&j.io_s);
    else if (key == "bytes") s = num(&j.bytes_per_rank_s);
    else if (key == "req") s = num(&j.request);
    else if (key == "meta") s = num(&j.meta_per_rank_s);
    else if (key == "phase") s = num(&j.phase_bytes);
    else if (key == "log") s = num(&j.log_bytes);
    else if (key == "cmd") {
      std::string c;
      for (size_t i = 0; i < val.size(); ++i) {
        if (val[i] == '%' && val.compare(i, 3, "%20") == 0) c += ' ', i += 2;
        else if (val[i] == '%' && (val.compare(i, 3, "%2C") == 0 || val.compare(i, 3, "%2c") == 0)) c += ',', i += 2;
        else c += val[i];
      }
      j.command = c;
    }
    else if (key == "read") {
      s = num(&v);
      j.read = v != 0;
    } else return Status::Invalid("job spec: unknown key '" + key + "'");
    if (!s.ok()) return s;
  }
  if (j.id.empty()) return Status::Invalid("job spec: id= is required");
  return j;
}

void GenerateJobs(Config* cfg) {
  cfg->jobs.clear();
  const Mode modes[] = {Mode::kNN, Mode::kN1, Mode::kNM, Mode::k11};
  const int n = cfg->nodes;
  const int parts = cfg->faults.storm_job.empty() ? 4 : 5;
  const int per = std::max(1, n / parts);
  Rng rng(cfg->seed ^ 0x6a6f6273);
  for (int k = 0; k < 4; ++k) {
    JobSpec j;
    j.id = std::to_string(1000 + k);
    j.user = k % 2 ? "bob" : "alice";
    j.name = std::string("sim-") + std::string(ModeName(modes[k]));
    j.first_node = std::min(n - 1, k * per);
    j.nodes = std::max(1, std::min(per, n - j.first_node));
    j.mode = modes[k];
    j.stripe_count = std::min(cfg->osts, 4);
    j.start_s = static_cast<int>(rng.Below(static_cast<uint64_t>(std::max(1, cfg->duration_s / 4))));
    j.duration_s = std::max(1, cfg->duration_s - j.start_s - static_cast<int>(rng.Below(3)));
    j.io_period_s = 5;
    j.io_s = 2;
    j.read = k == 1;  // the N-1 job reads its shared input
    cfg->jobs.push_back(j);
  }
  if (!cfg->faults.storm_job.empty()) {
    JobSpec j;
    j.id = cfg->faults.storm_job;
    j.user = "carol";
    j.name = "sim-storm";
    j.first_node = std::min(n - 1, 4 * per);
    j.nodes = std::max(1, n - j.first_node);
    j.mode = Mode::kMeta;
    j.stripe_count = 1;
    j.start_s = 0;
    j.duration_s = cfg->duration_s;
    j.meta_per_rank_s = 2000;
    cfg->jobs.push_back(j);
  }
}

namespace {

// Per-second load accumulators.
struct Io {
  int64_t rb = 0, wb = 0, rops = 0, wops = 0;
};
struct Meta {
  int64_t open = 0, close = 0, getattr = 0;
};

// A second's data counters as a client (llite) or an OST reports them: bytes
// and ops each way, then bytes per second (the interval is 1 s).
struct IoFields {
  FieldId rb, rops, wb, wops, rb_per_s, wb_per_s;
};
void IoCounters(JsonLine& j, const Io& io, const IoFields& f) {
  j.KInt(f.rb, io.rb);
  j.KInt(f.rops, io.rops);
  j.KInt(f.wb, io.wb);
  j.KInt(f.wops, io.wops);
  const int64_t secs = std::max<int64_t>(1, g_interval_ns / kSec);
  j.Key(f.rb_per_s);
  j.Int(io.rb / secs);
  j.Key(f.wb_per_s);
  j.Int(io.wb / secs);
}

// One run of the simulator: the jobs' files, layouts and streams and the
// servers' streams, then second by second the clients' trace records, the
// forwarding nodes' client stats and the servers' counters (each layer fed by
// the one above it, so they agree), then the ground truth over each job's
// window.
class Simulation {
 public:
  Simulation(const Config& cfg, const std::function<Status(std::string_view line)>& out, SimResult* res)
      : cfg_(cfg), res_(res), em_(out, res, cfg), S_(cfg.osts), D_(cfg.mdts), F_(cfg.fwd), T_(cfg.duration_s) {}

  Status Run() {
    for (size_t k = 0; k < cfg_.jobs.size(); ++k)
      if (Status s = SetUpJob(k); !s.ok()) return s;
    res_->file_perf.resize(res_->layouts.size());
    for (size_t i = 0; i < res_->layouts.size(); ++i) {
      res_->file_perf[i].path = res_->layouts[i].path;
      res_->file_perf[i].osts = res_->layouts[i].osts;
    }
    SetUpServers();
    auto fault = [&](const char* kind, std::string name, double factor, int from, int to) {
      from = std::max(0, from);
      to = std::min(T_, to);
      if (from >= to) return;
      res_->faults.push_back({kind, std::move(name), factor, cfg_.start_ns + int64_t{from} * kSec, cfg_.start_ns + int64_t{to} * kSec});
    };
    const Faults& fl = cfg_.faults;
    if (fl.slow_ost >= 0 && fl.slow_ost < S_ && fl.slow_ost_factor < 1)
      fault("ost", OstName(cfg_.fs, fl.slow_ost), fl.slow_ost_factor, fl.slow_ost_from_s, fl.slow_ost_to_s);
    if (fl.slow_fwd >= 0 && fl.slow_fwd < F_ && fl.slow_fwd_factor < 1)
      fault("forwarding", FwdName(fl.slow_fwd), fl.slow_fwd_factor, fl.slow_fwd_from_s, fl.slow_fwd_to_s);
    for (int t = 0; t < T_; ++t)
      if (Status s = Second(t); !s.ok()) return s;
    em_.Finish();
    GroundTruth();
    return Status::Ok();
  }

 private:
  // What one rank does in one second, and where.
  struct RankSecond {
    size_t k;  // job index
    int r;     // rank
    const JobSpec& s;
    JobState& js;
    JobTruth& truth;
    int fwd;
    std::string host;
    int layout_i;
    const FileLayout& L;
    std::string fid;
    Stream& st;
    int64_t pid;
    int64_t cursor;  // where the rank's next call starts
  };

  // ---- set-up ----
  Status SetUpJob(size_t k) {
    const JobSpec& s = cfg_.jobs[k];
    if (s.first_node < 0 || s.nodes <= 0 || s.first_node + s.nodes > cfg_.nodes || s.procs_per_node <= 0)
      return Status::Invalid("simulate: job " + s.id + " has nodes outside [0, " + std::to_string(cfg_.nodes) + ")");
    if (s.request <= 0 || s.bytes_per_rank_s < 0 || s.io_period_s <= 0 || s.io_s <= 0)
      return Status::Invalid("simulate: job " + s.id + ": request, period and io seconds must be positive");
    jobs_.emplace_back();
    JobState& js = jobs_.back();
    js.spec = &s;
    js.nranks = s.nodes * s.procs_per_node;
    js.truth = res_->jobs.size();
    JobTruth t;
    t.id = s.id;
    t.start_ns = cfg_.start_ns + int64_t{s.start_s} * kSec;
    t.end_ns = cfg_.start_ns + int64_t{std::min(T_, s.start_s + s.duration_s)} * kSec;
    for (int i = 0; i < s.nodes; ++i) t.nodes.push_back(NodeName(s.first_node + i));
    res_->jobs.push_back(std::move(t));
    int nfiles = 1;
    if (s.mode == Mode::kNN) nfiles = js.nranks;
    if (s.mode == Mode::kNM) nfiles = std::max(1, std::min(s.m_files, js.nranks));
    LayOutFiles(s, nfiles, &js);
    AssignRanks(s, nfiles, &js);
    if (s.log_bytes > 0 && s.mode != Mode::kMeta) {
      FileLayout L;
      L.path = "/" + cfg_.fs + "/job" + s.id + "/log";
      L.job_id = s.id;
      L.stripe_size = cfg_.stripe_size;
      Rng lr(cfg_.seed ^ Fnv1a(L.path));
      L.osts.push_back(static_cast<int>(lr.Below(static_cast<uint64_t>(S_))));
      L.mdt = static_cast<int>(Fnv1a(L.path) % static_cast<uint64_t>(D_));
      js.log_layout = static_cast<int>(res_->layouts.size());
      res_->layouts.push_back(std::move(L));
    }
    return Status::Ok();
  }

  // The job's files: names by I/O mode, stripes from a seeded first OST, the MDT by hash.
  void LayOutFiles(const JobSpec& s, int nfiles, JobState* js) {
    const std::string dir = "/" + cfg_.fs + "/job" + s.id + "/";
    for (int f = 0; f < nfiles; ++f) {
      FileLayout L;
      switch (s.mode) {
        case Mode::kNN: L.path = dir + "out." + std::to_string(f); break;
        case Mode::kNM: L.path = dir + "part." + std::to_string(f); break;
        case Mode::kMeta: L.path = dir + "small"; break;
        default: L.path = dir + (s.read ? "input" : "shared"); break;
      }
      L.job_id = s.id;
      L.stripe_size = cfg_.stripe_size;
      Rng lr(cfg_.seed ^ Fnv1a(L.path));
      const int sc = std::max(1, std::min(S_, s.stripe_count));
      const int first = static_cast<int>(lr.Below(static_cast<uint64_t>(S_)));
      for (int i = 0; i < sc; ++i) L.osts.push_back((first + i) % S_);
      L.mdt = static_cast<int>(Fnv1a(L.path) % static_cast<uint64_t>(D_));
      js->files.push_back(static_cast<int>(res_->layouts.size()));
      res_->layouts.push_back(std::move(L));
    }
  }

  // Each rank's stream and file (by I/O mode; -1: the rank does no I/O).
  void AssignRanks(const JobSpec& s, int nfiles, JobState* js) {
    js->streams.resize(static_cast<size_t>(js->nranks));
    js->rank_file.assign(static_cast<size_t>(js->nranks), -1);
    js->rank_off.assign(static_cast<size_t>(js->nranks), 0);
    js->rank_end.assign(static_cast<size_t>(js->nranks), -1);
    for (int r = 0; r < js->nranks; ++r) {
      js->streams[static_cast<size_t>(r)].id =
          static_cast<int64_t>(SplitMix(cfg_.seed ^ Fnv1a(s.id) ^ (uint64_t(r) << 20)) >> 1);
      int f = -1;
      switch (s.mode) {
        case Mode::kNN: f = r; break;
        case Mode::kN1: f = 0; break;
        case Mode::kNM: f = r % nfiles; break;
        case Mode::k11: f = r == 0 ? 0 : -1; break;
        case Mode::kMeta: f = 0; break;
      }
      js->rank_file[static_cast<size_t>(r)] = f;
    }
  }

  // Hosts, streams and target names of the OSSs, forwarding nodes and MDS.
  void SetUpServers() {
    const int nOss = (S_ + cfg_.osts_per_oss - 1) / std::max(1, cfg_.osts_per_oss);
    oss_st_.resize(static_cast<size_t>(nOss));
    fwd_st_.resize(static_cast<size_t>(F_));
    oss_host_.resize(static_cast<size_t>(nOss));
    fwd_host_.resize(static_cast<size_t>(F_));
    mount_.resize(static_cast<size_t>(F_));
    ost_name_.resize(static_cast<size_t>(S_));
    mdt_name_.resize(static_cast<size_t>(D_));
    for (int i = 0; i < nOss; ++i) {
      char b[16];
      std::snprintf(b, sizeof b, "oss%03d", i);
      oss_host_[static_cast<size_t>(i)] = b;
      oss_st_[static_cast<size_t>(i)].id = static_cast<int64_t>(SplitMix(cfg_.seed ^ 0x055 ^ (uint64_t(i) << 24)) >> 1);
    }
    for (int i = 0; i < F_; ++i) {
      fwd_host_[static_cast<size_t>(i)] = FwdName(i);
      mount_[static_cast<size_t>(i)] = MountName(cfg_, i);
      fwd_st_[static_cast<size_t>(i)].id = static_cast<int64_t>(SplitMix(cfg_.seed ^ 0xf3d ^ (uint64_t(i) << 24)) >> 1);
    }
    mds_st_.id = static_cast<int64_t>(SplitMix(cfg_.seed ^ 0x3d5) >> 1);
    for (int i = 0; i < S_; ++i) ost_name_[static_cast<size_t>(i)] = OstName(cfg_.fs, i);
    for (int i = 0; i < D_; ++i) mdt_name_[static_cast<size_t>(i)] = MdtName(cfg_.fs, i);
    ost_io_.resize(static_cast<size_t>(S_));
    mdt_io_.resize(static_cast<size_t>(D_));
    fwd_io_.resize(static_cast<size_t>(F_));
    fwd_meta_.resize(static_cast<size_t>(F_));
    job_ost_.resize(jobs_.size());
    job_mdt_.resize(jobs_.size());
    ost_sec_bytes_.assign(static_cast<size_t>(S_) * static_cast<size_t>(T_), 0);
    fs_sec_opens_.assign(static_cast<size_t>(T_), 0);
    fs_sec_stats_.assign(static_cast<size_t>(T_), 0);
  }

  // ---- one second ----
  Status Second(int t) {
    t_ = t;
    const int64_t tick = cfg_.start_ns + int64_t{t} * kSec;
    // Server and client-counter records describe the interval [start,
    // tick_end) (Config::interval_s seconds, 1 by default) and are stamped
    // at its end with lustre.elapsed_ns = its length, as the Lustre exporter
    // stamps a delta at its later reading (docs/analysis.md).
    const int iv = std::max(1, cfg_.interval_s);
    const int64_t tick_end = tick + kSec;
    const bool first = t % iv == 0, last = (t + 1) % iv == 0 || t == T_ - 1;
    g_interval_ns = tick_end - (cfg_.start_ns + int64_t{t - t % iv} * kSec);
    for (auto& v : ost_io_) v = Io{};
    for (auto& v : mdt_io_) v = Meta{};
    for (auto& v : fwd_io_) v = Io{};
    for (auto& v : fwd_meta_) v = Meta{};
    fwd_osc_.clear();
    for (auto& m : job_ost_) m.clear();
    for (auto& m : job_mdt_) m.clear();
    for (size_t k = 0; k < jobs_.size(); ++k)
      if (Status s = JobSecond(k, t, tick); !s.ok()) return s;
    Background(t);
    Accumulate(first);
    if (!last) return Status::Ok();
    // The interval's sums take the place of the second's for the emitters.
    std::swap(ost_io_, acc_ost_io_);
    std::swap(mdt_io_, acc_mdt_io_);
    std::swap(fwd_io_, acc_fwd_io_);
    std::swap(fwd_meta_, acc_fwd_meta_);
    std::swap(fwd_osc_, acc_fwd_osc_);
    std::swap(job_ost_, acc_job_ost_);
    std::swap(job_mdt_, acc_job_mdt_);
    if (cfg_.emit_client) {
      if (Status s = Llite(tick_end); !s.ok()) return s;
      if (Status s = Osc(tick_end); !s.ok()) return s;
    }
    if (Status s = Servers(tick_end); !s.ok()) return s;
    return JobStats(tick_end);
  }

  // Adds the second's load to the interval's (a fresh interval when first):
  // counters, the OSC queue depths RPC-weighted, and the brw I/O times.
  void Accumulate(bool first) {
    auto add = [](Io& a, const Io& b) {
      a.rb += b.rb, a.wb += b.wb, a.rops += b.rops, a.wops += b.wops;
    };
    auto addm = [](Meta& a, const Meta& b) { a.open += b.open, a.close += b.close, a.getattr += b.getattr; };
    if (first) {
      acc_ost_io_.assign(ost_io_.size(), Io{});
      acc_mdt_io_.assign(mdt_io_.size(), Meta{});
      acc_fwd_io_.assign(fwd_io_.size(), Io{});
      acc_fwd_meta_.assign(fwd_meta_.size(), Meta{});
      acc_fwd_osc_.clear();
      acc_depth_.clear();
      acc_job_ost_.assign(job_ost_.size(), {});
      acc_job_mdt_.assign(job_mdt_.size(), {});
      acc_brw_.assign(static_cast<size_t>(S_), {});
      acc_wait_.assign(static_cast<size_t>(S_), 0.0);
    }
    for (size_t i = 0; i < ost_io_.size(); ++i) add(acc_ost_io_[i], ost_io_[i]);
    for (size_t i = 0; i < mdt_io_.size(); ++i) addm(acc_mdt_io_[i], mdt_io_[i]);
    for (size_t i = 0; i < fwd_io_.size(); ++i) add(acc_fwd_io_[i], fwd_io_[i]);
    for (size_t i = 0; i < fwd_meta_.size(); ++i) addm(acc_fwd_meta_[i], fwd_meta_[i]);
    for (const auto& [key, io] : fwd_osc_) {
      add(acc_fwd_osc_[key], io);
      const int f = static_cast<int>(key / S_), o = static_cast<int>(key % S_);
      // RPCs in flight seen by the RPCs: one per stream when the path
      // serves at full rate; a slow OST or forwarding node serves at a
      // fraction x of it, dirty pages pile up and the OSC keeps ~1/x RPCs
      // queued (at most max_rpcs_in_flight, 8).
      const double x = OstSlow(o, t_) * FwdSlow(f, t_);
      const double depth = std::min(8.0, std::max(1.0, std::round(1.0 / std::max(x, 1e-6))));
      acc_depth_[key] += static_cast<double>(io.rops + io.wops) * depth;
    }
    for (size_t k = 0; k < job_ost_.size(); ++k)
      for (const auto& [o, io] : job_ost_[k]) add(acc_job_ost_[k][o], io);
    for (size_t k = 0; k < job_mdt_.size(); ++k)
      for (const auto& [d, m] : job_mdt_[k]) addm(acc_job_mdt_[k][d], m);
    // brw_stats' "I/O time (1/1000s)" histogram: each 1 MiB I/O takes
    // 1 MiB / rank_bw on a healthy OST and 1/factor of that on a slow one;
    // the time lands in the power-of-two millisecond bucket nearest to it
    // (Lustre's rows 1, 2, 4, ... ms), a seeded 0-19 % of the I/Os one
    // bucket higher (disk jitter).
    for (int o = 0; o < S_; ++o) {
      const Io& io = ost_io_[static_cast<size_t>(o)];
      if (io.rops + io.wops <= 0) continue;
      const double ms = static_cast<double>(1 << 20) * 1e3 / static_cast<double>(cfg_.rank_bw) / OstSlow(o, t_);
      const int64_t bucket = int64_t{1} << std::max(0, static_cast<int>(std::lround(std::log2(std::max(ms, 1.0)))));
      const uint64_t h = SplitMix(cfg_.seed ^ 0x627277 ^ (uint64_t(o) << 32) ^ uint64_t(t_));
      const double up = static_cast<double>(h % 20) / 100.0;
      const int64_t r_up = static_cast<int64_t>(static_cast<double>(io.rops) * up);
      const int64_t w_up = static_cast<int64_t>(static_cast<double>(io.wops) * up);
      // ost_io's request wait: a request to a slow OST holds an ost_io
      // thread 1/factor as long, so the OSS's requests queue behind it
      // (Servers() takes the OSS's request-weighted mean).
      acc_wait_[static_cast<size_t>(o)] += static_cast<double>(io.rops + io.wops) / OstSlow(o, t_);
      auto& hist = acc_brw_[static_cast<size_t>(o)];
      hist[bucket].first += io.rops - r_up;
      hist[bucket].second += io.wops - w_up;
      hist[bucket * 2].first += r_up;
      hist[bucket * 2].second += w_up;
    }
  }

  // ---- clients: trace records ----
  Status JobSecond(size_t k, int t, int64_t tick) {
    JobState& js = jobs_[k];
    const JobSpec& s = *js.spec;
    if (t < s.start_s || t >= s.start_s + s.duration_s) return Status::Ok();
    const int rel = t - s.start_s;
    const bool first = rel == 0, last = t == std::min(T_, s.start_s + s.duration_s) - 1;
    bool io_now = s.mode != Mode::kMeta && rel % s.io_period_s < s.io_s && s.bytes_per_rank_s > 0;
    if (s.phase_bytes > 0 && s.mode != Mode::kMeta) {
      if (!js.in_phase && rel >= js.next_phase) {
        js.in_phase = true;
        js.phase_left.assign(static_cast<size_t>(js.nranks), s.phase_bytes);
      }
      io_now = js.in_phase;
    }
    for (int r = 0; r < js.nranks; ++r) {
      const int fidx = js.rank_file[static_cast<size_t>(r)];
      if (fidx < 0) continue;
      const int node = s.first_node + r / s.procs_per_node;
      const int layout_i = js.files[static_cast<size_t>(fidx)];
      const FileLayout& L = res_->layouts[static_cast<size_t>(layout_i)];
      RankSecond c{k,
                   r,
                   s,
                   js,
                   res_->jobs[js.truth],
                   FwdOf(cfg_, node),
                   NodeName(node),
                   layout_i,
                   L,
                   analysis::format::FileIdOf(L.path),
                   js.streams[static_cast<size_t>(r)],
                   10000 + r % s.procs_per_node,
                   tick + static_cast<int64_t>(SplitMix(cfg_.seed ^ uint64_t(r) ^ (uint64_t(t) << 32)) % 5000000)};
      Status st;
      if (first || s.mode == Mode::kMeta) {
        const int64_t n = s.mode == Mode::kMeta ? std::max<int64_t>(1, s.meta_per_rank_s) : 1;
        if (s.mode == Mode::kMeta && !(st = MetaRecord(c, "stat", n, false)).ok()) return st;
        if (!(st = MetaRecord(c, "open", n, true)).ok()) return st;
        if (s.mode == Mode::kMeta && !(st = MetaRecord(c, "close", n, true)).ok()) return st;
      }
      if (io_now && !(st = DataRecord(c, t)).ok()) return st;
      if (last && s.mode != Mode::kMeta && !(st = MetaRecord(c, "close", 1, true)).ok()) return st;
      if (r == 0 && js.log_layout >= 0) {
        const FileLayout& LL = res_->layouts[static_cast<size_t>(js.log_layout)];
        RankSecond lc{k, r, s, js, c.truth, c.fwd, c.host, js.log_layout, LL, analysis::format::FileIdOf(LL.path), c.st,
                      c.pid, c.cursor};
        if (first && !(st = MetaRecord(lc, "open", 1, true)).ok()) return st;
        if (!(st = LogRecord(lc, t)).ok()) return st;
        if (last && !(st = MetaRecord(lc, "close", 1, true)).ok()) return st;
      }
    }
    if (io_now) js.iter++;
    if (js.in_phase && std::all_of(js.phase_left.begin(), js.phase_left.end(), [](int64_t b) { return b <= 0; })) {
      js.in_phase = false;
      js.next_phase = rel + 1 + s.io_period_s;
    }
    return Status::Ok();
  }

  // The head of a trace record of the rank's op starting at `start`.
  JsonLine& TraceHead(RankSecond& c, const char* op, int64_t start) {
    JsonLine& j = em_.Begin(dataset::kTrace, start, c.st, c.host);
    j.KStr(field::kJobId, c.s.id.data(), c.s.id.size());
    j.KInt(field::kProcessPid, c.pid);
    j.KInt(field::kProcessRank, c.r);
    j.KInt(field::kProcessTid, c.pid);
    j.KStr(field::kIoOp, op);
    j.KStr(field::kIoLayer, "posix");
    j.KStr(field::kFilePath, c.L.path.data(), c.L.path.size());
    j.KStr(field::kFileId, c.fid.data(), c.fid.size());
    return j;
  }

  // count metadata ops (stat, open, close), 20 us each, and their load on the MDT and forwarding node.
  Status MetaRecord(RankSecond& c, const char* op, int64_t count, bool with_fd) {
    const int64_t dur = count * 20000;  // 20 us an op
    JsonLine& j = TraceHead(c, op, c.cursor);
    if (with_fd) j.KInt(field::kIoFd, 3);
    j.KInt(field::kIoCount, count);
    j.KInt(field::kEventStartNs, c.cursor);
    j.KInt(field::kEventEndNs, c.cursor + dur);
    j.KInt(field::kIoDurationNs, dur);
    c.cursor += dur;
    c.truth.trace_records++;
    const int mdt = c.L.mdt;
    Meta* jm = &job_mdt_[c.k][mdt];
    if (op[0] == 'o') {
      c.truth.opens += count;
      mdt_io_[static_cast<size_t>(mdt)].open += count;
      fwd_meta_[static_cast<size_t>(c.fwd)].open += count;
      jm->open += count;
    } else if (op[0] == 'c') {
      mdt_io_[static_cast<size_t>(mdt)].close += count;
      fwd_meta_[static_cast<size_t>(c.fwd)].close += count;
      jm->close += count;
    } else {
      c.truth.stats += count;
      mdt_io_[static_cast<size_t>(mdt)].getattr += count;
      fwd_meta_[static_cast<size_t>(c.fwd)].getattr += count;
      jm->getattr += count;
    }
    return em_.End();
  }

  // The rank's data run of second t: its requests (fewer for a rank out of
  // step, with --variability), offset by I/O mode, time from the rank's
  // bandwidth cut by a slow OST or forwarding node.
  Status DataRecord(RankSecond& c, int t) {
    const JobSpec& s = c.s;
    double f = OstFactor(c.L, t);
    if (f < 1) c.truth.slow_servers.insert(ost_name_[static_cast<size_t>(cfg_.faults.slow_ost)]);
    if (FwdSlow(c.fwd, t) < 1) {
      f *= FwdSlow(c.fwd, t);
      c.truth.slow_servers.insert(fwd_host_[static_cast<size_t>(c.fwd)]);
    }
    int64_t count = std::max<int64_t>(1, s.bytes_per_rank_s / s.request);
    int64_t* left = nullptr;
    if (s.phase_bytes > 0) {  // as much of the phase as the rank's bandwidth allows this second
      left = &c.js.phase_left[static_cast<size_t>(c.r)];
      if (*left <= 0) return Status::Ok();
      const int64_t can = static_cast<int64_t>(static_cast<double>(cfg_.rank_bw) * f);
      count = std::max<int64_t>(1, std::min(*left, std::max(s.request, can)) / s.request);
    }
    if (cfg_.variability > 0) {
      const uint64_t h = SplitMix(cfg_.seed ^ 0x7661 ^ (uint64_t(c.r) << 24) ^ uint64_t(t) ^ Fnv1a(s.id));
      if (static_cast<double>(h % 1000000) < cfg_.variability * 1e6 && count > 1)
        count -= 1 + static_cast<int64_t>((h >> 20) % static_cast<uint64_t>(std::max<int64_t>(1, count / 2)));
    }
    if (left) *left -= count * s.request;
    const int64_t bytes = count * s.request;
    const int64_t off = Offset(c, bytes);
    c.js.rank_off[static_cast<size_t>(c.r)] = off + bytes;
    // As the tracer counts them: the run's ops after its first continue it;
    // its first continues only where the rank's previous op ended.
    int64_t& prev_end = c.js.rank_end[static_cast<size_t>(c.r)];
    const int64_t consecutive = count - 1 + (prev_end == off ? 1 : 0);
    prev_end = off + bytes;
    const int64_t dur = static_cast<int64_t>(static_cast<double>(bytes) * 1e9 / (static_cast<double>(cfg_.rank_bw) * f));
    return DataRun(c, s.read ? "read" : "write", 3, off, s.request, bytes, count, consecutive, dur);
  }

  // One trace record of a run of `count` data ops at the rank's cursor,
  // which it advances by dur, and its accounting.
  Status DataRun(RankSecond& c, const char* op, int64_t fd, int64_t off, int64_t size, int64_t bytes, int64_t count,
                 int64_t sequential, int64_t dur) {
    JsonLine& j = TraceHead(c, op, c.cursor);
    j.KInt(field::kIoFd, fd);
    j.KInt(field::kIoOffset, off);
    j.KInt(field::kIoSize, size);
    j.KInt(field::kIoBytes, bytes);
    j.KInt(field::kIoCount, count);
    j.KInt(field::kIoOpsSequential, sequential);
    j.KInt(field::kEventStartNs, c.cursor);
    j.KInt(field::kEventEndNs, c.cursor + dur);
    j.KInt(field::kIoDurationNs, dur);
    c.cursor += dur;
    c.truth.trace_records++;
    if (Status st = em_.End(); !st.ok()) return st;
    AccountData(c, bytes, count, dur);
    return Status::Ok();
  }

  // Rank 0's log appends of second t (JobSpec::log_bytes): 4 KiB writes of
  // 1 ms each (longer on a slow OST or forwarding node).
  Status LogRecord(RankSecond& c, int t) {
    double f = OstFactor(c.L, t);
    if (f < 1) c.truth.slow_servers.insert(ost_name_[static_cast<size_t>(cfg_.faults.slow_ost)]);
    if (FwdSlow(c.fwd, t) < 1) {
      f *= FwdSlow(c.fwd, t);
      c.truth.slow_servers.insert(fwd_host_[static_cast<size_t>(c.fwd)]);
    }
    constexpr int64_t kReq = 4096;
    const int64_t count = std::max<int64_t>(1, c.s.log_bytes / kReq), bytes = count * kReq;
    const int64_t dur = static_cast<int64_t>(static_cast<double>(count) * 1e6 / f);
    const int64_t off = c.js.log_off;
    c.js.log_off += bytes;
    return DataRun(c, "write", 4, off, kReq, bytes, count, off > 0 ? count : count - 1, dur);
  }

  // Where this second's run of `bytes` starts in the rank's file.
  int64_t Offset(const RankSecond& c, int64_t bytes) const {
    const JobState& js = c.js;
    switch (c.s.mode) {
      case Mode::kNN:
      case Mode::k11: return js.rank_off[static_cast<size_t>(c.r)];
      case Mode::kN1: return (js.iter * js.nranks + c.r) * bytes;
      case Mode::kNM: {
        const int per_file = (js.nranks + static_cast<int>(js.files.size()) - 1) / static_cast<int>(js.files.size());
        return (js.iter * per_file + c.r / static_cast<int>(js.files.size())) * bytes;
      }
      case Mode::kMeta: break;
    }
    return 0;
  }

  // The service-rate factor of OST o / forwarding node f in second t (1: healthy).
  double OstSlow(int o, int t) const {
    const Faults& fl = cfg_.faults;
    return o == fl.slow_ost && t >= fl.slow_ost_from_s && t < fl.slow_ost_to_s ? fl.slow_ost_factor : 1.0;
  }
  double FwdSlow(int f, int t) const {
    const Faults& fl = cfg_.faults;
    return f == fl.slow_fwd && t >= fl.slow_fwd_from_s && t < fl.slow_fwd_to_s ? fl.slow_fwd_factor : 1.0;
  }

  double OstFactor(const FileLayout& L, int t) const {
    if (t < cfg_.faults.slow_ost_from_s || t >= cfg_.faults.slow_ost_to_s) return 1.0;
    for (int o : L.osts)
      if (o == cfg_.faults.slow_ost) return cfg_.faults.slow_ost_factor;
    return 1.0;
  }

  // A data run's bytes into the truth, the file's performance, the
  // forwarding node and, spread over the stripes in 1 MiB RPCs, the OSTs.
  void AccountData(const RankSecond& c, int64_t bytes, int64_t count, int64_t dur) {
    const bool read = c.s.read;
    JobTruth& truth = c.truth;
    truth.bytes += bytes;
    (read ? truth.read_bytes : truth.write_bytes) += bytes;
    truth.fwd_bytes[c.fwd] += bytes;
    FilePerf& fp = res_->file_perf[static_cast<size_t>(c.layout_i)];
    fp.bytes += bytes;
    fp.seconds += static_cast<double>(dur) / 1e9;
    const int sc = static_cast<int>(c.L.osts.size());
    Io& fi = fwd_io_[static_cast<size_t>(c.fwd)];
    (read ? fi.rb : fi.wb) += bytes;
    (read ? fi.rops : fi.wops) += count;
    for (int i = 0; i < sc; ++i) {
      const int o = c.L.osts[static_cast<size_t>(i)];
      const int64_t share = bytes / sc + (i < bytes % sc ? 1 : 0);
      const int64_t rpcs = (share + (1 << 20) - 1) >> 20;
      Io& oi = ost_io_[static_cast<size_t>(o)];
      Io& ji = job_ost_[c.k][o];
      Io& ci = fwd_osc_[int64_t{c.fwd} * S_ + o];
      for (Io* x : {&oi, &ji, &ci}) {
        (read ? x->rb : x->wb) += share;
        (read ? x->rops : x->wops) += rpcs;
      }
      truth.ost_bytes[o] += share;
    }
  }

  // ---- forwarding nodes: llite + osc ----
  Status Llite(int64_t tick_end) {
    for (int f = 0; f < F_; ++f) {
      Stream& st = fwd_st_[static_cast<size_t>(f)];
      const Io& io = fwd_io_[static_cast<size_t>(f)];
      const Meta& m = fwd_meta_[static_cast<size_t>(f)];
      JsonLine& j = em_.Begin(dataset::kClient, tick_end, st, fwd_host_[static_cast<size_t>(f)]);
      ServerTarget(j, cfg_.fs, mount_[static_cast<size_t>(f)]);
      j.KStr(field::kClientLayer, "llite");
      IoCounters(j, io, {field::kClientReadBytes, field::kClientReadOps, field::kClientWriteBytes,
                         field::kClientWriteOps, field::kClientReadBytesPerS, field::kClientWriteBytesPerS});
      j.KInt(field::kClientOpen, m.open);
      j.KInt(field::kClientClose, m.close);
      j.KInt(field::kClientGetattr, m.getattr);
      j.KInt(field::kClientMetadataOps, m.open + m.close + m.getattr);
      if (Status s = em_.End(); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Osc(int64_t tick_end) {
    std::vector<std::pair<int64_t, Io>> osc(fwd_osc_.begin(), fwd_osc_.end());
    std::sort(osc.begin(), osc.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, io] : osc) {
      const int f = static_cast<int>(key / S_), o = static_cast<int>(key % S_);
      Stream& st = fwd_st_[static_cast<size_t>(f)];
      JsonLine& j = em_.Begin(dataset::kClient, tick_end, st, fwd_host_[static_cast<size_t>(f)]);
      const std::string target = ost_name_[static_cast<size_t>(o)] + "-osc-" + mount_[static_cast<size_t>(f)].substr(cfg_.fs.size() + 1);
      ServerTarget(j, cfg_.fs, target);
      j.KStr(field::kClientLayer, "osc");
      const double depth = io.rops + io.wops > 0 ? acc_depth_[key] / static_cast<double>(io.rops + io.wops) : 1;  // Accumulate()
      j.KInt(field::kClientReadInFlight, 0);
      j.KInt(field::kClientWriteInFlight, 0);
      j.KInt(field::kClientRpcReads, io.rops);
      j.KInt(field::kClientRpcWrites, io.wops);
      if (io.rops) {
        j.Key(field::kClientRpcReadPagesMean);
        j.Int(256);
        j.Key(field::kClientRpcReadInFlightMean);
        Num(j, depth);
      }
      if (io.wops) {
        j.Key(field::kClientRpcWritePagesMean);
        j.Int(256);
        j.Key(field::kClientRpcWriteInFlightMean);
        Num(j, depth);
      }
      if (Status s = em_.End(); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // ---- servers: oss, mds, jobstats ----
  // The untraced load of the second on each OST and MDT, and the file
  // system's per-second totals for the ground truth.
  void Background(int t) {
    for (int o = 0; o < S_; ++o) {
      Io& io = ost_io_[static_cast<size_t>(o)];
      const int64_t b = static_cast<int64_t>(bg_.Below(static_cast<uint64_t>(2 * cfg_.background_bytes_per_ost_s + 1)));
      io.wb += b;
      io.wops += (b + (1 << 20) - 1) >> 20;
      ost_sec_bytes_[static_cast<size_t>(o) * static_cast<size_t>(T_) + static_cast<size_t>(t)] = io.rb + io.wb;
    }
    for (int d = 0; d < D_; ++d) {
      Meta& m = mdt_io_[static_cast<size_t>(d)];
      const int64_t b = static_cast<int64_t>(bg_.Below(static_cast<uint64_t>(2 * cfg_.background_meta_per_mdt_s + 1)));
      m.open += b / 3;
      m.close += b / 3;
      m.getattr += b - 2 * (b / 3);
      fs_sec_opens_[static_cast<size_t>(t)] += m.open;
      fs_sec_stats_[static_cast<size_t>(t)] += m.getattr;
    }
  }

  Status Servers(int64_t tick_end) {
    std::vector<int> active(static_cast<size_t>(S_) + static_cast<size_t>(D_), 0);  // jobs per OST, then MDT
    for (size_t k = 0; k < jobs_.size(); ++k) {
      for (auto& [o, io] : job_ost_[k]) active[static_cast<size_t>(o)]++;
      for (auto& [d, m] : job_mdt_[k]) active[static_cast<size_t>(S_ + d)]++;
    }
    // ost/OSS/ost_io/stats req_waittime per OSS: a base of 50-60 us
    // (seeded per OSS and interval) times the mean of 1/factor over the
    // OSS's requests (Accumulate()); no requests, no value.
    const int per_oss = std::max(1, cfg_.osts_per_oss);
    std::vector<int64_t> oss_wait_ns((static_cast<size_t>(S_) + static_cast<size_t>(per_oss) - 1) / static_cast<size_t>(per_oss), -1);
    for (size_t oss = 0; oss < oss_wait_ns.size(); ++oss) {
      double ops = 0, slow = 0;
      for (int o = static_cast<int>(oss) * per_oss; o < std::min(S_, (static_cast<int>(oss) + 1) * per_oss); ++o) {
        ops += static_cast<double>(ost_io_[static_cast<size_t>(o)].rops + ost_io_[static_cast<size_t>(o)].wops);
        slow += acc_wait_.empty() ? 0 : acc_wait_[static_cast<size_t>(o)];
      }
      if (ops <= 0) continue;
      const uint64_t h = SplitMix(cfg_.seed ^ 0x6f737469 ^ (uint64_t(oss) << 32) ^ uint64_t(t_));
      const double base_ns = 50000.0 * (1 + static_cast<double>(h % 21) / 100.0);
      oss_wait_ns[oss] = std::llround(base_ns * std::max(1.0, slow / ops));
    }
    for (int o = 0; o < S_; ++o) {
      const Io& io = ost_io_[static_cast<size_t>(o)];
      const int oss = o / std::max(1, cfg_.osts_per_oss);
      JsonLine& j = em_.Begin(dataset::kOss, tick_end, oss_st_[static_cast<size_t>(oss)],
                              oss_host_[static_cast<size_t>(oss)]);
      ServerTarget(j, cfg_.fs, ost_name_[static_cast<size_t>(o)]);
      j.KInt(field::kLustreJobsActive, active[static_cast<size_t>(o)]);
      j.KInt(field::kLustreJobsDropped, 0);
      IoCounters(j, io, {field::kOssReadBytes, field::kOssReadOps, field::kOssWriteBytes, field::kOssWriteOps,
                         field::kOssReadBytesPerS, field::kOssWriteBytesPerS});
      const int64_t secs = std::max<int64_t>(1, g_interval_ns / kSec);
      j.Key(field::kOssReadOpsPerS);
      j.Int(io.rops / secs);
      j.Key(field::kOssWriteOpsPerS);
      j.Int(io.wops / secs);
      j.Key(field::kOssOpsPerS);
      j.Int((io.rops + io.wops) / secs);
      j.KInt(field::kOssOtherOps, 0);
      if (oss_wait_ns[static_cast<size_t>(oss)] >= 0) j.KInt(field::kOssOstIoWaitNs, oss_wait_ns[static_cast<size_t>(oss)]);
      if (Status s = em_.End(); !s.ok()) return s;
      if (Status s = Brw(o, io, tick_end); !s.ok()) return s;
    }
    for (int d = 0; d < D_; ++d) {
      const Meta& m = mdt_io_[static_cast<size_t>(d)];
      JsonLine& j = em_.Begin(dataset::kMds, tick_end, mds_st_, mds_host_);
      ServerTarget(j, cfg_.fs, mdt_name_[static_cast<size_t>(d)]);
      j.KInt(field::kLustreJobsActive, active[static_cast<size_t>(S_ + d)]);
      j.KInt(field::kLustreJobsDropped, 0);
      j.KInt(field::kMdsOpen, m.open);
      j.KInt(field::kMdsClose, m.close);
      j.KInt(field::kMdsGetattr, m.getattr);
      j.KInt(field::kMdsOps, m.open + m.close + m.getattr);
      j.Key(field::kMdsOpsPerS);
      j.Int((m.open + m.close + m.getattr) / std::max<int64_t>(1, g_interval_ns / kSec));
      if (Status s = em_.End(); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // OST o's brw_stats I/O-time histogram over the interval (Accumulate()).
  Status Brw(int o, const Io& io, int64_t tick_end) {
    if (io.rops + io.wops <= 0) return Status::Ok();
    const int oss = o / std::max(1, cfg_.osts_per_oss);
    for (const auto& [bucket, rw] : acc_brw_[static_cast<size_t>(o)]) {
      if (rw.first + rw.second == 0) continue;
      JsonLine& j = em_.Begin(dataset::kBrw, tick_end, oss_st_[static_cast<size_t>(oss)], oss_host_[static_cast<size_t>(oss)]);
      ServerTarget(j, cfg_.fs, ost_name_[static_cast<size_t>(o)]);
      j.KStr(field::kBrwHist, "io_time_ms");
      j.KInt(field::kBrwBucket, bucket);
      j.KInt(field::kBrwRead, rw.first);
      j.KInt(field::kBrwWrite, rw.second);
      if (Status s = em_.End(); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status JobStats(int64_t tick_end) {
    for (size_t k = 0; k < jobs_.size(); ++k) {
      const std::string& id = jobs_[k].spec->id;
      for (auto& [o, io] : job_ost_[k]) {
        const int oss = o / std::max(1, cfg_.osts_per_oss);
        JsonLine& j = em_.Begin(dataset::kJobstats, tick_end, oss_st_[static_cast<size_t>(oss)],
                                oss_host_[static_cast<size_t>(oss)]);
        j.KStr(field::kJobId, id.c_str());
        ServerTarget(j, cfg_.fs, ost_name_[static_cast<size_t>(o)]);
        j.KInt(field::kOssReadBytes, io.rb);
        j.KInt(field::kOssReadOps, io.rops);
        j.KInt(field::kOssWriteBytes, io.wb);
        j.KInt(field::kOssWriteOps, io.wops);
        j.KInt(field::kOssOtherOps, 0);
        if (Status s = em_.End(); !s.ok()) return s;
      }
      for (auto& [d, m] : job_mdt_[k]) {
        JsonLine& j = em_.Begin(dataset::kJobstats, tick_end, mds_st_, mds_host_);
        j.KStr(field::kJobId, id.c_str());
        ServerTarget(j, cfg_.fs, mdt_name_[static_cast<size_t>(d)]);
        if (m.open) j.KInt(field::kMdsOpen, m.open);
        if (m.close) j.KInt(field::kMdsClose, m.close);
        if (m.getattr) j.KInt(field::kMdsGetattr, m.getattr);
        j.KInt(field::kMdsOps, m.open + m.close + m.getattr);
        if (Status s = em_.End(); !s.ok()) return s;
      }
    }
    return Status::Ok();
  }

  // ---- ground truth over each job's window ----
  void GroundTruth() {
    for (JobTruth& t : res_->jobs) {
      const int a = static_cast<int>((t.start_ns - cfg_.start_ns) / kSec), b = static_cast<int>((t.end_ns - cfg_.start_ns) / kSec);
      for (int s = a; s < b; ++s) {
        for (int o = 0; o < S_; ++o) {
          const int64_t v = ost_sec_bytes_[static_cast<size_t>(o) * static_cast<size_t>(T_) + static_cast<size_t>(s)];
          t.fs_bytes += v;
          if (t.ost_bytes.count(o)) t.ost_total_bytes[o] += v;
        }
        t.fs_opens += fs_sec_opens_[static_cast<size_t>(s)];
        t.fs_stats += fs_sec_stats_[static_cast<size_t>(s)];
      }
    }
  }

  const Config& cfg_;
  SimResult* res_;
  Emitter em_;
  const int S_, D_, F_, T_;  // OSTs, MDTs, forwarding nodes, seconds
  int t_ = 0;                // the second being simulated
  std::vector<JobState> jobs_;
  // servers
  std::vector<Stream> oss_st_, fwd_st_;
  Stream mds_st_;
  std::vector<std::string> oss_host_, fwd_host_, mount_, ost_name_, mdt_name_;
  const std::string mds_host_ = "mds000";
  // this second's load
  std::vector<Io> ost_io_;
  std::vector<Meta> mdt_io_;
  std::vector<Io> fwd_io_;
  std::vector<Meta> fwd_meta_;
  std::unordered_map<int64_t, Io> fwd_osc_;  // fwd * S + ost
  std::vector<std::map<int, Io>> job_ost_;
  std::vector<std::map<int, Meta>> job_mdt_;
  // this interval's load (Accumulate(); swapped in for the emitters at its last second)
  std::vector<Io> acc_ost_io_, acc_fwd_io_;
  std::vector<Meta> acc_mdt_io_, acc_fwd_meta_;
  std::unordered_map<int64_t, Io> acc_fwd_osc_;
  std::unordered_map<int64_t, double> acc_depth_;  // fwd * S + ost -> RPCs x in-flight depth
  std::vector<std::map<int, Io>> acc_job_ost_;
  std::vector<std::map<int, Meta>> acc_job_mdt_;
  std::vector<std::map<int64_t, std::pair<int64_t, int64_t>>> acc_brw_;  // per OST: bucket ms -> (read, write) I/Os
  std::vector<double> acc_wait_;  // per OST: I/Os / service-rate factor, for the OSS's ost_io wait
  // whole-run per-second totals for the ground truth
  std::vector<int64_t> ost_sec_bytes_, fs_sec_opens_, fs_sec_stats_;
  Rng bg_{cfg_.seed ^ 0x6267};
};

}  // namespace

Status Simulate(const Config& cfg, const std::function<Status(std::string_view line)>& out, SimResult* res) {
  if (cfg.nodes <= 0 || cfg.fwd <= 0 || cfg.osts <= 0 || cfg.mdts <= 0 || cfg.duration_s <= 0)
    return Status::Invalid("simulate: nodes, fwd, osts, mdts and duration must be positive");
  if (cfg.fwd > cfg.nodes) return Status::Invalid("simulate: more forwarding nodes than compute nodes");
  *res = SimResult{};
  return Simulation(cfg, out, res).Run();
}

std::string MapsJson(const Config& cfg, const SimResult& r) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Kv("cluster", cfg.cluster);
  w.Kv("filesystem", cfg.fs);
  w.Key("jobs");
  w.BeginArray();
  for (size_t k = 0; k < r.jobs.size() && k < cfg.jobs.size(); ++k) {
    const JobTruth& t = r.jobs[k];
    const JobSpec& s = cfg.jobs[k];
    w.BeginObject();
    KvAll(w, "job_id", t.id, "user", s.user, "name", s.name, "mode", ModeName(s.mode), "start_ns", t.start_ns,
          "end_ns", t.end_ns);
    w.Key("nodes");
    w.BeginArray();
    for (const auto& n : t.nodes) w.String(n);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("node_forwarding");
  w.BeginObject();
  for (int n = 0; n < cfg.nodes; ++n) w.Kv(NodeName(n), FwdName(FwdOf(cfg, n)));
  w.EndObject();
  w.Key("layouts");
  w.BeginArray();
  for (const auto& L : r.layouts) {
    w.BeginObject();
    KvAll(w, "path", L.path, "job_id", L.job_id, "stripe_size", L.stripe_size, "mdt", static_cast<int64_t>(L.mdt));
    w.Key("osts");
    w.BeginArray();
    for (int o : L.osts) w.Int(o);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

std::string GetstripeText(const SimResult& r) {
  std::string out;
  char b[160];
  for (const auto& L : r.layouts) {
    out += L.path + "\n";
    std::snprintf(b, sizeof b,
                  "lmm_stripe_count:  %zu\nlmm_stripe_size:   %" PRId64
                  "\nlmm_pattern:       raid0\nlmm_layout_gen:    0\nlmm_stripe_offset: %d\n",
                  L.osts.size(), L.stripe_size, L.osts.empty() ? 0 : L.osts[0]);
    out += b;
    out += "\tobdidx\t\t objid\t\t objid\t\t group\n";
    uint64_t objid = Fnv1a(L.path) & 0xffffff;
    for (int o : L.osts) {
      std::snprintf(b, sizeof b, "\t%6d\t%14" PRIu64 "\t%#14" PRIx64 "\t%14d\n", o, objid, objid, 0);
      out += b;
      ++objid;
    }
    out += "\n";
  }
  return out;
}

std::string FilePerfCsv(const SimResult& r) {
  std::string out = "file,bytes,seconds,osts\n";
  char b[64];
  for (const auto& p : r.file_perf) {
    if (p.bytes == 0) continue;
    out += p.path;
    std::snprintf(b, sizeof b, ",%" PRId64 ",%.9g,", p.bytes, p.seconds);
    out += b;
    for (size_t i = 0; i < p.osts.size(); ++i) {
      if (i) out += ';';
      out += std::to_string(p.osts[i]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace iosonar::sim

namespace iosonar::sim {

std::string CommandOf(const JobSpec& s) { return s.command.empty() ? "sim " + std::string(ModeName(s.mode)) : s.command; }

std::string AppsText(const Config& cfg) {
  std::string out;
  for (const auto& j : cfg.jobs) out += j.id + "\t" + CommandOf(j) + "\n";
  return out;
}

std::string TruthJson(const SimResult& r) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Kv("lines", r.lines);
  w.Key("faults");
  w.BeginArray();
  for (const auto& f : r.faults) {
    KvObject(w, "kind", f.kind, "name", f.name, "factor", f.factor, "from_ns", f.from_ns, "to_ns", f.to_ns);
  }
  w.EndArray();
  w.Key("jobs");
  w.BeginArray();
  for (const JobTruth& t : r.jobs) {
    w.BeginObject();
    KvAll(w, "job_id", t.id, "start_ns", t.start_ns, "end_ns", t.end_ns, "nodes", t.nodes.size(),
          "trace_records", t.trace_records, "bytes", t.bytes, "read_bytes", t.read_bytes, "write_bytes", t.write_bytes,
          "opens", t.opens, "stats", t.stats, "fs_bytes", t.fs_bytes, "fs_opens", t.fs_opens, "fs_stats", t.fs_stats,
          "coverage_bytes", t.fs_bytes ? static_cast<double>(t.bytes) / static_cast<double>(t.fs_bytes) : 0.0);
    w.Key("slow_servers");
    w.BeginArray();
    for (const auto& n : t.slow_servers) w.String(n);
    w.EndArray();
    w.Key("osts");
    w.BeginArray();
    for (const auto& [o, b] : t.ost_bytes) {
      w.BeginObject();
      w.Kv("ost", static_cast<int64_t>(o));
      w.Kv("job_bytes", b);
      auto it = t.ost_total_bytes.find(o);
      const int64_t tot = it == t.ost_total_bytes.end() ? 0 : it->second;
      w.Kv("total_bytes", tot);
      w.Kv("share", tot ? static_cast<double>(b) / static_cast<double>(tot) : 0.0);
      w.EndObject();
    }
    w.EndArray();
    // The job's bytes per forwarding node (the traced bytes of its nodes behind each).
    w.Key("forwarding");
    w.BeginArray();
    for (const auto& [f, b] : t.fwd_bytes) {
      KvObject(w, "name", FwdName(f), "job_bytes", b);
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

Status SimulateIntoStore(const Config& cfg, Store& store, SimResult* result, AppendStats* stats) {
  BulkWriter* w = BulkWriterOf(&store);
  if (!w) return Status::Invalid("the store has no bulk path (simulate --store needs the embedded store)");
  IngestBatch batch(w, 8192);
  AppendStats local;
  AppendStats* st_out = stats ? stats : &local;
  Status st = Simulate(cfg, [&](std::string_view line) -> Status {
    if (batch.full()) {
      if (Status c = batch.Commit(st_out); !c.ok()) return c;
      batch.Clear();
    }
    Status a = batch.Add(line);
    if (!a.ok()) return Status::Internal("simulate emitted an invalid record: " + a.message());
    return Status::Ok();
  }, result);
  if (st.ok() && !batch.empty()) st = batch.Commit(st_out);
  return st;
}

}  // namespace iosonar::sim
