#include "analysis-jobs/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/html.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::report {

namespace {

std::string Fmt(double v, int prec = 3) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", prec, v);
  return b;
}
std::string Bytes(double kb) {
  const char* u[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (kb >= 1024 && i < 4) kb /= 1024, ++i;
  return Fmt(kb) + " " + u[i];
}
std::string HhMm(int64_t ns) {
  std::string s = FormatIsoMillis(ns);  // 2018-01-28T08:00:00.000Z
  return s.size() >= 19 ? s.substr(11, 8) : s;
}

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

struct Series {
  std::string name;
  std::vector<std::optional<double>> y;
};

// A line (or stacked bar) chart as inline SVG. xs: window starts (ns).
// The plot area of a chart: where a time and a value are drawn.
struct Frame {
  double L, T, pw, ph;  // left, top, width, height
  int64_t x0, x1;       // the time axis
  double ymax;
  double X(int64_t t) const { return L + pw * static_cast<double>(t - x0) / static_cast<double>(x1 - x0); }
  double Y(double v) const { return T + ph - ph * v / ymax; }
};

// Series number si: stacked bars (on top of *base) or a line with points,
// and its legend entry.
std::string SeriesMarks(const Frame& f, const std::vector<int64_t>& xs, const Series& s, size_t si, bool stacked,
                        int64_t step_ns, double bw, std::vector<double>* base_in) {
  std::string o;
  std::vector<double>& base = *base_in;
  auto X = [&](int64_t t) { return f.X(t); };
  auto Y = [&](double v) { return f.Y(v); };
  const double L = f.L, T = f.T, pw = f.pw;
  const char* col = kColors[si % 10];
  if (stacked) {
    for (size_t i = 0; i < xs.size() && i < s.y.size(); ++i) {
      if (!s.y[i] || !(*s.y[i] > 0)) continue;
      const double y_top = Y(base[i] + *s.y[i]), y_bot = Y(base[i]);
      o += "<rect x=\"" + Fmt(X(xs[i]), 6) + "\" y=\"" + Fmt(y_top, 6) + "\" width=\"" + Fmt(bw, 6) +
           "\" height=\"" + Fmt(std::max(0.5, y_bot - y_top), 6) + "\" fill=\"" + col + "\"><title>" +
           HtmlEscape(s.name) + " " + HhMm(xs[i]) + ": " + Fmt(*s.y[i]) + "</title></rect>";
      base[i] += *s.y[i];
    }
  } else {
    std::string d;
    bool pen = false;
    for (size_t i = 0; i < xs.size() && i < s.y.size(); ++i) {
      if (!s.y[i] || !std::isfinite(*s.y[i])) {
        pen = false;
        continue;
      }
      d += (pen ? " L" : " M") + Fmt(X(xs[i] + step_ns / 2), 6) + " " + Fmt(Y(*s.y[i]), 6);
      pen = true;
    }
    if (!d.empty())
      o += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + col + "\" stroke-width=\"2\"/>";
    for (size_t i = 0; i < xs.size() && i < s.y.size(); ++i)
      if (s.y[i] && std::isfinite(*s.y[i]))
        o += "<circle cx=\"" + Fmt(X(xs[i] + step_ns / 2), 6) + "\" cy=\"" + Fmt(Y(*s.y[i]), 6) + "\" r=\"2.5\" fill=\"" +
             col + "\"/>";
  }
  const double ly = T + 14 + 16 * static_cast<double>(si);
  std::string name = s.name.size() > 28 ? s.name.substr(0, 27) + "..." : s.name;
  o += "<rect x=\"" + Fmt(L + pw + 10, 6) + "\" y=\"" + Fmt(ly - 9, 6) + "\" width=\"10\" height=\"10\" fill=\"" + col +
       "\"/><text x=\"" + Fmt(L + pw + 25, 6) + "\" y=\"" + Fmt(ly, 6) + "\" class=\"a\">" + HtmlEscape(name) +
       "<title>" + HtmlEscape(s.name) + "</title></text>";
  return o;
}

std::string Chart(const std::string& title, const std::vector<int64_t>& xs, const std::vector<Series>& ss,
                  const std::string& ylabel, bool stacked, int64_t step_ns) {
  const double W = 1000, H = 280, L = 70, R = 200, T = 30, B = 40;
  const double pw = W - L - R, ph = H - T - B;
  std::string o = "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" + Fmt(W, 6) +
                  "\" height=\"" + Fmt(H, 6) + "\" viewBox=\"0 0 " + Fmt(W, 6) + " " + Fmt(H, 6) + "\" role=\"img\">";
  o += "<text x=\"" + Fmt(L, 6) + "\" y=\"18\" class=\"t\">" + HtmlEscape(title) + "</text>";
  if (xs.empty() || ss.empty()) {
    o += "<text x=\"" + Fmt(L, 6) + "\" y=\"" + Fmt(T + ph / 2, 6) + "\">no data in this range</text></svg></figure>";
    return o;
  }
  const int64_t x0 = xs.front(), x1 = xs.back() + step_ns;
  double ymax = 0;
  bool any = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    double acc = 0;
    for (const auto& s : ss)
      if (i < s.y.size() && s.y[i] && std::isfinite(*s.y[i])) {
        any = true;
        acc = stacked ? acc + *s.y[i] : std::max(acc, *s.y[i]);
      }
    ymax = std::max(ymax, acc);
  }
  if (!(ymax > 0)) ymax = 1;
  auto X = [&](int64_t t) { return L + pw * static_cast<double>(t - x0) / static_cast<double>(x1 - x0); };
  auto Y = [&](double v) { return T + ph - ph * v / ymax; };
  // axes and grid
  o += "<rect x=\"" + Fmt(L, 6) + "\" y=\"" + Fmt(T, 6) + "\" width=\"" + Fmt(pw, 6) + "\" height=\"" + Fmt(ph, 6) +
       "\" fill=\"#fbfbfb\" stroke=\"#999\"/>";
  for (int k = 0; k <= 4; ++k) {
    const double v = ymax * k / 4;
    o += "<line x1=\"" + Fmt(L, 6) + "\" x2=\"" + Fmt(L + pw, 6) + "\" y1=\"" + Fmt(Y(v), 6) + "\" y2=\"" +
         Fmt(Y(v), 6) + "\" stroke=\"#e3e3e3\"/><text x=\"" + Fmt(L - 6, 6) + "\" y=\"" + Fmt(Y(v) + 4, 6) +
         "\" text-anchor=\"end\" class=\"a\">" + Fmt(v) + "</text>";
  }
  const int ticks = 6;
  for (int k = 0; k <= ticks; ++k) {
    const int64_t t = x0 + (x1 - x0) * k / ticks;
    o += "<text x=\"" + Fmt(X(t), 6) + "\" y=\"" + Fmt(T + ph + 16, 6) + "\" text-anchor=\"middle\" class=\"a\">" +
         HhMm(t) + "</text>";
  }
  o += "<text x=\"14\" y=\"" + Fmt(T + ph / 2, 6) + "\" transform=\"rotate(-90 14 " + Fmt(T + ph / 2, 6) +
       ")\" text-anchor=\"middle\" class=\"a\">" + HtmlEscape(ylabel) + "</text>";
  o += "<text x=\"" + Fmt(L + pw / 2, 6) + "\" y=\"" + Fmt(H - 4, 6) + "\" text-anchor=\"middle\" class=\"a\">time (UTC)</text>";
  if (!any) o += "<text x=\"" + Fmt(L + 10, 6) + "\" y=\"" + Fmt(T + 20, 6) + "\" class=\"a\">undefined in every window</text>";
  const double bw = std::max(1.0, pw * static_cast<double>(step_ns) / static_cast<double>(x1 - x0) * 0.9);
  const Frame f{L, T, pw, ph, x0, x1, ymax};
  std::vector<double> base(xs.size(), 0);
  for (size_t si = 0; si < ss.size(); ++si) o += SeriesMarks(f, xs, ss[si], si, stacked, step_ns, bw, &base);
  o += "</svg></figure>\n";
  return o;
}

// Runtime (x) against the risk the file system carried during each run (y).
std::string Scatter(const lassi::RunCorrelation& c) {
  const double W = 1000, H = 300, L = 70, R = 200, T = 30, B = 40, pw = W - L - R, ph = H - T - B;
  double xmax = 0, ymax = 0;
  for (const auto& r : c.runs) {
    xmax = std::max(xmax, r.runtime_s);
    ymax = std::max({ymax, r.risk_oss, r.risk_mds});
  }
  if (!(xmax > 0)) xmax = 1;
  if (!(ymax > 0)) ymax = 1;
  auto X = [&](double v) { return L + pw * v / xmax; };
  auto Y = [&](double v) { return T + ph - ph * v / ymax; };
  auto pr = [](const lassi::Pearson& p) {
    return "r = " + (p.r ? Fmt(*p.r) : std::string("undefined")) + ", p = " + (p.p ? Fmt(*p.p) : std::string("undefined"));
  };
  std::string o = "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"1000\" height=\"300\" "
                  "viewBox=\"0 0 1000 300\" role=\"img\"><text x=\"70\" y=\"18\" class=\"t\">" +
                  HtmlEscape(c.fs + ": runtime vs file-system risk during the run (LASSi Fig. 6)") + "</text>";
  o += "<rect x=\"70\" y=\"30\" width=\"" + Fmt(pw, 6) + "\" height=\"" + Fmt(ph, 6) + "\" fill=\"#fbfbfb\" stroke=\"#999\"/>";
  for (int k = 0; k <= 4; ++k) {
    o += "<text x=\"64\" y=\"" + Fmt(Y(ymax * k / 4) + 4, 6) + "\" text-anchor=\"end\" class=\"a\">" + Fmt(ymax * k / 4) +
         "</text><text x=\"" + Fmt(X(xmax * k / 4), 6) + "\" y=\"" + Fmt(T + ph + 16, 6) +
         "\" text-anchor=\"middle\" class=\"a\">" + Fmt(xmax * k / 4) + "</text>";
  }
  o += "<text x=\"" + Fmt(L + pw / 2, 6) + "\" y=\"" + Fmt(H - 4, 6) + "\" text-anchor=\"middle\" class=\"a\">runtime (s)</text>";
  for (const auto& r : c.runs) {
    o += "<circle cx=\"" + Fmt(X(r.runtime_s), 6) + "\" cy=\"" + Fmt(Y(r.risk_oss), 6) + "\" r=\"4\" fill=\"" + kColors[0] +
         "\"><title>job " + HtmlEscape(r.job) + " risk_oss " + Fmt(r.risk_oss) + "</title></circle>";
    o += "<circle cx=\"" + Fmt(X(r.runtime_s), 6) + "\" cy=\"" + Fmt(Y(r.risk_mds), 6) + "\" r=\"4\" fill=\"" + kColors[1] +
         "\"><title>job " + HtmlEscape(r.job) + " risk_mds " + Fmt(r.risk_mds) + "</title></circle>";
  }
  o += "<rect x=\"" + Fmt(L + pw + 10, 6) + "\" y=\"35\" width=\"10\" height=\"10\" fill=\"" + kColors[0] + "\"/><text x=\"" +
       Fmt(L + pw + 25, 6) + "\" y=\"44\" class=\"a\">risk_oss: " + HtmlEscape(pr(c.oss)) + "</text>";
  o += "<rect x=\"" + Fmt(L + pw + 10, 6) + "\" y=\"51\" width=\"10\" height=\"10\" fill=\"" + kColors[1] + "\"/><text x=\"" +
       Fmt(L + pw + 25, 6) + "\" y=\"60\" class=\"a\">risk_mds: " + HtmlEscape(pr(c.mds)) + "</text>";
  return o + "</svg></figure>\n";
}

struct FsView {
  std::vector<int64_t> xs;  // window starts
  std::map<int64_t, size_t> at;
};

FsView Windows(const lassi::LassiResult& r, const std::string& fs) {
  std::set<int64_t> ts;
  for (const auto& w : r.fs_windows)
    if (w.fs == fs) ts.insert(w.start_ns);
  for (const auto& w : r.app_windows)
    if (w.fs == fs) ts.insert(w.start_ns);
  FsView v;
  v.xs.assign(ts.begin(), ts.end());
  for (size_t i = 0; i < v.xs.size(); ++i) v.at[v.xs[i]] = i;
  return v;
}

// Top apps by a key, the rest summed into "other apps".
std::vector<Series> StackedApps(const lassi::LassiResult& r, const std::string& fs, const FsView& v, bool oss, size_t top) {
  std::map<std::string, double> tot;
  for (const auto& w : r.app_windows)
    if (w.fs == fs) tot[w.target] += oss ? w.risk_oss : w.risk_mds;
  std::vector<std::pair<double, std::string>> order;
  for (auto& [a, t] : tot)
    if (t > 0) order.emplace_back(-t, a);
  std::sort(order.begin(), order.end());
  std::map<std::string, size_t> idx;
  std::vector<Series> ss;
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    idx[order[i].second] = ss.size();
    ss.push_back({order[i].second, std::vector<std::optional<double>>(v.xs.size())});
  }
  if (order.size() > top) ss.push_back({"other applications", std::vector<std::optional<double>>(v.xs.size())});
  for (const auto& w : r.app_windows) {
    if (w.fs != fs) continue;
    const double x = oss ? w.risk_oss : w.risk_mds;
    if (!(x > 0)) continue;
    auto it = idx.find(w.target);
    const size_t si = it != idx.end() ? it->second : ss.size() - 1;
    if (it == idx.end() && order.size() <= top) continue;
    auto& y = ss[si].y[v.at.at(w.start_ns)];
    y = y.value_or(0) + x;
  }
  return ss;
}

std::string Cell(const std::string& s) { return "<td>" + HtmlEscape(s) + "</td>"; }
std::string NumCell(double v) { return "<td class=\"n\">" + Fmt(v) + "</td>"; }

std::vector<lassi::TargetTotal> TopBy(std::vector<lassi::TargetTotal> v, bool by_volume, size_t n) {
  std::sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
    const double ka = by_volume ? a.read_kb + a.write_kb : a.risk_oss + a.risk_mds;
    const double kb = by_volume ? b.read_kb + b.write_kb : b.risk_oss + b.risk_mds;
    return ka != kb ? ka > kb : a.target < b.target;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

std::string Pct(double share) { return Fmt(100 * share) + "%"; }

std::string FileName(const std::string& path, const std::string& id) { return path.empty() ? id : path; }

// The findings drishti makes on Darshan logs (misaligned requests,
// stragglers and load imbalance, random access, small requests on shared
// files, no collective MPI-IO), on the job summary: see docs/darshan.md.
template <class Add>
void AddDrishtiRules(const std::string& job, const std::string& app, const std::string& fs,
                     const analysis::JobSummary& s, const AdviceOptions& a, Add& add) {
  const auto& al = s.alignment;
  if (al.data_ops > 0) {
    const double f = static_cast<double>(al.not_aligned) / static_cast<double>(al.data_ops);
    const double m = static_cast<double>(al.mem_not_aligned) / static_cast<double>(al.data_ops);
    if (f > a.misaligned_share || m > a.misaligned_share) {
      std::string ev = std::to_string(al.not_aligned) + " of " + std::to_string(al.data_ops) +
                       " POSIX data ops (" + Pct(f) + ") at file offsets not aligned to " +
                       std::to_string(al.alignment) + " bytes; " +
                       std::to_string(al.mem_not_aligned) + " (" + Pct(m) + ") from buffers not aligned to " +
                       std::to_string(al.mem_alignment) + " bytes";
      add({job, app, fs, "misaligned requests", ev,
           "Align each request's offset and size to the file system's block or stripe size (lfs getstripe; HDF5 "
           "H5Pset_alignment, MPI-IO striping_unit with collective buffering) and allocate buffers with "
           "posix_memalign."});
    }
  }
  for (const auto& x : s.imbalanced_files) {
    if (x.kind == "stragglers" && x.layer == "posix") {
      add({job, app, fs, "stragglers",
           FileName(x.path, x.id) + ": the slowest rank (" + std::to_string(x.slowest_rank) + ") moved " +
               Bytes(static_cast<double>(x.slowest_bytes) / 1024) + " in " + Fmt(x.slowest_s) +
               " s, the fastest (" + std::to_string(x.fastest_rank) + ") " +
               Bytes(static_cast<double>(x.fastest_bytes) / 1024) + " in " + Fmt(x.fastest_s) +
               " s: a difference of " + Pct(x.bytes_imbalance) + " of the file's bytes and " +
               Pct(x.time_imbalance) + " of its I/O time",
           "Give every rank the same share of the shared file's I/O (equal block sizes), or let MPI-IO collective "
           "buffering (romio_cb_write/read=enable) or a few aggregator ranks do it; look for a rank that also "
           "writes headers or metadata."});
    } else if (x.kind == "processes") {
      add({job, app, fs, "load imbalance",
           FileName(x.path, x.id) + ": " + std::to_string(x.processes) + " processes " +
               (x.direction == "write" ? "wrote" : "read") + " between " +
               Bytes(static_cast<double>(x.min_bytes) / 1024) + " and " +
               Bytes(static_cast<double>(x.max_bytes) / 1024) + " each (" + Pct(x.bytes_imbalance) +
               " imbalance)",
           "Spread the file's I/O evenly over the processes that use it, or have one aggregator per node do it "
           "(MPI-IO collective buffering)."});
    }
  }
  for (const auto* d : {&s.write, &s.read}) {
    const double share = 1 - d->sequential_share;
    const double random = share * static_cast<double>(d->ops);
    if (d->ops >= a.random_ops && share > a.random_share && random >= static_cast<double>(a.random_ops))
      add({job, app, fs, "random access",
           std::to_string(static_cast<uint64_t>(std::llround(random))) + " of " + std::to_string(d->ops) + " " +
               (d == &s.write ? "writes" : "reads") +
               " (" + Pct(share) + ") did not continue where the previous one ended",
           "Access files in offset order (sort requests, read whole blocks and pick from memory); for scattered "
           "small records use an I/O library with collective I/O (MPI-IO, HDF5) or a key-value or database "
           "format."});
  }
  for (int w = 1; w >= 0; --w) {
    const uint64_t ops = w ? s.shared_small_write_ops : s.shared_small_read_ops;
    const auto& files = w ? s.shared_small_write : s.shared_small_read;
    if (ops >= a.shared_small_ops && !files.empty())
      add({job, app, fs, "small requests on shared files",
           std::to_string(ops) + " " + (w ? "writes" : "reads") + " of at most 1 MiB on average to " +
               std::to_string(files.size()) + " file(s) shared by several processes, e.g. " +
               FileName(files[0].path, files[0].id) + " (" + std::to_string(files[0].processes) + " processes)",
           "Use MPI-IO collective I/O (MPI_File_write_all, romio_cb_write=enable) so a few aggregators write "
           "large contiguous blocks, or buffer each process's pieces into requests of 1 MiB or more."});
  }
  for (int w = 1; w >= 0; --w) {
    const auto& m = w ? s.mpiio.write : s.mpiio.read;
    if (s.mpiio.records > 0 && m.collective_ops == 0 && m.ops > a.independent_ops)
      add({job, app, fs, "no collective MPI-IO",
           std::to_string(m.ops) + " independent MPI-IO " + (w ? "writes" : "reads") +
               ", no collective one",
           "Use the collective calls (MPI_File_write_all / read_all, or H5Pset_dxpl_mpio(H5FD_MPIO_COLLECTIVE)) "
           "so MPI-IO can aggregate the ranks' requests."});
  }
}

}  // namespace

std::vector<Advice> FindAdvice(const ReportInput& in) {
  std::vector<Advice> out;
  const auto& a = in.advice;
  std::set<std::pair<std::string, std::string>> seen;  // (job, kind)
  auto add = [&](Advice x) {
    if (seen.insert({x.job, x.kind}).second) out.push_back(std::move(x));
  };
  std::map<std::string, std::pair<std::string, std::string>> job_app;  // job -> (app, fs)
  for (const auto& j : in.lassi.jobs) job_app[j.target] = {j.app, j.fs};
  for (const auto& [job, s] : in.summaries) {
    auto ja = job_app.count(job) ? job_app[job] : std::pair<std::string, std::string>{};
    for (const auto* m : {&s.mode_write, &s.mode_read}) {
      if (m->mode == "N-1" && m->processes >= a.n1_processes)
        add({job, ja.first, ja.second, "N-1 with many processes",
             std::to_string(m->processes) + " processes " + (m == &s.mode_write ? "write" : "read") +
                 " one shared file (" + m->explanation + ")",
             "Use MPI-IO collective buffering (e.g. romio_cb_write=enable) or let a few aggregator ranks do the I/O "
             "(N-M); stripe the shared file over many OSTs (lfs setstripe -c -1) and align each rank's requests to "
             "the stripe size."});
    }
    for (const auto* d : {&s.write, &s.read}) {
      if (d->ops >= a.min_ops && d->avg_request_bytes > 0 && d->avg_request_bytes < a.small_request_bytes)
        add({job, ja.first, ja.second, "small requests",
             Fmt(static_cast<double>(d->ops)) + " " + (d == &s.write ? "writes" : "reads") + " of " +
                 Fmt(d->avg_request_bytes / 1024) + " KiB on average",
             "Buffer the I/O into requests of 1 MiB or more (Lustre's optimum; LASSi ops metric 1): larger "
             "application buffers, stdio setvbuf, or an I/O library (HDF5, NetCDF, MPI-IO) that aggregates."});
    }
    AddDrishtiRules(job, ja.first, ja.second, s, a, add);
    if (s.meta_ops >= a.meta_ops && s.meta_ops_per_s > 100)
      add({job, ja.first, ja.second, "metadata-heavy",
           Fmt(static_cast<double>(s.meta_ops)) + " metadata ops, " + Fmt(s.meta_ops_per_s) + " per second",
           "Keep small-file and scratch metadata work off the parallel file system (node-local /tmp or /dev/shm), "
           "pack many small files into one (tar, HDF5), open files once and keep them open, avoid stat/ls loops."});
  }
  // From LASSi's job totals (job_stats), for jobs without trace records too.
  for (const auto& j : in.lassi.jobs) {
    const double ops = j.read_ops + j.write_ops, kb = j.read_kb + j.write_kb;
    if (ops >= static_cast<double>(a.min_ops) && kb > 0 && kb * 1024 / ops < a.small_request_bytes)
      add({j.target, j.app, j.fs, "small requests",
           "LASSi ops " + Fmt(ops * 1024 / kb) + " (" + Fmt(ops) + " data ops for " + Bytes(kb) + ", " +
               Fmt(kb / ops) + " KiB per op)",
           "Buffer the I/O into requests of 1 MiB or more (Lustre's optimum; LASSi ops metric 1): larger "
           "application buffers, stdio setvbuf, or an I/O library (HDF5, NetCDF, MPI-IO) that aggregates."});
    const double mib = std::max(kb / 1024, 1.0);
    if (j.meta_ops >= static_cast<double>(a.meta_ops) && j.meta_ops / mib >= a.meta_ops_per_mib)
      add({j.target, j.app, j.fs, "metadata-heavy",
           Fmt(j.meta_ops) + " metadata ops for " + Bytes(kb) + " moved; risk_mds " + Fmt(j.risk_mds),
           "Keep small-file and scratch metadata work off the parallel file system (node-local /tmp or /dev/shm), "
           "pack many small files into one (tar, HDF5), open files once and keep them open, avoid stat/ls loops."});
  }
  return out;
}

namespace {

// The report as it is written: the HTML page and the plain-text summary, section by section.
struct Doc {
  std::string h, t;  // HTML, text
};

void RenderHead(const ReportInput& in, const std::string& window, Doc* d) {
  const auto& r = in.lassi;
  std::string& h = d->h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>iosonar I/O report " +
       HtmlEscape(in.title) + "</title>\n<style>body{font-family:sans-serif;margin:20px;color:#222}"
       "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}h3{font-size:15px}"
       "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px}"
       "th{background:#eee}td.n{text-align:right;font-variant-numeric:tabular-nums}"
       ".t{font-size:14px;font-weight:bold}.a{font-size:11px;fill:#333}figure{margin:8px 0}"
       ".note{color:#555;font-size:13px}.warn{color:#a00;font-size:15px;border:2px solid #a00;padding:6px}</style></head>\n<body>\n";
  h += "<h1>I/O report " + HtmlEscape(in.title) + "</h1>\n<p class=\"note\">" + HtmlEscape(FormatIsoMillis(r.opt.from_ns)) +
       " to " + HtmlEscape(FormatIsoMillis(r.opt.to_ns)) + " (UTC); LASSi windows of " + window + ", alpha = " +
       Fmt(r.opt.alpha) + ". avg_fs (per run-hour: LASSi's application is one run) from the baseline " +
       HtmlEscape(lassi::BaselineDescription(r.baseline)) +
       ". risk = sum of the positive (x - alpha*avg_fs)/(alpha*avg_fs) over the ops, per run and window; "
       "an application's (command's) risk is the sum of its runs' risks, never the risk of their summed ops, "
       "and a file system's risk in a window the sum over its runs; 0 is normal. "
       "ops quality = ops*1024/KiB: 1 is optimal (1 MiB requests), much more than 1 means small requests.</p>\n";
  const std::string warn = lassi::BaselineWarning(r);
  if (!warn.empty())
    h += "<p class=\"warn\" id=\"baseline-warning\"><b>WARNING:</b> " + HtmlEscape(warn) + "</p>\n";
  d->t += "iosonar I/O report " + in.title + "\n" + FormatIsoMillis(r.opt.from_ns) + " to " +
          FormatIsoMillis(r.opt.to_ns) + " UTC, windows of " + window + ", alpha " + Fmt(r.opt.alpha) +
          "\nLASSi baseline (avg_fs): " + lassi::BaselineDescription(r.baseline) + "\n" +
          (warn.empty() ? "" : "WARNING: " + warn + "\n") + "\n";
}

// One file system: risk over the windows, risk by application, ops quality,
// the per-window statistics; the peaks in the text.
void RenderFileSystem(const lassi::LassiResult& r, const std::string& fs, Doc* d) {
  std::string &h = d->h, &t = d->t;
  const FsView v = Windows(r, fs);
  Series so{"risk_oss", std::vector<std::optional<double>>(v.xs.size())},
      sm{"risk_mds", std::vector<std::optional<double>>(v.xs.size())},
      qr{"read_kb_ops", std::vector<std::optional<double>>(v.xs.size())},
      qw{"write_kb_ops", std::vector<std::optional<double>>(v.xs.size())};
  double peak_o = 0, peak_m = 0;
  int64_t at_o = 0, at_m = 0;
  size_t risky = 0, nwin = 0;
  bool have_ops = false;
  for (const auto& w : r.fs_windows) {
    if (w.fs != fs) continue;
    const size_t i = v.at.at(w.start_ns);
    so.y[i] = w.risk_oss;
    sm.y[i] = w.risk_mds;
    qr.y[i] = w.read_kb_ops;
    qw.y[i] = w.write_kb_ops;
    have_ops |= w.x.oss[1].has_value() || w.x.oss[3].has_value();
    if (w.risk_oss > peak_o) peak_o = w.risk_oss, at_o = w.start_ns;
    if (w.risk_mds > peak_m) peak_m = w.risk_mds, at_m = w.start_ns;
    risky += (w.risk_oss + w.risk_mds) > 0;
    ++nwin;
  }
  h += "<h2>File system " + HtmlEscape(fs) + "</h2>\n";
  bool server_basis = false;
  for (const auto& w : r.fs_windows) server_basis |= w.fs == fs && w.server_basis;
  h += Chart(fs + ": risk_oss and risk_mds (LASSi Fig. 2" +
                 (server_basis ? std::string("; no job_stats: its server windows against their mean)")
                               : std::string(": the sum of its applications' risks per window)")),
             v.xs, {so, sm}, "risk", false, r.opt.window_ns);
  const auto sa = StackedApps(r, fs, v, true, 8), sb = StackedApps(r, fs, v, false, 8);
  if (!sa.empty() || !sb.empty()) {
    h += Chart(fs + ": risk_oss by application (LASSi Fig. 3)", v.xs, sa, "risk_oss", true, r.opt.window_ns);
    h += Chart(fs + ": risk_mds by application (LASSi Fig. 4)", v.xs, sb, "risk_mds", true, r.opt.window_ns);
  } else {
    h += "<p class=\"note\">No job_stats records for " + HtmlEscape(fs) +
         ": the risk cannot be attributed to applications.</p>\n";
  }
  h += Chart(fs + ": read and write ops quality (LASSi Fig. 5: read_kb_ops, write_kb_ops = ops per MiB moved; "
                  "1 = optimal 1 MiB requests)",
             v.xs, {qr, qw}, "ops per MiB",
             false, r.opt.window_ns);
  if (!have_ops)
    h += "<p class=\"note\">The source has no OST op counts (e.g. LMT records bytes only): read_ops and write_ops "
         "are unknown, so the ops quality is undefined and read_ops/write_ops add no risk.</p>\n";
  // Tables 1-2
  for (const auto& st : r.fs_stats) {
    if (st.fs != fs) continue;
    const std::string per = st.per_app_hour ? "application window" : "server window (no job_stats)";
    h += "<h3>Per-" + per + " statistics (" + std::to_string(st.windows) + " " + per + "s in the range; LASSi Tables 1-2)</h3>\n"
         "<table><tr><th>op</th><th>mean per " + per + "</th><th>c_v = sd/mean</th></tr>";
    for (const auto& o : st.ops)
      h += "<tr>" + Cell(o.op) + NumCell(o.stat.mean) + "<td class=\"n\">" + (o.stat.cv ? Fmt(*o.stat.cv) : "-") +
           "</td></tr>";
    h += "</table>\n";
  }
  t += "File system " + fs + ": " + std::to_string(nwin) + " windows, " + std::to_string(risky) +
       " with risk > 0\n  peak risk_oss " + Fmt(peak_o) + (peak_o > 0 ? " at " + FormatIsoMillis(at_o) : "") +
       "\n  peak risk_mds " + Fmt(peak_m) + (peak_m > 0 ? " at " + FormatIsoMillis(at_m) : "") + "\n";
  if (!have_ops) t += "  (no OST op counts in the source: ops quality undefined)\n";
}

void RenderSlowdown(const std::vector<lassi::SlowdownRow>& slowdown, const lassi::SlowdownOptions& opt, Doc* d) {
  std::string &h = d->h, &t = d->t;
  h += "<h2>Probe slowdown (latency / t_expected, the op's median latency over the baseline)</h2>\n";
  std::map<std::pair<std::string, int64_t>, std::vector<const lassi::SlowdownRow*>> by;  // (fs, interval)
  std::map<std::string, size_t> kinds;
  // per (fs, host, op): the worst slowdown of the median
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<double, int64_t>> host_worst;
  for (const auto& s : slowdown) {
    if (!s.host.empty()) {
      auto& hw = host_worst[{s.fs, s.host, s.op}];
      if (s.slowdown_median && *s.slowdown_median > hw.first) hw = {*s.slowdown_median, s.start_ns};
      continue;
    }
    by[{s.fs, s.interval_ns}].push_back(&s);
    ++kinds[s.baseline_kind];
  }
  std::string basis;
  for (const auto& [k, n] : kinds) basis += (basis.empty() ? "" : ", ") + std::to_string(n) + " rows: " + k;
  const std::string used = lassi::SlowdownBaselineDescription(opt), warn = lassi::SlowdownBaselineWarning(slowdown, opt);
  h += "<p class=\"note\" id=\"slowdown-baseline\">Baseline median (t_expected): " + HtmlEscape(used) + ". Rows: " +
       HtmlEscape(basis) +
       " (\"stored\": the stored baseline; \"history\": re-read from the records before the report; \"analysed "
       "range\": neither has the op).</p>\n";
  if (!warn.empty())
    h += "<p class=\"warn\" id=\"slowdown-baseline-warning\"><b>WARNING:</b> " + HtmlEscape(warn) + "</p>\n";
  t += "\nProbe slowdown (median latency / baseline median; baseline " + basis + "):\n  t_expected: " + used + "\n";
  if (!warn.empty()) t += "  WARNING: " + warn + "\n";
  for (const auto& [k, rows] : by) {
    std::set<int64_t> ts;
    std::set<std::string> ops;
    for (const auto* s : rows) ts.insert(s->start_ns), ops.insert(s->op);
    std::vector<int64_t> xs(ts.begin(), ts.end());
    std::map<int64_t, size_t> at;
    for (size_t i = 0; i < xs.size(); ++i) at[xs[i]] = i;
    std::vector<Series> ss;
    std::map<std::string, size_t> oi;
    for (const auto& op : ops) oi[op] = ss.size(), ss.push_back({op, std::vector<std::optional<double>>(xs.size())});
    std::map<std::string, std::pair<double, int64_t>> worst;
    for (const auto* s : rows) {
      ss[oi[s->op]].y[at[s->start_ns]] = s->slowdown_median;
      if (s->slowdown_median && *s->slowdown_median > worst[s->op].first)
        worst[s->op] = {*s->slowdown_median, s->start_ns};
    }
    h += Chart(k.first + ": slowdown of the median per op, " + Fmt(static_cast<double>(k.second) / 60e9) +
                   " min intervals",
               xs, ss, "slowdown", false, k.second);
    t += "  " + k.first + " (" + Fmt(static_cast<double>(k.second) / 60e9) + " min):";
    for (const auto& [op, wv] : worst)
      t += " " + op + " max " + Fmt(wv.first) + (wv.first > 0 ? " at " + HhMm(wv.second) : "");
    t += "\n";
  }
  if (!host_worst.empty()) {
    h += "<h3>Per probing host: the highest slowdown of the median (each host against its own baseline median)</h3>\n"
         "<table><tr><th>file system</th><th>host</th><th>op</th><th>max slowdown of the median</th><th>at</th></tr>";
    for (const auto& [k, wv] : host_worst)
      h += "<tr>" + Cell(std::get<0>(k)) + Cell(std::get<1>(k)) + Cell(std::get<2>(k)) + NumCell(wv.first) +
           Cell(wv.first > 0 ? FormatIsoMillis(wv.second) : "-") + "</tr>";
    h += "</table>\n";
  }
}

// The runs of one command against risk (LASSi Table 3, Fig. 6).
void RenderRuns(const lassi::RunCorrelation& c, Doc* d) {
  std::string &h = d->h, &t = d->t;
  h += "<h2>Slowdown analysis: runs of one command</h2>\n" + Scatter(c);
  h += "<table><tr><th>job</th><th>runtime (s)</th><th>risk_oss</th><th>risk_mds</th></tr>";
  for (const auto& run : c.runs)
    h += "<tr>" + Cell(run.job) + NumCell(run.runtime_s) + NumCell(run.risk_oss) + NumCell(run.risk_mds) + "</tr>";
  h += "</table>\n";
  auto pr = [](const lassi::Pearson& p) {
    return "r " + (p.r ? Fmt(*p.r) : std::string("undefined")) + ", p " + (p.p ? Fmt(*p.p) : std::string("undefined"));
  };
  t += "\nSlowdown analysis (" + std::to_string(c.runs.size()) + " runs on " + c.fs + "): runtime vs risk_oss " +
       pr(c.oss) + "; runtime vs risk_mds " + pr(c.mds) + "\n";
}

void RenderTop(const lassi::LassiResult& r, size_t top_n, Doc* d) {
  std::string &h = d->h, &t = d->t;
  auto table = [&](const std::string& title, const std::vector<lassi::TargetTotal>& v, bool jobs) {
    h += "<h3>" + HtmlEscape(title) + "</h3>\n<table><tr><th>fs</th>" +
         std::string(jobs ? "<th>job</th>" : "") +
         "<th>application</th><th>risk_oss</th><th>risk_mds</th><th>read</th><th>written</th><th>data ops</th>"
         "<th>metadata ops</th></tr>";
    for (const auto& x : v)
      h += "<tr>" + Cell(x.fs) + (jobs ? Cell(x.target) : "") + Cell(x.app) + NumCell(x.risk_oss) +
           NumCell(x.risk_mds) + Cell(Bytes(x.read_kb)) + Cell(Bytes(x.write_kb)) + NumCell(x.read_ops + x.write_ops) +
           NumCell(x.meta_ops) + "</tr>";
    h += "</table>\n";
  };
  h += "<h2>Top jobs and applications</h2>\n";
  if (r.jobs.empty()) {
    h += "<p class=\"note\">No job_stats records: no per-job or per-application figures.</p>\n";
  } else {
    const auto jr = TopBy(r.jobs, false, top_n), jv = TopBy(r.jobs, true, top_n);
    const auto ar = TopBy(r.apps, false, top_n), av = TopBy(r.apps, true, top_n);
    table("Top jobs by risk", jr, true);
    table("Top jobs by I/O volume", jv, true);
    table("Top applications by risk", ar, false);
    table("Top applications by I/O volume", av, false);
    t += "\nTop jobs by risk:\n";
    for (const auto& x : jr)
      t += "  " + x.target + " (" + x.fs + ", " + x.app + "): risk_oss " + Fmt(x.risk_oss) + ", risk_mds " +
           Fmt(x.risk_mds) + "\n";
    t += "Top applications by I/O volume:\n";
    for (const auto& x : av) t += "  " + x.app + " (" + x.fs + "): " + Bytes(x.read_kb + x.write_kb) + "\n";
  }
}

void RenderAdvice(const std::vector<Advice>& advice, Doc* d) {
  std::string &h = d->h, &t = d->t;
  h += "<h2>Jobs whose I/O calls for advice</h2>\n";
  t += "\nJobs whose I/O calls for advice:\n";
  if (advice.empty()) {
    h += "<p>None found.</p>\n";
    t += "  none\n";
  } else {
    h += "<table><tr><th>job</th><th>application</th><th>fs</th><th>finding</th><th>evidence</th><th>what to change</th></tr>";
    for (const auto& a : advice) {
      h += "<tr>" + Cell(a.job) + Cell(a.app) + Cell(a.fs) + Cell(a.kind) + Cell(a.evidence) + Cell(a.change) + "</tr>";
      t += "  job " + a.job + (a.app.empty() ? "" : " (" + a.app + ")") + ": " + a.kind + " - " + a.evidence +
           "\n    change: " + a.change + "\n";
    }
    h += "</table>\n";
  }
}

// The LASSi result, the slowdown rows and the advice.
std::string ReportJson(const ReportInput& in, const std::vector<Advice>& advice) {
  const auto& r = in.lassi;
  std::string adv;
  {
    JsonWriter w(&adv);
    w.BeginArray();
    for (const auto& a : advice) {
      KvObject(w, "job", a.job, "app", a.app, "fs", a.fs, "kind", a.kind, "evidence", a.evidence, "change", a.change);
    }
    w.EndArray();
  }
  lassi::SlowdownOptions so = in.slowdown_options;
  so.from_ns = r.opt.from_ns;
  so.to_ns = r.opt.to_ns;
  std::string title;
  JsonWriter(&title).String(in.title);
  std::string warn, sd_warn;
  JsonWriter(&warn).String(lassi::BaselineWarning(r));
  JsonWriter(&sd_warn).String(lassi::SlowdownBaselineWarning(in.slowdown, so));
  return "{\"report\":\"iosonar-report/1\",\"title\":" + title + ",\"baseline_warning\":" + warn +
         ",\"slowdown_baseline_warning\":" + sd_warn +
         ",\"lassi\":" + lassi::ResultToJson(r, false) +
         ",\"slowdown\":" + lassi::SlowdownToJson(in.slowdown, so, false) + ",\"advice\":" + adv + "}\n";
}

}  // namespace

ReportOutput RenderReport(const ReportInput& in) {
  const auto& r = in.lassi;
  std::set<std::string> fss;
  for (const auto& w : r.fs_windows) fss.insert(w.fs);
  for (const auto& w : r.app_windows) fss.insert(w.fs);
  const auto advice = FindAdvice(in);
  Doc d;
  RenderHead(in, Fmt(static_cast<double>(r.opt.window_ns) / 1e9 / 60) + " min", &d);
  for (const auto& fs : fss) RenderFileSystem(r, fs, &d);
  if (fss.empty()) {
    d.h += "<p>No iosonar.oss, iosonar.mds or iosonar.jobstats records in this range.</p>\n";
    d.t += "No server-side records in this range.\n";
  }
  if (!in.slowdown.empty()) RenderSlowdown(in.slowdown, in.slowdown_options, &d);
  if (in.runs) RenderRuns(*in.runs, &d);
  RenderTop(r, in.top_n, &d);
  for (const auto& [html, text] : in.extra_sections) {
    d.h += html;
    d.t += text;
  }
  RenderAdvice(advice, &d);
  d.h += "<script>document.body.setAttribute('data-plots', String(document.querySelectorAll('svg.plot').length));"
         "</script>\n</body></html>\n";
  ReportOutput out;
  out.html = std::move(d.h);
  out.text = std::move(d.t);
  out.json = ReportJson(in, advice);
  return out;
}

Status SummarizeTracedJobs(Store& store, int64_t from_ns, int64_t to_ns,
                           std::map<std::string, analysis::JobSummary>* out) {
  std::set<std::string> jobs;
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.range.start_ns = from_ns;
  q.range.end_ns = to_ns;
  q.fields = {field::kJobId};
  Status st = store.Scan(q, [&](const Row& r) {
    if (r.Has(0)) jobs.insert(std::string(r.Str(0)));
    return jobs.size() < 10000;
  });
  for (const auto& j : jobs) {
    auto s = analysis::SummarizeJob(store, j);
    if (s.ok()) (*out)[j] = std::move(s).value();
  }
  return st;
}

}  // namespace iosonar::report
