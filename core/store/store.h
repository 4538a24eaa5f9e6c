// The record store: the one narrow interface every analysis job reads
// through, so each analysis runs unchanged on the embedded SQLite store and
// on Elasticsearch.
//
// Writes: Append() takes parsed records of any dataset. A record whose
// (event.stream, event.seq) is already stored is skipped and counted as a
// duplicate, so resending is always safe.
// Reads: Scan() streams the records of one dataset in a time range that match
// keyword-equality filters, giving the asked-for fields of each row;
// BucketSums() sums numeric fields per fixed-width time bucket; Groups()
// counts and sums per distinct key values (and per bucket of a long field),
// and Extreme() finds the least or greatest value of a long field: analyses
// that only add up ask these, so an engine computes them where the records
// are instead of sending every record.
//
// A Store is used by one thread at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
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

// Groups: the records of a dataset grouped by the values of key fields, and
// optionally split by a long field cut into fixed-width buckets; per group the
// number of records and sums of long fields.
struct GroupQuery {
  std::string dataset;
  TimeRange range;
  std::vector<FieldFilter> filters;
  // keyword or long fields; a long key is its decimal text; a record without
  // one has "" there
  std::vector<FieldId> keys;
  // split_count > 0: each group is also split by split_field (a long) into
  // buckets [split_start + k * split_width, + split_width), k < split_count.
  // Values before the first bucket, and records without the field, count in
  // bucket 0; values after the last bucket, in bucket split_count - 1.
  FieldId split_field{};
  int64_t split_start = 0, split_width = 0;
  size_t split_count = 0;
  std::vector<FieldId> sums;  // long fields; an absent value adds 0
  // keyword or long fields: per group, the number of records that have each
  // (e.g. to tell whether every record carries a field, without a split)
  std::vector<FieldId> present;
};

struct Group {
  std::vector<std::string> keys;  // in the order of GroupQuery::keys
  size_t split = 0;               // the bucket of split_field (0 without a split)
  uint64_t count = 0;             // records
  std::vector<int64_t> sums;      // in the order of GroupQuery::sums
  std::vector<uint64_t> present;  // in the order of GroupQuery::present
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
  // An unordered scan (q.ordered is ignored: false) whose rows may be given
  // by up to `workers` threads at once: fn(worker, row), each worker index
  // always from one thread, so a caller keeps one accumulator per worker.
  // The default is Scan() with worker 0; the SQLite store decodes its blocks
  // on `workers` threads.
  virtual Status ScanParallel(const ScanQuery& q, size_t workers, const std::function<bool(size_t, const Row&)>& fn);
  virtual Result<std::vector<Bucket>> BucketSums(const BucketQuery& q) = 0;
  virtual Result<uint64_t> Count(const std::string& dataset, const std::vector<FieldFilter>& filters) = 0;
  // Groups of several queries over the same records (one dataset, range and
  // filters; keys, split and sums may differ): fn(which query, group) for each
  // group, in no particular order; the same keys and split may come more than
  // once (add them up). Sums are exact (engines: below 2^53). The default is
  // one unordered Scan for all of them, summed in memory (the SQLite store).
  virtual Status Groups(std::span<const GroupQuery> qs, const std::function<bool(size_t, const Group&)>& fn);
  // The least value of lo_field and the greatest of hi_field (long fields)
  // over the matching records that have them; nullopt where none has. Exact.
  // The default is one Scan.
  virtual Result<std::pair<std::optional<int64_t>, std::optional<int64_t>>> Span(const std::string& dataset,
                                                                                 const std::vector<FieldFilter>& filters,
                                                                                 FieldId lo_field, FieldId hi_field);
  // Span() of the matching records (first), then of those whose key field (a
  // keyword) equals each of values, in order: one pass where a store reads
  // records (the default: one Scan), one Span() each on an engine.
  using SpanPair = std::pair<std::optional<int64_t>, std::optional<int64_t>>;
  virtual Result<std::vector<SpanPair>> Spans(const std::string& dataset, const std::vector<FieldFilter>& filters,
                                              FieldId lo_field, FieldId hi_field, FieldId key,
                                              const std::vector<std::string>& values);
  // The damaged blocks the reads so far skipped (each reported once on stderr).
  virtual std::vector<BlockDamage> Damage() const { return {}; }
};

// The checks every Groups() makes (keys are keywords or longs of the dataset, sums and
// the split field longs, a positive split width).
Status ValidateGroupQuery(const GroupQuery& q);
// The checks every Spans() makes (lo and hi longs, key a keyword of the dataset).
Status ValidateSpansQuery(const std::string& dataset, FieldId lo_field, FieldId hi_field, FieldId key);

// The embedded store: one SQLite file, store.db, in dir (created if missing).
// Records are kept in compact blocks per dataset and job id, with per-stream
// sequence intervals for deduplication (see sqlite_store.h for the layout);
// a store.db of the older row-per-record layout is refused with an error.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir);

}  // namespace iosonar
