// Shared by the real-engine tests (test/real/): one TEST_CASE per engine
// from one body, the engine of the process, and the templates installed once.
#pragma once
#include <catch2/catch.hpp>
#include <iostream>
#include <string>

#include "test/testutil/search_engine.h"

namespace iosonar::test {

// The process's engine of this kind; nullptr after printing the SKIP marker
// ctest looks for (only with IOSONAR_SKIP_REAL_ENGINES=1).
inline SearchEngine* EngineOrSkip(EngineKind kind) {
  std::string why;
  SearchEngine* e = SearchEngine::Shared(kind, &why);
  if (!e) std::cout << "IOSONAR-SKIP: " << why << "\n";
  return e;
}

// Documents in the indices or data streams the pattern names, after a refresh.
inline uint64_t CountIn(SearchEngine& e, const std::string& pattern) {
  REQUIRE(e.Admin("POST", "/" + pattern + "/_refresh?ignore_unavailable=true").status == 200);
  auto r = e.Admin("GET", "/" + pattern + "/_count");
  INFO(r.body);
  REQUIRE(r.status == 200);
  auto p = r.body.find("\"count\":");
  REQUIRE(p != std::string::npos);
  return std::stoull(r.body.substr(p + 8));
}

// `iosonar es-setup` run once per engine and process (idempotent); REQUIREs success.
void EnsureTemplates(SearchEngine& e);

}  // namespace iosonar::test

// TEST_CASE "real-opensearch: NAME" and "real-es: NAME", both calling fn(SearchEngine&).
#define IOSONAR_REAL_ENGINE_TEST_(line, name, tags, fn)                                              \
  TEST_CASE("real-opensearch: " name, "[real][opensearch]" tags) {                                   \
    if (auto* e = iosonar::test::EngineOrSkip(iosonar::test::EngineKind::kOpenSearch)) fn(*e);       \
  }                                                                                                  \
  TEST_CASE("real-es: " name, "[real][es]" tags) {                                                   \
    if (auto* e = iosonar::test::EngineOrSkip(iosonar::test::EngineKind::kElasticsearch)) fn(*e);    \
  }
#define REAL_ENGINE_TEST(name, tags, fn) IOSONAR_REAL_ENGINE_TEST_(__LINE__, name, tags, fn)
