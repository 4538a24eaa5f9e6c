// The embedded collector: epoll loop, line framing, validation, batching into
// the store and Redis, dead letters. See collector.h and ingest.h.
#include "core/collector/collector.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/collector/lumberjack_decoder.h"
#include "core/collector/ingest.h"
#include "core/jobdb/jobdb.h"
#include "core/base/json.h"
#include "core/base/hash.h"
#include "core/base/host.h"
#include "core/base/munge.h"
#include "core/base/tls.h"
#include "core/records/json_line.h"
#include "core/records/record.h"
#include "core/transport/lumberjack.h"
#include "core/transport/backoff.h"
#include "core/transport/redis.h"
#include "core/store/store.h"
#include "core/base/timeutil.h"
#include "core/base/url.h"

namespace iosonar {

// ---- IngestBatch ------------------------------------------------------------

namespace {
// Big enough that a batch of typical lines needs a handful of blocks, small
// enough that an idle collector holds little.
constexpr size_t kArenaBlock = 1 << 20;
}  // namespace

IngestBatch::IngestBatch(BulkWriter* writer, size_t capacity, bool keep_raw)
    : writer_(writer), capacity_(std::max<size_t>(capacity, 1)), keep_raw_(keep_raw) {}

IngestBatch::~IngestBatch() {
  if (open_) writer_->AbortBatch();
}

char* IngestBatch::AllocRaw(size_t n) {
  for (; cur_block_ < blocks_.size(); ++cur_block_) {
    Block& b = blocks_[cur_block_];
    if (b.cap - b.used >= n) {
      char* p = b.data.get() + b.used;
      b.used += n;
      return p;
    }
  }
  size_t cap = std::max(kArenaBlock, n);
  blocks_.push_back({std::make_unique_for_overwrite<char[]>(cap), cap, n});
  cur_block_ = blocks_.size() - 1;
  return blocks_.back().data.get();
}

Status IngestBatch::Add(std::string_view line, const RecordCheck* check) {
  const size_t len = line.size();
  if (scratch_.size() < len + 1) scratch_.resize(std::max(len + 1, size_t{4096}));
  std::memcpy(scratch_.data(), line.data(), len);  // +1: the parser writes a NUL at [len]
  if (Status s = ParseRecordInsitu(scratch_.data(), len, &rec_); !s.ok()) return s;
  if (check)
    if (Status s = check->Check(rec_); !s.ok()) return s;
  if (writer_ && store_error_.ok()) {
    Status s;
    if (!open_) {
      s = writer_->BeginBatch();
      open_ = s.ok();
    }
    if (s.ok()) s = writer_->Insert(rec_, &pending_);
    if (!s.ok()) {
      // The transaction is lost as a whole; the rest of the batch is only validated.
      if (open_) writer_->AbortBatch();
      open_ = false;
      store_error_ = s;
    }
  }
  if (keep_raw_) {
    char* q = AllocRaw(len);
    std::memcpy(q, line.data(), len);
    raw_.emplace_back(q, len);
  }
  ++n_;
  return Status::Ok();
}

Status IngestBatch::Commit(AppendStats* stats) {
  Status s = store_error_;
  if (s.ok() && open_) s = writer_->CommitBatch();
  open_ = false;
  if (s.ok() && stats) {
    stats->inserted += pending_.inserted;
    stats->duplicates += pending_.duplicates;
  }
  pending_ = {};
  store_error_ = Status::Ok();
  return s;
}

void IngestBatch::Clear() {
  if (open_) writer_->AbortBatch();
  open_ = false;
  pending_ = {};
  store_error_ = Status::Ok();
  n_ = 0;
  raw_.clear();
  // Oversized one-line blocks are not worth keeping for the next batch.
  std::erase_if(blocks_, [](const Block& b) { return b.cap > kArenaBlock; });
  for (auto& b : blocks_) b.used = 0;
  cur_block_ = 0;
  if (scratch_.size() > (1 << 20)) std::vector<char>().swap(scratch_);
}

namespace {

constexpr size_t kDeadLetterLineMax = 64 * 1024;
constexpr int64_t kWarnIntervalNs = 60LL * 1000000000;

bool IsBlank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

// ---- Pipeline: validation -> batch -> store, Redis, dead letters ------------
// Shared by the TCP loop and IngestFile. Owned and used by one thread.
// --auth munge: credentials per batch. Every Lumberjack window starts with an
// event {"iosonar.auth":"munge","credential":"MUNGE:..."}, a credential whose
// payload is the sender's host name, and it covers that window's events only;
// on a JSON-lines connection a credential line covers the next
// kLinesPerCredential lines (a new credential line may come at any time).
// munged decodes each credential once (its replay cache refuses a second use,
// and one past its time to live), and names the user; every record the
// credential covers must carry its host, and a user other than root, the
// collector's own user or --trusted-uid may send only what the tracer sends
// (iosonar.trace, iosonar.tracer).
// TLS with a verified client certificate (--tls-ca --require-client-cert):
// the certificate names a host (its subject's CN, or a DNS name among its
// subjectAltNames); every record on that connection must carry it.
constexpr uint32_t kLinesPerCredential = 4096;
// --auth munge with --mysql: who owns a job, from the job database, cached
// (a minute; an unknown job or an unreachable database for ten seconds).
class JobOwners {
 public:
  explicit JobOwners(std::unique_ptr<JobDb> db) : db_(std::move(db)) {}
  // The owner's uid; nullopt when the database does not know the job (yet).
  std::optional<int64_t> Owner(std::string_view job) {
    const int64_t now = MonotonicNs();
    auto it = cache_.find(std::string(job));
    if (it != cache_.end() && it->second.second > now) return it->second.first;
    if (cache_.size() > 100000) cache_.clear();
    std::optional<int64_t> uid;
    int64_t ttl = 10;
    auto j = db_->FindJob(std::string(job), "");
    if (j.ok() && j->uid) {
      uid = j->uid;
      ttl = 60;
    }
    cache_[std::string(job)] = {uid, now + ttl * 1000000000};
    return uid;
  }

 private:
  std::unique_ptr<JobDb> db_;
  std::unordered_map<std::string, std::pair<std::optional<int64_t>, int64_t>> cache_;
};

struct ConnAuth final : RecordCheck {
  // MUNGE (--auth munge): ok while a credential covers what comes next.
  bool munge = false;
  bool authenticated = false;  // a credential was accepted on this connection (its handshake is done)
  bool per_window = false;  // Lumberjack: a credential covers one window (else lines_left lines)
  bool ok = false, failed = false;
  uint32_t lines_left = 0;  // JSON lines: how many more lines the last credential covers
  uid_t uid = 0;
  std::string host;
  bool privileged = false;
  JobOwners* owners = nullptr;  // with a job database: a user's records only for the user's own jobs
  // A verified TLS client certificate: the host it names (its CN), and the
  // certificate itself for the other names it may carry (TlsConn::MatchesHost).
  const TlsConn* cert = nullptr;
  std::string cert_host;
  mutable std::string cert_also;  // the last other host name the certificate was found to match
  Status Check(const ParsedRecord& r) const override {
    const FieldValue& h = r[field::kHostName];
    if (cert && h.s != cert_host && h.s != cert_also) {
      if (!cert->MatchesHost(h.s))
        return Status::Invalid("tls: a record for host '" + std::string(h.s.substr(0, 64)) +
                               "' on a connection whose client certificate is for '" + cert_host + "'");
      cert_also = std::string(h.s);
    }
    if (!munge) return Status::Ok();  // a node's certificate: any dataset, for its own host
    if (h.s != host)
      return Status::Invalid("auth: a record for host '" + std::string(h.s.substr(0, 64)) +
                             "' on a connection authenticated for host '" + host + "' (uid " + std::to_string(uid) + ")");
    if (!privileged && r.dataset->name != dataset::kTrace.name() && r.dataset->name != dataset::kTracer.name())
      return Status::Invalid("auth: uid " + std::to_string(uid) + " may send only iosonar.trace and iosonar.tracer records, not " +
                             std::string(r.dataset->name));
    // user.id: a user's own records must name the user; a privileged sender
    // (the node agent as root) names the user whose ring it read, and the
    // job check below applies to that user.
    std::optional<int64_t> user;
    if (const FieldValue& u = r[field::kUserId]; u.kind == FieldValue::kString) {
      int64_t v = 0;
      const bool digits = !u.s.empty() && u.s.size() <= 10 &&
                          std::all_of(u.s.begin(), u.s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (digits)
        for (char ch : u.s) v = v * 10 + (ch - '0');
      if (!digits || v > 0xfffffffe)
        return Status::Invalid("auth: user.id '" + std::string(u.s.substr(0, 32)) + "' is not a uid");
      if (!privileged && v != static_cast<int64_t>(uid))
        return Status::Invalid("auth: a record for user.id " + std::to_string(v) + " on a connection of uid " +
                               std::to_string(uid));
      user = v;
    }
    if (owners && (!privileged || user)) {
      const int64_t who = privileged ? *user : static_cast<int64_t>(uid);
      const FieldValue& job = r[field::kJobId];
      if (job.kind == FieldValue::kString && !job.s.empty()) {
        // A job the database does not know (yet) is taken: the prolog writes a
        // job before its tasks start, so this is a lag, not an impostor.
        if (auto owner = owners->Owner(job.s); owner && *owner != who)
          return Status::Invalid("auth: job " + std::string(job.s.substr(0, 32)) + " belongs to uid " +
                                 std::to_string(*owner) + ", not to " +
                                 (privileged ? "the record's user.id " : "the credential's uid ") + std::to_string(who));
      }
    }
    return Status::Ok();
  }
};

// --auth munge: credentials seen, kept on disk until they expire, so a
// credential cannot be used twice even after munged (whose replay cache is
// in memory) or the collector restarted. A file of 16-byte entries (the
// credential's 64-bit hash, when it expires), 0600, rewritten without the
// expired ones at start and whenever it holds twice the live ones; at most
// kMax entries (past that, new credentials are refused until some expire).
class ReplayGuard {
 public:
  static constexpr size_t kMax = size_t{1} << 22;  // 64 MiB of file and about 128 MiB of memory at most
  ~ReplayGuard() {
    if (fd_ >= 0) close(fd_);
  }
  Status Open(const std::string& path) {
    path_ = path;
    const int64_t now = NowNs() / 1000000000;
    int in = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in >= 0) {
      struct stat st;
      if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(in);
        return Status::Invalid("replay guard " + path + ": not a regular file of this user");
      }
      Entry e[4096];
      ssize_t n;
      while ((n = read(in, e, sizeof e)) > 0)
        for (ssize_t k = 0; k < n / static_cast<ssize_t>(sizeof(Entry)); ++k)
          if (e[k].expires > now && seen_.size() < kMax) seen_[e[k].id] = e[k].expires;
      close(in);
    }
    return Rewrite();
  }
  // Refused if seen before; else recorded (on disk before it is accepted).
  Status Check(uint64_t id, int64_t expires) {
    if (fd_ < 0) return Status::Ok();
    const int64_t now = NowNs() / 1000000000;
    if (auto it = seen_.find(id); it != seen_.end() && it->second > now)
      return Status::Invalid("auth: credential refused: replayed (seen before; the collector keeps every credential "
                             "until it expires, across restarts)");
    if (written_ >= 2 * seen_.size() + 1024 || seen_.size() >= kMax) {
      std::erase_if(seen_, [&](const auto& kv) { return kv.second <= now; });
      if (Status st = Rewrite(); !st.ok()) return st;
    }
    if (seen_.size() >= kMax) return Status::Unavailable("auth: the replay guard is full; try again once credentials expire");
    Entry e{id, expires};
    if (write(fd_, &e, sizeof e) != static_cast<ssize_t>(sizeof e))
      return Status::Unavailable("auth: replay guard " + path_ + ": " + std::strerror(errno));
    seen_[id] = expires;
    ++written_;
    return Status::Ok();
  }

 private:
  struct Entry {
    uint64_t id;
    int64_t expires;
  };
  Status Rewrite() {
    const std::string tmp = path_ + ".new";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return Status::FromErrno("replay guard " + tmp, errno);
    std::vector<Entry> all;
    all.reserve(seen_.size());
    for (const auto& [id, ex] : seen_) all.push_back({id, ex});
    const size_t bytes = all.size() * sizeof(Entry);
    bool ok = bytes == 0 || write(fd, all.data(), bytes) == static_cast<ssize_t>(bytes);
    ok = ok && fsync(fd) == 0 && rename(tmp.c_str(), path_.c_str()) == 0;
    close(fd);
    if (!ok) return Status::FromErrno("replay guard " + path_, errno);
    if (fd_ >= 0) close(fd_);
    fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0) return Status::FromErrno("replay guard " + path_, errno);
    written_ = all.size();
    return Status::Ok();
  }
  std::string path_;
  int fd_ = -1;
  size_t written_ = 0;
  std::unordered_map<uint64_t, int64_t> seen_;
};

class Pipeline {
 public:
  explicit Pipeline(const CollectorOptions& o) : opts_(o) {}
  ~Pipeline() {
    if (dl_fd_ >= 0) close(dl_fd_);
  }

  Status Open() {
    if (opts_.store_dir.empty()) return Status::Invalid("collector: no store directory given");
    if (opts_.max_line_bytes == 0) return Status::Invalid("collector: max line length must be positive");
    auto st = OpenSqliteStore(opts_.store_dir);
    if (!st.ok()) return st.status();
    store_ = std::move(st.value());
    BulkWriter* writer = BulkWriterOf(store_.get());
    if (!writer) return Status::Internal("collector: the store has no bulk write path");
    // Raw lines are kept for Redis, forwarding, and to hold a batch the store could not write.
    const bool keep_raw = true;
    batch_ = std::make_unique<IngestBatch>(writer, opts_.batch_records, keep_raw);
    if (!opts_.forward_output.empty()) {  // forward accepted lines (sink.h)
      auto fw = OpenSink(opts_.forward_output, opts_.forward);
      if (!fw.ok()) return fw.status();
      forward_ = std::move(fw.value());
    }
    dl_path_ = opts_.dead_letter_path.empty() ? opts_.store_dir + "/deadletter.jsonl" : opts_.dead_letter_path;
    if (opts_.auth == "munge") {
      const std::string guard =
          opts_.munge_replay_path.empty() ? opts_.store_dir + "/munge-replay.dat" : opts_.munge_replay_path;
      if (Status rs = replay_.Open(guard); !rs.ok()) return Status(rs.code(), "collector: " + rs.message());
      if (!opts_.munge_host_map.empty()) {
        if (Status hs = LoadHostMap(opts_.munge_host_map); !hs.ok()) return hs;
      }
    }
    if (!opts_.jobdb_url.empty()) {
      auto db = JobDb::Open(opts_.jobdb_url);
      if (!db.ok()) return Status(db.status().code(), "collector: job database: " + db.status().message());
      owners_ = std::make_unique<JobOwners>(std::move(db.value()));
    }
    if (forward_) {
      spool_path_ = opts_.forward_spool_path.empty() ? opts_.store_dir + "/forward-spool.jsonl" : opts_.forward_spool_path;
      // A spool left by an earlier run is sent first (from where it was acknowledged).
      OpenSpool();
    }
    if (!opts_.redis_url.empty()) {
      auto r = RedisClient::Connect(opts_.redis_url);
      // A bad URL or a refused password is a configuration error worth
      // failing for; an unreachable server is retried while we keep storing.
      if (!r.ok() && r.status().code() == Code::kInvalid) return r.status();
      if (r.ok()) redis_ = std::move(r.value());
      else RedisDown(r.status());
    }
    return Status::Ok();
  }

  // One line without its '\n'. auth: the connection's authentication, when required.
  void Line(std::string_view source, uint64_t line_no, std::string_view line, ConnAuth* auth = nullptr) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line[0] != '{' && IsBlank(line))) return;
    ++stats_.lines;
    if (line.size() > opts_.max_line_bytes) {
      Reject(OversizedReason(line.size()), source, line_no, line);
      return;
    }
    if (auth && auth->munge) {
      if (auth->failed) return;  // the connection is being closed: nothing after a refusal is taken
      if (!auth->ok || line.starts_with(kAuthHead)) {
        if (Status s = Authenticate(line, auth); !s.ok()) {
          auth->failed = true;
          ++stats_.auth_failures;
          Reject(s.message(), source, line_no, line.substr(0, 64));
        }
        return;
      }
      if (!auth->per_window && auth->lines_left > 0 && --auth->lines_left == 0) auth->ok = false;  // JSON lines: the next one is due
    }
    if (batch_->empty() && dl_buf_.empty()) first_pending_ns_ = MonotonicNs();
    Status s = batch_->Add(line, auth);
    if (!s.ok()) {
      Reject(s.message(), source, line_no, line);
      return;
    }
    ++stats_.accepted;
    if (batch_->full()) Flush();
  }

  // --munge-host-map FILE: "ADDRESS HOST" lines (# comments).
  Status LoadHostMap(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Status::Invalid("--munge-host-map " + path + ": cannot be read");
    std::string line;
    int no = 0;
    while (std::getline(in, line)) {
      ++no;
      if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
      std::istringstream ls(line);
      std::string addr, name, extra;
      if (!(ls >> addr)) continue;
      in_addr a{};
      if (!(ls >> name) || (ls >> extra) || inet_pton(AF_INET, addr.c_str(), &a) != 1 || name.size() > 255)
        return Status::Invalid("--munge-host-map " + path + ":" + std::to_string(no) +
                               ": expected an IPv4 address and a host name, not '" + line.substr(0, 80) + "'");
      host_map_[a.s_addr] = name;
    }
    have_host_map_ = true;
    return Status::Ok();
  }
  Result<std::string> EncodingHost(const MungeCred& c) {
    char a[INET_ADDRSTRLEN] = "?";
    in_addr ia{};
    ia.s_addr = c.addr4;
    inet_ntop(AF_INET, &ia, a, sizeof a);
    if (have_host_map_) {
      auto it = host_map_.find(c.addr4);
      if (it == host_map_.end())
        return Status::Invalid(std::string("auth: the credential was encoded on ") + a +
                               ", an address --munge-host-map does not name");
      return it->second;
    }
    const int64_t now = MonotonicNs();
    if (auto it = resolved_.find(c.addr4); it != resolved_.end() && it->second.second > now) return it->second.first;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr = ia;
    char name[NI_MAXHOST];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&sa), sizeof sa, name, sizeof name, nullptr, 0, NI_NAMEREQD) != 0)
      return Status::Invalid(std::string("auth: the credential was encoded on ") + a +
                             ", which resolves to no host name (give --munge-host-map)");
    std::string h = name;
    if (auto dot = h.find('.'); dot != std::string::npos && dot > 0) h.resize(dot);  // as gethostname() gives it
    if (resolved_.size() > 65536) resolved_.clear();
    resolved_[c.addr4] = {h, now + 600ll * 1000000000};
    return h;
  }

  // Exactly {"iosonar.auth":"munge","credential":"MUNGE:<base64>:"} (what
  // the senders write; a credential has no quote or backslash in it).
  static constexpr std::string_view kAuthHead = "{\"iosonar.auth\":\"munge\",\"credential\":\"";
  Status Authenticate(std::string_view line, ConnAuth* auth) {
    const std::string_view want =
        "the first line of every batch (Lumberjack window, or 4096 JSON lines) must be "
        "{\"iosonar.auth\":\"munge\",\"credential\":\"MUNGE:...\"} (--auth munge)";
    const std::string_view kHead = kAuthHead;
    if (!line.starts_with(kHead) || !line.ends_with("\"}")) return Status::Invalid("auth: " + std::string(want));
    const std::string_view body = line.substr(kHead.size(), line.size() - kHead.size() - 2);
    if (body.find_first_of("\"\\") != std::string_view::npos || !body.starts_with("MUNGE:"))
      return Status::Invalid("auth: " + std::string(want));
    const std::optional<std::string> cred{std::string(body)};
    auto c = MungeDecode(opts_.munge_socket, *cred);
    if (!c.ok()) return Status::Invalid("auth: credential refused: " + c.status().message());
    if (c->payload.size() > 255) return Status::Invalid("auth: the credential's payload is over 255 bytes");
    // The host is the one munged says encoded the credential (its address,
    // named by --munge-host-map or by resolving it); the payload, which the
    // sender chooses, is only a hint.
    auto host = EncodingHost(*c);
    if (!host.ok()) return host.status();
    const int64_t expires = (c->encode_time ? c->encode_time : NowNs() / 1000000000) + (c->ttl > 0 ? c->ttl : 300) + 60;
    if (Status st = replay_.Check(Fnv1a(*cred), expires); !st.ok()) return st;
    auth->ok = true;
    auth->authenticated = true;
    auth->lines_left = kLinesPerCredential;
    auth->uid = c->uid;
    auth->host = *host;
    auth->privileged = c->uid == 0 || c->uid == geteuid();
    auth->owners = owners_.get();
    for (uid_t t : opts_.trusted_uids) auth->privileged = auth->privileged || c->uid == t;
    ++stats_.credentials;
    return Status::Ok();
  }

  void Reject(std::string_view reason, std::string_view source, uint64_t line_no, std::string_view line) {
    if (batch_->empty() && dl_buf_.empty()) first_pending_ns_ = MonotonicNs();
    ++stats_.rejected;
    dl_buf_ += "{\"reason\":";
    AppendJsonString(&dl_buf_, reason);
    dl_buf_ += ",\"source\":";
    AppendJsonString(&dl_buf_, source);
    dl_buf_ += ",\"line_no\":";
    dl_buf_ += std::to_string(line_no);
    dl_buf_ += ",\"line\":";
    AppendJsonString(&dl_buf_, line.substr(0, kDeadLetterLineMax));
    dl_buf_ += "}\n";
    if (dl_buf_.size() >= std::min<size_t>(1 << 20, opts_.max_dead_letter_bytes / 4)) WriteDeadLetters();
  }

  std::string OversizedReason(size_t n) const {
    return "oversized line (" + std::to_string(n) + " bytes > " + std::to_string(opts_.max_line_bytes) + ")";
  }

  bool pending() const { return (batch_ && !batch_->empty()) || !dl_buf_.empty() || held_; }
  // Everything taken in so far is stored or set aside (an acknowledgement may be sent).
  bool committed() const { return !pending(); }
  int64_t first_pending_ns() const { return first_pending_ns_; }

  void Flush() {
    if (batch_ && !batch_->empty()) {
      AppendStats as;
      if (Status s = batch_->Commit(&as); s.ok()) {
        stats_.stored += as.inserted;
        stats_.duplicates += as.duplicates;
        if (held_) {
          held_ = false;
          stats_.held_records = 0;
          std::fprintf(stderr, "iosonar collector: the store writes again: %zu held records stored, reading resumes\n",
                       batch_->size());
          SelfReport("store", true,
                     "the store writes again after " + std::to_string((MonotonicNs() - stall_start_ns_) / 1000000000) +
                         " s: " + std::to_string(batch_->size()) + " held records stored, reading resumes");
        }
      } else if (hold_on_store_error_) {
        // Back-pressure instead of loss: keep the batch, stop reading (the
        // TCP loop sees held()) so senders wait or spool, retry.
        held_lines_.insert(held_lines_.end(), batch_->raw_lines().begin(), batch_->raw_lines().end());
        stats_.held_records = held_lines_.size();
        if (!held_) {
          held_ = true;
          stall_start_ns_ = MonotonicNs();
          ++stats_.store_stalls;
          SelfReport("store", false,
                     "the store cannot write (" + s.message() + "): " + std::to_string(held_lines_.size()) +
                         " records held, not reading from senders",
                     true);
          std::fprintf(stderr,
                       "iosonar collector: the store cannot write (%s): %zu records held, not reading from senders "
                       "until it can (retrying every second)\n",
                       s.message().c_str(), held_lines_.size());
        }
        batch_->Clear();
        WriteDeadLetters();
        return;
      } else {
        stats_.store_errors += batch_->size();
        Warn(kStoreWarn, "store: " + s.message() + " (" + std::to_string(stats_.store_errors) + " records lost so far)");
      }
      if (!opts_.redis_url.empty()) PushToRedis();
      if (forward_) Forward();
      batch_->Clear();
    }
    WriteDeadLetters();
  }

  CollectorStats& stats() { return stats_; }

  // The collector's own iosonar.sampler record (sampler.name "collector"): what
  // it stored and set aside since the last one, and its state, so what it
  // refused or lost reaches the data and not only stderr. Sent when the store
  // stalls and resumes, every report interval, and at stop. held: put straight
  // among the held lines (the store cannot take it now; it is stored with them).
  void SelfReport(std::string_view source, bool ok, const std::string& error, bool held = false) {
    if (self_host_.empty()) {
      self_host_ = HostName();
      self_stream_ = static_cast<int64_t>(Fnv1a(self_host_ + "/collector/" + std::to_string(getpid()) + "/" +
                                                std::to_string(NowNs())) >> 1);
    }
    const uint64_t set_aside = stats_.rejected + stats_.refused_connections + stats_.auth_failures +
                               stats_.peer_limit_refused + stats_.evicted_pending + stats_.handshake_timeouts +
                               stats_.uid_limit_closed;
    char buf[2048];
    JsonLine j(buf, sizeof buf);
    j.Begin();
    j.Key(field::kTimestamp);
    j.IsoMillis(NowNs());
    j.KStr(field::kEventDataset, dataset::kSampler.name());
    j.KInt(field::kEventStream, self_stream_);
    j.KInt(field::kEventSeq, self_seq_++);
    j.KStr(field::kHostName, self_host_);
    j.KStr(field::kSamplerName, "collector");
    j.KStr(field::kSamplerSource, source);
    j.Key(field::kSamplerOk);
    j.Bool(ok);
    j.KInt(field::kSamplerDurationNs, 0);
    j.KInt(field::kSamplerWarnings, static_cast<int64_t>(set_aside - reported_set_aside_));
    j.KInt(field::kSamplerRecords, static_cast<int64_t>(stats_.stored - reported_stored_));
    if (!error.empty()) j.KStr(field::kSamplerError, error.substr(0, 512));
    j.End();
    if (!j.ok()) return;
    reported_set_aside_ = set_aside;
    reported_stored_ = stats_.stored;
    std::string_view line(buf, j.size() - 1);  // without its '\n'
    if (held) {
      held_lines_.emplace_back(line);
      stats_.held_records = held_lines_.size();
    } else {
      Line("collector", 0, line);
    }
  }

  // The TCP loop holds a batch the store could not write (and stops reading)
  // instead of dropping it; IngestFile reports the failure instead.
  void set_hold_on_store_error(bool on) { hold_on_store_error_ = on; }
  bool held() const { return held_; }
  // Tries the held batch again; true once it is stored.
  bool RetryHeld() {
    if (!held_) return true;
    std::vector<std::string> lines;
    lines.swap(held_lines_);
    for (const auto& l : lines) (void)batch_->Add(l);  // they were valid when first taken
    Flush();
    return !held_;
  }
  // At Stop, a batch the store still cannot write is lost: counted and said.
  void GiveUpHeld() {
    if (!held_) return;
    stats_.store_errors += held_lines_.size();
    std::fprintf(stderr, "iosonar collector: stopping while the store cannot write: %zu held records lost\n",
                 held_lines_.size());
    held_lines_.clear();
    held_ = false;
    stats_.held_records = 0;
  }

  // Releases the store, Redis and the dead-letter file (after a final Flush).
  void Close() {
    batch_.reset();
    store_.reset();
    redis_.reset();
    forward_.reset();
    if (dl_fd_ >= 0) close(dl_fd_);
    dl_fd_ = -1;
    dl_bytes_ = -1;
  }
  size_t max_line_bytes() const { return opts_.max_line_bytes; }
  size_t max_buffer_bytes() const { return opts_.max_buffer_bytes; }
  // All connections' line buffers together (the Framers keep it).
  size_t& buffer_bytes() { return buffer_bytes_; }

 private:
  void PushToRedis() {
    auto lines = batch_->raw_lines();
    if (!redis_ && redis_retry_.Due(MonotonicNs())) {
      auto r = RedisClient::Connect(opts_.redis_url);
      if (r.ok()) {
        redis_ = std::move(r.value());
        redis_retry_.Succeeded();
      } else {
        RedisDown(r.status());
      }
    }
    if (!redis_) {
      stats_.redis_errors += lines.size();
      return;
    }
    if (Status s = redis_->RPushBatch(opts_.redis_list, lines); s.ok()) {
      stats_.redis_pushed += lines.size();
    } else {
      stats_.redis_errors += lines.size();
      Warn(kRedisWarn, s.message() + " (records are stored; " + std::to_string(stats_.redis_errors) +
                           " not pushed so far)");
      if (s.code() == Code::kUnavailable) {
        redis_.reset();
        RedisDown(s);
      }
    }
  }

  // The batch's accepted lines to the forward output, after the store.
  // While the output is down (fw_retry_) or failing they go to the forward
  // spool; the spool is sent first, oldest first, once it answers.
  void Forward() {
    auto lines = batch_->raw_lines();
    fw_buf_.clear();
    for (auto l : lines) {
      fw_buf_.append(l);
      fw_buf_.push_back('\n');
    }
    if (!fw_retry_.Due(MonotonicNs()) || !ReplayForwardSpool()) {
      SpoolForward(fw_buf_, lines.size());
      return;
    }
    Status s = SendForward(fw_buf_, lines.size());
    if (!s.ok()) SpoolForward(fw_buf_, lines.size());
  }

 public:
  // True if lines wait in the forward spool.
  bool forward_spool_waiting() const { return forward_ && spool_size_ > spool_sent_; }

  // Sends the forward spool when the output is due; true once it is empty.
  // The spool is streamed in chunks of whole lines (forward_spool_chunk_bytes;
  // one longer line is read whole): what the output acknowledged is recorded
  // in SPOOL.sent after each chunk, so a failure (or a crash) resends from the
  // first chunk not acknowledged; a chunk cut off mid-send is resent, and what
  // of it had arrived is a 409 (deterministic _id), not stored twice.
  bool ReplayForwardSpool() {
    if (spool_size_ <= spool_sent_) return true;
    if (!fw_retry_.Due(MonotonicNs())) return false;
    int fd = open(spool_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {  // removed under us: nothing left to send
      Warn(kForwardWarn, Status::FromErrno("forward spool " + spool_path_, errno).message());
      ClearSpool();
      return true;
    }
    const size_t chunk = std::max<size_t>(opts_.forward_spool_chunk_bytes, 1);
    std::string buf;
    bool ok = true;
    while (spool_sent_ < spool_size_) {
      // Read up to chunk bytes, more only while no newline ends a line.
      buf.clear();
      size_t line_end = std::string::npos;
      uint64_t at = spool_sent_;
      while (at < spool_size_) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, spool_size_ - at));
        const size_t old = buf.size();
        buf.resize(old + want);
        ssize_t r = pread(fd, buf.data() + old, want, static_cast<off_t>(at));
        if (r < 0 && errno == EINTR) {
          buf.resize(old);
          continue;
        }
        if (r <= 0) {
          buf.resize(old);
          break;
        }
        buf.resize(old + static_cast<size_t>(r));
        at += static_cast<uint64_t>(r);
        line_end = buf.rfind('\n');
        if (line_end != std::string::npos) break;
      }
      stats_.forward_spool_buffer_max = std::max<uint64_t>(stats_.forward_spool_buffer_max, buf.capacity());
      if (line_end == std::string::npos) {  // unreadable, or a torn end (OpenSpool cut it): said, and dropped
        Warn(kForwardWarn, "forward spool " + spool_path_ + ": " + std::to_string(spool_size_ - spool_sent_) +
                               " bytes from offset " + std::to_string(spool_sent_) +
                               " could not be read as whole lines; not forwarded (they are stored)");
        spool_sent_ = spool_size_;
        break;
      }
      std::string_view piece(buf.data(), line_end + 1);
      const auto n = static_cast<uint64_t>(std::count(piece.begin(), piece.end(), '\n'));
      if (!SendForward(piece, n).ok()) {
        ok = false;
        break;
      }
      spool_sent_ += piece.size();
      stats_.forward_spooled -= std::min(stats_.forward_spooled, n);
      if (spool_sent_ < spool_size_) WriteSpoolSent();
    }
    close(fd);
    if (!ok) return false;
    ClearSpool();
    return true;
  }

 private:
  // One forward attempt; counts what arrived (created or already stored).
  Status SendForward(std::string_view buf, uint64_t n) {
    const SinkCounters before = forward_->counters();
    Status s = forward_->Send(buf, n);
    if (s.ok()) s = forward_->Flush();
    const SinkCounters after = forward_->counters();
    const uint64_t done = (after.lines_sent - before.lines_sent) + (after.already_stored - before.already_stored);
    if (!s.ok()) {
      fw_retry_.Failed(MonotonicNs());
      Warn(kForwardWarn, "forward to " + opts_.forward_output + ": " + s.message() + " (records are stored; " +
                             std::to_string(stats_.forward_spooled + n) + " lines wait in " + spool_path_ + ")");
      return s;
    }
    fw_retry_.Succeeded();
    stats_.forwarded += done;
    if (done < n) {  // rejected by the output (4xx): its dead letters
      stats_.forward_errors += n - done;
      Warn(kForwardWarn, "forward to " + opts_.forward_output + ": some records rejected (records are stored; " +
                             std::to_string(stats_.forward_errors) + " not forwarded so far)");
    }
    return Status::Ok();
  }

  void SpoolForward(std::string_view buf, uint64_t n) {
    // The acknowledged head is dropped (the unsent tail copied) before the file would pass the bound.
    if (spool_size_ + buf.size() > opts_.forward_spool_max_bytes && spool_sent_ > 0) CompactSpool();
    if (spool_size_ + buf.size() > opts_.forward_spool_max_bytes) {
      stats_.forward_errors += n;
      Warn(kForwardWarn, "forward spool " + spool_path_ + " is full (" + std::to_string(opts_.forward_spool_max_bytes) +
                             " bytes): " + std::to_string(stats_.forward_errors) + " records not forwarded so far (they are stored)");
      return;
    }
    int fd = open(spool_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && WriteAllFd(fd, buf);
    if (fd >= 0) close(fd);
    if (!ok) {
      stats_.forward_errors += n;
      Warn(kForwardWarn, Status::FromErrno("forward spool " + spool_path_, errno).message());
      // A partly written batch is cut off again, so the next one starts a line.
      if (truncate(spool_path_.c_str(), static_cast<off_t>(spool_size_)) != 0 && spool_size_ == 0) unlink(spool_path_.c_str());
      return;
    }
    spool_size_ += buf.size();
    stats_.forward_spooled += n;
  }

  static bool WriteAllFd(int fd, std::string_view b) {
    size_t off = 0;
    while (off < b.size()) {
      ssize_t w = write(fd, b.data() + off, b.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      off += static_cast<size_t>(w);
    }
    return true;
  }

  std::string SentPath() const { return spool_path_ + ".sent"; }

  // At start: the spool's size without a torn last line (a crash mid-write;
  // cut off, not resent), the acknowledged offset from SPOOL.sent, and the
  // lines after it (counted in bounded reads).
  void OpenSpool() {
    spool_size_ = spool_sent_ = 0;
    stats_.forward_spooled = 0;
    int fd = open(spool_path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      unlink(SentPath().c_str());
      return;
    }
    struct stat sb {};
    uint64_t size = fstat(fd, &sb) == 0 ? static_cast<uint64_t>(sb.st_size) : 0;
    char b[1 << 16];
    uint64_t end = size;  // just past the last newline
    while (end > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof b, end));
      ssize_t r = pread(fd, b, want, static_cast<off_t>(end - want));
      if (r < 0 && errno == EINTR) continue;
      if (r != static_cast<ssize_t>(want)) {
        end = 0;
        break;
      }
      const void* nl = memrchr(b, '\n', want);
      if (nl) {
        end = end - want + static_cast<uint64_t>(static_cast<const char*>(nl) - b) + 1;
        break;
      }
      end -= want;
    }
    if (end < size && ftruncate(fd, static_cast<off_t>(end)) != 0) end = 0;
    spool_size_ = end;
    std::string sent = ReadSmallFile(SentPath());
    char* e = nullptr;
    unsigned long long off = std::strtoull(sent.c_str(), &e, 10);
    // A missing or unreadable offset resends from the start (harmless: 409s).
    spool_sent_ = (!sent.empty() && e && (*e == '\n' || *e == 0) && off <= spool_size_) ? off : 0;
    for (uint64_t at = spool_sent_; at < spool_size_;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof b, spool_size_ - at));
      ssize_t r = pread(fd, b, want, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      stats_.forward_spooled += static_cast<uint64_t>(std::count(b, b + r, '\n'));
      at += static_cast<uint64_t>(r);
    }
    close(fd);
    if (spool_size_ == 0 || spool_sent_ == spool_size_) ClearSpool();
  }

  static std::string ReadSmallFile(const std::string& path) {
    std::string out;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char b[64];
    ssize_t r;
    while ((r = read(fd, b, sizeof b)) > 0 && out.size() < 64) out.append(b, static_cast<size_t>(r));
    close(fd);
    return out;
  }

  // Records the acknowledged offset (write and rename: a crash leaves the old or the new one).
  void WriteSpoolSent() {
    const std::string tmp = SentPath() + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && WriteAllFd(fd, std::to_string(spool_sent_) + "\n");
    if (fd >= 0) close(fd);
    if (!ok || rename(tmp.c_str(), SentPath().c_str()) != 0) unlink(tmp.c_str());
    // else the old offset stays: a later replay resends more (409s, not twice)
  }

  void ClearSpool() {
    unlink(spool_path_.c_str());
    unlink(SentPath().c_str());
    spool_size_ = spool_sent_ = 0;
    stats_.forward_spooled = 0;
  }

  // Copies the unsent tail to a new spool in bounded pieces. The offset file
  // goes first: a crash in between resends the old spool whole (409s), never skips.
  void CompactSpool() {
    const std::string tmp = spool_path_ + ".tmp";
    int in = open(spool_path_.c_str(), O_RDONLY | O_CLOEXEC);
    int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = in >= 0 && out >= 0;
    std::string b(1 << 20, '\0');
    for (uint64_t at = spool_sent_; ok && at < spool_size_;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(b.size(), spool_size_ - at));
      ssize_t r = pread(in, b.data(), want, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      ok = r > 0 && WriteAllFd(out, std::string_view(b.data(), static_cast<size_t>(r)));
      at += r > 0 ? static_cast<uint64_t>(r) : 0;
    }
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    if (ok && (unlink(SentPath().c_str()) == 0 || errno == ENOENT) && rename(tmp.c_str(), spool_path_.c_str()) == 0) {
      spool_size_ -= spool_sent_;
      spool_sent_ = 0;
      return;
    }
    unlink(tmp.c_str());
    if (spool_sent_ > 0) WriteSpoolSent();  // the offset file may be gone: write it again
  }

  void RedisDown(const Status& why) {
    redis_retry_.Failed(MonotonicNs());
    Warn(kRedisWarn, why.message() + " (records are stored; " + std::to_string(stats_.redis_errors) +
                         " not pushed so far; will retry)");
  }

  void WriteDeadLetters() {
    if (dl_buf_.empty()) return;
    if (dl_fd_ < 0) {
      dl_fd_ = open(dl_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (dl_fd_ < 0) {
        Warn(kStoreWarn, Status::FromErrno("dead-letter file " + dl_path_, errno).message());
        dl_buf_.clear();
        return;
      }
    }
    if (dl_bytes_ < 0) {
      struct stat sb;
      dl_bytes_ = fstat(dl_fd_, &sb) == 0 ? sb.st_size : 0;
    }
    if (dl_bytes_ > 0 && static_cast<uint64_t>(dl_bytes_) + dl_buf_.size() > opts_.max_dead_letter_bytes) {
      // Bounded on disk: the current file becomes FILE.1 (replacing the
      // previous one), so at most twice the bound is kept.
      close(dl_fd_);
      dl_fd_ = -1;
      if (rename(dl_path_.c_str(), (dl_path_ + ".1").c_str()) != 0)
        Warn(kStoreWarn, Status::FromErrno("rotate " + dl_path_, errno).message());
      ++stats_.dead_letter_rotations;
      dl_bytes_ = 0;
      dl_fd_ = open(dl_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (dl_fd_ < 0) {
        Warn(kStoreWarn, Status::FromErrno("dead-letter file " + dl_path_, errno).message());
        dl_buf_.clear();
        return;
      }
    }
    size_t off = 0;
    while (off < dl_buf_.size()) {
      ssize_t n = write(dl_fd_, dl_buf_.data() + off, dl_buf_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Warn(kStoreWarn, Status::FromErrno("write " + dl_path_, errno).message());
        break;
      }
      off += static_cast<size_t>(n);
      dl_bytes_ += n;
    }
    dl_buf_.clear();
  }

  // Problems that repeat per batch (Redis down, disk full) would flood the
  // log: say each kind at most once a minute, so one does not hide the other.
  enum WarnKind { kRedisWarn, kStoreWarn, kForwardWarn, kWarnKinds };
  void Warn(WarnKind kind, const std::string& raw) {
    const std::string msg = RedactUrl(raw);  // no password of a URL it names (--es http://user:PASS@...)
    int64_t now = MonotonicNs();
    if (last_warn_ns_[kind] && now - last_warn_ns_[kind] < kWarnIntervalNs) {
      ++suppressed_[kind];
      return;
    }
    if (suppressed_[kind])
      std::fprintf(stderr, "iosonar collector: %s (%llu similar messages suppressed)\n", msg.c_str(),
                   static_cast<unsigned long long>(suppressed_[kind]));
    else
      std::fprintf(stderr, "iosonar collector: %s\n", msg.c_str());
    last_warn_ns_[kind] = now;
    suppressed_[kind] = 0;
  }

  CollectorOptions opts_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<IngestBatch> batch_;  // after store_: it may hold a transaction open
  std::unique_ptr<RedisClient> redis_;
  std::unique_ptr<RecordSink> forward_;
  std::string fw_buf_;
  std::string spool_path_;
  uint64_t spool_size_ = 0;  // bytes in the spool file (whole lines)
  uint64_t spool_sent_ = 0;  // its first bytes the output acknowledged (SPOOL.sent)
  // A connection attempt can take the whole connect timeout (a host that
  // drops packets), so a down Redis or forward output is skipped for 1 s
  // doubling to 30 s rather than stall ingest with its retries.
  Backoff fw_retry_{1000000000, 30000000000}, redis_retry_{1000000000, 30000000000};
  std::string dl_path_, dl_buf_;
  int dl_fd_ = -1;
  int64_t dl_bytes_ = -1;  // size of the dead-letter file; -1 = not known yet
  CollectorStats stats_;
  int64_t first_pending_ns_ = 0;
  bool hold_on_store_error_ = false;
  bool held_ = false;
  std::vector<std::string> held_lines_;
  size_t buffer_bytes_ = 0;
  std::unique_ptr<JobOwners> owners_;  // --mysql with --auth munge
  ReplayGuard replay_;                 // --auth munge: credentials seen, across restarts
  std::unordered_map<uint32_t, std::string> host_map_;  // --munge-host-map: IPv4 address -> host name
  bool have_host_map_ = false;
  std::unordered_map<uint32_t, std::pair<std::string, int64_t>> resolved_;  // address -> (name, until)
  std::string self_host_;
  int64_t self_stream_ = 0, self_seq_ = 0;
  uint64_t reported_set_aside_ = 0, reported_stored_ = 0;
  int64_t stall_start_ns_ = 0;
  int64_t last_warn_ns_[kWarnKinds] = {};
  uint64_t suppressed_[kWarnKinds] = {};
};

// ---- Framer: bytes -> lines, with a bound on line length ---------------------
// An oversized line is not buffered whole: its first bytes are kept for the
// dead letter and the rest is skipped up to the next '\n'.
class Framer {
 public:
  // total: the bytes all Framers of one pipeline hold (with their bound).
  Framer(std::string source, size_t max_line, size_t* total = nullptr, size_t total_max = SIZE_MAX)
      : source_(std::move(source)), max_line_(max_line), total_(total), total_max_(total_max) {
    Resize(std::min<size_t>(kBaseBuffer, Limit()));
  }
  ~Framer() { Resize(0); }
  Framer(Framer&& o) noexcept
      : source_(std::move(o.source_)), max_line_(o.max_line_), total_(o.total_), total_max_(o.total_max_),
        buf_(std::move(o.buf_)), start_(o.start_), end_(o.end_), line_no_(o.line_no_), skipping_(o.skipping_),
        skip_total_(o.skip_total_), skip_line_no_(o.skip_line_no_), skip_prefix_(std::move(o.skip_prefix_)),
        auth_(o.auth_) {
    o.buf_.clear();  // the moved-from Framer no longer counts its bytes
  }
  Framer& operator=(Framer&&) = delete;

  // Where the next read should go; {nullptr, 0} never: when the buffer may
  // not grow (the pipeline's bound), the partial line becomes oversized.
  std::pair<char*, size_t> Space(Pipeline* p) {
    if (end_ == buf_.size()) {
      if (start_ > 0) {
        std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
        end_ -= start_;
        start_ = 0;
      } else {
        const size_t want = std::min(Limit(), buf_.size() * 2);
        if (total_ && *total_ - buf_.size() + want > total_max_) {
          // Out of the collector's memory budget: this line is dropped
          // (its first bytes go to the dead letter), the buffer stays.
          ++p->stats().memory_bound_lines;
          StartSkipping(true);
        } else {
          Resize(want);
        }
      }
    }
    return {buf_.data() + end_, buf_.size() - end_};
  }

  // n bytes were read into Space().
  void Commit(size_t n, Pipeline* p) {
    size_t scan = end_;
    end_ += n;
    while (scan < end_) {
      auto* nl = static_cast<char*>(std::memchr(buf_.data() + scan, '\n', end_ - scan));
      if (!nl) break;
      size_t lend = static_cast<size_t>(nl - buf_.data());
      if (skipping_) {
        skipping_ = false;
        KeepPrefix(start_, lend);
        p->stats().lines++;
        p->Reject(SkipReason(p, skip_total_ + (lend - start_)), source_, skip_line_no_, skip_prefix_);
        Shrink();
      } else {
        p->Line(source_, ++line_no_, std::string_view(buf_.data() + start_, lend - start_), auth_);
      }
      start_ = scan = lend + 1;
    }
    if (skipping_) {
      KeepPrefix(start_, end_);
      skip_total_ += end_ - start_;
      start_ = end_ = 0;
    } else if (end_ - start_ > max_line_ + 1) {  // +1: a CR before the '\n' is not part of the line
      StartSkipping(false);
    }
    if (start_ == end_) {
      start_ = end_ = 0;
      Shrink();
    }
  }

  // End of the stream: a last line without '\n' was cut off in transit.
  void Finish(Pipeline* p, const char* why) {
    if (skipping_) {
      skipping_ = false;
      p->stats().lines++;
      p->Reject(SkipReason(p, skip_total_), source_, skip_line_no_, skip_prefix_);
    } else if (end_ > start_) {
      std::string_view rest(buf_.data() + start_, end_ - start_);
      ++line_no_;
      if (!IsBlank(rest)) {
        p->stats().lines++;
        p->Reject(why, source_, line_no_, rest);
      }
    }
    start_ = end_ = 0;
  }

  const std::string& source() const { return source_; }
  void set_auth(ConnAuth* a) { auth_ = a; }

 private:
  // An oversized line's dead letter keeps its first 4 KiB: enough to tell
  // what it was, and small enough that a thousand of them at once stay cheap.
  static constexpr size_t kOversizedPrefixMax = 4096;
  void KeepPrefix(size_t from, size_t to) {
    size_t room = kOversizedPrefixMax - std::min(kOversizedPrefixMax, skip_prefix_.size());
    skip_prefix_.append(buf_.data() + from, std::min(room, to - from));
  }

  // A full line, its CR and '\n', and one byte more to tell it is too long.
  size_t Limit() const { return max_line_ + 3; }
  static constexpr size_t kBaseBuffer = 16 * 1024;

  void StartSkipping(bool memory_bound) {
    skipping_ = true;
    skip_for_memory_ = memory_bound;
    skip_line_no_ = ++line_no_;
    skip_total_ = end_ - start_;
    skip_prefix_.clear();
    KeepPrefix(start_, end_);
    start_ = end_ = 0;
  }
  std::string SkipReason(Pipeline* p, size_t n) const {
    if (!skip_for_memory_) return p->OversizedReason(n);
    return "line dropped at " + std::to_string(n) + " bytes: the collector's line buffers reached their bound (" +
           std::to_string(total_max_) + " bytes in all connections)";
  }
  void Resize(size_t n) {
    if (total_) *total_ = *total_ - buf_.size() + n;
    buf_.resize(n);
    buf_.shrink_to_fit();
  }
  // Back to the base size once a long line is done, so one big line does not
  // hold its memory for the life of the connection.
  void Shrink() {
    if (buf_.size() > kBaseBuffer && end_ - start_ <= kBaseBuffer / 2) {
      if (start_ > 0) std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
      Resize(std::max(kBaseBuffer, end_));
    }
  }

  std::string source_;
  size_t max_line_;
  size_t* total_;
  size_t total_max_;
  std::vector<char> buf_;
  size_t start_ = 0, end_ = 0;
  uint64_t line_no_ = 0;
  bool skipping_ = false;
  bool skip_for_memory_ = false;
  size_t skip_total_ = 0;
  uint64_t skip_line_no_ = 0;
  std::string skip_prefix_;
  ConnAuth* auth_ = nullptr;
};

constexpr const char* kTruncatedAtEof = "truncated line at end of stream";
constexpr const char* kTruncatedAtStop = "truncated line at collector shutdown";

// "tcp://HOST:PORT" with PORT 0 allowed (ParseUrl insists on a real port).
Status ParseListen(const std::string& text, std::string* host, std::string* port) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid("bad listen address \"" + text + "\": " + why + " (expected tcp://HOST:PORT)");
  };
  constexpr std::string_view kScheme = "tcp://";
  if (text.compare(0, kScheme.size(), kScheme) != 0) return bad("not a tcp:// URL");
  std::string rest = text.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon;
  if (!rest.empty() && rest[0] == '[') {
    size_t close_br = rest.find(']');
    if (close_br == std::string::npos || close_br + 1 >= rest.size() || rest[close_br + 1] != ':')
      return bad("unterminated [IPv6] host or missing port");
    *host = rest.substr(1, close_br - 1);
    colon = close_br + 1;
  } else {
    colon = rest.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    *host = rest.substr(0, colon);
  }
  *port = rest.substr(colon + 1);
  if (port->empty() || port->size() > 5 ||
      !std::all_of(port->begin(), port->end(), [](unsigned char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(*port) > 65535)
    return bad("port \"" + *port + "\" is not a number from 0 to 65535");
  if (host->empty()) return bad("missing host (use 0.0.0.0 to listen on all interfaces)");
  return Status::Ok();
}

// The peer's address alone (the per-address limits).
std::string PeerAddress(const sockaddr_storage& ss) {
  char addr[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, addr, sizeof addr);
  if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, addr, sizeof addr);
  return addr;
}

std::string PeerName(const sockaddr_storage& ss) {
  char addr[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
    port = ntohs(a->sin_port);
    return "tcp " + std::string(addr) + ":" + std::to_string(port);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof addr);
    port = ntohs(a->sin6_port);
  }
  return "tcp [" + std::string(addr) + "]:" + std::to_string(port);
}

// ---- the TCP collector ---------------------------------------------------------

class TcpCollector final : public Collector {
 public:
  explicit TcpCollector(const CollectorOptions& o) : opts_(o), pipe_(o) {}

  ~TcpCollector() override {
    (void)Stop();
    for (int fd : {listen_fd_, epoll_fd_, wake_fd_})
      if (fd >= 0) close(fd);
  }

  Status Init() {
    std::string host, port;
    if (auto s = ParseListen(opts_.listen, &host, &port); !s.ok()) return s;
    if (!opts_.auth.empty() && opts_.auth != "munge")
      return Status::Invalid("--auth " + opts_.auth + ": unknown (known: munge)");
    const bool loopback = host == "127.0.0.1" || host == "::1" || host == "localhost";
    if (opts_.tls_cert.empty() && (!opts_.tls_key.empty() || !opts_.tls_ca.empty() || opts_.require_client_cert))
      return Status::Invalid("--tls-key, --tls-ca and --require-client-cert need --tls-cert (the listener's certificate)");
    if (opts_.require_client_cert && opts_.tls_ca.empty())
      return Status::Invalid("--require-client-cert needs --tls-ca (the CA that issues the client certificates)");
    if (!opts_.tls_cert.empty()) {
      TlsConfig tc;
      tc.cert_file = opts_.tls_cert;
      tc.key_file = opts_.tls_key;
      tc.ca_file = opts_.tls_ca;
      tc.require_peer_cert = opts_.require_client_cert;
      auto ctx = TlsContext::Server(tc);
      if (!ctx.ok()) return Status(ctx.status().code(), "collector: " + ctx.status().message());
      tls_ctx_ = std::move(ctx.value());
    }
    if (opts_.auth.empty() && !opts_.require_client_cert && !loopback)
      std::fprintf(stderr,
                   "iosonar collector: WARNING: listening on %s without --auth or --require-client-cert: anyone who "
                   "can reach it can write records for any job and host (use --auth munge or client certificates, "
                   "or keep it on loopback)\n",
                   opts_.listen.c_str());
    else if (!loopback && !tls_ctx_)
      std::fprintf(stderr,
                   "iosonar collector: WARNING: listening on %s without TLS: senders are authenticated per batch, "
                   "but what they send can be read and altered on the way (use --tls-cert/--tls-key)\n",
                   opts_.listen.c_str());
    if (auto s = pipe_.Open(); !s.ok()) return s;
    pipe_.set_hold_on_store_error(true);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
      return Status::Invalid("listen address " + opts_.listen + ": " + gai_strerror(rc));
    Status last = Status::Io("listen " + opts_.listen + ": no usable address");
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        last = Status::FromErrno("listen " + opts_.listen + ": socket", errno);
        continue;
      }
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        last = Status::FromErrno("listen " + opts_.listen, errno);
        close(fd);
        continue;
      }
      listen_fd_ = fd;
      break;
    }
    freeaddrinfo(res);
    if (listen_fd_ < 0) return last;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) return Status::FromErrno("collector: epoll/eventfd", errno);
    if (auto s = Watch(listen_fd_, &listen_tag_); !s.ok()) return s;
    if (auto s = Watch(wake_fd_, &wake_tag_); !s.ok()) return s;
    // The I/O thread takes no signals: SIGINT/SIGTERM belong to the
    // application, and a SIGPIPE from a dropped Redis link must become EPIPE.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    running_ = true;
    thread_ = std::thread([this] { Loop(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return Status::Ok();
  }

  int port() const override { return port_; }

  Status Drain(int min_connections, int timeout_ms) override {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    // A sender that connected, wrote and closed before this call may still
    // sit in the listen backlog, unseen: have the loop accept everything
    // queued before the conditions below are believed.
    const uint64_t gen = sync_requested_.fetch_add(1) + 1;
    Wake();
    std::unique_lock lk(mu_);
    for (;;) {
      if (snap_synced_ >= gen && snap_.connections >= static_cast<uint64_t>(std::max(min_connections, 0)) &&
          snap_.open_connections == 0 && !snap_pending_)
        return Status::Ok();
      if (!running_) return Status::Unavailable("collector: stopped before draining");
      if (cv_.wait_until(lk, deadline) == std::cv_status::timeout) {
        const auto& s = snap_;
        return Status::Unavailable("collector: drain timed out after " + std::to_string(timeout_ms) +
                                   " ms (connections " + std::to_string(s.connections) + " of " +
                                   std::to_string(min_connections) + " expected, " + std::to_string(s.open_connections) +
                                   " open, lines " + std::to_string(s.lines) + ", stored " + std::to_string(s.stored) + ")");
      }
    }
  }

  Status Stop() override {
    std::lock_guard stop_lk(stop_mu_);
    if (!thread_.joinable()) return Status::Ok();
    stop_.store(true);
    Wake();
    thread_.join();
    std::lock_guard lk(mu_);
    running_ = false;
    cv_.notify_all();
    return Status::Ok();
  }

  CollectorStats stats() const override {
    std::lock_guard lk(mu_);
    return snap_;
  }

 private:
  // A Lumberjack v2 (Beats) connection: events are acknowledged once stored.
  struct Lj final : LumberjackDecoder::Handler {
    Lj(TcpCollector* o, size_t max_event, size_t max_buffer)
        : owner(o), decoder(max_event, max_buffer, max_buffer) {}
    void Window(uint32_t size) override {
      if (received > acked) owner->FlushAndAck();  // a sender that pipelines windows
      if (auth && auth->munge) auth->ok = false;     // every window brings its own credential
      window = size;
      received = acked = 0;
      ++owner->pipe_.stats().lumberjack_windows;
    }
    void Event(uint32_t seq, std::string_view json) override {
      owner->pipe_.Line(*source, ++events, json, auth);
      if (seq > received) received = seq;
      if (window && received >= window) owner->ack_due_ = true;
    }
    TcpCollector* owner;
    const std::string* source = nullptr;
    ConnAuth* auth = nullptr;
    LumberjackDecoder decoder;
    uint32_t window = 0, received = 0, acked = 0;
    uint64_t events = 0;
  };
  struct Conn {
    int fd;
    Framer framer;
    int proto = 0;  // 0: not known yet, 1: JSON lines, 2: Lumberjack v2
    std::unique_ptr<Lj> lj;
    std::unique_ptr<ConnAuth> auth;  // --auth munge, or a verified client certificate
    std::unique_ptr<TlsConn> tls;    // --tls-cert: a TLS connection
    bool want_out = false;           // TLS wants the socket writable (watched for EPOLLOUT)
    bool ready = false;              // in ready_: TLS holds bytes the socket's readiness will not announce
    // Connection hygiene (CollectorOptions: handshake_timeout_ms, ...).
    std::string peer;                // the peer's address
    int64_t opened_ns = 0, last_ns = 0;
    bool pending = true;             // its handshake is not done (counted in pending_by_peer_)
    bool uid_counted = false;        // counted in by_uid_ under uid
    uid_t uid = 0;
  };

  // The handshake is done: with --auth munge a credential accepted; with TLS
  // the TLS handshake; otherwise the first bytes read.
  bool Established(const Conn* c) const {
    if (opts_.auth == "munge") return c->auth && c->auth->authenticated;
    if (c->tls) return c->tls->established() && c->proto != 0;
    return c->proto != 0;
  }
  // After a read: a connection whose handshake just ended leaves its peer's
  // pending count and joins its uid's; one uid past its limit is closed.
  void Promote(Conn* c) {
    if (!c->pending || !Established(c)) return;
    c->pending = false;
    if (auto it = pending_by_peer_.find(c->peer); it != pending_by_peer_.end() && --it->second == 0)
      pending_by_peer_.erase(it);
    if (opts_.auth != "munge" || !c->auth) return;
    c->uid = c->auth->uid;
    c->uid_counted = true;
    if (++by_uid_[c->uid] > opts_.max_connections_per_uid && opts_.max_connections_per_uid > 0) {
      ++pipe_.stats().uid_limit_closed;
      CloseConn(c);
    }
  }
  // Closes connections past their handshake deadline or idle too long.
  void Sweep() {
    const int64_t now = MonotonicNs();
    if (now < next_sweep_ns_) return;
    next_sweep_ns_ = now + 200000000;
    const int64_t hs = int64_t{opts_.handshake_timeout_ms} * 1000000, idle = int64_t{opts_.idle_timeout_ms} * 1000000;
    std::vector<std::pair<Conn*, bool>> due;  // (connection, idle)
    std::vector<Conn*> promote;
    for (auto& [c, owned] : conns_) {
      if (c->pending && Established(c)) promote.push_back(c);
      else if (c->pending && hs > 0 && now - c->opened_ns > hs) due.emplace_back(c, false);
      else if (idle > 0 && now - c->last_ns > idle) due.emplace_back(c, true);
    }
    for (Conn* c : promote) Promote(c);
    for (auto [c, idle_close] : due) {
      ++(idle_close ? pipe_.stats().idle_closed : pipe_.stats().handshake_timeouts);
      if (c->proto == 1 && !c->pending) c->framer.Finish(&pipe_, kTruncatedAtEof);
      CloseConn(c);
    }
  }
  // The table is full: a connection still in its handshake makes room, the
  // oldest of the address that holds the most of them. A flood from some
  // addresses (or one) then evicts its own connections, never a node's lone
  // sender that is slow to authenticate on a loaded machine.
  bool EvictPending() {
    const std::pair<const std::string, size_t>* most = nullptr;
    for (const auto& kv : pending_by_peer_)
      if (!most || kv.second > most->second) most = &kv;
    Conn* oldest = nullptr;
    for (auto& [c, owned] : conns_)
      if (c->pending && (!most || c->peer == most->first) && (!oldest || c->opened_ns < oldest->opened_ns)) oldest = c;
    if (!oldest)  // (every pending connection is counted by address; in case one is not)
      for (auto& [c, owned] : conns_)
        if (c->pending && (!oldest || c->opened_ns < oldest->opened_ns)) oldest = c;
    if (!oldest) return false;
    ++pipe_.stats().evicted_pending;
    CloseConn(oldest);
    return true;
  }

  // Back-pressure: while the store cannot write, no descriptor is watched
  // (not even for hang-ups, which would make epoll spin): the kernel's
  // socket buffers fill and the senders wait or spool.
  void PauseReads() {
    paused_ = true;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    for (auto& [c, owned] : conns_) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  }
  void ResumeReads() {
    paused_ = false;
    if (!accept_paused_) (void)Watch(listen_fd_, &listen_tag_);
    for (auto& [c, owned] : conns_) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.ptr = c;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
    }
  }

  Status Watch(int fd, void* tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return Status::FromErrno("collector: epoll_ctl", errno);
    return Status::Ok();
  }

  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof one);
    (void)n;  // the counter only saturates if nobody reads it, and then the loop is awake anyway
  }

  void Loop() {
    epoll_event events[64];
    while (!stop_.load(std::memory_order_relaxed)) {
      int timeout = -1;
      if (pipe_.held()) {
        // Nothing is read until the store writes again: retry once a second.
        if (!paused_) PauseReads();
        if (MonotonicNs() >= next_retry_ns_) {
          next_retry_ns_ = MonotonicNs() + 1000000000;
          if (pipe_.RetryHeld()) ResumeReads();
          Publish();
        }
        if (pipe_.held()) timeout = 1000;
      }
      if (pipe_.pending() && !pipe_.held()) {
        int64_t left = pipe_.first_pending_ns() + int64_t{opts_.flush_interval_ms} * 1000000 - MonotonicNs();
        timeout = static_cast<int>(std::max<int64_t>(0, left / 1000000 + 1));
      }
      // Lines wait in the forward spool: try the output again (it backs off by itself).
      if (pipe_.forward_spool_waiting() && !pipe_.held()) {
        (void)pipe_.ReplayForwardSpool();
        Publish();
        if (pipe_.forward_spool_waiting() && (timeout < 0 || timeout > 1000)) timeout = 1000;
      }
      if (!ready_.empty() && !paused_) timeout = 0;  // TLS holds bytes already read from a socket
      if (!conns_.empty() && (timeout < 0 || timeout > 200)) timeout = 200;  // handshake deadlines, idle timeouts
      int n = epoll_wait(epoll_fd_, events, 64, timeout);
      if (n < 0 && errno != EINTR) {
        std::fprintf(stderr, "iosonar collector: epoll_wait: %s\n", std::strerror(errno));
        break;
      }
      const uint64_t sync = sync_requested_.load();
      if (sync != synced_) AcceptAll();
      batch_ = {events, 0, n > 0 ? static_cast<size_t>(n) : 0};
      for (int i = 0; i < n; ++i) {
        batch_.next = static_cast<size_t>(i) + 1;
        void* tag = events[i].data.ptr;
        if (tag == &listen_tag_) {
          AcceptAll();
        } else if (tag == &wake_tag_) {
          uint64_t v;
          ssize_t r = read(wake_fd_, &v, sizeof v);
          (void)r;
        } else {
          Conn* c = static_cast<Conn*>(tag);
          if (!c) continue;  // closed earlier in this batch (CloseConn forgot its events)
          c->last_ns = MonotonicNs();
          ReadConn(c);
          if (conns_.count(c)) Promote(c);
        }
      }
      if (!paused_) Sweep();
      if (!paused_ && !ready_.empty()) {
        std::vector<Conn*> ready;
        ready.swap(ready_);
        for (Conn* c : ready) c->ready = false;
        for (Conn* c : ready)
          if (conns_.count(c) && !paused_) ReadConn(c);
      }
      // Flush a partial batch when its wait is over, and at once when every
      // sender has gone (nothing more is coming, so a Drain can finish).
      if (pipe_.pending() &&
          (conns_.empty() ||
           MonotonicNs() - pipe_.first_pending_ns() >= int64_t{opts_.flush_interval_ms} * 1000000))
        pipe_.Flush();
      if (ack_due_ || (!pipe_.pending() && lj_unacked())) FlushAndAck();
      if (opts_.self_report_ms > 0 && !pipe_.held() && MonotonicNs() >= next_report_ns_) {
        if (next_report_ns_ != 0) pipe_.SelfReport("input", true, "");
        next_report_ns_ = MonotonicNs() + int64_t{opts_.self_report_ms} * 1000000;
      }
      batch_ = {};
      synced_ = sync;
      Publish();
    }
    Shutdown();
    synced_ = UINT64_MAX;  // nothing is left unseen
    Publish();
  }

  void AcceptAll() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) {
          // Out of descriptors: stop listening until a connection closes,
          // or level-triggered epoll would spin on the pending connection.
          std::fprintf(stderr, "iosonar collector: accept: %s (pausing accepts)\n", std::strerror(errno));
          epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
          accept_paused_ = true;
        }
        return;
      }
      // One address may hold only so many connections that have not
      // authenticated (silent or slow peers); a full table makes room by
      // closing the oldest such connection, so they cannot hold every slot.
      std::string peer = PeerAddress(ss);
      if (opts_.max_pending_per_peer > 0) {
        auto it = pending_by_peer_.find(peer);
        if (it != pending_by_peer_.end() && it->second >= opts_.max_pending_per_peer) {
          close(fd);
          ++pipe_.stats().peer_limit_refused;
          continue;
        }
      }
      if (conns_.size() >= opts_.max_connections && !EvictPending()) {
        close(fd);
        ++pipe_.stats().refused_connections;
        continue;
      }
      auto c = std::make_unique<Conn>(
          Conn{fd, Framer(PeerName(ss), pipe_.max_line_bytes(), &pipe_.buffer_bytes(), pipe_.max_buffer_bytes())});
      c->peer = std::move(peer);
      c->opened_ns = c->last_ns = MonotonicNs();
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.ptr = c.get();
      if (!paused_ && epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {  // paused: watched at ResumeReads
        close(fd);
        continue;
      }
      if (tls_ctx_) {
        auto t = TlsConn::New(tls_ctx_, fd);
        if (!t.ok()) {
          std::fprintf(stderr, "iosonar collector: %s\n", t.status().message().c_str());
          epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
          close(fd);
          continue;
        }
        c->tls = std::move(t.value());
      }
      ++pipe_.stats().connections;
      if (opts_.auth == "munge") {
        c->auth = std::make_unique<ConnAuth>();
        c->auth->munge = true;
        c->framer.set_auth(c->auth.get());
      }
      ++pending_by_peer_[c->peer];
      conns_.emplace(c.get(), std::move(c));
    }
  }

  // One read per readiness event keeps many senders fair.
  void ReadConn(Conn* c) {
    if (c->want_out) WatchIn(c, false);
    if (c->tls && !c->tls->established()) return TlsHandshake(c);
    if (c->proto == 2) return ReadLumberjack(c);
    auto [p, room] = c->framer.Space(&pipe_);
    ssize_t n = ConnRead(c, p, room);
    if (n > 0) {
      if (c->proto == 0) {
        if (p[0] == lumberjack::kVersion) {  // JSON lines start with '{' (or blanks): this is Beats
          c->proto = 2;
          c->lj = std::make_unique<Lj>(this, pipe_.max_line_bytes(), pipe_.max_buffer_bytes());
          c->lj->source = &c->framer.source();
          c->lj->auth = c->auth.get();
          if (c->auth) c->auth->per_window = true;
          ++pipe_.stats().lumberjack_connections;
          return FeedLumberjack(c, p, static_cast<size_t>(n));
        }
        c->proto = 1;
      }
      c->framer.Commit(static_cast<size_t>(n), &pipe_);
      if (c->auth && c->auth->failed) CloseConn(c);  // refused: nothing more is read from it
      return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // EOF, or a reset: either way the stream is over.
    c->framer.Finish(&pipe_, kTruncatedAtEof);
    CloseConn(c);
  }

  void ReadLumberjack(Conn* c) {
    Lj& lj = *c->lj;
    const size_t before = lj.decoder.buffered();
    auto [p, room] = lj.decoder.Space();
    ssize_t n = ConnRead(c, p, room);
    const int err = errno;
    if (n > 0) return FeedLumberjack(c, nullptr, static_cast<size_t>(n), before);
    (void)lj.decoder.Commit(0, &lj);  // nothing read: give the room back
    errno = err;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // EOF: what was received is stored, acknowledged or not (the sender resends
    // what it has no ACK for; the store deduplicates).
    CloseConn(c);
  }

  // data: bytes to feed, or nullptr when n bytes were read into the decoder's
  // Space() (before: what it held before that).
  void FeedLumberjack(Conn* c, const char* data, size_t n, size_t before = SIZE_MAX) {
    Lj& lj = *c->lj;
    if (data) before = lj.decoder.buffered();
    Status st = data ? lj.decoder.Feed(data, n, &lj) : lj.decoder.Commit(n, &lj);
    auto& total = pipe_.buffer_bytes();
    total = total - before + lj.decoder.buffered();
    if (st.ok() && total > pipe_.max_buffer_bytes()) {
      ++pipe_.stats().memory_bound_lines;
      st = Status::Invalid("lumberjack: the collector's buffers reached their bound (" +
                           std::to_string(pipe_.max_buffer_bytes()) + " bytes in all connections)");
    }
    if (!st.ok()) {
      ++pipe_.stats().lines;
      pipe_.Reject(st.message(), c->framer.source(), lj.events + 1,
                   data ? std::string_view(data, std::min<size_t>(n, 256)) : std::string_view());
      CloseConn(c);
      return;
    }
    if (c->auth && c->auth->failed) {
      CloseConn(c);
      return;
    }
    if (ack_due_) FlushAndAck();
  }

  // TLS: the handshake goes on at each readiness; once done, a verified client
  // certificate names the connection's host. A refused handshake (no
  // certificate, one from another CA, a client that does not speak TLS) is
  // counted and set aside with OpenSSL's reason.
  void TlsHandshake(Conn* c) {
    const int r = c->tls->Handshake();
    if (r == 0) {
      if (c->tls->want() == TlsConn::kWantWrite) WatchIn(c, true);
      return;
    }
    if (r == -2) {  // closed before the handshake ended (a port probe): nothing was refused
      CloseConn(c);
      return;
    }
    if (r < 0) {
      ++pipe_.stats().auth_failures;
      ++pipe_.stats().lines;
      pipe_.Reject(c->tls->error(), c->framer.source(), 0, "");
      CloseConn(c);
      return;
    }
    ++pipe_.stats().tls_connections;
    if (c->tls->peer_verified()) {
      ++pipe_.stats().client_certs;
      if (!c->auth) {
        c->auth = std::make_unique<ConnAuth>();
        c->auth->ok = true;
        c->framer.set_auth(c->auth.get());
      }
      c->auth->cert = c->tls.get();
      c->auth->cert_host = c->tls->peer_cn();
    }
    if (c->tls->HasPending()) MarkReady(c);
  }

  // read() through TLS when the connection has it: >0 bytes, 0 end of stream,
  // -1 with errno (EAGAIN: nothing yet).
  ssize_t ConnRead(Conn* c, char* p, size_t n) {
    if (!c->tls) return read(c->fd, p, n);
    const ssize_t r = c->tls->Read(p, n);
    if (r > 0 && c->tls->HasPending()) MarkReady(c);
    if (r >= 0) return r;
    if (r == -1) {
      if (c->tls->want() == TlsConn::kWantWrite) WatchIn(c, true);
      errno = EAGAIN;
      return -1;
    }
    errno = EPROTO;
    return -1;
  }
  bool ConnWrite(Conn* c, const char* p, size_t n) {
    if (!c->tls) return write(c->fd, p, n) == static_cast<ssize_t>(n);
    return c->tls->Write(p, n) == static_cast<ssize_t>(n);
  }
  // out: also wait for the socket to be writable (TLS asked for it).
  void WatchIn(Conn* c, bool out) {
    c->want_out = out;
    if (paused_) return;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0u);
    ev.data.ptr = c;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  }
  void MarkReady(Conn* c) {
    if (c->ready) return;
    c->ready = true;
    ready_.push_back(c);
  }

  // Stores what is pending, then acknowledges every Lumberjack event received
  // (unless the store cannot write: then nothing is acknowledged, and the
  // senders keep their records).
  void FlushAndAck() {
    ack_due_ = false;
    if (pipe_.pending() && !pipe_.held()) pipe_.Flush();
    if (!pipe_.committed()) return;
    for (auto& [c, owned] : conns_) {
      if (c->proto != 2 || c->lj->received <= c->lj->acked) continue;
      std::string frame{lumberjack::kVersion, lumberjack::kAck};
      lumberjack::PutU32(&frame, c->lj->received);
      // 6 bytes to a sender that reads its ACKs: a short write means it is gone.
      // (Not closed here: this runs amid a batch of epoll events that may name
      // it; the shutdown makes its next read end it.)
      if (!ConnWrite(c, frame.data(), frame.size())) {
        shutdown(c->fd, SHUT_RDWR);
        continue;
      }
      c->lj->acked = c->lj->received;
      ++pipe_.stats().lumberjack_acks;
    }
  }

  void CloseConn(Conn* c) {
    if (c->pending) {
      if (auto it = pending_by_peer_.find(c->peer); it != pending_by_peer_.end() && --it->second == 0)
        pending_by_peer_.erase(it);
    }
    if (c->uid_counted) {
      if (auto it = by_uid_.find(c->uid); it != by_uid_.end() && --it->second == 0) by_uid_.erase(it);
    }
    if (c->ready) std::erase(ready_, c);
    if (c->lj) pipe_.buffer_bytes() -= c->lj->decoder.buffered();
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    // A later event of the epoll batch being handled may carry this pointer
    // (a connection evicted by an accept, or closed by another's read): it is
    // forgotten there, since the memory is freed now.
    for (size_t j = batch_.next; j < batch_.n; ++j)
      if (batch_.events[j].data.ptr == c) batch_.events[j].data.ptr = nullptr;
    conns_.erase(c);
    if (accept_paused_) {
      accept_paused_ = false;
      (void)Watch(listen_fd_, &listen_tag_);
    }
  }

  // Stop(): take in what the senders already sent, then close everything.
  void Shutdown() {
    if (pipe_.held() && !pipe_.RetryHeld()) pipe_.GiveUpHeld();
    AcceptAll();  // senders still in the backlog have sent their data too
    std::vector<Conn*> open;
    for (auto& [k, v] : conns_) open.push_back(k);
    for (Conn* c : open) {
      if (!conns_.count(c)) continue;  // closed meanwhile (kept in closed_, not freed)
      if (c->tls && !c->tls->established()) {
        CloseConn(c);
        continue;
      }
      if (c->proto == 2) {  // what is in the socket is taken in; the final Flush stores it
        char buf[65536];
        for (int reads = 0; reads < 1024; ++reads) {
          ssize_t n = ConnRead(c, buf, sizeof buf);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          FeedLumberjack(c, buf, static_cast<size_t>(n));
          if (!conns_.count(c)) break;
        }
        if (conns_.count(c)) {
          pipe_.Flush();
          FlushAndAck();
          CloseConn(c);
        }
        continue;
      }
      bool eof = false;
      for (int reads = 0; reads < 1024 && !eof; ++reads) {
        auto [p, room] = c->framer.Space(&pipe_);
        ssize_t n = ConnRead(c, p, room);
        if (n > 0) c->framer.Commit(static_cast<size_t>(n), &pipe_);
        else if (n < 0 && errno == EINTR) continue;
        else {
          eof = n == 0;
          break;
        }
      }
      c->framer.Finish(&pipe_, eof ? kTruncatedAtEof : kTruncatedAtStop);
      CloseConn(c);
    }
    pipe_.Flush();
    if (pipe_.held() && !pipe_.RetryHeld()) pipe_.GiveUpHeld();
    pipe_.Close();
  }

  void Publish() {
    std::lock_guard lk(mu_);
    snap_ = pipe_.stats();
    snap_.open_connections = conns_.size();
    snap_.buffer_bytes = pipe_.buffer_bytes();
    snap_pending_ = pipe_.pending();
    snap_synced_ = synced_;
    cv_.notify_all();
  }

  CollectorOptions opts_;
  Pipeline pipe_;  // I/O thread only (after Init)
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  int port_ = 0;
  char listen_tag_ = 0, wake_tag_ = 0;  // their addresses tell epoll events apart
  bool accept_paused_ = false;
  std::unordered_map<std::string, size_t> pending_by_peer_;  // connections in their handshake, by address
  std::unordered_map<uid_t, size_t> by_uid_;                 // authenticated connections, by uid
  int64_t next_sweep_ns_ = 0;
  bool paused_ = false;          // the store cannot write: nothing is read
  bool ack_due_ = false;         // a Lumberjack window is complete: store and acknowledge it
  int64_t next_report_ns_ = 0;   // the next self-report (opts_.self_report_ms)
  bool lj_unacked() const {
    for (const auto& [c, owned] : conns_)
      if (c->proto == 2 && c->lj->received > c->lj->acked) return true;
    return false;
  }
  int64_t next_retry_ns_ = 0;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  // The epoll batch being handled: events[next..n) are still to come.
  struct Batch {
    epoll_event* events = nullptr;
    size_t next = 0, n = 0;
  } batch_;
  std::vector<Conn*> ready_;                // TLS connections with bytes inside (MarkReady)
  std::shared_ptr<TlsContext> tls_ctx_;     // --tls-cert
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::atomic<uint64_t> sync_requested_{0};  // Drain() calls so far
  uint64_t synced_ = 0;                      // I/O thread: requests served (backlog accepted)

  mutable std::mutex mu_;  // guards the snapshot the other threads see
  std::condition_variable cv_;
  CollectorStats snap_;
  bool snap_pending_ = false;
  uint64_t snap_synced_ = 0;
  bool running_ = false;
};

}  // namespace

Result<std::unique_ptr<Collector>> Collector::Start(const CollectorOptions& opts) {
  auto c = std::make_unique<TcpCollector>(opts);
  if (auto s = c->Init(); !s.ok()) return s;
  return std::unique_ptr<Collector>(std::move(c));
}

Result<CollectorStats> IngestFile(const CollectorOptions& opts, const std::string& path) {
  // Block SIGPIPE while we may write to Redis, so a dropped link is an EPIPE
  // error rather than the end of the process; swallow any that arrived.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  struct Restore {
    sigset_t pipe_set, old;
    ~Restore() {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
      }
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
  } restore{pipe_set, old};

  Pipeline pipe(opts);
  if (auto s = pipe.Open(); !s.ok()) return s;
  bool is_stdin = path == "-";
  int fd = is_stdin ? 0 : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  Framer framer(is_stdin ? "stdin" : path, pipe.max_line_bytes());
  Status st;
  for (;;) {
    auto [p, room] = framer.Space(&pipe);
    ssize_t n = read(fd, p, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Status::FromErrno("read " + path, errno);
      break;
    }
    if (n == 0) break;
    framer.Commit(static_cast<size_t>(n), &pipe);
  }
  if (!is_stdin) close(fd);
  framer.Finish(&pipe, kTruncatedAtEof);
  pipe.Flush();
  (void)pipe.ReplayForwardSpool();  // a spool left by an earlier run, even when this one brought nothing
  if (!st.ok()) return st;
  return pipe.stats();
}

}  // namespace iosonar
