// Parsers for `lfs df` and `lctl dl -t` (pure), and TOKIO's fullness and
// failover rules over their results.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <utility>

#include "exporters/health/health.h"

namespace iosonar::health {

void Warnings::Add(size_t line, std::string what) {
  ++count;
  if (texts.size() < kMaxWarningTexts) texts.push_back("line " + std::to_string(line) + ": " + std::move(what));
}

namespace {

// Splits on blanks (space, tab, CR); at most `max` tokens are kept (the rest
// of a huge line is ignored, the caller sees there were more).
std::vector<std::string_view> Tokens(std::string_view line, size_t max = 16) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size() && out.size() < max) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ParseNonNeg(std::string_view s, int64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *v >= 0;
}

// Sums of absurd (garbled) sizes stop at INT64_MAX instead of overflowing.
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

// Quotes a token for a warning, cut to a readable length.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 40)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > 40) out += "...";
  return out + "'";
}

// Calls fn(line_number, line) for each line (without its '\n').
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  size_t lineno = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    ++lineno;
    fn(lineno, line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// "BEGIN 1489998203" -> true (epoch set; 0 with a warning if not a number).
bool IsBegin(const std::vector<std::string_view>& tok, size_t lineno, Warnings* w, int64_t* epoch) {
  if (tok.empty() || tok[0] != "BEGIN") return false;
  *epoch = 0;
  if (tok.size() != 2 || !ParseNonNeg(tok[1], epoch)) {
    *epoch = 0;
    w->Add(lineno, "BEGIN line without an epoch (expected 'BEGIN <seconds>')");
  }
  return true;
}

// The snapshot lines are added to: the last one, or a first one for output
// without BEGIN lines.
template <typename Snap>
Snap& CurrentSnapshot(std::vector<Snap>& snapshots) {
  if (snapshots.empty()) snapshots.emplace_back();
  return snapshots.back();
}

// Calls fn(line_number, line, tokens) for each non-blank line of saved
// output; a NERSC cron "BEGIN <epoch>" line starts a new snapshot in out
// (then on_begin()) instead.
template <typename Out, typename OnBegin, typename Fn>
void ForEachSnapshotLine(std::string_view text, Out& out, OnBegin&& on_begin, Fn&& fn) {
  ForEachLine(text, [&](size_t lineno, std::string_view line) {
    auto tok = Tokens(line);
    if (tok.empty()) return;
    int64_t epoch = 0;
    if (IsBegin(tok, lineno, &out.warnings, &epoch)) {
      out.snapshots.emplace_back().epoch = epoch;
      on_begin();
      return;
    }
    fn(lineno, line, tok);
  });
}

// "snx11035-OST0006" -> fs "snx11035", kind "ost". False if the name is not
// FSNAME-{OST,MDT}XXXX.
bool SplitTarget(std::string_view name, std::string* fs, std::string* kind) {
  size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return false;
  std::string_view t = name.substr(dash + 1);
  if (t.size() < 4) return false;
  std::string_view k = t.substr(0, 3);
  if (k != "OST" && k != "MDT") return false;
  for (char c : t.substr(3))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  *fs = std::string(name.substr(0, dash));
  *kind = k == "OST" ? "ost" : "mdt";
  return true;
}

}  // namespace

// ---- lfs df -----------------------------------------------------------------

LfsDf ParseLfsDf(std::string_view text) {
  LfsDf out;
  bool inodes = false;
  std::string pending_uuid;  // a UUID alone on its line: lfs df wraps long names
  size_t pending_line = 0;
  auto current = [&]() -> DfSnapshot& { return CurrentSnapshot(out.snapshots); };
  auto on_begin = [&] {
    pending_uuid.clear();
    inodes = false;
  };
  ForEachSnapshotLine(text, out, on_begin, [&](size_t lineno, std::string_view line,
                                              const std::vector<std::string_view>& tok) {
    if (tok[0] == "UUID") {  // header: "UUID 1K-blocks Used Available Use% Mounted on" or "UUID Inodes IUsed IFree IUse% Mounted on"
      inodes = tok.size() > 1 && tok[1] == "Inodes";
      if (tok.size() > 1 && tok[1] != "Inodes" && tok[1] != "1K-blocks")
        out.warnings.Add(lineno, "unknown lfs df header column " + Quote(tok[1]) + " (only 1K-blocks and Inodes are understood)");
      pending_uuid.clear();
      return;
    }
    if (tok[0] == "filesystem_summary:" || (tok[0] == "filesystem" && tok.size() > 1 && tok[1] == "summary:")) {
      pending_uuid.clear();
      return;
    }
    std::string uuid;
    size_t first = 0;
    if (!pending_uuid.empty() && !tok[0].ends_with("_UUID")) {
      uuid = std::move(pending_uuid);
      pending_uuid.clear();
    } else {
      if (!pending_uuid.empty()) out.warnings.Add(pending_line, "target " + Quote(pending_uuid) + " without numbers");
      pending_uuid.clear();
      if (!tok[0].ends_with("_UUID")) {
        out.warnings.Add(lineno, "unrecognised line starting " + Quote(tok[0]));
        return;
      }
      uuid = std::string(tok[0]);
      first = 1;
      if (tok.size() == 1) {
        pending_uuid = uuid;
        pending_line = lineno;
        return;
      }
    }
    DfTarget t;
    t.target = uuid.substr(0, uuid.size() >= 5 && uuid.ends_with("_UUID") ? uuid.size() - 5 : uuid.size());
    if (!SplitTarget(t.target, &t.fs, &t.kind)) {
      out.warnings.Add(lineno, "target name " + Quote(t.target) + " is not FSNAME-OSTxxxx or FSNAME-MDTxxxx");
      return;
    }
    t.inodes = inodes;
    auto rest = std::vector<std::string_view>(tok.begin() + static_cast<long>(first), tok.end());
    if (!rest.empty() && rest[0] == ":") {  // "snx11035-OST0003_UUID : inactive device"
      bool inactive = std::find(rest.begin(), rest.end(), "inactive") != rest.end();
      if (!inactive) {
        out.warnings.Add(lineno, "target " + Quote(t.target) + ": unknown state line");
        return;
      }
      t.active = false;
      current().targets.push_back(std::move(t));
      return;
    }
    if (rest.size() < 5) {
      out.warnings.Add(lineno, "truncated target line (" + std::to_string(rest.size()) +
                                   " of 5 columns after the UUID: total used available use% mount)");
      return;
    }
    if (!ParseNonNeg(rest[0], &t.total) || !ParseNonNeg(rest[1], &t.used) || !ParseNonNeg(rest[2], &t.avail)) {
      out.warnings.Add(lineno, "non-numeric size in " + Quote(line) + " (expected KiB or inode counts; lfs df -h is not parsed)");
      return;
    }
    if (!rest[3].ends_with('%')) {
      out.warnings.Add(lineno, "use% column " + Quote(rest[3]) + " does not end in %");
      return;
    }
    if (t.used > t.total) out.warnings.Add(lineno, "target " + Quote(t.target) + ": used exceeds total");
    std::string_view mnt = rest[4];
    size_t br = mnt.find('[');
    if (br != std::string_view::npos && mnt.ends_with(']')) {
      std::string_view inner = mnt.substr(br + 1, mnt.size() - br - 2);  // "OST:6"
      size_t colon = inner.find(':');
      if (colon != std::string_view::npos && !ParseNonNeg(inner.substr(colon + 1), &t.index)) t.index = -1;
      mnt = mnt.substr(0, br);
    }
    t.mount = std::string(mnt);
    current().targets.push_back(std::move(t));
  });
  if (!pending_uuid.empty()) out.warnings.Add(pending_line, "target " + Quote(pending_uuid) + " without numbers at the end");
  return out;
}

std::vector<FsFullness> SummarizeFullness(const DfSnapshot& snap) {
  std::vector<FsFullness> out;
  std::map<std::pair<std::string, bool>, size_t> slot;
  std::map<std::pair<std::string, bool>, std::set<std::string>> seen;  // a file system mounted twice is listed twice
  for (const auto& t : snap.targets) {
    auto key = std::make_pair(t.fs, t.inodes);
    auto [it, fresh] = slot.try_emplace(key, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().fs = t.fs;
      out.back().mount = t.mount;
      out.back().inodes = t.inodes;
    }
    if (!seen[key].insert(t.target).second) continue;
    FsFullness& f = out[it->second];
    if (!t.active) {
      ++f.inactive_count;
      continue;
    }
    if (t.kind == "mdt") {
      ++f.mdt_count;
      continue;
    }
    double pct = t.used_pct();
    if (f.ost_count == 0 || pct < f.min_pct) f.min_pct = pct, f.min_target = t.target;
    if (f.ost_count == 0 || pct > f.max_pct) f.max_pct = pct, f.max_target = t.target;
    ++f.ost_count;
    f.total = SatAdd(f.total, t.total);
    f.used = SatAdd(f.used, t.used);
    f.avail = SatAdd(f.avail, t.avail);
  }
  for (auto& f : out)
    f.avg_pct = f.total > 0 ? 100.0 * static_cast<double>(f.used) / static_cast<double>(f.total) : 0;
  return out;
}

// ---- lctl dl -t ---------------------------------------------------------------

LctlDl ParseLctlDlT(std::string_view text) {
  LctlDl out;
  auto current = [&]() -> DlSnapshot& { return CurrentSnapshot(out.snapshots); };
  ForEachSnapshotLine(text, out, [] {}, [&](size_t lineno, std::string_view,
                                            const std::vector<std::string_view>& tok) {
    DlDevice d;
    if (!ParseNonNeg(tok[0], &d.idx)) {
      out.warnings.Add(lineno, "unrecognised line starting " + Quote(tok[0]) + " (expected a device index)");
      return;
    }
    if (tok.size() < 6) {
      out.warnings.Add(lineno, "truncated device line (" + std::to_string(tok.size()) +
                                   " of 6 columns: idx status role name uuid refcnt [nid])");
      return;
    }
    if (tok.size() > 7) {
      out.warnings.Add(lineno, "device line with " + std::string(tok.size() >= 16 ? "16 or more" : std::to_string(tok.size())) +
                                   " columns (expected 6 or 7)");
      return;
    }
    for (char c : tok[1])
      if (c < 'A' || c > 'Z') {
        out.warnings.Add(lineno, "device status " + Quote(tok[1]) + " is not an upper-case word (UP, ST, IN, ...)");
        return;
      }
    if (!ParseNonNeg(tok[5], &d.refcnt)) {
      out.warnings.Add(lineno, "non-numeric refcount " + Quote(tok[5]));
      return;
    }
    d.status = std::string(tok[1]);
    d.role = std::string(tok[2]);
    d.name = std::string(tok[3]);
    d.uuid = std::string(tok[4]);
    if (tok.size() == 7) {
      d.nid = std::string(tok[6]);
      size_t at = d.nid.find('@');
      d.ip = d.nid.substr(0, at);
      if (at == std::string::npos || at == 0) {
        out.warnings.Add(lineno, "NID " + Quote(d.nid) + " is not ADDRESS@NETWORK");
        d.ip = d.nid;
      }
    }
    // osc/mdc/osp: FSNAME-OSTxxxx-osc-SUFFIX; lov/lmv: FSNAME-clilov-SUFFIX.
    std::string_view name = d.name;
    for (std::string_view mark : {"-osc-", "-mdc-", "-osp-", "-lwp-"}) {
      size_t p = name.find(mark);
      // Lustre 1.8 names server-side oscs without a suffix: "lustre-OST0000-osc".
      if (p == std::string_view::npos && name.ends_with(mark.substr(0, 4))) p = name.size() - 4;
      if (p != std::string_view::npos) {
        std::string fs, kind;
        if (SplitTarget(name.substr(0, p), &fs, &kind)) {
          d.target = std::string(name.substr(0, p));
          d.fs = std::move(fs);
        }
        break;
      }
    }
    if (d.fs.empty())
      for (std::string_view mark : {"-clilov-", "-clilmv-"}) {
        size_t p = name.find(mark);
        if (p != std::string_view::npos && p > 0) d.fs = std::string(name.substr(0, p));
      }
    if (d.role == "osc" && d.target.empty()) {
      out.warnings.Add(lineno, "osc device name " + Quote(d.name) + " is not FSNAME-OSTxxxx-osc-...");
      return;
    }
    if (d.role == "osc" && d.nid.empty())
      out.warnings.Add(lineno, "osc device " + Quote(d.name) + " without a NID (output of `lctl dl` without -t?)");
    current().devices.push_back(std::move(d));
  });
  return out;
}

int64_t FsFailover::overloaded_oss() const {
  int64_t n = 0;
  for (const auto& o : oss) n += o.overloaded;
  return n;
}

int64_t FsFailover::overloaded_ost() const {
  int64_t n = 0;
  for (const auto& o : oss)
    if (o.overloaded) n += o.ost_count();
  return n;
}

std::vector<FsFailover> GetFailovers(const DlSnapshot& snap) {
  std::vector<FsFailover> out;
  std::map<std::string, size_t, std::less<>> fs_slot;
  std::vector<std::map<std::string, size_t, std::less<>>> oss_slot;
  std::vector<std::set<std::string, std::less<>>> seen;  // an OST counts once (a file system mounted twice has two oscs per OST)
  for (const auto& d : snap.devices) {
    if (d.role != "osc" || d.fs.empty()) continue;
    auto [it, fresh] = fs_slot.try_emplace(d.fs, out.size());
    if (fresh) {
      out.emplace_back().fs = d.fs;
      oss_slot.emplace_back();
      seen.emplace_back();
    }
    size_t i = it->second;
    FsFailover& f = out[i];
    if (!seen[i].insert(d.target).second) continue;
    ++f.ost_count;
    if (d.status != "UP") ++f.not_up;
    if (d.ip.empty()) continue;
    auto [ot, ofresh] = oss_slot[i].try_emplace(d.ip, f.oss.size());
    if (ofresh) f.oss.emplace_back().ip = d.ip;
    f.oss[ot->second].targets.push_back(d.target);
  }
  for (auto& f : out) {
    std::map<int64_t, int64_t> hist;  // OSTs per OSS -> how many OSSes
    for (const auto& o : f.oss) ++hist[o.ost_count()];
    int64_t best = 0;
    for (auto [count, n] : hist)  // ascending count: a tie keeps the smaller count
      if (n > best) best = n, f.mode = count;
    for (auto& o : f.oss) {
      o.abnormal = o.ost_count() != f.mode;
      o.overloaded = o.ost_count() > f.mode;
      o.overload_factor = f.mode > 0 ? static_cast<double>(o.ost_count()) / static_cast<double>(f.mode) : 1.0;
    }
  }
  return out;
}

}  // namespace iosonar::health
