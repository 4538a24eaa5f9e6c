// The record store: the one narrow interface every analysis job reads
// through, so each analysis runs unchanged on the embedded SQLite store and
// on Elasticsearch.
//
// Writes: Append() takes parsed records of any dataset. A record whose
// (event.stream, event.seq) is already stored is skipped and counted as a
// duplicate, so resending is always safe.
// Reads: Scan() streams the records of one dataset in a time range that match
// keyword-equality filters, giving the asked-for fields of each row;
// BucketSums() sums numeric fields per fixed-width time bucket.
//
// A Store is used by one thread at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "core/records/record.h"
#include "core/base/status.h"

namespace iosonar {

struct AppendStats {
  uint64_t inserted = 0;
  uint64_t duplicates = 0;
};

struct TimeRange {
  int64_t start_ns = std::numeric_limits<int64_t>::min();  // @timestamp >= start
  int64_t end_ns = std::numeric_limits<int64_t>::max();    // @timestamp < end
};

// Fields are named by id (field::kJobId), so a misspelt field does not compile.
struct FieldFilter {
  FieldId field;       // a keyword or long field of the dataset
  std::string equals;  // compared as text for keywords, parsed for longs
};

struct ScanQuery {
  std::string dataset;               // e.g. "iosonar.trace"
  TimeRange range;
  std::vector<FieldFilter> filters;  // all must hold
  std::vector<FieldId> fields;       // fields to return, in this order
  // false: rows may come in any order. For callers that only add up; the
  // SQLite store then passes each block's rows as it decodes them, without
  // the k-way time merge (xlayer's 10^7-run trace scan; see
  // test/bench/RESULTS.md). Stores may ignore it and keep time order.
  bool ordered = true;
};

// One row of a scan. Values are in the order of ScanQuery::fields; strings
// are valid only during the callback.
class Row {
 public:
  virtual ~Row() = default;
  virtual bool Has(size_t k) const = 0;
  virtual int64_t Int(size_t k) const = 0;         // long and date (epoch ns)
  virtual double Double(size_t k) const = 0;
  virtual std::string_view Str(size_t k) const = 0;  // keyword
};

struct BucketQuery {
  std::string dataset;
  TimeRange range;
  std::vector<FieldFilter> filters;
  int64_t bucket_ns = 1000000000;     // fixed width, aligned to the epoch
  std::vector<FieldId> sum_fields;  // numeric fields to sum
};

struct Bucket {
  int64_t start_ns = 0;
  uint64_t doc_count = 0;
  std::vector<double> sums;  // in the order of BucketQuery::sum_fields
};

// A stored block that could not be read (checksum mismatch, undecodable):
// its records were skipped.
struct BlockDamage {
  int64_t id = 0;
  std::string dataset, job;  // job: "" when the block has no job.id
  int64_t ts_min = 0, ts_max = 0, records = 0;
  std::string reason;
  // "block 17 (iosonar.trace, job 1000, 2026-11-22T00:00:19.000Z .. 2026-11-22T00:01:59.066Z, 4096 records)
  // is damaged: checksum mismatch"
  std::string Describe() const;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual Status Append(std::span<const ParsedRecord* const> recs, AppendStats* stats) = 0;
  // fn returns false to stop early.
  virtual Status Scan(const ScanQuery& q, const std::function<bool(const Row&)>& fn) = 0;
  virtual Result<std::vector<Bucket>> BucketSums(const BucketQuery& q) = 0;
  virtual Result<uint64_t> Count(const std::string& dataset, const std::vector<FieldFilter>& filters) = 0;
  // The damaged blocks the reads so far skipped (each reported once on stderr).
  virtual std::vector<BlockDamage> Damage() const { return {}; }
};

// The embedded store: one SQLite file, store.db, in dir (created if missing).
// Records are kept in compact blocks per dataset and job id, with per-stream
// sequence intervals for deduplication (see sqlite_store.h for the layout);
// a store.db of the older row-per-record layout is refused with an error.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir);

}  // namespace iosonar
