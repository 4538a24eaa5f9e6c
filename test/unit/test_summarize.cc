// summarize-job rows (TOKIO's column names, Darshan's definitions) and the
// scoreboard's rankings, on synthetic trace runs.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis-jobs/summarize/summarize.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::analysis;

namespace {

TraceRun Run(const char* host, int64_t pid, int64_t rank, const char* op, const char* layer, const char* path,
             int64_t bytes, int64_t count, int64_t start_s, int64_t end_s, int64_t dur_ms) {
  TraceRun r;
  r.host = host;
  r.pid = pid;
  r.rank = rank;
  r.op = op;
  r.layer = layer;
  r.file_path = path;
  r.bytes = bytes;
  r.count = count;
  r.size = count ? bytes / count : 0;
  r.start_ns = start_s * 1000000000LL;
  r.end_ns = end_s * 1000000000LL;
  r.duration_ns = dur_ms * 1000000LL;
  return r;
}

JobTrace Sample() {
  JobTrace jt;
  jt.job_id = "4242";
  const int64_t mib = 1 << 20;
  // Two ranks write 64 MiB each through POSIX to their own files; rank 1 is
  // slower (4 s inside calls against 2 s). Rank 0 reads 1 MiB of input via stdio.
  jt.runs.push_back(Run("n1", 10, 0, "open", "posix", "/s/out.0", 0, 1, 1000, 1000, 100));
  jt.runs.push_back(Run("n1", 10, 0, "write", "posix", "/s/out.0", 64 * mib, 64, 1000, 1010, 1900));
  jt.runs.push_back(Run("n2", 20, 1, "write", "posix", "/s/out.1", 64 * mib, 64, 1000, 1012, 4000));
  jt.runs.push_back(Run("n1", 10, 0, "read", "stdio", "/s/in", mib, 4, 999, 1000, 10));
  jt.runs.push_back(Run("n1", 10, 0, "read", "posix", "/s/tiny", 100, 1, 999, 999, 1));
  jt.command_lines = {"/usr/bin/mpirun -np 2 ./sim", "./sim in", "/home/u/sim in"};
  jt.tracer_dropped = 0;
  return jt;
}

}  // namespace

TEST_CASE("summarize-job: Darshan-style columns from trace runs", "[summarize]") {
  JobTrace jt = Sample();
  JobSummary s = Summarize(jt.runs);
  SummarizeInput in;
  in.trace = &jt;
  in.summary = &s;
  in.read_phases = 1;
  in.write_phases = 1;
  SummaryRow row = MakeSummaryRow(in);
  auto get = [&](const char* k) {
    const std::string* v = row.Get(k);
    INFO(k);
    REQUIRE(v != nullptr);
    return *v;
  };
  CHECK(get("_jobid") == "4242");
  CHECK(get("darshan_app") == "sim");  // two of three processes ran sim
  CHECK(get("darshan_nprocs") == "2");  // distinct ranks
  CHECK(get("darshan_start_time") == "999");
  CHECK(get("darshan_end_time") == "1012");
  CHECK(std::stod(get("darshan_walltime")) == Approx(13));
  CHECK(std::stod(get("darshan_io_time")) == Approx(4.0));  // the slowest process
  const double posix = 128.0 * (1 << 20) + 100;
  CHECK(std::stod(get("darshan_total_gibs_posix")) == Approx(posix / (1 << 30)));
  CHECK(std::stod(get("darshan_agg_perf_by_slowest_posix")) == Approx(posix / (1 << 20) / 4.0));
  CHECK(get("darshan_biggest_write_api") == "posix");
  CHECK(get("darshan_biggest_write_api_bytes") == std::to_string(128 << 20));
  CHECK(get("darshan_biggest_write_api_files") == "2");
  CHECK(get("darshan_biggest_read_api") == "stdio");
  CHECK(get("darshan_biggest_read_api_files") == "1");
  CHECK(get("iosonar_io_mode_write") == "N-N");
  CHECK(get("iosonar_write_phases") == "1");
  CHECK(row.Get("jobsdb_concurrent_jobs") == nullptr);  // no job database

  // With job metadata: the job's own window and user.
  JobRecord jr;
  jr.user = "alice";
  jr.start_ns = 990LL * 1000000000;
  jr.end_ns = 1100LL * 1000000000;
  ConcurrentJobs cj{3, 40, 12.5};
  in.job = &jr;
  in.concurrent = &cj;
  SummaryRow row2 = MakeSummaryRow(in);
  CHECK(*row2.Get("_datetime_start") == "990");
  CHECK(*row2.Get("_datetime_end") == "1100");
  CHECK(*row2.Get("iosonar_user") == "alice");
  CHECK(*row2.Get("jobsdb_concurrent_nodes") == "40");

  // CSV: a header then one line per row; JSON keeps numbers as numbers and ids as text.
  std::string csv = SummaryRowsToCsv({row, row2});
  std::istringstream lines(csv);
  std::string header, l1, l2, l3;
  std::getline(lines, header);
  std::getline(lines, l1);
  std::getline(lines, l2);
  CHECK_FALSE(std::getline(lines, l3));
  CHECK(header.rfind("_jobid,_datetime_start,_datetime_end,darshan_jobid", 0) == 0);
  CHECK(header.find("jobsdb_concurrent_jobs") != std::string::npos);
  rapidjson::Document d;
  d.Parse(SummaryRowsToJson({row, row2}).c_str());
  REQUIRE_FALSE(d.HasParseError());
  REQUIRE(d.Size() == 2);
  CHECK(d[0]["_jobid"].IsString());
  CHECK(d[0]["darshan_nprocs"].GetInt() == 2);
  CHECK(d[0]["darshan_io_time"].GetDouble() == Approx(4.0));
  CHECK(d[1]["jobsdb_concurrent_nodehrs"].GetDouble() == Approx(12.5));
}

TEST_CASE("summarize-job (real captures): every TOKIO-style column is one of summarize_job's", "[summarize][real-capture]") {
  const std::string data = iosonar::test::SharedDataDir();
  if (data.empty()) {
    WARN(iosonar::test::RealCapturesSkipped("the TOKIO column check on pytokio's sample summary"));
    return;
  }
  auto z = iosonar::test::Run({"gzip", "-dc", data + "/pytokio/examples/sample_summary.csv.gz"});
  REQUIRE(z.exit_code == 0);
  std::string header = z.out.substr(0, z.out.find('\n'));
  std::set<std::string> tokio;
  std::stringstream ss(header);
  for (std::string c; std::getline(ss, c, ',');) tokio.insert(c);
  REQUIRE(tokio.count("darshan_agg_perf_by_slowest_posix") == 1);
  JobTrace jt = Sample();
  JobSummary s = Summarize(jt.runs);
  ConcurrentJobs cj;
  SummarizeInput in;
  in.trace = &jt;
  in.summary = &s;
  in.concurrent = &cj;
  // With the file-system side filled in, every fs_/fshealth_ column too.
  FsContext fs;
  fs.fs = "snx11035";
  fs.oss_records = 10;
  fs.read.tot = 1;
  for (const auto& op : TokioMdOps()) fs.md_ops.emplace_back(op, RateStats{1, 1, 1, 1});
  fs.fullness = FullnessAt{};
  fs.fullness->next_ns = 5;
  fs.failures = FailuresAt{};
  const std::vector<std::pair<std::string, std::string>> mounts = {{"/scratch2", "snx11035"}};
  in.fs = &fs;
  in.mounts = &mounts;
  size_t tokio_cols = 0;
  for (const auto& [k, v] : MakeSummaryRow(in).cols) {
    if (k.rfind("iosonar_", 0) == 0) continue;
    INFO(k);
    CHECK(tokio.count(k) == 1);
    ++tokio_cols;
  }
  // TOKIO's 122 columns but index, fs_{ave,max}_{oss,mds}_cpu (no server CPU data) and topology_* (3).
  CHECK(tokio_cols == 114);
}

TEST_CASE("scoreboard: users and applications ranked by bytes, ops and metadata ops", "[summarize]") {
  std::vector<JobTally> jobs(4);
  jobs[0] = {"1", "alice", "vpic", 100, 900, 10, 5, 0, 0};
  jobs[1] = {"2", "alice", "hacc", 0, 50, 1000, 2, 0, 0};
  jobs[2] = {"3", "bob", "vpic", 10, 10, 3, 70000, 0, 0};
  jobs[3] = {"4", "carol", "ior", 5000, 0, 1, 1, 0, 0};
  auto sb = MakeScoreboard(jobs);
  CHECK(sb.jobs == 4);
  auto by_bytes = TopBy(sb.users, "bytes", 10);
  REQUIRE(by_bytes.size() == 3);
  CHECK(by_bytes[0].key == "carol");
  CHECK(by_bytes[1].key == "alice");
  CHECK(by_bytes[1].jobs == 2);
  CHECK(by_bytes[1].write_bytes == 950);
  CHECK(TopBy(sb.users, "ops", 1)[0].key == "alice");
  CHECK(TopBy(sb.users, "meta", 1)[0].key == "bob");
  auto apps = TopBy(sb.apps, "bytes", 2);
  REQUIRE(apps.size() == 2);
  CHECK(apps[0].key == "ior");
  CHECK(apps[1].key == "vpic");
  CHECK(apps[1].jobs == 2);
  rapidjson::Document d;
  d.Parse(ScoreboardToJson(sb, 2).c_str());
  REQUIRE_FALSE(d.HasParseError());
  CHECK(d["users"]["by_meta"][0]["user"] == "bob");
  CHECK(d["applications"]["by_bytes"].Size() == 2);
  CHECK(ScoreboardToTable(sb, 3).find("carol") != std::string::npos);
  CHECK(MainExecutable({"/a/b/x y", "x z", "w"}) == "x");
  CHECK(MainExecutable({}).empty());
}

TEST_CASE("scoreboard per storage system (TOKIO IV-B): node-local mounts apart", "[summarize][fs]") {
  // Mounts as the iosonar.health records give them (health.mount -> lustre.fs).
  const std::vector<std::pair<std::string, std::string>> m = {{"/scratch", "snx11035"}, {"/project/", "snx11168"}};
  CHECK(FileSystemOfPath("/scratch/u/out.0", m) == "snx11035");
  CHECK(FileSystemOfPath("/project/a/in", m) == "snx11168");
  CHECK(FileSystemOfPath("/tmp/x", m) == kNodeLocal);
  CHECK(FileSystemOfPath("/dev/shm/seg", m) == kNodeLocal);
  CHECK(FileSystemOfPath("/tmpfoo/x", m) == kUnknownFs);  // a sibling, not below /tmp
  CHECK(FileSystemOfPath("/home/u/.bashrc", m) == kUnknownFs);
  CHECK(FileSystemOfPath("", m).empty());
  // alice writes 900 B to Lustre and 50 GB to /dev/shm; bob 100 B to Lustre.
  std::vector<JobTally> jobs(2);
  jobs[0] = {"1", "alice", "vpic", 0, 50000000900, 10, 0, 0, 0, {}};
  jobs[0].by_fs["snx11035"] = {0, 900, 4, 0};
  jobs[0].by_fs[kNodeLocal] = {0, 50000000000, 6, 0};
  jobs[1] = {"2", "bob", "ior", 0, 100, 1, 0, 0, 0, {}};
  jobs[1].by_fs["snx11035"] = {0, 100, 1, 0};
  auto sb = MakeScoreboard(jobs);
  CHECK(TopBy(sb.users, "bytes", 1)[0].key == "alice");  // all traced I/O: the shm traffic counts
  REQUIRE(sb.file_systems.size() == 2);
  const FsScoreboard* lustre = nullptr;
  for (const auto& f : sb.file_systems)
    if (f.fs == "snx11035") lustre = &f;
  REQUIRE(lustre);
  CHECK_FALSE(lustre->node_local);
  CHECK(lustre->jobs == 2);
  CHECK(lustre->write_bytes == 1000);
  auto top = TopBy(lustre->users, "bytes", 2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].key == "alice");
  CHECK(top[0].write_bytes == 900);  // her Lustre traffic only, not the 50 GB to shm
  rapidjson::Document d;
  d.Parse(ScoreboardToJson(sb, 2).c_str());
  REQUIRE_FALSE(d.HasParseError());
  REQUIRE(d["file_systems"].Size() == 2);
  bool saw_local = false;
  for (const auto& f : d["file_systems"].GetArray())
    if (std::string(f["fs"].GetString()) == kNodeLocal) {
      saw_local = true;
      CHECK(f["node_local"].GetBool());
      CHECK(f["write_bytes"].GetUint64() == 50000000000ULL);
    } else {
      CHECK(f["users"]["by_bytes"][0]["write_bytes"].GetUint64() == 900);
    }
  CHECK(saw_local);
  const std::string t = ScoreboardToTable(sb, 3);
  CHECK(t.find("storage system snx11035") < t.find("storage system node-local"));
}

TEST_CASE("MountOf: the longest mount point that is the path or a directory above it", "[summarize][fs]") {
  const std::vector<std::pair<std::string, std::string>> m = {
      {"/scratch2", "snx11035"}, {"/scratch20/", "other"}, {"/global/cscratch1", "snx11168"}, {"/global", "gfs"}};
  CHECK(MountOf("/scratch2/u/run/out.0", m) == "/scratch2");
  CHECK(MountOf("/scratch2", m) == "/scratch2");
  CHECK(MountOf("/scratch20/x", m) == "/scratch20");  // not /scratch2: a prefix of the name is not a parent
  CHECK(MountOf("/scratch200/x", m).empty());
  CHECK(MountOf("/global/cscratch1/a", m) == "/global/cscratch1");
  CHECK(MountOf("/global/homes/a", m) == "/global");
  CHECK(MountOf("relative/path", m).empty());
  CHECK(MountOf("", m).empty());
  CHECK(MountOf("/anything", {{"/", "rootfs"}}) == "/");
}
