// What the wrappers outside tracer.cc (wrap_*.cc, one file per layer or
// family of calls) use of the tracer's machinery: the start of issue 31's
// split of tracer.cc by module. Hidden symbols of libiosonar-trace.so only,
// no stable interface (that is iosonar_trace.h).
//
// The shape is tracer.cc's: the real symbols are resolved at start-up (each
// file's Resolve*(), called from tracer.cc's ResolveAll in the constructor,
// so no wrapper's first call runs dlsym, which takes the loader's lock);
// a wrapper asks Enter() whether the call may be traced at all, TracedFd()
// whether its descriptor is a traced file, and only then Slotted() for the
// thread's slot (the ring and slot are made by the first op recorded, never
// for a call on a pipe, a socket or a bad descriptor); it times the real call
// with Ticks(), Record()s the op, and returns the real result with the real
// errno. Enter, TracedFd, Slotted and Record keep errno on every path; a
// wrapper reads errno only after a call failed.
#pragma once
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "exporters/trace/compress.h"

#define IOSONAR_EXPORT extern "C" __attribute__((visibility("default")))

namespace iosonar::trace {
struct Slot;
namespace ext {

// The next definition of a symbol (libc's, libaio's): resolved at start-up
// (Resolve); resolved here only if it was not there then (a library the
// program dlopen'd later, or a tracer disabled before its set-up).
template <typename F>
void Resolve(const char* name, F* slot) {
  __atomic_store_n(slot, reinterpret_cast<F>(dlsym(RTLD_NEXT, name)), __ATOMIC_RELAXED);
}
template <typename F>
__attribute__((always_inline)) inline F Real(const char* name, F* slot) {
  F f = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
    __atomic_store_n(slot, f, __ATOMIC_RELAXED);
  }
  return f;
}

// What the tracer knows of a traced descriptor: its file and the shadows of
// the kernel's offset and the stdio stream's (-1: unknown, O_APPEND).
struct Fd {
  uint64_t file_id;
  int64_t* offset;
  int64_t* stdio_offset;
};

bool Enter();                    // this call may be traced (the tracer is on, this thread is not inside it)
bool TracedFd(int fd, Fd* out);  // fd is a traced file (classified at first sight); after Enter()
Slot* Slotted();                 // after Enter(), for an op that is recorded: the thread's slot (null: counted dropped)
// Enter, TracedFd and Slotted in one: the slot when fd's op is to be recorded.
inline Slot* BeginFd(int fd, Fd* out) { return Enter() && TracedFd(fd, out) ? Slotted() : nullptr; }
// Each wrap_*.cc's real symbols, resolved from the tracer's constructor.
void ResolveCopy();
void ResolvePosixExtra();
void ResolveStdioExtra();
void ResolveLibaio();
void ResolveSyscall();
uint64_t Ticks();                // the tracer's clock
void Record(Slot* s, const RawOp& op);
// An open-like call (freopen): call(ctx) returns the new descriptor or -1;
// recorded as tracer.cc's open, the descriptor traced unless excluded.
int OpenOp(Layer layer, int dirfd, const char* path, int flags, int (*call)(void*), void* ctx);
void ForgetFd(int fd);  // the descriptor was closed behind the wrappers (freopen)
int StdioFlags(const char* mode);  // O_APPEND for "a" modes
// io_uring submissions (SQEs) and rings set up, whose bytes are not seen:
// counted per process (tracer.io_uring_sqes in its iosonar.tracer records).
void NoteIoUring(uint64_t sqes, uint64_t rings);
void CountDropped(uint64_t n);
// syscall(nr, a[0..5]) for nr copy_file_range, sendfile or splice, recorded
// as the libc calls are (wrap_copy.cc); real is libc's syscall().
long RawTransfer(long nr, const long* a, long (*real)(long, ...));  // ops the tracer could not record (tracer.dropped)

// tracer.cc's DataOp for another translation unit: a data op on fd. off >= 0:
// positional; off < 0: at the shadow offset of the layer, which then
// advances. kSizeIsResult: the request's size is the bytes moved.
template <bool kSizeIsResult = false, typename Call>
ssize_t DataOp(Op op, Layer layer, int fd, int64_t off, size_t size, Call&& call) {
  Fd f;
  Slot* s = BeginFd(fd, &f);
  if (!s) return call();
  int64_t& shadow = layer == kStdio ? *f.stdio_offset : *f.offset;
  const int64_t at = off >= 0 ? off : shadow;
  const uint64_t t0 = Ticks();
  const ssize_t r = call();
  const uint64_t t1 = Ticks();
  if (off < 0 && r > 0 && at >= 0) shadow = at + r;
  if constexpr (kSizeIsResult) size = r > 0 ? static_cast<size_t>(r) : 0;
  RawOp o{op, layer, fd, at, static_cast<int64_t>(size), r, r < 0 ? errno : 0, f.file_id, t0, t1};
  Record(s, o);
  return r;
}

}  // namespace ext
}  // namespace iosonar::trace
