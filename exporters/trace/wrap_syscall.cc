// libc's syscall(): copy_file_range, sendfile and splice made through it
// (wrap_copy.cc), and io_uring.
//
// io_uring, counted: the submissions (SQEs) a process makes and the rings it
// sets up, in its iosonar.tracer records (tracer.io_uring_sqes, present once
// it used io_uring). Their bytes are not seen: a program fills submission
// entries and reads completions in memory it shares with the kernel
// (liburing's io_uring_get_sqe, io_uring_prep_*, io_uring_peek_cqe and
// io_uring_cqe_seen are inline functions of its header), with no call a
// preloaded library can stand in; only the submission and the wait cross a
// function, and completions are often taken from the shared ring with no
// call at all. So the count says that the process did I/O the records do
// not hold, and how many ops.
//
// Seen: libc's syscall(SYS_io_uring_setup / SYS_io_uring_enter, ...), as
// fio's io_uring engine makes them, and liburing's io_uring_queue_init,
// io_uring_queue_init_params, io_uring_submit, io_uring_submit_and_wait and
// io_uring_submit_and_get_events (liburing makes its own system calls
// inline). Not counted: the submissions of io_uring_submit_and_wait_timeout
// (it returns 0, not their number: its ring's set-up still shows) and of
// SQPOLL rings (the kernel takes them with no call), and a program that makes
// the system calls without libc's syscall() (inline assembly, a static binary).
#include <stdarg.h>
#include <sys/syscall.h>

#include "exporters/trace/tracer_internal.h"

using namespace iosonar::trace;  // NOLINT
using SyscallFn = long (*)(long, ...);

namespace {
using InitFn = int (*)(unsigned, void*, unsigned);
using InitParamsFn = int (*)(unsigned, void*, void*);
using SubmitFn = int (*)(void*);
using SubmitWaitFn = int (*)(void*, unsigned);
InitFn real_io_uring_queue_init = nullptr;
InitParamsFn real_io_uring_queue_init_params = nullptr;
SubmitFn real_io_uring_submit = nullptr;
SubmitWaitFn real_io_uring_submit_and_wait = nullptr;
SubmitFn real_io_uring_submit_and_get_events = nullptr;

// liburing's entry points may call one another: only the outermost counts.
__thread int t_depth __attribute__((tls_model("initial-exec"))) = 0;

template <typename Call>
int Counted(bool setup, Call&& call) {
  ++t_depth;
  const int r = call();
  --t_depth;
  if (t_depth == 0 && r >= 0 && (setup || r > 0)) ext::NoteIoUring(setup ? 0 : static_cast<uint64_t>(r), setup ? 1 : 0);
  return r;
}
}  // namespace

// syscall() itself is a trampoline with no stack frame: the system calls it
// does not look at (all but five) jump straight to libc's, so the tracer's
// own system calls cost a few compares more, and a program's
// syscall(SYS_vfork) or syscall(SYS_clone) returns in its child through no
// frame of ours (a vfork child would overwrite it). The five go to
// SyscallSlow: copy_file_range, sendfile and splice made through syscall()
// (libuv's copy_file_range) are recorded as the libc calls are
// (wrap_copy.cc); io_uring_setup and io_uring_enter are counted.
extern "C" {
__attribute__((visibility("hidden"))) SyscallFn iosonar_real_syscall = nullptr;
__attribute__((visibility("hidden"), used)) long iosonar_syscall_slow(long nr, ...);
}
#define IOSONAR_STR2(x) #x
#define IOSONAR_STR(x) IOSONAR_STR2(x)
static_assert(sizeof(long) == 8, "x86-64");
__asm__(
    ".text\n"
    ".globl syscall\n"
    ".type syscall, @function\n"
    "syscall:\n"
    "  cmpq $" IOSONAR_STR(SYS_copy_file_range) ", %rdi\n"
    "  je 1f\n"
    "  cmpq $" IOSONAR_STR(SYS_sendfile) ", %rdi\n"
    "  je 1f\n"
    "  cmpq $" IOSONAR_STR(SYS_splice) ", %rdi\n"
    "  je 1f\n"
    "  cmpq $" IOSONAR_STR(SYS_io_uring_setup) ", %rdi\n"
    "  je 1f\n"
    "  cmpq $" IOSONAR_STR(SYS_io_uring_enter) ", %rdi\n"
    "  je 1f\n"
    "  cmpq $0, iosonar_real_syscall(%rip)\n"
    "  je 1f\n"  // not resolved yet
    "  jmp *iosonar_real_syscall(%rip)\n"
    "1:\n"
    "  jmp iosonar_syscall_slow\n"
    ".size syscall, .-syscall\n");

long iosonar_syscall_slow(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  const long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
  const long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
  va_end(ap);
  SyscallFn real = ext::Real("syscall", &iosonar_real_syscall);
  if (nr == SYS_copy_file_range || nr == SYS_sendfile || nr == SYS_splice) {
    const long args[6] = {a, b, c, d, e, f};
    return ext::RawTransfer(nr, args, real);
  }
  const long r = real(nr, a, b, c, d, e, f);
  if ((nr == SYS_io_uring_enter || nr == SYS_io_uring_setup) && r >= 0 && t_depth == 0) {
    if (nr == SYS_io_uring_setup) ext::NoteIoUring(0, 1);
    else if (r > 0 && b > 0) ext::NoteIoUring(static_cast<uint64_t>(r), 0);
  }
  return r;
}

void iosonar::trace::ext::ResolveSyscall() {
  Resolve("syscall", &iosonar_real_syscall);
  Resolve("io_uring_queue_init", &real_io_uring_queue_init);
  Resolve("io_uring_queue_init_params", &real_io_uring_queue_init_params);
  Resolve("io_uring_submit", &real_io_uring_submit);
  Resolve("io_uring_submit_and_wait", &real_io_uring_submit_and_wait);
  Resolve("io_uring_submit_and_get_events", &real_io_uring_submit_and_get_events);
}

IOSONAR_EXPORT int io_uring_queue_init(unsigned entries, void* ring, unsigned flags) {
  return Counted(true, [&] { return ext::Real("io_uring_queue_init", &real_io_uring_queue_init)(entries, ring, flags); });
}
IOSONAR_EXPORT int io_uring_queue_init_params(unsigned entries, void* ring, void* p) {
  return Counted(true, [&] { return ext::Real("io_uring_queue_init_params", &real_io_uring_queue_init_params)(entries, ring, p); });
}
IOSONAR_EXPORT int io_uring_submit(void* ring) {
  return Counted(false, [&] { return ext::Real("io_uring_submit", &real_io_uring_submit)(ring); });
}
IOSONAR_EXPORT int io_uring_submit_and_wait(void* ring, unsigned wait_nr) {
  return Counted(false, [&] { return ext::Real("io_uring_submit_and_wait", &real_io_uring_submit_and_wait)(ring, wait_nr); });
}
IOSONAR_EXPORT int io_uring_submit_and_get_events(void* ring) {
  return Counted(false, [&] { return ext::Real("io_uring_submit_and_get_events", &real_io_uring_submit_and_get_events)(ring); });
}
