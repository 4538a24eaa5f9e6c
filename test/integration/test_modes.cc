// I/O mode classification on real runs: an MPI-IO program (OpenMPI, 4 ranks
// under mpirun) in the N-N, N-1, N-M and 1-1 modes, and fio in N-M, each
// traced into the store by `iosonar run` and classified by the job summary.
// (test_fio.cc covers fio's N-N, N-1 and 1-1.)
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "test/integration/trace_util.h"

using namespace iosonar::test;

namespace {

struct ModeRun {
  std::string read, write;
  int64_t read_bytes = 0, write_bytes = 0, procs = 0, kept_files_write = 0, kept_procs_write = 0;
  std::string table;
  rapidjson::Document json;  // the whole summary
};

ModeRun SummarizeRun(const TempDir& d, const std::string& job, const std::vector<std::string>& cmd,
                  const std::map<std::string, std::string>& env = {}, bool mpi_layer = false) {
  std::vector<std::string> argv{IosonarBin(), "run", "--store", d / "store", "--json", d / (job + ".json"),
                                "--job-id", job};
  if (mpi_layer) argv.push_back("--mpi");
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  // The tracer's default exclusions (system and runtime paths, as Darshan's):
  // the runtime's configuration reads must not decide a mode.
  std::map<std::string, std::string> e;
  for (const auto& [k, v] : env) e[k] = v;
  auto r = Run(argv, e);
  INFO("iosonar run stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE(r.exit_code == 0);
  rapidjson::Document s;
  s.Parse(ReadFile(d / (job + ".json")).c_str());
  REQUIRE_FALSE(s.HasParseError());
  ModeRun m;
  m.read = s["io_mode"]["read"].GetString();
  m.write = s["io_mode"]["write"].GetString();
  m.read_bytes = s["read"]["bytes"].GetInt64();
  m.write_bytes = s["write"]["bytes"].GetInt64();
  m.procs = s["processes_with_io"].GetInt64();
  m.kept_files_write = s["io_mode_evidence"]["write"]["kept_files"].GetInt64();
  m.kept_procs_write = s["io_mode_evidence"]["write"]["kept_processes"].GetInt64();
  m.table = r.out;
  m.json.CopyFrom(s, m.json.GetAllocator());
  return m;
}

}  // namespace

#ifdef IOSONAR_HAVE_MPI
TEST_CASE("modes: MPI-IO with 4 ranks in N-N, N-1, N-M and 1-1 is classified right", "[modes][mpi]") {
  const std::string mpirun = IOSONAR_MPIEXEC;
  if (mpirun.empty() || access(mpirun.c_str(), X_OK) != 0) {
    FAIL("mpirun not found (openmpi-bin) (scripts/setup.sh --test installs it)");
  }
  TempDir d;
  const int64_t per_rank = 8 << 20;
  const std::string tracer = TracerLib();
  auto mpi = [&](const std::string& mode, const std::string& job, const std::string& m) {
    std::filesystem::create_directories(d / job);
    // Forward the preload and the tracer's settings to the ranks explicitly,
    // as a batch script would (mpirun passes them on a single node anyway).
    std::vector<std::string> cmd{mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "4",
                                 "--mca", "btl", "self,vader",
                                 "-x", "LD_PRELOAD", "-x", "IOSONAR_OUTPUT", "-x", "IOSONAR_JOB_ID",
                                 ProgramPath("tp_mpiio"), mode, d / job, std::to_string(per_rank)};
    if (!m.empty()) cmd.push_back(m);
    return SummarizeRun(d, job, cmd);
  };
  SECTION("N-N: a file per rank") {
    auto r = mpi("nn", "mpi-nn", "");
    CHECK(r.write == "N-N");
    CHECK(r.read == "N-N");
    CHECK(r.kept_procs_write == 4);  // mpirun's own small writes (hwloc topology) are minor
    CHECK(r.write_bytes >= 4 * per_rank);
    CHECK(r.kept_files_write == 4);
    // summarize-job names the MPI program, not its launcher, and counts ranks.
    auto sj = Run({IosonarBin(), "summarize-job", "mpi-nn", "--store", d / "store", "--format", "json"});
    REQUIRE(sj.exit_code == 0);
    rapidjson::Document j;
    j.Parse(sj.out.c_str());
    REQUIRE_FALSE(j.HasParseError());
    CHECK(std::string(j[0]["darshan_app"].GetString()) == "tp_mpiio");
    CHECK(j[0]["darshan_nprocs"].GetInt() == 4);
  }
  SECTION("N-1: one shared file") {
    auto r = mpi("n1", "mpi-n1", "");
    CHECK(r.write == "N-1");
    CHECK(r.read == "N-1");
    CHECK(r.kept_procs_write == 4);
    CHECK(r.write_bytes >= 4 * per_rank);
  }
  SECTION("N-M: 4 ranks on 2 files") {
    auto r = mpi("nm", "mpi-nm2", "2");
    CHECK(r.write == "N-M");
    CHECK(r.read == "N-M");
    CHECK(r.kept_files_write == 2);
    CHECK(r.kept_procs_write == 4);
  }
  SECTION("N-M: 4 ranks on 3 files (one shared, two private)") {
    auto r = mpi("nm", "mpi-nm3", "3");
    CHECK(r.write == "N-M");
    CHECK(r.kept_files_write == 3);
  }
  SECTION("1-1: rank 0 alone") {
    auto r = mpi("11", "mpi-11", "");
    CHECK(r.write == "1-1");
    CHECK(r.read == "1-1");
    CHECK(r.kept_procs_write == 1);
    CHECK(r.write_bytes >= 4 * per_rank);
    // Only rank 0's read-back (all 4 ranks' share) is read I/O: no MPI, PMIx
    // or hwloc configuration file counts.
    CHECK(r.read_bytes == 4 * per_rank);
  }
}

// The MPI-IO layer (libiosonar-mpiio.so, `iosonar run --mpi`): 8 ranks write
// one shared file with MPI_File_write_at_all. As the program sees it that is
// N-1, collective; on the file system only OMPIO's aggregators do the POSIX
// I/O. The aggregator count is pinned with OMPIO's own parameter, so the
// expected physical picture does not depend on its heuristics.
TEST_CASE("modes: collective MPI-IO of 8 ranks is N-1 logically, its aggregators physically", "[modes][mpi]") {
  const std::string mpirun = IOSONAR_MPIEXEC;
  if (mpirun.empty() || access(mpirun.c_str(), X_OK) != 0) {
    FAIL("mpirun not found (openmpi-bin) (scripts/setup.sh --test installs it)");
  }
  TempDir d;
  const int64_t per_rank = 4 << 20;
  auto mpi = [&](const std::string& mode, const std::string& job, const std::vector<std::string>& extra) {
    std::filesystem::create_directories(d / job);
    std::vector<std::string> cmd{mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "8", "--mca", "btl", "self,vader"};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    for (const char* v : {"LD_PRELOAD", "IOSONAR_OUTPUT", "IOSONAR_JOB_ID"}) {
      cmd.push_back("-x");
      cmd.push_back(v);
    }
    if (mode == "fortran") {
      cmd.insert(cmd.end(), {ProgramPath("tp_mpiio_f"), d / job, std::to_string(per_rank)});
    } else {
      cmd.insert(cmd.end(), {ProgramPath("tp_mpiio"), mode, d / job, std::to_string(per_rank)});
      if (mode == "nm") cmd.push_back("3");
    }
    return SummarizeRun(d, job, cmd, {}, /*mpi_layer=*/true);
  };
  // The logical view of 8 ranks writing, then reading, 4 x 1 MiB each of one
  // shared file through collective calls: N-1, every byte collective; and
  // how many processes did the file's POSIX I/O (the aggregators).
  auto logical_n1 = [&](const rapidjson::Value& m, int64_t aggregators_min, int64_t aggregators_max) {
    REQUIRE(m["records"].GetInt64() > 0);
    CHECK(std::string(m["io_mode"]["write"].GetString()) == "N-1");
    CHECK(std::string(m["io_mode"]["read"].GetString()) == "N-1");
    CHECK(m["comm_size_max"].GetInt64() == 8);
    for (const char* dir : {"write", "read"}) {
      INFO(dir);
      CHECK(m[dir]["bytes"].GetInt64() == 8 * per_rank);
      CHECK(m[dir]["ops"].GetInt64() == 8 * 4);  // 4 calls of 1 MiB per rank
      CHECK(m[dir]["collective_share"].GetDouble() == 1.0);
      CHECK(m[dir]["ranks"].GetInt64() == 8);
      CHECK(m[dir]["files"].GetInt64() == 1);
      CHECK(m[dir]["aggregators"].GetInt64() >= aggregators_min);
      CHECK(m[dir]["aggregators"].GetInt64() <= aggregators_max);
    }
  };
  for (int aggregators : {1, 2}) {
    DYNAMIC_SECTION("collective shared file, " << aggregators << " aggregator(s)") {
      auto r = mpi("coll", "mpi-coll" + std::to_string(aggregators),
                   {"--mca", "io", "ompio", "--mca", "io_ompio_num_aggregators", std::to_string(aggregators)});
      INFO(r.table);
      std::string flat = r.table;  // the hints wrapped at 80 columns, joined again
      for (size_t at; (at = flat.find("\n    ")) != std::string::npos;) flat.replace(at, 5, " ");
      // Logical: 8 ranks, one shared file, every byte through collective
      // calls; physical: only the aggregators did POSIX I/O on the file.
      logical_n1(r.json["mpiio"], aggregators, aggregators);
      // One aggregator writes each collective call's 8 pieces at 8 places:
      // "1-1 random" (one process, one file, not sequential); two: "N-1".
      CHECK(r.write == (aggregators == 1 ? "1-1 random" : "N-1"));
      CHECK(r.kept_procs_write == aggregators);
      // The physical totals are the POSIX bytes alone (the MPI-IO layer's are
      // the same bytes again, not added), and no configuration read counts.
      CHECK(r.read_bytes == 8 * per_rank);
      CHECK(r.write_bytes >= 8 * per_rank);
      CHECK(r.write_bytes < 8 * per_rank + (1 << 20));
      CHECK(r.table.find(aggregators == 1 ? "1 aggregator wrote it" : "2 aggregators wrote it") != std::string::npos);
      CHECK(flat.find("8 ranks write one shared file with collective MPI-IO (N-1 as the program sees it)") !=
            std::string::npos);
      // The physical N-1 / 1-1 advice (stripe for contention, spread the
      // serial writer) is not given for what the collective chose.
      CHECK(flat.find("processes write one shared file (N-1)") == std::string::npos);
      CHECK(flat.find("One process does all the writing") == std::string::npos);
    }
  }
  SECTION("split collectives (_begin/_end) are collective MPI-IO records too") {
    auto r = mpi("split", "mpi-split", {"--mca", "io", "ompio"});
    INFO(r.table);
    // One record per _begin/_end pair (the bytes _end reported; the read's
    // offsets through the seek). OMPIO (OpenMPI 4.1) does a split collective
    // as nonblocking I/O through POSIX AIO (aio_write/aio_read in glibc's
    // threads): the physical side is seen only through the tracer's AIO
    // wrappers, and how many ranks do it is OMPIO's choice.
    logical_n1(r.json["mpiio"], 1, 8);
    CHECK(r.read_bytes == 8 * per_rank);
    CHECK(r.write_bytes >= 8 * per_rank);
    CHECK(r.write_bytes < 8 * per_rank + (1 << 20));
  }
  SECTION("Fortran: OpenMPI's Fortran bindings reach the PMPI_* entry points, and are seen") {
#ifndef IOSONAR_HAVE_MPI_FORTRAN
    FAIL("tp_mpiio_f was not built: no Fortran compiler or MPI Fortran bindings (scripts/setup.sh --test installs gfortran)");
#endif
    auto r = mpi("fortran", "mpi-fortran", {"--mca", "io", "ompio", "--mca", "io_ompio_num_aggregators", "2"});
    INFO(r.table);
    logical_n1(r.json["mpiio"], 2, 2);
    CHECK(r.read_bytes == 8 * per_rank);
  }
  SECTION("independent N-M with M=3: the same mode logically and physically") {
    auto r = mpi("nm", "mpi-nm3-mpiio", {});
    INFO(r.table);
    CHECK(r.write == "N-M");
    CHECK(r.read == "N-M");
    CHECK(r.kept_files_write == 3);
    CHECK(r.kept_procs_write == 8);
    CHECK(r.read_bytes == 8 * per_rank);
    const auto& m = r.json["mpiio"];
    CHECK(std::string(m["io_mode"]["write"].GetString()) == "N-M");
    CHECK(m["write"]["collective_share"].GetDouble() == 0.0);
    CHECK(m["write"]["ranks"].GetInt64() == 8);
    CHECK(m["write"]["aggregators"].GetInt64() == 8);
    CHECK(m["write"]["bytes"].GetInt64() == 8 * per_rank);
    CHECK(r.table.find("8 processes wrote them (each rank its own POSIX I/O)") != std::string::npos);
  }
}
#endif

TEST_CASE("modes: fio with two shared files of two jobs each is N-M", "[modes][fio]") {
  if (!HaveProgram("fio")) FAIL("fio is not installed (scripts/setup.sh --test installs it)");
  TempDir d;
  std::string outdir = d / "fio-report";
  std::filesystem::create_directories(outdir);
  auto r = SummarizeRun(d, "fio-nm",
                     {"fio", "--output-format=json", "--output=" + outdir + "/fio.json",
                      "--name=a", "--filename=" + d / "a.dat", "--rw=write", "--bs=64k", "--size=8m", "--numjobs=2",
                      "--offset_increment=8m",
                      "--name=b", "--filename=" + d / "b.dat", "--rw=write", "--bs=64k", "--size=8m", "--numjobs=2",
                      "--offset_increment=8m"},
                     {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/:/usr/:/etc/:" + outdir + "/"}});
  CHECK(r.write == "N-M");
  CHECK(r.kept_files_write == 2);
  CHECK(r.kept_procs_write == 4);
  CHECK(r.write_bytes == 4 * (8 << 20));
}

// Past the tracer's detail budget runs are per-second aggregates without an
// offset; their io.ops_sequential decides. fio reads one 16 MiB file in 4 KiB
// pread calls (4096 ops) with a budget of 100 records a second: random
// offsets -> almost no op continues the previous one -> "1-1 random" (before
// the fix the aggregates counted as wholly sequential: "1-1"); the same
// sequentially -> each aggregate's ops but its first continue -> "1-1".
TEST_CASE("modes: fio random reads past the detail budget are 1-1 random, sequential ones 1-1", "[modes][fio]") {
  if (!HaveProgram("fio")) FAIL("fio is not installed (scripts/setup.sh --test installs it)");
  for (const std::string rw : {"randread", "read"}) {
    TempDir d;
    std::string outdir = d / "fio-report";
    std::filesystem::create_directories(outdir);
    auto r = SummarizeRun(d, "fio-" + rw,
                          {"fio", "--output-format=json", "--output=" + outdir + "/fio.json", "--name=r",
                           "--filename=" + d / "r.dat", "--rw=" + rw, "--bs=4k", "--size=16m", "--ioengine=psync"},
                          {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/:/usr/:/etc/:" + outdir + "/"},
                           {"IOSONAR_DETAIL_BUDGET", "100"}});
    INFO(rw << "\n" << r.table);
    CHECK(r.read_bytes == 16 << 20);
    const double share = r.json["read"]["sequential_share"].GetDouble();
    if (rw == "randread") {
      CHECK(r.read == "1-1 random");
      CHECK(share < 0.05);
    } else {
      CHECK(r.read == "1-1");
      CHECK(share > 0.9);
    }
  }
}
