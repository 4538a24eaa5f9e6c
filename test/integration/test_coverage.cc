// TOKIO's coverage factor (tokio-clusterstor.txt): the job's I/O on the file
// system over the file system's, over the job's window. A job that writes as
// much to /tmp as to Lustre has the coverage of its Lustre half only, and
// summarize-job and xlayer report the same number (one implementation:
// analysis-jobs/lib/coverage.h). Expected values from the simulator's ground
// truth (--truth: the job's bytes and the file system's bytes), not from iosonar.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "analysis-jobs/lib/coverage.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {
rapidjson::Document Json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

// The same trace record on node-local /tmp: another stream, another file.
std::string ToTmp(std::string line) {
  auto rep = [&](const std::string& from, const std::string& to) {
    const size_t p = line.find(from);
    if (p != std::string::npos) line.replace(p, from.size(), to);
  };
  rep("\"file.path\":\"/simfs/", "\"file.path\":\"/tmp/");
  rep("\"file.id\":\"", "\"file.id\":\"tmp");
  const std::string k = "\"event.stream\":";
  const size_t p = line.find(k);
  REQUIRE(p != std::string::npos);
  const size_t e = line.find(',', p);
  const long long stream = std::strtoll(line.c_str() + p + k.size(), nullptr, 10);
  line.replace(p + k.size(), e - p - k.size(), std::to_string(stream ^ 1));
  return line;
}
}  // namespace

TEST_CASE("coverage factor: a job writing half its bytes to /tmp has its file-system half's, in summarize-job and xlayer",
          "[coverage][summarize][xlayer]") {
  test::TempDir dir;
  const std::string bin = test::IosonarBin();
  const std::vector<std::string> sim = {
      bin, "simulate", "--nodes", "8", "--fwd", "2", "--osts", "8", "--duration", "20", "--background-bytes", "0",
      "--background-meta", "0", "--no-client", "--job",
      "id=9001,mode=N-N,first=0,nodes=4,stripes=4,duration=20,period=5,io=2,bytes=16M",
      "--job", "id=9002,mode=N-N,first=4,nodes=4,stripes=4,duration=20,period=5,io=2,bytes=16M"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = sim;
    a.insert(a.end(), extra.begin(), extra.end());
    auto r = test::Run(a);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  };
  with({"--store", dir / "store", "--maps", dir / "maps.json", "--truth", dir / "truth.json"});
  with({"--output", dir / "all.jsonl"});
  // Job 9001 writes the same again to /tmp (its trace only: /tmp is not Lustre).
  std::string tmp;
  for (const auto& l : test::SplitLines(test::ReadFile(dir / "all.jsonl")))
    if (l.find("\"iosonar.trace\"") != std::string::npos && l.find("\"job.id\":\"9001\"") != std::string::npos)
      tmp += ToTmp(l) + "\n";
  REQUIRE_FALSE(tmp.empty());
  test::WriteFile(dir / "tmp.jsonl", tmp);
  auto c = test::Run({bin, "collect", "--store", dir / "store", "--from-file", dir / "tmp.jsonl"});
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);

  const auto truth = Json(test::ReadFile(dir / "truth.json"));
  double job_bytes = 0, fs_bytes = 0;
  for (const auto& j : truth["jobs"].GetArray())
    if (std::string(j["job_id"].GetString()) == "9001") {
      job_bytes = static_cast<double>(j["bytes"].GetInt64());
      fs_bytes = static_cast<double>(j["fs_bytes"].GetInt64());
    }
  REQUIRE(job_bytes > 0);
  REQUIRE(fs_bytes > job_bytes);  // the other job shares the file system
  const double expected = job_bytes / fs_bytes;  // TOKIO: the job's bytes on the file system / the file system's

  auto s = test::Run({bin, "summarize-job", "9001", "--store", dir / "store", "--format", "json", "--no-phases"});
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  auto sd = Json(s.out);
  REQUIRE(sd.IsArray());
  REQUIRE(sd.Size() == 1);
  const auto& row = sd[0];
  // The trace holds twice the Lustre bytes (half on /tmp) ...
  CHECK(row["iosonar_write_bytes"].GetDouble() == Approx(2 * job_bytes));
  // ... the coverage counts the Lustre half only.
  CHECK(row["iosonar_coverage_job_fs_bytes"].GetDouble() == Approx(job_bytes));
  CHECK(row["iosonar_coverage_factor_bw"].GetDouble() == Approx(expected).epsilon(1e-9));

  auto x = test::Run({bin, "xlayer", "9001", "--store", dir / "store", "--maps", dir / "maps.json", "--format", "json"});
  INFO(x.err);
  REQUIRE(x.exit_code == 0);
  auto xd = Json(x.out);
  CHECK(xd["job"]["bytes"].GetDouble() == Approx(2 * job_bytes));
  CHECK(xd["coverage"]["job_bytes_on_fs"].GetDouble() == Approx(job_bytes));
  CHECK(xd["coverage"]["bytes"].GetDouble() == Approx(expected).epsilon(1e-9));
  // One number whichever command shows it.
  CHECK(xd["coverage"]["bytes"].GetDouble() == Approx(row["iosonar_coverage_factor_bw"].GetDouble()).epsilon(1e-12));
  CHECK(xd["coverage"]["opens"].GetDouble() ==
        Approx(row["iosonar_coverage_factor_opens"].GetDouble()).epsilon(1e-12));
}

TEST_CASE("coverage factor: which files are on the file system", "[coverage]") {
  analysis::JobOnFs on({{"/lus/scratch/", "scratch"}, {"/lus/home", "home"}}, "scratch", {"/odd/place/f"});
  CHECK(on.OnFs("/lus/scratch/a/b"));
  CHECK_FALSE(on.OnFs("/lus/home/u/x"));   // another file system's mount
  CHECK_FALSE(on.OnFs("/tmp/x"));          // node-local
  CHECK_FALSE(on.OnFs("/dev/shm/y"));
  CHECK(on.OnFs("/odd/place/f"));          // a Lustre layout is known
  CHECK(on.OnFs("/elsewhere/z"));          // under no known mount: counted, and said so
  on.Add("/lus/scratch/a", 100, 1, 2);
  on.Add("/tmp/b", 100, 1, 0);
  on.Add("/elsewhere/z", 50, 0, 0);
  CHECK(on.bytes() == 150);
  CHECK(on.bytes_elsewhere() == 100);
  CHECK(on.opens() == 1);
  CHECK(on.stats() == 2);
  CHECK(on.basis().find("counted as on it") != std::string::npos);
  const auto c = analysis::Coverage(on, 300, 0, 4);
  CHECK(*c.bytes == Approx(0.5));
  CHECK_FALSE(c.opens.has_value());
  CHECK(*c.stats == Approx(0.5));
}
