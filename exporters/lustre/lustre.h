// `iosonar lustre`: samples a Lustre node's statistics files every interval
// and emits deltas and rates per target (see docs/lustre.md):
//   iosonar.oss      per OST   obdfilter/*/stats
//   iosonar.mds      per MDT   mdt/*/md_stats
//   iosonar.jobstats per job id per OST/MDT   obdfilter|mdt/*/job_stats
//   iosonar.brw      per target, histogram and changed bucket   brw_stats
//   iosonar.client   per llite mount (llite/*/stats) and per OSC (osc/*/rpc_stats)
//
// Files are found under --proc-root in proc/fs/lustre, sys/fs/lustre and
// sys/kernel/debug/lustre (first hit per target wins; symlinks followed),
// re-listed every sample so targets may appear and vanish; or, with
// --lctl-dump FILE, taken from an `lctl get_param` dump re-read every sample.
//
// Deltas: the first reading of a target is a baseline (no record). A counter
// that went down (or a changed start_time) is a reset: the record says
// lustre.reset=true and carries no deltas, never a negative value. Lustre
// prints only non-zero counters, so a counter that appears counts from 0.
//
// Not thread-safe: the exporter loop's one thread calls Collect.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "exporters/framework/exporter.h"

namespace iosonar::lustre {

struct LustreOptions {
  std::string proc_root = "/";
  std::string lctl_dump;           // read this dump instead of the tree
  int64_t jobstats_max_jobs = 0;  // per target per sample; 0 = no limit
  int64_t jobstats_every = 1;        // read job_stats every N samples
  bool oss = true, mds = true, jobstats = true, brw = true, client = true;
  bool per_file_sources = false;   // self-report per file instead of per kind
  int64_t max_file_bytes = 64ll << 20;  // whole-file reads (job_stats is streamed)
  // Every read on a reader thread with this deadline (read_watchdog.h); 0 = read in the sampling thread.
  int read_timeout_ms = 500;
  std::string listen_metrics;  // HOST:PORT of the Prometheus endpoint ("" = none)
};

std::unique_ptr<exporters::Exporter> MakeLustreExporter(const LustreOptions& o);

// fsname of a target or device name: "lustrefs-OST0000" -> "lustrefs",
// "lustrefs-OST0000-osc-ffff8810" -> "lustrefs", "lustrefs-ffff8810" -> "lustrefs".
std::string FsOf(std::string_view target);

}  // namespace iosonar::lustre

namespace iosonar::exporters {
extern const Descriptor kLustreExporter;
}
