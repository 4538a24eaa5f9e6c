// Elasticsearch artifacts generated from the record schema (fields.def), so
// templates and schema cannot drift: `iosonar es-templates --out DIR` writes
// them (the committed copy is es-templates/, checked by a test that
// regenerates and compares), `iosonar es-setup` PUTs them.
//
// For every dataset D of stream type T (logs|metrics):
//   component template  T-D@mappings   every field of D typed (keyword, long,
//                                      double, date, boolean), dynamic: false;
//                                      in metrics streams counters/gauges are
//                                      time_series_metric and dimensions
//                                      time_series_dimension; unit/metric in meta
//   component template  T-D@custom     empty, for the administrator
//   index template      T-D            index_patterns ["T-D-*"], data_stream {},
//                                      priority 200 (> the built-in logs/metrics
//                                      templates' 100), composed of
//                                      iosonar@settings-{raw|results}, T-D@mappings,
//                                      T-D@custom (missing @custom ignored)
// plus the settings components and two ILM policies: iosonar-raw (rollover
// by age and primary shard size, delete after the raw retention, default
// 180d as Beacon kept raw records 6 months) and iosonar-results (for the
// iosonar.result.* streams, default 730d).
#pragma once
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/transport/es_client.h"

namespace iosonar {

struct EsTemplateOptions {
  std::string raw_retention = "180d";
  std::string results_retention = "730d";
  std::string rollover_max_age = "1d";
  std::string rollover_max_primary_shard_size = "50gb";
  int priority = 200;
  // The engine the artifacts are for (es-setup asks the engine; the default,
  // and the committed es-templates/, is a full Elasticsearch 8.15 distribution).
  // What changes with it: ILM policies (Elasticsearch with ILM) or ISM
  // policies (OpenSearch with the ISM plugin) or none (retention left to the
  // operator); index.lifecycle.name; time_series_* markings (Elasticsearch
  // only; on boolean fields from 8.16); constant_keyword or keyword for
  // data_stream.*; ignore_missing_component_templates (Elasticsearch >= 8.7).
  EngineInfo target;
};

struct EsArtifact {
  std::string file;      // relative to es-templates/, e.g. "index_template/logs-iosonar.trace.json"
  std::string api_path;  // REST path to PUT it to, e.g. "/_index_template/logs-iosonar.trace"
  std::string body;      // JSON, 2-space indented, ending in '\n'
};

// In the order they must be PUT: policies (ILM or ISM, if any), component templates, index templates.
// Fails if a retention or size is malformed or the schema's dotted names clash.
Result<std::vector<EsArtifact>> GenerateEsTemplates(const EsTemplateOptions& opts);

// logstash-pipelines/iosonar-stream-types.yml: event.dataset -> "logs" or
// "metrics" for the translate filter that routes records to data streams.
std::string StreamTypesYaml();

// "180d", "12h", "30m" ... (ES time units d h m s); "50gb" ... (b kb mb gb tb).
bool ValidEsDuration(const std::string& s);
bool ValidEsByteSize(const std::string& s);

}  // namespace iosonar
