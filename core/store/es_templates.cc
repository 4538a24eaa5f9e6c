#include "core/store/es_templates.h"

#include <map>
#include <memory>

#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/records/schema.h"

namespace iosonar {
namespace {

bool ValidWithUnits(const std::string& s, std::initializer_list<const char*> units) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i > 9) return false;
  std::string u = s.substr(i);
  for (const char* x : units)
    if (u == x) return true;
  return false;
}

bool IsResult(std::string_view dataset) { return dataset.starts_with("iosonar.result."); }

std::string_view EsType(schema::Type t) {
  switch (t) {
    case schema::Type::kKeyword: return "keyword";
    case schema::Type::kLong: return "long";
    case schema::Type::kDouble: return "double";
    case schema::Type::kDate: return "date";
    case schema::Type::kBool: return "boolean";
  }
  return "keyword";
}

// Kibana's field-format units where one fits.
std::string_view EsUnit(std::string_view u) {
  if (u == "bytes") return "byte";
  if (u == "ns") return "nanos";
  if (u == "bytes/s") return "byte";  // formatted as bytes; the rate is in the description
  return "";
}

// A tree of dotted names: "io.bytes" -> io { bytes }.
struct Node {
  const schema::Field* leaf = nullptr;
  std::map<std::string, std::unique_ptr<Node>> kids;
};

// What the mappings of one dataset may mark: time-series parameters only in
// metrics streams and only on an engine that has them (Elasticsearch >= 8;
// OpenSearch rejects the unknown parameters), boolean dimensions only where
// accepted (Elasticsearch >= 8.16; 8.15 rejects the whole template).
struct Marks {
  bool metrics = false;   // time_series_* on this dataset
  bool bool_dim = false;  // time_series_dimension on boolean
};

void WriteChildren(JsonWriter& w, const Node& n, const Marks& marks);

// One field (leaf) or object (its properties).
void WriteNode(JsonWriter& w, const Node& kid, const Marks& marks) {
  const bool metrics = marks.metrics;
  w.BeginObject();
  if (kid.leaf) {
    const auto& f = *kid.leaf;
    const bool numeric = f.type == schema::Type::kLong || f.type == schema::Type::kDouble;
    const bool dimension = metrics && f.metric == schema::Metric::kDimension &&
                           (f.type == schema::Type::kKeyword || f.type == schema::Type::kLong ||
                            (f.type == schema::Type::kBool && marks.bool_dim));
    w.Kv("type", EsType(f.type));
    // Dimensions must index every value, so ignore_above only on the others.
    if (f.type == schema::Type::kKeyword && !dimension) w.Kv("ignore_above", 1024);
    if (dimension) w.Kv("time_series_dimension", true);
    if (metrics && numeric) {
      if (f.metric == schema::Metric::kCounter) w.Kv("time_series_metric", "counter");
      if (f.metric == schema::Metric::kGauge) w.Kv("time_series_metric", "gauge");
    }
    auto unit = EsUnit(f.unit);
    if (numeric && (!unit.empty() || f.metric == schema::Metric::kCounter || f.metric == schema::Metric::kGauge)) {
      w.Key("meta");
      w.BeginObject();
      if (!unit.empty()) w.Kv("unit", unit);
      if (f.metric == schema::Metric::kCounter) w.Kv("metric_type", "counter");
      if (f.metric == schema::Metric::kGauge) w.Kv("metric_type", "gauge");
      w.EndObject();
    }
  } else {
    w.Key("properties");
    WriteChildren(w, kid, marks);
  }
  w.EndObject();
}

void WriteChildren(JsonWriter& w, const Node& n, const Marks& marks) {
  w.BeginObject();
  for (const auto& [name, kid] : n.kids) {
    w.Key(name);
    WriteNode(w, *kid, marks);
  }
  w.EndObject();
}

std::string Finish(std::string s) {
  s.push_back('\n');
  return s;
}

}  // namespace

std::string StreamTypesYaml() {
  std::string y =
      "# event.dataset -> data stream type (logs|metrics), generated from the record schema\n"
      "# (core/records/datasets.def) by `iosonar es-templates --logstash-dict FILE`; a test checks it.\n";
  for (const auto& ds : schema::Datasets()) {
    y += "\"";
    y += ds.name;
    y += "\": \"";
    y += ds.stream_type;
    y += "\"\n";
  }
  return y;
}

bool ValidEsDuration(const std::string& s) { return ValidWithUnits(s, {"d", "h", "m", "s"}); }
bool ValidEsByteSize(const std::string& s) { return ValidWithUnits(s, {"b", "kb", "mb", "gb", "tb"}); }

namespace {

// The ILM policy `name`: roll over by age or size while hot, delete after `retention`.
EsArtifact IlmPolicy(const std::string& name, const std::string& retention, const EsTemplateOptions& o) {
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginObject();
  w.Key("policy");
  w.BeginObject();
  w.Key("_meta");
  KvObject(w, "managed_by", "iosonar", "description",
           name == "iosonar-raw" ? "iosonar raw records (traces, samples, events)" : "iosonar analysis results");
  w.Key("phases");
  w.BeginObject();
  w.Key("hot");
  w.BeginObject();
  w.Kv("min_age", "0ms");
  w.Key("actions");
  w.BeginObject();
  w.Key("rollover");
  KvObject(w, "max_age", o.rollover_max_age, "max_primary_shard_size", o.rollover_max_primary_shard_size);
  w.EndObject();
  w.EndObject();
  w.Key("delete");
  w.BeginObject();
  w.Kv("min_age", retention);
  w.Key("actions");
  w.BeginObject();
  w.Key("delete");
  w.BeginObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return {"ilm/" + name + ".json", "/_ilm/policy/" + name, Finish(b)};
}

// The same policy for OpenSearch's Index State Management plugin: hot
// (rollover by age or primary shard size) -> delete at `retention`, attached
// to the data streams' backing indices by its ism_template.
EsArtifact IsmPolicy(const std::string& name, const std::string& retention, const EsTemplateOptions& o) {
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginObject();
  w.Key("policy");
  w.BeginObject();
  w.Kv("description", name == "iosonar-raw" ? "iosonar raw records (traces, samples, events); managed by iosonar"
                                            : "iosonar analysis results; managed by iosonar");
  w.Kv("default_state", "hot");
  w.Key("states");
  w.BeginArray();
  w.BeginObject();
  w.Kv("name", "hot");
  w.Key("actions");
  w.BeginArray();
  w.BeginObject();
  w.Key("rollover");
  KvObject(w, "min_index_age", o.rollover_max_age, "min_primary_shard_size", o.rollover_max_primary_shard_size);
  w.EndObject();
  w.EndArray();
  w.Key("transitions");
  w.BeginArray();
  w.BeginObject();
  w.Kv("state_name", "delete");
  w.Key("conditions");
  w.BeginObject();
  w.Kv("min_index_age", retention);
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.BeginObject();
  w.Kv("name", "delete");
  w.Key("actions");
  w.BeginArray();
  w.BeginObject();
  w.Key("delete");
  w.BeginObject();
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.Key("transitions");
  w.BeginArray();
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.Key("ism_template");
  w.BeginArray();
  w.BeginObject();
  w.Key("index_patterns");
  w.BeginArray();
  const bool results = name == "iosonar-results";
  for (const auto& ds : schema::Datasets())
    if (IsResult(ds.name) == results) w.String(std::string(ds.stream_type) + "-" + std::string(ds.name) + "-*");
  w.EndArray();
  w.Kv("priority", o.priority);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return {"ism/" + name + ".json", "/_plugins/_ism/policies/" + name, Finish(b)};
}

// iosonar@settings-raw / -results: the lifecycle policy, compression, one shard.
EsArtifact SettingsComponent(const char* kind, const EngineInfo& e) {
  std::string name = std::string("iosonar@settings-") + kind;
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginObject();
  w.Key("template");
  w.BeginObject();
  w.Key("settings");
  w.BeginObject();
  if (e.ilm) w.Kv("index.lifecycle.name", std::string("iosonar-") + kind);
  KvAll(w, "index.codec", "best_compression", "index.number_of_shards", 1, "index.refresh_interval", "5s");
  w.EndObject();
  w.EndObject();
  w.Key("_meta");
  w.BeginObject();
  w.Kv("managed_by", "iosonar");
  w.EndObject();
  w.EndObject();
  return {"component_template/" + name + ".json", "/_component_template/" + name, Finish(b)};
}

// The dataset's fields as a tree of their dotted names; a field that is a
// prefix of another, or the same twice, is an error.
Status FieldTree(const schema::Dataset& ds, Node* root) {
  for (const auto* f : schema::FieldsOf(ds.name)) {
    Node* n = root;
    std::string_view rest = f->name;
    while (true) {
      auto dot = rest.find('.');
      std::string part(rest.substr(0, dot));
      if (n->leaf) return Status::Invalid("field " + std::string(f->name) + ": a prefix of it is itself a field");
      auto& kid = n->kids[part];
      if (!kid) kid = std::make_unique<Node>();
      n = kid.get();
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
    }
    if (n->leaf || !n->kids.empty()) return Status::Invalid("field " + std::string(f->name) + " clashes with another field");
    n->leaf = f;
  }
  return Status::Ok();
}

// BASE@mappings: the fields' mappings (data_stream.* is added by
// Elasticsearch/Logstash routing: constant per stream).
Result<EsArtifact> MappingsComponent(const schema::Dataset& ds, const std::string& base, const Node& root, bool metrics,
                                     const EngineInfo& e) {
  Marks marks;
  marks.metrics = metrics && e.time_series();
  marks.bool_dim = e.bool_dimension();
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginObject();
  w.Key("template");
  w.BeginObject();
  w.Key("mappings");
  w.BeginObject();
  w.Kv("dynamic", false);
  w.Kv("date_detection", false);
  w.Key("properties");
  w.BeginObject();
  w.Key("data_stream");
  w.BeginObject();
  w.Key("properties");
  w.BeginObject();
  for (const char* k : {"type", "dataset", "namespace"}) {
    w.Key(k);
    w.BeginObject();
    // constant_keyword where the engine has it without a fixed value (Elasticsearch's
    // constant-keyword module); else keyword (the integ-test distributions, OpenSearch).
    w.Kv("type", e.constant_keyword ? "constant_keyword" : "keyword");
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  for (const auto& [name, kid] : root.kids) {
    if (name == "data_stream") return Status::Invalid("the schema may not define data_stream.* fields");
    if (name == "iosonar") return Status::Invalid("the schema may not define iosonar.* fields (the engine's group keys)");
    w.Key(name);
    WriteNode(w, *kid, marks);
  }
  // The group keys (es_client.h): doc values for aggregations only, not
  // indexed and not in _source (a record read back is the record written).
  std::vector<const GroupKeyField*> group_keys;
  for (const GroupKeyField& k : GroupKeyFields())
    if (ds.name == k.dataset) group_keys.push_back(&k);
  if (!group_keys.empty()) {
    w.Key("iosonar");
    w.BeginObject();
    w.Key("properties");
    w.BeginObject();
    w.Key("key");
    w.BeginObject();
    w.Key("properties");
    w.BeginObject();
    for (const GroupKeyField* k : group_keys) {
      w.Key(std::string_view(k->name).substr(std::string_view("iosonar.key.").size()));
      KvObject(w, "type", "keyword", "index", false, "doc_values", true);
    }
    w.EndObject();
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  if (!group_keys.empty()) {
    w.Key("_source");
    w.BeginObject();
    w.Key("excludes");
    w.BeginArray();
    w.String("iosonar.key.*");
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  w.Key("_meta");
  KvObject(w, "managed_by", "iosonar", "dataset", ds.name, "description", ds.description);
  w.EndObject();
  return EsArtifact{"component_template/" + base + "@mappings.json", "/_component_template/" + base + "@mappings", Finish(b)};
}

// BASE@custom: empty, the user's.
EsArtifact CustomComponent(const std::string& base) {
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginObject();
  w.Key("template");
  w.BeginObject();
  w.EndObject();
  w.Key("_meta");
  KvObject(w, "managed_by", "iosonar",
           "description", "Yours: settings and mappings added here survive `iosonar es-setup`");
  w.EndObject();
  return {"component_template/" + base + "@custom.json", "/_component_template/" + base + "@custom", Finish(b)};
}

// The index template of the dataset's data stream: settings, mappings, @custom.
EsArtifact IndexTemplate(const schema::Dataset& ds, const std::string& base, const EsTemplateOptions& o) {
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginObject();
  w.Key("index_patterns");
  w.BeginArray();
  w.String(base + "-*");
  w.EndArray();
  w.Key("data_stream");
  w.BeginObject();
  w.EndObject();
  w.Kv("priority", o.priority);
  w.Key("composed_of");
  w.BeginArray();
  w.String(std::string("iosonar@settings-") + (IsResult(ds.name) ? "results" : "raw"));
  w.String(base + "@mappings");
  w.String(base + "@custom");
  w.EndArray();
  if (o.target.ignore_missing_components()) {
    w.Key("ignore_missing_component_templates");
    w.BeginArray();
    w.String(base + "@custom");
    w.EndArray();
  }
  w.Key("_meta");
  KvObject(w, "managed_by", "iosonar", "dataset", ds.name);
  w.EndObject();
  return {"index_template/" + base + ".json", "/_index_template/" + base, Finish(b)};
}

}  // namespace

Result<std::vector<EsArtifact>> GenerateEsTemplates(const EsTemplateOptions& o) {
  if (!ValidEsDuration(o.raw_retention)) return Status::Invalid("raw retention '" + o.raw_retention + "': expected e.g. 180d");
  if (!ValidEsDuration(o.results_retention))
    return Status::Invalid("results retention '" + o.results_retention + "': expected e.g. 730d");
  if (!ValidEsDuration(o.rollover_max_age)) return Status::Invalid("rollover max age '" + o.rollover_max_age + "': expected e.g. 1d");
  if (!ValidEsByteSize(o.rollover_max_primary_shard_size))
    return Status::Invalid("rollover size '" + o.rollover_max_primary_shard_size + "': expected e.g. 50gb");
  std::vector<EsArtifact> out;
  if (o.target.ilm) {
    out.push_back(IlmPolicy("iosonar-raw", o.raw_retention, o));
    out.push_back(IlmPolicy("iosonar-results", o.results_retention, o));
  } else if (o.target.ism) {
    out.push_back(IsmPolicy("iosonar-raw", o.raw_retention, o));
    out.push_back(IsmPolicy("iosonar-results", o.results_retention, o));
  }
  for (const char* kind : {"raw", "results"}) out.push_back(SettingsComponent(kind, o.target));
  // Per-dataset mappings and @custom; the index templates after all of them.
  std::vector<EsArtifact> index_templates;
  for (const auto& ds : schema::Datasets()) {
    const std::string base = std::string(ds.stream_type) + "-" + std::string(ds.name);
    Node root;
    if (Status st = FieldTree(ds, &root); !st.ok()) return st;
    auto mappings = MappingsComponent(ds, base, root, ds.stream_type == "metrics", o.target);
    if (!mappings.ok()) return mappings.status();
    out.push_back(std::move(mappings).value());
    out.push_back(CustomComponent(base));
    index_templates.push_back(IndexTemplate(ds, base, o));
  }
  for (auto& t : index_templates) out.push_back(std::move(t));
  return out;
}

}  // namespace iosonar
