// The cluster simulator: deterministic, every line valid against the schema,
// the layers consistent with each other and with the ground truth it reports.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/records/record.h"
#include "analysis-jobs/simulate/simulate.h"

using namespace iosonar;

namespace {

struct Collected {
  std::vector<std::string> lines;
  sim::SimResult res;
};

Collected Run(const sim::Config& cfg) {
  Collected c;
  Status st = sim::Simulate(cfg, [&](std::string_view l) {
    c.lines.emplace_back(l);
    return Status::Ok();
  }, &c.res);
  REQUIRE(st.ok());
  return c;
}

sim::Config Small(uint64_t seed = 7) {
  sim::Config cfg = sim::Sized(seed, 32, 4, 8, 12, 2);
  cfg.faults.storm_job = "1999";
  cfg.faults.slow_ost = 3;
  sim::GenerateJobs(&cfg);
  for (auto& j : cfg.jobs) j.bytes_per_rank_s = 8 << 20;
  return cfg;
}

int64_t I(const ParsedRecord& r, const char* f) {
  int k = FieldIndex(f);
  REQUIRE(k >= 0);
  return r[static_cast<size_t>(k)].kind == FieldValue::kInt ? r[static_cast<size_t>(k)].i : 0;
}
std::string S(const ParsedRecord& r, const char* f) {
  int k = FieldIndex(f);
  return r[static_cast<size_t>(k)].kind == FieldValue::kString ? std::string(r[static_cast<size_t>(k)].s) : "";
}

}  // namespace

TEST_CASE("simulate: same seed, same records, another seed, other records", "[simulate]") {
  auto a = Run(Small(7)), b = Run(Small(7)), c = Run(Small(8));
  REQUIRE(a.lines.size() > 100);
  CHECK(a.lines == b.lines);
  CHECK(a.lines != c.lines);
  CHECK(sim::GetstripeText(a.res) == sim::GetstripeText(b.res));
  CHECK(sim::FilePerfCsv(a.res) == sim::FilePerfCsv(b.res));
}

TEST_CASE("simulate: every line validates and the layers agree", "[simulate]") {
  auto c = Run(Small());
  std::map<std::string, uint64_t> by_ds;
  std::map<std::string, int64_t> trace_bytes, jobstats_bytes, trace_opens, jobstats_opens;
  int64_t oss_bytes = 0, llite_bytes = 0, osc_rpcs = 0, oss_ops = 0, trace_total = 0;
  std::map<std::pair<std::string, int64_t>, int> seen;  // (stream, seq) unique
  ParsedRecord rec;
  for (const auto& l : c.lines) {
    std::string buf = l;
    buf.push_back('\0');
    Status st = ParseRecordInsitu(buf.data(), l.size(), &rec);
    INFO(l);
    REQUIRE(st.ok());
    const std::string ds(rec.dataset->name);
    by_ds[ds]++;
    CHECK(seen[{std::to_string(I(rec, "event.stream")), I(rec, "event.seq")}]++ == 0);
    if (ds == "iosonar.trace") {
      trace_bytes[S(rec, "job.id")] += I(rec, "io.bytes");
      trace_total += I(rec, "io.bytes");
      if (S(rec, "io.op") == "open") trace_opens[S(rec, "job.id")] += I(rec, "io.count");
    } else if (ds == "iosonar.jobstats") {
      jobstats_bytes[S(rec, "job.id")] += I(rec, "oss.read_bytes") + I(rec, "oss.write_bytes");
      jobstats_opens[S(rec, "job.id")] += I(rec, "mds.open");
    } else if (ds == "iosonar.oss") {
      oss_bytes += I(rec, "oss.read_bytes") + I(rec, "oss.write_bytes");
      oss_ops += I(rec, "oss.read_ops") + I(rec, "oss.write_ops");
    } else if (ds == "iosonar.client") {
      if (S(rec, "client.layer") == "llite") llite_bytes += I(rec, "client.read_bytes") + I(rec, "client.write_bytes");
      else osc_rpcs += I(rec, "client.rpc_reads") + I(rec, "client.rpc_writes");
    }
  }
  for (const char* ds : {"iosonar.trace", "iosonar.client", "iosonar.oss", "iosonar.mds", "iosonar.jobstats"})
    CHECK(by_ds[ds] > 0);
  CHECK(c.res.lines == c.lines.size());
  // Client = forwarding layer = job_stats, byte for byte; the OSTs see more (background).
  CHECK(llite_bytes == trace_total);
  for (const auto& t : c.res.jobs) {
    INFO("job " << t.id);
    CHECK(trace_bytes[t.id] == t.bytes);
    CHECK(jobstats_bytes[t.id] == t.bytes);
    CHECK(trace_opens[t.id] == t.opens);
    CHECK(jobstats_opens[t.id] == t.opens);
    int64_t sum = 0;
    for (auto& [o, b] : t.ost_bytes) sum += b;
    CHECK(sum == t.bytes);
  }
  CHECK(oss_bytes > trace_total);
  CHECK(osc_rpcs > 0);
  CHECK(oss_ops >= osc_rpcs);
}

TEST_CASE("simulate: the slow OST slows exactly the files striped over it", "[simulate]") {
  auto c = Run(Small());
  size_t slow = 0, fast = 0;
  for (const auto& p : c.res.file_perf) {
    if (p.bytes == 0) continue;
    const double bw = static_cast<double>(p.bytes) / p.seconds;
    bool on = false;
    for (int o : p.osts) on |= o == 3;
    if (on) {
      ++slow;
      CHECK(bw < 0.3 * (1ll << 30));
    } else {
      ++fast;
      CHECK(bw > 0.9 * (1ll << 30));
    }
  }
  CHECK(slow > 0);
  CHECK(fast > 0);
  const std::string csv = sim::FilePerfCsv(c.res);
  CHECK(csv.rfind("file,bytes,seconds,osts\n", 0) == 0);
}

// A slow OST or forwarding node shows in the signals a real system gives:
// brw_stats I/O times per I/O on the OST, deeper OSC queues on the clients;
// the brw I/O count is the OST's op count; the truth names the faults and,
// per job, the slow servers its ranks went through.
TEST_CASE("simulate: faults show as Lustre shows them, and the truth names them", "[simulate][truth]") {
  for (uint64_t seed : {7u, 21u}) {
    INFO("seed " << seed);
    sim::Config cfg = Small(seed);
    cfg.faults.slow_fwd = 2;
    cfg.faults.slow_fwd_from_s = 6;
    auto c = Run(cfg);
    std::map<std::string, double> ios, ms;   // OST -> brw I/Os, I/O time
    std::map<std::string, int64_t> ops;      // OST -> oss ops
    std::map<std::string, std::vector<double>> depth;  // "slow"/"fast" path -> in-flight means
    // ost_io request waits: per (OSS, interval end) the value each OST record carried and the OSTs' ops.
    struct OssTick {
      std::set<int64_t> waits;
      double ops = 0, slow_ops = 0;  // all I/Os, those to the slow OST
    };
    std::map<std::pair<std::string, int64_t>, OssTick> oss_ticks;
    ParsedRecord rec;
    for (const auto& l : c.lines) {
      std::string buf = l;
      buf.push_back('\0');
      REQUIRE(ParseRecordInsitu(buf.data(), l.size(), &rec).ok());
      const std::string ds(rec.dataset->name);
      const std::string target = S(rec, "lustre.target");
      if (ds == "iosonar.brw") {
        CHECK(S(rec, "brw.hist") == "io_time_ms");
        const double n = static_cast<double>(I(rec, "brw.read") + I(rec, "brw.write"));
        ios[target] += n;
        ms[target] += n * static_cast<double>(I(rec, "brw.bucket"));
      } else if (ds == "iosonar.oss") {
        const int64_t n = I(rec, "oss.read_ops") + I(rec, "oss.write_ops");
        ops[target] += n;
        OssTick& t = oss_ticks[{S(rec, "host.name"), rec[static_cast<size_t>(FieldIndex("@timestamp"))].i}];
        const int64_t w = I(rec, "oss.ost_io_wait_ns");
        if (w > 0) t.waits.insert(w);
        t.ops += static_cast<double>(n);
        if (target == "simfs-OST0003") t.slow_ops += static_cast<double>(n);
      } else if (ds == "iosonar.client" && S(rec, "client.layer") == "osc") {
        const int kw = FieldIndex("client.rpc_write_in_flight_mean"), kr = FieldIndex("client.rpc_read_in_flight_mean");
        REQUIRE((kw >= 0 && kr >= 0));
        const auto& vw = rec[static_cast<size_t>(kw)];
        const auto& v = vw.kind != FieldValue::kAbsent ? vw : rec[static_cast<size_t>(kr)];
        const double d = v.kind == FieldValue::kInt ? static_cast<double>(v.i) : v.d;
        const int64_t ts = rec[static_cast<size_t>(FieldIndex("@timestamp"))].i;  // epoch ns whatever the kind
        const bool via_slow_fwd = S(rec, "host.name") == "fwd002" && ts >= cfg.start_ns + 7 * 1000000000ll;
        const bool to_slow_ost = target.rfind("simfs-OST0003", 0) == 0;
        depth[via_slow_fwd || to_slow_ost ? "slow" : "fast"].push_back(d);
      }
    }
    for (auto& [o, n] : ios) {
      INFO(o);
      CHECK(static_cast<int64_t>(n) == ops[o]);  // every I/O in the histogram
      const double mean = ms[o] / n;
      if (o == "simfs-OST0003") CHECK((mean >= 4 && mean < 8));  // a quarter of the rate: ~4 ms an I/O
      else CHECK((mean >= 1 && mean < 2));
    }
    // One wait per OSS and interval on all its OSTs' records: 50-60 us times
    // the mean of 1/x over its requests (OST0003, on oss000, at x = 1/4).
    REQUIRE(!oss_ticks.empty());
    bool slower = false;
    for (const auto& [key, t] : oss_ticks) {
      INFO(key.first << " at " << key.second);
      if (t.ops <= 0) {
        CHECK(t.waits.empty());
        continue;
      }
      REQUIRE(t.waits.size() == 1);
      const double factor = (t.ops - t.slow_ops + 4 * t.slow_ops) / t.ops;
      const double base = static_cast<double>(*t.waits.begin()) / factor;
      CHECK((base >= 49999 && base <= 60001));
      if (key.first != "oss000") CHECK(t.slow_ops == 0);
      slower |= factor > 1.5;
    }
    CHECK(slower);  // the slow OST's OSS waits longer at times
    REQUIRE(!depth["slow"].empty());
    REQUIRE(!depth["fast"].empty());
    for (double d : depth["slow"]) CHECK(d >= 4);
    for (double d : depth["fast"]) CHECK(d == 1);
    REQUIRE(c.res.faults.size() == 2);
    CHECK(c.res.faults[0].name == "simfs-OST0003");
    CHECK(c.res.faults[1].name == "fwd002");
    CHECK(c.res.faults[1].from_ns == cfg.start_ns + 6 * 1000000000ll);
    const std::string truth = sim::TruthJson(c.res);
    CHECK(truth.find("\"faults\"") != std::string::npos);
    // Per job: the slow servers are exactly those its ranks moved data through while slow.
    for (const auto& t : c.res.jobs) {
      INFO("job " << t.id);
      bool on_ost = false, via_fwd = false;
      for (const auto& L : c.res.layouts)
        if (L.job_id == t.id)
          for (int o : L.osts) on_ost |= o == 3 && t.bytes > 0;
      for (const auto& [f, b] : t.fwd_bytes) via_fwd |= f == 2 && b > 0 && t.end_ns > cfg.start_ns + 6 * 1000000000ll;
      CHECK(t.slow_servers.count("simfs-OST0003") == (on_ost ? 1u : 0u));
      if (!via_fwd) CHECK(t.slow_servers.count("fwd002") == 0);
    }
  }
}

TEST_CASE("simulate: job specs parse, bad ones are named", "[simulate]") {
  auto j = sim::ParseJobSpec("id=77,mode=N-M,first=4,nodes=8,m=2,bytes=16M,req=64K,read=1");
  REQUIRE(j.ok());
  CHECK(j->id == "77");
  CHECK(j->mode == sim::Mode::kNM);
  CHECK(j->first_node == 4);
  CHECK(j->nodes == 8);
  CHECK(j->m_files == 2);
  CHECK(j->bytes_per_rank_s == 16ll << 20);
  CHECK(j->request == 64 << 10);
  CHECK(j->read);
  auto bad = sim::ParseJobSpec("id=1,nodes=x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("nodes=x") != std::string::npos);
  CHECK_FALSE(sim::ParseJobSpec("id=1,color=red").ok());
  CHECK_FALSE(sim::ParseJobSpec("mode=N-N").ok());
  CHECK_FALSE(sim::ParseJobSpec("id=1,mode=N-X").ok());
  // A job outside the cluster is refused, not simulated.
  sim::Config cfg;
  cfg.nodes = 4;
  cfg.jobs.push_back(*sim::ParseJobSpec("id=5,first=2,nodes=4"));
  sim::SimResult r;
  CHECK_FALSE(sim::Simulate(cfg, [](std::string_view) { return Status::Ok(); }, &r).ok());
}

TEST_CASE("simulate: variability makes some ranks differ, and the layers still agree", "[simulate]") {
  sim::Config cfg = Small(5);
  cfg.variability = 0.5;
  auto c = Run(cfg);
  auto base = Run(Small(5));
  CHECK(c.lines != base.lines);
  for (size_t k = 0; k < c.res.jobs.size(); ++k) {
    const auto& t = c.res.jobs[k];
    int64_t sum = 0;
    for (auto& [o, b] : t.ost_bytes) sum += b;
    CHECK(sum == t.bytes);
    if (cfg.jobs[k].mode == sim::Mode::kNN) CHECK(t.bytes < base.res.jobs[k].bytes);
  }
}
