// The I/O paths beyond read/write (issue 38): in-kernel copies
// (copy_file_range, sendfile, splice) from real programs nobody here wrote
// (coreutils cp and cat, Python's shutil, Java's Files.copy, Node's
// copyFileSync), fio's libaio, pvsync2 (preadv2/pwritev2) and splice
// engines, test/programs/tp_paths.c for the exact cases (offsets, partial
// transfers, errors, EINTR/EAGAIN, pipes, fortified reads, getline, dprintf,
// freopen, fdopen, libaio, io_uring), and what the tracer does not see
// (docs/tracer-coverage.md), each made to happen. Ground truth: file sizes,
// fio's own JSON, the kernel's return values the programs print.
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "test/integration/trace_util.h"

using namespace iosonar::test;
namespace fs = std::filesystem;

namespace {

int64_t Bytes(const std::vector<TraceLine>& lines, const std::string& op, const std::string& path) {
  int64_t b = 0;
  for (const auto& l : lines)
    if (l.dataset == "iosonar.trace" && l.op == op && l.path == path) b += l.bytes;
  return b;
}

// A 64 MiB + 123 B file of varied bytes (not one repeated block).
void MakeSource(const std::string& path, size_t n = (64u << 20) + 123) {
  std::ofstream f(path, std::ios::binary);
  uint64_t x = 88172645463325252ull;
  std::string buf(1 << 16, '\0');
  for (size_t left = n; left;) {
    for (char& c : buf) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x);
    }
    size_t k = std::min(left, buf.size());
    f.write(buf.data(), static_cast<std::streamsize>(k));
    left -= k;
  }
}

// Runs a copying program under the tracer: both sides' bytes must be the
// file's size, the copy identical, and the program's output unchanged.
void CheckCopy(const std::vector<std::string>& argv, const TempDir& d, const std::string& src, const std::string& dst) {
  INFO(argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << " " << (argv.size() > 2 ? argv[2] : ""));
  fs::remove(dst);
  auto plain = Run(argv);
  REQUIRE(plain.exit_code == 0);
  fs::remove(dst);
  auto t = RunTraced(argv, d / "copy.jsonl");
  INFO("traced stderr: " << t.run.err);
  REQUIRE(t.run.exit_code == 0);
  CHECK(t.run.out == plain.out);
  const auto size = static_cast<int64_t>(fs::file_size(src));
  REQUIRE(fs::file_size(dst) == static_cast<uintmax_t>(size));
  CHECK(ReadFile(dst) == ReadFile(src));
  CHECK(Bytes(t.lines, "read", src) == size);
  CHECK(Bytes(t.lines, "write", dst) == size);
  fs::remove(d / "copy.jsonl");
}

rapidjson::Document FioJson(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  REQUIRE(!doc.HasParseError());
  return doc;
}

}  // namespace

TEST_CASE("tracer paths: real programs' in-kernel copies count on both files", "[tracer]") {
  TempDir d;
  const std::string src = d / "src.bin", dst = d / "dst.bin";
  MakeSource(src);
  // coreutils: copy_file_range (default, and --reflink=never: the same call without the clone attempt)
  CheckCopy({"cp", src, dst}, d, src, dst);
  CheckCopy({"cp", "--reflink=never", src, dst}, d, src, dst);
  // cat src > dst: copy_file_range to stdout, a file here
  CheckCopy({"sh", "-c", "cat \"$0\" > \"$1\"", src, dst}, d, src, dst);
  // Python: shutil.copyfile uses sendfile on Linux; copy2 also copies metadata
  if (HaveProgram("python3")) {
    CheckCopy({"python3", "-c", "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])", src, dst}, d, src, dst);
    CheckCopy({"python3", "-c", "import shutil,sys; shutil.copy2(sys.argv[1], sys.argv[2])", src, dst}, d, src, dst);
  }
  // Node: libuv makes copy_file_range through syscall()
  if (HaveProgram("node")) CheckCopy({"node", "-e", "require('fs').copyFileSync(process.argv[1], process.argv[2])", src, dst}, d, src, dst);
  // Java: Files.copy (sendfile in the JDK's Linux file-system provider)
  if (HaveProgram("java")) {
    std::ofstream(d / "Cp.java") << "import java.nio.file.*;\npublic class Cp { public static void main(String[] a) throws Exception {\n"
                                    "  Files.copy(Paths.get(a[0]), Paths.get(a[1]), StandardCopyOption.REPLACE_EXISTING); } }\n";
    CheckCopy({"java", d / "Cp.java", src, dst}, d, src, dst);
  } else {
    WARN("java not installed: Files.copy not checked");
  }
}

TEST_CASE("tracer paths: fio's libaio, pvsync2 and splice engines: bytes exact", "[tracer]") {
  if (!HaveProgram("fio")) FAIL("fio is not installed (scripts/setup.sh --test installs it)");
  TempDir d;
  const std::string file = d / "fio.dat";
  struct Case {
    const char* engine;
    const char* rw;
    bool direct;
  };
  for (Case c : {Case{"libaio", "read", true}, Case{"libaio", "write", true}, Case{"libaio", "randread", true},
                 Case{"pvsync2", "read", false}, Case{"pvsync2", "write", false}, Case{"splice", "read", false},
                 Case{"splice", "write", false}}) {
    INFO(c.engine << " " << c.rw);
    // Lay the file out untraced, so the traced run's bytes are the job's only.
    fs::remove(file);
    REQUIRE(Run({"fio", "--name=lay", "--filename=" + file, "--size=32m", "--rw=write", "--bs=1m"}).exit_code == 0);
    auto t = RunTraced({"fio", "--name=j", "--filename=" + file, "--size=32m", "--bs=4k", std::string("--rw=") + c.rw,
                        std::string("--ioengine=") + c.engine, "--iodepth=16", c.direct ? "--direct=1" : "--direct=0",
                        "--output-format=json", "--output=" + d / "fio.json"},
                       d / "fio.jsonl", {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/:" + d / "fio.json"}});
    INFO(t.run.err);
    REQUIRE(t.run.exit_code == 0);
    auto doc = FioJson(ReadFile(d / "fio.json"));
    const auto& job = doc["jobs"][0];
    const int64_t rd = job["read"]["io_bytes"].GetInt64(), wr = job["write"]["io_bytes"].GetInt64();
    CHECK(rd + wr == 32 << 20);
    CHECK(Bytes(t.lines, "read", file) == rd);
    CHECK(Bytes(t.lines, "write", file) == wr);
    if (std::string(c.engine) == "libaio") {
      // Each op: the iocb's offset and size, the time from submission to reaping.
      int64_t ops = 0;
      for (const auto& l : t.lines) {
        if (l.path != file || (l.op != "read" && l.op != "write")) continue;
        CHECK(l.size == 4096);
        CHECK(l.dur > 0);
        CHECK(l.err == 0);
        if (!l.aggregated) CHECK(l.offset >= 0);
        ops += l.count;
      }
      CHECK(ops == job[std::string(c.rw).find("read") != std::string::npos ? "read" : "write"]["total_ios"].GetInt64());
    }
    fs::remove(d / "fio.jsonl");
  }
}

TEST_CASE("tracer paths: copies, fortified reads, preadv2, getline, dprintf, freopen, fdopen, libaio, io_uring exact",
          "[tracer]") {
  const std::string prog = GENERATE(as<std::string>{}, "tp_paths", "tp_paths_fortify");
  INFO(prog);
  if (!fs::exists(ProgramPath(prog))) FAIL(prog << " not built: libaio.so.1 not found at configure time (Debian: libaio1)");
  TempDir d;
  fs::create_directories(d / "plain");
  fs::create_directories(d / "traced");
  auto plain = Run({ProgramPath(prog), d / "plain"});
  INFO("untraced: " << plain.out << plain.err);
  REQUIRE(plain.exit_code == 0);
  auto t = RunTraced({ProgramPath(prog), d / "traced"}, d / "out.jsonl");
  INFO("traced: " << t.run.out << t.run.err);
  REQUIRE(t.run.exit_code == 0);
  // Same output (every "ok" line: errno kept, offsets, contents), same files.
  CHECK(t.run.out == plain.out);
  CHECK(t.run.out.find("FAIL") == std::string::npos);
  CHECK(t.run.out.find("done ok") != std::string::npos);
  for (const char* f : {"cfr", "sendfile", "splice", "v2", "dprintf", "stderr.log", "aio"})
    CHECK(ReadFile(d / (std::string("traced/") + f)) == ReadFile(d / (std::string("plain/") + f)));
  // (stderr on a file is buffered by glibc after freopen: the raw write lands first, traced or not)
  CHECK(ReadFile(d / "traced/stderr.log").size() == 23);

  // Bytes per file and op: the kernel's counts the program printed.
  std::map<std::pair<std::string, std::string>, int64_t> expect;
  std::istringstream in(t.run.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string word, file, op;
    int64_t n = 0;
    if (ls >> word && word == "expect" && ls >> file >> op >> n) expect[{file, op}] += n;
  }
  REQUIRE(expect.size() >= 15);
  for (const auto& [k, n] : expect) {
    INFO(k.first << " " << k.second);
    CHECK(Bytes(t.lines, k.second, d / ("traced/" + k.first)) == n);
  }

  // Four opens of chk: two with constant flags, then open/openat with flags the
  // compiler cannot see (__open_2/__openat_2 in the fortified build); the
  // failed open of a missing file keeps its ENOENT.
  int64_t chk_opens = 0, missing_enoent = 0;
  for (const auto& l : t.lines) {
    if (l.op != "open") continue;
    if (l.path == d / "traced/chk") chk_opens += l.count;
    if (l.path == d / "traced/missing" && l.err == ENOENT) missing_enoent += l.count;
  }
  CHECK(chk_opens == 4);
  CHECK(missing_enoent == 1);

  bool cfr_at = false, sendfile_at = false, aio_partial = false, freopen_open = false, eintr = false, eagain = false;
  int aio_reads = 0;
  for (const auto& l : t.lines) {
    const std::string name = fs::path(l.path).filename();
    // copy_file_range with explicit offsets: read at 1000, write at 70000
    if (name == "src" && l.op == "read" && l.offset == 1000 && l.bytes == 3000) cfr_at = true;
    if (name == "cfr" && l.op == "write" && l.offset == 70000) CHECK(l.bytes == 3000);
    if (name == "cfr" && l.op == "write" && l.offset == 60000) CHECK(l.bytes == 40000);  // the descriptor's offset after it
    if (name == "src" && l.op == "read" && l.offset == 5000 && l.bytes == 20000) sendfile_at = true;
    if (name == "src" && l.op == "read" && l.err) CHECK(l.err == EBADF);  // copy_file_range to fd 999
    if (name == "splice" && l.op == "write" && l.err == EAGAIN) eagain = true;
    if (name == "eintr" && l.op == "write") eintr = l.err == EINTR && l.bytes == 0;
    if (name == "aio" && l.op == "read") {
      aio_reads += static_cast<int>(l.count);
      // the partial read at 32768 (7232 B), alone or ending a contiguous run of 8192-B reads from 0
      if (l.offset >= 0 && l.offset <= 32768 && l.offset + l.count * 8192 > 32768 && l.bytes == 32768 - l.offset + 7232)
        aio_partial = true;
      CHECK(l.size == 8192);
    }
    if (name == "stderr.log" && l.op == "open" && l.layer == "stdio") freopen_open = true;
    if (name == "v2" && l.op == "write" && l.bytes == 1000 && l.count == 1) CHECK((l.offset == 10000 || l.offset == -1));
  }
  CHECK(cfr_at);
  CHECK(sendfile_at);
  CHECK(eagain);
  CHECK(eintr);
  CHECK(aio_partial);
  CHECK(aio_reads == 7);  // the eighth iocb is the write
  CHECK(freopen_open);
  // io_uring: 4 submissions counted, their bytes not seen.
  CHECK(Bytes(t.lines, "read", d / "traced/uring") == 0);
  int64_t sqes = -1;
  for (const auto& l : t.lines)
    if (l.dataset == "iosonar.tracer" && l.action == "exit") sqes = l.io_uring_sqes;
  if (t.run.out.find("io_uring submitted 4") != std::string::npos) CHECK(sqes == 4);
  else WARN("io_uring not available here: " << t.run.out);
}

// What docs/tracer-coverage.md says is not seen, each made to happen: the
// records must show exactly that gap (and the seen case shows the program
// does the I/O).
TEST_CASE("tracer paths: the same calls on pipes, /dev/null and bad descriptors: results and errno as untraced, no ring "
          "made, nothing recorded",
          "[tracer]") {
  const std::string prog = GENERATE(as<std::string>{}, "tp_paths", "tp_paths_fortify");
  INFO(prog);
  if (!fs::exists(ProgramPath(prog))) FAIL(prog << " not built: libaio.so.1 not found at configure time (Debian: libaio1)");
  TempDir d;
  const std::string dir = d / "w";
  fs::create_directories(dir);
  auto plain = Run({ProgramPath(prog), dir, "untraced"});
  INFO("untraced: " << plain.out << plain.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(plain.out.find("done ok") != std::string::npos);
  // Agent mode: a ring would be left for the agent; the wrappers look at the
  // descriptor before they take a slot, so none is made (before: one).
  const std::string ring = d / "ring";
  REQUIRE(mkdir(ring.c_str(), 0700) == 0);
  auto a = Run({ProgramPath(prog), dir, "untraced"},
               {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", "agent"}, {"IOSONAR_RING_DIR", ring}, {"IOSONAR_FLUSHER", ""}});
  INFO("agent mode: " << a.out << a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == plain.out);
  CHECK(a.err.empty());
  CHECK(fs::is_empty(ring));
  auto t = RunTraced({ProgramPath(prog), dir, "untraced"}, d / "out.jsonl", {{"IOSONAR_RING_DIR", ring}});
  REQUIRE(t.run.exit_code == 0);
  CHECK(t.run.out == plain.out);
  for (const auto& l : t.lines) CHECK(l.dataset != "iosonar.trace");
  CHECK(fs::is_empty(ring));
}

TEST_CASE("tracer paths: what is not seen (raw system calls, mmap'd bytes, static and setuid binaries, io_uring bytes)",
          "[tracer]") {
  TempDir d;
  const std::string file = d / "unseen.dat";
  auto traced = [&](const std::string& prog, const std::string& mode) {
    fs::remove(d / "u.jsonl");
    fs::remove(file);
    auto t = RunTraced({ProgramPath(prog), mode, file}, d / "u.jsonl");
    INFO(prog << " " << mode << ": " << t.run.err);
    REQUIRE(t.run.exit_code == 0);
    CHECK(t.run.out == "wrote 10000 read 10000\n");
    CHECK(fs::file_size(file) == 10000);
    return t;
  };
  {  // seen: the same program with write()/pread()
    auto t = traced("tp_unseen", "plain");
    CHECK(Bytes(t.lines, "write", file) == 10000);
    CHECK(Bytes(t.lines, "read", file) == 10000);
  }
  {  // raw system calls: the open is seen, the bytes not
    auto t = traced("tp_unseen", "raw");
    CHECK(Totals(t.lines, "open", "/unseen.dat").count == 1);
    CHECK(Bytes(t.lines, "write", file) == 0);
    CHECK(Bytes(t.lines, "read", file) == 0);
  }
  {  // through a mapping: the mmap record, no bytes
    auto t = traced("tp_unseen", "mmap");
    CHECK(Totals(t.lines, "mmap", "/unseen.dat").count == 1);
    CHECK(Bytes(t.lines, "write", file) == 0);
    CHECK(Bytes(t.lines, "read", file) == 0);
  }
  {  // a static binary: the loader never loads the tracer; nothing at all
    fs::remove(d / "u.jsonl");
    auto r = Run({ProgramPath("tp_unseen_static"), "plain", file},
                 {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", d / "u.jsonl"}});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "wrote 10000 read 10000\n");
    CHECK(!fs::exists(d / "u.jsonl"));
    // Exec'd from a traced shell: the shell's exec record says so (once),
    // though it did no I/O of its own; a dynamic program exec'd says nothing.
    auto t = RunTraced({"sh", "-c", "exec \"$0\" plain \"$1\"", ProgramPath("tp_unseen_static"), file}, d / "u.jsonl");
    REQUIRE(t.run.exit_code == 0);
    CHECK(t.run.out == "wrote 10000 read 10000\n");
    int64_t noted = 0;
    for (const auto& l : t.lines)
      if (l.dataset == "iosonar.tracer" && l.action == "exec") {
        noted += l.untraced_execs;
        CHECK(l.untraced_exec == ProgramPath("tp_unseen_static"));
      }
    CHECK(noted == 1);
    CHECK(Bytes(t.lines, "write", file) == 0);
    fs::remove(d / "u.jsonl");
    t = RunTraced({"sh", "-c", "exec \"$0\" plain \"$1\"", ProgramPath("tp_unseen"), file}, d / "u.jsonl");
    REQUIRE(t.run.exit_code == 0);
    for (const auto& l : t.lines) CHECK(l.untraced_execs == 0);
    CHECK(Bytes(t.lines, "write", file) == 10000);
    // Agent mode: the same notice from the ring, written by the agent.
    const std::string shm = d / "shm", ring = shm + "/iosonar-ring-" + std::to_string(geteuid());
    fs::create_directories(ring);
    fs::permissions(ring, fs::perms::owner_all, fs::perm_options::replace);
    r = Run({"sh", "-c", "exec \"$0\" plain \"$1\"", ProgramPath("tp_unseen_static"), file},
            {{"LD_PRELOAD", TracerLib()}, {"IOSONAR_OUTPUT", "agent"}, {"IOSONAR_RING_DIR", ring}});
    REQUIRE(r.exit_code == 0);
    auto a = Run({BinaryDir() + "/iosonar-exporter", "agent", "--ring-root", shm, "--output", d / "agent.jsonl", "--interval",
                  "0.1", "--count", "3", "--no-sampler-records"});
    REQUIRE(a.exit_code == 0);
    noted = 0;
    for (const auto& l : ParseTraceLines(ReadFile(d / "agent.jsonl")))
      if (l.dataset == "iosonar.tracer" && l.action == "exec") noted += l.untraced_execs;
    CHECK(noted == 1);
  }
  {  // an excluded prefix (IOSONAR_EXCLUDE; by default the system paths)
    fs::remove(d / "u.jsonl");
    auto t = RunTraced({ProgramPath("tp_unseen"), "plain", file}, d / "u.jsonl", {{"IOSONAR_EXCLUDE", d.path() + "/"}});
    REQUIRE(t.run.exit_code == 0);
    CHECK(fs::file_size(file) == 10000);
    CHECK(Bytes(t.lines, "write", file) == 0);
    CHECK(Totals(t.lines, "open", "/unseen.dat").count == 0);
  }
  {  // a child started without LD_PRELOAD: its bytes are nobody's
    fs::remove(d / "u.jsonl");
    fs::remove(file);
    auto t = RunTraced({"sh", "-c", "env -u LD_PRELOAD \"$0\" plain \"$1\"", ProgramPath("tp_unseen"), file}, d / "u.jsonl");
    REQUIRE(t.run.exit_code == 0);
    CHECK(t.run.out == "wrote 10000 read 10000\n");
    CHECK(fs::file_size(file) == 10000);
    CHECK(Bytes(t.lines, "write", file) == 0);
  }
  // A setuid binary started by another user: the loader's secure mode drops
  // LD_PRELOAD. Needs root to make the binary and switch user.
  if (geteuid() == 0 && HaveProgram("setpriv")) {
    const std::string dir = d / "suid";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::all);
    fs::copy_file(ProgramPath("tp_unseen"), dir + "/tp_unseen");
    REQUIRE(chmod((dir + "/tp_unseen").c_str(), 04755) == 0);
    fs::permissions(d.path(), fs::perms::others_exec, fs::perm_options::add);
    // The user must be able to load the tracer: a copy beside the binary (the
    // build tree may sit under a directory only its owner can enter).
    const std::string lib = dir + "/libiosonar-trace.so";
    fs::copy_file(TracerLib(), lib);
    REQUIRE(chmod(lib.c_str(), 0755) == 0);
    auto r = Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", dir + "/tp_unseen", "plain", dir + "/s.dat"},
                 {{"LD_PRELOAD", lib}, {"IOSONAR_OUTPUT", dir + "/s.jsonl"}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "wrote 10000 read 10000\n");
    // Nothing of the program; setpriv (traced, now that user) says that it
    // exec'd a program the tracer cannot see.
    auto noted_in = [&](const std::string& jsonl) {
      int64_t n = 0;
      const auto lines = ParseTraceLines(ReadFile(jsonl));
      CHECK(Bytes(lines, "write", dir + "/s.dat") == 0);
      for (const auto& l : lines)
        if (l.dataset == "iosonar.tracer" && l.action == "exec" && l.untraced_exec == dir + "/tp_unseen") n += l.untraced_execs;
      return n;
    };
    CHECK(noted_in(dir + "/s.jsonl") == 1);
    fs::remove(dir + "/s.jsonl");
    // Exec'd by a traced shell of that user: the shell's exec record says so.
    r = Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", "exec \"$0\" plain \"$1\"",
             dir + "/tp_unseen", dir + "/s.dat"},
            {{"LD_PRELOAD", lib}, {"IOSONAR_OUTPUT", dir + "/s.jsonl"}, {"IOSONAR_RING_DIR", dir + "/ring"}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(noted_in(dir + "/s.jsonl") == 1);  // sh's exec of it (setpriv's of sh: traced, not noted)
    fs::remove(dir + "/s.jsonl");
    // The same binary without setuid, as the same user: traced.
    REQUIRE(chmod((dir + "/tp_unseen").c_str(), 0755) == 0);
    fs::remove(dir + "/s.dat");
    r = Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", dir + "/tp_unseen", "plain", dir + "/s.dat"},
            {{"LD_PRELOAD", lib}, {"IOSONAR_OUTPUT", dir + "/s.jsonl"}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(Bytes(ParseTraceLines(ReadFile(dir + "/s.jsonl")), "write", dir + "/s.dat") == 10000);
  } else {
    WARN("not root (or no setpriv): the setuid case is not checked");
  }
  // io_uring through fio's engine (set up through syscall(), submitted with
  // inline system calls): the ring is noticed, the bytes not seen.
  if (HaveProgram("fio")) {
    const std::string f = d / "uring.dat";
    REQUIRE(Run({"fio", "--name=lay", "--filename=" + f, "--size=8m", "--rw=write", "--bs=1m"}).exit_code == 0);
    auto t = RunTraced({"fio", "--name=j", "--filename=" + f, "--size=8m", "--bs=4k", "--rw=read", "--ioengine=io_uring",
                        "--output-format=json", "--output=" + d / "fio.json"},
                       d / "fio.jsonl", {{"IOSONAR_EXCLUDE", "/proc/:/sys/:/dev/:" + d / "fio.json"}});
    REQUIRE(t.run.exit_code == 0);
    auto doc = FioJson(ReadFile(d / "fio.json"));
    if (doc["jobs"][0]["error"].GetInt() == 0) {
      CHECK(doc["jobs"][0]["read"]["io_bytes"].GetInt64() == 8 << 20);
      CHECK(Bytes(t.lines, "read", f) == 0);
      bool noticed = false;
      for (const auto& l : t.lines) noticed |= l.dataset == "iosonar.tracer" && l.action == "exit" && l.io_uring_sqes >= 0;
      CHECK(noticed);
    }
  }
}
