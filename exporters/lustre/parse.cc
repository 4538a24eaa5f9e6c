#include "exporters/lustre/parse.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace iosonar::lustre {
namespace {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\0' || c == '\v' || c == '\f'; }

inline std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Splits a line into at most `max` whitespace-separated tokens; returns the
// count, or max+1 if there were more.
inline size_t Tokens(std::string_view line, std::string_view* tok, size_t max) {
  size_t n = 0, i = 0;
  const size_t len = line.size();
  while (true) {
    while (i < len && IsSpace(line[i])) ++i;
    if (i >= len) return n;
    size_t j = i;
    while (j < len && !IsSpace(line[j])) ++j;
    if (n == max) return max + 1;
    tok[n++] = line.substr(i, j - i);
    i = j;
  }
}

// Iterates lines without copying.
class Lines {
 public:
  explicit Lines(std::string_view t, uint32_t first = 1) : t_(t), no_(first - 1) {}
  bool Next(std::string_view* line) {
    if (pos_ >= t_.size()) return false;
    const char* start = t_.data() + pos_;
    const void* nl = std::memchr(start, '\n', t_.size() - pos_);
    size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : t_.size() - pos_;
    *line = std::string_view(start, len);
    pos_ += len + 1;
    ++no_;
    return true;
  }
  uint32_t no() const { return no_; }
 private:
  std::string_view t_;
  size_t pos_ = 0;
  uint32_t no_ = 0;
};

inline bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

inline bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 60)) out += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) ? '?' : c;
  if (s.size() > 60) out += "...";
  out += "'";
  return out;
}

// Bounded: a huge garbage file must not turn into a huge issue list (nor
// spend its time formatting messages nobody reads): after kMaxIssues, one
// last "more issues" entry and no more formatting.
constexpr size_t kMaxIssues = 100;
void AddIssue(std::vector<Issue>* v, uint32_t line, std::string msg) {
  if (v->size() < kMaxIssues) v->push_back(Issue{line, std::move(msg)});
  else if (v->size() == kMaxIssues) v->push_back(Issue{line, "more issues not listed"});
}
#define ISSUE(vec, line, msg)                                                   \
  do {                                                                          \
    if ((vec)->size() <= kMaxIssues) AddIssue((vec), (line), (msg));            \
  } while (0)

// Header lines shared by the formats: "snapshot_time  1.2 secs.nsecs",
// "snapshot_time: 1.2 (secs.usecs)", "snapshot_time:  1510781853. 10473844".
// tok[0] is the name; returns false if the value does not parse.
bool HeaderTime(const std::string_view* tok, size_t n, int64_t* ns) {
  if (n < 2) return false;
  std::string_view value = tok[1];
  std::string_view unit = n >= 3 ? tok[2] : std::string_view();
  std::string joined;
  if (EndsWith(value, ".") && n >= 3 && !unit.empty() && unit[0] >= '0' && unit[0] <= '9') {
    joined.assign(value);
    joined.append(unit);
    value = joined;
    unit = n >= 4 ? tok[3] : std::string_view();
  }
  if (!unit.empty() && unit.front() == '(') unit.remove_prefix(1);
  if (!unit.empty() && unit.back() == ')') unit.remove_suffix(1);
  return ParseTimestamp(value, unit, ns);
}

bool IsTimeHeader(std::string_view name, std::string_view* which) {
  if (!name.empty() && name.back() == ':') name.remove_suffix(1);
  if (name == "snapshot_time" || name == "start_time" || name == "elapsed_time") {
    *which = name;
    return true;
  }
  return false;
}

}  // namespace

bool ParseU64Wrapped(std::string_view s, uint64_t* v) {
  if (!s.empty() && s[0] == '-') {
    int64_t x = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), x);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
    *v = static_cast<uint64_t>(x);
    return true;
  }
  return ParseU64(s, v);
}

bool ParseTimestamp(std::string_view value, std::string_view unit, int64_t* ns) {
  auto dot = value.find('.');
  std::string_view sec = value.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : value.substr(dot + 1);
  uint64_t s = 0, f = 0;
  if (!ParseU64(sec, &s) || s > 9000000000ULL) return false;
  if (!frac.empty() && (frac.size() > 9 || !ParseU64(frac, &f))) return false;
  if (dot != std::string_view::npos && frac.empty()) return false;
  uint64_t frac_ns = 0;
  if (unit.find("usecs") != std::string_view::npos) {
    if (f >= 1000000) return false;
    frac_ns = f * 1000;
  } else if (unit.find("nsecs") != std::string_view::npos) {
    if (f >= 1000000000) return false;
    frac_ns = f;
  } else if (!frac.empty()) {  // no unit: scale by digits
    frac_ns = f;
    for (size_t i = frac.size(); i < 9; ++i) frac_ns *= 10;
  }
  *ns = static_cast<int64_t>(s * 1000000000ULL + frac_ns);
  return true;
}

// ---------------------------------------------------------------- stats
void ParsedStats::Clear() {
  snapshot_ns = start_ns = elapsed_ns = -1;
  counters.clear();
  issues.clear();
}

size_t ParseStats(std::string_view text, ParsedStats* out) {
  out->Clear();
  Lines lines(text);
  std::string_view line;
  std::string_view tok[9];
  while (lines.Next(&line)) {
    size_t n = Tokens(line, tok, 8);
    if (n == 0) continue;
    std::string_view which;
    if (IsTimeHeader(tok[0], &which)) {
      int64_t ns = 0;
      if (!HeaderTime(tok, n > 8 ? 8 : n, &ns)) {
        ISSUE(&out->issues, lines.no(), std::string(which) + ": bad time " + Quote(line));
        continue;
      }
      (which == "snapshot_time" ? out->snapshot_ns : which == "start_time" ? out->start_ns : out->elapsed_ns) = ns;
      continue;
    }
    if (n > 8) {
      ISSUE(&out->issues, lines.no(), "too many columns: " + Quote(line));
      continue;
    }
    if (n < 3 || tok[2] != "samples") {
      ISSUE(&out->issues, lines.no(), "not a counter line (want 'NAME N samples [unit] ...'): " + Quote(line));
      continue;
    }
    StatsCounter c;
    c.name = tok[0];
    if (!ParseU64(tok[1], &c.samples)) {
      ISSUE(&out->issues, lines.no(), "samples not a number: " + Quote(tok[1]));
      continue;
    }
    size_t i = 3;
    if (i < n && tok[i].size() >= 2 && tok[i].front() == '[' && tok[i].back() == ']') {
      c.unit = tok[i].substr(1, tok[i].size() - 2);
      ++i;
    }
    uint64_t vals[4] = {0, 0, 0, 0};
    bool ok = true;
    size_t nv = 0;
    if (n - i > 4) {  // without a unit, 8 tokens leave room for 5 values
      ISSUE(&out->issues, lines.no(), std::string(c.name) + ": more than 4 value columns");
      continue;
    }
    for (; i < n; ++i, ++nv) {
      if (!ParseU64Wrapped(tok[i], &vals[nv])) {
        ISSUE(&out->issues, lines.no(), std::string(c.name) + ": value not a number: " + Quote(tok[i]));
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (nv == 1 || nv == 2) {
      ISSUE(&out->issues, lines.no(), std::string(c.name) + ": " + std::to_string(nv) + " value columns (want 0, 3 or 4)");
      continue;
    }
    c.nvals = static_cast<uint8_t>(nv);
    if (nv >= 3) c.sum = vals[2];
    out->counters.push_back(c);
  }
  return out->issues.size();
}

// ---------------------------------------------------------------- job_stats
void ParsedJobStats::Clear() {
  jobs.clear();
  ops.clear();
  issues.clear();
}

namespace {

std::string_view StripQuotes(std::string_view v) {
  if (v.size() >= 2 && ((v.front() == '"' && v.back() == '"') || (v.front() == '\'' && v.back() == '\'')))
    return v.substr(1, v.size() - 2);
  return v;
}

// The layout every Lustre version prints: "{ samples: N, unit: U" then
// either " }" or ", min: a, max: b, sum: c" and anything up to the closing
// brace. Returns false (no error) when the text is not in that layout, for
// the general parser to take over.
bool FastOpBody(std::string_view body, JobOp* op) {
  const char* p = body.data();
  const char* end = p + body.size();
  auto skip = [&] {  // job_stats pads with runs of up to ~20 spaces: 8 at a time
    constexpr uint64_t kSpaces = 0x2020202020202020ULL;
    uint64_t w;
    while (end - p >= 8 && (std::memcpy(&w, p, 8), w == kSpaces)) p += 8;
    while (p < end && *p == ' ') ++p;
  };
  auto lit = [&](std::string_view s) {
    if (static_cast<size_t>(end - p) < s.size() || std::memcmp(p, s.data(), s.size()) != 0) return false;
    p += s.size();
    return true;
  };
  // A value is the text up to ',', ' ' or '}' read by ParseU64Wrapped; up to
  // 19 plain digits (the usual case) are converted here in the same pass.
  auto num = [&](uint64_t* v) {
    skip();
    const char* b = p;
    uint64_t x = 0;
    while (p < end && static_cast<unsigned>(*p - '0') < 10) x = x * 10 + static_cast<unsigned>(*p++ - '0');
    if (p > b && p - b <= 19 && (p == end || *p == ',' || *p == ' ' || *p == '}')) {
      *v = x;
      return true;
    }
    while (p < end && *p != ',' && *p != ' ' && *p != '}') ++p;
    return ParseU64Wrapped(std::string_view(b, static_cast<size_t>(p - b)), v);
  };
  skip();
  if (!lit("{")) return false;
  skip();
  if (!lit("samples:") || !num(&op->samples)) return false;
  skip();
  if (!lit(",")) return false;
  skip();
  if (!lit("unit:")) return false;
  skip();
  const char* u = p;
  while (p < end && *p != ',' && *p != ' ' && *p != '}') ++p;
  op->unit = std::string_view(u, static_cast<size_t>(p - u));
  skip();
  if (p < end && *p == '}') return Trim(std::string_view(p + 1, static_cast<size_t>(end - p - 1))).empty();
  uint64_t ignore = 0;
  if (!lit(",")) return false;
  skip();
  if (!lit("min:") || !num(&ignore)) return false;
  skip();
  if (!lit(",")) return false;
  skip();
  if (!lit("max:") || !num(&ignore)) return false;
  skip();
  if (!lit(",")) return false;
  skip();
  if (!lit("sum:") || !num(&op->sum)) return false;
  op->has_sum = true;
  // sumsq and hist are not needed: the line must close, that is all.
  std::string_view tail = Trim(std::string_view(p, static_cast<size_t>(end - p)));
  return !tail.empty() && tail.back() == '}';
}

// Parses "{ samples: N, unit: U, min: a, max: b, sum: c, sumsq: d, hist: { ... } }".
bool ParseOpBody(std::string_view body, JobOp* op, std::string* why) {
  if (FastOpBody(body, op)) return true;
  *op = JobOp{op->name, {}, 0, 0, false};
  size_t i = 0;
  const size_t len = body.size();
  while (i < len && IsSpace(body[i])) ++i;
  if (i >= len || body[i] != '{') {
    *why = "want '{'";
    return false;
  }
  ++i;
  bool have_samples = false;
  while (true) {
    while (i < len && (IsSpace(body[i]) || body[i] == ',')) ++i;
    if (i >= len) {
      *why = "missing '}'";
      return false;
    }
    if (body[i] == '}') break;
    size_t k0 = i;
    while (i < len && body[i] != ':' && body[i] != ',' && body[i] != '}') ++i;
    if (i >= len || body[i] != ':') {
      *why = "want 'key: value'";
      return false;
    }
    std::string_view key = Trim(body.substr(k0, i - k0));
    ++i;
    while (i < len && IsSpace(body[i])) ++i;
    if (i < len && body[i] == '{') {  // nested map (hist): skip it
      int depth = 0;
      for (; i < len; ++i) {
        if (body[i] == '{') ++depth;
        else if (body[i] == '}' && --depth == 0) break;
      }
      if (i >= len) {
        *why = "unterminated '{' in " + std::string(key);
        return false;
      }
      ++i;
      continue;
    }
    size_t v0 = i;
    while (i < len && body[i] != ',' && body[i] != '}') ++i;
    std::string_view val = Trim(body.substr(v0, i - v0));
    if (key == "samples") {
      if (!ParseU64(val, &op->samples)) {
        *why = "samples not a number: " + Quote(val);
        return false;
      }
      have_samples = true;
    } else if (key == "unit") {
      op->unit = val;
    } else if (key == "sum") {
      if (!ParseU64Wrapped(val, &op->sum)) {
        *why = "sum not a number: " + Quote(val);
        return false;
      }
      op->has_sum = true;
      // The rest (sumsq, hist) is not needed: check the line closes and stop.
      if (have_samples) {
        std::string_view tail = Trim(body.substr(i));
        if (!tail.empty() && tail.back() == '}') return true;
        *why = "missing '}'";
        return false;
      }
    }
  }
  if (!have_samples) {
    *why = "no samples";
    return false;
  }
  return true;
}

}  // namespace

uint64_t HashBytes(std::string_view s) {
  // Four independent multiply-xorshift lanes over 32-byte blocks: several
  // GB/s, plenty to tell one reading of a job's counters from the next.
  constexpr uint64_t kM = 0x9E3779B97F4A7C15ULL;
  uint64_t h[4] = {s.size() ^ 0x243F6A8885A308D3ULL, 0x13198A2E03707344ULL, 0xA4093822299F31D0ULL, 0x082EFA98EC4E6C89ULL};
  const char* p = s.data();
  size_t n = s.size();
  auto mix = [&](uint64_t& x, uint64_t w) {
    x = (x ^ w) * kM;
    x ^= x >> 29;
  };
  while (n >= 32) {
    uint64_t w[4];
    std::memcpy(w, p, 32);
    mix(h[0], w[0]);
    mix(h[1], w[1]);
    mix(h[2], w[2]);
    mix(h[3], w[3]);
    p += 32;
    n -= 32;
  }
  size_t lane = 0;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    mix(h[lane++], w);
    p += 8;
    n -= 8;
  }
  if (n) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    mix(h[lane], w ^ (uint64_t{n} << 56));
  }
  uint64_t r = h[0];
  for (int i = 1; i < 4; ++i) mix(r, h[i] + static_cast<uint64_t>(i));
  mix(r, r >> 17);
  return r;
}

size_t JobStatsCut(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    const void* nl = memrchr(text.data(), '\n', end);
    if (!nl) return 0;
    const size_t p = static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;  // line start
    size_t i = p;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i < text.size() && text[i] == '-') return p;
    end = p - 1;
  }
  return 0;
}

size_t IndexJobStats(std::string_view text, std::vector<JobSpan>* out, std::vector<Issue>* issues, uint32_t first_line,
                     uint32_t* last_line) {
  out->clear();
  const size_t issues0 = issues->size();
  Lines lines(text, first_line);
  std::string_view line;
  bool in_job = false, skip_job = false, in_body = false;
  const char* base = text.data();
  auto close_body = [&](const char* end) {
    if (in_job && !skip_job && !out->empty()) {
      JobSpan& j = out->back();
      if (in_body) {
        j.body = std::string_view(j.body.data(), static_cast<size_t>(end - j.body.data()));
        j.hash = HashBytes(j.body);
      } else {
        j.hash = HashBytes({});
      }
    }
  };
  while (lines.Next(&line)) {
    // Cheap for op lines: only the first non-space character is looked at.
    size_t i = 0;
    while (i < line.size() && IsSpace(line[i])) ++i;
    if (i == line.size()) continue;
    const char c0 = line[i];
    if (in_body && !skip_job && c0 != '-') continue;  // an op line of the current body
    std::string_view t = Trim(line);
    if (c0 == '-') {
      close_body(line.data());
      in_body = false;
      t.remove_prefix(1);
      t = Trim(t);
      if (!StartsWith(t, "job_id:")) {
        ISSUE(issues, lines.no(), "list item is not '- job_id:': " + Quote(line));
        in_job = false;
        continue;
      }
      std::string_view id = StripQuotes(Trim(t.substr(7)));
      in_job = true;
      skip_job = id.empty();
      if (skip_job) {
        ISSUE(issues, lines.no(), "empty job_id: entry skipped");
        continue;
      }
      JobSpan js;
      js.job_id = id;
      js.line = lines.no();
      out->push_back(js);
      continue;
    }
    auto colon = t.find(':');
    std::string_view key = colon == std::string_view::npos ? t : t.substr(0, colon);
    if (key == "job_stats" && !in_job) continue;  // the header
    if (!in_job) {
      ISSUE(issues, lines.no(), "line outside a job entry: " + Quote(line));
      continue;
    }
    if (skip_job) continue;
    if (key == "snapshot_time" && colon != std::string_view::npos) {
      std::string_view tok[4];
      size_t n = Tokens(t.substr(colon + 1), tok + 1, 3);
      tok[0] = key;
      int64_t ns = 0;
      if (n >= 1 && n <= 3 && HeaderTime(tok, n + 1, &ns)) out->back().snapshot_ns = ns;
      else ISSUE(issues, lines.no(), "bad snapshot_time: " + Quote(line));
      continue;
    }
    if (key == "start_time" || key == "elapsed_time") continue;
    // The first op line: the body runs from here to the next entry.
    in_body = true;
    out->back().body = std::string_view(line.data(), 0);
    out->back().body_line = lines.no();
  }
  close_body(base + text.size());
  if (last_line) *last_line = lines.no();
  return issues->size() - issues0;
}

namespace {

enum class LineResult { kSkip, kIssue, kOp };

// One body line of job_stats: an op (appended to *ops), a line to skip, or an issue.
LineResult ParseJobOpLine(std::string_view line, uint32_t no, std::vector<JobOp>* ops, std::vector<Issue>* issues,
                          std::string* why) {
  std::string_view t = Trim(line);
  if (t.empty()) return LineResult::kSkip;
  auto colon = t.find(':');
  if (colon == std::string_view::npos) {
    ISSUE(issues, no, "no ':' in " + Quote(line));
    return LineResult::kIssue;
  }
  std::string_view key = t.substr(0, colon);
  if (key == "snapshot_time" || key == "start_time" || key == "elapsed_time") return LineResult::kSkip;
  JobOp op;
  op.name = key;
  if (!ParseOpBody(t.substr(colon + 1), &op, why)) {
    ISSUE(issues, no, std::string(key) + ": " + *why);
    return LineResult::kIssue;
  }
  ops->push_back(op);
  return LineResult::kOp;
}

}  // namespace

size_t ParseJobOps(std::string_view body, uint32_t first_line, std::vector<JobOp>* ops, std::vector<Issue>* issues,
                   JobLineCache* cache) {
  const size_t issues0 = issues->size();
  std::string why;
  const char* p = body.data();
  const char* const end = p + body.size();
  if (cache && cache->lines.size() < JobLineCache::kMaxLines) cache->lines.resize(JobLineCache::kMaxLines);
  for (uint32_t k = 0; p < end; ++k) {
    const uint32_t no = first_line + k;
    JobLineCache::Entry* e = cache && k < JobLineCache::kMaxLines ? &cache->lines[k] : nullptr;
    const size_t left = static_cast<size_t>(end - p);
    if (e && e->state != JobLineCache::Entry::kEmpty) {
      const size_t len = e->text.size();
      if (len <= left && (len == left || p[len] == '\n') && std::memcmp(p, e->text.data(), len) == 0) {
        if (e->state == JobLineCache::Entry::kOp) {
          JobOp op = e->op;
          op.name = std::string_view(p + e->name_off, op.name.size());
          op.unit = e->unit_null ? std::string_view() : std::string_view(p + e->unit_off, op.unit.size());
          ops->push_back(op);
        }
        p += len == left ? len : len + 1;
        continue;
      }
    }
    const void* nl = std::memchr(p, '\n', left);
    const size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - p) : left;
    const std::string_view line(p, len);
    p += nl ? len + 1 : len;
    const LineResult r = ParseJobOpLine(line, no, ops, issues, &why);
    if (!e) continue;
    if (r == LineResult::kIssue) {
      e->state = JobLineCache::Entry::kEmpty;
      continue;
    }
    e->text.assign(line);
    if (r == LineResult::kSkip) {
      e->state = JobLineCache::Entry::kSkip;
      continue;
    }
    const JobOp& op = ops->back();
    e->state = JobLineCache::Entry::kOp;
    e->op = op;
    e->name_off = static_cast<uint32_t>(op.name.data() - line.data());
    e->unit_null = op.unit.data() == nullptr;
    e->unit_off = e->unit_null ? 0 : static_cast<uint32_t>(op.unit.data() - line.data());
  }
  return issues->size() - issues0;
}

size_t ParseJobStats(std::string_view text, ParsedJobStats* out) {
  out->Clear();
  static thread_local std::vector<JobSpan> spans;
  IndexJobStats(text, &spans, &out->issues);
  for (const JobSpan& s : spans) {
    JobEntry e;
    e.job_id = s.job_id;
    e.snapshot_ns = s.snapshot_ns;
    e.line = s.line;
    e.first_op = static_cast<uint32_t>(out->ops.size());
    ParseJobOps(s.body, s.body_line, &out->ops, &out->issues);
    e.n_ops = static_cast<uint32_t>(out->ops.size()) - e.first_op;
    out->jobs.push_back(e);
  }
  return out->issues.size();
}

// ---------------------------------------------------------------- histograms
void ParsedHist::Clear() {
  snapshot_ns = -1;
  read_in_flight = write_in_flight = pending_read_pages = pending_write_pages = -1;
  hists.clear();
  buckets.clear();
  issues.clear();
}

const Histogram* ParsedHist::Find(std::string_view key) const {
  for (const auto& h : hists)
    if (h.key == key) return &h;
  return nullptr;
}

std::string_view HistKey(std::string_view title) {
  struct Map {
    std::string_view title, key;
  };
  static constexpr Map kMap[] = {
      {"pages per bulk r/w", "pages"},
      {"discontiguous pages", "discont_pages"},
      {"discontiguous blocks", "discont_blocks"},
      {"disk fragmented I/Os", "frags"},
      {"disk I/Os in flight", "in_flight"},
      {"I/O time (1/1000s)", "io_time_ms"},
      {"disk I/O size", "io_size"},
      {"block maps msec", "block_maps_ms"},
      {"pages per rpc", "pages"},
      {"rpcs in flight", "in_flight"},
      {"offset", "offset"},
  };
  for (const auto& m : kMap)
    if (m.title == title) return m.key;
  return {};
}

namespace {

bool ParseBucketLabel(std::string_view label, uint64_t* v) {
  uint64_t mult = 1;
  if (!label.empty()) {
    char c = label.back();
    if (c == 'K' || c == 'k') mult = 1ULL << 10;
    else if (c == 'M') mult = 1ULL << 20;
    else if (c == 'G') mult = 1ULL << 30;
    if (mult != 1) label.remove_suffix(1);
  }
  uint64_t x = 0;
  if (!ParseU64(label, &x) || x > (UINT64_MAX / mult)) return false;
  *v = x * mult;
  return true;
}

size_t ParseHistText(std::string_view text, ParsedHist* out, bool rpc) {
  out->Clear();
  Lines lines(text);
  std::string_view line;
  std::string_view tok[16];
  while (lines.Next(&line)) {
    size_t n = Tokens(line, tok, 15);
    if (n == 0) continue;
    std::string_view which;
    if (IsTimeHeader(tok[0], &which)) {
      int64_t ns = 0;
      if (!HeaderTime(tok, n > 15 ? 15 : n, &ns)) ISSUE(&out->issues, lines.no(), "bad " + std::string(which));
      else if (which == "snapshot_time") out->snapshot_ns = ns;
      continue;
    }
    std::string_view first = tok[0];
    if (first.size() >= 2 && first.back() == ':' && first[0] >= '0' && first[0] <= '9') {  // bucket row
      if (out->hists.empty()) {
        ISSUE(&out->issues, lines.no(), "bucket row before any histogram title");
        continue;
      }
      HistBucket b;
      if (!ParseBucketLabel(first.substr(0, first.size() - 1), &b.bucket)) {
        ISSUE(&out->issues, lines.no(), "bad bucket label " + Quote(first));
        continue;
      }
      if (n > 15) {
        ISSUE(&out->issues, lines.no(), "too many columns");
        continue;
      }
      size_t bar = 0;
      for (size_t i = 1; i < n; ++i)
        if (tok[i] == "|") bar = i;
      bool ok = n >= 2 && ParseU64(tok[1], &b.read);
      if (ok && bar) ok = bar + 1 < n && ParseU64(tok[bar + 1], &b.write);
      if (!ok) {
        ISSUE(&out->issues, lines.no(), "bad bucket row " + Quote(line));
        continue;
      }
      out->buckets.push_back(b);
      ++out->hists.back().n;
      continue;
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos && (first == "read" || first == "modify" || first == "write"))
      continue;  // column header
    if (rpc && colon != std::string_view::npos && line.find('%') == std::string_view::npos) {
      std::string_view key = Trim(line.substr(0, colon));
      std::string_view val = Trim(line.substr(colon + 1));
      uint64_t v = 0;
      if (!ParseU64(val, &v) || v > INT64_MAX) {
        ISSUE(&out->issues, lines.no(), "bad value in " + Quote(line));
        continue;
      }
      int64_t x = static_cast<int64_t>(v);
      if (key == "read RPCs in flight") out->read_in_flight = x;
      else if (key == "write RPCs in flight") out->write_in_flight = x;
      else if (key == "pending read pages") out->pending_read_pages = x;
      else if (key == "pending write pages") out->pending_write_pages = x;
      else if (key == "modify_RPCs_in_flight") out->write_in_flight = x;
      // dio read/write RPCs in flight (1.8): known, not kept
      continue;
    }
    if (line.find('%') != std::string_view::npos) {  // a title line
      std::string_view t = Trim(line);
      size_t end = 0;
      while (end < t.size()) {
        if (t[end] == '\t' || (t[end] == ' ' && end + 1 < t.size() && t[end + 1] == ' ')) break;
        ++end;
      }
      Histogram h;
      h.title = t.substr(0, end);
      h.key = HistKey(h.title);
      h.first = static_cast<uint32_t>(out->buckets.size());
      out->hists.push_back(h);
      continue;
    }
    ISSUE(&out->issues, lines.no(), "unrecognized line " + Quote(line));
  }
  return out->issues.size();
}

}  // namespace

size_t ParseBrwStats(std::string_view text, ParsedHist* out) { return ParseHistText(text, out, false); }
size_t ParseRpcStats(std::string_view text, ParsedHist* out) { return ParseHistText(text, out, true); }

// ---------------------------------------------------------------- lctl dump
size_t ParseLctlDump(std::string_view text, std::vector<LctlParam>* out, std::vector<Issue>* issues) {
  out->clear();
  Lines lines(text);
  std::string_view line;
  const char* base = text.data();
  LctlParam* cur = nullptr;
  size_t value_begin = 0, value_end = 0;
  auto close = [&] {
    if (cur) cur->value = std::string_view(base + value_begin, value_end - value_begin);
  };
  while (lines.Next(&line)) {
    size_t off = static_cast<size_t>(line.data() - base);
    auto eq = line.find('=');
    bool starts = false;
    if (eq != std::string_view::npos && eq > 0) {
      std::string_view name = line.substr(0, eq);
      starts = name.find(' ') == std::string_view::npos && name.find('\t') == std::string_view::npos &&
               name.find(':') != 0 && (std::isalpha(static_cast<unsigned char>(name[0])) != 0);
      // Names are dotted or single words (memused=..., health_check=...).
    }
    if (starts) {
      close();
      out->push_back(LctlParam{line.substr(0, eq), {}, lines.no()});
      cur = &out->back();
      std::string_view inline_v = line.substr(eq + 1);
      if (inline_v.empty()) {
        value_begin = value_end = off + line.size() + 1 <= text.size() ? off + line.size() + 1 : text.size();
      } else {
        value_begin = off + eq + 1;
        value_end = off + line.size();
      }
      continue;
    }
    if (!cur) {
      // `lctl list_param` style bare names before any value: empty parameters.
      std::string_view t = Trim(line);
      if (!t.empty() && std::isalpha(static_cast<unsigned char>(t[0])) && t.find('.') != std::string_view::npos &&
          t.find(' ') == std::string_view::npos && t.find(':') == std::string_view::npos) {
        out->push_back(LctlParam{t, {}, lines.no()});
        continue;
      }
      if (!t.empty() && issues) ISSUE(issues, lines.no(), "text before the first parameter");
      continue;
    }
    if (value_begin > off) value_begin = off;
    value_end = off + line.size();
  }
  close();
  return issues ? issues->size() : 0;
}

}  // namespace iosonar::lustre
