#include "serve/timeline.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/base/json.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::serve {

namespace {
constexpr int64_t kSec = 1000000000;

int64_t FloorSec(int64_t ns) { return ns >= 0 ? ns / kSec * kSec : -((-ns + kSec - 1) / kSec) * kSec; }
int64_t CeilSec(int64_t ns) { return -FloorSec(-ns); }

// Adds v over [s, e] to the buckets it overlaps, in proportion (a zero-length
// span in the bucket of s); buckets outside are clamped to the ends.
void Spread(std::vector<double>* b, int64_t start, int64_t width, int64_t s, int64_t e, double v) {
  if (b->empty() || v == 0) return;
  const auto n = static_cast<int64_t>(b->size());
  auto idx = [&](int64_t t) { return std::clamp((t - start) / width - (t < start ? 1 : 0), int64_t{0}, n - 1); };
  if (e <= s) {
    (*b)[static_cast<size_t>(idx(s))] += v;
    return;
  }
  const int64_t i0 = idx(s), i1 = idx(e - 1);
  if (i0 == i1) {
    (*b)[static_cast<size_t>(i0)] += v;
    return;
  }
  const double len = static_cast<double>(e - s);
  double given = 0;
  for (int64_t i = i0; i <= i1; ++i) {
    const int64_t bs = i == i0 ? s : start + i * width;
    const int64_t be = i == i1 ? e : start + (i + 1) * width;
    const double part = i == i1 ? v - given : v * static_cast<double>(be - bs) / len;
    (*b)[static_cast<size_t>(i)] += part;
    given += part;
  }
}

bool IsData(const std::string& op) { return op == "read" || op == "write"; }
}  // namespace

Timeline BuildTimeline(const std::string& job_id, const std::vector<TimelineRun>& runs,
                       const std::vector<JobstatsRow>& jobstats, const std::map<std::string, std::string>& node_fwd,
                       const TimelineOptions& opt) {
  Timeline t;
  t.job_id = job_id;
  if (runs.empty()) return t;
  int64_t lo = runs[0].start_ns, hi = runs[0].end_ns;
  for (const auto& r : runs) {
    lo = std::min(lo, r.start_ns);
    hi = std::max(hi, std::max(r.end_ns, r.start_ns));
  }
  t.start_ns = FloorSec(lo);
  int64_t end = std::max(CeilSec(hi), t.start_ns + kSec);
  const int64_t secs = (end - t.start_ns) / kSec;
  const int64_t per = std::max<int64_t>(1, (secs + static_cast<int64_t>(opt.max_buckets) - 1) /
                                              static_cast<int64_t>(std::max<size_t>(opt.max_buckets, 1)));
  t.bucket_ns = per * kSec;
  t.buckets = static_cast<size_t>((secs + per - 1) / per);

  // Processes with data, then rows.
  using Proc = std::pair<std::string, int64_t>;
  std::map<Proc, Timeline::Row> procs;
  for (const auto& r : runs) {
    Timeline::Row& p = procs[{r.host, r.pid}];
    if (p.read.empty()) {
      p.host = r.host;
      p.pid = r.pid;
      p.read.assign(t.buckets, 0);
      p.write.assign(t.buckets, 0);
    }
    if (r.rank && p.rank < 0) p.rank = *r.rank;
    p.busy_s += static_cast<double>(r.duration_ns) / 1e9;
    if (r.layer == "mpiio" || !IsData(r.op) || r.bytes <= 0) continue;
    const bool rd = r.op == "read";
    (rd ? p.read_bytes : p.write_bytes) += static_cast<uint64_t>(r.bytes);
    Spread(rd ? &p.read : &p.write, t.start_ns, t.bucket_ns, r.start_ns, r.end_ns, static_cast<double>(r.bytes));
  }
  std::vector<Timeline::Row> rows;
  size_t with_data = 0;
  for (const auto& [k, p] : procs)
    if (p.read_bytes + p.write_bytes > 0) ++with_data;
  if (with_data <= opt.max_rows) {
    t.rows_by = "process";
    for (auto& [k, p] : procs) {
      if (p.read_bytes + p.write_bytes == 0) continue;
      p.name = p.rank >= 0 ? "rank " + std::to_string(p.rank) : p.host + ":" + std::to_string(p.pid);
      rows.push_back(std::move(p));
    }
    std::sort(rows.begin(), rows.end(), [](const Timeline::Row& a, const Timeline::Row& b) {
      if ((a.rank >= 0) != (b.rank >= 0)) return a.rank >= 0;
      if (a.rank != b.rank) return a.rank < b.rank;
      return a.host != b.host ? a.host < b.host : a.pid < b.pid;
    });
  } else {
    t.rows_by = "node";
    std::map<std::string, Timeline::Row> nodes;
    for (auto& [k, p] : procs) {
      if (p.read_bytes + p.write_bytes == 0) continue;
      Timeline::Row& n = nodes[p.host];
      if (n.read.empty()) {
        n.name = n.host = p.host;
        n.read.assign(t.buckets, 0);
        n.write.assign(t.buckets, 0);
      }
      n.read_bytes += p.read_bytes;
      n.write_bytes += p.write_bytes;
      n.busy_s += p.busy_s;
      for (size_t i = 0; i < t.buckets; ++i) {
        n.read[i] += p.read[i];
        n.write[i] += p.write[i];
      }
    }
    for (auto& [h, n] : nodes) rows.push_back(std::move(n));
    if (rows.size() > opt.max_rows) {
      std::stable_sort(rows.begin(), rows.end(), [](const Timeline::Row& a, const Timeline::Row& b) {
        return a.read_bytes + a.write_bytes > b.read_bytes + b.write_bytes;
      });
      t.rows_omitted = rows.size() - opt.max_rows;
      rows.resize(opt.max_rows);
      std::sort(rows.begin(), rows.end(), [](const Timeline::Row& a, const Timeline::Row& b) { return a.host < b.host; });
    }
  }
  t.rows = std::move(rows);

  // Servers.
  std::map<std::string, Timeline::Server> fwd, ost;
  std::map<std::string, std::set<int64_t>> fwd_secs, ost_secs;
  for (const auto& r : runs) {
    if (r.layer == "mpiio" || !IsData(r.op) || r.bytes <= 0) continue;
    auto it = node_fwd.find(r.host);
    if (it == node_fwd.end()) continue;
    Timeline::Server& s = fwd[it->second];
    if (s.bytes.empty()) {
      s.kind = "forwarding";
      s.name = it->second;
      s.bytes.assign(t.buckets, 0);
    }
    s.total_bytes += static_cast<uint64_t>(r.bytes);
    Spread(&s.bytes, t.start_ns, t.bucket_ns, r.start_ns, r.end_ns, static_cast<double>(r.bytes));
    for (int64_t sec = FloorSec(r.start_ns); sec < std::max(r.end_ns, r.start_ns + 1); sec += kSec)
      fwd_secs[it->second].insert(sec);
  }
  for (const auto& j : jobstats) {
    if (j.bytes <= 0 || j.target.find("-OST") == std::string::npos) continue;
    Timeline::Server& s = ost[j.target];
    if (s.bytes.empty()) {
      s.kind = "ost";
      s.name = j.target;
      s.bytes.assign(t.buckets, 0);
    }
    s.total_bytes += static_cast<uint64_t>(j.bytes);
    const int64_t from = j.timestamp_ns - (j.elapsed_ns > 0 ? j.elapsed_ns : kSec);
    Spread(&s.bytes, t.start_ns, t.bucket_ns, from, j.timestamp_ns, static_cast<double>(j.bytes));
    for (int64_t sec = FloorSec(from); sec < j.timestamp_ns; sec += kSec) ost_secs[j.target].insert(sec);
  }
  for (auto* m : {&fwd, &ost})
    for (auto& [name, s] : *m) {
      s.active_s = static_cast<double>((m == &fwd ? fwd_secs : ost_secs)[name].size());
      t.servers.push_back(std::move(s));
    }
  return t;
}

Result<Timeline> TimelineFromStore(Store& store, const std::string& job_id,
                                   const std::map<std::string, std::string>& node_fwd, const TimelineOptions& opt) {
  std::vector<TimelineRun> runs;
  ScanQuery q;
  q.dataset = std::string(dataset::kTrace);
  q.filters = {{field::kJobId, job_id}};
  q.fields = {field::kHostName, field::kProcessPid, field::kProcessRank, field::kIoOp, field::kIoLayer, field::kIoBytes,
              field::kEventStartNs, field::kEventEndNs, field::kIoDurationNs, field::kTimestamp};
  q.ordered = false;
  Status s = store.Scan(q, [&](const Row& r) {
    TimelineRun x;
    x.host = r.Has(0) ? std::string(r.Str(0)) : std::string();
    x.pid = r.Has(1) ? r.Int(1) : 0;
    if (r.Has(2)) x.rank = r.Int(2);
    x.op = r.Has(3) ? std::string(r.Str(3)) : std::string();
    x.layer = r.Has(4) ? std::string(r.Str(4)) : std::string();
    x.bytes = r.Has(5) ? r.Int(5) : 0;
    x.start_ns = r.Has(6) ? r.Int(6) : (r.Has(9) ? r.Int(9) : 0);
    x.end_ns = r.Has(7) ? r.Int(7) : x.start_ns;
    x.duration_ns = r.Has(8) ? r.Int(8) : 0;
    runs.push_back(std::move(x));
    return true;
  });
  if (!s.ok()) return s;
  if (runs.empty()) return Status::NotFound("job " + job_id + " has no trace records");
  int64_t lo = runs[0].start_ns, hi = runs[0].end_ns;
  for (const auto& r : runs) lo = std::min(lo, r.start_ns), hi = std::max(hi, r.end_ns);
  std::vector<JobstatsRow> js;
  ScanQuery j;
  j.dataset = std::string(dataset::kJobstats);
  // Records stamped after the window's start that cover part of it (at most
  // 5 min after its end, as the cross-layer view reads server records).
  j.range = {FloorSec(lo), CeilSec(hi) + 300 * kSec};
  j.filters = {{field::kJobId, job_id}};
  j.fields = {field::kLustreTarget, field::kTimestamp, field::kOssReadBytes, field::kOssWriteBytes,
              field::kLustreElapsedNs};
  j.ordered = false;
  s = store.Scan(j, [&](const Row& r) {
    if (!r.Has(0)) return true;
    js.push_back({std::string(r.Str(0)), r.Int(1), (r.Has(2) ? r.Int(2) : 0) + (r.Has(3) ? r.Int(3) : 0),
                  r.Has(4) ? r.Int(4) : 0});
    return true;
  });
  if (!s.ok()) return s;
  return BuildTimeline(job_id, runs, js, node_fwd, opt);
}

std::string TimelineJson(const Timeline& t) {
  std::string b;
  JsonWriter w(&b);
  // Bytes per bucket are whole bytes (an interval's bytes spread over the
  // buckets it covers are fractions): each bucket is the rounded running sum
  // less the previous one, so the buckets add up to the rounded total (no
  // 17-digit fractions, no drift). Seconds to the microsecond.
  auto arr = [&](const char* k, const std::vector<double>& v) {
    w.Key(k);
    w.BeginArray();
    double sum = 0, prev = 0;
    for (double x : v) {
      sum += x;
      const double now = std::round(sum);
      w.Int(static_cast<int64_t>(now - prev));
      prev = now;
    }
    w.EndArray();
  };
  auto secs = [](double x) { return std::round(x * 1e6) / 1e6; };
  w.BeginObject();
  w.Kv("job_id", t.job_id);
  w.Kv("start", FormatIsoMillis(t.start_ns));
  w.Kv("start_ns", t.start_ns);
  w.Kv("bucket_s", secs(static_cast<double>(t.bucket_ns) / 1e9));
  w.Kv("buckets", t.buckets);
  w.Kv("rows_by", t.rows_by);
  w.Kv("rows_omitted", t.rows_omitted);
  w.Key("rows");
  w.BeginArray();
  for (const auto& r : t.rows) {
    w.BeginObject();
    w.Kv("name", r.name);
    w.Kv("host", r.host);
    w.Key("pid");
    if (r.pid) w.Int(r.pid);
    else w.Null();
    w.Key("rank");
    if (r.rank >= 0) w.Int(r.rank);
    else w.Null();
    w.Kv("read_bytes", r.read_bytes);
    w.Kv("write_bytes", r.write_bytes);
    w.Kv("busy_s", secs(r.busy_s));
    arr("read", r.read);
    arr("write", r.write);
    w.EndObject();
  }
  w.EndArray();
  w.Key("servers");
  w.BeginArray();
  for (const auto& s : t.servers) {
    w.BeginObject();
    w.Kv("kind", s.kind);
    w.Kv("name", s.name);
    w.Kv("total_bytes", s.total_bytes);
    w.Kv("active_s", secs(s.active_s));
    arr("bytes", s.bytes);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return b + "\n";
}

}  // namespace iosonar::serve
