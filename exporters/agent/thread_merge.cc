#include "exporters/agent/thread_merge.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace iosonar::trace {
namespace {

// Detail runs the rules may merge: successful data ops at known offsets.
bool Detail(const Run& r) {
  return !r.agg && r.err == 0 && r.offset >= 0 && r.size > 0 && r.count > 0 && IsDataOp(r.op);
}

// The sort key of a rule: the fields that must be equal, hashed (the fields
// are compared again before a merge: a collision only loses a merge), then
// the offset, then the list order (the result does not depend on the sort).
struct Key {
  uint64_t h;
  int64_t off;
  uint32_t i;
  bool operator<(const Key& o) const { return h != o.h ? h < o.h : off != o.off ? off < o.off : i < o.i; }
};
inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
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

  // The fields a rule needs equal (the window index passed in).
  static bool Same(const Run& a, const Run& b) {
    return a.file_id == b.file_id && a.op == b.op && a.layer == b.layer && a.fd == b.fd && a.err == b.err &&
           a.size == b.size && a.comm_size == b.comm_size && a.agg == b.agg;
  }
  static uint64_t Hash(const Run& r, uint64_t win) {
    uint64_t h = Mix(r.file_id, r.op);
    h = Mix(h, r.layer);
    h = Mix(h, static_cast<uint32_t>(r.fd));
    h = Mix(h, static_cast<uint32_t>(r.err));
    h = Mix(h, static_cast<uint64_t>(r.size));
    h = Mix(h, static_cast<uint32_t>(r.comm_size));
    return Mix(h, win);
  }

  void Aggregates(uint64_t interval) {
    if (!interval) return;
    std::vector<Key> ks;
    for (uint32_t i = 0; i < v_.size(); ++i)
      if (v_[i].r.agg) ks.push_back({Hash(v_[i].r, v_[i].r.t_start / interval), 0, i});
    std::sort(ks.begin(), ks.end());
    for (size_t k = 1, first = 0; k < ks.size(); ++k) {
      const Run& a = v_[ks[first].i].r;
      const Run& b = v_[ks[k].i].r;
      if (ks[k].h == ks[first].h && Same(a, b) && a.t_start / interval == b.t_start / interval) {
        Fold(ks[first].i, ks[k].i);
      } else {
        first = k;
      }
    }
  }

  // Threads taking turns: m strided runs (same stride and size) at offsets
  // o, o + size, ..., o + (m-1) size with m * size == stride. With counts
  // c >= ... >= c - 1 along that order (the window ended inside a turn: the
  // first k threads made one op more) they cover [o, o + ((c-1) m + k) size)
  // contiguously; any other counts would leave a hole, and are left apart.
  void Interleaved(uint64_t window) {
    std::vector<Key> ks;
    for (uint32_t i = 0; i < v_.size(); ++i) {
      const Run& r = v_[i].r;
      uint64_t full;
      if (Detail(r) && r.strided && r.stride > r.size &&
          !__builtin_mul_overflow(static_cast<uint64_t>(r.size), r.count, &full) && full == r.bytes)
        ks.push_back({Mix(Hash(r, r.t_start / window), static_cast<uint64_t>(r.stride)), r.offset, i});
    }
    std::sort(ks.begin(), ks.end());
    auto same = [&](size_t x, size_t y) {
      const Run& a = v_[ks[x].i].r;
      const Run& b = v_[ks[y].i].r;
      return ks[x].h == ks[y].h && Same(a, b) && a.stride == b.stride && a.t_start / window == b.t_start / window;
    };
    size_t k = 0;
    while (k < ks.size()) {
      const Run& f = v_[ks[k].i].r;
      // A turn has stride / size threads: the chain from ks[k] with offsets
      // one size apart, counts not rising and at most one below the first's.
      const int64_t want = f.stride % f.size == 0 ? f.stride / f.size : 0;
      size_t e = k + 1;
      while (e < ks.size() && static_cast<int64_t>(e - k) < want && same(k, e)) {
        const Run& p = v_[ks[e - 1].i].r;
        const Run& n = v_[ks[e].i].r;
        if (n.offset != p.offset + p.size || n.count > p.count || n.count + 1 < f.count) break;
        ++e;
      }
      const int64_t m = static_cast<int64_t>(e - k);
      int64_t full_turns = 0;  // threads with the first's count
      for (size_t j = k; j < e; ++j) full_turns += v_[ks[j].i].r.count == f.count;
      int64_t blocks, span, reach;
      if (m >= 2 && m == want && !__builtin_mul_overflow(static_cast<int64_t>(f.count) - 1, m, &blocks) &&
          !__builtin_add_overflow(blocks, full_turns, &blocks) && !__builtin_mul_overflow(blocks, f.size, &span) &&
          !__builtin_add_overflow(f.offset, span, &reach)) {
        const uint32_t into = ks[k].i;
        for (size_t j = k + 1; j < e; ++j) Fold(into, ks[j].i);
        Run& r = v_[into].r;
        r.strided = 0;
        r.stride = 0;
        r.next_offset = reach;
      }
      k = e;  // linear: a chain that fails is left whole (the next starts where it broke)
    }
  }

  // Contiguous runs that continue each other, in offset order.
  void Contiguous(uint64_t window) {
    std::vector<Key> ks;
    for (uint32_t i = 0; i < v_.size(); ++i)
      if (!v_[i].gone && Detail(v_[i].r) && !v_[i].r.strided)
        ks.push_back({Hash(v_[i].r, v_[i].r.t_start / window), v_[i].r.offset, i});
    std::sort(ks.begin(), ks.end());
    std::vector<uint64_t> win(ks.size());
    for (size_t k = 0; k < ks.size(); ++k) win[k] = v_[ks[k].i].r.t_start / window;  // before any merge moves a start
    for (size_t k = 1, cur = 0; k < ks.size(); ++k) {
      Run& c = v_[ks[cur].i].r;
      const Run& n = v_[ks[k].i].r;
      if (ks[k].h == ks[cur].h && win[k] == win[cur] && Same(c, n) && n.offset == c.next_offset) {
        const int64_t next = n.next_offset;
        Fold(ks[cur].i, ks[k].i);
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
  // One thread's runs are as the tracer made them (it split them for a reason:
  // a window, an op between): the common single-threaded process costs a scan.
  if (std::all_of(v.begin(), v.end(), [&](const TakenRun& t) { return t.tid == v[0].tid; })) return 0;
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
