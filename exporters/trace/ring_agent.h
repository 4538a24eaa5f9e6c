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
#include <map>
#include <set>
#include <string>
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
  uint64_t runs = 0;             // of those, trace records
  uint64_t malformed = 0;        // rings skipped as malformed (each counted once)
  uint64_t refused = 0;          // directories or files refused (not a directory, link, owner, mode)
  uint64_t flush_failures = 0;   // passes whose lines the sink could not hold (nothing committed, retried)
};

// What one ring contributes to a pass, for the commit once the sink holds it.
struct RingTake {
  std::string lines;
  uint64_t nlines = 0, runs = 0;
  std::vector<std::pair<uint32_t, uint32_t>> slots;  // agent mode: (slot, runs taken from the head of its buffer)
  bool start = false;   // the start record went out: set RingHeader::started
  bool remove = false;  // the ring is done: remove it
  bool finished = false;  // of which: the process ended (ship counted in rings_finished)
};

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
  // The sink holds out's lines: remove them from the ring.
  void Commit(char* base, size_t len, const RingTake& t);

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
  };
  RingAgent(const Options& o, RecordSink* sink);
  ~RingAgent();
  // One pass over every ring; returns false if the sink could not hold a
  // batch (that batch stays in the rings for the next pass).
  bool Pass();
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
  void PassDir(const std::string& dir, uid_t uid);
  bool FlushAndCommit();
  void Report(const std::string& key, const std::string& msg);

  Options o_;
  RecordSink* sink_;
  RingReader reader_;
  AgentStats st_;
  std::vector<Open> pending_;
  size_t pending_bytes_ = 0;
  std::set<std::string> reported_;
  bool ok_ = true;
};

// Installs the SIGBUS handler that turns a fault inside a guarded read of a
// ring (the file truncated under the agent) into an abandoned ring.
void InstallRingGuard();

}  // namespace iosonar::trace
