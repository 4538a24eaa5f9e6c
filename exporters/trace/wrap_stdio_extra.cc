// stdio beyond tracer.cc's: line input (getline, getdelim, __getdelim),
// formatted output to a descriptor (dprintf, vdprintf and the fortified
// __dprintf_chk, __vdprintf_chk), and the calls that put a stream on another
// file or a descriptor under a stream (freopen, freopen64, fdopen).
//
// getline/getdelim are stdio reads of the line's length at the stream's
// offset (end of file: a read of 0 bytes, as fgets). dprintf writes the
// formatted bytes straight to the descriptor (glibc flushes a buffer of its
// own inside the call), so it is a POSIX write at the descriptor's offset.
// freopen closes the stream's descriptor and opens the new file on the same
// number (glibc keeps fileno): the old file's runs close, and the number is
// traced as the new file (an open record), so after freopen(path, "w",
// stderr) the writes to stderr are the new file's. fdopen starts a stream
// where the descriptor is: an open record at the stdio layer, and the
// stream's offset is the descriptor's (or unknown in append mode).
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exporters/trace/tracer_internal.h"

extern "C" {
ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp);
int __dprintf_chk(int fd, int flag, const char* fmt, ...);
int __vdprintf_chk(int fd, int flag, const char* fmt, va_list ap);
}

using namespace iosonar::trace;  // NOLINT

namespace {
decltype(&::getline) real_getline = nullptr;
decltype(&::getdelim) real_getdelim = nullptr;
decltype(&::__getdelim) real___getdelim = nullptr;
decltype(&::vdprintf) real_vdprintf = nullptr;
decltype(&::__vdprintf_chk) real___vdprintf_chk = nullptr;
decltype(&::freopen) real_freopen = nullptr;
decltype(&::freopen64) real_freopen64 = nullptr;
decltype(&::fdopen) real_fdopen = nullptr;
#define REAL(name) ext::Real(#name, &real_##name)

template <typename Call>
ssize_t LineOp(FILE* fp, Call&& call) {
  ssize_t out = -1;
  ext::DataOp<true>(kOpRead, kStdio, fp ? fileno_unlocked(fp) : -1, -1, 0, [&] {
    out = call();
    return out >= 0 ? out : (ferror_unlocked(fp) ? ssize_t{-1} : ssize_t{0});
  });
  return out;
}

template <typename Call>
int PrintFdOp(int fd, Call&& call) {
  int out = 0;
  ext::DataOp<true>(kOpWrite, kPosix, fd, -1, 0, [&] {
    out = call();
    return static_cast<ssize_t>(out);
  });
  return out;
}

using FreopenFn = FILE* (*)(const char*, const char*, FILE*);
FILE* FreopenOp(const char* path, const char* mode, FILE* fp, FreopenFn real) {
  const int old = fp ? fileno_unlocked(fp) : -1;
  if (old >= 0) {  // closed by freopen whatever comes next: its runs end with a close
    ext::Fd f;
    if (Slot* s = ext::BeginFd(old, &f)) {
      const uint64_t t = ext::Ticks();
      ext::Record(s, RawOp{kOpClose, kStdio, old, -1, 0, 0, 0, f.file_id, t, t});
    }
    ext::ForgetFd(old);
  }
  // No path: the same file in another mode, classified again at its next op.
  if (!path) return real(path, mode, fp);
  struct Ctx {
    const char* path;
    const char* mode;
    FILE* fp;
    FreopenFn real;
    FILE* out;
  } c{path, mode, fp, real, nullptr};
  ext::OpenOp(kStdio, AT_FDCWD, path, ext::StdioFlags(mode), [](void* p) {
    auto* x = static_cast<Ctx*>(p);
    x->out = x->real(x->path, x->mode, x->fp);
    return x->out ? fileno_unlocked(x->out) : -1;
  }, &c);
  return c.out;
}
}  // namespace

void iosonar::trace::ext::ResolveStdioExtra() {
  Resolve("getline", &real_getline);
  Resolve("getdelim", &real_getdelim);
  Resolve("__getdelim", &real___getdelim);
  Resolve("vdprintf", &real_vdprintf);
  Resolve("__vdprintf_chk", &real___vdprintf_chk);
  Resolve("freopen", &real_freopen);
  Resolve("freopen64", &real_freopen64);
  Resolve("fdopen", &real_fdopen);
}

IOSONAR_EXPORT ssize_t getline(char** line, size_t* n, FILE* fp) {
  return LineOp(fp, [&] { return REAL(getline)(line, n, fp); });
}
IOSONAR_EXPORT ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return LineOp(fp, [&] { return REAL(getdelim)(line, n, delim, fp); });
}
IOSONAR_EXPORT ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return LineOp(fp, [&] { return REAL(__getdelim)(line, n, delim, fp); });
}

IOSONAR_EXPORT int vdprintf(int fd, const char* fmt, va_list ap) {
  return PrintFdOp(fd, [&] { return REAL(vdprintf)(fd, fmt, ap); });
}
IOSONAR_EXPORT int dprintf(int fd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = PrintFdOp(fd, [&] { return REAL(vdprintf)(fd, fmt, ap); });
  va_end(ap);
  return r;
}
IOSONAR_EXPORT int __vdprintf_chk(int fd, int flag, const char* fmt, va_list ap) {
  return PrintFdOp(fd, [&] { return REAL(__vdprintf_chk)(fd, flag, fmt, ap); });
}
IOSONAR_EXPORT int __dprintf_chk(int fd, int flag, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = PrintFdOp(fd, [&] { return REAL(__vdprintf_chk)(fd, flag, fmt, ap); });
  va_end(ap);
  return r;
}

IOSONAR_EXPORT FILE* freopen(const char* path, const char* mode, FILE* fp) {
  return FreopenOp(path, mode, fp, REAL(freopen));
}
IOSONAR_EXPORT FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  return FreopenOp(path, mode, fp, REAL(freopen64));
}

IOSONAR_EXPORT FILE* fdopen(int fd, const char* mode) {
  ext::Fd f;
  Slot* s = ext::BeginFd(fd, &f);
  if (!s) return REAL(fdopen)(fd, mode);
  const uint64_t t0 = ext::Ticks();
  FILE* fp = REAL(fdopen)(fd, mode);
  const uint64_t t1 = ext::Ticks();
  const int e = errno;
  if (fp) {  // "a": glibc set O_APPEND on the descriptor
    const long fl = syscall(SYS_fcntl, fd, F_GETFL);
    if (fl >= 0 && (fl & O_APPEND)) *f.offset = -1;
    *f.stdio_offset = *f.offset;
  }
  ext::Record(s, RawOp{kOpOpen, kStdio, fd, -1, 0, 0, fp ? 0 : e, f.file_id, t0, t1});
  errno = e;
  return fp;
}
