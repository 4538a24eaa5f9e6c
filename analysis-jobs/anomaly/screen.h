// System screening (Beacon, NSDI'19 §4.2 "Anomaly alert and node
// screening", Appendix B; docs/anomaly.md): an OST or forwarding node that
// consistently under-performs relative to peers serving similar workloads,
// for at least a minimum duration (Beacon: 60 minutes), is an anomaly
// occurrence. Bandwidth alone is load, not health, so a server is judged by
// the service it gives the work it has.
//
// Per bucket of bucket_ns (default 60 s) from `from`, per server:
//  - demand rule (always): its cost per request against its peers' in the
//    same bucket. OSTs: the mean brw_stats "I/O time" per I/O (iosonar.brw,
//    hist io_time_ms, each row at its label, the upper bound) over the median of the other OSTs
//    with I/Os in the bucket; without brw records, the RPCs in flight its
//    clients' OSCs saw (iosonar.client osc, rpc_*_in_flight_mean, RPC
//    weighted) over what the same clients saw towards the other OSTs.
//    Forwarding nodes: the RPCs in flight its OSCs saw over what the other
//    forwarding nodes saw towards the same OSTs (a slow OST deepens every
//    client's queue to it and cancels out). Low when cost >= peer_factor x
//    the peers' (default 2).
//  - bandwidth rule (Beacon's, where a peak is known: the peak file, or for a
//    server without any demand signal in the range the largest bandwidth
//    seen, as before): a bucket with work whose largest bandwidth is under
//    fraction x peak is low only when the server was saturated (its OSCs
//    kept >= saturated_depth RPCs in flight, over what the same clients kept
//    towards the other servers when that is known) or nothing tells its
//    demand.
//    Bandwidth: per record (read + write bytes) / lustre.elapsed_ns, OSTs
//    from iosonar.oss, forwarding nodes from their llite records. Work: an
//    OST with lustre.jobs_active > 0, a forwarding node with read/write ops.
//  - A bucket is low when a rule says so; fine when a rule judged it and
//    none says low; idle when the server had neither I/Os nor work; else
//    unknown (demand, but no peers to judge by).
//  - Evidence for an OST also carries its OSS's ost_io request wait against
//    the other OSSes' where the exporter sampled it (not a rule: one OSS's
//    service threads serve all its OSTs).
//  - An occurrence starts at a low bucket and goes on through low and
//    unknown buckets; a fine or an idle bucket ends it, at the end of its
//    last low bucket. It is reported when end - start >= min_duration, with
//    the rules that fired and their evidence (medians over its low buckets).
//  - Hourly runs carry a state (--state FILE, JSON): the runs still open at
//    the end of the range and the observed peaks; the next run whose range
//    starts where the last ended continues them. Occurrences already
//    reported (id = kind:name:start) are remembered (alerts are sent once).
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
  double fraction = 0.3;         // bandwidth rule: low under fraction x peak
  double peer_factor = 2;        // demand rule: low when cost >= peer_factor x the peers'
  double saturated_depth = 2;    // bandwidth rule: RPCs in flight that make a server saturated
  int64_t min_duration_ns = 3600ll * 1000000000;
  int64_t bucket_ns = 60ll * 1000000000;
  bool osts = true, forwarding = true;
};

struct Occurrence {
  std::string kind;  // ost or forwarding
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
  double max_bw_ratio = 0;  // with a peak: largest bucket maximum / peak; else the largest 1 / cost ratio
  double peak = 0;          // bytes/s used (0: none)
  std::string rule;         // demand, bandwidth or demand+bandwidth
  // Evidence, medians over the occurrence's low buckets in this range (0: not measured).
  struct Evidence {
    int low_minutes = 0, unknown_minutes = 0;
    double service_ms = 0, peer_service_ms = 0;  // brw I/O time per I/O
    double queue_depth = 0, peer_queue_depth = 0;  // RPCs in flight, its clients' vs the reference
    double cost_ratio = 0;                       // its cost / its peers'
    // ost_io request wait of the OST's OSS (iosonar.oss oss.ost_io_wait_ns,
    // where sampled) and the other OSSes' median in the same minutes; evidence
    // only: the OSS's threads serve all its OSTs.
    std::string oss;
    double ost_io_wait_ms = 0, peer_ost_io_wait_ms = 0;
    double peers = 0;                            // servers judged beside it
    double bandwidth = 0;                        // largest bucket bandwidth, bytes/s
    std::string peak_source;                     // file, observed or "" (none)
  } evidence;
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
    std::string rule;  // rules fired so far ("" read from an older state)
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
// The occurrence's evidence for people: "service 4.0 ms per I/O vs its 7 peers' 1.0 ms; ...".
std::string EvidenceText(const Occurrence& o);
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
