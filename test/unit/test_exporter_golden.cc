// Golden end-to-end tests: each exporter run in-process (the framework's
// option parsing, the exporter, the records the loop would send) on the
// project's own fixtures, its records compared with a golden file in
// test/golden/ with the volatile values (@timestamp, event.stream, host.name,
// measured durations) blanked. IOSONAR_UPDATE_GOLDEN=1 rewrites the golden
// files (test/fixtures/README.md); review their diff like code.
//
// Lustre: each version's tree (test/fixtures/lustre/<version>/) is copied,
// sampled, its next/ sample copied over it (the counters advanced, as a
// node's would be 10 s later), and sampled again.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "exporters/framework/exporter.h"
#include "exporters/probe/probe.h"
#include "test/testutil/exporter_driver.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace iosonar::exporters {
extern const Descriptor kLustreExporter, kHealthExporter, kProbeExporter, kSlurmExporter;
}

namespace {

struct TwoSamples {
  std::string first, second, all;
  uint64_t warnings = 0;
};

// Two samples of `iosonar lustre` on a fixture version: the tree, then its next/.
TwoSamples LustreTwoSamples(const std::string& version, std::vector<std::string> extra = {}) {
  const std::string fx = FixturesDir() + "/lustre/" + version;
  TempDir d;
  const std::string root = d / "root";
  CopyTree(fx, root, {"next"});
  std::vector<std::string> args;
  if (version.find("ddn") != std::string::npos) args = {"--lctl-dump", root + "/lctl-get-param.txt"};
  else args = {"--proc-root", root};
  args.insert(args.end(), extra.begin(), extra.end());
  ExporterDriver drv(exporters::kLustreExporter, args);
  TwoSamples s;
  s.first = drv.Sample();
  CopyTree(fx + "/next", root);
  s.second = drv.Sample();
  s.all = drv.all();
  s.warnings = drv.warnings();
  CheckRecordsValid(s.all);
  // The first reading of every target is a baseline: no data records yet.
  CHECK(Count(s.first, "\"event.dataset\":\"iosonar.sampler\"") == Count(s.first, "\n"));
  CHECK(Count(s.second, "\"event.dataset\":\"iosonar.sampler\"") < Count(s.second, "\n"));
  return s;
}

}  // namespace

TEST_CASE("golden: iosonar lustre on each version's fixture tree, two samples", "[golden][lustre]") {
  for (const std::string v : {"1.8", "2.3", "2.10", "2.12", "2.15", "2.14-ddn"}) {
    SECTION(v) {
      TwoSamples s = LustreTwoSamples(v);
      if (v == "2.12") {
        // An op this exporter does not know (counted, warned about once), and an OSS that restarted.
        CHECK(s.warnings == 1);
        CHECK(Count(s.second, "\"lustre.reset\":true") == 1);
        CHECK(Count(s.second, "\"oss.unknown_ops\":1") == 1);
      } else if (v == "2.3") {
        // 2.3's job_stats name their byte counters read/write: the exporter
        // takes them for the 2.14+ latency lines and leaves them out (the
        // golden file shows the jobs' bytes as 0; docs/lustre.md).
        CHECK(s.warnings == 0);
        CHECK(Count(s.second, "\"job.id\":\"dd.0\"") == 1);
      } else if (v == "1.8") {
        // 1.8's cache and page counters are not ops: each unknown one warned about once.
        CHECK(s.warnings == 4);
      } else {
        CHECK(s.warnings == 0);
      }
      CheckGolden("lustre-" + v + ".jsonl", BlankVolatile(s.all));
    }
  }
}

TEST_CASE("golden: iosonar lustre with --per-file-sources and a source list", "[golden][lustre]") {
  TwoSamples s = LustreTwoSamples("2.10", {"--per-file-sources", "--sources", "jobstats,client"});
  CHECK(Count(s.all, "\"event.dataset\":\"iosonar.oss\"") == 0);
  CheckGolden("lustre-2.10-per-file-jobstats.jsonl", BlankVolatile(s.all));
}

TEST_CASE("golden: iosonar health on the fixtures (plain, and the cron format gzipped)", "[golden][health]") {
  const std::string fx = FixturesDir() + "/health/";
  {
    ExporterDriver drv(exporters::kHealthExporter, {"--lfs-df", fx + "lfs-df.txt", "--lctl-dl-t", fx + "lctl-dl-t.txt"});
    drv.Sample();
    CheckRecordsValid(drv.all());
    CHECK(drv.warnings() == 0);
    CheckGolden("health.jsonl", BlankVolatile(drv.all()));
  }
  {
    TempDir d;
    WriteGzip(d / "df.txt.gz", ReadFile(fx + "lfs-df-cron.txt"));
    WriteGzip(d / "dl.txt.gz", ReadFile(fx + "lctl-dl-t-cron.txt"));
    ExporterDriver drv(exporters::kHealthExporter, {"--lfs-df", d / "df.txt.gz", "--lctl-dl-t", d / "dl.txt.gz"});
    drv.Sample();
    CheckRecordsValid(drv.all());
    // Cron snapshots carry their own time: @timestamp stays in this golden file.
    CHECK(Count(drv.all(), "\"@timestamp\":\"2023-11-14T22:18:20.000Z\"") > 0);  // BEGIN 1700000300
    CheckGolden("health-cron.jsonl", BlankValues(drv.all(), [](std::string_view k) {
                  return k == "event.stream" || k == "host.name" || k == "sampler.duration_ns";
                }));
  }
}

TEST_CASE("golden: iosonar slurm on saved sacct output, two overlapping samples", "[golden][sacct]") {
  setenv("TZ", "UTC", 1);
  tzset();
  ExporterDriver drv(exporters::kSlurmExporter,
                     {"--no-mysql", "--sacct-file", FixturesDir() + "/slurm/sacct-parsable2.txt", "--since",
                      "2026-11-22T08:00:00Z"});
  const std::string first = drv.Sample();
  const std::string second = drv.Sample();
  CheckRecordsValid(drv.all());
  CHECK(Count(first, "\"event.dataset\":\"iosonar.job\"") == 7);  // 4 starts (2004 is pending), 3 ends
  CHECK(Count(second, "\"event.dataset\":\"iosonar.job\"") == 0);  // the overlap repeats nothing
  // iosonar.job records are stamped with the job's start or end: kept in the golden file.
  CheckGolden("slurm.jsonl", BlankValues(drv.all(), [](std::string_view k) {
                return k == "event.stream" || k == "host.name" || k == "sampler.duration_ns";
              }));
}

TEST_CASE("golden: iosonar probe with a fixed seed, three probes", "[golden][probe]") {
  TempDir d;
  probe::Config c;
  c.dir = d / "p";
  c.file_size = 4 * probe::kBlock;
  c.pool_size = 3;
  c.allow_small_file = true;
  std::string report;
  REQUIRE(probe::Precreate(c, &report).ok());
  // Buffered (--cache-bypass none): whether this file system takes O_DIRECT
  // would change probe.direct and the sampler's warnings from machine to machine.
  ExporterDriver drv(exporters::kProbeExporter, {"--dir", d / "p", "--file-size", "4M", "--pool-size", "3", "--seed", "99",
                                                 "--allow-small-file", "--cache-bypass", "none"});
  for (int i = 0; i < 3; ++i) drv.Sample();
  CheckRecordsValid(drv.all());
  CHECK(Count(drv.all(), "\"probe.ok\":true") == 18);
  // What depends on this machine and this run: the directory, its mount, and latencies.
  CheckGolden("probe.jsonl",
              BlankVolatile(drv.all(), {"probe.latency_ns", "probe.dir", "probe.mount", "probe.fs_type", "lustre.fs"}));
}

// Every probe record names how its data ops bypassed the page cache: asked for
// (fadvise, none), and chosen (auto: O_DIRECT where this file system takes it,
// checked here with open(2) and a read, else fsync + fadvise).
TEST_CASE("probe records say which cache bypass they used", "[probe]") {
  TempDir d;
  probe::Config c;
  c.dir = d / "p";
  c.file_size = 4 * probe::kBlock;
  c.pool_size = 3;
  c.allow_small_file = true;
  std::string report;
  REQUIRE(probe::Precreate(c, &report).ok());
  int fd = open(probe::DataPath(d / "p").c_str(), O_RDONLY | O_DIRECT);
  bool direct_ok = fd >= 0;
  if (fd >= 0) {
    void* v = nullptr;
    REQUIRE(posix_memalign(&v, 4096, probe::kBlock) == 0);
    direct_ok = pread(fd, v, probe::kBlock, 0) == probe::kBlock;
    std::free(v);
    close(fd);
  }
  for (const auto& [mode, want] : std::vector<std::pair<std::string, std::string>>{
           {"fadvise", "fsync+fadvise"}, {"none", "none"}, {"auto", direct_ok ? "o_direct" : "fsync+fadvise"}}) {
    ExporterDriver drv(exporters::kProbeExporter, {"--dir", d / "p", "--file-size", "4M", "--pool-size", "3", "--seed", "7",
                                                   "--allow-small-file", "--cache-bypass", mode});
    drv.Sample();
    CheckRecordsValid(drv.all());
    INFO(mode << ": " << drv.all());
    CHECK(Count(drv.all(), "\"event.dataset\":\"iosonar.probe\"") == 6);
    CHECK(Count(drv.all(), "\"probe.cache_bypass\":\"" + want + "\"") == 6);
    CHECK(Count(drv.all(), std::string("\"probe.direct\":") + (want == "o_direct" ? "true" : "false")) == 6);
  }
}
