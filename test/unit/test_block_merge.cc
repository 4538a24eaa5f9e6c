// The merged block form (core/store/internal/block_merge.h): what
// store-compact writes must read back as exactly the first-pass block, on
// blocks built to break each shortcut it takes (process fields that are not
// constant, rank patterns that are not, file ids that are not the path's
// hash, wrapping numbers, absent fields), and a damaged merged block must be
// refused, never overrun.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/base/hash.h"
#include "core/records/fields.h"
#include "core/records/record.h"
#include "core/records/schema.h"
#include "core/store/internal/block_codec.h"
#include "core/store/internal/block_merge.h"

using namespace iosonar;

namespace {

// The trace dataset's fields, one code each in schema order (as a new store numbers them).
blocks::DatasetCodes TraceCodes() {
  blocks::DatasetCodes c;
  c.dataset = dataset::kTrace;
  c.dataset_field = static_cast<int>(field::kEventDataset.index());
  int code = 0;
  for (const auto* f : schema::FieldsOf(dataset::kTrace)) {
    const int pos = static_cast<int>(f - schema::Fields().data());
    if (pos == c.dataset_field) continue;
    c.Set(code++, pos, f->type);
  }
  return c;
}

std::string FileId(std::string_view path) {
  static const char* hex = "0123456789abcdef";
  uint64_t h = Fnv1a(path);
  std::string s(16, '0');
  for (int k = 15; k >= 0; --k, h >>= 4) s[static_cast<size_t>(k)] = hex[h & 15];
  return s;
}

// One trace record's values (strings owned here; the ParsedRecord points at them).
struct TraceRec {
  int64_t ts = 0, stream = 0, seq = 0, pid = 0, tid = 0, rank = -1, fd = -1, offset = -1, size = -1, count = 1,
          bytes = -1, start = 0, end = 0, dur = 0;
  std::string host, job, op = "write", layer = "posix", path, id, user;
};

void Put(ParsedRecord& r, FieldId f, int64_t v) {
  r.v[f.index()].kind = FieldValue::kInt;
  r.v[f.index()].i = v;
}
void Put(ParsedRecord& r, FieldId f, const std::string& s) {
  r.v[f.index()].kind = FieldValue::kString;
  r.v[f.index()].s = s;
}

std::vector<uint8_t> FirstPass(const blocks::DatasetCodes& codes, const std::vector<TraceRec>& recs) {
  blocks::BlockEncoder enc(&codes);
  auto r = std::make_unique<ParsedRecord>();
  for (const auto& t : recs) {
    r->Clear();
    r->dataset = schema::FindDataset(dataset::kTrace);
    Put(*r, field::kTimestamp, t.ts);
    Put(*r, field::kEventStream, t.stream);
    Put(*r, field::kEventSeq, t.seq);
    Put(*r, field::kHostName, t.host);
    if (!t.job.empty()) Put(*r, field::kJobId, t.job);
    Put(*r, field::kProcessPid, t.pid);
    Put(*r, field::kProcessTid, t.tid);
    if (t.rank >= 0) Put(*r, field::kProcessRank, t.rank);
    if (!t.user.empty()) Put(*r, field::kUserId, t.user);
    Put(*r, field::kIoOp, t.op);
    Put(*r, field::kIoLayer, t.layer);
    if (!t.path.empty()) Put(*r, field::kFilePath, t.path);
    if (!t.id.empty()) Put(*r, field::kFileId, t.id);
    if (t.fd >= 0) Put(*r, field::kIoFd, t.fd);
    if (t.offset >= 0) Put(*r, field::kIoOffset, t.offset);
    if (t.size >= 0) Put(*r, field::kIoSize, t.size);
    Put(*r, field::kIoCount, t.count);
    if (t.bytes >= 0) Put(*r, field::kIoBytes, t.bytes);
    Put(*r, field::kEventStartNs, t.start);
    Put(*r, field::kEventEndNs, t.end);
    Put(*r, field::kIoDurationNs, t.dur);
    enc.Add(*r);
  }
  auto b = enc.Finish();
  return {b.begin(), b.end()};
}

// A lockstep job: `ranks` ranks, each opening its own file and writing
// `writes` runs of 1 MiB requests, interleaved by second as a collector receives them.
std::vector<TraceRec> Lockstep(int ranks, int writes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TraceRec> out;
  const int64_t t0 = 1795305600000000000;
  for (int s = 0; s < writes; ++s)
    for (int r = 0; r < ranks; ++r) {
      TraceRec t;
      t.stream = static_cast<int64_t>(rng() >> 1) | 1;  // replaced below: one stream per rank
      t.host = "cn" + std::to_string(10000 + r).substr(1);
      t.job = "2001";
      t.pid = 10000 + r % 7;
      t.tid = t.pid;
      t.rank = r;
      t.path = "/simfs/job2001/out." + std::to_string(r);
      t.id = FileId(t.path);
      t.fd = 3;
      t.size = 1 << 20;
      t.count = 64;
      t.bytes = int64_t{64} << 20;
      t.offset = int64_t{s} * t.bytes;
      t.seq = s;
      t.start = t0 + int64_t{s} * 1000000000 + static_cast<int64_t>(rng() % 5000000);
      t.ts = t.start / 1000000 * 1000000;
      t.dur = 62500000;
      t.end = t.start + t.dur;
      out.push_back(std::move(t));
    }
  std::vector<int64_t> streams(static_cast<size_t>(ranks));
  for (auto& x : streams) x = static_cast<int64_t>(rng() >> 1);
  for (auto& t : out) t.stream = streams[static_cast<size_t>(t.rank)];
  return out;
}

void CheckRoundTrip(const blocks::DatasetCodes& codes, const std::vector<uint8_t>& first, blocks::MergeStats* stats,
                    std::vector<uint8_t>* merged_out = nullptr) {
  std::vector<uint8_t> merged, back;
  std::string why, err;
  REQUIRE(blocks::MergeBlock(codes, first, &merged, &why, stats));
  INFO(why);
  CHECK(merged[0] == blocks::kFormatMerged);
  REQUIRE(blocks::ExpandBlock(codes, merged, &back, &err));
  INFO(err);
  CHECK(back == first);
  if (merged_out) *merged_out = merged;
}

}  // namespace

TEST_CASE("merged blocks: a lockstep job reads back byte for byte and is several times smaller", "[store][merge]") {
  const auto codes = TraceCodes();
  const auto first = FirstPass(codes, Lockstep(512, 8, 1));
  blocks::MergeStats st;
  std::vector<uint8_t> merged;
  CheckRoundTrip(codes, first, &st, &merged);
  CHECK(st.records == 512 * 8);
  CHECK(st.procs == 512);
  // host, pid, rank, path and the path's file.id are per process: a group per second (the offset).
  CHECK(st.groups <= 8);
  INFO("first pass " << first.size() << " bytes, merged " << merged.size());
  CHECK(merged.size() * 3 < first.size());
}

TEST_CASE("merged blocks: fields that only look per-process or per-rank are kept exactly", "[store][merge]") {
  const auto codes = TraceCodes();
  auto recs = Lockstep(40, 5, 2);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < recs.size(); ++i) {
    auto& t = recs[i];
    if (i % 11 == 0) t.host = "moved-" + std::to_string(i);          // one stream, two hosts
    if (i % 13 == 0) t.id = "not-the-path-hash";                      // a file.id that is not FNV(path)
    if (i % 17 == 0) t.path = "/simfs/job2001/out.0" + std::to_string(t.rank);  // leading zero: no pattern
    if (i % 19 == 0) t.path.clear(), t.id.clear();                    // path-less metadata op
    if (i % 23 == 0) t.offset = -1;                                   // no offset
    if (i % 29 == 0) t.rank = -1;                                     // rank absent
    if (i % 31 == 0) t.seq = std::numeric_limits<int64_t>::max() - static_cast<int64_t>(i);  // wrapping differences
    if (i % 37 == 0) t.start = std::numeric_limits<int64_t>::min() + static_cast<int64_t>(rng() % 1000);
    if (i % 41 == 0) t.user = i % 2 ? "1000" : "";
    if (i % 43 == 0) t.op = "";                                       // an empty keyword
  }
  // Records of one stream out of order, a stream coming back later.
  std::swap(recs[3], recs[150]);
  std::swap(recs[10], recs[199]);
  blocks::MergeStats st;
  CheckRoundTrip(codes, FirstPass(codes, recs), &st);
  CHECK(st.records == recs.size());
}

TEST_CASE("merged blocks: random records round-trip", "[store][merge]") {
  const auto codes = TraceCodes();
  std::mt19937_64 rng(GENERATE(11u, 12u, 13u, 14u));
  const std::vector<std::string> hosts = {"a", "b", "cn0001", "cn0002", ""}, ops = {"read", "write", "stat", "open"};
  std::vector<TraceRec> recs;
  const size_t n = 1 + rng() % 600;
  for (size_t i = 0; i < n; ++i) {
    TraceRec t;
    t.stream = static_cast<int64_t>(rng() % 9);
    t.seq = static_cast<int64_t>(rng() % 50);
    t.ts = static_cast<int64_t>(rng());
    t.host = hosts[rng() % hosts.size()];
    t.pid = static_cast<int64_t>(rng() % 3);
    t.tid = static_cast<int64_t>(rng());
    t.rank = static_cast<int64_t>(rng() % 5) - 1;
    t.op = ops[rng() % ops.size()];
    t.path = rng() % 4 ? "/p/f" + std::to_string(rng() % 6) : "";
    t.id = rng() % 3 == 0 ? FileId(t.path) : rng() % 2 ? "x" + std::to_string(rng() % 4) : "";
    t.fd = static_cast<int64_t>(rng() % 5) - 1;
    t.offset = rng() % 3 ? static_cast<int64_t>(rng() >> 1) : -1;
    t.size = static_cast<int64_t>(rng() % 4) - 1;
    t.count = static_cast<int64_t>(rng() % 3);
    t.bytes = static_cast<int64_t>(rng() % 5) - 1;
    t.start = static_cast<int64_t>(rng());
    t.end = static_cast<int64_t>(rng());
    t.dur = static_cast<int64_t>(rng() % 1000);
    recs.push_back(std::move(t));
  }
  blocks::MergeStats st;
  CheckRoundTrip(codes, FirstPass(codes, recs), &st);
  CHECK(st.records == n);
}

TEST_CASE("merged blocks: a damaged merged block is refused, never overrun", "[store][merge]") {
  const auto codes = TraceCodes();
  const auto first = FirstPass(codes, Lockstep(16, 3, 5));
  blocks::MergeStats st;
  std::vector<uint8_t> merged, out;
  CheckRoundTrip(codes, first, &st, &merged);
  std::string err;
  // Every truncation is refused with a reason.
  for (size_t cut = 0; cut < merged.size(); ++cut) {
    std::vector<uint8_t> part(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(cut));
    INFO("cut at " << cut);
    CHECK_FALSE(blocks::ExpandBlock(codes, part, &out, &err));
    CHECK_FALSE(err.empty());
  }
  // Flipped bits: refused, or read as some block (the store's CRC-32C catches
  // those before the decoder); under the sanitizers, no overrun either way.
  size_t refused = 0;
  for (size_t i = 0; i < merged.size(); ++i) {
    auto bad = merged;
    bad[i] ^= static_cast<uint8_t>(1u << (i % 8));
    if (!blocks::ExpandBlock(codes, bad, &out, &err)) ++refused;
  }
  CHECK(refused > 0);
  // A first-pass block is not a merged one, and the reverse.
  CHECK_FALSE(blocks::ExpandBlock(codes, first, &out, &err));
  std::string why;
  CHECK_FALSE(blocks::MergeBlock(codes, merged, &out, &why));
  CHECK(why == "not a first-pass block");
}

TEST_CASE("merged blocks: a block with a code this binary does not know is left first-pass", "[store][merge]") {
  auto codes = TraceCodes();
  const auto first = FirstPass(codes, Lockstep(8, 2, 9));
  // The store's code for io.bytes now names a field this binary lacks: it reads and drops it.
  const int c = codes.code_of[field::kIoBytes.index()];
  blocks::DatasetCodes older = codes;
  older.by_code[static_cast<size_t>(c)].field = -1;
  older.code_of[field::kIoBytes.index()] = -1;
  std::vector<uint8_t> merged;
  std::string why;
  CHECK_FALSE(blocks::MergeBlock(older, first, &merged, &why));
  CHECK(why.find("different bytes") != std::string::npos);
}
