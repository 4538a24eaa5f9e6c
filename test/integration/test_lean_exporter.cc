// The lean node/server exporter `iosonar-exporter` (<= 10 MiB RSS):
// the same records as `iosonar lustre|health|probe` for the same input, into a
// file and into a live collector; no libcurl/OpenSSL/MariaDB/SQLite/hiredis
// linked (ldd); Elasticsearch output loads libcurl at run time, only then,
// and fails with a clear error when libcurl cannot be loaded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "exporters/framework/exporter.h"
#include "test/testutil/http_responder.h"
#include "core/records/record.h"
#include "test/integration/lustre_fixture.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;
namespace fx = iosonar::test::lustrefx;

namespace {

std::string LeanBin() { return BinaryDir() + "/iosonar-exporter"; }

void CheckValid(const std::string& jsonl) { CheckRecordsValid(jsonl); }

// The output with what differs between any two runs blanked: the wall clock
// (@timestamp), the random event.stream, the measured durations, and the
// elapsed time and rates, which come from the monotonic clock when a fixture's
// snapshot_time does not move.
std::string Normalize(const std::string& jsonl) {
  return BlankValues(jsonl, [](std::string_view k) {
    return k == "@timestamp" || k == "event.stream" || k == "sampler.duration_ns" || k == "lustre.elapsed_ns" ||
           k.ends_with("_per_s");
  });
}

// Both binaries, same arguments; returns {full output, lean output}.
std::pair<std::string, std::string> RunBoth(TempDir& d, const std::vector<std::string>& args,
                                            const std::map<std::string, std::string>& env = {}) {
  std::string outs[2];
  const std::string bins[2] = {IosonarBin(), LeanBin()};
  for (int i = 0; i < 2; ++i) {
    const std::string out = d / (std::string("out") + std::to_string(i) + ".jsonl");
    std::vector<std::string> argv = {bins[i]};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--output", out, "--host-name", "node1"});
    auto r = Run(argv, env);
    INFO(bins[i] << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    outs[i] = ReadFile(out);
    CheckValid(outs[i]);
  }
  return {outs[0], outs[1]};
}

bool Mapped(pid_t pid, const std::string& lib) {
  return ReadFile("/proc/" + std::to_string(pid) + "/maps").find(lib) != std::string::npos;
}

}  // namespace

TEST_CASE("lean exporter: ldd names none of libcurl libssl libmariadb libsqlite3 libhiredis", "[lean]") {
  if (!HaveProgram("ldd")) {
    FAIL("ldd is not installed (scripts/setup.sh --test installs it)");
  }
  auto lean = Run({"ldd", LeanBin()});
  REQUIRE(lean.exit_code == 0);
  INFO(lean.out);
  // libmicrohttpd: `--listen-metrics` is served by a responder of its own (exporters/framework/metrics_http.h).
  for (const char* lib : {"libcurl", "libssl", "libcrypto", "libmariadb", "libsqlite3", "libhiredis", "libboost", "libmicrohttpd"})
    CHECK(lean.out.find(lib) == std::string::npos);
  CHECK(lean.out.find("libc.so") != std::string::npos);  // ldd did list the libraries
  // The control: the full binary does link the database clients (else this
  // test could not fail); libcurl neither binary links, both load it at run
  // time for an Elasticsearch URL (test_es_forward and the test below).
  auto full = Run({"ldd", IosonarBin()});
  CHECK(full.out.find("libmariadb") != std::string::npos);
  CHECK(full.out.find("libsqlite3") != std::string::npos);
  CHECK(full.out.find("libcurl") == std::string::npos);
}

TEST_CASE("lean exporter: help, unknown exporter, slurm points at the full binary", "[lean]") {
  auto h = Run({LeanBin(), "--help"});
  CHECK(h.exit_code == 0);
  for (const char* e : {"lustre", "health", "probe"}) CHECK(h.out.find(std::string("  ") + e) != std::string::npos);
  auto s = Run({LeanBin(), "slurm"});
  CHECK(s.exit_code == 2);
  CHECK(s.err.find("full `iosonar` binary") != std::string::npos);
  auto l = Run({LeanBin(), "lustre", "--help"});
  CHECK(l.exit_code == 0);
  CHECK(l.out.find("usage: iosonar-exporter lustre") != std::string::npos);
  CHECK(Run({LeanBin(), "lustre", "--sources", "oss,bogus"}).exit_code == 2);
}

TEST_CASE("lean exporter: lustre records identical to iosonar lustre on a fixture tree and an lctl dump", "[lean]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.osts["fs1-OST0001"].read_ops = 7;
  s.mdts["fs1-MDT0000"].open = 3;
  s.jobs["fs1-OST0000"]["a:b:c"] = {};
  s.jobs["fs1-OST0001"]["job 42"] = {};
  fx::Write(root, s, fx::Layout::k215);
  auto [full, lean] = RunBoth(d, {"lustre", "--proc-root", root, "--count", "3", "--interval", "0.05"});
  CHECK(Count(lean, "\"event.dataset\":\"iosonar.oss\"") == 4);  // 2 OSTs x 2 samples after the baseline
  CHECK(Count(lean, "\"sampler.source\":\"*\"") == 3);
  CHECK(Normalize(lean) == Normalize(full));
  CHECK(Normalize(lean) != lean);  // the normalisation did blank something (timestamps at least)

  WriteFile(d / "dump.txt",
            "obdfilter.fs2-OST0003.stats=\nsnapshot_time 1700000000.1 secs.nsecs\nwrite_bytes 4 samples [bytes] 1 1 4\n"
            "mdt.fs2-MDT0000.md_stats=\nsnapshot_time 1700000000.1 secs.nsecs\nopen 5 samples [reqs]\n");
  auto [full2, lean2] = RunBoth(d, {"lustre", "--lctl-dump", d / "dump.txt", "--count", "2", "--interval", "0.05"});
  CHECK(lean2.find("\"lustre.target\":\"fs2-OST0003\"") != std::string::npos);
  CHECK(Normalize(lean2) == Normalize(full2));
}

TEST_CASE("lean exporter: lustre records identical to iosonar lustre on every version's fixture tree", "[lean]") {
  for (const std::string v : {"1.8", "2.3", "2.10", "2.12", "2.15", "2.14-ddn"}) {
    INFO(v);
    TempDir d;
    const std::string fx = FixturesDir() + "/lustre/" + v;
    std::vector<std::string> args = {"lustre", "--count", "2", "--interval", "0.05", "--quiet"};
    if (v == "2.14-ddn") args.insert(args.end(), {"--lctl-dump", fx + "/lctl-get-param.txt"});
    else args.insert(args.end(), {"--proc-root", fx});
    auto [full, lean] = RunBoth(d, args);
    // The second sample of an unchanged tree: every target's record, with zero deltas.
    CHECK(Count(lean, "\"event.dataset\":\"iosonar.sampler\"") >= 2);
    CHECK(Count(lean, "\"lustre.target\":") > 0);
    CHECK(Normalize(lean) == Normalize(full));
  }
}

TEST_CASE("lean exporter (real captures): lustre records identical to iosonar lustre on captured 2.10 trees", "[lean][real-capture]") {
  const std::string data = SharedDataDir();
  if (data.empty()) {
    WARN(RealCapturesSkipped("both binaries on the captured 2.10 trees"));
    return;
  }
  for (const char* tree : {"hp-lustre_exporter", "hp-lustre_exporter-legacy-2017"}) {
    INFO(tree);
    TempDir d;
    auto [full, lean] = RunBoth(d, {"lustre", "--proc-root", data + "/lustre/" + tree, "--count", "2", "--interval", "0.05",
                                    "--quiet"});
    CHECK(Count(lean, "\"event.dataset\":\"iosonar.sampler\"") >= 2);
    CHECK(Count(lean, "\n") > 4);
    CHECK(Normalize(lean) == Normalize(full));
  }
}

TEST_CASE("lean exporter: lustre into a live collector", "[lean]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.mdts["fs1-MDT0000"].open = 1;
  fx::Write(root, s, fx::Layout::k210);
  const int port = FreePort();
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  Child collector({IosonarBin(), "collect", "--store", d / "store", "--listen", url}, {}, d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto r = Run({LeanBin(), "lustre", "--proc-root", root, "--count", "3", "--interval", "0.05", "--output", url,
                "--host-name", "oss9"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(WaitUntil(
      [&] {
        auto e = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.oss"});
        return Count(e.out, "\"host.name\":\"oss9\"") >= 2;
      },
      20000));
  CHECK(collector.Stop() == 0);
  auto e = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.oss"});
  CHECK(Count(e.out, "\"lustre.target\":\"fs1-OST0000\"") == 2);
  auto m = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.mds"});
  CHECK(Count(m.out, "\"lustre.target\":\"fs1-MDT0000\"") == 2);
}

TEST_CASE("lean exporter: health records identical to iosonar health on the fixtures", "[lean]") {
  const std::string fx = FixturesDir() + "/health/";
  TempDir d;
  auto [full, lean] = RunBoth(d, {"health", "--count", "1", "--lfs-df", fx + "lfs-df.txt", "--lctl-dl-t", fx + "lctl-dl-t.txt"});
  CHECK(Count(lean, "\"health.record\":\"target\"") == 13);
  CHECK(Count(lean, "\"health.record\":\"failover\"") == 3);
  CHECK(Normalize(lean) == Normalize(full));
}

TEST_CASE("lean exporter (real captures): health records identical to iosonar health on the Edison captures", "[lean][real-capture]") {
  const std::string data = SharedDataDir();
  if (data.empty()) {
    WARN(RealCapturesSkipped("both binaries on the Edison health captures"));
    return;
  }
  const std::string in = data + "/pytokio/tests/inputs";
  TempDir d;
  auto [full, lean] = RunBoth(d, {"health", "--count", "1", "--lfs-df", in + "/lfs-df.txt", "--lctl-dl-t",
                                  in + "/lctl-dl-t.txt"});
  CHECK(Count(lean, "\"health.record\":\"target\"") == 340);
  CHECK(Count(lean, "\"health.record\":\"failover\"") == 4);
  CHECK(Normalize(lean) == Normalize(full));
}

TEST_CASE("lean exporter: probe records reach a live collector, same fields as iosonar probe", "[lean]") {
  TempDir d;
  REQUIRE(Run({LeanBin(), "probe", "--precreate", "--dir", d / "p", "--file-size", "2M", "--pool-size", "4", "--allow-small-file"}).exit_code == 0);
  const int port = FreePort();
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  Child collector({IosonarBin(), "collect", "--store", d / "store", "--listen", url}, {}, d / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto r = Run({LeanBin(), "probe", "--dir", d / "p", "--allow-small-file", "--count", "3", "--interval", "0.02", "--output", url,
                "--host-name", "cn1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(WaitUntil(
      [&] {
        auto e = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.probe"});
        return Count(e.out, "\"host.name\":\"cn1\"") >= 18;
      },
      20000));
  CHECK(collector.Stop() == 0);
  auto ex = Run({IosonarBin(), "store-export", "--store", d / "store", "--dataset", "iosonar.probe"});
  CHECK(Count(ex.out, "\"probe.op\":\"write\"") == 3);
  CHECK(Count(ex.out, "\"probe.op\":\"create\"") == 3);

  // Into files: the same records (ops, fields, order) from both binaries;
  // latencies and the per-process seed differ and are blanked.
  auto [full, lean] = RunBoth(d, {"probe", "--dir", d / "p", "--allow-small-file", "--count", "2", "--interval", "0.02"});
  CHECK(Count(lean, "\"event.dataset\":\"iosonar.probe\"") == 12);
  auto shape = [&](const std::string& s) { return BlankValues(s, [](std::string_view) { return true; }); };
  CHECK(shape(lean) == shape(full));
}

TEST_CASE("lean exporter: Elasticsearch output loads libcurl at run time, only then", "[lean]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  fx::Write(root, s, fx::Layout::k215);

  // A file output: libcurl is never mapped.
  {
    Child c({LeanBin(), "lustre", "--proc-root", root, "--interval", "0.05", "--count", "0", "--output", d / "f.jsonl"}, {},
            d / "f.log");
    REQUIRE(WaitUntil([&] { return Count(ReadFile(d / "f.jsonl"), "\"sampler.source\":\"*\"") >= 2; }, 20000));
    CHECK_FALSE(Mapped(c.pid(), "libcurl"));
    CHECK_FALSE(Mapped(c.pid(), "libssl"));
    CHECK(c.Stop() == 0);
  }
  // Elasticsearch (the loopback stand-in): libcurl is loaded, the records arrive.
  {
    FakeElasticsearch es;
    Child c({LeanBin(), "lustre", "--proc-root", root, "--interval", "0.05", "--count", "0", "--output", es.url()}, {},
            d / "es.log");
    // Per sample, one _bulk: the OSS records of the samples after the baseline arrive while it runs.
    auto oss_docs = [&] {
      size_t n = 0;
      for (const auto& i : es.Indices())
        if (i.find("iosonar.oss") != std::string::npos) n += es.DocCount(i);
      return n;
    };
    REQUIRE(WaitUntil([&] { return oss_docs() >= 2; }, 20000));
    CHECK(Mapped(c.pid(), "libcurl"));
    CHECK(c.Stop() == 0);
    CHECK(es.Violations().empty());
  }
  // libcurl cannot be loaded: a clear error naming it, exit 2, nothing sent.
  {
    auto r = Run({LeanBin(), "lustre", "--proc-root", root, "--count", "1", "--output", "http://127.0.0.1:9"},
                 {{"IOSONAR_LIBCURL", d / "no-such-libcurl.so.4"}});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--output") != std::string::npos);
    CHECK(r.err.find("libcurl") != std::string::npos);
    CHECK(r.err.find("no-such-libcurl.so.4") != std::string::npos);
  }
}

TEST_CASE("exporters: --es-gzip (or IOSONAR_ES_GZIP=1) sends every _bulk body gzip-encoded, the records intact",
          "[lean][es][contract]") {
  TempDir d;
  const std::string root = d / "root";
  fx::State s;
  s.osts["fs1-OST0000"].write_ops = 10;
  s.osts["fs1-OST0001"].write_ops = 20;
  fx::Write(root, s, fx::Layout::k215);
  struct Case {
    std::string bin, how;
  };
  for (const Case& k : {Case{LeanBin(), "flag"}, Case{LeanBin(), "env"}, Case{IosonarBin(), "flag"}, Case{LeanBin(), "off"}}) {
    INFO(k.bin << " " << k.how);
    FakeElasticsearch es;
    std::vector<std::string> argv = {k.bin, "lustre", "--proc-root", root, "--interval", "0.05", "--count", "3",
                                     "--output", es.url(), "--host-name", "node1"};
    std::map<std::string, std::string> env;
    if (k.how == "flag") argv.push_back("--es-gzip");
    if (k.how == "env") env["IOSONAR_ES_GZIP"] = "1";
    auto r = Run(argv, env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(es.Violations().empty());
    size_t bulks = 0, docs = 0, lines = 0;
    for (const auto& req : es.Requests()) {
      if (req.path.find("_bulk") == std::string::npos) continue;
      ++bulks;
      // The responder inflated a gzip body as the engines do (counted in gzip_requests, and
      // "not gzip" were it not): what it holds is the NDJSON itself.
      CHECK(req.Header("content-type") == "application/x-ndjson");
      REQUIRE(!req.body.empty());
      CHECK(req.body.back() == '\n');
      lines += static_cast<size_t>(Count(req.body, "\n"));
      CHECK(req.body.find("\"host.name\":\"node1\"") != std::string::npos);
    }
    for (const auto& i : es.Indices()) docs += es.DocCount(i);
    CHECK(bulks >= 2);
    CHECK(es.gzip_requests() == (k.how == "off" ? 0 : bulks));  // Content-Encoding: gzip on every _bulk
    CHECK(lines == 2 * docs);  // an action line and a document per record, every one stored
    CHECK(docs > 0);
  }
}

TEST_CASE("lean exporter: a sample spilled in pieces is the same lines as one buffer", "[lean]") {
  auto sample = [](exporters::Context& ctx) {
    ctx.StartTick(0, 1700000000000000000LL, 1000000000LL, 1000000000LL);
    for (int i = 0; i < 50; ++i) {
      ctx.Begin(dataset::kOss).Str(field::kLustreFs, "fs1").Str(field::kLustreTarget, "fs1-OST" + std::to_string(i)).Int(field::kOssReadOps, i);
      if (i % 10 == 9) ctx.SourceDone("oss", true, 1000);
    }
    return ctx.FinishTick(5000);
  };
  exporters::Context whole("h", "", 7, "lustre");
  const std::string expect = sample(whole);
  REQUIRE(whole.pending_lines() == whole.lines_in_tick());

  exporters::Context pieces("h", "", 7, "lustre");
  std::string got;
  uint64_t spilled_lines = 0;
  int calls = 0;
  pieces.set_spill(1000, [&](const std::string& lines, uint64_t n) {
    REQUIRE(!lines.empty());
    REQUIRE(lines.back() == '\n');
    CHECK(static_cast<uint64_t>(Count(lines, "\n")) == n);
    got += lines;
    spilled_lines += n;
    ++calls;
  });
  const std::string rest = sample(pieces);
  got += rest;
  CHECK(calls > 3);
  CHECK(spilled_lines + pieces.pending_lines() == pieces.lines_in_tick());
  CHECK(static_cast<uint64_t>(Count(rest, "\n")) == pieces.pending_lines());
  CHECK(got == expect);
  CHECK(Count(got, "\"sampler.records\":50") == 1);
  CheckValid(got);
}
