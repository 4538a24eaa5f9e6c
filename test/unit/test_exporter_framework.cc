// The exporter framework (exporters/framework): option parsing, the records it
// writes around an exporter's own fields, the per-source self-reports, and
// the loop's --count/--output handling, driven through a small test exporter.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
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
    opt::Flag("fail-source", "make the second source fail"),
    opt::Bytes("size", "BYTES", "4K", "a size"),
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
  return std::unique_ptr<Exporter>(new TestExporter(o.Flag("fail-source")));
}

const Descriptor kTest{"testexp", "test exporter", "An exporter for the framework's tests.", kOpts, 0.01, Create};


int Run(std::vector<std::string> args) {
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  return RunExporter(kTest, static_cast<int>(av.size()), av.data());
}

Result<Options> Parse(const Descriptor& d, std::vector<std::string> args) {
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  return ParseOptions(d, static_cast<int>(av.size()), av.data());
}

std::string ParseError(const Descriptor& d, std::vector<std::string> args) {
  auto o = Parse(d, std::move(args));
  return o.ok() ? std::string("(parsed)") : o.status().message();
}

}  // namespace

TEST_CASE("exporter options: common and own, defaults, errors name the option", "[exporter]") {
  auto o = Parse(kTest, {"testexp", "--interval=0.5", "--count", "3", "--size", "2M", "--fail-source"});
  REQUIRE(o.ok());
  CHECK(o->Seconds("interval") == 0.5);
  CHECK(o->Int("count") == 3);
  CHECK(o->Bytes("size") == 2 << 20);
  CHECK(o->Flag("fail-source"));
  CHECK_FALSE(o->Flag("quiet"));

  auto d = Parse(kTest, {"testexp"});
  REQUIRE(d.ok());
  CHECK(d->Seconds("interval") == 0.01);  // the descriptor's default
  CHECK(d->Bytes("size") == 4096);         // the table's default, parsed like a given value
  CHECK(d->Get("output") == "-");
  CHECK_FALSE(d->Has("host-name"));

  CHECK(ParseError(kTest, {"testexp", "--nope"}).find("--nope") != std::string::npos);
  CHECK(ParseError(kTest, {"testexp", "--size", "12Q"}) == "--size: not a size (bytes, or with K/M/G/T): '12Q'");
  CHECK(ParseError(kTest, {"testexp", "--interval", "fast"}) == "--interval: not a number: 'fast'");
  CHECK(ParseError(kTest, {"testexp", "--count", "x"}) == "--count: not an integer: 'x'");
  CHECK(ParseError(kTest, {"testexp", "--count=-1"}) == "--count: must be >= 0: '-1'");
  CHECK(ParseError(kTest, {"testexp", "--interval", "0"}) == "--interval: must be > 0 seconds: '0'");
  CHECK(ParseError(kTest, {"testexp", "--quiet=yes"}) == "option --quiet takes no value");
  CHECK(ParseError(kTest, {"testexp", "--output"}) == "option --output needs a value (URL)");
  CHECK(ParseError(kTest, {"testexp", "stray"}) == "unexpected argument 'stray' (options start with --)");
  // Given twice: the last one counts (only it is checked).
  auto twice = Parse(kTest, {"testexp", "--count", "x", "--count", "7"});
  REQUIRE(twice.ok());
  CHECK(twice->Int("count") == 7);
  CHECK(ParseError(kTest, {"testexp", "--count", "7", "--count", "x"}) == "--count: not an integer: 'x'");
}

namespace {

// Every type the tables can declare, with ranges, allowed values and an
// environment variable.
constexpr OptionSpec kTyped[] = {
    opt::String("name", "NAME", "x", "a string"),
    opt::Int("n", "N", "5", "an integer in [1, 10]").Min(1).Max(10),
    opt::Double("ratio", "R", "0.25", "a number > 0").Above(0),
    opt::Bytes("size", "BYTES", "1M", "a size <= 1G").Max(1 << 30),
    opt::Duration("wait", "SECONDS", "30", "a duration in (0, 60]").Above(0).Max(60),
    opt::Enum("mode", "MODE", "fast", "fast,slow,off", "one of three"),
    opt::List("kinds", "LIST", "a,c", "a,b,c", "a subset"),
    opt::Time("since", "TIME", nullptr, "an ISO 8601 time"),
    opt::String("from-env", "X", "default", "a string from $IOSONAR_TEST_OPTION_ENV").Env("IOSONAR_TEST_OPTION_ENV"),
};
const Descriptor kTypedTest{"typed", "typed options", "Options of every type.", kTyped, 1.0, Create};

}  // namespace

TEST_CASE("exporter options: every type parsed once and read typed, ranges and allowed values checked", "[exporter]") {
  unsetenv("IOSONAR_TEST_OPTION_ENV");
  auto d = Parse(kTypedTest, {"typed"});
  REQUIRE(d.ok());
  CHECK(d->Get("name") == "x");
  CHECK(d->Int("n") == 5);
  CHECK(d->Double("ratio") == 0.25);
  CHECK(d->Bytes("size") == 1 << 20);
  CHECK(d->Seconds("wait") == 30);
  CHECK(d->Contains("mode", "fast"));
  CHECK_FALSE(d->Contains("mode", "slow"));
  CHECK(d->Contains("kinds", "a"));
  CHECK_FALSE(d->Contains("kinds", "b"));
  CHECK(d->Contains("kinds", "c"));
  CHECK_FALSE(d->Has("since"));
  CHECK(d->TimeNs("since") == 0);
  CHECK(d->Get("from-env") == "default");

  auto g = Parse(kTypedTest, {"typed", "--n", "10", "--ratio", "1e-3", "--size", "1G", "--wait", "0.5", "--mode", "off",
                              "--kinds", "b,,a", "--since", "2026-11-22T08:00:00Z"});
  REQUIRE(g.ok());
  CHECK(g->Int("n") == 10);
  CHECK(g->Double("ratio") == 0.001);
  CHECK(g->Bytes("size") == int64_t{1} << 30);
  CHECK(g->Seconds("wait") == 0.5);
  CHECK(g->Contains("mode", "off"));
  CHECK(g->Contains("kinds", "a"));
  CHECK(g->Contains("kinds", "b"));
  CHECK_FALSE(g->Contains("kinds", "c"));
  CHECK(g->TimeNs("since") == 1795334400LL * 1000000000);
  auto none = Parse(kTypedTest, {"typed", "--kinds", ""});  // an empty list selects nothing
  REQUIRE(none.ok());
  CHECK_FALSE(none->Contains("kinds", "a"));

  CHECK(ParseError(kTypedTest, {"typed", "--n", "0"}) == "--n: must be >= 1 and <= 10: '0'");
  CHECK(ParseError(kTypedTest, {"typed", "--n", "11"}) == "--n: must be >= 1 and <= 10: '11'");
  CHECK(ParseError(kTypedTest, {"typed", "--n", "1.5"}) == "--n: not an integer: '1.5'");
  CHECK(ParseError(kTypedTest, {"typed", "--ratio", "0"}) == "--ratio: must be > 0: '0'");
  CHECK(ParseError(kTypedTest, {"typed", "--ratio", "nan"}) == "--ratio: not a number: 'nan'");
  CHECK(ParseError(kTypedTest, {"typed", "--size", "2G"}) == "--size: must be <= 1073741824: '2G'");
  CHECK(ParseError(kTypedTest, {"typed", "--size", "-1"}) == "--size: not a size (bytes, or with K/M/G/T): '-1'");
  CHECK(ParseError(kTypedTest, {"typed", "--wait", "61"}) == "--wait: must be > 0 and <= 60 seconds: '61'");
  CHECK(ParseError(kTypedTest, {"typed", "--mode", "medium"}) == "--mode: unknown value 'medium' (fast, slow, off)");
  CHECK(ParseError(kTypedTest, {"typed", "--kinds", "a,d"}) == "--kinds: unknown value 'd' (a, b, c)");
  CHECK(ParseError(kTypedTest, {"typed", "--since", "yesterday"}) == "--since: not an ISO 8601 time: 'yesterday'");

  // The environment fills an option not given; the command line wins; a bad
  // value from the environment says where it came from.
  setenv("IOSONAR_TEST_OPTION_ENV", "from the environment", 1);
  CHECK(Parse(kTypedTest, {"typed"})->Get("from-env") == "from the environment");
  CHECK(Parse(kTypedTest, {"typed", "--from-env", "given"})->Get("from-env") == "given");
  unsetenv("IOSONAR_TEST_OPTION_ENV");

  // CheckOptionValue is the same check, one value at a time.
  CHECK(CheckOptionValue(kTyped[1], "7").ok());
  CHECK(CheckOptionValue(kTyped[1], "70").message() == "--n: must be >= 1 and <= 10: '70'");
}

TEST_CASE("exporter options: every registered exporter's table is sound", "[exporter]") {
  // The registry generated from the exporters' CMake registrations.
  std::set<std::string> names;
  for (const Descriptor* d : AllExporters()) names.insert(d->name);
  CHECK(names == std::set<std::string>{"lustre", "health", "probe", "slurm", "agent", "doctor"});
  std::vector<const Descriptor*> all(AllExporters().begin(), AllExporters().end());
  all.push_back(&kTest);
  all.push_back(&kTypedTest);
  for (const Descriptor* d : all) {
    INFO(d->name);
    // ParseOptions checks defaults like given values: a default out of its
    // own range, or not one of its allowed values, fails here.
    CHECK(Parse(*d, {d->name}).ok());
    std::set<std::string> seen;
    for (const OptionSpec& o : CommonOptions()) seen.insert(o.name);
    for (const OptionSpec& o : d->options) {
      INFO(o.name);
      CHECK(seen.insert(o.name).second);  // no option declared twice, none shadows a common one
      CHECK((o.value_name != nullptr) == o.takes_value());
      CHECK(std::string(o.help).size() > 0);
      const bool has_choices = o.type == OptionType::kEnum || o.type == OptionType::kList;
      CHECK((o.choices != nullptr) == has_choices);
      if (has_choices) CHECK(std::count(o.choices, o.choices + std::strlen(o.choices), ',') < 64);
    }
  }
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
