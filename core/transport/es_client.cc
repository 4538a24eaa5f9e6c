#include "core/transport/es_client.h"

#include <zlib.h>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"

namespace iosonar {
namespace {

std::string ToJsonText(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

bool Retryable(long status) { return status == 429 || status >= 500; }

std::string ErrorReason(const rapidjson::Value& err) {
  if (err.IsString()) return err.GetString();
  if (!err.IsObject()) return "unknown error";
  std::string r;
  if (err.HasMember("type") && err["type"].IsString()) r = err["type"].GetString();
  if (err.HasMember("reason") && err["reason"].IsString()) {
    if (!r.empty()) r += ": ";
    r += err["reason"].GetString();
  }
  if (err.HasMember("caused_by") && err["caused_by"].IsObject()) r += " (caused by " + ErrorReason(err["caused_by"]) + ")";
  return r.empty() ? ToJsonText(err) : r;
}

std::string Snippet(std::string_view body) {
  return std::string(body.substr(0, 300));
}

// True if an error response says the point in time is gone.
bool PitExpired(const HttpResponse& r) {
  return r.status == 404 && r.body.find("search_context_missing_exception") != std::string::npos;
}

// gzip (RFC 1952) of in into *out, for a Content-Encoding: gzip request body.
Status Gzip(std::string_view in, std::string* out) {
  z_stream z{};
  // Level 1: most of the size gain for a fraction of the CPU (JSON lines compress ~10x).
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return Status::Internal("gzip: deflateInit2 failed");
  out->resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Status::Internal("gzip: deflate failed (" + std::to_string(rc) + ")");
  out->resize(n);
  return Status::Ok();
}

// A search/count answer that is partial: some shards failed or it timed out.
// Such an answer is an error, never read as if it were complete.
Status CheckComplete(const rapidjson::Document& d, const std::string& what) {
  if (d.HasMember("timed_out") && d["timed_out"].IsBool() && d["timed_out"].GetBool())
    return Status::Unavailable(what + ": the search timed out (timed_out: true): a partial answer is not used");
  if (d.HasMember("_shards") && d["_shards"].IsObject()) {
    const auto& sh = d["_shards"];
    if (sh.HasMember("failed") && sh["failed"].IsUint64() && sh["failed"].GetUint64() > 0) {
      std::string why;
      if (sh.HasMember("failures") && sh["failures"].IsArray() && !sh["failures"].Empty() &&
          sh["failures"][0].IsObject() && sh["failures"][0].HasMember("reason"))
        why = ": " + ErrorReason(sh["failures"][0]["reason"]);
      return Status::Unavailable(what + ": " + std::to_string(sh["failed"].GetUint64()) + " of " +
                                 (sh.HasMember("total") && sh["total"].IsUint64() ? std::to_string(sh["total"].GetUint64()) : "?") +
                                 " shards failed" + why + ": a partial answer is not used");
    }
  }
  return Status::Ok();
}

bool ParseVersion(const std::string& v, EngineInfo* e) {
  int ma = 0, mi = 0;
  if (std::sscanf(v.c_str(), "%d.%d", &ma, &mi) != 2) return false;
  e->major = ma;
  e->minor = mi;
  e->version = v;
  return true;
}

}  // namespace

std::string EngineInfo::Describe() const {
  std::string s = opensearch() ? "OpenSearch " : "Elasticsearch ";
  s += version;
  if (!probed) s += " (assumed, not asked)";
  s += opensearch() ? (ism ? ", ISM plugin" : ", no ISM plugin") : (ilm ? ", ILM" : ", no ILM");
  return s;
}

std::string DataStreamName(const schema::Dataset& ds, std::string_view name_space) {
  std::string s(ds.stream_type);
  s += '-';
  s += ds.name;
  s += '-';
  s += name_space;
  return s;
}

std::string DocId(const ParsedRecord& rec) { return DedupeId(rec); }

void AppendRecordJson(std::string* out, const ParsedRecord& rec) {
  const auto fields = schema::Fields();
  // "name": pre-rendered once per field (names are fixed ASCII).
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& f : schema::Fields()) {
      std::string s;
      AppendJsonString(&s, f.name);
      s.push_back(':');
      k.push_back(std::move(s));
    }
    return k;
  }();
  out->push_back('{');
  bool first = true;
  char num[24];
  for (size_t k = 0; k < fields.size(); ++k) {
    const FieldValue& v = rec.v[k];
    if (v.kind == FieldValue::kAbsent) continue;
    if (!first) out->push_back(',');
    first = false;
    out->append(keys[k]);
    switch (fields[k].type) {
      case schema::Type::kKeyword: AppendJsonString(out, v.s); break;
      case schema::Type::kDate:
        if (!v.s.empty()) {
          AppendJsonString(out, v.s);
        } else {
          char b[40];
          JsonLine jl(b, sizeof b);
          jl.IsoMillis(v.i);
          out->append(b, jl.size());
        }
        break;
      case schema::Type::kBool: *out += v.i ? "true" : "false"; break;
      case schema::Type::kLong: {
        auto r = std::to_chars(num, num + sizeof num, v.i);
        out->append(num, static_cast<size_t>(r.ptr - num));
        break;
      }
      case schema::Type::kDouble: {
        JsonWriter w(out);
        w.Double(v.kind == FieldValue::kDouble ? v.d : static_cast<double>(v.i));
        break;
      }
    }
  }
  out->push_back('}');
}

const std::vector<GroupKeyField>& GroupKeyFields() {
  static const std::vector<GroupKeyField> keys = {
      // job-summary's per-file group: each process's use of a file, per op
      {"iosonar.key.file", "iosonar.trace",
       {field::kIoLayer, field::kIoOp, field::kFileId, field::kFilePath, field::kHostName, field::kProcessPid, field::kIoFd}},
      // job-summary's per-op group
      {"iosonar.key.op", "iosonar.trace", {field::kIoLayer, field::kIoOp, field::kIoSize, field::kIoErrno}},
      // job-summary's and xlayer's per-op series (with a split of event.start_ns)
      {"iosonar.key.layer_op", "iosonar.trace", {field::kIoLayer, field::kIoOp}},
      // xlayer's per host and per file groups
      {"iosonar.key.host", "iosonar.trace", {field::kIoLayer, field::kHostName, field::kIoOp}},
      {"iosonar.key.path", "iosonar.trace", {field::kIoLayer, field::kFilePath, field::kIoOp}},
  };
  return keys;
}

const GroupKeyField* GroupKeyFor(std::string_view dataset, std::span<const FieldId> keys) {
  for (const GroupKeyField& k : GroupKeyFields())
    if (dataset == k.dataset && std::equal(keys.begin(), keys.end(), k.parts.begin(), k.parts.end())) return &k;
  return nullptr;
}

std::optional<std::string> EncodeGroupKey(const GroupKeyField& k, const ParsedRecord& rec) {
  std::string out;
  char num[24];
  for (FieldId id : k.parts) {
    const FieldValue& v = rec.v[id.index()];
    std::string_view text;
    if (v.kind != FieldValue::kAbsent) {
      if (schema::FieldOf(id).type == schema::Type::kLong) {
        auto r = std::to_chars(num, num + sizeof num, v.i);
        text = std::string_view(num, static_cast<size_t>(r.ptr - num));
      } else {
        text = v.s;
      }
    }
    out += std::to_string(text.size());
    out.push_back(':');
    out.append(text);
    if (out.size() > kMaxGroupKeyBytes) return std::nullopt;
  }
  return out;
}

bool DecodeGroupKey(std::string_view key, size_t n, std::vector<std::string>* parts) {
  parts->clear();
  size_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t len = 0, digits = 0;
    while (pos < key.size() && key[pos] >= '0' && key[pos] <= '9' && digits < 6) {
      len = len * 10 + static_cast<size_t>(key[pos++] - '0');
      ++digits;
    }
    if (digits == 0 || pos >= key.size() || key[pos] != ':' || key.size() - pos - 1 < len) return false;
    ++pos;
    parts->emplace_back(key.substr(pos, len));
    pos += len;
  }
  return pos == key.size();
}

void AppendGroupKeyMembers(std::string* out, const ParsedRecord& rec) {
  if (!rec.dataset) return;
  for (const GroupKeyField& k : GroupKeyFields()) {
    if (rec.dataset->name != k.dataset) continue;
    auto key = EncodeGroupKey(k, rec);
    if (!key) continue;
    out->push_back(',');
    AppendJsonString(out, k.name);
    out->push_back(':');
    AppendJsonString(out, *key);
  }
}

void AddGroupKeys(std::string* doc, const ParsedRecord& rec) {
  while (!doc->empty() && (doc->back() == ' ' || doc->back() == '\t' || doc->back() == '\r' || doc->back() == '\n')) doc->pop_back();
  if (doc->size() < 2 || doc->back() != '}') return;
  std::string members;
  AppendGroupKeyMembers(&members, rec);
  if (members.empty()) return;
  doc->pop_back();
  // `{}` + members: no leading comma
  const bool empty_object = doc->find_last_not_of(" \t\r\n") == 0;
  doc->append(empty_object ? std::string_view(members).substr(1) : std::string_view(members));
  doc->push_back('}');
}

void AppendBulkCreate(std::string* out, const BulkDoc& d) {
  *out += "{\"create\":{\"_index\":";
  AppendJsonString(out, d.index);
  *out += ",\"_id\":";
  AppendJsonString(out, d.id);
  *out += "}}\n";
  *out += d.source;
  out->push_back('\n');
}

EsClient::EsClient(std::unique_ptr<HttpClient> http, const EsOptions& opts)
    : http_(std::move(http)), opts_(opts), backoff_(opts.backoff_initial_ms, opts.backoff_max_ms), rng_(std::random_device{}()) {}

Result<std::unique_ptr<EsClient>> EsClient::Open(const std::string& url, const EsOptions& opts) {
  auto h = HttpClient::Open(url, opts);
  if (!h.ok()) return h.status();
  return std::make_unique<EsClient>(std::move(*h), opts);
}

Result<EngineInfo> EsClient::Engine(bool probe_policies) {
  if (!engine_known_) {
    EngineInfo e;
    auto r = Call("GET", "/");
    if (!r.ok()) return r.status();
    rapidjson::Document d;
    bool found = false;
    if (r->status == 200) {
      d.Parse(r->body.data(), r->body.size());
      if (!d.HasParseError() && d.IsObject() && d.HasMember("version") && d["version"].IsObject() &&
          d["version"].HasMember("number") && d["version"]["number"].IsString()) {
        const auto& v = d["version"];
        if (v.HasMember("distribution") && v["distribution"].IsString() && std::string(v["distribution"].GetString()) == "opensearch")
          e.flavor = EngineInfo::kOpenSearch;
        found = ParseVersion(v["number"].GetString(), &e);
      }
    }
    if (!found) {
      // Elasticsearch without its rest-root module (the integ-test distribution)
      // answers GET / with 405: ask the node itself. OpenSearch's nodes info has
      // no build_flavor, Elasticsearch's has.
      auto n = Call("GET", "/_nodes/_local?filter_path=nodes.*.version,nodes.*.build_flavor,nodes.*.modules.name");
      if (!n.ok()) return n.status();
      if (n->status != 200)
        return Status::Io("cannot tell what engine this is: GET / answered HTTP " + std::to_string(r->status) +
                          ", GET /_nodes/_local HTTP " + std::to_string(n->status) + ": " + Snippet(n->body));
      d.Parse(n->body.data(), n->body.size());
      if (d.HasParseError() || !d.IsObject() || !d.HasMember("nodes") || !d["nodes"].IsObject() ||
          d["nodes"].MemberCount() == 0 || !d["nodes"].MemberBegin()->value.HasMember("version") ||
          !d["nodes"].MemberBegin()->value["version"].IsString())
        return Status::Io("cannot tell what engine this is: no version in GET /_nodes/_local: " + Snippet(n->body));
      const auto& node = d["nodes"].MemberBegin()->value;
      e.flavor = node.HasMember("build_flavor") ? EngineInfo::kElasticsearch : EngineInfo::kOpenSearch;
      if (!ParseVersion(node["version"].GetString(), &e))
        return Status::Io("cannot tell what engine this is: version '" + std::string(node["version"].GetString()) + "'");
    }
    e.probed = true;
    engine_ = e;
    engine_known_ = true;
  }
  if (probe_policies && !policies_known_) {
    EngineInfo& e = engine_;
    if (e.opensearch()) {
      e.ilm = false;
      e.constant_keyword = false;  // OpenSearch's constant_keyword needs its value in the mapping
      auto r = Call("GET", "/_plugins/_ism/policies");
      if (!r.ok()) return r.status();
      // Without the plugin: 400 "no handler found" (or 404/405 from a proxy); with it: 200.
      e.ism = r->status == 200;
    } else {
      e.ism = false;
      auto r = Call("GET", "/_ilm/status");
      if (!r.ok()) return r.status();
      e.ilm = r->status == 200;
      auto n = Call("GET", "/_nodes/_local?filter_path=nodes.*.modules.name");
      if (!n.ok()) return n.status();
      e.constant_keyword = n->status == 200 && n->body.find("\"constant-keyword\"") != std::string::npos;
    }
    policies_known_ = true;
  }
  return engine_;
}

int EsClient::BackoffMs(int attempt) {
  return static_cast<int>(backoff_.JitteredDelay(attempt, rng_));
}

Result<HttpResponse> EsClient::Call(std::string_view method, const std::string& path, std::string_view body,
                                    std::string_view content_type) {
  Status last;
  for (int attempt = 0; attempt < std::max(1, opts_.max_attempts); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(BackoffMs(attempt - 1)));
    auto r = http_->Request(method, path, body, content_type);
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    if (Retryable(r->status)) {
      last = Status::Unavailable(std::string(method) + " " + path + ": HTTP " + std::to_string(r->status) + ": " +
                                 Snippet(r->body));
      continue;
    }
    return r;
  }
  return Status::Unavailable(last.message() + " (gave up after " + std::to_string(opts_.max_attempts) + " attempts)");
}

Status EsClient::Bulk(std::vector<BulkDoc> docs, BulkStats* stats, std::vector<BulkRejected>* rejected) {
  BulkStats local;
  if (!stats) stats = &local;
  std::vector<BulkDoc> pending = std::move(docs);
  std::string body, zbody;
  for (int round = 0; !pending.empty(); ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(BackoffMs(round - 1)));
    std::vector<BulkDoc> again;
    size_t i = 0;
    while (i < pending.size()) {
      // One batch: bounded by bytes and count (a single oversized doc still goes alone).
      body.clear();
      const size_t first = i;
      while (i < pending.size() && i - first < opts_.max_batch_docs) {
        const size_t before = body.size();
        AppendBulkCreate(&body, pending[i]);
        if (body.size() > opts_.max_batch_bytes && i > first) {
          body.resize(before);
          break;
        }
        ++i;
      }
      const size_t n = i - first;
      std::string_view send = body;
      if (opts_.gzip) {
        if (Status z = Gzip(body, &zbody); !z.ok()) return z;
        send = zbody;
      }
      Result<HttpResponse> r = Status::Internal("unsent");
      for (int attempt = 0; attempt < std::max(1, opts_.max_attempts); ++attempt) {
        if (attempt > 0) {
          ++stats->request_retries;
          std::this_thread::sleep_for(std::chrono::milliseconds(BackoffMs(attempt - 1)));
        }
        ++stats->requests;
        stats->bytes += send.size();
        r = http_->Request("POST", "/_bulk", send, "application/x-ndjson", opts_.gzip ? "gzip" : "");
        if (r.ok() && !Retryable(r->status)) break;
      }
      if (!r.ok()) return Status::Unavailable("_bulk: " + r.status().message() + " (gave up after " +
                                              std::to_string(opts_.max_attempts) + " attempts)");
      if (Retryable(r->status))
        return Status::Unavailable("_bulk: HTTP " + std::to_string(r->status) + " after " +
                                   std::to_string(opts_.max_attempts) + " attempts: " + Snippet(r->body));
      if (r->status != 200)
        return Status::Io("_bulk: HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
      rapidjson::Document d;
      d.Parse(r->body.data(), r->body.size());
      if (d.HasParseError() || !d.IsObject() || !d.HasMember("items") || !d["items"].IsArray())
        return Status::Io("_bulk: response is not a bulk response: " + Snippet(r->body));
      const auto& items = d["items"].GetArray();
      if (items.Size() != n)
        return Status::Io("_bulk: " + std::to_string(items.Size()) + " items answered for " + std::to_string(n) + " sent");
      for (size_t k = 0; k < n; ++k) {
        const auto& it = items[static_cast<rapidjson::SizeType>(k)];
        const rapidjson::Value* res = nullptr;
        if (it.IsObject() && it.MemberCount() == 1) res = &it.MemberBegin()->value;
        long st = 0;
        if (res && res->IsObject() && res->HasMember("status") && (*res)["status"].IsInt()) st = (*res)["status"].GetInt();
        BulkDoc& doc = pending[first + k];
        if (st == 200 || st == 201) {
          ++stats->created;
        } else if (st == 409) {
          ++stats->already_stored;
        } else if (Retryable(st) && round + 1 < opts_.max_attempts) {
          ++stats->item_retries;
          again.push_back(std::move(doc));
        } else {
          ++stats->rejected;
          if (rejected) {
            std::string reason = res && res->IsObject() && res->HasMember("error") ? ErrorReason((*res)["error"])
                                                                                  : "no status in bulk item";
            if (Retryable(st)) reason = "still failing after " + std::to_string(opts_.max_attempts) + " attempts: " + reason;
            rejected->push_back(BulkRejected{std::move(doc), st, std::move(reason)});
          }
        }
      }
    }
    pending = std::move(again);
  }
  return Status::Ok();
}

namespace {

// Where a PIT scan is: the sort values of the last hit given. The sort
// [@timestamp, event.stream, event.seq] is unique per record and means the
// same in any PIT, so after a reopen the scan goes on from there.
// Unordered: [_doc, event.stream, event.seq] (index order first, so the
// engine need not sort the matching records on @timestamp for every page;
// the two after it make the order total across shards and backing indices).
std::string PageBody(size_t page_size, const std::string& query_json, const std::string& pit_id, const std::string& after,
                     const std::string& source_json, bool ordered) {
  std::string body = "{\"size\":" + std::to_string(page_size) + ",\"query\":" + query_json + ",\"pit\":{\"id\":";
  AppendJsonString(&body, pit_id);
  body += ",\"keep_alive\":\"2m\"},\"sort\":[{";
  if (ordered) body += field::kTimestamp.key();
  else body += "\"_doc\":";
  body += "\"asc\"},{";
  body += field::kEventStream.key();
  body += "\"asc\"},{";
  body += field::kEventSeq.key();
  body += "\"asc\"}],\"track_total_hits\":false";
  if (!after.empty()) body += ",\"search_after\":" + after;
  if (!source_json.empty()) body += ",\"_source\":" + source_json;
  body += "}";
  return body;
}

}  // namespace

Result<std::string> EsClient::OpenPit(const std::string& index) {
  auto eng = Engine();
  if (!eng.ok()) return eng.status();
  const bool os = eng->opensearch_pit();
  auto r = Call("POST", "/" + index + (os ? "/_search/point_in_time?keep_alive=2m" : "/_pit?keep_alive=2m"));
  if (!r.ok()) return r.status();
  if (r->status == 404) return std::string();  // no such index: nothing to scan
  if (r->status != 200) return Status::Io("open PIT on " + index + ": HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
  rapidjson::Document d;
  d.Parse(r->body.data(), r->body.size());
  const char* key = os ? "pit_id" : "id";
  if (d.HasParseError() || !d.IsObject() || !d.HasMember(key) || !d[key].IsString())
    return Status::Io("open PIT on " + index + ": no " + key + " in " + Snippet(r->body));
  if (os && d.HasMember("_shards") && d["_shards"].IsObject() && d["_shards"].HasMember("failed") &&
      d["_shards"]["failed"].IsUint64() && d["_shards"]["failed"].GetUint64() > 0)
    return Status::Unavailable("open PIT on " + index + ": shards failed: " + Snippet(r->body));
  return std::string(d[key].GetString());
}

namespace {

// The range clause of a time chunk [lo, hi) in epoch ms (an open end when absent).
std::string ChunkRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::string r = "{\"range\":{";
  r += field::kTimestamp.key();
  r += "{\"format\":\"epoch_millis\"";
  if (lo) r += ",\"gte\":" + std::to_string(*lo);
  if (hi) r += ",\"lt\":" + std::to_string(*hi);
  return r + "}}}";
}

}  // namespace

// An ordered scan sorts the matching records on @timestamp for every page:
// a page costs the whole match, so 10^6 records in pages of 5,000 would cost
// 200 sorts of 10^6. The scan is cut into time chunks of about a page each
// (from a date_histogram of the match), each paged on its own; @timestamp
// leads the sort, so chunk after chunk is still one order. Boundaries are
// @timestamp values in epoch ms; the first chunk is open below, the last
// above, so every record is in exactly one. Empty: one chunk (a small
// match, or no plan could be made: slower, never incomplete).
std::vector<int64_t> EsClient::TimeChunks(const std::string& query_json, std::string* pit_id, size_t page_size) {
  auto ask = [&](const std::string& aggs) -> std::optional<rapidjson::Document> {
    std::string body = "{\"size\":0,\"track_total_hits\":true,\"query\":" + query_json + ",\"pit\":{\"id\":";
    AppendJsonString(&body, *pit_id);
    body += ",\"keep_alive\":\"2m\"},\"aggs\":" + aggs + "}";
    auto r = Call("POST", "/_search", body);
    if (!r.ok() || r->status != 200) return std::nullopt;
    rapidjson::Document d;
    d.Parse(r->body.data(), r->body.size());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("aggregations") || !CheckComplete(d, "").ok()) return std::nullopt;
    if (d.HasMember("pit_id") && d["pit_id"].IsString()) *pit_id = d["pit_id"].GetString();
    return d;
  };
  const std::string ts(field::kTimestamp.name());
  auto span = ask("{\"lo\":{\"min\":{\"field\":\"" + ts + "\"}},\"hi\":{\"max\":{\"field\":\"" + ts + "\"}}}");
  if (!span) return {};
  const auto& d = *span;
  uint64_t total = 0;
  if (d.HasMember("hits") && d["hits"].HasMember("total") && d["hits"]["total"].IsObject() &&
      d["hits"]["total"].HasMember("value") && d["hits"]["total"]["value"].IsUint64())
    total = d["hits"]["total"]["value"].GetUint64();
  const auto& ag = d["aggregations"];
  if (total <= page_size || !ag.HasMember("lo") || !ag.HasMember("hi") || !ag["lo"].HasMember("value") ||
      !ag["hi"].HasMember("value") || !ag["lo"]["value"].IsNumber() || !ag["hi"]["value"].IsNumber())
    return {};
  const int64_t lo = std::llround(ag["lo"]["value"].GetDouble()), hi = std::llround(ag["hi"]["value"].GetDouble());
  if (hi <= lo) return {};
  // About four histogram buckets a page, at most 10,000 (under search.max_buckets).
  const uint64_t want = std::min<uint64_t>(10000, 4 * (total / page_size + 1));
  const int64_t interval = std::max<int64_t>(1, (hi - lo) / static_cast<int64_t>(want) + 1);
  auto hist = ask("{\"t\":{\"date_histogram\":{\"field\":\"" + ts + "\",\"fixed_interval\":\"" + std::to_string(interval) +
                  "ms\",\"min_doc_count\":1}}}");
  if (!hist || !(*hist)["aggregations"].HasMember("t") || !(*hist)["aggregations"]["t"].HasMember("buckets") ||
      !(*hist)["aggregations"]["t"]["buckets"].IsArray())
    return {};
  std::vector<int64_t> cuts;
  uint64_t in_chunk = 0;
  for (const auto& b : (*hist)["aggregations"]["t"]["buckets"].GetArray()) {
    if (!b.IsObject() || !b.HasMember("key") || !b["key"].IsInt64() || !b.HasMember("doc_count") || !b["doc_count"].IsUint64())
      return {};
    const uint64_t n = b["doc_count"].GetUint64();
    if (in_chunk > 0 && in_chunk + n > page_size) {
      cuts.push_back(b["key"].GetInt64());
      in_chunk = 0;
    }
    in_chunk += n;
  }
  return cuts;
}

Status EsClient::ScanPit(const std::string& index, const std::string& query_json, size_t page_size,
                         const std::function<bool(std::string_view source)>& fn, const std::string& source_json,
                         bool ordered) {
  auto pit = OpenPit(index);
  if (!pit.ok()) return pit.status();
  std::string pit_id = *pit;
  if (pit_id.empty()) return Status::Ok();
  std::string after;  // the last hit's sort values
  size_t after_values = 0;
  Status result;
  const std::vector<int64_t> cuts = ordered ? TimeChunks(query_json, &pit_id, page_size) : std::vector<int64_t>();
  size_t chunk = 0;  // chunk k: [cuts[k-1], cuts[k])
  auto chunk_query_of = [&](size_t k) -> std::string {
    if (cuts.empty()) return query_json;
    return "{\"bool\":{\"filter\":[" + query_json + "," +
           ChunkRange(k > 0 ? std::optional<int64_t>(cuts[k - 1]) : std::nullopt,
                      k < cuts.size() ? std::optional<int64_t>(cuts[k]) : std::nullopt) +
           "]}}";
  };
  auto chunk_query = [&] { return chunk_query_of(chunk); };
  // The next chunk's first page is asked on a second connection while this
  // chunk's hits are given (one page ahead at most: bounded memory); an
  // answer that is not a plain 200 is dropped and the page asked again here.
  EsClient* helper = cuts.empty() ? nullptr : Helper();
  std::thread ahead_thread;
  std::optional<Result<HttpResponse>> ahead;
  size_t ahead_chunk = SIZE_MAX;
  auto settle = [&] {
    if (ahead_thread.joinable()) ahead_thread.join();
  };
  auto prefetch = [&](size_t k) {
    settle();
    ahead.reset();
    ahead_chunk = SIZE_MAX;
    if (!helper || k > cuts.size()) return;
    ahead_chunk = k;
    ahead_thread = std::thread([helper, &ahead, body = PageBody(page_size, chunk_query_of(k), pit_id, "", source_json, ordered)] {
      ahead.emplace(helper->Call("POST", "/_search", body));
    });
  };
  std::string cq = chunk_query();
  rapidjson::StringBuffer source_text;  // a hit's _source, given to fn (one buffer for the scan)
  for (;;) {
    std::optional<Result<HttpResponse>> got;
    if (after.empty() && ahead_chunk == chunk) {
      settle();
      if (ahead && ahead->ok() && (*ahead)->status == 200) got = std::move(ahead);
      ahead.reset();
      ahead_chunk = SIZE_MAX;
    }
    if (!got) got.emplace(Call("POST", "/_search", PageBody(page_size, cq, pit_id, after, source_json, ordered)));
    if (after.empty() && helper) prefetch(chunk + 1);
    Result<HttpResponse>& r = *got;
    if (!r.ok()) {
      result = r.status();
      break;
    }
    if (PitExpired(*r) && !ordered && !after.empty()) {
      // _doc values mean nothing in a new PIT: an unordered scan cannot go on exactly after the last record.
      result = Status::Unavailable("search " + index + ": the point in time expired during an unordered scan (more than 2 min "
                                   "between pages); the records given so far are not complete");
      break;
    }
    if (PitExpired(*r)) {
      ++pit_reopens_;
      auto p = OpenPit(index);
      if (!p.ok()) {
        result = p.status();
        break;
      }
      pit_id = *p;
      if (pit_id.empty()) break;
      // Elasticsearch appends an implicit _shard_doc tiebreaker to the sort
      // values of a PIT search; in the new PIT it means nothing, and the three
      // values before it already name one record: go on after all of it.
      if (!after.empty() && after_values > 3) after = after.substr(0, after.rfind(',')) + ",9223372036854775807]";
      continue;
    }
    if (r->status != 200) {
      result = Status::Io("search " + index + ": HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
      break;
    }
    // Parsed in place (the strings stay in the body, not copied: a page is
    // megabytes of _source), so what an error quotes is taken first.
    const std::string head = Snippet(r->body);
    rapidjson::Document d;
    d.ParseInsitu(r->body.data());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("hits") || !d["hits"].IsObject() ||
        !d["hits"].HasMember("hits") || !d["hits"]["hits"].IsArray()) {
      result = Status::Io("search " + index + ": not a search response: " + head);
      break;
    }
    if (Status c = CheckComplete(d, "search " + index); !c.ok()) {
      result = c;
      break;
    }
    if (d.HasMember("pit_id") && d["pit_id"].IsString()) pit_id = d["pit_id"].GetString();
    const auto& hits = d["hits"]["hits"].GetArray();
    auto next_chunk = [&] {
      if (chunk >= cuts.size()) return false;
      ++chunk;
      cq = chunk_query();
      after.clear();
      after_values = 0;
      return true;
    };
    if (hits.Empty()) {
      if (next_chunk()) continue;
      break;
    }
    bool stop = false;
    const rapidjson::Value* last = nullptr;
    for (const auto& h : hits) {
      if (!h.IsObject() || !h.HasMember("sort") || !h["sort"].IsArray() || h["sort"].Size() < 3 ||
          !h.HasMember("_source")) {
        result = Status::Io("search " + index + ": hit without its sort values or _source");
        stop = true;
        break;
      }
      last = &h;
      source_text.Clear();
      rapidjson::Writer<rapidjson::StringBuffer> w(source_text);
      h["_source"].Accept(w);
      if (!fn(std::string_view(source_text.GetString(), source_text.GetSize()))) {
        stop = true;
        break;
      }
    }
    if (stop) break;
    // The next page goes on after the last hit's sort values (all of them,
    // with the tiebreaker Elasticsearch may have added).
    after = ToJsonText((*last)["sort"]);
    after_values = (*last)["sort"].Size();
    if (hits.Size() < page_size) {
      if (next_chunk()) continue;
      break;
    }
  }
  settle();
  if (engine_known_ && engine_.opensearch_pit()) {
    std::string close = "{\"pit_id\":[";
    AppendJsonString(&close, pit_id);
    close += "]}";
    (void)http_->Request("DELETE", "/_search/point_in_time", close);  // best effort: an unclosed PIT expires by itself
  } else {
    std::string close = "{\"id\":";
    AppendJsonString(&close, pit_id);
    close += "}";
    (void)http_->Request("DELETE", "/_pit", close);
  }
  return result;
}

EsClient* EsClient::Helper() {
  if (!helper_tried_) {
    helper_tried_ = true;
    auto c = Open(http_->base_url(), opts_);
    if (c.ok()) helper_ = std::move(*c);
  }
  return helper_.get();
}

Status EsClient::CompositePages(const std::string& index, const std::string& query_json, const std::string& sources_json,
                                const std::string& sub_aggs_json, size_t page_size,
                                const std::function<bool(std::string_view bucket)>& fn) {
  std::string after;
  for (;;) {
    std::string body = "{\"size\":0,\"query\":" + query_json + ",\"aggs\":{\"pages\":{\"composite\":{\"size\":" +
                       std::to_string(page_size) + ",\"sources\":" + sources_json;
    if (!after.empty()) body += ",\"after\":" + after;
    body += "}";
    if (!sub_aggs_json.empty()) body += ",\"aggs\":" + sub_aggs_json;
    body += "}}}";
    auto r = Call("POST", "/" + index + "/_search", body);
    if (!r.ok()) return r.status();
    if (r->status == 404) return Status::Ok();
    if (r->status != 200) return Status::Io("aggregate " + index + ": HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
    rapidjson::Document d;
    d.Parse(r->body.data(), r->body.size());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("aggregations") || !d["aggregations"].HasMember("pages") ||
        !d["aggregations"]["pages"].HasMember("buckets") || !d["aggregations"]["pages"]["buckets"].IsArray())
      return Status::Io("aggregate " + index + ": not a composite aggregation response: " + Snippet(r->body));
    if (Status c = CheckComplete(d, "aggregate " + index); !c.ok()) return c;
    const auto& pages = d["aggregations"]["pages"];
    for (const auto& b : pages["buckets"].GetArray())
      if (!fn(ToJsonText(b))) return Status::Ok();
    // Fewer buckets than asked: the last page (the composite gives the first
    // page_size keys after `after`); asking again would be one more full pass
    // over the matching records for an empty page.
    if (!pages.HasMember("after_key") || pages["buckets"].Size() < page_size) break;
    after = ToJsonText(pages["after_key"]);
  }
  return Status::Ok();
}

Result<std::string> EsClient::Search(const std::string& index, const std::string& body) {
  auto r = Call("POST", "/" + index + "/_search", body);
  if (!r.ok()) return r.status();
  if (r->status == 404) return std::string();
  if (r->status != 200) return Status::Io("search " + index + ": HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
  rapidjson::Document d;
  d.Parse(r->body.data(), r->body.size());
  if (d.HasParseError() || !d.IsObject()) return Status::Io("search " + index + ": not JSON: " + Snippet(r->body));
  if (Status c = CheckComplete(d, "search " + index); !c.ok()) return c;
  return std::move(r->body);
}

Result<uint64_t> EsClient::CountDocs(const std::string& index, const std::string& query_json) {
  auto r = Call("POST", "/" + index + "/_count", "{\"query\":" + query_json + "}");
  if (!r.ok()) return r.status();
  if (r->status == 404) return uint64_t{0};
  if (r->status != 200) return Status::Io("count " + index + ": HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
  rapidjson::Document d;
  d.Parse(r->body.data(), r->body.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("count") || !d["count"].IsUint64())
    return Status::Io("count " + index + ": no count in " + Snippet(r->body));
  if (Status c = CheckComplete(d, "count " + index); !c.ok()) return c;
  return d["count"].GetUint64();
}

Status EsClient::Refresh(const std::string& index) {
  auto r = Call("POST", "/" + index + "/_refresh");
  if (!r.ok()) return r.status();
  if (r->status != 200 && r->status != 404)
    return Status::Io("refresh " + index + ": HTTP " + std::to_string(r->status) + ": " + Snippet(r->body));
  return Status::Ok();
}

}  // namespace iosonar
