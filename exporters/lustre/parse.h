// Parsers for Lustre's statistics files, as pure functions over text.
//
// Every parser takes the whole file (or one lctl get_param value) as a
// string_view and fills a reusable output struct whose string_views point into
// that text, so the text must outlive the result. Parsers never throw and
// never stop at a bad line: the line is set aside as an Issue (line number +
// reason) and parsing goes on. No allocation per line once the output's
// vectors have grown (they are cleared, not freed, between calls).
//
// Formats (Lustre 1.8 through 2.15 and DDN 2.14; ../shared/data/lustre/INVENTORY.md):
// - counter files (obdfilter/*/stats, mdt/*/md_stats, llite/*/stats, service
//   stats): `name N samples [unit] [min max sum [sumsq]]`, headers
//   snapshot_time/start_time/elapsed_time in secs.usecs or secs.nsecs.
// - job_stats: YAML-like `- job_id: ID` blocks of `op: { samples: N, unit: U, ... }`.
// - brw_stats and osc/mdc rpc_stats: titled read|write histograms.
// - lctl get_param dumps: `param=value`, multi-line values after `param=`.
//
// Values are unsigned 64-bit modulo 2^64: negative (wrapped) sums are read as
// their two's-complement bit pattern, so deltas taken modulo 2^64 stay right;
// sumsq is not read at all (it overflows routinely).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iosonar::lustre {

struct Issue {
  uint32_t line = 0;  // 1-based line in the text
  std::string message;
};

// ---- counter files ----
struct StatsCounter {
  std::string_view name;
  std::string_view unit;  // "reqs", "bytes", "usecs", ... ("" if absent)
  uint64_t samples = 0;
  uint64_t sum = 0;       // valid when nvals >= 3
  uint8_t nvals = 0;      // value columns after the unit: 0, 3 or 4
};

struct ParsedStats {
  int64_t snapshot_ns = -1;  // -1: absent
  int64_t start_ns = -1;
  int64_t elapsed_ns = -1;
  std::vector<StatsCounter> counters;  // in file order; duplicates kept
  std::vector<Issue> issues;
  void Clear();
};
// Returns the number of issues.
size_t ParseStats(std::string_view text, ParsedStats* out);

// ---- job_stats ----
struct JobOp {
  std::string_view name;
  std::string_view unit;
  uint64_t samples = 0;
  uint64_t sum = 0;
  bool has_sum = false;
};
struct JobEntry {
  std::string_view job_id;  // quotes removed
  int64_t snapshot_ns = -1;
  uint32_t first_op = 0, n_ops = 0;  // into ParsedJobStats::ops
  uint32_t line = 0;
};
struct ParsedJobStats {
  std::vector<JobEntry> jobs;
  std::vector<JobOp> ops;
  std::vector<Issue> issues;
  void Clear();
};
size_t ParseJobStats(std::string_view text, ParsedJobStats* out);

// The same in two steps, so a sampler can skip entries that did not change
// (most of them, at 1 Hz) without parsing them: IndexJobStats finds each
// entry's id, snapshot_time and op lines (`body`, with a 64-bit hash of its
// bytes); ParseJobOps parses one body. ParseJobStats = both.
struct JobSpan {
  std::string_view job_id;  // quotes removed, never empty (empty ids are issues)
  std::string_view body;    // the op lines
  int64_t snapshot_ns = -1;
  uint64_t hash = 0;        // HashBytes(body)
  uint32_t line = 0;        // of "- job_id:"
  uint32_t body_line = 0;   // of body's first line
};
// first_line: the line number of text's first line (text may be a piece of
// a file read in chunks, cut at entry boundaries: JobStatsCut); *last_line,
// if given, gets the number of its last line.
size_t IndexJobStats(std::string_view text, std::vector<JobSpan>* out, std::vector<Issue>* issues,
                     uint32_t first_line = 1, uint32_t* last_line = nullptr);
// Where a piece of job_stats text may be cut so that every entry before the
// cut is whole: the offset of the last line whose first non-blank character
// is '-' (the start of the last entry, which may be incomplete); 0 if there
// is none after the first line.
size_t JobStatsCut(std::string_view text);
// Remembers, for each line position k of a body, the last k-th line parsed
// (its bytes and what it parsed to). Entries list their ops in one order and
// most op lines are the same from one entry to the next (idle ops are all
// "samples: 0"), so ParseJobOps given a cache reuses the result of a
// byte-identical line (one memcmp) instead of parsing it. Exact: a line is
// reused only if its bytes are equal; lines with issues are never cached.
// ~32 lines of memory; one cache per kind of body (OST, MDT) is best.
class JobLineCache {
 public:
  static constexpr size_t kMaxLines = 48;
  struct Entry {
    enum State : uint8_t { kEmpty, kSkip, kOp } state = kEmpty;
    std::string text;  // the line, without its newline
    JobOp op;          // name/unit views are rebuilt from the offsets below
    uint32_t name_off = 0, unit_off = 0;
    bool unit_null = false;
  };
  std::vector<Entry> lines;
};
// Appends the ops of one body; returns the issues added. With a cache, the
// result is the same as without (see JobLineCache), only faster.
size_t ParseJobOps(std::string_view body, uint32_t first_line, std::vector<JobOp>* ops, std::vector<Issue>* issues,
                   JobLineCache* cache = nullptr);
uint64_t HashBytes(std::string_view s);

// ---- histograms: brw_stats, rpc_stats ----
struct HistBucket {
  uint64_t bucket = 0;  // the label's value, K/M/G expanded (1K -> 1024)
  uint64_t read = 0, write = 0;
};
struct Histogram {
  std::string_view title;  // as printed: "pages per bulk r/w"
  std::string_view key;    // short stable name: "pages", "io_size", ... (see HistKey)
  uint32_t first = 0, n = 0;  // into ParsedHist::buckets
};
struct ParsedHist {
  int64_t snapshot_ns = -1;
  // rpc_stats header gauges (-1: absent)
  int64_t read_in_flight = -1, write_in_flight = -1;
  int64_t pending_read_pages = -1, pending_write_pages = -1;
  std::vector<Histogram> hists;
  std::vector<HistBucket> buckets;
  std::vector<Issue> issues;
  void Clear();
  const Histogram* Find(std::string_view key) const;
};
size_t ParseBrwStats(std::string_view text, ParsedHist* out);
size_t ParseRpcStats(std::string_view text, ParsedHist* out);
// Short name of a histogram title: "pages per bulk r/w" -> "pages",
// "disk I/O size" -> "io_size"; unknown titles -> "" (callers slugify or skip).
std::string_view HistKey(std::string_view title);

// ---- lctl get_param dump ----
struct LctlParam {
  std::string_view name;   // "obdfilter.fs-OST0000.stats"
  std::string_view value;  // the value text (may span lines, no trailing newline)
  uint32_t line = 0;
};
// Splits a dump into parameters. A line `a.b.c=...` whose name part has no
// spaces starts a parameter; the other lines continue the current value.
size_t ParseLctlDump(std::string_view text, std::vector<LctlParam>* out, std::vector<Issue>* issues);

// ---- helpers shared with the exporter and tests ----
// "1510782606.789180921" + "secs.nsecs" -> ns; with "secs.usecs" the fraction
// is an integer count of µs (Lustre printed it unpadded with %lu.%lu).
bool ParseTimestamp(std::string_view value, std::string_view unit, int64_t* ns);
// Unsigned decimal, or negative decimal read as its two's-complement pattern.
bool ParseU64Wrapped(std::string_view s, uint64_t* v);

}  // namespace iosonar::lustre
