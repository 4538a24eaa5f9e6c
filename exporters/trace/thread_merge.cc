#include "exporters/trace/thread_merge.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

namespace iosonar::trace {
namespace {

// Detail runs the rules may merge: successful data ops at known offsets.
bool Detail(const Run& r) {
  return !r.agg && r.err == 0 && r.offset >= 0 && r.size > 0 && r.count > 0 && IsDataOp(r.op);
}

class Merger {
 public:
  explicit Merger(std::vector<TakenRun>& v) : v_(v), root_(v.size()) { std::iota(root_.begin(), root_.end(), 0u); }

  uint32_t Find(uint32_t i) {
    while (root_[i] != i) {
      root_[i] = root_[root_[i]];
      i = root_[i];
    }
    return i;
  }

  // from's ops into into's: sums, the earliest start and latest end.
  void Fold(uint32_t into, uint32_t from) {
    Run& a = v_[into].r;
    const Run& b = v_[from].r;
    a.count += b.count;
    a.bytes += b.bytes;
    a.dur += b.dur;
    a.n_seq += a.agg ? b.n_seq : 0;
    a.n_strided += b.n_strided;
    a.n_random += b.n_random;
    a.t_start = std::min(a.t_start, b.t_start);
    a.t_end = std::max(a.t_end, b.t_end);
    v_[from].gone = true;
    root_[from] = into;
    ++merged_;
  }

  void Aggregates(uint64_t interval) {
    if (!interval) return;
    std::vector<uint32_t> ix;
    for (uint32_t i = 0; i < v_.size(); ++i)
      if (v_[i].r.agg) ix.push_back(i);
    auto key = [&](uint32_t i) {
      const Run& r = v_[i].r;
      return std::make_tuple(r.file_id, r.op, r.layer, r.fd, r.err, r.size, r.comm_size, r.t_start / interval);
    };
    std::stable_sort(ix.begin(), ix.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    for (size_t k = 1, first = 0; k < ix.size(); ++k) {
      if (key(ix[k]) == key(ix[first])) {
        Fold(ix[first], ix[k]);
      } else {
        first = k;
      }
    }
  }

  // Threads taking turns: m strided runs (same stride, count and size) at
  // offsets o, o + size, ..., o + (m-1) size with m * size == stride cover
  // [o, o + stride * count) contiguously.
  void Interleaved(uint64_t window) {
    std::vector<uint32_t> ix;
    for (uint32_t i = 0; i < v_.size(); ++i) {
      const Run& r = v_[i].r;
      uint64_t full;
      if (Detail(r) && r.strided && r.stride > r.size &&
          !__builtin_mul_overflow(static_cast<uint64_t>(r.size), r.count, &full) && full == r.bytes)
        ix.push_back(i);
    }
    auto key = [&](uint32_t i) {
      const Run& r = v_[i].r;
      return std::make_tuple(r.file_id, r.op, r.layer, r.fd, r.size, r.comm_size, r.stride, r.count, r.t_start / window);
    };
    std::stable_sort(ix.begin(), ix.end(), [&](uint32_t a, uint32_t b) {
      auto ka = key(a), kb = key(b);
      return ka != kb ? ka < kb : v_[a].r.offset < v_[b].r.offset;
    });
    size_t k = 0;
    while (k < ix.size()) {
      // The longest chain from ix[k] with offsets one size apart (same key).
      size_t e = k + 1;
      while (e < ix.size() && key(ix[e]) == key(ix[k]) &&
             v_[ix[e]].r.offset == v_[ix[e - 1]].r.offset + v_[ix[e - 1]].r.size)
        ++e;
      const Run& f = v_[ix[k]].r;
      const int64_t m = static_cast<int64_t>(e - k);
      int64_t span, reach;
      if (m >= 2 && !__builtin_mul_overflow(m, f.size, &span) && span == f.stride &&
          !__builtin_mul_overflow(f.stride, static_cast<int64_t>(f.count), &span) &&
          !__builtin_add_overflow(f.offset, span, &reach)) {
        const uint32_t into = ix[k];
        for (size_t j = k + 1; j < e; ++j) Fold(into, ix[j]);
        Run& r = v_[into].r;
        r.strided = 0;
        r.stride = 0;
        r.next_offset = reach;
      }
      k = e;
    }
  }

  // Contiguous runs that continue each other, in offset order.
  void Contiguous(uint64_t window) {
    std::vector<uint32_t> ix;
    for (uint32_t i = 0; i < v_.size(); ++i)
      if (!v_[i].gone && Detail(v_[i].r) && !v_[i].r.strided) ix.push_back(i);
    std::vector<uint64_t> win(v_.size());
    for (uint32_t i : ix) win[i] = v_[i].r.t_start / window;
    auto key = [&](uint32_t i) {
      const Run& r = v_[i].r;
      return std::make_tuple(r.file_id, r.op, r.layer, r.fd, r.size, r.comm_size, win[i]);
    };
    std::stable_sort(ix.begin(), ix.end(), [&](uint32_t a, uint32_t b) {
      auto ka = key(a), kb = key(b);
      return ka != kb ? ka < kb : v_[a].r.offset < v_[b].r.offset;
    });
    for (size_t k = 1, cur = 0; k < ix.size(); ++k) {
      Run& c = v_[ix[cur]].r;
      const Run& n = v_[ix[k]].r;
      if (key(ix[k]) == key(ix[cur]) && n.offset == c.next_offset) {
        const int64_t next = n.next_offset;
        Fold(ix[cur], ix[k]);
        c.next_offset = next;
      } else {
        cur = k;
      }
    }
  }

  // Each survivor's distinct threads.
  void Threads() {
    if (!merged_) return;
    std::vector<std::pair<uint32_t, int32_t>> t;
    for (uint32_t i = 0; i < v_.size(); ++i) t.emplace_back(Find(i), v_[i].tid);
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
    for (size_t k = 0; k < t.size();) {
      size_t e = k;
      while (e < t.size() && t[e].first == t[k].first) ++e;
      v_[t[k].first].threads = static_cast<uint32_t>(e - k);
      k = e;
    }
  }

  uint64_t merged() const { return merged_; }

 private:
  std::vector<TakenRun>& v_;
  std::vector<uint32_t> root_;
  uint64_t merged_ = 0;
};

}  // namespace

uint64_t MergeThreadRuns(std::vector<TakenRun>& v, uint64_t window_ticks, uint64_t interval_ticks) {
  if (v.size() < 2 || v.size() > UINT32_MAX) return 0;
  Merger m(v);
  m.Aggregates(interval_ticks);
  if (window_ticks) {
    m.Interleaved(window_ticks);
    m.Contiguous(window_ticks);
  }
  m.Threads();
  return m.merged();
}

}  // namespace iosonar::trace
