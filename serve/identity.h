// Who is asking, for `iosonar serve`, from what a centre already has (never
// from a password store of iosonar's):
//  - a user header (default X-Remote-User) set by the centre's authenticating
//    reverse proxy, believed only when the TCP peer is one of the configured
//    --trusted-proxy addresses (the header from anyone else is ignored);
//  - a MUNGE credential (the output of `munge -n`) in X-Munge-Credential,
//    decoded by the local munged (core/base/munge.h: libmunge's
//    munge_decode, loaded at run time, as Slurm does):
//    munged rejects expired, replayed and foreign-key credentials; the
//    credential's uid is mapped to a user name with getpwuid.
// A credential, when present, decides (a bad one is a 401, not a fallback).
// Administrators: a user named in --admins or a member of --admin-group
// (getgrnam members, or the group is the user's primary group).
// Group lookups go through a GroupCache when one is given (serve gives one:
// --group-ttl), so a page load's requests do not each ask NSS (LDAP, sssd).
// Thread-safe (the reentrant getpw*/getgr* calls; one munge context a call).
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"

namespace iosonar::serve {

// One --trusted-proxy: an address (127.0.0.1, ::1) or a CIDR block (10.0.0.0/8).
class AddressMatch {
 public:
  static Result<AddressMatch> Parse(const std::string& text);
  bool Matches(const sockaddr* sa) const;
  const std::string& text() const { return text_; }

 private:
  int family_ = 0;
  unsigned char addr_[16] = {};
  int prefix_ = 0;  // bits that must match
  std::string text_;
};

// The Unix groups of users (UnixGroupsOf), each user's asked of NSS at most
// once per ttl: a change of membership is seen once the entry is older than
// ttl. At most max_entries users are kept; a new one pushes out the least
// recently used. The lookup runs outside the lock (a slow directory holds
// no other request). Thread-safe.
class GroupCache {
 public:
  using Lookup = std::function<std::vector<std::string>(const std::string& user)>;
  using Clock = std::function<int64_t()>;  // ns, monotonic
  // ttl_ns <= 0: no caching (every call asks NSS). lookup / clock: for tests
  // (default UnixGroupsOf and the steady clock).
  explicit GroupCache(int64_t ttl_ns = 60LL * 1000000000, size_t max_entries = 4096, Lookup lookup = nullptr,
                      Clock clock = nullptr);
  std::vector<std::string> GroupsOf(const std::string& user);
  size_t size() const;
  uint64_t lookups() const;  // how many times NSS (the lookup) was asked

 private:
  struct Entry {
    std::vector<std::string> groups;
    int64_t fetched_ns = 0;
    std::list<std::string>::iterator lru;
  };
  const int64_t ttl_ns_;
  const size_t max_entries_;
  Lookup lookup_;
  Clock clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recently used first
  uint64_t lookups_ = 0;
};

struct IdentityOptions {
  std::vector<AddressMatch> trusted_proxies;
  std::string user_header = "X-Remote-User";
  std::string munge_header = "X-Munge-Credential";
  std::string munge_socket;  // "" = libmunge's default socket
  std::set<std::string> admins;
  std::string admin_group;
  // Shared projects: "" (only one's own jobs), "account" or "group": a user
  // also sees the jobs whose Slurm account / Unix group names one of the
  // user's Unix groups.
  std::string share_by;
  // Where --admin-group and --share-by take a user's groups from; nullptr:
  // NSS on every call.
  std::shared_ptr<GroupCache> group_cache;
};

struct Identity {
  std::string user;
  bool admin = false;
  std::string via;                  // "proxy" or "munge"
  std::vector<std::string> groups;  // the user's Unix group names (share_by)
};

// What a request carries: the TCP peer and the two headers (nullptr = absent).
// How many times each header came (names compared without case): more than
// one is refused with 400 before anyone is identified (a proxy that appends
// its header to the client's would otherwise let the client pick the user).
struct Credentials {
  const sockaddr* peer = nullptr;
  const char* user_header = nullptr;
  const char* munge_credential = nullptr;
  int user_header_count = 0;
  int munge_header_count = 0;
};

// The caller, or NotFound ("no identity": neither a credential nor a user
// header from a trusted proxy) or Invalid (a credential munged rejected, or
// a uid with no user name), which the server answers with 401.
Result<Identity> Identify(const IdentityOptions& opt, const Credentials& c);

// The uid in a MUNGE credential, decoded by munged at socket ("" = default).
Result<uint32_t> MungeUid(const std::string& credential, const std::string& socket);
// getpwuid_r / getgrouplist names; NotFound when the uid has no user.
Result<std::string> UserName(uint32_t uid);
std::vector<std::string> UnixGroupsOf(const std::string& user);
bool InUnixGroup(const std::string& user, const std::string& group);

}  // namespace iosonar::serve
