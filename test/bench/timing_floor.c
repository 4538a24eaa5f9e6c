// The floor of any tracer that times every call: an LD_PRELOAD library whose
// pread/pwrite/read/write wrappers do nothing but read the TSC before and
// after the real call (as iosonar's tracer does) and add the difference to a
// thread-local sum. bench_tracer runs fio under it beside untraced and traced
// runs, so what the clock reads cost is told apart from what the tracer's own
// work costs. Not a tracer: it records nothing.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>
#include <x86intrin.h>

static __thread unsigned long long t_ticks;
unsigned long long timing_floor_ticks(void) { return t_ticks; }

#define WRAP(name, ret, params, args)                            \
  ret name params {                                              \
    static ret(*real) params;                                    \
    if (!real) real = (ret(*) params)dlsym(RTLD_NEXT, #name);    \
    unsigned long long t0 = __rdtsc();                           \
    ret r = real args;                                           \
    t_ticks += __rdtsc() - t0;                                   \
    return r;                                                    \
  }

WRAP(pread, ssize_t, (int fd, void* b, size_t n, off_t o), (fd, b, n, o))
WRAP(pread64, ssize_t, (int fd, void* b, size_t n, off_t o), (fd, b, n, o))
WRAP(pwrite, ssize_t, (int fd, const void* b, size_t n, off_t o), (fd, b, n, o))
WRAP(pwrite64, ssize_t, (int fd, const void* b, size_t n, off_t o), (fd, b, n, o))
WRAP(read, ssize_t, (int fd, void* b, size_t n), (fd, b, n))
WRAP(write, ssize_t, (int fd, const void* b, size_t n), (fd, b, n))
