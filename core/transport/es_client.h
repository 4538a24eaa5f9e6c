// The Elasticsearch client (REST over HttpClient, JSON with RapidJSON kept in
// the .cc): _bulk `create` into data streams, point-in-time + search_after
// scans, composite-aggregation paging, and the retry policy.
//
// Retry policy: a whole request answered 429 or 5xx, or failed in transport
// (refused, reset, cut off mid-response, timeout) is resent after an
// exponential backoff with jitter (transport/backoff.h: backoff_initial_ms *
// 2^attempt, at most backoff_max_ms), up to max_attempts. In a _bulk answer each item is
// judged alone: 201 created; 409 version_conflict = already stored (the
// _id is deterministic, so this is a resend); 429 and 5xx items are resent
// in the next round (same backoff); any other 4xx is set aside with the
// reason Elasticsearch gave (dead letter) and never resent.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/transport/backoff.h"
#include "core/transport/http_client.h"
#include "core/records/record.h"
#include "core/transport/sink.h"
#include "core/base/status.h"

namespace iosonar {

struct BulkDoc {
  std::string index;   // the data stream, e.g. logs-iosonar.trace-default
  std::string id;      // deterministic: "<event.stream>-<event.seq>"
  std::string source;  // one JSON object, no newline
};

struct BulkRejected {
  BulkDoc doc;
  long status = 0;
  std::string reason;  // "<error.type>: <error.reason>"
};

struct BulkStats {
  uint64_t created = 0;         // 201
  uint64_t already_stored = 0;  // 409
  uint64_t rejected = 0;        // other 4xx (set aside) and items still failing after max_attempts
  uint64_t item_retries = 0;    // 429/5xx items resent
  uint64_t request_retries = 0; // whole requests resent (429, 5xx, transport)
  uint64_t requests = 0;        // _bulk requests sent (including retries)
  uint64_t bytes = 0;           // NDJSON bytes sent
};

// The data stream a record goes to: <stream_type>-<event.dataset>-<namespace>.
std::string DataStreamName(const schema::Dataset& ds, std::string_view name_space);
// The deterministic document id of a record: "<event.stream>-<event.seq>".
std::string DocId(const ParsedRecord& rec);
// A parsed record as one JSON object (fields in schema order; dates as the
// text they arrived in, else ISO 8601 UTC with ms).
void AppendRecordJson(std::string* out, const ParsedRecord& rec);
// Group keys: engine-only keyword fields, each holding the values of several
// fields of a record, so that Store::Groups() over exactly those keys is one
// terms source in the engine instead of several (a composite aggregation with
// sums costs several times more per source: RESULTS.md, "group keys").
// The mappings give them doc values only (not indexed) and leave them out of
// _source; iosonar's writers (EsStore::Append, the Elasticsearch sink) and the
// Logstash indexer pipelines add them. Records without one (written by an
// older writer, or whose key would be too long) are grouped by the parts.
struct GroupKeyField {
  const char* name;     // "iosonar.key.file"
  const char* dataset;  // "iosonar.trace"
  std::vector<FieldId> parts;
};
const std::vector<GroupKeyField>& GroupKeyFields();
// The group key of this dataset whose parts are exactly `keys` (in order), or null.
const GroupKeyField* GroupKeyFor(std::string_view dataset, std::span<const FieldId> keys);
// A key is longer than this: left out (the record is grouped by its parts).
constexpr size_t kMaxGroupKeyBytes = 8192;
// The key of rec: each part as "<bytes>:<text>" (a long as decimal text, an
// absent value as ""), concatenated; nullopt where it would be too long.
std::optional<std::string> EncodeGroupKey(const GroupKeyField& k, const ParsedRecord& rec);
// The parts of a key; false if it is not `n` parts in that form.
bool DecodeGroupKey(std::string_view key, size_t n, std::vector<std::string>* parts);
// `,"<name>":"<key>"` for each group key of rec's dataset (appended to out).
void AppendGroupKeyMembers(std::string* out, const ParsedRecord& rec);
// An engine document of rec: a JSON object `doc` with the group keys added before its closing brace.
void AddGroupKeys(std::string* doc, const ParsedRecord& rec);

// One _bulk `create` action line and its source line, both '\n'-terminated.
void AppendBulkCreate(std::string* out, const BulkDoc& d);

// What the engine at the other end is and has, asked of it (never guessed
// from a version alone where an endpoint can be probed): GET / (or, where the
// root handler is absent as in Elasticsearch's integ-test distribution,
// GET /_nodes/_local), GET /_ilm/status, GET /_plugins/_ism/policies.
struct EngineInfo {
  enum Flavor { kElasticsearch, kOpenSearch };
  Flavor flavor = kElasticsearch;
  int major = 8, minor = 15;  // version.number
  std::string version = "8.15";
  bool ilm = true;               // Elasticsearch ILM (_ilm/status answers)
  bool ism = false;              // OpenSearch Index State Management plugin (_plugins/_ism answers)
  bool constant_keyword = true;  // Elasticsearch's constant_keyword mapper (module constant-keyword)
  bool probed = false;           // false: the defaults above (Elasticsearch 8.15, full distribution)

  bool opensearch() const { return flavor == kOpenSearch; }
  bool AtLeast(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
  // time_series_dimension / time_series_metric mapping parameters (Elasticsearch >= 8.0 only).
  bool time_series() const { return !opensearch() && major >= 8; }
  // time_series_dimension on a boolean field: Elasticsearch >= 8.16.
  bool bool_dimension() const { return !opensearch() && AtLeast(8, 16); }
  // ignore_missing_component_templates in an index template: Elasticsearch >= 8.7.
  bool ignore_missing_components() const { return !opensearch() && AtLeast(8, 7); }
  // The point-in-time API: OpenSearch's /_search/point_in_time (2.4+) or Elasticsearch's /_pit.
  bool opensearch_pit() const { return opensearch(); }
  // "OpenSearch 2.19.1 (no ISM plugin)" ...
  std::string Describe() const;
};

class EsClient {
 public:
  EsClient(std::unique_ptr<HttpClient> http, const EsOptions& opts);
  static Result<std::unique_ptr<EsClient>> Open(const std::string& url, const EsOptions& opts);

  // One request with the whole-request retry policy (429/5xx/transport).
  // Other statuses are returned as they are.
  Result<HttpResponse> Call(std::string_view method, const std::string& path, std::string_view body = {},
                            std::string_view content_type = "application/json");

  // Sends docs in _bulk requests bounded by max_batch_bytes and
  // max_batch_docs. Returns an error only if the server could not be reached
  // (after the retries) or answered something that is not a bulk response;
  // per-item outcomes go to stats and rejected.
  Status Bulk(std::vector<BulkDoc> docs, BulkStats* stats, std::vector<BulkRejected>* rejected);

  // Every hit of index matching query_json (a JSON "query" object, e.g.
  // {"bool":{"filter":[...]}}), in @timestamp order, through a point in
  // time (Elasticsearch /_pit or OpenSearch /_search/point_in_time, as the
  // engine has) and search_after on [@timestamp, event.stream, event.seq]:
  // a sort both engines accept (_shard_doc is Elasticsearch-only, OpenSearch
  // >= 3.3) and unique per record, so an expired PIT is reopened and the
  // scan goes on exactly after the last record given. fn gets each hit's
  // _source as JSON text and returns false to stop. A missing index is an
  // empty scan. A page with failed shards or timed_out is an error, never a
  // silently partial answer (likewise for aggregations and counts).
  // source_json, if given, is the request's "_source" (source filtering).
  // ordered = false: the engine's index order ([_doc, event.stream,
  // event.seq]), for callers that only add up: no sort on @timestamp per
  // page; a PIT that expires mid-scan is then an error (_doc values mean
  // nothing in a new PIT).
  Status ScanPit(const std::string& index, const std::string& query_json, size_t page_size,
                 const std::function<bool(std::string_view source)>& fn, const std::string& source_json = "",
                 bool ordered = true);
  // The time chunks of an ordered scan (es_client.cc); public for the tests.
  std::vector<int64_t> TimeChunks(const std::string& query_json, std::string* pit_id, size_t page_size);

  // Pages a composite aggregation: body_prefix is the "sources" array and
  // optional sub-aggregations, as the JSON text that follows
  // {"composite":{"size":N,"sources": ...}; fn gets each bucket (JSON text).
  Status CompositePages(const std::string& index, const std::string& query_json, const std::string& sources_json,
                        const std::string& sub_aggs_json, size_t page_size,
                        const std::function<bool(std::string_view bucket)>& fn);

  // Asks the engine what it is (GET /, else GET /_nodes/_local). With
  // policies, also whether ILM / ISM answer. Cached after the first call.
  Result<EngineInfo> Engine(bool probe_policies = false);

  Result<uint64_t> CountDocs(const std::string& index, const std::string& query_json);
  // One search request (POST /index/_search with body): the answer's text,
  // "" if the index does not exist; an answer with failed shards or
  // timed_out is an error.
  Result<std::string> Search(const std::string& index, const std::string& body);
  Status Refresh(const std::string& index);

  uint64_t pit_reopens() const { return pit_reopens_; }
  const EsOptions& options() const { return opts_; }
  HttpClient& http() { return *http_; }

 private:
  int BackoffMs(int attempt);
  // A point in time on index: its id, "" when the index does not exist.
  Result<std::string> OpenPit(const std::string& index);
  EngineInfo engine_;
  bool engine_known_ = false, policies_known_ = false;
  std::unique_ptr<HttpClient> http_;
  EsOptions opts_;
  Backoff backoff_;  // backoff_initial_ms, backoff_max_ms
  std::mt19937_64 rng_;
  uint64_t pit_reopens_ = 0;
  // A second connection (ordered scans ask the next chunk on it), opened on first use.
  EsClient* Helper();
  std::unique_ptr<EsClient> helper_;
  bool helper_tried_ = false;
};

}  // namespace iosonar
