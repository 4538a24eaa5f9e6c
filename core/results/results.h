// The analysis results in the job database, from their one declaration
// (results.def): the tables, views and columns, the CREATE TABLE and CREATE
// VIEW statements, a row struct per table and view, the one INSERT,
// REPLACE, SELECT and DELETE of each, a row's JSON, and a row's fields in
// its result stream (WriteStreamFields).
//
//   results::job_anomaly::Row r;            // one field per column
//   r.cluster = "c"; r.job_id = 42; ...
//   Status s = results::Insert(db, r);
//   auto rows = results::Select<results::job_anomaly::Row>(db, "WHERE cluster = ? AND job_id = ?", {c, id});
//   auto few = results::Select<results::job_anomaly::Row>(db, "...", {...}, {"cluster", "job_id", "verdict"});
//   results::WriteJson(w, r, {"verdict", "slowdown"});  // {"verdict":...,"slowdown":...}
//
// Time columns travel as MySQL prints a DATETIME(6) ("2026-11-22
// 07:00:00.000000", UTC: the session's zone); SqlDatetime (core/jobdb)
// makes one from nanoseconds, SqlDatetimeNs reads one back.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/json.h"
#include "core/base/status.h"
#include "core/jobdb/mysql.h"
#include "core/records/schema.h"

namespace iosonar::results {

enum class Type { kText, kUint, kInt, kDouble, kTime, kOptText, kOptUint, kOptInt, kOptDouble, kOptTime };

struct Column {
  const char* name;
  Type type;
  const char* sql;   // MySQL type, as in the migration
  const char* note;  // "" or the migration's comment
};

struct Table {
  const char* name;
  int migration;        // mysql-schema/NNN_*.sql that creates it
  const char* command;  // the iosonar subcommand that writes it
  const char* what;     // what a row is
  std::vector<Column> columns;
  std::vector<const char*> keys;  // "PRIMARY KEY (...)", "KEY name (...)"
  const char* view = nullptr;     // a view: its SELECT (columns: what it returns)
};

// A result stream's field (results.def STREAM ... END_STREAM), in record order.
struct StreamField {
  const char* field;   // "xlayer.nodes" (core/records/fields.def)
  const char* column;  // MAP: the column it is written from; DERIVED: nullptr
  const char* note;    // DERIVED: from what the analysis writes it
};
struct Stream {
  const char* table;    // the result table whose rows it carries
  const char* dataset;  // "iosonar.result.xlayer"
  const char* what;     // which command sends which records
  std::vector<StreamField> fields;
};

// Every result table, in the order of results.def; and every view.
const std::vector<Table>& Tables();
const std::vector<Table>& Views();
const Table* FindTable(std::string_view name);
const Table* FindView(std::string_view name);
// Every result stream, in the order of results.def; a table's (or null).
const std::vector<Stream>& Streams();
const Stream* FindStream(std::string_view table);

// CREATE TABLE IF NOT EXISTS ... as the migration has it (notes as -- comments).
std::string MysqlCreateTable(const Table& t);
// CREATE OR REPLACE VIEW name AS SELECT ...; as the migration has it.
std::string MysqlCreateView(const Table& v);
// Every table's statement, then every view's, with a comment line naming its
// command before each.
std::string MysqlDdl();

// "YYYY-MM-DD HH:MM:SS[.ffffff]" (UTC) to nanoseconds since the epoch.
std::optional<int64_t> SqlDatetimeNs(std::string_view s);

// ---- the row structs: results::TABLE::Row, one field per column ----
using Text = std::string;
using Uint = uint64_t;
using Int = int64_t;
using Double = double;
using Time = std::string;
using OptText = std::optional<std::string>;
using OptUint = std::optional<uint64_t>;
using OptInt = std::optional<int64_t>;
using OptDouble = std::optional<double>;
using OptTime = std::optional<std::string>;

#define RESULT(table, migration, command, what) \
  namespace table {                             \
  struct Row {
#define COLUMN(table, column, type, sql, note) type column{};
#define KEY(table, key)
#define END(table) \
  };               \
  }
#include "core/results/results.def"

// ---- the generic reader and writer ----
// How a row's fields are read from and written to SQL (generated per table).
template <class Row>
struct FieldOf {
  const char* name;
  bool time;  // selected as CAST(name AS CHAR)
  void (*from_sql)(Row&, const std::optional<std::string>&);
  SqlParam (*to_sql)(const Row&);
  void (*to_json)(JsonWriter&, const Row&);
  // As the field `key` of a record, typed as the field is (results.def STREAM).
  void (*to_record)(JsonWriter&, std::string_view key, schema::Type, bool required, const Row&);
};
template <class Row>
const Table& TableOf();
template <class Row>
const std::vector<FieldOf<Row>>& FieldsOf();

#define RESULT(table, migration, command, what) \
  template <>                                   \
  const Table& TableOf<table::Row>();           \
  template <>                                   \
  const std::vector<FieldOf<table::Row>>& FieldsOf<table::Row>();
#define COLUMN(table, column, type, sql, note)
#define KEY(table, key)
#define END(table)
#include "core/results/results.def"

// "SELECT col, CAST(time AS CHAR), ... FROM table" (columns: all when empty).
std::string SelectSql(const Table& t, const std::vector<std::string>& columns);
// "INSERT INTO table (every column) VALUES (?, ...)"; ReplaceSql: the same
// with REPLACE INTO.
std::string InsertSql(const Table& t);
std::string ReplaceSql(const Table& t);

// How an upsert updates the row that exists: every column outside the
// primary key takes the new value, but those of `keep` stay as they are and
// those of `greatest` take the larger of the two.
struct UpsertRule {
  std::vector<std::string_view> keep, greatest;
};

// InsertSql + " ON DUPLICATE KEY UPDATE c = VALUES(c), ..." for every
// column outside the primary key (as `rule` says).
std::string UpsertSql(const Table& t, const UpsertRule& rule = {});

// The row's fields in column order, as parameters of InsertSql.
template <class Row>
std::vector<SqlParam> Params(const Row& r) {
  std::vector<SqlParam> p;
  for (const auto& f : FieldsOf<Row>()) p.push_back(f.to_sql(r));
  return p;
}

// INSERT of one row (every column).
template <class Row>
Status Insert(MysqlConn& db, const Row& r) {
  return db.Exec(InsertSql(TableOf<Row>()), Params(r)).status();
}

// REPLACE of one row (every column): a row with the same primary or unique
// key is deleted first.
template <class Row>
Status Replace(MysqlConn& db, const Row& r) {
  return db.Exec(ReplaceSql(TableOf<Row>()), Params(r)).status();
}

// INSERT of one row, or the update of the row with its primary key (every
// other column takes the new value, as `rule` says).
template <class Row>
Status Upsert(MysqlConn& db, const Row& r, const UpsertRule& rule = {}) {
  return db.Exec(UpsertSql(TableOf<Row>(), rule), Params(r)).status();
}

// "p.a, p.b, ..." of the columns named: a select list for a query that reads
// them among others (a join); ReadColumns reads them back in that order from
// a result row, starting at `offset`. Time columns are not for this.
std::string SelectList(std::string_view prefix, const std::vector<std::string>& columns);
template <class Row>
void ReadColumns(Row& out, const std::vector<std::optional<std::string>>& row, size_t offset,
                 const std::vector<std::string>& columns) {
  for (size_t c = 0; c < columns.size() && offset + c < row.size(); ++c)
    for (const auto& f : FieldsOf<Row>())
      if (columns[c] == f.name) f.from_sql(out, row[offset + c]);
}

// The rows "SELECT ... FROM table <tail>" finds; with `columns`, only those
// are read (the others keep their defaults). tail: WHERE/ORDER BY/LIMIT.
template <class Row>
Result<std::vector<Row>> Select(MysqlConn& db, std::string_view tail, const std::vector<SqlParam>& params = {},
                                const std::vector<std::string>& columns = {}) {
  const auto& fields = FieldsOf<Row>();
  std::vector<const FieldOf<Row>*> read;
  for (const auto& f : fields)
    if (columns.empty()) read.push_back(&f);
  for (const auto& c : columns)
    for (const auto& f : fields)
      if (c == f.name) read.push_back(&f);
  if (read.size() != (columns.empty() ? fields.size() : columns.size()))
    return Status::Invalid(std::string("results: a column asked of ") + TableOf<Row>().name + " is not one of it");
  auto rows = db.Query(SelectSql(TableOf<Row>(), columns) + " " + std::string(tail), params);
  if (!rows.ok()) return rows.status();
  std::vector<Row> out(rows->size());
  for (size_t i = 0; i < rows->size(); ++i)
    for (size_t c = 0; c < read.size() && c < (*rows)[i].size(); ++c) read[c]->from_sql(out[i], (*rows)[i][c]);
  return out;
}

// "DELETE FROM table <where>"; returns the rows deleted.
template <class Row>
Result<uint64_t> Delete(MysqlConn& db, std::string_view where, const std::vector<SqlParam>& params) {
  return db.Exec(std::string("DELETE FROM ") + TableOf<Row>().name + " " + std::string(where), params);
}

// The row as a JSON object of its columns ("name": value; NULL as null;
// times as stored), all in table order or the ones named in that order.
// Unknown names are a programming error: they are skipped.
template <class Row>
void WriteJson(JsonWriter& w, const Row& r, std::initializer_list<std::string_view> columns = {}) {
  w.BeginObject();
  const auto& fields = FieldsOf<Row>();
  if (columns.size() == 0)
    for (const auto& f : fields) f.to_json(w, r);
  for (std::string_view c : columns)
    for (const auto& f : fields)
      if (c == f.name) f.to_json(w, r);
  w.EndObject();
}

// The row's fields in its result stream (results.def STREAM), in record
// order: each MAP field from its column (typed as the field; a NULL column,
// or an empty Text column of an optional field, left out), and at each
// DERIVED field derived(field) for the caller to write it (or not). The
// record's head and its EndObject are the caller's.
//
//   results::WriteStreamFields(w, row, [&](std::string_view f) { w.Kv(f, window_ns); });
template <class Row, class Derived>
void WriteStreamFields(JsonWriter& w, const Row& r, Derived&& derived) {
  struct Step {
    const char* field;
    const FieldOf<Row>* column;  // null: DERIVED
    schema::Type type;
    bool required;
  };
  static const std::vector<Step> plan = [] {
    std::vector<Step> p;
    const Stream* s = FindStream(TableOf<Row>().name);
    if (!s) return p;
    for (const auto& f : s->fields) {
      Step step{f.field, nullptr, schema::Type::kKeyword, false};
      if (f.column) {
        const schema::Field* sf = schema::FindField(f.field);
        for (const auto& c : FieldsOf<Row>())
          if (std::string_view(c.name) == f.column) step.column = &c;
        if (!sf || !step.column) continue;  // test_results_table says which
        step.type = sf->type;
        step.required = sf->required;
      }
      p.push_back(step);
    }
    return p;
  }();
  for (const Step& s : plan) {
    if (s.column) s.column->to_record(w, s.field, s.type, s.required, r);
    else derived(std::string_view(s.field));
  }
}

}  // namespace iosonar::results
