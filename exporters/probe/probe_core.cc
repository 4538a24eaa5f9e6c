// The probe's operations, its files, and where they live.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/base/hash.h"
#include "core/base/timeutil.h"
#include "exporters/probe/probe.h"

namespace iosonar::probe {

namespace {

uint64_t Mix(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Writes all of buf at off, retrying short writes and EINTR. 0 or errno.
int PwriteAll(int fd, const char* buf, size_t n, off_t off) {
  while (n > 0) {
    ssize_t w = pwrite(fd, buf, n, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    buf += w, n -= static_cast<size_t>(w), off += w;
  }
  return 0;
}

// Scans the pool directory: smallest and one past the largest sequence number.
Status ScanPool(const std::string& pool, int64_t* lo, int64_t* hi, int64_t* count) {
  DIR* d = opendir(pool.c_str());
  if (!d) return Status::FromErrno(pool, errno);
  *lo = INT64_MAX, *hi = 0, *count = 0;
  while (dirent* e = readdir(d)) {
    int64_t s = ParsePoolName(e->d_name);
    if (s < 0) continue;
    *lo = std::min(*lo, s);
    *hi = std::max(*hi, s + 1);
    ++*count;
  }
  closedir(d);
  if (*count == 0) *lo = *hi = 0;
  return Status::Ok();
}

struct AlignedBuf {
  char* p = nullptr;
  AlignedBuf() {
    void* v = nullptr;
    if (posix_memalign(&v, 4096, kBlock) == 0) p = static_cast<char*>(v);
  }
  ~AlignedBuf() { std::free(p); }
};

void Fill(char* buf, size_t n, uint64_t seed) {
  // Not zeros: some file systems compress or deduplicate those away.
  uint64_t s = seed;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v = Mix(s += 0x9e3779b97f4a7c15ULL);
    std::memcpy(buf + i, &v, 8);
  }
}

}  // namespace

std::string DataPath(std::string_view dir) { return std::string(dir) + "/iosonar-probe.dat"; }
std::string PoolDir(std::string_view dir) { return std::string(dir) + "/iosonar-probe-pool"; }

std::string PoolName(int64_t seq) {
  char b[32];
  std::snprintf(b, sizeof b, "%020lld", static_cast<long long>(seq));
  return b;
}

int64_t ParsePoolName(std::string_view name) {
  if (name.size() != 20) return -1;
  int64_t v = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return -1;
    if (v > (INT64_MAX - (c - '0')) / 10) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

uint64_t DeriveSeed(std::string_view host, int64_t pid, int64_t start_ns) {
  uint64_t h = Fnv1a(host);
  h = Fnv1a(reinterpret_cast<const char*>(&pid), sizeof pid, h);
  h = Fnv1a(reinterpret_cast<const char*>(&start_ns), sizeof start_ns, h);
  uint64_t s = Mix(h) & 0x7fffffffffffffffULL;
  return s ? s : 1;
}

int64_t ClientMemoryBytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemTotal: %lld kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

int64_t AutoFileSize(int64_t client_memory) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  return (client_memory + kGiB - 1) / kGiB * kGiB * kFileMemoryFactor + kGiB;
}

const char* BypassName(Bypass b) {
  switch (b) {
    case Bypass::kAuto:
    case Bypass::kDirect: return "o_direct";
    case Bypass::kFadvise: return "fsync+fadvise";
    case Bypass::kNone: break;
  }
  return "none";
}

Status CheckDefeatsCache(const Config& cfg, int64_t file_size) {
  if (cfg.direct || cfg.bypass != Bypass::kNone || cfg.allow_small_file) return Status::Ok();
  const int64_t mem = cfg.client_memory > 0 ? cfg.client_memory : ClientMemoryBytes();
  if (mem <= 0 || file_size > mem) return Status::Ok();
  return Status::Invalid("the large file (" + std::to_string(file_size >> 20) + " MiB) is not larger than this client's memory (" +
                         std::to_string(mem >> 20) + " MiB): its reads would come from the page cache, not the file "
                         "system (Kunkel & Betke §3.1). Precreate a larger one (--file-size " +
                         std::to_string(AutoFileSize(mem) >> 30) + "G, the default), or bypass the cache "
                         "(--cache-bypass auto, the default, or --direct), or "
                         "--allow-small-file if cached reads are acceptable (tests, demos)");
}

Status Precreate(const Config& cfg_in, std::string* report) {
  Config cfg = cfg_in;
  if (cfg.file_size == 0) cfg.file_size = AutoFileSize(cfg.client_memory > 0 ? cfg.client_memory : ClientMemoryBytes());
  if (cfg.dir.empty()) return Status::Invalid("--dir is required");
  if (cfg.file_size < kBlock || cfg.file_size % kBlock != 0)
    return Status::Invalid("--file-size must be a positive multiple of 1 MiB, got " + std::to_string(cfg.file_size));
  if (cfg.pool_size < 1) return Status::Invalid("--pool-size must be at least 1");
  if (Status c = CheckDefeatsCache(cfg, cfg.file_size); !c.ok()) return c;
  if (mkdir(cfg.dir.c_str(), 0755) != 0 && errno != EEXIST) return Status::FromErrno("mkdir " + cfg.dir, errno);
  std::string pool = PoolDir(cfg.dir);
  if (mkdir(pool.c_str(), 0755) != 0 && errno != EEXIST) return Status::FromErrno("mkdir " + pool, errno);

  AlignedBuf buf;
  if (!buf.p) return Status::Internal("out of memory for a 1 MiB buffer");
  Fill(buf.p, kBlock, 0x5eed);

  std::string data = DataPath(cfg.dir);
  int fd = open(data.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open " + data, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return Status::FromErrno("stat " + data, e);
  }
  int64_t have = st.st_size / kBlock * kBlock;
  int64_t written = 0;
  for (int64_t off = have; off < cfg.file_size; off += kBlock) {
    if (int e = PwriteAll(fd, buf.p, kBlock, off)) {
      close(fd);
      return Status::FromErrno("write " + data + " at offset " + std::to_string(off), e);
    }
    written += kBlock;
  }
  if (fsync(fd) != 0) {
    int e = errno;
    close(fd);
    return Status::FromErrno("fsync " + data, e);
  }
  close(fd);

  int64_t lo, hi, count;
  if (Status s = ScanPool(pool, &lo, &hi, &count); !s.ok()) return s;
  int64_t made = 0;
  for (int64_t seq = hi; count + made < cfg.pool_size; ++seq) {
    std::string p = pool + "/" + PoolName(seq);
    int f = open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f < 0) return Status::FromErrno("create " + p, errno);
    int e = PwriteAll(f, buf.p, kSmallFile, 0);
    close(f);
    if (e) return Status::FromErrno("write " + p, e);
    ++made;
  }
  *report = "precreate " + cfg.dir + ": large file " + std::to_string(std::max(have, cfg.file_size) >> 20) + " MiB (" +
            std::to_string(written >> 20) + " MiB written now), pool " + std::to_string(count + made) + " files (" +
            std::to_string(made) + " created now)";
  return Status::Ok();
}

Result<std::unique_ptr<Prober>> Prober::Open(const Config& cfg, std::string_view host) {
  std::unique_ptr<Prober> p(new Prober());
  p->cfg_ = cfg;
  p->seed_ = cfg.seed ? cfg.seed : DeriveSeed(host, getpid(), NowNs());
  p->state_ = p->seed_;
  std::string data = DataPath(cfg.dir);
  std::string hint = " (run `iosonar probe --precreate --dir " + cfg.dir + "` first)";
  const Bypass want = cfg.direct ? Bypass::kDirect : cfg.bypass;
  p->bypass_ = want == Bypass::kAuto ? Bypass::kDirect : want;
  int flags = O_RDWR | O_CLOEXEC | (p->bypass_ == Bypass::kDirect ? O_DIRECT : 0);
  p->fd_ = open(data.c_str(), flags);
  if (p->fd_ < 0 && errno == EINVAL && want == Bypass::kAuto) {  // no O_DIRECT here: fsync + fadvise
    p->bypass_ = Bypass::kFadvise;
    p->fd_ = open(data.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (p->fd_ < 0) {
    int e = errno;
    if (want == Bypass::kDirect && e == EINVAL)
      return Status::Invalid("the file system under " + cfg.dir +
                             " refuses O_DIRECT (tmpfs did before Linux 6.6): run without --direct (the default "
                             "falls back to fsync + POSIX_FADV_DONTNEED), or probe another directory");
    return Status::FromErrno("open " + data + (e == ENOENT ? hint : ""), e);
  }
  struct stat st;
  if (fstat(p->fd_, &st) != 0) return Status::FromErrno("stat " + data, errno);
  p->file_size_ = st.st_size / kBlock * kBlock;
  if (p->file_size_ < kBlock) return Status::Invalid(data + " is smaller than 1 MiB" + hint);
  if (Status c = CheckDefeatsCache(cfg, p->file_size_); !c.ok()) return Status::Invalid(data + ": " + c.message());
  void* v = nullptr;
  if (posix_memalign(&v, 4096, kBlock) != 0) return Status::Internal("out of memory for a 1 MiB buffer");
  p->buf_ = static_cast<char*>(v);
  Fill(p->buf_, kBlock, p->seed_);
  if (p->bypass_ == Bypass::kDirect) {
    // Some file systems accept the open and refuse the I/O instead.
    ssize_t n = pread(p->fd_, p->buf_, kBlock, 0);
    if (n < 0 && errno == EINVAL && want == Bypass::kAuto) {
      close(p->fd_);
      p->bypass_ = Bypass::kFadvise;
      p->fd_ = open(data.c_str(), O_RDWR | O_CLOEXEC);
      if (p->fd_ < 0) return Status::FromErrno("open " + data, errno);
    } else if (n < 0 && errno == EINVAL) {
      return Status::Invalid("the file system under " + cfg.dir +
                             " refuses O_DIRECT reads (EINVAL): run without --direct (the default falls back to "
                             "fsync + POSIX_FADV_DONTNEED), or probe another directory");
    } else if (n < 0) {
      return Status::FromErrno("read " + data, errno);
    }
  }
  std::string pool = PoolDir(cfg.dir);
  p->pool_fd_ = open(pool.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (p->pool_fd_ < 0) return Status::FromErrno("open " + pool + (errno == ENOENT ? hint : ""), errno);
  int64_t count = 0;
  if (Status s = ScanPool(pool, &p->lo_, &p->hi_, &count); !s.ok()) return s;
  if (count == 0) return Status::Invalid(pool + " has no pool files" + hint);
  return p;
}

Prober::~Prober() {
  if (fd_ >= 0) close(fd_);
  if (pool_fd_ >= 0) close(pool_fd_);
  std::free(buf_);
}

uint64_t Prober::Next() { return Mix(state_ += 0x9e3779b97f4a7c15ULL); }

int64_t Prober::RandomOffset() {
  uint64_t blocks = static_cast<uint64_t>(file_size_ / kBlock);
  return static_cast<int64_t>(Next() % blocks) * kBlock;
}

void Prober::ProbeOnce(std::vector<OpResult>* out) {
  out->clear();
  auto begin = [&](const char* op) -> OpResult& {
    OpResult& r = out->emplace_back();
    r.op = op;
    r.start_ns = NowNs();
    r.latency_ns = MonotonicNs();
    return r;
  };
  auto end = [](OpResult& r) { r.latency_ns = MonotonicNs() - r.latency_ns; };

  const bool fadvise = bypass_ == Bypass::kFadvise;
  {  // 1 MiB write at a random aligned offset
    int64_t off = RandomOffset();
    if (fadvise) posix_fadvise(fd_, off, kBlock, POSIX_FADV_DONTNEED);
    OpResult& r = begin("write");
    r.offset = off;
    ssize_t n = pwrite(fd_, buf_, kBlock, off);
    int e = n < 0 ? errno : 0;
    if (fadvise && n >= 0 && fdatasync(fd_) != 0) e = errno, n = -1;  // the write reaches storage, timed
    end(r);
    if (fadvise) posix_fadvise(fd_, off, kBlock, POSIX_FADV_DONTNEED);
    r.err = n < 0 ? e : (n < kBlock ? EIO : 0);
    r.bytes = n > 0 ? n : 0;
  }
  {  // 1 MiB read at another random aligned offset
    int64_t off = RandomOffset();
    if (fadvise) posix_fadvise(fd_, off, kBlock, POSIX_FADV_DONTNEED);  // not from the page cache
    OpResult& r = begin("read");
    r.offset = off;
    ssize_t n = pread(fd_, buf_, kBlock, off);
    int e = n < 0 ? errno : 0;
    end(r);
    r.err = n < 0 ? e : (n < kBlock ? EIO : 0);
    r.bytes = n > 0 ? n : 0;
  }
  // The oldest pool file: stat, read, delete.
  std::string oldest = PoolName(lo_);
  bool have_oldest = lo_ < hi_;
  {
    OpResult& r = begin("stat");
    r.seq = lo_;
    struct stat st;
    int rc = have_oldest ? fstatat(pool_fd_, oldest.c_str(), &st, 0) : (errno = ENOENT, -1);
    int e = rc != 0 ? errno : 0;
    end(r);
    r.err = e;
  }
  {
    OpResult& r = begin("small_read");
    r.seq = lo_;
    int f = have_oldest ? openat(pool_fd_, oldest.c_str(), O_RDONLY | O_CLOEXEC) : (errno = ENOENT, -1);
    int e = f < 0 ? errno : 0;
    ssize_t n = 0;
    if (f >= 0) {
      n = read(f, buf_, kBlock);  // a 3901-byte file: one read sees it all
      if (n < 0) e = errno;
      close(f);
    }
    end(r);
    r.err = e ? e : (n != kSmallFile ? EIO : 0);
    r.bytes = n > 0 ? n : 0;
  }
  {
    OpResult& r = begin("delete");
    r.seq = lo_;
    int rc = have_oldest ? unlinkat(pool_fd_, oldest.c_str(), 0) : (errno = ENOENT, -1);
    int e = rc != 0 ? errno : 0;
    end(r);
    r.err = e;
    if (have_oldest) ++lo_;  // a file that vanished is skipped, not retried forever
  }
  {  // create + write of the new newest file
    std::string name = PoolName(hi_);
    OpResult& r = begin("create");
    r.seq = hi_;
    int f = openat(pool_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int e = f < 0 ? errno : 0;
    if (f >= 0) {
      e = PwriteAll(f, buf_, kSmallFile, 0);
      if (close(f) != 0 && !e) e = errno;
    }
    end(r);
    r.err = e;
    r.bytes = e ? 0 : kSmallFile;
    if (!e || e == EEXIST) ++hi_;  // EEXIST: someone else's file; move past it
  }
}

// ---- mounts -------------------------------------------------------------------

namespace {
// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}
}  // namespace

MountInfo FindMount(std::string_view text, std::string_view path) {
  MountInfo best;
  size_t best_len = 0;
  bool found = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // id parent maj:min root mount_point options [optional...] - fstype source superopts
    std::vector<std::string_view> tok;
    size_t i = 0;
    while (i < line.size() && tok.size() < 64) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = line.find(' ', i);
      if (j == std::string_view::npos) j = line.size();
      if (j > i) tok.push_back(line.substr(i, j - i));
      i = j;
    }
    if (tok.size() < 7) continue;
    size_t dash = 6;
    while (dash < tok.size() && tok[dash] != "-") ++dash;
    if (dash + 2 >= tok.size()) continue;
    std::string mp = Unescape(tok[4]);
    bool inside = path == mp || mp == "/" ||
                  (path.size() > mp.size() && path.substr(0, mp.size()) == mp && path[mp.size()] == '/');
    if (!inside) continue;
    if (found && mp.size() < best_len) continue;  // equal length: the later mount is on top
    found = true;
    best_len = mp.size();
    best.mount_point = mp;
    best.fs_type = std::string(tok[dash + 1]);
    best.source = Unescape(tok[dash + 2]);
    best.lustre_fs.clear();
    if (best.fs_type == "lustre") {
      size_t p = best.source.rfind(":/");
      if (p != std::string::npos) best.lustre_fs = best.source.substr(p + 2);
    }
  }
  return best;
}

}  // namespace iosonar::probe
