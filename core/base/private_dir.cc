#include "core/base/private_dir.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace iosonar {
namespace {

int OpenAt(int at, const char* p, int flags) { return static_cast<int>(syscall(SYS_openat, at, p, flags, 0)); }
void Close(int fd) { syscall(SYS_close, fd); }

// A directory of ours, 0700 (fix_mode: one of ours with another mode is made so).
int OpenOwnAt(int at, const char* name, bool fix_mode) {
  int fd = OpenAt(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  bool ok = syscall(SYS_fstat, fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            ((st.st_mode & 07777) == 0700 || (fix_mode && syscall(SYS_fchmod, fd, 0700) == 0));
  if (!ok) {
    Close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool IsPrivateDirSuffix(const char* s) {
  size_t n = 0;
  for (; s[n]; ++n) {
    const char c = s[n];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  }
  return n >= 6 && n <= 32;
}

int OpenPrivateDir(const char* dir, char* out, size_t cap, bool* fell_back, bool fallback) {
  if (fell_back) *fell_back = false;
  snprintf(out, cap, "%s", dir);
  // Opened first: it exists nearly always (one system call fewer per
  // process); made if not (another process making it at the same moment is
  // as good: the second open finds it either way).
  int fd = OpenOwnAt(AT_FDCWD, dir, true);
  if (fd < 0) {
    syscall(SYS_mkdirat, AT_FDCWD, dir, 0700);
    fd = OpenOwnAt(AT_FDCWD, dir, true);
  }
  if (fd >= 0 || !fallback) return fd;
  // The parent and the base name.
  char parent[512];
  const char* slash = strrchr(dir, '/');
  const char* base = slash ? slash + 1 : dir;
  size_t plen = slash ? static_cast<size_t>(slash - dir) : 0;
  if (plen >= sizeof parent || !*base) return -1;
  if (slash) {
    memcpy(parent, dir, plen);
    parent[plen] = '\0';
    if (plen == 0) strcpy(parent, "/");
  } else {
    strcpy(parent, ".");
  }
  int pfd = OpenAt(AT_FDCWD, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0) return -1;
  char prefix[256];
  const int pl = snprintf(prefix, sizeof prefix, "%s.", base);
  if (pl <= 0 || static_cast<size_t>(pl) + 33 >= sizeof prefix) {
    Close(pfd);
    return -1;
  }
  // One of ours already there (bounded: a parent of millions of names is not read to its end).
  alignas(8) char buf[16384];
  for (int rounds = 0; fd < 0 && rounds < 4096; ++rounds) {
    long n = syscall(SYS_getdents64, pfd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n && fd < 0;) {
      auto* e = reinterpret_cast<Dirent64*>(buf + off);
      off += e->d_reclen;
      if (strncmp(e->d_name, prefix, static_cast<size_t>(pl)) != 0 || !IsPrivateDirSuffix(e->d_name + pl)) continue;
      fd = OpenOwnAt(pfd, e->d_name, false);
      if (fd >= 0) snprintf(out, cap, "%s/%s", parent, e->d_name);
    }
  }
  for (int attempt = 0; fd < 0 && attempt < 8; ++attempt) {
    unsigned char rnd[10];
    if (syscall(SYS_getrandom, rnd, sizeof rnd, 0) != static_cast<long>(sizeof rnd)) break;
    static const char kAlnum[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char name[300];
    memcpy(name, prefix, static_cast<size_t>(pl));
    for (int k = 0; k < 10; ++k) name[pl + k] = kAlnum[rnd[k] % 62];
    name[pl + 10] = '\0';
    if (syscall(SYS_mkdirat, pfd, name, 0700) != 0) continue;
    fd = OpenOwnAt(pfd, name, true);
    if (fd >= 0) snprintf(out, cap, "%s/%s", parent, name);
  }
  Close(pfd);
  if (fd >= 0 && fell_back) *fell_back = true;
  return fd;
}

}  // namespace iosonar
