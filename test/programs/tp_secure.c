/* A program for the SPANK plugin's test (test/integration/test_spank.cc),
 * built twice: dynamic (the test makes a copy setuid to another user) and
 * static. It writes ARG's bytes to the file ARG names and prints what the
 * loader did: whether it ran in secure mode (AT_SECURE: setuid), whether the
 * tracer is mapped into it, and its effective uid. A program the plugin must
 * leave unharmed: it exits 0 having written its file. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: tp_secure FILE\n");
    return 2;
  }
  int traced = 0;
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps) {
    char line[4096];
    while (fgets(line, sizeof line, maps))
      if (strstr(line, "libiosonar-trace.so")) traced = 1;
    fclose(maps);
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  const char msg[] = "written by tp_secure\n";
  if (write(fd, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1) || close(fd) != 0) {
    perror("write");
    return 1;
  }
  printf("secure=%lu traced=%d euid=%u ok\n", getauxval(AT_SECURE), traced, (unsigned)geteuid());
  return 0;
}
