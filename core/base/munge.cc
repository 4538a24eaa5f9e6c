#include "core/base/munge.h"

#include <dlfcn.h>
#include <netinet/in.h>
#include <time.h>

#include <cstdlib>
#include <mutex>

namespace iosonar {
namespace {

// The few libmunge entry points, by their C signatures (munge.h).
using Ctx = void*;
constexpr int kOptTtl = 4;         // MUNGE_OPT_TTL (int)
constexpr int kOptAddr4 = 5;       // MUNGE_OPT_ADDR4 (struct in_addr): where the credential was encoded
constexpr int kOptEncodeTime = 6;  // MUNGE_OPT_ENCODE_TIME (time_t)
constexpr int kOptSocket = 8;      // MUNGE_OPT_SOCKET
struct Lib {
  Ctx (*ctx_create)() = nullptr;
  void (*ctx_destroy)(Ctx) = nullptr;
  int (*ctx_set)(Ctx, int, ...) = nullptr;
  int (*ctx_get)(Ctx, int, ...) = nullptr;
  int (*encode)(char**, Ctx, const void*, int) = nullptr;
  int (*decode)(const char*, Ctx, void**, int*, uid_t*, gid_t*) = nullptr;
  const char* (*strerror)(int) = nullptr;
  const char* (*ctx_strerror)(Ctx) = nullptr;
  std::string error;
};

const Lib& Load() {
  static Lib lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libmunge.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      lib.error = std::string("MUNGE is not available (libmunge.so.2: ") + dlerror() +
                  "; install the munge package)";
      return;
    }
    auto sym = [&](const char* name) { return dlsym(h, name); };
    lib.ctx_create = reinterpret_cast<decltype(lib.ctx_create)>(sym("munge_ctx_create"));
    lib.ctx_destroy = reinterpret_cast<decltype(lib.ctx_destroy)>(sym("munge_ctx_destroy"));
    lib.ctx_set = reinterpret_cast<decltype(lib.ctx_set)>(sym("munge_ctx_set"));
    lib.ctx_get = reinterpret_cast<decltype(lib.ctx_get)>(sym("munge_ctx_get"));
    lib.encode = reinterpret_cast<decltype(lib.encode)>(sym("munge_encode"));
    lib.decode = reinterpret_cast<decltype(lib.decode)>(sym("munge_decode"));
    lib.strerror = reinterpret_cast<decltype(lib.strerror)>(sym("munge_strerror"));
    lib.ctx_strerror = reinterpret_cast<decltype(lib.ctx_strerror)>(sym("munge_ctx_strerror"));
    if (!lib.ctx_create || !lib.ctx_destroy || !lib.ctx_set || !lib.ctx_get || !lib.encode || !lib.decode || !lib.strerror)
      lib.error = "MUNGE is not available (libmunge.so.2 lacks an entry point)";
  });
  return lib;
}

// A context with the socket set; destroyed with the guard.
struct CtxGuard {
  const Lib& lib;
  Ctx ctx = nullptr;
  ~CtxGuard() {
    if (ctx) lib.ctx_destroy(ctx);
  }
};

std::string Reason(const Lib& lib, Ctx ctx, int err) {
  const char* detail = lib.ctx_strerror && ctx ? lib.ctx_strerror(ctx) : nullptr;
  return std::string("munge: ") + (detail ? detail : lib.strerror(err));
}

}  // namespace

Result<std::string> MungeEncode(const std::string& socket, const std::string& payload) {
  const Lib& lib = Load();
  if (!lib.error.empty()) return Status::Unavailable(lib.error);
  CtxGuard g{lib, lib.ctx_create()};
  if (!g.ctx) return Status::Internal("munge: cannot create a context");
  if (!socket.empty() && lib.ctx_set(g.ctx, kOptSocket, socket.c_str()) != 0)
    return Status::Invalid("munge: bad socket " + socket);
  char* cred = nullptr;
  int err = lib.encode(&cred, g.ctx, payload.data(), static_cast<int>(payload.size()));
  if (err != 0) {
    std::free(cred);
    return Status::Unavailable(Reason(lib, g.ctx, err));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

Result<MungeCred> MungeDecode(const std::string& socket, const std::string& credential) {
  const Lib& lib = Load();
  if (!lib.error.empty()) return Status::Unavailable(lib.error);
  CtxGuard g{lib, lib.ctx_create()};
  if (!g.ctx) return Status::Internal("munge: cannot create a context");
  if (!socket.empty() && lib.ctx_set(g.ctx, kOptSocket, socket.c_str()) != 0)
    return Status::Invalid("munge: bad socket " + socket);
  void* buf = nullptr;
  int len = 0;
  MungeCred c;
  int err = lib.decode(credential.c_str(), g.ctx, &buf, &len, &c.uid, &c.gid);
  if (buf && len > 0) c.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
  std::free(buf);
  // munged unreachable (EMUNGE_SOCKET, EMUNGE_TIMEOUT): worth retrying; else refused:
  // invalid, expired, rewound or replayed (a second use).
  if (err == 6 || err == 7) return Status::Unavailable(Reason(lib, g.ctx, err));
  if (err != 0) return Status::Invalid(Reason(lib, g.ctx, err));
  // What munged itself vouches for besides the user: the address of the host
  // that encoded it, when, and for how long it is valid.
  struct in_addr a {};
  if (lib.ctx_get(g.ctx, kOptAddr4, &a) == 0) c.addr4 = a.s_addr;
  time_t t = 0;
  if (lib.ctx_get(g.ctx, kOptEncodeTime, &t) == 0) c.encode_time = static_cast<int64_t>(t);
  int ttl = 0;
  if (lib.ctx_get(g.ctx, kOptTtl, &ttl) == 0) c.ttl = ttl;
  return c;
}

}  // namespace iosonar
