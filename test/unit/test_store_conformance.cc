// The store conformance suite (test/testutil/store_conformance.h) on:
//   - the embedded SQLite store, for real;
//   - the Elasticsearch store, through the loopback responder that plays
//     Elasticsearch's documented responses (test/testutil/http_responder.h):
//     a contract test, kept beside the runs on real engines (test/real/).
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "test/testutil/http_responder.h"
#include "core/store/es_store.h"
#include "core/records/record.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "test/testutil/store_conformance.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {

struct Backend {
  std::string name;
  std::unique_ptr<test::TempDir> dir;
  std::unique_ptr<test::FakeElasticsearch> es;
  std::unique_ptr<Store> store;
};

Backend Open(const std::string& which) {
  Backend b;
  b.name = which;
  if (which == "sqlite") {
    b.dir = std::make_unique<test::TempDir>();
    auto s = OpenSqliteStore(b.dir->path());
    REQUIRE(s.ok());
    b.store = std::move(*s);
  } else {
    b.es = std::make_unique<test::FakeElasticsearch>();
    EsOptions o;
    o.backoff_initial_ms = 1;
    o.backoff_max_ms = 4;
    auto s = OpenElasticsearchStore(b.es->url(), o);
    REQUIRE(s.ok());
    b.store = std::move(*s);
  }
  return b;
}

}  // namespace

TEST_CASE("store conformance: SQLite store (real)", "[store][conformance]") {
  Backend b = Open("sqlite");
  test::RunStoreConformance(*b.store, "sqlite");
}

TEST_CASE("store conformance: SQLite store groups and spans (real)", "[store][conformance]") {
  Backend b = Open("sqlite");
  test::RunGroupConformance(*b.store, "sqlite");
}

// The same with the blocks decoded on 3 threads (Store::ScanParallel), each
// adding up its own groups and spans, and on one.
TEST_CASE("store conformance: SQLite store groups and spans, 3 scan threads and 1 (real)", "[store][conformance]") {
  for (const char* n : {"3", "1"}) {
    INFO("IOSONAR_SCAN_THREADS=" << n);
    setenv("IOSONAR_SCAN_THREADS", n, 1);
    Backend b = Open("sqlite");
    test::RunGroupConformance(*b.store, std::string("sqlite, scan threads ") + n);
    unsetenv("IOSONAR_SCAN_THREADS");
  }
}

TEST_CASE("store conformance: Elasticsearch store via the loopback responder that plays Elasticsearch (contract)",
          "[store][conformance][es][contract]") {
  Backend b = Open("es");
  test::RunStoreConformance(*b.store, "loopback responder");
  CHECK(b.es->Violations().empty());
}

TEST_CASE("store conformance: Elasticsearch store scan survives an expired PIT (contract)",
          "[store][conformance][es][contract]") {
  test::StoreCorpus c;
  Backend b = Open("es");
  AppendStats a;
  REQUIRE(b.store->Append(c.ptrs, &a).ok());
  b.es->ExpirePitsAfterSearches(0);  // the first page's search finds the PIT gone
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.fields = {field::kEventSeq};
  std::set<int64_t> seqs;
  size_t rows = 0;
  REQUIRE(b.store->Scan(q, [&](const Row& r) { return seqs.insert(r.Int(0)), ++rows, true; }).ok());
  CHECK(rows == 600);
  CHECK(seqs.size() == 600);
  CHECK(b.es->pit_expirations() == 1);
}
