// Record parsing and validation (see record.h).
//
// Two parsers share one validating handler:
//  - a fast path for the lines the tracer writes: a flat object of known
//    keys, ASCII strings without escapes, integers, booleans. It never writes
//    into the buffer, so when it meets anything else (an escape, a non-ASCII
//    byte, a fraction, a null, an error of any kind) it gives up and
//    ParseRecordInsitu starts over with
//  - rapidjson's SAX reader (in situ, with UTF-8 validation), which handles
//    all of JSON and words every error message. Errors therefore read the
//    same whichever path saw the line first.
// With it, parse+validate of typical trace lines is 3-4x faster than with
// rapidjson alone (test/bench/RESULTS.md); the field-name lookup is an
// open-addressed table built from the schema table at first use, not a
// hand-written list.
#include <algorithm>
#include "core/records/record.h"

#include <rapidjson/encodings.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/base/hash.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar {
namespace {

// ---- field-name lookup ---------------------------------------------------------
// Keys are hashed on their length and their first and last 8 bytes and
// compared on the same (plus memcmp for names over 16 bytes), so any name
// that is not in the schema misses.
class FieldTable {
 public:
  FieldTable() {
    const auto fields = schema::Fields();
    while (size_ < 4 * fields.size()) size_ *= 2;
    slots_.assign(size_, Slot{});
    for (size_t i = 0; i < fields.size(); ++i) {
      const auto name = fields[i].name;
      Words w = Load(name.data(), name.size());
      size_t h = Hash(w, name.size()) & (size_ - 1);
      while (slots_[h].name) h = (h + 1) & (size_ - 1);
      slots_[h] = {name.data(), static_cast<uint32_t>(name.size()), static_cast<int>(i), w};
    }
  }

  int Find(const char* s, size_t n) const {
    const Words w = Load(s, n);
    size_t h = Hash(w, n) & (size_ - 1);
    for (;;) {
      const Slot& sl = slots_[h];
      if (!sl.name) return -1;
      // The two words are the whole name up to 16 bytes; beyond, memcmp.
      if (sl.len == n && sl.w.a == w.a && sl.w.b == w.b && (n <= 16 || std::memcmp(sl.name, s, n) == 0))
        return sl.index;
      h = (h + 1) & (size_ - 1);
    }
  }

 private:
  struct Words {
    uint64_t a = 0, b = 0;  // the first and the last 8 bytes (zero-padded if shorter)
  };
  struct Slot {
    const char* name = nullptr;
    uint32_t len = 0;
    int index = -1;
    Words w;
  };

  static Words Load(const char* s, size_t n) {
    Words w;
    if (n >= 8) {
      std::memcpy(&w.a, s, 8);
      std::memcpy(&w.b, s + n - 8, 8);
    } else {
      std::memcpy(&w.a, s, n);
    }
    return w;
  }
  static uint64_t Hash(const Words& w, size_t n) {
    uint64_t h = (w.a * 0x9E3779B97F4A7C15ULL) ^ (w.b * 0xC2B2AE3D27D4EB4FULL) ^ n;
    return h ^ (h >> 29) ^ (h >> 41);
  }

  size_t size_ = 16;
  std::vector<Slot> slots_;
};

const FieldTable& Table() {
  static const FieldTable t;
  return t;
}

// Per-dataset masks of allowed and required fields, indexed by the dataset's
// position in schema::Datasets().
struct Masks {
  FieldSet allowed, required;
};

// Counts, byte amounts and durations (long fields whose unit is "1", "bytes"
// or "ns") are never negative: a negative one is a broken or hostile sender.
const FieldSet& NonNegative() {
  static const FieldSet m = [] {
    FieldSet out;
    size_t j = 0;
    for (const auto& f : schema::Fields()) {
      if (f.type == schema::Type::kLong && (f.unit == "1" || f.unit == "bytes" || f.unit == "ns")) out.Set(j);
      ++j;
    }
    return out;
  }();
  return m;
}

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
// Checked by our own code before rapidjson parses a line in place: its
// validating in-situ reader reads and writes past the buffer on a truncated
// sequence at the end of the input (rapidjson issue 1636, unfixed in Debian
// 12's package). Returns the offset of the first bad byte, or n.
size_t FirstBadUtf8(const unsigned char* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return i;
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return n;
}

const std::vector<Masks>& DatasetMasks() {
  static const std::vector<Masks> m = [] {
    std::vector<Masks> out;
    for (const auto& d : schema::Datasets()) {
      Masks mk;
      size_t j = 0;
      for (const auto& f : schema::Fields()) {
        if (schema::FieldInDataset(f, d.name)) {
          mk.allowed.Set(j);
          if (f.required) mk.required.Set(j);
        }
        ++j;
      }
      out.push_back(mk);
    }
    return out;
  }();
  return m;
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

inline int Digit(char c) { return static_cast<unsigned char>(c) - '0'; }
inline bool IsDigit(char c) { return static_cast<unsigned>(Digit(c)) < 10; }

// "YYYY-MM-DDTHH:MM:SS.mmmZ", the tracer's form, without the general parser's
// branches; everything else goes to ParseIso8601.
bool ParseIsoMillisZ(std::string_view s, int64_t* out) {
  if (s.size() != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' ||
      s[23] != 'Z')
    return false;
  static constexpr int kDigitPos[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22};
  for (int p : kDigitPos)
    if (!IsDigit(s[static_cast<size_t>(p)])) return false;
  auto num = [&](size_t p, size_t n) {
    int v = 0;
    for (size_t i = 0; i < n; ++i) v = v * 10 + Digit(s[p + i]);
    return v;
  };
  const int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), sec = num(17, 2);
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || sec > 60) return false;
  // Days from civil (Howard Hinnant), as in timeutil.cc.
  const int64_t yy = y - (mo <= 2);
  const int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(yy - era * 400);
  const unsigned doy = static_cast<unsigned>((153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1);
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + static_cast<int64_t>(doe) - 719468;
  *out = (days * 86400 + h * 3600 + mi * 60 + sec) * 1000000000LL + int64_t{num(20, 3)} * 1000000;
  return true;
}

// SAX handler: a flat object of known fields only. Also driven by the fast
// path, so both paths validate alike.
struct Handler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
  ParsedRecord* rec;
  FieldSet present;  // field i has a value
  int depth = 0;
  int cur = -1;  // field index of the pending key
  bool escapes = false;  // rapidjson parses the line: strings may hold \u0000 (the fast path takes plain strings only)
  std::string error;
  // With only set, a top-level key that is not one of these fields (unknown
  // to the schema or not asked for) has its value skipped unchecked, as an
  // engine's _source filter would have left it out. skip: inside such a
  // value, its nesting depth + 1.
  const FieldSet* only = nullptr;
  int skip = 0;
  bool skip_pending = false;  // the key was read, its value not yet begun

  bool Fail(std::string e) {
    if (error.empty()) error = std::move(e);
    return false;
  }
  std::string FieldName() const { return std::string(schema::Fields()[static_cast<size_t>(cur)].name); }

  // Takes the value in parts and stores them one by one: building a
  // FieldValue on the stack and copying it stalled on store forwarding (the
  // partly written struct read back as 16-byte words); without it parsing
  // went from 0.62 to 0.36 us a line.
  // A scalar value of a skipped key ends the skip; inside a skipped object or
  // array it is nothing.
  bool Skipping() {
    if (skip_pending) {
      skip_pending = false;
      return true;
    }
    return skip > 0;
  }
  bool Put(FieldValue::Kind kind, int64_t i, double d, std::string_view s) {
    if (Skipping()) return true;
    if (depth != 1) return Fail("a record must be one JSON object");
    if (cur < 0) return Fail("value without a key");
    const auto& f = schema::Fields()[static_cast<size_t>(cur)];
    if (present.Test(static_cast<size_t>(cur))) return Fail("field " + FieldName() + ": appears twice");
    using T = schema::Type;
    bool okay = false;
    switch (f.type) {
      case T::kKeyword: okay = kind == FieldValue::kString; break;
      case T::kLong: okay = kind == FieldValue::kInt; break;
      case T::kDouble:
        if (kind == FieldValue::kInt) {
          kind = FieldValue::kDouble;
          d = static_cast<double>(i);
        }
        okay = kind == FieldValue::kDouble;
        break;
      case T::kBool: okay = kind == FieldValue::kBool; break;
      case T::kDate:
        // Epoch ns in an int64 reach from 1677-09-21 to 2262-04-11; a date
        // outside would overflow, so it is refused rather than wrapped.
        if (kind == FieldValue::kString) {
          if (s.size() >= 4 && IsDigit(s[0]) && IsDigit(s[1]) && IsDigit(s[2]) && IsDigit(s[3])) {
            const int year = Digit(s[0]) * 1000 + Digit(s[1]) * 100 + Digit(s[2]) * 10 + Digit(s[3]);
            if (year < 1678 || year > 2261)
              return Fail("field " + FieldName() + ": date out of range (years 1678 to 2261): \"" +
                          std::string(s.substr(0, 40)) + "\"");
          }
          if (!ParseIsoMillisZ(s, &i)) {
            auto parsed = ParseIso8601(s);
            if (!parsed)
              return Fail("field " + FieldName() + ": not an ISO 8601 date with a zone: \"" +
                          std::string(s.substr(0, 40)) + "\"");
            i = *parsed;
          }
          okay = true;
        } else if (kind == FieldValue::kInt) {  // epoch milliseconds, as Elasticsearch accepts
          if (i > INT64_MAX / 1000000 || i < INT64_MIN / 1000000)
            return Fail("field " + FieldName() + ": epoch milliseconds out of range: " + std::to_string(i));
          i *= 1000000;
          okay = true;
        }
        break;
    }
    if (!okay)
      return Fail("field " + FieldName() + ": expected " + std::string(schema::TypeName(f.type)) + ", got " +
                  KindName(kind));
    if (kind == FieldValue::kInt && i < 0 && NonNegative().Test(static_cast<size_t>(cur)))
      return Fail("field " + FieldName() + ": must not be negative (" + std::string(f.unit == "1" ? "a count" : f.unit == "bytes" ? "bytes" : "a duration or time in ns") + "), got " + std::to_string(i));
    if (kind == FieldValue::kString && escapes && std::memchr(s.data(), 0, s.size()))
      return Fail("field " + FieldName() + ": NUL character in a string");
    if (kind == FieldValue::kString && !f.values.empty() &&
        std::find(f.values.begin(), f.values.end(), s) == f.values.end())
      return Fail("field " + FieldName() + ": not one of its declared values (iosonar schema lists them): \"" +
                  std::string(s.substr(0, 40)) + "\"");
    FieldValue& slot = rec->v[static_cast<size_t>(cur)];
    slot.kind = kind;
    slot.i = i;
    slot.d = d;
    slot.s = s;
    present.Set(static_cast<size_t>(cur));
    cur = -1;
    return true;
  }

  bool Null() {
    if (Skipping()) return true;
    return Fail(cur >= 0 ? "field " + FieldName() + ": null is not allowed (leave the field out)" : "unexpected null");
  }
  bool Bool(bool b) { return Put(FieldValue::kBool, b ? 1 : 0, 0, {}); }
  bool Int(int i) { return Put(FieldValue::kInt, i, 0, {}); }
  bool Uint(unsigned u) { return Put(FieldValue::kInt, static_cast<int64_t>(u), 0, {}); }
  bool Int64(int64_t i) { return Put(FieldValue::kInt, i, 0, {}); }
  bool Uint64(uint64_t u) {
    if (Skipping()) return true;
    if (u > static_cast<uint64_t>(INT64_MAX)) return Fail("field " + (cur >= 0 ? FieldName() : std::string("?")) + ": integer out of range");
    return Put(FieldValue::kInt, static_cast<int64_t>(u), 0, {});
  }
  bool Double(double d) { return Put(FieldValue::kDouble, 0, d, {}); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return Put(FieldValue::kString, 0, 0, {s, n}); }
  bool StartObject() {
    if (skip_pending || skip > 0) {
      skip_pending = false;
      ++skip;
      return true;
    }
    if (depth == 1) return Fail(cur >= 0 ? "field " + FieldName() + ": nested objects are not allowed (use dotted names)" : "nested object");
    ++depth;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (skip > 0) return true;
    int i = Table().Find(s, n);
    if (only && depth == 1 && (i < 0 || !only->Test(static_cast<size_t>(i)))) {
      skip_pending = true;
      return true;
    }
    if (i < 0) {
      std::string k(s, std::min<size_t>(n, 80));
      return Fail("unknown field \"" + k + "\" (not in the record schema)");
    }
    cur = i;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (skip > 0) {
      --skip;
      return true;
    }
    --depth;
    return true;
  }
  bool StartArray() {
    if (skip_pending || skip > 0) {
      skip_pending = false;
      ++skip;
      return true;
    }
    return Fail(cur >= 0 ? "field " + FieldName() + ": arrays are not allowed" : "a record must be one JSON object, not an array");
  }
  bool EndArray(rapidjson::SizeType) {
    if (skip > 0) --skip;
    return true;
  }
};

// ---- the fast path ---------------------------------------------------------------

inline const char* SkipWs(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  return p;
}

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// End of a plain string starting at p (just past the opening quote): the
// position of the closing quote, or nullptr if the string has an escape, a
// control character, a non-ASCII byte or no end (the slow path decides).
// Eight bytes at a time; the tests below find the first such byte exactly.
inline const char* PlainStringEnd(const char* p, const char* end) {
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    const uint64_t q = x ^ (kOnes * '"'), bs = x ^ (kOnes * '\\');
    uint64_t hit = ((q - kOnes) & ~q) | ((bs - kOnes) & ~bs) | (x - kOnes * 0x20) | x;
    hit &= kHighs;
    if (hit) {
      p += __builtin_ctzll(hit) / 8;
      return *p == '"' ? p : nullptr;
    }
    p += 8;
  }
  for (; p < end; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"') return p;
    if (c == '\\' || c < 0x20 || c >= 0x80) return nullptr;
  }
  return nullptr;
}

// Parses the object at p through h; returns the position after its '}', or
// nullptr if the line needs the full parser (or is invalid).
const char* FastParse(const char* p, const char* end, Handler& h) {
  p = SkipWs(p, end);
  if (p == end || *p != '{' || !h.StartObject()) return nullptr;
  p = SkipWs(p + 1, end);
  if (p < end && *p == '}') {
    h.EndObject(0);
    return p + 1;
  }
  for (;;) {
    // Key.
    if (p == end || *p != '"') return nullptr;
    const char* k = p + 1;
    const char* ke = PlainStringEnd(k, end);
    if (!ke) return nullptr;
    const int idx = Table().Find(k, static_cast<size_t>(ke - k));
    if (idx < 0) return nullptr;
    // A known field not asked for: its value is parsed (so a plain one keeps
    // the fast path) and dropped.
    h.skip_pending = h.only && !h.only->Test(static_cast<size_t>(idx));
    h.cur = idx;
    p = ke + 1;
    if (p < end && *p != ':') p = SkipWs(p, end);
    if (p == end || *p != ':') return nullptr;
    ++p;
    if (p < end && (*p == ' ' || *p == '\t')) p = SkipWs(p, end);
    if (p == end) return nullptr;
    // Value.
    const char c = *p;
    if (c == '"') {
      const char* s = p + 1;
      const char* se = PlainStringEnd(s, end);
      if (!se || !h.Put(FieldValue::kString, 0, 0, {s, static_cast<size_t>(se - s)})) return nullptr;
      p = se + 1;
    } else if (c == '-' || IsDigit(c)) {
      const bool minus = c == '-';
      const char* d = p + minus;
      if (d == end || !IsDigit(*d)) return nullptr;
      if (*d == '0' && (minus || (d + 1 < end && IsDigit(d[1])))) return nullptr;  // "-0", leading zeros
      const char* de = d;
      uint64_t v = 0;
      while (de < end && IsDigit(*de) && de - d < 19) v = v * 10 + static_cast<unsigned>(Digit(*de++));
      // 19 digits fit in uint64; anything longer, or a fraction or exponent, is the slow path's.
      if (de < end && (IsDigit(*de) || *de == '.' || *de == 'e' || *de == 'E')) return nullptr;
      int64_t iv;
      if (minus) {
        if (v > uint64_t{1} << 63) return nullptr;
        iv = static_cast<int64_t>(~v + 1);
      } else {
        if (v > static_cast<uint64_t>(INT64_MAX)) return nullptr;
        iv = static_cast<int64_t>(v);
      }
      if (!h.Put(FieldValue::kInt, iv, 0, {})) return nullptr;
      p = de;
    } else if (c == 't' && end - p >= 4 && std::memcmp(p, "true", 4) == 0) {
      if (!h.Put(FieldValue::kBool, 1, 0, {})) return nullptr;
      p += 4;
    } else if (c == 'f' && end - p >= 5 && std::memcmp(p, "false", 5) == 0) {
      if (!h.Put(FieldValue::kBool, 0, 0, {})) return nullptr;
      p += 5;
    } else {
      return nullptr;  // null, objects, arrays, garbage: the slow path words the error
    }
    if (p < end && *p != ',' && *p != '}') p = SkipWs(p, end);
    if (p == end) return nullptr;
    if (*p == '}') {
      h.EndObject(0);
      return p + 1;
    }
    if (*p != ',') return nullptr;
    ++p;
    if (p < end && *p != '"') p = SkipWs(p, end);
  }
}

// The record's fields that can hold a value (the schema's, not all kMaxFields).
void ClearRecord(ParsedRecord* out) {
  out->dataset = nullptr;
  const size_t n = schema::Fields().size();
  for (size_t i = 0; i < n; ++i) out->v[i].kind = FieldValue::kAbsent;
}

}  // namespace

int FieldIndex(std::string_view name) { return Table().Find(name.data(), name.size()); }

namespace {
// user.id when it is a uid: decimal digits (as the Logstash pipelines match it, /^[0-9]+$/).
bool NumericUser(const FieldValue& u) {
  if (u.kind != FieldValue::kString || u.s.empty()) return false;
  for (char c : u.s)
    if (c < '0' || c > '9') return false;
  return true;
}
}  // namespace

int64_t DedupeStream(const ParsedRecord& r) {
  const int64_t stream = r[field::kEventStream].i;
  const FieldValue& u = r[field::kUserId];
  if (!NumericUser(u)) return stream;
  uint64_t h = Fnv1a(u.s, static_cast<uint64_t>(stream) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return static_cast<int64_t>((h ^ (h >> 31)) & static_cast<uint64_t>(INT64_MAX));
}

std::string DedupeId(const ParsedRecord& r) {
  std::string id = std::to_string(r[field::kEventStream].i) + "-" + std::to_string(r[field::kEventSeq].i);
  const FieldValue& u = r[field::kUserId];
  if (NumericUser(u)) id.append("-u").append(u.s);
  return id;
}

std::optional<FieldId> FieldByName(std::string_view name) {
  const int i = FieldIndex(name);
  if (i < 0) return std::nullopt;
  return kAllFields[static_cast<size_t>(i)];
}

namespace {
Status ParseInsitu(char* line, size_t len, ParsedRecord* out, bool require_all, const FieldSet* only);
}  // namespace

Status ParseRecordInsitu(char* line, size_t len, ParsedRecord* out) { return ParseInsitu(line, len, out, true, nullptr); }
Status ParseRecordFieldsInsitu(char* line, size_t len, ParsedRecord* out, const FieldSet* only) {
  return ParseInsitu(line, len, out, false, only);
}

namespace {
Status ParseInsitu(char* line, size_t len, ParsedRecord* out, bool require_all, const FieldSet* only) {
  if (schema::Fields().size() > kMaxFields) return Status::Internal("schema has more fields than kMaxFields");
  ClearRecord(out);
  line[len] = '\0';
  // Strip a trailing CR (CRLF framing) and surrounding blanks.
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = '\0';
  Handler h;
  h.rec = out;
  h.only = only;
  size_t done = 0;  // end of the object
  if (const char* e = FastParse(line, line + len, h)) {
    done = static_cast<size_t>(e - line);
  } else {
    // The fast path wrote nothing into the line; start over with the full parser.
    ClearRecord(out);
    h.present.Reset();
    h.depth = 0;
    h.cur = -1;
    h.error.clear();
    h.skip = 0;
    h.skip_pending = false;
    h.escapes = true;
    if (size_t bad = FirstBadUtf8(reinterpret_cast<const unsigned char*>(line), len); bad != len)
      return Status::Invalid("not JSON: invalid UTF-8 at byte " + std::to_string(bad));
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
    done = ss.Tell();
  }
  // Anything but blanks after the object is garbage.
  for (size_t p = done; p < len; ++p)
    if (line[p] != ' ' && line[p] != '\t') return Status::Invalid("trailing data after the JSON object at byte " + std::to_string(p));
  if (h.depth != 0) return Status::Invalid("a record must be one JSON object");
  static const int kDs = field::kEventDataset.index();
  const auto& dsv = out->v[static_cast<size_t>(kDs)];
  if (!h.present.Test(static_cast<size_t>(kDs)) || dsv.kind != FieldValue::kString) return Status::Invalid("missing required field event.dataset");
  out->dataset = schema::FindDataset(dsv.s);
  if (!out->dataset) return Status::Invalid("field event.dataset: unknown dataset \"" + std::string(dsv.s.substr(0, 80)) + "\"");
  const Masks& mk = DatasetMasks()[static_cast<size_t>(out->dataset - schema::Datasets().data())];
  const FieldSet& present = h.present;
  if (present.AnyNotIn(mk.allowed) || (require_all && mk.required.AnyNotIn(present))) {
    for (size_t i = 0; i < schema::Fields().size(); ++i) {
      const auto& f = schema::Fields()[i];
      if (present.Test(i) && !mk.allowed.Test(i))
        return Status::Invalid("field " + std::string(f.name) + ": not part of dataset " + std::string(out->dataset->name));
      if (require_all && mk.required.Test(i) && !present.Test(i))
        return Status::Invalid("missing required field " + std::string(f.name) + " for dataset " + std::string(out->dataset->name));
    }
  }
  return Status::Ok();
}
}  // namespace

}  // namespace iosonar
