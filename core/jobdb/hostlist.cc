// Slurm host list expansion and compression. See hostlist.h.
#include "core/jobdb/hostlist.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

namespace iosonar {

namespace {

Status Bad(std::string_view list, size_t pos, const std::string& what) {
  return Status::Invalid("host list '" + std::string(list) + "' at offset " + std::to_string(pos) + ": " + what);
}

bool IsSep(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

struct Num {
  int64_t v;
  bool ok;
};

Num ParseNum(std::string_view s) {
  if (s.empty() || s.size() > 18) return {0, false};
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return {0, false};
    v = v * 10 + (c - '0');
  }
  return {v, true};
}

std::string Pad(int64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// Expands one group body "1-3,07" (offset base for messages) into strings.
Status ExpandGroup(std::string_view list, size_t base, std::string_view body, std::vector<std::string>* out,
                   size_t max_hosts) {
  if (body.empty()) return Bad(list, base, "empty brackets");
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string_view::npos) comma = body.size();
    std::string_view r = body.substr(start, comma - start);
    size_t at = base + start;
    if (r.empty()) return Bad(list, at, "empty range in brackets");
    size_t dash = r.find('-');
    std::string_view lo_s = r.substr(0, dash);
    std::string_view hi_s = dash == std::string_view::npos ? lo_s : r.substr(dash + 1);
    Num lo = ParseNum(lo_s), hi = ParseNum(hi_s);
    if (!lo.ok || !hi.ok)
      return Bad(list, at, "'" + std::string(r) + "' is not a number or a range N-M of at most 18 digits");
    if (hi.v < lo.v) return Bad(list, at, "range '" + std::string(r) + "' runs backwards");
    if (static_cast<uint64_t>(hi.v - lo.v) >= max_hosts || out->size() + static_cast<size_t>(hi.v - lo.v) >= max_hosts)
      return Bad(list, at, "more than " + std::to_string(max_hosts) + " hosts");
    size_t width = lo_s.size() > 1 && lo_s[0] == '0' ? lo_s.size() : 0;
    for (int64_t v = lo.v; v <= hi.v; ++v) out->push_back(Pad(v, width));
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view list, size_t max_hosts) {
  std::vector<std::string> hosts;
  size_t i = 0;
  while (i < list.size()) {
    if (IsSep(list[i])) {
      ++i;
      continue;
    }
    // One entry: up to the next separator outside brackets.
    size_t entry_start = i;
    std::vector<std::string> partial{""};
    while (i < list.size() && !IsSep(list[i])) {
      char c = list[i];
      if (c == ']') return Bad(list, i, "']' without '['");
      if (c == '[') {
        size_t close = i + 1;
        while (close < list.size() && list[close] != ']') {
          if (list[close] == '[') return Bad(list, close, "nested '['");
          ++close;
        }
        if (close >= list.size()) return Bad(list, i, "'[' is never closed");
        std::vector<std::string> vals;
        Status st = ExpandGroup(list, i + 1, list.substr(i + 1, close - i - 1), &vals, max_hosts);
        if (!st.ok()) return st;
        if (partial.size() * vals.size() + hosts.size() > max_hosts)
          return Bad(list, i, "more than " + std::to_string(max_hosts) + " hosts");
        std::vector<std::string> next;
        next.reserve(partial.size() * vals.size());
        for (const auto& p : partial)
          for (const auto& v : vals) next.push_back(p + v);
        partial = std::move(next);
        i = close + 1;
      } else {
        size_t j = i;
        while (j < list.size() && !IsSep(list[j]) && list[j] != '[' && list[j] != ']') ++j;
        for (auto& p : partial) p.append(list.substr(i, j - i));
        i = j;
      }
    }
    if (i > entry_start) hosts.insert(hosts.end(), partial.begin(), partial.end());
  }
  return hosts;
}

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  // Key: prefix and padded width (0 = natural numbers, no leading zeros).
  struct Group {
    std::string prefix;
    size_t width;
    std::set<int64_t> nums;
  };
  std::vector<Group> groups;
  std::vector<std::string> plain;  // hosts without trailing digits, in order (deduplicated)
  std::vector<std::pair<int, size_t>> order;  // (0 plain / 1 group, index), first appearance
  std::map<std::pair<std::string, size_t>, size_t> index;
  std::set<std::string> seen_plain;
  // Padded widths present per prefix, so "n10" joins "n[01-09]" rather than standing apart.
  std::map<std::string, std::set<size_t>> padded;
  struct Split {
    std::string prefix;
    std::string digits;
  };
  std::vector<Split> splits;
  splits.reserve(hosts.size());
  for (const auto& h : hosts) {
    size_t d = h.size();
    while (d > 0 && h[d - 1] >= '0' && h[d - 1] <= '9') --d;
    std::string digits = h.substr(d);
    if (digits.size() > 18) {  // too long to be a number: keep it whole
      d = h.size();
      digits.clear();
    }
    splits.push_back({h.substr(0, d), digits});
    if (digits.size() > 1 && digits[0] == '0') padded[h.substr(0, d)].insert(digits.size());
  }
  for (size_t k = 0; k < hosts.size(); ++k) {
    const Split& s = splits[k];
    if (s.digits.empty()) {
      if (seen_plain.insert(hosts[k]).second) {
        order.push_back({0, plain.size()});
        plain.push_back(hosts[k]);
      }
      continue;
    }
    size_t width = 0;
    if (s.digits.size() > 1 && s.digits[0] == '0') width = s.digits.size();
    else if (auto p = padded.find(s.prefix); p != padded.end() && p->second.count(s.digits.size())) width = s.digits.size();
    auto key = std::make_pair(s.prefix, width);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      order.push_back({1, groups.size()});
      groups.push_back({s.prefix, width, {}});
    }
    groups[it->second].nums.insert(ParseNum(s.digits).v);
  }
  std::string out;
  for (auto [kind, idx] : order) {
    if (!out.empty()) out.push_back(',');
    if (kind == 0) {
      out += plain[idx];
      continue;
    }
    const Group& g = groups[idx];
    out += g.prefix;
    if (g.nums.size() == 1) {
      out += Pad(*g.nums.begin(), g.width);
      continue;
    }
    out.push_back('[');
    bool first = true;
    for (auto it = g.nums.begin(); it != g.nums.end();) {
      int64_t lo = *it, hi = lo;
      auto jt = std::next(it);
      while (jt != g.nums.end() && *jt == hi + 1) hi = *jt++;
      if (!first) out.push_back(',');
      first = false;
      out += Pad(lo, g.width);
      if (hi > lo) out += "-" + Pad(hi, g.width);
      it = jt;
    }
    out.push_back(']');
  }
  return out;
}

}  // namespace iosonar
