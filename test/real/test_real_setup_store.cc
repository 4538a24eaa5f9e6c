// es-setup, the store conformance suite and what Logstash-written documents
// carry, on a real OpenSearch and a real Elasticsearch (test/testutil/search_engine.h).
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "core/records/fields.h"
#include "core/store/es_store.h"
#include "core/store/es_templates.h"
#include "core/base/timeutil.h"
#include "core/transport/es_client.h"
#include "test/real/real_engine.h"
#include "test/testutil/store_conformance.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace iosonar::test {

void EnsureTemplates(SearchEngine& e) {
  static std::set<SearchEngine*> done;
  if (done.count(&e)) return;
  auto r = Run({IosonarBin(), "es-setup", "--url", e.url()}, e.Env());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find(" 0 failed") != std::string::npos);
  done.insert(&e);
}

}  // namespace iosonar::test

namespace {

std::unique_ptr<Store> OpenStore(SearchEngine& e, const std::string& ns) {
  auto s = OpenElasticsearchStore(e.url(), e.options(ns));
  REQUIRE(s.ok());
  return std::move(*s);
}

void EsSetup(SearchEngine& e) {
  auto r1 = Run({IosonarBin(), "es-setup", "--url", e.url()}, e.Env());
  INFO(r1.out << r1.err);
  REQUIRE(r1.exit_code == 0);
  // It asked the engine what it is.
  if (e.kind() == EngineKind::kOpenSearch) {
    CHECK(r1.out.find("engine: OpenSearch 2.") != std::string::npos);
  } else {
    CHECK(r1.out.find("engine: Elasticsearch 8.") != std::string::npos);
  }
  // Neither integ-test distribution has ILM or ISM: no policy, and a warning saying so.
  CHECK(r1.err.find("retention") != std::string::npos);
  CHECK(r1.err.find("left to the operator") != std::string::npos);
  CHECK(r1.out.find("_ilm/policy") == std::string::npos);
  CHECK(r1.out.find("_plugins/_ism") == std::string::npos);
  EsTemplateOptions want;
  want.target.ilm = false;
  want.target.flavor = e.kind() == EngineKind::kOpenSearch ? EngineInfo::kOpenSearch : EngineInfo::kElasticsearch;
  auto arts = GenerateEsTemplates(want);
  REQUIRE(arts.ok());
  CHECK(r1.out.find(" 0 failed") != std::string::npos);
  // Run again: everything is there and updated in place, but for the operator's
  // @custom templates, which are kept.
  size_t custom = 0;
  for (const auto& a : *arts) custom += a.api_path.ends_with("@custom");
  auto r2 = Run({IosonarBin(), "es-setup", "--url", e.url()}, e.Env());
  INFO(r2.out << r2.err);
  REQUIRE(r2.exit_code == 0);
  CHECK(r2.out.find("0 created, " + std::to_string(arts->size() - custom) + " updated, " + std::to_string(custom) +
                    " kept, 0 failed") != std::string::npos);
  for (const auto& a : *arts) {
    INFO(a.api_path);
    CHECK(e.Admin("GET", a.api_path).status == 200);
  }
  // A metrics template with a boolean dimension field (health.inodes) was accepted.
  CHECK(e.Admin("GET", "/_index_template/metrics-iosonar.health").status == 200);
  // ... and what es-setup leaves out is what the engine rejects: on Elasticsearch 8.15 the
  // boolean time_series_dimension (accepted from 8.16); on OpenSearch the time_series_*
  // markings and constant_keyword of the templates made for a full Elasticsearch.
  EsTemplateOptions other;
  if (e.kind() == EngineKind::kElasticsearch) {
    other.target.major = 8;
    other.target.minor = 16;
    other.target.constant_keyword = false;
  }
  auto other_arts = GenerateEsTemplates(other);
  REQUIRE(other_arts.ok());
  for (const auto& a : *other_arts) {
    if (a.api_path != "/_component_template/metrics-iosonar.health@mappings") continue;
    auto rej = e.Admin("PUT", "/_component_template/iosonar-test-rejected", a.body);
    INFO(rej.body);
    CHECK(rej.status == 400);
    CHECK(rej.body.find("mapper_parsing_exception") != std::string::npos);
    if (e.kind() == EngineKind::kElasticsearch) {
      CHECK(rej.body.find("unknown parameter [time_series_dimension]") != std::string::npos);
      CHECK(rej.body.find("of type [boolean]") != std::string::npos);
    }
  }

  // The first record written makes the data stream, mapped by the template.
  const std::string ns = UniqueNamespace("setup");
  auto st = OpenStore(e, ns);
  StoreCorpus c;
  AppendStats as;
  REQUIRE(st->Append(std::span<const ParsedRecord* const>(c.ptrs.data(), 3), &as).message() == "");
  CHECK(as.inserted == 3);
  auto ind = e.Admin("GET", "/_cat/indices/.ds-logs-iosonar.trace-" + ns + "-*?h=index&expand_wildcards=all");
  INFO(ind.body);
  CHECK(ind.status == 200);
  CHECK(ind.body.find(".ds-logs-iosonar.trace-" + ns) != std::string::npos);
  auto map = e.Admin("GET", "/logs-iosonar.trace-" + ns + "/_mapping");
  INFO(map.body);
  CHECK(map.body.find("\"bytes\":{\"type\":\"long\"") != std::string::npos);
  CHECK(map.body.find("\"dynamic\":\"false\"") != std::string::npos);
  EnsureTemplates(e);
}
REAL_ENGINE_TEST("es-setup installs the templates the engine accepts, idempotently, and data streams use them", "[es-setup]",
                 EsSetup)

void Conformance(SearchEngine& e) {
  EnsureTemplates(e);
  auto st = OpenStore(e, UniqueNamespace("conf"));
  RunStoreConformance(*st, e.name());
}
REAL_ENGINE_TEST("the store conformance suite", "[store][conformance]", Conformance)

// Groups (composite and filters aggregations) and Span (sorted searches) in the engine.
void GroupConformance(SearchEngine& e) {
  EnsureTemplates(e);
  auto st = OpenStore(e, UniqueNamespace("grp"));
  RunGroupConformance(*st, e.name());
}
REAL_ENGINE_TEST("the store conformance suite: groups and spans", "[store][conformance]", GroupConformance)

// Documents Logstash writes carry data_stream.* (an object), tags and
// @version beside the record's fields: Scan reads the record and ignores them.
void LogstashDocuments(SearchEngine& e) {
  EnsureTemplates(e);
  const std::string ns = UniqueNamespace("ls");
  const std::string stream = "logs-iosonar.trace-" + ns;
  StoreCorpus c;
  std::string body;
  for (int i = 0; i < 3; ++i) {
    std::string src;
    AppendRecordJson(&src, *c.ptrs[static_cast<size_t>(i)]);
    src.pop_back();  // the closing brace
    src += ",\"data_stream\":{\"type\":\"logs\",\"dataset\":\"iosonar.trace\",\"namespace\":\"" + ns +
           "\"},\"tags\":[\"iosonar\",\"beats_input_raw_event\"],\"@version\":\"1\"}";
    body += "{\"create\":{\"_index\":\"" + stream + "\",\"_id\":\"77-" + std::to_string(i) + "\"}}\n" + src + "\n";
  }
  auto r = e.Admin("POST", "/_bulk?refresh=true", body);
  INFO(r.body);
  REQUIRE(r.status == 200);
  REQUIRE(r.body.find("\"errors\":false") != std::string::npos);
  auto st = OpenStore(e, ns);
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.fields = {field::kEventSeq, field::kIoBytes};
  std::vector<int64_t> seqs;
  Status s = st->Scan(q, [&](const Row& row) { return seqs.push_back(row.Int(0)), true; });
  INFO(s.message());
  REQUIRE(s.ok());
  CHECK(seqs == std::vector<int64_t>{0, 1, 2});

  // A metrics dataset is read from the whole _source (es_store.cc): the
  // parser, not the engine, leaves out what was not asked for.
  const std::string mstream = "metrics-iosonar.oss-" + ns;
  body.clear();
  for (int i = 0; i < 3; ++i) {
    body += "{\"create\":{\"_index\":\"" + mstream + "\",\"_id\":\"78-" + std::to_string(i) + "\"}}\n" +
            "{\"@timestamp\":\"" + FormatIsoMillis(kConfT0 + i * 1000000000LL) +
            "\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":78,\"event.seq\":" + std::to_string(i) +
            ",\"host.name\":\"oss0\",\"lustre.fs\":\"fs\",\"lustre.target\":\"fs-OST000" + std::to_string(i) +
            "\",\"oss.write_bytes\":" + std::to_string(1000 * (i + 1)) +
            ",\"data_stream\":{\"type\":\"metrics\",\"dataset\":\"iosonar.oss\",\"namespace\":\"" + ns +
            "\"},\"tags\":[\"iosonar\"],\"@version\":\"1\"}\n";
  }
  r = e.Admin("POST", "/_bulk?refresh=true", body);
  INFO(r.body);
  REQUIRE(r.status == 200);
  REQUIRE(r.body.find("\"errors\":false") != std::string::npos);
  ScanQuery m;
  m.dataset = dataset::kOss;
  m.fields = {field::kLustreTarget, field::kOssWriteBytes};
  std::vector<std::string> got;
  s = st->Scan(m, [&](const Row& row) {
    got.push_back(std::string(row.Str(0)) + "=" + std::to_string(row.Int(1)));
    return true;
  });
  INFO(s.message());
  REQUIRE(s.ok());
  CHECK(got == std::vector<std::string>{"fs-OST0000=1000", "fs-OST0001=2000", "fs-OST0002=3000"});
}
REAL_ENGINE_TEST("Scan reads documents that carry data_stream.*, tags and @version (as Logstash writes them)", "[store]",
                 LogstashDocuments)

// The group keys (es_client.h): iosonar's writers add iosonar.key.* to trace
// documents, an older writer (a Logstash pipeline without the ruby filter)
// does not. Groups() over a key's parts gives, over a mix of both, the groups
// SQLite gives; the keys are doc values only (not in _source); a key that is
// not in the form is an error naming the field.
void GroupKeys(SearchEngine& e) {
  EnsureTemplates(e);
  const std::string ns = UniqueNamespace("gk");
  ParsedLines lines;
  for (int i = 0; i < 90; ++i) {
    // Paths with digits and colons (the key's own syntax), a non-ASCII one; some records without io.fd.
    const std::string path = "/p/3:ab/" + std::string(static_cast<size_t>(i % 4) * 3, ':') + "12:" + std::to_string(i % 5) +
                             (i % 11 == 0 ? "/d\u00e9j\u00e0" : "");
    lines.Add("{\"@timestamp\":\"" + FormatIsoMillis(kConfT0 + i * 1000000) +
              "\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":91,\"event.seq\":" + std::to_string(i) +
              ",\"host.name\":\"n" + std::to_string(i % 2) + "\",\"job.id\":\"gk\",\"process.pid\":" + std::to_string(100 + i % 3) + ",\"process.tid\":1,\"event.start_ns\":" +
              std::to_string(kConfT0 + i * 1000000) + ",\"event.end_ns\":" + std::to_string(kConfT0 + i * 1000000 + 500) +
              ",\"io.duration_ns\":" + std::to_string(100 + i) +
              ",\"io.op\":\"" + (i % 3 == 0 ? "read" : i % 3 == 1 ? "write" : "open") + "\",\"io.layer\":\"posix\",\"file.path\":\"" +
              path + "\",\"file.id\":\"" + std::to_string(1000 + i % 5) + "\"" +
              (i % 7 == 0 ? std::string() : ",\"io.fd\":" + std::to_string(3 + i % 2)) +
              ",\"io.size\":" + std::to_string(i % 2 ? 4096 : 65536) + ",\"io.errno\":" + std::to_string(i % 13 == 0 ? 5 : 0) +
              ",\"io.count\":" + std::to_string(1 + i % 4) + ",\"io.bytes\":" + std::to_string(4096 * (1 + i)) +
              ",\"io.ops_sequential\":" + std::to_string(i % 4) + "}");
  }
  // Even records through the store (with keys), odd ones as an older writer would send them.
  std::vector<const ParsedRecord*> keyed, plain;
  for (size_t i = 0; i < lines.ptrs.size(); ++i) (i % 2 ? plain : keyed).push_back(lines.ptrs[i]);
  auto st = OpenStore(e, ns);
  REQUIRE(st->Append(keyed, nullptr).message() == "");
  const std::string stream = "logs-iosonar.trace-" + ns;
  std::string body;
  for (const ParsedRecord* r : plain) {
    std::string src;
    AppendRecordJson(&src, *r);
    body += "{\"create\":{\"_index\":\"" + stream + "\",\"_id\":\"" + DocId(*r) + "\"}}\n" + src + "\n";
  }
  auto b = e.Admin("POST", "/_bulk?refresh=true", body);
  INFO(b.body);
  REQUIRE(b.status == 200);
  REQUIRE(b.body.find("\"errors\":false") != std::string::npos);
  REQUIRE(e.Admin("POST", "/" + stream + "/_refresh", "").status == 200);
  // The keys are there for the even half, as doc values, and not in _source.
  for (const GroupKeyField& k : GroupKeyFields()) {
    auto c = e.Admin("POST", "/" + stream + "/_count", std::string("{\"query\":{\"exists\":{\"field\":\"") + k.name + "\"}}}");
    INFO(c.body);
    CHECK(c.body.find("\"count\":45") != std::string::npos);
  }
  auto one = e.Admin("POST", "/" + stream + "/_search", "{\"size\":90}");
  CHECK(one.body.find("\"event.seq\"") != std::string::npos);
  CHECK(one.body.find("iosonar.key") == std::string::npos);
  CHECK(one.body.find("5:posix") == std::string::npos);

  TempDir dir;
  auto sq = OpenSqliteStore(dir.path());
  REQUIRE(sq.ok());
  REQUIRE((*sq)->Append(lines.ptrs, nullptr).message() == "");
  std::vector<GroupQuery> qs(3);
  for (GroupQuery& q : qs) {
    q.dataset = dataset::kTrace;
    q.filters = {{field::kJobId, "gk"}};
    q.sums = {field::kIoCount, field::kIoBytes, field::kIoOpsSequential};
    q.present = {field::kIoFd, field::kIoBytes};  // io.fd: absent from every 7th record
  }
  qs[0].keys = GroupKeyFields()[0].parts;
  qs[1].keys = GroupKeyFields()[1].parts;
  qs[2].keys = {field::kIoOp, field::kHostName};  // no group key: by the parts only
  qs.push_back(qs[2]);  // a group key and a split of more than 8 buckets: the key and a date_histogram
  qs[3].keys = {field::kIoLayer, field::kIoOp};
  qs[3].split_field = field::kEventStartNs;
  qs[3].split_start = kConfT0 + 3;
  qs[3].split_width = 10000000;
  qs[3].split_count = 12;
  using Sums = std::map<std::tuple<size_t, std::vector<std::string>, size_t>, std::vector<int64_t>>;
  auto groups = [&](Store& s) {
    Sums out;
    Status gs = s.Groups(qs, [&](size_t w, const Group& g) {
      auto& v = out[{w, g.keys, g.split}];
      v.resize(1 + g.sums.size() + g.present.size());
      v[0] += static_cast<int64_t>(g.count);
      for (size_t j = 0; j < g.sums.size(); ++j) v[1 + j] += g.sums[j];
      for (size_t j = 0; j < g.present.size(); ++j) v[1 + g.sums.size() + j] += static_cast<int64_t>(g.present[j]);
      return true;
    });
    INFO(gs.message());
    REQUIRE(gs.ok());
    return out;
  };
  const Sums want = groups(**sq), got = groups(*st);
  CHECK(want.size() > 40);
  CHECK(got == want);

  // A key not in the form: an error naming the field, not wrong groups.
  const std::string bad_ns = UniqueNamespace("gkbad");
  std::string src;
  AppendRecordJson(&src, *lines.ptrs[0]);
  src.pop_back();
  src += ",\"iosonar\":{\"key\":{\"file\":\"7:posix\"}}}";
  auto bb = e.Admin("POST", "/_bulk?refresh=true",
                    "{\"create\":{\"_index\":\"logs-iosonar.trace-" + bad_ns + "\",\"_id\":\"91-0\"}}\n" + src + "\n");
  REQUIRE(bb.body.find("\"errors\":false") != std::string::npos);
  auto bad = OpenStore(e, bad_ns);
  Status bs = bad->Groups(std::span<const GroupQuery>(&qs[0], 1), [](size_t, const Group&) { return true; });
  CHECK_FALSE(bs.ok());
  CHECK(bs.message().find("iosonar.key.file") != std::string::npos);
}
REAL_ENGINE_TEST("Groups over a group key's parts: records with the key and without it (an older writer) give SQLite's groups",
                 "[store][group-keys]", GroupKeys)

}  // namespace

namespace {

// A point in time that disappears mid-scan (OpenSearch can delete them all:
// DELETE /_search/point_in_time/_all) is reopened and the scan goes on after
// the last record given: each record once, in order.
TEST_CASE("real-opensearch: a scan whose point in time is deleted mid-way reopens it and gives each record once",
          "[real][opensearch][store]") {
  SearchEngine* e = EngineOrSkip(EngineKind::kOpenSearch);
  if (!e) return;
  EnsureTemplates(*e);
  const std::string ns = UniqueNamespace("pit");
  auto st = OpenStore(*e, ns);
  ParsedLines pl;
  for (int i = 0; i < 12000; ++i)
    pl.Add("{\"@timestamp\":\"2026-11-22T07:09:" + std::string(i % 2 ? "12" : "13") + ".000Z\",\"event.dataset\":\"iosonar.tracer\","
           "\"event.stream\":" + std::to_string(9 + i % 3) + ",\"event.seq\":" + std::to_string(i) + ",\"host.name\":\"n1\","
           "\"process.pid\":7,\"event.action\":\"exit\",\"tracer.raw_ops\":1,\"tracer.records\":1,\"tracer.dropped\":0,"
           "\"tracer.spooled\":0}");
  AppendStats as;
  REQUIRE(st->Append(pl.span(), &as).message() == "");
  REQUIRE(as.inserted == 12000);
  ScanQuery q;
  q.dataset = dataset::kTracer;
  q.fields = {field::kTimestamp, field::kEventStream, field::kEventSeq};
  std::set<int64_t> seen;
  size_t rows = 0, dupes = 0;
  bool ordered = true, deleted = false;
  std::tuple<int64_t, int64_t, int64_t> last{0, 0, 0};
  Status s = st->Scan(q, [&](const Row& r) {
    ++rows;
    if (!seen.insert(r.Int(2)).second) ++dupes;
    std::tuple<int64_t, int64_t, int64_t> k{r.Int(0), r.Int(1), r.Int(2)};
    if (k < last) ordered = false;
    last = k;
    if (rows == 7000) {  // mid second page (5,000 a page): the scan's PIT is deleted
      auto d = e->Admin("DELETE", "/_search/point_in_time/_all");
      deleted = d.status == 200 && d.body.find("\"successful\":true") != std::string::npos;
    }
    return true;
  });
  INFO(s.message());
  REQUIRE(s.ok());
  CHECK(deleted);
  CHECK(rows == 12000);
  CHECK(dupes == 0);
  CHECK(seen.size() == 12000);
  CHECK(ordered);
}

}  // namespace
