// The Elasticsearch artifacts in es-templates/ are generated from the record
// schema (`iosonar es-templates --out es-templates`); this test regenerates
// them in memory and fails on any drift, and checks what the generator
// promises (types from the schema, priorities, data streams, ILM).
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "core/store/es_templates.h"
#include "core/records/schema.h"
#include "test/testutil/testutil.h"

using namespace iosonar;

namespace {

// The mapping of a dotted field inside a component template's properties.
const rapidjson::Value* Lookup(const rapidjson::Value& props, std::string_view dotted) {
  const rapidjson::Value* cur = &props;
  while (true) {
    auto dot = dotted.find('.');
    std::string part(dotted.substr(0, dot));
    if (!cur->IsObject() || !cur->HasMember(part.c_str())) return nullptr;
    const rapidjson::Value& node = (*cur)[part.c_str()];
    if (dot == std::string_view::npos) return &node;
    if (!node.HasMember("properties")) return nullptr;
    cur = &node["properties"];
    dotted.remove_prefix(dot + 1);
  }
}

}  // namespace

TEST_CASE("static: es-templates/ matches what the schema generates (regenerate with iosonar es-templates --out es-templates)",
          "[es][static]") {
  auto arts = GenerateEsTemplates(EsTemplateOptions{});
  REQUIRE(arts.ok());
  const std::string dir = test::SourceDir() + "/es-templates";
  std::set<std::string> want_files = {"manifest.json"};
  for (const auto& a : *arts) {
    want_files.insert(a.file);
    INFO("es-templates/" << a.file << " is stale or missing: run `build/iosonar es-templates --out es-templates`");
    REQUIRE(std::filesystem::exists(dir + "/" + a.file));
    CHECK(test::ReadFile(dir + "/" + a.file) == a.body);
  }
  std::set<std::string> have_files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) have_files.insert(std::filesystem::relative(e.path(), dir).string());
  CHECK(have_files == want_files);
  // The manifest lists every artifact in PUT order.
  rapidjson::Document m;
  std::string mt = test::ReadFile(dir + "/manifest.json");
  m.Parse(mt.data(), mt.size());
  REQUIRE_FALSE(m.HasParseError());
  REQUIRE(m["put_in_order"].Size() == arts->size());
  for (rapidjson::SizeType i = 0; i < m["put_in_order"].Size(); ++i) {
    CHECK(m["put_in_order"][i]["file"].GetString() == (*arts)[i].file);
    CHECK(m["put_in_order"][i]["api_path"].GetString() == (*arts)[i].api_path);
  }
}

TEST_CASE("es-templates: every dataset has a data stream template above the built-ins, every field typed as the schema says",
          "[es]") {
  auto arts = GenerateEsTemplates(EsTemplateOptions{});
  REQUIRE(arts.ok());
  std::map<std::string, const EsArtifact*> by_path;
  for (const auto& a : *arts) by_path[a.api_path] = &a;
  // ILM first, index templates last (they reference the others).
  CHECK((*arts).front().api_path.rfind("/_ilm/policy/", 0) == 0);
  CHECK((*arts).back().api_path.rfind("/_index_template/", 0) == 0);
  for (const auto& ds : schema::Datasets()) {
    const std::string base = std::string(ds.stream_type) + "-" + std::string(ds.name);
    INFO(base);
    REQUIRE(by_path.count("/_index_template/" + base));
    rapidjson::Document it;
    it.Parse(by_path["/_index_template/" + base]->body.c_str());
    REQUIRE_FALSE(it.HasParseError());
    CHECK(it["priority"].GetInt() > 100);
    CHECK(it["data_stream"].IsObject());
    CHECK(std::string(it["index_patterns"][0].GetString()) == base + "-*");
    for (const auto& c : it["composed_of"].GetArray()) CHECK(by_path.count("/_component_template/" + std::string(c.GetString())));
    rapidjson::Document mp;
    mp.Parse(by_path["/_component_template/" + base + "@mappings"]->body.c_str());
    REQUIRE_FALSE(mp.HasParseError());
    const auto& props = mp["template"]["mappings"]["properties"];
    for (const auto* f : schema::FieldsOf(ds.name)) {
      INFO(f->name);
      const auto* m = Lookup(props, f->name);
      REQUIRE(m);
      CHECK((*m)["type"].GetString() == schema::TypeName(f->type));
      if (ds.stream_type == "metrics" && f->metric == schema::Metric::kGauge)
        CHECK(std::string((*m)["time_series_metric"].GetString()) == "gauge");
      if (ds.stream_type == "metrics" && f->metric == schema::Metric::kCounter)
        CHECK(std::string((*m)["time_series_metric"].GetString()) == "counter");
      if (ds.stream_type == "metrics" && f->metric == schema::Metric::kDimension && f->type == schema::Type::kKeyword)
        CHECK((*m)["time_series_dimension"].GetBool());
    }
  }
}

TEST_CASE("es-templates: retention is configurable and malformed values are refused", "[es]") {
  EsTemplateOptions o;
  o.raw_retention = "90d";
  auto arts = GenerateEsTemplates(o);
  REQUIRE(arts.ok());
  CHECK(arts->front().body.find("\"min_age\": \"90d\"") != std::string::npos);
  o.raw_retention = "six months";
  auto bad = GenerateEsTemplates(o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("six months") != std::string::npos);
  o.raw_retention = "180d";
  o.rollover_max_primary_shard_size = "50 GB";
  CHECK_FALSE(GenerateEsTemplates(o).ok());
}

TEST_CASE("static: logstash-pipelines/iosonar-stream-types.yml matches the schema (regenerate with iosonar es-templates "
          "--out es-templates --logstash-dict logstash-pipelines/iosonar-stream-types.yml)",
          "[es][static]") {
  CHECK(test::ReadFile(test::SourceDir() + "/logstash-pipelines/iosonar-stream-types.yml") == StreamTypesYaml());
}

namespace {

std::string AllBodies(const iosonar::EsTemplateOptions& o) {
  auto arts = iosonar::GenerateEsTemplates(o);
  REQUIRE(arts.ok());
  std::string all;
  for (const auto& a : *arts) all += a.api_path + "\n" + a.body;
  return all;
}

}  // namespace

TEST_CASE("es-templates: only what the target engine accepts (Elasticsearch 8.15 / 8.16, integ-test, OpenSearch)",
          "[es]") {
  using iosonar::EngineInfo;
  iosonar::EsTemplateOptions es815;  // the default: full Elasticsearch 8.15 (docker-compose.yml's)
  const std::string a = AllBodies(es815);
  // A boolean time_series_dimension makes Elasticsearch 8.15 reject the whole
  // template (seen on the real 8.15.5): health.inodes is a boolean dimension.
  rapidjson::Document d;
  auto arts = iosonar::GenerateEsTemplates(es815);
  REQUIRE(arts.ok());
  int bool_dims = 0, dims = 0;
  for (const auto& art : *arts) {
    for (size_t p = art.body.find("\"time_series_dimension\""); p != std::string::npos;
         p = art.body.find("\"time_series_dimension\"", p + 1)) {
      ++dims;
      size_t open = art.body.rfind('{', p);
      if (art.body.substr(open, p - open).find("\"boolean\"") != std::string::npos) ++bool_dims;
    }
  }
  CHECK(dims > 0);
  CHECK(bool_dims == 0);
  CHECK(a.find("/_ilm/policy/iosonar-raw") != std::string::npos);
  CHECK(a.find("index.lifecycle.name") != std::string::npos);
  CHECK(a.find("constant_keyword") != std::string::npos);
  CHECK(a.find("ignore_missing_component_templates") != std::string::npos);

  iosonar::EsTemplateOptions es816;
  es816.target.major = 8;
  es816.target.minor = 16;
  const std::string b = AllBodies(es816);
  CHECK(b.find("\"type\": \"boolean\",\n              \"time_series_dimension\": true") != std::string::npos);

  // Elasticsearch's integ-test distribution: no ILM, no constant_keyword module.
  iosonar::EsTemplateOptions integ;
  integ.target.ilm = false;
  integ.target.constant_keyword = false;
  const std::string c = AllBodies(integ);
  CHECK(c.find("_ilm") == std::string::npos);
  CHECK(c.find("index.lifecycle.name") == std::string::npos);
  CHECK(c.find("constant_keyword") == std::string::npos);
  CHECK(c.find("time_series_metric") != std::string::npos);

  // OpenSearch: no time_series_*, no ignore_missing_component_templates, no
  // ILM; ISM policies where the plugin is.
  iosonar::EsTemplateOptions os;
  os.target.flavor = EngineInfo::kOpenSearch;
  os.target.major = 2;
  os.target.minor = 19;
  os.target.ilm = false;
  os.target.constant_keyword = false;
  const std::string e = AllBodies(os);
  CHECK(e.find("time_series") == std::string::npos);
  CHECK(e.find("ignore_missing_component_templates") == std::string::npos);
  CHECK(e.find("_ilm") == std::string::npos);
  CHECK(e.find("_plugins/_ism") == std::string::npos);
  os.target.ism = true;
  const std::string f = AllBodies(os);
  CHECK(f.find("/_plugins/_ism/policies/iosonar-raw") != std::string::npos);
  CHECK(f.find("/_plugins/_ism/policies/iosonar-results") != std::string::npos);
  CHECK(f.find("\"logs-iosonar.trace-*\"") != std::string::npos);
  CHECK(f.find("\"min_index_age\": \"180d\"") != std::string::npos);
  CHECK(f.find("index.lifecycle.name") == std::string::npos);
}
