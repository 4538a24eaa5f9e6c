/* Fork races for the tracer (issue 38): a multithreaded process forks while
 * its other threads do their first traced I/O (the ring's set-up), flush, or
 * record; the children do I/O of their own and exit. No child may hang.
 *
 *   tp_forkrace DIR TRIALS [THREADS] [TIMEOUT_MS] [SEED]
 *
 * The driver (this process) does no traced I/O before its trials, so each
 * trial starts as a fork child whose tracer has not yet made its ring. A trial:
 * THREADS threads start together and each writes and reads its own file
 * (their first I/O makes the ring); the main thread forks twice at random
 * moments (0-3 ms) and every other thread forks once at a random point of its
 * loop. Every fork child writes, reads back and checks a file of its own, then
 * leaves by exit() or _exit(). A trial that has not ended within TIMEOUT_MS
 * (default 10000) is a hang: its process group is killed and counted.
 * Prints "trials T forks F hangs H failures X" and exits 0 only when H and X
 * are 0. Nothing here sleeps in place of a readiness check: the timeout is
 * the failure condition, waited for with a pidfd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char* g_dir;
static atomic_int g_go;
static char g_block[4096];

static long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}
static void spin_us(long us) {
  long end = now_us() + us;
  while (now_us() < end) {
  }
}

/* Writes n blocks to path, reads them back, checks them; 0 when right. */
static int file_io(const char* path, int n) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 1;
  for (int i = 0; i < n; ++i)
    if (write(fd, g_block, sizeof g_block) != (ssize_t)sizeof g_block) return 2;
  char back[sizeof g_block];
  for (int i = 0; i < n; ++i)
    if (pread(fd, back, sizeof back, (off_t)i * (off_t)sizeof back) != (ssize_t)sizeof back ||
        memcmp(back, g_block, sizeof back) != 0)
      return 3;
  if (close(fd) != 0) return 4;
  return unlink(path) != 0 ? 5 : 0;
}

/* A fork child: I/O of its own, then exit() or _exit(). */
static void child_body(unsigned seed) {
  char path[512];
  snprintf(path, sizeof path, "%s/c%d.dat", g_dir, (int)getpid());
  int rc = file_io(path, 1 + (int)(seed % 4));
  if (seed & 1) exit(rc ? 10 + rc : 0);
  _exit(rc ? 10 + rc : 0);
}

/* Forks; the parent waits for the child and returns nonzero if it failed. */
static int fork_and_wait(unsigned seed) {
  pid_t p = fork();
  if (p < 0) return 1;
  if (p == 0) child_body(seed);
  int st = 0;
  while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
  }
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

struct worker {
  pthread_t th;
  int index;
  unsigned seed;
  int forked, failed;
};

static void* worker_main(void* p) {
  struct worker* w = p;
  while (!atomic_load(&g_go)) {
  }
  char path[512];
  snprintf(path, sizeof path, "%s/w%d-%d.dat", g_dir, (int)getpid(), w->index);
  int fork_at = (int)(rand_r(&w->seed) % 8);  /* 0: before the first I/O */
  for (int k = 0; k < 8; ++k) {
    if (k == fork_at && (w->seed & 2)) {
      w->forked = 1;
      w->failed |= fork_and_wait(rand_r(&w->seed));
    }
    if (file_io(path, 1 + k % 3) != 0) w->failed = 1;
  }
  return NULL;
}

static int trial(int threads, unsigned seed) {
  setpgid(0, 0);
  struct worker ws[64];
  if (threads > 64) threads = 64;
  atomic_store(&g_go, 0);
  for (int i = 0; i < threads; ++i) {
    ws[i].index = i;
    ws[i].seed = seed * 131u + (unsigned)i;
    ws[i].forked = ws[i].failed = 0;
    if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]) != 0) return 20;
  }
  atomic_store(&g_go, 1);
  int failed = 0, forks = 0;
  for (int f = 0; f < 2; ++f) {
    spin_us(rand_r(&seed) % 3000);
    failed |= fork_and_wait(rand_r(&seed));
    ++forks;
  }
  for (int i = 0; i < threads; ++i) {
    pthread_join(ws[i].th, NULL);
    failed |= ws[i].failed;
    forks += ws[i].forked;
  }
  /* The exit status carries the forks made (below 100) or a failure. */
  return failed ? 100 : forks;
}

/* The driver's messages: a raw write (stdio is traced, and tracing any call
 * of the driver would make its ring, which every trial would then inherit). */
static void say(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) syscall(SYS_write, 2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DIR TRIALS [THREADS] [TIMEOUT_MS] [SEED]\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  int trials = atoi(argv[2]);
  int threads = argc > 3 ? atoi(argv[3]) : 6;
  int timeout_ms = argc > 4 ? atoi(argv[4]) : 10000;
  unsigned seed = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 10) : (unsigned)time(NULL);
  memset(g_block, 'f', sizeof g_block);
  long forks = 0, hangs = 0, failures = 0;
  for (int t = 0; t < trials; ++t) {
    pid_t p = fork();
    if (p < 0) {
      ++failures;
      continue;
    }
    if (p == 0) _exit(trial(threads, seed + (unsigned)t * 7919u));
    setpgid(p, p);  /* as the child does: no race on who sets it first */
    int pfd = (int)syscall(SYS_pidfd_open, p, 0);
    int ended = 1;
    if (pfd >= 0) {
      struct pollfd pp = {.fd = pfd, .events = POLLIN};
      int r;
      while ((r = poll(&pp, 1, timeout_ms)) < 0 && errno == EINTR) {
      }
      ended = r > 0;
      syscall(SYS_close, pfd);  /* close() is traced: it would make the driver's ring */
    }
    if (!ended) {
      ++hangs;
      say("tp_forkrace: trial %d (pid %d, seed %u) hung for %d ms; killed\n", t, (int)p, seed + (unsigned)t * 7919u, timeout_ms);
      kill(-p, SIGKILL);
      kill(p, SIGKILL);
    }
    int st = 0;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    if (ended) {
      if (WIFEXITED(st) && WEXITSTATUS(st) < 100) {
        forks += WEXITSTATUS(st);
      } else {
        ++failures;
        say("tp_forkrace: trial %d (seed %u) failed: status 0x%x\n", t, seed + (unsigned)t * 7919u, st);
      }
    }
  }
  printf("trials %d forks %ld hangs %ld failures %ld\n", trials, forks, hangs, failures);
  return hangs || failures ? 1 : 0;
}
