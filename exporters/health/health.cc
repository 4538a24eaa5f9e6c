// `iosonar health`: lfs df and lctl dl -t, run live or read from saved files,
// into iosonar.health records (see health.h for the rules).
#include "exporters/health/health.h"

#include <cstdint>
#include <memory>

#include "core/records/fields.h"
#include "exporters/framework/exporter.h"

namespace iosonar::exporters {

namespace {

using health::DfSnapshot;
using health::DlSnapshot;

constexpr OptionSpec kOptions[] = {
    opt::String("lfs-df", "FILE", nullptr,
                "read saved `lfs df` output (or `lfs df -i`, or the cron format with BEGIN <epoch> lines; .gz is read "
                "through zlib) instead of running `lfs df`"),
    opt::String("lctl-dl-t", "FILE", nullptr, "read saved `lctl dl -t` output instead of running `lctl dl -t`"),
    opt::Duration("timeout", "SECONDS", "30", "kill a command that has not finished after this long (lfs df hangs while a server is down)")
        .Above(0)
        .Max(86400),
    opt::Flag("no-lfs-df", "skip the fullness source"),
    opt::Flag("no-lctl-dl-t", "skip the failover source"),
};

int64_t Ns(int64_t epoch) { return epoch > 0 ? epoch * 1000000000 : 0; }

// Hands a parser's warnings to the context: every warning counts, the first
// ones keep their text.
void ReportWarnings(Context& ctx, const std::string& source, const std::string& where, const health::Warnings& w) {
  for (const auto& t : w.texts) ctx.Warn(source, where + ": " + t);
  for (uint64_t i = w.texts.size(); i < w.count; ++i) ctx.Warn(source, where + ": further malformed lines (text not kept)");
}

class HealthExporter : public Exporter {
 public:
  HealthExporter(const Options& o, int timeout_ms)
      : df_file_(o.Get("lfs-df")),
        dl_file_(o.Get("lctl-dl-t")),
        df_on_(!o.Flag("no-lfs-df")),
        dl_on_(!o.Flag("no-lctl-dl-t")),
        timeout_ms_(timeout_ms) {}

  void Collect(Context& ctx) override {
    if (df_on_) CollectDf(ctx);
    if (dl_on_) CollectDl(ctx);
  }

 private:
  // The source's text, from the file or the command; false after reporting the failure.
  bool Read(SourceTimer& t, const std::string& file, const std::vector<std::string>& argv, std::string* text) {
    std::string err;
    bool ok = file.empty() ? health::RunCommand(argv, text, &err, timeout_ms_) : health::ReadSource(file, text, &err);
    if (!ok) t.Fail(err);
    return ok;
  }

  void CollectDf(Context& ctx) {
    const std::string source = "lfs_df";
    SourceTimer t(ctx, source);
    std::string text;
    if (!Read(t, df_file_, {"lfs", "df"}, &text)) return;
    health::LfsDf df = health::ParseLfsDf(text);
    ReportWarnings(ctx, source, df_file_.empty() ? "lfs df" : df_file_, df.warnings);
    size_t targets = 0;
    for (const DfSnapshot& snap : df.snapshots) {
      const int64_t ts = Ns(snap.epoch);
      for (const auto& x : snap.targets) {
        ++targets;
        Record& r = ctx.Begin(dataset::kHealth, ts);
        r.Str(field::kHealthRecord, "target").Str(field::kLustreFs, x.fs).Str(field::kLustreTarget, x.target);
        r.Str(field::kHealthTargetKind, x.kind).Str(field::kHealthMount, x.mount).Bool(field::kHealthActive, x.active);
        if (x.index >= 0) r.Int(field::kHealthTargetIndex, x.index);
        if (x.inodes) r.Bool(field::kHealthInodes, true);
        if (!x.active) continue;
        Sizes(r, x.inodes, x.total, x.used, x.avail);
        r.Num(field::kHealthUsedPct, x.used_pct());
      }
      for (const auto& f : health::SummarizeFullness(snap)) {
        Record& r = ctx.Begin(dataset::kHealth, ts);
        r.Str(field::kHealthRecord, "fs").Str(field::kLustreFs, f.fs).Str(field::kHealthMount, f.mount);
        if (f.inodes) r.Bool(field::kHealthInodes, true);
        r.Int(field::kHealthOstCount, f.ost_count).Int(field::kHealthMdtCount, f.mdt_count);
        r.Int(field::kHealthInactiveCount, f.inactive_count);
        if (f.ost_count == 0) continue;
        Sizes(r, f.inodes, f.total, f.used, f.avail);
        r.Num(field::kHealthUsedPct, f.avg_pct).Num(field::kHealthUsedPctMin, f.min_pct).Num(field::kHealthUsedPctMax, f.max_pct);
        r.Str(field::kHealthTargetMin, f.min_target).Str(field::kHealthTargetMax, f.max_target);
      }
    }
    if (targets == 0) t.Fail("no OST or MDT lines in " + (df_file_.empty() ? std::string("lfs df output") : df_file_));
  }

  void CollectDl(Context& ctx) {
    const std::string source = "lctl_dl_t";
    SourceTimer t(ctx, source);
    std::string text;
    if (!Read(t, dl_file_, {"lctl", "dl", "-t"}, &text)) return;
    health::LctlDl dl = health::ParseLctlDlT(text);
    ReportWarnings(ctx, source, dl_file_.empty() ? "lctl dl -t" : dl_file_, dl.warnings);
    size_t fss = 0;
    for (const DlSnapshot& snap : dl.snapshots) {
      const int64_t ts = Ns(snap.epoch);
      for (const auto& f : health::GetFailovers(snap)) {
        ++fss;
        Record& r = ctx.Begin(dataset::kHealth, ts);
        r.Str(field::kHealthRecord, "failover").Str(field::kLustreFs, f.fs).Int(field::kHealthOstCount, f.ost_count);
        r.Int(field::kHealthOssCount, static_cast<int64_t>(f.oss.size())).Int(field::kHealthOstPerOssMode, f.mode);
        r.Int(field::kHealthOverloadedOssCount, f.overloaded_oss()).Int(field::kHealthOverloadedOstCount, f.overloaded_ost());
        r.Int(field::kHealthNotUpCount, f.not_up);
        for (const auto& o : f.oss) {
          Record& q = ctx.Begin(dataset::kHealth, ts);
          q.Str(field::kHealthRecord, "oss").Str(field::kLustreFs, f.fs).Str(field::kHealthOss, o.ip);
          q.Int(field::kHealthOstCount, o.ost_count()).Int(field::kHealthOstPerOssMode, f.mode);
          q.Bool(field::kHealthAbnormal, o.abnormal).Bool(field::kHealthOverloaded, o.overloaded);
          q.Num(field::kHealthOverloadFactor, o.overload_factor);
          std::string list;
          for (const auto& tg : o.targets) {
            if (!list.empty()) list += ',';
            list += tg.substr(tg.rfind('-') + 1);
          }
          q.Str(field::kHealthTargets, list);
        }
      }
    }
    if (fss == 0) t.Fail("no osc devices in " + (dl_file_.empty() ? std::string("lctl dl -t output") : dl_file_));
  }

  static void Sizes(Record& r, bool inodes, int64_t total, int64_t used, int64_t avail) {
    if (inodes) {
      r.Int(field::kHealthInodesTotal, total).Int(field::kHealthInodesUsed, used).Int(field::kHealthInodesFree, avail);
      return;
    }
    constexpr int64_t kMaxKib = INT64_MAX / 1024;  // beyond this a byte count does not fit a long
    auto b = [](int64_t kib) { return kib > kMaxKib ? INT64_MAX : kib * 1024; };
    r.Int(field::kHealthBytesTotal, b(total)).Int(field::kHealthBytesUsed, b(used)).Int(field::kHealthBytesAvail, b(avail));
  }

  std::string df_file_, dl_file_;
  bool df_on_, dl_on_;
  int timeout_ms_;
};

Result<std::unique_ptr<Exporter>> Create(const Options& o) {
  if (o.Flag("no-lfs-df") && o.Flag("no-lctl-dl-t")) return Status::Invalid("nothing to do: both sources are switched off");
  return std::unique_ptr<Exporter>(new HealthExporter(o, static_cast<int>(o.Seconds("timeout") * 1000)));
}

}  // namespace

extern const Descriptor kHealthExporter;
const Descriptor kHealthExporter = {
    "health",
    "Lustre health from a client: OST/MDT fullness (lfs df) and OSS failover/overload (lctl dl -t)",
    "Every interval runs `lfs df` and `lctl dl -t` (or reads their saved output: --lfs-df, --lctl-dl-t) and emits\n"
    "iosonar.health records: one per OST/MDT (capacity, used, available, fullness), one per file system\n"
    "(OST count, least/most full OST, average fullness = used/capacity over all OSTs), one per OSS (OSTs served)\n"
    "and one per file system's failover state: an OSS serving more OSTs than the file system's mode is\n"
    "overloaded (TOKIO's rule), with overload factor = served / mode. Saved files in NERSC's cron format\n"
    "(BEGIN <epoch> before each snapshot) give one set of records per snapshot, stamped with its epoch.",
    kOptions,
    60.0,
    &Create,
    nullptr,
};

}  // namespace iosonar::exporters
