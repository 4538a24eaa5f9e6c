// Feeding the LASSi accumulator from records: one parsed record at a time
// (tests, the LMT importer) or by scanning a Store (iosonar lassi).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

#include "core/records/record.h"
#include "core/base/status.h"
#include "core/store/store.h"
#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lassi/lassi.h"

namespace iosonar::lassi {

// The job's application: its exact command line, or "" when unknown.
using AppOf = std::function<std::string(std::string_view job)>;
// The job's run [start, end) from the scheduler (job database), when known:
// its application-hours span the run, not only the windows with records.
using RunOf = std::function<std::optional<std::pair<int64_t, int64_t>>(std::string_view job)>;

// The file system of a record: lustre.fs, else the target's name up to its
// last '-' (snx11025-OST0000 -> snx11025).
std::string FsOf(std::string_view fs_field, std::string_view target);

// Server records cover [@timestamp - lustre.elapsed_ns, @timestamp) (the
// exporters and the LMT importer stamp a delta at its later reading). A
// record is put in the window holding the middle of its interval (the window
// it overlaps most when the interval is shorter than a window); without
// elapsed_ns, the window holding the instant just before @timestamp.
inline int64_t AttributionTime(int64_t ts_ns, int64_t elapsed_ns) {
  return elapsed_ns > 0 ? ts_ns - elapsed_ns / 2 : ts_ns - 1;
}
// Server records stamped up to this long after `to` may still belong before it.
constexpr int64_t kMaxElapsedNs = 300LL * 1000000000LL;

// One iosonar.oss / iosonar.mds / iosonar.jobstats record into the
// accumulator; records with lustre.reset = true are counted and left out
// (their deltas are unknown). Other datasets are ignored.
void AddParsedRecord(const ParsedRecord& rec, Accumulator& acc, const AppOf& app_of);

// Scans iosonar.oss, iosonar.mds and iosonar.jobstats stamped in
// [history_from, to + kMaxElapsedNs) and keeps those whose AttributionTime is
// in [history_from, to).
Status FeedFromStore(Store& store, Accumulator& acc, const AppOf& app_of, const RunOf& run_of = nullptr);
// The same with two threads on two store handles from open(): iosonar.oss +
// iosonar.mds in one, iosonar.jobstats (and every app_of call) in the other.
Status FeedFromStoreParallel(const std::function<Result<std::unique_ptr<Store>>()>& open, Accumulator& acc,
                             const AppOf& app_of, const RunOf& run_of = nullptr);

// LASSi over the records of the store that open() opens: FeedFromStore on
// one handle (scan_threads 1) or FeedFromStoreParallel (2), then Compute().
Result<LassiResult> ComputeFromStore(const std::function<Result<std::unique_ptr<Store>>()>& open, const Options& o,
                                     int scan_threads, const AppOf& app_of, const RunOf& run_of = nullptr);

// THE LASSi computation of `iosonar lassi`, `iosonar report` and the web
// page's daily LASSi (serve): ComputeFromStore with each job's application
// (exact command) and run from apps (its file and/or job database; nullptr:
// every job its own application). Risk is per run either way (LassiResult);
// only the grouping into applications depends on apps.
Result<LassiResult> ComputeLassi(const std::function<Result<std::unique_ptr<Store>>()>& open, const Options& o,
                                 int scan_threads, const AppSource* apps);

}  // namespace iosonar::lassi
