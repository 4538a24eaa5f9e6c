// `iosonar bad-ost`: TOKIO's darshan_bad_ost (Lockwood et al., "A Year in the
// Life of a Parallel File System", CUG'18, section on OST correlation) on our
// own per-file input, since Darshan logs are binary and darshan-util is not in
// Debian. For each file: its performance (bytes / seconds of I/O time) and the
// OSTs it is striped over; for each OST, the Pearson correlation between the
// files' performance and the share of each file on that OST (1/stripe count
// when the file is striped over it, else 0), with a two-sided p-value. A
// strongly negative, significant correlation names a slow OST.
//
// Input (one observation per file; a file named twice keeps the larger
// performance and the union of its OSTs, as TOKIO does across logs):
//  - CSV with a header naming the columns file, bytes, seconds, osts (any
//    order, extra columns ignored); osts is a list separated by ';' or
//    spaces, each an OST index (decimal) or a Lustre name OSTxxxx (hex), e.g.
//    "0;14;3" or "OST0000 OST000e".
//  - JSON: an array of objects {"file", "bytes", "seconds", "osts": [...]}
//    (osts as numbers or OST names), or the same objects one per line.
// Guards: a row with seconds <= 0 (no I/O time) or bytes < 0, or that cannot
// be parsed, is set aside with an error naming the input and line, and the
// rest goes on. All performances equal (or fewer than two files): no
// correlation at all. An OST every used file is on, or none is (a constant
// column): skipped.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/store/store.h"

namespace iosonar::analysis {

struct FileObservation {
  std::string file;
  double bytes = 0;
  double seconds = 0;
  std::vector<int64_t> osts;
};

struct BadOstInput {
  std::vector<FileObservation> files;
  std::vector<std::string> errors;  // "NAME:LINE: what"
  uint64_t zero_time = 0;           // rows set aside for seconds <= 0
};

// Appends to *out; name is used in error messages and to key files
// ("name@file", so the same path in two inputs stays two observations).
void ParseBadOstCsv(std::string_view text, const std::string& name, BadOstInput* out);
void ParseBadOstJson(std::string_view text, const std::string& name, BadOstInput* out);
// By content: JSON if the first non-blank character is '[' or '{', else CSV.
void ParseBadOstAuto(std::string_view text, const std::string& name, BadOstInput* out);

// The per-file table of one job from its iosonar.trace records and the
// files' layouts (TOKIO's darshan_bad_ost reads Darshan's per-file POSIX
// counters: bytes read + written, and F_READ_TIME + F_WRITE_TIME): per
// file.path, the bytes of its read and write runs and the sum of their
// io.duration_ns (the time inside those calls), with the OSTs of its layout
// (layouts: path -> OST indices, from the job database's file_layouts or
// `lfs getstripe` output). MPI-IO layer runs are left out (their bytes are
// the POSIX ones again). A file with bytes but no layout is left out,
// counted in *no_layout and named in out->errors (the first 20); a file with
// no I/O time goes to zero_time as in the parsers.
Status FilesFromStore(Store& store, const std::string& job_id, const std::map<std::string, std::vector<int64_t>>& layouts,
                      BadOstInput* out, uint64_t* no_layout);
// The table as the CSV the parsers read (file,bytes,seconds,osts; osts
// separated by ';'), so it can be kept, checked or fed back.
std::string BadOstInputToCsv(const BadOstInput& in);

struct OstCorrelation {
  int64_t ost = 0;
  std::string name;  // "OST#14" (TOKIO's naming) 
  double coefficient = 0;
  double p_value = 1;
  uint64_t files_on = 0;  // files striped over it
};

struct BadOstResult {
  uint64_t files = 0;  // observations correlated
  bool constant_performance = false;  // all equal (or < 2 files): nothing correlated
  std::vector<int64_t> constant_osts;  // skipped: on every file
  std::vector<OstCorrelation> correlations;  // every OST tested, by coefficient ascending
};

BadOstResult CorrelateOsts(const std::vector<FileObservation>& files);

struct BadOstFilter {
  double p_threshold = 0.05;  // -p: shown when p-value < this
  double c_threshold = 0.0;   // -c: ... and |coefficient| > this
  double c_warning = 0.5;     // -C: flagged when |coefficient| > this
};
std::vector<OstCorrelation> FilterCorrelations(const BadOstResult& r, const BadOstFilter& f);

std::string BadOstToJson(const BadOstResult& r, const BadOstFilter& f, const BadOstInput& in);
// iosonar.result.bad_ost records, one JSON line per OST tested (schema-valid),
// all at @timestamp ts_ns; job_id may be empty. event.stream from the job and
// the result (BadOstToJson): the same inputs and thresholds give the same
// ids, so a resend dedupes.
std::string BadOstToRecords(const BadOstResult& r, const BadOstFilter& f, const BadOstInput& in,
                            const std::string& host, const std::string& job_id, int64_t ts_ns);
std::string BadOstToTable(const BadOstResult& r, const BadOstFilter& f, const BadOstInput& in);

}  // namespace iosonar::analysis
