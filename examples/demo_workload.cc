// The bundled demo workload for `iosonar run`: a small stand-in for an HPC
// job with the I/O shapes users meet. NPROC ranks (forked processes):
//   1. rank 0 writes a shared input file (1-1 ... folded into the job's writes);
//   2. every rank reads its slice of the shared input (N-1 reads, 256 KiB preads);
//   3. every rank writes its own checkpoint file (N-N writes, 1 MiB writes, fsync);
//   4. every rank stats and rewrites a few small files (metadata load);
// Usage: iosonar-demo-workload [DIR] [NPROC] [MIB_PER_RANK]
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool WriteFull(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    buf += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int Rank(const std::string& dir, int rank, int nproc, size_t mib) {
  const size_t kMiB = 1 << 20;
  std::vector<char> buf(kMiB, static_cast<char>('a' + rank));
  // 2. N-1 reads of the shared input.
  std::string input = dir + "/input.dat";
  int fd = open(input.c_str(), O_RDONLY);
  if (fd < 0) return 1;
  size_t slice = mib * kMiB / static_cast<size_t>(nproc);
  const size_t kRead = 256 << 10;
  for (size_t off = static_cast<size_t>(rank) * slice; off < static_cast<size_t>(rank + 1) * slice; off += kRead)
    if (pread(fd, buf.data(), kRead, static_cast<off_t>(off)) < 0) return 1;
  close(fd);
  // 3. N-N checkpoint writes.
  std::string ckpt = dir + "/ckpt." + std::to_string(rank);
  fd = open(ckpt.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 1;
  for (size_t i = 0; i < mib; ++i)
    if (!WriteFull(fd, buf.data(), kMiB)) return 1;
  fsync(fd);
  close(fd);
  // 4. Small-file metadata traffic.
  for (int i = 0; i < 20; ++i) {
    std::string small = dir + "/log." + std::to_string(rank) + "." + std::to_string(i % 4);
    FILE* f = fopen(small.c_str(), "w");
    if (!f) return 1;
    fprintf(f, "rank %d step %d\n", rank, i);
    fclose(f);
    struct stat st;
    stat(small.c_str(), &st);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && argv[1][0] == '-') {
    std::printf("usage: %s [DIR] [NPROC] [MIB_PER_RANK]\n  a 4-rank demo job: N-1 reads of a shared input, N-N checkpoint writes, small-file metadata\n", argv[0]);
    return argv[1] == std::string("-h") || argv[1] == std::string("--help") ? 0 : 2;
  }
  std::string dir = argc > 1 ? argv[1] : "iosonar-demo-data";
  int nproc = argc > 2 ? std::atoi(argv[2]) : 4;
  size_t mib = argc > 3 ? static_cast<size_t>(std::atoll(argv[3])) : 64;
  if (nproc < 1 || mib < 1) {
    std::fprintf(stderr, "usage: %s [DIR] [NPROC>=1] [MIB_PER_RANK>=1]\n", argv[0]);
    return 2;
  }
  mkdir(dir.c_str(), 0755);
  // 1. The input file, written by rank 0 alone.
  std::string input = dir + "/input.dat";
  int fd = open(input.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "demo: cannot create %s: %s\n", input.c_str(), std::strerror(errno));
    return 1;
  }
  std::vector<char> buf(1 << 20, 'i');
  for (size_t i = 0; i < mib; ++i)
    if (!WriteFull(fd, buf.data(), buf.size())) return 1;
  close(fd);
  std::vector<pid_t> kids;
  for (int r = 0; r < nproc; ++r) {
    pid_t p = fork();
    if (p == 0) _exit(Rank(dir, r, nproc, mib));
    kids.push_back(p);
  }
  int failed = 0;
  for (pid_t p : kids) {
    int st = 0;
    waitpid(p, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  std::printf("demo workload: %d ranks, %zu MiB each, in %s (%d failed)\n", nproc, mib, dir.c_str(), failed);
  return failed ? 1 : 0;
}
