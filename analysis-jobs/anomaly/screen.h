// System screening (Beacon, NSDI'19 §4.2, Table 2): an OST or forwarding
// node whose measured maximum bandwidth stays under a fraction of its known
// peak (Beacon: 30 %) for at least a minimum duration (Beacon: 60 minutes)
// while it has work is an anomaly occurrence.
//
// Definitions (docs/anomaly.md):
//  - Bandwidth: per record, (read + write bytes) / lustre.elapsed_ns; OSTs
//    from iosonar.oss, forwarding nodes from their llite records
//    (iosonar.client, client.layer llite, by host.name). A record covers
//    [@timestamp - elapsed, @timestamp) and counts in the bucket where that
//    interval starts.
//  - Buckets of bucket_ns (default 60 s) from `from`: a bucket has work when
//    some second in it had work: an OST with lustre.jobs_active > 0 (jobs
//    doing I/O on it), a forwarding node with read or write ops. A working
//    bucket is low when its largest bandwidth < fraction * peak.
//  - An occurrence starts at a low bucket and goes on through low and idle
//    buckets until a working bucket that is not low; it ends at the end of
//    its last low bucket. It is reported when end - start >= min_duration.
//  - Peak per server: from the peak file (NAME<TAB or space>BYTES_PER_S),
//    else the largest bandwidth seen so far: in this range and in the state
//    (observed peaks carried from earlier runs).
//  - Hourly runs carry a state (--state FILE, JSON): the runs still open at
//    the end of the range (their start, last low bucket, largest ratio) and
//    the observed peaks; the next run whose range starts where the last
//    ended continues them, so an occurrence crossing hours is one occurrence.
//    Occurrences already reported (id = kind:name:start) are remembered, so a
//    later run reports them as updated, not new (alerts are sent once).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/jobdb/mysql.h"
#include "core/store/store.h"

namespace iosonar::anomaly {

struct ScreenOptions {
  double fraction = 0.3;
  int64_t min_duration_ns = 3600ll * 1000000000;
  int64_t bucket_ns = 60ll * 1000000000;
  bool osts = true, forwarding = true;
};

struct Occurrence {
  std::string kind;  // ost or forwarding
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
  double max_bw_ratio = 0;  // largest bucket maximum / peak over the occurrence
  double peak = 0;          // bytes/s used
  bool open = false;        // still under the threshold at the end of the range
  bool is_new = true;       // not reported by an earlier run (state)
  std::string Id() const;   // kind:name:start (ISO)
};

// What an hourly run leaves for the next one.
struct ScreenState {
  int64_t to_ns = 0;  // where the last run ended
  struct Open {
    int64_t start_ns = 0, last_low_end_ns = 0;
    double max_ratio = 0;
  };
  std::map<std::string, Open> open;      // key kind:name
  std::map<std::string, double> peaks;   // key kind:name -> bytes/s observed
  std::set<std::string> reported;        // Occurrence::Id() of occurrences reported
  std::set<std::string> alerted;         // ids an alert e-mail went out for (alert.h)
};

Result<ScreenState> LoadScreenState(const std::string& path);  // a missing file is an empty state
Status SaveScreenState(const std::string& path, const ScreenState& s);  // 0600, atomically

// NAME BYTES_PER_S per line (tab or spaces; '#' comments); NAME: an OST
// target (fs-OST0003) or a forwarding node's host name. Errors name file:line.
Result<std::map<std::string, double>> LoadPeaks(const std::string& path);

struct ScreenResult {
  int64_t from_ns = 0, to_ns = 0;
  std::vector<Occurrence> occurrences;
  size_t servers = 0;
  uint64_t records = 0;
};

// Screens [from, to). state may be null (no carry-over); when given it is
// read and updated.
Result<ScreenResult> Screen(Store& store, int64_t from_ns, int64_t to_ns, const std::map<std::string, double>& peaks,
                            const ScreenOptions& opt, ScreenState* state);

std::string ScreenToJson(const ScreenResult& r, bool pretty = true);
std::string ScreenToTable(const ScreenResult& r);
// Beacon's Table 2: occurrences by duration band ((0,1), [1,4), [4,12), [12,96), >= 96 hours) and kind.
std::string DurationTable(const std::vector<Occurrence>& occ);
// iosonar.result.anomaly records, one per occurrence (result.analysis "occurrence").
std::string ScreenToRecords(const ScreenResult& r, const std::string& host);
// Upserts the occurrences into server_anomaly (migration 35): one row per
// (kind, server, start); end, duration, ratio and still_open follow the
// latest screening, alerted_at is kept. Rows still open for a server that
// this screening covered and found closed are closed too.
Status WriteOccurrencesToDb(MysqlConn& db, const ScreenResult& r);
// The daily report's anomaly section (HTML, text) from the
// iosonar.result.anomaly records stamped in [from, to): the system
// occurrences (longest record of each) and the anomalous jobs with their
// slowdown and first neighbour. ("", "") when there are none.
Result<std::pair<std::string, std::string>> ReportSection(Store& store, int64_t from_ns, int64_t to_ns);

}  // namespace iosonar::anomaly
