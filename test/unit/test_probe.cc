// The latency probe on a real temporary directory: precreate, the six ops,
// pool rotation across restarts, offsets, seeds, mounts, and its records
// validating against the schema.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exporters/framework/exporter.h"
#include "exporters/probe/probe.h"
#include "core/records/record.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::probe;

namespace iosonar::exporters {
extern const Descriptor kProbeExporter;
}

namespace {

std::vector<int64_t> PoolSeqs(const std::string& dir) {
  std::vector<int64_t> out;
  for (const auto& e : std::filesystem::directory_iterator(PoolDir(dir))) {
    int64_t s = ParsePoolName(e.path().filename().string());
    REQUIRE(s >= 0);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Config Small(const std::string& dir) {
  Config c;
  c.dir = dir;
  c.file_size = 8 * kBlock;
  c.pool_size = 5;
  c.seed = 12345;
  c.allow_small_file = true;  // 8 MiB: smaller than any client's memory
  return c;
}

}  // namespace

TEST_CASE("pool names: 20 digits, parsed back, anything else refused", "[probe]") {
  CHECK(PoolName(42) == "00000000000000000042");
  CHECK(ParsePoolName(PoolName(42)) == 42);
  CHECK(ParsePoolName(PoolName(INT64_MAX)) == INT64_MAX);
  CHECK(ParsePoolName("0000000000000000004x") == -1);
  CHECK(ParsePoolName("42") == -1);
  CHECK(ParsePoolName("99999999999999999999") == -1);  // beyond int64
  CHECK(ParsePoolName("") == -1);
}

TEST_CASE("seeds: deterministic per (host, pid, start time), different otherwise, 63-bit", "[probe]") {
  uint64_t a = DeriveSeed("n1", 100, 1000);
  CHECK(a == DeriveSeed("n1", 100, 1000));
  CHECK(a != DeriveSeed("n2", 100, 1000));
  CHECK(a != DeriveSeed("n1", 101, 1000));
  CHECK(a != DeriveSeed("n1", 100, 1001));
  CHECK(a <= static_cast<uint64_t>(INT64_MAX));
  CHECK(a != 0);
}

TEST_CASE("mounts: the longest mount point containing the path, lustre fsname from the source", "[probe]") {
  const std::string mi =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "30 22 0:40 / /scratch rw,relatime shared:5 - lustre 10.100.101.3@o2ib2:10.100.101.2@o2ib2:/snx11035 rw,flock\n"
      "31 22 0:41 / /scratch2 rw - tmpfs tmpfs rw\n"
      "32 22 0:42 / /with\\040space rw - xfs /dev/sdb rw\n"
      "33 22 0:43 / /scratch rw master:7 - nfs server:/export rw\n"  // mounted over /scratch: on top
      "garbage\n";
  auto m = FindMount(mi, "/scratch2/probe");
  CHECK(m.mount_point == "/scratch2");
  CHECK(m.fs_type == "tmpfs");
  m = FindMount(mi, "/scratch/x");
  CHECK(m.fs_type == "nfs");
  m = FindMount(mi.substr(0, mi.find("33 22")), "/scratch/x/y");
  CHECK(m.mount_point == "/scratch");
  CHECK(m.fs_type == "lustre");
  CHECK(m.lustre_fs == "snx11035");
  m = FindMount(mi, "/with space/d");
  CHECK(m.mount_point == "/with space");
  CHECK(m.fs_type == "xfs");
  m = FindMount(mi, "/scratchy");  // a prefix that is not a path component
  CHECK(m.mount_point == "/");
  CHECK(FindMount("", "/x").mount_point.empty());
}

TEST_CASE("precreate: the large file has data, the pool its files, it is idempotent and checks sizes", "[probe]") {
  test::TempDir d;
  Config c = Small(d / "p");
  std::string report;
  REQUIRE(Precreate(c, &report).ok());
  struct stat st;
  REQUIRE(stat(DataPath(c.dir).c_str(), &st) == 0);
  CHECK(st.st_size == 8 * kBlock);
  CHECK(st.st_blocks * 512 >= 8 * kBlock);  // written, not sparse
  CHECK(PoolSeqs(c.dir) == std::vector<int64_t>{0, 1, 2, 3, 4});
  REQUIRE(stat((PoolDir(c.dir) + "/" + PoolName(0)).c_str(), &st) == 0);
  CHECK(st.st_size == kSmallFile);
  CHECK(report.find("5 created now") != std::string::npos);

  REQUIRE(Precreate(c, &report).ok());
  CHECK(report.find("0 created now") != std::string::npos);
  CHECK(report.find("0 MiB written now") != std::string::npos);

  c.pool_size = 7;  // tops up after the newest
  REQUIRE(Precreate(c, &report).ok());
  CHECK(PoolSeqs(c.dir) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});

  Config bad = c;
  bad.file_size = kBlock + 1;
  CHECK(Precreate(bad, &report).message().find("multiple of 1 MiB") != std::string::npos);
  bad = c;
  bad.pool_size = 0;
  CHECK_FALSE(Precreate(bad, &report).ok());
}

TEST_CASE("probe: six timed ops, aligned offsets, the pool rotates and survives a restart", "[probe]") {
  test::TempDir d;
  Config c = Small(d / "p");
  std::string report;
  REQUIRE(Precreate(c, &report).ok());
  std::vector<OpResult> ops;
  std::set<int64_t> offsets;
  {
    auto p = Prober::Open(c, "n1");
    REQUIRE(p.ok());
    CHECK((*p)->seed() == 12345);
    CHECK((*p)->file_size() == 8 * kBlock);
    for (int i = 0; i < 3; ++i) {
      (*p)->ProbeOnce(&ops);
      REQUIRE(ops.size() == 6);
      const char* names[] = {"write", "read", "stat", "small_read", "delete", "create"};
      for (size_t k = 0; k < 6; ++k) {
        INFO(ops[k].op << " errno " << ops[k].err);
        CHECK(std::string(ops[k].op) == names[k]);
        CHECK(ops[k].err == 0);
        CHECK(ops[k].latency_ns > 0);
        CHECK(ops[k].start_ns > 0);
      }
      for (size_t k = 0; k < 2; ++k) {
        CHECK(ops[k].bytes == kBlock);
        CHECK(ops[k].offset % kBlock == 0);
        CHECK(ops[k].offset >= 0);
        CHECK(ops[k].offset < 8 * kBlock);
        offsets.insert(ops[k].offset);
      }
      CHECK(ops[2].seq == i);  // the oldest
      CHECK(ops[3].bytes == kSmallFile);
      CHECK(ops[5].seq == 5 + i);  // the new newest
      CHECK(ops[5].bytes == kSmallFile);
    }
    CHECK(offsets.size() > 1);  // random, not one fixed block
    CHECK(PoolSeqs(c.dir) == std::vector<int64_t>{3, 4, 5, 6, 7});
  }
  // A restart continues from the names: oldest 3, next 8.
  auto p = Prober::Open(c, "n1");
  REQUIRE(p.ok());
  CHECK((*p)->pool_oldest() == 3);
  CHECK((*p)->pool_next() == 8);
  // The same seed gives the same offsets.
  std::vector<OpResult> again;
  (*p)->ProbeOnce(&again);
  Config c2 = c;
  test::TempDir d2;
  c2.dir = d2 / "p";
  REQUIRE(Precreate(c2, &report).ok());
  auto q = Prober::Open(c2, "n1");
  REQUIRE(q.ok());
  std::vector<OpResult> other;
  (*q)->ProbeOnce(&other);
  CHECK(again[0].offset == other[0].offset);
  CHECK(again[1].offset == other[1].offset);
}

TEST_CASE("probe: a vanished oldest file is a failed op with its errno, and the pool moves on", "[probe]") {
  test::TempDir d;
  Config c = Small(d / "p");
  std::string report;
  REQUIRE(Precreate(c, &report).ok());
  auto p = Prober::Open(c, "n1");
  REQUIRE(p.ok());
  REQUIRE(unlink((PoolDir(c.dir) + "/" + PoolName(0)).c_str()) == 0);
  std::vector<OpResult> ops;
  (*p)->ProbeOnce(&ops);
  REQUIRE(ops.size() == 6);
  CHECK(ops[0].err == 0);
  CHECK(ops[2].err == ENOENT);
  CHECK(ops[3].err == ENOENT);
  CHECK(ops[4].err == ENOENT);
  CHECK(ops[5].err == 0);
  (*p)->ProbeOnce(&ops);
  CHECK(ops[2].seq == 1);
  CHECK(ops[2].err == 0);
}

TEST_CASE("probe: without precreate, and O_DIRECT on tmpfs, the errors say what to do", "[probe]") {
  test::TempDir d;
  Config c = Small(d / "none");
  auto p = Prober::Open(c, "n1");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("iosonar probe --precreate --dir") != std::string::npos);

  // tmpfs refused O_DIRECT until Linux 6.6; newer kernels accept it.
  struct stat st;
  if (stat("/dev/shm", &st) != 0) {
    WARN("no /dev/shm: O_DIRECT refusal not checked");
    return;
  }
  std::string shm = "/dev/shm/iosonar-probe-test-" + std::to_string(getpid());
  Config s = Small(shm);
  s.file_size = 2 * kBlock;
  std::string report;
  REQUIRE(Precreate(s, &report).ok());
  s.direct = true;
  int fd = open(DataPath(shm).c_str(), O_RDONLY | O_DIRECT);
  bool refuses = fd < 0 && errno == EINVAL;
  if (fd >= 0) close(fd);
  auto q = Prober::Open(s, "n1");
  if (refuses) {
    REQUIRE_FALSE(q.ok());
    CHECK(q.status().message().find("refuses O_DIRECT") != std::string::npos);
    CHECK(q.status().message().find("without --direct") != std::string::npos);
  } else {
    WARN("this kernel's tmpfs accepts O_DIRECT (Linux >= 6.6): the refusal path is not exercised here");
    REQUIRE(q.ok());
    std::vector<OpResult> ops;
    (*q)->ProbeOnce(&ops);
    CHECK(ops.at(0).err == 0);
    CHECK(ops.at(1).err == 0);
  }
  std::filesystem::remove_all(shm);
}

TEST_CASE("probe exporter: one record per op, every line validates, options are checked", "[probe][exporter]") {
  using namespace iosonar::exporters;
  test::TempDir d;
  std::vector<std::string> args = {"probe", "--dir", d / "p", "--file-size", "4M", "--pool-size", "3", "--seed", "99",
                                   "--allow-small-file"};
  auto argv_of = [](std::vector<std::string>& a) {
    std::vector<char*> v;
    for (auto& s : a) v.push_back(s.data());
    return v;
  };
  auto argv = argv_of(args);
  auto opts = ParseOptions(kProbeExporter, static_cast<int>(argv.size()), argv.data());
  REQUIRE(opts.ok());
  Config c;
  c.dir = d / "p";
  c.file_size = 4 * kBlock;
  c.pool_size = 3;
  c.allow_small_file = true;
  std::string report;
  REQUIRE(Precreate(c, &report).ok());

  auto exp = kProbeExporter.create(*opts);
  REQUIRE(exp.ok());
  Context ctx("n1", "j7", 42, "probe");
  ctx.set_quiet(true);
  const int64_t iv = 100000000;
  ctx.StartTick(0, 1795331352123000000, 1000, iv);
  REQUIRE((*exp)->Init(ctx).ok());
  std::vector<std::string> lines;
  // Ticks 0, 1, then 4: two intervals skipped.
  for (int64_t t : {0, 1, 4}) {
    ctx.StartTick(static_cast<uint64_t>(t), 1795331352123000000 + t * iv, 1000 + t * iv, iv);
    (*exp)->Collect(ctx);
    for (auto& l : test::SplitLines(ctx.FinishTick(1000))) lines.push_back(l);
  }
  std::map<std::string, int> ops;
  int64_t last_skipped = -1;
  int op_i = FieldIndex("probe.op"), sk_i = FieldIndex("probe.skipped_ticks"), seed_i = FieldIndex("probe.seed");
  for (const auto& l : lines) {
    std::string buf = l + '\0';
    ParsedRecord r;
    INFO(l);
    REQUIRE(ParseRecordInsitu(buf.data(), l.size(), &r).ok());
    if (r.dataset->name != "iosonar.probe") continue;
    ++ops[std::string(r[static_cast<size_t>(op_i)].s)];
    last_skipped = r[static_cast<size_t>(sk_i)].i;
    CHECK(r[static_cast<size_t>(seed_i)].i == 99);
    CHECK(l.find("\"job.id\":\"j7\"") != std::string::npos);
    CHECK(l.find("\"probe.ok\":true") != std::string::npos);
  }
  CHECK(ops == std::map<std::string, int>{{"create", 3}, {"delete", 3}, {"read", 3}, {"small_read", 3}, {"stat", 3}, {"write", 3}});
  CHECK(last_skipped == 2);

  std::vector<std::string> bad = {"probe", "--file-size", "4M"};
  auto bargv = argv_of(bad);
  auto bo = ParseOptions(kProbeExporter, static_cast<int>(bargv.size()), bargv.data());
  REQUIRE(bo.ok());
  auto be = kProbeExporter.create(*bo);
  REQUIRE_FALSE(be.ok());
  CHECK(be.status().message().find("--dir") != std::string::npos);
}

TEST_CASE("probe: a large file the page cache can hold is refused unless --direct or --allow-small-file", "[probe]") {
  // Kunkel & Betke §3.1: the large file must exceed the client's memory.
  test::TempDir d;
  Config c = Small(d / "p");  // 8 MiB
  c.allow_small_file = false;
  c.bypass = Bypass::kNone;  // buffered: the page cache may answer
  c.client_memory = 64 * kBlock;
  std::string report;
  Status st = Precreate(c, &report);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("page cache") != std::string::npos);
  CHECK(st.message().find("--allow-small-file") != std::string::npos);
  // The default size is several times the memory: 64 MiB -> 4 x 1 GiB + 1 GiB.
  CHECK(AutoFileSize(64 * kBlock) == 5 * 1024 * kBlock);
  CHECK(AutoFileSize(3 * 1024 * kBlock) == 13 * 1024 * kBlock);
  CHECK(AutoFileSize(ClientMemoryBytes()) > 4 * ClientMemoryBytes());
  CHECK(CheckDefeatsCache(c, 65 * kBlock).ok());
  CHECK_FALSE(CheckDefeatsCache(c, 64 * kBlock).ok());
  Config direct = c;
  direct.direct = true;  // O_DIRECT bypasses the page cache
  CHECK(CheckDefeatsCache(direct, 8 * kBlock).ok());
  Config bypass = c;
  bypass.bypass = Bypass::kAuto;  // the default: O_DIRECT, else fsync + fadvise
  CHECK(CheckDefeatsCache(bypass, 8 * kBlock).ok());
  // A file made with --allow-small-file is refused at start without it.
  c.allow_small_file = true;
  REQUIRE(Precreate(c, &report).ok());
  c.allow_small_file = false;
  auto p = Prober::Open(c, "n1");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("client's memory") != std::string::npos);
  // The defaults: the paper's pool, a file sized from the memory, the cache bypassed.
  Config def;
  CHECK(def.pool_size == 100000);
  CHECK(def.file_size == 0);
  CHECK(def.bypass == Bypass::kAuto);
}

// Kunkel & Betke §3.1/§4.6: the data ops must reach the storage. By default
// the prober opens the file with O_DIRECT where the file system accepts it
// (checked here independently with open(2)), else falls back to fdatasync +
// POSIX_FADV_DONTNEED; either way it says which (probe.direct, bypass()).
TEST_CASE("probe: the page cache is bypassed by default, and the prober says how", "[probe]") {
  test::TempDir d;
  Config c = Small(d / "p");
  std::string report;
  REQUIRE(Precreate(c, &report).ok());
  int fd = open(DataPath(d / "p").c_str(), O_RDONLY | O_DIRECT);
  bool direct_ok = fd >= 0;
  if (fd >= 0) {
    void* v = nullptr;
    REQUIRE(posix_memalign(&v, 4096, kBlock) == 0);
    direct_ok = pread(fd, v, kBlock, 0) == kBlock;
    std::free(v);
    close(fd);
  }
  auto p = Prober::Open(c, "n1");
  REQUIRE(p.ok());
  CHECK((*p)->bypass() == (direct_ok ? Bypass::kDirect : Bypass::kFadvise));
  CHECK(std::string(BypassName((*p)->bypass())) == (direct_ok ? "o_direct" : "fsync+fadvise"));
  std::vector<OpResult> ops;
  (*p)->ProbeOnce(&ops);
  REQUIRE(ops.size() == 6);
  CHECK(ops[0].err == 0);
  CHECK(ops[1].err == 0);
  // Asked for: fsync + fadvise, buffered.
  for (Bypass b : {Bypass::kFadvise, Bypass::kNone}) {
    Config f = c;
    f.bypass = b;
    auto q = Prober::Open(f, "n1");
    REQUIRE(q.ok());
    CHECK((*q)->bypass() == b);
    (*q)->ProbeOnce(&ops);
    CHECK(ops.at(0).err == 0);
    CHECK(ops.at(0).bytes == kBlock);
    CHECK(ops.at(1).err == 0);
  }
  CHECK(std::string(BypassName(Bypass::kNone)) == "none");
}
