// The exporter framework (exporters/framework): option parsing, the records it
// writes around an exporter's own fields, the per-source self-reports, and
// the loop's --count/--output handling, driven through a small test exporter.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "exporters/framework/exporter.h"
#include "core/records/record.h"
#include "test/testutil/http_responder.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::exporters;

namespace {

constexpr OptionSpec kOpts[] = {
    {"fail-source", nullptr, nullptr, "make the second source fail"},
    {"size", "BYTES", "4K", "a size"},
};

// Emits one sampler-shaped record per tick from two sources, one of which
// can fail and warn.
class TestExporter : public Exporter {
 public:
  explicit TestExporter(bool fail) : fail_(fail) {}
  void Collect(Context& ctx) override {
    {
      SourceTimer t(ctx, "good");
      ctx.Begin(dataset::kSampler)
          .Str(field::kSamplerName, "data")
          .Str(field::kSamplerSource, "x")
          .Bool(field::kSamplerOk, true)
          .Int(field::kSamplerDurationNs, static_cast<int64_t>(ctx.tick()))
          .Int(field::kSamplerWarnings, 0);
    }
    SourceTimer t(ctx, "bad");
    if (fail_) {
      ctx.Warn("bad", "line 3: not a number");
      t.Fail("cannot read /nonexistent: No such file or directory");
    }
  }
  bool fail_;
};

Result<std::unique_ptr<Exporter>> Create(const Options& o) {
  auto size = o.Bytes("size");
  if (!size.ok()) return size.status();
  return std::unique_ptr<Exporter>(new TestExporter(o.Flag("fail-source")));
}

const Descriptor kTest{"testexp", "test exporter", "An exporter for the framework's tests.", kOpts, 0.01, Create};


int Run(std::vector<std::string> args) {
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  return RunExporter(kTest, static_cast<int>(av.size()), av.data());
}

}  // namespace

TEST_CASE("exporter options: common and own, defaults, errors name the option", "[exporter]") {
  std::vector<std::string> a = {"testexp", "--interval=0.5", "--count", "3", "--size", "2M", "--fail-source"};
  std::vector<char*> av;
  for (auto& s : a) av.push_back(s.data());
  auto o = ParseOptions(kTest, static_cast<int>(av.size()), av.data());
  REQUIRE(o.ok());
  CHECK(*o->Double("interval") == 0.5);
  CHECK(*o->Int("count") == 3);
  CHECK(*o->Bytes("size") == 2 << 20);
  CHECK(o->Flag("fail-source"));
  CHECK_FALSE(o->Flag("quiet"));

  std::vector<std::string> b = {"testexp", "--nope"};
  std::vector<char*> bv;
  for (auto& s : b) bv.push_back(s.data());
  auto bad = ParseOptions(kTest, 2, bv.data());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("--nope") != std::string::npos);

  Options x;
  x.Set("size", "12Q");
  CHECK(x.Bytes("size").status().message() == "--size: not a size (bytes, or with K/M/G/T): '12Q'");
  x.Set("interval", "fast");
  CHECK(x.Double("interval").status().message() == "--interval: not a number: 'fast'");
}

TEST_CASE("exporter loop: --count samples to a file, every line valid, sources report themselves", "[exporter]") {
  test::TempDir dir;
  const std::string out = dir.path() + "/out.jsonl";
  REQUIRE(Run({"testexp", "--count", "3", "--interval", "0.01", "--output", out, "--host-name", "n7", "--job-id",
               "42", "--fail-source", "--quiet"}) == 0);
  auto lines = test::SplitLines(test::ReadFile(out));
  // Per tick: 1 data record + sampler records for "good", "bad" and "*".
  REQUIRE(lines.size() == 3 * 4);
  int64_t last_seq = -1;
  int bad_failed = 0, star = 0;
  for (auto& l : lines) {
    ParsedRecord r;
    std::string buf = l;
    auto st = ParseRecordInsitu(buf.data(), buf.size(), &r);
    INFO(l);
    REQUIRE(st.ok());
    CHECK(r[static_cast<size_t>(FieldIndex("host.name"))].s == "n7");
    CHECK(r[static_cast<size_t>(FieldIndex("job.id"))].s == "42");
    const int64_t seq = r[static_cast<size_t>(FieldIndex("event.seq"))].i;
    CHECK(seq == last_seq + 1);
    last_seq = seq;
    const auto src = r[static_cast<size_t>(FieldIndex("sampler.source"))].s;
    const auto name = r[static_cast<size_t>(FieldIndex("sampler.name"))].s;
    if (name == "testexp" && src == "bad") {
      CHECK(r[static_cast<size_t>(FieldIndex("sampler.ok"))].i == 0);
      CHECK(r[static_cast<size_t>(FieldIndex("sampler.warnings"))].i == 1);
      CHECK(r[static_cast<size_t>(FieldIndex("sampler.error"))].s.find("No such file") != std::string_view::npos);
      ++bad_failed;
    }
    if (name == "testexp" && src == "*") {
      CHECK(r[static_cast<size_t>(FieldIndex("sampler.records"))].i == 1);
      CHECK(r[static_cast<size_t>(FieldIndex("sampler.ok"))].i == 0);
      ++star;
    }
  }
  CHECK(bad_failed == 3);
  CHECK(star == 3);
}

TEST_CASE("exporter loop: bad options and bad output are refused with exit code 2", "[exporter]") {
  CHECK(Run({"testexp", "--count", "-1", "--quiet"}) == 2);
  CHECK(Run({"testexp", "--size", "x", "--quiet"}) == 2);
  CHECK(Run({"testexp", "--output", "tcp://nohostport", "--quiet"}) == 2);
}

// Contract test (a loopback responder that plays Elasticsearch's documented
// responses; not Elasticsearch): --output https?://... ships an exporter's
// records with _bulk create into the data streams named by their datasets.
TEST_CASE("exporter loop: --output to Elasticsearch's _bulk (contract test, loopback responder)", "[exporter][es]") {
  test::FakeElasticsearch es;
  es.FailNextRequests(429, 1, "_bulk");  // the first bulk is refused as a whole; the sink retries
  REQUIRE(Run({"testexp", "--count", "2", "--interval", "0.01", "--output", es.url(), "--host-name", "n7", "--quiet"}) == 0);
  // 2 ticks x (1 data record + sampler records for "good", "bad", "*"), all in metrics-iosonar.sampler-default.
  CHECK(es.DocCount("metrics-iosonar.sampler-default") == 8);
  CHECK(es.Violations().empty());
}
