#include "serve/identity.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/base/munge.h"

namespace iosonar::serve {

Result<AddressMatch> AddressMatch::Parse(const std::string& text) {
  AddressMatch m;
  m.text_ = text;
  std::string addr = text;
  int prefix = -1;
  if (size_t slash = text.find('/'); slash != std::string::npos) {
    addr = text.substr(0, slash);
    char* end = nullptr;
    long v = std::strtol(text.c_str() + slash + 1, &end, 10);
    if (end == text.c_str() + slash + 1 || *end || v < 0 || v > 128)
      return Status::Invalid("--trusted-proxy " + text + ": the prefix length is not a number in 0..128");
    prefix = static_cast<int>(v);
  }
  if (inet_pton(AF_INET, addr.c_str(), m.addr_) == 1) {
    m.family_ = AF_INET;
    m.prefix_ = prefix < 0 ? 32 : prefix;
    if (m.prefix_ > 32) return Status::Invalid("--trusted-proxy " + text + ": an IPv4 prefix is at most 32");
  } else if (inet_pton(AF_INET6, addr.c_str(), m.addr_) == 1) {
    m.family_ = AF_INET6;
    m.prefix_ = prefix < 0 ? 128 : prefix;
  } else {
    return Status::Invalid("--trusted-proxy " + text + ": not an IP address or CIDR block");
  }
  return m;
}

bool AddressMatch::Matches(const sockaddr* sa) const {
  if (!sa) return false;
  unsigned char a[16];
  int fam = sa->sa_family;
  if (fam == AF_INET) {
    std::memcpy(a, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
  } else if (fam == AF_INET6) {
    std::memcpy(a, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    // An IPv4 peer on a dual-stack socket (::ffff:a.b.c.d) is that IPv4 address.
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (family_ == AF_INET && std::memcmp(a, kMapped, 12) == 0) {
      std::memmove(a, a + 12, 4);
      fam = AF_INET;
    }
  } else {
    return false;
  }
  if (fam != family_) return false;
  int bits = prefix_;
  for (int i = 0; bits > 0; ++i, bits -= 8) {
    unsigned char mask = bits >= 8 ? 0xff : static_cast<unsigned char>(0xff << (8 - bits));
    if ((a[i] & mask) != (addr_[i] & mask)) return false;
  }
  return true;
}

Result<uint32_t> MungeUid(const std::string& credential, const std::string& socket) {
  auto c = MungeDecode(socket, credential);  // core/base/munge.h: libmunge loaded at run time
  if (c.ok()) return static_cast<uint32_t>(c->uid);
  if (c.status().code() == Code::kInvalid)
    return Status::Invalid("MUNGE credential rejected: " + c.status().message());
  return c.status();  // munged unreachable, or no libmunge: Unavailable (503)
}

Result<std::string> UserName(uint32_t uid) {
  passwd pw, *res = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) != 0 || !res)
    return Status::NotFound("uid " + std::to_string(uid) + " has no user name");
  return std::string(res->pw_name);
}

std::vector<std::string> UnixGroupsOf(const std::string& user) {
  passwd pw, *res = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &res) != 0 || !res) return {};
  int n = 64;
  std::vector<gid_t> gids(static_cast<size_t>(n));
  if (getgrouplist(user.c_str(), res->pw_gid, gids.data(), &n) < 0) {
    gids.resize(static_cast<size_t>(n));
    if (getgrouplist(user.c_str(), res->pw_gid, gids.data(), &n) < 0) return {};
  }
  gids.resize(static_cast<size_t>(n));
  std::vector<std::string> out;
  for (gid_t g : gids) {
    group gr, *gres = nullptr;
    std::vector<char> gbuf(65536);
    if (getgrgid_r(g, &gr, gbuf.data(), gbuf.size(), &gres) == 0 && gres) out.emplace_back(gres->gr_name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool InUnixGroup(const std::string& user, const std::string& group_name) {
  if (group_name.empty()) return false;
  for (const auto& g : UnixGroupsOf(user))
    if (g == group_name) return true;
  return false;
}

GroupCache::GroupCache(int64_t ttl_ns, size_t max_entries, Lookup lookup, Clock clock)
    : ttl_ns_(ttl_ns), max_entries_(std::max<size_t>(1, max_entries)), lookup_(std::move(lookup)), clock_(std::move(clock)) {
  if (!lookup_) lookup_ = UnixGroupsOf;
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
}

std::vector<std::string> GroupCache::GroupsOf(const std::string& user) {
  if (ttl_ns_ > 0) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = entries_.find(user);
    if (it != entries_.end() && clock_() - it->second.fetched_ns < ttl_ns_) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.groups;
    }
  }
  const int64_t asked = clock_();
  std::vector<std::string> groups = lookup_(user);
  std::lock_guard<std::mutex> l(mu_);
  ++lookups_;
  if (ttl_ns_ <= 0) return groups;
  auto it = entries_.find(user);
  if (it == entries_.end()) {
    while (entries_.size() >= max_entries_) {  // the least recently used goes
      entries_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(user);
    it = entries_.emplace(user, Entry{{}, 0, lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  if (asked >= it->second.fetched_ns) {  // a slower concurrent lookup does not replace a newer answer
    it->second.groups = groups;
    it->second.fetched_ns = asked;
  }
  return groups;
}

size_t GroupCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

uint64_t GroupCache::lookups() const {
  std::lock_guard<std::mutex> l(mu_);
  return lookups_;
}

Result<Identity> Identify(const IdentityOptions& opt, const Credentials& c) {
  Identity id;
  if (c.munge_credential && *c.munge_credential) {
    auto uid = MungeUid(c.munge_credential, opt.munge_socket);
    if (!uid.ok()) return uid.status();
    auto name = UserName(*uid);
    if (!name.ok()) return Status::Invalid("MUNGE credential: " + name.status().message());
    id.user = *name;
    id.via = "munge";
  } else if (c.user_header && *c.user_header) {
    bool trusted = false;
    for (const auto& m : opt.trusted_proxies) trusted = trusted || m.Matches(c.peer);
    if (!trusted) return Status::NotFound("no identity (a user header from an untrusted address is ignored)");
    id.user = c.user_header;
    id.via = "proxy";
  } else {
    return Status::NotFound("no identity");
  }
  const bool admin_listed = opt.admins.count(id.user) > 0;
  if (opt.share_by.empty() && (admin_listed || opt.admin_group.empty())) {
    id.admin = admin_listed;  // no group needed
    return id;
  }
  std::vector<std::string> groups = opt.group_cache ? opt.group_cache->GroupsOf(id.user) : UnixGroupsOf(id.user);
  id.admin = admin_listed ||
             (!opt.admin_group.empty() && std::find(groups.begin(), groups.end(), opt.admin_group) != groups.end());
  if (!opt.share_by.empty()) id.groups = std::move(groups);
  return id;
}

}  // namespace iosonar::serve
