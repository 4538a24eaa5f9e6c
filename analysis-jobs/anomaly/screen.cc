#include "analysis-jobs/anomaly/screen.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "analysis-jobs/lassi/apps.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/base/json.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::anomaly {
namespace {

constexpr int64_t kSec = 1000000000;

struct Series {
  std::string kind, name;
  std::vector<double> max_bw;  // per bucket
  std::vector<char> work;
};

std::string Key(const std::string& kind, const std::string& name) { return kind + ":" + name; }

}  // namespace

std::string Occurrence::Id() const { return kind + ":" + name + ":" + FormatIsoMillis(start_ns); }

Result<std::map<std::string, double>> LoadPeaks(const std::string& path) {
  std::map<std::string, double> peaks;
  Status st = lassi::ForEachDataLine(path, [&](const std::string& line, int n) -> Status {
    std::istringstream in(line);
    std::string name, value, extra;
    in >> name >> value;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (name.empty() || value.empty() || *end != '\0' || !(v > 0) || (in >> extra))
      return Status::Invalid(path + ":" + std::to_string(n) + ": expected NAME BYTES_PER_S (a positive number)");
    peaks[name] = v;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return peaks;
}

Result<ScreenState> LoadScreenState(const std::string& path) {
  ScreenState s;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT) return s;
    return Status::Io("cannot read " + path + ": " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("to_ns") || !d["to_ns"].IsInt64())
    return Status::Invalid(path + ": not a screening state (JSON with to_ns, open, peaks, reported)");
  s.to_ns = d["to_ns"].GetInt64();
  if (d.HasMember("open") && d["open"].IsObject())
    for (const auto& m : d["open"].GetObject()) {
      const auto& o = m.value;
      if (!o.IsObject() || !o.HasMember("start_ns") || !o.HasMember("last_low_end_ns") || !o.HasMember("max_ratio"))
        return Status::Invalid(path + ": open entry '" + m.name.GetString() + "' lacks start_ns/last_low_end_ns/max_ratio");
      s.open[m.name.GetString()] = {o["start_ns"].GetInt64(), o["last_low_end_ns"].GetInt64(), o["max_ratio"].GetDouble()};
    }
  if (d.HasMember("peaks") && d["peaks"].IsObject())
    for (const auto& m : d["peaks"].GetObject())
      if (m.value.IsNumber()) s.peaks[m.name.GetString()] = m.value.GetDouble();
  for (auto [key, set] : {std::pair<const char*, std::set<std::string>*>{"reported", &s.reported}, {"alerted", &s.alerted}})
    if (d.HasMember(key) && d[key].IsArray())
      for (const auto& v : d[key].GetArray())
        if (v.IsString()) set->insert(v.GetString());
  return s;
}

Status SaveScreenState(const std::string& path, const ScreenState& s) {
  std::string out;
  JsonWriter w(&out, 2);
  w.BeginObject();
  w.Kv("to_ns", s.to_ns);
  w.Key("open");
  w.BeginObject();
  for (const auto& [k, o] : s.open) {
    w.Key(k);
    w.BeginObject();
    w.Kv("start_ns", o.start_ns);
    w.Kv("last_low_end_ns", o.last_low_end_ns);
    w.Kv("max_ratio", o.max_ratio);
    w.EndObject();
  }
  w.EndObject();
  w.Key("peaks");
  w.BeginObject();
  for (const auto& [k, v] : s.peaks) w.Kv(k, v);
  w.EndObject();
  w.Key("reported");
  w.BeginArray();
  for (const auto& r : s.reported) w.String(r);
  w.EndArray();
  w.Key("alerted");
  w.BeginArray();
  for (const auto& r : s.alerted) w.String(r);
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::write(fd, out.data() + off, out.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return Status::Io("cannot write " + tmp + ": " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::Io("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

Result<ScreenResult> Screen(Store& store, int64_t from_ns, int64_t to_ns, const std::map<std::string, double>& peaks,
                            const ScreenOptions& opt, ScreenState* state) {
  if (to_ns <= from_ns) return Status::Invalid("screen: --to must be after --from");
  if (!(opt.fraction > 0 && opt.fraction <= 1) || opt.bucket_ns <= 0 || opt.min_duration_ns < 0)
    return Status::Invalid("screen: fraction must be in (0, 1], bucket > 0, min duration >= 0");
  ScreenResult res;
  res.from_ns = from_ns;
  res.to_ns = to_ns;
  const size_t nb = static_cast<size_t>((to_ns - from_ns + opt.bucket_ns - 1) / opt.bucket_ns);
  std::map<std::string, Series> series;
  auto add = [&](const char* kind, std::string_view name, int64_t ts, int64_t elapsed, double bytes, bool work) {
    if (elapsed <= 0) elapsed = kSec;
    const int64_t start = ts - elapsed;
    if (start < from_ns || start >= to_ns) return;
    const std::string key = Key(kind, std::string(name));
    auto it = series.find(key);
    if (it == series.end()) {
      it = series.emplace(key, Series{kind, std::string(name), std::vector<double>(nb, 0.0), std::vector<char>(nb, 0)}).first;
    }
    const size_t b = static_cast<size_t>((start - from_ns) / opt.bucket_ns);
    const double bw = bytes * 1e9 / static_cast<double>(elapsed);
    it->second.max_bw[b] = std::max(it->second.max_bw[b], bw);
    if (work) it->second.work[b] = 1;
    res.records++;
  };
  // Records covering [from, to) are stamped up to one interval after `to`; 5 min is generous.
  const TimeRange range{from_ns, to_ns + 300 * kSec};
  if (opt.osts) {
    ScanQuery q;
    q.dataset = dataset::kOss;
    q.range = range;
    q.fields = {field::kLustreTarget, field::kTimestamp, field::kLustreElapsedNs, field::kOssReadBytes,
                field::kOssWriteBytes, field::kLustreJobsActive};
    q.ordered = false;
    Status st = store.Scan(q, [&](const Row& r) {
      if (!r.Has(0) || (!r.Has(3) && !r.Has(4))) return true;  // a reset: no deltas
      const double b = (r.Has(3) ? static_cast<double>(r.Int(3)) : 0) + (r.Has(4) ? static_cast<double>(r.Int(4)) : 0);
      add("ost", r.Str(0), r.Int(1), r.Has(2) ? r.Int(2) : kSec, b, r.Has(5) && r.Int(5) > 0);
      return true;
    });
    if (!st.ok()) return st;
  }
  if (opt.forwarding) {
    ScanQuery q;
    q.dataset = dataset::kClient;
    q.range = range;
    q.filters = {{field::kClientLayer, "llite"}};
    q.fields = {field::kHostName, field::kTimestamp, field::kLustreElapsedNs, field::kClientReadBytes,
                field::kClientWriteBytes, field::kClientReadOps, field::kClientWriteOps};
    q.ordered = false;
    Status st = store.Scan(q, [&](const Row& r) {
      if (!r.Has(0) || (!r.Has(3) && !r.Has(4))) return true;
      const double b = (r.Has(3) ? static_cast<double>(r.Int(3)) : 0) + (r.Has(4) ? static_cast<double>(r.Int(4)) : 0);
      const bool work = (r.Has(5) && r.Int(5) > 0) || (r.Has(6) && r.Int(6) > 0);
      add("forwarding", r.Str(0), r.Int(1), r.Has(2) ? r.Int(2) : kSec, b, work);
      return true;
    });
    if (!st.ok()) return st;
  }
  res.servers = series.size();
  ScreenState local;
  ScreenState* s = state ? state : &local;
  const bool continues = state && s->to_ns == from_ns;
  std::map<std::string, ScreenState::Open> still_open;
  for (auto& [key, ser] : series) {
    double peak = 0;
    if (auto p = peaks.find(ser.name); p != peaks.end()) {
      peak = p->second;
    } else {
      double seen = 0;
      for (double v : ser.max_bw) seen = std::max(seen, v);
      double& remembered = s->peaks[key];
      remembered = std::max(remembered, seen);
      peak = remembered;
    }
    if (!(peak > 0)) continue;
    // The run in progress: carried from the previous range, or none.
    bool in_run = false;
    ScreenState::Open run;
    if (continues)
      if (auto it = s->open.find(key); it != s->open.end()) {
        in_run = true;
        run = it->second;
      }
    auto close = [&](bool open) {
      Occurrence o{ser.kind, ser.name, run.start_ns, run.last_low_end_ns, run.max_ratio, peak, open, true};
      if (o.end_ns - o.start_ns >= opt.min_duration_ns) {
        o.is_new = !s->reported.count(o.Id());
        s->reported.insert(o.Id());
        res.occurrences.push_back(o);
      }
      in_run = false;
    };
    for (size_t b = 0; b < nb; ++b) {
      if (!ser.work[b]) continue;  // idle: neither low nor fine
      const double ratio = ser.max_bw[b] / peak;
      const int64_t bstart = from_ns + static_cast<int64_t>(b) * opt.bucket_ns;
      if (ratio < opt.fraction) {
        if (!in_run) {
          in_run = true;
          run = {bstart, bstart, 0};
        }
        run.last_low_end_ns = std::min(to_ns, bstart + opt.bucket_ns);
        run.max_ratio = std::max(run.max_ratio, ratio);
      } else if (in_run) {
        close(false);
      }
    }
    if (in_run) {
      still_open[key] = run;
      close(true);
    }
  }
  // Runs carried in for servers without records in this range stay open.
  if (continues)
    for (const auto& [key, run] : s->open)
      if (!series.count(key)) still_open.emplace(key, run);
  s->open = std::move(still_open);
  s->to_ns = to_ns;
  std::sort(res.occurrences.begin(), res.occurrences.end(), [](const Occurrence& a, const Occurrence& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.kind + a.name < b.kind + b.name;
  });
  return res;
}

std::string ScreenToJson(const ScreenResult& r, bool pretty) {
  std::string out;
  JsonWriter w(&out, pretty ? 2 : 0);
  w.BeginObject();
  w.Kv("from", FormatIsoMillis(r.from_ns));
  w.Kv("to", FormatIsoMillis(r.to_ns));
  w.Kv("servers", r.servers);
  w.Key("occurrences");
  w.BeginArray();
  for (const auto& o : r.occurrences) {
    w.BeginObject();
    w.Kv("kind", o.kind);
    w.Kv("name", o.name);
    w.Kv("start", FormatIsoMillis(o.start_ns));
    w.Kv("end", FormatIsoMillis(o.end_ns));
    w.Kv("duration_s", static_cast<double>(o.end_ns - o.start_ns) / 1e9);
    w.Kv("max_bw_ratio", o.max_bw_ratio);
    w.Kv("peak_bytes_per_s", o.peak);
    w.Kv("open", o.open);
    w.Kv("new", o.is_new);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

std::string DurationTable(const std::vector<Occurrence>& occ) {
  const double bands[] = {0, 1, 4, 12, 96};
  const char* names[] = {"(0,1)", "[1,4)", "[4,12)", "[12,96)", ">=96"};
  int count[5][2] = {};
  for (const auto& o : occ) {
    const double h = static_cast<double>(o.end_ns - o.start_ns) / 3.6e12;
    int b = 0;
    for (int i = 4; i >= 0; --i)
      if (h >= bands[i]) {
        b = i;
        break;
      }
    count[b][o.kind == "ost" ? 1 : 0]++;
  }
  std::string out = "duration (hours)  forwarding node  OST\n";
  char buf[96];
  for (int i = 0; i < 5; ++i) {
    std::snprintf(buf, sizeof buf, "%-16s  %15d  %3d\n", names[i], count[i][0], count[i][1]);
    out += buf;
  }
  return out;
}

std::string ScreenToTable(const ScreenResult& r) {
  std::string out = "screened " + FormatIsoMillis(r.from_ns) + " .. " + FormatIsoMillis(r.to_ns) + ": " +
                    std::to_string(r.servers) + " servers, " + std::to_string(r.occurrences.size()) + " occurrences\n";
  char buf[256];
  for (const auto& o : r.occurrences) {
    std::snprintf(buf, sizeof buf, "  %-10s %-20s %s .. %s  %6.0f min  max %.0f %% of peak%s%s\n", o.kind.c_str(),
                  o.name.c_str(), FormatIsoMillis(o.start_ns).c_str(), FormatIsoMillis(o.end_ns).c_str(),
                  static_cast<double>(o.end_ns - o.start_ns) / 6e10, 100 * o.max_bw_ratio, o.open ? " (open)" : "",
                  o.is_new ? "" : " (reported before)");
    out += buf;
  }
  if (!r.occurrences.empty()) out += DurationTable(r.occurrences);
  return out;
}

std::string ScreenToRecords(const ScreenResult& r, const std::string& host) {
  std::string out;
  for (const auto& o : r.occurrences) {
    const std::string end = FormatIsoMillis(o.end_ns);
    const int64_t stream = analysis::ResultStreamId(dataset::kResultAnomaly.name(), {std::string_view("occurrence"), o.Id(), end});
    JsonWriter w(&out, 0);
    analysis::BeginResultRecord(w, o.start_ns, dataset::kResultAnomaly, stream, 0, host);
    w.Kv(field::kResultAnalysis, "occurrence");
    w.Kv(field::kResultTarget, o.name);
    w.Kv(field::kResultMetric, "max_bw_ratio");
    w.Kv(field::kResultScore, o.max_bw_ratio);
    w.Kv(field::kResultIntervalNs, o.end_ns - o.start_ns);
    w.Kv(field::kResultReason, o.kind == "ost" ? std::string("OST under its peak bandwidth while busy")
                                               : std::string("forwarding node under its peak bandwidth while busy"));
    w.EndObject();
    out.push_back('\n');
  }
  return out;
}

Status WriteOccurrencesToDb(MysqlConn& db, const ScreenResult& r) {
  const std::string now = SqlDatetime(NowNs());
  return db.Transaction([&]() -> Status {
    for (const auto& o : r.occurrences) {
      auto a = db.Exec(
          "INSERT INTO server_anomaly (kind, server, start_time, end_time, duration_s, max_bw_ratio, peak, still_open, "
          "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE end_time = VALUES(end_time), "
          "duration_s = VALUES(duration_s), max_bw_ratio = GREATEST(max_bw_ratio, VALUES(max_bw_ratio)), "
          "peak = VALUES(peak), still_open = VALUES(still_open), updated_at = VALUES(updated_at)",
          {o.kind, o.name, SqlDatetime(o.start_ns), SqlDatetime(o.end_ns), static_cast<double>(o.end_ns - o.start_ns) / 1e9,
           o.max_bw_ratio, o.peak, int64_t{o.open ? 1 : 0}, now});
      if (!a.ok()) return a.status();
    }
    // Open rows that ended before this range began and were not continued are closed.
    auto c = db.Exec("UPDATE server_anomaly SET still_open = 0, updated_at = ? WHERE still_open = 1 AND updated_at < ? "
                     "AND end_time < ?",
                     {now, now, SqlDatetime(r.from_ns)});
    if (!c.ok()) return c.status();
    return Status::Ok();
  });
}

Result<std::pair<std::string, std::string>> ReportSection(Store& store, int64_t from_ns, int64_t to_ns) {
  struct Occ {
    int64_t start = 0, dur = 0;
    double ratio = 0;
    std::string reason;
  };
  struct Job {
    double slowdown = 0;
    int64_t first_seq = INT64_MAX;
    std::string neighbour, evidence;
    bool anomalous = false;
  };
  std::map<std::pair<std::string, int64_t>, Occ> occ;  // (server, start)
  std::map<std::string, Job> jobs;
  ScanQuery q;
  q.dataset = dataset::kResultAnomaly;
  q.range = {from_ns, to_ns};
  q.fields = {field::kTimestamp, field::kResultAnalysis, field::kResultTarget, field::kResultReason, field::kResultScore,
              field::kResultIntervalNs, field::kJobId, field::kEventSeq};
  Status st = store.Scan(q, [&](const Row& r) {
    const std::string_view a = r.Has(1) ? r.Str(1) : std::string_view();
    if (a == "occurrence" && r.Has(2)) {
      Occ& o = occ[{std::string(r.Str(2)), r.Int(0)}];
      o.start = r.Int(0);
      o.dur = std::max(o.dur, r.Has(5) ? r.Int(5) : 0);
      o.ratio = std::max(o.ratio, r.Has(4) ? r.Double(4) : 0.0);
      if (r.Has(3)) o.reason = std::string(r.Str(3));
    } else if (r.Has(6) && a == "job") {
      Job& j = jobs[std::string(r.Str(6))];
      j.anomalous = r.Has(3) && r.Str(3) == "anomalous";
      j.slowdown = r.Has(4) ? r.Double(4) : 0;
    } else if (r.Has(6) && a == "neighbour" && r.Has(7)) {
      Job& j = jobs[std::string(r.Str(6))];
      if (r.Int(7) < j.first_seq) {
        j.first_seq = r.Int(7);
        j.neighbour = r.Has(2) ? std::string(r.Str(2)) : "";
        j.evidence = r.Has(3) ? std::string(r.Str(3)) : "";
      }
    }
    return true;
  });
  if (!st.ok()) return st;
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '<') o += "&lt;";
      else if (c == '>') o += "&gt;";
      else if (c == '&') o += "&amp;";
      else if (c == '"') o += "&quot;";
      else o += c;
    }
    return o;
  };
  std::string h, t;
  char b[256];
  size_t anomalous = 0;
  for (const auto& [id, j] : jobs) anomalous += j.anomalous;
  if (occ.empty() && anomalous == 0) return std::pair<std::string, std::string>();
  h += "<h2>I/O anomalies (iosonar screen, iosonar anomaly)</h2>\n";
  t += "I/O anomalies\n";
  if (!occ.empty()) {
    h += "<h3>Servers under 30 % of their peak while busy</h3>\n<table><tr><th>server</th><th>start</th>"
         "<th>minutes</th><th>max % of peak</th></tr>\n";
    for (const auto& [key, o] : occ) {
      std::snprintf(b, sizeof b, "<td class=\"n\">%.0f</td><td class=\"n\">%.0f</td></tr>\n",
                    static_cast<double>(o.dur) / 6e10, 100 * o.ratio);
      h += "<tr><td>" + esc(key.first) + "</td><td>" + FormatIsoMillis(o.start) + "</td>" + b;
      std::snprintf(b, sizeof b, "  %s from %s for %.0f min, at most %.0f %% of its peak\n", key.first.c_str(),
                    FormatIsoMillis(o.start).c_str(), static_cast<double>(o.dur) / 6e10, 100 * o.ratio);
      t += b;
    }
    h += "</table>\n";
  }
  if (anomalous) {
    h += "<h3>Jobs slower than their earlier runs</h3>\n<table><tr><th>job</th><th>slowdown</th>"
         "<th>first neighbour</th><th>evidence</th></tr>\n";
    for (const auto& [id, j] : jobs) {
      if (!j.anomalous) continue;
      std::snprintf(b, sizeof b, "<td class=\"n\">%.1fx</td>", j.slowdown);
      h += "<tr><td>" + esc(id) + "</td>" + b + "<td>" + esc(j.neighbour) + "</td><td>" + esc(j.evidence) + "</td></tr>\n";
      std::snprintf(b, sizeof b, "  job %s: %.1fx its history", id.c_str(), j.slowdown);
      t += b;
      if (!j.neighbour.empty()) t += "; first neighbour " + j.neighbour + " (" + j.evidence + ")";
      t += "\n";
    }
    h += "</table>\n";
  }
  t += "\n";
  return std::make_pair(h, t);
}

}  // namespace iosonar::anomaly
