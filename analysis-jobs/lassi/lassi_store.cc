#include "analysis-jobs/lassi/lassi_store.h"

#include <array>
#include <cstdint>
#include <map>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/records/fields.h"

namespace iosonar::lassi {

std::string FsOf(std::string_view fs_field, std::string_view target) {
  if (!fs_field.empty()) return std::string(fs_field);
  auto p = target.rfind('-');
  return std::string(p == std::string_view::npos ? target : target.substr(0, p));
}

namespace {
struct Indices {
  int ts, fs, target, reset, job, elapsed;
  std::array<int, kOssOps> oss;
  std::array<int, kMdsOps> mds;
  Indices() {
    ts = field::kTimestamp.index();
    fs = field::kLustreFs.index();
    target = field::kLustreTarget.index();
    reset = field::kLustreReset.index();
    job = field::kJobId.index();
    elapsed = field::kLustreElapsedNs.index();
    for (size_t i = 0; i < kOssOps; ++i) oss[i] = FieldIndex(kOssFields[i]);
    for (size_t i = 0; i < kMdsOps; ++i) mds[i] = FieldIndex(kMdsFields[i]);
  }
};
const Indices& Idx() {
  static const Indices k;
  return k;
}
double Num(const FieldValue& v) { return v.kind == FieldValue::kDouble ? v.d : static_cast<double>(v.i); }
}  // namespace

void AddParsedRecord(const ParsedRecord& rec, Accumulator& acc, const AppOf& app_of) {
  if (!rec.dataset) return;
  const std::string_view ds = rec.dataset->name;
  const bool oss = ds == "iosonar.oss", mds = ds == "iosonar.mds", js = ds == "iosonar.jobstats";
  if (!oss && !mds && !js) return;
  const auto& I = Idx();
  if (rec[I.reset].kind == FieldValue::kBool && rec[I.reset].i) {
    acc.CountReset();
    return;
  }
  OpSums v;
  for (size_t i = 0; i < kOssOps; ++i)
    if (rec[I.oss[i]].kind != FieldValue::kAbsent) v.oss[i] = Num(rec[I.oss[i]]) / (i == 0 || i == 2 ? 1024.0 : 1.0);
  for (size_t i = 0; i < kMdsOps; ++i)
    if (rec[I.mds[i]].kind != FieldValue::kAbsent) v.mds[i] = Num(rec[I.mds[i]]);
  auto str = [&](int k) { return rec[k].kind == FieldValue::kString ? rec[k].s : std::string_view(); };
  const std::string fs = FsOf(str(I.fs), str(I.target));
  const int64_t t = AttributionTime(rec[I.ts].i, rec[I.elapsed].kind == FieldValue::kInt ? rec[I.elapsed].i : 0);
  if (js) {
    const auto job = str(I.job);
    if (job.empty()) return;
    acc.AddJob(fs, job, app_of ? app_of(job) : std::string(), t, v);
  } else {
    acc.AddServer(fs, t, v);
  }
}

namespace {
Status FeedDatasets(Store& store, Accumulator& acc, const AppOf& app_of, const RunOf& run_of,
                    std::initializer_list<const char*> datasets) {
  const Options& o = acc.options();
  std::unordered_map<std::string, uint32_t> job_series;  // "fs\x1fjob" -> series id (app looked up once per job)
  std::string key;  // reused: no allocation per record
  std::string last_fs;
  uint32_t last_fs_id = 0;
  bool have_fs = false;
  for (const char* ds : datasets) {
    const bool js = std::string_view(ds) == "iosonar.jobstats";
    const bool is_oss = std::string_view(ds) == "iosonar.oss";
    ScanQuery q;
    q.dataset = ds;
    q.range.start_ns = o.history_from_ns;
    q.range.end_ns = o.to_ns > INT64_MAX - kMaxElapsedNs ? INT64_MAX : o.to_ns + kMaxElapsedNs;
    q.fields = {field::kTimestamp, field::kLustreFs, field::kLustreTarget, field::kLustreReset,
                js ? field::kJobId : field::kLustreFs, field::kLustreElapsedNs};
    // Only the fields this dataset declares (the store refuses others).
    std::vector<int> oss_col(kOssOps, -1), mds_col(kMdsOps, -1);
    if (is_oss || js)
      for (size_t i = 0; i < kOssOps; ++i) {
        oss_col[i] = static_cast<int>(q.fields.size());
        q.fields.emplace_back(kOssFields[i]);
      }
    if (!is_oss)
      for (size_t i = 0; i < kMdsOps; ++i) {
        mds_col[i] = static_cast<int>(q.fields.size());
        q.fields.emplace_back(kMdsFields[i]);
      }
    Status st = store.Scan(q, [&](const Row& r) {
      if (r.Has(3) && r.Int(3)) {
        acc.CountReset();
        return true;
      }
      OpSums v;
      for (size_t i = 0; i < kOssOps; ++i)
        if (oss_col[i] >= 0 && r.Has(oss_col[i]))
          v.oss[i] = static_cast<double>(r.Int(oss_col[i])) / (i == 0 || i == 2 ? 1024.0 : 1.0);
      for (size_t i = 0; i < kMdsOps; ++i)
        if (mds_col[i] >= 0 && r.Has(mds_col[i])) v.mds[i] = static_cast<double>(r.Int(mds_col[i]));
      std::string_view fs = r.Has(1) ? r.Str(1) : std::string_view();
      if (fs.empty() && r.Has(2)) {
        fs = r.Str(2);
        if (auto p = fs.rfind('-'); p != std::string_view::npos) fs = fs.substr(0, p);
      }
      if (js) {
        if (!r.Has(4)) return true;
        const std::string_view job = r.Str(4);
        key.assign(fs);
        key += '\x1f';
        key += job;
        auto it = job_series.find(key);
        if (it == job_series.end()) {
          const std::string j(job);
          it = job_series.emplace(key, acc.JobSeries(fs, j, app_of ? app_of(j) : std::string())).first;
          if (run_of)
            if (auto run = run_of(j)) acc.SetJobRun(j, run->first, run->second);
        }
        acc.AddJobAt(it->second, AttributionTime(r.Int(0), r.Has(5) ? r.Int(5) : 0), v);
      } else {
        if (!have_fs || fs != last_fs) {
          last_fs = fs;
          last_fs_id = acc.ServerSeries(fs);
          have_fs = true;
        }
        acc.AddServerAt(last_fs_id, AttributionTime(r.Int(0), r.Has(5) ? r.Int(5) : 0), v);
      }
      return true;
    });
    if (!st.ok()) return st;
  }
  return Status::Ok();
}
}  // namespace

Status FeedFromStore(Store& store, Accumulator& acc, const AppOf& app_of, const RunOf& run_of) {
  return FeedDatasets(store, acc, app_of, run_of, {"iosonar.oss", "iosonar.mds", "iosonar.jobstats"});
}

Status FeedFromStoreParallel(const std::function<Result<std::unique_ptr<Store>>()>& open, Accumulator& acc,
                             const AppOf& app_of, const RunOf& run_of) {
  // job_stats (the only scan calling app_of) here; oss + mds in a second thread
  // on its own store handle, into its own accumulator, merged at the end.
  auto other = open();
  if (!other.ok()) return other.status();
  Accumulator side(acc.options());
  Status side_st;
  std::thread t([&] { side_st = FeedDatasets(*other.value(), side, nullptr, nullptr, {"iosonar.oss", "iosonar.mds"}); });
  auto mine = open();
  Status st = mine.ok() ? FeedDatasets(*mine.value(), acc, app_of, run_of, {"iosonar.jobstats"}) : mine.status();
  t.join();
  if (!st.ok()) return st;
  if (!side_st.ok()) return side_st;
  acc.Merge(side);
  return Status::Ok();
}

Result<LassiResult> ComputeFromStore(const std::function<Result<std::unique_ptr<Store>>()>& open, const Options& o,
                                     int scan_threads, const AppOf& app_of, const RunOf& run_of) {
  Accumulator acc(o);
  Status st;
  if (scan_threads == 2) {  // oss+mds | job_stats on two store handles
    st = FeedFromStoreParallel(open, acc, app_of, run_of);
  } else {
    auto store = open();
    st = store.ok() ? FeedFromStore(*store.value(), acc, app_of, run_of) : store.status();
  }
  if (!st.ok()) return st;
  return acc.Compute();
}

Result<LassiResult> ComputeLassi(const std::function<Result<std::unique_ptr<Store>>()>& open, const Options& o,
                                 int scan_threads, const AppSource* apps) {
  if (!apps) return ComputeFromStore(open, o, scan_threads, nullptr, nullptr);
  return ComputeFromStore(
      open, o, scan_threads, [apps](std::string_view job) { return apps->Of(job); },
      [apps](std::string_view job) { return apps->RunOf(job); });
}

}  // namespace iosonar::lassi
