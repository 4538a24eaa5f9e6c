/* Small programs the tracer tests run under LD_PRELOAD: each mode checks one
 * behaviour the tracer must not change, and exits non-zero if it changed.
 *   errno DIR         failing calls keep their errno
 *   errnokept DIR [N] successful calls keep the errno the program set (fast and slow paths, flush failures)
 *   threads DIR N     N threads, each writes its own file (64 x 4 KiB)
 *   fork DIR          parent and child each write a file
 *   forkexec DIR SELF child execs SELF write DIR/exec.dat
 *   write FILE N BS   write N blocks of BS bytes sequentially
 *   closestd DIR      closes stdout and stderr, then writes a file
 *   threadexit DIR    a thread writes a file and calls exit() while main waits
 *   interleave DIR    two files written in alternation (compression test)
 *   stdio DIR         fopen/fwrite/fread/fclose
 *   meta DIR          mkdir, stat, access, rename, unlink, rmdir
 *   idle DIR MS       writes a file, then computes (sleeps) MS milliseconds without I/O
 *   closeall DIR HOW  does I/O (so the tracer has opened its output), then closes every
 *                     descriptor from 3 up (HOW: close_range, closefrom, loop) or dup2()s a
 *                     file onto every number from 3 to the limit less 16 (HOW: dup2), then
 *                     writes two files and checks they hold exactly its bytes
 *   die DIR HOW       writes DIR/die.dat (2048 sequential 4 KiB writes, then 100 at scattered
 *                     offsets), reads 16 blocks back, writes its pid to DIR/ready, then ends
 *                     without its exit path: HOW wait (sleeps until killed), segv, _exit
 *   signalio DIR N    N 4 KiB pwrites to DIR/main.dat while a SIGALRM handler (an interval
 *                     timer of 20 us) writes one byte to DIR/handler.dat each time; prints the
 *                     handler's count ("handler writes K") at the end
 *   aionoreturn DIR   two aio_writes to DIR/aio.dat, waits for both, collects only the first
 *                     with aio_return, and exits
 *   aiokill DIR       two aio_writes to DIR/aio.dat, waits for both, collects neither, and
 *                     kills itself with SIGKILL
 *   turns DIR N K R   N threads share one descriptor of DIR/turns.dat: thread t pwrites the
 *                     4 KiB blocks t, t+N, t+2N, ... (K each, in turns), all wait for each
 *                     other, then each preads R blocks at pseudo-random places in it
 */
#define _GNU_SOURCE
#include <errno.h>
#include <aio.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char block[1 << 20];

static int write_file(const char* path, int n, size_t bs) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 1;
  for (int i = 0; i < n; ++i)
    if (write(fd, block, bs) != (ssize_t)bs) return 1;
  return close(fd) != 0;
}

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "check failed: %s (errno %d)\n", #cond, errno); \
      return 1;                                                      \
    }                                                                \
  } while (0)

static int mode_errno(const char* dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s/does/not/exist", dir);
  errno = 0;
  CHECK(open(p, O_RDONLY) == -1 && errno == ENOENT);
  errno = 0;
  CHECK(read(987, block, 10) == -1 && errno == EBADF);
  snprintf(p, sizeof p, "%s/ro.dat", dir);
  CHECK(write_file(p, 1, 100) == 0);
  int fd = open(p, O_RDONLY);
  CHECK(fd >= 0);
  errno = 0;
  CHECK(write(fd, block, 10) == -1 && errno == EBADF);
  errno = 0;
  CHECK(pwrite(fd, block, 10, 0) == -1 && errno == EBADF);
  errno = 0;
  CHECK(lseek(fd, -5, SEEK_SET) == -1 && errno == EINVAL);
  CHECK(pread(fd, block, 100, 0) == 100);
  CHECK(pread(fd, block, 100, 100) == 0); /* EOF */
  close(fd);
  errno = 0;
  CHECK(close(fd) == -1 && errno == EBADF);
  struct stat st;
  errno = 0;
  snprintf(p, sizeof p, "%s/nope", dir);
  CHECK(stat(p, &st) == -1 && errno == ENOENT);
  errno = 0;
  CHECK(unlink(p) == -1 && errno == ENOENT);
  errno = 0;
  CHECK(fopen(p, "r") == NULL && errno == ENOENT);
  errno = 0;
  CHECK(access(p, R_OK) == -1 && errno == ENOENT);
  errno = 0;
  CHECK(mkdir(dir, 0755) == -1 && errno == EEXIST);
  return 0;
}

/* Successful calls leave errno as the program set it, on the tracer's fast
   path (a run grows), its slow one (new runs at random offsets, sweeps and
   flushes, which fail when the output is down) and an fd it did not see
   opened (classified at its first use). Prints how many calls changed it. */
static int mode_errnokept(const char* dir, long n) {
  char p[4096];
  snprintf(p, sizeof p, "%s/kept.dat", dir);
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  long changed = 0, calls = 0;
#define KEPT(call, want)          \
  do {                            \
    errno = ERANGE;               \
    CHECK((call) == (want));      \
    changed += errno != ERANGE;   \
    ++calls;                      \
  } while (0)
  for (long i = 0; i < 1024; ++i) KEPT(write(fd, block, 4096), 4096); /* one run */
  for (long i = 0; i < n; ++i) {
    const off_t at = (off_t)((i * 7919) % 1024) * 4096; /* never adjacent: a new run each */
    KEPT(pwrite(fd, block, 4096, at), 4096);
    KEPT(pread(fd, block, 4096, (off_t)((i * 104729) % 1024) * 4096), 4096);
    KEPT(lseek(fd, 0, SEEK_END), (off_t)1024 * 4096);
  }
  snprintf(p, sizeof p, "%s/raw.dat", dir);
  const int raw = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(raw >= 0);
  KEPT(write(raw, block, 10), 10);
  KEPT(close(raw), 0);
  KEPT(close(fd), 0);
#undef KEPT
  printf("errno changed by %ld of %ld successful calls\n", changed, calls);
  return changed != 0;
}

struct targ {
  const char* dir;
  int i;
};
static void* thread_main(void* a) {
  struct targ* t = a;
  char p[4096];
  snprintf(p, sizeof p, "%s/thread.%d", t->dir, t->i);
  return (void*)(long)write_file(p, 64, 4096);
}

static int mode_threads(const char* dir, int n) {
  pthread_t th[64];
  struct targ args[64];
  if (n > 64) n = 64;
  for (int i = 0; i < n; ++i) {
    args[i].dir = dir;
    args[i].i = i;
    pthread_create(&th[i], NULL, thread_main, &args[i]);
  }
  long bad = 0;
  for (int i = 0; i < n; ++i) {
    void* r;
    pthread_join(th[i], &r);
    bad += (long)r;
  }
  return bad != 0;
}

// N threads alive at once (a barrier holds them), each writing 100 bytes at
// its own offset of FILE: past the ring's 512 slots, threads have no slot.
static int g_many_fd;
static pthread_barrier_t g_many_bar;
static void* many_main(void* p) {
  long i = (long)p;
  char b[100];
  memset(b, 'm', sizeof b);
  pthread_barrier_wait(&g_many_bar);
  long bad = pwrite(g_many_fd, b, sizeof b, (off_t)(i * 100)) != (ssize_t)sizeof b;
  pthread_barrier_wait(&g_many_bar);
  return (void*)bad;
}
static int mode_manythreads(const char* file, int n) {
  g_many_fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (g_many_fd < 0) return 1;
  pthread_t* th = calloc((size_t)n, sizeof *th);
  pthread_barrier_init(&g_many_bar, NULL, (unsigned)n);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 << 10);
  for (long i = 0; i < n; ++i)
    if (pthread_create(&th[i], &a, many_main, (void*)i) != 0) return 1;
  long bad = 0;
  for (int i = 0; i < n; ++i) {
    void* r;
    pthread_join(th[i], &r);
    bad += (long)r;
  }
  free(th);
  return (close(g_many_fd) != 0) || bad != 0;
}

static int mode_fork(const char* dir) {
  char p[4096];
  pid_t pid = fork();
  if (pid == 0) {
    snprintf(p, sizeof p, "%s/child.dat", dir);
    exit(write_file(p, 10, 4096));
  }
  snprintf(p, sizeof p, "%s/parent.dat", dir);
  int r = write_file(p, 20, 4096);
  int st;
  waitpid(pid, &st, 0);
  return r || !WIFEXITED(st) || WEXITSTATUS(st);
}

static int mode_forkexec(const char* dir, const char* self) {
  char p[4096];
  snprintf(p, sizeof p, "%s/exec.dat", dir);
  char pre[4096];
  snprintf(pre, sizeof pre, "%s/preexec.dat", dir);
  pid_t pid = fork();
  if (pid == 0) {
    if (write_file(pre, 3, 4096)) _exit(1); /* buffered in the child, must be flushed before exec */
    execl(self, self, "write", p, "30", "4096", (char*)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  return !WIFEXITED(st) || WEXITSTATUS(st);
}

static int mode_closestd(const char* dir) {
  close(1);
  close(2);
  char p[4096];
  snprintf(p, sizeof p, "%s/after-close.dat", dir);
  return write_file(p, 16, 4096);
}

static void* exiting_thread(void* a) {
  const char* dir = a;
  char p[4096];
  snprintf(p, sizeof p, "%s/thread-exit.dat", dir);
  int r = write_file(p, 8, 4096);
  exit(r ? 1 : 0);
}

static int mode_threadexit(const char* dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s/main-thread.dat", dir);
  if (write_file(p, 4, 4096)) return 1;
  pthread_t th;
  pthread_create(&th, NULL, exiting_thread, (void*)dir);
  pthread_join(th, NULL);
  return 3; /* not reached: the thread exits the process */
}

struct turns_arg {
  int fd, t, n;
  long k, r;
  pthread_barrier_t* bar;
};
static void* turns_main(void* a) {
  struct turns_arg* s = a;
  char buf[4096];
  memset(buf, 't', sizeof buf);
  for (long i = 0; i < s->k; ++i)
    if (pwrite(s->fd, buf, 4096, (off_t)((i * s->n + s->t) * 4096L)) != 4096) return (void*)1;
  pthread_barrier_wait(s->bar);
  unsigned seed = (unsigned)s->t * 2654435761u + 1;
  for (long i = 0; i < s->r; ++i) {
    off_t o = (off_t)(rand_r(&seed) % (unsigned)(s->k * s->n)) * 4096;
    if (pread(s->fd, buf, 4096, o) != 4096) return (void*)1;
  }
  return 0;
}

static int mode_turns(const char* dir, int n, long k, long r) {
  char p[4096];
  snprintf(p, sizeof p, "%s/turns.dat", dir);
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || n < 1 || n > 64) return 1;
  pthread_t th[64];
  struct turns_arg args[64];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)n);
  for (int i = 0; i < n; ++i) {
    args[i] = (struct turns_arg){fd, i, n, k, r, &bar};
    pthread_create(&th[i], NULL, turns_main, &args[i]);
  }
  long bad = 0;
  for (int i = 0; i < n; ++i) {
    void* res;
    pthread_join(th[i], &res);
    bad += (long)res;
  }
  return bad != 0 || close(fd) != 0;
}

static int mode_interleave(const char* dir) {
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s/ia.dat", dir);
  snprintf(b, sizeof b, "%s/ib.dat", dir);
  int fa = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644), fb = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fa < 0 || fb < 0) return 1;
  for (int i = 0; i < 100; ++i) {
    if (write(fa, block, 4096) != 4096) return 1;
    if (write(fb, block, 8192) != 8192) return 1;
  }
  /* A gap: seek forward, then two more writes (a new run). */
  lseek(fa, 1 << 20, SEEK_CUR);
  for (int i = 0; i < 2; ++i)
    if (write(fa, block, 4096) != 4096) return 1;
  /* Beyond 4 GiB: a sparse positional write run. */
  for (int i = 0; i < 3; ++i)
    if (pwrite(fb, block, 4096, (5LL << 30) + i * 4096LL) != 4096) return 1;
  return close(fa) || close(fb);
}

static int mode_stdio(const char* dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s/stdio.dat", dir);
  FILE* f = fopen(p, "w");
  if (!f) return 1;
  for (int i = 0; i < 50; ++i)
    if (fwrite(block, 1, 1000, f) != 1000) return 1;
  if (fclose(f)) return 1;
  f = fopen(p, "r");
  if (!f) return 1;
  size_t got = 0, n;
  while ((n = fread(block, 1, 4000, f)) > 0) got += n;
  fclose(f);
  return got != 50000;
}

static int mode_meta(const char* dir) {
  char d[4096], a[4096], b[4096];
  snprintf(d, sizeof d, "%s/sub", dir);
  snprintf(a, sizeof a, "%s/sub/a", dir);
  snprintf(b, sizeof b, "%s/sub/b", dir);
  CHECK(mkdir(d, 0755) == 0);
  CHECK(write_file(a, 1, 10) == 0);
  struct stat st;
  for (int i = 0; i < 10; ++i) CHECK(stat(a, &st) == 0);
  CHECK(access(a, R_OK) == 0);
  CHECK(rename(a, b) == 0);
  CHECK(unlink(b) == 0);
  CHECK(rmdir(d) == 0);
  return 0;
}

static int mode_idle(const char* dir, int ms) {
  char p[4096];
  snprintf(p, sizeof p, "%s/before-idle.dat", dir);
  if (write_file(p, 32, 4096)) return 1;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return 0;
}

static void pause_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Block i of file k: bytes no tracer record could imitate. */
static void fill(char* b, int k, int i) {
  for (int j = 0; j < 4096; ++j) b[j] = (char)('A' + (k * 7 + i * 13 + j) % 26);
}

static int mode_closeall(const char* dir, const char* how) {
  char p[4096];
  /* With a short window, the pause makes the next op's sweep send: the
   * tracer's output descriptor (file or socket) is open before the close-all. */
  for (int i = 0; i < 3; ++i) {
    snprintf(p, sizeof p, "%s/before.%d", dir, i);
    CHECK(write_file(p, 4, 4096) == 0);
    pause_ms(15);
  }
  snprintf(p, sizeof p, "%s/kept.dat", dir);
  int kept = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(kept >= 3);
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  int top = rl.rlim_cur > 4096 ? 4096 : (int)rl.rlim_cur;
  if (!strcmp(how, "close_range")) {
    CHECK(close_range(3, ~0U, 0) == 0);
  } else if (!strcmp(how, "closefrom")) {
    errno = 4242;
    closefrom(3);
    CHECK(errno == 4242);
  } else if (!strcmp(how, "loop")) {
    int closed = 0;
    for (int fd = 3; fd < top; ++fd) {
      errno = 0;
      int r = close(fd);
      CHECK(r == 0 || errno == EBADF);
      closed += r == 0;
    }
    CHECK(closed >= 1); /* kept.dat at least */
  } else if (!strcmp(how, "dup2")) {
    snprintf(p, sizeof p, "%s/dup-src.dat", dir);
    int src = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(src >= 3);
    for (int fd = 3; fd < top - 16; ++fd)
      if (fd != src) CHECK(dup2(src, fd) == fd);
    for (int fd = 3; fd < top - 16; ++fd)
      if (fd != src) CHECK(close(fd) == 0);
    CHECK(close(src) == 0);
  } else {
    fprintf(stderr, "unknown HOW %s\n", how);
    return 2;
  }
  errno = 0;
  CHECK(fcntl(kept, F_GETFD) == -1 && errno == EBADF); /* the program's own descriptor is closed */
  /* Its files now take the lowest numbers, where the tracer's were before. */
  int fds[2];
  for (int k = 0; k < 2; ++k) {
    snprintf(p, sizeof p, "%s/data.%d", dir, k);
    fds[k] = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fds[k] >= 0);
  }
  char b[4096];
  for (int i = 0; i < 200; ++i) {
    for (int k = 0; k < 2; ++k) {
      fill(b, k, i);
      CHECK(write(fds[k], b, sizeof b) == (ssize_t)sizeof b);
    }
    if (i % 50 == 49) pause_ms(5); /* the tracer sends meanwhile */
  }
  for (int k = 0; k < 2; ++k) CHECK(close(fds[k]) == 0);
  for (int k = 0; k < 2; ++k) {
    snprintf(p, sizeof p, "%s/data.%d", dir, k);
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 200 * 4096);
    char got[4096];
    for (int i = 0; i < 200; ++i) {
      fill(b, k, i);
      CHECK(read(fd, got, sizeof got) == (ssize_t)sizeof got);
      CHECK(memcmp(got, b, sizeof b) == 0);
    }
    CHECK(close(fd) == 0);
  }
  return 0;
}

static int mode_die(const char* dir, const char* how) {
  char p[4096];
  snprintf(p, sizeof p, "%s/die.dat", dir);
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  for (int i = 0; i < 2048; ++i) CHECK(write(fd, block, 4096) == 4096);
  for (int i = 0; i < 100; ++i) CHECK(pwrite(fd, block, 4096, (off_t)((i * 7919) % 2048) * 4096 * 3) == 4096);
  for (int i = 0; i < 16; ++i) CHECK(pread(fd, block, 4096, (off_t)i * 4096) == 4096);
  char tmp[4096], ready[4096], pid[32];
  snprintf(tmp, sizeof tmp, "%s/ready.tmp", dir);
  snprintf(ready, sizeof ready, "%s/ready", dir);
  int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  int r = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(r >= 0 && write(r, pid, (size_t)n) == n && close(r) == 0);
  CHECK(rename(tmp, ready) == 0);
  if (!strcmp(how, "segv")) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    volatile int* null = NULL;
    *null = 1;
  }
  if (!strcmp(how, "_exit")) _exit(3);
  for (;;) pause();
}

static int g_handler_fd = -1;
static volatile sig_atomic_t g_handler_writes = 0;
static void on_alarm(int sig) {
  (void)sig;
  int e = errno;  /* a handler keeps the interrupted code's errno */
  if (write(g_handler_fd, "h", 1) == 1) g_handler_writes = g_handler_writes + 1;
  errno = e;
}

/* A signal handler's traced I/O while the main thread is inside a traced
 * call: the tracer must neither wait on its own thread's state (a hang) nor
 * corrupt it. */
static int mode_signalio(const char* dir, int n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/handler.dat", dir);
  g_handler_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  snprintf(path, sizeof path, "%s/main.dat", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || g_handler_fd < 0) return 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 20}, {0, 20}};
  setitimer(ITIMER_REAL, &it, NULL);
  for (int i = 0; i < n; ++i)
    if (pwrite(fd, block, 4096, (off_t)(i % 1024) * 4096 * 2) != 4096) return 1;  /* every op its own place */
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  close(fd);
  close(g_handler_fd);
  printf("handler writes %d\n", (int)g_handler_writes);
  return 0;
}

/* Two aio_writes of 4 KiB to DIR/aio.dat, both waited for, neither collected. */
static int aio_two_writes(const char* dir, struct aiocb cb[2]) {
  char path[4096];
  snprintf(path, sizeof path, "%s/aio.dat", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  memset(cb, 0, 2 * sizeof cb[0]);
  for (int i = 0; i < 2; ++i) {
    cb[i].aio_fildes = fd;
    cb[i].aio_buf = block;
    cb[i].aio_nbytes = 4096;
    cb[i].aio_offset = (off_t)i * 4096;
    if (aio_write(&cb[i]) != 0) return -1;
  }
  for (int i = 0; i < 2; ++i) {
    const struct aiocb* l[1] = {&cb[i]};
    while (aio_error(&cb[i]) == EINPROGRESS) aio_suspend(l, 1, NULL);
  }
  return 0;
}

static int mode_aionoreturn(const char* dir) {
  static struct aiocb cb[2];
  if (aio_two_writes(dir, cb) != 0) return 1;
  if (aio_return(&cb[0]) != 4096) return 1;
  return 0;  /* cb[1] never collected */
}

static int mode_aiokill(const char* dir) {
  static struct aiocb cb[2];
  if (aio_two_writes(dir, cb) != 0) return 1;
  kill(getpid(), SIGKILL);
  return 1;
}

/* An exec that fails (no such program), then more I/O a while later. */
static int mode_execfail(const char* dir, int sleep_ms) {
  char* const args[] = {(char*)"iosonar-no-such-program", NULL};
  char before[4096];
  snprintf(before, sizeof before, "%s/before.dat", dir);
  if (write_file(before, 1, 4096) != 0) return 2;
  errno = 0;
  if (execv("/nonexistent-iosonar/iosonar-no-such-program", args) != -1 || errno != ENOENT) return 3;
  usleep((useconds_t)sleep_ms * 1000);
  char path[4096];
  snprintf(path, sizeof path, "%s/after.dat", dir);
  return write_file(path, 2, 4096) == 0 ? 0 : 4;
}

int main(int argc, char** argv) {
  memset(block, 'x', sizeof block);
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODE DIR [...]\n", argv[0]);
    return 2;
  }
  const char* m = argv[1];
  if (!strcmp(m, "errno")) return mode_errno(argv[2]);
  if (!strcmp(m, "errnokept")) return mode_errnokept(argv[2], argc > 3 ? atol(argv[3]) : 20000);
  if (!strcmp(m, "aiokill")) return mode_aiokill(argv[2]);
  if (!strcmp(m, "execfail")) return mode_execfail(argv[2], argc > 3 ? atoi(argv[3]) : 600);
  if (!strcmp(m, "turns") && argc > 5) return mode_turns(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]));
  if (!strcmp(m, "threads")) return mode_threads(argv[2], argc > 3 ? atoi(argv[3]) : 4);
  if (!strcmp(m, "manythreads")) return mode_manythreads(argv[2], argc > 3 ? atoi(argv[3]) : 600);
  if (!strcmp(m, "fork")) return mode_fork(argv[2]);
  if (!strcmp(m, "forkexec")) return mode_forkexec(argv[2], argc > 3 ? argv[3] : argv[0]);
  if (!strcmp(m, "write") && argc > 4) return write_file(argv[2], atoi(argv[3]), (size_t)atol(argv[4]));
  if (!strcmp(m, "closestd")) return mode_closestd(argv[2]);
  if (!strcmp(m, "threadexit")) return mode_threadexit(argv[2]);
  if (!strcmp(m, "interleave")) return mode_interleave(argv[2]);
  if (!strcmp(m, "stdio")) return mode_stdio(argv[2]);
  if (!strcmp(m, "meta")) return mode_meta(argv[2]);
  if (!strcmp(m, "closeall") && argc > 3) return mode_closeall(argv[2], argv[3]);
  if (!strcmp(m, "die") && argc > 3) return mode_die(argv[2], argv[3]);
  if (!strcmp(m, "aionoreturn")) return mode_aionoreturn(argv[2]);
  if (!strcmp(m, "signalio")) return mode_signalio(argv[2], argc > 3 ? atoi(argv[3]) : 200000);
  if (!strcmp(m, "idle")) return mode_idle(argv[2], argc > 3 ? atoi(argv[3]) : 1000);
  fprintf(stderr, "unknown mode %s\n", m);
  return 2;
}
