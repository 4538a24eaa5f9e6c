#include "analysis-jobs/compress2/compress2.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis-jobs/lib/format.h"
#include "core/results/results.h"
#include "core/base/hash.h"
#include "core/jobdb/jobdb.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::compress2 {
namespace {


size_t Uv(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
size_t Sv(int64_t v) { return Uv((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }

constexpr std::string_view kRankTag = "{rank}";

// "/x/out.17" with rank 17 -> "/x/out.{rank}".
bool RankPattern(const std::string& path, int64_t rank, std::string* out) {
  if (rank < 0) return false;
  const std::string r = std::to_string(rank);
  if (path.size() <= r.size() || path.compare(path.size() - r.size(), r.size(), r) != 0) return false;
  const char before = path[path.size() - r.size() - 1];
  if (before >= '0' && before <= '9') return false;
  *out = path.substr(0, path.size() - r.size()) + std::string(kRankTag);
  return true;
}

}  // namespace

bool Rec::operator==(const Rec& o) const {
  const auto& a = run;
  const auto& b = o.run;
  return stream == o.stream && seq == o.seq && a.host == b.host && a.pid == b.pid && a.tid == b.tid && a.rank == b.rank &&
         a.op == b.op && a.layer == b.layer && a.file_path == b.file_path && a.file_id == b.file_id && a.fd == b.fd &&
         a.offset == b.offset && a.size == b.size && a.count == b.count && a.bytes == b.bytes && a.errno_ == b.errno_ &&
         a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.duration_ns == b.duration_ns &&
         a.ops_sequential == b.ops_sequential && a.stride == b.stride;
}

namespace {

// Whether the group's offsets follow base + stride * rank (two members of
// different ranks fix base and stride, every member must fit); sets them if so.
void FindOffsetPattern(Compressed& c, Group& g) {
  const size_t n = g.members.size();
  const Proc& p0 = c.procs[g.members[0].proc];
  const Proc& p1 = c.procs[g.members[1].proc];
  bool ok = p0.rank >= 0 && p1.rank >= 0 && p0.rank != p1.rank && g.members[0].offset >= 0;
  int64_t stride = 0, b0 = 0;
  if (ok) {
    const int64_t dr = p1.rank - p0.rank, doff = g.members[1].offset - g.members[0].offset;
    ok = doff % dr == 0;
    stride = ok ? doff / dr : 0;
    b0 = g.members[0].offset - stride * p0.rank;
  }
  for (size_t i = 0; ok && i < n; ++i) {
    const Proc& p = c.procs[g.members[i].proc];
    ok = p.rank >= 0 && g.members[i].offset == b0 + stride * p.rank;
  }
  if (ok) {
    g.offset_pattern = true;
    g.offset_base = b0;
    g.offset_stride = stride;
    ++c.offset_patterns;
  }
}

// The encoded sizes: every run alone (baseline) and the grouped encoding.
void EncodedSizes(const Options& opt, const std::unordered_map<std::string, uint32_t>& strings, uint64_t dict_bytes,
                  Compressed* c) {
  uint64_t base = dict_bytes, comp = dict_bytes;
  for (const Group& g : c->groups) {
    const size_t n = g.members.size();
    const uint64_t head = Sv(g.window) + Uv(strings.at(g.op)) + Uv(strings.at(g.layer)) + Uv(strings.at(g.path_pattern)) +
                          (g.file_id.empty() ? 1 : Uv(strings.at(g.file_id))) + Sv(g.fd) + Sv(g.size) + Sv(g.count) +
                          Sv(g.bytes) + Sv(g.errno_) + Sv(g.ops_sequential) + Sv(g.stride) + 1 /*flags*/ + Uv(n);
    comp += head;
    if (g.offset_pattern) comp += Sv(g.offset_base) + Sv(g.offset_stride);
    if (opt.lossy && n) {  // the group's offset, and its first member's times
      const Member& f = g.members[0];
      comp += Sv(g.offset_base) + Sv(f.start_delta) + Sv(f.len) + Sv(f.duration);
    }
    for (const Member& m : g.members) {
      // Baseline: the run alone (its own header and all its residuals).
      base += head - Uv(n) + Uv(m.proc) + Sv(m.seq) + Sv(m.offset) + Sv(m.start_delta) + Sv(m.len) + Sv(m.duration);
      comp += Uv(m.proc);
      if (opt.lossy) continue;
      comp += Sv(m.seq) + Sv(m.start_delta) + Sv(m.len) + Sv(m.duration);
      if (!g.offset_pattern) comp += Sv(m.offset);
    }
  }
  c->baseline_bytes = base;
  c->compressed_bytes = comp;
}

}  // namespace

Compressed Compress(const std::vector<Rec>& recs, const Options& opt) {
  Compressed c;
  c.lossy = opt.lossy;
  c.records = recs.size();
  const int64_t W = opt.window_ns > 0 ? opt.window_ns : 1000000000;
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>, uint32_t> proc_ix;
  std::unordered_map<std::string, size_t> group_ix;
  std::unordered_map<std::string, uint32_t> strings;  // dictionary (ops, layers, paths, ids)
  uint64_t dict_bytes = 0;
  auto str = [&](const std::string& s) {
    auto [it, fresh] = strings.try_emplace(s, static_cast<uint32_t>(strings.size()));
    if (fresh) dict_bytes += Uv(s.size()) + s.size();
    return it->second;
  };
  std::string key;
  for (const Rec& r : recs) {
    const auto& x = r.run;
    const int64_t rank = x.rank ? *x.rank : -1;
    auto [pit, pfresh] = proc_ix.try_emplace({x.host, x.pid, x.tid, rank, r.stream}, static_cast<uint32_t>(c.procs.size()));
    if (pfresh) {
      c.procs.push_back({x.host, x.pid, x.tid, rank, r.stream});
      dict_bytes += Uv(str(x.host)) + Sv(x.pid) + Sv(x.tid) + Sv(rank) + 8;
    }
    const int64_t window = x.start_ns - ((x.start_ns % W) + W) % W;
    std::string pattern;
    const bool rip = RankPattern(x.file_path, rank, &pattern);
    if (!rip) pattern = x.file_path;
    const bool derived = !x.file_path.empty() && x.file_id == analysis::format::FileIdOf(x.file_path);
    const std::string fid = derived ? std::string() : x.file_id;
    key.clear();
    char num[224];
    std::snprintf(num, sizeof num, "%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64 "|%d|",
                  window, opt.lossy ? int64_t{-2} : x.fd, x.size, x.count, x.bytes, x.errno_, x.ops_sequential, x.stride,
                  rip ? 1 : 0);
    key += num;
    key += x.op;
    key += '|';
    key += x.layer;
    key += '|';
    key += pattern;
    key += '|';
    key += fid;
    auto [git, gfresh] = group_ix.try_emplace(key, c.groups.size());
    if (gfresh) {
      Group g;
      g.window = window;
      g.op = x.op;
      g.layer = x.layer;
      g.path_pattern = pattern;
      g.rank_in_path = rip;
      g.file_id = fid;
      g.fd = x.fd;
      g.size = x.size;
      g.count = x.count;
      g.bytes = x.bytes;
      g.errno_ = x.errno_;
      g.ops_sequential = x.ops_sequential;
      g.stride = x.stride;
      g.offset_base = x.offset;
      str(g.op);
      str(g.layer);
      str(g.path_pattern);
      if (!fid.empty()) str(fid);
      c.groups.push_back(std::move(g));
    }
    Group& g = c.groups[git->second];
    Member m;
    m.proc = pit->second;
    m.seq = r.seq;
    m.offset = x.offset;
    m.start_delta = x.start_ns - window;
    m.len = x.end_ns - x.start_ns;
    m.duration = x.duration_ns;
    g.members.push_back(m);
  }
  // Offset patterns, and the sizes.
  if (!opt.lossy)
    for (Group& g : c.groups)
      if (g.members.size() > 1) FindOffsetPattern(c, g);
  EncodedSizes(opt, strings, dict_bytes, &c);
  return c;
}

std::vector<Rec> Decompress(const Compressed& c) {
  std::vector<Rec> out;
  out.reserve(c.records);
  for (const Group& g : c.groups) {
    const Member* first = g.members.empty() ? nullptr : &g.members[0];
    for (const Member& m0 : g.members) {
      const Member& m = c.lossy ? *first : m0;
      const Proc& p = c.procs[m0.proc];
      Rec r;
      auto& x = r.run;
      x.host = p.host;
      x.pid = p.pid;
      x.tid = p.tid;
      if (p.rank >= 0) x.rank = p.rank;
      r.stream = p.stream;
      r.seq = c.lossy ? 0 : m.seq;
      x.op = g.op;
      x.layer = g.layer;
      x.file_path = g.path_pattern;
      if (g.rank_in_path) x.file_path.replace(x.file_path.size() - kRankTag.size(), kRankTag.size(), std::to_string(p.rank));
      x.file_id = g.file_id.empty() ? (x.file_path.empty() ? std::string() : analysis::format::FileIdOf(x.file_path)) : g.file_id;
      x.fd = g.fd;
      x.offset = c.lossy ? g.offset_base : g.offset_pattern ? g.offset_base + g.offset_stride * p.rank : m.offset;
      x.size = g.size;
      x.count = g.count;
      x.bytes = g.bytes;
      x.errno_ = g.errno_;
      x.ops_sequential = g.ops_sequential;
      x.stride = g.stride;
      x.start_ns = g.window + m.start_delta;
      x.end_ns = x.start_ns + m.len;
      x.duration_ns = m.duration;
      out.push_back(std::move(r));
    }
  }
  return out;
}

Result<std::vector<Rec>> LoadJob(Store& store, const std::string& job_id) {
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, job_id}};
  q.fields = analysis::TraceRunFields();
  const size_t kStream = q.fields.size();
  q.fields.push_back(field::kEventStream);
  q.fields.push_back(field::kEventSeq);
  std::vector<Rec> out;
  Status st = store.Scan(q, [&](const Row& row) {
    Rec r;
    r.run = analysis::TraceRunFromRow(row);
    auto n = [&](size_t k, int64_t d) { return row.Has(k) ? row.Int(k) : d; };
    r.stream = n(kStream, 0);
    r.seq = n(kStream + 1, 0);
    out.push_back(std::move(r));
    return true;
  });
  if (!st.ok()) return st;
  if (out.empty()) return Status::NotFound("job " + job_id + " has no iosonar.trace records in the store");
  return out;
}

namespace {
// The report's numbers (the result record's come from the job_compression row, results.def).
void ReportFields(JsonWriter& w, const Compressed& c) {
  KvAll(w, "mode", c.lossy ? "lossy" : "lossless", "records", c.records, "groups", c.groups.size(), "processes",
        c.procs.size(), "offset_patterns", c.offset_patterns, "record_ratio", c.record_ratio(), "baseline_bytes",
        c.baseline_bytes, "compressed_bytes", c.compressed_bytes, "byte_ratio", c.byte_ratio());
  // Beacon's Table 8 gives the 2nd-pass compression ratio as data size before / after the
  // pass, lossless or lossy: byte_ratio is that measure; record_ratio (runs / groups) is not.
  w.Key("beacon_table8");
  KvObject(w, "column", c.lossy ? "2nd-pass (lossy)" : "2nd-pass (lossless)", "ratio", c.byte_ratio(),
           "measure", "trace size after the first pass / after the second pass (byte_ratio)",
           "beacon_range", c.lossy ? "2.3-11.3" : "2.1-4.4",
           "not_comparable", "record_ratio counts records (runs / groups), not bytes");
}

// The report as its job_compression row (results.def).
results::job_compression::Row RowOf(const std::string& cluster, uint64_t job_id, const Compressed& c, const std::string& now) {
  return {cluster, job_id, c.lossy ? 1 : 0, now, c.records, c.groups.size(), c.procs.size(), c.offset_patterns,
          c.record_ratio(), c.baseline_bytes, c.compressed_bytes, c.byte_ratio()};
}
}  // namespace

std::string ReportJson(const std::string& job_id, const Compressed& c) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Kv("job_id", job_id);
  ReportFields(w, c);
  w.EndObject();
  out.push_back('\n');
  return out;
}

// ---- results to the job database and a result stream ----

Status WriteReportToDb(MysqlConn& db, const std::string& cluster, uint64_t job_id, const Compressed& c) {
  const results::job_compression::Row row = RowOf(cluster, job_id, c, SqlDatetime(NowNs()));
  const int64_t lossy = row.lossy;
  return db.Transaction([&]() -> Status {
    auto del = results::Delete<results::job_compression::Row>(db, "WHERE cluster = ? AND job_id = ? AND lossy = ?",
                                                               {cluster, static_cast<int64_t>(job_id), lossy});
    if (!del.ok()) return del.status();
    return results::Insert(db, row);
  });
}

RoundTrip CheckRoundTrip(const std::vector<Rec>& recs, const Compressed& c) {
  auto back = Decompress(c);
  auto key = [](const Rec& a, const Rec& b) {
    return std::tie(a.stream, a.seq, a.run.start_ns) < std::tie(b.stream, b.seq, b.run.start_ns);
  };
  auto orig = recs;
  std::sort(orig.begin(), orig.end(), key);
  std::sort(back.begin(), back.end(), key);
  RoundTrip rt;
  rt.records_same = orig == back;
  std::vector<analysis::TraceRun> a, b;
  for (auto& r : orig) a.push_back(r.run);
  for (auto& r : back) b.push_back(r.run);
  rt.summary_same = analysis::SummaryToJson(analysis::Summarize(a)) == analysis::SummaryToJson(analysis::Summarize(b));
  return rt;
}

std::string ReportToRecords(const std::string& job_id, const Compressed& c, const std::string& host) {
  const int64_t stream =
      analysis::ResultStreamId("iosonar.result.compression", {job_id, c.lossy ? "lossy" : "lossless"});
  int64_t first = 0;
  bool any = false;
  for (const auto& g : c.groups) {
    if (!any || g.window < first) first = g.window;
    any = true;
  }
  std::string out;
  JsonWriter w(&out, 0);
  analysis::BeginResultRecord(w, any ? first : NowNs(), dataset::kResultCompression, stream, 0, host);
  w.Kv(field::kJobId, job_id);
  results::WriteStreamFields(w, RowOf("", 0, c, ""),
                             [&](std::string_view f) { w.Kv(f, c.lossy ? "lossy" : "lossless"); });  // compress.mode
  w.EndObject();
  out += '\n';
  return out;
}

}  // namespace iosonar::compress2
