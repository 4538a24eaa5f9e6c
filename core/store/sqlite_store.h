// The embedded SQLite record store: layout and tuning knobs.
//
// store.db keeps records in blocks, not one row per record (a row insert
// with its two indexes cost ~3-4 us a record; see test/bench/RESULTS.md):
//
//   blocks(id, dataset, job_id, ts_min, ts_max, n, data)
//       up to block_records records of ONE dataset and ONE job.id (NULL: no
//       job.id) from one ingest batch, encoded as in block_codec.h; indexed
//       on (dataset, ts_min, ts_max) for time-range scans and on
//       (job_id, dataset, ts_min) for per-job scans, which so read nothing
//       of other jobs.
//   streams(stream, ranges)
//       per event.stream, the event.seq values stored, as intervals
//       ("0-1499,1503-1600", seq_ranges.h): resend dedupe without a
//       per-record index. Written in the same transaction as the blocks.
//   fields(dataset, code, name, type)
//       the number each field has inside that dataset's blocks.
//   PRAGMA user_version = kStoreFormat.
//
// A store.db of the old row-per-record layout (or of a newer format) is
// refused at open with an error naming the file.
//
// The store object is used by one thread at a time. Several processes may
// open one store.db: writes are serialised by SQLite's write lock, and a
// writer drops its cached stream ranges whenever another connection has
// committed since its last batch (PRAGMA data_version), so dedupe holds
// across processes too.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar {

inline constexpr int kStoreFormat = 2;  // PRAGMA user_version; 0 = the old row-per-record layout

struct SqliteStoreOptions {
  size_t block_records = 4096;         // records a block holds at most (also cut at 4 MiB of encoded data)
  size_t max_cached_streams = 100000;  // stream ranges kept in memory; beyond, unused ones are dropped
};

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir, const SqliteStoreOptions& opts);

// The records of q.dataset in q.range matching q.filters (q.fields is
// ignored: every field is written), in @timestamp order, one JSON line each
// (without '\n') as the schema spells them: fields in schema order, dates
// as ISO 8601 UTC with as many fraction digits as they need. The lines
// parse back into the same records, so they can be re-ingested (`iosonar
// collect --from-file`) or read with jq, DuckDB or sqlite3's JSON functions
// now that the store has no typed SQL columns. out returns false to stop.
// Works on any Store; thread-safety is the store's.
Status ExportJsonLines(Store& store, const ScanQuery& q, const std::function<bool(std::string_view line)>& out);

// The reverse: '\n'-separated JSON lines appended to any Store, 512 records
// an Append. A line that does not parse as a record goes to bad(line number
// from 1, why) and is skipped; a store error stops the import and is returned.
Status AppendJsonLines(Store& store, std::string_view lines, AppendStats* stats,
                       const std::function<void(size_t lineno, const Status& why)>& bad);

}  // namespace iosonar
