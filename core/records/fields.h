// Typed ids of every field and dataset, generated from the declaration lists
// (core/records/fields.def, core/records/datasets.def). Emitters, scans and
// record lookups take ids, so a misspelt field is a compile error:
//
//   rec.Int(field::kIoBytes, n);        // exporter Record, JsonLine, JsonWriter
//   q.fields = {field::kIoOp, field::kIoBytes};
//   rec[field::kIoBytes].i              // ParsedRecord, by schema position
//
// An id is a constexpr value carrying the field's position in
// schema::Fields() and its name, pre-rendered as the JSON member prefix
// `,"name":`, so emitters copy a key of compile-time length. Ids convert to
// std::string_view (the name) where a name is wanted. Names read at run time
// (the collector parsing JSON, a --dataset option) are looked up with
// FieldIndex() (core/records/record.h) and schema::FindDataset().
//
// Small on purpose: included by the tracer and by most translation units.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace iosonar {

namespace fields_detail {
namespace f {
enum Pos : uint16_t {
#define X(id, ...) id,
#include "core/records/fields.def"
#undef X
  kCount
};
}  // namespace f
namespace d {
enum Pos : uint16_t {
#define X(id, ...) id,
#include "core/records/datasets.def"
#undef X
  kCount
};
}  // namespace d
}  // namespace fields_detail

inline constexpr size_t kFieldCount = fields_detail::f::kCount;
inline constexpr size_t kDatasetCount = fields_detail::d::kCount;

class FieldId {
 public:
  // No field (index() == kNone): for optional slots in tables.
  static constexpr uint16_t kNone = UINT16_MAX;
  constexpr FieldId() = default;
  // member: the literal `,"name":`; used by the generated ids.
  constexpr FieldId(uint16_t pos, const char* member, size_t member_len)
      : member_(member), pos_(pos), len_(static_cast<uint16_t>(member_len - 4)) {}

  constexpr size_t index() const { return pos_; }  // position in schema::Fields()
  constexpr bool valid() const { return pos_ != kNone; }
  constexpr std::string_view name() const { return {member_ + 2, len_}; }
  // `"name":` and `,"name":`: the key as emitted (names need no escaping).
  constexpr std::string_view key() const { return {member_ + 1, size_t{len_} + 3}; }
  constexpr std::string_view member() const { return {member_, size_t{len_} + 4}; }
  constexpr operator std::string_view() const { return name(); }
  friend constexpr bool operator==(FieldId a, FieldId b) { return a.pos_ == b.pos_; }

 private:
  const char* member_ = ",\"\":";
  uint16_t pos_ = kNone;
  uint16_t len_ = 0;
};

class DatasetId {
 public:
  constexpr DatasetId(uint16_t pos, const char* name, size_t name_len)
      : name_(name), pos_(pos), len_(static_cast<uint16_t>(name_len)) {}

  constexpr size_t index() const { return pos_; }  // position in schema::Datasets()
  constexpr std::string_view name() const { return {name_, len_}; }  // NUL-terminated
  constexpr operator std::string_view() const { return name(); }
  friend constexpr bool operator==(DatasetId a, DatasetId b) { return a.pos_ == b.pos_; }

 private:
  const char* name_;
  uint16_t pos_;
  uint16_t len_;
};

namespace field {
#define X(id, name, ...) inline constexpr FieldId id{fields_detail::f::id, ",\"" name "\":", sizeof(",\"" name "\":") - 1};
#include "core/records/fields.def"
#undef X
}  // namespace field

namespace dataset {
#define X(id, name, ...) inline constexpr DatasetId id{fields_detail::d::id, name, sizeof(name) - 1};
#include "core/records/datasets.def"
#undef X
}  // namespace dataset

// Every id in declaration (= schema) order: kAllFields[i].index() == i.
inline constexpr FieldId kAllFields[] = {
#define X(id, ...) field::id,
#include "core/records/fields.def"
#undef X
};
inline constexpr DatasetId kAllDatasets[] = {
#define X(id, ...) dataset::id,
#include "core/records/datasets.def"
#undef X
};

}  // namespace iosonar
