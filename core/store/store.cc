// The Store interface's default Groups() and Span(): one unordered scan,
// summed in memory (the embedded SQLite store uses these; the search-engine
// store computes them in the engine, es_store.cc).
#include "core/store/store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "core/records/schema.h"

namespace iosonar {

namespace {

// Scan workers for the in-memory sums: the machine's cores, at most 4
// (IOSONAR_SCAN_THREADS overrides, 1 = a single thread).
size_t ScanWorkers() {
  if (const char* v = std::getenv("IOSONAR_SCAN_THREADS"); v && *v) {
    const long n = std::strtol(v, nullptr, 10);
    if (n >= 1 && n <= 64) return static_cast<size_t>(n);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp<size_t>(hw, 1, 4);
}

}  // namespace

Status Store::ScanParallel(const ScanQuery& q, size_t, const std::function<bool(size_t, const Row&)>& fn) {
  ScanQuery u = q;
  u.ordered = false;
  return Scan(u, [&](const Row& r) { return fn(0, r); });
}

Status ValidateGroupQuery(const GroupQuery& q) {
  auto check = [&](FieldId id, bool keyword, const char* what) -> Status {
    if (!id.valid()) return Status::Invalid(std::string(what) + ": no field given (an empty field id)");
    const schema::Field& f = schema::FieldOf(id);
    if (!schema::FieldInDataset(f, q.dataset))
      return Status::Invalid(std::string(what) + " " + std::string(id.name()) + ": not a field of dataset " + q.dataset);
    const bool ok = f.type == schema::Type::kLong || (keyword && f.type == schema::Type::kKeyword);
    if (!ok)
      return Status::Invalid(std::string(what) + " " + std::string(id.name()) + ": a " + std::string(schema::TypeName(f.type)) +
                             ", not a " + (keyword ? "keyword or long" : "long"));
    return Status::Ok();
  };
  if (!schema::FindDataset(q.dataset)) return Status::Invalid("unknown dataset '" + q.dataset + "'");
  for (FieldId k : q.keys)
    if (Status s = check(k, true, "group key"); !s.ok()) return s;
  for (FieldId k : q.sums)
    if (Status s = check(k, false, "sum of"); !s.ok()) return s;
  for (FieldId k : q.present)
    if (Status s = check(k, true, "records with"); !s.ok()) return s;
  if (q.split_count > 0) {
    if (Status s = check(q.split_field, false, "split by"); !s.ok()) return s;
    if (q.split_width <= 0) return Status::Invalid("split width must be positive, got " + std::to_string(q.split_width));
  }
  return Status::Ok();
}

namespace {

bool SameFilters(const std::vector<FieldFilter>& a, const std::vector<FieldFilter>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i].field == b[i].field) || a[i].equals != b[i].equals) return false;
  return true;
}

}  // namespace

Status Store::Groups(std::span<const GroupQuery> qs, const std::function<bool(size_t, const Group&)>& fn) {
  if (qs.empty()) return Status::Ok();
  for (const GroupQuery& q : qs) {
    if (Status s = ValidateGroupQuery(q); !s.ok()) return s;
    if (q.dataset != qs[0].dataset || q.range.start_ns != qs[0].range.start_ns || q.range.end_ns != qs[0].range.end_ns ||
        !SameFilters(q.filters, qs[0].filters))
      return Status::Invalid("Groups: the queries of one call must share dataset, range and filters");
  }
  // One scan of every field any query needs; each query's columns by position.
  ScanQuery sq;
  sq.dataset = qs[0].dataset;
  sq.range = qs[0].range;
  sq.filters = qs[0].filters;
  sq.ordered = false;
  auto col = [&](FieldId id) {
    for (size_t i = 0; i < sq.fields.size(); ++i)
      if (sq.fields[i] == id) return i;
    sq.fields.push_back(id);
    return sq.fields.size() - 1;
  };
  struct Acc {
    uint64_t count = 0;
    std::vector<int64_t> sums;
    std::vector<uint64_t> present;
  };
  // Keys one after another (a keyword's text and a NUL, as keywords hold
  // none; a long as a flag byte and its 8 bytes), then the split's 8 bytes.
  // Records come in runs of one host's or file's ops, so the previous group
  // is tried before the hash table (no allocation per record either way).
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  struct Plan {
    std::vector<size_t> keys, sums, present;
    std::vector<char> long_key;  // per key: a long field (its decimal text)
    size_t split = 0;
    std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index;
    std::vector<std::pair<std::string, Acc>> groups;
    size_t last = SIZE_MAX;
  };
  std::vector<Plan> plans(qs.size());
  for (size_t i = 0; i < qs.size(); ++i) {
    for (FieldId k : qs[i].keys) {
      plans[i].keys.push_back(col(k));
      plans[i].long_key.push_back(schema::FieldOf(k).type == schema::Type::kLong);
    }
    for (FieldId k : qs[i].sums) plans[i].sums.push_back(col(k));
    for (FieldId k : qs[i].present) plans[i].present.push_back(col(k));
    if (qs[i].split_count > 0) plans[i].split = col(qs[i].split_field);
  }
  // One set of groups (and key buffer) per scan worker, added up after.
  const size_t workers = ScanWorkers();
  std::vector<std::vector<Plan>> by_worker(workers, plans);
  std::vector<std::string> key_bufs(workers);
  Status st = ScanParallel(sq, workers, [&](size_t w, const Row& row) {
    std::string& key = key_bufs[w];
    for (size_t i = 0; i < qs.size(); ++i) {
      const GroupQuery& q = qs[i];
      Plan& p = by_worker[w][i];
      key.clear();
      for (size_t k = 0; k < p.keys.size(); ++k) {
        if (p.long_key[k]) {  // 0 (absent), or 1 and the value's 8 bytes: text only for the groups given
          if (!row.Has(p.keys[k])) {
            key.push_back('\0');
            continue;
          }
          const int64_t v = row.Int(p.keys[k]);
          key.push_back('\1');
          key.append(reinterpret_cast<const char*>(&v), sizeof v);
        } else {  // the text and a NUL (keywords hold none)
          if (row.Has(p.keys[k])) key.append(row.Str(p.keys[k]));
          key.push_back('\0');
        }
      }
      uint64_t split = 0;
      if (q.split_count > 0 && row.Has(p.split)) {
        const int64_t v = row.Int(p.split);
        if (v >= q.split_start) {
          // (v - start) / width without overflow: both are >= 0 here.
          const uint64_t b =
              (static_cast<uint64_t>(v) - static_cast<uint64_t>(q.split_start)) / static_cast<uint64_t>(q.split_width);
          split = b < q.split_count ? b : q.split_count - 1;
        }
      }
      key.append(reinterpret_cast<const char*>(&split), sizeof split);
      size_t g = p.last;
      if (g == SIZE_MAX || p.groups[g].first != key) {
        auto it = p.index.find(std::string_view(key));
        if (it == p.index.end()) {
          g = p.groups.size();
          p.groups.emplace_back(key, Acc{0, std::vector<int64_t>(p.sums.size(), 0), std::vector<uint64_t>(p.present.size(), 0)});
          p.index.emplace(key, g);
        } else {
          g = it->second;
        }
        p.last = g;
      }
      Acc& acc = p.groups[g].second;
      ++acc.count;
      for (size_t j = 0; j < p.sums.size(); ++j)
        if (row.Has(p.sums[j])) acc.sums[j] += row.Int(p.sums[j]);
      for (size_t j = 0; j < p.present.size(); ++j) acc.present[j] += row.Has(p.present[j]);
    }
    return true;
  });
  if (!st.ok()) return st;
  plans = std::move(by_worker[0]);
  for (size_t w = 1; w < workers; ++w)
    for (size_t i = 0; i < qs.size(); ++i) {
      Plan& p = plans[i];
      for (auto& [k, acc] : by_worker[w][i].groups) {
        auto it = p.index.find(std::string_view(k));
        if (it == p.index.end()) {
          p.index.emplace(k, p.groups.size());
          p.groups.emplace_back(std::move(k), std::move(acc));
          continue;
        }
        Acc& into = p.groups[it->second].second;
        into.count += acc.count;
        for (size_t j = 0; j < into.sums.size(); ++j) into.sums[j] += acc.sums[j];
        for (size_t j = 0; j < into.present.size(); ++j) into.present[j] += acc.present[j];
      }
    }
  Group out;
  for (size_t i = 0; i < qs.size(); ++i) {
    for (auto& [k, acc] : plans[i].groups) {
      out.keys.clear();
      const std::string_view keys(k.data(), k.size() - sizeof(uint64_t));
      size_t pos = 0;
      for (size_t j = 0; j < qs[i].keys.size(); ++j) {
        if (plans[i].long_key[j]) {
          if (keys[pos++] == '\0') {
            out.keys.emplace_back();
            continue;
          }
          int64_t v = 0;
          std::memcpy(&v, keys.data() + pos, sizeof v);
          pos += sizeof v;
          out.keys.push_back(std::to_string(v));
        } else {
          const size_t end = keys.find('\0', pos);
          out.keys.emplace_back(keys.substr(pos, end - pos));
          pos = end + 1;
        }
      }
      uint64_t split = 0;
      std::memcpy(&split, k.data() + keys.size(), sizeof split);
      out.split = static_cast<size_t>(split);
      out.count = acc.count;
      out.sums = std::move(acc.sums);
      out.present = std::move(acc.present);
      if (!fn(i, out)) return Status::Ok();
    }
  }
  return Status::Ok();
}

Result<std::pair<std::optional<int64_t>, std::optional<int64_t>>> Store::Span(const std::string& dataset,
                                                                              const std::vector<FieldFilter>& filters,
                                                                              FieldId lo_field, FieldId hi_field) {
  GroupQuery check;
  check.dataset = dataset;
  check.sums = {lo_field, hi_field};
  if (Status s = ValidateGroupQuery(check); !s.ok()) return s;
  ScanQuery sq;
  sq.dataset = dataset;
  sq.filters = filters;
  sq.fields = {lo_field, hi_field};
  sq.ordered = false;
  std::optional<int64_t> lo, hi;
  Status st = Scan(sq, [&](const Row& row) {
    if (row.Has(0) && (!lo || row.Int(0) < *lo)) lo = row.Int(0);
    if (row.Has(1) && (!hi || row.Int(1) > *hi)) hi = row.Int(1);
    return true;
  });
  if (!st.ok()) return st;
  return std::pair{lo, hi};
}

Status ValidateSpansQuery(const std::string& dataset, FieldId lo_field, FieldId hi_field, FieldId key) {
  GroupQuery check;
  check.dataset = dataset;
  check.keys = {key};
  check.sums = {lo_field, hi_field};
  if (Status s = ValidateGroupQuery(check); !s.ok()) return s;
  if (schema::FieldOf(key).type != schema::Type::kKeyword)
    return Status::Invalid("Spans: key " + std::string(key.name()) + " is not a keyword");
  return Status::Ok();
}

Result<std::vector<Store::SpanPair>> Store::Spans(const std::string& dataset, const std::vector<FieldFilter>& filters,
                                                  FieldId lo_field, FieldId hi_field, FieldId key,
                                                  const std::vector<std::string>& values) {
  if (Status s = ValidateSpansQuery(dataset, lo_field, hi_field, key); !s.ok()) return s;
  ScanQuery sq;
  sq.dataset = dataset;
  sq.filters = filters;
  sq.fields = {lo_field, hi_field, key};
  sq.ordered = false;
  const size_t workers = ScanWorkers();
  std::vector<std::vector<SpanPair>> by_worker(workers, std::vector<SpanPair>(values.size() + 1));
  auto widen = [](SpanPair& s, std::optional<int64_t> lo, std::optional<int64_t> hi) {
    if (lo && (!s.first || *lo < *s.first)) s.first = lo;
    if (hi && (!s.second || *hi > *s.second)) s.second = hi;
  };
  Status st = ScanParallel(sq, workers, [&](size_t w, const Row& row) {
    std::vector<SpanPair>& out = by_worker[w];
    const std::optional<int64_t> lo = row.Has(0) ? std::optional<int64_t>(row.Int(0)) : std::nullopt;
    const std::optional<int64_t> hi = row.Has(1) ? std::optional<int64_t>(row.Int(1)) : std::nullopt;
    widen(out[0], lo, hi);
    if (!row.Has(2)) return true;
    const std::string_view k = row.Str(2);
    for (size_t i = 0; i < values.size(); ++i)
      if (k == values[i]) widen(out[i + 1], lo, hi);
    return true;
  });
  if (!st.ok()) return st;
  for (size_t w = 1; w < workers; ++w)
    for (size_t i = 0; i <= values.size(); ++i) widen(by_worker[0][i], by_worker[w][i].first, by_worker[w][i].second);
  return by_worker[0];
}

}  // namespace iosonar
