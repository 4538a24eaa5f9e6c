// In-kernel copies between descriptors: copy_file_range, sendfile (and
// sendfile64), splice. coreutils cp and cat, Python's shutil.copy*, Java's
// Files.copy/transferTo and Node's copyFileSync move a file's bytes with
// them, never through read/write.
//
// One call is a read on the source and a write on the destination, each
// recorded on its own descriptor when that one is a traced file (a pipe or a
// socket, the other end of splice and of a socket's sendfile, is not a file:
// as for read/write on one, nothing is recorded for it). The offset is the
// one the call used: the caller's *off when it passes one (the descriptor's
// own offset then stays), else the descriptor's, which then advances. The
// size of an op is the bytes the call moved (callers ask for "as much as
// there is": cp passes SSIZE_MAX), 0 when it moved none or failed; a failure
// is recorded on both traced sides with its errno.
//
// libuv (Node.js) makes copy_file_range through syscall(): those calls
// (and sendfile's and splice's) come here from wrap_syscall.cc's syscall().
//
// tee and vmsplice are not wrapped: tee copies between two pipes and
// vmsplice between a pipe and memory, neither ever touches a file.
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>

#include "exporters/trace/tracer_internal.h"

using namespace iosonar::trace;  // NOLINT

namespace {

using CopyFileRangeFn = ssize_t (*)(int, off64_t*, int, off64_t*, size_t, unsigned);
using SendfileFn = ssize_t (*)(int, int, off_t*, size_t);
using Sendfile64Fn = ssize_t (*)(int, int, off64_t*, size_t);
using SpliceFn = ssize_t (*)(int, off64_t*, int, off64_t*, size_t, unsigned);
CopyFileRangeFn real_copy_file_range = nullptr;
SendfileFn real_sendfile = nullptr;
Sendfile64Fn real_sendfile64 = nullptr;
SpliceFn real_splice = nullptr;

static_assert(sizeof(off_t) == sizeof(off64_t), "LP64: off_t is 64 bits");

// One side of a transfer: its file, where the call reads or writes it.
// With the caller's *off, the kernel moved *off by the bytes moved: the op
// was at *off - r. *off is read only after a call that succeeded (one that
// failed may have been given a bad pointer: EFAULT, never our crash).
struct Side {
  bool traced = false;
  ext::Fd f{};
  int64_t at = -1;  // the descriptor's offset before the call (no *off)
};
inline Side Prepare(int fd, const off64_t* off) {
  Side s;
  s.traced = ext::TracedFd(fd, &s.f);
  if (s.traced && !off) s.at = *s.f.offset;
  return s;
}
inline int64_t At(const Side& s, const off64_t* off, ssize_t r) {
  if (!off) return s.at;
  return r >= 0 && *off >= r ? *off - r : -1;
}

template <typename Call>
ssize_t TransferOp(int in, const off64_t* off_in, int out, const off64_t* off_out, Call&& call) {
  if (!ext::Enter()) return call();
  Side src = Prepare(in, off_in), dst = Prepare(out, off_out);
  Slot* s = src.traced || dst.traced ? ext::Slotted() : nullptr;
  if (!s) return call();
  const uint64_t t0 = ext::Ticks();
  const ssize_t r = call();
  const uint64_t t1 = ext::Ticks();
  const int err = r < 0 ? errno : 0;
  const int64_t moved = r > 0 ? r : 0;
  if (src.traced) {
    if (!off_in && r > 0 && src.at >= 0) *src.f.offset = src.at + r;
    ext::Record(s, RawOp{kOpRead, kPosix, in, At(src, off_in, r), moved, r, err, src.f.file_id, t0, t1});
  }
  if (dst.traced) {
    if (!off_out && r > 0 && dst.at >= 0) *dst.f.offset = dst.at + r;
    ext::Record(s, RawOp{kOpWrite, kPosix, out, At(dst, off_out, r), moved, r, err, dst.f.file_id, t0, t1});
  }
  if (r < 0) errno = err;
  return r;
}

}  // namespace

void iosonar::trace::ext::ResolveCopy() {
  Resolve("copy_file_range", &real_copy_file_range);
  Resolve("sendfile", &real_sendfile);
  Resolve("sendfile64", &real_sendfile64);
  Resolve("splice", &real_splice);
}

IOSONAR_EXPORT ssize_t copy_file_range(int in, off64_t* off_in, int out, off64_t* off_out, size_t len, unsigned flags) {
  return TransferOp(in, off_in, out, off_out, [&] {
    return ext::Real("copy_file_range", &real_copy_file_range)(in, off_in, out, off_out, len, flags);
  });
}
// sendfile's offset is the input's; the output is written at its own offset.
IOSONAR_EXPORT ssize_t sendfile(int out, int in, off_t* off, size_t count) {
  return TransferOp(in, reinterpret_cast<const off64_t*>(off), out, nullptr,
                    [&] { return ext::Real("sendfile", &real_sendfile)(out, in, off, count); });
}
IOSONAR_EXPORT ssize_t sendfile64(int out, int in, off64_t* off, size_t count) {
  return TransferOp(in, off, out, nullptr, [&] { return ext::Real("sendfile64", &real_sendfile64)(out, in, off, count); });
}
IOSONAR_EXPORT ssize_t splice(int in, off64_t* off_in, int out, off64_t* off_out, size_t len, unsigned flags) {
  return TransferOp(in, off_in, out, off_out,
                    [&] { return ext::Real("splice", &real_splice)(in, off_in, out, off_out, len, flags); });
}

// syscall(SYS_copy_file_range / SYS_sendfile / SYS_splice, ...): a = args.
long iosonar::trace::ext::RawTransfer(long nr, const long* a, long (*real)(long, ...)) {
  if (nr == SYS_sendfile)  // (out, in, off, count)
    return TransferOp(static_cast<int>(a[1]), reinterpret_cast<off64_t*>(a[2]), static_cast<int>(a[0]), nullptr,
                      [&] { return real(nr, a[0], a[1], a[2], a[3]); });
  // copy_file_range and splice: (in, off_in, out, off_out, len, flags)
  return TransferOp(static_cast<int>(a[0]), reinterpret_cast<off64_t*>(a[1]), static_cast<int>(a[2]),
                    reinterpret_cast<off64_t*>(a[3]),
                    [&] { return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]); });
}
