#include "exporters/agent/ring_agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/base/hash.h"
#include "core/base/private_dir.h"
#include "core/base/url.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"
#include "core/records/json_line.h"
#include "core/transport/sink.h"

namespace iosonar::trace {

// ---------------------------------------------------------------- the agent
RingAgent::RingAgent(const Options& o, RecordSink* sink) : o_(o), sink_(sink) {}

RingAgent::~RingAgent() {
  for (auto& [k, fd] : dir_locks_) close(fd);
  for (auto& p : pending_) {
    if (p.base) munmap(p.base, kRingBytes);
    if (p.fd >= 0) close(p.fd);
  }
}

bool RingAgent::Report(const std::string& key, const std::string& msg) {
  if (reported_.size() > kSeenMax) reported_.clear();
  if (!reported_.insert(Fnv1a(key)).second) return false;
  if (!o_.quiet) std::fprintf(stderr, "iosonar agent: %s\n", msg.c_str());
  return true;
}

void RingAgent::SetAside(Cause cause, uint64_t* counter, const std::string& key, const std::string& msg) {
  if (reported_.size() > kSeenMax) reported_.clear();
  if (!reported_.insert(Fnv1a(key)).second) return;
  ++*counter;
  Notes& n = notes_[cause];
  ++n.n;
  if (n.nex < 16) {
    if (!n.examples.empty()) n.examples += "; ";
    n.examples += msg.substr(0, 1024);
    ++n.nex;
  }
}

// One line per cause for what this pass set aside (however many: a flood of
// junk is one line), the first few named.
void RingAgent::EmitNotes() {
  static const char* const kWhat[kCauses] = {"ring directories refused", "ring directories not their uid's",
                                             "ring files not opened", "ring files refused", "malformed rings skipped"};
  for (int c = 0; c < kCauses; ++c) {
    Notes& n = notes_[c];
    if (!n.n) continue;
    std::string line = std::to_string(n.n) + " " + kWhat[c] + " this pass: " + n.examples;
    if (n.n > n.nex) line += "; and " + std::to_string(n.n - n.nex) + " more";
    if (!o_.quiet) std::fprintf(stderr, "iosonar agent: %s\n", line.c_str());
    last_aside_ = line;
    n = Notes{};
  }
}

bool RingAgent::SeenRefused(uint64_t key, uint64_t ino) {
  auto it = seen_.find(key);
  return it != seen_.end() && !it->second.good && it->second.ino == ino &&
         MonotonicNs() - it->second.checked < kRecheckNs;
}

void RingAgent::Remember(uint64_t key, uint64_t ino, bool good) {
  if (seen_.size() >= kSeenMax) seen_.clear();
  seen_[key] = Seen{ino, MonotonicNs(), good};
}

void RingAgent::SelfReport(bool force) {
  if (o_.report_ns <= 0 || !report_line_.empty()) return;  // the one not yet held goes again first
  const uint64_t aside = st_.malformed + st_.refused;
  const uint64_t dropped = sink_->counters().dropped;
  const int64_t now = MonotonicNs();
  if (!force && aside == held_.aside && dropped == held_.dropped && now - last_report_mono_ < o_.report_ns)
    return;
  last_report_mono_ = now;
  if (!self_stream_) {
    self_stream_ = static_cast<int64_t>(
        Fnv1a(o_.host + "/agent/" + std::to_string(getpid()) + "/" + std::to_string(NowNs())) >> 1);
  }
  queued_ = Tally{aside, st_.lines, dropped};
  const int64_t ts = NowNs();
  auto record = [&](const char* source, bool ok, uint64_t warnings, const uint64_t* records, const std::string& error) {
    char buf[2048];
    JsonLine j(buf, sizeof buf);
    j.Begin();
    j.Key(field::kTimestamp);
    j.IsoMillis(ts);
    j.KStr(field::kEventDataset, dataset::kSampler.name());
    j.KInt(field::kEventStream, self_stream_);
    j.KInt(field::kEventSeq, static_cast<int64_t>(self_seq_++));
    j.KStr(field::kHostName, o_.host);
    j.KStr(field::kSamplerName, "agent");
    j.KStr(field::kSamplerSource, source);
    j.Key(field::kSamplerOk);
    j.Bool(ok);
    j.KInt(field::kSamplerDurationNs, pass_ns_);
    j.KInt(field::kSamplerWarnings, static_cast<int64_t>(warnings & INT64_MAX));
    if (records) j.KInt(field::kSamplerRecords, static_cast<int64_t>(*records & INT64_MAX));
    if (!ok && !error.empty()) {
      // A diagnostic naming files the rings' owners named: ASCII only, so a
      // name that is not UTF-8 (or a cut through a character) cannot make
      // the line invalid JSON for the receivers.
      std::string e = error.substr(0, 512);
      for (char& ch : e)
        if (static_cast<unsigned char>(ch) >= 0x80) ch = '?';
      j.KStr(field::kSamplerError, e);
    }
    j.KInt(field::kSamplerIntervalNs, o_.report_ns);
    j.End();
    if (j.ok()) report_line_.append(buf, j.size());
  };
  // "rings": the rings and directories set aside since the last report (each
  // once), the lines shipped from the rings; "output": what the sink dropped.
  const uint64_t shipped = st_.lines - held_.lines;
  record("rings", aside == held_.aside, aside - held_.aside, &shipped, last_aside_);
  record("output", dropped == held_.dropped, dropped - held_.dropped, nullptr, last_output_error_);
}

bool RingAgent::SendReport() {
  Status s = report_line_.empty() ? Status::Ok() : sink_->Send(report_line_, 2);
  if (s.ok()) s = sink_->Flush();
  if (!s.ok()) {
    last_output_error_ = RedactUrl(s.message());
    return false;
  }
  if (!report_line_.empty()) {
    held_ = queued_;
    report_line_.clear();
  }
  return true;
}

void RingAgent::Finish() {
  if (o_.report_ns <= 0) return;
  if (!SendReport()) return;  // a report not yet held: it is the last word
  SelfReport(true);
  SendReport();
}

bool RingAgent::Pass() {
  const int64_t t0 = MonotonicNs();
  if (exec_seen_.size() > 65536) exec_seen_.clear();  // bounded: they settle again
  ++st_.passes;
  ok_ = true;
  const uid_t me = geteuid();
  // The directories: ROOT/iosonar-ring-UID and the private ones a tracer made
  // when that name was taken (ROOT/iosonar-ring-UID.SUFFIX, private_dir.h);
  // as root every uid's, else only ours. Those refused before (same inode)
  // are passed over without a system call; those never seen are checked
  // within a budget per pass, after the ones known good.
  struct Cand {
    std::string path;
    uid_t uid;
    uint64_t key, ino;
    bool known_good;
  };
  std::vector<Cand> good, fresh;
  if (DIR* d = opendir(o_.ring_root.c_str())) {
    while (dirent* e = readdir(d)) {
      const char* n = e->d_name;
      if (strncmp(n, "iosonar-ring-", 13) != 0) continue;
      const char* u = n + 13;
      const size_t digits = strspn(u, "0123456789");
      if (digits == 0 || digits > 10) continue;
      if (u[digits] != '\0' && !(u[digits] == '.' && IsPrivateDirSuffix(u + digits + 1))) continue;
      const unsigned long uid = strtoul(u, nullptr, 10);
      if (uid > 0xfffffffeul) continue;
      if (!o_.all_users && uid != me) continue;
      const uint64_t key = Fnv1a(n, strlen(n), 0x5eedull);
      if (SeenRefused(key, e->d_ino)) continue;
      auto it = seen_.find(key);
      const bool known = it != seen_.end() && it->second.good && it->second.ino == e->d_ino;
      if (!known && fresh.size() >= kNewDirsPerPass) {
        ++st_.deferred;
        continue;
      }
      (known ? good : fresh).push_back(Cand{o_.ring_root + "/" + n, static_cast<uid_t>(uid), key, e->d_ino, known});
    }
    closedir(d);
  }
  // Each uid's files within its budget, whatever the others hold.
  std::unordered_map<uid_t, size_t> budget;
  st_.last_pass_dirs = 0;
  for (auto* list : {&good, &fresh}) {
    for (auto& c : *list) {
      auto [it, added] = budget.try_emplace(c.uid, kFilesPerUid);
      const bool ok = PassDir(c.path, c.uid, &it->second);
      if (ok) ++st_.last_pass_dirs;
      Remember(c.key, c.ino, ok);
    }
  }
  EmitNotes();
  pass_ns_ = MonotonicNs() - t0;
  SelfReport(false);
  // Nothing new: the sink still gets its chance to resend what it spooled.
  if (!SendReport()) ok_ = false;
  return ok_;
}

bool RingAgent::PassDir(const std::string& dir, uid_t uid, size_t* files) {
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (errno != ENOENT) {
      SetAside(kDirRefused, &st_.refused, "dir:" + dir + std::to_string(errno),
               dir + ": not opened as a directory without following links (" + std::strerror(errno) + "); skipped");
    }
    return false;
  }
  struct stat ds;
  if (fstat(dfd, &ds) != 0 || !S_ISDIR(ds.st_mode) || ds.st_uid != uid || (ds.st_mode & 07777) != 0700) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(ds.st_mode & 07777));
    std::string msg = dir + ": owned by uid " + std::to_string(ds.st_uid) + " with mode " + mode + ", expected uid " +
                      std::to_string(uid) + " and mode 0700; refused";
    if (ds.st_uid != uid) msg += " (uid " + std::to_string(uid) + "'s tracers use a private iosonar-ring-" + std::to_string(uid) + ".SUFFIX)";
    SetAside(ds.st_uid != uid ? kDirNotOurs : kDirRefused, &st_.refused,
             "dir:" + dir + ":" + std::to_string(ds.st_uid) + mode, msg);
    close(dfd);
    return false;
  }
  // Held while the agent runs (a tracer's exclusive lock is momentary: then next pass).
  if (!dir_locks_.count({ds.st_dev, ds.st_ino}) && dir_locks_.size() < 512 && dir_locks_per_uid_[uid] < 2) {
    int kfd = dup(dfd);
    if (kfd >= 0 && flock(kfd, LOCK_SH | LOCK_NB) == 0) {
      dir_locks_[{ds.st_dev, ds.st_ino}] = kfd;
      ++dir_locks_per_uid_[uid];
    } else if (kfd >= 0) {
      close(kfd);
    }
  }
  int lfd = dup(dfd);
  DIR* d = lfd >= 0 ? fdopendir(lfd) : nullptr;
  if (!d) {
    if (lfd >= 0) close(lfd);
    close(dfd);
    return true;
  }
  std::vector<std::string> names;
  size_t scanned = 0;
  while (dirent* e = readdir(d)) {
    const char* n = e->d_name;
    size_t nl = strlen(n);
    if (++scanned > 65536) break;  // bounded work per directory and pass
    if (strncmp(n, "ring-", 5) != 0 || nl < 9 || strcmp(n + nl - 4, ".bin") != 0) continue;
    const uint64_t key = Fnv1a(n, nl, Fnv1a(dir));
    if (SeenRefused(key, e->d_ino)) continue;  // refused before, unchanged: no system call
    if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) {
      SetAside(kFileRefused, &st_.refused, "file:" + dir + "/" + n, dir + "/" + n + ": not a regular file; refused");
      Remember(key, e->d_ino, false);
      continue;
    }
    names.emplace_back(n);
  }
  closedir(d);
  if (names.size() > *files) {
    // This uid's budget for the pass: the files from where the last pass
    // stopped on (so each is visited in turn, however many there are).
    size_t& rotor = rotor_[uid];
    std::vector<std::string> part;
    part.reserve(*files);
    for (size_t k = 0; k < *files; ++k) part.push_back(std::move(names[(rotor + k) % names.size()]));
    st_.deferred += names.size() - part.size();
    rotor = (rotor + part.size()) % names.size();
    names = std::move(part);
  }
  *files -= names.size();
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    const uint64_t key = Fnv1a(name, Fnv1a(dir));
    int pid = atoi(name.c_str() + 5);
    int fd = openat(dfd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT) {
        SetAside(kFileNotOpened, &st_.refused, "file:" + path,
                 path + ": not opened (" + std::string(std::strerror(errno)) + "; links are not followed); refused");
        struct stat ls;
        if (fstatat(dfd, name.c_str(), &ls, AT_SYMLINK_NOFOLLOW) == 0) Remember(key, ls.st_ino, false);
      }
      continue;
    }
    struct stat fs;
    if (fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode) || fs.st_uid != uid || fs.st_nlink != 1 ||
        static_cast<size_t>(fs.st_size) != kRingBytes) {
      SetAside(kFileRefused, &st_.refused, "file:" + path + ":" + std::to_string(fs.st_ino),
             path + ": not a regular file of uid " + std::to_string(uid) + " with one link and a ring's size; refused");
      // Not looked at again while unchanged, unless only its size is wrong
      // (a ring being made is empty for a moment).
      if (!S_ISREG(fs.st_mode) || fs.st_uid != uid || fs.st_nlink != 1) Remember(key, fs.st_ino, false);
      close(fd);
      continue;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {  // another drainer has it this moment
      close(fd);
      continue;
    }
    void* m = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      close(fd);
      continue;
    }
    char* base = static_cast<char*>(m);
    RingHeader h;
    std::string why;
    bool good = reader_.Header(base, kRingBytes, &h, &why);
    Open op;
    if (good) {
      TakeParams tp;
      tp.uid = uid;
      tp.name_pid = pid;
      tp.alive = ProcessAlive(h.pid, h.start_time);
      tp.host = o_.host.c_str();
      if (h.agent && h.ended == 2 && tp.alive) {
        // exec'd: taken whole once it has stayed so since an earlier pass
        // (a failed exec makes the ring live again within microseconds).
        auto [it, fresh] = exec_seen_.try_emplace({fs.st_dev, fs.st_ino}, MonotonicNs());
        tp.exec_settled = !fresh && MonotonicNs() - it->second >= 50000000;
      }
      tp.spill_bytes = o_.flush_bytes;
      tp.merge = o_.merge_threads;
      tp.spill = [this](std::string_view lines, uint64_t nlines) {
        if (Status s = sink_->Send(lines, nlines); !s.ok()) {
          last_output_error_ = RedactUrl(s.message());
          ok_ = false;
          return false;
        }
        return true;
      };
      good = reader_.Take(base, kRingBytes, tp, &op.take, &why);
      st_.max_take_bytes = std::max<uint64_t>(st_.max_take_bytes, op.take.max_bytes);
    }
    if (!good) {
      SetAside(kMalformed, &st_.malformed, "bad:" + path + ":" + std::to_string(fs.st_ino), path + ": malformed ring (" + why + "); skipped");
      munmap(m, kRingBytes);
      close(fd);
      continue;
    }
    if (h.agent && !h.ended && !op.take.remove) ++st_.rings_live;
    if (op.take.nlines == 0 && op.take.slots.empty() && !op.take.remove && !op.take.start) {
      munmap(m, kRingBytes);
      close(fd);
      continue;
    }
    op.path = path;
    op.name = name;
    op.dirfd = dfd;
    op.fd = fd;
    op.base = base;
    op.dev = fs.st_dev;
    op.ino = fs.st_ino;
    pending_bytes_ += op.take.lines.size();
    pending_.push_back(std::move(op));
    if (pending_bytes_ >= o_.flush_bytes) FlushAndCommit();
  }
  FlushAndCommit();
  close(dfd);
  return true;
}


bool RingAgent::FlushAndCommit() {
  bool ok = true;
  for (auto& p : pending_) {
    if (p.take.lines.empty()) continue;
    if (Status s = sink_->Send(p.take.lines, p.take.nlines); !s.ok()) {
      ok = false;
      last_output_error_ = RedactUrl(s.message());
      if (!o_.quiet) Report("send:" + s.message(), "output: " + RedactUrl(s.message()));
    }
  }
  if (Status s = sink_->Flush(); !s.ok()) {
    ok = false;
    last_output_error_ = RedactUrl(s.message());
    if (!o_.quiet)
      std::fprintf(stderr, "iosonar agent: output: %s (kept in the rings, retried)\n", RedactUrl(s.message()).c_str());
  }
  for (auto& p : pending_) {
    if (ok) {
      const bool removable = reader_.Commit(p.base, kRingBytes, p.take);
      st_.lines += p.take.nlines + p.take.spilled;
      st_.runs += p.take.runs;
      st_.merged += p.take.merged;
      if (p.take.exec_end) exec_seen_.erase({p.dev, p.ino});
      if (p.take.remove && removable) {
        // The name still this file (its owner may have replaced it): then it goes.
        struct stat now;
        if (fstatat(p.dirfd, p.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == p.dev &&
            now.st_ino == p.ino)
          unlinkat(p.dirfd, p.name.c_str(), 0);
        if (p.take.finished) ++st_.rings_finished;
      }
    }
    munmap(p.base, kRingBytes);
    close(p.fd);  // releases the lock
  }
  if (!ok) {
    ++st_.flush_failures;
    ok_ = false;
  }
  pending_.clear();
  pending_bytes_ = 0;
  return ok;
}

}  // namespace iosonar::trace
