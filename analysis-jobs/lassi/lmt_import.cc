#include "analysis-jobs/lassi/lmt_import.h"

#include <sqlite3.h>

#include <map>
#include <optional>
#include <vector>

#include "core/base/json.h"
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

uint64_t StreamId(const std::string& s) {  // FNV-1a, stable across runs
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h >> 1;
}

}  // namespace

Result<LmtImportStats> ImportLmt(const std::string& path, int64_t utc_offset_s,
                                 const std::function<Status(const std::string&)>& emit) {
  Db d;
  if (sqlite3_open_v2(path.c_str(), &d.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    return Status::Io("cannot open LMT database " + path);
  LmtImportStats stats;
  std::map<int64_t, int64_t> ts;  // TS_ID -> epoch ns (UTC)
  size_t bad_ts = 0;
  Status s = Query(d.db, path, "SELECT TS_ID, TIMESTAMP FROM TIMESTAMP_INFO", [&](sqlite3_stmt* st) {
    std::string t = Text(st, 1);
    if (t.size() == 19 && t[10] == ' ') t[10] = 'T';
    auto ns = ParseIso8601(t + "Z");
    if (!ns) {
      ++bad_ts;
      return;
    }
    ts[sqlite3_column_int64(st, 0)] = *ns - utc_offset_s * 1000000000LL;
  });
  if (!s.ok()) return s;
  if (ts.empty()) return Status::Invalid(path + ": TIMESTAMP_INFO has no readable timestamps");
  stats.timestamps = ts.size();
  stats.first_ns = ts.begin()->second;
  stats.last_ns = ts.rbegin()->second;
  s = Query(d.db, path, "SELECT FILESYSTEM_NAME FROM FILESYSTEM_INFO LIMIT 1",
            [&](sqlite3_stmt* st) { stats.fs = Text(st, 0); });
  if (!s.ok()) return s;

  struct Target {
    std::string name, host;
  };
  std::map<int64_t, Target> osts, mdss;
  s = Query(d.db, path, "SELECT OST_ID, OST_NAME, HOSTNAME FROM OST_INFO",
            [&](sqlite3_stmt* st) { osts[sqlite3_column_int64(st, 0)] = {Text(st, 1), Text(st, 2)}; });
  if (!s.ok()) return s;
  s = Query(d.db, path, "SELECT MDS_ID, MDS_NAME, HOSTNAME FROM MDS_INFO",
            [&](sqlite3_stmt* st) { mdss[sqlite3_column_int64(st, 0)] = {Text(st, 1), Text(st, 2)}; });
  if (!s.ok()) return s;
  std::map<int64_t, std::string> op_field;  // OPERATION_ID -> mds.* field of iosonar.mds
  s = Query(d.db, path, "SELECT OPERATION_ID, OPERATION_NAME FROM OPERATION_INFO", [&](sqlite3_stmt* st) {
    std::string f = "mds." + Text(st, 1);
    const auto* fd = schema::FindField(f);
    if (fd && schema::FieldInDataset(*fd, "iosonar.mds") && fd->type == schema::Type::kLong)
      op_field[sqlite3_column_int64(st, 0)] = f;
  });
  if (!s.ok()) return s;

  const uint64_t oss_stream = StreamId("lmt-oss:" + path), mds_stream = StreamId("lmt-mds:" + path);
  int64_t oss_seq = 0, mds_seq = 0;
  auto head = [&](JsonWriter& w, int64_t t, DatasetId ds, uint64_t stream, int64_t seq, const Target& tg,
                  int64_t elapsed) {
    w.BeginObject();
    w.Kv(field::kTimestamp, FormatIsoMillis(t));
    w.Kv(field::kEventDataset, ds);
    w.Key(field::kEventStream);
    w.Int(static_cast<int64_t>(stream));
    w.Kv(field::kEventSeq, seq);
    w.Kv(field::kHostName, tg.host.empty() ? std::string("lmt") : tg.host);
    w.Kv(field::kLustreFs, stats.fs);
    w.Kv(field::kLustreTarget, tg.name);
    w.Kv(field::kLustreElapsedNs, elapsed);
  };

  // OSTs: consecutive readings of each OST.
  struct Prev {
    int64_t t = 0;
    std::vector<double> v;
  };
  std::map<int64_t, Prev> prev;
  Status emit_st = Status::Ok();
  s = Query(d.db, path, "SELECT OST_ID, TS_ID, READ_BYTES, WRITE_BYTES FROM OST_DATA ORDER BY OST_ID, TS_ID",
            [&](sqlite3_stmt* st) {
              if (!emit_st.ok()) return;
              auto it = ts.find(sqlite3_column_int64(st, 1));
              if (it == ts.end()) return;
              const int64_t id = sqlite3_column_int64(st, 0);
              std::vector<double> v = {sqlite3_column_double(st, 2), sqlite3_column_double(st, 3)};
              auto p = prev.find(id);
              if (p != prev.end() && it->second > p->second.t) {
                std::string line;
                JsonWriter w(&line);
                head(w, it->second, dataset::kOss, oss_stream, ++oss_seq, osts[id], it->second - p->second.t);
                if (v[0] < p->second.v[0] || v[1] < p->second.v[1]) {
                  w.Kv(field::kLustreReset, true);
                  ++stats.resets;
                } else {
                  w.Kv(field::kOssReadBytes, static_cast<int64_t>(v[0] - p->second.v[0]));
                  w.Kv(field::kOssWriteBytes, static_cast<int64_t>(v[1] - p->second.v[1]));
                }
                w.EndObject();
                ++stats.oss_records;
                emit_st = emit(line);
              }
              prev[id] = {it->second, v};
            });
  if (!s.ok()) return s;
  if (!emit_st.ok()) return emit_st;

  // MDS: one record per MDS per reading with every known op's delta.
  std::map<std::pair<int64_t, int64_t>, std::map<std::string, double>> mds;  // (MDS, TS) -> field -> counter
  s = Query(d.db, path, "SELECT MDS_ID, TS_ID, OPERATION_ID, SAMPLES FROM MDS_OPS_DATA", [&](sqlite3_stmt* st) {
    auto f = op_field.find(sqlite3_column_int64(st, 2));
    if (f == op_field.end()) return;
    mds[{sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)}][f->second] = sqlite3_column_double(st, 3);
  });
  if (!s.ok()) return s;
  const std::map<std::string, double>* last = nullptr;
  int64_t last_id = -1, last_t = 0;
  for (const auto& [k, ops] : mds) {
    auto it = ts.find(k.second);
    if (it == ts.end()) continue;
    if (last && last_id == k.first && it->second > last_t) {
      std::string line;
      JsonWriter w(&line);
      head(w, it->second, dataset::kMds, mds_stream, ++mds_seq, mdss[k.first], it->second - last_t);
      bool reset = false;
      for (const auto& [f, v] : ops) {
        auto pv = last->find(f);
        if (pv != last->end() && v < pv->second) reset = true;
      }
      if (reset) {
        w.Kv(field::kLustreReset, true);
        ++stats.resets;
      } else {
        for (const auto& [f, v] : ops) {
          auto pv = last->find(f);
          if (pv != last->end()) w.Kv(f, static_cast<int64_t>(v - pv->second));
        }
      }
      w.EndObject();
      ++stats.mds_records;
      Status e = emit(line);
      if (!e.ok()) return e;
    }
    last = &ops;
    last_id = k.first;
    last_t = it->second;
  }
  if (bad_ts) return Status::Invalid(path + ": " + std::to_string(bad_ts) + " unreadable TIMESTAMP_INFO rows");
  return stats;
}

}  // namespace iosonar::lassi
