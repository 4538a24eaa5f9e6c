// The embedded record store on SQLite, in blocks (layout: sqlite_store.h;
// block encoding: block_codec.h; dedupe intervals: seq_ranges.h).
//
// Writing (BulkWriter, and Append on top of it): each record is checked
// against its stream's seq intervals (kept in memory, loaded per stream on
// first use) and appended to the open in-memory block of its dataset and
// job.id. A block is written as one row when it is full and at CommitBatch,
// with the changed streams' intervals, in the batch's transaction. A row per
// record cost ~3-4 us (B-tree insert plus two index entries); all of the
// store's work here -- dedupe, encoding, block rows -- measures ~0.25 us a
// record (bench_ingest (d), test/bench/RESULTS.md).
//
// Reading: the blocks that can hold matches are chosen by their time range
// and, for a job.id filter, by job; their records are decoded and filtered
// in memory. Scan returns rows in @timestamp order (ties in insertion order)
// with a k-way merge: blocks come in ts_min order, and a record is passed on
// once no block still to come can start before it. Memory: the matching
// records (asked-for fields, 24 bytes each) of the blocks whose time ranges
// overlap the current position -- usually one or two blocks; at worst, when
// every block overlaps every other, the whole result.
#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/crc32c.h"
#include "core/base/timeutil.h"
#include "core/store/internal/block_codec.h"
#include "core/store/internal/block_merge.h"
#include "core/collector/ingest.h"
#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"
#include "core/records/schema.h"
#include "core/store/internal/seq_ranges.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"

namespace iosonar {
namespace {

// A block is also cut at this much encoded data (long command lines).
constexpr size_t kMaxBlockBytes = 4 << 20;

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

int FieldPos(std::string_view name) {
  const auto* f = schema::FindField(name);
  return f ? static_cast<int>(f - schema::Fields().data()) : -1;
}

bool TypeFromName(std::string_view name, schema::Type* out) {
  using T = schema::Type;
  for (T t : {T::kKeyword, T::kLong, T::kDouble, T::kDate, T::kBool})
    if (schema::TypeName(t) == name) {
      *out = t;
      return true;
    }
  return false;
}

std::string_view ColumnText(sqlite3_stmt* st, int col) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
  return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(st, col))) : std::string_view();
}

struct DatasetInfo {
  const schema::Dataset* ds = nullptr;
  std::vector<const schema::Field*> fields;  // the dataset's fields, schema order
  blocks::DatasetCodes codes;
};

// One open block of the current batch: records of one dataset and job.id.
struct OpenBlock {
  explicit OpenBlock(const blocks::DatasetCodes* c) : enc(c) {}
  bool has_job = false;
  std::string job;
  blocks::BlockEncoder enc;
  int64_t ts_min = 0, ts_max = 0;
  uint64_t used_batch = 0;
};

struct DatasetWriter {
  OpenBlock* mru = nullptr;
  std::unique_ptr<OpenBlock> no_job;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<OpenBlock>, Hash, std::equal_to<>> by_job;

  template <typename F>
  void ForEach(F&& f) {
    if (no_job) f(*no_job);
    for (auto& [k, b] : by_job) f(*b);
  }
};

// One stream's seq intervals. `saved` holds the committed state while the
// current batch has changed `ranges` (dirty_batch == that batch).
struct StreamEntry {
  int64_t stream = 0;
  SeqRanges ranges, saved;
  uint64_t dirty_batch = 0, used_batch = 0;
};

// stream -> entry, open addressing on a multiplicative hash (stream ids are
// random 63-bit numbers or small integers; both spread well). Entries are
// heap-allocated so pointers to them stay valid until Clear/Retain.
class StreamCache {
 public:
  StreamEntry* Find(int64_t s) const {
    if (table_.empty()) return nullptr;
    for (size_t h = Hash(s) & mask_;; h = (h + 1) & mask_) {
      const int32_t i = table_[h];
      if (i < 0) return nullptr;
      if (entries_[static_cast<size_t>(i)]->stream == s) return entries_[static_cast<size_t>(i)].get();
    }
  }
  StreamEntry* Add(int64_t s, SeqRanges r) {
    if ((entries_.size() + 1) * 2 > table_.size()) Rehash(std::max<size_t>(64, table_.size() * 2));
    auto e = std::make_unique<StreamEntry>();
    e->stream = s;
    e->ranges = std::move(r);
    entries_.push_back(std::move(e));
    Place(entries_.size() - 1);
    return entries_.back().get();
  }
  size_t size() const { return entries_.size(); }
  void Clear() {
    entries_.clear();
    table_.clear();
  }
  template <typename Keep>
  void Retain(Keep keep) {
    std::erase_if(entries_, [&](const std::unique_ptr<StreamEntry>& e) { return !keep(*e); });
    Rehash(std::max<size_t>(64, std::bit_ceil(entries_.size() * 2 + 1)));
  }

 private:
  static uint64_t Hash(int64_t s) {
    const uint64_t x = static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ULL;
    return x ^ (x >> 29);
  }
  void Place(size_t i) {
    size_t h = Hash(entries_[i]->stream) & mask_;
    while (table_[h] >= 0) h = (h + 1) & mask_;
    table_[h] = static_cast<int32_t>(i);
  }
  void Rehash(size_t n) {
    table_.assign(n, -1);
    mask_ = n - 1;
    for (size_t i = 0; i < entries_.size(); ++i) Place(i);
  }

  std::vector<std::unique_ptr<StreamEntry>> entries_;
  std::vector<int32_t> table_;
  size_t mask_ = 0;
};

// a == b; an inlined loop for the short values filters compare (job ids),
// not a libc memcmp call per decoded record.
inline bool SameShortText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.size() > 16) return a == b;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// A value handed to Scan's callback. Doubles travel as their bits in i.
struct Slot {
  int64_t i = 0;
  const char* p = nullptr;
  uint32_t len = 0;
  uint8_t kind = FieldValue::kAbsent;
};

// Conversions between types follow what SQLite's column accessors did for
// the old typed columns, so callers see the same values.
class BlockRow final : public Row {
 public:
  void Set(const Slot* s, size_t n) {
    s_ = s;
    n_ = n;
  }
  bool Has(size_t k) const override { return k < n_ && s_[k].kind != FieldValue::kAbsent; }
  int64_t Int(size_t k) const override {
    if (!Has(k)) return 0;
    const Slot& s = s_[k];
    switch (s.kind) {
      case FieldValue::kDouble: {
        const double d = std::bit_cast<double>(s.i);
        if (std::isnan(d)) return 0;
        if (d <= -9223372036854775808.0) return INT64_MIN;
        if (d >= 9223372036854775807.0) return INT64_MAX;
        return static_cast<int64_t>(d);
      }
      case FieldValue::kString: {
        std::string_view t(s.p, s.len);
        while (!t.empty() && (t[0] == ' ' || t[0] == '\t')) t.remove_prefix(1);
        if (!t.empty() && t[0] == '+') t.remove_prefix(1);
        int64_t v = 0;
        std::from_chars(t.data(), t.data() + t.size(), v);
        return v;
      }
      default: return s.i;
    }
  }
  double Double(size_t k) const override {
    if (!Has(k)) return 0;
    const Slot& s = s_[k];
    switch (s.kind) {
      case FieldValue::kDouble: return std::bit_cast<double>(s.i);
      case FieldValue::kString: {
        std::string_view t(s.p, s.len);
        while (!t.empty() && (t[0] == ' ' || t[0] == '\t')) t.remove_prefix(1);
        double v = 0;
        std::from_chars(t.data(), t.data() + t.size(), v);
        return v;
      }
      default: return static_cast<double>(s.i);
    }
  }
  std::string_view Str(size_t k) const override {
    if (!Has(k)) return {};
    const Slot& s = s_[k];
    switch (s.kind) {
      case FieldValue::kString: return {s.p, s.len};
      case FieldValue::kDouble: {
        int n = std::snprintf(buf_, sizeof buf_, "%.15g", std::bit_cast<double>(s.i));
        std::string_view t(buf_, static_cast<size_t>(n));
        if (t.find_first_of(".eni") == std::string_view::npos && n + 2 < static_cast<int>(sizeof buf_)) {
          buf_[n++] = '.';
          buf_[n++] = '0';
        }
        return {buf_, static_cast<size_t>(n)};
      }
      default: {
        char* e = std::to_chars(buf_, buf_ + sizeof buf_, s.i).ptr;
        return {buf_, static_cast<size_t>(e - buf_)};
      }
    }
  }

 private:
  const Slot* s_ = nullptr;
  size_t n_ = 0;
  mutable char buf_[40];
};

struct CompiledFilter {
  size_t field;
  bool keyword;
  std::string text;
  int64_t num = 0;
};

// A validated query: which dataset, which records.
// The checksum of a block: CRC-32C over its data and what the row says of it
// (dataset, job.id, time range, record count), so a flipped bit in either is
// found.
int64_t BlockCrc(std::string_view dataset, std::string_view job, bool has_job, int64_t ts_min, int64_t ts_max,
                 int64_t n, const uint8_t* data, size_t size) {
  uint32_t c = Crc32c(data, size);
  c = Crc32c(dataset.data(), dataset.size(), c);
  const uint8_t j = has_job ? 1 : 0;
  c = Crc32c(&j, 1, c);
  c = Crc32c(job.data(), job.size(), c);
  const int64_t meta[3] = {ts_min, ts_max, n};
  c = Crc32c(meta, sizeof meta, c);
  return c;
}

// The store's directory: created 0700 (0750 with a sharing group) when new;
// an existing one is left as it is.
Status MakePrivateDir(const std::string& dir, int64_t share_gid) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return Status::Ok();
  const auto parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return Status::Io("store directory " + dir + ": " + ec.message());
  }
  const mode_t mode = share_gid >= 0 ? 0750 : 0700;
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    return Status::Io("store directory " + dir + ": " + std::strerror(errno));
  if (chmod(dir.c_str(), mode) != 0) return Status::Io("store directory " + dir + ": " + std::strerror(errno));
  if (share_gid >= 0 && chown(dir.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(share_gid)) != 0)
    return Status::Io("store directory " + dir + ": chgrp: " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status CreatePrivateFile(const std::string& path, int64_t share_gid) {
  const mode_t mode = share_gid >= 0 ? 0640 : 0600;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno != EEXIST) return Status::Io("create " + path + ": " + std::strerror(errno));
    // An existing file keeps its mode; a link (or anything else) is refused.
    struct stat sb;
    if (lstat(path.c_str(), &sb) != 0) return Status::Io(path + ": " + std::strerror(errno));
    if (!S_ISREG(sb.st_mode)) return Status::Invalid(path + " is not a regular file (a symbolic link?): refused");
    return Status::Ok();
  }
  Status st;
  if (fchmod(fd, mode) != 0) st = Status::Io("chmod " + path + ": " + std::strerror(errno));
  if (st.ok() && share_gid >= 0 && fchown(fd, static_cast<uid_t>(-1), static_cast<gid_t>(share_gid)) != 0)
    st = Status::Io("chgrp " + path + ": " + std::strerror(errno));
  close(fd);
  return st;
}

namespace {

struct Query {
  DatasetInfo* info = nullptr;
  TimeRange range;
  std::vector<CompiledFilter> filters;
  const std::string* job = nullptr;  // a job.id filter picks the blocks by job
};

class SqliteStore final : public Store, public BulkWriter {
 public:
  explicit SqliteStore(const SqliteStoreOptions& o) : opts_(o) {
    opts_.block_records = std::clamp<size_t>(opts_.block_records, 1, UINT32_MAX);
    ts_ = static_cast<int>(field::kTimestamp.index());
    stream_ = static_cast<int>(field::kEventStream.index());
    seq_ = static_cast<int>(field::kEventSeq.index());
    job_ = static_cast<int>(field::kJobId.index());
    for (const auto& d : schema::Datasets()) {
      DatasetInfo info;
      info.ds = &d;
      info.fields = schema::FieldsOf(d.name);
      info.codes.dataset = d.name;
      info.codes.dataset_field = static_cast<int>(field::kEventDataset.index());
      infos_.push_back(std::move(info));
    }
    writers_.resize(infos_.size());
  }

  ~SqliteStore() override {
    if (db_ && !sqlite3_get_autocommit(db_)) (void)Exec("ROLLBACK");
    for (Stmt* s : {&begin_, &begin_read_, &commit_, &rollback_, &data_version_, &insert_block_, &load_stream_,
                    &save_stream_})
      *s = Stmt();  // statements before the connection
    if (db_) sqlite3_close(db_);
  }

  Status Open(const std::string& dir) {
    if (auto s = MakePrivateDir(dir, opts_.share_gid); !s.ok()) return s;
    path_ = dir + "/store.db";
    // Created 0600 (0640 with a sharing group) before SQLite opens it, so the
    // umask does not decide who reads the records: SQLite gives the -wal and
    // -shm files the database file's mode.
    if (auto s = CreatePrivateFile(path_, opts_.share_gid); !s.ok()) return s;
    int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                             nullptr);
    if (rc != SQLITE_OK) return Status::Io("open " + path_ + ": " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
    // Another process (a second collector, an analysis job) may hold the
    // write lock for a moment; wait rather than fail.
    sqlite3_busy_timeout(db_, 10000);
    // Refuse other layouts before changing anything in the file.
    if (auto s = CheckFormat(); !s.ok()) return s;
    // page_size only takes effect on a new file. 64 KiB pages: blocks are
    // ~300 KiB BLOBs, and bigger pages make their overflow chains short
    // (bench_ingest (d), per CPU-second: 4.2 M records at 64 KiB, 3.7 M at
    // 16 KiB, 3.0 M at 4 KiB). The WAL is checkpointed at 32 MiB, as before;
    // the page cache is 8 MiB (blocks are written once and read rarely).
    // synchronous=NORMAL in WAL mode can lose the last commits on power loss
    // but never corrupts; exporters resend and duplicates are ignored.
    if (auto s = Exec("PRAGMA page_size=65536; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                      "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-8192; PRAGMA wal_autocheckpoint=512;");
        !s.ok())
      return s;
    if (auto s = Prepare("BEGIN IMMEDIATE", &begin_, true); !s.ok()) return s;
    if (auto s = Prepare("BEGIN", &begin_read_, true); !s.ok()) return s;
    if (auto s = Prepare("COMMIT", &commit_, true); !s.ok()) return s;
    if (auto s = Prepare("ROLLBACK", &rollback_, true); !s.ok()) return s;
    if (auto s = Prepare("PRAGMA data_version", &data_version_, true); !s.ok()) return s;
    if (auto s = CreateIfNew(); !s.ok()) return s;
    if (auto s = Prepare("INSERT INTO blocks(dataset, job_id, ts_min, ts_max, n, data, crc) VALUES (?1,?2,?3,?4,?5,?6,?7)",
                         &insert_block_, true);
        !s.ok())
      return s;
    if (auto s = Prepare("SELECT ranges FROM streams WHERE stream = ?1", &load_stream_, true); !s.ok()) return s;
    if (auto s = Prepare("INSERT OR REPLACE INTO streams(stream, ranges) VALUES (?1, ?2)", &save_stream_, true); !s.ok())
      return s;
    if (auto s = EnsureCodes(); !s.ok()) return s;
    auto v = DataVersion();
    if (!v.ok()) return v.status();
    codes_version_ = streams_version_ = *v;
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
  Status BeginBatch() override {
    if (auto s = Step(begin_.get(), "BEGIN"); !s.ok()) return s;
    ++batch_;
    // We hold the write lock now: if anybody else committed since our last
    // batch, our cached intervals (and field codes) may be stale.
    if (auto s = Refresh(true); !s.ok()) {
      AbortBatch();
      return s;
    }
    return Status::Ok();
  }

  Status Insert(const ParsedRecord& r, AppendStats* stats) override {
    if (!r.dataset) return Status::Invalid("record without a dataset (not parsed?)");
    const FieldValue& sv = r.v[static_cast<size_t>(stream_)];
    const FieldValue& qv = r.v[static_cast<size_t>(seq_)];
    const FieldValue& tv = r.v[static_cast<size_t>(ts_)];
    if (sv.kind != FieldValue::kInt || qv.kind != FieldValue::kInt || tv.kind == FieldValue::kAbsent)
      return Status::Invalid("record without @timestamp, event.stream or event.seq");
    // Nothing twice: one interval lookup, usually "extend the last one". The
    // stream is the record's with its user.id (DedupeStream).
    const int64_t stream = DedupeStream(r);
    StreamEntry* e = streams_.Find(stream);
    if (!e) {
      auto loaded = LoadStream(stream);
      if (!loaded.ok()) return loaded.status();
      e = *loaded;
    }
    e->used_batch = batch_;
    if (e->ranges.Contains(qv.i)) {
      if (stats) ++stats->duplicates;
      return Status::Ok();
    }
    if (e->dirty_batch != batch_) {
      e->saved = e->ranges;
      e->dirty_batch = batch_;
      dirty_.push_back(e);
    }
    e->ranges.Insert(qv.i);

    const size_t di = static_cast<size_t>(r.dataset - schema::Datasets().data());
    OpenBlock* b = BlockFor(di, r.v[static_cast<size_t>(job_)]);
    const int64_t ts = tv.i;
    if (b->enc.records() == 0) b->ts_min = b->ts_max = ts;
    b->ts_min = std::min(b->ts_min, ts);
    b->ts_max = std::max(b->ts_max, ts);
    b->enc.Add(r);
    if (b->enc.records() >= opts_.block_records || b->enc.bytes() >= kMaxBlockBytes)
      if (auto s = WriteBlock(di, b); !s.ok()) return s;
    if (stats) ++stats->inserted;
    return Status::Ok();
  }

  Status CommitBatch() override {
    Status s;
    for (size_t di = 0; di < writers_.size() && s.ok(); ++di)
      writers_[di].ForEach([&](OpenBlock& b) {
        if (s.ok() && b.enc.records()) s = WriteBlock(di, &b);
      });
    for (StreamEntry* e : dirty_) {
      if (!s.ok()) break;
      text_ = e->ranges.ToText();
      sqlite3_stmt* st = save_stream_.get();
      sqlite3_bind_int64(st, 1, e->stream);
      sqlite3_bind_text(st, 2, text_.data(), static_cast<int>(text_.size()), SQLITE_STATIC);
      s = Step(st, "save stream ranges");
    }
    if (s.ok()) s = Step(commit_.get(), "COMMIT");
    if (!s.ok()) {
      AbortBatch();
      return s;
    }
    for (StreamEntry* e : dirty_) {
      e->dirty_batch = 0;
      e->saved.clear();
    }
    dirty_.clear();
    Tidy();
    return Status::Ok();
  }

  void AbortBatch() override {
    if (!sqlite3_get_autocommit(db_)) (void)Step(rollback_.get(), "ROLLBACK");
    for (StreamEntry* e : dirty_) {
      e->ranges = std::move(e->saved);
      e->saved.clear();
      e->dirty_batch = 0;
    }
    dirty_.clear();
    for (auto& w : writers_)
      w.ForEach([](OpenBlock& b) { b.enc.Reset(); });
  }

  // ---- reads ----
  // A scan's query, and the schema indices of its fields.
  Status CompileScan(const ScanQuery& sq, Query* q, std::vector<size_t>* want) {
    auto info = FindInfo(sq.dataset);
    if (!info.ok()) return info.status();
    for (FieldId id : sq.fields) {
      if (auto f = FieldOf(**info, id); !f.ok()) return f.status();
      want->push_back(id.index());
    }
    return Compile(*info, sq.range, sq.filters, q);
  }

  Status Scan(const ScanQuery& sq, const std::function<bool(const Row&)>& fn) override {
    Query q;
    std::vector<size_t> want;
    if (auto s = CompileScan(sq, &q, &want); !s.ok()) return s;
    ReadTxn txn(this);
    if (auto s = txn.Begin(); !s.ok()) return s;
    Status st = sq.ordered ? ScanInTimeOrder(q, want, fn) : ScanAsDecoded(q, want, fn);
    if (!st.ok()) return st;
    return txn.End();
  }

  // Unordered, decoded by `workers` threads: this thread reads the blocks
  // (SQLite's connection stays on it) and hands copies to the decoders
  // through a bounded queue; each decoder has its own record and row.
  Status ScanParallel(const ScanQuery& sq, size_t workers, const std::function<bool(size_t, const Row&)>& fn) override {
    if (workers <= 1) {
      ScanQuery u = sq;
      u.ordered = false;
      return Scan(u, [&](const Row& r) { return fn(0, r); });
    }
    Query q;
    std::vector<size_t> want;
    if (auto s = CompileScan(sq, &q, &want); !s.ok()) return s;
    ReadTxn txn(this);
    if (auto s = txn.Begin(); !s.ok()) return s;
    struct Item {
      BlockMeta m;
      std::vector<uint8_t> data;
    };
    constexpr size_t kQueued = 8;  // blocks read ahead of the decoders
    std::mutex mu;
    std::condition_variable not_empty, not_full;
    std::deque<Item> queue;
    std::vector<std::vector<uint8_t>> spare;  // buffers for reuse
    bool done = false, stopped = false;
    auto work = [&](size_t w) {
      ParsedRecord rec;
      std::vector<Slot> slots(want.size());
      BlockRow row;
      row.Set(slots.data(), want.size());
      for (;;) {
        Item it;
        {
          std::unique_lock<std::mutex> lock(mu);
          not_empty.wait(lock, [&] { return !queue.empty() || done || stopped; });
          if (stopped || queue.empty()) return;
          it = std::move(queue.front());
          queue.pop_front();
        }
        not_full.notify_one();
        bool stop = false;
        (void)Decode(q, it.m, it.data.data(), it.data.size(), rec, [&](const ParsedRecord& r, const FieldSet& present, int64_t) {
          if (stop) return;
          FillSlots(r, present, want, slots.data());
          if (!fn(w, row)) stop = true;
        });
        std::lock_guard<std::mutex> lock(mu);
        if (stop) {
          stopped = true;
          not_full.notify_all();
          not_empty.notify_all();
        }
        spare.push_back(std::move(it.data));
      }
    };
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(work, w);
    bool stop_reading = false;
    Status st = ForEachBlock(q, false, [&](const BlockMeta& m, const uint8_t* data, size_t size) -> Status {
      std::unique_lock<std::mutex> lock(mu);
      not_full.wait(lock, [&] { return queue.size() < kQueued || stopped; });
      if (stopped) {
        stop_reading = true;
        return Status::Ok();
      }
      Item it{m, {}};
      if (!spare.empty()) {
        it.data = std::move(spare.back());
        spare.pop_back();
      }
      it.data.assign(data, data + size);
      queue.push_back(std::move(it));
      not_empty.notify_one();
      return Status::Ok();
    }, &stop_reading);
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      if (!st.ok()) stopped = true;
    }
    not_empty.notify_all();
    for (auto& t : threads) t.join();
    if (!st.ok()) return st;
    return txn.End();
  }

  // The wanted fields of a decoded record into out[0..want.size()).
  static void FillSlots(const ParsedRecord& rec, const FieldSet& present, const std::vector<size_t>& want, Slot* out) {
    for (size_t j = 0; j < want.size(); ++j) {
      Slot sl;
      if (present.Test(want[j])) {
        const FieldValue& v = rec.v[want[j]];
        sl.kind = v.kind;
        if (v.kind == FieldValue::kString) {
          sl.p = v.s.data();
          sl.len = static_cast<uint32_t>(v.s.size());
        } else if (v.kind == FieldValue::kDouble) {
          sl.i = std::bit_cast<int64_t>(v.d);
        } else {
          sl.i = v.i;
        }
      }
      out[j] = sl;
    }
  }

  // ScanQuery::ordered = false: block by block, rows as they are decoded
  // (strings point into SQLite's copy of the block, valid during the callback).
  Status ScanAsDecoded(const Query& q, const std::vector<size_t>& want, const std::function<bool(const Row&)>& fn) {
    const size_t k = want.size();
    std::vector<Slot> slots(k);
    BlockRow row;
    row.Set(slots.data(), k);
    bool stopped = false;
    Status st = ForEachBlock(q, false, [&](const BlockMeta& m, const uint8_t* data, size_t size) -> Status {
      return Decode(q, m, data, size, [&](const ParsedRecord& rec, const FieldSet& present, int64_t) {
        if (stopped) return;
        FillSlots(rec, present, want, slots.data());
        if (!fn(row)) stopped = true;
      });
    }, &stopped);
    return st;
  }

  // In @timestamp order: each block's records sorted (they nearly are), and
  // a k-way merge of the blocks loaded so far, passing on every record
  // earlier than the next block's first.
  Status ScanInTimeOrder(const Query& q, const std::vector<size_t>& want, const std::function<bool(const Row&)>& fn) {
    const size_t k = want.size();
    std::vector<std::unique_ptr<Run>> runs;     // loaded, not yet exhausted
    std::vector<std::unique_ptr<Run>> spare;    // exhausted, kept for reuse
    std::vector<Run*> heap;                     // min-heap on (next record's ts, block id)
    auto later = [](const Run* a, const Run* b) {
      const int64_t ta = a->order[a->next].first, tb = b->order[b->next].first;
      return ta != tb ? ta > tb : a->block_id > b->block_id;
    };
    BlockRow row;
    bool stopped = false;
    // Passes on every loaded record earlier than `before`.
    auto emit_before = [&](int64_t before, bool all) {
      while (!stopped && !heap.empty()) {
        Run* r = heap.front();
        const auto [ts, idx] = r->order[r->next];
        if (!all && ts >= before) break;
        std::pop_heap(heap.begin(), heap.end(), later);
        row.Set(r->slots.data() + static_cast<size_t>(idx) * k, k);
        if (!fn(row)) stopped = true;
        if (++r->next < r->order.size()) {
          std::push_heap(heap.begin(), heap.end(), later);
        } else {
          heap.pop_back();
          auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& p) { return p.get() == r; });
          spare.push_back(std::move(*it));
          runs.erase(it);
        }
      }
    };

    Status st = ForEachBlock(q, false, [&](const BlockMeta& m, const uint8_t* data, size_t size) -> Status {
      emit_before(m.ts_min, false);
      if (stopped) return Status::Ok();
      std::unique_ptr<Run> run;
      if (!spare.empty()) {
        run = std::move(spare.back());
        spare.pop_back();
      } else {
        run = std::make_unique<Run>();
      }
      run->Reset(m.id);
      Status s = Decode(q, m, data, size, [&](const ParsedRecord& rec, const FieldSet& present, int64_t ts) {
        const uint32_t idx = static_cast<uint32_t>(run->order.size());
        run->order.emplace_back(ts, idx);
        run->slots.resize(run->slots.size() + k);
        FillSlots(rec, present, want, run->slots.data() + run->slots.size() - k);
      });
      if (!s.ok()) return s;
      if (run->order.empty()) {
        spare.push_back(std::move(run));
        return Status::Ok();
      }
      // Keep the block's bytes: the strings point into SQLite's copy, valid
      // only until the next row.
      run->blob.assign(data, data + size);
      const auto base = reinterpret_cast<uintptr_t>(data);
      for (Slot& sl : run->slots)
        if (sl.kind == FieldValue::kString) {
          const auto at = reinterpret_cast<uintptr_t>(sl.p);
          if (at >= base && at <= base + size) sl.p = reinterpret_cast<const char*>(run->blob.data()) + (at - base);
        }
      // Records within a block are nearly in time order already.
      std::sort(run->order.begin(), run->order.end());
      heap.push_back(run.get());
      std::push_heap(heap.begin(), heap.end(), later);
      runs.push_back(std::move(run));
      return Status::Ok();
    }, &stopped);
    if (!st.ok()) return st;
    emit_before(0, true);
    return Status::Ok();
  }

  Result<std::vector<Bucket>> BucketSums(const BucketQuery& bq) override {
    auto info = FindInfo(bq.dataset);
    if (!info.ok()) return info.status();
    if (bq.bucket_ns <= 0) return Status::Invalid("bucket width must be positive, got " + std::to_string(bq.bucket_ns));
    std::vector<size_t> sum;
    for (FieldId id : bq.sum_fields) {
      auto f = FieldOf(**info, id);
      if (!f.ok()) return f.status();
      auto ty = (*f)->type;
      if (ty != schema::Type::kLong && ty != schema::Type::kDouble && ty != schema::Type::kBool)
        return Status::Invalid("cannot sum field " + std::string(id.name()) + ": it is a " +
                               std::string(schema::TypeName(ty)) + ", not a number");
      sum.push_back(id.index());
    }
    Query q;
    if (auto s = Compile(*info, bq.range, bq.filters, &q); !s.ok()) return s;
    ReadTxn txn(this);
    if (auto s = txn.Begin(); !s.ok()) return s;
    std::map<int64_t, Bucket> buckets;
    auto last = buckets.end();
    const int64_t w = bq.bucket_ns;
    Status st = ForEachBlock(q, false, [&](const BlockMeta& m, const uint8_t* data, size_t size) {
      return Decode(q, m, data, size, [&](const ParsedRecord& rec, const FieldSet& present, int64_t ts) {
        // Floor division, so buckets stay aligned to the epoch before 1970 too.
        const int64_t b = ts / w - (ts < 0 && ts % w != 0);
        if (last == buckets.end() || last->first != b) {
          last = buckets.try_emplace(b).first;
          if (last->second.sums.empty()) {
            last->second.start_ns = b * w;
            last->second.sums.assign(sum.size(), 0.0);
          }
        }
        Bucket& bk = last->second;
        ++bk.doc_count;
        for (size_t j = 0; j < sum.size(); ++j)
          if (present.Test(sum[j])) {
            const FieldValue& v = rec.v[sum[j]];
            bk.sums[j] += v.kind == FieldValue::kDouble ? v.d : static_cast<double>(v.i);
          }
      });
    });
    if (!st.ok()) return st;
    if (auto s = txn.End(); !s.ok()) return s;
    std::vector<Bucket> out;
    out.reserve(buckets.size());
    for (auto& [b, bk] : buckets) out.push_back(std::move(bk));
    return out;
  }

  Result<uint64_t> Count(const std::string& dataset, const std::vector<FieldFilter>& filters) override {
    auto info = FindInfo(dataset);
    if (!info.ok()) return info.status();
    Query q;
    if (auto s = Compile(*info, TimeRange{}, filters, &q); !s.ok()) return s;
    ReadTxn txn(this);
    if (auto s = txn.Begin(); !s.ok()) return s;
    uint64_t n = 0;
    Status st;
    const bool job_only = std::all_of(q.filters.begin(), q.filters.end(),
                                      [&](const CompiledFilter& f) { return f.keyword && f.field == static_cast<size_t>(job_) && f.text == *q.job; });
    if (job_only) {
      // Every record of a block has the block's job.id: the counts say it all.
      st = ForEachBlock(q, true, [&](const BlockMeta& m, const uint8_t*, size_t) {
        n += static_cast<uint64_t>(m.n);
        return Status::Ok();
      });
    } else {
      st = ForEachBlock(q, false, [&](const BlockMeta& m, const uint8_t* data, size_t size) {
        return Decode(q, m, data, size, [&](const ParsedRecord&, const FieldSet&, int64_t) { ++n; });
      });
    }
    if (!st.ok()) return st;
    if (auto s = txn.End(); !s.ok()) return s;
    return n;
  }

 private:
  struct BlockMeta {
    int64_t id, ts_min, ts_max, n;
  };

  struct Run {
    int64_t block_id = 0;
    std::vector<uint8_t> blob;
    std::vector<Slot> slots;                          // k a record
    std::vector<std::pair<int64_t, uint32_t>> order;  // (@timestamp, record), sorted
    size_t next = 0;
    void Reset(int64_t id) {
      block_id = id;
      blob.clear();
      slots.clear();
      order.clear();
      next = 0;
    }
  };

  // A read transaction around a query (one snapshot for all its
  // statements), unless one is open already (a batch in progress).
  class ReadTxn {
   public:
    explicit ReadTxn(SqliteStore* s) : s_(s) {}
    ~ReadTxn() {
      if (open_) (void)s_->Step(s_->commit_.get(), "COMMIT");
    }
    Status Begin() {
      if (!sqlite3_get_autocommit(s_->db_)) return s_->Refresh(false);
      if (auto st = s_->Step(s_->begin_read_.get(), "BEGIN"); !st.ok()) return st;
      open_ = true;
      return s_->Refresh(false);
    }
    Status End() {
      if (!open_) return Status::Ok();
      open_ = false;
      return s_->Step(s_->commit_.get(), "COMMIT");
    }

   private:
    SqliteStore* s_;
    bool open_ = false;
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
                           &s, nullptr) != SQLITE_OK)
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

  // ---- layout ----

  struct FormatInfo {
    int64_t version = 0, objects = 0;
  };
  Result<FormatInfo> ReadFormat() {
    Stmt st;
    if (auto s = Prepare("SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)",
                         &st);
        !s.ok())
      return s;
    if (sqlite3_step(st.get()) != SQLITE_ROW) return Error("read the store format");
    return FormatInfo{sqlite3_column_int64(st.get(), 0), sqlite3_column_int64(st.get(), 1)};
  }

  Status CheckFormat() {
    auto f = ReadFormat();
    if (!f.ok())  // not a database at all, or not readable
      return Status::Invalid("store " + path_ + " is not an iosonar store (" + sqlite3_errmsg(db_) + ")");
    if (f->version == kStoreFormat || f->version == kStoreFormatMerged || f->version == kStoreFormatNoChecksums ||
        (f->version == 0 && f->objects == 0))
      return Status::Ok();
    if (f->version > kStoreFormatMerged)
      return Status::Invalid("store " + path_ + " was created by a newer iosonar (store format " +
                             std::to_string(f->version) + ", this one reads " + std::to_string(kStoreFormatMerged) +
                             "); use that iosonar or a new --store directory");
    return Status::Invalid("store " + path_ +
                           " was created by an older iosonar (one SQLite row per record); remove it or use a new "
                           "--store directory");
  }

  Status CreateIfNew() {
    auto f = ReadFormat();
    if (!f.ok()) return f.status();
    if (f->version == kStoreFormat || f->version == kStoreFormatMerged) return Status::Ok();
    if (auto s = Step(begin_.get(), "BEGIN"); !s.ok()) return s;
    // Another process may have created it meanwhile.
    f = ReadFormat();
    Status s = f.status();
    if (s.ok() && f->version != kStoreFormat && f->version != kStoreFormatMerged) {
      if (f->version == kStoreFormatNoChecksums) {
        // Blocks written before checksums keep crc NULL: read, not verified.
        s = Exec("ALTER TABLE blocks ADD COLUMN crc INTEGER; PRAGMA user_version=" + std::to_string(kStoreFormat) + ";");
      } else if (f->objects != 0) {
        s = CheckFormat();
        if (s.ok()) s = Status::Invalid("store " + path_ + " has tables but no iosonar format");
      } else {
        s = Exec(
            "CREATE TABLE blocks(id INTEGER PRIMARY KEY, dataset TEXT NOT NULL, job_id TEXT, ts_min INTEGER NOT NULL,"
            " ts_max INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, crc INTEGER);"
            "CREATE INDEX blocks_time ON blocks(dataset, ts_min, ts_max);"
            "CREATE INDEX blocks_job ON blocks(job_id, dataset, ts_min);"
            "CREATE TABLE streams(stream INTEGER PRIMARY KEY, ranges TEXT NOT NULL);"
            "CREATE TABLE fields(dataset TEXT NOT NULL, code INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,"
            " PRIMARY KEY(dataset, code), UNIQUE(dataset, name, type));"
            "PRAGMA user_version=" +
            std::to_string(kStoreFormat) + ";");
      }
    }
    if (s.ok()) return Step(commit_.get(), "COMMIT");
    (void)Step(rollback_.get(), "ROLLBACK");
    return s;
  }

  // Reads the field codes; *missing: fields of this schema without one.
  Status LoadCodes(bool* missing) {
    for (auto& info : infos_) {
      const std::string_view name = info.codes.dataset;
      const int ds_field = info.codes.dataset_field;
      info.codes = blocks::DatasetCodes();
      info.codes.dataset = name;
      info.codes.dataset_field = ds_field;
    }
    Stmt st;
    if (auto s = Prepare("SELECT dataset, code, name, type FROM fields", &st); !s.ok()) return s;
    for (;;) {
      int rc = sqlite3_step(st.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return Error("read field codes");
      auto it = std::find_if(infos_.begin(), infos_.end(),
                             [&](const DatasetInfo& i) { return i.ds->name == ColumnText(st.get(), 0); });
      if (it == infos_.end()) continue;  // a dataset this binary does not know
      const int64_t code = sqlite3_column_int64(st.get(), 1);
      if (code < 0 || code >= blocks::kMaxCodes) return Status::Invalid("store " + path_ + ": bad field code " + std::to_string(code));
      schema::Type type;
      if (!TypeFromName(ColumnText(st.get(), 3), &type)) continue;  // a type this binary does not know
      int field = FieldPos(ColumnText(st.get(), 2));
      if (field >= 0 && (schema::Fields()[static_cast<size_t>(field)].type != type ||
                         !schema::FieldInDataset(schema::Fields()[static_cast<size_t>(field)], it->ds->name)))
        field = -1;  // the field has changed type since: the old code is read and dropped
      it->codes.Set(static_cast<int>(code), field, type);
    }
    *missing = false;
    for (const auto& info : infos_)
      for (const auto* f : info.fields) {
        const int pos = static_cast<int>(f - schema::Fields().data());
        if (pos != info.codes.dataset_field && info.codes.code_of[static_cast<size_t>(pos)] < 0) *missing = true;
      }
    return Status::Ok();
  }

  // Gives every field of the schema a code (new fields get the next free one).
  Status EnsureCodes() {
    bool missing = false;
    if (auto s = LoadCodes(&missing); !s.ok() || !missing) return s;
    if (auto s = Step(begin_.get(), "BEGIN"); !s.ok()) return s;
    Status s = LoadCodes(&missing);
    Stmt ins;
    if (s.ok() && missing) s = Prepare("INSERT INTO fields(dataset, code, name, type) VALUES (?1,?2,?3,?4)", &ins);
    for (auto& info : infos_) {
      if (!s.ok() || !missing) break;
      int next = 0;
      for (int c = 0; c < blocks::kMaxCodes; ++c)
        if (info.codes.by_code[static_cast<size_t>(c)].used) next = c + 1;
      for (const auto* f : info.fields) {
        const int pos = static_cast<int>(f - schema::Fields().data());
        if (pos == info.codes.dataset_field || info.codes.code_of[static_cast<size_t>(pos)] >= 0) continue;
        if (next >= blocks::kMaxCodes) {
          s = Status::Invalid("store " + path_ + ": dataset " + std::string(info.ds->name) + " has run out of field codes (" +
                              std::to_string(blocks::kMaxCodes) + "); use a new --store directory");
          break;
        }
        const auto ty = schema::TypeName(f->type);
        sqlite3_bind_text(ins.get(), 1, info.ds->name.data(), static_cast<int>(info.ds->name.size()), SQLITE_STATIC);
        sqlite3_bind_int(ins.get(), 2, next);
        sqlite3_bind_text(ins.get(), 3, f->name.data(), static_cast<int>(f->name.size()), SQLITE_STATIC);
        sqlite3_bind_text(ins.get(), 4, ty.data(), static_cast<int>(ty.size()), SQLITE_STATIC);
        s = Step(ins.get(), "add a field code");
        if (s.ok()) info.codes.Set(next++, pos, f->type);
      }
    }
    if (s.ok()) s = Step(commit_.get(), "COMMIT");
    if (!s.ok()) {
      (void)Step(rollback_.get(), "ROLLBACK");
      bool ignored;
      (void)LoadCodes(&ignored);
    }
    return s;
  }

  Result<int64_t> DataVersion() {
    sqlite3_stmt* st = data_version_.get();
    if (sqlite3_step(st) != SQLITE_ROW) {
      sqlite3_reset(st);
      return Error("PRAGMA data_version");
    }
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return v;
  }

  // If another connection has committed since we last looked: reload the
  // field codes (it may be a newer iosonar with more fields) and, when
  // writing, forget the cached intervals.
  Status Refresh(bool writing) {
    auto v = DataVersion();
    if (!v.ok()) return v.status();
    if (writing && *v != streams_version_) {
      streams_.Clear();
      streams_version_ = *v;
    }
    if (*v == codes_version_) return Status::Ok();
    codes_version_ = *v;
    bool missing;
    return LoadCodes(&missing);
  }

  // ---- writing ----

  Result<StreamEntry*> LoadStream(int64_t stream) {
    sqlite3_stmt* st = load_stream_.get();
    sqlite3_bind_int64(st, 1, stream);
    SeqRanges r;
    int rc = sqlite3_step(st);
    bool bad = rc == SQLITE_ROW && !SeqRanges::FromText(ColumnText(st, 0), &r);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("load stream ranges");
    if (bad) return Status::Internal("store " + path_ + ": damaged seq ranges of stream " + std::to_string(stream));
    return streams_.Add(stream, std::move(r));
  }

  OpenBlock* BlockFor(size_t di, const FieldValue& job) {
    DatasetWriter& w = writers_[di];
    const bool has = job.kind == FieldValue::kString;
    OpenBlock* b = w.mru;
    if (!b || b->has_job != has || (has && b->job != job.s)) {
      if (!has) {
        if (!w.no_job) w.no_job = std::make_unique<OpenBlock>(&infos_[di].codes);
        b = w.no_job.get();
      } else if (auto it = w.by_job.find(job.s); it != w.by_job.end()) {
        b = it->second.get();
      } else {
        auto nb = std::make_unique<OpenBlock>(&infos_[di].codes);
        nb->has_job = true;
        nb->job.assign(job.s);
        b = nb.get();
        w.by_job.emplace(nb->job, std::move(nb));
      }
      w.mru = b;
    }
    b->used_batch = batch_;
    return b;
  }

  Status WriteBlock(size_t di, OpenBlock* b) {
    auto data = b->enc.Finish();
    sqlite3_stmt* st = insert_block_.get();
    const auto name = infos_[di].ds->name;
    sqlite3_bind_text(st, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    if (b->has_job) sqlite3_bind_text(st, 2, b->job.data(), static_cast<int>(b->job.size()), SQLITE_STATIC);
    else sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, b->ts_min);
    sqlite3_bind_int64(st, 4, b->ts_max);
    sqlite3_bind_int64(st, 5, b->enc.records());
    sqlite3_bind_blob64(st, 6, data.data(), data.size(), SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, BlockCrc(name, b->has_job ? std::string_view(b->job) : std::string_view(), b->has_job,
                                       b->ts_min, b->ts_max, static_cast<int64_t>(b->enc.records()), data.data(),
                                       data.size()));
    Status s = Step(st, "write a block");
    b->enc.Reset();
    return s;
  }

  // After a commit: drop blocks of jobs that sent nothing in this batch, and
  // if too many streams are cached, those that sent nothing either.
  void Tidy() {
    for (auto& w : writers_) {
      std::erase_if(w.by_job, [&](const auto& kv) { return kv.second->used_batch != batch_; });
      if (w.no_job && w.no_job->used_batch != batch_) w.no_job.reset();
      w.mru = nullptr;
    }
    if (streams_.size() > opts_.max_cached_streams)
      streams_.Retain([&](const StreamEntry& e) { return e.used_batch == batch_; });
  }

  // ---- reading ----

  Result<DatasetInfo*> FindInfo(const std::string& dataset) {
    for (auto& i : infos_)
      if (i.ds->name == dataset) return &i;
    return Status::Invalid("unknown dataset \"" + dataset + "\" (not in the record schema)");
  }

  static Result<const schema::Field*> FieldOf(const DatasetInfo& t, FieldId id) {
    if (!id.valid()) return Status::Invalid("no field given (an empty field id)");
    const schema::Field* f = &schema::FieldOf(id);
    for (const auto* g : t.fields)
      if (g == f) return f;
    return Status::Invalid("field " + std::string(id.name()) + " is not part of dataset " + std::string(t.ds->name));
  }

  Status Compile(DatasetInfo* info, const TimeRange& r, const std::vector<FieldFilter>& filters, Query* q) {
    q->info = info;
    q->range = r;
    for (const auto& f : filters) {
      auto fr = FieldOf(*info, f.field);
      if (!fr.ok()) return fr.status();
      auto ty = (*fr)->type;
      const std::string name(f.field.name());
      CompiledFilter c{f.field.index(), ty == schema::Type::kKeyword, {}, 0};
      if (ty == schema::Type::kKeyword) {
        c.text = f.equals;
      } else if (ty == schema::Type::kLong) {
        const char* end = f.equals.data() + f.equals.size();
        auto res = std::from_chars(f.equals.data(), end, c.num);
        if (res.ec != std::errc() || res.ptr != end || f.equals.empty())
          return Status::Invalid("filter on " + name + ": \"" + f.equals + "\" is not an integer");
      } else {
        return Status::Invalid("cannot filter on " + name + ": it is a " + std::string(schema::TypeName(ty)) +
                               " (only keyword and long fields can be filtered)");
      }
      q->filters.push_back(std::move(c));
    }
    for (const auto& c : q->filters)
      if (c.keyword && c.field == static_cast<size_t>(job_)) {
        q->job = &c.text;
        break;
      }
    return Status::Ok();
  }

  // Calls fn(meta, data, size) for each block that may hold matches, in
  // ts_min order, until fn fails or *stop. meta_only: data is not read (null).
  Status ForEachBlock(const Query& q, bool meta_only,
                      const std::function<Status(const BlockMeta&, const uint8_t*, size_t)>& fn,
                      const bool* stop = nullptr) {
    std::string sql = "SELECT id, ts_min, ts_max, n, job_id";
    if (!meta_only) sql += ", data, crc";
    sql += " FROM blocks WHERE ";
    sql += q.job ? "job_id = ?2 AND dataset = ?1" : "dataset = ?1";
    const bool has_start = q.range.start_ns != TimeRange{}.start_ns, has_end = q.range.end_ns != TimeRange{}.end_ns;
    if (has_start) sql += " AND ts_max >= ?3";
    if (has_end) sql += " AND ts_min < ?4";
    sql += " ORDER BY ts_min";
    Stmt st;
    if (auto s = Prepare(sql, &st); !s.ok()) return s;
    const auto name = q.info->ds->name;
    sqlite3_bind_text(st.get(), 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    if (q.job) sqlite3_bind_text(st.get(), 2, q.job->data(), static_cast<int>(q.job->size()), SQLITE_STATIC);
    if (has_start) sqlite3_bind_int64(st.get(), 3, q.range.start_ns);
    if (has_end) sqlite3_bind_int64(st.get(), 4, q.range.end_ns);
    for (;;) {
      if (stop && *stop) return Status::Ok();
      int rc = sqlite3_step(st.get());
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return Error("read blocks of " + std::string(name));
      BlockMeta m{sqlite3_column_int64(st.get(), 0), sqlite3_column_int64(st.get(), 1),
                  sqlite3_column_int64(st.get(), 2), sqlite3_column_int64(st.get(), 3)};
      const uint8_t* data = nullptr;
      size_t size = 0;
      if (!meta_only) {
        data = static_cast<const uint8_t*>(sqlite3_column_blob(st.get(), 5));
        size = static_cast<size_t>(sqlite3_column_bytes(st.get(), 5));
        if (sqlite3_column_type(st.get(), 6) != SQLITE_NULL) {
          const bool has_job = sqlite3_column_type(st.get(), 4) != SQLITE_NULL;
          std::string_view job;
          if (has_job)
            job = {reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 4)),
                   static_cast<size_t>(sqlite3_column_bytes(st.get(), 4))};
          if (BlockCrc(name, job, has_job, m.ts_min, m.ts_max, m.n, data, size) != sqlite3_column_int64(st.get(), 6)) {
            ReportDamage(name, job, m, "checksum mismatch");
            continue;
          }
        }
        // A block store-compact merged: read as the first-pass block it was.
        if (size && data[0] == blocks::kFormatMerged) {
          std::string err;
          if (!blocks::ExpandBlock(q.info->codes, {data, size}, &expanded_, &err)) {
            ReportDamage(name, {}, m, err);
            continue;
          }
          data = expanded_.data();
          size = expanded_.size();
        }
      }
      if (auto s = fn(m, data, size); !s.ok()) return s;
    }
  }

  // Decodes a block and calls fn(record, present fields, @timestamp) for
  // each record that matches q.
  template <typename F>
  Status Decode(const Query& q, const BlockMeta& m, const uint8_t* data, size_t size, F&& fn) {
    return Decode(q, m, data, size, decoded_, std::forward<F>(fn));
  }
  // The same into rec (a decoder thread's own).
  template <typename F>
  Status Decode(const Query& q, const BlockMeta& m, const uint8_t* data, size_t size, ParsedRecord& rec, F&& fn) {
    std::string err;
    blocks::BlockDecoder dec;
    if (!dec.Open(&q.info->codes, data, size, &err)) {
      ReportDamage(q.info->ds->name, {}, m, err);
      return Status::Ok();
    }
    rec.dataset = q.info->ds;
    for (size_t i = 0; i < schema::Fields().size(); ++i) rec.v[i].kind = FieldValue::kAbsent;
    const bool has_start = q.range.start_ns != TimeRange{}.start_ns, has_end = q.range.end_ns != TimeRange{}.end_ns;
    FieldSet present;
    while (dec.Next(&rec, &present, &err)) {
      if (!present.Test(static_cast<size_t>(ts_))) continue;  // written by a binary whose @timestamp had another type
      const int64_t ts = rec.v[static_cast<size_t>(ts_)].i;
      if ((has_start && ts < q.range.start_ns) || (has_end && ts >= q.range.end_ns)) continue;
      bool ok = true;
      for (const auto& f : q.filters) {
        const FieldValue& v = rec.v[f.field];
        if (!present.Test(f.field) || (f.keyword ? v.kind != FieldValue::kString || !SameShortText(v.s, f.text)
                                                    : v.kind != FieldValue::kInt || v.i != f.num)) {
          ok = false;
          break;
        }
      }
      if (ok) fn(rec, present, ts);
    }
    if (!err.empty()) ReportDamage(q.info->ds->name, {}, m, err);
    else if (dec.left()) ReportDamage(q.info->ds->name, {}, m, "block is short");
    return Status::Ok();
  }

  // A damaged block is skipped, never fatal for the query: reported once per
  // block on stderr (with its range, so an administrator knows what is
  // missing) and kept for damage().
  void ReportDamage(std::string_view dataset, std::string_view job, const BlockMeta& m, const std::string& why) {
    std::lock_guard<std::mutex> lock(damage_mu_);  // decoder threads report too
    if (!damaged_ids_.insert(m.id).second) return;
    BlockDamage d{m.id, std::string(dataset), std::string(job), m.ts_min, m.ts_max, m.n, why};
    if (!opts_.quiet_damage)
      std::fprintf(stderr, "iosonar: store %s: %s; skipped (run `iosonar store-check` on the store)\n", path_.c_str(),
                   d.Describe().c_str());
    damage_.push_back(std::move(d));
  }

 public:
  const std::vector<BlockDamage>& damage() const { return damage_; }
  std::vector<BlockDamage> Damage() const override { return damage_; }

  // Reads every block: checksum, then a full decode. With repair, moves each
  // damaged block to damaged_blocks (same columns, plus the reason and when).
  Status Check(bool repair, CheckReport* out) {
    opts_.quiet_damage = true;
    damage_.clear();
    damaged_ids_.clear();
    ReadTxn txn(this);
    if (auto s = txn.Begin(); !s.ok()) return s;
    Stmt st;
    if (auto s = Prepare("SELECT id, dataset, job_id, ts_min, ts_max, n, data, crc FROM blocks ORDER BY id", &st); !s.ok())
      return s;
    for (;;) {
      int rc = sqlite3_step(st.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return Error("read blocks");
      BlockMeta m{sqlite3_column_int64(st.get(), 0), sqlite3_column_int64(st.get(), 3), sqlite3_column_int64(st.get(), 4),
                  sqlite3_column_int64(st.get(), 5)};
      auto text = [&](int c) {
        return std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), c)),
                                static_cast<size_t>(sqlite3_column_bytes(st.get(), c)));
      };
      const std::string dataset(text(1));
      const bool has_job = sqlite3_column_type(st.get(), 2) != SQLITE_NULL;
      const std::string job = has_job ? std::string(text(2)) : std::string();
      const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(st.get(), 6));
      const size_t size = static_cast<size_t>(sqlite3_column_bytes(st.get(), 6));
      ++out->blocks;
      if (sqlite3_column_type(st.get(), 7) == SQLITE_NULL) {
        ++out->unverified;
      } else if (BlockCrc(dataset, job, has_job, m.ts_min, m.ts_max, m.n, data, size) !=
                 sqlite3_column_int64(st.get(), 7)) {
        ReportDamage(dataset, job, m, "checksum mismatch");
        continue;
      }
      auto info = FindInfo(dataset);
      if (!info.ok()) {
        ReportDamage(dataset, job, m, "unknown dataset");
        continue;
      }
      Query q;
      q.info = *info;
      const size_t before = damage_.size();
      int64_t n = 0;
      const uint8_t* first_pass = data;
      size_t first_pass_size = size;
      if (size && data[0] == blocks::kFormatMerged) {
        ++out->merged;
        std::string err;
        if (!blocks::ExpandBlock(q.info->codes, {data, size}, &expanded_, &err)) {
          ReportDamage(dataset, job, m, err);
          continue;
        }
        first_pass = expanded_.data();
        first_pass_size = expanded_.size();
      }
      if (auto s = Decode(q, m, first_pass, first_pass_size, [&](const ParsedRecord&, const FieldSet&, int64_t) { ++n; }); !s.ok()) return s;
      if (damage_.size() == before && n != m.n)
        ReportDamage(dataset, job, m, std::to_string(n) + " records decoded, the block says " + std::to_string(m.n));
      if (damage_.size() == before) out->records += static_cast<uint64_t>(n);
    }
    st = Stmt();
    if (auto s = txn.End(); !s.ok()) return s;
    out->damaged = damage_;
    if (!repair || damage_.empty()) return Status::Ok();
    if (auto s = Step(begin_.get(), "BEGIN"); !s.ok()) return s;
    Status s = Exec(
        "CREATE TABLE IF NOT EXISTS damaged_blocks(id INTEGER PRIMARY KEY, dataset TEXT, job_id TEXT, ts_min INTEGER,"
        " ts_max INTEGER, n INTEGER, data BLOB, crc INTEGER, reason TEXT, moved_at TEXT)");
    Stmt mv, del;
    if (s.ok())
      s = Prepare("INSERT OR REPLACE INTO damaged_blocks SELECT id, dataset, job_id, ts_min, ts_max, n, data, crc, ?2, ?3"
                  " FROM blocks WHERE id = ?1", &mv);
    if (s.ok()) s = Prepare("DELETE FROM blocks WHERE id = ?1", &del);
    const std::string now = FormatIsoMillis(NowNs());
    for (const auto& d : damage_) {
      if (!s.ok()) break;
      sqlite3_bind_int64(mv.get(), 1, d.id);
      sqlite3_bind_text(mv.get(), 2, d.reason.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(mv.get(), 3, now.c_str(), -1, SQLITE_TRANSIENT);
      s = Step(mv.get(), "move a damaged block aside");
      sqlite3_reset(mv.get());
      if (!s.ok()) break;
      sqlite3_bind_int64(del.get(), 1, d.id);
      s = Step(del.get(), "delete a damaged block");
      sqlite3_reset(del.get());
      if (s.ok()) ++out->repaired;
    }
    if (s.ok()) return Step(commit_.get(), "COMMIT");
    (void)Step(rollback_.get(), "ROLLBACK");
    out->repaired = 0;
    return s;
  }

  int64_t FileBytes() const {
    int64_t total = 0;
    for (const char* suffix : {"", "-wal"}) {
      struct stat sb;
      if (stat((path_ + suffix).c_str(), &sb) == 0) total += sb.st_size;
    }
    return total;
  }

  // store-compact (sqlite_store.h). The blocks are chosen first (metadata
  // only); then, a chunk a transaction: each block read and its checksum
  // checked, merged (MergeBlock expands what it wrote and compares it with
  // the block), its new checksum computed, and the row's data and crc
  // replaced; COMMIT swaps the chunk in at once.
  Status Compact(const CompactOptions& o, CompactReport* out) {
    auto info = FindInfo(std::string(dataset::kTrace));
    if (!info.ok()) return info.status();
    if (auto s = Exec("PRAGMA wal_checkpoint(TRUNCATE)"); !s.ok()) return s;
    out->file_bytes_before = FileBytes();
    std::vector<int64_t> ids;
    {
      ReadTxn txn(this);
      if (auto s = txn.Begin(); !s.ok()) return s;
      Stmt st;
      if (auto s = Prepare(std::string("SELECT id, n, length(data), substr(data, 1, 1) = x'02' FROM blocks WHERE dataset = ?1") +
                               (o.job.empty() ? "" : " AND job_id = ?2") + " AND ts_max < ?3 ORDER BY id",
                           &st);
          !s.ok())
        return s;
      const auto name = (*info)->ds->name;
      sqlite3_bind_text(st.get(), 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
      if (!o.job.empty()) sqlite3_bind_text(st.get(), 2, o.job.data(), static_cast<int>(o.job.size()), SQLITE_STATIC);
      sqlite3_bind_int64(st.get(), 3, o.before_ns);
      for (;;) {
        const int rc = sqlite3_step(st.get());
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) return Error("list the trace blocks");
        ++out->blocks;
        out->records += static_cast<uint64_t>(sqlite3_column_int64(st.get(), 1));
        const auto bytes = static_cast<uint64_t>(sqlite3_column_int64(st.get(), 2));
        out->bytes_before += bytes;
        if (sqlite3_column_int(st.get(), 3)) {
          ++out->already;
          out->bytes_after += bytes;
        } else {
          ids.push_back(sqlite3_column_int64(st.get(), 0));
        }
      }
      st = Stmt();
      if (auto s = txn.End(); !s.ok()) return s;
    }
    // A test's way to kill the compaction in the middle of a transaction
    // (test/integration/test_store_compact.sh): SIGKILL after merging this many blocks.
    const char* kill_env = std::getenv("IOSONAR_TEST_COMPACT_KILL_AFTER");
    const long kill_after = kill_env ? std::atol(kill_env) : -1;
    long written = 0;
    Stmt get, upd;
    if (auto s = Prepare("SELECT dataset, job_id, ts_min, ts_max, n, data, crc FROM blocks WHERE id = ?1", &get); !s.ok())
      return s;
    if (auto s = Prepare("UPDATE blocks SET data = ?2, crc = ?3 WHERE id = ?1", &upd); !s.ok()) return s;
    auto fmt = ReadFormat();
    if (!fmt.ok()) return fmt.status();
    bool marked = fmt->version == kStoreFormatMerged;
    std::vector<uint8_t> orig, merged;
    std::string why;
    const size_t chunk = std::max<size_t>(1, o.blocks_per_transaction);
    for (size_t i = 0; i < ids.size(); i += chunk) {
      if (!o.dry_run)
        if (auto s = Step(begin_.get(), "BEGIN"); !s.ok()) return s;
      Status s;
      uint64_t merged_now = 0;
      for (size_t j = i; j < std::min(ids.size(), i + chunk) && s.ok(); ++j) {
        sqlite3_bind_int64(get.get(), 1, ids[j]);
        const int rc = sqlite3_step(get.get());
        if (rc != SQLITE_ROW) {
          sqlite3_reset(get.get());
          if (rc != SQLITE_DONE) s = Error("read a trace block");
          continue;  // gone meanwhile (store-check --repair)
        }
        const std::string dataset(ColumnText(get.get(), 0));
        const bool has_job = sqlite3_column_type(get.get(), 1) != SQLITE_NULL;
        const std::string job(has_job ? ColumnText(get.get(), 1) : std::string_view());
        const int64_t ts_min = sqlite3_column_int64(get.get(), 2), ts_max = sqlite3_column_int64(get.get(), 3),
                      n = sqlite3_column_int64(get.get(), 4);
        const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(get.get(), 5));
        orig.assign(data, data + sqlite3_column_bytes(get.get(), 5));
        const bool verified = sqlite3_column_type(get.get(), 6) != SQLITE_NULL;
        const int64_t crc = sqlite3_column_int64(get.get(), 6);
        sqlite3_reset(get.get());
        if (verified && BlockCrc(dataset, job, has_job, ts_min, ts_max, n, orig.data(), orig.size()) != crc) {
          ++out->damaged;
          out->bytes_after += orig.size();
          continue;
        }
        blocks::MergeStats ms;
        const bool ok = blocks::MergeBlock((*info)->codes, orig, &merged, &why, &ms);
        if (!ok || merged.size() >= orig.size() || ms.records != static_cast<uint64_t>(n)) {
          ++out->kept;
          if (out->kept_why.empty())
            out->kept_why = "block " + std::to_string(ids[j]) + ": " +
                            (!ok ? why : merged.size() >= orig.size() ? "the merged form is not smaller" : "record count differs from the row's");
          out->bytes_after += orig.size();
          continue;
        }
        out->bytes_after += merged.size();
        ++out->merged;
        out->merged_records += ms.records;
        out->procs += ms.procs;
        out->groups += ms.groups;
        out->rank_patterns += ms.rank_patterns;
        if (o.dry_run) continue;
        sqlite3_bind_int64(upd.get(), 1, ids[j]);
        sqlite3_bind_blob(upd.get(), 2, merged.data(), static_cast<int>(merged.size()), SQLITE_STATIC);
        sqlite3_bind_int64(upd.get(), 3, BlockCrc(dataset, job, has_job, ts_min, ts_max, n, merged.data(), merged.size()));
        s = Step(upd.get(), "replace a trace block by its merged form");
        ++merged_now;
        if (kill_after >= 0 && ++written > kill_after) raise(SIGKILL);
      }
      if (o.dry_run) {
        if (!s.ok()) return s;
        continue;
      }
      if (s.ok() && merged_now && !marked) {
        s = Exec("PRAGMA user_version=" + std::to_string(kStoreFormatMerged));
        marked = s.ok();
      }
      if (s.ok()) s = Step(commit_.get(), "COMMIT");
      if (!s.ok()) {
        (void)Step(rollback_.get(), "ROLLBACK");
        return s;
      }
    }
    get = Stmt();
    upd = Stmt();
    if (!o.dry_run) {
      if (auto s = Exec("PRAGMA wal_checkpoint(TRUNCATE)"); !s.ok()) return s;
      if (o.vacuum)
        if (auto s = Exec("VACUUM; PRAGMA wal_checkpoint(TRUNCATE)"); !s.ok()) return s;
    }
    out->file_bytes_after = FileBytes();
    return Status::Ok();
  }

 private:
  std::vector<BlockDamage> damage_;
  std::set<int64_t> damaged_ids_;
  std::mutex damage_mu_;
  SqliteStoreOptions opts_;
  sqlite3* db_ = nullptr;
  std::string path_;
  Stmt begin_, begin_read_, commit_, rollback_, data_version_, insert_block_, load_stream_, save_stream_;
  int ts_ = -1, stream_ = -1, seq_ = -1, job_ = -1;  // schema positions
  std::vector<DatasetInfo> infos_;                   // by position in schema::Datasets()
  std::vector<DatasetWriter> writers_;               // likewise
  StreamCache streams_;
  std::vector<StreamEntry*> dirty_;  // changed in the current batch
  uint64_t batch_ = 0;               // batches begun so far
  // PRAGMA data_version when the codes were loaded / the stream cache was
  // last known to match the file.
  int64_t codes_version_ = 0, streams_version_ = 0;
  std::string text_;
  ParsedRecord decoded_;
  std::vector<uint8_t> expanded_;  // the first-pass bytes of the merged block being read
};

// "2026-11-22T07:09:12.123Z", with 6 or 9 fraction digits when the
// instant has them, so an exported date parses back to the same ns.
void AppendIsoDate(std::string* out, int64_t ns) {
  int64_t secs = ns / 1000000000, frac = ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    --secs;
  }
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  int y;
  unsigned mo, d;
  CivilFromDays(days, &y, &mo, &d);
  char b[48];
  int n = std::snprintf(b, sizeof b, "%04d-%02u-%02uT%02d:%02d:%02d", y, mo, d, static_cast<int>(rem / 3600),
                        static_cast<int>(rem / 60 % 60), static_cast<int>(rem % 60));
  if (frac % 1000000 == 0) n += std::snprintf(b + n, sizeof b - static_cast<size_t>(n), ".%03dZ", static_cast<int>(frac / 1000000));
  else if (frac % 1000 == 0) n += std::snprintf(b + n, sizeof b - static_cast<size_t>(n), ".%06dZ", static_cast<int>(frac / 1000));
  else n += std::snprintf(b + n, sizeof b - static_cast<size_t>(n), ".%09dZ", static_cast<int>(frac));
  AppendJsonString(out, std::string_view(b, static_cast<size_t>(n)));
}

}  // namespace

Status ExportJsonLines(Store& store, const ScanQuery& q, const std::function<bool(std::string_view line)>& out) {
  const auto fields = schema::FieldsOf(q.dataset);
  ScanQuery all = q;
  all.fields.clear();
  for (const auto* f : fields) all.fields.push_back(kAllFields[static_cast<size_t>(f - schema::Fields().data())]);
  std::string line;
  return store.Scan(all, [&](const Row& row) {
    line.clear();
    line.push_back('{');
    for (size_t k = 0; k < fields.size(); ++k) {
      if (!row.Has(k)) continue;
      if (line.size() > 1) line.push_back(',');
      AppendJsonString(&line, fields[k]->name);
      line.push_back(':');
      switch (fields[k]->type) {
        case schema::Type::kKeyword: AppendJsonString(&line, row.Str(k)); break;
        case schema::Type::kDate: AppendIsoDate(&line, row.Int(k)); break;
        case schema::Type::kBool: line += row.Int(k) ? "true" : "false"; break;
        case schema::Type::kLong: line += std::to_string(row.Int(k)); break;
        case schema::Type::kDouble: {
          std::string d;
          JsonWriter w(&d);
          w.Double(row.Double(k));
          line += d;
          break;
        }
      }
    }
    line.push_back('}');
    return out(line);
  });
}

BulkWriter* BulkWriterOf(Store* store) { return dynamic_cast<BulkWriter*>(store); }

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir, const SqliteStoreOptions& opts) {
  auto s = std::make_unique<SqliteStore>(opts);
  if (auto st = s->Open(dir); !st.ok()) return st;
  return std::unique_ptr<Store>(std::move(s));
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir) { return OpenSqliteStore(dir, SqliteStoreOptions{}); }

Status CompactSqliteStore(const std::string& dir, const CompactOptions& opts, CompactReport* out) {
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/store.db", ec)) return Status::NotFound("no store.db in " + dir);
  SqliteStoreOptions o;
  o.quiet_damage = true;
  SqliteStore s(o);
  if (auto st = s.Open(dir); !st.ok()) return st;
  return s.Compact(opts, out);
}

Status CheckSqliteStore(const std::string& dir, bool repair, CheckReport* out) {
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/store.db", ec)) return Status::NotFound("no store.db in " + dir);
  SqliteStoreOptions o;
  o.quiet_damage = true;
  SqliteStore s(o);
  if (auto st = s.Open(dir); !st.ok()) return st;
  return s.Check(repair, out);
}

std::string BlockDamage::Describe() const {
  std::string d = "block " + std::to_string(id) + " (" + dataset;
  if (!job.empty()) d += ", job " + job;
  d += ", " + FormatIsoMillis(ts_min) + " .. " + FormatIsoMillis(ts_max) + ", " + std::to_string(records) +
       " records) is damaged: " + reason;
  return d;
}

Status AppendJsonLines(Store& store, std::string_view lines, AppendStats* stats,
                       const std::function<void(size_t lineno, const Status& why)>& bad) {
  constexpr size_t kBatch = 512;
  std::vector<ParsedRecord> recs(kBatch);  // parsed in place in bufs, so both live until the Append
  std::vector<std::string> bufs(kBatch);
  std::vector<const ParsedRecord*> ptrs;
  auto flush = [&]() -> Status {
    if (ptrs.empty()) return Status::Ok();
    AppendStats a;
    Status s = store.Append(ptrs, &a);
    stats->inserted += a.inserted;
    stats->duplicates += a.duplicates;
    ptrs.clear();
    return s;
  };
  size_t lineno = 0;
  while (!lines.empty()) {
    const size_t nl = lines.find('\n');
    const std::string_view l = lines.substr(0, nl);
    lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
    ++lineno;
    auto& b = bufs[ptrs.size()];
    b.assign(l);
    b.push_back('\0');
    auto& rec = recs[ptrs.size()];
    if (Status s = ParseRecordInsitu(b.data(), l.size(), &rec); !s.ok()) {
      bad(lineno, s);
      continue;
    }
    ptrs.push_back(&rec);
    if (ptrs.size() == kBatch)
      if (Status f = flush(); !f.ok()) return f;
  }
  return flush();
}

}  // namespace iosonar
