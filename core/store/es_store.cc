#include "core/store/es_store.h"

#include <rapidjson/document.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/transport/es_client.h"
#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/store/sqlite_store.h"

namespace iosonar {
namespace {

// Hits per PIT page: fewer round trips (each sorts and fetches again); at
// most index.max_result_window (10,000 by default).
constexpr size_t kScanPage = 5000;

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
    // Only the dataset's own fields are read back: what else a document
    // carries (data_stream.* and tags added by Logstash, @version) is not a
    // record field and is left on the server.
    std::string source = "{\"includes\":[";
    bool first_field = true;
    for (const auto* f : schema::FieldsOf(q.dataset)) {
      if (!first_field) source += ",";
      first_field = false;
      AppendJsonString(&source, f->name);
    }
    source += "]}";
    Status st = es_->ScanPit(*index, *query, kScanPage, [&](std::string_view src) {
      buf.assign(src);
      buf.push_back('\0');
      if (auto s = ParseRecordInsitu(buf.data(), buf.size() - 1, &rec); !s.ok()) {
        bad = Status::Io("document in " + *index + " does not match the schema: " + s.message());
        return false;
      }
      return fn(row);
    }, source);
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

  Result<uint64_t> Count(const std::string& dataset, const std::vector<FieldFilter>& filters) override {
    auto index = IndexFor(dataset);
    if (!index.ok()) return index.status();
    auto query = QueryJson(dataset, TimeRange{}, filters);
    if (!query.ok()) return query.status();
    return es_->CountDocs(*index, *query);
  }

 private:
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
