/* Access patterns for the compression and overhead benchmarks.
 *   tp_pattern seq-write FILE BS COUNT
 *   tp_pattern seq-read FILE BS COUNT
 *   tp_pattern rand-write FILE BS COUNT      (random aligned offsets in BS*COUNT bytes)
 *   tp_pattern strided FILE BS COUNT NPROC   (NPROC processes, rank r writes blocks r, r+N, ...)
 *   tp_pattern pwrite-loop FILE BS COUNT     (tight sequential pwrite loop, wrapping every 16384 blocks:
 *                                             per-call overhead when runs compress)
 *   tp_pattern pwrite-same FILE BS COUNT     (pwrite loop at offset 0: every call is its own record)
 *   tp_pattern pwrite-rand FILE BS COUNT     (pwrite at random even blocks of 16384: never adjacent)
 *   tp_pattern pwrite-sizes FILE BS COUNT    (pwrite of 1 + i % BS bytes at random even blocks: every call its own
 *                                             run, BS request sizes: many aggregate keys at once)
 *   tp_pattern pread-rand FILE BS COUNT      (pread, the same offsets, of a file made 2 * 16384 blocks long: fio randread)
 *   tp_pattern seq-then-rand-read FILE BS COUNT  (the same file: COUNT/2 read()s from offset 0, then preads as pread-rand)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s MODE FILE BS COUNT [NPROC]\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  const char* path = argv[2];
  size_t bs = (size_t)atol(argv[3]);
  long count = atol(argv[4]);
  char* buf = malloc(bs);
  memset(buf, 'p', bs);
  if (!strcmp(mode, "strided")) {
    int n = argc > 5 ? atoi(argv[5]) : 4;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    close(fd);
    for (int r = 0; r < n; ++r) {
      if (fork() == 0) {
        int f = open(path, O_WRONLY);
        for (long i = 0; i < count; ++i)
          if (pwrite(f, buf, bs, (off_t)((i * n + r) * (long)bs)) != (ssize_t)bs) _exit(1);
        close(f);
        _exit(0);
      }
    }
    int bad = 0, st;
    while (wait(&st) > 0) bad += !WIFEXITED(st) || WEXITSTATUS(st);
    return bad != 0;
  }
  int write_mode = strstr(mode, "write") != NULL;
  int rand_read = !strcmp(mode, "pread-rand") || !strcmp(mode, "seq-then-rand-read");
  int fd = open(path, write_mode ? (O_WRONLY | O_CREAT) : rand_read ? (O_RDWR | O_CREAT) : O_RDONLY, 0644);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  /* pread-rand reads whole blocks anywhere in 2 * 16384 blocks (as fio's randread: every read full). */
  if (rand_read && ftruncate(fd, (off_t)16384 * 2 * (off_t)bs) != 0) {
    perror("ftruncate");
    return 1;
  }
  unsigned long long x = 88172645463325252ULL;
  for (long i = 0; i < count; ++i) {
    ssize_t r;
    if (!strcmp(mode, "seq-write")) r = write(fd, buf, bs);
    else if (!strcmp(mode, "seq-read")) r = read(fd, buf, bs);
    else if (!strcmp(mode, "pwrite-loop")) r = pwrite(fd, buf, bs, (off_t)((i % 16384) * (long)bs));
    else if (!strcmp(mode, "pwrite-same")) r = pwrite(fd, buf, bs, 0);
    else if (!strcmp(mode, "pwrite-rand")) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      r = pwrite(fd, buf, bs, (off_t)((x % 16384) * 2 * bs));
    }
    else if (!strcmp(mode, "pwrite-sizes")) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      r = pwrite(fd, buf, 1 + (size_t)i % bs, (off_t)((x % 16384) * 2 * bs));
    }
    else if (!strcmp(mode, "seq-then-rand-read") && i < count / 2) r = read(fd, buf, bs);
    else if (rand_read) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      r = pread(fd, buf, bs, (off_t)((x % 16384) * 2 * bs));
    }
    else if (!strcmp(mode, "rand-write")) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      r = pwrite(fd, buf, bs, (off_t)((x % (unsigned long long)count) * bs));
    } else {
      fprintf(stderr, "unknown mode %s\n", mode);
      return 2;
    }
    if (r < 0) {
      perror("io");
      return 1;
    }
  }
  return close(fd) != 0;
}
