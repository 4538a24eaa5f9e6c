/* Spawns a program N times, one after another (posix_spawn, then waitpid),
 * and prints the wall time and the CPU time (user + system, of the children:
 * getrusage RUSAGE_CHILDREN) per process in microseconds: the per-process
 * cost of the tracer is this under the tracer less this untraced
 * (bench_spawn.sh).
 *   bench_spawn N PROGRAM [ARGS...]
 * Exits non-zero if any run of PROGRAM fails. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s N PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  struct timespec a, b;
  struct rusage ra, rb;
  getrusage(RUSAGE_CHILDREN, &ra);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; ++i) {
    pid_t p;
    if (posix_spawn(&p, argv[2], NULL, NULL, argv + 2, environ) != 0) return 1;
    int st;
    if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  getrusage(RUSAGE_CHILDREN, &rb);
  double us = ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / n;
#define TV_US(t) ((double)(t).tv_sec * 1e6 + (double)(t).tv_usec)
  double cpu = (TV_US(rb.ru_utime) + TV_US(rb.ru_stime) - TV_US(ra.ru_utime) - TV_US(ra.ru_stime)) / n;
  printf("bench_spawn_us %.1f\n", us);
  printf("bench_spawn_cpu_us %.1f\n", cpu);
  return 0;
}
