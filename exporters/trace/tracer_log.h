// The tracer's own log: the preloaded libraries never write to the program's
// stderr (it is the job's); what they have to say goes to $IOSONAR_LOG, else
// to tracer.log in the spool directory ($IOSONAR_SPOOL_DIR, default
// /tmp/iosonar-spool-UID, made 0700), a line each, the file 0600. Raw system
// calls only: usable anywhere in the tracer, before and after its set-up.
#pragma once
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace iosonar::trace {

// Appends "<pid> <a><b><c>\n" to the log; errno is kept. Returns false if
// the log could not be written (the message is then lost, never shown).
inline bool TracerLog(const char* a, const char* b = "", const char* c = "") {
  const int saved = errno;
  char path[600];
  const char* env = getenv("IOSONAR_LOG");
  if (env && *env) {
    snprintf(path, sizeof path, "%s", env);
  } else {
    const char* sd = getenv("IOSONAR_SPOOL_DIR");
    char dir[512];
    if (sd && *sd) snprintf(dir, sizeof dir, "%s", sd);
    else snprintf(dir, sizeof dir, "/tmp/iosonar-spool-%u", static_cast<unsigned>(getuid()));
    syscall(SYS_mkdirat, AT_FDCWD, dir, 0700);
    snprintf(path, sizeof path, "%s/tracer.log", dir);
  }
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  bool ok = false;
  if (fd >= 0) {
    char line[1024];
    const int n = snprintf(line, sizeof line, "%d %s%s%s\n", static_cast<int>(syscall(SYS_getpid)), a, b, c);
    const size_t len = n < 0 ? 0 : static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1;
    ok = syscall(SYS_write, fd, line, len) == static_cast<long>(len);
    syscall(SYS_close, fd);
  }
  errno = saved;
  return ok;
}

}  // namespace iosonar::trace
