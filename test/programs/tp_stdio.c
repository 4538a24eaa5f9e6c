/* The rest of stdio, for the tracer's stdio test: every function on one file,
 * DIR/stdio2.dat, with bytes and calls known in advance (the layout below),
 * then mmap of the same file. Prints what it read, the errno of failing calls
 * and how often a successful call changed errno, so a traced run's output can
 * be compared byte for byte with an untraced one.
 *   tp_stdio DIR   (stdin: two numbers, read first)
 * Built twice: plain, and with _FORTIFY_SOURCE=2 (tp_stdio_fortify), where
 * fprintf/vfprintf become __fprintf_chk/__vfprintf_chk, as in distributions'
 * packages.
 *
 * Writes (33 calls, 360 bytes, offsets in brackets):
 *   fprintf "line-%d\n" x10 [0,70)        vfprintf "v%03d\n" x5 [70,95)
 *   fputs "abcdefgh" x4 [95,127)          fputc x3, putc x3 [127,133)
 *   fwrite_unlocked 100 B x2 [133,333)    fputc_unlocked x2, putc_unlocked x2 [333,337)
 *   fputs_unlocked "0123456789" [337,347) fprintf " 12 345 6789\n" [347,360)
 * Reads (35 calls, 143 bytes), after fseeko(0):
 *   fgets x10 (70 B)   fgetc x5, getc x5, fgetc_unlocked x5, getc_unlocked x5 (20 B)
 *   fgets_unlocked (5 B)   fread_unlocked 32 B
 *   fseeko(347) fscanf "%d %d %d" (12 B)   fseeko(70) vfscanf "v%d" (4 B)
 *   fseeko(0, SEEK_END) fgetc at the end (0 B)
 * Seeks: the 4 fseeko above and a rewind (5).
 * Failing: fputc and fputs on a stream opened "r" (2 calls, EBADF).
 * mmap: 360 B PROT_READ MAP_PRIVATE, 4096 B PROT_READ|PROT_WRITE MAP_SHARED,
 * and an anonymous mapping (not a file: not recorded).
 * The _unlocked and character functions are called through pointers: glibc's
 * headers inline some of them in optimised programs, which then reach no
 * wrapper at all. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int errno_changed = 0;
#define KEEP(call)                   \
  do {                               \
    errno = 77;                      \
    call;                            \
    if (errno != 77) ++errno_changed; \
  } while (0)

static int vprint(FILE* f, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}
static int vscan(FILE* f, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfscanf(f, fmt, ap);
  va_end(ap);
  return r;
}

static size_t (*volatile p_fwrite_unlocked)(const void*, size_t, size_t, FILE*) = fwrite_unlocked;
static size_t (*volatile p_fread_unlocked)(void*, size_t, size_t, FILE*) = fread_unlocked;
static int (*volatile p_fputc_unlocked)(int, FILE*) = fputc_unlocked;
static int (*volatile p_putc_unlocked)(int, FILE*) = putc_unlocked;
static int (*volatile p_fputs_unlocked)(const char*, FILE*) = fputs_unlocked;
static int (*volatile p_fgetc_unlocked)(FILE*) = fgetc_unlocked;
static int (*volatile p_getc_unlocked)(FILE*) = getc_unlocked;
static char* (*volatile p_fgets_unlocked)(char*, int, FILE*) = fgets_unlocked;
static int (*volatile p_fgetc)(FILE*) = fgetc;
static int (*volatile p_getc)(FILE*) = getc;
static int (*volatile p_fputc)(int, FILE*) = fputc;
static int (*volatile p_putc)(int, FILE*) = putc;

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tp_stdio DIR\n");
    return 2;
  }
  /* First through the tracer in this thread, on a stream it does not trace
   * (stdin, a pipe: "12 34"): errno stays as the program left it. */
  int s1 = 0, s2 = 0, sk = 0;
  errno = 77;
  sk = fscanf(stdin, "%d %d", &s1, &s2);
  if (errno != 77) ++errno_changed;
  printf("stdin: %d: %d %d\n", sk, s1, s2);
  char path[4096];
  snprintf(path, sizeof path, "%s/stdio2.dat", argv[1]);
  FILE* f = fopen(path, "w+");
  if (!f) return 1;
  char buf[256];
  memset(buf, 'B', sizeof buf);
  for (int i = 0; i < 10; ++i) KEEP(fprintf(f, "line-%d\n", i));
  for (int i = 0; i < 5; ++i) KEEP(vprint(f, "v%03d\n", i));
  for (int i = 0; i < 4; ++i) KEEP(fputs("abcdefgh", f));
  for (int i = 0; i < 3; ++i) KEEP(p_fputc('x', f));
  for (int i = 0; i < 3; ++i) KEEP(p_putc('y', f));
  for (int i = 0; i < 2; ++i) KEEP(p_fwrite_unlocked(buf, 1, 100, f));
  for (int i = 0; i < 2; ++i) KEEP(p_fputc_unlocked('z', f));
  for (int i = 0; i < 2; ++i) KEEP(p_putc_unlocked('w', f));
  KEEP(p_fputs_unlocked("0123456789", f));
  KEEP(fprintf(f, " %d %d %d\n", 12, 345, 6789));
  printf("written to %lld\n", (long long)ftello(f));

  KEEP(fseeko(f, 0, SEEK_SET));
  char line[64];
  for (int i = 0; i < 10; ++i) {
    char* got = NULL;
    KEEP(got = fgets(line, sizeof line, f));
    if (!got) return 1;
    fputs(line, stdout);
  }
  char c[21];
  for (int i = 0; i < 5; ++i) KEEP(c[i] = (char)p_fgetc(f));
  for (int i = 5; i < 10; ++i) KEEP(c[i] = (char)p_getc(f));
  for (int i = 10; i < 15; ++i) KEEP(c[i] = (char)p_fgetc_unlocked(f));
  for (int i = 15; i < 20; ++i) KEEP(c[i] = (char)p_getc_unlocked(f));
  c[20] = '\0';
  printf("chars [%s]\n", c);
  KEEP(p_fgets_unlocked(line, sizeof line, f));
  printf("unlocked line [%s]\n", line);
  size_t n = 0;
  KEEP(n = p_fread_unlocked(buf, 1, 32, f));
  printf("fread_unlocked %zu [%.32s]\n", n, buf);
  int a = 0, b = 0, d = 0, x = 0, k = 0;
  KEEP(fseeko(f, 347, SEEK_SET));
  KEEP(k = fscanf(f, "%d %d %d", &a, &b, &d));
  printf("fscanf %d: %d %d %d at %lld\n", k, a, b, d, (long long)ftello(f));
  KEEP(fseeko(f, 70, SEEK_SET));
  KEEP(k = vscan(f, "v%d", &x));
  printf("vfscanf %d: %d at %lld\n", k, x, (long long)ftello(f));
  KEEP(fseeko(f, 0, SEEK_END));
  int e = fgetc(f);
  printf("at the end: %d, eof %d\n", e, feof(f) != 0);
  rewind(f);
  if (fclose(f) != 0) return 1;

  /* Failing calls keep their errno. */
  FILE* g = fopen(path, "r");
  if (!g) return 1;
  errno = 0;
  int r1 = fputc('q', g);
  int e1 = errno;
  errno = 0;
  int r2 = fputs("abc", g);
  int e2 = errno;
  printf("fputc on a read stream: %d errno %d; fputs: %d errno %d\n", r1, e1, r2, e2);
  fclose(g);

  /* mmap of the file (twice), and anonymous memory. */
  int fd = open(path, O_RDWR);
  if (fd < 0) return 1;
  errno = 77;
  char* m1 = mmap(NULL, 360, PROT_READ, MAP_PRIVATE, fd, 0);
  if (errno != 77) ++errno_changed;
  char* m2 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  char* m3 = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m1 == MAP_FAILED || m2 == MAP_FAILED || m3 == MAP_FAILED) return 1;
  printf("mapped [%.6s] [%.6s]\n", m1, m2 + 347);
  munmap(m1, 360);
  munmap(m2, 4096);
  munmap(m3, 8192);
  close(fd);
  printf("errno changed by %d successful calls\n", errno_changed);
  return 0;
}
