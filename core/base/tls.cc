#include "core/base/tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <type_traits>

namespace iosonar {
namespace {

// OpenSSL 3's ABI constants (ssl.h, x509v3.h, obj_mac.h, prov_ssl.h).
constexpr int kFiletypePem = 1;          // SSL_FILETYPE_PEM
constexpr int kVerifyPeer = 0x01;        // SSL_VERIFY_PEER
constexpr int kVerifyFailIfNoPeerCert = 0x02;
constexpr int kErrorSsl = 1, kErrorWantRead = 2, kErrorWantWrite = 3, kErrorSyscall = 5, kErrorZeroReturn = 6;
constexpr int kCtrlMode = 33;            // SSL_CTRL_MODE
constexpr int kCtrlSetTlsextHostname = 55;
constexpr int kCtrlSetMinProtoVersion = 123;
constexpr long kModePartialWrite = 0x1, kModeMovingBuffer = 0x2;
constexpr long kTls12 = 0x0303;          // TLS1_2_VERSION
constexpr uint64_t kOpIgnoreUnexpectedEof = uint64_t{1} << 7;
constexpr uint64_t kOpNoRenegotiation = uint64_t{1} << 30;
constexpr int kNidCommonName = 13;
constexpr unsigned kCheckNoWildcards = 0x2;  // X509_CHECK_FLAG_NO_WILDCARDS
constexpr uint64_t kInitLoadSslStrings = 0x00200000L;

struct Lib {
  int (*init_ssl)(uint64_t, const void*) = nullptr;
  const void* (*server_method)() = nullptr;
  const void* (*client_method)() = nullptr;
  void* (*ctx_new)(const void*) = nullptr;
  void (*ctx_free)(void*) = nullptr;
  int (*use_chain)(void*, const char*) = nullptr;
  int (*use_key)(void*, const char*, int) = nullptr;
  int (*check_key)(const void*) = nullptr;
  int (*load_verify)(void*, const char*, const char*) = nullptr;
  int (*default_verify)(void*) = nullptr;
  void (*set_verify)(void*, int, void*) = nullptr;
  long (*ctx_ctrl)(void*, int, long, void*) = nullptr;
  uint64_t (*ctx_set_options)(void*, uint64_t) = nullptr;
  void* (*ssl_new)(void*) = nullptr;
  void (*ssl_free)(void*) = nullptr;
  int (*set_fd)(void*, int) = nullptr;
  void (*set_accept)(void*) = nullptr;
  void (*set_connect)(void*) = nullptr;
  int (*handshake)(void*) = nullptr;
  int (*read)(void*, void*, int) = nullptr;
  int (*write)(void*, const void*, int) = nullptr;
  int (*get_error)(const void*, int) = nullptr;
  int (*has_pending)(const void*) = nullptr;
  long (*ssl_ctrl)(void*, int, long, void*) = nullptr;
  void* (*peer_cert)(const void*) = nullptr;
  long (*verify_result)(const void*) = nullptr;
  void* (*get0_param)(void*) = nullptr;
  int (*param_set1_host)(void*, const char*, size_t) = nullptr;
  int (*param_set1_ip_asc)(void*, const char*) = nullptr;
  void (*x509_free)(void*) = nullptr;
  void* (*subject_name)(const void*) = nullptr;
  int (*name_text_by_nid)(void*, int, char*, int) = nullptr;
  int (*check_host)(void*, const char*, size_t, unsigned, char**) = nullptr;
  const char* (*verify_error_string)(long) = nullptr;
  unsigned long (*err_get)() = nullptr;
  void (*err_string)(unsigned long, char*, size_t) = nullptr;
  void (*err_clear)() = nullptr;
  std::string error;
};

const Lib& Load() {
  static Lib lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      lib.error = std::string("TLS is not available (libssl.so.3: ") + dlerror() + "; install libssl3)";
      return;
    }
    bool missing = false;
    auto sym = [&](auto* fn, const char* name) {
      void* p = dlsym(h, name);  // libssl's dependencies (libcrypto) are searched too
      if (!p) missing = true;
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
    };
    sym(&lib.init_ssl, "OPENSSL_init_ssl");
    sym(&lib.server_method, "TLS_server_method");
    sym(&lib.client_method, "TLS_client_method");
    sym(&lib.ctx_new, "SSL_CTX_new");
    sym(&lib.ctx_free, "SSL_CTX_free");
    sym(&lib.use_chain, "SSL_CTX_use_certificate_chain_file");
    sym(&lib.use_key, "SSL_CTX_use_PrivateKey_file");
    sym(&lib.check_key, "SSL_CTX_check_private_key");
    sym(&lib.load_verify, "SSL_CTX_load_verify_locations");
    sym(&lib.default_verify, "SSL_CTX_set_default_verify_paths");
    sym(&lib.set_verify, "SSL_CTX_set_verify");
    sym(&lib.ctx_ctrl, "SSL_CTX_ctrl");
    sym(&lib.ctx_set_options, "SSL_CTX_set_options");
    sym(&lib.ssl_new, "SSL_new");
    sym(&lib.ssl_free, "SSL_free");
    sym(&lib.set_fd, "SSL_set_fd");
    sym(&lib.set_accept, "SSL_set_accept_state");
    sym(&lib.set_connect, "SSL_set_connect_state");
    sym(&lib.handshake, "SSL_do_handshake");
    sym(&lib.read, "SSL_read");
    sym(&lib.write, "SSL_write");
    sym(&lib.get_error, "SSL_get_error");
    sym(&lib.has_pending, "SSL_has_pending");
    sym(&lib.ssl_ctrl, "SSL_ctrl");
    sym(&lib.peer_cert, "SSL_get1_peer_certificate");
    sym(&lib.verify_result, "SSL_get_verify_result");
    sym(&lib.get0_param, "SSL_get0_param");
    sym(&lib.param_set1_host, "X509_VERIFY_PARAM_set1_host");
    sym(&lib.param_set1_ip_asc, "X509_VERIFY_PARAM_set1_ip_asc");
    sym(&lib.x509_free, "X509_free");
    sym(&lib.subject_name, "X509_get_subject_name");
    sym(&lib.name_text_by_nid, "X509_NAME_get_text_by_NID");
    sym(&lib.check_host, "X509_check_host");
    sym(&lib.verify_error_string, "X509_verify_cert_error_string");
    sym(&lib.err_get, "ERR_get_error");
    sym(&lib.err_string, "ERR_error_string_n");
    sym(&lib.err_clear, "ERR_clear_error");
    if (missing) {
      lib.error = "TLS is not available (libssl.so.3 lacks an entry point: not OpenSSL 3?)";
      return;
    }
    lib.init_ssl(kInitLoadSslStrings, nullptr);
  });
  return lib;
}

// OpenSSL's error queue, oldest first, emptied.
std::string Errors(const Lib& lib) {
  std::string out;
  while (unsigned long e = lib.err_get()) {
    char buf[256];
    lib.err_string(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

}  // namespace

TlsContext::~TlsContext() {
  if (ctx_) Load().ctx_free(ctx_);
}

static Status MakeContext(const TlsConfig& c, bool server, void** out) {
  const Lib& lib = Load();
  if (!lib.error.empty()) return Status::Unavailable(lib.error);
  lib.err_clear();
  void* ctx = lib.ctx_new(server ? lib.server_method() : lib.client_method());
  if (!ctx) return Status::Internal("tls: cannot create a context: " + Errors(lib));
  *out = ctx;
  lib.ctx_ctrl(ctx, kCtrlSetMinProtoVersion, kTls12, nullptr);
  lib.ctx_ctrl(ctx, kCtrlMode, kModePartialWrite | kModeMovingBuffer, nullptr);
  lib.ctx_set_options(ctx, kOpIgnoreUnexpectedEof | kOpNoRenegotiation);
  if (c.cert_file.empty() != c.key_file.empty())
    return Status::Invalid("tls: a certificate needs its key and a key its certificate (both or neither)");
  if (server && c.cert_file.empty()) return Status::Invalid("tls: the listener needs a certificate and its key");
  if (!c.cert_file.empty()) {
    if (lib.use_chain(ctx, c.cert_file.c_str()) != 1)
      return Status::Invalid("tls: certificate " + c.cert_file + ": " + Errors(lib));
    if (lib.use_key(ctx, c.key_file.c_str(), kFiletypePem) != 1)
      return Status::Invalid("tls: private key " + c.key_file + ": " + Errors(lib));
    if (lib.check_key(ctx) != 1)
      return Status::Invalid("tls: private key " + c.key_file + " does not match certificate " + c.cert_file + ": " +
                             Errors(lib));
  }
  if (!c.ca_file.empty()) {
    if (lib.load_verify(ctx, c.ca_file.c_str(), nullptr) != 1)
      return Status::Invalid("tls: CA file " + c.ca_file + ": " + Errors(lib));
  } else if (!server) {
    lib.default_verify(ctx);
  }
  if (server && c.require_peer_cert && c.ca_file.empty())
    return Status::Invalid("tls: requiring client certificates needs the CA that issues them (--tls-ca)");
  int mode = 0;
  if (!server) mode = kVerifyPeer;  // the client always verifies the server
  else if (c.require_peer_cert) mode = kVerifyPeer | kVerifyFailIfNoPeerCert;
  else if (!c.ca_file.empty()) mode = kVerifyPeer;  // a certificate is optional, but verified when shown
  lib.set_verify(ctx, mode, nullptr);
  return Status::Ok();
}

Result<std::shared_ptr<TlsContext>> TlsContext::Server(const TlsConfig& c) {
  std::shared_ptr<TlsContext> t(new TlsContext());
  t->server_ = true;
  if (Status s = MakeContext(c, true, &t->ctx_); !s.ok()) return s;
  return t;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Client(const TlsConfig& c) {
  std::shared_ptr<TlsContext> t(new TlsContext());
  if (Status s = MakeContext(c, false, &t->ctx_); !s.ok()) return s;
  return t;
}

Result<std::unique_ptr<TlsConn>> TlsConn::New(std::shared_ptr<TlsContext> ctx, int fd, const std::string& peer_name) {
  const Lib& lib = Load();
  if (!lib.error.empty()) return Status::Unavailable(lib.error);
  std::unique_ptr<TlsConn> c(new TlsConn());
  c->ctx_ = std::move(ctx);
  lib.err_clear();
  c->ssl_ = lib.ssl_new(c->ctx_->ssl_ctx());
  if (!c->ssl_ || lib.set_fd(c->ssl_, fd) != 1) return Status::Internal("tls: " + Errors(lib));
  if (c->ctx_->server()) {
    lib.set_accept(c->ssl_);
  } else {
    lib.set_connect(c->ssl_);
    if (!peer_name.empty()) {
      in6_addr a6;
      in_addr a4;
      const bool ip = inet_pton(AF_INET, peer_name.c_str(), &a4) == 1 || inet_pton(AF_INET6, peer_name.c_str(), &a6) == 1;
      void* param = lib.get0_param(c->ssl_);
      const int ok = ip ? lib.param_set1_ip_asc(param, peer_name.c_str())
                        : lib.param_set1_host(param, peer_name.c_str(), peer_name.size());
      if (ok != 1) return Status::Invalid("tls: bad server name " + peer_name);
      if (!ip) lib.ssl_ctrl(c->ssl_, kCtrlSetTlsextHostname, 0, const_cast<char*>(peer_name.c_str()));  // SNI
    }
  }
  return c;
}

TlsConn::~TlsConn() {
  const Lib& lib = Load();
  if (peer_) lib.x509_free(peer_);
  if (ssl_) lib.ssl_free(ssl_);  // no close_notify: the socket's owner closes it
}

int TlsConn::Result_(int r, const char* what) {
  const Lib& lib = Load();
  const int e = lib.get_error(ssl_, r);
  want_ = 0;
  if (e == kErrorWantRead) {
    want_ = kWantRead;
    return 0;
  }
  if (e == kErrorWantWrite) {
    want_ = kWantWrite;
    return 0;
  }
  if (e == kErrorZeroReturn) return -3;  // the peer's close_notify
  const int err = errno;
  std::string why = Errors(lib);
  if (e == kErrorSyscall && why.empty()) {
    if (err == 0 || r == 0) return -3;  // EOF without close_notify: the end of the stream all the same
    why = std::strerror(err);
  }
  if (e == kErrorSsl || why.empty()) {
    const long v = lib.verify_result(ssl_);
    if (v != 0) why += std::string(why.empty() ? "" : " (") + lib.verify_error_string(v) + (why.empty() ? "" : ")");
  }
  error_ = std::string("tls: ") + what + ": " + (why.empty() ? "failed" : why);
  return -1;
}

int TlsConn::Handshake() {
  if (established_) return 1;
  const Lib& lib = Load();
  lib.err_clear();
  errno = 0;
  int r = lib.handshake(ssl_);
  if (r != 1) {
    int m = Result_(r, "handshake");
    if (m == -3) {
      error_ = "tls: handshake: the peer closed the connection";
      return -2;
    }
    return m;
  }
  established_ = true;
  want_ = 0;
  if (void* cert = lib.peer_cert(ssl_)) {
    if (lib.verify_result(ssl_) == 0) {
      peer_ = cert;
      char cn[256];
      int n = lib.name_text_by_nid(lib.subject_name(cert), kNidCommonName, cn, sizeof cn);
      if (n > 0) peer_cn_.assign(cn, static_cast<size_t>(std::min(n, 255)));
    } else {
      lib.x509_free(cert);
    }
  }
  return 1;
}

ssize_t TlsConn::Read(char* p, size_t n) {
  const Lib& lib = Load();
  lib.err_clear();
  errno = 0;
  int r = lib.read(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (r > 0) return r;
  int m = Result_(r, "read");
  if (m == -3) return 0;
  return m == 0 ? -1 : -2;
}

ssize_t TlsConn::Write(const char* p, size_t n) {
  const Lib& lib = Load();
  lib.err_clear();
  errno = 0;
  int r = lib.write(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (r > 0) return r;
  int m = Result_(r, "write");
  if (m == -3) {
    error_ = "tls: write: the peer closed the connection";
    return -2;
  }
  return m == 0 ? -1 : -2;
}

bool TlsConn::HasPending() const { return ssl_ && Load().has_pending(ssl_) == 1; }

bool TlsConn::MatchesHost(std::string_view host) const {
  if (!peer_ || host.empty() || host.size() > 253) return false;
  const std::string h(host);
  return Load().check_host(peer_, h.c_str(), h.size(), kCheckNoWildcards, nullptr) == 1;
}

}  // namespace iosonar
