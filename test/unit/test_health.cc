// The health parsers (lfs df, lctl dl -t) on the project's own fixtures
// (test/fixtures/health: plain, -i, cron format plain and gzipped, the
// devices file), with golden values worked out by hand from pytokio's rules,
// and on bad input; the health exporter's records validate against the
// schema. Where the real captures are, the same on NERSC Edison's (the
// real-capture checks).
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "exporters/framework/exporter.h"
#include "exporters/health/health.h"
#include "core/records/record.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::health;

namespace iosonar::exporters {
extern const Descriptor kHealthExporter;
}

namespace {

std::string Inputs() {
  std::string d = test::SharedDataDir();
  return d.empty() ? "" : d + "/pytokio/tests/inputs";
}

std::string Load(const std::string& path) {
  std::string text, err;
  REQUIRE(ReadSource(path, &text, &err));
  return text;
}

const FsFullness* FindFs(const std::vector<FsFullness>& v, const std::string& fs) {
  for (const auto& f : v)
    if (f.fs == fs && !f.inodes) return &f;
  return nullptr;
}

const FsFailover* FindFo(const std::vector<FsFailover>& v, const std::string& fs) {
  for (const auto& f : v)
    if (f.fs == fs) return &f;
  return nullptr;
}

std::vector<const OssLoad*> Overloaded(const FsFailover& f) {
  std::vector<const OssLoad*> out;
  for (const auto& o : f.oss)
    if (o.overloaded) out.push_back(&o);
  return out;
}

}  // namespace

TEST_CASE("lfs df on Edison (real capture): 4 file systems, pytokio's fullness summary", "[health][real-capture]") {
  if (Inputs().empty()) {
    WARN(test::RealCapturesSkipped("the Edison lfs df capture"));
    return;
  }
  LfsDf df = ParseLfsDf(Load(Inputs() + "/lfs-df.txt"));
  CHECK(df.warnings.count == 0);
  REQUIRE(df.snapshots.size() == 1);
  CHECK(df.snapshots[0].epoch == 0);
  CHECK(df.snapshots[0].targets.size() == 24 + 24 + 36 + 248 + 1 + 1 + 1 + 5);
  auto sum = SummarizeFullness(df.snapshots[0]);
  CHECK(sum.size() == 4);

  const FsFullness* a = FindFs(sum, "snx11035");
  REQUIRE(a);
  CHECK(a->mount == "/scratch2");
  CHECK(a->ost_count == 24);
  CHECK(a->mdt_count == 1);
  CHECK(a->max_target == "snx11035-OST0006");
  CHECK(a->max_pct == Approx(82.3314).margin(1e-4));
  CHECK(a->min_target == "snx11035-OST000e");
  CHECK(a->min_pct == Approx(70.7187).margin(1e-4));
  CHECK(a->avg_pct == Approx(72.9888).margin(1e-4));
  CHECK(a->used / a->ost_count == 66250235643);  // average used KiB (INVENTORY.md)

  const FsFullness* c = FindFs(sum, "snx11168");
  REQUIRE(c);
  CHECK(c->mount == "/global/cscratch1");
  CHECK(c->ost_count == 248);
  CHECK(c->mdt_count == 5);
  CHECK(c->min_target == "snx11168-OST00ee");
  CHECK(c->min_pct == Approx(40.2726).margin(1e-4));
  CHECK(c->max_target == "snx11168-OST0079");
  CHECK(c->max_pct == Approx(52.3021).margin(1e-4));
  CHECK(c->avg_pct == Approx(44.3339).margin(1e-4));

  REQUIRE(FindFs(sum, "snx11025"));
  CHECK(FindFs(sum, "snx11025")->ost_count == 24);
  REQUIRE(FindFs(sum, "snx11036"));
  CHECK(FindFs(sum, "snx11036")->ost_count == 36);

  // One target line, every column.
  const DfTarget* t6 = nullptr;
  for (const auto& t : df.snapshots[0].targets)
    if (t.target == "snx11035-OST0006") t6 = &t;
  REQUIRE(t6);
  CHECK(t6->fs == "snx11035");
  CHECK(t6->kind == "ost");
  CHECK(t6->index == 6);
  CHECK(t6->total == 90767651352);
  CHECK(t6->used == 74730308892);
  CHECK(t6->avail == 15098973004);
  CHECK(t6->mount == "/scratch2");
}

TEST_CASE("lctl dl -t on Edison (real capture): TOKIO's failover rule finds the overloaded OSSes", "[health][real-capture]") {
  if (Inputs().empty()) {
    WARN(test::RealCapturesSkipped("the Edison lctl dl -t capture"));
    return;
  }
  LctlDl dl = ParseLctlDlT(Load(Inputs() + "/lctl-dl-t.txt"));
  CHECK(dl.warnings.count == 0);
  REQUIRE(dl.snapshots.size() == 1);
  CHECK(dl.snapshots[0].devices.size() == 352);
  auto fo = GetFailovers(dl.snapshots[0]);
  REQUIRE(fo.size() == 4);

  const FsFailover* a = FindFo(fo, "snx11035");
  REQUIRE(a);
  CHECK(a->mode == 1);
  CHECK(a->ost_count == 24);
  auto ov = Overloaded(*a);
  REQUIRE(ov.size() == 1);
  CHECK(ov[0]->ip == "10.100.101.7");
  CHECK(ov[0]->targets == std::vector<std::string>{"snx11035-OST0002", "snx11035-OST0003"});
  CHECK(ov[0]->overload_factor == 2.0);
  CHECK(a->overloaded_oss() == 1);
  CHECK(a->overloaded_ost() == 2);

  const FsFailover* c = FindFo(fo, "snx11168");
  REQUIRE(c);
  CHECK(c->mode == 1);
  CHECK(c->ost_count == 248);
  ov = Overloaded(*c);
  REQUIRE(ov.size() == 2);
  CHECK(ov[0]->ip == "10.100.104.43");
  CHECK(ov[0]->targets == std::vector<std::string>{"snx11168-OST0024", "snx11168-OST0025"});
  CHECK(ov[1]->ip == "10.100.104.140");
  CHECK(ov[1]->targets == std::vector<std::string>{"snx11168-OST0086", "snx11168-OST0087"});
  CHECK(ov[0]->overload_factor == 2.0);

  for (const char* fs : {"snx11025", "snx11036"}) {
    const FsFailover* f = FindFo(fo, fs);
    REQUIRE(f);
    CHECK(f->mode == 1);
    CHECK(f->overloaded_oss() == 0);
    for (const auto& o : f->oss) CHECK_FALSE(o.abnormal);
  }
}

TEST_CASE("the cron captures (real capture): 70 snapshots each, the snx11035 failover in every one", "[health][real-capture]") {
  if (Inputs().empty()) {
    WARN(test::RealCapturesSkipped("the NERSC cron captures"));
    return;
  }
  LctlDl dl = ParseLctlDlT(Load(Inputs() + "/sample_ost-map.txt.gz"));  // read through zlib
  CHECK(dl.warnings.count == 0);
  REQUIRE(dl.snapshots.size() == 70);
  CHECK(dl.snapshots.front().epoch == 1489998203);
  CHECK(dl.snapshots.back().epoch == 1490081108);
  int with_failover = 0;
  for (const auto& s : dl.snapshots) {
    auto fo = GetFailovers(s);
    const FsFailover* a = FindFo(fo, "snx11035");
    REQUIRE(a);
    auto ov = Overloaded(*a);
    if (a->mode == 1 && ov.size() == 1 && ov[0]->ip == "10.100.101.7" && ov[0]->ost_count() == 2) ++with_failover;
  }
  CHECK(with_failover == 70);

  LfsDf df = ParseLfsDf(Load(Inputs() + "/sample_ost-fullness.txt.gz"));
  CHECK(df.warnings.count == 0);
  REQUIRE(df.snapshots.size() == 70);
  CHECK(df.snapshots.front().epoch == 1489998203);
  CHECK(df.snapshots.back().epoch == 1490081107);
  for (const auto& s : df.snapshots) {
    auto sum = SummarizeFullness(s);
    REQUIRE(FindFs(sum, "snx11035"));
    CHECK(FindFs(sum, "snx11035")->ost_count == 24);
    REQUIRE(FindFs(sum, "snx11168"));
    CHECK(FindFs(sum, "snx11168")->ost_count == 248);
  }
}

namespace {

std::string HealthFixture(const std::string& name) { return test::FixturesDir() + "/health/" + name; }

}  // namespace

TEST_CASE("lfs df (fixture): three file systems, a wrapped name, an inactive OST, pytokio's fullness summary", "[health][fixtures]") {
  LfsDf df = ParseLfsDf(Load(HealthFixture("lfs-df.txt")));
  CHECK(df.warnings.count == 0);
  REQUIRE(df.snapshots.size() == 1);
  CHECK(df.snapshots[0].epoch == 0);
  CHECK(df.snapshots[0].targets.size() == 7 + 3 + 3);
  auto sum = SummarizeFullness(df.snapshots[0]);
  REQUIRE(sum.size() == 3);

  // scr1fs: OSTs 0-3 and 5 active (60, 30, 50, 90, 40 %), OST0004 inactive.
  const FsFullness* a = FindFs(sum, "scr1fs");
  REQUIRE(a);
  CHECK(a->mount == "/scratch1");
  CHECK(a->ost_count == 5);
  CHECK(a->mdt_count == 1);
  CHECK(a->inactive_count == 1);
  CHECK(a->total == 5242880000);
  CHECK(a->used == 2831155200);
  CHECK(a->avail == 2411724800);
  CHECK(a->avg_pct == Approx(54.0));  // total used / total capacity, not the mean of the percentages
  CHECK(a->max_target == "scr1fs-OST0003");
  CHECK(a->max_pct == Approx(90.0));
  CHECK(a->min_target == "scr1fs-OST0001");
  CHECK(a->min_pct == Approx(30.0));

  const FsFullness* h = FindFs(sum, "homefs");
  REQUIRE(h);
  CHECK(h->mount == "/home");
  CHECK(h->avg_pct == Approx(37.5));
  CHECK(h->max_target == "homefs-OST0000");

  // projects2024: every UUID too long for its column, the numbers on the next line.
  const FsFullness* p = FindFs(sum, "projects2024");
  REQUIRE(p);
  CHECK(p->mount == "/projects");
  CHECK(p->ost_count == 2);
  CHECK(p->mdt_count == 1);
  CHECK(p->avg_pct == Approx(75.0));
  CHECK(p->min_target == "projects2024-OST0001");
  CHECK(p->min_pct == Approx(70.0));

  const DfTarget* t3 = nullptr;
  for (const auto& t : df.snapshots[0].targets)
    if (t.target == "scr1fs-OST0003") t3 = &t;
  REQUIRE(t3);
  CHECK(t3->fs == "scr1fs");
  CHECK(t3->kind == "ost");
  CHECK(t3->index == 3);
  CHECK(t3->total == 1048576000);
  CHECK(t3->used == 943718400);
  CHECK(t3->avail == 104857600);
  CHECK(t3->mount == "/scratch1");
  CHECK_FALSE(t3->inodes);

  LfsDf di = ParseLfsDf(Load(HealthFixture("lfs-df-i.txt")));
  CHECK(di.warnings.count == 0);
  REQUIRE(di.snapshots.size() == 1);
  REQUIRE(di.snapshots[0].targets.size() == 3);
  CHECK(di.snapshots[0].targets[1].inodes);
  auto isum = SummarizeFullness(di.snapshots[0]);
  REQUIRE(isum.size() == 1);
  CHECK(isum[0].inodes);
  CHECK(isum[0].used == 400000);
  CHECK(isum[0].avg_pct == Approx(20.0));
}

TEST_CASE("lctl dl -t (fixture): TOKIO's failover rule finds the OSS serving two OSTs", "[health][fixtures]") {
  LctlDl dl = ParseLctlDlT(Load(HealthFixture("lctl-dl-t.txt")));
  CHECK(dl.warnings.count == 0);
  REQUIRE(dl.snapshots.size() == 1);
  CHECK(dl.snapshots[0].devices.size() == 20);
  auto fo = GetFailovers(dl.snapshots[0]);
  REQUIRE(fo.size() == 3);

  const FsFailover* a = FindFo(fo, "scr1fs");
  REQUIRE(a);
  CHECK(a->ost_count == 6);
  CHECK(a->mode == 1);
  CHECK(a->not_up == 1);  // OST0004's osc is IN
  auto ov = Overloaded(*a);
  REQUIRE(ov.size() == 1);
  CHECK(ov[0]->ip == "10.0.1.3");
  CHECK(ov[0]->targets == std::vector<std::string>{"scr1fs-OST0002", "scr1fs-OST0003"});
  CHECK(ov[0]->overload_factor == 2.0);
  CHECK(a->overloaded_oss() == 1);
  CHECK(a->overloaded_ost() == 2);

  const FsFailover* h = FindFo(fo, "homefs");
  REQUIRE(h);
  CHECK(h->mode == 1);
  CHECK(h->overloaded_oss() == 0);

  // One OSS serving both OSTs: that is the mode, nobody is overloaded.
  const FsFailover* p = FindFo(fo, "projects2024");
  REQUIRE(p);
  CHECK(p->mode == 2);
  REQUIRE(p->oss.size() == 1);
  CHECK(p->oss[0].ip == "10.0.3.1");
  CHECK_FALSE(p->oss[0].abnormal);
}

TEST_CASE("the cron format (fixtures, plain and gzipped): snapshots stamped with their epochs, a failover appears", "[health][fixtures]") {
  test::TempDir d;
  for (const bool gz : {false, true}) {
    INFO((gz ? "gzipped" : "plain"));
    std::string df_path = HealthFixture("lfs-df-cron.txt"), dl_path = HealthFixture("lctl-dl-t-cron.txt");
    if (gz) {  // the .gz is made here from the text fixture, not kept as a blob
      test::WriteGzip(d / "df.txt.gz", test::ReadFile(df_path));
      test::WriteGzip(d / "dl.txt.gz", test::ReadFile(dl_path));
      df_path = d / "df.txt.gz";
      dl_path = d / "dl.txt.gz";
      CHECK(test::ReadFile(df_path) != test::ReadFile(HealthFixture("lfs-df-cron.txt")));  // really compressed
    }
    LfsDf df = ParseLfsDf(Load(df_path));
    CHECK(df.warnings.count == 0);
    REQUIRE(df.snapshots.size() == 3);
    CHECK(df.snapshots[0].epoch == 1700000000);
    CHECK(df.snapshots[2].epoch == 1700000600);
    std::vector<double> avg;
    for (const auto& s : df.snapshots) avg.push_back(FindFs(SummarizeFullness(s), "scr1fs")->avg_pct);
    CHECK(avg == std::vector<double>{45.0, 50.0, 80.0});
    CHECK(FindFs(SummarizeFullness(df.snapshots[2]), "scr1fs")->inactive_count == 1);

    LctlDl dl = ParseLctlDlT(Load(dl_path));
    CHECK(dl.warnings.count == 0);
    REQUIRE(dl.snapshots.size() == 3);
    CHECK(dl.snapshots[1].epoch == 1700000300);
    std::vector<int64_t> overloaded;
    for (const auto& s : dl.snapshots) overloaded.push_back(FindFo(GetFailovers(s), "scr1fs")->overloaded_oss());
    CHECK(overloaded == std::vector<int64_t>{0, 1, 1});  // OST0002 moved to 10.0.1.3 after the first snapshot
  }
}

TEST_CASE("lctl dl (the devices file, fixtures): a 1.8 MDS and a 2.5 client, no NID is a warning per osc", "[health][fixtures]") {
  for (const char* name : {"devices-1.8-mds.txt", "devices-2.5-client.txt"}) {
    INFO(name);
    const std::string text = Load(HealthFixture(name));
    LctlDl dl = ParseLctlDlT(text);
    REQUIRE(dl.snapshots.size() == 1);
    size_t lines = 0, osc = 0;
    for (char c : text) lines += c == '\n';
    for (const auto& dv : dl.snapshots[0].devices) {
      CHECK(dv.nid.empty());
      if (dv.role == "osc") {
        ++osc;
        CHECK(dv.target.rfind("lus", 0) == 0);
        CHECK(dv.fs == dv.target.substr(0, dv.target.find('-')));
      }
    }
    CHECK(dl.snapshots[0].devices.size() == lines);  // every device line kept
    CHECK(osc >= 2);
    CHECK(dl.warnings.count == osc);  // one "without a NID" warning per osc
    for (const auto& f : GetFailovers(dl.snapshots[0])) CHECK(f.oss.empty());
  }
}

TEST_CASE("lfs df variants: inodes, inactive targets, wrapped names, a file system mounted twice", "[health]") {
  const std::string text =
      "UUID                      Inodes       IUsed       IFree IUse% Mounted on\n"
      "lfs-MDT0000_UUID           1000         100         900  10% /mnt/a[MDT:0]\n"
      "lfs-OST0000_UUID           2000         500        1500  25% /mnt/a[OST:0]\n"
      "\n"
      "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
      "lfs-MDT0000_UUID           4096        1024        3072  25% /mnt/a[MDT:0]\n"
      "lfs-OST0000_UUID           8192        2048        6144  25% /mnt/a[OST:0]\n"
      "lfs-OST0001_UUID            : inactive device\n"
      "a-very-long-fsname-OST0002_UUID\n"
      "                          8192        4096        4096  50% /mnt/b[OST:2]\n"
      "filesystem_summary:       8192        2048        6144  25% /mnt/a\n"
      "\n"
      "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
      "lfs-OST0000_UUID           8192        2048        6144  25% /mnt/a2[OST:0]\n";
  LfsDf df = ParseLfsDf(text);
  CHECK(df.warnings.count == 0);
  REQUIRE(df.snapshots.size() == 1);
  auto& t = df.snapshots[0].targets;
  REQUIRE(t.size() == 7);
  CHECK(t[0].inodes);
  CHECK(t[1].inodes);
  CHECK_FALSE(t[2].inodes);
  CHECK_FALSE(t[4].active);
  CHECK(t[5].target == "a-very-long-fsname-OST0002");
  CHECK(t[5].fs == "a-very-long-fsname");
  CHECK(t[5].used == 4096);
  CHECK(t[5].index == 2);
  auto sum = SummarizeFullness(df.snapshots[0]);
  REQUIRE(sum.size() == 3);
  CHECK(sum[0].inodes);
  CHECK(sum[0].avg_pct == Approx(25.0));
  const FsFullness* lfs = FindFs(sum, "lfs");
  REQUIRE(lfs);
  CHECK(lfs->ost_count == 1);  // OST0000 once, though mounted at /mnt/a and /mnt/a2
  CHECK(lfs->inactive_count == 1);
  CHECK(lfs->mdt_count == 1);
}

TEST_CASE("failover rule: the mode, ties, OSTs seen twice, devices not UP", "[health]") {
  const std::string text =
      "  0 UP mgc MGC10.0.0.1@tcp 1111 5\n"
      "  1 UP osc fs1-OST0000-osc-ffff01 u 5 10.0.0.10@tcp\n"
      "  2 UP osc fs1-OST0001-osc-ffff01 u 5 10.0.0.10@tcp\n"
      "  3 UP osc fs1-OST0002-osc-ffff01 u 5 10.0.0.11@tcp\n"
      "  4 UP osc fs1-OST0003-osc-ffff01 u 5 10.0.0.11@tcp\n"
      "  5 IN osc fs1-OST0004-osc-ffff01 u 5 10.0.0.12@tcp\n"
      "  6 UP osc fs1-OST0005-osc-ffff01 u 5 10.0.0.12@tcp\n"
      "  7 UP osc fs1-OST0006-osc-ffff01 u 5 10.0.0.12@tcp\n"
      "  8 UP osc fs1-OST0007-osc-ffff01 u 5 10.0.0.12@tcp\n"
      "  9 UP osc fs1-OST0000-osc-ffff02 u 5 10.0.0.10@tcp\n"  // second mount: same OST
      " 10 UP osc fs2-OST0000-osc-ffff03 u 5 10.0.1.1@o2ib\n"
      " 11 UP osc fs2-OST0001-osc-ffff03 u 5 10.0.1.2@o2ib\n";
  LctlDl dl = ParseLctlDlT(text);
  CHECK(dl.warnings.count == 0);
  REQUIRE(dl.snapshots.size() == 1);
  auto fo = GetFailovers(dl.snapshots[0]);
  REQUIRE(fo.size() == 2);
  const FsFailover* f1 = FindFo(fo, "fs1");
  REQUIRE(f1);
  CHECK(f1->ost_count == 8);
  CHECK(f1->mode == 2);  // counts 2, 2, 4: the mode is 2
  CHECK(f1->not_up == 1);
  auto ov = Overloaded(*f1);
  REQUIRE(ov.size() == 1);
  CHECK(ov[0]->ip == "10.0.0.12");
  CHECK(ov[0]->overload_factor == 2.0);
  const FsFailover* f2 = FindFo(fo, "fs2");
  REQUIRE(f2);
  CHECK(f2->mode == 1);
  CHECK(f2->overloaded_oss() == 0);

  // A tie (one OSS with 1 OST, one with 3): the mode is the smaller count.
  LctlDl tie = ParseLctlDlT(
      "1 UP osc t-OST0000-osc-x u 5 1.1.1.1@tcp\n"
      "2 UP osc t-OST0001-osc-x u 5 1.1.1.2@tcp\n"
      "3 UP osc t-OST0002-osc-x u 5 1.1.1.2@tcp\n"
      "4 UP osc t-OST0003-osc-x u 5 1.1.1.2@tcp\n");
  auto tf = GetFailovers(tie.snapshots.at(0));
  REQUIRE(tf.size() == 1);
  CHECK(tf[0].mode == 1);
  CHECK(tf[0].overloaded_oss() == 1);
  CHECK(tf[0].oss[1].overload_factor == 3.0);
}

TEST_CASE("bad lfs df input: counted warnings naming the line, the rest parsed", "[health][bad-input]") {
  const std::string text =
      "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
      "fs-OST0000_UUID            8192        2048        6144  25% /mnt/a[OST:0]\n"
      "fs-OST0001_UUID            8192        20x8        6144  25% /mnt/a[OST:1]\n"  // non-numeric
      "fs-OST0002_UUID            8192        2048\n"                                 // truncated
      "garbage here\n"                                                                // garbled
      "fs-XYZ0003_UUID            8192        2048        6144  25% /mnt/a[OST:3]\n"  // not a target name
      "fs-OST0004_UUID            8.0T        2.0T        6.0T  25% /mnt/a[OST:4]\n"  // lfs df -h
      "fs-OST0005_UUID            8192        2048        6144  25 /mnt/a[OST:5]\n"   // no %
      "fs-OST0006_UUID            8192       -2048        6144  25% /mnt/a[OST:6]\n"  // negative
      "BEGIN notanumber\n"
      "   \t  \r\n"
      "\n"
      "fs-OST0007_UUID            8192        4096        4096  50% /mnt/a[OST:7]";  // no final newline
  LfsDf df = ParseLfsDf(text);
  CHECK(df.warnings.count == 8);
  REQUIRE(df.warnings.texts.size() == 8);
  CHECK(df.warnings.texts[0].rfind("line 3: non-numeric size", 0) == 0);
  CHECK(df.warnings.texts[1].rfind("line 4: truncated target line", 0) == 0);
  CHECK(df.warnings.texts[2].rfind("line 5: unrecognised line", 0) == 0);
  CHECK(df.warnings.texts[3].find("is not FSNAME-OSTxxxx") != std::string::npos);
  REQUIRE(df.snapshots.size() == 2);  // the bad BEGIN still starts a snapshot
  CHECK(df.snapshots[0].targets.size() == 1);
  REQUIRE(df.snapshots[1].targets.size() == 1);
  CHECK(df.snapshots[1].targets[0].used == 4096);
}

TEST_CASE("bad lctl dl -t input: counted warnings, the rest parsed", "[health][bad-input]") {
  const std::string text =
      "  1 UP osc fs-OST0000-osc-ffff u 5 10.0.0.1@tcp\n"
      "  2 UP osc fs-OST0001-osc-ffff u\n"                      // truncated
      "  x UP osc fs-OST0002-osc-ffff u 5 10.0.0.2@tcp\n"       // non-numeric index
      "  3 up osc fs-OST0003-osc-ffff u 5 10.0.0.3@tcp\n"       // status not a status
      "  4 UP osc fs-OST0004-osc-ffff u five 10.0.0.4@tcp\n"    // refcount
      "  5 UP osc notatarget-osc-ffff u 5 10.0.0.5@tcp\n"       // osc without FS-OSTxxxx
      "  6 UP osc fs-OST0006-osc-ffff u 5 10.0.0.6@tcp extra more\n"  // too many columns
      "  7 UP osc fs-OST0007-osc-ffff u 5\n"                    // no NID (lctl dl without -t): kept, warned
      "  8 UP osc fs-OST0008-osc-ffff u 5 noat\n"               // NID without @: kept, warned
      "\n"
      "  9 UP osc fs-OST0009-osc-ffff u 5 10.0.0.1@tcp\n";
  LctlDl dl = ParseLctlDlT(text);
  CHECK(dl.warnings.count == 8);
  REQUIRE(dl.snapshots.size() == 1);
  CHECK(dl.snapshots[0].devices.size() == 4);
  auto fo = GetFailovers(dl.snapshots[0]);
  REQUIRE(fo.size() == 1);
  CHECK(fo[0].ost_count == 4);
  REQUIRE(fo[0].oss.size() == 2);  // 10.0.0.1 (2 OSTs) and "noat"; OST0007 has no address
  CHECK(fo[0].oss[0].ost_count() == 2);
}

TEST_CASE("parsers survive empty, huge-line and binary input", "[health][bad-input]") {
  CHECK(ParseLfsDf("").snapshots.empty());
  CHECK(ParseLctlDlT("").snapshots.empty());
  std::string huge(1 << 20, 'A');
  huge += "_UUID 1 2 3 4% /x\n";
  CHECK(ParseLfsDf(huge).warnings.count == 1);
  std::string bin;
  for (int i = 0; i < 4096; ++i) bin.push_back(static_cast<char>(i * 131 + 7));
  LfsDf a = ParseLfsDf(bin);
  LctlDl b = ParseLctlDlT(bin);
  CHECK(a.warnings.count > 0);
  CHECK(b.warnings.count > 0);
  CHECK(a.warnings.texts.size() <= kMaxWarningTexts);
}

TEST_CASE("regression (fuzz_health): summing huge OST sizes saturates instead of overflowing", "[health][bad-input]") {
  LfsDf df = ParseLfsDf(
      "fs-OST0000_UUID 9223372036854775807 9223372036854775807 0 100% /m[OST:0]\n"
      "fs-OST0001_UUID 2048 2048 2048 50% /m[OST:1]\n");
  REQUIRE(df.snapshots.size() == 1);
  auto sum = SummarizeFullness(df.snapshots[0]);
  REQUIRE(sum.size() == 1);
  CHECK(sum[0].ost_count == 2);
  CHECK(sum[0].total == INT64_MAX);
  CHECK(sum[0].used == INT64_MAX);
  CHECK(sum[0].avg_pct == Approx(100.0));
}

TEST_CASE("sources: a missing file and a missing command fail clearly", "[health]") {
  std::string out, err;
  CHECK_FALSE(ReadSource("/nonexistent/lfs-df.txt", &out, &err));
  CHECK(err.find("/nonexistent/lfs-df.txt") != std::string::npos);
  CHECK_FALSE(RunCommand({"iosonar-no-such-command-xyz"}, &out, &err));
  CHECK(err == "iosonar-no-such-command-xyz: command not found");
  CHECK_FALSE(RunCommand({"sh", "-c", "exit 3"}, &out, &err));
  CHECK(err == "sh: exit status 3");
  REQUIRE(RunCommand({"sh", "-c", "echo hello"}, &out, &err));
  CHECK(out == "hello\n");
  // A command that hangs (lfs df with a server down) is killed at the timeout.
  auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(RunCommand({"sleep", "30"}, &out, &err, 200));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK(err.find("sleep: no answer within 0.200 s (killed)") == 0);
}

namespace {

// Runs the exporter once in-process and returns its lines.
std::vector<std::string> RunOnce(std::vector<std::string> args, uint64_t* warnings = nullptr) {
  using namespace iosonar::exporters;
  args.insert(args.begin(), "health");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  auto opts = ParseOptions(kHealthExporter, static_cast<int>(argv.size()), argv.data());
  REQUIRE(opts.ok());
  auto exp = kHealthExporter.create(*opts);
  REQUIRE(exp.ok());
  Context ctx("n1", "", 42, "health");
  ctx.set_quiet(true);
  ctx.StartTick(0, 1795331352123000000, 1000, 60000000000);
  REQUIRE((*exp)->Init(ctx).ok());
  (*exp)->Collect(ctx);
  std::string out = ctx.FinishTick(1000);
  if (warnings) *warnings = ctx.warnings_total();
  return test::SplitLines(out);
}

// Every line validates; returns how many records of each health.record kind.
std::map<std::string, int> Validate(const std::vector<std::string>& lines) {
  std::map<std::string, int> kinds;
  int rec_i = FieldIndex("health.record");
  for (const auto& l : lines) {
    std::string buf = l + '\0';
    ParsedRecord r;
    Status s = ParseRecordInsitu(buf.data(), l.size(), &r);
    INFO(l);
    REQUIRE(s.ok());
    if (r[static_cast<size_t>(rec_i)].kind == FieldValue::kString) ++kinds[std::string(r[static_cast<size_t>(rec_i)].s)];
    else ++kinds[std::string(r.dataset->name)];
  }
  return kinds;
}

}  // namespace

TEST_CASE("health exporter (fixtures): records validate against the schema", "[health][exporter][fixtures]") {
  uint64_t warnings = 99;
  auto lines = RunOnce({"--lfs-df", HealthFixture("lfs-df.txt"), "--lctl-dl-t", HealthFixture("lctl-dl-t.txt")}, &warnings);
  CHECK(warnings == 0);
  auto kinds = Validate(lines);
  CHECK(kinds["target"] == 13);
  CHECK(kinds["fs"] == 3);
  CHECK(kinds["failover"] == 3);
  CHECK(kinds["oss"] == 5 + 2 + 1);
  CHECK(kinds["iosonar.sampler"] == 3);
  bool seen = false;
  for (const auto& l : lines)
    if (l.find("\"health.oss\":\"10.0.1.3\"") != std::string::npos) {
      seen = true;
      CHECK(l.find("\"health.overloaded\":true") != std::string::npos);
      CHECK(l.find("\"health.overload_factor\":2") != std::string::npos);
      CHECK(l.find("\"health.targets\":\"OST0002,OST0003\"") != std::string::npos);
    }
  CHECK(seen);
}

TEST_CASE("health exporter (real capture): records from the Edison captures validate against the schema", "[health][exporter][real-capture]") {
  if (Inputs().empty()) {
    WARN(test::RealCapturesSkipped("the health exporter on the Edison captures"));
    return;
  }
  uint64_t warnings = 99;
  auto lines = RunOnce({"--lfs-df", Inputs() + "/lfs-df.txt", "--lctl-dl-t", Inputs() + "/lctl-dl-t.txt"}, &warnings);
  CHECK(warnings == 0);
  auto kinds = Validate(lines);
  CHECK(kinds["target"] == 340);
  CHECK(kinds["fs"] == 4);
  CHECK(kinds["failover"] == 4);
  CHECK(kinds["oss"] == 23 + 36 + 246 + 24);
  CHECK(kinds["iosonar.sampler"] == 3);
  bool seen = false;
  for (const auto& l : lines)
    if (l.find("\"health.oss\":\"10.100.101.7\"") != std::string::npos) {
      seen = true;
      CHECK(l.find("\"health.overloaded\":true") != std::string::npos);
      CHECK(l.find("\"health.overload_factor\":2") != std::string::npos);
      CHECK(l.find("\"health.targets\":\"OST0002,OST0003\"") != std::string::npos);
    }
  CHECK(seen);
}

TEST_CASE("health exporter: cron snapshots are stamped with their epoch, bad sources fail in the data", "[health][exporter]") {
  test::TempDir d;
  test::WriteFile(d / "df.txt",
                  "BEGIN 1489998203\n"
                  "fs-OST0000_UUID 100 50 50 50% /m[OST:0]\n"
                  "fs-OST0001_UUID 100 x 50 50% /m[OST:1]\n");
  uint64_t warnings = 0;
  auto lines = RunOnce({"--lfs-df", d / "df.txt", "--lctl-dl-t", d / "missing.txt"}, &warnings);
  CHECK(warnings == 1);
  auto kinds = Validate(lines);
  CHECK(kinds["target"] == 1);
  CHECK(kinds["fs"] == 1);
  CHECK(lines.at(0).find("\"@timestamp\":\"2017-03-20T08:23:23.000Z\"") != std::string::npos);
  bool failed = false, warned = false;
  for (const auto& l : lines) {
    if (l.find("\"sampler.source\":\"lctl_dl_t\"") != std::string::npos) {
      failed = l.find("\"sampler.ok\":false") != std::string::npos && l.find("missing.txt") != std::string::npos;
    }
    if (l.find("\"sampler.source\":\"lfs_df\"") != std::string::npos)
      warned = l.find("\"sampler.warnings\":1") != std::string::npos && l.find("\"sampler.ok\":true") != std::string::npos;
  }
  CHECK(failed);
  CHECK(warned);
}

TEST_CASE("lctl dl (the devices file, real captures) of Lustre 1.8 to 2.9 servers and clients parses, no NID is a warning", "[health][real-capture]") {
  std::string data = test::SharedDataDir();
  if (data.empty()) {
    WARN(test::RealCapturesSkipped("the captured devices files"));
    return;
  }
  const std::string root = data + "/lustre/whamcloud-integrated-manager-for-lustre/chroma-agent/tests/data/lustre_versions";
  int files = 0;
  for (const char* rel : {"1.8.7.80/mds_mgs", "2.0.66/client", "2.0.66/mds_mgs", "2.0.66/oss", "2.5.0/mds", "2.5.0/oss"}) {
    std::string path = root + "/" + rel + "/proc/fs/lustre/devices";
    std::string text, err;
    if (!ReadSource(path, &text, &err)) continue;
    ++files;
    INFO(path);
    LctlDl dl = ParseLctlDlT(text);
    REQUIRE(dl.snapshots.size() == 1);
    size_t lines = 0, osc = 0;
    for (char c : text) lines += c == '\n';
    for (const auto& d : dl.snapshots[0].devices) {
      CHECK(d.nid.empty());  // `lctl dl` without -t
      if (d.role == "osc") {
        ++osc;
        CHECK(d.target.rfind("lustre-OST", 0) == 0);
        CHECK(d.fs == "lustre");
      }
    }
    CHECK(dl.snapshots[0].devices.size() == lines);  // every device line kept
    CHECK(dl.warnings.count == osc);                 // one "without a NID" warning per osc
    for (const auto& f : GetFailovers(dl.snapshots[0])) CHECK(f.oss.empty());
  }
  CHECK(files == 6);
}
