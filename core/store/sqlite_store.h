// The embedded SQLite record store: layout and tuning knobs.
//
// store.db keeps records in blocks, not one row per record (a row insert
// with its two indexes cost ~3-4 us a record; see test/bench/RESULTS.md):
//
//   blocks(id, dataset, job_id, ts_min, ts_max, n, data, crc)
//       up to block_records records of ONE dataset and ONE job.id (NULL: no
//       job.id) from one ingest batch, encoded as in block_codec.h; crc is
//       CRC-32C over data and the row's other columns, verified on every read
//       (a damaged block is reported with its range and skipped; the rest of
//       the store reads; `iosonar store-check` finds and moves them aside); indexed
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
// refused at open with an error naming the file; one of format 2 (blocks
// without checksums) is upgraded in place, its old blocks read unverified.
//
// Files are private: a new store directory is 0700 and store.db (so its
// -wal and -shm) 0600 whatever the umask, or 0750/0640 with share_gid.
//
// The store object is used by one thread at a time. Several processes may
// open one store.db: writes are serialised by SQLite's write lock, and a
// writer drops its cached stream ranges whenever another connection has
// committed since its last batch (PRAGMA data_version), so dedupe holds
// across processes too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar {

inline constexpr int kStoreFormat = 3;  // PRAGMA user_version; 0 = the old row-per-record layout
inline constexpr int kStoreFormatNoChecksums = 2;  // blocks without crc: upgraded at open
// A store some of whose blocks store-compact merged (internal/block_merge.h):
// set by the first compaction, so an iosonar that cannot read merged blocks
// refuses the store at open instead of calling them damaged.
inline constexpr int kStoreFormatMerged = 4;

struct SqliteStoreOptions {
  size_t block_records = 4096;         // records a block holds at most (also cut at 4 MiB of encoded data)
  size_t max_cached_streams = 100000;  // stream ranges kept in memory; beyond, unused ones are dropped
  int64_t share_gid = -1;              // >= 0: new files 0640 and directories 0750, group-owned by it
  bool quiet_damage = false;           // damaged blocks: do not print (Damage() still lists them)
};

// What `iosonar store-check` found.
struct CheckReport {
  uint64_t blocks = 0, records = 0;
  uint64_t unverified = 0;  // blocks written before checksums (format 2)
  uint64_t merged = 0;      // blocks in the merged form (store-compact)
  uint64_t repaired = 0;    // damaged blocks moved to damaged_blocks
  std::vector<BlockDamage> damaged;
};

// Verifies every block of the store in dir (checksum and a full decode);
// with repair, moves the damaged ones into the table damaged_blocks of the
// same file (their event.seq stay marked as stored: a resend is not taken
// again). Fails only when the store cannot be read at all.
Status CheckSqliteStore(const std::string& dir, bool repair, CheckReport* out);

// store-compact: Beacon's second pass applied to the stored trace. Each
// first-pass iosonar.trace block chosen is rewritten in the merged form
// (internal/block_merge.h) when that is smaller; the block keeps its id,
// time range and count, and reads back as exactly the bytes it had, so
// every analysis gives the same output. Crash-safe: a chunk of blocks is
// merged, each checked by expanding it back and comparing, checksummed,
// and swapped in one SQLite transaction (WAL); a killed compaction loses
// nothing, and the next run merges what is left.
struct CompactOptions {
  std::string job;                      // "" = every job
  int64_t before_ns = INT64_MAX;        // only blocks whose records all precede this (ts_max < before_ns)
  size_t blocks_per_transaction = 32;
  bool dry_run = false;                 // measure, write nothing
  bool vacuum = false;                  // VACUUM afterwards: give the freed pages back to the file system
};

struct CompactReport {
  uint64_t blocks = 0, records = 0;          // trace blocks looked at (after the filters), their records
  uint64_t merged = 0, merged_records = 0;   // merged now
  uint64_t already = 0;                      // merged before
  uint64_t kept = 0;                         // left first-pass: not smaller, or not lossless (kept_why: the first reason)
  uint64_t damaged = 0;                      // checksum mismatch: left for store-check
  uint64_t bytes_before = 0, bytes_after = 0;  // data bytes of the trace blocks looked at, before and after
  uint64_t procs = 0, groups = 0, rank_patterns = 0;  // of the blocks merged now
  std::string kept_why;
  int64_t file_bytes_before = 0, file_bytes_after = 0;  // store.db + -wal
};

Status CompactSqliteStore(const std::string& dir, const CompactOptions& opts, CompactReport* out);

// Creates path 0600 (0640 and group share_gid when >= 0), refusing to follow
// a symbolic link; an existing file is left as it is.
Status CreatePrivateFile(const std::string& path, int64_t share_gid = -1);

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
