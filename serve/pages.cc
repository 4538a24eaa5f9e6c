#include "serve/pages.h"

#include <algorithm>
#include <functional>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include <rapidjson/document.h>

#include "core/base/html.h"
#include "core/base/json.h"
#include "core/base/timeutil.h"

namespace iosonar::serve {

namespace {
std::string Capitalized(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}
std::string Words(std::string code) {
  for (auto& c : code)
    if (c == '_') c = ' ';
  return code;
}

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Time(const std::optional<int64_t>& ns) { return ns ? FormatIsoMillis(*ns).substr(0, 19) + "Z" : "-"; }

std::string Head(const std::string& title, const Identity& who) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" + HtmlEscape(title) + " - iosonar</title>"
      "<link rel=\"stylesheet\" href=\"/static/uplot.css\"><link rel=\"stylesheet\" href=\"/static/iosonar.css\">"
      "</head>\n<body><nav><a href=\"/jobs\">My jobs</a>";
  if (who.admin) h += " <a href=\"/admin\">Administration</a>";
  h += "<span class=\"who\">" + HtmlEscape(who.user) + (who.admin ? " (administrator)" : "") + "</span></nav>\n<main>\n";
  return h;
}

const char* kFoot =
    "</main>\n<script src=\"/static/uplot.js\"></script><script src=\"/static/iosonar-axes.js\"></script>"
    "<script src=\"/static/iosonar.js\"></script>\n</body></html>\n";

std::string Cell(const std::string& s, const char* cls = nullptr) {
  return std::string(cls ? "<td class=\"" + std::string(cls) + "\">" : "<td>") + HtmlEscape(s) + "</td>";
}


// ---- the job page's panels drawn from the summary (inline SVG, no script) ----
std::string Count(uint64_t n) {
  std::string d = std::to_string(n), o;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) o += ',';
    o += d[i];
  }
  return o;
}

// Request sizes (Darshan's ten bins), read and write side by side, in ops.
std::string SizeHistSvg(const analysis::JobSummary& s) {
  uint64_t top = 0;
  for (size_t i = 0; i < analysis::kSizeBins; ++i) top = std::max({top, s.read.size_hist[i], s.write.size_hist[i]});
  if (top == 0) return "<p>No read or write requests.</p>\n";
  const int left = 50, bw = 26, gap = 16, H = 200, plot = 150, base = 20 + plot;
  const int W = left + static_cast<int>(analysis::kSizeBins) * (2 * bw + gap) + 10;
  std::string o = "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"panel sizes\" width=\"" +
                  std::to_string(W) + "\" height=\"" + std::to_string(H + 20) + "\" viewBox=\"0 0 " +
                  std::to_string(W) + " " + std::to_string(H + 20) + "\">";
  o += "<line class=\"axis\" x1=\"" + std::to_string(left) + "\" y1=\"" + std::to_string(base) + "\" x2=\"" +
       std::to_string(W - 5) + "\" y2=\"" + std::to_string(base) + "\"/>";
  o += "<text class=\"a\" x=\"" + std::to_string(left - 4) + "\" y=\"" + std::to_string(base) +
       "\" text-anchor=\"end\">0</text><text class=\"a\" x=\"" + std::to_string(left - 4) +
       "\" y=\"24\" text-anchor=\"end\">" + Count(top) + "</text>";
  for (size_t i = 0; i < analysis::kSizeBins; ++i) {
    const int x0 = left + static_cast<int>(i) * (2 * bw + gap) + gap / 2;
    for (int d = 0; d < 2; ++d) {
      const uint64_t n = d ? s.write.size_hist[i] : s.read.size_hist[i];
      const double h = static_cast<double>(plot) * static_cast<double>(n) / static_cast<double>(top);
      const char* dir = d ? "write" : "read";
      const std::string label(analysis::kSizeBinLabels[i]);
      o += std::string("<rect class=\"bar ") + dir + "\" data-dir=\"" + dir + "\" data-bin=\"" + label +
           "\" data-ops=\"" + std::to_string(n) + "\" x=\"" + std::to_string(x0 + d * bw) + "\" y=\"" +
           Fmt("%.1f", base - h) + "\" width=\"" + std::to_string(bw - 2) + "\" height=\"" + Fmt("%.1f", h) +
           "\"><title>" + dir + " " + label + " B: " + Count(n) + " ops</title></rect>";
      if (n)
        o += "<text class=\"v\" x=\"" + std::to_string(x0 + d * bw + bw / 2 - 1) + "\" y=\"" + Fmt("%.1f", base - h - 3) +
             "\" text-anchor=\"middle\">" + Count(n) + "</text>";
    }
    o += "<text class=\"a\" x=\"" + std::to_string(x0 + bw) + "\" y=\"" + std::to_string(base + 14) +
         "\" text-anchor=\"middle\">" + std::string(analysis::kSizeBinLabels[i]) + "</text>";
  }
  o += "</svg><figcaption>Requests by size in bytes (ops): <span class=\"key read\"></span>read, "
       "<span class=\"key write\"></span>write. Darshan's bins; each op counts once at its requested size."
       "</figcaption></figure>\n";
  return o;
}

// Horizontal bars: (label, value, class, value as text) per row; data-op/data-count on each bar.
struct Bar {
  std::string label, cls;
  double value = 0;
  std::string text, key;  // key: data-op (or data-part) value
};
std::string HBarSvg(const char* cls, const char* attr, const std::vector<Bar>& bars) {
  double top = 0;
  for (const auto& b : bars) top = std::max(top, b.value);
  const int left = 190, plot = 480, rh = 18, W = left + plot + 110;
  const int H = static_cast<int>(bars.size()) * rh + 6;
  std::string o = std::string("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"panel ") + cls + "\" width=\"" +
                  std::to_string(W) + "\" height=\"" + std::to_string(H) + "\" viewBox=\"0 0 " + std::to_string(W) +
                  " " + std::to_string(H) + "\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = 3 + static_cast<int>(i) * rh;
    const double w = top > 0 ? plot * b.value / top : 0;
    o += "<text class=\"a\" x=\"" + std::to_string(left - 6) + "\" y=\"" + std::to_string(y + rh - 6) +
         "\" text-anchor=\"end\">" + HtmlEscape(b.label) + "</text>";
    o += "<rect class=\"bar " + b.cls + "\" " + attr + "=\"" + HtmlEscape(b.key) + "\" data-value=\"" +
         Fmt("%.6g", b.value) + "\" x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
         Fmt("%.1f", w) + "\" height=\"" + std::to_string(rh - 4) + "\"><title>" + HtmlEscape(b.label + ": " + b.text) +
         "</title></rect>";
    o += "<text class=\"v\" x=\"" + Fmt("%.1f", left + w + 4) + "\" y=\"" + std::to_string(y + rh - 6) + "\">" +
         HtmlEscape(b.text) + "</text>";
  }
  return o + "</svg>";
}

// Operation counts: data ops per direction, metadata and other ops by call, failed ops by call.
std::string OpCountsSvg(const analysis::JobSummary& s) {
  std::vector<Bar> bars;
  auto add = [&](const std::string& label, const std::string& cls, uint64_t n, const std::string& key) {
    bars.push_back({label, cls, static_cast<double>(n), Count(n), key});
  };
  add("read", "read", s.read.ops, "read");
  add("write", "write", s.write.ops, "write");
  for (const auto& [op, n] : s.meta_by_op) add(op + " (metadata)", "meta", n, op);
  for (const auto& [op, n] : s.other_by_op) add(op, "other", n, op);
  for (const auto& [op, n] : s.errors_by_op) add(op + " failed", "error", n, "error:" + op);
  std::string errnos;
  for (const auto& [e, n] : s.errors_by_errno) errnos += (errnos.empty() ? "" : ", ") + Count(n) + " with errno " + std::to_string(e);
  return "<figure>" + HBarSvg("ops", "data-op", bars) +
         "<figcaption>Operations by call: reads and writes, metadata calls (served by the MDS), other calls, and "
         "failed calls" + (errnos.empty() ? std::string(" (none failed)") : " (" + HtmlEscape(errnos) + ")") +
         ".</figcaption></figure>\n";
}

// I/O time against run time: the average process's seconds in read, write and
// other calls (io.duration_ns summed over its threads) beside the run time.
std::string IoTimeSvg(const analysis::JobSummary& s) {
  const double procs = s.processes ? static_cast<double>(s.processes) : 1;
  const double rd = s.read.busy_s / procs, wr = s.write.busy_s / procs;
  const double other = std::max(0.0, s.busy_s - s.read.busy_s - s.write.busy_s) / procs;
  const double io = rd + wr + other;
  std::vector<Bar> bars = {
      {"run time", "run", s.runtime_s, Fmt("%.2f s", s.runtime_s), "run"},
      {"I/O per process", "io", io, Fmt("%.2f s", io), "io"},
      {"  in reads", "read", rd, Fmt("%.2f s", rd), "read"},
      {"  in writes", "write", wr, Fmt("%.2f s", wr), "write"},
      {"  in metadata, other", "meta", other, Fmt("%.2f s", other), "other"},
      {"seconds with any I/O", "span", s.io_phase_s, Fmt("%.0f s", s.io_phase_s), "io_seconds"},
  };
  const double share = s.runtime_s > 0 ? 100 * io / s.runtime_s : 0;
  return "<figure>" + HBarSvg("iotime", "data-part", bars) + "<figcaption class=\"iotime\" data-share=\"" +
         Fmt("%.1f", share) + "\">The average of the job's " + Count(s.processes) + " processes spent " +
         Fmt("%.2f s", io) + " in I/O calls, " + Fmt("%.1f", share) + " % of the " + Fmt("%.1f s", s.runtime_s) +
         " run (first to last traced call); the rest is computation or waiting outside I/O.</figcaption></figure>\n";
}
}  // namespace

std::string HeatLevel(double v, double top) {
  if (!(v > 0) || !(top > 0)) return "idle";
  if (v >= top * 2 / 3) return "high";
  if (v >= top / 3) return "mid";
  return "low";
}

std::string HumanBytes(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int i = 0;
  while (b >= 1024 && i < 6) {
    b /= 1024;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i ? "%.1f %s" : "%.0f %s", b, u[i]);
  return buf;
}

std::string JobListJson(const std::vector<ListedJob>& jobs) {
  std::string b;
  JsonWriter w(&b, 2);
  w.BeginArray();
  for (const auto& j : jobs) {
    w.BeginObject();
    w.Kv("job_id", j.job_id);
    w.Kv("cluster", j.cluster);
    w.Kv("user", j.user);
    w.Kv("name", j.name);
    w.Kv("state", j.state);
    w.Key("start");
    if (j.start_ns) w.String(FormatIsoMillis(*j.start_ns));
    else w.Null();
    w.Key("end");
    if (j.end_ns) w.String(FormatIsoMillis(*j.end_ns));
    else w.Null();
    w.Key("nodes");
    if (j.nodes) w.Int(*j.nodes);
    else w.Null();
    w.Key("runtime_s");
    if (j.start_ns && j.end_ns) w.Double(static_cast<double>(*j.end_ns - *j.start_ns) / 1e9);
    else w.Null();
    w.Kv("summarized", j.summarized);
    auto num = [&](const char* k, double v) {
      w.Key(k);
      if (j.summarized) w.Double(v);
      else w.Null();
    };
    num("read_bytes", static_cast<double>(j.read_bytes));
    num("write_bytes", static_cast<double>(j.write_bytes));
    num("bytes", static_cast<double>(j.read_bytes + j.write_bytes));
    num("bandwidth", j.bandwidth);
    w.Key("mode");
    if (j.summarized) w.String(j.mode);
    else w.Null();
    w.Key("verdict");
    if (j.verdict) w.String(*j.verdict);
    else w.Null();
    w.EndObject();
  }
  w.EndArray();
  return b + "\n";
}

void SortJobs(std::vector<ListedJob>* jobs, const std::string& sort, bool desc) {
  auto key = [&](const ListedJob& a, const ListedJob& b) -> bool {
    if (sort == "job") return std::stoull(a.job_id) < std::stoull(b.job_id);
    if (sort == "bytes") return a.read_bytes + a.write_bytes < b.read_bytes + b.write_bytes;
    if (sort == "bandwidth") return a.bandwidth < b.bandwidth;
    if (sort == "mode") return a.mode < b.mode;
    if (sort == "verdict") return a.verdict.value_or("") < b.verdict.value_or("");
    if (sort == "name") return a.name < b.name;
    if (sort == "user") return a.user < b.user;
    if (sort == "state") return a.state < b.state;
    if (sort == "nodes") return a.nodes.value_or(0) < b.nodes.value_or(0);
    if (sort == "runtime") {
      auto rt = [](const ListedJob& x) { return x.start_ns && x.end_ns ? *x.end_ns - *x.start_ns : -1; };
      return rt(a) < rt(b);
    }
    return a.start_ns.value_or(0) < b.start_ns.value_or(0);
  };
  std::stable_sort(jobs->begin(), jobs->end(), [&](const ListedJob& a, const ListedJob& b) {
    return desc ? key(b, a) : key(a, b);
  });
}

namespace {
std::string RunTime(const ListedJob& j) {
  if (!j.start_ns || !j.end_ns) return "-";
  const int64_t s = (*j.end_ns - *j.start_ns) / 1000000000;
  char b[48];
  if (s >= 3600) std::snprintf(b, sizeof b, "%" PRId64 " h %02" PRId64 " min", s / 3600, s / 60 % 60);
  else if (s >= 60) std::snprintf(b, sizeof b, "%" PRId64 " min %02" PRId64 " s", s / 60, s % 60);
  else std::snprintf(b, sizeof b, "%" PRId64 " s", s);
  return b;
}
// key=value for the query string (values are checked: letters, digits, '-', '_', '.').
void Param(std::string* out, const char* k, const std::string& v) {
  if (v.empty()) return;
  *out += (out->empty() ? "?" : "&amp;") + std::string(k) + "=" + HtmlEscape(v);
}
}  // namespace

Result<ListQuery> ParseListQuery(const std::map<std::string, std::string>& query) {
  ListQuery q;
  auto get = [&](const char* k) {
    auto it = query.find(k);
    return it == query.end() ? std::string() : it->second;
  };
  auto plain = [](const std::string& v, size_t max) {
    return v.size() <= max && std::all_of(v.begin(), v.end(), [](char c) {
             return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    c == '.' || c == '@';
           });
  };
  q.user = get("user");
  if (!plain(q.user, 64)) return Status::Invalid("user: a user name is letters, digits and . _ - @");
  q.state = get("state");
  if (!plain(q.state, 32)) return Status::Invalid("state: a Slurm state such as COMPLETED or RUNNING");
  for (auto& c : q.state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  q.verdict = get("verdict");
  if (!q.verdict.empty() && q.verdict != "anomalous" && q.verdict != "normal" && q.verdict != "too-few" &&
      q.verdict != "none")
    return Status::Invalid("verdict: anomalous, normal, too-few (earlier runs) or none (not analysed)");
  for (const auto& [k, slot] : {std::pair{"from", &q.from}, std::pair{"to", &q.to}}) {
    *slot = get(k);
    if (!slot->empty() && (slot->size() != 10 || !ParseIso8601(*slot + "T00:00:00Z")))
      return Status::Invalid(std::string(k) + ": a day, YYYY-MM-DD");
  }
  if (std::string p = get("page"); !p.empty()) {
    if (p.size() > 7 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(p) == 0)
      return Status::Invalid("page: a number from 1");
    q.page = std::stoul(p);
  }
  q.sort = get("sort");
  if (!plain(q.sort, 16)) return Status::Invalid("sort: a column name");
  q.desc = get("order") != "asc";
  return q;
}

std::string ListLink(const ListQuery& q, size_t page) {
  std::string out;
  Param(&out, "user", q.user);
  Param(&out, "state", q.state);
  Param(&out, "verdict", q.verdict);
  Param(&out, "from", q.from);
  Param(&out, "to", q.to);
  if (!q.sort.empty()) Param(&out, "sort", q.sort);
  if (!q.sort.empty()) Param(&out, "order", q.desc ? "desc" : "asc");
  if (page > 1) Param(&out, "page", std::to_string(page));
  return out;
}

std::string JobsPage(const Identity& who, const std::vector<ListedJob>& jobs, const ListQuery& q, bool more) {
  std::string h = Head(who.admin ? "All jobs" : "My jobs", who);
  h += std::string("<h1>") + (who.admin ? "All jobs" : "My jobs") + "</h1>\n";
  // The filters: a GET form, so a filtered list is a link like any other.
  auto input = [&](const char* name, const char* label, const std::string& v, const char* extra) {
    h += std::string("<label>") + label + " <input name=\"" + name + "\" value=\"" + HtmlEscape(v) + "\" " + extra +
         "></label> ";
  };
  h += "<form class=\"filters\" method=\"get\" action=\"/jobs\">";
  input("user", "User", q.user, "size=\"10\"");
  input("state", "State", q.state, "size=\"10\" placeholder=\"COMPLETED\"");
  h += "<label>Verdict <select name=\"verdict\">";
  for (const auto& [v, label] : std::vector<std::pair<std::string, std::string>>{
           {"", "any"}, {"anomalous", "I/O anomaly"}, {"normal", "as in earlier runs"},
           {"too-few", "too few earlier runs"}, {"none", "not analysed"}})
    h += "<option value=\"" + HtmlEscape(v) + "\"" + (q.verdict == v ? " selected" : "") + ">" + HtmlEscape(label) +
         "</option>";
  h += "</select></label> ";
  input("from", "Started from", q.from, "type=\"date\"");
  input("to", "to", q.to, "type=\"date\"");
  h += "<button>Show</button></form>\n";
  if (jobs.empty()) {
    h += q.page > 1 ? "<p>No more jobs.</p>\n" : "<p>No jobs.</p>\n";
    return h + kFoot;
  }
  h += "<table class=\"jobs\"><thead><tr>";
  const std::pair<const char*, const char*> cols[] = {{"job", "Job"},     {"name", "Name"},       {"user", "User"},
                                                      {"state", "State"}, {"start", "Start (UTC)"}, {"runtime", "Run time"},
                                                      {"nodes", "Nodes"}, {"bytes", "Bytes"},
                                                      {"bandwidth", "Bandwidth"}, {"mode", "I/O mode"},
                                                      {"verdict", "Verdict"}};
  const std::string cur = q.sort.empty() ? "start" : q.sort;
  for (const auto& [k, label] : cols) {
    const bool on = cur == k;
    ListQuery sorted = q;
    sorted.sort = k;
    sorted.desc = !(on && q.desc);
    h += std::string("<th><a href=\"/jobs") + ListLink(sorted, q.page) + "\">" + label +
         (on ? (q.desc ? " &#9660;" : " &#9650;") : "") + "</a></th>";
  }
  h += "</tr></thead><tbody>\n";
  for (const auto& j : jobs) {
    h += "<tr><td><a href=\"/jobs/" + HtmlEscape(j.job_id) + HtmlEscape(j.cluster_query) + "\">" + HtmlEscape(j.job_id) +
         "</a></td>" + Cell(j.name) +
         Cell(j.user) + Cell(j.state) + Cell(Time(j.start_ns), "t") + Cell(RunTime(j), "n") +
         Cell(j.nodes ? std::to_string(*j.nodes) : "-", "n") +
         Cell(j.summarized ? HumanBytes(static_cast<double>(j.read_bytes + j.write_bytes)) : "-", "n") +
         Cell(j.summarized ? HumanBytes(j.bandwidth) + "/s" : "-", "n") + Cell(j.summarized ? j.mode : "-") +
         Cell(j.verdict.value_or("-")) + "</tr>\n";
  }
  h += "</tbody></table>\n<p class=\"pages\">";
  if (q.page > 1) h += "<a rel=\"prev\" href=\"/jobs" + ListLink(q, q.page - 1) + "\">&larr; newer jobs</a> ";
  h += "page " + std::to_string(q.page);
  if (more) h += " <a rel=\"next\" href=\"/jobs" + ListLink(q, q.page + 1) + "\">older jobs &rarr;</a>";
  h += "</p>\n<p class=\"note\">Numbers for jobs that have been summarized (open a job to summarize it). "
       "Sorting orders the jobs of this page.</p>\n";
  return h + kFoot;
}

std::string AnomalyJson(const AnomalyView& a) {
  std::string b;
  JsonWriter w(&b);
  w.BeginObject();
  w.Kv("analysed", a.analysed);
  w.Key("verdict");
  if (a.analysed) w.String(a.verdict);
  else w.Null();
  w.Kv("history_runs", a.history_runs);
  w.Kv("slowdown", std::round(a.slowdown * 1000) / 1000);
  w.Key("neighbours");
  w.BeginArray();
  for (const auto& n : a.neighbours) {
    w.BeginObject();
    w.Key("job_id");
    if (n.job_id.empty()) w.Null();
    else w.String(n.job_id);
    w.Kv("shared", n.shared);
    w.Kv("evidence", n.evidence);
    w.Kv("md_ops_per_s", std::round(n.md_ops_per_s * 10) / 10);
    w.EndObject();
  }
  w.EndArray();
  w.Key("server_outliers");
  w.BeginArray();
  for (const auto& o : a.outliers) results::WriteJson(w, o, {"kind", "server", "bandwidth_ratio", "cost_s"});
  w.EndArray();
  w.EndObject();
  return b + "\n";
}

std::string AnomalyBoardJson(const AnomalyBoard& bd) {
  std::string b;
  JsonWriter w(&b);
  w.BeginObject();
  w.Key("open_server_anomalies");
  w.BeginArray();
  for (const auto& o : bd.open) {
    w.BeginObject();
    w.Kv("kind", o.kind);
    w.Kv("server", o.server);
    w.Kv("start", o.start);
    w.Kv("end", o.end);
    w.Kv("duration_s", o.duration_s);
    w.Kv("max_bw_ratio", o.max_bw_ratio);
    w.Key("alerted");
    if (o.alerted.empty()) w.Null();
    else w.String(o.alerted);
    w.EndObject();
  }
  w.EndArray();
  w.Key("anomalous_jobs");
  w.BeginArray();
  for (const auto& j : bd.jobs) {
    w.BeginObject();
    w.Kv("cluster", j.cluster);
    w.Kv("job_id", j.job_id);
    w.Kv("computed", j.computed);
    w.Kv("slowdown", std::round(j.slowdown * 1000) / 1000);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return b + "\n";
}

std::string JobPage(const Identity& who, const analysis::JobMeta& meta, const analysis::JobSummary& s,
                    const std::vector<Diagnosis>& diagnosis, const AnomalyView* anomaly,
                    const std::string& cluster_query) {
  const std::string cq = HtmlEscape(cluster_query);
  const JobRecord& j = meta.job;
  const std::string id = std::to_string(j.job_id);
  std::string h = Head("Job " + id, who);
  h += "<h1>Job " + HtmlEscape(id) + " <span class=\"name\">" + HtmlEscape(j.name.value_or("")) + "</span></h1>\n";
  // What cost the job the most time, first: the answer to "why was my job slow, and what do I do?".
  h += "<h2>Diagnosis</h2>\n<ol class=\"diagnosis\">";
  for (const auto& d : diagnosis)
    h += "<li class=\"sev-" + HtmlEscape(d.severity) + "\" data-kind=\"" + HtmlEscape(d.kind) + "\"><span class=\"sev\">" +
         HtmlEscape(d.severity) + "</span> <strong class=\"cause\">" + HtmlEscape(d.cause) + ".</strong> " +
         "<span class=\"evidence\">" + HtmlEscape(d.evidence) + ".</span> <span class=\"action\">" + HtmlEscape(d.action) +
         "</span>" + (d.cost_s > 0 ? Fmt(" <span class=\"cost\">(~%.1f s)</span>", d.cost_s) : std::string()) + "</li>";
  h += "</ol>\n";
  h += "<table class=\"kv\">";
  auto row = [&](const char* k, const std::string& v) { h += std::string("<tr><th>") + k + "</th>" + Cell(v) + "</tr>"; };
  row("User", j.user.value_or("-"));
  row("Account", j.account.value_or("-"));
  row("Cluster", j.cluster);
  row("Command", j.command.value_or("-"));
  row("Nodes", j.node_list.value_or("-") + " (" + std::to_string(meta.nodes.size()) + ")");
  row("Start", Time(j.start_ns));
  row("End", Time(j.end_ns));
  row("State", j.state.value_or("-") + (j.exit_code ? " (exit code " + std::to_string(*j.exit_code) + ")" : ""));
  h += "</table>\n<h2>Summary</h2>\n<table class=\"kv\">";
  // The peak as the chart draws it: the largest bucket of the per-bucket series, per second.
  const double bucket_s = s.series_bucket_ns > 0 ? static_cast<double>(s.series_bucket_ns) / 1e9 : 1;
  auto peak_of = [&](const std::vector<double>& series, const char* direction) {
    double top = 0;
    for (double v : series) top = std::max(top, v);
    top /= bucket_s;
    char bps[32];
    std::snprintf(bps, sizeof bps, "%.0f", top);
    return "<span class=\"peak\" data-dir=\"" + std::string(direction) + "\" data-bps=\"" + bps + "\">" +
           HtmlEscape(HumanBytes(top)) + "/s</span>" + Fmt(" (largest %g s bucket)", bucket_s);
  };
  auto dir = [&](const char* name, const analysis::DirectionStats& d) {
    const std::string over = d.rate_basis == "io phases" ? " over " + std::to_string(d.io_phases) + " I/O phase" +
                                                               (d.io_phases == 1 ? "" : "s") + " (" +
                                                               Fmt("%.0f s", d.io_phases_s) + ")"
                             : d.rate_basis.empty() ? "" : " over the " + d.rate_basis;
    h += std::string("<tr><th>") + name + "</th><td>" +
         HtmlEscape(HumanBytes(static_cast<double>(d.bytes)) + " in " + std::to_string(d.ops) + " ops; average " +
                    HumanBytes(d.bw_avg) + "/s, " + Fmt("%.0f", d.iops) + " IOPS" + over + "; peak ") +
         peak_of(&d == &s.read ? s.series_read : s.series_write, &d == &s.read ? "read" : "write") +
         HtmlEscape("; first-to-last span " + HumanBytes(d.bw_span) + "/s; " + HumanBytes(d.avg_request_bytes) +
                    " per request") +
         "</td></tr>";
  };
  row("Runtime", Fmt("%.1f s", s.runtime_s));
  dir("Read", s.read);
  dir("Write", s.write);
  row("Metadata", std::to_string(s.meta_ops) + " ops, " + Fmt("%.1f", s.meta_ops_per_s) + " per second of I/O");
  row("Processes with I/O", std::to_string(s.processes_with_io) + " on " + std::to_string(s.nodes_with_io) + " nodes");
  row("Files", std::to_string(s.files));
  row("Errors", std::to_string(s.errors));
  h += "</table>\n<h2>I/O mode</h2>\n<table class=\"kv\">";
  for (const auto& [name, m] : {std::pair{"Write", &s.mode_write}, std::pair{"Read", &s.mode_read}}) {
    h += std::string("<tr><th>") + name + "</th><td><strong>" + HtmlEscape(m->mode == "none" ? "No I/O:" : m->mode) +
         "</strong> " + HtmlEscape(m->explanation);
    if (m->mode != "none")
      h += "<br><span class=\"note\">Evidence: " + std::to_string(m->kept_processes) + " of " +
           std::to_string(m->processes) + " processes and " + std::to_string(m->kept_files) + " of " +
           std::to_string(m->files) + " files carry " + Fmt("%.0f", 100 * m->kept_share) + " % of the bytes; " +
           std::to_string(m->private_files) + " of those files are written or read by one process.</span>";
    h += "</td></tr>";
  }
  h += "</table>\n";
  h += "<h2>Request sizes</h2>\n" + SizeHistSvg(s);
  h += "<h2>Operation counts</h2>\n" + OpCountsSvg(s);
  h += "<h2>I/O time against run time</h2>\n" + IoTimeSvg(s);
  h += "<h2>Per-process timeline</h2>\n<div class=\"timeline\" data-job=\"" + HtmlEscape(id) + "\" data-query=\"" +
       cq + "\"></div>\n";
  h += "<h2>Servers the job used</h2>\n<p class=\"note\">The job's bytes through each forwarding node and OST "
       "per second; a server the anomaly analysis found lagging its peers is drawn in red.</p>\n"
       "<div class=\"servers\" data-job=\"" + HtmlEscape(id) + "\" data-query=\"" + cq + "\"></div>\n";
  h += "<h2>Bandwidth and metadata rate across layers</h2>\n"
       "<p class=\"note\">Per second: the job's own client traces, all traffic through its forwarding nodes "
       "(Lustre clients), its OSTs, and the MDTs.</p>\n"
       "<div class=\"chart\" data-chart=\"bandwidth\" data-job=\"" + HtmlEscape(id) + "\" data-query=\"" + cq + "\"></div>\n"
       "<div class=\"chart\" data-chart=\"metadata\" data-job=\"" + HtmlEscape(id) + "\" data-query=\"" + cq + "\"></div>\n"
       "<h2>I/O phases</h2>\n<div class=\"phases\" data-job=\"" + HtmlEscape(id) + "\" data-query=\"" + cq + "\"></div>\n";
  h += "<h2>I/O anomaly</h2>\n";
  if (!anomaly || !anomaly->analysed) {
    h += "<p>Not analysed (`iosonar anomaly` has not compared this job with its application's earlier runs).</p>\n";
  } else {
    const AnomalyView& a = *anomaly;
    const std::string runs = std::to_string(a.history_runs) + (a.history_runs == 1 ? " earlier run" : " earlier runs") +
                             " of the same application at the same scale";
    if (a.verdict == "not_enough_history")
      h += "<p class=\"verdict\"><strong>Not judged</strong>: " + runs +
           ", too few to tell whether this run's I/O was slow.</p>\n";
    else
      h += "<p class=\"verdict\"><strong>" + HtmlEscape(Capitalized(VerdictText(a.verdict))) + "</strong>, against " +
           runs + (a.slowdown > 0 ? Fmt(": slowest phase %.1fx slower than its history", a.slowdown) : std::string()) +
           ".</p>\n";
    if (a.outliers.empty()) {
      std::string un;
      for (const auto& u : a.unjudged) un += (un.empty() ? "" : ", ") + u;
      h += a.ServersJudged() ? "<p>The servers it used were compared with their peers: none lagged.</p>\n"
           : !un.empty() && a.server_check != "none"
               ? "<p>The servers it used were compared with their peers, none lagged, except " + HtmlEscape(un) +
                     ", which could not be compared with peers.</p>\n"
               : std::string("<p>The servers it used could not be compared with their peers (no service-time "
                             "records, no file layouts, or nothing beside them).</p>\n");
    }
    if (!a.neighbours.empty()) {
      h += "<h3>Neighbours that may have interfered</h3>\n<table class=\"files\"><thead><tr><th>Job</th><th>Shared "
           "servers</th><th>Evidence</th><th>Metadata ops/s</th></tr></thead><tbody>";
      for (const auto& n : a.neighbours)
        h += "<tr>" +
             (n.job_id.empty() ? std::string("<td>another job</td>")
                               : "<td><a href=\"/jobs/" + HtmlEscape(n.job_id) + cq + "\">" + HtmlEscape(n.job_id) +
                                     "</a></td>") +
             Cell(n.shared) + Cell(EvidenceText(n.evidence)) + Cell(Fmt("%.0f", n.md_ops_per_s), "n") + "</tr>";
      h += "</tbody></table>\n";
    }
    if (!a.outliers.empty()) {
      h += "<h3>Servers that lagged their peers</h3>\n<table class=\"files\"><thead><tr><th>Kind</th><th>Server</th>"
           "<th>Bandwidth vs peers</th><th>Time lost</th></tr></thead><tbody>";
      for (const auto& o : a.outliers)
        h += "<tr>" + Cell(ServerKindText(o.kind)) + Cell(o.server) + Cell(Fmt("%.2fx", o.bandwidth_ratio), "n") +
             Cell(Fmt("%.1f s", o.cost_s), "n") + "</tr>";
      h += "</tbody></table>\n";
    }
  }
  h += "<h2>Top files</h2>\n";
  if (s.top_files.empty()) h += "<p>No file moved data.</p>\n";
  else {
    h += "<table class=\"files\"><thead><tr><th>File</th><th>Read</th><th>Written</th><th>Processes</th></tr></thead><tbody>";
    for (const auto& f : s.top_files)
      h += "<tr>" + Cell(f.path.empty() ? f.id : f.path) + Cell(HumanBytes(static_cast<double>(f.read_bytes)), "n") +
           Cell(HumanBytes(static_cast<double>(f.write_bytes)), "n") + Cell(std::to_string(f.processes), "n") + "</tr>";
    h += "</tbody></table>\n";
  }
  h += "<p class=\"note\">JSON: <a href=\"/api/jobs/" + HtmlEscape(id) + cq + "\">summary</a>, <a href=\"/api/jobs/" +
       HtmlEscape(id) + "/series" + cq + "\">per-second series</a>, <a href=\"/api/jobs/" + HtmlEscape(id) + "/phases" +
       cq + "\">phases</a>, <a href=\"/api/jobs/" + HtmlEscape(id) + "/timeline" + cq + "\">timelines</a>.</p>\n";
  return h + kFoot;
}

std::string HeatmapJson(const Heatmap& hm) {
  std::string b;
  JsonWriter w(&b);
  w.BeginObject();
  w.Kv("day", FormatIsoMillis(hm.day_start_ns).substr(0, 10));
  w.Kv("unit", "bytes/s");  // of peak; iops: 1/s; io_time_ms, ost_io_wait_ms: ms
  for (const auto& [k, rows] : {std::pair{"osts", &hm.osts}, std::pair{"forwarding", &hm.forwarding}}) {
    w.Key(k);
    w.BeginArray();
    for (const auto& r : *rows) {
      w.BeginObject();
      w.Kv("name", r.name);
      // Rounded: bytes/s and IOPS to 0.1, times to the microsecond; null: not sampled.
      // per: steps per unit (10: to 0.1); dividing by it gives the double nearest the decimal.
      auto series = [&](const char* key, const std::array<double, 24>& a, double per) {
        w.Key(key);
        w.BeginArray();
        for (double v : a) w.Double(std::isfinite(v) ? std::round(v * per) / per : v);
        w.EndArray();
      };
      series("peak", r.peak, 10);
      if (rows == &hm.osts) {
        series("iops", r.iops, 10);
        series("io_time_ms", r.io_ms, 1000);
        series("ost_io_wait_ms", r.wait_ms, 1000);
      }
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return b + "\n";
}

Result<Heatmap> HeatmapFromJson(std::string_view json) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("day") || !d["day"].IsString())
    return Status::Invalid("heatmap JSON: not an object with a day");
  Heatmap h;
  auto day = ParseIso8601(std::string(d["day"].GetString()) + "T00:00:00Z");
  if (!day) return Status::Invalid("heatmap JSON: bad day");
  h.day_start_ns = *day;
  for (const auto& [k, rows] : {std::pair{"osts", &h.osts}, std::pair{"forwarding", &h.forwarding}}) {
    if (!d.HasMember(k) || !d[k].IsArray()) return Status::Invalid(std::string("heatmap JSON: no ") + k);
    for (const auto& r : d[k].GetArray()) {
      if (!r.IsObject() || !r.HasMember("name") || !r["name"].IsString() || !r.HasMember("peak") || !r["peak"].IsArray() ||
          r["peak"].Size() != 24)
        return Status::Invalid(std::string("heatmap JSON: a bad row in ") + k);
      HeatRow row;
      row.name = r["name"].GetString();
      for (rapidjson::SizeType i = 0; i < 24; ++i) row.peak[i] = r["peak"][i].IsNumber() ? r["peak"][i].GetDouble() : 0;
      for (const auto& [key, a] : {std::pair{"iops", &row.iops}, std::pair{"io_time_ms", &row.io_ms},
                                   std::pair{"ost_io_wait_ms", &row.wait_ms}}) {
        if (!r.HasMember(key)) continue;
        const auto& v = r[key];
        if (!v.IsArray() || v.Size() != 24) return Status::Invalid(std::string("heatmap JSON: a bad ") + key + " in " + k);
        for (rapidjson::SizeType i = 0; i < 24; ++i) (*a)[i] = v[i].IsNumber() ? v[i].GetDouble() : HeatRow::kNone;
      }
      rows->push_back(std::move(row));
    }
  }
  return h;
}

namespace {

// One heatmap as inline SVG: a row per server, a column per hour, each cell
// coloured by its level (HeatLevel: Beacon Fig. 5's high/mid/low/idle) and
// titled with its value; a legend with the levels' bounds under it. A cell
// that was not sampled (NaN) is drawn as "none" (and the legend says so).
// series: which of a row's series; fmt: a value with its unit; what: the
// caption's words for the value ("peak bandwidth per hour").
std::string HeatSvg(const char* kind, const std::string& title, const std::string& if_none,
                    const std::vector<HeatRow>& rows, std::array<double, 24> HeatRow::*series = &HeatRow::peak,
                    const std::function<std::string(double)>& fmt = [](double v) { return HumanBytes(v) + "/s"; },
                    const std::string& what = "peak bandwidth per hour", const std::string& idle_text = "no bytes") {
  double top = 0;
  bool any = false, unsampled = false;
  for (const auto& r : rows)
    for (double v : r.*series) {
      if (std::isfinite(v)) {
        any = true;
        top = std::max(top, v);
      } else {
        unsampled = true;
      }
    }
  if (rows.empty() || !any) return "<p>" + HtmlEscape(if_none) + "</p>\n";
  const int cw = 28, ch = 14, left = 150, topm = 24;
  const int W = left + 24 * cw + 10, H = topm + static_cast<int>(rows.size()) * ch + 20;
  std::string o = "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" data-kind=\"" + std::string(kind) + "\" data-rows=\"" +
                  std::to_string(rows.size()) + "\" data-top=\"" + Fmt("%.3f", top) + "\" width=\"" +
                  std::to_string(W) + "\" height=\"" + std::to_string(H) + "\" viewBox=\"0 0 " + std::to_string(W) +
                  " " + std::to_string(H) + "\">";
  for (int hr = 0; hr < 24; hr += 3)
    o += "<text x=\"" + std::to_string(left + hr * cw) + "\" y=\"16\" class=\"a\">" + std::to_string(hr) + "h</text>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const int y = topm + static_cast<int>(i) * ch;
    o += "<text x=\"" + std::to_string(left - 6) + "\" y=\"" + std::to_string(y + ch - 3) +
         "\" text-anchor=\"end\" class=\"a\">" + HtmlEscape(rows[i].name) + "</text>";
    for (int hr = 0; hr < 24; ++hr) {
      const double v = (rows[i].*series)[static_cast<size_t>(hr)];
      const bool sampled = std::isfinite(v);
      const std::string level = sampled ? HeatLevel(v, top) : "none";
      o += "<rect class=\"lv-" + level + "\" data-level=\"" + level + "\" data-server=\"" + HtmlEscape(rows[i].name) +
           "\" data-hour=\"" + std::to_string(hr) + "\" data-value=\"" + (sampled ? Fmt("%.3f", v) : "") +
           (series == &HeatRow::peak ? "\" data-bps=\"" + Fmt("%.0f", v) : std::string()) + "\" x=\"" +
           std::to_string(left + hr * cw) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(cw - 1) +
           "\" height=\"" + std::to_string(ch - 1) + "\"><title>" + HtmlEscape(rows[i].name) + " " + std::to_string(hr) +
           ":00 " + (sampled ? HtmlEscape(fmt(v)) + " (" + level + ")" : std::string("not sampled")) + "</title></rect>";
    }
  }
  o += "</svg><figcaption>" + HtmlEscape(title) + ": " + HtmlEscape(what) + " (the largest: " + HtmlEscape(fmt(top)) +
       ")</figcaption>";
  // The legend: each level's colour and bounds.
  o += "<ul class=\"legend\">";
  std::vector<std::pair<const char*, std::string>> levels = {
      {"high", "at least " + fmt(top * 2 / 3) + " (2/3 of the largest)"},
      {"mid", fmt(top / 3) + " to " + fmt(top * 2 / 3)},
      {"low", "above 0, below " + fmt(top / 3)},
      {"idle", idle_text}};
  if (unsampled) levels.push_back({"none", "not sampled"});
  for (const auto& [lv, text] : levels)
    o += std::string("<li data-level=\"") + lv + "\"><span class=\"swatch lv-" + lv + "\"></span>" + lv + ": " +
         HtmlEscape(text) + "</li>";
  o += "</ul></figure>\n";
  return o;
}

}  // namespace

std::string NeighboursJson(const std::string& job, const Neighbours& n) {
  std::string b;
  JsonWriter w(&b);
  w.BeginObject();
  w.Kv("job_id", job);
  for (const auto& [k, list] : {std::pair{"forwarding", &n.forwarding}, std::pair{"osts", &n.osts}}) {
    w.Key(k);
    w.BeginArray();
    for (const auto& j : *list) {
      w.BeginObject();
      w.Kv("job_id", std::to_string(j.job_id));
      w.Kv("cluster", j.cluster);
      w.Kv("user", j.user.value_or(""));
      w.Kv("name", j.name.value_or(""));
      w.Key("start");
      if (j.start_ns) w.String(FormatIsoMillis(*j.start_ns));
      else w.Null();
      w.Key("end");
      if (j.end_ns) w.String(FormatIsoMillis(*j.end_ns));
      else w.Null();
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return b + "\n";
}

std::string AdminPage(const Identity& who, const Heatmap& hm, const std::string& day, const std::string& job,
                      const Neighbours* n, const AnomalyBoard* board, const std::string& default_cluster,
                      const std::string& job_query) {
  auto cq = [&](const std::string& cluster) {
    return cluster.empty() || cluster == default_cluster ? std::string() : HtmlEscape("?cluster=" + cluster);
  };
  const std::string jq = HtmlEscape(job_query);
  std::string h = Head("Administration", who);
  h += "<h1>Administration</h1>\n<form method=\"get\" action=\"/admin\"><label>Day <input name=\"day\" value=\"" +
       HtmlEscape(day) + "\" pattern=\"[0-9]{4}-[0-9]{2}-[0-9]{2}\"></label> <label>Job <input name=\"job\" value=\"" +
       HtmlEscape(job) + "\" pattern=\"[0-9]*\"></label> <button>Show</button></form>\n";
  h += "<h2>Hourly peak load, " + HtmlEscape(day) + " (UTC)</h2>\n";
  h += HeatSvg("ost", "OSTs", "No OST records this day.", hm.osts);
  h += HeatSvg("forwarding", "Forwarding nodes", "No forwarding-node records this day.", hm.forwarding);
  h += "<h2>OST operations and latency, " + HtmlEscape(day) + " (UTC)</h2>\n<p class=\"note\">Where sampled: IOPS from the "
       "OSTs' stats (<code>oss.read_ops</code> + <code>oss.write_ops</code>), disk I/O time from their brw_stats "
       "(<code>io_time</code> histogram), and the time a request waited for an ost_io thread on the OST's OSS "
       "(<code>oss.ost_io_wait_ns</code>, the same for each OST of one OSS).</p>\n";
  h += HeatSvg("ost-iops", "OSTs", "No OST operation counts this day.", hm.osts, &HeatRow::iops,
               [](double v) { return Fmt("%.0f IOPS", v); }, "peak reads and writes a second per hour", "no operations");
  h += HeatSvg("ost-io-time", "OSTs", "No brw_stats I/O times this day.", hm.osts, &HeatRow::io_ms,
               [](double v) { return Fmt("%.2f ms", v); }, "mean disk I/O time per hour (brw_stats)", "no I/O");
  h += HeatSvg("ost-wait", "OSTs", "No ost_io request waits sampled this day.", hm.osts, &HeatRow::wait_ms,
               [](double v) { return Fmt("%.3f ms", v); }, "largest ost_io request wait of the OST's OSS per hour",
               "no wait");
  if (board) {
    h += "<h2>Open anomaly occurrences</h2>\n";
    if (board->open.empty()) h += "<p>None open (`iosonar screen`).</p>\n";
    else {
      h += "<table class=\"jobs\"><thead><tr><th>Kind</th><th>Server</th><th>Since (UTC)</th><th>Until (UTC)</th>"
           "<th>Duration</th><th>Worst bandwidth / peak</th><th>Alerted</th></tr></thead><tbody>";
      for (const auto& o : board->open)
        h += "<tr>" + Cell(ServerKindText(o.kind)) + Cell(o.server) + Cell(o.start, "t") + Cell(o.end, "t") +
             Cell(Fmt("%.0f s", o.duration_s), "n") + Cell(Fmt("%.2f", o.max_bw_ratio), "n") +
             Cell(o.alerted.empty() ? "-" : o.alerted, "t") + "</tr>";
      h += "</tbody></table>\n";
    }
    h += "<h2>Latest anomalous jobs</h2>\n";
    if (board->jobs.empty()) h += "<p>None.</p>\n";
    else {
      h += "<table class=\"jobs\"><thead><tr><th>Job</th><th>Cluster</th><th>Slowdown</th><th>Analysed (UTC)</th>"
           "</tr></thead><tbody>";
      for (const auto& j : board->jobs)
        h += "<tr><td><a href=\"/jobs/" + HtmlEscape(j.job_id) + cq(j.cluster) + "\">" + HtmlEscape(j.job_id) +
             "</a></td>" + Cell(j.cluster) + Cell(Fmt("%.1fx", j.slowdown), "n") + Cell(j.computed, "t") + "</tr>";
      h += "</tbody></table>\n";
    }
  }
  h += "<h2>LASSi file-system risk and probe slowdown, " + HtmlEscape(day) +
       "</h2>\n<p class=\"note\">Risk per hour window against avg_fs (LASSi, alpha 2): the newest stored LASSi baseline of the job database, "
       "<code>iosonar lassi baseline --mysql</code>; without one the averages of the day, as <code>iosonar lassi --day</code>. Slowdown: probe "
       "latency statistic over its baseline median t_expected (the newest stored probe baseline of the job database, "
       "<code>iosonar slowdown baseline --mysql</code>; without one the 30 days before, with a warning).</p>\n<div class=\"chart\" data-chart=\"lassi\" data-day=\"" +
       HtmlEscape(day) + "\"></div>\n<div class=\"slowdown\" data-day=\"" + HtmlEscape(day) + "\"></div>\n";
  if (!job.empty()) {
    h += "<h2>Job " + HtmlEscape(job) + ": bytes per OST</h2>\n<div class=\"chart\" data-chart=\"osts\" data-job=\"" +
         HtmlEscape(job) + "\" data-query=\"" + jq + "\"></div>\n<p><a href=\"/jobs/" + HtmlEscape(job) + jq +
         "\">The job's page</a></p>\n";
    if (n) {
      for (const auto& [title, list] : {std::pair{"Jobs that shared its forwarding nodes during its run", &n->forwarding},
                                        std::pair{"Jobs that shared its OSTs during its run", &n->osts}}) {
        h += std::string("<h3>") + title + "</h3>\n";
        if (list->empty()) {
          h += "<p>None known (the job database's node, forwarding and OST maps).</p>\n";
          continue;
        }
        h += "<table class=\"jobs\"><thead><tr><th>Job</th><th>User</th><th>Name</th><th>Start (UTC)</th><th>End (UTC)</th>"
             "</tr></thead><tbody>";
        for (const auto& j : *list)
          h += "<tr><td><a href=\"/jobs/" + std::to_string(j.job_id) + cq(j.cluster) + "\">" +
               std::to_string(j.job_id) + "</a></td>" +
               Cell(j.user.value_or("")) + Cell(j.name.value_or("")) + Cell(Time(j.start_ns), "t") +
               Cell(Time(j.end_ns), "t") + "</tr>";
        h += "</tbody></table>\n";
      }
    }
  }
  h += "<p class=\"note\">JSON: <a href=\"/api/admin/heatmap?day=" + HtmlEscape(day) + "\">heatmap</a>.</p>\n";
  return h + kFoot;
}


std::string VerdictText(const std::string& verdict) {
  if (verdict == "anomalous") return "I/O anomaly";
  if (verdict == "normal") return "I/O as in earlier runs";
  if (verdict == "not_enough_history") return "too few earlier runs to compare with";
  return Words(verdict);
}

std::string EvidenceText(const std::string& evidence) {
  std::string out;
  size_t i = 0;
  while (i <= evidence.size()) {
    size_t j = evidence.find(',', i);
    if (j == std::string::npos) j = evidence.size();
    const std::string e = evidence.substr(i, j - i);
    std::string t = e == "high_mdops" ? "many metadata operations"
                    : e == "high_bw"  ? "high bandwidth"
                    : e == "high_iops" ? "many data operations"
                    : e == "n1_mode"  ? "N-1 I/O (many processes on one file)"
                                      : Words(e);
    if (!t.empty()) out += (out.empty() ? "" : ", ") + t;
    i = j + 1;
  }
  return out;
}

std::string ServerKindText(const std::string& kind) {
  if (kind == "ost") return "OST";
  if (kind == "mdt") return "MDT";
  if (kind == "forwarding") return "forwarding node";
  return Words(kind);
}

std::string WithBasePath(std::string html, const std::string& base) {
  if (base.empty()) return html;
  std::string out;
  out.reserve(html.size() + 64 * base.size());
  size_t from = 0;
  for (;;) {
    size_t best = std::string::npos, len = 0;
    for (const char* attr : {" href=\"/", " src=\"/", " action=\"/"}) {
      size_t at = html.find(attr, from);
      if (at < best) best = at, len = std::char_traits<char>::length(attr);
    }
    if (best == std::string::npos) break;
    out.append(html, from, best + len - 1 - from);  // up to the quote
    out += base;
    from = best + len - 1;  // the '/' follows the base
  }
  out.append(html, from, std::string::npos);
  return out;
}

std::string ErrorPage(int status, const std::string& message) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + std::to_string(status) +
         " - iosonar</title><link rel=\"stylesheet\" href=\"/static/iosonar.css\"></head><body><main><h1>" +
         std::to_string(status) + "</h1><p>" + HtmlEscape(message) + "</p><p><a href=\"/jobs\">My jobs</a></p></main></body></html>\n";
}

}  // namespace iosonar::serve
