#include "test/testutil/store_conformance.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <tuple>

#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::test {
namespace {

constexpr int64_t kT0 = kConfT0;
constexpr int64_t kMs = 1000000;
constexpr int64_t kSec = 1000 * kMs;

}  // namespace

StoreCorpus::StoreCorpus() {
  for (int64_t i = 0; i < 600; ++i) {
    Gen g{i, kT0 + i * 50 * kMs + (i % 4 == 0 ? 0 : 0), 1000 + i * 3, i % 4, i % 3 ? "A" : "B", i % 5 ? "write" : "read"};
    if (i % 7 == 0 && i > 0) g.ts = trace.back().ts;  // ties on @timestamp
    trace.push_back(g);
    Add("{\"@timestamp\":\"" + FormatIsoMillis(g.ts) + "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":77,"
        "\"event.seq\":" + std::to_string(g.seq) + ",\"host.name\":\"n" + std::to_string(i % 2) + "\",\"job.id\":\"" + g.job +
        "\",\"process.pid\":9,\"process.tid\":9,\"process.rank\":" + std::to_string(g.rank) + ",\"io.op\":\"" + g.op +
        "\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/f" + std::to_string(i % 3) + "\",\"io.size\":4096,\"io.count\":2,"
        "\"io.bytes\":" + std::to_string(g.bytes) + ",\"event.start_ns\":" + std::to_string(g.ts) +
        ",\"event.end_ns\":" + std::to_string(g.ts + 700) + ",\"io.duration_ns\":" + std::to_string(100 + i) + "}");
  }
  for (int64_t i = 0; i < 10; ++i)
    Add("{\"@timestamp\":\"" + FormatIsoMillis(kT0 + i * kSec) + "\",\"event.dataset\":\"iosonar.tracer\",\"event.stream\":78,"
        "\"event.seq\":" + std::to_string(i) + ",\"host.name\":\"n0\",\"job.id\":\"A\",\"process.pid\":9,\"event.action\":\"" +
        (i ? "exit" : "start") + "\",\"tracer.raw_ops\":" + std::to_string(i * 10) +
        ",\"tracer.records\":1,\"tracer.dropped\":0,\"tracer.spooled\":0}");
}

// The conformance cases, run once per backend.
void RunStoreConformance(Store& st, const std::string& which) {
  StoreCorpus c;
  INFO("backend: " << which);

  // Append, then resend everything: all duplicates, nothing stored twice.
  AppendStats a1, a2;
  REQUIRE(st.Append(c.ptrs, &a1).message() == "");
  CHECK(a1.inserted == 610);
  CHECK(a1.duplicates == 0);
  REQUIRE(st.Append(c.ptrs, &a2).message() == "");
  CHECK(a2.inserted == 0);
  CHECK(a2.duplicates == 610);

  // Count, with keyword and long filters.
  auto n = st.Count("iosonar.trace", {});
  REQUIRE(n.ok());
  CHECK(*n == 600);
  uint64_t want_a = 0, want_rank2 = 0;
  for (const auto& g : c.trace) {
    want_a += g.job == "A";
    want_rank2 += g.rank == 2;
  }
  auto na = st.Count("iosonar.trace", {{field::kJobId, "A"}});
  REQUIRE(na.ok());
  CHECK(*na == want_a);
  auto nr = st.Count("iosonar.trace", {{field::kProcessRank, "2"}});
  REQUIRE(nr.ok());
  CHECK(*nr == want_rank2);
  auto nt = st.Count("iosonar.tracer", {});
  REQUIRE(nt.ok());
  CHECK(*nt == 10);

  // Scan: time range + filters, asked-for fields, @timestamp order.
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.range = {kT0 + 5 * kSec, kT0 + 20 * kSec};
  q.filters = {{field::kJobId, "A"}, {field::kIoOp, "write"}};
  q.fields = {field::kEventSeq, field::kTimestamp, field::kIoBytes, field::kHostName, field::kIoErrno};
  std::multiset<int64_t> want_seqs;
  std::map<int64_t, int64_t> want_bytes;
  for (const auto& g : c.trace)
    if (g.ts >= q.range.start_ns && g.ts < q.range.end_ns && g.job == "A" && g.op == "write") {
      want_seqs.insert(g.seq);
      want_bytes[g.seq] = g.bytes;
    }
  std::multiset<int64_t> got;
  int64_t last = 0;
  bool ordered = true, bytes_ok = true, no_errno = true, host_ok = true;
  REQUIRE(st.Scan(q, [&](const Row& r) {
              int64_t seq = r.Int(0);
              got.insert(seq);
              if (r.Int(1) < last) ordered = false;
              last = r.Int(1);
              if (r.Int(2) != want_bytes[seq]) bytes_ok = false;
              if (r.Has(4)) no_errno = false;
              if (r.Str(3) != "n" + std::to_string(seq % 2)) host_ok = false;
              return true;
            }).message() == "");
  CHECK(got == want_seqs);
  CHECK(ordered);
  CHECK(bytes_ok);
  CHECK(no_errno);
  CHECK(host_ok);

  // Early stop.
  size_t rows = 0;
  ScanQuery all;
  all.dataset = dataset::kTrace;
  all.fields = {field::kEventSeq};
  REQUIRE(st.Scan(all, [&](const Row&) { return ++rows < 5; }).ok());
  CHECK(rows == 5);

  // Bucketed sums, 1 s and 7 s buckets, aligned to the epoch, with a filter.
  for (int64_t w : {kSec, 7 * kSec}) {
    BucketQuery bq;
    bq.dataset = dataset::kTrace;
    bq.bucket_ns = w;
    bq.filters = {{field::kIoOp, "write"}};
    bq.sum_fields = {field::kIoBytes, field::kIoCount};
    std::map<int64_t, std::pair<uint64_t, double>> want;
    for (const auto& g : c.trace)
      if (g.op == "write") {
        auto& x = want[g.ts / w * w];
        ++x.first;
        x.second += static_cast<double>(g.bytes);
      }
    auto buckets = st.BucketSums(bq);
    REQUIRE(buckets.ok());
    REQUIRE(buckets->size() == want.size());
    size_t k = 0;
    for (const auto& [start, x] : want) {
      const Bucket& got_b = (*buckets)[k++];
      CHECK(got_b.start_ns == start);
      CHECK(got_b.doc_count == x.first);
      REQUIRE(got_b.sums.size() == 2);
      CHECK(got_b.sums[0] == x.second);
      CHECK(got_b.sums[1] == 2.0 * static_cast<double>(x.first));
    }
  }

  // An empty range scans nothing and sums to no buckets.
  ScanQuery empty = q;
  empty.range = {kT0 - 10 * kSec, kT0 - 5 * kSec};
  size_t none = 0;
  REQUIRE(st.Scan(empty, [&](const Row&) { return ++none, true; }).ok());
  CHECK(none == 0);

  // A dataset of the schema with nothing stored: empty, not an error.
  auto none_count = st.Count("iosonar.sampler", {});
  REQUIRE(none_count.ok());
  CHECK(*none_count == 0);
  ScanQuery none_q;
  none_q.dataset = dataset::kSampler;
  none_q.fields = {field::kTimestamp};
  size_t none_rows = 0;
  REQUIRE(st.Scan(none_q, [&](const Row&) { return ++none_rows, true; }).ok());
  CHECK(none_rows == 0);
  BucketQuery none_b;
  none_b.dataset = dataset::kSampler;
  auto none_buckets = st.BucketSums(none_b);
  REQUIRE(none_buckets.ok());
  CHECK(none_buckets->empty());

  // Errors name what was wrong.
  auto bad_ds = st.Count("iosonar.nope", {});
  CHECK_FALSE(bad_ds.ok());
  BucketQuery bad_sum;
  bad_sum.dataset = dataset::kTrace;
  bad_sum.sum_fields = {field::kHostName};
  auto bs = st.BucketSums(bad_sum);
  REQUIRE_FALSE(bs.ok());
  CHECK(bs.status().message().find("host.name") != std::string::npos);
  ScanQuery bad_field = all;
  bad_field.fields = {field::kTracerDropped};  // a field, but of iosonar.tracer
  Status sf = st.Scan(bad_field, [](const Row&) { return true; });
  REQUIRE_FALSE(sf.ok());
  CHECK(sf.message().find("tracer.dropped") != std::string::npos);

  // The dedupe key carries a numeric user.id (DedupeId): the same stream and
  // seq under another uid is another record (a user who learns another user's
  // stream cannot make that user's records look stored); the same uid sent
  // again is a duplicate, and so is a user.id that is no uid against none.
  auto tracer_line = [&](ParsedLines& to, int64_t seq, const char* user) {
    std::string l = "{\"@timestamp\":\"" + FormatIsoMillis(kT0) +
                    "\",\"event.dataset\":\"iosonar.tracer\",\"event.stream\":79,\"event.seq\":" + std::to_string(seq) +
                    ",\"host.name\":\"n0\",\"job.id\":\"U\",\"process.pid\":9,";
    if (user) l += std::string("\"user.id\":\"") + user + "\",";
    l += "\"event.action\":\"exit\",\"tracer.raw_ops\":1,\"tracer.records\":1,\"tracer.dropped\":0,\"tracer.spooled\":0}";
    to.Add(l);
  };
  ParsedLines users, again;
  tracer_line(users, 0, "1000");
  tracer_line(users, 0, "1001");
  tracer_line(users, 0, nullptr);
  tracer_line(users, 1, "1000");
  AppendStats u1, u2;
  REQUIRE(st.Append(users.ptrs, &u1).message() == "");
  CHECK(u1.inserted == 4);
  CHECK(u1.duplicates == 0);
  tracer_line(again, 0, "1000");
  tracer_line(again, 0, "x9");
  tracer_line(again, 1, "1000");
  REQUIRE(st.Append(again.ptrs, &u2).message() == "");
  CHECK(u2.inserted == 0);
  CHECK(u2.duplicates == 3);
  auto nu = st.Count("iosonar.tracer", {{field::kJobId, "U"}});
  REQUIRE(nu.ok());
  CHECK(*nu == 4);
}


}  // namespace iosonar::test

namespace iosonar::test {

// Groups() and Span() (what analyses that only add up ask): expected values
// from the generated records, added up here.
void RunGroupConformance(Store& st, const std::string& which) {
  StoreCorpus c;
  INFO("backend: " << which);
  AppendStats a;
  REQUIRE(st.Append(c.ptrs, &a).message() == "");
  REQUIRE(a.inserted == 610);

  using Key = std::tuple<std::string, std::string, size_t>;  // key 0, key 1, split
  struct Sum {
    uint64_t count = 0;
    int64_t bytes = 0, ops = 0;
    bool operator==(const Sum& o) const { return count == o.count && bytes == o.bytes && ops == o.ops; }
  };
  // Three queries in one call: per host and op of job A; per op and 2-s bucket
  // of event.start_ns from an unaligned start (clamped at both ends); all records.
  const int64_t split_start = kT0 + 3 * kSec + 1, width = 2 * kSec;
  const size_t nsplit = 5;
  std::vector<GroupQuery> qs(3);
  for (auto& q : qs) q.dataset = "iosonar.trace";
  qs[0].filters = {{field::kJobId, "A"}};
  qs[0].keys = {field::kHostName, field::kIoOp};
  qs[0].sums = {field::kIoBytes, field::kIoCount};
  qs[1].keys = {field::kIoOp};
  qs[1].split_field = field::kEventStartNs;
  qs[1].split_start = split_start;
  qs[1].split_width = width;
  qs[1].split_count = nsplit;
  qs[1].sums = {field::kIoBytes, field::kIoCount};
  // Per group, the records with io.bytes (all), file.id (none), process.rank (all).
  qs[1].present = {field::kIoBytes, field::kFileId, field::kProcessRank};
  qs[2].sums = {field::kIoBytes, field::kIoCount};
  std::vector<std::map<Key, Sum>> want(3), got(3);
  for (size_t i = 0; i < c.trace.size(); ++i) {
    const auto& g = c.trace[i];
    const std::string host = "n" + std::to_string(i % 2);
    auto add = [&](std::map<Key, Sum>& m, Key k) {
      auto& s = m[k];
      ++s.count;
      s.bytes += g.bytes;
      s.ops += 2;
    };
    if (g.job == "A") add(want[0], {host, g.op, 0});
    int64_t b = g.ts < split_start ? 0 : (g.ts - split_start) / width;
    if (b >= static_cast<int64_t>(nsplit)) b = nsplit - 1;
    add(want[1], {g.op, "", static_cast<size_t>(b)});
    add(want[2], {"", "", 0});
  }
  // The three queries share dataset, range and filters on SQLite's single scan:
  // run the filtered one on its own.
  auto collect = [&](std::span<const GroupQuery> q, size_t base) {
    return st.Groups(q, [&](size_t which_q, const Group& g) {
      const size_t w = base + which_q;
      REQUIRE(g.sums.size() == 2);
      if (w == 1) {
        REQUIRE(g.present.size() == 3);
        CHECK(g.present[0] == g.count);
        CHECK(g.present[1] == 0);
        CHECK(g.present[2] == g.count);
      } else {
        CHECK(g.present.empty());
      }
      Key k{g.keys.size() > 0 ? g.keys[0] : "", g.keys.size() > 1 ? g.keys[1] : "", g.split};
      auto& s = got[w][k];
      s.count += g.count;
      s.bytes += g.sums[0];
      s.ops += g.sums[1];
      return true;
    });
  };
  Status s0 = collect(std::span<const GroupQuery>(qs.data(), 1), 0);
  REQUIRE(s0.message() == "");
  Status s12 = collect(std::span<const GroupQuery>(qs.data() + 1, 2), 1);
  REQUIRE(s12.message() == "");
  for (size_t w = 0; w < 3; ++w) {
    INFO("query " << w);
    CHECK(got[w].size() == want[w].size());
    for (const auto& [k, v] : want[w]) {
      INFO(std::get<0>(k) << " " << std::get<1>(k) << " split " << std::get<2>(k));
      auto it = got[w].find(k);
      REQUIRE(it != got[w].end());
      CHECK(it->second == v);
    }
  }
  CHECK(got[1].size() == 2 * nsplit);  // every bucket has reads and writes, the ends clamped
  CHECK(got[2].begin()->second.count == 600);

  // Long keys: their decimal text, "" where absent (no record has io.fd),
  // in the composite path (no split) and the filters path (a split).
  std::vector<GroupQuery> lq(2);
  for (auto& q : lq) {
    q.dataset = "iosonar.trace";
    q.keys = {field::kProcessRank, field::kIoFd};
    q.sums = {field::kIoBytes, field::kIoCount};
  }
  lq[1].split_field = field::kEventStartNs;
  lq[1].split_start = split_start;
  lq[1].split_width = width;
  lq[1].split_count = nsplit;
  std::vector<std::map<Key, Sum>> lwant(2), lgot(2);
  for (const auto& g : c.trace) {
    for (size_t w = 0; w < 2; ++w) {
      int64_t b = g.ts < split_start ? 0 : (g.ts - split_start) / width;
      if (b >= static_cast<int64_t>(nsplit)) b = nsplit - 1;
      auto& x = lwant[w][{std::to_string(g.rank), "", w ? static_cast<size_t>(b) : 0}];
      ++x.count;
      x.bytes += g.bytes;
      x.ops += 2;
    }
  }
  for (size_t w = 0; w < 2; ++w) {
    Status ls = st.Groups(std::span<const GroupQuery>(&lq[w], 1), [&](size_t, const Group& g) {
      REQUIRE(g.keys.size() == 2);
      auto& x = lgot[w][{g.keys[0], g.keys[1], g.split}];
      x.count += g.count;
      x.bytes += g.sums[0];
      x.ops += g.sums[1];
      return true;
    });
    REQUIRE(ls.message() == "");
    CHECK(lgot[w] == lwant[w]);
  }

  // Many split buckets: an engine asks for them in several requests (8 buckets
  // a request, two in flight on Elasticsearch), an odd one last; the same sums.
  {
    const int64_t w2 = kSec / 2;
    const size_t n2 = 21;
    GroupQuery mq;
    mq.dataset = "iosonar.trace";
    mq.keys = {field::kIoOp};
    mq.split_field = field::kEventStartNs;
    mq.split_start = split_start;
    mq.split_width = w2;
    mq.split_count = n2;
    mq.sums = {field::kIoBytes, field::kIoCount};
    std::map<Key, Sum> mwant, mgot;
    for (const auto& g : c.trace) {
      int64_t b = g.ts < split_start ? 0 : (g.ts - split_start) / w2;
      if (b >= static_cast<int64_t>(n2)) b = n2 - 1;
      auto& x = mwant[{g.op, "", static_cast<size_t>(b)}];
      ++x.count;
      x.bytes += g.bytes;
      x.ops += 2;
    }
    std::vector<size_t> order;  // the buckets as given
    Status ms = st.Groups(std::span<const GroupQuery>(&mq, 1), [&](size_t, const Group& g) {
      REQUIRE(g.keys.size() == 1);
      order.push_back(g.split);
      auto& x = mgot[{g.keys[0], "", g.split}];
      x.count += g.count;
      x.bytes += g.sums[0];
      x.ops += g.sums[1];
      return true;
    });
    REQUIRE(ms.message() == "");
    CHECK(mgot == mwant);
    CHECK(std::set<size_t>(order.begin(), order.end()).size() == n2);  // every bucket has records, the last clamped
  }

  // Split buckets at epoch-nanosecond scale, values 1 ns either side of each
  // boundary: a double (53 bits) cannot tell them apart there, so an engine
  // that rounds the split field through a double puts them in the wrong
  // bucket. 12 buckets (more than one filters request holds), aligned to the
  // second and 3 ns off it; values before and after the buckets clamped.
  {
    ParsedLines e;
    std::vector<int64_t> starts;
    for (int64_t k = 1; k <= 10; ++k)
      for (int64_t d : {-1, 0, 2, 3}) starts.push_back(kT0 + k * kSec + d);
    starts.push_back(kT0 - 5);
    starts.push_back(kT0 + 40 * kSec);
    for (size_t i = 0; i < starts.size(); ++i)
      e.Add("{\"@timestamp\":\"" + FormatIsoMillis(starts[i]) + "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":79,"
            "\"event.seq\":" + std::to_string(i) + ",\"host.name\":\"n0\",\"job.id\":\"E\",\"process.pid\":9,\"process.tid\":9,"
            "\"io.op\":\"write\",\"io.layer\":\"posix\",\"io.size\":1,\"io.count\":1,\"io.bytes\":" + std::to_string(i + 1) +
            ",\"event.start_ns\":" + std::to_string(starts[i]) + ",\"event.end_ns\":" + std::to_string(starts[i] + 1) + ",\"io.duration_ns\":1}");
    AppendStats ea;
    REQUIRE(st.Append(e.ptrs, &ea).message() == "");
    REQUIRE(ea.inserted == starts.size());
    for (int64_t off : {int64_t{0}, int64_t{3}}) {
      INFO("split_start kT0 + " << off << " ns");
      GroupQuery eq;
      eq.dataset = "iosonar.trace";
      eq.filters = {{field::kJobId, "E"}};
      eq.keys = {field::kIoOp};
      eq.split_field = field::kEventStartNs;
      eq.split_start = kT0 + off;
      eq.split_width = kSec;
      eq.split_count = 12;
      eq.sums = {field::kIoBytes};
      std::map<size_t, std::pair<uint64_t, int64_t>> ewant, egot;  // split: records, bytes
      for (size_t i = 0; i < starts.size(); ++i) {
        const int64_t v = starts[i] - eq.split_start;
        const size_t b = v < 0 ? 0 : std::min<size_t>(static_cast<size_t>(v / kSec), 11);
        ++ewant[b].first;
        ewant[b].second += static_cast<int64_t>(i + 1);
      }
      Status es = st.Groups(std::span<const GroupQuery>(&eq, 1), [&](size_t, const Group& g) {
        REQUIRE(g.keys.size() == 1);
        CHECK(g.keys[0] == "write");
        egot[g.split].first += g.count;
        egot[g.split].second += g.sums[0];
        return true;
      });
      REQUIRE(es.message() == "");
      CHECK(egot == ewant);
      CHECK(egot.size() == 12);
    }
  }

  // Span: the first start and the last end of job B.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& g : c.trace)
    if (g.job == "B") lo = std::min(lo, g.ts), hi = std::max(hi, g.ts + 700);
  auto sp = st.Span("iosonar.trace", {{field::kJobId, "B"}}, field::kEventStartNs, field::kEventEndNs);
  REQUIRE(sp.ok());
  REQUIRE(sp->first.has_value());
  REQUIRE(sp->second.has_value());
  CHECK(*sp->first == lo);
  CHECK(*sp->second == hi);
  // Spans: job B's, and its reads', writes' and a value none has, in one call.
  {
    std::map<std::string, std::pair<int64_t, int64_t>> by_op;
    for (const auto& g : c.trace) {
      if (g.job != "B") continue;
      auto [it, fresh] = by_op.try_emplace(g.op, g.ts, g.ts + 700);
      if (!fresh) it->second = {std::min(it->second.first, g.ts), std::max(it->second.second, g.ts + 700)};
    }
    REQUIRE(by_op.size() == 2);
    auto sps = st.Spans("iosonar.trace", {{field::kJobId, "B"}}, field::kEventStartNs, field::kEventEndNs, field::kIoOp,
                        {"read", "write", "nope"});
    REQUIRE(sps.ok());
    REQUIRE(sps->size() == 4);
    CHECK((*sps)[0] == Store::SpanPair(lo, hi));
    CHECK((*sps)[1] == Store::SpanPair(by_op["read"].first, by_op["read"].second));
    CHECK((*sps)[2] == Store::SpanPair(by_op["write"].first, by_op["write"].second));
    CHECK(!(*sps)[3].first.has_value());
    CHECK(!(*sps)[3].second.has_value());
    auto bad_key = st.Spans("iosonar.trace", {}, field::kEventStartNs, field::kEventEndNs, field::kIoBytes, {"1"});
    CHECK(bad_key.status().message().find("io.bytes") != std::string::npos);
  }
  auto none = st.Span("iosonar.trace", {{field::kJobId, "nope"}}, field::kEventStartNs, field::kEventEndNs);
  REQUIRE(none.ok());
  CHECK(!none->first.has_value());
  CHECK(!none->second.has_value());

  // Errors name what was wrong.
  GroupQuery bad;
  bad.dataset = "iosonar.trace";
  bad.sums = {field::kHostName};
  Status e1 = st.Groups(std::span<const GroupQuery>(&bad, 1), [](size_t, const Group&) { return true; });
  CHECK(e1.message().find("host.name") != std::string::npos);
  bad.sums = {};
  bad.split_field = field::kEventStartNs;
  bad.split_count = 3;
  Status e2 = st.Groups(std::span<const GroupQuery>(&bad, 1), [](size_t, const Group&) { return true; });
  CHECK(e2.message().find("split width") != std::string::npos);
}

}  // namespace iosonar::test
