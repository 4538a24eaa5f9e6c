// I/O phases on a real run: a checkpointing program traced into the store by
// `iosonar run`, then `iosonar phases` on it — exactly K write phases, each
// boundary within one bucket of the wall-clock times the program printed.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "test/integration/trace_util.h"

using namespace iosonar::test;

namespace {

struct Ckpt {
  long long start = 0, end = 0;
};

std::vector<Ckpt> ParseCkpts(const std::string& out) {
  std::vector<Ckpt> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("ckpt ", 0) != 0) continue;
    std::istringstream ls(line.substr(5));
    int i = 0;
    Ckpt c;
    ls >> i >> c.start >> c.end;
    v.push_back(c);
  }
  return v;
}

}  // namespace

TEST_CASE("phases: a checkpointing program's K checkpoints are K write phases", "[phases][run]") {
  TempDir d;
  const int k = 4;
  const long long bytes = 48LL << 20;
  auto r = Run({IosonarBin(), "run", "--store", d / "store", "--job-id", "ckpt-1", "--", ProgramPath("tp_checkpoint"),
                d.path(), std::to_string(k), std::to_string(bytes), "2500"},
               {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/"}});
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE(r.exit_code == 0);
  auto ck = ParseCkpts(r.out);
  REQUIRE(ck.size() == static_cast<size_t>(k));

  for (const char* wavelet : {"haar", "db4"}) {
    for (const char* mode : {"periodization", "symmetric"}) {
      auto p = Run({IosonarBin(), "phases", "ckpt-1", "--store", d / "store", "--wavelet", wavelet, "--mode", mode,
                    "--format", "json"});
      INFO(wavelet << " " << mode << "\n" << p.err << p.out);
      REQUIRE(p.exit_code == 0);
      rapidjson::Document j;
      j.Parse(p.out.c_str());
      REQUIRE_FALSE(j.HasParseError());
      CHECK(j["read_phases"].GetInt() == 0);
      REQUIRE(j["write_phases"].GetInt() == k);
      const auto& ph = j["phases"];
      const long long bucket = 1000000000LL;
      long long total = 0;
      for (int i = 0; i < k; ++i) {
        const auto& x = ph[i];
        CHECK(std::string(x["direction"].GetString()) == "write");
        const long long s = x["start_ns"].GetInt64();
        const long long e = s + static_cast<long long>(x["duration_s"].GetDouble() * 1e9 + 0.5);
        INFO("phase " << i << " [" << s << ", " << e << ") checkpoint [" << ck[i].start << ", " << ck[i].end << "]");
        // Within two buckets: the denoised series has the resolution of the
        // wavelet's first level (Haar pairs buckets 2k and 2k+1), so a phase may
        // begin at the even bucket before the one holding the checkpoint's first
        // byte (CI: 1.07 s early with haar/periodization, 1 s buckets).
        CHECK(std::llabs(s - ck[i].start) < 2 * bucket);
        CHECK(std::llabs(e - ck[i].end) < 2 * bucket);
        CHECK(x["bytes"].GetInt64() >= bytes);  // the checkpoint, plus at most its progress line on stdout
        CHECK(x["bytes"].GetInt64() < bytes + 4096);
        total += x["bytes"].GetInt64();
      }
      CHECK(total >= k * bytes);
    }
  }

  // As iosonar.result.phase records into a file: one valid record per phase.
  auto out = Run({IosonarBin(), "phases", "ckpt-1", "--store", d / "store", "--output", d / "phases.jsonl"});
  INFO(out.err);
  REQUIRE(out.exit_code == 0);
  auto recs = ParseTraceLines(ReadFile(d / "phases.jsonl"));  // REQUIREs each line validates
  CHECK(recs.size() == static_cast<size_t>(k));
  for (const auto& rec : recs) {
    CHECK(rec.dataset == "iosonar.result.phase");
    CHECK(rec.job == "ckpt-1");
  }

  auto table = Run({IosonarBin(), "phases", "ckpt-1", "--store", d / "store", "--wavelet", "db4", "--level", "2"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("I/O phases of job ckpt-1") != std::string::npos);
  auto none = Run({IosonarBin(), "phases", "no-such-job", "--store", d / "store"});
  CHECK(none.exit_code == 1);
  auto bad = Run({IosonarBin(), "phases", "ckpt-1", "--store", d / "store", "--wavelet", "morlet"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("morlet") != std::string::npos);
}
