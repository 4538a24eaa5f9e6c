// The record schema: the one source of truth for every field iosonar emits.
//
// Every JSON line on the wire is a flat object whose keys are field names from
// this table (dotted names such as "io.bytes"; Elasticsearch reads the dots as
// object paths). The table is generated from the declaration lists
// core/records/fields.def and datasets.def, as are the typed ids emitters use
// (field::kIoBytes, dataset::kTrace; core/records/fields.h). The collector's
// validation, the SQLite store's tables and the Elasticsearch templates are
// all derived from Fields(). The table is immutable and thread-safe to read.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/records/fields.h"

namespace iosonar::schema {

enum class Type { kKeyword, kLong, kDouble, kDate, kBool };
// How a numeric field behaves over time (Elasticsearch time-series mode).
enum class Metric { kNone, kDimension, kCounter, kGauge };

struct Field {
  std::string_view name;
  Type type;
  std::string_view unit;         // "bytes", "ns", "1" (a count), "" for none
  Metric metric;
  bool required;                 // required in every dataset listed below
  std::string_view datasets;     // space-separated dataset names, "*" = all
  std::string_view description;
  uint64_t dataset_mask;         // the datasets as bits over Datasets() positions
  std::span<const std::string_view> values;  // allowed keyword values; empty: any
};

// Datasets (the value of event.dataset) and the kind of data stream each is.
struct Dataset {
  std::string_view name;         // e.g. "iosonar.trace"
  std::string_view stream_type;  // "logs" or "metrics"
  std::string_view description;
};

std::span<const Field> Fields();
std::span<const Dataset> Datasets();

const Field* FindField(std::string_view name);
const Dataset* FindDataset(std::string_view name);
bool FieldInDataset(const Field& f, std::string_view dataset);
bool FieldInDataset(FieldId f, DatasetId d);
const Field& FieldOf(FieldId f);
const Dataset& DatasetOf(DatasetId d);
// Fields used by one dataset, in table order.
std::vector<const Field*> FieldsOf(std::string_view dataset);
std::string_view TypeName(Type t);

// The schema as JSON (for `iosonar schema`, docs and other tools).
std::string ToJson();

}  // namespace iosonar::schema
