// bench_lassi: LASSi over a month of 5 s samples for 400 OSTs and
// 5 MDTs with 10,000 jobs (target <= 60 s on one core), and the report for a
// day (target <= 5 s).
//
// The records are generated in memory and fed to lassi::Accumulator exactly
// as FeedFromStore feeds it from a store scan (one AddServer per OST/MDT
// record, one AddJob per job_stats record); generation is inside the timed
// loop. A month is 210 M server and ~200 M job_stats records: too many to
// store for a benchmark, so the store scan is not part of this figure (see
// bench_store for the store's scan rate).
// A third phase stores --store-hours of the same system in an embedded
// SQLite store and times FeedFromStore + Compute over it: the end-to-end rate
// through the store, from which a month through the store extrapolates.
//   bench_lassi [--days N] [--osts N] [--jobs N] [--window-s S] [--runs R] [--store-hours H] [--keep-store DIR]
// With --keep-store DIR the stored hours stay in DIR, e.g. for timing
// `iosonar report --store DIR --day 2026-12-07` end to end (--store-hours 24).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <filesystem>
#include <map>

#include "core/records/record.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "analysis-jobs/lassi/lassi.h"
#include "analysis-jobs/lassi/lassi_store.h"
#include "analysis-jobs/lassi/slowdown.h"
#include "analysis-jobs/report/report.h"

using namespace iosonar;

namespace {
constexpr int64_t kS = 1000000000;
double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Job {
  std::string id, app;
  int64_t start, end;
  int ost0;
  uint32_t series = 0;
  double wkb, wops, opens;
};

struct Gen {
  int days = 30, osts = 400, mdts = 5, njobs = 10000;
  int64_t window_s = 3600;
  int64_t t0 = 1795305600LL * kS;  // 2026-11-22T00:00Z
  std::vector<Job> jobs;
  uint64_t server_records = 0, job_records = 0;

  void MakeJobs() {
    std::mt19937_64 rng(1);
    std::exponential_distribution<double> dur(1.0 / (6 * 3600));
    const int64_t span = static_cast<int64_t>(days) * 86400;
    for (int i = 0; i < njobs; ++i) {
      Job j;
      j.id = std::to_string(100000 + i);
      j.app = "./app" + std::to_string(i % 300) + " -i input.nml";
      j.start = t0 + static_cast<int64_t>(rng() % static_cast<uint64_t>(span)) * kS;
      j.end = j.start + static_cast<int64_t>(std::min(dur(rng), 48.0 * 3600) + 60) * kS;
      j.ost0 = static_cast<int>(rng() % static_cast<uint64_t>(osts));
      j.wkb = static_cast<double>(rng() % 20000);
      j.wops = static_cast<double>(rng() % 100);
      j.opens = static_cast<double>(rng() % 50);
      jobs.push_back(std::move(j));
    }
    std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.start < b.start; });
  }

  // Feeds [from, to) of the timeline into acc.
  void Feed(lassi::Accumulator& acc, int64_t from, int64_t to) {
    std::mt19937 rng(2);
    const uint32_t fs_id = acc.ServerSeries("scratch");
    std::vector<Job*> active;
    size_t next = 0;
    lassi::OpSums v, m, jv;
    for (int64_t t = from; t < to; t += 5 * kS) {
      for (int o = 0; o < osts; ++o) {
        const uint32_t r = rng();
        v.oss[0] = static_cast<double>(r & 0xffff);
        v.oss[1] = static_cast<double>((r >> 16) & 0xff);
        v.oss[2] = static_cast<double>((r >> 8) & 0x1ffff);
        v.oss[3] = static_cast<double>(r >> 24);
        v.oss[4] = static_cast<double>(r & 0x3f);
        acc.AddServerAt(fs_id, t, v);
        ++server_records;
      }
      for (int d = 0; d < mdts; ++d) {
        const uint32_t r = rng();
        for (size_t k = 0; k < lassi::kMdsOps; ++k) m.mds[k] = static_cast<double>((r >> k) & 0xff);
        acc.AddServerAt(fs_id, t, m);
        ++server_records;
      }
      while (next < jobs.size() && jobs[next].start <= t) {
        jobs[next].series = acc.JobSeries("scratch", jobs[next].id, jobs[next].app);  // once per job, as FeedFromStore
        active.push_back(&jobs[next++]);
      }
      active.erase(std::remove_if(active.begin(), active.end(), [&](Job* j) { return j->end <= t; }),
                   active.end());
      for (Job* j : active) {
        jv = {};
        jv.oss[2] = j->wkb;
        jv.oss[3] = j->wops;
        for (int k = 0; k < 4; ++k) {  // 4 OSTs
          acc.AddJobAt(j->series, t, jv);
          ++job_records;
        }
        lassi::OpSums jm;
        jm.mds[0] = jm.mds[1] = j->opens;
        acc.AddJobAt(j->series, t, jm);
        ++job_records;
      }
    }
  }
};

// Records of [t0, t0 + hours) as JSON lines, stored; then timed scans.
void StorePhase(Gen& g, int hours, uint64_t month_records, const std::string& keep) {
  namespace fs = std::filesystem;
  const std::string dir =
      keep.empty() ? (fs::temp_directory_path() / ("bench_lassi_" + std::to_string(::getpid()))).string() : keep;
  auto store = OpenSqliteStore(dir);
  if (!store.ok()) {
    std::fprintf(stderr, "store: %s\n", store.status().ToString().c_str());
    return;
  }
  std::mt19937 rng(3);
  std::vector<std::string> lines;
  std::vector<ParsedRecord> recs;
  std::vector<const ParsedRecord*> ptrs;
  uint64_t stored = 0;
  int64_t seq = 0;
  auto flush = [&] {
    recs.resize(lines.size());
    ptrs.clear();
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t n = lines[i].size();
      lines[i].push_back('\0');
      if (ParseRecordInsitu(lines[i].data(), n, &recs[i]).ok()) ptrs.push_back(&recs[i]);
    }
    AppendStats as;
    (void)store.value()->Append(ptrs, &as);
    stored += as.inserted;
    lines.clear();
  };
  std::map<std::string, std::string> apps;
  std::vector<const Job*> active;
  size_t next = 0;
  // Mid-month, so the running jobs are at their steady-state number.
  const int64_t begin = g.t0 + static_cast<int64_t>(g.days / 2) * 86400 * kS;
  const int64_t end = begin + static_cast<int64_t>(hours) * 3600 * kS;
  for (int64_t t = begin; t < end; t += 5 * kS) {
    const std::string ts = FormatIsoMillis(t);
    auto head = [&](const char* ds, const std::string& target) {
      return "{\"@timestamp\":\"" + ts + "\",\"event.dataset\":\"" + ds + "\",\"event.stream\":9,\"event.seq\":" +
             std::to_string(++seq) + ",\"host.name\":\"s\",\"lustre.fs\":\"scratch\",\"lustre.target\":\"" + target + "\"";
    };
    for (int o = 0; o < g.osts; ++o) {
      const uint32_t r = rng();
      lines.push_back(head("iosonar.oss", "scratch-OST" + std::to_string(o)) + ",\"oss.read_bytes\":" +
                      std::to_string((r & 0xffff) << 10) + ",\"oss.read_ops\":" + std::to_string((r >> 16) & 0xff) +
                      ",\"oss.write_bytes\":" + std::to_string(((r >> 8) & 0x1ffff) << 10) +
                      ",\"oss.write_ops\":" + std::to_string(r >> 24) + ",\"oss.other_ops\":" + std::to_string(r & 0x3f) + "}");
    }
    for (int d = 0; d < g.mdts; ++d) {
      const uint32_t r = rng();
      std::string l = head("iosonar.mds", "scratch-MDT" + std::to_string(d));
      for (size_t k = 0; k < lassi::kMdsOps; ++k)
        l += ",\"" + std::string(lassi::kMdsFields[k]) + "\":" + std::to_string((r >> k) & 0xff);
      lines.push_back(l + "}");
    }
    while (next < g.jobs.size() && g.jobs[next].start <= t) {
      apps[g.jobs[next].id] = g.jobs[next].app;
      active.push_back(&g.jobs[next++]);
    }
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Job* j) { return j->end <= t; }), active.end());
    for (const Job* j : active) {
      for (int k = 0; k < 4; ++k)
        lines.push_back(head("iosonar.jobstats", "scratch-OST" + std::to_string((j->ost0 + k) % g.osts)) +
                        ",\"job.id\":\"" + j->id + "\",\"oss.write_bytes\":" +
                        std::to_string(static_cast<int64_t>(j->wkb) << 10) +
                        ",\"oss.write_ops\":" + std::to_string(static_cast<int64_t>(j->wops)) + "}");
      lines.push_back(head("iosonar.jobstats", "scratch-MDT0") + ",\"job.id\":\"" + j->id + "\",\"mds.open\":" +
                      std::to_string(static_cast<int64_t>(j->opens)) + "}");
    }
    if (lines.size() >= 20000) flush();
  }
  flush();
  for (int parallel = 0; parallel < 2; ++parallel) {
    std::vector<double> ts;
    for (int r = 0; r < 3; ++r) {
      lassi::Options o;
      o.window_ns = 3600 * kS;
      o.from_ns = o.history_from_ns = begin;
      o.to_ns = end;
      lassi::Accumulator acc(o);
      auto app_of = [&](std::string_view j) {
        auto it = apps.find(std::string(j));
        return it == apps.end() ? std::string() : it->second;
      };
      const double a = Now();
      Status st = parallel ? lassi::FeedFromStoreParallel([&] { return OpenSqliteStore(dir); }, acc, app_of)
                           : lassi::FeedFromStore(*store.value(), acc, app_of);
      auto res = acc.Compute();
      const double b = Now();
      if (!st.ok()) std::fprintf(stderr, "scan: %s\n", st.ToString().c_str());
      ts.push_back(b - a);
      (void)res;
    }
    std::sort(ts.begin(), ts.end());
    const double rate = static_cast<double>(stored) / ts[1];
    std::printf("through the SQLite store (%s): %llu records (%d h of the system), FeedFromStore%s + Compute median "
                "%.2f s of 3 = %.2f M records/s\n",
                parallel ? "2 threads" : "1 thread", static_cast<unsigned long long>(stored), hours,
                parallel ? "Parallel" : "", ts[1], rate / 1e6);
    if (month_records)
      std::printf("  a month (%.0f M records) at that rate: %.0f s\n", static_cast<double>(month_records) / 1e6,
                  static_cast<double>(month_records) / rate);
  }
  store.value().reset();
  std::error_code ec;
  if (keep.empty()) fs::remove_all(dir, ec);
  else std::printf("  the store is kept in %s (%s to %s)\n", dir.c_str(), FormatIsoMillis(begin).c_str(), FormatIsoMillis(end).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Gen g;
  int runs = 1, store_hours = 1;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--days")) g.days = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--osts")) g.osts = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jobs")) g.njobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--window-s")) g.window_s = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--store-hours")) store_hours = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keep-store")) keep = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_lassi [--days N] [--osts N] [--jobs N] [--window-s S] [--runs R]\n");
      return 2;
    }
  }
  g.MakeJobs();
  std::printf("bench_lassi: %d days of 5 s samples, %d OSTs, %d MDTs, %d jobs, %lld s windows, one thread\n", g.days,
              g.osts, g.mdts, g.njobs, static_cast<long long>(g.window_s));
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    g.server_records = g.job_records = 0;
    lassi::Options o;
    o.window_ns = g.window_s * kS;
    o.from_ns = o.history_from_ns = g.t0;
    o.to_ns = g.t0 + static_cast<int64_t>(g.days) * 86400 * kS;
    lassi::Accumulator acc(o);
    const double a = Now();
    g.Feed(acc, o.from_ns, o.to_ns);
    const double b = Now();
    auto res = acc.Compute();
    const double c = Now();
    times.push_back(c - a);
    std::printf("  run %d: accumulate %.2f s (%llu server + %llu job_stats records, %.1f M records/s), compute %.2f s "
                "(%zu fs, %zu app, %zu job windows); total %.2f s\n",
                r + 1, b - a, static_cast<unsigned long long>(g.server_records),
                static_cast<unsigned long long>(g.job_records),
                static_cast<double>(g.server_records + g.job_records) / (b - a) / 1e6, c - b, res.fs_windows.size(),
                res.app_windows.size(), res.job_windows.size(), c - a);
  }
  const uint64_t month_records = g.server_records + g.job_records;
  std::sort(times.begin(), times.end());
  if (!times.empty())
    std::printf("LASSi month: median %.2f s over %d run(s) (target <= 60 s)\n", times[times.size() / 2], runs);

  // The report for one day: LASSi (hourly) over the day's records, probe
  // slowdown over 6 ops every 5 s, and the rendering.
  {
    lassi::Options o;
    o.window_ns = 3600 * kS;
    o.from_ns = o.history_from_ns = g.t0;
    o.to_ns = g.t0 + 86400 * kS;
    std::vector<double> rt;
    for (int r = 0; r < 3; ++r) {
      lassi::Accumulator acc(o);
      g.Feed(acc, o.from_ns, o.to_ns);
      std::vector<lassi::ProbeSample> ps;
      std::mt19937_64 rng(5);
      std::lognormal_distribution<double> ln(-6, 1);
      for (int64_t t = o.from_ns; t < o.to_ns; t += 5 * kS)
        for (const char* op : {"write", "read", "stat", "read_small", "delete", "create"})
          ps.push_back({"scratch", op, t, ln(rng)});
      const double a = Now();
      report::ReportInput in;
      in.title = "bench day";
      in.lassi = acc.Compute();
      lassi::SlowdownOptions so;
      so.from_ns = o.from_ns;
      so.to_ns = o.to_ns;
      so.intervals_ns = {600 * kS};
      in.slowdown = lassi::ComputeSlowdown(std::move(ps), so);
      auto out = report::RenderReport(in);
      const double b = Now();
      rt.push_back(b - a);
      std::printf("  report run %d: %.3f s (html %zu bytes, json %zu bytes, %zu apps, %zu jobs)\n", r + 1, b - a,
                  out.html.size(), out.json.size(), in.lassi.apps.size(), in.lassi.jobs.size());
    }
    std::sort(rt.begin(), rt.end());
    std::printf("report for a day (after the records are accumulated): median %.3f s of 3 (target <= 5 s)\n", rt[1]);
  }
  if (store_hours > 0) StorePhase(g, store_hours, month_records, keep);
  return 0;
}
