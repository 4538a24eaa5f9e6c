#include "analysis-jobs/summarize/fs_context.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis-jobs/summarize/summarize.h"
#include "core/records/fields.h"

namespace iosonar::analysis {

namespace {

constexpr int64_t kSec = 1000000000;
constexpr int64_t kDay = 86400 * kSec;
// Longest sampling interval looked for after the window's end (a record
// stamped later than end + this cannot overlap the window unless its
// interval is longer).
constexpr int64_t kMaxInterval = 600 * kSec;

// "snx11035-OST0006" -> "OST0006"; "OST0006" stays.
std::string ShortTarget(std::string_view t) {
  const size_t p = t.rfind('-');
  return std::string(p == std::string_view::npos ? t : t.substr(p + 1));
}

// The server records of the window, column-wise; targets interned.
struct ServerRecs {
  size_t nvals = 0;
  std::vector<std::string> target_names;
  std::vector<int64_t> ts, elapsed;
  std::vector<uint32_t> target;
  std::vector<uint8_t> reset;
  std::vector<double> counts;  // nvals per record
  size_t size() const { return ts.size(); }
};

// One (row, target) cell: the records in it summed.
struct CellSum {
  int64_t row = 0;
  uint32_t target = 0;
  double secs = 0;    // elapsed of its records
  size_t off = 0;     // its nvals sums in Frame::sums
};

struct Frame {
  int64_t step = 0;
  size_t rows = 0, targets = 0;
  std::vector<CellSum> cells;  // by row, then target
  std::vector<double> sums, tot;
  const double* Sums(const CellSum& c) const { return &sums[c.off]; }
};

// Lays records on the grid described in the header.
Frame BuildFrame(const ServerRecs& recs, int64_t window_ns) {
  Frame f;
  const size_t nv = recs.nvals;
  f.tot.assign(nv, 0);
  f.targets = recs.target_names.size();
  if (recs.size() == 0) return f;
  std::vector<int64_t> el;
  el.reserve(recs.size());
  int64_t t0 = INT64_MAX;
  for (size_t i = 0; i < recs.size(); ++i) {
    t0 = std::min(t0, recs.ts[i]);
    if (!recs.reset[i] && recs.elapsed[i] > 0) el.push_back(recs.elapsed[i]);
  }
  if (el.empty()) {
    f.step = kSec;
  } else {
    std::nth_element(el.begin(), el.begin() + static_cast<std::ptrdiff_t>(el.size() / 2), el.end());
    f.step = el[el.size() / 2];
  }
  // (row, target, record) of the records with deltas, sorted, then merged into cells.
  struct Key {
    int64_t row;
    uint32_t target;
    uint32_t rec;
  };
  std::vector<Key> keys;
  keys.reserve(recs.size());
  int64_t kmin = INT64_MAX, kmax = INT64_MIN;
  for (size_t i = 0; i < recs.size(); ++i) {
    const int64_t k = std::llround(static_cast<double>(recs.ts[i] - t0) / static_cast<double>(f.step));
    kmin = std::min(kmin, k);
    kmax = std::max(kmax, k);
    if (!recs.reset[i] && recs.elapsed[i] > 0) keys.push_back({k, recs.target[i], static_cast<uint32_t>(i)});
  }
  std::sort(keys.begin(), keys.end(),
            [](const Key& x, const Key& y) { return x.row != y.row ? x.row < y.row : x.target < y.target; });
  for (const Key& k : keys) {
    if (f.cells.empty() || f.cells.back().row != k.row || f.cells.back().target != k.target) {
      f.cells.push_back({k.row, k.target, 0, f.sums.size()});
      f.sums.resize(f.sums.size() + nv, 0);
    }
    CellSum& c = f.cells.back();
    c.secs += static_cast<double>(recs.elapsed[k.rec]) / 1e9;
    const double* v = &recs.counts[static_cast<size_t>(k.rec) * nv];
    for (size_t j = 0; j < nv; ++j) {
      f.sums[c.off + j] += v[j];
      f.tot[j] += v[j];
    }
  }
  const auto expected = static_cast<int64_t>(std::llround(static_cast<double>(window_ns) / static_cast<double>(f.step)));
  f.rows = static_cast<size_t>(std::max(kmax - kmin + 1, expected));
  return f;
}

Status ScanServer(Store& store, DatasetId dataset, const std::string& fs, int64_t start_ns, int64_t end_ns,
                  const std::vector<FieldId>& count_fields, ServerRecs* out) {
  ScanQuery q;
  q.dataset = dataset;
  q.range = {start_ns + 1, end_ns + kMaxInterval};
  q.filters = {{field::kLustreFs, fs}};
  q.fields = {field::kTimestamp, field::kLustreTarget, field::kLustreElapsedNs, field::kLustreReset};
  q.fields.insert(q.fields.end(), count_fields.begin(), count_fields.end());
  q.ordered = false;  // the frame sorts what it needs
  out->nvals = count_fields.size();
  std::unordered_map<std::string, uint32_t> index;
  std::string last_name;
  uint32_t last_index = 0;
  Status st = store.Scan(q, [&](const Row& r) {
    const int64_t ts = r.Int(0);
    int64_t elapsed = r.Has(2) ? r.Int(2) : 0;
    // No elapsed: the record is taken to cover the second before its stamp.
    if (elapsed <= 0) elapsed = kSec;
    if (ts - elapsed >= end_ns) return true;
    const std::string_view name = r.Str(1);
    if (out->target_names.empty() || name != last_name) {
      auto [it, fresh] = index.try_emplace(std::string(name), static_cast<uint32_t>(out->target_names.size()));
      if (fresh) out->target_names.emplace_back(name);
      last_name.assign(name);
      last_index = it->second;
    }
    out->ts.push_back(ts);
    out->elapsed.push_back(elapsed);
    out->target.push_back(last_index);
    out->reset.push_back(r.Has(3) && r.Int(3) != 0);
    for (size_t i = 0; i < out->nvals; ++i) out->counts.push_back(r.Has(4 + i) ? static_cast<double>(r.Int(4 + i)) : 0);
    return true;
  });
  if (!st.ok() && st.code() == Code::kNotFound) return Status::Ok();
  return st;
}

// The latest health snapshot of `kind` records stamped before start (within
// a day) and the first at or after it; nullopt when there is none before.
Result<std::optional<SnapshotAt>> SnapshotBefore(Store& store, const std::string& fs, const std::string& kind,
                                                 int64_t start_ns) {
  ScanQuery q;
  q.dataset = dataset::kHealth;
  q.range = {start_ns - kDay, start_ns + kDay};
  q.filters = {{field::kLustreFs, fs}, {field::kHealthRecord, kind}};
  q.fields = {field::kTimestamp, field::kHealthInodes};
  int64_t before = INT64_MIN, after = INT64_MAX;
  Status st = store.Scan(q, [&](const Row& r) {
    if (r.Has(1) && r.Int(1) != 0) return true;  // inode fullness
    const int64_t t = r.Int(0);
    if (t < start_ns) before = std::max(before, t);
    else after = std::min(after, t);
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  if (before == INT64_MIN) return std::optional<SnapshotAt>();
  SnapshotAt s;
  s.requested_ns = start_ns;
  s.actual_ns = before;
  if (after != INT64_MAX) s.next_ns = after;
  return std::optional<SnapshotAt>(s);
}

// The `kind` records of the file system in the snapshot at ts.
ScanQuery HealthRecordsAt(const std::string& fs, const std::string& kind, int64_t ts) {
  ScanQuery q;
  q.dataset = dataset::kHealth;
  q.range = {ts, ts + 1};
  q.filters = {{field::kLustreFs, fs}, {field::kHealthRecord, kind}};
  return q;
}

Status ReadFullness(Store& store, const std::string& fs, int64_t start_ns, std::optional<FullnessAt>* out) {
  auto snap = SnapshotBefore(store, fs, "fs", start_ns);
  if (!snap.ok()) return snap.status();
  if (!*snap) return Status::Ok();
  FullnessAt f;
  static_cast<SnapshotAt&>(f) = **snap;
  ScanQuery q = HealthRecordsAt(fs, "target", f.actual_ns);
  q.fields = {field::kLustreTarget, field::kHealthTargetKind, field::kHealthInodes, field::kHealthTargetIndex,
              field::kHealthBytesUsed, field::kHealthBytesTotal};
  double used_sum = 0, total_sum = 0;
  bool any = false;
  Status st = store.Scan(q, [&](const Row& r) {
    if (r.Str(1) != "ost" || (r.Has(2) && r.Int(2) != 0) || !r.Has(4) || !r.Has(5) || r.Int(5) <= 0) return true;
    const double used = static_cast<double>(r.Int(4)) / 1024, total = static_cast<double>(r.Int(5)) / 1024;
    const double pct = 100.0 * used / total;
    const std::string name = ShortTarget(r.Str(0));
    const int64_t idx = r.Has(3) ? r.Int(3) : -1;
    ++f.ost_count;
    used_sum += used;
    total_sum += total;
    // pytokio's order: the first strictly smaller / larger wins ties.
    if (!any || used < f.least_full_kib) {
      f.least_full_kib = used, f.least_full_pct = pct, f.least_full_name = name, f.least_full_id = idx;
    }
    if (!any || used > f.most_full_kib) {
      f.most_full_kib = used, f.most_full_pct = pct, f.most_full_name = name, f.most_full_id = idx;
    }
    any = true;
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  if (f.ost_count == 0) return Status::Ok();
  f.avg_full_kib = used_sum / static_cast<double>(f.ost_count);
  f.avg_full_pct = 100.0 * used_sum / total_sum;
  *out = std::move(f);
  return Status::Ok();
}

Status ReadFailures(Store& store, const std::string& fs, int64_t start_ns, std::optional<FailuresAt>* out) {
  auto snap = SnapshotBefore(store, fs, "failover", start_ns);
  if (!snap.ok()) return snap.status();
  if (!*snap) return Status::Ok();
  FailuresAt f;
  static_cast<SnapshotAt&>(f) = **snap;
  ScanQuery q = HealthRecordsAt(fs, "failover", f.actual_ns);
  q.fields = {field::kHealthOstCount, field::kHealthOstPerOssMode, field::kHealthOverloadedOssCount,
              field::kHealthOverloadedOstCount};
  bool found = false;
  Status st = store.Scan(q, [&](const Row& r) {
    f.ost_count = r.Has(0) ? r.Int(0) : 0;
    f.mode = r.Has(1) ? r.Int(1) : 0;
    f.overloaded_oss = r.Has(2) ? r.Int(2) : 0;
    f.overloaded_ost = r.Has(3) ? r.Int(3) : 0;
    found = true;
    return false;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  if (found) *out = f;
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& TokioMdOps() {
  static const std::vector<std::string> ops = {"open",   "close",    "mknod",  "link",    "unlink",  "mkdir",
                                               "rmdir",  "rename",   "getxattr", "statfs", "setattr", "getattr"};
  return ops;
}

const RateStats* FsContext::Md(const std::string& op) const {
  for (const auto& [k, v] : md_ops)
    if (k == op) return &v;
  return nullptr;
}

Result<FsContext> ReadFsContext(Store& store, const std::string& fs, int64_t start_ns, int64_t end_ns) {
  FsContext c;
  c.fs = fs;
  c.start_ns = start_ns;
  c.end_ns = end_ns;
  const int64_t window = std::max<int64_t>(end_ns - start_ns, 0);

  ServerRecs oss;
  if (Status st = ScanServer(store, dataset::kOss, fs, start_ns, end_ns, {field::kOssReadBytes, field::kOssWriteBytes},
                             &oss);
      !st.ok())
    return st;
  c.oss_records = oss.size();
  if (oss.size() > 0) {
    const Frame f = BuildFrame(oss, window);
    c.step_ns = f.step;
    c.rows = f.rows;
    c.osts = f.targets;
    // Row sums of the rates (missing cells count 0); cells come by row.
    std::vector<std::pair<double, double>> rowsum;
    size_t zero_r = 0, zero_w = 0;
    int64_t row = INT64_MIN;
    for (const CellSum& cell : f.cells) {
      const double* v = f.Sums(cell);
      if (cell.row != row) rowsum.emplace_back(0, 0), row = cell.row;
      rowsum.back().first += v[0] / cell.secs;
      rowsum.back().second += v[1] / cell.secs;
      zero_r += v[0] == 0;
      zero_w += v[1] == 0;
    }
    const double ncells = static_cast<double>(f.rows * f.targets);
    const size_t missing_rows = f.rows - std::min(f.rows, rowsum.size());
    auto fill = [&](RateStats* s, double tot, bool first) {
      s->tot = tot;
      double sum = 0, mx = -1, mn = -1;
      for (const auto& rs : rowsum) {
        const double x = first ? rs.first : rs.second;
        sum += x;
        mx = mx < 0 ? x : std::max(mx, x);
        mn = mn < 0 ? x : std::min(mn, x);
      }
      if (missing_rows > 0) mn = 0, mx = std::max(mx, 0.0);
      s->ave = sum / static_cast<double>(f.rows);
      s->max = mx;
      s->min = mn;
    };
    fill(&c.read, f.tot[0], true);
    fill(&c.written, f.tot[1], false);
    // Missing cells have no bytes either way: they count as zero, as in TOKIO's frames.
    const double absent = ncells - static_cast<double>(f.cells.size());
    c.frac_zero_read = (static_cast<double>(zero_r) + absent) / ncells;
    c.frac_zero_written = (static_cast<double>(zero_w) + absent) / ncells;
    c.frac_missing = absent / ncells;
  }

  std::vector<FieldId> md_fields;
  for (const auto& op : TokioMdOps()) {
    auto f = FieldByName("mds." + op);
    if (!f) return Status::Invalid("unknown field \"mds." + op + "\" (not in the record schema)");
    md_fields.push_back(*f);
  }
  ServerRecs mds;
  if (Status st = ScanServer(store, dataset::kMds, fs, start_ns, end_ns, md_fields, &mds); !st.ok()) return st;
  c.mds_records = mds.size();
  if (mds.size() > 0) {
    const Frame f = BuildFrame(mds, window);
    for (size_t i = 0; i < md_fields.size(); ++i) {
      RateStats s;
      s.tot = f.tot[i];
      double sum = 0;
      bool first = true;
      for (const CellSum& cell : f.cells) {
        const double x = f.Sums(cell)[i] / cell.secs;
        sum += x;
        s.max = first ? x : std::max(s.max, x);
        s.min = first ? x : std::min(s.min, x);
        first = false;
      }
      s.ave = f.cells.empty() ? 0 : sum / static_cast<double>(f.cells.size());
      c.md_ops.emplace_back(TokioMdOps()[i], s);
    }
  }
  if (Status st = ReadFullness(store, fs, start_ns, &c.fullness); !st.ok()) return st;
  if (Status st = ReadFailures(store, fs, start_ns, &c.failures); !st.ok()) return st;
  return c;
}

Result<std::vector<std::pair<std::string, std::string>>> ReadMounts(Store& store, int64_t from_ns, int64_t to_ns) {
  ScanQuery q;
  q.dataset = dataset::kHealth;
  q.range = {from_ns, to_ns};
  q.filters = {{field::kHealthRecord, "fs"}};
  q.fields = {field::kHealthMount, field::kLustreFs};
  std::set<std::pair<std::string, std::string>> seen;
  Status st = store.Scan(q, [&](const Row& r) {
    if (r.Has(0) && r.Has(1) && !r.Str(0).empty()) seen.emplace(std::string(r.Str(0)), std::string(r.Str(1)));
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  return std::vector<std::pair<std::string, std::string>>(seen.begin(), seen.end());
}

namespace {
// "/scratch2/" -> "/scratch2"; "/" stays.
std::string_view TrimMount(std::string_view m) {
  while (m.size() > 1 && m.back() == '/') m.remove_suffix(1);
  return m;
}
}  // namespace

std::string MountOf(const std::string& path, const std::vector<std::pair<std::string, std::string>>& mounts) {
  std::string best;
  for (const auto& [m, fs] : mounts) {
    const std::string_view mv = TrimMount(m);
    const bool under = path.size() >= mv.size() && path.compare(0, mv.size(), mv) == 0 &&
                       (path.size() == mv.size() || path[mv.size()] == '/' || mv == "/");
    if (under && mv.size() > best.size()) best = std::string(mv);
  }
  return best;
}

std::array<std::map<std::string, uint64_t>, 2> BytesByMount(
    const JobTrace& jt, const std::vector<std::pair<std::string, std::string>>& mounts) {
  std::map<std::string, std::string> path_of;  // file id -> path
  for (const auto& r : jt.runs)
    if (!r.file_id.empty() && !r.file_path.empty()) path_of.emplace(r.file_id, r.file_path);
  std::array<std::map<std::string, uint64_t>, 2> by;
  for (const auto& r : jt.runs) {
    if ((r.op != "read" && r.op != "write") || r.bytes <= 0) continue;
    std::string path = r.file_path;
    if (path.empty() && !r.file_id.empty())
      if (auto it = path_of.find(r.file_id); it != path_of.end()) path = it->second;
    by[r.op == "write"][path.empty() ? std::string() : MountOf(path, mounts)] += static_cast<uint64_t>(r.bytes);
  }
  return by;
}

Result<std::vector<std::string>> FileSystemsWithServerRecords(Store& store, int64_t from_ns, int64_t to_ns) {
  ScanQuery q;
  q.dataset = dataset::kOss;
  q.range = {from_ns, to_ns};
  q.fields = {field::kLustreFs};
  std::set<std::string> fss;
  Status st = store.Scan(q, [&](const Row& r) {
    if (r.Has(0)) fss.emplace(r.Str(0));
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  return std::vector<std::string>(fss.begin(), fss.end());
}

Result<std::string> ChooseFileSystem(Store& store, const JobTrace& jt,
                                     const std::vector<std::pair<std::string, std::string>>& mounts, int64_t start_ns,
                                     int64_t end_ns) {
  if (!mounts.empty()) {
    const auto by = BytesByMount(jt, mounts);
    std::pair<std::string, uint64_t> best[2];
    for (int d = 0; d < 2; ++d)
      for (const auto& [m, b] : by[d])
        if (!m.empty() && b > best[d].second) best[d] = {m, b};
    const std::string& m = best[1].second > best[0].second ? best[1].first : best[0].first;
    if (!m.empty())
      for (const auto& [mount, fs] : mounts)
        if (TrimMount(mount) == m) return fs;
  }
  auto fss = FileSystemsWithServerRecords(store, start_ns, end_ns + kMaxInterval);
  if (!fss.ok()) return fss.status();
  return fss->size() == 1 ? fss->front() : std::string();
}

}  // namespace iosonar::analysis
