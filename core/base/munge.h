// MUNGE credentials, the identity a Slurm cluster already has: munged on
// every node shares one key, so a credential made on one node names its
// user (uid, gid) to any other, and munged refuses to decode it twice or
// after its time to live (300 s by default).
//
// libmunge is loaded at run time (dlopen "libmunge.so.2", from Debian's
// libmunge2, which the munge package pulls in), so no binary links it and a
// machine without MUNGE loses only this.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace iosonar {

struct MungeCred {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string payload;
  uint32_t addr4 = 0;        // the encoding host's IPv4 address (network order), as munged recorded it
  int64_t encode_time = 0;   // seconds since the epoch
  int ttl = 0;               // seconds
};

// socket: munged's socket ("" = libmunge's default). Errors name munge's reason.
Result<std::string> MungeEncode(const std::string& socket, const std::string& payload);
Result<MungeCred> MungeDecode(const std::string& socket, const std::string& credential);

}  // namespace iosonar
