// See results.h; the tables come from results.def.
#include "core/results/results.h"

#include <algorithm>
#include <cstdlib>

#include "core/base/timeutil.h"

namespace iosonar::results {

namespace {

constexpr Type kText = Type::kText, kUint = Type::kUint, kInt = Type::kInt, kDouble = Type::kDouble,
               kTime = Type::kTime, kOptText = Type::kOptText, kOptUint = Type::kOptUint, kOptInt = Type::kOptInt,
               kOptDouble = Type::kOptDouble, kOptTime = Type::kOptTime;

bool IsTime(Type t) { return t == Type::kTime || t == Type::kOptTime; }

// A column's text (as the server sends it) into its field.
void Parse(const std::optional<std::string>& v, std::string* out) { *out = v.value_or(""); }
void Parse(const std::optional<std::string>& v, uint64_t* out) { *out = v ? std::strtoull(v->c_str(), nullptr, 10) : 0; }
void Parse(const std::optional<std::string>& v, int64_t* out) { *out = v ? std::strtoll(v->c_str(), nullptr, 10) : 0; }
void Parse(const std::optional<std::string>& v, double* out) { *out = v ? std::strtod(v->c_str(), nullptr) : 0; }
template <class T>
void Parse(const std::optional<std::string>& v, std::optional<T>* out) {
  if (!v) {
    out->reset();
    return;
  }
  T x{};
  Parse(v, &x);
  *out = std::move(x);
}

void ToJson(JsonWriter& w, const std::string& v) { w.String(v); }
void ToJson(JsonWriter& w, uint64_t v) { w.Int(static_cast<int64_t>(v)); }
void ToJson(JsonWriter& w, int64_t v) { w.Int(v); }
void ToJson(JsonWriter& w, double v) { w.Double(v); }
template <class T>
void ToJson(JsonWriter& w, const std::optional<T>& v) {
  if (v) ToJson(w, *v);
  else w.Null();
}

// A column's value as a record field of type t (results.def STREAM).
void ToRecord(JsonWriter& w, std::string_view k, schema::Type, bool required, const std::string& v) {
  if (required || !v.empty()) w.Kv(k, v);
}
template <class N>
void ToRecordNumber(JsonWriter& w, std::string_view k, schema::Type t, N v) {
  if (t == schema::Type::kBool) w.Kv(k, v != 0);
  else if (t == schema::Type::kDouble) w.Kv(k, static_cast<double>(v));
  else w.Kv(k, static_cast<int64_t>(v));
}
void ToRecord(JsonWriter& w, std::string_view k, schema::Type t, bool, uint64_t v) { ToRecordNumber(w, k, t, v); }
void ToRecord(JsonWriter& w, std::string_view k, schema::Type t, bool, int64_t v) { ToRecordNumber(w, k, t, v); }
void ToRecord(JsonWriter& w, std::string_view k, schema::Type, bool, double v) { w.Kv(k, v); }
template <class T>
void ToRecord(JsonWriter& w, std::string_view k, schema::Type t, bool required, const std::optional<T>& v) {
  if (v) ToRecord(w, k, t, required, *v);
}

SqlParam ToParam(const std::string& v) { return v; }
SqlParam ToParam(uint64_t v) { return static_cast<int64_t>(v); }
SqlParam ToParam(int64_t v) { return v; }
SqlParam ToParam(double v) { return v; }
template <class T>
SqlParam ToParam(const std::optional<T>& v) {
  return v ? ToParam(*v) : SqlNull();
}

}  // namespace

namespace {
struct Declared {
  std::vector<Table> tables, views;
  std::vector<Stream> streams;
};
const Declared& All() {
  static const Declared k = [] {
    Declared d;
    Table* t = nullptr;
#define RESULT(table, migration, command, what) t = &d.tables.emplace_back(Table{#table, migration, command, what, {}, {}});
#define VIEW(table, migration, command, what, sql) \
  t = &d.views.emplace_back(Table{#table, migration, command, what, {}, {}, sql});
#define COLUMN(table, column, type, sql, note) t->columns.push_back({#column, k##type, sql, note});
#define KEY(table, key) t->keys.push_back(key);
#define END(table)
    Stream* s = nullptr;
#define STREAM(table, dataset, what) s = &d.streams.emplace_back(Stream{#table, dataset, what, {}});
#define MAP(table, column, field) s->fields.push_back({field, #column, ""});
#define DERIVED(table, field, note) s->fields.push_back({field, nullptr, note});
#define END_STREAM(table)
#include "core/results/results.def"
    return d;
  }();
  return k;
}
const Table* Find(const std::vector<Table>& in, std::string_view name) {
  for (const auto& t : in)
    if (name == t.name) return &t;
  return nullptr;
}
}  // namespace

const std::vector<Table>& Tables() { return All().tables; }
const std::vector<Table>& Views() { return All().views; }
const Table* FindTable(std::string_view name) { return Find(Tables(), name); }
const Table* FindView(std::string_view name) { return Find(Views(), name); }
const std::vector<Stream>& Streams() { return All().streams; }
const Stream* FindStream(std::string_view table) {
  for (const auto& s : Streams())
    if (table == s.table) return &s;
  return nullptr;
}

std::string MysqlCreateTable(const Table& t) {
  size_t w = 0, wl = 0;
  for (const auto& c : t.columns) w = std::max(w, std::string_view(c.name).size());
  std::vector<std::string> lines;
  for (const auto& c : t.columns) {
    std::string l = "  " + std::string(c.name);
    l.append(w + 1 - std::string_view(c.name).size(), ' ');
    lines.push_back(l + c.sql);
  }
  for (const char* k : t.keys) lines.push_back(std::string("  ") + k);
  for (const auto& l : lines) wl = std::max(wl, l.size() + 1);
  std::string out = std::string("CREATE TABLE IF NOT EXISTS ") + t.name + " (\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string l = lines[i] + (i + 1 < lines.size() ? "," : "");
    const char* note = i < t.columns.size() ? t.columns[i].note : "";
    if (*note) l.append(wl + 1 - l.size(), ' ').append("-- ").append(note);
    out += l + "\n";
  }
  return out + ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;\n";
}

std::string MysqlCreateView(const Table& v) {
  return std::string("CREATE OR REPLACE VIEW ") + v.name + " AS\n" + (v.view ? v.view : "") + ";\n";
}

std::string MysqlDdl() {
  std::string out;
  for (const auto* all : {&Tables(), &Views()})
    for (const auto& t : *all)
      out += std::string(out.empty() ? "" : "\n") + "-- " + t.name + " (migration " + std::to_string(t.migration) +
             (t.view ? ", a view" : "") + ", `iosonar " + t.command + "`): " + t.what + "\n" +
             (t.view ? MysqlCreateView(t) : MysqlCreateTable(t));
  return out;
}

std::optional<int64_t> SqlDatetimeNs(std::string_view s) {
  if (s.size() < 19 || s[10] != ' ') return std::nullopt;
  std::string iso(s);
  iso[10] = 'T';
  return ParseIso8601(iso + "Z");
}

std::string SelectSql(const Table& t, const std::vector<std::string>& columns) {
  std::string sql = "SELECT ";
  bool first = true;
  // In the order asked (all: the table's order).
  std::vector<const Column*> cols;
  if (columns.empty())
    for (const auto& c : t.columns) cols.push_back(&c);
  for (const auto& name : columns)
    for (const auto& c : t.columns)
      if (name == c.name) cols.push_back(&c);
  for (const Column* c : cols) {
    sql += first ? "" : ", ";
    first = false;
    sql += IsTime(c->type) ? std::string("CAST(") + c->name + " AS CHAR)" : std::string(c->name);
  }
  return sql + " FROM " + t.name;
}

std::string InsertSql(const Table& t) {
  std::string cols, qs;
  for (const auto& c : t.columns) {
    cols += std::string(cols.empty() ? "" : ", ") + c.name;
    qs += qs.empty() ? "?" : ", ?";
  }
  return std::string("INSERT INTO ") + t.name + " (" + cols + ") VALUES (" + qs + ")";
}

std::string ReplaceSql(const Table& t) { return "REPLACE" + InsertSql(t).substr(6); }

std::string UpsertSql(const Table& t, const UpsertRule& rule) {
  // The primary key's columns: "PRIMARY KEY (a, b(255), c)".
  std::vector<std::string> key;
  for (const char* k : t.keys) {
    std::string_view s(k);
    if (s.rfind("PRIMARY KEY (", 0) != 0) continue;
    s.remove_prefix(13);
    s.remove_suffix(1);
    while (!s.empty()) {
      size_t comma = s.find(", ");
      std::string_view c = s.substr(0, comma);
      key.emplace_back(c.substr(0, c.find('(')));
      s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 2);
    }
  }
  std::string sql = InsertSql(t) + " ON DUPLICATE KEY UPDATE ";
  bool first = true;
  auto named = [](const std::vector<std::string_view>& v, const char* c) {
    return std::find(v.begin(), v.end(), std::string_view(c)) != v.end();
  };
  for (const auto& c : t.columns) {
    if (std::find(key.begin(), key.end(), c.name) != key.end() || named(rule.keep, c.name)) continue;
    const std::string name = c.name, value = "VALUES(" + name + ")";
    sql += (first ? "" : ", ") + name + " = ";
    sql += named(rule.greatest, c.name) ? "GREATEST(" + name + ", " + value + ")" : value;
    first = false;
  }
  return sql;
}

std::string SelectList(std::string_view prefix, const std::vector<std::string>& columns) {
  std::string out;
  for (const auto& c : columns) out += (out.empty() ? "" : ", ") + std::string(prefix) + "." + c;
  return out;
}

#define RESULT(table, migration, command, what)                                    \
  template <>                                                                      \
  const Table& TableOf<table::Row>() {                                             \
    static const Table& t = FindTable(#table) ? *FindTable(#table) : *FindView(#table); \
    return t;                                                                      \
  }                                                                                \
  template <>                                                                      \
  const std::vector<FieldOf<table::Row>>& FieldsOf<table::Row>() {                 \
    using R = table::Row;                                                          \
    static const std::vector<FieldOf<R>> k = {
#define COLUMN(table, column, type, sql, note)                                     \
  {#column, IsTime(k##type), [](R& r, const std::optional<std::string>& v) { Parse(v, &r.column); }, \
   [](const R& r) { return ToParam(r.column); },                                   \
   [](JsonWriter& w, const R& r) {                                                 \
     w.Key(#column);                                                               \
     ToJson(w, r.column);                                                          \
   },                                                                              \
   [](JsonWriter& w, std::string_view key, schema::Type t, bool req, const R& r) { \
     ToRecord(w, key, t, req, r.column);                                           \
   }},
#define KEY(table, key)
#define END(table) \
  };               \
  return k;        \
  }
#include "core/results/results.def"

}  // namespace iosonar::results
