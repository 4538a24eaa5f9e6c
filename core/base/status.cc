#include "core/base/status.h"

#include <cstring>

namespace iosonar {

Status Status::FromErrno(const std::string& what, int err) {
  Code c = Code::kIo;
  if (err == ENOENT) c = Code::kNotFound;
  if (err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH) c = Code::kUnavailable;
  if (err == EAGAIN || err == EINTR) c = Code::kRetry;
  return {c, what + ": " + std::strerror(err)};
}

std::string Status::ToString() const {
  static const char* kNames[] = {"ok", "invalid", "not found", "io error", "unavailable", "retry", "internal"};
  if (ok()) return "ok";
  return std::string(kNames[static_cast<int>(code_)]) + ": " + msg_;
}

}  // namespace iosonar
