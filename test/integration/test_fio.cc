// Real programs: fio (Debian's) under `iosonar run`, the whole path —
// tracer, embedded collector, SQLite store, job summary — checked against
// what fio itself reports in --output-format=json.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "test/integration/trace_util.h"

using namespace iosonar::test;

namespace {

// tmpfs when there is one: the benchmark targets page-cache I/O, and disks
// on CI machines are noisy.
std::string FastDir() {
  return std::filesystem::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "";
}

struct FioRun {
  rapidjson::Document fio;      // fio's own JSON
  rapidjson::Document summary;  // iosonar's job summary JSON
  std::string table;
};

FioRun RunFio(const TempDir& d, const std::vector<std::string>& fio_args) {
  if (!HaveProgram("fio")) FAIL("fio is not installed (scripts/setup.sh --test installs it)");
  // fio's own report file is I/O too; keep it out of the trace so the
  // comparison is between the same bytes.
  std::string outdir = d / "fio-report";
  std::filesystem::create_directories(outdir);
  std::vector<std::string> argv{IosonarBin(), "run", "--store", d / "store", "--json", d / "summary.json",
                                "--job-id", "fio-test", "--", "fio", "--output-format=json", "--output=" + outdir + "/fio.json"};
  argv.insert(argv.end(), fio_args.begin(), fio_args.end());
  auto r = Run(argv, {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/:" + outdir + "/"}});
  INFO("iosonar run stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE(r.exit_code == 0);
  FioRun out;
  out.table = r.out;
  std::string fj = ReadFile(outdir + "/fio.json");
  // fio may print notes before the JSON object.
  fj = fj.substr(std::min(fj.find('{'), fj.size()));
  out.fio.Parse(fj.c_str());
  REQUIRE_FALSE(out.fio.HasParseError());
  std::string sj = ReadFile(d / "summary.json");
  out.summary.Parse(sj.c_str());
  REQUIRE_FALSE(out.summary.HasParseError());
  return out;
}

int64_t FioSum(const rapidjson::Document& f, const char* dir, const char* key) {
  int64_t s = 0;
  for (const auto& j : f["jobs"].GetArray()) s += j[dir][key].GetInt64();
  return s;
}

std::string Mode(const FioRun& r, const char* dir) { return r.summary["io_mode"][dir].GetString(); }

}  // namespace

TEST_CASE("fio: traced bytes equal fio's io_bytes and bandwidth is within 3%", "[fio]") {
  TempDir d;
  std::string dir = FastDir().empty() ? d.path() : FastDir();
  std::string file = dir + "/iosonar-fio-" + std::to_string(getpid()) + ".dat";
  struct Case {
    const char* rw;
    const char* bs;
    const char* size;
  };
  for (const Case& c : {Case{"write", "1M", "1g"}, Case{"write", "4k", "256m"}, Case{"read", "1M", "1g"}, Case{"read", "4k", "256m"}}) {
    DYNAMIC_SECTION(c.rw << " bs=" << c.bs) {
      if (std::string(c.rw) == "read") {  // lay the file out first, untraced
        auto lay = Run({"fio", "--name=lay", "--filename=" + file, "--rw=write", "--bs=1M", std::string("--size=") + c.size});
        REQUIRE(lay.exit_code == 0);
      }
      auto r = RunFio(d, {"--name=j", "--filename=" + file, std::string("--rw=") + c.rw, std::string("--bs=") + c.bs,
                          std::string("--size=") + c.size});
      const char* dirkey = std::string(c.rw) == "read" ? "read" : "write";
      int64_t io_bytes = FioSum(r.fio, dirkey, "io_bytes");
      REQUIRE(io_bytes > 0);
      CHECK(r.summary[dirkey]["bytes"].GetInt64() == io_bytes);
      double fio_bw = static_cast<double>(r.fio["jobs"][0][dirkey]["bw_bytes"].GetInt64());
      double our_bw = r.summary[dirkey]["bw_avg"].GetDouble();
      double err = std::fabs(our_bw - fio_bw) / fio_bw;
      INFO("fio bw " << fio_bw << " B/s, traced " << our_bw << " B/s, error " << err * 100 << "%");
      CHECK(err < 0.03);
      CHECK(Mode(r, dirkey) == "1-1");
      std::filesystem::remove(file);
    }
  }
}

TEST_CASE("fio: I/O modes N-N, N-1 and 1-1", "[fio]") {
  TempDir d;
  SECTION("numjobs=4 on separate files is N-N") {
    auto r = RunFio(d, {"--name=nn", "--directory=" + d.path(), "--rw=write", "--bs=64k", "--size=16m", "--numjobs=4"});
    CHECK(Mode(r, "write") == "N-N");
    CHECK(r.summary["processes_with_io"].GetInt64() == 4);
    CHECK(r.summary["write"]["bytes"].GetInt64() == FioSum(r.fio, "write", "io_bytes"));
    CHECK(r.table.find("N-N") != std::string::npos);
  }
  SECTION("numjobs=4 on one shared file is N-1") {
    auto r = RunFio(d, {"--name=n1", "--filename=" + d / "shared.dat", "--rw=write", "--bs=64k", "--size=16m",
                        "--numjobs=4", "--offset_increment=16m"});
    CHECK(Mode(r, "write") == "N-1");
    CHECK(r.summary["processes_with_io"].GetInt64() == 4);
  }
  SECTION("one process, one file is 1-1") {
    auto r = RunFio(d, {"--name=one", "--filename=" + d / "one.dat", "--rw=write", "--bs=64k", "--size=16m"});
    CHECK(Mode(r, "write") == "1-1");
    CHECK(Mode(r, "read") == "none");
  }
}

TEST_CASE("fio: verify passes under the tracer", "[fio]") {
  TempDir d;
  auto r = RunFio(d, {"--name=v", "--filename=" + d / "verify.dat", "--rw=randwrite", "--bs=4k", "--size=32m",
                      "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--verify_state_save=0"});
  CHECK(r.fio["jobs"][0]["error"].GetInt() == 0);
  // Verification reads back everything written.
  CHECK(r.summary["read"]["bytes"].GetInt64() >= 32 << 20);
  CHECK(r.summary["write"]["bytes"].GetInt64() == FioSum(r.fio, "write", "io_bytes"));
}
