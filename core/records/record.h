// One parsed, schema-validated record: a flat array of values indexed by the
// field's position in the schema table. String values point into the line
// buffer the record was parsed from (parsed in place), so a ParsedRecord is
// valid only as long as that buffer. Not thread-safe; cheap to reuse.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/records/schema.h"
#include "core/base/status.h"

namespace iosonar {

// Fields in the whole schema (all datasets together). A record of one
// dataset uses far fewer; sets of fields are FieldSet bitsets.
inline constexpr size_t kMaxFields = 384;
static_assert(kFieldCount <= kMaxFields, "more fields than FieldSet holds: raise kMaxFields");

// A set of schema positions.
struct FieldSet {
  static constexpr size_t kWords = kMaxFields / 64;
  std::array<uint64_t, kWords> w{};
  void Set(size_t i) { w[i >> 6] |= uint64_t{1} << (i & 63); }
  bool Test(size_t i) const { return w[i >> 6] >> (i & 63) & 1; }
  void Reset() { w.fill(0); }
  // Any element in this set that is not in `other`?
  bool AnyNotIn(const FieldSet& other) const {
    for (size_t k = 0; k < kWords; ++k)
      if (w[k] & ~other.w[k]) return true;
    return false;
  }
};

struct FieldValue {
  enum Kind : uint8_t { kAbsent, kInt, kDouble, kString, kBool };
  Kind kind = kAbsent;
  int64_t i = 0;  // kInt, kBool (0/1); for date fields: epoch ns
  double d = 0;
  std::string_view s;  // kString; for date fields: the original text
};

struct ParsedRecord {
  const schema::Dataset* dataset = nullptr;
  std::array<FieldValue, kMaxFields> v{};

  const FieldValue& operator[](FieldId f) const { return v[f.index()]; }
  const FieldValue& operator[](size_t field_index) const { return v[field_index]; }
  void Clear() {
    dataset = nullptr;
    const size_t n = schema::Fields().size();  // positions beyond the schema are never set
    for (size_t k = 0; k < n && k < kMaxFields; ++k) v[k].kind = FieldValue::kAbsent;
  }
  // Sets a value by hand (tests, decoders); Clear() first.
  FieldValue& At(FieldId f) { return v[f.index()]; }
  FieldValue& At(size_t field_index) { return v[field_index]; }
};

// The key a receiver stores a record under once (a resend is a duplicate):
// event.stream and event.seq, and user.id when the record names one, so that
// a user who learns another user's stream cannot make that user's records
// look already stored (the collector checks a record's user.id against its
// sender). Only a numeric user.id (decimal digits) counts: others come only
// from senders nobody authenticates. DedupeStream: the stream part
// as one number (the stream itself without a uid; else the two mixed into 63
// bits). DedupeId: the Elasticsearch _id, "<stream>-<seq>", and "-u<uid>";
// the Logstash pipelines build the same. Both need event.stream and event.seq.
int64_t DedupeStream(const ParsedRecord& r);
std::string DedupeId(const ParsedRecord& r);

// Position of a field named at run time in schema::Fields(), or -1. Code that
// knows its fields uses the ids instead (field::kIoBytes.index()).
int FieldIndex(std::string_view name);
// The id of a field named at run time (a name built from an op name, read
// from a file or an option); nullopt if the schema has no such field.
std::optional<FieldId> FieldByName(std::string_view name);

// Parses and validates one JSON line in place. The buffer is modified and the
// byte at line[len] must be writable (it is set to NUL). Errors say what was wrong and which field:
// "field io.size: expected long, got string". Unknown fields, missing required
// fields, wrong types, invalid UTF-8 and trailing garbage are all errors.
Status ParseRecordInsitu(char* line, size_t len, ParsedRecord* out);
// The same for a record read back with only some of its fields (a store's
// narrowed _source): event.dataset is needed, the other required fields are
// not; each field present is checked as above. With only, the record is
// read as an engine's _source filter of those fields would have given it:
// every other top-level key (unknown to the schema, or a field not in only)
// is skipped with its value, unchecked. event.dataset must be in only.
Status ParseRecordFieldsInsitu(char* line, size_t len, ParsedRecord* out, const FieldSet* only = nullptr);

}  // namespace iosonar
