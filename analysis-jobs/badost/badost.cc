#include "analysis-jobs/badost/badost.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis-jobs/lib/stats.h"
#include "analysis-jobs/lib/format.h"
#include "analysis-jobs/lib/result_record.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::analysis {

namespace {

using format::Trim;

// Splits one CSV line; fields may be double-quoted ("" is a quote).
std::vector<std::string> SplitCsv(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.emplace_back(Trim(cur));
  return out;
}

bool ParseDouble(std::string_view s, double* v) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*v);
}

// "14", "OST000e", "OST#14", "scratch-OST000e" -> 14.
bool ParseOst(std::string_view s, int64_t* id) {
  s = Trim(s);
  if (s.empty()) return false;
  int base = 10;
  if (auto k = s.rfind("OST"); k != std::string_view::npos) {
    s.remove_prefix(k + 3);
    if (!s.empty() && s.front() == '#') s.remove_prefix(1);
    else base = 16;
  }
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *id, base);
  return ec == std::errc() && p == s.data() + s.size() && *id >= 0;
}

bool ParseOstList(std::string_view s, std::vector<int64_t>* out, std::string* bad) {
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ';' || s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ';' && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) {
      int64_t id = 0;
      if (!ParseOst(s.substr(i, j - i), &id)) {
        *bad = std::string(s.substr(i, j - i));
        return false;
      }
      out->push_back(id);
    }
    i = j;
  }
  return true;
}

std::string Where(const std::string& name, size_t line) { return name + ":" + std::to_string(line) + ": "; }

void Accept(FileObservation obs, const std::string& name, size_t line, BadOstInput* out) {
  if (!(obs.seconds > 0)) {
    ++out->zero_time;
    out->errors.push_back(Where(name, line) + "file " + obs.file +
                          " has no I/O time (seconds <= 0): its performance is undefined, set aside");
    return;
  }
  if (obs.bytes < 0) {
    out->errors.push_back(Where(name, line) + "file " + obs.file + " has negative bytes, set aside");
    return;
  }
  if (obs.osts.empty()) {
    out->errors.push_back(Where(name, line) + "file " + obs.file + " has no OSTs, set aside");
    return;
  }
  obs.file = name + "@" + obs.file;
  out->files.push_back(std::move(obs));
}

}  // namespace

void ParseBadOstCsv(std::string_view text, const std::string& name, BadOstInput* out) {
  size_t lineno = 0;
  int col_file = -1, col_bytes = -1, col_seconds = -1, col_osts = -1;
  bool have_header = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (Trim(line).empty() || Trim(line).front() == '#') {
      if (nl == text.size()) break;
      continue;
    }
    auto f = SplitCsv(line);
    if (!have_header) {
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "file") col_file = static_cast<int>(i);
        else if (f[i] == "bytes") col_bytes = static_cast<int>(i);
        else if (f[i] == "seconds") col_seconds = static_cast<int>(i);
        else if (f[i] == "osts") col_osts = static_cast<int>(i);
      }
      if (col_file < 0 || col_bytes < 0 || col_seconds < 0 || col_osts < 0) {
        out->errors.push_back(Where(name, lineno) +
                              "the header must name the columns file, bytes, seconds and osts; input skipped");
        return;
      }
      have_header = true;
      continue;
    }
    const int need = std::max({col_file, col_bytes, col_seconds, col_osts});
    if (static_cast<int>(f.size()) <= need) {
      out->errors.push_back(Where(name, lineno) + "expected at least " + std::to_string(need + 1) + " fields, got " +
                            std::to_string(f.size()));
      continue;
    }
    FileObservation obs;
    obs.file = f[static_cast<size_t>(col_file)];
    std::string bad;
    if (!ParseDouble(f[static_cast<size_t>(col_bytes)], &obs.bytes)) {
      out->errors.push_back(Where(name, lineno) + "bytes '" + f[static_cast<size_t>(col_bytes)] + "' is not a number");
      continue;
    }
    if (!ParseDouble(f[static_cast<size_t>(col_seconds)], &obs.seconds)) {
      out->errors.push_back(Where(name, lineno) + "seconds '" + f[static_cast<size_t>(col_seconds)] +
                            "' is not a number");
      continue;
    }
    if (!ParseOstList(f[static_cast<size_t>(col_osts)], &obs.osts, &bad)) {
      out->errors.push_back(Where(name, lineno) + "OST '" + bad + "' is not an OST index or OSTxxxx name");
      continue;
    }
    Accept(std::move(obs), name, lineno, out);
    if (nl == text.size()) break;
  }
  if (!have_header) out->errors.push_back(name + ": no header line (file,bytes,seconds,osts)");
}

namespace {

void JsonObject(const rapidjson::Value& v, const std::string& name, size_t line, BadOstInput* out) {
  if (!v.IsObject()) {
    out->errors.push_back(Where(name, line) + "not a JSON object");
    return;
  }
  FileObservation obs;
  auto num = [&](const char* k, double* d) {
    auto it = v.FindMember(k);
    if (it == v.MemberEnd() || !it->value.IsNumber()) {
      out->errors.push_back(Where(name, line) + "\"" + k + "\" missing or not a number");
      return false;
    }
    *d = it->value.GetDouble();
    return true;
  };
  auto f = v.FindMember("file");
  if (f == v.MemberEnd() || !f->value.IsString()) {
    out->errors.push_back(Where(name, line) + "\"file\" missing or not a string");
    return;
  }
  obs.file = f->value.GetString();
  if (!num("bytes", &obs.bytes) || !num("seconds", &obs.seconds)) return;
  auto o = v.FindMember("osts");
  if (o == v.MemberEnd() || !o->value.IsArray()) {
    out->errors.push_back(Where(name, line) + "\"osts\" missing or not an array");
    return;
  }
  for (const auto& x : o->value.GetArray()) {
    int64_t id = 0;
    if (x.IsInt64() && x.GetInt64() >= 0) id = x.GetInt64();
    else if (!x.IsString() || !ParseOst(x.GetString(), &id)) {
      out->errors.push_back(Where(name, line) + "an OST in \"osts\" is not an index or OSTxxxx name");
      return;
    }
    obs.osts.push_back(id);
  }
  Accept(std::move(obs), name, line, out);
}

}  // namespace

void ParseBadOstJson(std::string_view text, const std::string& name, BadOstInput* out) {
  std::string_view t = Trim(text);
  while (!t.empty() && (t.front() == '\n')) t.remove_prefix(1);
  if (!t.empty() && t.front() == '[') {
    rapidjson::Document d;
    d.Parse(t.data(), t.size());
    if (d.HasParseError()) {
      // Line of the error offset.
      const size_t off = std::min(d.GetErrorOffset(), t.size());
      const size_t line = 1 + static_cast<size_t>(std::count(t.begin(), t.begin() + static_cast<long>(off), '\n'));
      out->errors.push_back(Where(name, line) + "JSON: " + rapidjson::GetParseError_En(d.GetParseError()) +
                            "; input skipped");
      return;
    }
    size_t i = 0;
    for (const auto& v : d.GetArray()) JsonObject(v, name + " element", ++i, out);
    return;
  }
  // JSON lines.
  size_t pos = 0, lineno = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++lineno;
    if (line.empty()) continue;
    rapidjson::Document d;
    d.Parse(line.data(), line.size());
    if (d.HasParseError()) {
      out->errors.push_back(Where(name, lineno) + "JSON: " + rapidjson::GetParseError_En(d.GetParseError()));
      continue;
    }
    JsonObject(d, name, lineno, out);
  }
}

void ParseBadOstAuto(std::string_view text, const std::string& name, BadOstInput* out) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  if (i < text.size() && (text[i] == '[' || text[i] == '{')) ParseBadOstJson(text, name, out);
  else ParseBadOstCsv(text, name, out);
}

BadOstResult CorrelateOsts(const std::vector<FileObservation>& files) {
  BadOstResult res;
  // Merge repeated files: the larger performance, the union of OSTs.
  std::unordered_map<std::string, size_t> index;
  std::vector<double> perf;
  std::vector<std::vector<int64_t>> osts;
  for (const auto& f : files) {
    if (!(f.seconds > 0) || f.bytes < 0 || f.osts.empty()) continue;
    const double p = f.bytes / f.seconds;
    auto [it, fresh] = index.try_emplace(f.file, perf.size());
    if (fresh) {
      perf.push_back(p);
      osts.emplace_back();
    } else {
      perf[it->second] = std::max(perf[it->second], p);
    }
    auto& v = osts[it->second];
    v.insert(v.end(), f.osts.begin(), f.osts.end());
  }
  const size_t n = perf.size();
  res.files = n;
  // Each OST column is sparse (share 1/stripe count on the files striped
  // over it, 0 elsewhere): the centered sums need only its nonzero entries,
  // since sum(x - mx) = 0.
  struct Col {
    double sum = 0, sum2 = 0, sxy = 0, first = -1;
    uint64_t on = 0;
    bool varies = false;
  };
  double mx = 0;
  for (double p : perf) mx += p;
  if (n > 0) mx /= static_cast<double>(n);
  double sxx = 0;
  for (double p : perf) sxx += (p - mx) * (p - mx);
  std::map<int64_t, Col> cols;
  for (size_t i = 0; i < n; ++i) {
    auto& v = osts[i];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    const double share = 1.0 / static_cast<double>(v.size());
    for (int64_t o : v) {
      Col& c = cols[o];
      if (c.on == 0) c.first = share;
      else if (share != c.first) c.varies = true;
      ++c.on;
      c.sum += share;
      c.sum2 += share * share;
      c.sxy += (perf[i] - mx) * share;
    }
  }
  bool varies = false;
  for (size_t i = 1; i < n; ++i) varies |= perf[i] != perf[0];
  if (n < 2 || !varies) {
    res.constant_performance = true;
    return res;
  }
  for (const auto& [ost, c] : cols) {
    // Constant: on every file with one share (a column of zeros cannot occur).
    if (c.on == n && !c.varies) {
      res.constant_osts.push_back(ost);
      continue;
    }
    const double my = c.sum / static_cast<double>(n);
    const double syy = c.sum2 - static_cast<double>(n) * my * my;
    auto pr = stats::PearsonFromSums(c.sxy, sxx, syy, n);
    if (!pr.ok) {
      res.constant_osts.push_back(ost);
      continue;
    }
    OstCorrelation oc;
    oc.ost = ost;
    oc.name = "OST#" + std::to_string(ost);
    oc.coefficient = pr.r;
    oc.p_value = pr.p;
    oc.files_on = c.on;
    res.correlations.push_back(std::move(oc));
  }
  std::stable_sort(res.correlations.begin(), res.correlations.end(),
                   [](const OstCorrelation& a, const OstCorrelation& b) { return a.coefficient < b.coefficient; });
  return res;
}

std::vector<OstCorrelation> FilterCorrelations(const BadOstResult& r, const BadOstFilter& f) {
  std::vector<OstCorrelation> out;
  for (const auto& c : r.correlations)
    if (c.p_value < f.p_threshold && std::fabs(c.coefficient) > f.c_threshold) out.push_back(c);
  return out;
}

namespace {
const char* Verdict(const OstCorrelation& c, const BadOstFilter& f) {
  if (std::fabs(c.coefficient) <= f.c_warning) return "";
  return c.coefficient < 0 ? "unhealthy" : "unusually fast";
}
}  // namespace

std::string BadOstToJson(const BadOstResult& r, const BadOstFilter& f, const BadOstInput& in) {
  std::string out;
  JsonWriter w(&out, 2);
  w.BeginObject();
  KvAll(w, "files", r.files, "rows_set_aside", in.errors.size(), "zero_io_time", in.zero_time,
        "constant_performance", r.constant_performance, "osts_tested", r.correlations.size());
  w.Key("constant_osts");
  w.BeginArray();
  for (int64_t o : r.constant_osts) w.Int(o);
  w.EndArray();
  w.Kv("p_threshold", f.p_threshold);
  w.Kv("c_threshold", f.c_threshold);
  w.Key("results");  // TOKIO's darshan_bad_ost --json entries, plus ours
  w.BeginArray();
  for (const auto& c : FilterCorrelations(r, f)) {
    KvObject(w, "ost_name", c.name, "ost", c.ost, "coefficient", c.coefficient, "p-value", c.p_value,
             "files_on", c.files_on, "verdict", Verdict(c, f));
  }
  w.EndArray();
  w.EndObject();
  return out;
}

std::string BadOstToRecords(const BadOstResult& r, const BadOstFilter& f, const BadOstInput& in,
                            const std::string& host, const std::string& job_id, int64_t ts_ns) {
  const int64_t stream = ResultStreamId("iosonar.result.bad_ost", {job_id, BadOstToJson(r, f, in)});
  std::string out;
  int64_t seq = 0;
  for (const auto& c : r.correlations) {
    JsonWriter w(&out, 0);
    BeginResultRecord(w, ts_ns, dataset::kResultBadOst, stream, seq++, host);
    if (!job_id.empty()) w.Kv(field::kJobId, job_id);
    KvAll(w, field::kBadostOst, c.name, field::kBadostCoefficient, c.coefficient, field::kBadostPValue, c.p_value,
          field::kBadostFilesOn, c.files_on, field::kBadostFiles, r.files);
    const bool shown = c.p_value < f.p_threshold && std::fabs(c.coefficient) > f.c_threshold;
    const std::string v = shown ? Verdict(c, f) : "";
    if (!v.empty()) w.Kv(field::kBadostVerdict, v);
    w.EndObject();
    out += '\n';
  }
  return out;
}

std::string BadOstToTable(const BadOstResult& r, const BadOstFilter& f, const BadOstInput& in) {
  std::string o;
  char b[256];
  std::snprintf(b, sizeof b, "%zu files correlated, %zu OSTs tested", static_cast<size_t>(r.files),
                r.correlations.size());
  o += b;
  if (!in.errors.empty()) o += ", " + std::to_string(in.errors.size()) + " rows set aside";
  o += "\n";
  if (r.constant_performance) {
    o += "insufficient data for correlation: fewer than two files, or every file performed the same\n";
    return o;
  }
  std::snprintf(b, sizeof b, "%-10s %12s %10s %6s\n", "OST Name", "Correlation", "P-Value", "Files");
  o += b;
  for (const auto& c : FilterCorrelations(r, f)) {
    std::snprintf(b, sizeof b, "%-10s %12.3f %10.4g %6llu", c.name.c_str(), c.coefficient, c.p_value,
                  static_cast<unsigned long long>(c.files_on));
    o += b;
    const std::string v = Verdict(c, f);
    if (v == "unhealthy") o += "  <-- this OST looks unhealthy";
    else if (!v.empty()) o += "  <-- this OST is running unusually quickly";
    o += "\n";
  }
  return o;
}

Status FilesFromStore(Store& store, const std::string& job_id, const std::map<std::string, std::vector<int64_t>>& layouts,
                      BadOstInput* out, uint64_t* no_layout) {
  struct Acc {
    double bytes = 0, ns = 0;
  };
  std::map<std::string, Acc> per_file;
  ScanQuery q;
  q.dataset = dataset::kTrace;
  q.filters = {{field::kJobId, job_id}};
  q.fields = {field::kFilePath, field::kIoOp, field::kIoBytes, field::kIoDurationNs, field::kIoLayer};
  Status st = store.Scan(q, [&](const Row& r) {
    if (!r.Has(0) || !r.Has(1)) return true;
    const std::string_view op = r.Str(1);
    if (op != "read" && op != "write") return true;
    if (r.Has(4) && r.Str(4) == "mpiio") return true;
    Acc& a = per_file[std::string(r.Str(0))];
    if (r.Has(2) && r.Int(2) > 0) a.bytes += static_cast<double>(r.Int(2));
    if (r.Has(3) && r.Int(3) > 0) a.ns += static_cast<double>(r.Int(3));
    return true;
  });
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  if (per_file.empty()) return Status::NotFound("job " + job_id + " has no read or write trace records with a file path");
  uint64_t missing = 0;
  for (const auto& [path, a] : per_file) {
    if (a.bytes <= 0) continue;
    auto it = layouts.find(path);
    if (it == layouts.end() || it->second.empty()) {
      if (++missing <= 20) out->errors.push_back("job " + job_id + ": " + path + ": no layout (left out)");
      continue;
    }
    if (a.ns <= 0) {
      ++out->zero_time;
      out->errors.push_back("job " + job_id + ": " + path + ": no I/O time (left out)");
      continue;
    }
    out->files.push_back({path, a.bytes, a.ns / 1e9, it->second});
  }
  if (no_layout) *no_layout = missing;
  return Status::Ok();
}

std::string BadOstInputToCsv(const BadOstInput& in) {
  std::string o = "file,bytes,seconds,osts\n";
  char b[96];
  for (const auto& f : in.files) {
    std::string path = f.file;
    if (path.find_first_of(",\"\n") != std::string::npos) {  // RFC 4180 quoting
      std::string q = "\"";
      for (char c : path) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      path = q + "\"";
    }
    std::snprintf(b, sizeof b, ",%.17g,%.17g,", f.bytes, f.seconds);
    o += path + b;
    for (size_t i = 0; i < f.osts.size(); ++i) o += (i ? ";" : "") + std::to_string(f.osts[i]);
    o += "\n";
  }
  return o;
}

}  // namespace iosonar::analysis
