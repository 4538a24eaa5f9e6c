// TLS for the collector's listener and the Lumberjack sender, with client
// certificates as an identity (the subject's CN, or a DNS name among the
// certificate's subjectAltNames, names the sender's host).
//
// OpenSSL 3 (Debian 12's libssl3, which libcurl already pulls in) is loaded at
// run time (dlopen "libssl.so.3"), as libcurl and libmunge are: no binary
// links it, so the lean `iosonar-exporter` stays free of it and a machine
// without it loses only TLS. No OpenSSL header is included anywhere (the few
// constants used are the ABI's, from OpenSSL 3's headers), which also keeps
// compile times where they were.
//
// Non-blocking: every call returns at once; kWant tells the caller which
// readiness (POLLIN or POLLOUT) to wait for.
#pragma once
#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar {

struct TlsConfig {
  std::string cert_file;          // PEM certificate (chain); the server's, or the client's identity
  std::string key_file;           // PEM private key for cert_file
  std::string ca_file;            // PEM CA certificate(s) the peer's certificate must chain to
  bool require_peer_cert = false; // server: a client without a valid certificate is refused
};

class TlsContext {
 public:
  // Errors name the file and OpenSSL's reason (or that libssl.so.3 is missing).
  static Result<std::shared_ptr<TlsContext>> Server(const TlsConfig& c);
  // The client always verifies the server (ca_file, else the system's CAs);
  // cert_file/key_file, when given, are presented as the client's identity.
  static Result<std::shared_ptr<TlsContext>> Client(const TlsConfig& c);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  void* ssl_ctx() const { return ctx_; }
  bool server() const { return server_; }

 private:
  TlsContext() = default;
  void* ctx_ = nullptr;
  bool server_ = false;
};

class TlsConn {
 public:
  enum : int { kWantRead = 1, kWantWrite = 2 };
  // fd: a connected, non-blocking socket (not owned). peer_name (client): the
  // server's host name or IP address its certificate must match.
  static Result<std::unique_ptr<TlsConn>> New(std::shared_ptr<TlsContext> ctx, int fd,
                                              const std::string& peer_name = "");
  ~TlsConn();
  TlsConn(const TlsConn&) = delete;
  TlsConn& operator=(const TlsConn&) = delete;

  // 1 done, 0 not yet (want() says on what), -1 failed (error() says why),
  // -2 the peer closed the connection before the handshake ended.
  int Handshake();
  bool established() const { return established_; }
  // >0 bytes, 0 end of stream (close_notify or EOF), -1 would block (want()), -2 error (error()).
  ssize_t Read(char* p, size_t n);
  ssize_t Write(const char* p, size_t n);  // partial writes allowed (a retry may pass another buffer)
  bool HasPending() const;  // decrypted or undecrypted bytes held inside: Read() before waiting on the socket
  int want() const { return want_; }
  const std::string& error() const { return error_; }

  // The verified peer certificate (after the handshake): its subject's CN ("" if
  // none or not verified), and whether it names host (a DNS subjectAltName,
  // else the CN; no wildcards).
  const std::string& peer_cn() const { return peer_cn_; }
  bool peer_verified() const { return peer_ != nullptr; }
  bool MatchesHost(std::string_view host) const;

 private:
  TlsConn() = default;
  int Result_(int r, const char* what);  // maps SSL_get_error
  std::shared_ptr<TlsContext> ctx_;
  void* ssl_ = nullptr;
  void* peer_ = nullptr;  // X509*, verified
  bool established_ = false;
  int want_ = 0;
  std::string error_, peer_cn_;
};

}  // namespace iosonar
