// I/O phases: the wavelet transform against PyWavelets (the oracle), perfect
// reconstruction, and phase finding on synthetic bandwidth series.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <map>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/records/record.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/phases/phases.h"
#include "analysis-jobs/phases/wavelet.h"
#include "test/testutil/oracle.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::analysis;
using iosonar::test::TempDir;

namespace {

std::vector<double> Signal(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-5, 5);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (i % 16 < 5 ? 100.0 : 0.0) + u(rng) + 0.5 * static_cast<double>(i);
  return v;
}

bool HavePywt() {
  auto r = iosonar::test::Run({"/usr/bin/python3", "-c", "import pywt"});
  return r.exit_code == 0;
}

void CheckClose(const std::vector<double>& got, const rapidjson::Value& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.Size());
  // Relative to the vector's scale: round-off of values near 0 in a series of
  // 5e8 is about 1e-8 in both implementations.
  double scale = 1.0;
  for (const auto& w : want.GetArray()) scale = std::max(scale, std::fabs(w.GetDouble()));
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[static_cast<rapidjson::SizeType>(i)].GetDouble();
    INFO("index " << i << " got " << got[i] << " want " << w);
    CHECK(std::fabs(got[i] - w) <= 1e-12 * scale + 1e-9 * std::fabs(w));
  }
}

}  // namespace

TEST_CASE("phases: DWT coefficients and denoised reconstruction equal PyWavelets'", "[phases][oracle]") {
  if (!HavePywt()) {
    FAIL("python3-pywt is not installed (scripts/setup.sh --test installs it)");
  }
  struct Case {
    std::vector<double> x;
    WaveletKind w;
    ExtensionMode m;
    int level;
    double thr;
  };
  std::vector<Case> cases;
  const std::vector<std::vector<double>> signals = {Signal(64, 1), Signal(17, 2), Signal(100, 3), Signal(9, 4),
                                                    {0, 0, 0, 5e8, 5e8, 0, 0, 0, 0, 0, 7e8, 0, 0, 0, 0, 0}};
  for (const auto& x : signals)
    for (auto w : {WaveletKind::kHaar, WaveletKind::kDb4})
      for (auto m : {ExtensionMode::kPeriodization, ExtensionMode::kSymmetric})
        for (int level : {1, 2, 3}) cases.push_back({x, w, m, level, level == 2 ? 3.0 : 0.0});
  std::string in;
  {
    JsonWriter j(&in, 0);
    j.BeginArray();
    for (const auto& c : cases) {
      j.BeginObject();
      j.Key("signal");
      j.BeginArray();
      for (double v : c.x) j.Double(v);
      j.EndArray();
      j.Kv("wavelet", WaveletName(c.w));
      j.Kv("mode", ExtensionModeName(c.m));
      j.Kv("level", c.level);
      j.Kv("threshold", c.thr);
      j.EndObject();
    }
    j.EndArray();
  }
  const rapidjson::Document d = iosonar::test::RunOracle("phases_pywt.py", {}, in);
  REQUIRE(d.Size() == cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    const auto& o = d[static_cast<rapidjson::SizeType>(k)];
    const std::string what = std::string(WaveletName(c.w)) + "/" + std::string(ExtensionModeName(c.m)) + " n=" +
                             std::to_string(c.x.size()) + " level " + std::to_string(c.level);
    CHECK(DwtMaxLevel(c.x.size(), c.w) == o["max_level"].GetInt());
    auto coeffs = Wavedec(c.x, c.w, c.m, c.level);
    REQUIRE(coeffs.size() == o["coeffs"].Size());
    for (size_t i = 0; i < coeffs.size(); ++i)
      CheckClose(coeffs[i], o["coeffs"][static_cast<rapidjson::SizeType>(i)], what + " coeffs[" + std::to_string(i) + "]");
    for (size_t i = 1; i < coeffs.size(); ++i) SoftThreshold(coeffs[i], c.thr);
    CheckClose(Waverec(coeffs, c.w, c.m), o["rec"], what + " waverec");
  }
}

TEST_CASE("phases: wavedec then waverec gives the signal back", "[phases]") {
  for (auto w : {WaveletKind::kHaar, WaveletKind::kDb4})
    for (auto m : {ExtensionMode::kPeriodization, ExtensionMode::kSymmetric})
      for (size_t n : {size_t{8}, size_t{33}, size_t{128}}) {
        auto x = Signal(n, static_cast<unsigned>(n));
        auto rec = Waverec(Wavedec(x, w, m, 3), w, m);
        REQUIRE(rec.size() >= n);
        for (size_t i = 0; i < n; ++i) CHECK(rec[i] == Approx(x[i]).margin(1e-9));
      }
}

TEST_CASE("phases: bursts in a series become phases with exact boundaries", "[phases]") {
  // Three write bursts of 2, 3 and 1 s with pauses, plus a little noise
  // (small log writes) that the denoising and the active fraction drop.
  std::vector<double> w(40, 0.0);
  for (int i = 5; i < 7; ++i) w[i] = 400e6;
  for (int i = 15; i < 18; ++i) w[i] = 300e6;
  w[30] = 500e6;
  w[10] = 2000;  // a log line
  w[25] = 1500;
  std::vector<double> r(40, 0.0);
  r[1] = 100e6;
  for (auto wk : {WaveletKind::kHaar, WaveletKind::kDb4})
    for (auto m : {ExtensionMode::kPeriodization, ExtensionMode::kSymmetric}) {
      PhaseOptions opt;
      opt.wavelet = wk;
      opt.mode = m;
      JobPhases jp = PhasesFromSeries("j", 1000000000LL * 1000, r, w, opt);
      INFO(WaveletName(wk) << " " << ExtensionModeName(m));
      REQUIRE(jp.write.phases.size() == 3);
      CHECK(jp.write.phases[0].first_bucket == 5);
      CHECK(jp.write.phases[0].buckets == 2);
      CHECK(jp.write.phases[0].bytes == 800000000u);
      CHECK(jp.write.phases[0].bw_mean == Approx(400e6));
      CHECK(jp.write.phases[1].first_bucket == 15);
      CHECK(jp.write.phases[1].buckets == 3);
      CHECK(jp.write.phases[2].first_bucket == 30);
      CHECK(jp.write.phases[2].start_ns == 1000000000LL * 1030);
      CHECK(jp.write.phases[2].duration_ns == 1000000000LL);
      REQUIRE(jp.read.phases.size() == 1);
      CHECK(jp.read.phases[0].first_bucket == 1);
      REQUIRE(jp.phases.size() == 4);
      CHECK(jp.phases[0].direction == "read");
      // The JSON says the same and parses.
      rapidjson::Document d;
      d.Parse(PhasesToJson(jp).c_str());
      REQUIRE_FALSE(d.HasParseError());
      CHECK(d["write_phases"].GetInt() == 3);
      CHECK(d["phases"][1]["bytes"].GetInt64() == 800000000);
    }
}

TEST_CASE("phases: a noisy steady stream is one phase, and merge-gap joins close bursts", "[phases]") {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 5e6);
  std::vector<double> w(64, 0.0);
  for (int i = 8; i < 40; ++i) w[i] = 200e6 + noise(rng);
  PhaseOptions opt;
  opt.wavelet = WaveletKind::kDb4;
  auto sp = FindPhases(w, 0, "write", opt);
  REQUIRE(sp.phases.size() == 1);
  CHECK(sp.phases[0].first_bucket == 8);
  CHECK(sp.phases[0].buckets == 32);
  CHECK(sp.threshold > 0);  // the universal threshold saw the noise

  std::vector<double> two(20, 0.0);
  two[3] = two[4] = two[6] = 1e6;
  CHECK(FindPhases(two, 0, "write", {}).phases.size() == 2);
  PhaseOptions merge;
  merge.merge_gap = 2;
  auto m = FindPhases(two, 0, "write", merge);
  REQUIRE(m.phases.size() == 1);
  CHECK(m.phases[0].buckets == 4);
  CHECK(m.phases[0].bytes == 3000000u);
}

TEST_CASE("phases: empty and all-zero series have no phases, bad names are errors", "[phases]") {
  CHECK(FindPhases(std::vector<double>{}, 0, "write", {}).phases.empty());
  CHECK(FindPhases(std::vector<double>(10, 0.0), 0, "write", {}).phases.empty());
  CHECK(FindPhases(std::vector<double>{5.0}, 0, "write", {}).phases.size() == 1);
  CHECK_FALSE(ParseWavelet("db9").ok());
  CHECK_FALSE(ParseExtensionMode("zero").ok());
  CHECK(ParseWavelet("db4").ok());
}

TEST_CASE("phases: iosonar.result.phase records pass the schema and say what the phases are", "[phases]") {
  std::vector<double> w(20, 0.0);
  w[2] = 1e6;
  w[3] = 3e6;
  w[9] = 2e6;
  std::vector<double> r(20, 0.0);
  r[15] = 5e5;
  JobPhases jp = PhasesFromSeries("77", 1795000000LL * 1000000000, r, w, {});
  REQUIRE(jp.phases.size() == 3);
  const std::string recs = PhasesToRecords(jp, "node1");
  std::vector<std::string> lines;
  for (size_t a = 0, b; (b = recs.find('\n', a)) != std::string::npos; a = b + 1) lines.push_back(recs.substr(a, b - a));
  REQUIRE(lines.size() == 3);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string buf = lines[i];
    buf.push_back('\0');
    ParsedRecord rec;
    Status st = ParseRecordInsitu(buf.data(), lines[i].size(), &rec);
    INFO(lines[i]);
    REQUIRE(st.message() == "");
  }
  rapidjson::Document d;
  d.Parse(lines[0].c_str());
  CHECK(std::string(d["event.dataset"].GetString()) == "iosonar.result.phase");
  CHECK(std::string(d["@timestamp"].GetString()) == "2026-11-18T11:06:42.000Z");
  CHECK(d["phase.bytes"].GetInt64() == 4000000);
  CHECK(d["phase.duration_ns"].GetInt64() == 2000000000);
  CHECK(d["event.seq"].GetInt() == 0);
  rapidjson::Document last;
  last.Parse(lines[2].c_str());
  CHECK(std::string(last["phase.direction"].GetString()) == "read");
  CHECK(last["event.seq"].GetInt() == 2);
  // The same analysis of the same job gives the same stream (a resend is stored once).
  CHECK(PhasesToRecords(jp, "node1") == recs);
}

TEST_CASE("phases: a recomputation with other phases gets another stream, an identical one the same ids", "[phases]") {
  // A running job: analysed after 12 s, then after 20 s with one more burst
  // and the last burst grown. Its records must not reuse (stream, seq) ids
  // with other content (Elasticsearch would keep whichever came first).
  const int64_t t0 = 1795000000LL * 1000000000;
  std::vector<double> w(20, 0.0), r(20, 0.0);
  w[2] = 1e6;
  w[3] = 3e6;
  w[9] = 2e6;
  auto ids = [](const std::string& recs) {
    std::map<std::pair<int64_t, int64_t>, std::string> out;  // (stream, seq) -> the record
    for (size_t a = 0, b; (b = recs.find('\n', a)) != std::string::npos; a = b + 1) {
      rapidjson::Document d;
      d.Parse(recs.substr(a, b - a).c_str());
      out[{d["event.stream"].GetInt64(), d["event.seq"].GetInt64()}] = recs.substr(a, b - a);
    }
    return out;
  };
  std::vector<double> w12(w.begin(), w.begin() + 12), r12(r.begin(), r.begin() + 12);
  const JobPhases early = PhasesFromSeries("78", t0, r12, w12, {});
  std::vector<double> w_later = w;
  w_later[10] = 1e6;  // the burst at 9 went on
  w_later[16] = 4e6;  // and another one
  const JobPhases later = PhasesFromSeries("78", t0, r, w_later, {});
  REQUIRE(early.phases.size() == 2);
  REQUIRE(later.phases.size() == 3);
  const auto a = ids(PhasesToRecords(early, "node1")), b = ids(PhasesToRecords(later, "node1"));
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 3);
  for (const auto& [id, rec] : a) {
    INFO(rec);
    auto it = b.find(id);
    // No id of the first computation names a different record in the second.
    CHECK((it == b.end() || it->second == rec));
  }
  CHECK(a.begin()->first.first != b.begin()->first.first);
  // Same content, only one byte of one phase different: another stream too.
  JobPhases tweaked = later;
  tweaked.phases.back().bytes += 1;
  CHECK(ids(PhasesToRecords(tweaked, "node1")).begin()->first.first != b.begin()->first.first);
  // An identical recomputation (fresh objects, same input) has exactly the same ids and records.
  const JobPhases again = PhasesFromSeries("78", t0, r, w_later, {});
  CHECK(ids(PhasesToRecords(again, "node1")) == b);
  CHECK(PhasesToRecords(again, "node1") == PhasesToRecords(later, "node1"));
}

namespace {
struct StoreCorpus {
  std::vector<std::unique_ptr<std::string>> bufs;
  std::vector<std::unique_ptr<ParsedRecord>> recs;
  std::vector<const ParsedRecord*> ptrs;
  int64_t seq = 0;
  void Trace(const std::string& job, const std::string& op, int64_t ts_ns, int64_t bytes) {
    const std::string line = "{\"@timestamp\":\"" + FormatIsoMillis(ts_ns) +
                             "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":5,\"event.seq\":" +
                             std::to_string(seq++) + ",\"host.name\":\"n1\",\"job.id\":\"" + job +
                             "\",\"process.pid\":10,\"process.tid\":10,\"io.op\":\"" + op +
                             "\",\"io.layer\":\"posix\",\"file.path\":\"/f\",\"io.fd\":3,\"io.size\":" +
                             std::to_string(bytes) + ",\"io.count\":1,\"io.bytes\":" + std::to_string(bytes) +
                             ",\"event.start_ns\":" + std::to_string(ts_ns) + ",\"event.end_ns\":" +
                             std::to_string(ts_ns + 1000) + ",\"io.duration_ns\":1000}";
    bufs.push_back(std::make_unique<std::string>(line + '\0'));
    recs.push_back(std::make_unique<ParsedRecord>());
    Status st = ParseRecordInsitu(bufs.back()->data(), line.size(), recs.back().get());
    INFO(line);
    REQUIRE(st.message() == "");
    ptrs.push_back(recs.back().get());
  }
};
}  // namespace

TEST_CASE("phases: from the SQLite store by BucketSums, and a too-long span is refused", "[phases]") {
  TempDir dir;
  auto store = OpenSqliteStore(dir.path());
  REQUIRE(store.ok());
  StoreCorpus c;
  const int64_t s = 1000000000, t0 = 1795000000 * s;
  for (int i = 0; i < 3; ++i) c.Trace("A", "write", t0 + i * s + 200000000, 1 << 20);  // 3 s of writes
  c.Trace("A", "write", t0 + 10 * s + 500000000, 2 << 20);                          // a later burst
  c.Trace("A", "read", t0 + 5 * s, 4096);
  c.Trace("A", "open", t0 + 5 * s, 0);  // not data
  c.Trace("B", "write", t0, 1);
  c.Trace("B", "write", t0 + 30000000 * s, 1);  // a year later
  AppendStats st;
  REQUIRE(store.value()->Append(c.ptrs, &st).ok());
  auto jp = PhasesForJob(*store.value(), "A", {});
  INFO(jp.status().ToString());
  REQUIRE(jp.ok());
  CHECK(jp->start_ns == t0);
  REQUIRE(jp->write.phases.size() == 2);
  CHECK(jp->write.phases[0].buckets == 3);
  CHECK(jp->write.phases[0].bytes == 3u << 20);
  CHECK(jp->write.phases[1].first_bucket == 10);
  REQUIRE(jp->read.phases.size() == 1);
  CHECK(jp->read.phases[0].first_bucket == 5);
  auto none = PhasesForJob(*store.value(), "C", {});
  CHECK(none.status().code() == Code::kNotFound);
  auto wide = PhasesForJob(*store.value(), "B", {});
  CHECK(wide.status().code() == Code::kInvalid);
  CHECK(wide.status().message().find("--bucket") != std::string::npos);
  PhaseOptions hourly;
  hourly.bucket_ns = 3600 * s;
  auto ok = PhasesForJob(*store.value(), "B", hourly);
  REQUIRE(ok.ok());
  CHECK(ok->write.phases.size() == 2);
}

TEST_CASE("phases: a checkpoint of 3 s requests is one phase per checkpoint (bytes spread over the buckets they span)",
          "[phases][beacon]") {
  // 3 checkpoints (t = 10, 70, 130 s); in each, 4 ranks write 3 requests of
  // 64 MiB, each taking 3 s, back to back: 9 s of writing per checkpoint.
  // With every request's bytes in the bucket of its start, each checkpoint
  // would be 3 bursts with 2 empty buckets between them.
  const int64_t kSec = 1000000000, t0 = int64_t{1800000000} * kSec;
  const int64_t req = 64ll << 20;
  auto store_with = [&](const std::string& dir, int64_t pause_ns) {
    int64_t seq = 0;
    return test::StoreFromLines(dir, [&](const std::function<Status(std::string_view)>& sink) -> Status {
      for (int c = 0; c < 3; ++c)
        for (int rank = 0; rank < 4; ++rank)
          for (int k = 0; k < 3; ++k) {
            const int64_t start = t0 + (10 + 60 * c) * kSec + k * (3 * kSec + pause_ns);
            const int64_t end = start + 3 * kSec;
            const std::string line =
                "{\"@timestamp\":\"" + FormatIsoMillis(start) + "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":" +
                std::to_string(100 + rank) + ",\"event.seq\":" + std::to_string(++seq) +
                ",\"host.name\":\"cn" + std::to_string(rank) + "\",\"job.id\":\"77\",\"process.pid\":" +
                std::to_string(1000 + rank) + ",\"process.tid\":" + std::to_string(1000 + rank) + ",\"io.op\":\"write\",\"io.layer\":\"posix\",\"file.path\":\"/scratch/ckpt." +
                std::to_string(c) + "." + std::to_string(rank) + "\",\"io.size\":" + std::to_string(req) +
                ",\"io.bytes\":" + std::to_string(req) + ",\"io.count\":1,\"event.start_ns\":" + std::to_string(start) +
                ",\"event.end_ns\":" + std::to_string(end) + ",\"io.duration_ns\":" + std::to_string(end - start) + "}";
            if (Status st = sink(line); !st.ok()) return st;
          }
      return Status::Ok();
    });
  };
  test::TempDir d;
  auto check = [&](const JobPhases& jp) {
    REQUIRE(jp.write.phases.size() == 3);
    for (int c = 0; c < 3; ++c) {
      const auto& p = jp.write.phases[static_cast<size_t>(c)];
      INFO("checkpoint " << c);
      CHECK(p.start_ns == t0 + (10 + 60 * c) * kSec);
      CHECK(p.bytes == static_cast<uint64_t>(4 * 3 * req));  // every byte of the checkpoint, none of another
    }
  };
  {
    auto st = store_with(d / "back-to-back", 0);
    auto jp = PhasesForJob(*st, "77", {});
    REQUIRE(jp.ok());
    check(*jp);
    CHECK(jp->write.phases[0].duration_ns == 9 * kSec);
  }
  {
    // 1.5 s pauses between requests: the configurable gap (2 empty buckets) merges them.
    auto st = store_with(d / "pauses", 1500000000);
    auto split = PhasesForJob(*st, "77", {});
    REQUIRE(split.ok());
    CHECK(split->write.phases.size() > 3);  // without a gap the pauses split each checkpoint
    PhaseOptions o;
    o.merge_gap = 3;  // fewer than 3 empty buckets apart: one phase
    auto jp = PhasesForJob(*st, "77", o);
    REQUIRE(jp.ok());
    check(*jp);
  }
}
