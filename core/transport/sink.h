// One output option for everything that ships records (the collector's
// forwarder and every exporter): where JSON lines go is named by one string.
//
//   tcp://HOST:PORT            Logstash's tcp { codec => json_lines } input or
//                              an embedded `iosonar collect` (LineSender:
//                              spool when unreachable, resend, dedupe)
//   http://HOST:9200, https://HOST:9200, es+http://..., es+https://...
//                              Elasticsearch directly: _bulk `create` into the
//                              data stream <type>-<event.dataset>-<namespace>
//                              (es_client.h), deterministic _id from
//                              event.stream + event.seq so a resend is a 409
//                              (already stored), never a duplicate
//   PATH, file:///PATH         appended to a file
//   -                          stdout
//
// Send() takes whole '\n'-terminated lines; a sink may buffer them (the
// Elasticsearch sink batches up to SinkOptions::es.max_batch_bytes) until
// Flush(). A RecordSink is used by one thread at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar {

// Connection settings for Elasticsearch (shared by the sink, the ES store
// and `iosonar es-setup`).
struct EsOptions {
  std::string user;          // basic auth (with password)
  std::string password;
  std::string api_key;       // "Authorization: ApiKey <api_key>" (the base64 id:key form)
  std::string ca_file;       // PEM CA bundle; empty: the system's
  bool insecure = false;     // skip TLS verification (verification is on by default)
  std::string name_space = "default";   // data stream namespace
  size_t max_batch_bytes = 8u << 20;    // one _bulk body at most
  size_t max_batch_docs = 10000;        // records in one _bulk at most
  bool gzip = false;                    // _bulk bodies gzip-compressed (Content-Encoding: gzip), ~10x fewer bytes
  int max_attempts = 8;                 // per batch/item, for 429, 5xx and connection errors
  int backoff_initial_ms = 100;         // doubled each attempt, with full jitter
  int backoff_max_ms = 10000;
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 60000;
  std::string dead_letter_path;  // records rejected by Elasticsearch (4xx): one JSON line each with the reason
};

struct SinkOptions {
  std::string spool_dir;     // tcp:// only: spool when unreachable ("" = drop)
  bool spool_fallback = false;  // spool_dir is a default: taken by another user, a private one beside it
  uint64_t spool_max_bytes = 64ull << 20;
  EsOptions es;
};

struct SinkCounters {
  uint64_t lines_sent = 0;       // accepted by the receiver (ES: 201 created)
  uint64_t already_stored = 0;   // ES: 409 (a resend of a stored record)
  uint64_t rejected = 0;         // ES: 4xx items and lines that fail the schema, set aside
  uint64_t retried = 0;          // ES: item or request retries
  uint64_t spooled = 0;          // tcp: written to the spool
  uint64_t dropped = 0;          // could be neither sent nor kept
};

class RecordSink {
 public:
  virtual ~RecordSink();
  // lines holds nlines complete '\n'-terminated JSON lines.
  virtual Status Send(std::string_view lines, uint64_t nlines) = 0;
  // Delivers everything buffered; returns an error if some records could not
  // be delivered after the bounded retries (they are counted as dropped).
  virtual Status Flush() = 0;
  virtual SinkCounters counters() const = 0;
  virtual std::string_view kind() const = 0;  // "tcp", "file", "stdout", "elasticsearch"
};

// Opens the sink that `output` names (see the table above). Errors name the
// malformed output string.
Result<std::unique_ptr<RecordSink>> OpenSink(const std::string& output, const SinkOptions& opts);

// True if output names Elasticsearch (http(s):// or es+http(s)://).
bool IsElasticsearchOutput(std::string_view output);

}  // namespace iosonar
