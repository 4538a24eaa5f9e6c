// summarize-job's file-system side (TOKIO's fs_* and fshealth_* columns, the
// coverage factors, _file_system and darshan_biggest_*_fs): real Edison
// `lfs df` / `lctl dl -t` captures through `iosonar health`, jobs from the
// simulator with no untraced load, so the file system's totals are exactly the
// jobs' and each job's coverage factor is its share.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <ctime>
#include <map>
#include <string>

#include "core/records/record.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

// "2026-11-22T12:02:31.392Z" -> epoch seconds (whole).
int64_t EpochOfIso(const std::string& iso) {
  std::tm tm{};
  int ms = 0;
  REQUIRE(std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                      &tm.tm_sec, &ms) == 7);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

// The first record's @timestamp of a JSON-lines file, epoch seconds.
int64_t FirstStamp(const std::string& path) {
  const auto lines = SplitLines(ReadFile(path));
  REQUIRE(!lines.empty());
  rapidjson::Document d;
  d.Parse(lines.front().c_str());
  REQUIRE(d.IsObject());
  return EpochOfIso(d["@timestamp"].GetString());
}

std::map<std::string, rapidjson::Document> SummarizeJson(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {IosonarBin(), "summarize-job"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--format", "json", "--no-phases"});
  auto r = Run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  REQUIRE(d.IsArray());
  std::map<std::string, rapidjson::Document> rows;
  for (auto& row : d.GetArray()) {
    rapidjson::Document one;
    one.CopyFrom(row, one.GetAllocator());
    rows.emplace(row["_jobid"].GetString(), std::move(one));
  }
  return rows;
}

double Num(const rapidjson::Document& d, const char* k) {
  INFO("column " << k);
  REQUIRE(d.HasMember(k));
  REQUIRE(d[k].IsNumber());
  return d[k].GetDouble();
}

std::string Str(const rapidjson::Document& d, const char* k) {
  INFO("column " << k);
  REQUIRE(d.HasMember(k));
  REQUIRE(d[k].IsString());
  return d[k].GetString();
}

constexpr int64_t kNs = 1000000000;

}  // namespace

TEST_CASE("summarize-job fs columns (real captures): Edison health snapshot before the job, two jobs sharing the file system",
          "[summarize][fs][real-capture]") {
  const std::string data = SharedDataDir();
  if (data.empty()) {
    WARN(RealCapturesSkipped("summarize-job on the Edison lfs df / lctl dl -t captures"));
    return;
  }
  const std::string in = data + "/pytokio/tests/inputs";
  TempDir dir;
  const std::string health = dir / "health.jsonl", store = dir / "store";
  auto h = Run({IosonarBin(), "health", "--lfs-df", in + "/lfs-df.txt", "--lctl-dl-t", in + "/lctl-dl-t.txt", "--count",
                "1", "--output", health, "--quiet", "--no-sampler-records"});
  REQUIRE(h.exit_code == 0);
  const int64_t snap = FirstStamp(health);
  // Two jobs of equal volume, at once, 10 s after the snapshot, on snx11035 with no untraced load.
  const int64_t start = (snap + 10) * kNs;
  auto sim = Run({IosonarBin(), "simulate", "--store", store, "--fs", "snx11035", "--osts", "24", "--nodes", "8", "--fwd",
                  "2", "--duration", "20", "--start", std::to_string(start), "--background-bytes", "0",
                  "--background-meta", "0", "--job",
                  "id=9001,mode=N-N,first=0,nodes=8,ppn=1,stripes=4,start=0,duration=20,period=5,io=2,bytes=16M,req=1M",
                  "--job",
                  "id=9002,mode=N-1,first=0,nodes=8,ppn=1,stripes=4,start=0,duration=20,period=5,io=2,bytes=16M,req=1M"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  auto c = Run({IosonarBin(), "collect", "--store", store, "--from-file", health});
  REQUIRE(c.exit_code == 0);

  auto rows = SummarizeJson({"9001", "9002", "--store", store});
  REQUIRE(rows.size() == 2);
  const auto& a = rows.at("9001");
  const auto& b = rows.at("9002");
  for (const auto* r : {&a, &b}) {
    const auto& d = *r;
    // The traces' paths are under no mount `lfs df` listed, so the file
    // system is the only one with server records.
    CHECK(Str(d, "_file_system") == "snx11035");
    CHECK(Str(d, "darshan_biggest_write_fs") == "_unknown");
    // fshealth_*: the golden values of the capture (../shared/data/pytokio/INVENTORY.md).
    CHECK(Num(d, "fshealth_ost_count") == 24);
    CHECK(Str(d, "fshealth_ost_least_full_name") == "OST000e");
    CHECK(Num(d, "fshealth_ost_least_full_id") == 14);
    CHECK(Num(d, "fshealth_ost_least_full_kib") == 64189687472.0);
    CHECK(Num(d, "fshealth_ost_least_full_pct") == Approx(70.7187).margin(1e-4));
    CHECK(Str(d, "fshealth_ost_most_full_name") == "OST0006");
    CHECK(Num(d, "fshealth_ost_most_full_kib") == 74730308892.0);
    CHECK(Num(d, "fshealth_ost_most_full_pct") == Approx(82.3314).margin(1e-4));
    CHECK(std::floor(Num(d, "fshealth_ost_avg_full_kib")) == 66250235643.0);
    CHECK(Num(d, "fshealth_ost_avg_full_pct") == Approx(72.9888).margin(1e-4));
    CHECK(Num(d, "fshealth_ost_overloaded_oss_count") == 1);
    CHECK(Num(d, "fshealth_ost_overloaded_ost_count") == 2);
    CHECK(Num(d, "fshealth_ost_overloaded_pct") == Approx(100.0 * 2 / 24));
    CHECK(Num(d, "fshealth_ost_avg_overloaded_ost_per_oss") == 2);
    CHECK(Num(d, "fshealth_ost_avg_overloaded_overload_factor") == 2);
    CHECK(Num(d, "fshealth_ost_actual_timestamp") == Approx(static_cast<double>(snap)).margin(1));
    CHECK(Num(d, "fshealth_ost_fullness_lead_secs") > 9);
    CHECK(Num(d, "fshealth_ost_fullness_lead_secs") < 12);
    CHECK_FALSE(d.HasMember("fshealth_ost_next_timestamp"));  // no later snapshot
    // fs_*: with no untraced load, the file system moved exactly the two jobs' bytes.
    const double fs_w = Num(d, "fs_tot_bytes_written");
    CHECK(fs_w == Num(a, "iosonar_write_bytes") + Num(b, "iosonar_write_bytes"));
    CHECK(Num(d, "fs_tot_bytes_read") == 0);
    CHECK(Num(d, "fs_frac_zero_read") == 1);
    CHECK(Num(d, "fs_tot_gibs_written") == Approx(fs_w / 1073741824.0));
    CHECK(Num(d, "fs_frac_missing") == 0);
    CHECK(Num(d, "fs_max_bytes_written_per_sec") >= Num(d, "fs_ave_bytes_written_per_sec"));
    CHECK(Num(d, "fs_ave_bytes_written_per_sec") >= Num(d, "fs_min_bytes_written_per_sec"));
    CHECK(Num(d, "fs_ave_bytes_written_per_sec") > 0);
    CHECK(Num(d, "fs_frac_zero_written") > 0);  // bursts: some OST-seconds idle
    CHECK(Num(d, "fs_frac_zero_written") < 1);
    CHECK(Num(d, "iosonar_fs_osts") == 24);
    CHECK(Num(d, "iosonar_fs_step_s") == 1);
    CHECK_FALSE(d.HasMember("fs_ave_oss_cpu"));  // no server CPU data: not made up
  }
  // Each job's coverage factor is its share of the file system's bytes and opens.
  CHECK(Num(a, "iosonar_coverage_factor_bw") == Approx(Num(a, "iosonar_write_bytes") / Num(a, "fs_tot_bytes_written")));
  CHECK(Num(a, "iosonar_coverage_factor_bw") + Num(b, "iosonar_coverage_factor_bw") == Approx(1.0));
  CHECK(Num(a, "iosonar_coverage_factor_opens") + Num(b, "iosonar_coverage_factor_opens") == Approx(1.0));
  CHECK(Num(a, "fs_tot_open_ops") > 0);

  // --no-fs leaves all of it out.
  auto bare = SummarizeJson({"9001", "--store", store, "--no-fs"});
  CHECK_FALSE(bare.at("9001").HasMember("_file_system"));
  CHECK_FALSE(bare.at("9001").HasMember("fs_tot_bytes_written"));
  CHECK_FALSE(bare.at("9001").HasMember("fshealth_ost_count"));
}

TEST_CASE("summarize-job fs columns: the file system is the mount the job wrote to, not its neighbour's",
          "[summarize][fs]") {
  TempDir dir;
  const std::string store = dir / "store", df = dir / "lfs-df.txt", health = dir / "health.jsonl";
  // Our own `lfs df` text: two file systems mounted on /simfs and /otherfs.
  WriteFile(df,
            "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
            "simfs-MDT0000_UUID       1000000        1000      999000   0% /simfs[MDT:0]\n"
            "simfs-OST0000_UUID      10000000     5000000     5000000  50% /simfs[OST:0]\n"
            "simfs-OST0001_UUID      10000000     2500000     7500000  25% /simfs[OST:1]\n"
            "\n"
            "filesystem_summary:     20000000     7500000    12500000  37% /simfs\n"
            "\n"
            "otherfs-MDT0000_UUID     1000000        1000      999000   0% /otherfs[MDT:0]\n"
            "otherfs-OST0000_UUID    10000000     9000000     1000000  90% /otherfs[OST:0]\n"
            "\n"
            "filesystem_summary:     10000000     9000000     1000000  90% /otherfs\n");
  auto h = Run({IosonarBin(), "health", "--lfs-df", df, "--no-lctl-dl-t", "--count", "1", "--output", health, "--quiet",
                "--no-sampler-records"});
  INFO(h.err);
  REQUIRE(h.exit_code == 0);
  const int64_t start = (FirstStamp(health) + 5) * kNs;
  // One job on each file system at the same time; the simulator's paths are /FS/jobID/...
  for (const auto& [fs, job] : {std::pair<std::string, std::string>{"simfs", "9101"}, {"otherfs", "9102"}}) {
    auto sim = Run({IosonarBin(), "simulate", "--store", store, "--fs", fs, "--osts", "2", "--nodes", "4", "--fwd", "1",
                    "--duration", "10", "--start", std::to_string(start), "--seed", job, "--background-bytes", "0",
                    "--background-meta", "0", "--job",
                    "id=" + job + ",mode=N-N,first=0,nodes=4,ppn=1,stripes=1,start=0,duration=10,period=5,io=2,bytes=8M,req=1M"});
    INFO(sim.err);
    REQUIRE(sim.exit_code == 0);
  }
  REQUIRE(Run({IosonarBin(), "collect", "--store", store, "--from-file", health}).exit_code == 0);

  auto rows = SummarizeJson({"9101", "9102", "--store", store});
  const auto& s = rows.at("9101");
  const auto& o = rows.at("9102");
  CHECK(Str(s, "_file_system") == "simfs");
  CHECK(Str(o, "_file_system") == "otherfs");
  CHECK(Str(s, "darshan_biggest_write_fs") == "/simfs");
  CHECK(Num(s, "darshan_biggest_write_fs_bytes") == Num(s, "iosonar_write_bytes"));
  // Alone on its file system: all of simfs's bytes are the job's.
  CHECK(Num(s, "fs_tot_bytes_written") == Num(s, "iosonar_write_bytes"));
  CHECK(Num(s, "iosonar_coverage_factor_bw") == Approx(1.0));
  CHECK(Num(s, "fshealth_ost_count") == 2);
  CHECK(Str(s, "fshealth_ost_most_full_name") == "OST0000");
  CHECK(Num(s, "fshealth_ost_avg_full_pct") == Approx(37.5));
  CHECK(Num(o, "fshealth_ost_most_full_pct") == Approx(90.0));
  CHECK_FALSE(s.HasMember("fshealth_ost_overloaded_oss_count"));  // no lctl dl -t snapshot

  // --output: one iosonar.result.job_summary record per job that the schema accepts, with the row's values;
  // the same rows resent carry the same ids (the stores drop the copy).
  const std::string out1 = dir / "out1.jsonl", out2 = dir / "out2.jsonl";
  for (const auto& out : {out1, out2}) {
    auto r = Run({IosonarBin(), "summarize-job", "9101", "9102", "--store", store, "--output", out, "--no-phases"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const auto lines = SplitLines(ReadFile(out1));
  REQUIRE(lines.size() == 2);
  CHECK(ReadFile(out1) == ReadFile(out2));
  for (const auto& l : lines) {
    std::string buf = l;
    buf.push_back('\0');
    iosonar::ParsedRecord rec;
    INFO(l);
    REQUIRE(iosonar::ParseRecordInsitu(buf.data(), l.size(), &rec).ok());
    CHECK(std::string(rec.dataset->name) == "iosonar.result.job_summary");
    rapidjson::Document d;
    d.Parse(l.c_str());
    const auto& row = rows.at(d["job.id"].GetString());
    CHECK(d["result.bytes_written"].GetDouble() == Num(row, "iosonar_write_bytes"));
    CHECK(d["result.fs"].GetString() == Str(row, "_file_system"));
    CHECK(d["result.coverage_bw"].GetDouble() == Num(row, "iosonar_coverage_factor_bw"));
    CHECK(d["result.fs_bytes"].GetDouble() == Num(row, "fs_tot_bytes_written") + Num(row, "fs_tot_bytes_read"));
    CHECK(d["result.ost_full_pct_max"].GetDouble() == Num(row, "fshealth_ost_most_full_pct"));
    CHECK(d["result.io_mode"].GetString() == Str(row, "iosonar_io_mode_write"));
  }

  // --file-system overrides the choice.
  auto forced = SummarizeJson({"9101", "--store", store, "--file-system", "otherfs"});
  CHECK(Str(forced.at("9101"), "_file_system") == "otherfs");
  CHECK(Num(forced.at("9101"), "fs_tot_bytes_written") == Num(o, "iosonar_write_bytes"));
}

TEST_CASE("summarize-job fshealth (real captures): the snapshot immediately before the job start, and the next one", "[summarize][fs][real-capture]") {
  const std::string data = SharedDataDir();
  if (data.empty()) {
    WARN(RealCapturesSkipped("summarize-job on the NERSC cron-format captures"));
    return;
  }
  const std::string in = data + "/pytokio/tests/inputs";
  TempDir dir;
  const std::string health = dir / "health.jsonl", store = dir / "store";
  // The snapshots' epochs, read from the capture's BEGIN lines (not through iosonar).
  auto begins = Run({"sh", "-c", "gzip -dc '" + in + "/sample_ost-fullness.txt.gz' | grep '^BEGIN '"});
  REQUIRE(begins.exit_code == 0);
  std::vector<int64_t> epochs;
  for (const auto& l : SplitLines(begins.out)) epochs.push_back(std::stoll(l.substr(6)));
  REQUIRE(epochs.size() == 70);
  const size_t k = 40;
  const int64_t start_s = (epochs[k] + epochs[k + 1]) / 2;
  REQUIRE(start_s > epochs[k]);

  auto h = Run({IosonarBin(), "health", "--lfs-df", in + "/sample_ost-fullness.txt.gz", "--lctl-dl-t",
                in + "/sample_ost-map.txt.gz", "--count", "1", "--output", health, "--quiet", "--no-sampler-records"});
  REQUIRE(h.exit_code == 0);
  auto sim = Run({IosonarBin(), "simulate", "--store", store, "--fs", "snx11035", "--osts", "24", "--nodes", "4", "--fwd",
                  "1", "--duration", "10", "--start", std::to_string(start_s * kNs), "--job",
                  "id=9201,mode=N-N,first=0,nodes=4,ppn=1,stripes=2,start=0,duration=10,period=5,io=2,bytes=8M,req=1M"});
  REQUIRE(sim.exit_code == 0);
  REQUIRE(Run({IosonarBin(), "collect", "--store", store, "--from-file", health}).exit_code == 0);

  auto rows = SummarizeJson({"9201", "--store", store});
  const auto& d = rows.at("9201");
  CHECK(Num(d, "fshealth_ost_actual_timestamp") == static_cast<double>(epochs[k]));
  CHECK(Num(d, "fshealth_ost_next_timestamp") == static_cast<double>(epochs[k + 1]));
  CHECK(Num(d, "fshealth_ost_fullness_lead_secs") == Approx(Num(d, "fshealth_ost_requested_timestamp") - epochs[k]));
  CHECK(Num(d, "fshealth_ost_count") == 24);
  CHECK(Num(d, "fshealth_ost_least_full_pct") <= Num(d, "fshealth_ost_avg_full_pct"));
  CHECK(Num(d, "fshealth_ost_avg_full_pct") <= Num(d, "fshealth_ost_most_full_pct"));
  // The snx11035 failover is in every snapshot of the map capture (INVENTORY.md).
  CHECK(Num(d, "fshealth_ost_overloaded_oss_count") == 1);
  CHECK(Num(d, "fshealth_ost_overloaded_ost_count") == 2);
  CHECK(Num(d, "fshealth_ost_failures_lead_secs") > 0);
}
