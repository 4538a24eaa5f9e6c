#include "iosonar/record.h"

#include <rapidjson/encodings.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <string>
#include <unordered_map>

#include "iosonar/timeutil.h"

namespace iosonar {
namespace {

const std::unordered_map<std::string_view, int>& IndexMap() {
  static const auto* m = [] {
    auto* map = new std::unordered_map<std::string_view, int>();
    int i = 0;
    for (const auto& f : schema::Fields()) (*map)[f.name] = i++;
    return map;
  }();
  return *m;
}

const char* KindName(FieldValue::Kind k) {
  switch (k) {
    case FieldValue::kInt: return "integer";
    case FieldValue::kDouble: return "number";
    case FieldValue::kString: return "string";
    case FieldValue::kBool: return "boolean";
    default: return "nothing";
  }
}

// SAX handler: a flat object of known fields only.
struct Handler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
  ParsedRecord* rec;
  int depth = 0;
  int cur = -1;  // field index of the pending key
  std::string error;

  bool Fail(std::string e) {
    if (error.empty()) error = std::move(e);
    return false;
  }
  std::string FieldName() const { return std::string(schema::Fields()[static_cast<size_t>(cur)].name); }

  bool Put(FieldValue v) {
    if (depth != 1) return Fail("a record must be one JSON object");
    if (cur < 0) return Fail("value without a key");
    const auto& f = schema::Fields()[static_cast<size_t>(cur)];
    auto& slot = rec->v[static_cast<size_t>(cur)];
    if (slot.kind != FieldValue::kAbsent) return Fail("field " + FieldName() + ": appears twice");
    using T = schema::Type;
    bool okay = false;
    switch (f.type) {
      case T::kKeyword: okay = v.kind == FieldValue::kString; break;
      case T::kLong: okay = v.kind == FieldValue::kInt; break;
      case T::kDouble:
        if (v.kind == FieldValue::kInt) {
          v.kind = FieldValue::kDouble;
          v.d = static_cast<double>(v.i);
        }
        okay = v.kind == FieldValue::kDouble;
        break;
      case T::kBool: okay = v.kind == FieldValue::kBool; break;
      case T::kDate:
        if (v.kind == FieldValue::kString) {
          auto ns = ParseIso8601(v.s);
          if (!ns) return Fail("field " + FieldName() + ": not an ISO 8601 date with a zone: \"" + std::string(v.s.substr(0, 40)) + "\"");
          v.i = *ns;
          okay = true;
        } else if (v.kind == FieldValue::kInt) {  // epoch milliseconds, as Elasticsearch accepts
          v.i *= 1000000;
          okay = true;
        }
        break;
    }
    if (!okay)
      return Fail("field " + FieldName() + ": expected " + std::string(schema::TypeName(f.type)) + ", got " + KindName(v.kind));
    slot = v;
    cur = -1;
    return true;
  }

  bool Null() { return Fail(cur >= 0 ? "field " + FieldName() + ": null is not allowed (leave the field out)" : "unexpected null"); }
  bool Bool(bool b) { return Put({FieldValue::kBool, b ? 1 : 0, 0, {}}); }
  bool Int(int i) { return Put({FieldValue::kInt, i, 0, {}}); }
  bool Uint(unsigned u) { return Put({FieldValue::kInt, static_cast<int64_t>(u), 0, {}}); }
  bool Int64(int64_t i) { return Put({FieldValue::kInt, i, 0, {}}); }
  bool Uint64(uint64_t u) {
    if (u > static_cast<uint64_t>(INT64_MAX)) return Fail("field " + (cur >= 0 ? FieldName() : std::string("?")) + ": integer out of range");
    return Put({FieldValue::kInt, static_cast<int64_t>(u), 0, {}});
  }
  bool Double(double d) { return Put({FieldValue::kDouble, 0, d, {}}); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return Put({FieldValue::kString, 0, 0, {s, n}}); }
  bool StartObject() {
    if (depth == 1) return Fail(cur >= 0 ? "field " + FieldName() + ": nested objects are not allowed (use dotted names)" : "nested object");
    ++depth;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    auto it = IndexMap().find(std::string_view(s, n));
    if (it == IndexMap().end()) {
      std::string k(s, std::min<size_t>(n, 80));
      return Fail("unknown field \"" + k + "\" (not in the record schema)");
    }
    cur = it->second;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    --depth;
    return true;
  }
  bool StartArray() { return Fail(cur >= 0 ? "field " + FieldName() + ": arrays are not allowed" : "a record must be one JSON object, not an array"); }
  bool EndArray(rapidjson::SizeType) { return true; }
};

}  // namespace

int FieldIndex(std::string_view name) {
  auto it = IndexMap().find(name);
  return it == IndexMap().end() ? -1 : it->second;
}

Status ParseRecordInsitu(char* line, size_t len, ParsedRecord* out) {
  static_assert(kMaxFields >= 32);
  if (schema::Fields().size() > kMaxFields) return Status::Internal("schema has more fields than kMaxFields");
  out->Clear();
  line[len] = '\0';
  // Strip a trailing CR (CRLF framing) and surrounding blanks.
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = '\0';
  Handler h;
  h.rec = out;
  rapidjson::InsituStringStream ss(line);
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseStopWhenDoneFlag;
  auto r = reader.Parse<kFlags>(ss, h);
  if (r.IsError()) {
    if (!h.error.empty()) return Status::Invalid(h.error);
    return Status::Invalid(std::string("not JSON: ") + rapidjson::GetParseError_En(r.Code()) + " at byte " +
                           std::to_string(r.Offset()));
  }
  // Anything but blanks after the object is garbage.
  for (size_t p = ss.Tell(); p < len; ++p)
    if (line[p] != ' ' && line[p] != '\t') return Status::Invalid("trailing data after the JSON object at byte " + std::to_string(p));
  if (h.depth != 0) return Status::Invalid("a record must be one JSON object");
  static const int kDs = FieldIndex("event.dataset");
  const auto& dsv = out->v[static_cast<size_t>(kDs)];
  if (dsv.kind != FieldValue::kString) return Status::Invalid("missing required field event.dataset");
  out->dataset = schema::FindDataset(dsv.s);
  if (!out->dataset) return Status::Invalid("field event.dataset: unknown dataset \"" + std::string(dsv.s.substr(0, 80)) + "\"");
  // Per-dataset masks of allowed and required fields, computed once.
  struct Masks { uint64_t allowed = 0, required = 0; };
  static const auto* masks = [] {
    auto* m = new std::unordered_map<const schema::Dataset*, Masks>();
    for (const auto& d : schema::Datasets()) {
      Masks mk;
      size_t j = 0;
      for (const auto& f : schema::Fields()) {
        if (schema::FieldInDataset(f, d.name)) {
          mk.allowed |= uint64_t{1} << j;
          if (f.required) mk.required |= uint64_t{1} << j;
        }
        ++j;
      }
      (*m)[&d] = mk;
    }
    return m;
  }();
  const Masks& mk = masks->at(out->dataset);
  uint64_t present = 0;
  for (size_t i = 0; i < schema::Fields().size(); ++i)
    if (out->v[i].kind != FieldValue::kAbsent) present |= uint64_t{1} << i;
  if ((present & ~mk.allowed) || (mk.required & ~present)) {
    for (size_t i = 0; i < schema::Fields().size(); ++i) {
      const auto& f = schema::Fields()[i];
      uint64_t bit = uint64_t{1} << i;
      if ((present & bit) && !(mk.allowed & bit))
        return Status::Invalid("field " + std::string(f.name) + ": not part of dataset " + std::string(out->dataset->name));
      if ((mk.required & bit) && !(present & bit))
        return Status::Invalid("missing required field " + std::string(f.name) + " for dataset " + std::string(out->dataset->name));
    }
  }
  return Status::Ok();
}

}  // namespace iosonar
