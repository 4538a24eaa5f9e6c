// A cluster simulator (`iosonar simulate`): consistent multi-layer records
// for N compute nodes behind F forwarding nodes (the Lustre clients, as on
// Sunway TaihuLight) and S OSTs + D MDTs, in exactly the formats the real
// emitters write, so every analysis can be run and checked against a known
// ground truth at any scale up to TaihuLight's (40,960 / 288 / ~400).
//
// What is emitted, per simulated second (docs/simulator.md has the details):
//  - iosonar.trace: per I/O-active rank one run per file it touched (as the
//    tracer's first-pass compression writes them: count ops of io.size over
//    contiguous offsets, one record per 1 s window), opens/closes at the
//    start and end of the job, stat/open/close runs for metadata workloads;
//  - iosonar.client: per forwarding node one llite record (bytes, ops,
//    metadata ops) and one osc record per OST it sent RPCs to (1 MiB RPCs);
//  - iosonar.oss / iosonar.mds: per OST / MDT the interval's deltas (all jobs
//    plus untraced background load); iosonar.jobstats: per job and target.
// Server and client-counter records are stamped at the END of the second
// they cover (lustre.elapsed_ns = 1 s), as the Lustre exporter stamps a delta
// at its later reading: a record covers [@timestamp - 1 s, @timestamp).
//
// Determinism: the same Config (seed included) gives byte-identical output.
// Not thread-safe; a Simulate call owns everything it uses.
#pragma once
#include <cstdint>
#include <climits>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/jobdb/jobdb.h"
#include "core/store/store.h"
#include "core/transport/sink.h"

namespace iosonar::sim {

enum class Mode { kNN, kN1, kNM, k11, kMeta };  // kMeta: a metadata workload (the storm)
std::string_view ModeName(Mode m);                 // "N-N", "N-1", "N-M", "1-1", "meta"
Result<Mode> ParseMode(std::string_view s);

struct JobSpec {
  std::string id;             // job.id; numeric so it fits the job database
  std::string user = "alice";
  std::string name = "app";
  int first_node = 0;         // compute nodes [first_node, first_node + nodes)
  int nodes = 1;
  int procs_per_node = 1;
  Mode mode = Mode::kNN;
  int m_files = 4;            // N-M: files shared by the ranks
  int stripe_count = 4;       // OSTs per file
  int start_s = 0;            // seconds after Config::start_ns
  int duration_s = 10;
  int io_period_s = 1;        // an I/O phase starts every io_period_s seconds ...
  int io_s = 1;               // ... and lasts io_s seconds
  bool read = false;          // reads instead of writes
  int64_t bytes_per_rank_s = 64ll << 20;  // per I/O second
  int64_t request = 1ll << 20;            // io.size
  int64_t meta_per_rank_s = 0;            // kMeta: stats (and opens + closes) per rank per second
  // Bandwidth-bound I/O phases (a checkpointing application): when > 0, each
  // phase has every I/O rank move phase_bytes at its own bandwidth
  // (Config::rank_bw cut by a slow OST or forwarding node while the fault
  // lasts), so a phase lasts as long as its slowest rank needs; io_period_s
  // seconds of computation separate phases (io_s and bytes_per_rank_s are
  // not used). 0: the fixed per-second model above.
  int64_t phase_bytes = 0;
  // A light load beside the job's I/O: rank 0 also appends log_bytes every
  // second of the job to DIR/log (one stripe, its own OST by hash) in 4 KiB
  // synchronous writes of 1 ms each (latency-bound: 4 MiB/s at most, a low
  // bandwidth on a healthy OST). 0: no log.
  int64_t log_bytes = 0;
  std::string command;  // the job's command line ("" -> "sim MODE"), for the job database and --apps
};

struct Faults {
  int slow_ost = -1;            // OST index whose bandwidth is cut
  double slow_ost_factor = 0.25;
  int slow_fwd = -1;            // forwarding node index whose bandwidth is cut
  double slow_fwd_factor = 0.25;
  std::string storm_job;        // if set, this job id (added by Generate) floods the MDS
  // When the slow OST / forwarding node is slow: seconds [from, to) of the run.
  int slow_ost_from_s = 0, slow_ost_to_s = INT32_MAX;
  int slow_fwd_from_s = 0, slow_fwd_to_s = INT32_MAX;
};

struct Config {
  uint64_t seed = 1;
  std::string cluster = "sim";
  std::string fs = "simfs";
  int nodes = 64, fwd = 4, osts = 16, mdts = 1;
  int osts_per_oss = 4;
  int64_t start_ns = 1795305600000000000;  // 2026-11-22T00:00:00Z
  int duration_s = 30;
  // Seconds each server / client-counter record covers (the exporter's
  // --interval): 1 as Beacon; the trace stays per second.
  int interval_s = 1;
  int64_t rank_bw = 1ll << 30;              // bytes/s a rank reaches unimpeded
  int64_t stripe_size = 1ll << 20;
  int64_t background_bytes_per_ost_s = 8ll << 20;  // untraced load, uniform in [0, 2x)
  int64_t background_meta_per_mdt_s = 200;
  // Share of rank-seconds whose data run differs from its peers' (fewer ops,
  // seeded): real ranks are not in lockstep. 0 = every rank alike.
  double variability = 0;
  std::vector<JobSpec> jobs;  // empty: Generate()
  Faults faults;
  bool emit_trace = true, emit_client = true, emit_servers = true;
  bool emit_brw = true;  // iosonar.brw (with emit_servers): a site may sample job_stats but not brw_stats
};

// Parses a job given on the command line: comma-separated key=value pairs,
// id=2001,mode=N-N,first=0,nodes=1024,ppn=1,stripes=4,m=4,start=0,duration=20,
// period=5,io=2,bytes=64M,req=1M,read=1,meta=2000,phase=2G,log=64K,cmd=./app%20-n%204 (sizes take K/M/G suffixes,
// binary; cmd: %20 is a space, %2C a comma). Unknown keys and bad numbers are
// errors naming the key.
Result<JobSpec> ParseJobSpec(std::string_view text);

// A cluster of that size simulated for duration_s from that seed, every
// other setting at its default (the tests' and benchmarks' usual start).
Config Sized(uint64_t seed, int nodes, int fwd, int osts, int duration_s, int mdts = 1);

// Fills cfg.jobs with one job per I/O mode (N-N, N-1, N-M, 1-1) spread over
// the nodes, plus a metadata storm if faults.storm_job is set. Deterministic.
void GenerateJobs(Config* cfg);

struct FileLayout {
  std::string path;
  std::string job_id;
  int64_t stripe_size = 0;
  std::vector<int> osts;  // OST indices in stripe order
  int mdt = 0;
};

struct FilePerf {  // per file, for `iosonar bad-ost`
  std::string path;
  int64_t bytes = 0;
  double seconds = 0;  // time the ranks spent in I/O on it (summed)
  std::vector<int> osts;
};

// What the simulator knows to be true, for tests to check analyses against.
struct JobTruth {
  std::string id;
  int64_t start_ns = 0, end_ns = 0;  // whole seconds [start, end)
  std::vector<std::string> nodes;
  uint64_t trace_records = 0;
  int64_t bytes = 0, read_bytes = 0, write_bytes = 0;
  int64_t opens = 0, stats = 0;
  std::map<int, int64_t> ost_bytes;        // this job's bytes per OST index (whole run)
  std::map<int, int64_t> ost_total_bytes;  // all bytes per OST in the job's window
  int64_t fs_bytes = 0;                    // all OSTs, job's window
  int64_t fs_opens = 0, fs_stats = 0;      // all MDTs, job's window (mds.open, mds.getattr)
  std::map<int, int64_t> fwd_bytes;        // this job's bytes per forwarding node
  // The injected slow servers (OstName / FwdName) that some rank of this job
  // moved data through while the fault held.
  std::set<std::string> slow_servers;
};

// An injected fault as the simulator applied it.
struct FaultTruth {
  std::string kind;  // ost or forwarding
  std::string name;  // simfs-OST0005, fwd001
  double factor = 1;
  int64_t from_ns = 0, to_ns = 0;  // [from, to), clipped to the run
};

struct SimResult {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  std::map<std::string, uint64_t> lines_by_dataset;
  std::vector<JobTruth> jobs;
  std::vector<FileLayout> layouts;
  std::vector<FilePerf> file_perf;
  std::vector<FaultTruth> faults;
};

std::string NodeName(int i);  // "cn00017"
std::string FwdName(int i);   // "fwd017"
std::string OstName(const std::string& fs, int i);  // "simfs-OST0011" (hex, as Lustre)
std::string MdtName(const std::string& fs, int i);
int FwdOf(const Config& cfg, int node);  // node -> forwarding node index

// Emits the records, one JSON line (without '\n') per call of out, in time
// order (second by second). Stops at out's first error and returns it.
Status Simulate(const Config& cfg, const std::function<Status(std::string_view line)>& out, SimResult* result);

// Simulate() straight into a store with a bulk path (the embedded SQLite
// store), in validated batches of 8,192 records; a record the schema refuses
// is an Internal error (a simulator bug).
Status SimulateIntoStore(const Config& cfg, Store& store, SimResult* result, AppendStats* stats = nullptr);
// Simulate() to a sink (a file, stdout, tcp://, Elasticsearch), 4,096 lines a
// Send, then Flush.
Status SimulateToSink(const Config& cfg, RecordSink& sink, SimResult* result);

// What an administrator's tools would put in the job database: migrates it,
// then upserts the jobs (numeric ids only: Invalid otherwise) and their OSTs,
// the node -> forwarding map, the file system's OSTs and the file layouts.
Status WriteToJobDb(JobDb& db, const Config& cfg, const SimResult& r);

// The side files: the job list and maps as JSON (what --mysql would get),
// layouts as `lfs getstripe` prints them, per-file performance as CSV
// `file,bytes,seconds,osts` (osts ';'-separated OST indices).
std::string MapsJson(const Config& cfg, const SimResult& r);
std::string GetstripeText(const SimResult& r);
std::string FilePerfCsv(const SimResult& r);
// The ground truth (SimResult::jobs) as JSON, for people and scripts.
std::string TruthJson(const SimResult& r);
// JOB_ID<TAB>COMMAND LINE per job, as `iosonar lassi --apps` and `iosonar anomaly --apps` read it.
std::string AppsText(const Config& cfg);
// The command line a job runs (JobSpec::command, or "sim MODE").
std::string CommandOf(const JobSpec& s);

}  // namespace iosonar::sim
