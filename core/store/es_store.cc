#include "core/store/es_store.h"

#include <rapidjson/document.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <filesystem>
#include <set>
#include <thread>
#include <atomic>
#include <mutex>

#include "core/transport/es_client.h"
#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/store/sqlite_store.h"

namespace iosonar {
namespace {

// Hits per PIT page: fewer round trips (each sorts and fetches again); at
// most index.max_result_window (10,000 by default).
constexpr size_t kScanPage = 5000;
// Groups(): composite buckets a page; split buckets (filters) a request;
// distinct values of a key under one split bucket.
// Each composite page is a full pass over the matching documents (no early
// termination without index sorting), so pages are large: 50,000 buckets,
// under the engines' search.max_buckets (65,535 OpenSearch, 65,536
// Elasticsearch 8; sums are metrics and do not count). A filters
// aggregation tests every document of the request against each of its
// filters, so a request holds few split buckets: at 10^7 records and 610
// buckets, 256 a request took ~100 s on OpenSearch, 8 ~10 s (RESULTS.md,
// "10^7 trace records, issue 12"); two such requests are in flight.
constexpr size_t kGroupPage = 50000;
constexpr size_t kSplitsPerRequest = 8;
constexpr size_t kTermsSize = 10000;
// Groups() queries answered side by side (each with up to two requests in flight).
constexpr size_t kGroupQueriesInFlight = 3;

// ceil(ns / 1e6) for the half-open [start, end) range in epoch ms.
int64_t CeilMs(int64_t ns) { return ns / 1000000 + (ns > 0 && ns % 1000000 != 0); }

class EsRow final : public Row {
 public:
  const ParsedRecord* rec = nullptr;
  const std::vector<int>* idx = nullptr;
  bool Has(size_t k) const override {
    int i = (*idx)[k];
    return i >= 0 && rec->v[static_cast<size_t>(i)].kind != FieldValue::kAbsent;
  }
  int64_t Int(size_t k) const override { return Has(k) ? rec->v[static_cast<size_t>((*idx)[k])].i : 0; }
  double Double(size_t k) const override {
    if (!Has(k)) return 0;
    const auto& v = rec->v[static_cast<size_t>((*idx)[k])];
    return v.kind == FieldValue::kDouble ? v.d : static_cast<double>(v.i);
  }
  std::string_view Str(size_t k) const override { return Has(k) ? rec->v[static_cast<size_t>((*idx)[k])].s : std::string_view(); }
};

class EsStore final : public Store {
 public:
  explicit EsStore(std::unique_ptr<EsClient> c) : es_(std::move(c)) {}

  Status Append(std::span<const ParsedRecord* const> recs, AppendStats* stats) override {
    std::vector<BulkDoc> docs;
    docs.reserve(recs.size());
    for (const ParsedRecord* r : recs) {
      if (!r || !r->dataset) return Status::Invalid("Append: a record without a dataset");
      BulkDoc d;
      d.index = DataStreamName(*r->dataset, es_->options().name_space);
      d.id = DocId(*r);
      AppendRecordJson(&d.source, *r);
      AddGroupKeys(&d.source, *r);
      dirty_.insert(d.index);
      docs.push_back(std::move(d));
    }
    BulkStats bs;
    std::vector<BulkRejected> rej;
    Status st = es_->Bulk(std::move(docs), &bs, &rej);
    if (stats) {
      stats->inserted += bs.created;
      stats->duplicates += bs.already_stored;
    }
    if (!st.ok()) return st;
    if (!rej.empty())
      return Status::Io(std::to_string(rej.size()) + " records rejected by Elasticsearch; first: HTTP " +
                        std::to_string(rej[0].status) + " " + rej[0].reason + " (_id " + rej[0].doc.id + ")");
    return Status::Ok();
  }

  Status Scan(const ScanQuery& q, const std::function<bool(const Row&)>& fn) override {
    auto index = IndexFor(q.dataset);
    if (!index.ok()) return index.status();
    auto query = QueryJson(q.dataset, q.range, q.filters);
    if (!query.ok()) return query.status();
    std::vector<int> idx;
    for (FieldId id : q.fields) {
      if (!id.valid()) return Status::Invalid("no field given (an empty field id)");
      if (!schema::FieldInDataset(schema::FieldOf(id), q.dataset))
        return Status::Invalid("field " + std::string(id.name()) + " is not a field of dataset " + q.dataset);
      idx.push_back(static_cast<int>(id.index()));
    }
    ParsedRecord rec;
    EsRow row;
    row.rec = &rec;
    row.idx = &idx;
    std::string buf;
    Status bad;
    // Only the asked-for fields are read (and event.dataset, which the parser
    // needs); what else a document carries (data_stream.*, tags, @version
    // from Logstash) is never looked at. Where they are read decides the
    // cost:
    // - logs (trace, tracer: large documents, scans that ask a few of their
    //   fields): the engine filters _source, so a scan of three fields of a
    //   trace record moves those three, not the whole document;
    // - metrics (server counters: small documents, scans that ask most of
    //   them): the whole _source comes back and the parser skips the rest.
    //   Filtering there cost Elasticsearch 8.15 two to four times the engine
    //   time of the whole _source for what it saves (test/bench/RESULTS.md,
    //   "_source filtering").
    FieldSet only;
    only.Set(field::kEventDataset.index());
    for (FieldId id : q.fields) only.Set(id.index());
    const schema::Dataset* ds = schema::FindDataset(q.dataset);
    const bool whole = ds && ds->stream_type == "metrics";
    std::string source;
    if (whole) {
      source = "true";
    } else {
      source = "{\"includes\":[";
      AppendJsonString(&source, field::kEventDataset.name());
      for (FieldId id : q.fields) {
        if (id == field::kEventDataset) continue;
        source += ",";
        AppendJsonString(&source, id.name());
      }
      source += "]}";
    }
    Status st = es_->ScanPit(*index, *query, kScanPage, [&](std::string_view src) {
      buf.assign(src);
      buf.push_back('\0');
      if (auto s = ParseRecordFieldsInsitu(buf.data(), buf.size() - 1, &rec, &only); !s.ok()) {
        bad = Status::Io("document in " + *index + " does not match the schema: " + s.message());
        return false;
      }
      return fn(row);
    }, source, q.ordered);
    if (!st.ok()) return st;
    return bad;
  }

  Result<std::vector<Bucket>> BucketSums(const BucketQuery& bq) override {
    auto index = IndexFor(bq.dataset);
    if (!index.ok()) return index.status();
    if (bq.bucket_ns <= 0) return Status::Invalid("bucket width must be positive, got " + std::to_string(bq.bucket_ns));
    if (bq.bucket_ns % 1000000 != 0)
      return Status::Invalid("bucket width " + std::to_string(bq.bucket_ns) +
                             " ns: Elasticsearch dates have millisecond resolution; use a multiple of 1000000");
    std::string sub = "{";
    for (size_t j = 0; j < bq.sum_fields.size(); ++j) {
      const FieldId id = bq.sum_fields[j];
      const std::string name(id.name());
      if (!id.valid()) return Status::Invalid("no field given (an empty field id)");
      if (!schema::FieldInDataset(schema::FieldOf(id), bq.dataset))
        return Status::Invalid("field " + name + " is not a field of dataset " + bq.dataset);
      const schema::Field* f = &schema::FieldOf(id);
      if (f->type != schema::Type::kLong && f->type != schema::Type::kDouble && f->type != schema::Type::kBool)
        return Status::Invalid("cannot sum field " + name + ": it is a " + std::string(schema::TypeName(f->type)) +
                               ", not a number");
      if (j) sub += ",";
      sub += "\"s" + std::to_string(j) + "\":{\"sum\":{\"field\":";
      AppendJsonString(&sub, f->name);
      sub += "}}";
    }
    sub += "}";
    auto query = QueryJson(bq.dataset, bq.range, bq.filters);
    if (!query.ok()) return query.status();
    const std::string sources = "[{\"t\":{\"date_histogram\":{\"field\":\"" + std::string(field::kTimestamp.name()) +
                                "\",\"fixed_interval\":\"" + std::to_string(bq.bucket_ns / 1000000) + "ms\"}}}]";
    std::vector<Bucket> out;
    Status bad;
    Status st = es_->CompositePages(*index, *query, sources, bq.sum_fields.empty() ? "" : sub, 1000, [&](std::string_view b) {
      rapidjson::Document d;
      d.Parse(b.data(), b.size());
      if (d.HasParseError() || !d.IsObject() || !d.HasMember("key") || !d["key"].HasMember("t") ||
          !d["key"]["t"].IsInt64() || !d.HasMember("doc_count") || !d["doc_count"].IsUint64()) {
        bad = Status::Io("aggregate " + *index + ": malformed bucket " + std::string(b.substr(0, 200)));
        return false;
      }
      Bucket bk;
      bk.start_ns = d["key"]["t"].GetInt64() * 1000000;
      bk.doc_count = d["doc_count"].GetUint64();
      for (size_t j = 0; j < bq.sum_fields.size(); ++j) {
        std::string k = "s" + std::to_string(j);
        double v = 0;
        if (d.HasMember(k.c_str()) && d[k.c_str()].HasMember("value") && d[k.c_str()]["value"].IsNumber())
          v = d[k.c_str()]["value"].GetDouble();
        bk.sums.push_back(v);
      }
      out.push_back(std::move(bk));
      return true;
    });
    if (!st.ok()) return st;
    if (!bad.ok()) return bad;
    return out;
  }

  // Groups in the engine: without a split, a composite aggregation of terms
  // sources (missing_bucket: an absent key is ""), paged by after_key; with
  // more split buckets than kSplitsPerRequest, the same with a date_histogram
  // source of the split field last; with a few, a filters aggregation of one range query per bucket (exact on
  // longs: a histogram would round epoch-ns values through a double), up to
  // kSplitsPerRequest buckets a request, terms per key nested under it.
  // The queries run side by side, up to kGroupQueriesInFlight at once, each
  // on connections of its own (an engine answers one request on one thread
  // per shard); fn is called under a lock, one group at a time.
  Status Groups(std::span<const GroupQuery> qs, const std::function<bool(size_t, const Group&)>& fn) override {
    for (const GroupQuery& q : qs)
      if (Status s = ValidateGroupQuery(q); !s.ok()) return s;
    std::vector<std::string> index(qs.size());
    for (size_t i = 0; i < qs.size(); ++i) {
      auto ix = IndexFor(qs[i].dataset);  // here: it may refresh, which changes dirty_
      if (!ix.ok()) return ix.status();
      index[i] = *ix;
    }
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::atomic<size_t> next{0};
    std::vector<Status> errors(qs.size());
    auto work = [&](EsClient* a, EsClient* b) {
      for (size_t i; (i = next.fetch_add(1)) < qs.size() && !stop.load();) {
        errors[i] = GroupsOf(qs[i], index[i], a, b, [&](const Group& g) {
          std::lock_guard<std::mutex> lock(mu);
          if (stop.load()) return false;
          if (!fn(i, g)) stop.store(true);
          return !stop.load();
        });
        if (!errors[i].ok()) stop.store(true);
      }
    };
    const size_t workers = std::min(qs.size(), kGroupQueriesInFlight);
    std::vector<std::pair<EsClient*, EsClient*>> conns = {{es_.get(), Conn(1)}};
    for (size_t w = 1; w < workers; ++w) {
      EsClient* a = Conn(2 * w);
      if (!a) break;
      conns.emplace_back(a, Conn(2 * w + 1));
    }
    std::vector<std::thread> threads;
    for (size_t w = 1; w < conns.size(); ++w) threads.emplace_back(work, conns[w].first, conns[w].second);
    work(conns[0].first, conns[0].second);
    for (auto& t : threads) t.join();
    for (const Status& e : errors)
      if (!e.ok()) return e;
    return Status::Ok();
  }

  // One query's groups on connection c (and c2, if not null, for a second request in flight).
  // Keys that form a group key (es_client.h): the records that carry it are
  // grouped by that one field, those without it (if any) by the parts.
  Status GroupsOf(const GroupQuery& q, const std::string& index_name, EsClient* c, EsClient* c2,
                  const std::function<bool(const Group&)>& fn) {
    auto query = QueryJson(q.dataset, q.range, q.filters);
    if (!query.ok()) return query.status();
    // (not with a filters split: few buckets, terms nested under each)
    const GroupKeyField* gk = q.split_count == 0 || q.split_count > kSplitsPerRequest ? GroupKeyFor(q.dataset, q.keys) : nullptr;
    if (!gk) return GroupsIn(q, index_name, *query, c, c2, fn);
    // One pass over all the records by the key (terms, or a composite with
    // missing_bucket): the records without a key fall in its empty or null
    // buckets, which are only counted; if there are any, they are grouped by
    // the parts in a second pass over just them.
    uint64_t without_key = 0;
    if (Status st = GroupsIn(q, index_name, *query, c, nullptr, fn, gk, &without_key); !st.ok()) return st;
    if (without_key == 0) return Status::Ok();
    std::string exists = "{\"exists\":{\"field\":";
    AppendJsonString(&exists, gk->name);
    exists += "}}";
    return GroupsIn(q, index_name, "{\"bool\":{\"filter\":[" + *query + "],\"must_not\":[" + exists + "]}}", c, c2, fn);
  }

  // The sums (s0, s1, ...) and the counts of records with a field (p0, ...) of a group; "" if none.
  static std::string SumsJson(const GroupQuery& q) {
    if (q.sums.empty() && q.present.empty()) return "";
    std::string sums = "{";
    for (size_t j = 0; j < q.sums.size(); ++j) {
      if (j) sums += ",";
      sums += "\"s" + std::to_string(j) + "\":{\"sum\":{\"field\":";
      AppendJsonString(&sums, q.sums[j].name());
      sums += "}}";
    }
    for (size_t j = 0; j < q.present.size(); ++j) {
      if (j || !q.sums.empty()) sums += ",";
      sums += "\"p" + std::to_string(j) + "\":{\"value_count\":{\"field\":";
      AppendJsonString(&sums, q.present[j].name());
      sums += "}}";
    }
    return sums + "}";
  }

  // A value of group key gk that does not decode: the error.
  static Status BadKey(const std::string& index, const GroupKeyField& gk, std::string_view text) {
    return Status::Io("aggregate " + index + ": a value of " + gk.name + " that is not " + std::to_string(gk.parts.size()) +
                      " parts as <bytes>:<text>: " + std::string(text.substr(0, 200)));
  }

  static void ReadSums(const GroupQuery& q, const rapidjson::Value& b, Group* g) {
    auto value = [&](const std::string& k) -> const rapidjson::Value* {
      if (b.HasMember(k.c_str()) && b[k.c_str()].IsObject() && b[k.c_str()].HasMember("value") && b[k.c_str()]["value"].IsNumber())
        return &b[k.c_str()]["value"];
      return nullptr;
    };
    g->sums.assign(q.sums.size(), 0);
    for (size_t j = 0; j < q.sums.size(); ++j)
      if (const auto* v = value("s" + std::to_string(j))) g->sums[j] = std::llround(v->GetDouble());
    g->present.assign(q.present.size(), 0);
    for (size_t j = 0; j < q.present.size(); ++j)
      if (const auto* v = value("p" + std::to_string(j)); v && v->GetDouble() > 0)
        g->present[j] = static_cast<uint64_t>(std::llround(v->GetDouble()));
  }

  // The groups of the records matching query (JSON): by group key gk (a
  // composite's one terms source) if not null, else by the keys.
  Status GroupsIn(const GroupQuery& q, const std::string& index_name, const std::string& query_json, EsClient* c, EsClient* c2,
                  const std::function<bool(const Group&)>& fn, const GroupKeyField* gk = nullptr,
                  uint64_t* without_key = nullptr) {
    const std::string* index = &index_name;
    const std::string* query = &query_json;
    const std::string sums = SumsJson(q);
    Group g;
    auto read_sums = [&](const rapidjson::Value& b) { ReadSums(q, b, &g); };
    // Many split buckets: a composite aggregation whose last source is a
    // date_histogram of the split field. On a long field the engines read
    // the values as epoch milliseconds and round them with integer arithmetic
    // (a fixed interval of split_width "ms", offset split_start mod width),
    // so the buckets are exact, and one pass over the records gives them all
    // (a filters request tests every record against each of its buckets).
    const bool histogram = q.split_count > kSplitsPerRequest;
    // A group key without a split: first one terms aggregation, which adds
    // the sums as it goes (a composite keeps the documents of its page's
    // buckets and goes over them again for its sub-aggregations: 4.0 s
    // against 1.5 s for 3 groups of 10^7 records with 5 metrics). Exact when
    // no record is left out of the buckets it gives (sum_other_doc_count 0);
    // otherwise (more groups than a page) the composite below.
    if (gk && q.split_count == 0) {
      std::string body = "{\"size\":0,\"track_total_hits\":false,\"query\":" + *query + ",\"aggs\":{\"t\":{\"terms\":{\"field\":";
      AppendJsonString(&body, gk->name);
      body += ",\"size\":" + std::to_string(kGroupPage) + ",\"shard_size\":" + std::to_string(kGroupPage) + ",\"missing\":\"\"}";
      if (!sums.empty()) body += ",\"aggs\":" + sums;
      body += "}}}";
      auto r = c->Search(*index, body);
      if (!r.ok()) return r.status();
      if (r->empty()) return Status::Ok();  // no such data stream
      rapidjson::Document d;
      d.Parse(r->data(), r->size());
      const rapidjson::Value* t = nullptr;
      if (!d.HasParseError() && d.IsObject() && d.HasMember("aggregations") && d["aggregations"].IsObject() &&
          d["aggregations"].HasMember("t") && d["aggregations"]["t"].IsObject())
        t = &d["aggregations"]["t"];
      if (!t || !t->HasMember("buckets") || !(*t)["buckets"].IsArray() || !t->HasMember("sum_other_doc_count") ||
          !(*t)["sum_other_doc_count"].IsUint64())
        return Status::Io("aggregate " + *index + ": not a terms aggregation response: " + r->substr(0, 300));
      if ((*t)["sum_other_doc_count"].GetUint64() == 0) {
        for (const auto& b : (*t)["buckets"].GetArray()) {
          if (!b.IsObject() || !b.HasMember("key") || !b["key"].IsString() || !b.HasMember("doc_count") || !b["doc_count"].IsUint64())
            return Status::Io("aggregate " + *index + ": malformed terms bucket of " + gk->name);
          const std::string_view key(b["key"].GetString(), b["key"].GetStringLength());
          if (key.empty()) {  // records without the key: grouped by the parts afterwards
            if (without_key) *without_key += b["doc_count"].GetUint64();
            continue;
          }
          if (!DecodeGroupKey(key, gk->parts.size(), &g.keys)) return BadKey(*index, *gk, key);
          g.split = 0;
          g.count = b["doc_count"].GetUint64();
          read_sums(b);
          if (!fn(g)) return Status::Ok();
        }
        return Status::Ok();
      }
    }
    if ((q.split_count == 0 && !q.keys.empty()) || histogram) {
      std::string sources = "[";
      if (gk) {
        sources += "{\"g\":{\"terms\":{\"field\":";
        AppendJsonString(&sources, gk->name);
        sources += ",\"missing_bucket\":true}}}";
      }
      for (size_t k = 0; k < q.keys.size() && !gk; ++k) {
        if (k) sources += ",";
        sources += "{\"k" + std::to_string(k) + "\":{\"terms\":{\"field\":";
        AppendJsonString(&sources, q.keys[k].name());
        sources += ",\"missing_bucket\":true}}}";
      }
      if (histogram) {
        const int64_t offset = ((q.split_start % q.split_width) + q.split_width) % q.split_width;
        sources += std::string(q.keys.empty() && !gk ? "" : ",") + "{\"s\":{\"date_histogram\":{\"field\":";
        AppendJsonString(&sources, q.split_field.name());
        sources += ",\"fixed_interval\":\"" + std::to_string(q.split_width) + "ms\"";
        if (offset) sources += ",\"offset\":\"+" + std::to_string(offset) + "ms\"";
        sources += ",\"missing_bucket\":true}}}";
      }
      sources += "]";
      Status bad;
      Status st = c->CompositePages(*index, *query, sources, sums, kGroupPage, [&](std::string_view b) {
        rapidjson::Document d;
        d.Parse(b.data(), b.size());
        if (d.HasParseError() || !d.IsObject() || !d.HasMember("key") || !d["key"].IsObject() || !d.HasMember("doc_count") ||
            !d["doc_count"].IsUint64()) {
          bad = Status::Io("aggregate " + *index + ": malformed bucket " + std::string(b.substr(0, 200)));
          return false;
        }
        g.keys.assign(q.keys.size(), std::string());
        if (gk) {
          const rapidjson::Value* kv = d["key"].HasMember("g") ? &d["key"]["g"] : nullptr;
          if (kv && kv->IsNull()) {  // records without the key: grouped by the parts afterwards
            if (without_key) *without_key += d["doc_count"].GetUint64();
            return true;
          }
          if (!kv || !kv->IsString() ||
              !DecodeGroupKey(std::string_view(kv->GetString(), kv->GetStringLength()), gk->parts.size(), &g.keys)) {
            bad = BadKey(*index, *gk, b);
            return false;
          }
        }
        for (size_t k = 0; k < q.keys.size() && !gk; ++k) {
          const std::string name = "k" + std::to_string(k);
          if (!d["key"].HasMember(name.c_str())) continue;
          const auto& kv = d["key"][name.c_str()];
          if (kv.IsString()) g.keys[k] = kv.GetString();
          else if (kv.IsInt64()) g.keys[k] = std::to_string(kv.GetInt64());
          else if (!kv.IsNull()) {
            bad = Status::Io("aggregate " + *index + ": a key of " + std::string(q.keys[k].name()) + " neither text nor integer");
            return false;
          }
        }
        g.split = 0;
        if (histogram && d["key"].HasMember("s") && !d["key"]["s"].IsNull()) {
          if (!d["key"]["s"].IsInt64()) {
            bad = Status::Io("aggregate " + *index + ": a date_histogram key of " + std::string(q.split_field.name()) +
                             " that is not an integer: " + std::string(b.substr(0, 200)));
            return false;
          }
          // The bucket's first value; before split_start: bucket 0, past the last: the last.
          const int64_t v = d["key"]["s"].GetInt64();
          if (v > q.split_start) {
            const uint64_t k = (static_cast<uint64_t>(v) - static_cast<uint64_t>(q.split_start)) / static_cast<uint64_t>(q.split_width);
            g.split = static_cast<size_t>(std::min<uint64_t>(k, q.split_count - 1));
          }
        }
        g.count = d["doc_count"].GetUint64();
        read_sums(d);
        return fn(g);
      });
      if (!st.ok()) return st;
      return bad;
    }
    // The filters path (also for no keys and no split: one bucket).
    const size_t n = std::max<size_t>(q.split_count, 1);
    const std::string f = q.split_count ? std::string(q.split_field.name()) : std::string();
    auto lo = [&](size_t k) { return q.split_start + static_cast<int64_t>(k) * q.split_width; };
    auto range = [&](std::optional<int64_t> gte, std::optional<int64_t> lt) {
      std::string r = "{\"range\":{";
      AppendJsonString(&r, f);
      r += ":{";
      if (gte) r += "\"gte\":" + std::to_string(*gte);
      if (lt) r += std::string(gte ? "," : "") + "\"lt\":" + std::to_string(*lt);
      r += "}}}";
      return r;
    };
    auto missing = [&] {
      std::string m = "{\"bool\":{\"must_not\":{\"exists\":{\"field\":";
      AppendJsonString(&m, f);
      return m + "}}}}";
    };
    // Records in buckets [a, b): from lo(a) (or anything before, and none, when a == 0) to lo(b) (or on, b == n).
    auto span = [&](size_t a, size_t b) -> std::string {
      if (n == 1 || (a == 0 && b == n)) return "{\"match_all\":{}}";
      std::optional<int64_t> gte, lt;
      if (a > 0) gte = lo(a);
      if (b < n) lt = lo(b);
      if (a > 0) return range(gte, lt);
      return "{\"bool\":{\"should\":[" + (lt ? range(std::nullopt, lt) : std::string("{\"match_all\":{}}")) + "," + missing() +
             "],\"minimum_should_match\":1}}";
    };
    auto is_long = [&](size_t k) { return schema::FieldOf(q.keys[k]).type == schema::Type::kLong; };
    constexpr int64_t kMissingLong = std::numeric_limits<int64_t>::min();
    std::string nest = sums;
    for (size_t k = q.keys.size(); k-- > 0;) {
      std::string t = "{\"k" + std::to_string(k) + "\":{\"terms\":{\"field\":";
      AppendJsonString(&t, q.keys[k].name());
      // An absent key: "" for a keyword, the least long (read back as "") for a long.
      t += is_long(k) ? ",\"missing\":" + std::to_string(kMissingLong) : std::string(",\"missing\":\"\"");
      t += ",\"size\":" + std::to_string(kTermsSize) + "}";
      if (!nest.empty()) t += ",\"aggs\":" + nest;
      t += "}}";
      nest = std::move(t);
    }
    auto body_of = [&](size_t a) {
      const size_t b = std::min(n, a + kSplitsPerRequest);
      std::string body = "{\"size\":0,\"track_total_hits\":false,\"query\":{\"bool\":{\"filter\":[" + *query + "," + span(a, b) +
                         "]}},\"aggs\":{\"t\":{\"filters\":{\"filters\":{";
      for (size_t k = a; k < b; ++k) {
        if (k > a) body += ",";
        body += "\"" + std::to_string(k) + "\":" + span(k, k + 1);
      }
      body += "}}";
      if (!nest.empty()) body += ",\"aggs\":" + nest;
      body += "}}}";
      return body;
    };
    // Two requests in flight: the next chunk's answer is fetched on a second
    // connection while this one's is asked and read; answers are used in
    // chunk order, at most two held.
    std::optional<Result<std::string>> ahead;
    for (size_t a = 0; a < n; a += kSplitsPerRequest) {
      std::optional<Result<std::string>> got;
      if (ahead) {
        got = std::move(ahead);
        ahead.reset();
      } else {
        const size_t a2 = a + kSplitsPerRequest;
        EsClient* second = a2 < n ? c2 : nullptr;
        std::thread t;
        std::optional<Result<std::string>> next;
        if (second) t = std::thread([&, second] { next.emplace(second->Search(*index, body_of(a2))); });
        got.emplace(c->Search(*index, body_of(a)));
        if (t.joinable()) t.join();
        ahead = std::move(next);
      }
      Result<std::string>& r = *got;
      if (!r.ok()) return r.status();
      if (r->empty()) return Status::Ok();  // no such data stream: no groups
      rapidjson::Document d;
      d.Parse(r->data(), r->size());
      if (!d.HasMember("aggregations") || !d["aggregations"].HasMember("t") || !d["aggregations"]["t"].HasMember("buckets") ||
          !d["aggregations"]["t"]["buckets"].IsObject())
        return Status::Io("aggregate " + *index + ": not a filters aggregation response: " + r->substr(0, 300));
      bool stop = false;
      Status bad;
      std::function<void(const rapidjson::Value&, size_t)> walk = [&](const rapidjson::Value& node, size_t level) {
        if (stop) return;
        if (level == q.keys.size()) {
          if (!node.HasMember("doc_count") || !node["doc_count"].IsUint64() || node["doc_count"].GetUint64() == 0) return;
          g.count = node["doc_count"].GetUint64();
          read_sums(node);
          if (!fn(g)) stop = true;
          return;
        }
        const std::string name = "k" + std::to_string(level);
        if (!node.HasMember(name.c_str()) || !node[name.c_str()].HasMember("buckets") || !node[name.c_str()]["buckets"].IsArray()) {
          bad = Status::Io("aggregate " + *index + ": no terms buckets for " + std::string(q.keys[level].name()));
          stop = true;
          return;
        }
        const auto& t = node[name.c_str()];
        if (t.HasMember("sum_other_doc_count") && t["sum_other_doc_count"].IsUint64() && t["sum_other_doc_count"].GetUint64() > 0) {
          bad = Status::Io("aggregate " + *index + ": more than " + std::to_string(kTermsSize) + " distinct values of " +
                           std::string(q.keys[level].name()) + " in one bucket: not supported");
          stop = true;
          return;
        }
        for (const auto& tb : t["buckets"].GetArray()) {
          if (!tb.HasMember("key")) continue;
          if (tb["key"].IsString()) g.keys[level] = tb["key"].GetString();
          else if (tb["key"].IsInt64()) g.keys[level] = tb["key"].GetInt64() == kMissingLong ? std::string() : std::to_string(tb["key"].GetInt64());
          else continue;
          walk(tb, level + 1);
          if (stop) return;
        }
      };
      for (auto it = d["aggregations"]["t"]["buckets"].MemberBegin(); it != d["aggregations"]["t"]["buckets"].MemberEnd(); ++it) {
        g.keys.assign(q.keys.size(), std::string());
        g.split = static_cast<size_t>(std::strtoull(it->name.GetString(), nullptr, 10));
        walk(it->value, 0);
        if (stop) break;
      }
      if (!bad.ok()) return bad;
      if (stop) break;
    }
    return Status::Ok();
  }

  // Connection i beside es_ (connection 0), opened on first use; nullptr if it cannot be opened.
  EsClient* Conn(size_t i) {
    if (i == 0) return es_.get();
    if (extra_.size() < i) extra_.resize(i);
    auto& slot = extra_[i - 1];
    if (!slot.tried) {
      slot.tried = true;
      auto c = EsClient::Open(es_->http().base_url(), es_->options());
      if (c.ok()) slot.client = std::move(*c);
    }
    return slot.client.get();
  }

  // Two searches of one hit each, sorted by the field (exact: sort values of
  // a long come back as integers).
  Result<std::pair<std::optional<int64_t>, std::optional<int64_t>>> Span(const std::string& dataset,
                                                                         const std::vector<FieldFilter>& filters,
                                                                         FieldId lo_field, FieldId hi_field) override {
    GroupQuery check;
    check.dataset = dataset;
    check.sums = {lo_field, hi_field};
    if (Status s = ValidateGroupQuery(check); !s.ok()) return s;
    auto index = IndexFor(dataset);
    if (!index.ok()) return index.status();
    auto query = QueryJson(dataset, TimeRange{}, filters);
    if (!query.ok()) return query.status();
    auto first = [&](FieldId field, bool greatest) -> Result<std::optional<int64_t>> {
      std::string body = "{\"size\":1,\"track_total_hits\":false,\"_source\":false,\"query\":{\"bool\":{\"filter\":[" +
                         *query + ",{\"exists\":{\"field\":";
      AppendJsonString(&body, field.name());
      body += "}}]}},\"sort\":[{";
      AppendJsonString(&body, field.name());
      body += std::string(":{\"order\":\"") + (greatest ? "desc" : "asc") + "\"}}]}";
      auto r = es_->Search(*index, body);
      if (!r.ok()) return r.status();
      if (r->empty()) return std::optional<int64_t>();
      rapidjson::Document d;
      d.Parse(r->data(), r->size());
      if (!d.HasMember("hits") || !d["hits"].HasMember("hits") || !d["hits"]["hits"].IsArray())
        return Status::Io("search " + *index + ": not a search response: " + r->substr(0, 300));
      const auto& hits = d["hits"]["hits"];
      if (hits.Empty()) return std::optional<int64_t>();
      if (!hits[0].HasMember("sort") || !hits[0]["sort"].IsArray() || hits[0]["sort"].Empty() || !hits[0]["sort"][0].IsInt64())
        return Status::Io("search " + *index + ": no integer sort value in " + r->substr(0, 300));
      return std::optional<int64_t>(hits[0]["sort"][0].GetInt64());
    };
    auto lo = first(lo_field, false);
    if (!lo.ok()) return lo.status();
    auto hi = first(hi_field, true);
    if (!hi.ok()) return hi.status();
    return std::pair{*lo, *hi};
  }

  // One Span() each (two sorted one-hit searches: exact, and cheap in an engine).
  Result<std::vector<SpanPair>> Spans(const std::string& dataset, const std::vector<FieldFilter>& filters, FieldId lo_field,
                                      FieldId hi_field, FieldId key, const std::vector<std::string>& values) override {
    if (Status s = ValidateSpansQuery(dataset, lo_field, hi_field, key); !s.ok()) return s;
    std::vector<SpanPair> out;
    for (size_t i = 0; i <= values.size(); ++i) {
      std::vector<FieldFilter> f = filters;
      if (i > 0) f.push_back({key, values[i - 1]});
      auto s = Span(dataset, f, lo_field, hi_field);
      if (!s.ok()) return s.status();
      out.push_back(*s);
    }
    return out;
  }

  Result<uint64_t> Count(const std::string& dataset, const std::vector<FieldFilter>& filters) override {
    auto index = IndexFor(dataset);
    if (!index.ok()) return index.status();
    auto query = QueryJson(dataset, TimeRange{}, filters);
    if (!query.ok()) return query.status();
    return es_->CountDocs(*index, *query);
  }

 private:
  struct Extra {
    std::unique_ptr<EsClient> client;
    bool tried = false;
  };
  std::vector<Extra> extra_;
  Result<std::string> IndexFor(const std::string& dataset) {
    const auto* ds = schema::FindDataset(dataset);
    if (!ds) return Status::Invalid("unknown dataset '" + dataset + "'");
    std::string index = DataStreamName(*ds, es_->options().name_space);
    if (dirty_.erase(index)) {
      if (auto st = es_->Refresh(index); !st.ok()) return st;
    }
    return index;
  }

  Result<std::string> QueryJson(const std::string& dataset, const TimeRange& range, const std::vector<FieldFilter>& filters) {
    std::string q = "{\"bool\":{\"filter\":[";
    bool first = true;
    if (range.start_ns != std::numeric_limits<int64_t>::min() || range.end_ns != std::numeric_limits<int64_t>::max()) {
      q += "{\"range\":{";
      q += field::kTimestamp.key();
      q += "{\"format\":\"epoch_millis\"";
      if (range.start_ns != std::numeric_limits<int64_t>::min()) q += ",\"gte\":" + std::to_string(CeilMs(range.start_ns));
      if (range.end_ns != std::numeric_limits<int64_t>::max()) q += ",\"lt\":" + std::to_string(CeilMs(range.end_ns));
      q += "}}}";
      first = false;
    }
    for (const auto& f : filters) {
      const std::string name(f.field.name());
      if (!f.field.valid()) return Status::Invalid("no field given (an empty field id)");
      if (!schema::FieldInDataset(schema::FieldOf(f.field), dataset))
        return Status::Invalid("filter on " + name + ": not a field of dataset " + dataset);
      const schema::Field* fd = &schema::FieldOf(f.field);
      if (!first) q += ",";
      first = false;
      q += "{\"term\":{";
      AppendJsonString(&q, name);
      q += ":";
      if (fd->type == schema::Type::kKeyword) {
        AppendJsonString(&q, f.equals);
      } else if (fd->type == schema::Type::kLong) {
        char* end = nullptr;
        long long v = std::strtoll(f.equals.c_str(), &end, 10);
        if (f.equals.empty() || *end) return Status::Invalid("filter on " + name + ": '" + f.equals + "' is not an integer");
        q += std::to_string(v);
      } else if (fd->type == schema::Type::kBool) {
        if (f.equals != "true" && f.equals != "false") return Status::Invalid("filter on " + name + ": '" + f.equals + "' is not true or false");
        q += f.equals;
      } else {
        return Status::Invalid("filter on " + name + ": only keyword, long and boolean fields can be filtered on");
      }
      q += "}}";
    }
    q += "]}}";
    return q;
  }

  std::unique_ptr<EsClient> es_;
  std::set<std::string> dirty_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenElasticsearchStore(const std::string& url, const EsOptions& opts) {
  auto c = EsClient::Open(url, opts);
  if (!c.ok()) return c.status();
  return std::unique_ptr<Store>(std::make_unique<EsStore>(std::move(*c)));
}

EsOptions EsOptionsFromEnv() {
  EsOptions o;
  auto env = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v ? v : "";
  };
  o.user = env("IOSONAR_ES_USER");
  o.password = env("IOSONAR_ES_PASSWORD");
  o.api_key = env("IOSONAR_ES_API_KEY");
  o.ca_file = env("IOSONAR_ES_CA_FILE");
  if (!env("IOSONAR_NAMESPACE").empty()) o.name_space = env("IOSONAR_NAMESPACE");
  return o;
}

Result<std::unique_ptr<Store>> OpenStoreAt(const std::string& where) {
  if (IsElasticsearchOutput(where)) return OpenElasticsearchStore(where, EsOptionsFromEnv());
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(where) / "store.db", ec))
    return Status::NotFound("no record store in " + where + " (no store.db)");
  return OpenSqliteStore(where);
}

}  // namespace iosonar
