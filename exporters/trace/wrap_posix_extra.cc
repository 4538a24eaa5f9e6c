// POSIX reads and writes that tracer.cc's read/write family does not name:
// preadv2/pwritev2 with their 64 names (offset -1: at the descriptor's
// offset, which advances). Same records as preadv/pwritev. (The fortified
// __read_chk/__pread_chk/__pread64_chk, every read of a program built with
// _FORTIFY_SOURCE, are in tracer.cc beside read, on its inline path.)
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "exporters/trace/tracer_internal.h"

using namespace iosonar::trace;  // NOLINT

namespace {
decltype(&::preadv2) real_preadv2 = nullptr;
decltype(&::pwritev2) real_pwritev2 = nullptr;
decltype(&::preadv64v2) real_preadv64v2 = nullptr;
decltype(&::pwritev64v2) real_pwritev64v2 = nullptr;
#define REAL(name) ext::Real(#name, &real_##name)

size_t IovBytes(const struct iovec* iov, int n) {
  size_t t = 0;
  for (int i = 0; i < n && iov; ++i) t += iov[i].iov_len;
  return t;
}

// preadv2/pwritev2: offset -1 is the descriptor's offset (advancing), as a
// negative offset is to DataOp. RWF_APPEND writes at the end of the file
// whatever the offset says: the op's offset is unknown, and the shadow of
// the descriptor's offset (moved to the end when off is -1) is read back.
template <typename Call>
ssize_t V2Op(Op op, int fd, const struct iovec* iov, int cnt, off64_t off, int flags, Call&& call) {
  if (!(flags & RWF_APPEND) || op != kOpWrite)
    return ext::DataOp(op, kPosix, fd, off < 0 ? -1 : off, IovBytes(iov, cnt), call);
  ext::Fd f;
  Slot* s = ext::BeginFd(fd, &f);
  if (!s) return call();
  const uint64_t t0 = ext::Ticks();
  const ssize_t r = call();
  const uint64_t t1 = ext::Ticks();
  const int e = errno;
  if (off == -1 && r > 0 && *f.offset >= 0) *f.offset = syscall(SYS_lseek, fd, 0, SEEK_CUR);  // not our lseek
  ext::Record(s, RawOp{op, kPosix, fd, -1, static_cast<int64_t>(IovBytes(iov, cnt)), r, r < 0 ? e : 0, f.file_id, t0, t1});
  errno = e;
  return r;
}
}  // namespace

IOSONAR_EXPORT ssize_t preadv2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  return V2Op(kOpRead, fd, iov, cnt, off, flags, [&] { return REAL(preadv2)(fd, iov, cnt, off, flags); });
}
IOSONAR_EXPORT ssize_t pwritev2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  return V2Op(kOpWrite, fd, iov, cnt, off, flags, [&] { return REAL(pwritev2)(fd, iov, cnt, off, flags); });
}
IOSONAR_EXPORT ssize_t preadv64v2(int fd, const struct iovec* iov, int cnt, off64_t off, int flags) {
  return V2Op(kOpRead, fd, iov, cnt, off, flags, [&] { return REAL(preadv64v2)(fd, iov, cnt, off, flags); });
}
IOSONAR_EXPORT ssize_t pwritev64v2(int fd, const struct iovec* iov, int cnt, off64_t off, int flags) {
  return V2Op(kOpWrite, fd, iov, cnt, off, flags, [&] { return REAL(pwritev64v2)(fd, iov, cnt, off, flags); });
}

// The fortified open (_FORTIFY_SOURCE with flags the compiler cannot see and
// no mode: tar, coreutils): glibc's headers call __open_2/__openat_2, which
// the plain open wrapper never sees. They abort on O_CREAT/O_TMPFILE, so the
// flags carry no mode; recorded as open is.
namespace {
using Open2 = int (*)(const char*, int);
using Openat2 = int (*)(int, const char*, int);
Open2 real___open_2 = nullptr, real___open64_2 = nullptr;
Openat2 real___openat_2 = nullptr, real___openat64_2 = nullptr;
struct Open2Args {
  Open2 f;
  Openat2 fat;
  int dirfd;
  const char* path;
  int flags;
};
int CallOpen2(void* p) {
  auto* a = static_cast<Open2Args*>(p);
  return a->f ? a->f(a->path, a->flags) : a->fat(a->dirfd, a->path, a->flags);
}
int Open2Op(Open2 f, Openat2 fat, int dirfd, const char* path, int flags) {
  Open2Args a{f, fat, dirfd, path, flags};
  return ext::OpenOp(kPosix, dirfd, path, flags, CallOpen2, &a);
}
}  // namespace

void iosonar::trace::ext::ResolvePosixExtra() {
  Resolve("preadv2", &real_preadv2);
  Resolve("pwritev2", &real_pwritev2);
  Resolve("preadv64v2", &real_preadv64v2);
  Resolve("pwritev64v2", &real_pwritev64v2);
  Resolve("__open_2", &real___open_2);
  Resolve("__open64_2", &real___open64_2);
  Resolve("__openat_2", &real___openat_2);
  Resolve("__openat64_2", &real___openat64_2);
}

IOSONAR_EXPORT int __open_2(const char* path, int flags) {
  return Open2Op(REAL(__open_2), nullptr, AT_FDCWD, path, flags);
}
IOSONAR_EXPORT int __open64_2(const char* path, int flags) {
  return Open2Op(REAL(__open64_2), nullptr, AT_FDCWD, path, flags);
}
IOSONAR_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return Open2Op(nullptr, REAL(__openat_2), dirfd, path, flags);
}
IOSONAR_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return Open2Op(nullptr, REAL(__openat64_2), dirfd, path, flags);
}
