#include "analysis-jobs/simulate/simulate.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstdio>
#include <unordered_map>

#include "core/base/hash.h"
#include "core/collector/ingest.h"
#include "core/base/json.h"
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
void ServerTarget(JsonLine& j, const std::string& fs, const std::string& target) {
  j.KStr("lustre.fs", fs.c_str());
  j.KStr("lustre.target", target.c_str());
  j.KInt("lustre.elapsed_ns", kSec);
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
  int64_t iter = 0;               // I/O seconds so far (shared-file offsets)
};

class Emitter {
 public:
  Emitter(const std::function<Status(std::string_view)>& out, SimResult* r, const Config& cfg)
      : out_(out), r_(r), cfg_(cfg) {}
  JsonLine& Begin(const char* dataset, int64_t ts_ns, Stream& st, const std::string& host) {
    j_.Reset();
    const char d = dataset[8];  // iosonar.[t]race, [c]lient, servers
    skip_ = d == 't' ? !cfg_.emit_trace : d == 'c' ? !cfg_.emit_client : !cfg_.emit_servers;
    j_.Begin();
    j_.Key("@timestamp");
    j_.IsoMillis(ts_ns);
    j_.KInt("event.seq", st.seq++);
    j_.KStr("event.dataset", dataset);
    j_.KInt("event.stream", st.id);
    j_.KStr("host.name", host.data(), host.size());
    dataset_ = dataset;
    return j_;
  }
  Status End() {
    j_.Raw("}", 1);
    if (!j_.ok()) return Status::Internal("simulate: record longer than its buffer");
    if (skip_) return Status::Ok();
    r_->lines++;
    r_->bytes += j_.size() + 1;
    auto it = by_ds_.find(dataset_);
    if (it == by_ds_.end()) it = by_ds_.emplace(dataset_, 0).first;
    it->second++;
    return out_(std::string_view(buf_, j_.size()));
  }
  void Finish() {
    for (auto& [k, v] : by_ds_) r_->lines_by_dataset[k] += v;
  }

 private:
  const std::function<Status(std::string_view)>& out_;
  SimResult* r_;
  char buf_[2048];
  JsonLine j_{buf_, sizeof buf_};
  const Config& cfg_;
  bool skip_ = false;
  const char* dataset_ = "";
  std::unordered_map<const char*, uint64_t> by_ds_;
};

std::string Hex16(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, h);
  return b;
}

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

Status Simulate(const Config& cfg, const std::function<Status(std::string_view line)>& out, SimResult* res) {
  if (cfg.nodes <= 0 || cfg.fwd <= 0 || cfg.osts <= 0 || cfg.mdts <= 0 || cfg.duration_s <= 0)
    return Status::Invalid("simulate: nodes, fwd, osts, mdts and duration must be positive");
  if (cfg.fwd > cfg.nodes) return Status::Invalid("simulate: more forwarding nodes than compute nodes");
  *res = SimResult{};
  Emitter em(out, res, cfg);
  const int S = cfg.osts, D = cfg.mdts, F = cfg.fwd, T = cfg.duration_s;

  // ---- jobs, files, layouts, streams ----
  std::vector<JobState> jobs(cfg.jobs.size());
  for (size_t k = 0; k < cfg.jobs.size(); ++k) {
    const JobSpec& s = cfg.jobs[k];
    if (s.first_node < 0 || s.nodes <= 0 || s.first_node + s.nodes > cfg.nodes || s.procs_per_node <= 0)
      return Status::Invalid("simulate: job " + s.id + " has nodes outside [0, " + std::to_string(cfg.nodes) + ")");
    if (s.request <= 0 || s.bytes_per_rank_s < 0 || s.io_period_s <= 0 || s.io_s <= 0)
      return Status::Invalid("simulate: job " + s.id + ": request, period and io seconds must be positive");
    JobState& js = jobs[k];
    js.spec = &s;
    js.nranks = s.nodes * s.procs_per_node;
    js.truth = res->jobs.size();
    JobTruth t;
    t.id = s.id;
    t.start_ns = cfg.start_ns + int64_t{s.start_s} * kSec;
    t.end_ns = cfg.start_ns + int64_t{std::min(T, s.start_s + s.duration_s)} * kSec;
    for (int i = 0; i < s.nodes; ++i) t.nodes.push_back(NodeName(s.first_node + i));
    res->jobs.push_back(std::move(t));
    int nfiles = 1;
    if (s.mode == Mode::kNN) nfiles = js.nranks;
    if (s.mode == Mode::kNM) nfiles = std::max(1, std::min(s.m_files, js.nranks));
    const std::string dir = "/" + cfg.fs + "/job" + s.id + "/";
    for (int f = 0; f < nfiles; ++f) {
      FileLayout L;
      switch (s.mode) {
        case Mode::kNN: L.path = dir + "out." + std::to_string(f); break;
        case Mode::kNM: L.path = dir + "part." + std::to_string(f); break;
        case Mode::kMeta: L.path = dir + "small"; break;
        default: L.path = dir + (s.read ? "input" : "shared"); break;
      }
      L.job_id = s.id;
      L.stripe_size = cfg.stripe_size;
      Rng lr(cfg.seed ^ Fnv1a(L.path));
      const int sc = std::max(1, std::min(S, s.stripe_count));
      const int first = static_cast<int>(lr.Below(static_cast<uint64_t>(S)));
      for (int i = 0; i < sc; ++i) L.osts.push_back((first + i) % S);
      L.mdt = static_cast<int>(Fnv1a(L.path) % static_cast<uint64_t>(D));
      js.files.push_back(static_cast<int>(res->layouts.size()));
      res->layouts.push_back(std::move(L));
    }
    js.streams.resize(static_cast<size_t>(js.nranks));
    js.rank_file.assign(static_cast<size_t>(js.nranks), -1);
    js.rank_off.assign(static_cast<size_t>(js.nranks), 0);
    for (int r = 0; r < js.nranks; ++r) {
      js.streams[static_cast<size_t>(r)].id =
          static_cast<int64_t>(SplitMix(cfg.seed ^ Fnv1a(s.id) ^ (uint64_t(r) << 20)) >> 1);
      int f = -1;
      switch (s.mode) {
        case Mode::kNN: f = r; break;
        case Mode::kN1: f = 0; break;
        case Mode::kNM: f = r % nfiles; break;
        case Mode::k11: f = r == 0 ? 0 : -1; break;
        case Mode::kMeta: f = 0; break;
      }
      js.rank_file[static_cast<size_t>(r)] = f;
    }
  }
  res->file_perf.resize(res->layouts.size());
  for (size_t i = 0; i < res->layouts.size(); ++i) {
    res->file_perf[i].path = res->layouts[i].path;
    res->file_perf[i].osts = res->layouts[i].osts;
  }

  // ---- server-side streams ----
  const int nOss = (S + cfg.osts_per_oss - 1) / std::max(1, cfg.osts_per_oss);
  std::vector<Stream> oss_st(static_cast<size_t>(nOss)), fwd_st(static_cast<size_t>(F));
  Stream mds_st;
  std::vector<std::string> oss_host(static_cast<size_t>(nOss)), fwd_host(static_cast<size_t>(F)), mount(static_cast<size_t>(F));
  std::vector<std::string> ost_name(static_cast<size_t>(S)), mdt_name(static_cast<size_t>(D)), osc_name;
  for (int i = 0; i < nOss; ++i) {
    char b[16];
    std::snprintf(b, sizeof b, "oss%03d", i);
    oss_host[static_cast<size_t>(i)] = b;
    oss_st[static_cast<size_t>(i)].id = static_cast<int64_t>(SplitMix(cfg.seed ^ 0x055 ^ (uint64_t(i) << 24)) >> 1);
  }
  for (int i = 0; i < F; ++i) {
    fwd_host[static_cast<size_t>(i)] = FwdName(i);
    mount[static_cast<size_t>(i)] = MountName(cfg, i);
    fwd_st[static_cast<size_t>(i)].id = static_cast<int64_t>(SplitMix(cfg.seed ^ 0xf3d ^ (uint64_t(i) << 24)) >> 1);
  }
  mds_st.id = static_cast<int64_t>(SplitMix(cfg.seed ^ 0x3d5) >> 1);
  const std::string mds_host = "mds000";
  for (int i = 0; i < S; ++i) ost_name[static_cast<size_t>(i)] = OstName(cfg.fs, i);
  for (int i = 0; i < D; ++i) mdt_name[static_cast<size_t>(i)] = MdtName(cfg.fs, i);

  // Per-second accumulators.
  struct Io {
    int64_t rb = 0, wb = 0, rops = 0, wops = 0;
  };
  struct Meta {
    int64_t open = 0, close = 0, getattr = 0;
  };
  std::vector<Io> ost_io(static_cast<size_t>(S));
  std::vector<Meta> mdt_io(static_cast<size_t>(D));
  std::vector<Io> fwd_io(static_cast<size_t>(F));
  std::vector<Meta> fwd_meta(static_cast<size_t>(F));
  std::unordered_map<int64_t, Io> fwd_osc;  // fwd * S + ost
  std::vector<std::map<int, Io>> job_ost(jobs.size());
  std::vector<std::map<int, Meta>> job_mdt(jobs.size());
  // Whole-run per-second totals for the ground truth.
  std::vector<int64_t> ost_sec_bytes(static_cast<size_t>(S) * static_cast<size_t>(T), 0);
  std::vector<int64_t> fs_sec_opens(static_cast<size_t>(T), 0), fs_sec_stats(static_cast<size_t>(T), 0);
  Rng bg(cfg.seed ^ 0x6267);

  auto ost_factor = [&](const FileLayout& L) {
    for (int o : L.osts)
      if (o == cfg.faults.slow_ost) return cfg.faults.slow_ost_factor;
    return 1.0;
  };

  for (int t = 0; t < T; ++t) {
    const int64_t tick = cfg.start_ns + int64_t{t} * kSec;
    // Server and client-counter records describe the second [tick, tick_end)
    // and are stamped at its end with lustre.elapsed_ns = 1 s, as the Lustre
    // exporter stamps a delta at its later reading (docs/analysis.md).
    const int64_t tick_end = tick + kSec;
    for (auto& v : ost_io) v = Io{};
    for (auto& v : mdt_io) v = Meta{};
    for (auto& v : fwd_io) v = Io{};
    for (auto& v : fwd_meta) v = Meta{};
    fwd_osc.clear();
    for (auto& m : job_ost) m.clear();
    for (auto& m : job_mdt) m.clear();

    // ---- clients: trace records ----
    for (size_t k = 0; k < jobs.size(); ++k) {
      JobState& js = jobs[k];
      const JobSpec& s = *js.spec;
      if (t < s.start_s || t >= s.start_s + s.duration_s) continue;
      JobTruth& truth = res->jobs[js.truth];
      const int rel = t - s.start_s;
      const bool first = rel == 0, last = t == std::min(T, s.start_s + s.duration_s) - 1;
      const bool io_now = s.mode != Mode::kMeta && rel % s.io_period_s < s.io_s && s.bytes_per_rank_s > 0;
      for (int r = 0; r < js.nranks; ++r) {
        const int fidx = js.rank_file[static_cast<size_t>(r)];
        if (fidx < 0) continue;
        const int node = s.first_node + r / s.procs_per_node;
        const int fwd = FwdOf(cfg, node);
        const std::string host = NodeName(node);
        const int layout_i = js.files[static_cast<size_t>(fidx)];
        const FileLayout& L = res->layouts[static_cast<size_t>(layout_i)];
        const std::string fid = Hex16(Fnv1a(L.path));
        Stream& st = js.streams[static_cast<size_t>(r)];
        const int64_t pid = 10000 + r % s.procs_per_node;
        int64_t cursor = tick + static_cast<int64_t>(SplitMix(cfg.seed ^ uint64_t(r) ^ (uint64_t(t) << 32)) % 5000000);
        auto common = [&](const char* op, int64_t start, int64_t end) -> JsonLine& {
          JsonLine& j = em.Begin("iosonar.trace", start, st, host);
          j.KStr("job.id", s.id.data(), s.id.size());
          j.KInt("process.pid", pid);
          j.KInt("process.rank", r);
          j.KInt("process.tid", pid);
          j.KStr("io.op", op);
          j.KStr("io.layer", "posix");
          j.KStr("file.path", L.path.data(), L.path.size());
          j.KStr("file.id", fid.data(), fid.size());
          (void)end;
          return j;
        };
        auto meta = [&](const char* op, int64_t count, bool with_fd) -> Status {
          const int64_t dur = count * 20000;  // 20 us an op
          JsonLine& j = common(op, cursor, cursor + dur);
          if (with_fd) j.KInt("io.fd", 3);
          j.KInt("io.count", count);
          j.KInt("event.start_ns", cursor);
          j.KInt("event.end_ns", cursor + dur);
          j.KInt("io.duration_ns", dur);
          cursor += dur;
          truth.trace_records++;
          const int mdt = L.mdt;
          Meta* jm = &job_mdt[k][mdt];
          if (op[0] == 'o') {
            truth.opens += count;
            mdt_io[static_cast<size_t>(mdt)].open += count;
            fwd_meta[static_cast<size_t>(fwd)].open += count;
            jm->open += count;
          } else if (op[0] == 'c') {
            mdt_io[static_cast<size_t>(mdt)].close += count;
            fwd_meta[static_cast<size_t>(fwd)].close += count;
            jm->close += count;
          } else {
            truth.stats += count;
            mdt_io[static_cast<size_t>(mdt)].getattr += count;
            fwd_meta[static_cast<size_t>(fwd)].getattr += count;
            jm->getattr += count;
          }
          return em.End();
        };
        Status stt;
        if (first || s.mode == Mode::kMeta) {
          const int64_t n = s.mode == Mode::kMeta ? std::max<int64_t>(1, s.meta_per_rank_s) : 1;
          if (s.mode == Mode::kMeta && !(stt = meta("stat", n, false)).ok()) return stt;
          if (!(stt = meta("open", n, true)).ok()) return stt;
          if (s.mode == Mode::kMeta && !(stt = meta("close", n, true)).ok()) return stt;
        }
        if (io_now) {
          int64_t count = std::max<int64_t>(1, s.bytes_per_rank_s / s.request);
          if (cfg.variability > 0) {
            const uint64_t h = SplitMix(cfg.seed ^ 0x7661 ^ (uint64_t(r) << 24) ^ uint64_t(t) ^ Fnv1a(s.id));
            if (static_cast<double>(h % 1000000) < cfg.variability * 1e6 && count > 1)
              count -= 1 + static_cast<int64_t>((h >> 20) % static_cast<uint64_t>(std::max<int64_t>(1, count / 2)));
          }
          const int64_t bytes = count * s.request;
          int64_t off = 0;
          switch (s.mode) {
            case Mode::kNN:
            case Mode::k11: off = js.rank_off[static_cast<size_t>(r)]; break;
            case Mode::kN1: off = (js.iter * js.nranks + r) * bytes; break;
            case Mode::kNM: {
              const int per_file = (js.nranks + static_cast<int>(js.files.size()) - 1) / static_cast<int>(js.files.size());
              off = (js.iter * per_file + r / static_cast<int>(js.files.size())) * bytes;
              break;
            }
            case Mode::kMeta: break;
          }
          js.rank_off[static_cast<size_t>(r)] = off + bytes;
          double f = ost_factor(L);
          if (fwd == cfg.faults.slow_fwd) f *= cfg.faults.slow_fwd_factor;
          const int64_t dur = static_cast<int64_t>(static_cast<double>(bytes) * 1e9 / (static_cast<double>(cfg.rank_bw) * f));
          JsonLine& j = common(s.read ? "read" : "write", cursor, cursor + dur);
          j.KInt("io.fd", 3);
          j.KInt("io.offset", off);
          j.KInt("io.size", s.request);
          j.KInt("io.bytes", bytes);
          j.KInt("io.count", count);
          j.KInt("event.start_ns", cursor);
          j.KInt("event.end_ns", cursor + dur);
          j.KInt("io.duration_ns", dur);
          cursor += dur;
          truth.trace_records++;
          if (!(stt = em.End()).ok()) return stt;
          truth.bytes += bytes;
          (s.read ? truth.read_bytes : truth.write_bytes) += bytes;
          truth.fwd_bytes[fwd] += bytes;
          FilePerf& fp = res->file_perf[static_cast<size_t>(layout_i)];
          fp.bytes += bytes;
          fp.seconds += static_cast<double>(dur) / 1e9;
          const int sc = static_cast<int>(L.osts.size());
          Io& fi = fwd_io[static_cast<size_t>(fwd)];
          (s.read ? fi.rb : fi.wb) += bytes;
          (s.read ? fi.rops : fi.wops) += count;
          for (int i = 0; i < sc; ++i) {
            const int o = L.osts[static_cast<size_t>(i)];
            const int64_t share = bytes / sc + (i < bytes % sc ? 1 : 0);
            const int64_t rpcs = (share + (1 << 20) - 1) >> 20;
            Io& oi = ost_io[static_cast<size_t>(o)];
            Io& ji = job_ost[k][o];
            Io& ci = fwd_osc[int64_t{fwd} * S + o];
            for (Io* x : {&oi, &ji, &ci}) {
              (s.read ? x->rb : x->wb) += share;
              (s.read ? x->rops : x->wops) += rpcs;
            }
            truth.ost_bytes[o] += share;
          }
        }
        if (last && s.mode != Mode::kMeta && !(stt = meta("close", 1, true)).ok()) return stt;
      }
      if (io_now) js.iter++;
    }

    // ---- forwarding nodes: llite + osc ----
    if (cfg.emit_client) {
      for (int f = 0; f < F; ++f) {
        Stream& st = fwd_st[static_cast<size_t>(f)];
        const Io& io = fwd_io[static_cast<size_t>(f)];
        const Meta& m = fwd_meta[static_cast<size_t>(f)];
        JsonLine& j = em.Begin("iosonar.client", tick_end, st, fwd_host[static_cast<size_t>(f)]);
        ServerTarget(j, cfg.fs, mount[static_cast<size_t>(f)]);
        j.KStr("client.layer", "llite");
        j.KInt("client.read_bytes", io.rb);
        j.KInt("client.read_ops", io.rops);
        j.KInt("client.write_bytes", io.wb);
        j.KInt("client.write_ops", io.wops);
        j.Key("client.read_bytes_per_s");
        j.Int(io.rb);
        j.Key("client.write_bytes_per_s");
        j.Int(io.wb);
        j.KInt("client.open", m.open);
        j.KInt("client.close", m.close);
        j.KInt("client.getattr", m.getattr);
        j.KInt("client.metadata_ops", m.open + m.close + m.getattr);
        if (Status s = em.End(); !s.ok()) return s;
      }
      std::vector<std::pair<int64_t, Io>> osc(fwd_osc.begin(), fwd_osc.end());
      std::sort(osc.begin(), osc.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [key, io] : osc) {
        const int f = static_cast<int>(key / S), o = static_cast<int>(key % S);
        Stream& st = fwd_st[static_cast<size_t>(f)];
        JsonLine& j = em.Begin("iosonar.client", tick_end, st, fwd_host[static_cast<size_t>(f)]);
        const std::string target = ost_name[static_cast<size_t>(o)] + "-osc-" + mount[static_cast<size_t>(f)].substr(cfg.fs.size() + 1);
        ServerTarget(j, cfg.fs, target);
        j.KStr("client.layer", "osc");
        const bool slow = o == cfg.faults.slow_ost || f == cfg.faults.slow_fwd;
        j.KInt("client.read_in_flight", 0);
        j.KInt("client.write_in_flight", 0);
        j.KInt("client.rpc_reads", io.rops);
        j.KInt("client.rpc_writes", io.wops);
        if (io.rops) {
          j.Key("client.rpc_read_pages_mean");
          j.Int(256);
          j.Key("client.rpc_read_in_flight_mean");
          j.Int(slow ? 8 : 1);
        }
        if (io.wops) {
          j.Key("client.rpc_write_pages_mean");
          j.Int(256);
          j.Key("client.rpc_write_in_flight_mean");
          j.Int(slow ? 8 : 1);
        }
        if (Status s = em.End(); !s.ok()) return s;
      }
    }

    // ---- servers: oss, mds, jobstats ----
    for (int o = 0; o < S; ++o) {
      Io& io = ost_io[static_cast<size_t>(o)];
      const int64_t b = static_cast<int64_t>(bg.Below(static_cast<uint64_t>(2 * cfg.background_bytes_per_ost_s + 1)));
      io.wb += b;
      io.wops += (b + (1 << 20) - 1) >> 20;
      ost_sec_bytes[static_cast<size_t>(o) * static_cast<size_t>(T) + static_cast<size_t>(t)] = io.rb + io.wb;
    }
    for (int d = 0; d < D; ++d) {
      Meta& m = mdt_io[static_cast<size_t>(d)];
      const int64_t b = static_cast<int64_t>(bg.Below(static_cast<uint64_t>(2 * cfg.background_meta_per_mdt_s + 1)));
      m.open += b / 3;
      m.close += b / 3;
      m.getattr += b - 2 * (b / 3);
      fs_sec_opens[static_cast<size_t>(t)] += m.open;
      fs_sec_stats[static_cast<size_t>(t)] += m.getattr;
    }
    std::vector<int> active(static_cast<size_t>(S) + static_cast<size_t>(D), 0);
    for (size_t k = 0; k < jobs.size(); ++k) {
      for (auto& [o, io] : job_ost[k]) active[static_cast<size_t>(o)]++;
      for (auto& [d, m] : job_mdt[k]) active[static_cast<size_t>(S + d)]++;
    }
    for (int o = 0; o < S; ++o) {
      const Io& io = ost_io[static_cast<size_t>(o)];
      const int oss = o / std::max(1, cfg.osts_per_oss);
      JsonLine& j = em.Begin("iosonar.oss", tick_end, oss_st[static_cast<size_t>(oss)], oss_host[static_cast<size_t>(oss)]);
      ServerTarget(j, cfg.fs, ost_name[static_cast<size_t>(o)]);
      j.KInt("lustre.jobs_active", active[static_cast<size_t>(o)]);
      j.KInt("lustre.jobs_dropped", 0);
      j.KInt("oss.read_bytes", io.rb);
      j.KInt("oss.read_ops", io.rops);
      j.KInt("oss.write_bytes", io.wb);
      j.KInt("oss.write_ops", io.wops);
      j.Key("oss.read_bytes_per_s");
      j.Int(io.rb);
      j.Key("oss.write_bytes_per_s");
      j.Int(io.wb);
      j.Key("oss.read_ops_per_s");
      j.Int(io.rops);
      j.Key("oss.write_ops_per_s");
      j.Int(io.wops);
      j.Key("oss.ops_per_s");
      j.Int(io.rops + io.wops);
      j.KInt("oss.other_ops", 0);
      if (Status s = em.End(); !s.ok()) return s;
    }
    for (int d = 0; d < D; ++d) {
      const Meta& m = mdt_io[static_cast<size_t>(d)];
      JsonLine& j = em.Begin("iosonar.mds", tick_end, mds_st, mds_host);
      ServerTarget(j, cfg.fs, mdt_name[static_cast<size_t>(d)]);
      j.KInt("lustre.jobs_active", active[static_cast<size_t>(S + d)]);
      j.KInt("lustre.jobs_dropped", 0);
      j.KInt("mds.open", m.open);
      j.KInt("mds.close", m.close);
      j.KInt("mds.getattr", m.getattr);
      j.KInt("mds.ops", m.open + m.close + m.getattr);
      j.Key("mds.ops_per_s");
      j.Int(m.open + m.close + m.getattr);
      if (Status s = em.End(); !s.ok()) return s;
    }
    for (size_t k = 0; k < jobs.size(); ++k) {
      const std::string& id = jobs[k].spec->id;
      for (auto& [o, io] : job_ost[k]) {
        const int oss = o / std::max(1, cfg.osts_per_oss);
        JsonLine& j = em.Begin("iosonar.jobstats", tick_end, oss_st[static_cast<size_t>(oss)], oss_host[static_cast<size_t>(oss)]);
        j.KStr("job.id", id.c_str());
        ServerTarget(j, cfg.fs, ost_name[static_cast<size_t>(o)]);
        j.KInt("oss.read_bytes", io.rb);
        j.KInt("oss.read_ops", io.rops);
        j.KInt("oss.write_bytes", io.wb);
        j.KInt("oss.write_ops", io.wops);
        j.KInt("oss.other_ops", 0);
        if (Status s = em.End(); !s.ok()) return s;
      }
      for (auto& [d, m] : job_mdt[k]) {
        JsonLine& j = em.Begin("iosonar.jobstats", tick_end, mds_st, mds_host);
        j.KStr("job.id", id.c_str());
        ServerTarget(j, cfg.fs, mdt_name[static_cast<size_t>(d)]);
        if (m.open) j.KInt("mds.open", m.open);
        if (m.close) j.KInt("mds.close", m.close);
        if (m.getattr) j.KInt("mds.getattr", m.getattr);
        j.KInt("mds.ops", m.open + m.close + m.getattr);
        if (Status s = em.End(); !s.ok()) return s;
      }
    }
  }
  em.Finish();

  // ---- ground truth over each job's window ----
  for (JobTruth& t : res->jobs) {
    const int a = static_cast<int>((t.start_ns - cfg.start_ns) / kSec), b = static_cast<int>((t.end_ns - cfg.start_ns) / kSec);
    for (int s = a; s < b; ++s) {
      for (int o = 0; o < S; ++o) {
        const int64_t v = ost_sec_bytes[static_cast<size_t>(o) * static_cast<size_t>(T) + static_cast<size_t>(s)];
        t.fs_bytes += v;
        if (t.ost_bytes.count(o)) t.ost_total_bytes[o] += v;
      }
      t.fs_opens += fs_sec_opens[static_cast<size_t>(s)];
      t.fs_stats += fs_sec_stats[static_cast<size_t>(s)];
    }
  }
  return Status::Ok();
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
    w.Kv("job_id", t.id);
    w.Kv("user", s.user);
    w.Kv("name", s.name);
    w.Kv("mode", ModeName(s.mode));
    w.Kv("start_ns", t.start_ns);
    w.Kv("end_ns", t.end_ns);
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
    w.Kv("path", L.path);
    w.Kv("job_id", L.job_id);
    w.Kv("stripe_size", L.stripe_size);
    w.Kv("mdt", static_cast<int64_t>(L.mdt));
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

std::string TruthJson(const SimResult& r) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Kv("lines", r.lines);
  w.Key("jobs");
  w.BeginArray();
  for (const JobTruth& t : r.jobs) {
    w.BeginObject();
    w.Kv("job_id", t.id);
    w.Kv("start_ns", t.start_ns);
    w.Kv("end_ns", t.end_ns);
    w.Kv("nodes", t.nodes.size());
    w.Kv("trace_records", t.trace_records);
    w.Kv("bytes", t.bytes);
    w.Kv("read_bytes", t.read_bytes);
    w.Kv("write_bytes", t.write_bytes);
    w.Kv("opens", t.opens);
    w.Kv("stats", t.stats);
    w.Kv("fs_bytes", t.fs_bytes);
    w.Kv("fs_opens", t.fs_opens);
    w.Kv("fs_stats", t.fs_stats);
    w.Kv("coverage_bytes", t.fs_bytes ? static_cast<double>(t.bytes) / static_cast<double>(t.fs_bytes) : 0.0);
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
