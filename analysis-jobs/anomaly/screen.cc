#include "analysis-jobs/anomaly/screen.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/base/html.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"
#include "core/results/results.h"

namespace iosonar::anomaly {
namespace {

constexpr int64_t kSec = 1000000000;

std::string Key(const std::string& kind, const std::string& name) { return kind + ":" + name; }

}  // namespace

std::string Occurrence::Id() const { return kind + ":" + name + ":" + FormatIsoMillis(start_ns); }

Result<std::map<std::string, double>> LoadPeaks(const std::string& path) {
  std::map<std::string, double> peaks;
  Status st = lassi::ForEachDataLine(path, [&](const std::string& line, int n) -> Status {
    std::istringstream in(line);
    std::string name, value, extra;
    in >> name >> value;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (name.empty() || value.empty() || *end != '\0' || !(v > 0) || (in >> extra))
      return Status::Invalid(path + ":" + std::to_string(n) + ": expected NAME BYTES_PER_S (a positive number)");
    peaks[name] = v;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return peaks;
}

Result<ScreenState> LoadScreenState(const std::string& path) {
  ScreenState s;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT) return s;
    return Status::Io("cannot read " + path + ": " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("to_ns") || !d["to_ns"].IsInt64())
    return Status::Invalid(path + ": not a screening state (JSON with to_ns, open, peaks, reported)");
  s.to_ns = d["to_ns"].GetInt64();
  if (d.HasMember("open") && d["open"].IsObject())
    for (const auto& m : d["open"].GetObject()) {
      const auto& o = m.value;
      if (!o.IsObject() || !o.HasMember("start_ns") || !o.HasMember("last_low_end_ns") || !o.HasMember("max_ratio"))
        return Status::Invalid(path + ": open entry '" + m.name.GetString() + "' lacks start_ns/last_low_end_ns/max_ratio");
      s.open[m.name.GetString()] = {o["start_ns"].GetInt64(), o["last_low_end_ns"].GetInt64(), o["max_ratio"].GetDouble(),
                                    o.HasMember("rule") && o["rule"].IsString() ? o["rule"].GetString() : ""};
    }
  if (d.HasMember("peaks") && d["peaks"].IsObject())
    for (const auto& m : d["peaks"].GetObject())
      if (m.value.IsNumber()) s.peaks[m.name.GetString()] = m.value.GetDouble();
  for (auto [key, set] : {std::pair<const char*, std::set<std::string>*>{"reported", &s.reported}, {"alerted", &s.alerted}})
    if (d.HasMember(key) && d[key].IsArray())
      for (const auto& v : d[key].GetArray())
        if (v.IsString()) set->insert(v.GetString());
  return s;
}

Status SaveScreenState(const std::string& path, const ScreenState& s) {
  std::string out;
  JsonWriter w(&out, 2);
  w.BeginObject();
  w.Kv("to_ns", s.to_ns);
  w.Key("open");
  w.BeginObject();
  for (const auto& [k, o] : s.open) {
    w.Key(k);
    KvObject(w, "start_ns", o.start_ns, "last_low_end_ns", o.last_low_end_ns, "max_ratio", o.max_ratio, "rule", o.rule);
  }
  w.EndObject();
  w.Key("peaks");
  w.BeginObject();
  for (const auto& [k, v] : s.peaks) w.Kv(k, v);
  w.EndObject();
  w.Key("reported");
  w.BeginArray();
  for (const auto& r : s.reported) w.String(r);
  w.EndArray();
  w.Key("alerted");
  w.BeginArray();
  for (const auto& r : s.alerted) w.String(r);
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::write(fd, out.data() + off, out.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return Status::Io("cannot write " + tmp + ": " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::Io("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

namespace {

// One server's measurements in one bucket.
struct Cell {
  double max_bw = 0;     // bytes/s, the bucket's largest record
  double brw_ios = 0;    // brw io_time I/Os ...
  double brw_ms = 0;     // ... and their time (row labels: upper bounds)
  double rpcs = 0;       // OSC RPCs to (OST) or from (forwarding node) it ...
  double rpc_depth = 0;  // ... times the RPCs in flight they saw
  double ref_w = 0;      // the same RPCs times the reference depth (peers' queue to/from the same servers)
  double ref_rpcs = 0;   // RPCs with a reference
  bool work = false;     // jobs_active > 0 / llite read or write ops
};

struct Server {
  std::string kind, name;
  std::vector<Cell> cells;
  bool demand_signal = false;  // any brw or osc record in the range
  size_t oss = SIZE_MAX;       // an OST's OSS (its iosonar.oss records' host) when ost_io waits were sampled
};

double MedianOf(std::vector<double>& v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median of sorted `all` without one occurrence of `self`.
double MedianWithout(const std::vector<double>& all, double self) {
  const size_t n = all.size();
  if (n < 2) return 0;
  const size_t skip = static_cast<size_t>(std::lower_bound(all.begin(), all.end(), self) - all.begin());
  auto at = [&](size_t i) { return all[i < skip ? i : i + 1]; };
  const size_t m = n - 1;
  return m % 2 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

}  // namespace

Result<ScreenResult> Screen(Store& store, int64_t from_ns, int64_t to_ns, const std::map<std::string, double>& peaks,
                            const ScreenOptions& opt, ScreenState* state) {
  if (to_ns <= from_ns) return Status::Invalid("screen: --to must be after --from");
  if (!(opt.fraction > 0 && opt.fraction <= 1) || opt.bucket_ns <= 0 || opt.min_duration_ns < 0 || !(opt.peer_factor > 1))
    return Status::Invalid("screen: fraction must be in (0, 1], peer factor > 1, bucket > 0, min duration >= 0");
  ScreenResult res;
  res.from_ns = from_ns;
  res.to_ns = to_ns;
  const size_t nb = static_cast<size_t>((to_ns - from_ns + opt.bucket_ns - 1) / opt.bucket_ns);
  std::vector<Server> servers;
  // name -> servers index, per kind (looked up by string_view: no key built per record)
  struct SvHash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  std::unordered_map<std::string, size_t, SvHash, std::equal_to<>> ost_index, fwd_index;
  auto server_ix = [&](const char* kind, std::string_view name) -> size_t {
    auto& index = kind[0] == 'o' ? ost_index : fwd_index;
    auto it = index.find(name);
    if (it == index.end()) {
      it = index.emplace(std::string(name), servers.size()).first;
      servers.push_back(Server{kind, std::string(name), std::vector<Cell>(nb), false});
    }
    return it->second;
  };
  // The last server looked up per scan (records come in runs of one server).
  struct Last {
    std::string name;
    size_t ix = SIZE_MAX;
  };
  auto cached = [&](Last& last, const char* kind, std::string_view name) -> Server& {
    if (last.ix == SIZE_MAX || name != last.name) {
      last.ix = server_ix(kind, name);
      last.name.assign(name);
    }
    return servers[last.ix];
  };
  // The bucket a record covering [ts - elapsed, ts) counts in, or -1.
  auto bucket_of = [&](int64_t ts, int64_t elapsed) -> int64_t {
    if (elapsed <= 0) elapsed = kSec;
    const int64_t start = ts - elapsed;
    if (start < from_ns || start >= to_ns) return -1;
    return (start - from_ns) / opt.bucket_ns;
  };
  auto add_bw = [&](Last& last, const char* kind, std::string_view name, int64_t ts, int64_t elapsed, double bytes,
                    bool work) {
    const int64_t b = bucket_of(ts, elapsed);
    if (b < 0) return;
    Cell& c = cached(last, kind, name).cells[static_cast<size_t>(b)];
    c.max_bw = std::max(c.max_bw, bytes * 1e9 / static_cast<double>(elapsed > 0 ? elapsed : kSec));
    c.work |= work;
    res.records++;
  };
  // OSS -> per bucket (sum of ost_io mean waits in ns, records): evidence only.
  std::unordered_map<std::string, size_t> oss_index;
  std::vector<std::vector<std::pair<double, int>>> oss_waits;
  // Records covering [from, to) are stamped up to one interval after `to`; 5 min is generous.
  const TimeRange range{from_ns, to_ns + 300 * kSec};
  if (opt.osts) {
    ScanQuery q;
    q.dataset = dataset::kOss;
    q.range = range;
    q.fields = {field::kLustreTarget, field::kTimestamp, field::kLustreElapsedNs, field::kOssReadBytes,
                field::kOssWriteBytes, field::kLustreJobsActive, field::kHostName, field::kOssOstIoWaitNs};
    q.ordered = false;
    Last last;
    std::string last_oss;
    size_t last_oss_ix = 0;
    Status st = store.Scan(q, [&](const Row& r) {
      if (!r.Has(0) || (!r.Has(3) && !r.Has(4))) return true;  // a reset: no deltas
      const double b = (r.Has(3) ? static_cast<double>(r.Int(3)) : 0) + (r.Has(4) ? static_cast<double>(r.Int(4)) : 0);
      const int64_t elapsed = r.Has(2) ? r.Int(2) : kSec;
      add_bw(last, "ost", r.Str(0), r.Int(1), elapsed, b, r.Has(5) && r.Int(5) > 0);
      if (r.Has(6) && r.Has(7) && r.Int(7) > 0) {  // the OSS's ost_io request wait
        const int64_t k = bucket_of(r.Int(1), elapsed);
        if (k < 0 || last.ix == SIZE_MAX) return true;
        if (oss_waits.empty() || r.Str(6) != last_oss) {
          last_oss.assign(r.Str(6));
          auto [it, added] = oss_index.emplace(last_oss, oss_waits.size());
          if (added) oss_waits.emplace_back(nb);
          last_oss_ix = it->second;
        }
        servers[last.ix].oss = last_oss_ix;
        auto& w = oss_waits[last_oss_ix][static_cast<size_t>(k)];
        w.first += static_cast<double>(r.Int(7));
        w.second++;
      }
      return true;
    });
    if (!st.ok()) return st;
    // brw_stats I/O time: the OST's service time per I/O.
    ScanQuery b;
    b.dataset = dataset::kBrw;
    b.range = range;
    b.filters = {{field::kBrwHist, "io_time_ms"}};
    b.fields = {field::kLustreTarget, field::kTimestamp, field::kLustreElapsedNs, field::kBrwBucket, field::kBrwRead,
                field::kBrwWrite};
    b.ordered = false;
    Last last_brw;
    st = store.Scan(b, [&](const Row& r) {
      if (!r.Has(0) || !r.Has(3)) return true;
      const std::string_view t = r.Str(0);
      if (t.find("-OST") == std::string_view::npos) return true;
      const int64_t k = bucket_of(r.Int(1), r.Has(2) ? r.Int(2) : kSec);
      if (k < 0) return true;
      const double n = (r.Has(4) ? static_cast<double>(r.Int(4)) : 0) + (r.Has(5) ? static_cast<double>(r.Int(5)) : 0);
      if (n <= 0) return true;
      Server& s = cached(last_brw, "ost", t);
      s.demand_signal = true;
      Cell& c = s.cells[static_cast<size_t>(k)];
      c.brw_ios += n;
      c.brw_ms += n * static_cast<double>(r.Int(3));
      res.records++;
      return true;
    });
    if (!st.ok()) return st;
  }
  // Client records: llite bandwidth per forwarding node, and the OSCs' RPCs
  // and queue depth per (forwarding node, OST) pair.
  struct Pair {
    double rpcs = 0, rpc_depth = 0;
  };
  // The (forwarding node, OST) paths seen, each with its per-bucket RPCs.
  std::unordered_map<uint64_t, size_t> pair_index;  // fwd << 32 | ost (server indices) -> pairs
  std::vector<std::pair<size_t, size_t>> pair_ends;  // (fwd, ost) per path
  std::vector<std::vector<Pair>> pairs;              // per path, per bucket
  {
    ScanQuery q;
    q.dataset = dataset::kClient;
    q.range = range;
    q.fields = {field::kHostName, field::kTimestamp, field::kLustreElapsedNs, field::kClientReadBytes,
                field::kClientWriteBytes, field::kClientReadOps, field::kClientWriteOps, field::kClientLayer,
                field::kLustreTarget, field::kClientRpcReads, field::kClientRpcWrites, field::kClientRpcReadInFlightMean,
                field::kClientRpcWriteInFlightMean};
    q.ordered = false;
    Last last_llite, last_osc;
    uint64_t last_path = UINT64_MAX;
    size_t last_pair = 0;
    Status st = store.Scan(q, [&](const Row& r) {
      if (!r.Has(0) || !r.Has(7)) return true;
      const std::string_view layer = r.Str(7);
      if (layer == "llite") {
        if (!opt.forwarding || (!r.Has(3) && !r.Has(4))) return true;
        const double b = (r.Has(3) ? static_cast<double>(r.Int(3)) : 0) + (r.Has(4) ? static_cast<double>(r.Int(4)) : 0);
        const bool work = (r.Has(5) && r.Int(5) > 0) || (r.Has(6) && r.Int(6) > 0);
        add_bw(last_llite, "forwarding", r.Str(0), r.Int(1), r.Has(2) ? r.Int(2) : kSec, b, work);
        return true;
      }
      if (layer != "osc" || !r.Has(8)) return true;
      const double rr = r.Has(9) ? static_cast<double>(r.Int(9)) : 0, rw = r.Has(10) ? static_cast<double>(r.Int(10)) : 0;
      if (rr + rw <= 0) return true;
      const int64_t k = bucket_of(r.Int(1), r.Has(2) ? r.Int(2) : kSec);
      if (k < 0) return true;
      const double dr = r.Has(11) ? r.Double(11) : 1, dw = r.Has(12) ? r.Double(12) : 1;
      const std::string_view t = r.Str(8);
      const size_t osc = t.find("-osc-");
      if (osc == std::string_view::npos) return true;
      cached(last_osc, "forwarding", r.Str(0)).demand_signal = true;
      const size_t fi = last_osc.ix, oi = server_ix("ost", t.substr(0, osc));
      servers[oi].demand_signal = true;
      const uint64_t path = static_cast<uint64_t>(fi) << 32 | oi;
      if (path != last_path) {
        auto [it, added] = pair_index.emplace(path, pairs.size());
        if (added) {
          pair_ends.emplace_back(fi, oi);
          pairs.emplace_back(nb);
        }
        last_path = path;
        last_pair = it->second;
      }
      Pair& p = pairs[last_pair][static_cast<size_t>(k)];
      p.rpcs += rr + rw;
      p.rpc_depth += rr * dr + rw * dw;
      res.records++;
      return true;
    });
    if (!st.ok()) return st;
  }
  // Per bucket, the OSSes' mean ost_io waits (sorted) for the peers' median.
  auto oss_wait = [&](size_t oss, size_t b) {
    const auto& w = oss_waits[oss][b];
    return w.second > 0 ? w.first / w.second : 0.0;
  };
  std::vector<std::vector<double>> waits(oss_waits.empty() ? 0 : nb);
  for (size_t o = 0; o < oss_waits.size(); ++o)
    for (size_t b = 0; b < nb; ++b)
      if (oss_waits[o][b].second > 0) waits[b].push_back(oss_wait(o, b));
  for (auto& v : waits) std::sort(v.begin(), v.end());
  // Per bucket, the OSTs' service times (sorted) for the peers' median.
  std::vector<std::vector<double>> svc(nb);
  for (const auto& s : servers)
    if (s.kind == "ost")
      for (size_t b = 0; b < nb; ++b)
        if (s.cells[b].brw_ios > 0) svc[b].push_back(s.cells[b].brw_ms / s.cells[b].brw_ios);
  for (auto& v : svc) std::sort(v.begin(), v.end());
  // An OST's service time against its peers' in bucket b (0: unknown).
  auto svc_ratio = [&](size_t ost, size_t b) {
    const Cell& c = servers[ost].cells[b];
    if (c.brw_ios <= 0 || svc[b].size() < 2) return 0.0;
    const double own = c.brw_ms / c.brw_ios, peers = MedianWithout(svc[b], own);
    return peers > 0 ? own / peers : 0.0;
  };
  // Queue depths against the peers': per (bucket, server) the RPC-weighted
  // depth towards/from everyone, so "the others" is the total minus the pair.
  // A forwarding node alone on an OST is held against the queue the OST's
  // own service time explains (its brw time over its peers': a healthy
  // client's queue grows with the server's service time, Little's law).
  {
    std::vector<std::vector<Pair>> total(servers.size());  // per server index, per bucket
    for (size_t pi = 0; pi < pairs.size(); ++pi)
      for (size_t s : {pair_ends[pi].first, pair_ends[pi].second}) {
        auto& t = total[s];
        if (t.empty()) t.resize(nb);
        for (size_t b = 0; b < nb; ++b) {
          t[b].rpcs += pairs[pi][b].rpcs;
          t[b].rpc_depth += pairs[pi][b].rpc_depth;
        }
      }
    for (size_t pi = 0; pi < pairs.size(); ++pi) {
      const auto [f, o] = pair_ends[pi];
      // side: the server judged; other: the server at the other end, whose other peers are the reference.
      for (auto [side, other] : {std::pair<size_t, size_t>{f, o}, {o, f}})
        for (size_t b = 0; b < nb; ++b) {
          const Pair& p = pairs[pi][b];
          if (p.rpcs <= 0) continue;
          const Pair& t = total[other][b];
          Cell& c = servers[side].cells[b];
          c.rpcs += p.rpcs;
          c.rpc_depth += p.rpc_depth;
          const double rest = t.rpcs - p.rpcs;
          double ref = rest > 0 ? (t.rpc_depth - p.rpc_depth) / rest : 0;
          if (ref <= 0 && side == f) ref = svc_ratio(o, b);
          if (ref <= 0) continue;
          c.ref_w += p.rpcs * ref;
          c.ref_rpcs += p.rpcs;
        }
    }
  }
  res.servers = servers.size();

  ScreenState local;
  ScreenState* st = state ? state : &local;
  const bool continues = state && st->to_ns == from_ns;
  std::map<std::string, ScreenState::Open> still_open;
  enum Verdict { kIdle, kUnknown, kFine, kLow };
  for (auto& ser : servers) {
    if ((ser.kind == "ost" && !opt.osts) || (ser.kind == "forwarding" && !opt.forwarding)) continue;
    const std::string key = Key(ser.kind, ser.name);
    double peak = 0;
    std::string peak_source;
    if (auto p = peaks.find(ser.name); p != peaks.end()) {
      peak = p->second;
      peak_source = "file";
    } else if (!ser.demand_signal) {  // nothing tells its demand: Beacon's rule on the largest bandwidth seen
      double seen = 0;
      for (const Cell& c : ser.cells) seen = std::max(seen, c.max_bw);
      double& remembered = st->peaks[key];
      remembered = std::max(remembered, seen);
      peak = remembered;
      peak_source = "observed";
    }
    bool in_run = false;
    ScreenState::Open run;
    if (continues)
      if (auto it = st->open.find(key); it != st->open.end()) {
        in_run = true;
        run = it->second;
      }
    std::vector<double> e_svc, e_psvc, e_q, e_pq, e_cost, e_peers, e_wait, e_pwait;
    double e_bw = 0;
    int low_n = 0, unknown_n = 0;
    auto close = [&](bool open) {
      Occurrence o;
      o.kind = ser.kind;
      o.name = ser.name;
      o.start_ns = run.start_ns;
      o.end_ns = run.last_low_end_ns;
      o.max_bw_ratio = run.max_ratio;
      o.peak = peak;
      o.open = open;
      o.rule = run.rule;
      auto& e = o.evidence;
      e.low_minutes = low_n;
      e.unknown_minutes = unknown_n;
      e.service_ms = MedianOf(e_svc);
      e.peer_service_ms = MedianOf(e_psvc);
      e.queue_depth = MedianOf(e_q);
      e.peer_queue_depth = MedianOf(e_pq);
      e.cost_ratio = MedianOf(e_cost);
      e.peers = MedianOf(e_peers);
      e.bandwidth = e_bw;
      e.peak_source = peak > 0 ? peak_source : "";
      e.ost_io_wait_ms = MedianOf(e_wait) / 1e6;
      e.peer_ost_io_wait_ms = MedianOf(e_pwait) / 1e6;
      if (e.ost_io_wait_ms > 0)
        for (const auto& [name, ix] : oss_index)
          if (ix == ser.oss) e.oss = name;
      if (o.end_ns - o.start_ns >= opt.min_duration_ns) {
        o.is_new = !st->reported.count(o.Id());
        st->reported.insert(o.Id());
        res.occurrences.push_back(o);
      }
      in_run = false;
      e_svc.clear(), e_psvc.clear(), e_q.clear(), e_pq.clear(), e_cost.clear(), e_peers.clear(), e_wait.clear(),
          e_pwait.clear();
      e_bw = 0;
      low_n = unknown_n = 0;
    };
    for (size_t b = 0; b < nb; ++b) {
      const Cell& c = ser.cells[b];
      Verdict v = kIdle;
      bool demand_low = false, bw_low = false;
      double cost = 0, svc_ms = 0, peer_svc = 0, peers_n = 0;
      const double depth = c.rpcs > 0 ? c.rpc_depth / c.rpcs : 0;
      const double ref_depth = c.ref_rpcs > 0 ? c.ref_w / c.ref_rpcs : 0;
      const double own_depth = c.ref_rpcs > 0 ? depth : 0;
      const bool has_io = c.brw_ios > 0 || c.rpcs > 0;
      if (has_io || c.work) v = kUnknown;
      // Demand rule.
      if (ser.kind == "ost" && c.brw_ios > 0 && svc[b].size() >= 2) {
        svc_ms = c.brw_ms / c.brw_ios;
        peer_svc = MedianWithout(svc[b], svc_ms);
        peers_n = static_cast<double>(svc[b].size() - 1);
        if (peer_svc > 0) cost = svc_ms / peer_svc;
      } else if (ref_depth > 0) {
        cost = own_depth / ref_depth;
        peers_n = 1;
      }
      if (cost > 0) {
        v = kFine;
        demand_low = cost >= opt.peer_factor;
      }
      // Bandwidth rule where a peak is known.
      double bw_ratio = 0;
      if (peak > 0 && c.work) {
        bw_ratio = c.max_bw / peak;
        // Saturated: a queue of its own making, i.e. counted against what the
        // same clients kept towards other servers (a slow forwarding node
        // deepens its queues to every OST, a slow OST every client's to it).
        const double own_queue = ref_depth > 0 ? depth / std::max(1.0, ref_depth) : depth;
        const bool saturated = c.rpcs > 0 ? own_queue >= opt.saturated_depth : !ser.demand_signal;
        bw_low = bw_ratio < opt.fraction && saturated;
        if (v != kLow) v = kFine;
      }
      if (demand_low || bw_low) v = kLow;
      const int64_t bstart = from_ns + static_cast<int64_t>(b) * opt.bucket_ns;
      if (v == kLow) {
        if (!in_run) {
          in_run = true;
          run = {bstart, bstart, 0, ""};
        }
        run.last_low_end_ns = std::min(to_ns, bstart + opt.bucket_ns);
        const double ratio = peak_source == "file" ? bw_ratio : (cost > 0 ? 1 / cost : bw_ratio);
        run.max_ratio = std::max(run.max_ratio, ratio);
        for (auto [fired, name] : {std::pair<bool, const char*>{demand_low, "demand"}, {bw_low, "bandwidth"}})
          if (fired && run.rule.find(name) == std::string::npos) {
            run.rule = run.rule.empty() ? name : (std::string(name) == "demand" ? "demand+" + run.rule : run.rule + "+" + name);
          }
        low_n++;
        if (svc_ms > 0) e_svc.push_back(svc_ms), e_psvc.push_back(peer_svc);
        if (ref_depth > 0) e_q.push_back(own_depth), e_pq.push_back(ref_depth);
        if (cost > 0) e_cost.push_back(cost);
        if (ser.oss != SIZE_MAX && waits[b].size() >= 2)
          if (const double own = oss_wait(ser.oss, b); own > 0) {
            e_wait.push_back(own);
            e_pwait.push_back(MedianWithout(waits[b], own));
          }
        e_peers.push_back(peers_n);
        e_bw = std::max(e_bw, c.max_bw);
      } else if (v == kUnknown) {
        if (in_run) unknown_n++;
      } else if (in_run) {  // fine or idle: the occurrence is over
        close(false);
      }
    }
    if (in_run) {
      still_open[key] = run;
      close(true);
    }
  }
  // Runs carried in for servers without records in this range stay open.
  if (continues)
    for (const auto& [key, run] : st->open)
      if (const size_t colon = key.find(':'); colon != std::string::npos) {
        const std::string_view kind(key.data(), colon), name = std::string_view(key).substr(colon + 1);
        if (!(kind == "ost" ? ost_index : fwd_index).count(name)) still_open.emplace(key, run);
      }
  st->open = std::move(still_open);
  st->to_ns = to_ns;
  std::sort(res.occurrences.begin(), res.occurrences.end(), [](const Occurrence& a, const Occurrence& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.kind + a.name < b.kind + b.name;
  });
  return res;
}

std::string ScreenToJson(const ScreenResult& r, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  KvAll(w, "from", FormatIsoMillis(r.from_ns), "to", FormatIsoMillis(r.to_ns), "servers", r.servers);
  w.Key("occurrences");
  w.BeginArray();
  for (const auto& o : r.occurrences) {
    w.BeginObject();
    KvAll(w, "kind", o.kind, "name", o.name, "start", FormatIsoMillis(o.start_ns), "end", FormatIsoMillis(o.end_ns),
          "duration_s", static_cast<double>(o.end_ns - o.start_ns) / 1e9, "max_bw_ratio", o.max_bw_ratio,
          "peak_bytes_per_s", o.peak, "open", o.open, "new", o.is_new, "rule", o.rule);
    const auto& e = o.evidence;
    w.Key("evidence");
    w.BeginObject();
    w.Kv("low_minutes", static_cast<int64_t>(e.low_minutes));
    w.Kv("unknown_minutes", static_cast<int64_t>(e.unknown_minutes));
    if (e.service_ms > 0) {
      w.Kv("service_ms", e.service_ms);
      w.Kv("peer_service_ms", e.peer_service_ms);
    }
    if (e.peer_queue_depth > 0) {
      w.Kv("queue_depth", e.queue_depth);
      w.Kv("peer_queue_depth", e.peer_queue_depth);
    }
    if (e.cost_ratio > 0) w.Kv("cost_ratio", e.cost_ratio);
    if (e.ost_io_wait_ms > 0) {
      KvAll(w, "oss", e.oss, "ost_io_wait_ms", e.ost_io_wait_ms, "peer_ost_io_wait_ms", e.peer_ost_io_wait_ms);
    }
    w.Kv("peers", e.peers);
    w.Kv("bandwidth", e.bandwidth);
    if (!e.peak_source.empty()) w.Kv("peak", e.peak_source);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

std::string DurationTable(const std::vector<Occurrence>& occ) {
  const double bands[] = {0, 1, 4, 12, 96};
  const char* names[] = {"(0,1)", "[1,4)", "[4,12)", "[12,96)", ">=96"};
  int count[5][2] = {};
  for (const auto& o : occ) {
    const double h = static_cast<double>(o.end_ns - o.start_ns) / 3.6e12;
    int b = 0;
    for (int i = 4; i >= 0; --i)
      if (h >= bands[i]) {
        b = i;
        break;
      }
    count[b][o.kind == "ost" ? 1 : 0]++;
  }
  std::string out = "duration (hours)  forwarding node  OST\n";
  char buf[96];
  for (int i = 0; i < 5; ++i) {
    std::snprintf(buf, sizeof buf, "%-16s  %15d  %3d\n", names[i], count[i][0], count[i][1]);
    out += buf;
  }
  return out;
}

// "service 4.0 ms per I/O vs its 7 peers' 1.0 ms; 4.0 RPCs in flight vs 1.0 ..."
std::string EvidenceText(const Occurrence& o) {
  const auto& e = o.evidence;
  std::string out;
  char b[200];
  if (e.service_ms > 0) {
    std::snprintf(b, sizeof b, "service %.1f ms per I/O vs its %.0f peers' %.1f ms", e.service_ms, e.peers, e.peer_service_ms);
    out += b;
  }
  if (e.peer_queue_depth > 0) {
    std::snprintf(b, sizeof b, "%s%.1f RPCs in flight vs %.1f on the same paths", out.empty() ? "" : "; ", e.queue_depth,
                  e.peer_queue_depth);
    out += b;
  }
  if (e.ost_io_wait_ms > 0) {
    std::snprintf(b, sizeof b, "%sits OSS %s's requests waited %.2f ms for an ost_io thread vs %.2f ms on the other OSSes",
                  out.empty() ? "" : "; ", e.oss.c_str(), e.ost_io_wait_ms, e.peer_ost_io_wait_ms);
    out += b;
  }
  if (o.peak > 0) {
    std::snprintf(b, sizeof b, "%sat most %.0f %% of its %s peak", out.empty() ? "" : "; ", 100 * o.max_bw_ratio,
                  e.peak_source == "file" ? "known" : "observed");
    out += b;
  }
  std::snprintf(b, sizeof b, "%s%d slow minutes", out.empty() ? "" : "; ", e.low_minutes);
  out += b;
  return out;
}

std::string ScreenToTable(const ScreenResult& r) {
  std::string out = "screened " + FormatIsoMillis(r.from_ns) + " .. " + FormatIsoMillis(r.to_ns) + ": " +
                    std::to_string(r.servers) + " servers, " + std::to_string(r.occurrences.size()) + " occurrences\n";
  char buf[256];
  for (const auto& o : r.occurrences) {
    std::snprintf(buf, sizeof buf, "  %-10s %-20s %s .. %s  %6.0f min  rule %s%s%s\n", o.kind.c_str(), o.name.c_str(),
                  FormatIsoMillis(o.start_ns).c_str(), FormatIsoMillis(o.end_ns).c_str(),
                  static_cast<double>(o.end_ns - o.start_ns) / 6e10, o.rule.c_str(), o.open ? " (open)" : "",
                  o.is_new ? "" : " (reported before)");
    out += buf;
    out += "             " + EvidenceText(o) + "\n";
  }
  if (!r.occurrences.empty()) out += DurationTable(r.occurrences);
  return out;
}

std::string ScreenToRecords(const ScreenResult& r, const std::string& host) {
  std::string out;
  for (const auto& o : r.occurrences) {
    const std::string end = FormatIsoMillis(o.end_ns);
    const int64_t stream = analysis::ResultStreamId(dataset::kResultAnomaly.name(), {std::string_view("occurrence"), o.Id(), end});
    JsonWriter w(&out, 0);
    analysis::BeginResultRecord(w, o.start_ns, dataset::kResultAnomaly, stream, 0, host);
    KvAll(w, field::kResultAnalysis, "occurrence", field::kResultTarget, o.name, field::kResultMetric, "max_bw_ratio",
          field::kResultScore, o.max_bw_ratio, field::kResultIntervalNs, o.end_ns - o.start_ns);
    w.Kv(field::kResultReason, std::string(o.kind == "ost" ? "OST" : "forwarding node") + " slow for its demand (rule " +
                                   o.rule + "): " + EvidenceText(o));
    w.EndObject();
    out.push_back('\n');
  }
  return out;
}

Status WriteOccurrencesToDb(MysqlConn& db, const ScreenResult& r) {
  const std::string now = SqlDatetime(NowNs());
  return db.Transaction([&]() -> Status {
    for (const auto& o : r.occurrences) {
      results::server_anomaly::Row row;
      row.kind = o.kind;
      row.server = o.name;
      row.start_time = SqlDatetime(o.start_ns);
      row.end_time = SqlDatetime(o.end_ns);
      row.duration_s = static_cast<double>(o.end_ns - o.start_ns) / 1e9;
      row.max_bw_ratio = o.max_bw_ratio;
      row.peak = o.peak;
      row.still_open = o.open ? 1 : 0;
      row.updated_at = now;  // alerted_at: NULL for a new occurrence, kept on one seen before
      Status st = results::Upsert(db, row, {.keep = {"alerted_at"}, .greatest = {"max_bw_ratio"}});
      if (!st.ok()) return st;
    }
    // Open rows that ended before this range began and were not continued are closed.
    auto c = db.Exec("UPDATE server_anomaly SET still_open = 0, updated_at = ? WHERE still_open = 1 AND updated_at < ? "
                     "AND end_time < ?",
                     {now, now, SqlDatetime(r.from_ns)});
    if (!c.ok()) return c.status();
    return Status::Ok();
  });
}

Result<std::pair<std::string, std::string>> ReportSection(Store& store, int64_t from_ns, int64_t to_ns) {
  struct Occ {
    int64_t start = 0, dur = 0;
    double ratio = 0;
    std::string reason;
  };
  struct Job {
    double slowdown = 0;
    int64_t first_seq = INT64_MAX;
    std::string neighbour, evidence;
    bool anomalous = false;
  };
  std::map<std::pair<std::string, int64_t>, Occ> occ;  // (server, start)
  std::map<std::string, Job> jobs;
  ScanQuery q;
  q.dataset = dataset::kResultAnomaly;
  q.range = {from_ns, to_ns};
  q.fields = {field::kTimestamp, field::kResultAnalysis, field::kResultTarget, field::kResultReason, field::kResultScore,
              field::kResultIntervalNs, field::kJobId, field::kEventSeq};
  Status st = store.Scan(q, [&](const Row& r) {
    const std::string_view a = r.Has(1) ? r.Str(1) : std::string_view();
    if (a == "occurrence" && r.Has(2)) {
      Occ& o = occ[{std::string(r.Str(2)), r.Int(0)}];
      o.start = r.Int(0);
      o.dur = std::max(o.dur, r.Has(5) ? r.Int(5) : 0);
      o.ratio = std::max(o.ratio, r.Has(4) ? r.Double(4) : 0.0);
      if (r.Has(3)) o.reason = std::string(r.Str(3));
    } else if (r.Has(6) && a == "job") {
      Job& j = jobs[std::string(r.Str(6))];
      j.anomalous = r.Has(3) && r.Str(3) == "anomalous";
      j.slowdown = r.Has(4) ? r.Double(4) : 0;
    } else if (r.Has(6) && a == "neighbour" && r.Has(7)) {
      Job& j = jobs[std::string(r.Str(6))];
      if (r.Int(7) < j.first_seq) {
        j.first_seq = r.Int(7);
        j.neighbour = r.Has(2) ? std::string(r.Str(2)) : "";
        j.evidence = r.Has(3) ? std::string(r.Str(3)) : "";
      }
    }
    return true;
  });
  if (!st.ok()) return st;
  std::string h, t;
  char b[256];
  size_t anomalous = 0;
  for (const auto& [id, j] : jobs) anomalous += j.anomalous;
  if (occ.empty() && anomalous == 0) return std::pair<std::string, std::string>();
  h += "<h2>I/O anomalies (iosonar screen, iosonar anomaly)</h2>\n";
  t += "I/O anomalies\n";
  if (!occ.empty()) {
    h += "<h3>Servers slow for the work they had (iosonar screen)</h3>\n<table><tr><th>server</th><th>start</th>"
         "<th>minutes</th><th>evidence</th></tr>\n";
    for (const auto& [key, o] : occ) {
      std::snprintf(b, sizeof b, "<td class=\"n\">%.0f</td>", static_cast<double>(o.dur) / 6e10);
      h += "<tr><td>" + HtmlEscape(key.first) + "</td><td>" + FormatIsoMillis(o.start) + "</td>" + b + "<td>" + HtmlEscape(o.reason) +
           "</td></tr>\n";
      std::snprintf(b, sizeof b, "  %s from %s for %.0f min: ", key.first.c_str(), FormatIsoMillis(o.start).c_str(),
                    static_cast<double>(o.dur) / 6e10);
      t += b + o.reason + "\n";
    }
    h += "</table>\n";
  }
  if (anomalous) {
    h += "<h3>Jobs slower than their earlier runs</h3>\n<table><tr><th>job</th><th>slowdown</th>"
         "<th>first neighbour</th><th>evidence</th></tr>\n";
    for (const auto& [id, j] : jobs) {
      if (!j.anomalous) continue;
      std::snprintf(b, sizeof b, "<td class=\"n\">%.1fx</td>", j.slowdown);
      h += "<tr><td>" + HtmlEscape(id) + "</td>" + b + "<td>" + HtmlEscape(j.neighbour) + "</td><td>" + HtmlEscape(j.evidence) + "</td></tr>\n";
      std::snprintf(b, sizeof b, "  job %s: %.1fx its history", id.c_str(), j.slowdown);
      t += b;
      if (!j.neighbour.empty()) t += "; first neighbour " + j.neighbour + " (" + j.evidence + ")";
      t += "\n";
    }
    h += "</table>\n";
  }
  t += "\n";
  return std::make_pair(h, t);
}

}  // namespace iosonar::anomaly
