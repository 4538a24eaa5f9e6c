// `iosonar health` end to end: the live commands (stand-in `lfs` and `lctl`
// scripts on PATH replaying the project's fixtures, and the Edison captures
// where the real captures are), saved files, the records reaching the store,
// and the binary's records equal to the golden file of the in-process run.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

struct Expected {
  int targets, fs, failover, overloaded;
  std::string target_max;
};

// Stand-in lfs and lctl on PATH that replay the saved outputs in `in`.
void RunFromPath(const std::string& in, const std::string& df, const std::string& dl, const Expected& e) {
  TempDir d;
  REQUIRE(mkdir((d / "bin").c_str(), 0755) == 0);
  // Stand-ins that check their arguments like the real commands would be called.
  WriteFile(d / "bin/lfs", "#!/bin/sh\n[ \"$1\" = df ] || exit 2\nexec cat '" + in + "/" + df + "'\n");
  WriteFile(d / "bin/lctl", "#!/bin/sh\n[ \"$1 $2\" = 'dl -t' ] || exit 2\nexec cat '" + in + "/" + dl + "'\n");
  chmod((d / "bin/lfs").c_str(), 0755);
  chmod((d / "bin/lctl").c_str(), 0755);
  const std::string path = d.path() + "/bin:" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");

  auto r = Run({IosonarBin(), "health", "--count", "1", "--output", d / "h.jsonl"}, {{"PATH", path}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto c = Run({IosonarBin(), "collect", "--store", d / "store", "--from-file", d / "h.jsonl"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  auto ex = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.health"});
  REQUIRE(ex.exit_code == 0);
  CHECK(Count(ex.out, "\"health.record\":\"target\"") == e.targets);
  CHECK(Count(ex.out, "\"health.record\":\"fs\"") == e.fs);
  CHECK(Count(ex.out, "\"health.record\":\"failover\"") == e.failover);
  CHECK(Count(ex.out, "\"health.overloaded\":true") == e.overloaded);
  CHECK(ex.out.find("\"health.target_max\":\"" + e.target_max + "\"") != std::string::npos);
  auto s = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.sampler"});
  CHECK(Count(s.out, "\"sampler.ok\":true") == 3);
}

}  // namespace

TEST_CASE("health: runs lfs df and lctl dl -t from PATH (fixtures), records reach the store", "[health]") {
  RunFromPath(FixturesDir() + "/health", "lfs-df.txt", "lctl-dl-t.txt", {13, 3, 3, 1, "scr1fs-OST0003"});
}

TEST_CASE("health: runs lfs df and lctl dl -t from PATH (real captures from Edison), records reach the store", "[health][real-capture]") {
  const std::string data = SharedDataDir();
  if (data.empty()) {
    WARN(RealCapturesSkipped("iosonar health on the Edison captures"));
    return;
  }
  RunFromPath(data + "/pytokio/tests/inputs", "lfs-df.txt", "lctl-dl-t.txt", {340, 4, 4, 3, "snx11035-OST0006"});
}

TEST_CASE("health: the command's records equal the golden file of the in-process run", "[health][golden]") {
  TempDir d;
  const std::string fx = FixturesDir() + "/health/";
  auto r = Run({IosonarBin(), "health", "--count", "1", "--lfs-df", fx + "lfs-df.txt", "--lctl-dl-t", fx + "lctl-dl-t.txt",
                "--output", d / "h.jsonl", "--host-name", "anything"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CheckGolden("health.jsonl", BlankVolatile(ReadFile(d / "h.jsonl")));
}

TEST_CASE("health: without Lustre the sources fail in the data, and the exporter keeps going", "[health]") {
  TempDir d;
  auto r = Run({IosonarBin(), "health", "--count", "2", "--interval", "0.01", "--output", d / "h.jsonl"},
               {{"PATH", d.path() + "/empty-bin"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::string out = ReadFile(d / "h.jsonl");
  CHECK(Count(out, "\"sampler.error\":\"lfs: command not found\"") == 2);
  CHECK(Count(out, "\"sampler.error\":\"lctl: command not found\"") == 2);
  auto c = Run({IosonarBin(), "collect", "--store", d / "store", "--from-file", d / "h.jsonl"});
  CHECK(c.exit_code == 0);
}
