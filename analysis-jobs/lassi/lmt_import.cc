#include "analysis-jobs/lassi/lmt_import.h"

#include <sqlite3.h>

#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "core/base/hash.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/records/fields.h"
#include "core/records/schema.h"
#include "core/base/timeutil.h"

namespace iosonar::lassi {
namespace {

struct Db {
  sqlite3* db = nullptr;
  ~Db() {
    if (db) sqlite3_close(db);
  }
};

// Runs sql, calling fn for each row; errors name the file and statement.
Status Query(sqlite3* db, const std::string& path, const char* sql, const std::function<void(sqlite3_stmt*)>& fn) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK)
    return Status::Invalid(path + ": not an LMT database? " + sqlite3_errmsg(db) + " in: " + sql);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) fn(st);
  Status out = rc == SQLITE_DONE ? Status::Ok() : Status::Io(path + ": " + sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return out;
}

std::string Text(sqlite3_stmt* st, int col) {
  auto* p = sqlite3_column_text(st, col);
  return p ? reinterpret_cast<const char*>(p) : "";
}

// The event.stream of an imported file's records: FNV-1a of "lmt-oss:PATH" /
// "lmt-mds:PATH", so importing the same file again dedupes. The seed is not
// FNV's offset basis (a digit short), but the ids of stores that already hold
// imports depend on it, so it stays.
uint64_t StreamId(const std::string& s) { return Fnv1a(s, 1469598103934665603ull) >> 1; }

// One LMT database, read table by table into records.
class LmtImport {
 public:
  LmtImport(sqlite3* db, const std::string& path, int64_t utc_offset_s,
            const std::function<Status(const std::string&)>& emit)
      : db_(db), path_(path), utc_offset_s_(utc_offset_s), emit_(emit),
        oss_stream_(StreamId("lmt-oss:" + path)), mds_stream_(StreamId("lmt-mds:" + path)) {}

  Result<LmtImportStats> Run() {
    if (Status s = ReadTimestamps(); !s.ok()) return s;
    if (Status s = ReadTargets(); !s.ok()) return s;
    if (Status s = OstRecords(); !s.ok()) return s;
    if (Status s = MdsRecords(); !s.ok()) return s;
    if (bad_ts_) return Status::Invalid(path_ + ": " + std::to_string(bad_ts_) + " unreadable TIMESTAMP_INFO rows");
    return stats_;
  }

 private:
  struct Target {
    std::string name, host;
  };

  // TIMESTAMP_INFO: TS_ID -> epoch ns (UTC).
  Status ReadTimestamps() {
    Status s = Query(db_, path_, "SELECT TS_ID, TIMESTAMP FROM TIMESTAMP_INFO", [&](sqlite3_stmt* st) {
      std::string t = Text(st, 1);
      if (t.size() == 19 && t[10] == ' ') t[10] = 'T';
      auto ns = ParseIso8601(t + "Z");
      if (!ns) {
        ++bad_ts_;
        return;
      }
      ts_[sqlite3_column_int64(st, 0)] = *ns - utc_offset_s_ * 1000000000LL;
    });
    if (!s.ok()) return s;
    if (ts_.empty()) return Status::Invalid(path_ + ": TIMESTAMP_INFO has no readable timestamps");
    stats_.timestamps = ts_.size();
    stats_.first_ns = ts_.begin()->second;
    stats_.last_ns = ts_.rbegin()->second;
    return Status::Ok();
  }

  // The file system, its OSTs and MDSs, and the MDS operations iosonar.mds has a field for.
  Status ReadTargets() {
    Status s = Query(db_, path_, "SELECT FILESYSTEM_NAME FROM FILESYSTEM_INFO LIMIT 1",
                     [&](sqlite3_stmt* st) { stats_.fs = Text(st, 0); });
    if (!s.ok()) return s;
    s = Query(db_, path_, "SELECT OST_ID, OST_NAME, HOSTNAME FROM OST_INFO",
              [&](sqlite3_stmt* st) { osts_[sqlite3_column_int64(st, 0)] = {Text(st, 1), Text(st, 2)}; });
    if (!s.ok()) return s;
    s = Query(db_, path_, "SELECT MDS_ID, MDS_NAME, HOSTNAME FROM MDS_INFO",
              [&](sqlite3_stmt* st) { mdss_[sqlite3_column_int64(st, 0)] = {Text(st, 1), Text(st, 2)}; });
    if (!s.ok()) return s;
    return Query(db_, path_, "SELECT OPERATION_ID, OPERATION_NAME FROM OPERATION_INFO", [&](sqlite3_stmt* st) {
      std::string f = "mds." + Text(st, 1);
      const auto* fd = schema::FindField(f);
      if (fd && schema::FieldInDataset(*fd, "iosonar.mds") && fd->type == schema::Type::kLong)
        op_field_[sqlite3_column_int64(st, 0)] = f;
    });
  }

  void Head(JsonWriter& w, int64_t t, DatasetId ds, uint64_t stream, int64_t seq, const Target& tg, int64_t elapsed) {
    w.BeginObject();
    w.Kv(field::kTimestamp, FormatIsoMillis(t));
    w.Kv(field::kEventDataset, ds);
    w.Key(field::kEventStream);
    w.Int(static_cast<int64_t>(stream));
    KvAll(w, field::kEventSeq, seq, field::kHostName, tg.host.empty() ? std::string("lmt") : tg.host,
          field::kLustreFs, stats_.fs, field::kLustreTarget, tg.name, field::kLustreElapsedNs, elapsed);
  }

  // OSTs: consecutive readings of each OST.
  Status OstRecords() {
    struct Prev {
      int64_t t = 0;
      std::vector<double> v;
    };
    std::map<int64_t, Prev> prev;
    Status emit_st = Status::Ok();
    Status s = Query(db_, path_, "SELECT OST_ID, TS_ID, READ_BYTES, WRITE_BYTES FROM OST_DATA ORDER BY OST_ID, TS_ID",
                     [&](sqlite3_stmt* st) {
                       if (!emit_st.ok()) return;
                       auto it = ts_.find(sqlite3_column_int64(st, 1));
                       if (it == ts_.end()) return;
                       const int64_t id = sqlite3_column_int64(st, 0);
                       std::vector<double> v = {sqlite3_column_double(st, 2), sqlite3_column_double(st, 3)};
                       auto p = prev.find(id);
                       if (p != prev.end() && it->second > p->second.t) {
                         std::string line;
                         JsonWriter w(&line);
                         Head(w, it->second, dataset::kOss, oss_stream_, ++oss_seq_, osts_[id],
                              it->second - p->second.t);
                         if (v[0] < p->second.v[0] || v[1] < p->second.v[1]) {
                           w.Kv(field::kLustreReset, true);
                           ++stats_.resets;
                         } else {
                           w.Kv(field::kOssReadBytes, static_cast<int64_t>(v[0] - p->second.v[0]));
                           w.Kv(field::kOssWriteBytes, static_cast<int64_t>(v[1] - p->second.v[1]));
                         }
                         w.EndObject();
                         ++stats_.oss_records;
                         emit_st = emit_(line);
                       }
                       prev[id] = {it->second, v};
                     });
    return s.ok() ? emit_st : s;
  }

  // MDS: one record per MDS per reading with every known op's delta.
  Status MdsRecords() {
    std::map<std::pair<int64_t, int64_t>, std::map<std::string, double>> mds;  // (MDS, TS) -> field -> counter
    Status s = Query(db_, path_, "SELECT MDS_ID, TS_ID, OPERATION_ID, SAMPLES FROM MDS_OPS_DATA", [&](sqlite3_stmt* st) {
      auto f = op_field_.find(sqlite3_column_int64(st, 2));
      if (f == op_field_.end()) return;
      mds[{sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)}][f->second] = sqlite3_column_double(st, 3);
    });
    if (!s.ok()) return s;
    const std::map<std::string, double>* last = nullptr;
    int64_t last_id = -1, last_t = 0;
    for (const auto& [k, ops] : mds) {
      auto it = ts_.find(k.second);
      if (it == ts_.end()) continue;
      if (last && last_id == k.first && it->second > last_t) {
        std::string line;
        JsonWriter w(&line);
        Head(w, it->second, dataset::kMds, mds_stream_, ++mds_seq_, mdss_[k.first], it->second - last_t);
        bool reset = false;
        for (const auto& [f, v] : ops) {
          auto pv = last->find(f);
          if (pv != last->end() && v < pv->second) reset = true;
        }
        if (reset) {
          w.Kv(field::kLustreReset, true);
          ++stats_.resets;
        } else {
          for (const auto& [f, v] : ops) {
            auto pv = last->find(f);
            if (pv != last->end()) w.Kv(f, static_cast<int64_t>(v - pv->second));
          }
        }
        w.EndObject();
        ++stats_.mds_records;
        if (Status e = emit_(line); !e.ok()) return e;
      }
      last = &ops;
      last_id = k.first;
      last_t = it->second;
    }
    return Status::Ok();
  }

  sqlite3* db_;
  const std::string& path_;
  const int64_t utc_offset_s_;
  const std::function<Status(const std::string&)>& emit_;
  const uint64_t oss_stream_, mds_stream_;
  int64_t oss_seq_ = 0, mds_seq_ = 0;
  LmtImportStats stats_;
  std::map<int64_t, int64_t> ts_;  // TS_ID -> epoch ns (UTC)
  size_t bad_ts_ = 0;
  std::map<int64_t, Target> osts_, mdss_;
  std::map<int64_t, std::string> op_field_;  // OPERATION_ID -> mds.* field of iosonar.mds
};

}  // namespace

Result<LmtImportStats> ImportLmt(const std::string& path, int64_t utc_offset_s,
                                 const std::function<Status(const std::string&)>& emit) {
  Db d;
  if (sqlite3_open_v2(path.c_str(), &d.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    return Status::Io("cannot open LMT database " + path);
  return LmtImport(d.db, path, utc_offset_s, emit).Run();
}

std::optional<int64_t> ParseUtcOffset(const std::string& text) {
  int hh = 0, mm = 0;
  char sign = 0;
  if (std::sscanf(text.c_str(), "%c%d:%d", &sign, &hh, &mm) != 3 || (sign != '+' && sign != '-') || hh > 14 || mm > 59)
    return std::nullopt;
  return (sign == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
}

std::string ImportSummary(const LmtImportStats& st) {
  return "file system " + st.fs + ": " + std::to_string(st.timestamps) + " readings " + FormatIsoMillis(st.first_ns) +
         " to " + FormatIsoMillis(st.last_ns) + "; " + std::to_string(st.oss_records) + " iosonar.oss and " +
         std::to_string(st.mds_records) + " iosonar.mds records, " + std::to_string(st.resets) +
         " counter resets (unknown)\n";
}

}  // namespace iosonar::lassi
