// Per-user directories in shared places (/dev/shm, /tmp) that another local
// user cannot pre-empt. DIR is used only if it is a directory of ours that
// no one else can use (not a link; one of ours with another mode is set to
// 0700); when another user took the name first (made it, planted a link or
// a file), a private DIR.SUFFIX of ours beside it is used instead: the one
// already there if any (so what earlier processes left in it is found
// again), else one made with a random suffix nobody can have made before us.
// Raw system calls, no allocation: usable inside the tracer.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace iosonar {

// Returns the open directory (O_DIRECTORY, close-on-exec) or -1; out gets
// the path used, *fell_back whether it is a DIR.SUFFIX. With fallback false
// only DIR itself is tried.
int OpenPrivateDir(const char* dir, char* out, size_t cap, bool* fell_back, bool fallback = true);

// One entry of the getdents64 system call's buffer (no libc DIR: its 32 KiB
// allocation is not for the tracer); d_reclen bytes long.
struct Dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// DIR.SUFFIX's suffix: 6 to 32 ASCII letters or digits.
bool IsPrivateDirSuffix(const char* s);

}  // namespace iosonar
