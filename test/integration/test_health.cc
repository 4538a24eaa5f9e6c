// `iosonar health` end to end: the live commands (stand-in `lfs` and `lctl`
// scripts on PATH replaying the Edison captures), saved files, and the
// records reaching the store.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

int Count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("health: runs lfs df and lctl dl -t from PATH, records reach the store", "[health]") {
  std::string data = SharedDataDir();
  if (data.empty()) {
    WARN("../shared/data is missing: skipping");
    return;
  }
  const std::string in = data + "/pytokio/tests/inputs";
  TempDir d;
  REQUIRE(mkdir((d / "bin").c_str(), 0755) == 0);
  // Stand-ins that check their arguments like the real commands would be called.
  WriteFile(d / "bin/lfs", "#!/bin/sh\n[ \"$1\" = df ] || exit 2\nexec cat '" + in + "/lfs-df.txt'\n");
  WriteFile(d / "bin/lctl", "#!/bin/sh\n[ \"$1 $2\" = 'dl -t' ] || exit 2\nexec cat '" + in + "/lctl-dl-t.txt'\n");
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
  CHECK(Count(ex.out, "\"health.record\":\"target\"") == 340);
  CHECK(Count(ex.out, "\"health.record\":\"fs\"") == 4);
  CHECK(Count(ex.out, "\"health.record\":\"failover\"") == 4);
  CHECK(Count(ex.out, "\"health.overloaded\":true") == 3);
  CHECK(ex.out.find("\"health.target_max\":\"snx11035-OST0006\"") != std::string::npos);
  auto s = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.sampler"});
  CHECK(Count(s.out, "\"sampler.ok\":true") == 3);
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
