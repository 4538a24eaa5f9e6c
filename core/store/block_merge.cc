// The merged form of a store block (layout: internal/block_merge.h).
#include "core/store/internal/block_merge.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <deque>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "core/base/hash.h"
#include "core/records/fields.h"

namespace iosonar::blocks {
namespace {

constexpr uint8_t kNone = 0xff;
enum Kind : uint8_t { kFirst = 0, kSeq = 1, kSecond = 2 };
constexpr uint8_t kFlagRankPath = 1, kFlagDerivedId = 2;  // group flags; bits 2.. the member fields present

// One value of one code: longs, dates, bools and the bits of doubles in i;
// keywords in s.
struct Val {
  int64_t i = 0;
  std::string_view s;
};

bool IsText(schema::Type t) { return t == schema::Type::kKeyword; }
bool IsInt(schema::Type t) { return t == schema::Type::kLong || t == schema::Type::kDate; }

// 16 lowercase hex digits of FNV-1a-64: the file.id the tracer gives a path.
void FileIdOf(std::string_view path, char out[16]) {
  uint64_t h = Fnv1a(path);
  for (int k = 15; k >= 0; --k, h >>= 4) out[k] = "0123456789abcdef"[h & 15];
}

void PutV(std::vector<uint8_t>& o, uint64_t v) {
  uint8_t b[10];
  o.insert(o.end(), b, PutVarint(b, v));
}
void PutZ(std::vector<uint8_t>& o, uint64_t wrapped_diff) { PutV(o, ZigZag(static_cast<int64_t>(wrapped_diff))); }
uint64_t Sub(int64_t a, int64_t b) { return static_cast<uint64_t>(a) - static_cast<uint64_t>(b); }
int64_t Add(int64_t a, uint64_t d) { return static_cast<int64_t>(static_cast<uint64_t>(a) + d); }

std::vector<int> CodesOf(uint64_t mask) {
  std::vector<int> v;
  for (; mask; mask &= mask - 1) v.push_back(std::countr_zero(mask));
  return v;
}

// A table (processes or groups): entries whose values are written as
// differences from the previous entry's.
struct TableState {
  std::array<int64_t, kMaxCodes> prev_i{};
  std::array<std::string_view, kMaxCodes> prev_s{};
  uint64_t has_s = 0;
};

// An entry: the local mask (bit k: list[k] present) and the values.
void PutEntry(std::vector<uint8_t>& o, const DatasetCodes& codes, const std::vector<int>& list, uint64_t local,
              const Val* vals /* by list position */, TableState& t) {
  PutV(o, local);
  for (size_t k = 0; k < list.size(); ++k) {
    if (!(local >> k & 1)) continue;
    const int c = list[k];
    const Val& v = vals[k];
    switch (codes.by_code[static_cast<size_t>(c)].type) {
      case schema::Type::kLong:
      case schema::Type::kDate:
        PutZ(o, Sub(v.i, t.prev_i[static_cast<size_t>(c)]));
        t.prev_i[static_cast<size_t>(c)] = v.i;
        break;
      case schema::Type::kBool: o.push_back(v.i ? 1 : 0); break;
      case schema::Type::kDouble:
        for (int b = 0; b < 8; ++b) o.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v.i) >> (8 * b)));
        break;
      case schema::Type::kKeyword: {
        // 0: the previous entry's; else the suffix's length + 1, the length of
        // the prefix shared with the previous entry's, the suffix ("cn00017"
        // after "cn00016": 6 shared, "7").
        const std::string_view prev = (t.has_s >> c & 1) ? t.prev_s[static_cast<size_t>(c)] : std::string_view();
        if ((t.has_s >> c & 1) && prev == v.s) {
          o.push_back(0);
          break;
        }
        size_t shared = 0;
        while (shared < prev.size() && shared < v.s.size() && prev[shared] == v.s[shared]) ++shared;
        PutV(o, v.s.size() - shared + 1);
        PutV(o, shared);
        o.insert(o.end(), v.s.begin() + static_cast<std::ptrdiff_t>(shared), v.s.end());
        t.prev_s[static_cast<size_t>(c)] = v.s;
        t.has_s |= uint64_t{1} << c;
        break;
      }
    }
  }
}

class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end, std::string* error) : p_(p), end_(end), error_(error) {}
  std::deque<std::string> texts;  // table keywords made of a shared prefix and a suffix
  bool V(uint64_t* out, const char* what) { return GetVarint(p_, end_, out) || Bad(what); }
  bool Z(uint64_t* out, const char* what) {
    uint64_t z = 0;
    if (!V(&z, what)) return false;
    *out = static_cast<uint64_t>(UnZigZag(z));
    return true;
  }
  bool Byte(uint8_t* out, const char* what) {
    if (p_ == end_) return Bad(what);
    *out = *p_++;
    return true;
  }
  bool Text(size_t n, std::string_view* out, const char* what) {
    if (n > static_cast<size_t>(end_ - p_)) return Bad(what);
    *out = {reinterpret_cast<const char*>(p_), n};
    p_ += n;
    return true;
  }
  bool Entry(const DatasetCodes& codes, const std::vector<int>& list, uint64_t* local, Val* vals, TableState& t,
             const char* what) {
    if (!V(local, what)) return false;
    if (list.size() < 64 && (*local >> list.size())) return Bad(what);
    for (size_t k = 0; k < list.size(); ++k) {
      if (!(*local >> k & 1)) continue;
      const size_t c = static_cast<size_t>(list[k]);
      Val& v = vals[k];
      switch (codes.by_code[c].type) {
        case schema::Type::kLong:
        case schema::Type::kDate: {
          uint64_t d = 0;
          if (!Z(&d, what)) return false;
          v.i = t.prev_i[c] = Add(t.prev_i[c], d);
          break;
        }
        case schema::Type::kBool: {
          uint8_t b = 0;
          if (!Byte(&b, what)) return false;
          v.i = b != 0;
          break;
        }
        case schema::Type::kDouble: {
          std::string_view raw;
          if (!Text(8, &raw, what)) return false;
          uint64_t bits = 0;
          for (int b = 7; b >= 0; --b) bits = bits << 8 | static_cast<uint8_t>(raw[static_cast<size_t>(b)]);
          v.i = static_cast<int64_t>(bits);
          break;
        }
        case schema::Type::kKeyword: {
          uint64_t h = 0;
          if (!V(&h, what)) return false;
          if (h == 0) {
            if (!(t.has_s >> c & 1)) return Bad(what);
          } else {
            uint64_t shared = 0;
            std::string_view suffix;
            if (!V(&shared, what) || !Text(h - 1, &suffix, what)) return false;
            const std::string_view prev = (t.has_s >> c & 1) ? t.prev_s[c] : std::string_view();
            if (shared > prev.size()) return Bad(what);
            if (shared == 0) {
              t.prev_s[c] = suffix;
            } else {
              std::string& joined = texts.emplace_back(prev.substr(0, shared));
              joined.append(suffix);
              t.prev_s[c] = joined;
            }
            t.has_s |= uint64_t{1} << c;
          }
          v.s = t.prev_s[c];
          break;
        }
      }
    }
    return true;
  }
  bool AtEnd() const { return p_ == end_; }
  bool Bad(const char* what) {
    if (error_->empty()) *error_ = std::string("damaged merged block: bad ") + what;
    return false;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  std::string* error_;
};

// The member fields of a trace record, in decoding order, with what each is
// written relative to.
struct MemberDef {
  int code = -1;
  uint8_t base = kNone;  // position in the member list of the field subtracted first
  uint8_t kind = kFirst;
};

struct MemberState {  // per (group or process, member field)
  int64_t last = 0, prev = 0;
  uint8_t seen = 0;  // values so far, at most 2
};

int64_t Predict(const MemberDef& m, const MemberState& g, const MemberState& p, int64_t global) {
  switch (m.kind) {
    case kSeq: return Add(p.seen ? p.last : global, 1);
    case kSecond:
      if (g.seen >= 2) return Add(g.last, Sub(g.last, g.prev));
      return g.seen ? g.last : global;
    default: return g.seen ? g.last : global;
  }
}
void Update(MemberState& s, int64_t x) {
  s.prev = s.last;
  s.last = x;
  if (s.seen < 2) ++s.seen;
}

// "/x/out.17" with rank 17: the length of "/x/out." (else npos).
size_t RankPrefix(std::string_view path, int64_t rank) {
  if (rank < 0) return std::string_view::npos;
  char b[24];
  const auto r = std::to_chars(b, b + sizeof b, rank);
  const size_t n = static_cast<size_t>(r.ptr - b);
  if (path.size() <= n || path.substr(path.size() - n) != std::string_view(b, n)) return std::string_view::npos;
  const char before = path[path.size() - n - 1];
  if (before >= '0' && before <= '9') return std::string_view::npos;
  return path.size() - n;
}

}  // namespace

bool MergeBlock(const DatasetCodes& codes, std::span<const uint8_t> data, std::vector<uint8_t>* out, std::string* why,
                MergeStats* stats) {
  why->clear();
  if (data.empty() || data[0] != kFormat) {
    *why = "not a first-pass block";
    return false;
  }
  // ---- the records, per code ----
  BlockDecoder dec;
  if (!dec.Open(&codes, data.data(), data.size(), why)) return false;
  const size_t n = dec.left();
  if (n == 0 || n > data.size()) {  // a record takes a byte at least
    *why = n ? "block too short for its record count" : "empty block";
    return false;
  }
  std::vector<uint64_t> mask(n, 0);
  std::vector<Val> vals(n * kMaxCodes);
  auto at = [&](size_t r, int c) -> Val& { return vals[r * kMaxCodes + static_cast<size_t>(c)]; };
  {
    auto rec = std::make_unique<ParsedRecord>();
    FieldSet present;
    size_t r = 0;
    while (r < n && dec.Next(rec.get(), &present, why)) {
      for (int c = 0; c < kMaxCodes; ++c) {
        const auto& code = codes.by_code[static_cast<size_t>(c)];
        if (!code.used || code.field < 0 || !present.Test(static_cast<size_t>(code.field))) continue;
        const FieldValue& v = rec->v[static_cast<size_t>(code.field)];
        mask[r] |= uint64_t{1} << c;
        Val& x = at(r, c);
        if (v.kind == FieldValue::kString) x.s = v.s;
        else if (v.kind == FieldValue::kDouble) x.i = std::bit_cast<int64_t>(v.d);
        else x.i = v.i;
      }
      ++r;
    }
    if (!why->empty()) return false;
    if (r != n) {
      *why = "block is short";
      return false;
    }
  }
  auto code_of = [&](FieldId f) { return static_cast<int>(codes.code_of[f.index()]); };
  auto type_of = [&](int c) { return codes.by_code[static_cast<size_t>(c)].type; };
  const int cstream = code_of(field::kEventStream);
  if (cstream < 0 || type_of(cstream) != schema::Type::kLong) {
    *why = "no event.stream code";
    return false;
  }
  uint64_t used = 0;
  for (size_t r = 0; r < n; ++r) {
    if (!(mask[r] >> cstream & 1)) {
      *why = "a record without event.stream";
      return false;
    }
    used |= mask[r];
  }
  // ---- member fields ----
  std::vector<MemberDef> M;
  auto add_member = [&](FieldId f, int base_code, uint8_t kind) {
    const int c = code_of(f);
    if (c < 0 || !IsInt(type_of(c)) || !(used >> c & 1)) return;
    MemberDef d{c, kNone, kind};
    for (size_t k = 0; k < M.size(); ++k)
      if (M[k].code == base_code && base_code >= 0) d.base = static_cast<uint8_t>(k);
    M.push_back(d);
  };
  add_member(field::kTimestamp, -1, kFirst);
  add_member(field::kEventStartNs, code_of(field::kTimestamp), kFirst);
  add_member(field::kEventEndNs, code_of(field::kEventStartNs), kFirst);
  add_member(field::kIoDurationNs, -1, kFirst);
  add_member(field::kEventSeq, -1, kSeq);
  add_member(field::kIoOffset, -1, kSecond);
  uint64_t mmask = 0;
  for (const auto& m : M) mmask |= uint64_t{1} << m.code;

  // ---- processes: one per event.stream; their constant fields ----
  std::unordered_map<int64_t, uint32_t> proc_ix;
  std::vector<size_t> proc_first;
  std::vector<uint32_t> proc_of(n);
  for (size_t r = 0; r < n; ++r) {
    auto [it, fresh] = proc_ix.try_emplace(at(r, cstream).i, static_cast<uint32_t>(proc_first.size()));
    if (fresh) proc_first.push_back(r);
    proc_of[r] = it->second;
  }
  const uint64_t candidates = used & ~mmask & ~(uint64_t{1} << cstream);
  uint64_t pm = candidates;
  for (size_t r = 0; r < n && pm; ++r) {
    const size_t f = proc_first[proc_of[r]];
    if (f == r) continue;
    pm &= ~((mask[r] ^ mask[f]) & pm);
    for (uint64_t m = pm & mask[r]; m; m &= m - 1) {
      const int c = std::countr_zero(m);
      const Val &a = at(r, c), &b = at(f, c);
      if (IsText(type_of(c)) ? a.s != b.s : a.i != b.i) pm &= ~(uint64_t{1} << c);
    }
  }
  const uint64_t gm = candidates & ~pm;
  const std::vector<int> P = CodesOf(pm), G = CodesOf(gm);
  int cpath = code_of(field::kFilePath), cid = code_of(field::kFileId), crank = code_of(field::kProcessRank);
  if (cpath < 0 || !IsText(type_of(cpath)) || !(gm >> cpath & 1)) cpath = -1;
  if (cpath < 0 || cid < 0 || !IsText(type_of(cid)) || !(gm >> cid & 1)) cid = -1;
  if (crank < 0 || type_of(crank) != schema::Type::kLong || !(pm >> crank & 1)) crank = -1;
  // file.id the hash of file.path, both per process: recomputed.
  int ppath = code_of(field::kFilePath), pid_code = code_of(field::kFileId);
  if (ppath < 0 || pid_code < 0 || !IsText(type_of(ppath)) || !IsText(type_of(pid_code)) || !(pm >> ppath & 1) ||
      !(pm >> pid_code & 1))
    ppath = pid_code = -1;
  auto derived = [&](size_t r, int cp, int ci) {
    if (cp < 0 || !(mask[r] >> cp & 1) || !(mask[r] >> ci & 1) || at(r, ci).s.size() != 16) return false;
    char id[16];
    FileIdOf(at(r, cp).s, id);
    return std::memcmp(id, at(r, ci).s.data(), 16) == 0;
  };

  // ---- groups: the records' remaining fields ----
  struct GroupInfo {
    size_t first = 0;
    uint64_t flags = 0;
    size_t prefix = std::string_view::npos;  // rank patterns: the path's length without the rank
  };
  std::vector<GroupInfo> groups;
  std::vector<uint32_t> group_of(n);
  std::unordered_map<std::string, uint32_t> group_ix;
  std::string key;
  uint32_t rank_patterns = 0;
  for (size_t r = 0; r < n; ++r) {
    const size_t pf = proc_first[proc_of[r]];
    uint64_t flags = 0;
    size_t prefix = std::string_view::npos;
    const bool has_path = cpath >= 0 && (mask[r] >> cpath & 1);
    if (has_path && crank >= 0 && (mask[pf] >> crank & 1)) {
      prefix = RankPrefix(at(r, cpath).s, at(pf, crank).i);
      if (prefix != std::string_view::npos) flags |= kFlagRankPath;
    }
    if (has_path && cid >= 0 && derived(r, cpath, cid)) flags |= kFlagDerivedId;
    for (size_t k = 0; k < M.size(); ++k)
      if (mask[r] >> M[k].code & 1) flags |= uint64_t{1} << (2 + k);
    key.clear();
    key.append(reinterpret_cast<const char*>(&flags), sizeof flags);
    const uint64_t gpresent = mask[r] & gm;
    key.append(reinterpret_cast<const char*>(&gpresent), sizeof gpresent);
    for (int c : G) {
      if (!(gpresent >> c & 1)) continue;
      if (c == cid && (flags & kFlagDerivedId)) continue;
      const Val& v = at(r, c);
      if (IsText(type_of(c))) {
        std::string_view s = v.s;
        if (c == cpath && (flags & kFlagRankPath)) s = s.substr(0, prefix);
        const uint64_t len = s.size();
        key.append(reinterpret_cast<const char*>(&len), sizeof len);
        key.append(s);
      } else {
        key.append(reinterpret_cast<const char*>(&v.i), sizeof v.i);
      }
    }
    auto [it, fresh] = group_ix.try_emplace(key, static_cast<uint32_t>(groups.size()));
    if (fresh) {
      groups.push_back({r, flags, prefix});
      if (flags & kFlagRankPath) ++rank_patterns;
    }
    group_of[r] = it->second;
  }

  // ---- writing ----
  std::vector<uint8_t>& o = *out;
  o.clear();
  o.reserve(data.size() / 2);
  o.push_back(kFormatMerged);
  for (int b = 0; b < 4; ++b) o.push_back(static_cast<uint8_t>(n >> (8 * b)));
  PutV(o, M.size());
  for (const auto& m : M) {
    o.push_back(static_cast<uint8_t>(m.code));
    o.push_back(m.base);
    o.push_back(m.kind);
  }
  PutV(o, pm);
  PutV(o, gm);
  for (int c : {cstream, cpath, cid, crank, ppath, pid_code}) o.push_back(c < 0 ? kNone : static_cast<uint8_t>(c));
  std::vector<Val> row(kMaxCodes);
  {
    TableState t;
    PutV(o, proc_first.size());
    int64_t prev_stream = 0;
    for (size_t f : proc_first) {
      PutZ(o, Sub(at(f, cstream).i, prev_stream));
      prev_stream = at(f, cstream).i;
      const bool d = ppath >= 0 && derived(f, ppath, pid_code);
      o.push_back(d ? kFlagDerivedId : 0);
      uint64_t local = 0;
      for (size_t k = 0; k < P.size(); ++k)
        if ((mask[f] >> P[k] & 1) && !(d && P[k] == pid_code)) {
          local |= uint64_t{1} << k;
          row[k] = at(f, P[k]);
        }
      PutEntry(o, codes, P, local, row.data(), t);
    }
  }
  {
    TableState t;
    PutV(o, groups.size());
    for (const auto& g : groups) {
      PutV(o, g.flags);
      uint64_t local = 0;
      for (size_t k = 0; k < G.size(); ++k) {
        const int c = G[k];
        if (!(mask[g.first] >> c & 1) || (c == cid && (g.flags & kFlagDerivedId))) continue;
        local |= uint64_t{1} << k;
        row[k] = at(g.first, c);
        if (c == cpath && (g.flags & kFlagRankPath)) row[k].s = row[k].s.substr(0, g.prefix);
      }
      PutEntry(o, codes, G, local, row.data(), t);
    }
  }
  std::vector<MemberState> gstate(groups.size() * M.size()), pstate(proc_first.size() * M.size());
  std::vector<int64_t> global(M.size(), 0), value(M.size(), 0);
  std::vector<int32_t> succ(groups.size(), -1);
  int64_t prev_p = -1, prev_g = -1;
  uint32_t seen_p = 0, seen_g = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint32_t p = proc_of[r], g = group_of[r];
    uint8_t pcode, gcode;
    if (p == prev_p) pcode = 0;
    else if (p == seen_p) pcode = 2;
    else if (p == prev_p + 1) pcode = 1;
    else pcode = 3;
    if (g == seen_g) gcode = 1;
    else if (prev_g >= 0 && succ[static_cast<size_t>(prev_g)] == static_cast<int32_t>(g)) gcode = 0;
    else if (g == prev_g) gcode = 3;
    else gcode = 2;
    o.push_back(static_cast<uint8_t>(pcode | gcode << 2));
    if (pcode == 3) PutV(o, p);
    if (gcode == 2) PutV(o, g);
    if (pcode == 2) ++seen_p;
    if (gcode == 1) ++seen_g;
    if (prev_g >= 0) succ[static_cast<size_t>(prev_g)] = static_cast<int32_t>(g);
    prev_p = p;
    prev_g = g;
    for (size_t k = 0; k < M.size(); ++k) {
      if (!(mask[r] >> M[k].code & 1)) continue;
      value[k] = at(r, M[k].code).i;
      const int64_t x = M[k].base != kNone && (mask[r] >> M[M[k].base].code & 1)
                            ? static_cast<int64_t>(Sub(value[k], value[M[k].base]))
                            : value[k];
      MemberState& gs = gstate[g * M.size() + k];
      MemberState& ps = pstate[p * M.size() + k];
      PutZ(o, Sub(x, Predict(M[k], gs, ps, global[k])));
      Update(gs, x);
      Update(ps, x);
      global[k] = x;
    }
  }
  // ---- the check: the expansion is the block given ----
  std::vector<uint8_t> back;
  std::string err;
  if (!ExpandBlock(codes, *out, &back, &err)) {
    *why = "the merged form does not read back: " + err;
    return false;
  }
  if (back.size() != data.size() || std::memcmp(back.data(), data.data(), data.size()) != 0) {
    *why = "the merged form reads back different bytes (a field this binary does not know?)";
    return false;
  }
  if (stats) *stats = {static_cast<uint32_t>(n), static_cast<uint32_t>(proc_first.size()),
                       static_cast<uint32_t>(groups.size()), rank_patterns};
  return true;
}

bool ExpandBlock(const DatasetCodes& codes, std::span<const uint8_t> data, std::vector<uint8_t>* out,
                 std::string* error) {
  error->clear();
  if (data.size() < kHeaderBytes || data[0] != kFormatMerged) {
    *error = data.size() < kHeaderBytes ? "block too short" : "not a merged block";
    return false;
  }
  uint32_t n = 0;
  for (int b = 3; b >= 0; --b) n = n << 8 | data[1 + static_cast<size_t>(b)];
  Reader in(data.data() + kHeaderBytes, data.data() + data.size(), error);
  if (n > data.size()) return in.Bad("record count");  // a record takes a byte at least
  auto known = [&](int c) {
    return c >= 0 && c < kMaxCodes && codes.by_code[static_cast<size_t>(c)].used &&
           codes.by_code[static_cast<size_t>(c)].field >= 0;
  };
  auto type_of = [&](int c) { return codes.by_code[static_cast<size_t>(c)].type; };
  uint64_t nm = 0;
  if (!in.V(&nm, "member list") || nm > kMaxCodes) return in.Bad("member list");
  std::vector<MemberDef> M(nm);
  uint64_t mmask = 0;
  for (size_t k = 0; k < nm; ++k) {
    uint8_t c = 0, b = 0, kind = 0;
    if (!in.Byte(&c, "member") || !in.Byte(&b, "member") || !in.Byte(&kind, "member")) return false;
    if (!known(c) || !IsInt(type_of(c)) || (b != kNone && b >= k) || kind > kSecond) return in.Bad("member field");
    M[k] = {c, b, kind};
    mmask |= uint64_t{1} << c;
  }
  uint64_t pm = 0, gm = 0;
  if (!in.V(&pm, "process codes") || !in.V(&gm, "group codes")) return false;
  if ((pm & gm) || ((pm | gm) & mmask)) return in.Bad("code sets");
  for (uint64_t m = pm | gm; m; m &= m - 1)
    if (!known(std::countr_zero(m))) return in.Bad("unknown field code");
  int role[6];
  for (int& c : role) {
    uint8_t b = 0;
    if (!in.Byte(&b, "role codes")) return false;
    c = b == kNone ? -1 : b;
    if (c >= 0 && !known(c)) return in.Bad("role codes");
  }
  const int cstream = role[0], cpath = role[1], cid = role[2], crank = role[3], ppath = role[4], pid_code = role[5];
  if (!known(cstream) || type_of(cstream) != schema::Type::kLong || ((pm | gm | mmask) >> cstream & 1))
    return in.Bad("stream code");
  if ((cpath >= 0 && !(gm >> cpath & 1 && IsText(type_of(cpath)))) || (cid >= 0 && !(gm >> cid & 1 && IsText(type_of(cid)))) ||
      (crank >= 0 && !(pm >> crank & 1 && type_of(crank) == schema::Type::kLong)))
    return in.Bad("role codes");
  if ((ppath >= 0) != (pid_code >= 0) || (ppath >= 0 && !((pm >> ppath & 1) && (pm >> pid_code & 1) &&
                                                           IsText(type_of(ppath)) && IsText(type_of(pid_code)))))
    return in.Bad("role codes");
  const std::vector<int> P = CodesOf(pm), G = CodesOf(gm);
  size_t rank_pos = P.size();
  for (size_t k = 0; k < P.size(); ++k)
    if (P[k] == crank) rank_pos = k;
  // The tables.
  uint64_t np = 0, ng = 0;
  if (!in.V(&np, "process count") || np > n) return in.Bad("process count");
  std::vector<int64_t> streams(np);
  std::vector<uint64_t> plocal(np);
  std::vector<uint8_t> pflags(np);
  std::vector<std::string> pids;  // recomputed file.ids, by process
  size_t ppath_pos = P.size();
  for (size_t k = 0; k < P.size(); ++k)
    if (P[k] == ppath) ppath_pos = k;
  std::vector<Val> pvals(np * P.size());
  {
    TableState t;
    int64_t prev = 0;
    for (size_t i = 0; i < np; ++i) {
      uint64_t d = 0;
      if (!in.Z(&d, "process")) return false;
      streams[i] = prev = Add(prev, d);
      if (!in.Byte(&pflags[i], "process")) return false;
      if (pflags[i] & ~kFlagDerivedId || (pflags[i] && ppath < 0)) return in.Bad("process flags");
      if (!in.Entry(codes, P, &plocal[i], pvals.data() + i * P.size(), t, "process")) return false;
      if (pflags[i]) {
        if (!(plocal[i] >> ppath_pos & 1)) return in.Bad("derived file.id without a path");
        pids.resize(np);
        pids[i].assign(16, '0');
        FileIdOf(pvals[i * P.size() + ppath_pos].s, pids[i].data());
      }
    }
  }
  if (!in.V(&ng, "group count") || ng > n) return in.Bad("group count");
  std::vector<uint64_t> gflags(ng), glocal(ng);
  std::vector<Val> gvals(ng * G.size());
  {
    TableState t;
    for (size_t i = 0; i < ng; ++i) {
      if (!in.V(&gflags[i], "group")) return false;
      if ((gflags[i] >> (2 + nm)) || ((gflags[i] & kFlagRankPath) && (cpath < 0 || crank < 0)) ||
          ((gflags[i] & kFlagDerivedId) && (cpath < 0 || cid < 0)))
        return in.Bad("group flags");
      if (!in.Entry(codes, G, &glocal[i], gvals.data() + i * G.size(), t, "group")) return false;
    }
  }
  // The records, re-encoded as the first pass wrote them.
  BlockEncoder enc(&codes);
  auto rec = std::make_unique<ParsedRecord>();
  std::vector<size_t> set_fields;
  auto put = [&](int c, const Val& v) {
    const size_t f = static_cast<size_t>(codes.by_code[static_cast<size_t>(c)].field);
    FieldValue& fv = rec->v[f];
    switch (type_of(c)) {
      case schema::Type::kKeyword: fv.kind = FieldValue::kString; fv.s = v.s; break;
      case schema::Type::kDouble: fv.kind = FieldValue::kDouble; fv.d = std::bit_cast<double>(v.i); break;
      case schema::Type::kBool: fv.kind = FieldValue::kBool; fv.i = v.i; break;
      default: fv.kind = FieldValue::kInt; fv.i = v.i;
    }
    set_fields.push_back(f);
  };
  std::vector<MemberState> gstate(ng * nm), pstate(np * nm);
  std::vector<int64_t> global(nm, 0), value(nm, 0);
  std::vector<int32_t> succ(ng, -1);
  int64_t prev_p = -1, prev_g = -1;
  uint64_t seen_p = 0, seen_g = 0;
  std::string path, id(16, '0');
  for (uint32_t r = 0; r < n; ++r) {
    uint8_t head = 0;
    if (!in.Byte(&head, "record")) return false;
    uint64_t p = 0, g = 0;
    switch (head & 3) {
      case 0: p = static_cast<uint64_t>(prev_p); break;
      case 1: p = static_cast<uint64_t>(prev_p + 1); break;
      case 2: p = seen_p++; break;
      default:
        if (!in.V(&p, "record")) return false;
    }
    switch (head >> 2) {
      case 0:
        if (prev_g < 0 || succ[static_cast<size_t>(prev_g)] < 0) return in.Bad("record group");
        g = static_cast<uint64_t>(succ[static_cast<size_t>(prev_g)]);
        break;
      case 1: g = seen_g++; break;
      case 2:
        if (!in.V(&g, "record")) return false;
        break;
      case 3: g = static_cast<uint64_t>(prev_g); break;
      default: return in.Bad("record head");
    }
    if (p >= seen_p || g >= seen_g || p >= np || g >= ng) return in.Bad("record process or group");
    if (prev_g >= 0) succ[static_cast<size_t>(prev_g)] = static_cast<int32_t>(g);
    prev_p = static_cast<int64_t>(p);
    prev_g = static_cast<int64_t>(g);
    for (size_t f : set_fields) rec->v[f].kind = FieldValue::kAbsent;
    set_fields.clear();
    put(cstream, Val{streams[p], {}});
    const Val* pv = pvals.data() + p * P.size();
    for (size_t k = 0; k < P.size(); ++k)
      if (plocal[p] >> k & 1) put(P[k], pv[k]);
    if (pflags[p]) put(pid_code, Val{0, pids[p]});
    const Val* gv = gvals.data() + g * G.size();
    const uint64_t fl = gflags[g];
    std::string_view full_path;
    bool has_path = false;
    for (size_t k = 0; k < G.size(); ++k) {
      if (!(glocal[g] >> k & 1)) continue;
      Val v = gv[k];
      if (G[k] == cpath) {
        if (fl & kFlagRankPath) {
          if (rank_pos == P.size() || !(plocal[p] >> rank_pos & 1)) return in.Bad("rank pattern without a rank");
          char b[24];
          const auto e = std::to_chars(b, b + sizeof b, pv[rank_pos].i);
          path.assign(v.s);
          path.append(b, e.ptr);
          v.s = path;
        }
        full_path = v.s;
        has_path = true;
      }
      put(G[k], v);
    }
    if (fl & kFlagDerivedId) {
      if (!has_path) return in.Bad("derived file.id without a path");
      FileIdOf(full_path, id.data());
      put(cid, Val{0, id});
    }
    for (size_t k = 0; k < nm; ++k) {
      if (!(fl >> (2 + k) & 1)) continue;
      uint64_t res = 0;
      if (!in.Z(&res, "member value")) return false;
      MemberState& gs = gstate[g * nm + k];
      MemberState& ps = pstate[p * nm + k];
      const int64_t x = Add(Predict(M[k], gs, ps, global[k]), res);
      Update(gs, x);
      Update(ps, x);
      global[k] = x;
      value[k] = M[k].base != kNone && (fl >> (2 + M[k].base) & 1) ? Add(x, static_cast<uint64_t>(value[M[k].base])) : x;
      put(M[k].code, Val{value[k], {}});
    }
    enc.Add(*rec);
  }
  if (!in.AtEnd()) return in.Bad("bytes after the last record");
  const auto b = enc.Finish();
  out->assign(b.begin(), b.end());
  return true;
}

}  // namespace iosonar::blocks
