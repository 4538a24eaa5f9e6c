// The I/O paths beyond read/write (test/integration/test_tracer_paths.cc):
// copy_file_range, sendfile, splice (to and from pipes), the fortified reads
// (__read_chk, __pread_chk: built with _FORTIFY_SOURCE=2, see CMake),
// preadv2/pwritev2, getline/getdelim, dprintf/vdprintf, freopen of stderr,
// fdopen of a descriptor already read from, libaio (through libaio.so.1,
// declared here: no libaio header needed) and io_uring through syscall().
//
// Usage: tp_paths DIR [untraced]. Every file is in DIR. "untraced": the
// same calls on pipes, /dev/null (an excluded path) and bad descriptors
// only, each result and errno checked: nothing for the tracer to record (it
// must not make a ring for them). The program prints, per file,
// the bytes the kernel reported for each call it made ("expect FILE OP
// BYTES"), and per check "ok"/"FAIL" lines (errno kept, offsets, contents):
// the test sums the expect lines and compares them with the tracer's
// records. The kernel's return values are the ground truth, not the tracer.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

static const char* g_dir;
static int g_fail = 0;
static char* P(const char* name) {
  static char buf[8][4096];
  static int k = 0;
  char* b = buf[k++ & 7];
  snprintf(b, 4096, "%s/%s", g_dir, name);
  return b;
}
static void Expect(const char* file, const char* op, long long bytes) { printf("expect %s %s %lld\n", file, op, bytes); }
static void Check(int ok, const char* what) {
  printf("%s %s\n", ok ? "ok" : "FAIL", what);
  if (!ok) g_fail = 1;
}
static void MakeFile(const char* name, size_t n) {
  int fd = open(P(name), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  char b[4096];
  for (size_t i = 0; i < sizeof b; ++i) b[i] = (char)('a' + i % 26);
  size_t left = n;
  while (left) {
    size_t k = left < sizeof b ? left : sizeof b;
    if (write(fd, b, k) != (ssize_t)k) exit(2);
    left -= k;
  }
  close(fd);
  Expect(name, "write", (long long)n);
}
static off_t Pos(int fd) { return lseek(fd, 0, SEEK_CUR); }

// ---- copy_file_range, sendfile, splice
static void Copies(void) {
  MakeFile("src", 100000);  // written with write(): "expect" only what follows
  int in = open(P("src"), O_RDONLY), out = open(P("cfr"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  errno = 777;
  ssize_t r = copy_file_range(in, NULL, out, NULL, 60000, 0);  // at the descriptors' offsets: 0 and 0
  Check(r == 60000 && errno == 777, "copy_file_range whole: 60000, errno kept");
  Expect("src", "read", r), Expect("cfr", "write", r);
  off64_t oi = 1000, oo = 70000;  // explicit offsets: the descriptors' stay
  r = copy_file_range(in, &oi, out, &oo, 3000, 0);
  Check(r == 3000 && oi == 4000 && oo == 73000 && Pos(in) == 60000 && Pos(out) == 60000, "copy_file_range at offsets");
  Expect("src", "read", r), Expect("cfr", "write", r);
  r = copy_file_range(in, NULL, out, NULL, 1 << 20, 0);  // partial: 40000 left
  Check(r == 40000, "copy_file_range partial to EOF");
  Expect("src", "read", r), Expect("cfr", "write", r);
  r = copy_file_range(in, NULL, out, NULL, 1 << 20, 0);  // at EOF
  Check(r == 0, "copy_file_range at EOF: 0");
  r = copy_file_range(in, NULL, 999, NULL, 10, 0);  // bad descriptor: recorded failed on src, errno kept
  Check(r == -1 && errno == EBADF, "copy_file_range EBADF keeps errno");
  close(out);
  struct stat st;
  stat(P("cfr"), &st);
  Check(st.st_size == 100000, "cfr size");

  // sendfile file -> file (the input's offset pointer), file -> pipe, pipe -> nothing.
  int sf = open(P("sendfile"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  off_t so = 5000;
  r = sendfile(sf, in, &so, 20000);
  Check(r == 20000 && so == 25000 && Pos(in) == 100000 && Pos(sf) == 20000, "sendfile with offset");
  Expect("src", "read", r), Expect("sendfile", "write", r);
  lseek(in, 90000, SEEK_SET);
  r = sendfile(sf, in, NULL, 50000);  // 10000 left
  Check(r == 10000 && Pos(in) == 100000, "sendfile at the descriptor's offset, partial");
  Expect("src", "read", r), Expect("sendfile", "write", r);
  int pfd[2];
  if (pipe(pfd) != 0) exit(2);
  so = 0;
  r = sendfile(pfd[1], in, &so, 4096);  // to a pipe: only the file side is a file
  Check(r == 4096, "sendfile to a pipe");
  Expect("src", "read", r);
  char sink[8192];
  if (read(pfd[0], sink, sizeof sink) != 4096) exit(2);
  // splice file -> pipe -> file, and EAGAIN on an empty non-blocking pipe.
  off64_t spo = 100;
  r = splice(in, &spo, pfd[1], NULL, 6000, 0);
  Check(r == 6000 && spo == 6100, "splice file -> pipe");
  Expect("src", "read", r);
  int sp = open(P("splice"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  r = splice(pfd[0], NULL, sp, NULL, 6000, 0);
  Check(r == 6000 && Pos(sp) == 6000, "splice pipe -> file");
  Expect("splice", "write", r);
  errno = 0;
  r = splice(pfd[0], NULL, sp, NULL, 100, SPLICE_F_NONBLOCK);
  int e = errno;
  Check(r == -1 && (e == EAGAIN), "splice from an empty pipe: EAGAIN kept");
  fcntl(pfd[0], F_SETFL, O_NONBLOCK);
  r = splice(pfd[0], NULL, sp, NULL, 100, 0);
  Check(r == -1 && errno == EAGAIN, "splice from an empty O_NONBLOCK pipe: EAGAIN kept");
  close(sp);
  close(pfd[0]);
  close(pfd[1]);
  close(sf);
  close(in);
}

// EINTR: a splice that waits on an empty pipe, interrupted by a signal
// (no SA_RESTART).
static void OnAlarm(int sig) { (void)sig; }
static void Interrupted(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnAlarm;
  sigaction(SIGALRM, &sa, NULL);
  int pfd[2];
  if (pipe(pfd) != 0) exit(2);
  int out = open(P("eintr"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  struct itimerval it = {{0, 0}, {0, 100000}};
  setitimer(ITIMER_REAL, &it, NULL);
  ssize_t r = splice(pfd[0], NULL, out, NULL, 100, 0);
  Check(r == -1 && errno == EINTR, "splice interrupted: EINTR kept");
  close(out);
  close(pfd[0]);
  close(pfd[1]);
}

// ---- fortified reads (this file is built with _FORTIFY_SOURCE=2 -O2), preadv2/pwritev2
static volatile size_t g_nv = 1000;
static volatile int g_flagsv = O_RDONLY;  // not a constant: read()/pread() become __read_chk/__pread_chk
static void Fortified(void) {
  MakeFile("chk", 5000);
  int fd = open(P("chk"), O_RDONLY);
  char buf[2048];
  const size_t g_n = g_nv;
  errno = 555;
  ssize_t a = read(fd, buf, g_n), b = read(fd, buf, g_n);
  Check(a == 1000 && b == 1000 && errno == 555, "__read_chk, errno kept");
  Expect("chk", "read", a + b);
  ssize_t c = pread(fd, buf, g_n, 4500);
  Check(c == 500, "__pread_chk partial");
  Expect("chk", "read", c);
  ssize_t d = read(-1, buf, g_n);
  Check(d == -1 && errno == EBADF, "__read_chk EBADF");
  close(fd);
  // Flags not known at compile time, no mode: open/openat become __open_2 and
  // __openat_2 (tar, coreutils); the open is recorded on the file.
  const int flags = g_flagsv;
  int o2 = open(P("chk"), flags);
  int dfd = open(P(""), O_RDONLY | O_DIRECTORY);
  int o3 = openat(dfd, "chk", flags);
  errno = 555;
  int o4 = open(P("missing"), flags);
  Check(o2 >= 0 && o3 >= 0 && dfd >= 0 && o4 == -1 && errno == ENOENT, "__open_2/__openat_2, errno kept");
  Expect("chk", "read", read(o2, buf, 100) + read(o3, buf, 200));
  close(o2);
  close(o3);
  close(dfd);

  int w = open(P("v2"), O_CREAT | O_TRUNC | O_RDWR, 0644);
  char x[3000];
  memset(x, 'x', sizeof x);
  struct iovec iov[2] = {{x, 1000}, {x + 1000, 2000}};
  ssize_t r1 = pwritev2(w, iov, 2, -1, 0);      // at the offset: 0..3000
  ssize_t r2 = pwritev2(w, iov, 1, 10000, 0);   // at 10000
  ssize_t r3 = pwritev2(w, iov, 1, -1, RWF_APPEND);  // at the end (11000), the offset moves there
  Check(r1 == 3000 && r2 == 1000 && r3 == 1000 && Pos(w) == 12000, "pwritev2");
  Expect("v2", "write", r1 + r2 + r3);
  struct iovec rv[1] = {{x, 3000}};
  ssize_t r4 = preadv2(w, rv, 1, 11500, 0);  // 500 to EOF
  lseek(w, 0, SEEK_SET);
  ssize_t r5 = preadv2(w, rv, 1, -1, 0);
  ssize_t r6 = preadv64v2(w, rv, 1, -1, RWF_HIPRI);  // a flag the page cache ignores (or EOPNOTSUPP)
  Check(r4 == 500 && r5 == 3000, "preadv2");
  Expect("v2", "read", r4 + r5 + (r6 > 0 ? r6 : 0));
  close(w);
}

// ---- getline/getdelim, dprintf/vdprintf, freopen, fdopen
static void Vd(int fd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vdprintf(fd, fmt, ap);
  va_end(ap);
  Expect("dprintf", "write", n);
}
static void Stdio(void) {
  FILE* f = fopen(P("lines"), "w");
  for (int i = 0; i < 50; ++i) fprintf(f, "line %d of the file\n", i);
  fprintf(f, "a;b;c");
  fclose(f);
  f = fopen(P("lines"), "r");
  char* line = NULL;
  size_t cap = 0;
  ssize_t n;
  long long got = 0;
  int calls = 0;
  errno = 4242;
  while (calls < 20 && (n = getline(&line, &cap, f)) > 0) got += n, ++calls;
  Check(errno == 4242, "getline keeps errno");
  while ((n = getdelim(&line, &cap, ';', f)) > 0) got += n, ++calls;
  Check(n == -1 && feof(f), "getdelim to EOF");
  Expect("lines", "read", got);
  printf("getline calls %d\n", calls);
  free(line);
  fclose(f);

  int fd = open(P("dprintf"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  int k = dprintf(fd, "%s %d\n", "dprintf", 12345);
  Expect("dprintf", "write", k);
  Vd(fd, "%08x|", 0xbeef);
  close(fd);

  // freopen of stderr: the writes to fd 2 are the new file's, and it appears.
  fflush(stderr);
  int saved = dup(2);
  FILE* e = freopen(P("stderr.log"), "w", stderr);
  Check(e == stderr && fileno(stderr) == 2, "freopen keeps fileno 2");
  int a = fprintf(stderr, "to the log %d\n", 1);
  Expect("stderr.log", "write", a);
  ssize_t b = write(2, "raw write\n", 10);
  Expect("stderr.log", "write", b);
  fflush(stderr);
  dup2(saved, 2);  // back to the test's stderr
  close(saved);

  // fdopen of a descriptor already read from: the stream starts there.
  fd = open(P("lines"), O_RDONLY);
  char buf[100];
  ssize_t r = read(fd, buf, 100);
  FILE* g = fdopen(fd, "r");
  size_t fr = fread(buf, 1, 50, g);
  printf("fdopen fread %zu at %ld\n", fr, ftell(g));
  Check(r == 100 && fr == 50 && ftell(g) == 150, "fdopen then fread");
  Expect("lines", "read", (long long)r + (long long)fr);
  fclose(g);
}

// ---- libaio (libaio.so.1's ABI: the kernel's struct iocb and io_event)
typedef struct io_context* io_context_t;
struct Iocb {
  void* data;
  unsigned key, rw_flags;
  short opcode, reqprio;
  int fd;
  void* buf;
  unsigned long nbytes;
  long long offset, pad;
  unsigned flags, resfd;
};
struct IoEvent {
  void* data;
  struct Iocb* obj;
  long res, res2;
};
int io_setup(int maxevents, io_context_t* ctx);
int io_destroy(io_context_t ctx);
int io_submit(io_context_t ctx, long nr, struct Iocb* ios[]);
int io_getevents(io_context_t ctx, long min_nr, long nr, struct IoEvent* events, struct timespec* timeout);
static void Libaio(void) {
  MakeFile("aio", 40000);
  int fd = open(P("aio"), O_RDWR);
  io_context_t ctx = 0;
  if (io_setup(16, &ctx) != 0) exit(3);
  static char bufs[8][8192];
  struct Iocb cbs[8];
  struct Iocb* ptr[8];
  memset(cbs, 0, sizeof cbs);
  for (int i = 0; i < 8; ++i) {
    cbs[i].fd = fd;
    cbs[i].buf = bufs[i];
    cbs[i].nbytes = 8192;
    cbs[i].offset = (long long)i * 8192;  // reads: 4 full, 1 partial (40000 - 32768 = 7232), 3 at EOF
    cbs[i].opcode = 0;                     // IO_CMD_PREAD
    ptr[i] = &cbs[i];
  }
  cbs[7].opcode = 1;  // one write (IO_CMD_PWRITE) at 57344: extends the file
  errno = 31337;
  int s = io_submit(ctx, 8, ptr);
  Check(s == 8 && errno == 31337, "io_submit 8, errno kept");
  struct IoEvent ev[8];
  long long rd = 0, wr = 0;
  int got = 0;
  while (got < 8) {
    int n = io_getevents(ctx, 1, 8, ev, NULL);
    if (n <= 0) exit(3);
    for (int i = 0; i < n; ++i) {
      if (ev[i].obj->opcode == 1) wr += ev[i].res;
      else rd += ev[i].res;
    }
    got += n;
  }
  Check(errno == 31337, "io_getevents keeps errno");
  Expect("aio", "read", rd);
  Expect("aio", "write", wr);
  printf("aio read %lld write %lld\n", rd, wr);
  // A failed submission (bad descriptor): nothing queued, nothing recorded.
  struct Iocb bad = cbs[0];
  bad.fd = 999;
  struct Iocb* bp[1] = {&bad};
  Check(io_submit(ctx, 1, bp) == -EBADF, "io_submit EBADF returned");
  io_destroy(ctx);
  close(fd);
}

// ---- io_uring through syscall(), as fio's engine sets it up: 4 reads.
static void Uring(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  int rfd = (int)syscall(SYS_io_uring_setup, 8, &p);
  if (rfd < 0) {
    printf("io_uring unavailable: %d\n", errno);
    return;
  }
  size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  char* sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rfd, IORING_OFF_SQ_RING);
  char* cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rfd, IORING_OFF_CQ_RING);
  struct io_uring_sqe* sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_POPULATE, rfd, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) exit(4);
  MakeFile("uring", 16384);
  int fd = open(P("uring"), O_RDONLY);
  static char buf[4][4096];
  unsigned* tail = (unsigned*)(sq + p.sq_off.tail);
  unsigned mask = *(unsigned*)(sq + p.sq_off.ring_mask);
  unsigned* array = (unsigned*)(sq + p.sq_off.array);
  unsigned t = *tail;
  for (unsigned i = 0; i < 4; ++i) {
    struct io_uring_sqe* e = &sqes[(t + i) & mask];
    memset(e, 0, sizeof *e);
    e->opcode = IORING_OP_READ;
    e->fd = fd;
    e->addr = (uintptr_t)buf[i];
    e->len = 4096;
    e->off = i * 4096;
    array[(t + i) & mask] = (t + i) & mask;
  }
  __atomic_store_n(tail, t + 4, __ATOMIC_RELEASE);
  long n = syscall(SYS_io_uring_enter, rfd, 4, 4, IORING_ENTER_GETEVENTS, NULL, 0);
  printf("io_uring submitted %ld\n", n);
  close(fd);
  close(rfd);
}

// The calls on descriptors that are not traced files: pipes, /dev/null, bad ones.
static void Untraced(void) {
  int a[2], b[2];
  if (pipe(a) != 0 || pipe(b) != 0) exit(2);
  char buf[64] = "hello\nworld\n";
  errno = 0;
  Check(copy_file_range(-1, NULL, 999, NULL, 10, 0) == -1 && errno == EBADF, "copy_file_range bad fds: EBADF");
  errno = 0;
  Check(syscall(SYS_copy_file_range, -1, 0, 999, 0, 10, 0) == -1 && errno == EBADF, "syscall(copy_file_range) bad fds: EBADF");
  errno = 0;
  Check(sendfile(999, -1, NULL, 10) == -1 && errno == EBADF, "sendfile bad fds: EBADF");
  Check(write(a[1], buf, 12) == 12, "write to a pipe");
  errno = 31337;
  Check(splice(a[0], NULL, b[1], NULL, 12, 0) == 12 && errno == 31337, "splice pipe to pipe, errno kept");
  struct iovec iov = {buf, 5};
  errno = 0;
  Check(preadv2(999, &iov, 1, -1, 0) == -1 && errno == EBADF, "preadv2 bad fd: EBADF");
  errno = 0;
  Check(pwritev2(-1, &iov, 1, -1, 0) == -1 && errno == EBADF, "pwritev2 bad fd: EBADF");
  errno = 0;
  Check(dprintf(999, "x") < 0 && errno == EBADF, "dprintf bad fd: EBADF");
  int dn = open("/dev/null", O_WRONLY);
  errno = 31337;
  Check(dprintf(dn, "%d", 12345) == 5 && errno == 31337, "dprintf to /dev/null, errno kept");
  Check(pwritev2(dn, &iov, 1, -1, 0) == 5, "pwritev2 to /dev/null");
  errno = 0;
  Check(fdopen(999, "r") == NULL && errno == EBADF, "fdopen bad fd: EBADF");
  close(b[1]);
  FILE* f = fdopen(b[0], "r");
  char* line = NULL;
  size_t cap = 0;
  Check(f && getline(&line, &cap, f) == 6 && getdelim(&line, &cap, '\n', f) == 6 && getline(&line, &cap, f) == -1,
        "getline, getdelim from a pipe");
  free(line);
  if (f) fclose(f);
  io_context_t ctx = 0;
  if (io_setup(4, &ctx) != 0) exit(3);
  struct Iocb cb;
  memset(&cb, 0, sizeof cb);
  cb.fd = dn;
  cb.buf = buf;
  cb.nbytes = 12;
  cb.opcode = 1;  // IO_CMD_PWRITE to /dev/null
  struct Iocb* ptr[1] = {&cb};
  struct IoEvent ev[1];
  Check(io_submit(ctx, 1, ptr) == 1 && io_getevents(ctx, 1, 1, ev, NULL) == 1 && ev[0].res == 12, "libaio write to /dev/null");
  io_destroy(ctx);
  close(dn);
  close(a[0]);
  close(a[1]);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  g_dir = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 2 && !strcmp(argv[2], "untraced")) {
    Untraced();
    printf("done %s\n", g_fail ? "FAIL" : "ok");
    return g_fail;
  }
  Copies();
  Interrupted();
  Fortified();
  Stdio();
  Libaio();
  Uring();
  printf("done %s\n", g_fail ? "FAIL" : "ok");
  return g_fail;
}
