// `iosonar probe`: the latency probe as an exporter (see probe.h).
#include "exporters/probe/probe.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/records/fields.h"
#include "exporters/framework/exporter.h"

namespace iosonar::exporters {

namespace {

using probe::Config;
using probe::OpResult;

constexpr OptionSpec kOptions[] = {
    opt::String("dir", "DIR", nullptr, "directory to probe (on the file system of interest); required"),
    opt::Flag("precreate", "create the large file and the pool under --dir, then exit"),
    opt::Bytes("file-size", "BYTES", nullptr,
               "size of the large file (precreate; K/M/G/T; a multiple of 1M); default: 4 times this client's "
               "memory rounded up to a GiB, plus 1 GiB, so the page cache cannot hold it"),
    opt::Int("pool-size", "N", "100000", "number of small files in the pool (precreate; the paper: 100k-200k)"),
    opt::Flag("direct", "O_DIRECT for the 1 MiB data ops or refuse to start (some file systems refuse it, e.g. "
                        "tmpfs before Linux 6.6); the same as --cache-bypass direct"),
    opt::String("cache-bypass", "MODE", "auto",
                "how the data ops bypass the page cache: auto (O_DIRECT where the file system accepts it, else "
                "fdatasync after writes and POSIX_FADV_DONTNEED before data ops), direct, fadvise, none"),
    opt::Flag("allow-small-file",
              "accept a large file not larger than the client's memory with --cache-bypass none (reads may be cached)"),
    opt::Int("seed", "N", nullptr, "seed for the random offsets (default: from host name, pid and start time)").Min(1),
};

Result<Config> ConfigFrom(const Options& o) {
  Config c;
  c.dir = o.Get("dir");
  if (c.dir.empty()) return Status::Invalid("--dir DIR is required (the directory to probe)");
  c.file_size = o.Has("file-size") ? o.Bytes("file-size") : 0;
  c.allow_small_file = o.Flag("allow-small-file");
  c.pool_size = o.Int("pool-size");
  c.direct = o.Flag("direct");
  const std::string b = o.Has("cache-bypass") ? o.Get("cache-bypass") : "auto";
  if (b == "auto") c.bypass = probe::Bypass::kAuto;
  else if (b == "direct") c.bypass = probe::Bypass::kDirect;
  else if (b == "fadvise") c.bypass = probe::Bypass::kFadvise;
  else if (b == "none") c.bypass = probe::Bypass::kNone;
  else return Status::Invalid("--cache-bypass must be auto, direct, fadvise or none, got '" + b + "'");
  if (c.direct && c.bypass != probe::Bypass::kAuto && c.bypass != probe::Bypass::kDirect)
    return Status::Invalid("--direct contradicts --cache-bypass " + b);
  if (o.Has("seed")) c.seed = static_cast<uint64_t>(o.Int("seed"));
  return c;
}

class ProbeExporter : public Exporter {
 public:
  explicit ProbeExporter(Config c) : cfg_(std::move(c)) { ops_.reserve(8); }

  Status Init(Context& ctx) override {
    auto p = probe::Prober::Open(cfg_, ctx.host());
    if (!p.ok()) return p.status();
    prober_ = std::move(p.value());
    if (prober_->bypass() == probe::Bypass::kFadvise && cfg_.bypass == probe::Bypass::kAuto)
      ctx.Warn("probe", "the file system under " + cfg_.dir +
                            " refuses O_DIRECT: the data ops use fdatasync + POSIX_FADV_DONTNEED instead");
    char real[PATH_MAX];
    abs_dir_ = realpath(cfg_.dir.c_str(), real) ? real : cfg_.dir;
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream ss;
    ss << in.rdbuf();
    mount_ = probe::FindMount(ss.str(), abs_dir_);
    return Status::Ok();
  }

  void Collect(Context& ctx) override {
    // The loop keeps an absolute schedule and skips the ticks an overrun
    // covered; count them from the tick times so the data shows them.
    const int64_t iv = ctx.interval_ns() > 0 ? ctx.interval_ns() : 1;
    if (first_mono_ < 0) first_mono_ = ctx.mono_ns();
    const int64_t slot = (ctx.mono_ns() - first_mono_ + iv / 2) / iv;
    if (last_slot_ >= 0 && slot > last_slot_ + 1) skipped_ += slot - last_slot_ - 1;
    last_slot_ = slot;

    SourceTimer t(ctx, "probe");
    prober_->ProbeOnce(&ops_);
    for (const OpResult& op : ops_) {
      Record& r = ctx.Begin(dataset::kProbe, op.start_ns);
      r.Str(field::kProbeOp, op.op).Int(field::kProbeLatencyNs, op.latency_ns).Bool(field::kProbeOk, op.err == 0);
      if (op.err) r.Int(field::kProbeErrno, op.err);
      if (op.bytes) r.Int(field::kProbeBytes, op.bytes);
      if (op.offset >= 0) r.Int(field::kProbeOffset, op.offset);
      if (op.seq >= 0) r.Int(field::kProbeSeq, op.seq);
      r.Str(field::kProbeDir, abs_dir_);
      if (!mount_.mount_point.empty()) r.Str(field::kProbeMount, mount_.mount_point).Str(field::kProbeFsType, mount_.fs_type);
      if (!mount_.lustre_fs.empty()) r.Str(field::kLustreFs, mount_.lustre_fs);
      r.Bool(field::kProbeDirect, prober_->bypass() == probe::Bypass::kDirect)
          .Str(field::kProbeCacheBypass, probe::BypassName(prober_->bypass()))
          .Int(field::kProbeFileBytes, prober_->file_size());
      r.Int(field::kProbeSeed, static_cast<int64_t>(prober_->seed())).Int(field::kProbeSkippedTicks, skipped_);
      if (op.err && t_error_.empty()) t_error_ = std::string(op.op) + ": " + std::strerror(op.err);
    }
    if (!t_error_.empty()) {
      t.Fail(t_error_);
      t_error_.clear();
    }
  }

 private:
  Config cfg_;
  std::unique_ptr<probe::Prober> prober_;
  std::vector<OpResult> ops_;
  std::string abs_dir_;
  probe::MountInfo mount_;
  int64_t first_mono_ = -1, last_slot_ = -1, skipped_ = 0;
  std::string t_error_;
};

Result<std::unique_ptr<Exporter>> Create(const Options& o) {
  auto c = ConfigFrom(o);
  if (!c.ok()) return c.status();
  return std::unique_ptr<Exporter>(new ProbeExporter(std::move(c.value())));
}

int OneShot(const Options& o) {
  if (!o.Flag("precreate")) return -1;
  auto c = ConfigFrom(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s probe: %s\n", ProgramName(), c.status().message().c_str());
    return 2;
  }
  std::string report;
  if (Status s = probe::Precreate(*c, &report); !s.ok()) {
    std::fprintf(stderr, "%s probe --precreate: %s\n", ProgramName(), s.message().c_str());
    return 1;
  }
  if (!o.Flag("quiet")) std::fprintf(stderr, "%s probe: %s\n", ProgramName(), report.c_str());
  return 0;
}

}  // namespace

extern const Descriptor kProbeExporter;
const Descriptor kProbeExporter = {
    "probe",
    "I/O latency probe: time 1 MiB random write/read and small-file stat/read/delete/create every interval",
    "Every interval times, one after another: a 1 MiB write and a 1 MiB read at random 1 MiB-aligned offsets of\n"
    "a large pre-created file, then stat, read and delete of the oldest small file (3901 bytes) of a pool and\n"
    "create + write of a new one (Kunkel & Betke, \"Tracking user-perceived I/O slowdown via probing\").\n"
    "One iosonar.probe record per operation. Run `iosonar probe --precreate --dir DIR` once first.\n"
    "Probes never overlap: an overrun delays the next one and the skipped intervals are counted.",
    kOptions,
    1.0,
    &Create,
    &OneShot,
};

}  // namespace iosonar::exporters
