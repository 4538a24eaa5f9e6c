// The embedded collector: the single-machine stand-in for Logstash.
//
// Accepts JSON lines over TCP (the framing of Logstash's
// `tcp { codec => json_lines }`: one object per '\n'-terminated line),
// validates each line against the record schema, writes accepted records in
// batches to the SQLite store and, when a Redis URL is given, RPUSHes the
// accepted lines to a Redis list in arrival order (as Logstash's redis output
// does). A malformed line is counted and appended to the dead-letter file as
// {"reason","source","line_no","line"} and everything else goes on.
//
// When the store cannot write (disk full, an I/O error), the TCP collector
// holds the batch, stops reading from every connection (senders block or
// spool: back-pressure instead of loss), says so on stderr when the state
// changes, retries every second and resumes once the batch is stored.
//
// Threading: Start() spawns one I/O thread that owns the sockets, the store
// and the Redis connection; the public methods are safe to call from any
// thread.
#pragma once
#include <sys/types.h>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/sink.h"
#include "core/base/status.h"

namespace iosonar {

struct CollectorOptions {
  std::string listen = "tcp://127.0.0.1:5170";  // port 0 picks a free port
  std::string store_dir;                        // required: the SQLite store directory
  std::string redis_url;                        // optional
  std::string redis_list = "iosonar:ingest";    // the Redis list accepted lines go to
  std::string dead_letter_path;                 // default: <store_dir>/deadletter.jsonl
  size_t max_line_bytes = 1 << 20;              // longer lines are set aside as oversized
  // Bounds against a flood from the network (each one counted when it bites):
  size_t max_connections = 1024;                // beyond, a new connection is closed at once (after
                                                // closing the oldest one still in its handshake, if any)
  // Connection hygiene: a connection must finish its handshake (--auth munge:
  // a credential accepted; TLS: its handshake; else its first bytes) within
  // handshake_timeout_ms; one address may hold max_pending_per_peer
  // connections still in their handshake; an authenticated uid at most
  // max_connections_per_uid; a connection silent for idle_timeout_ms is
  // closed (0: never). Each counted in the statistics.
  int handshake_timeout_ms = 10000;
  int idle_timeout_ms = 600000;
  size_t max_pending_per_peer = 64;
  size_t max_connections_per_uid = 256;
  size_t max_buffer_bytes = 64u << 20;          // all connections' line buffers together; a line
                                                // that would need more is set aside as oversized
  size_t max_dead_letter_bytes = 64u << 20;     // the dead-letter file is rotated to FILE.1 beyond
  size_t batch_records = 8192;                  // store/Redis batch size
  // "munge": every batch (Lumberjack window, or up to 4096 JSON lines) starts with
  // a MUNGE credential naming its user and host (see ConnAuth in collector.cc);
  // "" = none (keep the listener on loopback, or require client certificates).
  std::string auth;
  // TLS on the listener (every connection, both protocols): certificate and key;
  // with tls_ca, client certificates from that CA are verified, and with
  // require_client_cert a client without one is refused and the certificate
  // names the host every record of the connection must carry.
  std::string tls_cert, tls_key, tls_ca;
  bool require_client_cert = false;
  std::string munge_socket;                     // munged's socket ("" = the default)
  // --auth munge: the host of a credential is the one munged says encoded it
  // (its IPv4 address): named by this file ("ADDRESS HOST" lines), else by
  // resolving the address (the name up to its first dot); the payload is
  // only a hint. A file of "" = resolve.
  std::string munge_host_map;
  // Credentials seen, kept until they expire (survives munged and collector
  // restarts); "" = STORE_DIR/munge-replay.dat.
  std::string munge_replay_path;
  std::vector<uid_t> trusted_uids;
  std::string jobdb_url;                        // with auth: users' records only for their own jobs
  int self_report_ms = 60000;                   // the collector's own iosonar.sampler record; 0 = never              // besides root and our own user: may send any dataset
  int flush_interval_ms = 200;                  // a partial batch waits at most this long
  // also forward accepted lines to this output (sink.h: an
  // Elasticsearch URL for _bulk, tcp://LOGSTASH:PORT, a file); "" = none.
  // Lines the output cannot take (unreachable, 5xx/429 after the retries)
  // go to the forward spool and are resent, oldest first, once it answers
  // again (every second at most, backing off to 30 s; also at the next
  // start): Elasticsearch's deterministic _id makes a resend of what had
  // arrived a 409, so nothing is stored twice. Lines it rejects (4xx) are
  // the sink's dead letters, not spooled.
  std::string forward_output;
  SinkOptions forward;
  std::string forward_spool_path;               // default: <store_dir>/forward-spool.jsonl (0600)
  uint64_t forward_spool_max_bytes = 1ull << 30;  // beyond, lines are counted as forward errors
  // The spool is resent in pieces of about this many bytes (whole lines),
  // never read whole; what the output acknowledged is recorded in
  // FORWARD_SPOOL.sent after each piece.
  size_t forward_spool_chunk_bytes = 4u << 20;
};

struct CollectorStats {
  uint64_t connections = 0;       // accepted so far
  uint64_t open_connections = 0;
  uint64_t refused_connections = 0;  // closed at once: max_connections were open
  uint64_t peer_limit_refused = 0;   // closed at once: their address had max_pending_per_peer in their handshake
  uint64_t evicted_pending = 0;      // closed to make room: the oldest in its handshake when the table was full
  uint64_t handshake_timeouts = 0;   // closed: no handshake within handshake_timeout_ms
  uint64_t idle_closed = 0;          // closed: silent for idle_timeout_ms
  uint64_t uid_limit_closed = 0;     // closed: their uid had max_connections_per_uid
  uint64_t memory_bound_lines = 0;   // lines set aside because max_buffer_bytes was reached
  uint64_t dead_letter_rotations = 0;
  uint64_t buffer_bytes = 0;         // line buffers held now (all connections)
  uint64_t store_stalls = 0;         // times the store could not write and reading stopped (back-pressure)
  uint64_t held_records = 0;         // records held now, waiting for the store to write again
  uint64_t lines = 0;             // lines seen (blank lines not counted; a truncated last line is)
  uint64_t accepted = 0;          // valid records
  uint64_t rejected = 0;          // set aside in the dead-letter file
  uint64_t stored = 0;            // inserted into the store
  uint64_t duplicates = 0;        // already stored (same event.stream + event.seq)
  uint64_t redis_pushed = 0;
  uint64_t redis_errors = 0;      // accepted records not pushed (they stay in the store)
  uint64_t store_errors = 0;      // accepted records the store failed to write (see stderr)
  uint64_t forwarded = 0;         // accepted by the forward output (ES: created or already stored)
  uint64_t forward_errors = 0;    // not forwarded: rejected, or unreachable with the forward spool full
  uint64_t forward_spooled = 0;   // lines in the forward spool now, waiting for the output
  uint64_t forward_spool_buffer_max = 0;  // the most bytes of the spool held in memory at once while resending
  uint64_t lumberjack_connections = 0;  // senders that spoke Lumberjack v2 (Beats), acknowledged delivery
  uint64_t lumberjack_windows = 0;
  uint64_t lumberjack_acks = 0;         // ACK frames sent (each after the events it covers were stored)
  uint64_t credentials = 0;                // --auth munge: credentials accepted (one per batch)
  uint64_t auth_failures = 0;              // connections refused for a missing, bad or replayed credential,
                                           // or a failed TLS handshake (no or a foreign client certificate)
  uint64_t tls_connections = 0;            // TLS handshakes completed
  uint64_t client_certs = 0;               // of those, with a verified client certificate
};

class Collector {
 public:
  static Result<std::unique_ptr<Collector>> Start(const CollectorOptions& opts);
  virtual ~Collector() = default;
  virtual int port() const = 0;  // the bound TCP port
  // Waits until no connection is open, at least min_connections were seen,
  // and every line received so far is stored and pushed.
  virtual Status Drain(int min_connections, int timeout_ms) = 0;
  virtual Status Stop() = 0;  // drains what is buffered, closes everything
  virtual CollectorStats stats() const = 0;
};

// Feeds JSON lines from a file through the same validation/store/Redis path
// (`iosonar collect --from-file`); source names the file in dead letters.
Result<CollectorStats> IngestFile(const CollectorOptions& opts, const std::string& path);

}  // namespace iosonar
