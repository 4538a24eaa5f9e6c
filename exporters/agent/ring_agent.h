// The node agent's side of the tracer's rings (`iosonar-exporter agent`,
// `iosonar agent`): one agent per node drains every ring on the node, ships
// the runs through a RecordSink (lumberjack:// for acknowledged delivery) and
// records each process's end.
//
// Rings in agent mode (IOSONAR_OUTPUT=agent, RingHeader::agent) are shipped
// at least once: a pass copies what a slot holds (its closed runs, and the
// runs whose window ended, closed into the slot's buffer under its lock),
// formats and sends it, flushes the sink, and only once the sink holds it
// durably (acknowledged, or in the acknowledged sender's spool) removes it
// from the slot (and a finished or dead process's ring from the directory).
// Each line's event.seq comes from the ring (AgentSeq: the slot and the
// slot's shipped count), so a line shipped again after the agent died, or
// after a failed flush, is the same line and the receivers deduplicate it.
// Rings of processes that send for themselves are left alone while they
// live; once such a process is dead, what its ring held is shipped (event.seq
// continuing from its last sent line) and its end recorded, as `iosonar run`
// does.
//
// The rings are written by the users' programs, so as root the agent treats
// each one as hostile input: directories are /RING_ROOT/iosonar-ring-UID,
// opened without following links, a real directory owned by UID with mode
// 0700; ring files regular, owned by UID, one link, opened with O_NOFOLLOW,
// the size the layout says. Everything is copied out of the shared mapping
// before it is looked at, every count and index is checked (slots_hwm, nbuf,
// the compressor's and aggregator's tables, ns_per_tick, strings not NUL
// terminated), and a ring truncated while it is read (SIGBUS) is abandoned
// for the pass. A malformed ring is skipped, counted and reported once; the
// records' host comes from the agent, never from the ring.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "exporters/trace/ring.h"

namespace iosonar {
class RecordSink;
}

namespace iosonar::trace {

struct AgentStats {
  uint64_t passes = 0;
  uint64_t rings_live = 0;       // live agent-mode rings visited
  uint64_t rings_finished = 0;   // rings shipped whole and removed (exit, exec, death)
  uint64_t lines = 0;            // lines shipped and committed
  uint64_t runs = 0;             // trace records taken (the tracer's, before the merge across threads)
  uint64_t merged = 0;           // of those, merged into others of their process (lines = runs - merged)
  uint64_t malformed = 0;        // rings skipped as malformed (each counted once, not once a pass)
  uint64_t refused = 0;          // directories or files refused (not a directory, link, owner, mode; each once)
  uint64_t flush_failures = 0;   // passes whose lines the sink could not hold (nothing committed, retried)
  uint64_t max_take_bytes = 0;   // the most formatted lines held for one ring at once (bounded by flush_bytes)
  uint64_t deferred = 0;         // directory entries left for a later pass (a pass's budget spent)
  uint64_t last_pass_dirs = 0;   // ring directories the last pass drained
};

// Bounds on a pass (RingAgent::Pass), so that junk one user makes (thousands
// of directories or files under names of the agent's) cannot delay another
// user's rings: directories and files refused once are remembered by name and
// inode (not checked again while unchanged; again after kRecheckNs), at most
// kNewDirsPerPass directories not seen before are checked per pass (the rest
// next pass), and each user's ring files are visited at most kFilesPerUid per
// pass. Refusals are printed as one line per cause and pass.
constexpr size_t kNewDirsPerPass = 16384;
constexpr size_t kFilesPerUid = 4096;
constexpr int64_t kRecheckNs = 60000000000;
constexpr size_t kSeenMax = 1u << 18;  // remembered verdicts (then forgotten: checked again)

// What one ring contributes to a pass, for the commit once the sink holds it.
struct RingTake {
  std::string lines;
  uint64_t nlines = 0, runs = 0;
  uint64_t merged = 0;        // runs merged into others of the process (thread_merge.h)
  uint64_t spilled = 0;       // lines already handed to TakeParams::spill (a ring shipped whole)
  size_t max_bytes = 0;       // the most bytes lines held at once
  std::vector<std::pair<uint32_t, uint32_t>> slots;  // agent mode: (slot, runs taken from the head of its buffer)
  bool start = false;   // the start record went out: set RingHeader::started
  bool remove = false;  // the ring is done: remove it
  bool finished = false;  // of which: the process ended (ship counted in rings_finished)
  bool exec_end = false;  // of which: it exec'd (removed only if ended goes 2 -> 3 at commit)
};

// The most runs a take of a live ring holds (its other slots wait for the next pass).
constexpr size_t kMaxTakeRuns = 65536;

// The ring in memory (a shared mapping, or a buffer for tests and the fuzz
// target): checks and copies, never trusts. alive: the process still runs.
// Returns false with why set if the ring is malformed (nothing taken).
// live_locks: take the slots' locks (a live process, or one still on its way out).
struct TakeParams {
  uid_t uid = 0;
  int name_pid = 0;  // the pid in the file name (must match the header's)
  bool alive = false;
  const char* host = "";
  uint64_t now_ticks = 0;  // the ring's clock now (for windows that ended)
  // A ring shipped whole (its process ended or died: it no longer changes)
  // is handed over in parts once spill_bytes of lines are held, so the
  // reader's memory stays bounded however full its 512 slots are. Nothing
  // is committed until the whole take is held; if the agent dies between,
  // the next take formats the same lines under the same event.seq (the ring
  // is frozen), so the receivers deduplicate the parts sent twice. spill
  // returning false (the output cannot take them) abandons the take: the
  // whole ring again next pass.
  std::function<bool(std::string_view lines, uint64_t nlines)> spill;
  size_t spill_bytes = size_t{8} << 20;
  // An exec'd ring (ended 2) of a live pid is taken whole only once settled:
  // it was already exec'd a pass ago (a failed exec sets it live again at once).
  bool exec_settled = true;
  // Merge the runs of the process's threads (thread_merge.h). An earlier
  // batch taken again is merged as it was (the intents say it was).
  bool merge = true;
};
class RingReader {
 public:
  RingReader();
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  // Reads the header only: false if malformed (why set).
  bool Header(const char* base, size_t len, RingHeader* h, std::string* why);
  // Takes what the ring holds. Safe against concurrent writers and (with the
  // agent's SIGBUS guard) truncation.
  bool Take(char* base, size_t len, const TakeParams& p, RingTake* out, std::string* why);
  // The sink holds out's lines: remove them from the ring. False if the ring
  // must stay (an exec'd ring whose exec failed meanwhile: live again).
  bool Commit(char* base, size_t len, const RingTake& t);

 private:
  struct Impl;
  Impl* impl_;
};

class RingAgent {
 public:
  struct Options {
    std::string ring_root = "/dev/shm";  // holds iosonar-ring-UID directories
    std::string host;                    // host.name of shipped records
    bool all_users = false;              // every uid's directory (root); else only the effective uid's
    size_t flush_bytes = 8u << 20;       // flush and commit within a pass once this much is pending
    bool quiet = false;
    // The agent's own iosonar.sampler records (sampler.name "agent"): every
    // report_ns, at once in the pass that sets a ring or directory aside, and
    // at Finish(); 0: never. So what the agent refused or its output dropped
    // reaches the data, not only its stderr.
    int64_t report_ns = 60000000000;
    // Merge the runs of a process's threads (thread_merge.h).
    bool merge_threads = true;
  };
  RingAgent(const Options& o, RecordSink* sink);
  ~RingAgent();
  // One pass over every ring; returns false if the sink could not hold a
  // batch (that batch stays in the rings for the next pass).
  bool Pass();
  // The last self-report (what the last pass did and set aside), flushed.
  void Finish();
  const AgentStats& stats() const { return st_; }

 private:
  struct Open {
    std::string path, name;
    int dirfd = -1, fd = -1;
    char* base = nullptr;
    dev_t dev = 0;
    ino_t ino = 0;
    RingTake take;
  };
  // Returns false if the directory was refused. files: this pass's budget of ring files for uid.
  bool PassDir(const std::string& dir, uid_t uid, size_t* files);
  bool FlushAndCommit();
  // Prints msg (unless quiet) the first time key is seen; true then.
  bool Report(const std::string& key, const std::string& msg);
  // A ring or directory set aside: counted and reported once per key, in
  // the pass's line for its cause (EmitNotes).
  enum Cause { kDirRefused = 0, kDirNotOurs, kFileNotOpened, kFileRefused, kMalformed, kCauses };
  void SetAside(Cause cause, uint64_t* counter, const std::string& key, const std::string& msg);
  void EmitNotes();
  // A verdict remembered: key (hash of the path), the inode it was about.
  bool SeenRefused(uint64_t key, uint64_t ino);
  void Remember(uint64_t key, uint64_t ino, bool good);
  // Queues the self-report if one is due (force: now); it is sent with the
  // pass's flush, and sent again, the same line, until a flush holds it.
  void SelfReport(bool force);
  // Sends the queued self-report (if any) and flushes the sink; true once held.
  bool SendReport();

  Options o_;
  RecordSink* sink_;
  RingReader reader_;
  AgentStats st_;
  std::vector<Open> pending_;
  size_t pending_bytes_ = 0;
  std::unordered_set<uint64_t> reported_;
  struct Seen {
    uint64_t ino = 0;
    int64_t checked = 0;  // monotonic ns
    bool good = false;
  };
  std::unordered_map<uint64_t, Seen> seen_;
  struct Notes {
    uint64_t n = 0;
    std::string examples;  // the first few messages, "; "-joined
    size_t nex = 0;
  };
  Notes notes_[kCauses];
  std::unordered_map<uid_t, size_t> rotor_;  // where a uid's next pass starts among its ring files
  // The ring directories this agent drains, each held open with a shared
  // flock while it runs: a tracer reclaims a dead process's ring only when it
  // can lock the directory exclusively, i.e. while no agent is there (ring.h).
  // At most 2 a uid (its iosonar-ring-UID, or the private one it fell back
  // to; a user's junk directories cost no more) and 512 in all: descriptors.
  std::map<std::pair<dev_t, ino_t>, int> dir_locks_;
  std::unordered_map<uid_t, int> dir_locks_per_uid_;
  bool ok_ = true;
  // exec'd rings (dev, ino) and when a pass first saw them so (settling).
  std::map<std::pair<dev_t, ino_t>, int64_t> exec_seen_;
  // Self-reports: what the last one sent covered, the line not yet held.
  int64_t self_stream_ = 0;
  uint64_t self_seq_ = 0;
  int64_t last_report_mono_ = 0, pass_ns_ = 0;
  // The counts a report covers up to: of the last one held, of the one queued.
  struct Tally {
    uint64_t aside = 0, lines = 0, dropped = 0;
  };
  Tally held_, queued_;
  std::string last_aside_, last_output_error_;
  std::string report_line_;
  bool report_failed_output_ = false;
};

// Installs the SIGBUS handler that turns a fault inside a guarded read of a
// ring (the file truncated under the agent) into an abandoned ring.
void InstallRingGuard();

}  // namespace iosonar::trace
