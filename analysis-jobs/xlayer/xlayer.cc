#include "analysis-jobs/xlayer/xlayer.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/jobdb/jobdb.h"
#include "analysis-jobs/lib/coverage.h"
#include "analysis-jobs/lib/format.h"
#include "analysis-jobs/summarize/fs_context.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/results/results.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::xlayer {
namespace {

using analysis::format::Trim;

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool ParseInt(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  bool neg = false;
  if (s.front() == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *out = neg ? -v : v;
  return true;
}

int HexIndexAfter(std::string_view target, std::string_view tag) {
  const size_t p = target.find(tag);
  if (p == std::string_view::npos) return -1;
  std::string_view h = target.substr(p + tag.size(), 4);
  if (h.size() != 4) return -1;
  int v = 0;
  for (char c : h) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// Server records stamped up to this long after the window can still overlap
// it (an exporter's interval is seconds to a few minutes).
constexpr int64_t kMaxElapsedNs = 300LL * 1000000000LL;

// a == b without a libc call for short strings; longer ones (file paths,
// which differ mostly near their end) compare their last 8 bytes first.
inline bool SameText(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n >= 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + n - 8, 8);
    std::memcpy(&y, b.data() + n - 8, 8);
    if (x != y) return false;
    return n <= 16 ? (std::memcpy(&x, a.data(), 8), std::memcpy(&y, b.data(), 8), x == y)
                   : std::memcmp(a.data(), b.data(), n - 8) == 0;
  }
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// s == lit, inlined (lit a string literal).
template <size_t N>
inline bool Is(std::string_view s, const char (&lit)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

bool IsMetaOp(std::string_view op) {
  return Is(op, "open") || Is(op, "close") || Is(op, "stat") || Is(op, "access") || Is(op, "unlink") ||
         Is(op, "rename") || Is(op, "mkdir") || Is(op, "rmdir");
}

// Strings to dense indices: open addressing on a 64-bit hash (10^7 lookups:
// std::unordered_map<std::string> cost ~half of a 1,024-node job's
// analysis). With verify=false two strings with the same 64-bit hash are
// taken as one (file paths: a chance of about n^2 / 2^65 for n files), which
// spares a cache miss on the stored string per lookup.
class Interner {
 public:
  explicit Interner(bool verify) : verify_(verify) {}
  std::vector<std::string> names;
  // The index of s, and whether it is new.
  std::pair<uint32_t, bool> Intern(std::string_view s) { return Intern(s, Hash(s)); }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t hash = 0;
    uint32_t idx = kEmpty;
  };
  std::pair<uint32_t, bool> Intern(std::string_view s, uint64_t h) {
    if ((names.size() + 1) * 2 > slots_.size()) Grow();
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& sl = slots_[i];
      if (sl.idx == kEmpty) {
        sl = {h, static_cast<uint32_t>(names.size())};
        names.emplace_back(s);
        return {sl.idx, true};
      }
      if (sl.hash == h && (!verify_ || SameText(names[sl.idx], s))) return {sl.idx, false};
    }
  }
  // Eight bytes a step (byte-wise FNV-1a was a fifth of the scan on 40-byte
  // paths). Each step, h -> (h ^ w) * K then h ^= h >> 29, is a bijection of
  // h for a given word, so equal-length strings that differ in one word never
  // collide, and others as rarely as with any 64-bit hash.
  static uint64_t Hash(std::string_view s) {
    const char* p = s.data();
    size_t n = s.size();
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(n) * 0xff51afd7ed558ccdull);
    auto step = [&h](uint64_t w) {
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 29;
    };
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      step(w);
    }
    if (n) {
      uint64_t w = 0;
      std::memcpy(&w, p, n);
      step(w ^ (static_cast<uint64_t>(n) << 56));
    }
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& o : old) {
      if (o.idx == kEmpty) continue;
      size_t i = o.hash & mask_;
      while (slots_[i].idx != kEmpty) i = (i + 1) & mask_;
      slots_[i] = o;
    }
  }
  bool verify_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace

int OstIndexOf(std::string_view target) { return HexIndexAfter(target, "-OST"); }
int MdtIndexOf(std::string_view target) { return HexIndexAfter(target, "-MDT"); }

// ---- lfs getstripe -----------------------------------------------------------

std::vector<Layout> ParseGetstripe(std::string_view text, std::vector<ParseIssue>* issues) {
  std::vector<Layout> out;
  Layout cur;
  bool have = false, in_table = false;
  auto flush = [&] {
    if (have && !cur.osts.empty()) out.push_back(std::move(cur));
    cur = Layout{};
    have = false;
    in_table = false;
  };
  auto issue = [&](size_t line, std::string what) {
    if (issues) issues->push_back({line, std::move(what)});
  };
  size_t lineno = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view raw = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::string_view line = Trim(raw);
    if (line.empty()) {
      in_table = false;
      continue;
    }
    const bool indented = raw.front() == ' ' || raw.front() == '\t';
    if (!indented && !StartsWith(line, "lmm_") && !StartsWith(line, "lcm_") && !StartsWith(line, "lcme_") &&
        !StartsWith(line, "stripe_") && !StartsWith(line, "obdidx") && !StartsWith(line, "- ")) {
      flush();
      cur.path = std::string(line);
      have = true;
      continue;
    }
    if (!have) {
      issue(lineno, "layout line before any file name: '" + std::string(line.substr(0, 60)) + "'");
      continue;
    }
    if (StartsWith(line, "obdidx")) {
      in_table = true;
      continue;
    }
    if (StartsWith(line, "lmm_stripe_size:")) {
      int64_t v = 0;
      if (ParseInt(line.substr(16), &v)) {
        if (cur.stripe_size == 0) cur.stripe_size = v;
      } else {
        issue(lineno, "lmm_stripe_size is not a number");
      }
      continue;
    }
    if (StartsWith(line, "lmm_mdt_index:") || StartsWith(line, "lmm_stripe_offset:")) continue;
    const size_t li = line.find("l_ost_idx:");
    if (li != std::string_view::npos) {  // PFL: "- 0: { l_ost_idx: 3, l_fid: [...] }"
      std::string_view rest = line.substr(li + 10);
      const size_t end = rest.find_first_of(",}");
      int64_t v = 0;
      if (ParseInt(rest.substr(0, end), &v) && v >= 0 && v < (1 << 20)) cur.osts.push_back(static_cast<int>(v));
      else issue(lineno, "l_ost_idx is not an OST index");
      continue;
    }
    if (in_table) {  // "     2        1234       0x4d2        0"
      const size_t sp = line.find_first_of(" \t");
      int64_t v = 0;
      if (ParseInt(line.substr(0, sp), &v) && v >= 0 && v < (1 << 20)) cur.osts.push_back(static_cast<int>(v));
      else issue(lineno, "obdidx row does not start with an OST index: '" + std::string(line.substr(0, 60)) + "'");
      continue;
    }
    // Other keys (lmm_pattern, lcme_extent.e_start, lmm_objects:, ...) carry nothing we need.
  }
  flush();
  return out;
}

// ---- maps JSON ------------------------------------------------------------------

Result<Maps> MapsFromJson(std::string_view json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  if (d.HasParseError())
    return Status::Invalid(std::string("maps: JSON error at offset ") + std::to_string(d.GetErrorOffset()) + ": " +
                           rapidjson::GetParseError_En(d.GetParseError()));
  if (!d.IsObject()) return Status::Invalid("maps: not a JSON object");
  Maps m;
  if (d.HasMember("filesystem") && d["filesystem"].IsString()) m.fs = d["filesystem"].GetString();
  if (d.HasMember("node_forwarding") && d["node_forwarding"].IsObject())
    for (auto it = d["node_forwarding"].MemberBegin(); it != d["node_forwarding"].MemberEnd(); ++it)
      if (it->value.IsString()) m.node_fwd[it->name.GetString()] = it->value.GetString();
  if (d.HasMember("jobs") && d["jobs"].IsArray()) {
    size_t k = 0;
    for (const auto& j : d["jobs"].GetArray()) {
      ++k;
      if (!j.IsObject() || !j.HasMember("job_id") || !j["job_id"].IsString())
        return Status::Invalid("maps: jobs[" + std::to_string(k - 1) + "] has no string job_id");
      JobInfo ji;
      ji.id = j["job_id"].GetString();
      if (j.HasMember("start_ns") && j["start_ns"].IsInt64()) ji.start_ns = j["start_ns"].GetInt64();
      if (j.HasMember("end_ns") && j["end_ns"].IsInt64()) ji.end_ns = j["end_ns"].GetInt64();
      if (j.HasMember("nodes") && j["nodes"].IsArray())
        for (const auto& n : j["nodes"].GetArray())
          if (n.IsString()) ji.nodes.emplace_back(n.GetString());
      m.jobs[ji.id] = std::move(ji);
    }
  }
  if (d.HasMember("layouts") && d["layouts"].IsArray()) {
    for (const auto& l : d["layouts"].GetArray()) {
      if (!l.IsObject() || !l.HasMember("path") || !l["path"].IsString()) continue;
      Layout L;
      L.path = l["path"].GetString();
      if (l.HasMember("stripe_size") && l["stripe_size"].IsInt64()) L.stripe_size = l["stripe_size"].GetInt64();
      if (l.HasMember("mdt") && l["mdt"].IsInt()) L.mdt = l["mdt"].GetInt();
      if (l.HasMember("osts") && l["osts"].IsArray())
        for (const auto& o : l["osts"].GetArray())
          if (o.IsInt()) L.osts.push_back(o.GetInt());
      m.layouts[L.path] = std::move(L);
    }
  }
  return m;
}

// ---- the view ------------------------------------------------------------------

void Series::Resize(size_t n) {
  for (auto* v : {&read_bytes, &write_bytes, &data_ops, &meta_ops}) v->assign(n, 0.0);
}
double Series::TotalBytes() const {
  double s = 0;
  for (size_t i = 0; i < read_bytes.size(); ++i) s += read_bytes[i] + write_bytes[i];
  return s;
}

namespace {

// The cross-layer view of one job, a layer at a time: the client layer (the
// job's trace) fixes the window, nodes and files; the forwarding layer (llite
// of the job's forwarding nodes, osc per OST), the job's own server counters
// (job_stats), which OSTs the job used, the OST layer and the MDT layer
// follow; the coverage factors close.
class Analysis {
 public:
  Analysis(Store& store, const std::string& job_id, const Maps& maps, const Options& opt)
      : store_(store), job_id_(job_id), maps_(maps), B_(opt.bucket_ns > 0 ? opt.bucket_ns : 1000000000) {}

  Result<View> Run() {
    v_.job_id = job_id_;
    auto jit = maps_.jobs.find(job_id_);
    if (jit != maps_.jobs.end() && jit->second.end_ns > jit->second.start_ns) job_ = &jit->second;
    if (job_) {
      v_.start_ns = job_->start_ns;
      v_.end_ns = job_->end_ns;
      v_.window_source = "maps";
    }
    if (Status st = ClientLayer(); !st.ok()) return st;
    if (Status st = ForwardingLayer(); !st.ok()) return st;
    if (Status st = JobStats(); !st.ok()) return st;
    ChooseOsts();
    if (Status st = OstLayer(); !st.ok()) return st;
    if (Status st = MdtLayer(); !st.ok()) return st;
    if (Status st = ComputeCoverage(); !st.ok()) return st;
    return std::move(v_);
  }

 private:
  void SetUpWindow() {
    nb_ = static_cast<size_t>((v_.end_ns - v_.start_ns + B_ - 1) / B_);
    for (Series* s : {&v_.client, &v_.fwd, &v_.ost, &v_.mdt}) {
      s->start_ns = v_.start_ns;
      s->bucket_ns = B_;
      s->Resize(nb_);
    }
    // Server records stamped in (start, end + kMaxElapsedNs) can overlap the window.
    srange_.start_ns = v_.start_ns + 1;
    srange_.end_ns = v_.end_ns + kMaxElapsedNs;
  }
  void SetUpFwd(const std::vector<std::string>& node_list) {
    for (const auto& n : node_list) {
      auto it = maps_.node_fwd.find(n);
      if (it == maps_.node_fwd.end()) {
        ++v_.unmapped_nodes;
        continue;
      }
      fwd_ix_.try_emplace(it->second, 0);
    }
    int k = 0;
    for (auto& [name, ix] : fwd_ix_) {
      ix = k++;
      v_.fwd_nodes.push_back(name);
    }
    fwd_job_bytes_.assign(v_.fwd_nodes.size(), 0.0);
    v_.nodes = node_list;
    std::sort(v_.nodes.begin(), v_.nodes.end());
  }
  int FwdOfHost(const std::string& h) const {
    auto it = maps_.node_fwd.find(h);
    if (it == maps_.node_fwd.end()) return -1;
    auto f = fwd_ix_.find(it->second);
    return f == fwd_ix_.end() ? -1 : f->second;
  }
  size_t Bucket(int64_t t) const {
    if (t < v_.start_ns) return 0;
    size_t b = static_cast<size_t>((t - v_.start_ns) / B_);
    return b < nb_ ? b : nb_ - 1;
  }
  // Server records (iosonar.client/.oss/.mds/.jobstats) cover
  // [@timestamp - lustre.elapsed_ns, @timestamp), the exporters' convention
  // (docs/analysis.md, "Time of server records"). Each is spread over the
  // buckets that interval overlaps, in proportion to the overlap; the part
  // outside the window is left out. A record without elapsed_ns counts in the
  // bucket just before its @timestamp. add(bucket, fraction of the record).
  template <class Add>
  void Spread(int64_t ts, int64_t elapsed, Add&& add) const {
    const int64_t a = elapsed > 0 ? ts - elapsed : ts - 1;
    const int64_t lo = std::max(a, v_.start_ns), hi = std::min(ts, v_.end_ns);
    if (hi <= lo || nb_ == 0) return;
    const double len = static_cast<double>(ts - a);
    for (size_t k = static_cast<size_t>((lo - v_.start_ns) / B_); k < nb_; ++k) {
      const int64_t bs = v_.start_ns + static_cast<int64_t>(k) * B_, be = bs + B_;
      const int64_t ol = std::max(lo, bs), oh = std::min(hi, be);
      if (oh > ol) add(k, static_cast<double>(oh - ol) / len);
      if (be >= hi) break;
    }
  }
  // ---- TOKIO's coverage factors: the job's I/O on the file system only
  // (analysis-jobs/lib/coverage.h, shared with summarize-job) ----
  Status ComputeCoverage() {
    constexpr int64_t kDay = 86400LL * 1000000000LL;
    auto mounts = analysis::ReadMounts(store_, v_.start_ns - kDay, v_.end_ns);
    if (!mounts.ok()) return mounts.status();
    std::vector<std::string> layouts;
    for (const auto& [path, l] : maps_.layouts) layouts.push_back(path);
    analysis::JobOnFs on(std::move(mounts).value(), maps_.fs, std::move(layouts));
    for (size_t i = 0; i < file_in_.names.size(); ++i)
      on.Add(file_in_.names[i], file_bytes_[i], file_opens_[i], file_stats_[i]);
    const auto c = analysis::Coverage(on, v_.fs_bytes, v_.fs_opens, v_.fs_stats);
    v_.job_fs_bytes = on.bytes();
    v_.coverage_basis = on.basis();
    v_.coverage_bytes = c.bytes.value_or(0);
    v_.coverage_opens = c.opens.value_or(0);
    v_.coverage_stats = c.stats.value_or(0);
    return Status::Ok();
  }

  // ---- client layer: the job's trace, as sums the store computes ----
  // Per host and op: bytes (the forwarding nodes' share of the job); per file
  // and op: bytes and ops (the files, their opens and stats); per op and
  // bucket of event.start_ns: bytes and ops (the series and the job's
  // totals). On an engine these are aggregations (no record leaves it); on
  // SQLite one unordered scan. Without a window in the maps it is the trace's
  // own (the first start and the last end, rounded out to whole buckets).
  Status ClientLayer() {
    const std::vector<FieldFilter> jf = {{field::kJobId, job_id_}};
    if (!job_) {
      auto span = store_.Span(std::string(dataset::kTrace.name()), jf, field::kEventStartNs, field::kEventEndNs);
      if (!span.ok()) return span.status();
      if (!span->first) return Status::NotFound("job " + job_id_ + " has no iosonar.trace records and no window in the maps");
      const int64_t tmin = *span->first;
      const int64_t tmax = std::max(tmin, span->second.value_or(tmin));
      v_.start_ns = tmin - ((tmin % B_) + B_) % B_;
      v_.end_ns = tmax - ((tmax % B_) + B_) % B_ + B_;
      v_.window_source = "trace";
    }
    SetUpWindow();
    std::vector<GroupQuery> qs(3);
    for (GroupQuery& q : qs) {
      q.dataset = dataset::kTrace;
      q.filters = jf;
    }
    // io.layer leads every key: mpiio runs (the MPI-IO layer) are the POSIX
    // bytes again, counted once, as POSIX.
    qs[0].keys = {field::kIoLayer, field::kHostName, field::kIoOp};
    qs[0].sums = {field::kIoBytes};
    qs[1].keys = {field::kIoLayer, field::kFilePath, field::kIoOp};
    qs[1].sums = {field::kIoBytes, field::kIoCount};
    qs[2].keys = {field::kIoLayer, field::kIoOp};
    qs[2].sums = {field::kIoBytes, field::kIoCount};
    if (nb_ > 0) {
      qs[2].split_field = field::kEventStartNs;
      qs[2].split_start = v_.start_ns;
      qs[2].split_width = B_;
      qs[2].split_count = nb_;
    }
    auto kind = [](std::string_view op) { return Is(op, "read") ? 0 : Is(op, "write") ? 1 : IsMetaOp(op) ? 2 : 3; };
    std::vector<std::pair<uint32_t, int64_t>> host_bytes;  // host, bytes read or written
    Status st = store_.Groups(qs, [&](size_t which, const Group& g) {
      if (g.keys[0] == "mpiio") return true;
      const int k = kind(g.keys.back());
      const int64_t bytes = g.sums[0];
      if (which == 0) {
        const uint32_t h = host_in_.Intern(g.keys[1]).first;
        if (k <= 1) host_bytes.emplace_back(h, bytes);
      } else if (which == 1) {
        auto [f, fresh] = file_in_.Intern(g.keys[1]);
        if (fresh) {
          file_bytes_.push_back(0);
          file_opens_.push_back(0);
          file_stats_.push_back(0);
        }
        const int64_t count = g.sums[1];
        if (k <= 1) file_bytes_[f] += static_cast<double>(bytes);
        else if (Is(g.keys[2], "open")) v_.job_opens += count, file_opens_[f] += static_cast<double>(count);
        else if (Is(g.keys[2], "stat")) v_.job_stats += count, file_stats_[f] += static_cast<double>(count);
      } else {
        const int64_t count = g.sums[1];
        v_.trace_records += g.count;
        if (nb_ == 0) return true;
        const size_t b = g.split;
        if (k <= 1) {
          (k == 0 ? v_.client.read_bytes : v_.client.write_bytes)[b] += static_cast<double>(bytes);
          v_.client.data_ops[b] += static_cast<double>(count);
          (k == 0 ? v_.job_read_bytes : v_.job_write_bytes) += bytes;
        } else if (k == 2) {
          v_.client.meta_ops[b] += static_cast<double>(count);
          v_.job_meta_ops += count;
        }
      }
      return true;
    });
    if (!st.ok()) return st;
    SetUpFwd(job_ && !job_->nodes.empty() ? job_->nodes : host_in_.names);
    for (const auto& [h, bytes] : host_bytes)
      if (const int f = FwdOfHost(host_in_.names[h]); f >= 0) fwd_job_bytes_[static_cast<size_t>(f)] += static_cast<double>(bytes);
    v_.job_bytes = v_.job_read_bytes + v_.job_write_bytes;
    v_.files = file_in_.names;
    std::sort(v_.files.begin(), v_.files.end());
    return Status::Ok();
  }

  // ---- forwarding layer: llite of the job's forwarding nodes, osc per OST ----
  Status ForwardingLayer() {
    std::vector<double> fwd_total(v_.fwd_nodes.size(), 0.0), fwd_ops(v_.fwd_nodes.size(), 0.0);
    std::vector<std::pair<double, double>> fwd_inflight(v_.fwd_nodes.size());  // rpcs, rpcs * in-flight
    if (!v_.fwd_nodes.empty()) {
      ScanQuery c;
      c.dataset = dataset::kClient;
      c.range = srange_;
      c.fields = {field::kHostName, field::kClientLayer, field::kTimestamp, field::kClientReadBytes,
                  field::kClientWriteBytes, field::kClientReadOps, field::kClientWriteOps, field::kClientMetadataOps,
                  field::kLustreTarget, field::kClientRpcReads, field::kClientRpcWrites,
                  field::kClientRpcReadInFlightMean, field::kClientRpcWriteInFlightMean, field::kLustreElapsedNs,
                  field::kLustreReset};
      Status st = store_.Scan(c, [&](const Row& row) {
        if (!row.Has(0) || (row.Has(14) && row.Int(14))) return true;
        auto it = fwd_ix_.find(std::string(row.Str(0)));
        if (it == fwd_ix_.end()) return true;
        const size_t f = static_cast<size_t>(it->second);
        auto num = [&](size_t k) { return row.Has(k) ? static_cast<double>(row.Int(k)) : 0.0; };
        auto dbl = [&](size_t k) { return row.Has(k) ? row.Double(k) : 0.0; };
        const int64_t el = row.Has(13) ? row.Int(13) : 0;
        if (row.Has(1) && row.Str(1) == "llite") {
          Spread(row.Int(2), el, [&](size_t b, double x) {
            v_.fwd.read_bytes[b] += x * num(3);
            v_.fwd.write_bytes[b] += x * num(4);
            v_.fwd.data_ops[b] += x * (num(5) + num(6));
            v_.fwd.meta_ops[b] += x * num(7);
            fwd_total[f] += x * (num(3) + num(4));
            fwd_ops[f] += x * (num(5) + num(6));
          });
        } else if (row.Has(8)) {
          const int o = OstIndexOf(row.Str(8));
          if (o < 0) return true;
          Spread(row.Int(2), el, [&](size_t, double x) {
            auto& p = osc_inflight_[o];
            const double rpcs = x * (num(9) + num(10)), weighted = x * (num(9) * dbl(11) + num(10) * dbl(12));
            p.first += rpcs;
            p.second += weighted;
            fwd_inflight[f].first += rpcs;
            fwd_inflight[f].second += weighted;
          });
        }
        return true;
      });
      if (!st.ok() && st.code() != Code::kNotFound) return st;
    }
    for (size_t f = 0; f < v_.fwd_nodes.size(); ++f) {
      ServerShare s;
      s.server = v_.fwd_nodes[f];
      s.job_bytes = fwd_job_bytes_[f];
      s.total_bytes = fwd_total[f];
      s.total_ops = fwd_ops[f];
      s.share = s.total_bytes > 0 ? s.job_bytes / s.total_bytes : 0;
      if (fwd_inflight[f].first > 0) s.in_flight_mean = fwd_inflight[f].second / fwd_inflight[f].first;
      v_.fwd_shares.push_back(s);
    }
    return Status::Ok();
  }

  // ---- the job's own server counters (job_stats) over the window ----
  Status JobStats() {
    ScanQuery j;
    j.dataset = dataset::kJobstats;
    j.range = srange_;
    j.filters = {{field::kJobId, job_id_}};
    j.fields = {field::kLustreTarget, field::kOssReadBytes, field::kOssWriteBytes, field::kOssReadOps,
                field::kOssWriteOps, field::kMdsOps, field::kTimestamp, field::kLustreElapsedNs, field::kLustreReset};
    Status st = store_.Scan(j, [&](const Row& row) {
      if (!row.Has(0) || (row.Has(8) && row.Int(8))) return true;
      const std::string_view t = row.Str(0);
      if (!maps_.fs.empty() && !StartsWith(t, maps_.fs + "-")) return true;
      double x = 0;  // the share of the record's interval inside the window
      Spread(row.Int(6), row.Has(7) ? row.Int(7) : 0, [&](size_t, double f) { x += f; });
      if (x <= 0) return true;
      auto num = [&](size_t k) { return row.Has(k) ? static_cast<double>(row.Int(k)) : 0.0; };
      const int o = OstIndexOf(t);
      if (o >= 0) {
        job_ost_bytes_[o] += x * (num(1) + num(2));
        job_ost_ops_[o] += x * (num(3) + num(4));
        have_jobstats_ = true;
      } else if (int d = MdtIndexOf(t); d >= 0) {
        job_mdt_ops_[d] += x * num(5);
      }
      return true;
    });
    if (!st.ok() && st.code() != Code::kNotFound) return st;
    return Status::Ok();
  }

  // ---- OSTs: which ones (the files' layouts, else job_stats), and the
  // job's bytes on each estimated from the layouts ----
  void ChooseOsts() {
    const std::vector<std::string>& files = file_in_.names;
    bool any_layout = false;
    // Files by name: the sums below do not depend on the order the scan met them.
    std::vector<uint32_t> by_name(files.size());
    for (size_t i = 0; i < by_name.size(); ++i) by_name[i] = static_cast<uint32_t>(i);
    std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) { return files[a] < files[b]; });
    for (const uint32_t i : by_name) {
      auto it = maps_.layouts.find(files[i]);
      if (it == maps_.layouts.end() || it->second.osts.empty()) continue;
      any_layout = true;
      const auto& os = it->second.osts;
      for (int o : os) {
        osts_.insert(o);
        est_bytes_[o] += file_bytes_[i] / static_cast<double>(os.size());
      }
    }
    if (any_layout) v_.ost_source = "layouts";
    else if (have_jobstats_) {
      v_.ost_source = "jobstats";
      for (auto& [o, b] : job_ost_bytes_) osts_.insert(o);
    } else {
      v_.ost_source = "none";
    }
  }

  // ---- OST layer: iosonar.oss of the job's OSTs; file-system totals ----
  Status OstLayer() {
    std::map<int, std::pair<double, double>> ost_total;  // bytes, ops
    std::map<int, std::string> ost_names;                 // as the OSS records spell them
    ScanQuery o;
    o.dataset = dataset::kOss;
    o.range = srange_;
    o.fields = {field::kLustreTarget, field::kTimestamp, field::kOssReadBytes, field::kOssWriteBytes,
                field::kOssReadOps, field::kOssWriteOps, field::kLustreElapsedNs, field::kLustreReset};
    // One pass: the job's OSTs' series and totals, and the file system's bytes
    // over the window (all OSTs) for the coverage factor.
    Status st = store_.Scan(o, [&](const Row& row) {
      if (!row.Has(0) || (row.Has(7) && row.Int(7))) return true;
      const std::string_view t = row.Str(0);
      if (!maps_.fs.empty() && !StartsWith(t, maps_.fs + "-")) return true;
      auto num = [&](size_t k) { return row.Has(k) ? static_cast<double>(row.Int(k)) : 0.0; };
      const int idx = OstIndexOf(t);
      const bool mine = idx >= 0 && osts_.count(idx);
      Spread(row.Int(1), row.Has(6) ? row.Int(6) : 0, [&](size_t b, double x) {
        v_.fs_bytes += x * (num(2) + num(3));
        if (!mine) return;
        v_.ost.read_bytes[b] += x * num(2);
        v_.ost.write_bytes[b] += x * num(3);
        v_.ost.data_ops[b] += x * (num(4) + num(5));
        auto& p = ost_total[idx];
        p.first += x * (num(2) + num(3));
        p.second += x * (num(4) + num(5));
      });
      if (mine && !ost_names.count(idx)) ost_names.emplace(idx, std::string(t));
      return true;
    });
    if (!st.ok() && st.code() != Code::kNotFound) return st;
    for (int ost : osts_) {
      ServerShare s;
      char name[32];
      std::snprintf(name, sizeof name, "%s-OST%04x", maps_.fs.empty() ? "*" : maps_.fs.c_str(), static_cast<unsigned>(ost));
      s.server = ost_names.count(ost) ? ost_names[ost] : name;
      if (have_jobstats_) {
        s.job_bytes = job_ost_bytes_.count(ost) ? job_ost_bytes_[ost] : 0;
        s.job_ops = job_ost_ops_.count(ost) ? job_ost_ops_[ost] : 0;
      } else {
        s.job_bytes = est_bytes_.count(ost) ? est_bytes_[ost] : 0;
        s.estimated = true;
      }
      auto it = ost_total.find(ost);
      if (it != ost_total.end()) {
        s.total_bytes = it->second.first;
        s.total_ops = it->second.second;
      }
      s.share = s.total_bytes > 0 ? s.job_bytes / s.total_bytes : 0;
      auto fl = osc_inflight_.find(ost);
      if (fl != osc_inflight_.end() && fl->second.first > 0) s.in_flight_mean = fl->second.second / fl->second.first;
      v_.ost_shares.push_back(s);
    }
    return Status::Ok();
  }

  // ---- MDT layer ----
  Status MdtLayer() {
    std::map<int, double> mdt_ops;
    std::map<int, std::string> mdt_names;
    ScanQuery m;
    m.dataset = dataset::kMds;
    m.range = srange_;
    m.fields = {field::kLustreTarget, field::kTimestamp, field::kMdsOpen, field::kMdsGetattr, field::kMdsOps,
                field::kLustreElapsedNs, field::kLustreReset};
    Status st = store_.Scan(m, [&](const Row& row) {
      if (!row.Has(0) || (row.Has(6) && row.Int(6))) return true;
      const std::string_view t = row.Str(0);
      if (!maps_.fs.empty() && !StartsWith(t, maps_.fs + "-")) return true;
      auto num = [&](size_t k) { return row.Has(k) ? static_cast<double>(row.Int(k)) : 0.0; };
      const int d = MdtIndexOf(t);
      Spread(row.Int(1), row.Has(5) ? row.Int(5) : 0, [&](size_t b, double x) {
        v_.mdt.meta_ops[b] += x * num(4);
        v_.fs_opens += x * num(2);
        v_.fs_stats += x * num(3);
        if (d >= 0) mdt_ops[d] += x * num(4);
      });
      if (d >= 0 && !mdt_names.count(d)) mdt_names.emplace(d, std::string(t));
      return true;
    });
    if (!st.ok() && st.code() != Code::kNotFound) return st;
    for (auto& [d, ops] : mdt_ops) {
      if (!job_mdt_ops_.count(d)) continue;
      ServerShare s;
      char name[32];
      std::snprintf(name, sizeof name, "%s-MDT%04x", maps_.fs.empty() ? "*" : maps_.fs.c_str(), static_cast<unsigned>(d));
      s.server = mdt_names.count(d) ? mdt_names[d] : name;
      s.job_ops = job_mdt_ops_[d];
      s.total_ops = ops;
      s.share = ops > 0 ? s.job_ops / ops : 0;
      v_.mdt_shares.push_back(s);
    }
    return Status::Ok();
  }

  Store& store_;
  const std::string& job_id_;
  const Maps& maps_;
  const int64_t B_;                 // bucket width
  const JobInfo* job_ = nullptr;    // the job's window (and nodes) from the maps, if known
  View v_;
  size_t nb_ = 0;                   // buckets
  TimeRange srange_;                // server records that can overlap the window
  // client layer
  Interner host_in_{true}, file_in_{false};
  std::vector<double> file_bytes_;  // per file: job bytes (for the estimated OST split)
  std::vector<double> file_opens_, file_stats_;  // per file: for the coverage factors
  std::map<std::string, int> fwd_ix_;
  std::vector<double> fwd_job_bytes_;
  // forwarding layer
  std::map<int, std::pair<double, double>> osc_inflight_;  // OST -> (rpcs, rpcs * in-flight)
  // job_stats
  std::map<int, double> job_ost_bytes_, job_ost_ops_, job_mdt_ops_;
  bool have_jobstats_ = false;
  // the job's OSTs
  std::set<int> osts_;
  std::map<int, double> est_bytes_;
};

}  // namespace

Result<View> Analyze(Store& store, const std::string& job_id, const Maps& maps, const Options& opt) {
  return Analysis(store, job_id, maps, opt).Run();
}

// ---- output ---------------------------------------------------------------------

namespace {

void WriteSeries(JsonWriter& w, const char* name, const Series& s) {
  w.Key(name);
  w.BeginObject();
  w.Kv("start_ns", s.start_ns);
  w.Kv("bucket_ns", s.bucket_ns);
  for (auto [k, vec] : {std::pair{"read_bytes", &s.read_bytes}, std::pair{"write_bytes", &s.write_bytes},
                        std::pair{"data_ops", &s.data_ops}, std::pair{"meta_ops", &s.meta_ops}}) {
    w.Key(k);
    w.BeginArray();
    for (double x : *vec) w.Double(x);
    w.EndArray();
  }
  w.EndObject();
}

void WriteShares(JsonWriter& w, const char* name, const std::vector<ServerShare>& v) {
  w.Key(name);
  w.BeginArray();
  for (const auto& s : v) {
    w.BeginObject();
    KvAll(w, "server", s.server, "job_bytes", s.job_bytes, "total_bytes", s.total_bytes, "job_ops", s.job_ops,
          "total_ops", s.total_ops, "share", s.share);
    if (s.in_flight_mean > 0) w.Kv("rpc_in_flight_mean", s.in_flight_mean);
    if (s.estimated) w.Kv("estimated", true);
    w.EndObject();
  }
  w.EndArray();
}

std::string Human(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (b >= 1024 && i < 5) {
    b /= 1024;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, u[i]);
  return buf;
}

}  // namespace

std::string ToJson(const View& v, bool with_series) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  KvAll(w, "job_id", v.job_id, "start_ns", v.start_ns, "end_ns", v.end_ns, "window_source", v.window_source,
        "trace_records", v.trace_records, "nodes", v.nodes.size(), "unmapped_nodes", v.unmapped_nodes);
  w.Key("forwarding_nodes");
  w.BeginArray();
  for (const auto& f : v.fwd_nodes) w.String(f);
  w.EndArray();
  w.Kv("files", v.files.size());
  w.Kv("ost_source", v.ost_source);
  w.Key("job");
  KvObject(w, "bytes", v.job_bytes, "read_bytes", v.job_read_bytes, "write_bytes", v.job_write_bytes,
           "opens", v.job_opens, "stats", v.job_stats, "meta_ops", v.job_meta_ops);
  w.Key("filesystem");
  KvObject(w, "bytes", v.fs_bytes, "opens", v.fs_opens, "stats", v.fs_stats);
  w.Key("coverage");
  KvObject(w, "bytes", v.coverage_bytes, "opens", v.coverage_opens, "stats", v.coverage_stats,
           "job_bytes_on_fs", v.job_fs_bytes, "basis", v.coverage_basis);
  WriteShares(w, "forwarding", v.fwd_shares);
  WriteShares(w, "osts", v.ost_shares);
  WriteShares(w, "mdts", v.mdt_shares);
  if (with_series) {
    w.Key("series");
    w.BeginObject();
    WriteSeries(w, "client", v.client);
    WriteSeries(w, "forwarding", v.fwd);
    WriteSeries(w, "ost", v.ost);
    WriteSeries(w, "mdt", v.mdt);
    w.EndObject();
  }
  w.EndObject();
  out.push_back('\n');
  return out;
}

std::string ToTable(const View& v) {
  std::string o;
  char b[256];
  std::snprintf(b, sizeof b, "job %s: %.0f s window (%s), %zu nodes -> %zu forwarding nodes, %zu files, %" PRIu64 " trace records\n",
                v.job_id.c_str(), static_cast<double>(v.end_ns - v.start_ns) / 1e9, v.window_source.c_str(), v.nodes.size(),
                v.fwd_nodes.size(), v.files.size(), v.trace_records);
  o += b;
  std::snprintf(b, sizeof b, "job I/O: %s (read %s, write %s), %" PRId64 " opens, %" PRId64 " stats\n", Human(static_cast<double>(v.job_bytes)).c_str(),
                Human(static_cast<double>(v.job_read_bytes)).c_str(), Human(static_cast<double>(v.job_write_bytes)).c_str(), v.job_opens, v.job_stats);
  o += b;
  std::snprintf(b, sizeof b,
                "coverage (TOKIO): bytes %.4f (of %s), opens %.4f, stats %.4f; the job's I/O on the file system only "
                "(%s of its bytes; files placed by %s)\n",
                v.coverage_bytes, Human(v.fs_bytes).c_str(), v.coverage_opens, v.coverage_stats,
                Human(v.job_fs_bytes).c_str(), v.coverage_basis.c_str());
  o += b;
  auto shares = [&](const char* title, const std::vector<ServerShare>& ss, bool bytes) {
    o += std::string("\n") + title + "\n";
    std::snprintf(b, sizeof b, "  %-22s %14s %14s %8s %10s\n", "server", bytes ? "job" : "job ops", bytes ? "total" : "total ops",
                  "share", bytes ? "in flight" : "");
    o += b;
    for (const auto& s : ss) {
      std::snprintf(b, sizeof b, "  %-22s %14s %14s %7.1f%% %10s%s\n", s.server.c_str(),
                    bytes ? Human(s.job_bytes).c_str() : std::to_string(static_cast<int64_t>(s.job_ops)).c_str(),
                    bytes ? Human(s.total_bytes).c_str() : std::to_string(static_cast<int64_t>(s.total_ops)).c_str(),
                    100 * s.share, s.in_flight_mean > 0 ? std::to_string(s.in_flight_mean).substr(0, 5).c_str() : "",
                    s.estimated ? " (estimated)" : "");
      o += b;
    }
  };
  shares("forwarding nodes", v.fwd_shares, true);
  shares(("OSTs (from " + v.ost_source + ")").c_str(), v.ost_shares, true);
  shares("MDTs", v.mdt_shares, false);
  o += "\nper-second bandwidth (MiB/s) client / forwarding / OSTs, metadata ops client / MDTs:\n";
  for (size_t i = 0; i < v.client.read_bytes.size(); ++i) {
    auto mb = [&](const Series& s) { return (s.read_bytes[i] + s.write_bytes[i]) / 1048576.0; };
    std::snprintf(b, sizeof b, "  %4zu  %10.1f %10.1f %10.1f   %8.0f %8.0f\n", i, mb(v.client), mb(v.fwd), mb(v.ost),
                  v.client.meta_ops[i], v.mdt.meta_ops[i]);
    o += b;
  }
  return o;
}

// ---- results to the job database and a result stream ----

namespace {
struct LayerShares {
  const char* layer;
  const std::vector<ServerShare>* shares;
};
std::array<LayerShares, 3> LayersOf(const View& v) {
  return {{{"forwarding", &v.fwd_shares}, {"ost", &v.ost_shares}, {"mdt", &v.mdt_shares}}};
}
}  // namespace

Status MapsFromJobDb(JobDb& db, const std::string& cluster, const std::string& job_id, Maps* m) {
  auto j = db.FindJob(job_id, cluster);
  if (!j.ok()) return j.status();
  auto nodes = db.JobNodes(j->cluster, j->job_id);
  if (!nodes.ok()) return nodes.status();
  JobInfo ji;
  ji.id = job_id;
  ji.start_ns = j->start_ns.value_or(0);
  ji.end_ns = j->end_ns.value_or(0);
  ji.nodes = nodes.value();
  auto fw = db.JobForwardingNodes(j->cluster, j->job_id);
  if (!fw.ok()) return fw.status();
  for (const auto& [node, fwd] : fw.value()) m->node_fwd[node] = fwd;
  auto lay = db.FileLayouts(j->cluster, j->job_id);
  if (!lay.ok()) return lay.status();
  for (auto& row : lay.value()) {
    if (row.filesystem) m->fs = *row.filesystem;
    Layout L;
    L.path = row.path;
    L.stripe_size = row.stripe_size;
    L.osts = std::move(row.osts);
    L.mdt = row.mdt;
    m->layouts[L.path] = std::move(L);
  }
  m->jobs[job_id] = std::move(ji);
  return Status::Ok();
}

namespace {
// The view as its result rows (results.def job_xlayer, job_server_share):
// what the job database keeps and the result stream carries.
struct Rows {
  results::job_xlayer::Row view;
  std::vector<results::job_server_share::Row> shares;
};
Rows RowsOf(const View& v, const std::string& cluster, uint64_t job_id, const std::string& json, const std::string& now) {
  const std::string ws = SqlDatetime(v.start_ns), we = SqlDatetime(v.end_ns);
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  Rows rows{{cluster, job_id, now, ws, we, v.window_source, v.nodes.size(), v.unmapped_nodes, v.files.size(),
             v.trace_records, u(v.job_bytes), u(v.job_read_bytes), u(v.job_write_bytes), u(v.job_opens), u(v.job_stats),
             u(v.job_meta_ops), v.fs_bytes, v.fs_opens, v.fs_stats, v.coverage_bytes, v.coverage_opens, v.coverage_stats,
             v.ost_source, json},
            {}};
  for (const auto& [layer, shares] : LayersOf(v))
    for (const auto& s : *shares)
      rows.shares.push_back({cluster, job_id, layer, s.server, now, ws, we, s.job_bytes, s.total_bytes, s.share, s.job_ops,
                             s.total_ops, s.in_flight_mean > 0 ? std::optional<double>(s.in_flight_mean) : std::nullopt,
                             s.estimated ? 1 : 0});
  return rows;
}
}  // namespace

Status WriteToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const View& v, const std::string& json) {
  const Rows rows = RowsOf(v, cluster, job_id, json, SqlDatetime(NowNs()));
  const std::vector<SqlParam> key{cluster, static_cast<int64_t>(job_id)};
  return db.Transaction([&]() -> Status {
    for (auto del : {results::Delete<results::job_server_share::Row>, results::Delete<results::job_xlayer::Row>})
      if (auto d = del(db, "WHERE cluster = ? AND job_id = ?", key); !d.ok()) return d.status();
    if (Status st = results::Insert(db, rows.view); !st.ok()) return st;
    for (const auto& share : rows.shares)
      if (Status st = results::Insert(db, share); !st.ok()) return st;
    return Status::Ok();
  });
}

std::string ToRecords(const View& v, const std::string& host) {
  const int64_t stream =
      analysis::ResultStreamId("iosonar.result.xlayer", {v.job_id, std::to_string(v.start_ns), std::to_string(v.end_ns),
                                                         v.window_source, v.ost_source});
  const Rows rows = RowsOf(v, "", 0, "", "");
  std::string out;
  int64_t seq = 0;
  const int64_t window_ns = v.end_ns - v.start_ns;
  // Each record: the head, the row's stream fields (results.def), window_ns where it stands.
  auto record = [&](DatasetId dataset, const auto& row) {
    JsonWriter w(&out, 0);
    analysis::BeginResultRecord(w, v.start_ns, dataset, stream, seq++, host);
    w.Kv(field::kJobId, v.job_id);
    results::WriteStreamFields(w, row, [&](std::string_view f) { w.Kv(f, window_ns); });  // xlayer./share.window_ns
    w.EndObject();
    out += '\n';
  };
  record(dataset::kResultXlayer, rows.view);
  for (const auto& share : rows.shares) record(dataset::kResultServerShare, share);
  return out;
}

}  // namespace iosonar::xlayer
