#include "core/records/schema.h"

#include <array>

#include "core/base/json.h"
#include "core/base/json_kv.h"

namespace iosonar::schema {
namespace {

using T = Type;
using M = Metric;
namespace presence {
constexpr bool required = true, optional = false;
}

// ---- io.op: its values and its description come from io_ops.def ----------

constexpr std::string_view kIoOps[] = {
#define X(id, name) name,
#include "core/records/io_ops.def"
#undef X
};

// "Operation: read, write, open, ..."
constexpr std::string_view kIoOpLead = "Operation: ";
constexpr size_t IoOpDescriptionLength() {
  size_t n = kIoOpLead.size();
  for (size_t i = 0; i < std::size(kIoOps); ++i) n += (i ? 2 : 0) + kIoOps[i].size();
  return n;
}
constexpr auto kIoOpDescriptionText = [] {
  std::array<char, IoOpDescriptionLength()> a{};
  size_t k = 0;
  auto put = [&](std::string_view t) {
    for (char c : t) a[k++] = c;
  };
  put(kIoOpLead);
  for (size_t i = 0; i < std::size(kIoOps); ++i) {
    if (i) put(", ");
    put(kIoOps[i]);
  }
  return a;
}();
constexpr std::string_view kIoOpDescription{kIoOpDescriptionText.data(), kIoOpDescriptionText.size()};

constexpr std::span<const std::string_view> ValuesOf(FieldId f) {
  if (f == field::kIoOp) return kIoOps;
  return {};
}

// ---- the tables, from the declaration lists -------------------------------

constexpr std::array kDatasets = {
#define X(id, name, stream_type, description) Dataset{name, stream_type, description},
#include "core/records/datasets.def"
#undef X
};
static_assert(kDatasets.size() == kDatasetCount && kDatasetCount < 64);

// A field's dataset list as a bit set over kDatasets; kUnknownDataset when it
// names a dataset that is not declared.
constexpr uint64_t kUnknownDataset = uint64_t{1} << 63;
constexpr uint64_t DatasetMask(std::string_view list) {
  if (list == "*") return (uint64_t{1} << kDatasets.size()) - 1;
  uint64_t m = 0;
  while (!list.empty()) {
    const size_t sp = list.find(' ');
    const std::string_view tok = list.substr(0, sp);
    uint64_t bit = kUnknownDataset;
    for (size_t i = 0; i < kDatasets.size(); ++i)
      if (kDatasets[i].name == tok) bit = uint64_t{1} << i;
    m |= bit;
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return m;
}

constexpr std::array kFieldTable = {
#define X(id, name, type, unit, metric, required_, datasets, description)                                          \
  Field{name, T::k##type, unit, M::k##metric, presence::required_, datasets, description, DatasetMask(datasets), \
        ValuesOf(field::id)},
#include "core/records/fields.def"
#undef X
};
static_assert(kFieldTable.size() == kFieldCount);

constexpr bool DeclarationsAgree() {
  for (size_t i = 0; i < kFieldTable.size(); ++i) {
    const Field& f = kFieldTable[i];
    if (kAllFields[i].index() != i || kAllFields[i].name() != f.name) return false;
    if (f.dataset_mask & kUnknownDataset) return false;
    for (char c : f.name)  // emitted as JSON keys without escaping
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) return false;
  }
  for (size_t i = 0; i < kDatasets.size(); ++i)
    if (kAllDatasets[i].index() != i || kAllDatasets[i].name() != kDatasets[i].name) return false;
  return true;
}
static_assert(DeclarationsAgree(), "fields.def and datasets.def disagree (an undeclared dataset, or a name that needs escaping)");

}  // namespace

std::span<const Field> Fields() { return kFieldTable; }
std::span<const Dataset> Datasets() { return kDatasets; }

const Field* FindField(std::string_view name) {
  for (const auto& f : kFieldTable)
    if (f.name == name) return &f;
  return nullptr;
}

const Dataset* FindDataset(std::string_view name) {
  for (const auto& d : kDatasets)
    if (d.name == name) return &d;
  return nullptr;
}

bool FieldInDataset(const Field& f, std::string_view dataset) {
  const Dataset* d = FindDataset(dataset);
  if (!d) return f.datasets == "*";
  return f.dataset_mask >> (d - kDatasets.data()) & 1;
}

bool FieldInDataset(FieldId f, DatasetId d) { return kFieldTable[f.index()].dataset_mask >> d.index() & 1; }

const Field& FieldOf(FieldId f) { return kFieldTable[f.index()]; }
const Dataset& DatasetOf(DatasetId d) { return kDatasets[d.index()]; }

std::vector<const Field*> FieldsOf(std::string_view dataset) {
  std::vector<const Field*> out;
  for (const auto& f : kFieldTable)
    if (FieldInDataset(f, dataset)) out.push_back(&f);
  return out;
}

std::string_view TypeName(Type t) {
  switch (t) {
    case T::kKeyword: return "keyword";
    case T::kLong: return "long";
    case T::kDouble: return "double";
    case T::kDate: return "date";
    case T::kBool: return "boolean";
  }
  return "?";
}

static std::string_view MetricName(Metric m) {
  switch (m) {
    case M::kNone: return "";
    case M::kDimension: return "dimension";
    case M::kCounter: return "counter";
    case M::kGauge: return "gauge";
  }
  return "";
}

std::string ToJson() {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("datasets");
  w.BeginArray();
  for (const auto& d : kDatasets) {
    KvObject(w, "name", d.name, "stream_type", d.stream_type, "description", d.description);
  }
  w.EndArray();
  w.Key("fields");
  w.BeginArray();
  for (const auto& f : kFieldTable) {
    KvObject(w, "name", f.name, "type", TypeName(f.type), "unit", f.unit, "metric", MetricName(f.metric),
             "required", f.required, "datasets", f.datasets, "description", f.description);
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace iosonar::schema
