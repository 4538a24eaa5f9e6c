// The store conformance suite: the same cases run against every
// implementation of the Store interface (store.h) — the embedded SQLite
// store, the Elasticsearch store through the loopback responder
// (test/unit/test_store_conformance.cc), and the Elasticsearch store on a
// real OpenSearch and Elasticsearch (test/real/). Expected values are
// computed from the generated records, independently of the stores.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/store/store.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {

constexpr int64_t kConfT0 = 1795331352000000000;  // 2026-11-22T07:09:12Z

// 600 trace records over ~30 s in two jobs (several per ms, ties on
// @timestamp), and 10 tracer records.
struct StoreCorpus : ParsedLines {
  struct Gen {
    int64_t seq, ts, bytes, rank;
    std::string job, op;
  };
  std::vector<Gen> trace;
  StoreCorpus();
};

// Runs every case on st, which must be empty; which names the backend in messages.
void RunStoreConformance(Store& st, const std::string& which);
// Groups() and Span() on st, which must be empty (SQLite and the real engines;
// the loopback responder does not play these aggregations).
void RunGroupConformance(Store& st, const std::string& which);

}  // namespace iosonar::test
