// The set of event.seq values stored for one event.stream, as sorted,
// disjoint, non-adjacent closed intervals: how the SQLite store remembers
// what it has ("nothing twice") without an index entry per record.
//
// A stream's records normally arrive in seq order, so the set is usually one
// interval and Insert() extends its end; resends, gaps filled later and
// out-of-order arrival are handled by a binary search. Stored as text,
// "0-1499,1503,1505-1600" (a single value is written without its "-b").
//
// A SeqRanges is a plain value: not thread-safe, cheap to copy when small.
#pragma once
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace iosonar {

class SeqRanges {
 public:
  using Interval = std::pair<int64_t, int64_t>;  // [first, second], first <= second

  bool empty() const { return iv_.empty(); }
  const std::vector<Interval>& intervals() const { return iv_; }
  void clear() { iv_.clear(); }

  bool Contains(int64_t seq) const {
    if (iv_.empty() || seq > iv_.back().second) return false;
    auto it = std::upper_bound(iv_.begin(), iv_.end(), seq, [](int64_t v, const Interval& i) { return v < i.first; });
    return it != iv_.begin() && std::prev(it)->second >= seq;
  }

  // Adds seq; returns false if it was already there.
  bool Insert(int64_t seq) {
    if (!iv_.empty()) {
      Interval& last = iv_.back();
      if (seq > last.second) {  // the common case: the next seq of the stream
        if (seq - 1 == last.second) last.second = seq;
        else iv_.emplace_back(seq, seq);
        return true;
      }
    } else {
      iv_.emplace_back(seq, seq);
      return true;
    }
    // First interval starting after seq; the one before it may hold seq.
    auto it = std::upper_bound(iv_.begin(), iv_.end(), seq, [](int64_t v, const Interval& i) { return v < i.first; });
    if (it != iv_.begin() && std::prev(it)->second >= seq) return false;
    const bool joins_prev = it != iv_.begin() && std::prev(it)->second == seq - 1;
    const bool joins_next = it != iv_.end() && it->first == seq + 1;  // it->first > seq, so seq < INT64_MAX
    if (joins_prev && joins_next) {
      std::prev(it)->second = it->second;
      iv_.erase(it);
    } else if (joins_prev) {
      std::prev(it)->second = seq;
    } else if (joins_next) {
      it->first = seq;
    } else {
      iv_.insert(it, Interval(seq, seq));
    }
    return true;
  }

  std::string ToText() const {
    std::string out;
    char b[24];  // an int64 is at most 20 characters
    for (const auto& [a, z] : iv_) {
      if (!out.empty()) out.push_back(',');
      out.append(b, std::to_chars(b, b + sizeof b, a).ptr);
      if (z != a) {
        out.push_back('-');
        out.append(b, std::to_chars(b, b + sizeof b, z).ptr);
      }
    }
    return out;
  }

  // Parses ToText()'s form; false (and *out unchanged) if the text is not
  // sorted, disjoint, non-adjacent intervals.
  static bool FromText(std::string_view s, SeqRanges* out) {
    SeqRanges r;
    const char* p = s.data();
    const char* end = p + s.size();
    while (p < end) {
      int64_t a, z;
      auto ra = std::from_chars(p, end, a);
      if (ra.ec != std::errc()) return false;
      p = ra.ptr;
      z = a;
      if (p < end && *p == '-') {  // "a-b"; b may be negative: "-5--3"
        auto rz = std::from_chars(p + 1, end, z);
        if (rz.ec != std::errc()) return false;
        p = rz.ptr;
      }
      if (z < a) return false;
      if (!r.iv_.empty() && (r.iv_.back().second >= a || r.iv_.back().second + 1 == a)) return false;
      r.iv_.emplace_back(a, z);
      if (p < end) {
        if (*p != ',' || p + 1 == end) return false;
        ++p;
      }
    }
    *out = std::move(r);
    return true;
  }

 private:
  std::vector<Interval> iv_;
};

}  // namespace iosonar
