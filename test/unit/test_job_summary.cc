// The per-job summary on synthetic trace runs whose answers can be computed
// by hand, then through a real SQLite store and a real redis-server.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "redis-cache/cache.h"
#include "core/records/record.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/job-summary/job_summary.h"
#include "test/testutil/testutil.h"

using iosonar::analysis::JobSummary;
using iosonar::analysis::SummaryOptions;
using iosonar::analysis::TraceRun;

namespace {

constexpr int64_t kS = 1000000000;
constexpr int64_t kMs = 1000000;
constexpr int64_t kT0 = int64_t{1700000000} * kS;  // on a whole second (and an even one)
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

TraceRun Op(const std::string& host, int64_t pid, const std::string& op, const std::string& file, int64_t size,
            int64_t count, int64_t bytes, int64_t start_ns, int64_t end_ns, int64_t duration_ns = 0) {
  TraceRun r;
  r.host = host;
  r.pid = pid;
  r.tid = pid;
  r.op = op;
  r.layer = "posix";
  if (!file.empty()) {
    r.file_path = "/scratch/" + file;
    r.file_id = "id-" + file;
  }
  r.fd = 3;
  r.size = size;
  r.count = count;
  r.bytes = bytes;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.duration_ns = duration_ns;
  return r;
}

TraceRun Write(const std::string& host, int64_t pid, const std::string& file, int64_t bytes, int64_t t = kT0) {
  return Op(host, pid, "write", file, kMiB, bytes / kMiB > 0 ? bytes / kMiB : 1, bytes, t, t + 100 * kMs, 50 * kMs);
}

// The report wraps its hints; phrases are looked up with whitespace runs squashed.
std::string Squash(const std::string& t) {
  std::string out;
  for (char c : t) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out += space ? ' ' : c;
  }
  return out;
}

JobSummary Sum(const std::vector<TraceRun>& runs, const SummaryOptions& opt = {}) {
  return iosonar::analysis::Summarize(runs, opt);
}

}  // namespace

TEST_CASE("request-size bins are Darshan's, upper bounds inclusive", "[job-summary]") {
  using iosonar::analysis::SizeBin;
  CHECK(SizeBin(0) == 0);
  CHECK(SizeBin(100) == 0);
  CHECK(SizeBin(101) == 1);
  CHECK(SizeBin(1024) == 1);
  CHECK(SizeBin(1025) == 2);
  CHECK(SizeBin(kMiB) == 4);
  CHECK(SizeBin(kMiB + 1) == 5);
  CHECK(SizeBin(4 * kMiB) == 5);
  CHECK(SizeBin(kGiB) == 8);
  CHECK(SizeBin(kGiB + 1) == 9);
  CHECK(iosonar::analysis::kSizeBinLabels[9] == "1G+");
}

TEST_CASE("byte and op sums, average bandwidth, IOPS, busy time, histogram", "[job-summary]") {
  std::vector<TraceRun> runs = {
      Op("a", 1, "read", "f1", 4096, 10, 40960, kT0 + 500 * kMs, kT0 + 1500 * kMs, 200 * kMs),
      Op("b", 2, "read", "f2", kMiB, 3, 3 * kMiB, kT0 + 2 * kS, kT0 + 3 * kS, 500 * kMs),
      Op("a", 1, "write", "f1", 100, 5, 500, kT0 + kS, kT0 + kS, 0),
  };
  JobSummary s = Sum(runs);
  const double read_bytes = 40960.0 + 3.0 * kMiB;
  CHECK(s.records == 3);
  CHECK(s.start_ns == kT0 + 500 * kMs);
  CHECK(s.end_ns == kT0 + 3 * kS);
  CHECK(s.runtime_s == Approx(2.5));
  CHECK(s.busy_s == Approx(0.7));

  CHECK(s.read.bytes == 40960 + 3 * kMiB);
  CHECK(s.read.ops == 13);
  CHECK(s.read.runs == 2);
  CHECK(s.read.span_s == Approx(2.5));
  CHECK(s.read.bw_span == Approx(read_bytes / 2.5));
  CHECK(s.read.iops_span == Approx(13 / 2.5));
  CHECK(s.read.busy_s == Approx(0.7));
  CHECK(s.read.avg_request_bytes == Approx(read_bytes / 13));
  // Bucket 0 holds half of the 40960 (0.5 s of the run's 1 s), bucket 2 all of 3 MiB.
  CHECK(s.read.bw_peak == Approx(3.0 * kMiB));
  CHECK(s.read.size_hist[2] == 10);  // 4096 -> 1K-10K
  CHECK(s.read.size_hist[4] == 3);   // 1 MiB -> 100K-1M
  uint64_t binned = 0;
  for (auto n : s.read.size_hist) binned += n;
  CHECK(binned == s.read.ops);

  CHECK(s.write.bytes == 500);
  CHECK(s.write.ops == 5);
  CHECK(s.write.size_hist[0] == 5);
  CHECK(s.write.span_s == 0);
  CHECK(s.write.bw_span == 0);  // undefined over a zero span: reported as 0
  CHECK(s.write.iops_span == 0);
  CHECK(s.write.bw_peak == Approx(500));  // a zero-length run: all in its bucket
}

TEST_CASE("peak bandwidth spreads runs over 1-second buckets", "[job-summary]") {
  std::vector<TraceRun> runs = {
      // 3000 bytes over 1.5 s: 1000 in second 0, 2000 in second 1.
      Op("a", 1, "write", "f", 1000, 3, 3000, kT0 + 500 * kMs, kT0 + 2 * kS),
      // 1500 bytes over 1.5 s: 500 in second 1, 1000 in second 2.
      Op("a", 1, "write", "f", 500, 3, 1500, kT0 + 1500 * kMs, kT0 + 3 * kS),
      // Zero length exactly on the boundary of second 2: all 2000 there.
      Op("a", 1, "write", "f", 1000, 2, 2000, kT0 + 2 * kS, kT0 + 2 * kS),
  };
  JobSummary s = Sum(runs);
  CHECK(s.write.bw_peak == Approx(3000));
  REQUIRE(s.series_write.size() == 3);
  CHECK(s.series_start_ns == kT0);
  CHECK(s.series_bucket_ns == kS);
  CHECK(s.series_write[0] == Approx(1000));
  CHECK(s.series_write[1] == Approx(2500));
  CHECK(s.series_write[2] == Approx(3000));
  CHECK(s.series_read == std::vector<double>(3, 0.0));

  SECTION("without the zero-length run the peak is the spanned bucket") {
    runs.pop_back();
    CHECK(Sum(runs).write.bw_peak == Approx(2500));
  }
  SECTION("half-second buckets report bytes per second") {
    SummaryOptions opt;
    opt.bucket_ns = 500 * kMs;
    // Half-second 4 ([2.0, 2.5)) holds 500 + 2000: 2500 bytes in 0.5 s.
    CHECK(Sum(runs, opt).write.bw_peak == Approx(5000));
  }
  SECTION("a burst shorter than a bucket peaks at least at its average") {
    // 1000 bytes in [0.9, 1.0) and 3000 in [1.0, 1.1): the 1-s buckets see
    // 1000 and 3000 bytes per second, the 0.2-s span 20000.
    std::vector<TraceRun> burst = {Op("a", 1, "write", "f", 1000, 1, 1000, kT0 + 900 * kMs, kT0 + kS),
                                   Op("a", 1, "write", "f", 1000, 3, 3000, kT0 + kS, kT0 + 1100 * kMs)};
    JobSummary b = Sum(burst);
    CHECK(b.write.bw_span == Approx(20000));
    CHECK(b.write.bw_peak == Approx(20000));
    REQUIRE(b.series_write.size() == 2);
    CHECK(b.series_write[1] == Approx(3000));  // the series stays bytes per bucket
  }
  SECTION("a long series is coarsened to whole multiples of the bucket") {
    SummaryOptions opt;
    opt.max_series_points = 2;
    JobSummary c = Sum(runs, opt);
    CHECK(c.series_bucket_ns == 2 * kS);
    CHECK(c.series_start_ns == kT0);
    REQUIRE(c.series_write.size() == 2);
    CHECK(c.series_write[0] == Approx(3500));
    CHECK(c.series_write[1] == Approx(3000));
    CHECK(c.write.bw_peak == Approx(3000));  // still per 1-s bucket
  }
}

TEST_CASE("metadata ops, other ops, ops per second of I/O phase, errors", "[job-summary]") {
  std::vector<TraceRun> runs = {
      Op("a", 1, "open", "f", 0, 4, 0, kT0 + 100 * kMs, kT0 + 110 * kMs),
      Op("a", 1, "stat", "f", 0, 10, 0, kT0 + 200 * kMs, kT0 + 300 * kMs),
      Op("a", 1, "seek", "f", 0, 7, 0, kT0 + 400 * kMs, kT0 + 400 * kMs),
      Op("a", 1, "read", "f", 100, 1, 100, kT0 + 2500 * kMs, kT0 + 2600 * kMs),
      Op("a", 1, "close", "f", 0, 4, 0, kT0 + 5500 * kMs, kT0 + 5500 * kMs),
      Op("a", 1, "sync", "f", 0, 1, 0, kT0 + 5600 * kMs, kT0 + 5700 * kMs),
      Op("a", 1, "dup", "", 0, 1, 0, kT0 + 5700 * kMs, kT0 + 5700 * kMs),
      // Ends exactly on a boundary: seconds 7 and 8, not 9.
      Op("a", 1, "unlink", "g", 0, 1, 0, kT0 + 7500 * kMs, kT0 + 9 * kS),
      Op("a", 1, "stat", "missing", 0, 3, 0, kT0 + 8100 * kMs, kT0 + 8200 * kMs),
  };
  runs.back().errno_ = 2;
  JobSummary s = Sum(runs);
  CHECK(s.meta_ops == 4 + 10 + 4 + 1 + 3);
  CHECK(s.meta_by_op["stat"] == 13);
  CHECK(s.meta_by_op["open"] == 4);
  CHECK(s.meta_by_op.count("seek") == 0);
  CHECK(s.other_ops == 7 + 1 + 1);
  CHECK(s.other_by_op["seek"] == 7);
  CHECK(s.other_by_op["sync"] == 1);
  // Active seconds: 0, 2, 5, 7, 8.
  CHECK(s.io_phase_s == Approx(5));
  CHECK(s.meta_ops_per_s == Approx(22.0 / 5));
  CHECK(s.errors == 3);
  CHECK(s.errors_by_op["stat"] == 3);
  CHECK(s.errors_by_errno[2] == 3);
  CHECK(s.read.ops == 1);
}

TEST_CASE("processes, nodes and files doing I/O", "[job-summary]") {
  std::vector<TraceRun> runs = {
      Write("a", 1, "f1", kMiB),
      Write("a", 2, "f2", kMiB),
      Op("b", 1, "read", "f3", 4096, 1, 4096, kT0, kT0 + kMs),  // same pid, other host
      Op("c", 9, "open", "f4", 0, 1, 0, kT0, kT0 + kMs),        // metadata only
      Op("d", 5, "read", "f5", 4096, 1, 0, kT0, kT0 + kMs),     // a read at EOF moves nothing
      Op("d", 5, "close", "", 0, 1, 0, kT0, kT0 + kMs),         // no file: not counted as one
  };
  JobSummary s = Sum(runs);
  CHECK(s.processes == 5);
  CHECK(s.nodes == 4);
  CHECK(s.processes_with_io == 3);
  CHECK(s.nodes_with_io == 2);
  CHECK(s.files == 4);
  CHECK(s.files_total == 5);
  REQUIRE(s.top_files.size() == 3);  // files that moved bytes
  CHECK(s.top_files[0].write_bytes == kMiB);
  CHECK(s.top_files[2].id == "id-f3");
  CHECK(s.top_files[2].read_bytes == 4096);
  CHECK(s.top_files[2].path == "/scratch/f3");
}

TEST_CASE("I/O modes", "[job-summary]") {
  std::vector<TraceRun> runs;
  SECTION("N-N: 4 processes, 4 files") {
    for (int p = 0; p < 4; ++p) runs.push_back(Write("n" + std::to_string(p / 2), p, "out" + std::to_string(p), kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "N-N");
    CHECK(s.mode_write.kept_processes == 4);
    CHECK(s.mode_write.kept_files == 4);
    CHECK(s.mode_write.private_files == 4);
    CHECK(s.mode_read.mode == "none");
    CHECK(s.mode_write.explanation.find("file per process") != std::string::npos);
  }
  SECTION("N-1: 4 processes, 1 file") {
    for (int p = 0; p < 4; ++p) runs.push_back(Write("n", p, "shared", kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "N-1");
    CHECK(s.mode_write.kept_processes == 4);
    CHECK(s.mode_write.kept_files == 1);
    REQUIRE(s.mode_write.top_files.size() == 1);
    CHECK(s.mode_write.top_files[0].processes == 4);
    CHECK(s.mode_write.top_files[0].bytes == 4 * kMiB);
  }
  SECTION("N-M: 8 processes, 2 files") {
    for (int p = 0; p < 8; ++p) runs.push_back(Write("n", p, p < 4 ? "a" : "b", kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "N-M");
    CHECK(s.mode_write.kept_processes == 8);
    CHECK(s.mode_write.kept_files == 2);
  }
  SECTION("1-1: one of several processes does the I/O, to one file") {
    runs.push_back(Write("n", 0, "only", 8 * kMiB));
    for (int p = 1; p < 4; ++p) runs.push_back(Op("n", p, "open", "input", 0, 1, 0, kT0, kT0 + kMs));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "1-1");
    CHECK(s.processes == 4);
    CHECK(s.processes_with_io == 1);
  }
  SECTION("one process writing many files is 1-M, not Beacon's 1-1, and says so") {
    for (int f = 0; f < 3; ++f) runs.push_back(Write("n", 0, "part" + std::to_string(f), kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "1-M");
    CHECK(s.mode_write.kept_files == 3);
    CHECK(s.mode_write.explanation.find("3 files") != std::string::npos);
  }
  SECTION("none: only metadata") {
    runs.push_back(Op("n", 0, "stat", "x", 0, 5, 0, kT0, kT0 + kMs));
    JobSummary s = Sum(runs);
    CHECK(s.mode_read.mode == "none");
    CHECK(s.mode_write.mode == "none");
    CHECK(s.mode_write.explanation == "no bytes were written");  // not "wrote"
    CHECK(s.mode_read.explanation == "no bytes were read");
  }
  SECTION("reads and writes are classified separately") {
    for (int p = 0; p < 4; ++p) {
      runs.push_back(Write("n", p, "out" + std::to_string(p), kMiB));
      runs.push_back(Op("n", p, "read", "input", kMiB, 1, kMiB, kT0, kT0 + kMs));
    }
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "N-N");
    CHECK(s.mode_read.mode == "N-1");
  }
  SECTION("a tiny shared side file does not turn N-N into N-M") {
    for (int p = 0; p < 4; ++p) {
      runs.push_back(Write("n", p, "out" + std::to_string(p), kGiB));
      runs.push_back(Op("n", p, "write", "log", 100, 1, 100, kT0, kT0 + kMs));
    }
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "N-N");
    CHECK(s.mode_write.files == 5);
    CHECK(s.mode_write.kept_files == 4);
    CHECK(s.mode_write.kept_share == Approx(4.0 * kGiB / (4.0 * kGiB + 400)));
    CHECK(s.mode_write.explanation.find("ignored as minor: 1 file") != std::string::npos);
    SECTION("unless the volume share asks for every byte") {
      SummaryOptions opt;
      opt.mode.volume_share = 1.0;
      JobSummary all = Sum(runs, opt);
      CHECK(all.mode_write.kept_files == 5);
      CHECK(all.mode_write.mode == "N-M");  // the shared log is not private to a process
    }
  }
  SECTION("equal files are kept together past the volume share") {
    for (int p = 0; p < 10; ++p) runs.push_back(Write("n", p, "out" + std::to_string(p), kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.kept_files == 10);  // 9 would already carry 90%
    CHECK(s.mode_write.kept_processes == 10);
    CHECK(s.mode_write.mode == "N-N");
  }
  SECTION("a process with a sliver of a shared file is not counted") {
    for (int p = 0; p < 4; ++p) runs.push_back(Write("n", p, "shared", kGiB));
    runs.push_back(Op("n", 99, "write", "shared", 10, 1, 10, kT0, kT0 + kMs));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.mode == "N-1");
    CHECK(s.mode_write.processes == 5);
    CHECK(s.mode_write.kept_processes == 4);
  }
  SECTION("processes sharing as many files as there are processes: N-M") {
    for (int p = 0; p < 2; ++p)
      for (const char* f : {"x", "y"}) runs.push_back(Write("n", p, f, kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.kept_files == 2);
    CHECK(s.mode_write.private_files == 0);
    CHECK(s.mode_write.mode == "N-M");
  }
  SECTION("several private files per process: N-N") {
    for (int p = 0; p < 2; ++p)
      for (int f = 0; f < 3; ++f) runs.push_back(Write("n", p, "p" + std::to_string(p) + "f" + std::to_string(f), kMiB));
    JobSummary s = Sum(runs);
    CHECK(s.mode_write.kept_files == 6);
    CHECK(s.mode_write.mode == "N-N");
  }
}

TEST_CASE("summary JSON: nested keys with the right types, and it reads back", "[job-summary]") {
  std::vector<TraceRun> runs;
  for (int p = 0; p < 4; ++p) {
    runs.push_back(Write("n" + std::to_string(p % 2), p, "shared", 2 * kMiB, kT0 + p * kS));
    runs.push_back(Op("n" + std::to_string(p % 2), p, "read", "in", 4096, 3, 12288, kT0, kT0 + 10 * kMs));
    runs.push_back(Op("n" + std::to_string(p % 2), p, "open", "in", 0, 1, 0, kT0, kT0 + kMs));
  }
  runs.push_back(Op("n0", 0, "open", "nope", 0, 2, 0, kT0, kT0 + kMs));
  runs.back().errno_ = 2;
  JobSummary s = Sum(runs);
  s.job_id = "4242_7";
  s.tracer_dropped = 5;
  const std::string json = iosonar::analysis::SummaryToJson(s, false);

  rapidjson::Document d;
  d.Parse(json.c_str());
  REQUIRE_FALSE(d.HasParseError());
  REQUIRE(d.IsObject());
  CHECK(std::string(d["job_id"].GetString()) == "4242_7");
  REQUIRE(d["runtime_s"].IsNumber());
  CHECK(d["runtime_s"].GetDouble() == Approx(s.runtime_s));
  for (const char* dir : {"read", "write"}) {
    INFO(dir);
    REQUIRE(d[dir].IsObject());
    const auto& o = d[dir];
    REQUIRE(o["bytes"].IsUint64());
    REQUIRE(o["ops"].IsUint64());
    REQUIRE(o["bw_avg"].IsNumber());
    REQUIRE(o["bw_peak"].IsNumber());
    REQUIRE(o["iops"].IsNumber());
    REQUIRE(o["size_hist"].IsObject());
  }
  CHECK(d["read"]["bytes"].GetUint64() == 4 * 12288);
  CHECK(d["read"]["ops"].GetUint64() == 12);
  CHECK(d["write"]["bytes"].GetUint64() == 8 * kMiB);
  CHECK(d["write"]["bw_peak"].GetDouble() == Approx(s.write.bw_peak));
  CHECK(d["read"]["size_hist"]["1K-10K"].GetUint64() == 12);
  REQUIRE(d["meta"]["ops"].IsUint64());
  CHECK(d["meta"]["ops"].GetUint64() == 6);
  REQUIRE(d["meta"]["ops_per_s"].IsNumber());
  CHECK(d["meta"]["ops_per_s"].GetDouble() == Approx(s.meta_ops_per_s));
  CHECK(d["processes_with_io"].GetUint64() == 4);
  CHECK(d["nodes_with_io"].GetUint64() == 2);
  REQUIRE(d["files"].IsUint64());
  CHECK(d["files"].GetUint64() == 2);
  REQUIRE(d["io_mode"].IsObject());
  CHECK(std::string(d["io_mode"]["write"].GetString()) == "N-1");
  CHECK(std::string(d["io_mode"]["read"].GetString()) == "N-1");
  CHECK(d["errors"]["by_errno"]["2"].GetUint64() == 2);
  CHECK(d["tracer"]["dropped"].GetInt64() == 5);
  CHECK(d["top_files"].IsArray());

  auto back = iosonar::analysis::SummaryFromJson(json);
  REQUIRE(back.ok());
  CHECK(back->job_id == "4242_7");
  CHECK(back->write.bytes == s.write.bytes);
  CHECK(back->mode_write.mode == "N-1");
  CHECK(back->mode_write.explanation == s.mode_write.explanation);
  CHECK(back->errors_by_errno[2] == 2);
  CHECK(back->series_write == s.series_write);
  CHECK(iosonar::analysis::SummaryToJson(back.value(), false) == json);
  CHECK(iosonar::analysis::SummaryToJson(back.value(), true) == iosonar::analysis::SummaryToJson(s, true));

  SECTION("bad input is an error that names the path") {
    CHECK_FALSE(iosonar::analysis::SummaryFromJson("not json").ok());
    CHECK_FALSE(iosonar::analysis::SummaryFromJson("[1]").ok());
    auto bad = iosonar::analysis::SummaryFromJson(R"({"job_id":"1","read":{"bytes":"lots"}})");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("read.bytes") != std::string::npos);
  }
}

TEST_CASE("the table report shows units, the mode in words and hints", "[job-summary]") {
  SECTION("N-1 writes of small requests") {
    std::vector<TraceRun> runs;
    // 4 processes x 65536 writes of 4 KiB = 1 GiB into one file, 1 s each.
    for (int p = 0; p < 4; ++p)
      runs.push_back(Op("n", p, "write", "shared", 4096, 65536, 65536 * 4096, kT0, kT0 + kS, 900 * kMs));
    JobSummary s = Sum(runs);
    s.job_id = "77";
    const std::string t = Squash(iosonar::analysis::SummaryToTable(s));
    INFO(t);
    CHECK(t.find("job 77") != std::string::npos);
    CHECK(t.find("N-1") != std::string::npos);
    CHECK(t.find("4 processes wrote one shared file") != std::string::npos);
    CHECK(t.find("1.00 GiB") != std::string::npos);
    CHECK(t.find("1.00 GiB/s") != std::string::npos);  // bw_avg and bw_peak
    CHECK(t.find("4.00 KiB") != std::string::npos);    // average request
    CHECK(t.find("Writes are small") != std::string::npos);
    CHECK(t.find("shared file (N-1)") != std::string::npos);
    CHECK(t.find("I/O-bound") != std::string::npos);  // 3.6 s in calls over 4 processes x 1 s
    CHECK(t.find("Metadata-heavy") == std::string::npos);
    CHECK(t.find("lfs setstripe -c -1") != std::string::npos);
  }
  SECTION("metadata-heavy with many errors") {
    std::vector<TraceRun> runs = {Op("n", 1, "stat", "x", 0, 5000, 0, kT0, kT0 + 2 * kS),
                                  Op("n", 1, "open", "y", 0, 200, 0, kT0, kT0 + kS),
                                  Write("n", 1, "out", kMiB)};
    runs[1].errno_ = 2;
    JobSummary s = Sum(runs);
    const std::string t = Squash(iosonar::analysis::SummaryToTable(s));
    INFO(t);
    CHECK(t.find("Metadata-heavy") != std::string::npos);
    CHECK(t.find("ENOENT") != std::string::npos);
    CHECK(t.find("200 ops failed") != std::string::npos);
    CHECK(t.find("1-1") != std::string::npos);
    CHECK(t.find("Writes are small") == std::string::npos);
  }
  SECTION("nothing wrong") {
    std::vector<TraceRun> runs = {Write("n", 1, "out", 64 * kMiB)};
    runs[0].duration_ns = 10 * kMs;
    runs.push_back(Op("n", 1, "close", "out", 0, 1, 0, kT0 + 50 * kS, kT0 + 50 * kS));
    const std::string t = Squash(iosonar::analysis::SummaryToTable(Sum(runs)));
    INFO(t);
    CHECK(t.find("unlikely to be what made this job slow") != std::string::npos);
  }
}

namespace {

// Parses and stores JSON lines (each copied, since parsing is in place).
void StoreLines(iosonar::Store& store, const std::vector<std::string>& lines) {
  std::vector<std::string> bufs(lines.begin(), lines.end());
  std::vector<iosonar::ParsedRecord> recs(bufs.size());
  std::vector<const iosonar::ParsedRecord*> ptrs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    bufs[i].reserve(bufs[i].size() + 1);
    auto st = iosonar::ParseRecordInsitu(bufs[i].data(), bufs[i].size(), &recs[i]);
    INFO(lines[i]);
    REQUIRE(st.ok());
    ptrs.push_back(&recs[i]);
  }
  iosonar::AppendStats stats;
  REQUIRE(store.Append(ptrs, &stats).ok());
  REQUIRE(stats.inserted == lines.size());
}

std::string TraceLine(const std::string& job, int64_t seq, const std::string& host, int64_t pid, const std::string& op,
                      const std::string& file, int64_t size, int64_t count, int64_t bytes, int64_t start_ns,
                      int64_t end_ns, int64_t errno_ = 0) {
  std::string s = R"({"@timestamp":")" + iosonar::FormatIsoMillis(start_ns) +
                  R"(","event.dataset":"iosonar.trace","event.stream":)" + std::to_string(1000 + pid) +
                  R"(,"event.seq":)" + std::to_string(seq) + R"(,"host.name":")" + host + R"(","job.id":")" + job +
                  R"(","process.pid":)" + std::to_string(pid) + R"(,"process.tid":)" + std::to_string(pid) +
                  R"(,"process.rank":)" + std::to_string(pid) + R"(,"io.op":")" + op + R"(","io.layer":"posix")";
  if (!file.empty()) s += R"(,"file.path":"/scratch/)" + file + R"(","file.id":"id)" + file + R"(","io.fd":3)";
  if (size) s += R"(,"io.size":)" + std::to_string(size) + R"(,"io.offset":0)";
  s += R"(,"io.count":)" + std::to_string(count);
  if (bytes) s += R"(,"io.bytes":)" + std::to_string(bytes);
  if (errno_) s += R"(,"io.errno":)" + std::to_string(errno_);
  s += R"(,"event.start_ns":)" + std::to_string(start_ns) + R"(,"event.end_ns":)" + std::to_string(end_ns) +
       R"(,"io.duration_ns":)" + std::to_string(end_ns - start_ns) + "}";
  return s;
}

std::string TracerLine(const std::string& job, int64_t stream, int64_t seq, int64_t dropped) {
  return R"({"@timestamp":")" + iosonar::FormatIsoMillis(kT0) +
         R"(","event.dataset":"iosonar.tracer","event.stream":)" + std::to_string(stream) + R"(,"event.seq":)" +
         std::to_string(seq) + R"(,"host.name":"n0","job.id":")" + job +
         R"(","process.pid":1,"event.action":"exit","tracer.raw_ops":10,"tracer.records":5,"tracer.dropped":)" +
         std::to_string(dropped) + R"(,"tracer.spooled":0})";
}

}  // namespace

TEST_CASE("SummarizeJob reads one job's records from a real SQLite store", "[job-summary][sqlite]") {
  iosonar::test::TempDir dir;
  auto opened = iosonar::OpenSqliteStore(dir.path());
  REQUIRE(opened.ok());
  iosonar::Store& store = *opened.value();
  std::vector<std::string> lines;
  int64_t seq = 0;
  for (int p = 0; p < 4; ++p) {
    lines.push_back(TraceLine("j1", seq++, "n" + std::to_string(p / 2), p, "write", "out" + std::to_string(p), kMiB,
                              2, 2 * kMiB, kT0 + p * kS, kT0 + p * kS + 500 * kMs));
    lines.push_back(TraceLine("j1", seq++, "n0", p, "open", "out" + std::to_string(p), 0, 1, 0, kT0, kT0 + kMs));
  }
  lines.push_back(TraceLine("j1", seq++, "n0", 0, "stat", "nothere", 0, 3, 0, kT0, kT0 + kMs, 2));
  // Another job on the same nodes must not leak in.
  lines.push_back(TraceLine("j2", seq++, "n0", 7, "read", "other", kMiB, 100, 100 * kMiB, kT0, kT0 + kS));
  lines.push_back(TracerLine("j1", 5000, 0, 2));
  lines.push_back(TracerLine("j1", 5000, 1, 3));  // running total: the stream lost 3
  lines.push_back(TracerLine("j1", 5001, 0, 4));
  lines.push_back(TracerLine("j2", 5007, 0, 50));
  StoreLines(store, lines);

  auto r = iosonar::analysis::SummarizeJob(store, "j1");
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  const JobSummary& s = r.value();
  CHECK(s.job_id == "j1");
  CHECK(s.records == 9);
  CHECK(s.write.bytes == 8 * kMiB);
  CHECK(s.write.ops == 8);
  CHECK(s.read.bytes == 0);
  CHECK(s.write.span_s == Approx(3.5));
  CHECK(s.write.bw_span == Approx(8.0 * kMiB / 3.5));
  // Each second carries 2 MiB, less than the 8 MiB / 3.5 s average.
  CHECK(s.write.bw_peak == Approx(8.0 * kMiB / 3.5));
  CHECK(s.meta_ops == 7);
  CHECK(s.errors == 3);
  CHECK(s.processes_with_io == 4);
  CHECK(s.nodes_with_io == 2);
  CHECK(s.files == 4);
  CHECK(s.files_total == 5);
  CHECK(s.mode_write.mode == "N-N");
  CHECK(s.mode_read.mode == "none");
  CHECK(s.tracer_dropped == 3 + 4);
  REQUIRE_FALSE(s.top_files.empty());
  CHECK(s.top_files[0].path.rfind("/scratch/out", 0) == 0);

  auto none = iosonar::analysis::SummarizeJob(store, "no-such-job");
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == iosonar::Code::kNotFound);
}

TEST_CASE("job summary cache keys and a round trip through a real redis-server", "[job-summary][redis]") {
  CHECK(iosonar::cache::JobSummaryKey("12345") == "iosonar:job:12345:summary");
  CHECK(iosonar::cache::JobSummaryKey("12345_7") == "iosonar:job:12345_7:summary");
  CHECK(iosonar::cache::kIngestList == "iosonar:ingest");

  iosonar::test::RedisServer redis;
  const std::string json = iosonar::analysis::SummaryToJson(Sum({Write("n", 1, "out", kMiB)}), false);
  auto miss = iosonar::cache::CachedJobSummary(redis.url(), "12345");
  REQUIRE(miss.ok());
  CHECK_FALSE(miss.value().has_value());

  REQUIRE(iosonar::cache::CacheJobSummary(redis.url(), "12345", json).ok());
  CHECK(redis.Command({"GET", "iosonar:job:12345:summary"}) == json);
  CHECK(redis.Command({"TTL", "iosonar:job:12345:summary"}) == "-1");  // no expiry by default
  auto hit = iosonar::cache::CachedJobSummary(redis.url(), "12345");
  REQUIRE(hit.ok());
  REQUIRE(hit.value().has_value());
  CHECK(*hit.value() == json);

  REQUIRE(iosonar::cache::CacheJobSummary(redis.url(), "9", json, 600).ok());
  const int ttl = std::stoi(redis.Command({"TTL", "iosonar:job:9:summary"}));
  CHECK(ttl > 0);
  CHECK(ttl <= 600);

  CHECK(iosonar::cache::CacheJobSummary(redis.url(), "", json).code() == iosonar::Code::kInvalid);
  CHECK_FALSE(iosonar::cache::CacheJobSummary("redis://127.0.0.1:" + std::to_string(iosonar::test::FreePort()) + "/0",
                                              "1", json)
                  .ok());
}

TEST_CASE("Beacon's 1-1 is one process doing sequential I/O on one file, random I/O is named so", "[job-summary][beacon]") {
  // 8 runs of 1 MiB by one process on one file.
  auto at = [](int64_t off, int k) {
    TraceRun r = Write("n", 0, "f", kMiB, kT0 + k * 200 * kMs);
    r.offset = off;
    return r;
  };
  std::vector<TraceRun> seq, rnd;
  for (int k = 0; k < 8; ++k) seq.push_back(at(k * kMiB, k));
  const int64_t scattered[8] = {5, 1, 7, 2, 0, 6, 3, 4};  // MiB offsets: only 3 -> 4 continues its predecessor
  for (int k = 0; k < 8; ++k) rnd.push_back(at(scattered[k] * kMiB, k));
  JobSummary s = Sum(seq), r = Sum(rnd);
  CHECK(s.mode_write.mode == "1-1");
  CHECK(s.write.sequential_share == Approx(1.0));
  CHECK(r.mode_write.mode == "1-1 random");
  // Sequential bytes: the first run and the run at 4 MiB (after the one ending there): 2 of 8.
  CHECK(r.write.sequential_share == Approx(2.0 / 8));
  CHECK(r.mode_write.explanation.find("not sequential") != std::string::npos);
}

TEST_CASE("Beacon rates: bandwidth and IOPS over the I/O time and over the whole run, labelled", "[job-summary][beacon]") {
  // 4 MiB written in 4 ops over [0, 1 s), then 9 s of nothing, then a stat at 9.5 s: runtime 10 s.
  std::vector<TraceRun> runs = {Op("n", 0, "write", "f", kMiB, 4, 4 * kMiB, kT0, kT0 + 1000 * kMs, 800 * kMs),
                                Op("n", 0, "stat", "f", 0, 1, 0, kT0 + 9500 * kMs, kT0 + 10000 * kMs)};
  JobSummary s = Sum(runs);
  CHECK(s.runtime_s == Approx(10));
  CHECK(s.write.io_time_s == Approx(1));                     // one 1 s bucket holds the bytes
  CHECK(s.write.bw_io_time == Approx(4.0 * kMiB / 1.0));      // bytes / I/O time
  CHECK(s.write.iops_io_time == Approx(4.0));
  CHECK(s.write.bw_run == Approx(4.0 * kMiB / 10.0));         // bytes / runtime
  CHECK(s.write.iops_run == Approx(0.4));
  // Metadata rate over the seconds with any I/O: 1 op over the 2 buckets with any I/O.
  CHECK(s.io_phase_s == Approx(2));
  CHECK(s.meta_ops_per_s == Approx(0.5));
  // During the I/O phases (Beacon): the one phase is second 0, the stat (second 9) is outside it.
  CHECK(s.io_phases == 1);
  CHECK(s.io_phases_s == Approx(1));
  CHECK(s.meta_ops_per_s_io_phases == 0);
  const std::string js = SummaryToJson(s, false);
  for (const char* k : {"\"bw_io_time\"", "\"iops_io_time\"", "\"bw_run\"", "\"iops_run\"", "\"io_time_s\""})
    CHECK(js.find(k) != std::string::npos);
}

// Beacon §3.3's average bandwidth and IOPS are over the job's I/O phases. By
// hand: a job writes 4000 MiB in seconds 0-9 (an initial output) and 4000
// MiB in seconds 1000-1009 (the final checkpoint), 400 MiB a second in 1 MiB
// ops, and reads 2 GiB in seconds 0-4; nothing in between. Write phases: 2,
// 20 s, 8000 MiB: 400 MiB/s and 8000 ops / 20 s; the first-to-last span
// (1010 s) gives 8000 MiB / 1010 s, 50 times less, kept as bw_span.
TEST_CASE("Beacon: bandwidth and IOPS over the I/O phases, a job with phases at both ends", "[job-summary][beacon][phases]") {
  std::vector<TraceRun> runs;
  const int64_t per_s = 400 * kMiB;
  for (int64_t t : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009})
    runs.push_back(Op("n", 0, "write", "ckpt", kMiB, 400, per_s, kT0 + t * kS, kT0 + (t + 1) * kS, 900 * kMs));
  for (int64_t t = 0; t < 5; ++t)
    runs.push_back(Op("n", 1, "read", "input", kMiB, 409, 2 * kGiB / 5, kT0 + t * kS, kT0 + (t + 1) * kS, 900 * kMs));
  runs.push_back(Op("n", 0, "stat", "ckpt", 0, 1, 0, kT0 + 500 * kS, kT0 + 500 * kS));  // compute time: no bytes
  JobSummary s = Sum(runs);
  const double wbytes = 20.0 * per_s;
  CHECK(s.write.bytes == static_cast<uint64_t>(20 * per_s));
  CHECK(s.write.io_phases == 2);
  CHECK(s.write.io_phases_s == Approx(20));
  CHECK(s.write.bytes_in_io_phases == Approx(wbytes));
  CHECK(s.write.rate_basis == "io phases");
  CHECK(s.write.bw_avg == Approx(wbytes / 20));  // the headline
  CHECK(s.write.iops == Approx(8000.0 / 20));
  CHECK(s.write.bw_io_phases == s.write.bw_avg);
  CHECK(s.write.span_s == Approx(1010));
  CHECK(s.write.bw_span == Approx(wbytes / 1010));  // kept under its own name
  CHECK(s.write.iops_span == Approx(8000.0 / 1010));
  CHECK(s.write.bw_peak >= s.write.bw_avg);
  CHECK(s.read.io_phases == 1);
  CHECK(s.read.io_phases_s == Approx(5));
  CHECK(s.read.bw_avg == Approx(2.0 * kGiB / 5).epsilon(1e-6));
  CHECK(s.read.iops == Approx(5 * 409 / 5.0));
  // In the JSON (API, cache) and back; the table names both.
  const std::string js = SummaryToJson(s, false);
  for (const char* k : {"\"bw_span\"", "\"iops_span\"", "\"rate_basis\":\"io phases\"", "\"io_phases_s\"", "\"bw_io_phases\""})
    CHECK(js.find(k) != std::string::npos);
  auto back = iosonar::analysis::SummaryFromJson(js);
  REQUIRE(back.ok());
  CHECK(back->write.bw_avg == Approx(wbytes / 20));
  CHECK(back->write.bw_span == Approx(wbytes / 1010));
  CHECK(back->write.io_phases == 2);
  const std::string t = Squash(iosonar::analysis::SummaryToTable(s));
  CHECK(t.find("avg bandwidth (I/O phases)") != std::string::npos);
  CHECK(t.find("avg bandwidth (span)") != std::string::npos);
  // A summary cached before the change: its bw_avg was the span's.
  auto old = iosonar::analysis::SummaryFromJson(R"({"job_id":"1","write":{"bytes":10,"bw_avg":2.5,"iops":1.5}})");
  REQUIRE(old.ok());
  CHECK(old->write.rate_basis == "span");
  CHECK(old->write.bw_span == 2.5);
  CHECK(old->write.iops_span == 1.5);
}

// fio-like: one burst shorter than a bucket (256 MiB over [0.2 s, 0.45 s]).
// Its rate is its bytes over its 0.25 s, whether a phase is found (clipped to
// the burst) or not (the span): never over whole 1 s buckets (4x too slow).
TEST_CASE("Beacon rates: a burst shorter than a bucket is rated over its own time", "[job-summary][beacon][phases]") {
  JobSummary s = Sum({Op("n", 0, "write", "f", kMiB, 256, 256 * kMiB, kT0 + 200 * kMs, kT0 + 450 * kMs, 250 * kMs)});
  INFO(s.write.rate_basis);
  CHECK(s.write.bw_avg == Approx(256.0 * kMiB / 0.25));
  CHECK(s.write.iops == Approx(256 / 0.25));
  CHECK(s.write.bw_span == Approx(256.0 * kMiB / 0.25));
  CHECK(s.write.bw_io_time == Approx(256.0 * kMiB));  // over the one 1 s bucket: kept, labelled
}

// The MPI-IO layer beside the POSIX one: 8 ranks each write 4 MiB of one
// shared file with collective calls (mpiio runs); one aggregator (rank 0's
// process) does all 32 MiB of POSIX writes. By hand: physical = 1 process, 1
// file, 32 MiB (sequential) -> "1-1"; logical = 8 processes, 1 file -> "N-1",
// collective share 1, 8 ranks, 1 aggregator; the mpiio bytes are not added
// to the physical totals.
TEST_CASE("job summary: collective MPI-IO is N-1 logically and its aggregator physically", "[job_summary]") {
  std::vector<TraceRun> runs;
  for (int rank = 0; rank < 8; ++rank) {
    TraceRun m = Write("n1", 100 + rank, "shared.dat", 4 * kMiB);
    m.layer = "mpiio";
    m.fd = -1;
    m.offset = rank * 4 * kMiB;
    m.collective = true;
    m.comm_size = 8;
    runs.push_back(m);
  }
  TraceRun p = Write("n1", 100, "shared.dat", 32 * kMiB);
  p.offset = 0;
  runs.push_back(p);
  JobSummary s = Sum(runs);
  CHECK(s.write.bytes == static_cast<uint64_t>(32 * kMiB));  // POSIX only
  CHECK(s.write.ops == 32);
  CHECK(s.processes_with_io == 1);
  CHECK(s.mode_write.mode == "1-1");
  REQUIRE(s.mpiio.records == 8);
  CHECK(s.mpiio.comm_size_max == 8);
  CHECK(s.mpiio.mode_write.mode == "N-1");
  CHECK(s.mpiio.mode_write.kept_processes == 8);
  CHECK(s.mpiio.write.bytes == static_cast<uint64_t>(32 * kMiB));
  CHECK(s.mpiio.write.ops == 32);
  CHECK(s.mpiio.write.collective_ops == 32);
  CHECK(s.mpiio.write.collective_share == 1.0);
  CHECK(s.mpiio.write.ranks == 8);
  CHECK(s.mpiio.write.aggregators == 1);
  CHECK(s.mpiio.write.files == 1);
  CHECK(s.mpiio.read.bytes == 0);
  CHECK(s.mpiio.mode_read.mode == "none");
  const std::string t = Squash(iosonar::analysis::SummaryToTable(s));
  INFO(t);
  CHECK(t.find("write N-1: 8 processes wrote one shared file") != std::string::npos);
  CHECK(t.find("1 aggregator wrote it (8 ranks' data through one process)") != std::string::npos);
  CHECK(t.find("8 ranks write one shared file with collective MPI-IO (N-1 as the program sees it); 1 aggregator did "
               "the POSIX writes (1-1 on the file system)") != std::string::npos);
  CHECK(t.find("One process does all the writing") == std::string::npos);
  // The cached summary keeps the MPI-IO view.
  auto back = iosonar::analysis::SummaryFromJson(iosonar::analysis::SummaryToJson(s));
  REQUIRE(back.ok());
  CHECK(back->mpiio.records == 8);
  CHECK(back->mpiio.mode_write.mode == "N-1");
  CHECK(back->mpiio.write.aggregators == 1);
  CHECK(back->mpiio.write.collective_share == 1.0);
  CHECK(back->mpiio.mode_write.explanation == s.mpiio.mode_write.explanation);

  SECTION("independent calls on one shared file: the advice is the collective") {
    for (auto& r : runs) r.collective = false;
    JobSummary i = Sum(runs);
    CHECK(i.mpiio.write.collective_share == 0.0);
    const std::string ti = Squash(iosonar::analysis::SummaryToTable(i));
    CHECK(ti.find("8 ranks write one shared file with independent MPI-IO calls") != std::string::npos);
    CHECK(ti.find("MPI_File_write_at_all") != std::string::npos);
  }
  SECTION("no mpiio runs: no MPI-IO section") {
    JobSummary n = Sum({p});
    CHECK(n.mpiio.records == 0);
    CHECK(iosonar::analysis::SummaryToTable(n).find("MPI-IO (logical") == std::string::npos);
  }
}

// Beacon §3.3 / App. B: "average metadata operations per second during I/O
// phases". By hand: 3 MiB written over seconds 0-3 (1 MiB in each of seconds
// 0, 1, 2) and 1 MiB in second 10; nothing else moves bytes, so the I/O
// phases are seconds 0-2 and second 10: 2 phases, 4 s. Metadata: 50 opens at
// 0.5 s (in), 60 stats at 5.2 s (out), 20 closes at 10.4 s (in), 8 stats
// spread over [2.5 s, 3.5 s) (4 in second 2, in; 4 in second 3, out). In the
// phases: 50 + 20 + 4 = 74 ops over 4 s = 18.5/s. Over the seconds with any
// I/O (0, 1, 2, 3, 5, 10: 6 s): 138 / 6 = 23/s, the other rate, kept.
TEST_CASE("Beacon: metadata ops per second during the wavelet-detected I/O phases", "[job-summary][beacon][phases]") {
  std::vector<TraceRun> runs = {
      Op("n", 0, "write", "f", kMiB, 3, 3 * kMiB, kT0, kT0 + 3 * kS, 3 * kS),
      Op("n", 0, "write", "f", kMiB, 1, kMiB, kT0 + 10 * kS, kT0 + 10500 * kMs, 500 * kMs),
      Op("n", 0, "open", "f", 0, 50, 0, kT0 + 500 * kMs, kT0 + 500 * kMs),
      Op("n", 0, "stat", "f", 0, 60, 0, kT0 + 5200 * kMs, kT0 + 5200 * kMs),
      Op("n", 0, "close", "f", 0, 20, 0, kT0 + 10400 * kMs, kT0 + 10400 * kMs),
      Op("n", 0, "stat", "g", 0, 8, 0, kT0 + 2500 * kMs, kT0 + 3500 * kMs),
  };
  JobSummary s = Sum(runs);
  CHECK(s.meta_ops == 138);
  CHECK(s.io_phases == 2);
  CHECK(s.io_phases_s == Approx(4));
  CHECK(s.meta_ops_in_io_phases == Approx(74));
  CHECK(s.meta_ops_per_s_io_phases == Approx(18.5));
  CHECK(s.io_phase_s == Approx(6));
  CHECK(s.meta_ops_per_s == Approx(23));
  // Labelled in the JSON and the table; the JSON reads back.
  const std::string js = SummaryToJson(s, false);
  CHECK(js.find("\"ops_per_s_io_phases\":18.5") != std::string::npos);
  CHECK(js.find("during the wavelet-detected I/O phases") != std::string::npos);
  auto back = iosonar::analysis::SummaryFromJson(js);
  REQUIRE(back.ok());
  CHECK(back->meta_ops_per_s_io_phases == Approx(18.5));
  CHECK(back->io_phases == 2);
  CHECK(back->io_phases_s == Approx(4));
  const std::string table = Squash(iosonar::analysis::SummaryToTable(s));
  CHECK(table.find("18.5/s during 2 I/O phases (4") != std::string::npos);
  CHECK(table.find("23/s over 6") != std::string::npos);
  // A job with metadata only has no I/O phase: no rate during phases.
  JobSummary m = Sum({Op("n", 0, "stat", "f", 0, 10, 0, kT0, kT0)});
  CHECK(m.io_phases == 0);
  CHECK(m.meta_ops_per_s_io_phases == 0);
}

// Past the tracer's detail budget a run is a per-second aggregate without an
// offset, its ops classed io.ops_sequential / _strided / _random. By hand:
// one process reads one file in 4 aggregates of 1000 ops of 4 KiB each;
// random: 0 consecutive ops of 4000 -> share 0, "1-1 random"; sequential:
// 999 of each 1000 (the first op of each second's aggregate is not counted
// consecutive by the tracer) -> 3996/4000 = 0.999 >= 0.9 -> "1-1". Mixed:
// 2 detail runs of 1 op at offsets 0 and 4096 (both consecutive: the first
// run, then one continuing it) and 2 aggregates of 1000 ops with 100
// consecutive each -> (2 + 200) / 2002.
TEST_CASE("aggregated runs count their io.ops_sequential, not as wholly sequential", "[job-summary][beacon]") {
  auto agg = [](int k, int64_t seq_ops) {
    TraceRun r = Op("n", 0, "read", "f", 4096, 1000, 4096 * 1000, kT0 + k * kS, kT0 + k * kS + 900 * kMs, 500 * kMs);
    r.ops_sequential = seq_ops;  // offset stays absent (-1), as in an aggregate
    return r;
  };
  std::vector<TraceRun> rnd, seq;
  for (int k = 0; k < 4; ++k) rnd.push_back(agg(k, 0)), seq.push_back(agg(k, 999));
  JobSummary r = Sum(rnd), s = Sum(seq);
  CHECK(r.read.sequential_share == 0);
  CHECK(r.mode_read.mode == "1-1 random");
  CHECK(s.read.sequential_share == Approx(3996.0 / 4000));
  CHECK(s.mode_read.mode == "1-1");

  std::vector<TraceRun> mixed;
  for (int k = 0; k < 2; ++k) {
    TraceRun d = Op("n", 0, "read", "f", 4096, 1, 4096, kT0 + k * kMs, kT0 + k * kMs + 10);
    d.offset = k * 4096;
    mixed.push_back(d);
  }
  mixed.push_back(agg(1, 100));
  mixed.push_back(agg(2, 100));
  JobSummary m = Sum(mixed);
  CHECK(m.read.ops == 2002);
  CHECK(m.read.sequential_share == Approx(202.0 / 2002));
  CHECK(m.mode_read.mode == "1-1 random");

  // A strided run without the field: only its first op can be consecutive.
  TraceRun st = Op("n", 0, "read", "f", 4096, 10, 40960, kT0, kT0 + kMs);
  st.offset = 0;
  st.stride = 8192;
  JobSummary t = Sum({st});
  CHECK(t.read.sequential_share == Approx(1.0 / 10));
}

namespace {
std::string WithSeq(std::string line, int64_t seq_ops) {
  line.insert(line.size() - 1, R"(,"io.ops_sequential":)" + std::to_string(seq_ops));
  return line;
}
}  // namespace

// SummarizeJob from the store's sums (what an engine computes) gives the
// same summary as Summarize over the records, and declines where the sums do
// not hold it. By hand: n0 pid 1 reads a in 2 runs of 4 x 1 MiB (3 and 4
// consecutive ops) in seconds 0 and 1; n1 pid 2 writes b in 1 run of
// 2 x 1 MiB (1 consecutive) in second 0; an open of a; 3 failed stats.
TEST_CASE("job summary from sums equals the summary from records on SQLite", "[job-summary][sqlite]") {
  iosonar::test::TempDir dir;
  auto opened = iosonar::OpenSqliteStore(dir.path());
  REQUIRE(opened.ok());
  iosonar::Store& store = *opened.value();
  std::vector<std::string> lines = {
      WithSeq(TraceLine("k", 0, "n0", 1, "read", "a", kMiB, 4, 4 * kMiB, kT0 + 100 * kMs, kT0 + 300 * kMs), 3),
      WithSeq(TraceLine("k", 1, "n0", 1, "read", "a", kMiB, 4, 4 * kMiB, kT0 + 1200 * kMs, kT0 + 1400 * kMs), 4),
      WithSeq(TraceLine("k", 2, "n1", 2, "write", "b", kMiB, 2, 2 * kMiB, kT0 + 500 * kMs, kT0 + 900 * kMs), 1),
      TraceLine("k", 3, "n0", 1, "open", "a", 0, 1, 0, kT0, kT0 + kMs),
      TraceLine("k", 4, "n0", 1, "stat", "nothere", 0, 3, 0, kT0 + 10 * kMs, kT0 + 20 * kMs, 2),
  };
  StoreLines(store, lines);
  auto fast = iosonar::analysis::SummarizeJobFromSums(store, "k");
  INFO(fast.status().ToString());
  REQUIRE(fast.ok());
  REQUIRE(fast->has_value());
  const JobSummary& s = **fast;
  CHECK(s.records == 5);
  CHECK(s.read.ops == 8);
  CHECK(s.read.bytes == 8 * kMiB);
  CHECK(s.read.sequential_share == Approx(7.0 / 8));
  CHECK(s.mode_read.mode == "1-1 random");  // 0.875 < 0.9
  CHECK(s.write.sequential_share == Approx(0.5));
  CHECK(s.read.span_s == Approx(1.3));
  CHECK(s.read.bw_peak == Approx(8.0 * kMiB / 1.3));  // each second 4 MiB, below the average
  CHECK(s.io_phase_s == Approx(2));
  CHECK(s.meta_ops == 4);
  CHECK(s.errors == 3);
  CHECK(s.processes == 2);
  CHECK(s.nodes == 2);
  CHECK(s.files == 2);
  CHECK(s.files_total == 3);
  CHECK(s.read.size_hist[4] == 8);  // 1 MiB: the 100K-1M bin
  auto runs = iosonar::analysis::ReadTraceRuns(store, "k");
  REQUIRE(runs.ok());
  JobSummary slow = Sum(*runs);
  slow.job_id = "k";
  CHECK(SummaryToJson(s, true) == SummaryToJson(slow, true));
  auto full = iosonar::analysis::SummarizeJob(store, "k");
  REQUIRE(full.ok());
  CHECK(full->read.sequential_share == Approx(7.0 / 8));

  // A data record without io.ops_sequential: the sums decline, the records decide.
  StoreLines(store, {TraceLine("k2", 10, "n0", 1, "read", "a", kMiB, 4, 4 * kMiB, kT0, kT0 + 100 * kMs)});
  auto no_field = iosonar::analysis::SummarizeJobFromSums(store, "k2");
  REQUIRE(no_field.ok());
  CHECK_FALSE(no_field->has_value());
  auto k2 = iosonar::analysis::SummarizeJob(store, "k2");
  REQUIRE(k2.ok());
  CHECK(k2->read.sequential_share == Approx(1.0));  // its first run, contiguous: 4 of 4

  // A run across a second boundary: spread over both seconds, so the sums decline.
  StoreLines(store, {WithSeq(TraceLine("k3", 20, "n0", 1, "write", "c", kMiB, 4, 4 * kMiB, kT0 + 500 * kMs,
                                       kT0 + 1500 * kMs), 3)});
  auto across = iosonar::analysis::SummarizeJobFromSums(store, "k3");
  REQUIRE(across.ok());
  CHECK_FALSE(across->has_value());
  auto k3 = iosonar::analysis::SummarizeJob(store, "k3");
  REQUIRE(k3.ok());
  CHECK(k3->write.io_time_s == Approx(2));  // 2 MiB in each second
  CHECK(k3->write.bw_peak == Approx(4.0 * kMiB));  // 4 MiB over 1 s: the average is the larger

  auto none = iosonar::analysis::SummarizeJobFromSums(store, "none");
  CHECK(none.status().code() == iosonar::Code::kNotFound);
}

TEST_CASE("job summary: Darshan's alignment counters, stragglers and per-process balance", "[summary]") {
  std::vector<TraceRun> runs;
  // A shared file Darshan reduced over 4 ranks (the import spread it): rank 3 moved 700 of
  // its 1,000 bytes in 3 s, rank 0 100 bytes in 1 s; its runs' I/O time sums to 5 s.
  for (int64_t r = 0; r < 4; ++r) {
    TraceRun w = Op("n1", r, "write", "shared", 100, 10, r == 3 ? 700 : 100, kT0, kT0 + kS, r == 3 ? 2 * kS : kS);
    w.ops_not_aligned = r == 3 ? 6 : 0;  // 6 of 40 POSIX data ops: 15 %
    w.ops_mem_not_aligned = 0;
    w.alignment = 4096;
    w.mem_alignment = 8;
    if (r == 0) {
      w.fastest_rank = 0;
      w.slowest_rank = 3;
      w.fastest_rank_bytes = 100;
      w.slowest_rank_bytes = 700;
      w.fastest_rank_time_ns = kS;
      w.slowest_rank_time_ns = 3 * kS;
    }
    runs.push_back(w);
  }
  // A file two processes wrote themselves: 1,000 and 600 bytes (40 % apart), in 2,000
  // writes of 0.8 bytes on average: small requests on a shared file.
  runs.push_back(Op("n1", 0, "write", "pair", 1, 1000, 1000, kT0, kT0 + kS));
  runs.push_back(Op("n1", 1, "write", "pair", 1, 1000, 600, kT0, kT0 + kS));
  const JobSummary s = iosonar::analysis::Summarize(runs);
  CHECK(s.alignment.data_ops == 40);
  CHECK(s.alignment.not_aligned == 6);
  CHECK(s.alignment.alignment == 4096);
  REQUIRE(s.imbalanced_files.size() == 2);
  const auto& p = s.imbalanced_files[0];  // 0.6 of the bytes apart: the worst first
  CHECK(p.kind == "stragglers");
  CHECK(p.path == "/scratch/shared");
  CHECK(p.bytes == 1000);
  CHECK(p.time_s == Approx(5.0));
  CHECK(p.bytes_imbalance == Approx(0.6));
  CHECK(p.time_imbalance == Approx(0.4));
  const auto& q = s.imbalanced_files[1];
  CHECK(q.kind == "processes");
  CHECK(q.direction == "write");
  CHECK(q.processes == 2);
  CHECK(q.min_bytes == 600);
  CHECK(q.max_bytes == 1000);
  CHECK(q.bytes_imbalance == Approx(0.4));
  // the Darshan-reduced file is not judged per process (its per-rank split is an estimate)
  REQUIRE(s.shared_small_write.size() == 1);
  CHECK(s.shared_small_write[0].path == "/scratch/pair");
  CHECK(s.shared_small_write_ops == 2000);
  // The cached summary keeps them.
  auto back = iosonar::analysis::SummaryFromJson(iosonar::analysis::SummaryToJson(s));
  REQUIRE(back.ok());
  CHECK(iosonar::analysis::SummaryToJson(*back) == iosonar::analysis::SummaryToJson(s));
  CHECK(back->imbalanced_files.size() == 2);
  CHECK(back->alignment.not_aligned == 6);

  SECTION("under the thresholds: nothing") {
    for (auto& r : runs) {
      if (r.fastest_rank == 0) r.slowest_rank_bytes = 200, r.slowest_rank_time_ns = kS + kS / 2;
      if (r.file_path == "/scratch/pair" && r.pid == 1) r.bytes = 800;  // 20 % apart
    }
    const JobSummary t = iosonar::analysis::Summarize(runs);
    CHECK(t.imbalanced_files.empty());
  }
}
