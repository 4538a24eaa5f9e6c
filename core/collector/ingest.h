// The collector's batch path (internal; exposed so the ingest benchmark and
// the tests run exactly what the collector runs).
//
// A batch is one store transaction. Each line is copied into a reused buffer,
// parsed in place into one reused ParsedRecord and handed to the store at
// once, while the record is still in cache: holding a whole batch of
// ParsedRecords (15 KiB each: kMaxFields values of 40 bytes; 120 MiB for 8192) and storing them afterwards
// measured ~1.4x slower and cost that memory. The SQLite store checks the
// record's (event.stream, event.seq) and appends it, encoded, to an
// in-memory block of its dataset and job; blocks are written when full and
// at CommitBatch (sqlite_store.h). Nothing is allocated per record once warm.
//
// Not thread-safe: one IngestBatch (and its store) per thread.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/records/record.h"
#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar {

// A store that takes records one at a time inside one transaction (the
// SQLite store). Records need to stay valid only during Insert() (the store
// copies what it keeps). Insert counts each record as inserted or duplicate
// at once; if the batch is then aborted or its commit fails, nothing of it is
// stored and the store forgets those records' seqs again.
class BulkWriter {
 public:
  virtual ~BulkWriter() = default;
  virtual Status BeginBatch() = 0;
  virtual Status Insert(const ParsedRecord& rec, AppendStats* stats) = 0;
  virtual Status CommitBatch() = 0;
  virtual void AbortBatch() = 0;  // rolls back; safe to call when no batch is open
};

// The store's bulk path, or nullptr if it has none.
BulkWriter* BulkWriterOf(Store* store);

// A check of a parsed record before it is stored (the collector's per-connection
// authorisation); a failure sets the line aside with its message.
class RecordCheck {
 public:
  virtual ~RecordCheck() = default;
  virtual Status Check(const ParsedRecord& r) const = 0;
};

class IngestBatch {
 public:
  // writer may be null: Add then only validates (for measuring the parser).
  // keep_raw: also keep each accepted line's original bytes (parsing in place
  // destroys them), for pushing to Redis.
  IngestBatch(BulkWriter* writer, size_t capacity, bool keep_raw = false);
  ~IngestBatch();
  IngestBatch(const IngestBatch&) = delete;
  IngestBatch& operator=(const IngestBatch&) = delete;

  // Validates one line (without its '\n') and, if valid, inserts it into the
  // open transaction. Only a validation error is returned; a store error is
  // kept and reported by Commit(), as it fails the whole batch.
  // check: who may send what (an authenticated connection); nullptr: anyone.
  Status Add(std::string_view line, const RecordCheck* check = nullptr);

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  bool full() const { return n_ >= capacity_; }
  // The original text of each accepted line, in order (empty unless keep_raw).
  // Valid until Clear().
  std::span<const std::string_view> raw_lines() const { return {raw_.data(), raw_.size()}; }

  // Commits the transaction. On error nothing of this batch is stored.
  // The batch keeps its raw lines until Clear().
  Status Commit(AppendStats* stats);
  void Clear();

 private:
  char* AllocRaw(size_t n);

  BulkWriter* writer_;
  size_t capacity_;
  bool keep_raw_;
  size_t n_ = 0;
  bool open_ = false;  // a transaction is open
  Status store_error_;
  AppendStats pending_;
  ParsedRecord rec_;
  std::vector<char> scratch_;  // the line being parsed (the parser writes into it)
  std::vector<std::string_view> raw_;
  // Raw-line arena: blocks are never reallocated while raw_ points into them.
  struct Block {
    std::unique_ptr<char[]> data;
    size_t cap = 0, used = 0;
  };
  std::vector<Block> blocks_;
  size_t cur_block_ = 0;
};

}  // namespace iosonar
