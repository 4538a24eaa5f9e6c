// The embedded record store on SQLite.
//
// Layout, all derived from the schema table so the two cannot drift: one
// table per dataset (iosonar.trace -> "trace"), one column per field of that
// dataset with the field's dotted name as the (quoted) column name. Keywords
// are TEXT, longs/bools INTEGER, doubles REAL, dates INTEGER epoch ns.
// UNIQUE("event.stream","event.seq") makes a resend harmless: INSERT OR IGNORE
// skips the row and sqlite3_changes() tells us it was a duplicate.
#include <sqlite3.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "iosonar/ingest.h"
#include "iosonar/schema.h"
#include "iosonar/store.h"

namespace iosonar {
namespace {

std::string QuoteIdent(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// "iosonar.trace" -> "trace": short names for people typing SQL by hand.
std::string TableNameOf(std::string_view dataset) {
  constexpr std::string_view kPrefix = "iosonar.";
  if (dataset.substr(0, kPrefix.size()) == kPrefix) dataset.remove_prefix(kPrefix.size());
  std::string out;
  for (char c : dataset) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

const char* SqlType(schema::Type t) {
  switch (t) {
    case schema::Type::kKeyword: return "TEXT";
    case schema::Type::kDouble: return "REAL";
    case schema::Type::kLong:
    case schema::Type::kDate:
    case schema::Type::kBool: return "INTEGER";
  }
  return "";
}

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

struct Table {
  const schema::Dataset* ds = nullptr;
  std::string qname;                         // quoted table name
  std::vector<const schema::Field*> fields;  // the dataset's fields, schema order
  std::vector<size_t> field_index;           // position of each in schema::Fields()
  std::vector<bool> is_date;
  Stmt insert;                               // prepared once, reused for every row
};

class SqliteRow final : public Row {
 public:
  explicit SqliteRow(sqlite3_stmt* s) : s_(s) {}
  bool Has(size_t k) const override { return sqlite3_column_type(s_, Col(k)) != SQLITE_NULL; }
  int64_t Int(size_t k) const override { return sqlite3_column_int64(s_, Col(k)); }
  double Double(size_t k) const override { return sqlite3_column_double(s_, Col(k)); }
  std::string_view Str(size_t k) const override {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, Col(k)));
    if (!p) return {};
    return {p, static_cast<size_t>(sqlite3_column_bytes(s_, Col(k)))};
  }

 private:
  static int Col(size_t k) { return static_cast<int>(k); }
  sqlite3_stmt* s_;
};

class SqliteStore final : public Store, public BulkWriter {
 public:
  ~SqliteStore() override {
    tables_.clear();  // statements before the connection
    begin_ = Stmt();
    commit_ = Stmt();
    rollback_ = Stmt();
    if (db_) sqlite3_close(db_);
  }

  Status Open(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Io("store directory " + dir + ": " + ec.message());
    path_ = dir + "/store.db";
    int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
    if (rc != SQLITE_OK) return Status::Io("open " + path_ + ": " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
    // Another process (a second collector, an analysis job) may hold the
    // write lock for a moment; wait rather than fail.
    sqlite3_busy_timeout(db_, 10000);
    // page_size only takes effect on a new file (before the first table);
    // 16 KiB measured as fast as 4-32 KiB for bulk inserts and keeps the
    // B-trees shallow for scans (test/bench/RESULTS.md). synchronous=NORMAL in WAL mode can lose the last commits on power
    // loss but never corrupts; exporters resend and duplicates are ignored.
    if (auto s = Exec("PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                      "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-16384; PRAGMA wal_autocheckpoint=2000;");
        !s.ok())
      return s;
    if (auto s = Prepare("BEGIN IMMEDIATE", &begin_, true); !s.ok()) return s;
    if (auto s = Prepare("COMMIT", &commit_, true); !s.ok()) return s;
    if (auto s = Prepare("ROLLBACK", &rollback_, true); !s.ok()) return s;
    for (const auto& d : schema::Datasets())
      if (auto s = SetUpTable(d); !s.ok()) return s;
    return Status::Ok();
  }

  Status Append(std::span<const ParsedRecord* const> recs, AppendStats* stats) override {
    if (recs.empty()) return Status::Ok();
    if (auto s = BeginBatch(); !s.ok()) return s;
    AppendStats local;
    for (const ParsedRecord* r : recs)
      if (Status s = Insert(*r, &local); !s.ok()) {
        AbortBatch();
        return s;
      }
    if (auto s = CommitBatch(); !s.ok()) return s;
    if (stats) {
      stats->inserted += local.inserted;
      stats->duplicates += local.duplicates;
    }
    return Status::Ok();
  }

  // ---- BulkWriter ----
  Status BeginBatch() override { return Step(begin_.get(), "BEGIN"); }

  Status CommitBatch() override {
    Status s = Step(commit_.get(), "COMMIT");
    if (!s.ok()) AbortBatch();
    return s;
  }

  void AbortBatch() override {
    if (!sqlite3_get_autocommit(db_)) (void)Step(rollback_.get(), "ROLLBACK");
  }

  Status Insert(const ParsedRecord& r, AppendStats* stats) override {
    if (!r.dataset) return Status::Invalid("record without a dataset (not parsed?)");
    // Records usually come in runs of one dataset; remember the last table.
    if (r.dataset != last_ds_) {
      auto it = tables_.find(r.dataset->name);
      if (it == tables_.end()) return Status::Invalid("no table for dataset " + std::string(r.dataset->name));
      last_tab_ = &it->second;
      last_ds_ = r.dataset;
    }
    const Table& tab = *last_tab_;
    sqlite3_stmt* st = tab.insert.get();
    const size_t n = tab.field_index.size();
    for (size_t c = 0; c < n; ++c) {
      const FieldValue& v = r.v[tab.field_index[c]];
      const int col = static_cast<int>(c) + 1;
      switch (v.kind) {
        case FieldValue::kAbsent: sqlite3_bind_null(st, col); break;
        case FieldValue::kInt:
        case FieldValue::kBool: sqlite3_bind_int64(st, col, v.i); break;
        case FieldValue::kDouble: sqlite3_bind_double(st, col, v.d); break;
        case FieldValue::kString:
          // Dates keep their text in s but are stored as epoch ns.
          if (tab.is_date[c])
            sqlite3_bind_int64(st, col, v.i);
          else  // SQLite copies the text during the step; the caller's buffer may go after
            sqlite3_bind_text(st, col, v.s.data(), static_cast<int>(v.s.size()), SQLITE_STATIC);
          break;
      }
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return Error("insert into " + tab.qname);
    if (!stats) return Status::Ok();
    if (sqlite3_changes(db_) > 0) ++stats->inserted;
    else ++stats->duplicates;
    return Status::Ok();
  }

  Status Scan(const ScanQuery& q, const std::function<bool(const Row&)>& fn) override {
    auto t = FindTable(q.dataset);
    if (!t.ok()) return t.status();
    Table* tab = *t;
    std::string sql = "SELECT ";
    if (q.fields.empty()) sql += "NULL";
    for (size_t i = 0; i < q.fields.size(); ++i) {
      auto f = FieldOf(*tab, q.fields[i]);
      if (!f.ok()) return f.status();
      if (i) sql += ",";
      sql += QuoteIdent(q.fields[i]);
    }
    sql += " FROM " + tab->qname;
    std::vector<Bind> binds;
    if (auto s = Where(*tab, q.range, q.filters, &sql, &binds); !s.ok()) return s;
    // Time order is what analyses of phases and bandwidth want; with a
    // job.id filter the (job.id, @timestamp) index delivers it without a sort.
    sql += " ORDER BY \"@timestamp\"";
    Stmt st;
    if (auto s = Prepare(sql, &st); !s.ok()) return s;
    if (auto s = BindAll(st.get(), binds); !s.ok()) return s;
    SqliteRow row(st.get());
    for (;;) {
      int rc = sqlite3_step(st.get());
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return Error("scan " + q.dataset);
      if (!fn(row)) return Status::Ok();
    }
  }

  Result<std::vector<Bucket>> BucketSums(const BucketQuery& q) override {
    auto t = FindTable(q.dataset);
    if (!t.ok()) return t.status();
    Table* tab = *t;
    if (q.bucket_ns <= 0) return Status::Invalid("bucket width must be positive, got " + std::to_string(q.bucket_ns));
    std::vector<Bind> binds;
    // Floor division, so buckets stay aligned to the epoch before 1970 too.
    std::string sql =
        "SELECT (\"@timestamp\" / ?1) - (\"@timestamp\" < 0 AND \"@timestamp\" % ?1 != 0) AS b, COUNT(*)";
    binds.push_back({Bind::kInt, q.bucket_ns, {}});
    for (const auto& name : q.sum_fields) {
      auto f = FieldOf(*tab, name);
      if (!f.ok()) return f.status();
      auto ty = (*f)->type;
      if (ty != schema::Type::kLong && ty != schema::Type::kDouble && ty != schema::Type::kBool)
        return Status::Invalid("cannot sum field " + name + ": it is a " + std::string(schema::TypeName(ty)) +
                               ", not a number");
      sql += ",TOTAL(" + QuoteIdent(name) + ")";
    }
    sql += " FROM " + tab->qname;
    if (auto s = Where(*tab, q.range, q.filters, &sql, &binds); !s.ok()) return s;
    sql += " GROUP BY b ORDER BY b";
    Stmt st;
    if (auto s = Prepare(sql, &st); !s.ok()) return s;
    if (auto s = BindAll(st.get(), binds); !s.ok()) return s;
    std::vector<Bucket> out;
    for (;;) {
      int rc = sqlite3_step(st.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return Error("bucket sums of " + q.dataset);
      Bucket b;
      b.start_ns = sqlite3_column_int64(st.get(), 0) * q.bucket_ns;
      b.doc_count = static_cast<uint64_t>(sqlite3_column_int64(st.get(), 1));
      for (size_t i = 0; i < q.sum_fields.size(); ++i) b.sums.push_back(sqlite3_column_double(st.get(), static_cast<int>(i) + 2));
      out.push_back(std::move(b));
    }
    return out;
  }

  Result<uint64_t> Count(const std::string& dataset, const std::vector<FieldFilter>& filters) override {
    auto t = FindTable(dataset);
    if (!t.ok()) return t.status();
    std::string sql = "SELECT COUNT(*) FROM " + (*t)->qname;
    std::vector<Bind> binds;
    if (auto s = Where(**t, TimeRange{}, filters, &sql, &binds); !s.ok()) return s;
    Stmt st;
    if (auto s = Prepare(sql, &st); !s.ok()) return s;
    if (auto s = BindAll(st.get(), binds); !s.ok()) return s;
    if (sqlite3_step(st.get()) != SQLITE_ROW) return Error("count " + dataset);
    return static_cast<uint64_t>(sqlite3_column_int64(st.get(), 0));
  }

 private:
  struct Bind {
    enum Kind { kInt, kText } kind;
    int64_t i;
    std::string s;
  };

  Status Error(const std::string& what) const { return Status::Io(what + " in " + path_ + ": " + sqlite3_errmsg(db_)); }

  Status Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      Status s = Status::Io(path_ + ": " + (err ? err : "?") + " (in: " + sql.substr(0, 200) + ")");
      sqlite3_free(err);
      return s;
    }
    return Status::Ok();
  }

  // persistent: the statement is kept and reused (SQLite then keeps it out
  // of the small lookaside memory meant for short-lived ones).
  Status Prepare(const std::string& sql, Stmt* out, bool persistent = false) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), persistent ? SQLITE_PREPARE_PERSISTENT : 0,
                           &s, nullptr) !=
        SQLITE_OK)
      return Status::Internal("prepare in " + path_ + ": " + sqlite3_errmsg(db_) + " (in: " + sql.substr(0, 200) + ")");
    *out = Stmt(s);
    return Status::Ok();
  }

  Status Step(sqlite3_stmt* s, const char* what) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return Error(what);
    return Status::Ok();
  }

  Status SetUpTable(const schema::Dataset& d) {
    Table t;
    t.ds = &d;
    t.qname = QuoteIdent(TableNameOf(d.name));
    t.fields = schema::FieldsOf(d.name);
    for (const auto* f : t.fields) {
      t.field_index.push_back(static_cast<size_t>(f - schema::Fields().data()));
      t.is_date.push_back(f->type == schema::Type::kDate);
    }
    std::string cols;
    for (const auto* f : t.fields) cols += QuoteIdent(f->name) + " " + SqlType(f->type) + ",";
    if (auto s = Exec("CREATE TABLE IF NOT EXISTS " + t.qname + " (" + cols +
                      "UNIQUE(\"event.stream\",\"event.seq\"))");
        !s.ok())
      return s;
    // Schema evolution: a field added to the schema since the table was made
    // becomes a new (NULL for old rows) column.
    std::set<std::string> have;
    {
      Stmt info;
      if (auto s = Prepare("PRAGMA table_info(" + t.qname + ")", &info); !s.ok()) return s;
      while (sqlite3_step(info.get()) == SQLITE_ROW)
        have.insert(reinterpret_cast<const char*>(sqlite3_column_text(info.get(), 1)));
    }
    for (const auto* f : t.fields)
      if (!have.count(std::string(f->name)))
        if (auto s = Exec("ALTER TABLE " + t.qname + " ADD COLUMN " + QuoteIdent(f->name) + " " + SqlType(f->type));
            !s.ok())
          return s;
    if (auto s = Exec("CREATE INDEX IF NOT EXISTS " + QuoteIdent(TableNameOf(d.name) + "_job_ts") + " ON " + t.qname +
                      "(\"job.id\",\"@timestamp\")");
        !s.ok())
      return s;
    std::string sql = "INSERT OR IGNORE INTO " + t.qname + " (", params;
    for (size_t i = 0; i < t.fields.size(); ++i) {
      sql += (i ? "," : "") + QuoteIdent(t.fields[i]->name);
      params += i ? ",?" : "?";
    }
    sql += ") VALUES (" + params + ")";
    if (auto s = Prepare(sql, &t.insert, true); !s.ok()) return s;
    tables_.emplace(d.name, std::move(t));
    return Status::Ok();
  }

  Result<Table*> FindTable(const std::string& dataset) {
    auto it = tables_.find(dataset);
    if (it == tables_.end()) return Status::Invalid("unknown dataset \"" + dataset + "\" (not in the record schema)");
    return &it->second;
  }

  static Result<const schema::Field*> FieldOf(const Table& t, const std::string& name) {
    for (const auto* f : t.fields)
      if (f->name == name) return f;
    if (schema::FindField(name))
      return Status::Invalid("field " + name + " is not part of dataset " + std::string(t.ds->name));
    return Status::Invalid("unknown field \"" + name + "\" (not in the record schema)");
  }

  static Status Where(const Table& t, const TimeRange& r, const std::vector<FieldFilter>& filters, std::string* sql,
                      std::vector<Bind>* binds) {
    std::vector<std::string> conds;
    // Called after pushing the value it stands for.
    auto param = [&] { return "?" + std::to_string(binds->size()); };
    if (r.start_ns != TimeRange{}.start_ns) {
      binds->push_back({Bind::kInt, r.start_ns, {}});
      conds.push_back("\"@timestamp\" >= " + param());
    }
    if (r.end_ns != TimeRange{}.end_ns) {
      binds->push_back({Bind::kInt, r.end_ns, {}});
      conds.push_back("\"@timestamp\" < " + param());
    }
    for (const auto& f : filters) {
      auto fr = FieldOf(t, f.field);
      if (!fr.ok()) return fr.status();
      auto ty = (*fr)->type;
      if (ty == schema::Type::kKeyword) {
        binds->push_back({Bind::kText, 0, f.equals});
      } else if (ty == schema::Type::kLong) {
        int64_t v = 0;
        const char* end = f.equals.data() + f.equals.size();
        auto res = std::from_chars(f.equals.data(), end, v);
        if (res.ec != std::errc() || res.ptr != end || f.equals.empty())
          return Status::Invalid("filter on " + f.field + ": \"" + f.equals + "\" is not an integer");
        binds->push_back({Bind::kInt, v, {}});
      } else {
        return Status::Invalid("cannot filter on " + f.field + ": it is a " + std::string(schema::TypeName(ty)) +
                               " (only keyword and long fields can be filtered)");
      }
      conds.push_back(QuoteIdent(f.field) + " = " + param());
    }
    for (size_t i = 0; i < conds.size(); ++i) *sql += (i ? " AND " : " WHERE ") + conds[i];
    return Status::Ok();
  }

  Status BindAll(sqlite3_stmt* st, const std::vector<Bind>& binds) {
    for (size_t i = 0; i < binds.size(); ++i) {
      int col = static_cast<int>(i) + 1, rc;
      if (binds[i].kind == Bind::kInt) rc = sqlite3_bind_int64(st, col, binds[i].i);
      else rc = sqlite3_bind_text(st, col, binds[i].s.data(), static_cast<int>(binds[i].s.size()), SQLITE_TRANSIENT);
      if (rc != SQLITE_OK) return Error("bind");
    }
    return Status::Ok();
  }

  sqlite3* db_ = nullptr;
  std::string path_;
  Stmt begin_, commit_, rollback_;
  std::map<std::string, Table, std::less<>> tables_;
  const schema::Dataset* last_ds_ = nullptr;
  const Table* last_tab_ = nullptr;
};

}  // namespace

BulkWriter* BulkWriterOf(Store* store) { return dynamic_cast<BulkWriter*>(store); }

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir) {
  auto s = std::make_unique<SqliteStore>();
  if (auto st = s->Open(dir); !st.ok()) return st;
  return std::unique_ptr<Store>(std::move(s));
}

}  // namespace iosonar
