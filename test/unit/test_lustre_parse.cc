// Lustre parsers on the project's own fixtures (test/fixtures/lustre: one
// hand-written tree per format generation, 1.8 to 2.15 and a DDN 2.14 lctl
// dump), every file and golden values read by hand from them; on bad input;
// and, where the real captures are (../shared/data/lustre, walked from
// MANIFEST.tsv), on every captured stats-type file (the real-capture checks).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "exporters/lustre/parse.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar::lustre;
using iosonar::test::ReadFile;
using iosonar::test::RealCapturesSkipped;
using iosonar::test::SharedDataDir;

namespace {

std::string LustreData() {
  std::string d = SharedDataDir();
  return d.empty() ? d : d + "/lustre";
}

const StatsCounter* Counter(const ParsedStats& s, std::string_view name, int nth = 0) {
  for (const auto& c : s.counters)
    if (c.name == name && nth-- == 0) return &c;
  return nullptr;
}

const HistBucket* Bucket(const ParsedHist& h, std::string_view key, uint64_t bucket) {
  const Histogram* hist = h.Find(key);
  if (!hist) return nullptr;
  for (uint32_t i = 0; i < hist->n; ++i)
    if (h.buckets[hist->first + i].bucket == bucket) return &h.buckets[hist->first + i];
  return nullptr;
}

enum class Kind { kStats, kJob, kBrw, kRpc, kDump, kNone };

Kind KindOf(const std::string& k) {
  if (k == "OSS stats (obdfilter)" || k == "MDS md_stats" || k == "llite stats" || k == "ptlrpc service stats" ||
      k == "client md_stats (mdc)" || k == "client md_stats (lmv)" || k == "MGS md_stats" || k == "MDS/MDT stats" ||
      k == "osd stats" || k == "per-export stats" || k.rfind("client import stats", 0) == 0 ||
      k == "quota stats (lquota)")
    return Kind::kStats;
  if (k.rfind("job_stats", 0) == 0) return Kind::kJob;
  if (k.rfind("brw_stats", 0) == 0) return Kind::kBrw;
  if (k.rfind("rpc_stats", 0) == 0) return Kind::kRpc;
  if (k.rfind("lctl get_param dump", 0) == 0) return Kind::kDump;
  return Kind::kNone;
}

std::string Issues(const std::vector<Issue>& v) {
  std::string s;
  for (const auto& i : v) s += "  line " + std::to_string(i.line) + ": " + i.message + "\n";
  return s;
}

// Parses one lctl dump parameter by its name's last component.
size_t ParseDumpParam(const LctlParam& p, std::string* what) {
  std::string_view n = p.name;
  auto dot = n.rfind('.');
  std::string_view last = dot == std::string_view::npos ? n : n.substr(dot + 1);
  static ParsedStats st;
  static ParsedJobStats js;
  static ParsedHist h;
  size_t k = 0;
  if (last == "stats" || last == "md_stats") {
    k = ParseStats(p.value, &st);
    if (k) *what = Issues(st.issues);
  } else if (last == "job_stats") {
    k = ParseJobStats(p.value, &js);
    if (k) *what = Issues(js.issues);
  } else if (last == "brw_stats") {
    k = ParseBrwStats(p.value, &h);
    if (k) *what = Issues(h.issues);
  } else if (last == "rpc_stats") {
    k = ParseRpcStats(p.value, &h);
    if (k) *what = Issues(h.issues);
  }
  return k;
}

}  // namespace

TEST_CASE("lustre parsers (real captures): every captured stats, job_stats, brw_stats, rpc_stats file and lctl dump", "[lustre][real-capture]") {
  const std::string dir = LustreData();
  if (dir.empty()) {
    WARN(RealCapturesSkipped("every captured Lustre statistics file"));
    return;
  }
  auto manifest = iosonar::test::SplitLines(ReadFile(dir + "/MANIFEST.tsv"));
  REQUIRE(manifest.size() > 100);
  std::map<std::string, int> parsed;  // kind -> files
  int missing = 0, dump_params = 0;
  ParsedStats st;
  ParsedJobStats js;
  ParsedHist h;
  std::vector<LctlParam> params;
  std::vector<Issue> dump_issues;
  for (size_t li = 1; li < manifest.size(); ++li) {
    std::vector<std::string> col;
    size_t a = 0;
    const std::string& row = manifest[li];
    while (true) {
      size_t t = row.find('\t', a);
      col.push_back(row.substr(a, t == std::string::npos ? std::string::npos : t - a));
      if (t == std::string::npos) break;
      a = t + 1;
    }
    if (col.size() < 6) continue;
    Kind kind = KindOf(col[4]);
    if (kind == Kind::kNone) continue;
    const std::string path = dir + "/" + col[0] + "/" + col[1];
    if (access(path.c_str(), R_OK) != 0) {
      ++missing;  // e.g. the GSI files, not included in this copy
      continue;
    }
    const std::string text = ReadFile(path);
    // Files known to be edited by their authors carry deliberate oddities.
    const bool edited = col[5].find("hand-edited") != std::string::npos ||
                        path.find("ddn145_stats") != std::string::npos;
    INFO(path);
    size_t issues = 0;
    std::string what;
    switch (kind) {
      case Kind::kStats:
        issues = ParseStats(text, &st);
        what = Issues(st.issues);
        if (col[4] == "OSS stats (obdfilter)" || col[4] == "MDS md_stats" || col[4] == "llite stats")
          CHECK((text.empty() || st.snapshot_ns > 0));
        break;
      case Kind::kJob:
        issues = ParseJobStats(text, &js);
        what = Issues(js.issues);
        break;
      case Kind::kBrw:
        issues = ParseBrwStats(text, &h);
        what = Issues(h.issues);
        if (!text.empty()) CHECK(!h.hists.empty());
        break;
      case Kind::kRpc:
        issues = ParseRpcStats(text, &h);
        what = Issues(h.issues);
        if (!text.empty()) CHECK(!h.hists.empty());
        break;
      case Kind::kDump: {
        issues = ParseLctlDump(text, &params, &dump_issues);
        what = Issues(dump_issues);
        dump_issues.clear();
        for (const auto& p : params) {
          std::string pw;
          size_t k = ParseDumpParam(p, &pw);
          ++dump_params;
          if (k && !edited) {
            INFO(std::string(p.name) + ":\n" + pw);
            CHECK(k == 0);
          }
        }
        break;
      }
      case Kind::kNone: break;
    }
    if (!edited) {
      INFO(what);
      CHECK(issues == 0);
    }
    ++parsed[col[4]];
  }
  std::string summary;
  int total = 0;
  for (auto& [k, n] : parsed) {
    summary += k + ": " + std::to_string(n) + "\n";
    total += n;
  }
  INFO(summary);
  CHECK(parsed["OSS stats (obdfilter)"] >= 30);
  CHECK(parsed["MDS md_stats"] >= 25);
  CHECK(parsed["llite stats"] >= 4);
  CHECK(parsed["brw_stats"] >= 30);
  CHECK(parsed["rpc_stats (osc)"] >= 15);
  CHECK(parsed["job_stats (OSS)"] >= 10);
  CHECK(dump_params > 500);
  WARN("lustre captures parsed: " << total << " files (" << missing << " listed but absent), " << dump_params
                                  << " lctl dump parameters");
}

TEST_CASE("lustre ParseStats (real captures): golden values from real captures", "[lustre][real-capture]") {
  const std::string dir = LustreData();
  if (dir.empty()) {
    WARN(RealCapturesSkipped("golden values of captured counter files"));
    return;
  }
  ParsedStats s;
  std::string keep;  // the parsed text must outlive the result
  SECTION("2.10.1 obdfilter stats: 3 value columns, statfs twice") {
    keep = ReadFile(dir + "/hp-lustre_exporter/proc/fs/lustre/obdfilter/lustrefs-OST0000/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.snapshot_ns == 1510782606789180921LL);
    CHECK(s.start_ns == -1);
    const auto* w = Counter(s, "write_bytes");
    REQUIRE(w);
    CHECK(w->samples == 4298711);
    CHECK(w->sum == 16552048697344ULL);
    CHECK(w->unit == "bytes");
    CHECK(w->nvals == 3);
    REQUIRE(Counter(s, "statfs", 1));
    CHECK(Counter(s, "statfs", 0)->samples == 35359);
    CHECK(Counter(s, "statfs", 1)->samples == 124430);
    CHECK(Counter(s, "punch")->samples == 57);
    CHECK(Counter(s, "punch")->nvals == 0);
  }
  SECTION("legacy secs.usecs with an unpadded fraction") {
    keep = ReadFile(dir + "/hp-lustre_exporter-legacy-2017/proc/fs/lustre/obdfilter/lustrefs-OST0000/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.snapshot_ns == 1497639750012141000LL);  // .12141 is 12141 µs, not 0.12141 s
    CHECK(Counter(s, "write_bytes")->sum == 51473433403392ULL);
  }
  SECTION("2.15.4: start_time, elapsed_time, 4 columns, [usecs] ops, sumsq above 2^63") {
    keep = ReadFile(dir + "/llnl-lmt/test/lustre_versions/2.15.4_1/proc/fs/lustre/obdfilter/lflood-OST0001/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.start_ns > 0);
    CHECK(s.elapsed_ns > 0);
    CHECK(s.snapshot_ns - s.start_ns > 0);
    const auto* r = Counter(s, "read_bytes");
    REQUIRE(r);
    CHECK(r->nvals == 4);
    const auto* d = Counter(s, "destroy");
    REQUIRE(d);
    CHECK(d->unit == "usecs");
  }
  SECTION("2.14 ddn194: a wrapped negative sum reads as its 64-bit pattern") {
    std::vector<LctlParam> params;
    std::string text = ReadFile(dir + "/whamcloud-lustrefs-exporter/lustre-collector/src/fixtures/valid/lustre-2.14.0_ddn194/2.14.0_ddn194.txt");
    ParseLctlDump(text, &params, nullptr);
    bool found = false;
    for (const auto& p : params) {
      if (p.name.find(".stats") == std::string_view::npos) continue;
      ParseStats(p.value, &s);
      for (const auto& c : s.counters)
        if (c.name == "write" && c.samples == 186442470) {
          CHECK(c.sum == static_cast<uint64_t>(int64_t{-823495890607571055}));
          found = true;
        }
    }
    CHECK(found);
  }
}

TEST_CASE("lustre ParseStats (real captures): first line of the 2.15.4 file read by hand", "[lustre][real-capture]") {
  const std::string dir = LustreData();
  if (dir.empty()) {
    WARN(RealCapturesSkipped("the captured 2.15.4 obdfilter stats"));
    return;
  }
  ParsedStats s;
  const std::string text = ReadFile(dir + "/llnl-lmt/test/lustre_versions/2.15.4_1/proc/fs/lustre/obdfilter/lflood-OST0001/stats");
  ParseStats(text, &s);
  // The file begins with these three headers; read_bytes is the file's 4th line.
  CHECK(s.snapshot_ns == 1704924117040584137LL);
  CHECK(s.start_ns == 1704403917045921397LL);
  CHECK(s.elapsed_ns == 520199994662740LL);
  REQUIRE(Counter(s, "read_bytes"));
  CHECK(Counter(s, "read_bytes")->samples == 1705491);
  CHECK(Counter(s, "read_bytes")->sum == 1788336930816ULL);
}

TEST_CASE("lustre ParseJobStats (real captures): 2.10 and DDN 2.14 formats, quoted ids", "[lustre][real-capture]") {
  const std::string dir = LustreData();
  if (dir.empty()) {
    WARN(RealCapturesSkipped("the captured 2.10 and DDN 2.14 job_stats"));
    return;
  }
  ParsedJobStats j;
  const std::string hp = ReadFile(dir + "/hp-lustre_exporter/proc/fs/lustre/obdfilter/lustrefs-OST0000/job_stats");
  REQUIRE(ParseJobStats(hp, &j) == 0);
  REQUIRE(!j.jobs.empty());
  CHECK(j.jobs[0].job_id == "24");
  CHECK(j.jobs[0].snapshot_ns == 1510782606000000000LL);
  bool seen = false;
  for (uint32_t i = 0; i < j.jobs[0].n_ops; ++i) {
    const JobOp& op = j.ops[j.jobs[0].first_op + i];
    if (op.name == "write_bytes") {
      CHECK(op.samples == 64575);
      CHECK(op.sum == 215147593728ULL);
      CHECK(op.unit == "bytes");
      seen = true;
    }
  }
  CHECK(seen);

  std::vector<LctlParam> params;
  std::string text = ReadFile(dir + "/whamcloud-lustrefs-exporter/lustrefs-exporter/fixtures/jobstats_only/2.14.0_162.txt");
  ParseLctlDump(text, &params, nullptr);
  REQUIRE(!params.empty());
  CHECK(params[0].name == "obdfilter.es01a-OST0001.job_stats");
  REQUIRE(ParseJobStats(params[0].value, &j) == 0);
  REQUIRE(!j.jobs.empty());
  CHECK(j.jobs[0].job_id == "SLURM_JOB10:0:es18kxe-co-client");
  CHECK(j.jobs[0].snapshot_ns == 1723114647887515895LL);
  std::map<std::string_view, JobOp> ops;
  for (uint32_t i = 0; i < j.jobs[0].n_ops; ++i) ops[j.ops[j.jobs[0].first_op + i].name] = j.ops[j.jobs[0].first_op + i];
  CHECK(ops["write_bytes"].samples == 861);
  CHECK(ops["write_bytes"].sum == 11025514496ULL);
  CHECK(ops["punch"].samples == 85);
  CHECK(ops["punch"].unit == "usecs");
  CHECK(ops.count("prealloc") == 1);
}

TEST_CASE("lustre ParseJobStats: empty job_id, empty file, garbage", "[lustre]") {
  ParsedJobStats j;
  CHECK(ParseJobStats("job_stats:\n", &j) == 0);
  CHECK(j.jobs.empty());
  CHECK(ParseJobStats("", &j) == 0);
  const char* t =
      "job_stats:\n"
      "- job_id:\n"
      "  snapshot_time:   1510782606\n"
      "  read_bytes:      { samples:  5, unit: bytes, min: 1, max: 1, sum: 5 }\n"
      "- job_id:          'dd.0'\n"
      "  write_bytes:     { samples:  2, unit: bytes, min: 1, max: 1, sum: 10, hist: { 4K: 1, 8K: { x: 1 } } }\n"
      "  open:            { samples:  x, unit: reqs }\n"
      "  close:           { samples:  3, unit: reqs\n";
  CHECK(ParseJobStats(t, &j) == 3);  // empty id, non-numeric samples, missing '}'
  REQUIRE(j.jobs.size() == 1);
  CHECK(j.jobs[0].job_id == "dd.0");
  REQUIRE(j.jobs[0].n_ops == 1);
  CHECK(j.ops[0].sum == 10);
  CHECK(j.issues[0].line == 2);
}

TEST_CASE("lustre ParseBrwStats and ParseRpcStats (real captures): golden values", "[lustre][real-capture]") {
  const std::string dir = LustreData();
  if (dir.empty()) {
    WARN(RealCapturesSkipped("the captured brw_stats and rpc_stats"));
    return;
  }
  ParsedHist h;
  // obdfilter/<tgt>/brw_stats is a symlink to osd-zfs on 2.10 (this copy of the
  // capture stores the link's text); the data is in osd-zfs.
  const std::string brw = ReadFile(dir + "/hp-lustre_exporter/proc/fs/lustre/osd-zfs/lustrefs-OST0000/brw_stats");
  ParseBrwStats(brw, &h);
  INFO((h.issues.empty() ? std::string() : h.issues[0].message));
  REQUIRE(h.issues.empty());
  CHECK(h.snapshot_ns == 1510782606797216394LL);
  REQUIRE(Bucket(h, "pages", 1024));
  CHECK(Bucket(h, "pages", 1024)->write == 4059303);
  CHECK(Bucket(h, "pages", 1)->read == 13);
  CHECK(Bucket(h, "io_size", 4ULL << 20)->write == 4059303);
  CHECK(Bucket(h, "discont_pages", 31)->write == 4293275);
  CHECK(Bucket(h, "in_flight", 10)->write == 3);
  CHECK(h.Find("io_time_ms")->n == 1);

  // 1.8.3: space padded rows.
  const std::string brw18 = ReadFile(dir + "/llnl-lmt/test/lustre_versions/1.8.3/proc/fs/lustre/obdfilter/lc1-OST0000/brw_stats");
  REQUIRE(ParseBrwStats(brw18, &h) == 0);
  CHECK(h.snapshot_ns == 1284151749963667000LL);
  CHECK(Bucket(h, "pages", 1)->read == 683431);
  CHECK(Bucket(h, "pages", 16)->write == 43603);

  const std::string rpc = ReadFile(dir + "/hp-lustre_exporter/proc/fs/lustre/osc/lustrefs-OST0000-osc-ffff88105db50000/rpc_stats");
  REQUIRE(ParseRpcStats(rpc, &h) == 0);
  CHECK(h.write_in_flight == 6);
  CHECK(h.read_in_flight == 0);
  CHECK(h.pending_write_pages == 1244);
  CHECK(Bucket(h, "pages", 1024)->write == 16389010);
  CHECK(Bucket(h, "in_flight", 3)->write == 4520192);
  CHECK(Bucket(h, "offset", 134217728)->write == 8127518);
}

namespace {

std::string Fixture(const std::string& rel) { return ReadFile(iosonar::test::FixturesDir() + "/lustre/" + rel); }

}  // namespace

TEST_CASE("lustre parsers: every fixture file of every version parses without an issue", "[lustre][fixtures]") {
  namespace fs = std::filesystem;
  const std::string root = iosonar::test::FixturesDir() + "/lustre";
  REQUIRE(fs::is_directory(root));
  std::map<std::string, int> kinds;     // file kind -> files
  std::set<std::string> versions;       // top-level folders that had files
  int dump_params = 0;
  ParsedStats st;
  ParsedJobStats js;
  ParsedHist h;
  std::vector<LctlParam> params;
  std::vector<Issue> dump_issues;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;  // (symbolic links to files are regular files too)
    const std::string path = e.path().string();
    const std::string name = e.path().filename().string();
    if (name == "README.md") continue;
    const std::string text = ReadFile(path);
    INFO(path);
    size_t issues = 0;
    std::string what;
    if (name == "stats" || name == "md_stats") {
      issues = ParseStats(text, &st);
      what = Issues(st.issues);
      CHECK(st.snapshot_ns > 0);
      CHECK(!st.counters.empty());
    } else if (name == "job_stats") {
      issues = ParseJobStats(text, &js);
      what = Issues(js.issues);
    } else if (name == "brw_stats") {
      issues = ParseBrwStats(text, &h);
      what = Issues(h.issues);
      CHECK(h.snapshot_ns > 0);
      CHECK(!h.hists.empty());
    } else if (name == "rpc_stats") {
      issues = ParseRpcStats(text, &h);
      what = Issues(h.issues);
      CHECK(h.snapshot_ns > 0);
      CHECK(!h.hists.empty());
    } else if (name.ends_with(".txt")) {  // lctl get_param dumps
      issues = ParseLctlDump(text, &params, &dump_issues);
      what = Issues(dump_issues);
      dump_issues.clear();
      for (const auto& p : params) {
        std::string pw;
        INFO(std::string(p.name));
        CHECK(ParseDumpParam(p, &pw) == 0);
        ++dump_params;
      }
    } else {
      FAIL("a fixture file of no known kind: " << path);
    }
    INFO(what);
    CHECK(issues == 0);
    ++kinds[name.ends_with(".txt") ? std::string("lctl dump") : name];
    versions.insert(fs::relative(e.path(), root).begin()->string());
  }
  CHECK(versions == std::set<std::string>{"1.8", "2.3", "2.10", "2.12", "2.15", "2.14-ddn"});
  CHECK(kinds["stats"] >= 16);
  CHECK(kinds["md_stats"] >= 8);
  CHECK(kinds["job_stats"] >= 8);
  CHECK(kinds["brw_stats"] >= 16);
  CHECK(kinds["rpc_stats"] >= 8);
  CHECK(kinds["lctl dump"] == 2);
  CHECK(dump_params >= 30);
}

TEST_CASE("lustre ParseStats: each version's counter files, golden values read from the fixtures", "[lustre][fixtures]") {
  ParsedStats s;
  std::string keep;  // the parsed text must outlive the result
  SECTION("1.8: secs.usecs printed unpadded, [usec] with four values, [pages]") {
    keep = Fixture("1.8/proc/fs/lustre/obdfilter/lus18-OST0000/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.snapshot_ns == 1300000000004567000LL);  // ".4567" is 4567 us, not 0.4567 s
    CHECK(s.start_ns == -1);
    REQUIRE(Counter(s, "get_page"));
    CHECK(Counter(s, "get_page")->unit == "usec");
    CHECK(Counter(s, "get_page")->nvals == 4);
    CHECK(Counter(s, "get_page")->sum == 987654);
    CHECK(Counter(s, "cache_hit")->unit == "pages");
    CHECK(Counter(s, "write_bytes")->samples == 2400);
    CHECK(Counter(s, "write_bytes")->sum == 2306867200ULL);
    keep = Fixture("1.8/proc/fs/lustre/llite/lus18-ffff810012345600/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(Counter(s, "open")->unit == "regs");  // Lustre's own spelling
  }
  SECTION("2.3: secs.usecs with six digits") {
    keep = Fixture("2.3/proc/fs/lustre/obdfilter/lus23-OST0000/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.snapshot_ns == 1350000000250000000LL);
    CHECK(Counter(s, "read_bytes")->sum == 524288000ULL);
    CHECK(Counter(s, "set_info_async")->samples == 1);
  }
  SECTION("2.10: secs.nsecs, bytes with three values, statfs twice") {
    keep = Fixture("2.10/proc/fs/lustre/obdfilter/lus210-OST0000/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.snapshot_ns == 1500000000123456789LL);
    const auto* w = Counter(s, "write_bytes");
    REQUIRE(w);
    CHECK(w->samples == 3000);
    CHECK(w->sum == 6291456000ULL);
    CHECK(w->unit == "bytes");
    CHECK(w->nvals == 3);
    REQUIRE(Counter(s, "statfs", 1));
    CHECK(Counter(s, "statfs", 0)->samples == 100);
    CHECK(Counter(s, "statfs", 1)->samples == 400);
    CHECK(Counter(s, "punch")->samples == 5);
    CHECK(Counter(s, "punch")->nvals == 0);
    CHECK(Counter(s, "sync") == nullptr);  // printed only once it is not zero (next/)
  }
  SECTION("2.12: min max sum on some [reqs] lines") {
    keep = Fixture("2.12/proc/fs/lustre/mdt/lus212-MDT0000/md_stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(Counter(s, "open")->nvals == 0);
    CHECK(Counter(s, "close")->nvals == 3);
    CHECK(Counter(s, "close")->sum == 128);
  }
  SECTION("2.15: start_time and elapsed_time, four values everywhere, ops in [usecs]") {
    keep = Fixture("2.15/proc/fs/lustre/obdfilter/lus215-OST0000/stats");
    REQUIRE(ParseStats(keep, &s) == 0);
    CHECK(s.snapshot_ns == 1704900000040584137LL);
    CHECK(s.start_ns == 1704400000045921397LL);
    CHECK(s.elapsed_ns == s.snapshot_ns - s.start_ns);
    const auto* r = Counter(s, "read_bytes");
    REQUIRE(r);
    CHECK(r->nvals == 4);
    CHECK(r->sum == 17882415104ULL);
    CHECK(Counter(s, "destroy")->unit == "usecs");
    CHECK(Counter(s, "read")->unit == "usecs");  // the latency line next to read_bytes
  }
  SECTION("DDN 2.14 (an lctl dump): a wrapped negative sum reads as its 64-bit pattern") {
    std::vector<LctlParam> params;
    keep = Fixture("2.14-ddn/lctl-get-param.txt");
    ParseLctlDump(keep, &params, nullptr);
    bool found = false;
    for (const auto& p : params)
      if (p.name == "obdfilter.exa214-OST0000.stats") {
        REQUIRE(ParseStats(p.value, &s) == 0);
        CHECK(s.start_ns == 1741850000573307453LL);
        const auto* w = Counter(s, "write");
        REQUIRE(w);
        CHECK(w->samples == 1864424);
        CHECK(w->sum == static_cast<uint64_t>(int64_t{-823495890607571055}));
        found = true;
      }
    CHECK(found);
  }
}

TEST_CASE("lustre ParseJobStats: 2.3, 2.10, 2.15 and DDN 2.14 formats from the fixtures", "[lustre][fixtures]") {
  ParsedJobStats j;
  auto ops_of = [&](size_t k) {
    std::map<std::string_view, JobOp> m;
    for (uint32_t i = 0; i < j.jobs[k].n_ops; ++i) m[j.ops[j.jobs[k].first_op + i].name] = j.ops[j.jobs[k].first_op + i];
    return m;
  };
  const std::string t23 = Fixture("2.3/proc/fs/lustre/obdfilter/lus23-OST0000/job_stats");
  REQUIRE(ParseJobStats(t23, &j) == 0);
  REQUIRE(j.jobs.size() == 2);
  CHECK(j.jobs[0].job_id == "cp.0");
  CHECK(j.jobs[0].snapshot_ns == 1349999992000000000LL);  // a bare integer
  auto o23 = ops_of(1);
  CHECK(o23["read"].unit == "bytes");  // 2.3 names the byte counters read/write
  CHECK(o23["read"].samples == 500);
  CHECK(o23["read"].sum == 524288000ULL);
  CHECK(o23["setattr"].unit == "reqs");

  const std::string t210 = Fixture("2.10/proc/fs/lustre/obdfilter/lus210-OST0000/job_stats");
  REQUIRE(ParseJobStats(t210, &j) == 0);
  REQUIRE(j.jobs.size() == 3);
  CHECK(j.jobs[0].job_id == "1001");
  CHECK(j.jobs[0].snapshot_ns == 1500000000000000000LL);
  auto o210 = ops_of(0);
  CHECK(o210["write_bytes"].samples == 1000);
  CHECK(o210["write_bytes"].sum == 2097152000ULL);
  CHECK(o210["write_bytes"].unit == "bytes");
  CHECK(o210["punch"].samples == 2);
  CHECK_FALSE(o210["punch"].has_sum);
  CHECK(j.jobs[2].job_id == "dd.1002");
  CHECK(ParseJobStats(Fixture("2.10/proc/fs/lustre/obdfilter/lus210-OST0001/job_stats"), &j) == 0);
  CHECK(j.jobs.empty());  // an idle target: "job_stats:" only

  const std::string t215 = Fixture("2.15/proc/fs/lustre/obdfilter/lus215-OST0000/job_stats");
  REQUIRE(ParseJobStats(t215, &j) == 0);
  REQUIRE(j.jobs.size() == 2);
  CHECK(j.jobs[0].job_id == "SLURM_JOB7:0:cn0101");  // quoted (it has ':'), quotes removed
  CHECK(j.jobs[0].snapshot_ns == 1704900000887515895LL);
  CHECK(j.jobs[1].job_id == "SLURM_JOB8");           // plain ids stay unquoted in the same file
  auto o215 = ops_of(0);
  CHECK(o215["write_bytes"].sum == 902823936ULL);    // a hist map after sumsq changes nothing
  CHECK(o215["write"].unit == "usecs");
  CHECK(o215.count("prealloc") == 1);

  std::vector<LctlParam> params;
  const std::string dump = Fixture("2.14-ddn/lctl-get-param.txt");
  ParseLctlDump(dump, &params, nullptr);
  std::map<std::string_view, std::string_view> by_name;
  for (const auto& p : params) by_name[p.name] = p.value;
  REQUIRE(by_name.count("obdfilter.exa214-OST0000.job_stats"));
  REQUIRE(ParseJobStats(by_name["obdfilter.exa214-OST0000.job_stats"], &j) == 0);
  REQUIRE(j.jobs.size() == 3);
  CHECK(j.jobs[0].job_id == "SLURM_JOB10:0:cn-0042");
  CHECK(j.jobs[1].job_id == "SLURM_JOB10");
  CHECK(j.jobs[2].job_id == "node_exporter:989:oss-1");
  auto oddn = ops_of(0);
  CHECK(oddn["write_bytes"].samples == 861);
  CHECK(oddn["write_bytes"].sum == 11025514496ULL);
  CHECK(oddn["punch"].samples == 85);
  CHECK(oddn["punch"].unit == "usecs");
  CHECK(by_name["obdfilter.exa214-OST0001.job_stats"] == "job_stats:");  // inline when empty
  REQUIRE(ParseJobStats(by_name["mdt.exa214-MDT0000.job_stats"], &j) == 0);
  REQUIRE(j.jobs.size() == 2);
  auto mdt = ops_of(0);
  CHECK(mdt.size() == 24);  // DDN's MDT op list, parallel_rename_* and migrate included
  CHECK(mdt["statfs"].samples == 326);
}

TEST_CASE("lustre ParseBrwStats and ParseRpcStats: each layout, golden values read from the fixtures", "[lustre][fixtures]") {
  ParsedHist h;
  // 2.10: the OSD's file (obdfilter's brw_stats is a link to it), (secs.nsecs), tabs, K labels.
  const std::string b210 = Fixture("2.10/proc/fs/lustre/obdfilter/lus210-OST0000/brw_stats");
  REQUIRE(ParseBrwStats(b210, &h) == 0);
  CHECK(h.snapshot_ns == 1500000000797216394LL);
  REQUIRE(Bucket(h, "pages", 1024));
  CHECK(Bucket(h, "pages", 1024)->write == 4059300);
  CHECK(Bucket(h, "pages", 1)->read == 13);
  CHECK(Bucket(h, "io_size", 4ULL << 20)->write == 4059300);
  CHECK(Bucket(h, "in_flight", 2)->write == 1298700);
  CHECK(h.Find("io_time_ms")->n == 2);
  CHECK(h.Find("discont_blocks") == nullptr);  // ZFS OSDs have no block sections

  // 1.8: space-padded rows, (secs.usecs), the narrow column header, ldiskfs's sections.
  const std::string b18 = Fixture("1.8/proc/fs/lustre/obdfilter/lus18-OST0000/brw_stats");
  REQUIRE(ParseBrwStats(b18, &h) == 0);
  CHECK(h.snapshot_ns == 1300000000004571000LL);
  CHECK(Bucket(h, "pages", 1)->read == 300);
  CHECK(Bucket(h, "pages", 256)->write == 2190);
  CHECK(Bucket(h, "discont_blocks", 1)->read == 10);
  CHECK(Bucket(h, "frags", 2)->write == 50);
  CHECK(Bucket(h, "io_size", 1ULL << 20)->read == 700);

  // 2.15: debugfs, snapshot_time without parentheses and start/elapsed lines.
  const std::string b215 = Fixture("2.15/sys/kernel/debug/lustre/osd-zfs/lus215-OST0000/brw_stats");
  REQUIRE(ParseBrwStats(b215, &h) == 0);
  CHECK(h.snapshot_ns == 1704900000050780452LL);
  CHECK(Bucket(h, "pages", 256)->write == 17040);

  // DDN 2.14 ldiskfs in a dump: "block maps msec" counts maps.
  std::vector<LctlParam> params;
  const std::string dump = Fixture("2.14-ddn/lctl-get-param.txt");
  ParseLctlDump(dump, &params, nullptr);
  bool found = false;
  for (const auto& p : params)
    if (p.name == "osd-ldiskfs.exa214-OST0000.brw_stats") {
      REQUIRE(ParseBrwStats(p.value, &h) == 0);
      CHECK(Bucket(h, "pages", 4096)->write == 1841636);
      CHECK(Bucket(h, "block_maps_ms", 2)->write == 3);
      found = true;
    }
  CHECK(found);

  // rpc_stats: 2.10's header gauges, 1.8's dio lines (ignored), an mdc's single "modify" column.
  const std::string r210 = Fixture("2.10/proc/fs/lustre/osc/lus210-OST0000-osc-ffff88105db50000/rpc_stats");
  REQUIRE(ParseRpcStats(r210, &h) == 0);
  CHECK(h.read_in_flight == 0);
  CHECK(h.write_in_flight == 6);
  CHECK(h.pending_write_pages == 1244);
  CHECK(h.pending_read_pages == 0);
  CHECK(Bucket(h, "pages", 1024)->write == 16389010);
  CHECK(Bucket(h, "in_flight", 3)->write == 4520192);
  CHECK(Bucket(h, "offset", 0)->write == 9092148);
  const std::string r18 = Fixture("1.8/proc/fs/lustre/osc/lus18-OST0000-osc-ffff810012345600/rpc_stats");
  REQUIRE(ParseRpcStats(r18, &h) == 0);
  CHECK(h.snapshot_ns == 1300000000910000000LL);
  CHECK(h.write_in_flight == 0);
  CHECK(h.pending_write_pages == 208);
  CHECK(Bucket(h, "pages", 256)->write == 300);
  const std::string mdc = Fixture("2.10/proc/fs/lustre/mdc/lus210-MDT0000-mdc-ffff88105db50000/rpc_stats");
  REQUIRE(ParseRpcStats(mdc, &h) == 0);
  CHECK(Bucket(h, "in_flight", 1) != nullptr);
}

TEST_CASE("lustre ParseLctlDump: the DDN 2.14 fixture's multi-line, inline, IPv6 and unsupported values", "[lustre][fixtures]") {
  std::vector<LctlParam> p;
  std::vector<Issue> issues;
  const std::string dump = Fixture("2.14-ddn/lctl-get-param.txt");
  REQUIRE(ParseLctlDump(dump, &p, &issues) == 0);
  std::map<std::string_view, std::string_view> v;
  for (const auto& x : p) v[x.name] = x.value;
  CHECK(v["memused"] == "5243093513");
  CHECK(v["health_check"] == "healthy");
  CHECK(v["mdt.exa214-MDT0000.exports.0@lo.uuid"] == "exa214-MDT0000-lwp-OST0000_UUID\nexa214-MDT0000-lwp-MDT0000_UUID");
  CHECK(v["mdt.exa214-MDT0000.recovery_status"] == "status: COMPLETE\nrecovery_start: 1741850010\nrecovery_duration: 72");
  CHECK(v["quota_slave.acct_project"] == "not supported");
  CHECK(v.count("obdfilter.exa214-OST0000.exports.fd00:172:16:11::5@tcp.stats") == 1);
  CHECK(v["obdfilter.exa214-OST0000.stats"].starts_with("snapshot_time"));
}

TEST_CASE("lustre parsers: bad input is set aside line by line", "[lustre]") {
  ParsedStats s;
  CHECK(ParseStats("", &s) == 0);
  CHECK(ParseStats("snapshot_time 12.5 secs.nsecs\nread_bytes 3 samples [bytes] 1 2 3\n", &s) == 0);
  CHECK(s.snapshot_ns == 12000000005LL);
  const char* bad =
      "snapshot_time   banana secs.nsecs\n"
      "write_bytes     x samples [bytes] 1 2 3\n"
      "punch 5 samples [reqs]\n"
      "getattr 5 samples [reqs] 1\n"
      "create 5 samples [reqs] 1 2 3 4 5 6\n"
      "statfs 99999999999999999999999 samples [reqs]\n"
      "\x01\xff garbage\n"
      "read_bytes 7 samples [bytes] 1 2 -5 18446744073709551615";  // no newline at the end
  CHECK(ParseStats(bad, &s) == 6);
  // Regression (found by fuzz_lustre): five values and no unit overflowed the value array.
  ParsedStats s5;
  CHECK(ParseStats("open 1 samples 1 2 3 4 5\n", &s5) == 1);
  CHECK(s5.counters.empty());
  REQUIRE(s.counters.size() == 2);
  CHECK(s.counters[0].name == "punch");
  CHECK(s.counters[1].sum == static_cast<uint64_t>(-5));
  CHECK(s.issues[1].line == 2);
  CHECK(s.issues[1].message.find("samples not a number") != std::string::npos);

  ParsedHist h;
  CHECK(ParseBrwStats("1:  5 5 5 | 1 1 1\n", &h) == 1);  // row before a title
  CHECK(ParseBrwStats("pages per bulk r/w  rpcs % cum % | rpcs % cum %\n1X: 1 2 3 | 4 5 6\n2: 1 2 3 | x\n", &h) == 2);
  CHECK(h.hists.size() == 1);
  CHECK(h.hists[0].key == "pages");
}

TEST_CASE("lustre ParseTimestamp and ParseLctlDump", "[lustre]") {
  int64_t ns = 0;
  CHECK(ParseTimestamp("1510782606.789180921", "secs.nsecs", &ns));
  CHECK(ns == 1510782606789180921LL);
  CHECK(ParseTimestamp("1418049063.91844", "secs.usecs", &ns));
  CHECK(ns == 1418049063091844000LL);
  CHECK(ParseTimestamp("1381939592", "", &ns));
  CHECK(ns == 1381939592000000000LL);
  CHECK_FALSE(ParseTimestamp("99999999999999999999.1", "secs.nsecs", &ns));
  CHECK_FALSE(ParseTimestamp("1.", "secs.nsecs", &ns));
  CHECK_FALSE(ParseTimestamp("1.2000000", "secs.usecs", &ns));

  std::vector<LctlParam> p;
  std::vector<Issue> issues;
  const char* dump =
      "memused=35\n"
      "obdfilter.fs-OST0000.job_stats=job_stats:\n"
      "mdt.fs-MDT0000.md_stats=\n"
      "snapshot_time 1.000000001 secs.nsecs\n"
      "open 5 samples [reqs]\n"
      "mdt.fs-MDT0002.recovery_status=status: WAITING\n"
      "completed_clients: 0/1\n"
      "obdfilter.es01a-OST0000.exports.fd00:172:16:11::5@tcp.stats=\n"
      "snapshot_time 1.000000001 secs.nsecs";
  ParseLctlDump(dump, &p, &issues);
  REQUIRE(p.size() == 5);
  CHECK(issues.empty());
  CHECK(p[0].value == "35");
  CHECK(p[1].value == "job_stats:");
  CHECK(p[2].value == "snapshot_time 1.000000001 secs.nsecs\nopen 5 samples [reqs]");
  CHECK(p[3].value == "status: WAITING\ncompleted_clients: 0/1");
  CHECK(p[4].name == "obdfilter.es01a-OST0000.exports.fd00:172:16:11::5@tcp.stats");
  CHECK(p[4].value == "snapshot_time 1.000000001 secs.nsecs");
}

namespace {

// ParseJobOps with and without a JobLineCache over the same bodies: the ops
// (down to where their name/unit views point) and issues must be the same.
void CheckCacheChangesNothing(const std::vector<std::string>& texts, JobLineCache* cache, size_t* bodies, size_t* ops_seen) {
  std::vector<JobSpan> spans;
  std::vector<Issue> idx_issues, ia, ib;
  std::vector<JobOp> a, b;
  for (const std::string& text : texts) {
    idx_issues.clear();
    IndexJobStats(text, &spans, &idx_issues);
    for (const JobSpan& s : spans) {
      a.clear();
      b.clear();
      ia.clear();
      ib.clear();
      const size_t na = ParseJobOps(s.body, s.body_line, &a, &ia);
      const size_t nb = ParseJobOps(s.body, s.body_line, &b, &ib, cache);
      INFO("job " << s.job_id << " line " << s.line);
      REQUIRE(na == nb);
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].name.data() == b[i].name.data());
        CHECK(a[i].name.size() == b[i].name.size());
        CHECK(a[i].unit.data() == b[i].unit.data());
        CHECK(a[i].unit.size() == b[i].unit.size());
        CHECK(a[i].samples == b[i].samples);
        CHECK(a[i].sum == b[i].sum);
        CHECK(a[i].has_sum == b[i].has_sum);
      }
      REQUIRE(ia.size() == ib.size());
      for (size_t i = 0; i < ia.size(); ++i) {
        CHECK(ia[i].line == ib[i].line);
        CHECK(ia[i].message == ib[i].message);
      }
      ++*bodies;
      *ops_seen += a.size();
    }
  }
}

}  // namespace

TEST_CASE("lustre ParseJobOps: a JobLineCache gives the same result as none (fixtures, and captures where present)", "[lustre]") {
  // Written here: repeated, changed, damaged, blank and unterminated lines,
  // then the same text mutated byte by byte (seeded) so that lines differ
  // from the cached ones in every way.
  std::string base =
      "job_stats:\n"
      "- job_id:          \"SLURM_JOB1:0:node001\"\n"
      "  snapshot_time:   1723114647.887515895 secs.nsecs\n"
      "  read_bytes:      { samples:           0, unit: bytes, min:    4096, max: 16777216, sum:                0, sumsq: 0, hist: { 4K: 1 } }\n"
      "  write_bytes:     { samples:          12, unit: bytes, min:    4096, max: 16777216, sum:         50331648, sumsq: 7 }\n"
      "  getattr:         { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }\n"
      "  punch:           { samples:           3, unit: usecs }\n"
      "\n"
      "- job_id:          \"SLURM_JOB2:0:node002\"\n"
      "  snapshot_time:   1723114647.887515895 secs.nsecs\n"
      "  read_bytes:      { samples:           0, unit: bytes, min:    4096, max: 16777216, sum:                0, sumsq: 0, hist: { 4K: 1 } }\n"
      "  write_bytes:     { samples:          13, unit: bytes, min:    4096, max: 16777216, sum:        -50331648, sumsq: 7 }\n"
      "  getattr:         { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }\n"
      "  punch:           { samples:           x, unit: usecs }\n"
      "  no colon here\n"
      "- job_id:          \"SLURM_JOB3:0:node003\"\n"
      "  read_bytes:      { samples:           0, unit: bytes, min:    4096, max: 16777216, sum:                0, sumsq: 0, hist: { 4K: 1 } }\n"
      "  write_bytes:     { samples:          12, unit: bytes, min:    4096, max: 16777216, sum:         50331648, sumsq: 7 }\n"
      "  getattr:         { samples:           0, unit: usecs, min:        0, max:        0, sum:                0, sumsq:                  0 }\n"
      "  punch:           { samples:           x, unit: usecs }\n"
      "  open: {samples: 99999999999999999999, unit: reqs}\n"
      "  close: { samples: 7 }";  // no newline at the end
  std::vector<std::string> texts = {base, base};
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int m = 0; m < 3000; ++m) {
    std::string t = base;
    for (int k = 0; k < 1 + m % 3; ++k) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const size_t pos = static_cast<size_t>(x % t.size());
      const char kChars[] = " 0123456789:{},-\n\tx";
      t[pos] = kChars[(x >> 32) % (sizeof kChars - 1)];
    }
    texts.push_back(t);
  }
  JobLineCache cache;
  size_t bodies = 0, ops = 0;
  CheckCacheChangesNothing(texts, &cache, &bodies, &ops);
  CHECK(bodies > 2 * 3000);  // some mutations break "- job_id:" lines
  CHECK(ops > 10 * 3000);

  // On the fixtures' job_stats (always), then on the captured ones (a real-capture check).
  {
    std::vector<std::string> own;
    for (const char* rel : {"/2.10/proc/fs/lustre/obdfilter/lus210-OST0000/job_stats",
                            "/2.10/next/proc/fs/lustre/obdfilter/lus210-OST0000/job_stats",
                            "/2.10/proc/fs/lustre/mdt/lus210-MDT0000/job_stats",
                            "/2.15/proc/fs/lustre/obdfilter/lus215-OST0000/job_stats",
                            "/2.3/proc/fs/lustre/obdfilter/lus23-OST0000/job_stats"})
      own.push_back(ReadFile(iosonar::test::FixturesDir() + "/lustre" + rel));
    std::vector<LctlParam> params;
    const std::string dump = ReadFile(iosonar::test::FixturesDir() + "/lustre/2.14-ddn/lctl-get-param.txt");
    ParseLctlDump(dump, &params, nullptr);
    for (const auto& p : params)
      if (p.name.ends_with(".job_stats")) own.emplace_back(p.value);
    size_t own_bodies = 0, own_ops = 0;
    JobLineCache cache_own;
    CheckCacheChangesNothing(own, &cache_own, &own_bodies, &own_ops);
    std::reverse(own.begin(), own.end());
    CheckCacheChangesNothing(own, &cache_own, &own_bodies, &own_ops);
    CHECK(own_bodies >= 2 * 12);
    CHECK(own_ops > 200);
  }
  const std::string dir = LustreData();
  if (dir.empty()) {
    WARN(RealCapturesSkipped("the JobLineCache check on captured job_stats"));
    return;
  }
  std::vector<std::string> captured;
  for (const char* rel : {"/hp-lustre_exporter/proc/fs/lustre/obdfilter/lustrefs-OST0000/job_stats"}) captured.push_back(ReadFile(dir + rel));
  std::vector<LctlParam> params;
  const std::string dump = ReadFile(dir + "/whamcloud-lustrefs-exporter/lustrefs-exporter/fixtures/jobstats_only/2.14.0_162.txt");
  ParseLctlDump(dump, &params, nullptr);
  for (const auto& p : params) captured.emplace_back(p.value);
  REQUIRE(captured.size() > 1);
  bodies = ops = 0;
  JobLineCache cache2;
  CheckCacheChangesNothing(captured, &cache2, &bodies, &ops);
  std::reverse(captured.begin(), captured.end());
  CheckCacheChangesNothing(captured, &cache2, &bodies, &ops);
  CHECK(bodies > 10);
  CHECK(ops > 100);
}

// The exporter reads job_stats in chunks and indexes each chunk up to its
// last whole entry (JobStatsCut), carrying the rest: for every chunk size,
// the entries found (ids, bodies' hashes, snapshot times, line numbers) are
// those of the whole file indexed at once.
TEST_CASE("lustre IndexJobStats in pieces cut by JobStatsCut equals the whole file, at every chunk size", "[lustre][fixtures]") {
  for (const char* f : {"2.10/proc/fs/lustre/obdfilter/lus210-OST0000/job_stats",
                        "2.15/proc/fs/lustre/obdfilter/lus215-OST0000/job_stats",
                        "2.10/proc/fs/lustre/mdt/lus210-MDT0000/job_stats", "2.3/proc/fs/lustre/obdfilter/lus23-OST0000/job_stats"}) {
    INFO(f);
    const std::string text = Fixture(f);
    std::vector<JobSpan> whole;
    std::vector<Issue> issues;
    IndexJobStats(text, &whole, &issues);
    REQUIRE(issues.empty());
    REQUIRE(whole.size() >= 2);
    for (size_t chunk = 1; chunk <= text.size() + 1; ++chunk) {
      INFO("chunk " << chunk);
      std::vector<JobSpan> all, piece;
      std::vector<std::string> ids;  // the pieces' views die with the buffer: ids kept by value
      std::string buf;
      uint32_t next_line = 1;
      size_t pos = 0;
      auto take = [&](std::string_view t, uint32_t* last) {
        IndexJobStats(t, &piece, &issues, next_line, last);
        for (const JobSpan& sp : piece) {
          all.push_back(sp);
          ids.emplace_back(sp.job_id);
        }
      };
      while (true) {
        const size_t n = std::min(chunk, text.size() - pos);
        buf.append(text, pos, n);
        pos += n;
        if (n == 0) {  // end of file: the rest is whole
          if (!buf.empty()) take(buf, nullptr);
          break;
        }
        const size_t cut = JobStatsCut(buf);
        if (cut == 0) continue;
        uint32_t last = 0;
        take(std::string_view(buf).substr(0, cut), &last);
        next_line = last + 1;
        buf.erase(0, cut);
      }
      CHECK(issues.empty());
      REQUIRE(all.size() == whole.size());
      for (size_t k = 0; k < whole.size(); ++k) {
        CHECK(ids[k] == whole[k].job_id);
        CHECK(all[k].hash == whole[k].hash);
        CHECK(all[k].snapshot_ns == whole[k].snapshot_ns);
        CHECK(all[k].line == whole[k].line);
        CHECK(all[k].body_line == whole[k].body_line);
      }
    }
  }
  CHECK(JobStatsCut("job_stats:\n- job_id: a\n  open: { samples: 1, unit: reqs }\n- job_id: b\n  op") ==
        std::string("job_stats:\n- job_id: a\n  open: { samples: 1, unit: reqs }\n").size());
  CHECK(JobStatsCut("- job_id: a\n  open: { samples: 1") == 0);  // one incomplete entry: no cut
}
