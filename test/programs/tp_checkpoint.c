/* A checkpointing program for the I/O phase tests: writes K checkpoints of
 * BYTES bytes each (1 MiB writes, then fsync) with PAUSE_MS of computing
 * (sleeping) between them, and prints the wall-clock start and end of each
 * checkpoint in epoch nanoseconds, one "ckpt I START_NS END_NS" line each.
 *   tp_checkpoint DIR K BYTES PAUSE_MS
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: tp_checkpoint DIR K BYTES PAUSE_MS\n");
    return 2;
  }
  const char* dir = argv[1];
  int k = atoi(argv[2]);
  long long bytes = atoll(argv[3]);
  long pause_ms = atol(argv[4]);
  enum { kChunk = 1 << 20 };
  char* buf = malloc(kChunk);
  if (!buf) return 1;
  memset(buf, 'c', kChunk);
  for (int i = 0; i < k; ++i) {
    if (i > 0) {
      struct timespec p = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
      nanosleep(&p, NULL);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt.%d", dir, i);
    long long t0 = now_ns();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      perror(path);
      return 1;
    }
    for (long long done = 0; done < bytes;) {
      size_t n = bytes - done < kChunk ? (size_t)(bytes - done) : kChunk;
      ssize_t w = write(fd, buf, n);
      if (w <= 0) {
        perror("write");
        return 1;
      }
      done += w;
    }
    fsync(fd);
    close(fd);
    long long t1 = now_ns();
    printf("ckpt %d %lld %lld\n", i, t0, t1);
  }
  free(buf);
  return 0;
}
