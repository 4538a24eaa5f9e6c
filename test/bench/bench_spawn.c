/* Spawns a program N times, one after another (posix_spawn, then waitpid),
 * and prints the wall time per process in microseconds: the per-process cost
 * of the tracer is this under the tracer less this untraced (bench_spawn.sh).
 *   bench_spawn N PROGRAM [ARGS...]
 * Exits non-zero if any run of PROGRAM fails. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
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
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; ++i) {
    pid_t p;
    if (posix_spawn(&p, argv[2], NULL, NULL, argv + 2, environ) != 0) return 1;
    int st;
    if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double us = ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / n;
  printf("bench_spawn_us %.1f\n", us);
  return 0;
}
