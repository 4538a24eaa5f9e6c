// `iosonar collect`: the embedded collector in the foreground, or a one-shot
// ingest of JSON-lines files.
#include <signal.h>

#include <csignal>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/collector/collector.h"
#include "core/base/url.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

void PrintStats(const char* what, const CollectorStats& s) {
  std::fprintf(stderr,
               "iosonar collect: %s: connections %llu, lines %llu, accepted %llu, rejected %llu, stored %llu, "
               "duplicates %llu, redis pushed %llu, redis errors %llu, store errors %llu, forwarded %llu, "
               "forward errors %llu, refused connections %llu, lines over the memory bound %llu, dead-letter "
               "rotations %llu, store stalls %llu, forward spooled %llu, lumberjack connections %llu, acks %llu, "
               "credentials %llu, tls connections %llu, client certificates %llu, auth failures %llu, "
               "refused at the per-address limit %llu, evicted in their handshake %llu, handshake timeouts %llu, "
               "idle closed %llu, closed at the per-uid limit %llu\n",
               what, static_cast<unsigned long long>(s.connections), static_cast<unsigned long long>(s.lines),
               static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.rejected),
               static_cast<unsigned long long>(s.stored), static_cast<unsigned long long>(s.duplicates),
               static_cast<unsigned long long>(s.redis_pushed), static_cast<unsigned long long>(s.redis_errors),
               static_cast<unsigned long long>(s.store_errors), static_cast<unsigned long long>(s.forwarded),
               static_cast<unsigned long long>(s.forward_errors), static_cast<unsigned long long>(s.refused_connections),
               static_cast<unsigned long long>(s.memory_bound_lines),
               static_cast<unsigned long long>(s.dead_letter_rotations),
               static_cast<unsigned long long>(s.store_stalls), static_cast<unsigned long long>(s.forward_spooled),
               static_cast<unsigned long long>(s.lumberjack_connections),
               static_cast<unsigned long long>(s.lumberjack_acks), static_cast<unsigned long long>(s.credentials),
               static_cast<unsigned long long>(s.tls_connections), static_cast<unsigned long long>(s.client_certs),
               static_cast<unsigned long long>(s.auth_failures), static_cast<unsigned long long>(s.peer_limit_refused),
               static_cast<unsigned long long>(s.evicted_pending), static_cast<unsigned long long>(s.handshake_timeouts),
               static_cast<unsigned long long>(s.idle_closed), static_cast<unsigned long long>(s.uid_limit_closed));
}

// --from-file: each file ingested and counted, then the total.
int IngestFiles(const CollectorOptions& o, const std::vector<std::string>& files) {
  CollectorStats total;
  int rc = 0;
  for (const auto& f : files) {
    auto r = IngestFile(o, f);
    if (!r.ok()) {
      std::fprintf(stderr, "iosonar collect: %s: %s\n", f.c_str(), RedactUrl(r.status().ToString()).c_str());
      rc = 1;
      continue;
    }
    PrintStats(f.c_str(), *r);
    if (r->store_errors) rc = 1;
    const CollectorStats& s = *r;
    total.lines += s.lines;
    total.accepted += s.accepted;
    total.rejected += s.rejected;
    total.stored += s.stored;
    total.duplicates += s.duplicates;
    total.redis_pushed += s.redis_pushed;
    total.redis_errors += s.redis_errors;
    total.store_errors += s.store_errors;
    total.forwarded += s.forwarded;
    total.forward_errors += s.forward_errors;
    total.forward_spooled = s.forward_spooled;
  }
  if (files.size() > 1) PrintStats("total", total);
  return rc;
}

// The collector in the foreground until SIGINT/SIGTERM, then drained.
int RunCollector(const CollectorOptions& o) {
  // Take SIGINT/SIGTERM synchronously in this thread (sigwait), before the
  // collector's thread exists, so it never sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto c = Collector::Start(o);
  if (!c.ok()) {
    std::fprintf(stderr, "iosonar collect: cannot start: %s\n", RedactUrl(c.status().ToString()).c_str());
    return 1;
  }
  // Show the real port when port 0 asked for any.
  std::string where = o.listen.substr(0, o.listen.rfind(':') + 1) + std::to_string(c.value()->port());
  std::fprintf(stderr, "iosonar collect: listening on %s, storing in %s/store.db%s%s\n", where.c_str(),
               o.store_dir.c_str(), o.redis_url.empty() ? "" : ", pushing to Redis list ",
               o.redis_url.empty() ? "" : o.redis_list.c_str());
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "iosonar collect: %s, draining\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  Status s = c.value()->Stop();
  CollectorStats final_stats = c.value()->stats();
  PrintStats("final", final_stats);
  if (!s.ok()) {
    std::fprintf(stderr, "iosonar collect: %s\n", RedactUrl(s.ToString()).c_str());
    return 1;
  }
  return final_stats.store_errors ? 1 : 0;
}

}  // namespace

int CmdCollect(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes the store's writes fail with EFBIG,
  // which the collector answers with back-pressure, rather than kill it.
  signal(SIGXFSZ, SIG_IGN);
  CollectorOptions o;
  std::string redis_flag, config, es_password_file, es_api_key_file;
  std::vector<std::string> files;
  po::options_description desc(
      "usage: iosonar collect --store DIR [--listen tcp://HOST:PORT] [OPTIONS]\n"
      "       iosonar collect --store DIR --from-file FILE... [OPTIONS]\n\n"
      "Receives JSON lines (one record per line, as the exporters and Logstash's\n"
      "json_lines codec send them), validates each against the record schema,\n"
      "stores accepted records in DIR/store.db (SQLite) and, with a Redis URL,\n"
      "pushes the accepted lines to a Redis list. Malformed lines go to the\n"
      "dead-letter file with the reason. Runs until SIGINT/SIGTERM, then drains\n"
      "and prints its counts. With --from-file it ingests the files and exits.\n\n"
      "options",
      100, 50);
  desc.add_options()                                                                                    //
      ("help,h", "show this help")                                                                      //
      ("listen", po::value(&o.listen)->default_value(o.listen)->value_name("URL"), "TCP address to listen on (port 0 picks one)")  //
      ("store", po::value(&o.store_dir)->value_name("DIR"), "store directory (created if missing); required")              //
      ("redis", po::value(&redis_flag)->value_name("URL"),
       "Redis URL, redis://[:PASS@]HOST:PORT[/DB] or unix:///PATH[?db=N] (else $IOSONAR_REDIS, else "
       "'redis' in the config file)")                                                                    //
      ("redis-list", po::value(&o.redis_list)->default_value(o.redis_list)->value_name("NAME"), "Redis list for accepted lines")  //
      ("dead-letter", po::value(&o.dead_letter_path)->value_name("FILE"), "dead-letter file (default DIR/deadletter.jsonl)")  //
      ("max-line-bytes", po::value(&o.max_line_bytes)->default_value(o.max_line_bytes)->value_name("N"),
       "longer lines are set aside as oversized")                                                       //
      ("max-connections", po::value(&o.max_connections)->default_value(o.max_connections)->value_name("N"),
       "connections open at once; beyond, the oldest one still in its handshake is closed to make room, "
       "else the new one (counted)")                                                                    //
      ("handshake-timeout", po::value(&o.handshake_timeout_ms)->default_value(o.handshake_timeout_ms)->value_name("MS"),
       "a connection must finish its handshake within this (--auth munge: a credential accepted; TLS: its "
       "handshake; else its first bytes), or it is closed (counted); 0: no deadline")                  //
      ("idle-timeout", po::value(&o.idle_timeout_ms)->default_value(o.idle_timeout_ms)->value_name("MS"),
       "a connection silent this long is closed (counted; senders reconnect); 0: never")               //
      ("max-pending-per-address", po::value(&o.max_pending_per_peer)->default_value(o.max_pending_per_peer)->value_name("N"),
       "connections one address may hold still in their handshake; beyond, new ones are closed at once (counted)")  //
      ("max-connections-per-uid", po::value(&o.max_connections_per_uid)->default_value(o.max_connections_per_uid)->value_name("N"),
       "--auth munge: connections one authenticated uid may hold; beyond, closed (counted); 0: no limit")  //
      ("max-buffer-bytes", po::value(&o.max_buffer_bytes)->default_value(o.max_buffer_bytes)->value_name("N"),
       "all connections' line buffers together; a line that would need more is set aside (counted); also "
       "what one compressed Lumberjack frame may inflate to (iosonar senders cut theirs at 4 MiB)")     //
      ("max-dead-letter-bytes", po::value(&o.max_dead_letter_bytes)->default_value(o.max_dead_letter_bytes)->value_name("N"),
       "the dead-letter file is rotated to FILE.1 beyond this size")                                    //
      ("auth", po::value(&o.auth)->value_name("munge"),
       "require a fresh MUNGE credential with every batch: each Lumberjack window, or every 4096 JSON lines "
       "(iosonar senders: ?auth=munge on lumberjack:// outputs); the records it covers must carry the "
       "credential's host, and users other than root, this user and --trusted-uid may send only tracer records")  //
      ("tls-cert", po::value(&o.tls_cert)->value_name("FILE"), "TLS on the listener: its certificate (PEM, chain)")  //
      ("tls-key", po::value(&o.tls_key)->value_name("FILE"), "the private key of --tls-cert (PEM)")  //
      ("tls-ca", po::value(&o.tls_ca)->value_name("FILE"),
       "CA certificate(s) of the client certificates (Logstash's ssl_certificate_authorities); a client "
       "certificate shown is verified against it")  //
      ("require-client-cert", po::bool_switch(&o.require_client_cert),
       "refuse clients without a certificate from --tls-ca (ssl_verify_mode => force_peer); the certificate's "
       "CN (or a DNS subjectAltName) is the host every record of the connection must carry")  //
      ("mysql", po::value(&o.jobdb_url)->value_name("URL"),
       "with --auth munge: the job database, so a user's records are taken only for the user's own jobs "
       "(else $IOSONAR_MYSQL)")  //
      ("munge-socket", po::value(&o.munge_socket)->value_name("PATH"), "munged's socket (default: libmunge's)")  //
      ("munge-host-map", po::value(&o.munge_host_map)->value_name("FILE"),
       "with --auth munge: \"ADDRESS HOST\" lines naming the host of each address munged says a credential was "
       "encoded on (else the address is resolved; the credential's payload is only a hint)")          //
      ("munge-replay-file", po::value(&o.munge_replay_path)->value_name("FILE"),
       "with --auth munge: credentials seen, kept until they expire across restarts (default DIR/munge-replay.dat, 0600)")  //
      ("trusted-uid", po::value(&o.trusted_uids)->multitoken()->value_name("UID"),
       "with --auth munge: users (besides root and this user) that may send any dataset, e.g. the exporters' user")  //
      ("from-file", po::value(&files)->multitoken()->value_name("FILE"), "ingest these JSON-lines files (- for stdin) and exit")  //
      ("config", po::value(&config)->value_name("FILE"), "config file (default $IOSONAR_CONFIG or ~/.config/iosonar/iosonar.conf)")  //
      // forward accepted lines to Elasticsearch (or Logstash, a file)
      ("es", po::value(&o.forward_output)->value_name("URL"),
       "also send accepted records to Elasticsearch with _bulk (https://HOST:9200, es+https://...), or to any "
       "output iosonar trace takes (tcp://HOST:PORT, a file)")                                           //
      ("es-user", po::value(&o.forward.es.user)->value_name("USER"), "Elasticsearch basic auth user")      //
      ("es-api-key", po::value(&o.forward.es.api_key)->value_name("KEY"), "Elasticsearch API key (else $IOSONAR_ES_API_KEY)")  //
      ("es-password-file", po::value(&es_password_file)->value_name("FILE"),
       "Elasticsearch password from this file (its first line; else $IOSONAR_ES_PASSWORD), so it is not in ps")  //
      ("es-api-key-file", po::value(&es_api_key_file)->value_name("FILE"),
       "Elasticsearch API key from this file (its first line)")                                           //
      ("es-ca-file", po::value(&o.forward.es.ca_file)->value_name("FILE"), "CA certificate(s) for Elasticsearch's TLS")  //
      ("es-insecure", po::bool_switch(&o.forward.es.insecure), "do not verify Elasticsearch's certificate")  //
      ("es-gzip", po::bool_switch(&o.forward.es.gzip), "gzip the _bulk bodies (Content-Encoding: gzip; else $IOSONAR_ES_GZIP=1)")  //
      ("es-namespace", po::value(&o.forward.es.name_space)->default_value("default")->value_name("NS"),
       "data stream namespace");
  po::variables_map vm;
  if (int rc = ParseCommandLine("collect", argc, argv, desc, &vm); rc >= 0) return rc;
  if (o.store_dir.empty()) {
    std::fprintf(stderr, "iosonar collect: --store DIR is required (where store.db is kept)\n");
    return 2;
  }
  if (o.max_line_bytes == 0) {
    std::fprintf(stderr, "iosonar collect: --max-line-bytes must be positive\n");
    return 2;
  }
  o.redis_url = ResolveSetting(redis_flag, "IOSONAR_REDIS", "redis", config);
  if (o.jobdb_url.empty() && !o.auth.empty())
    if (const char* m = std::getenv("IOSONAR_MYSQL"); m && *m) o.jobdb_url = m;
  // secrets from the environment rather than the command line
  if (o.forward.es.api_key.empty())
    if (const char* k = std::getenv("IOSONAR_ES_API_KEY"); k && *k) o.forward.es.api_key = k;
  if (const char* pw = std::getenv("IOSONAR_ES_PASSWORD"); pw && *pw) o.forward.es.password = pw;
  for (auto [file, to] : {std::pair{&es_password_file, &o.forward.es.password}, std::pair{&es_api_key_file, &o.forward.es.api_key}}) {
    if (file->empty()) continue;
    auto v = ReadSecretFile(*file);
    if (!v.ok()) {
      std::fprintf(stderr, "iosonar collect: %s\n", v.status().message().c_str());
      return 2;
    }
    *to = *v;
  }
  if (const char* z = std::getenv("IOSONAR_ES_GZIP"); z && std::string_view(z) == "1") o.forward.es.gzip = true;
  o.forward.es.max_attempts = 3;  // then the collector skips forwarding for a while (collector.cc)
  o.forward.es.dead_letter_path =
      o.dead_letter_path.empty() ? o.store_dir + "/deadletter-es.jsonl" : o.dead_letter_path + ".es";
  // A Redis server that goes away must not kill us with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);

  if (!files.empty()) return IngestFiles(o, files);
  return RunCollector(o);
}

}  // namespace iosonar::cli
