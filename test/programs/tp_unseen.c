// What the tracer does not see (docs/tracer-coverage.md), made to happen:
// tp_unseen MODE FILE writes 10000 bytes to FILE and reads them back
//   plain: with write()/read() (seen; unseen when the binary is static, or
//          setuid and started by another user: the loader ignores LD_PRELOAD)
//   raw:   with syscall(SYS_write)/syscall(SYS_read)
//   mmap:  through a shared mapping (the mmap is seen, not its bytes)
// and prints "wrote N read N" with the kernel's counts.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* mode = argv[1];
  static char buf[10000];
  memset(buf, 'u', sizeof buf);
  int fd = open(argv[2], O_CREAT | O_TRUNC | O_RDWR, 0644);
  if (fd < 0) return 3;
  long w = 0, r = 0;
  if (strcmp(mode, "plain") == 0) {
    w = write(fd, buf, sizeof buf);
    r = pread(fd, buf, sizeof buf, 0);
  } else if (strcmp(mode, "raw") == 0) {
    w = syscall(SYS_write, fd, buf, sizeof buf);
    r = syscall(SYS_pread64, fd, buf, sizeof buf, 0);
  } else if (strcmp(mode, "mmap") == 0) {
    if (ftruncate(fd, sizeof buf) != 0) return 4;
    char* m = mmap(NULL, sizeof buf, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return 5;
    memcpy(m, buf, sizeof buf);
    w = sizeof buf;
    for (size_t i = 0; i < sizeof buf; ++i) r += m[i] == 'u';
    munmap(m, sizeof buf);
  } else {
    return 2;
  }
  close(fd);
  printf("wrote %ld read %ld\n", w, r);
  return 0;
}
