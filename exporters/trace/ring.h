// The tracer's per-process ring: its thread slots (each thread's open runs and
// closed-but-unsent runs) and its path table live in a shared mapping of a
// file, <ring dir>/ring-PID-STREAM.bin, created 0600 in a directory of the
// user's own (verified: not a link, owned, writable by no one else), so that
// what a process had not yet sent survives its death by any signal, SIGKILL
// included. A process that ends through its exit path sends everything and
// removes its ring; a drainer (`iosonar trace`, `iosonar run`; later the node
// agent) ships the leftovers of processes that died otherwise, and records
// their end (an iosonar.tracer record with event.action "killed").
//
// Also the record formatting both share, so a drained run is the line the
// process would have sent itself (same event.stream, event.seq continuing
// from the last line it sent: a line sent just before the death and drained
// again is deduplicated by the receivers).
#pragma once
#include <cstddef>
#include <cstdint>

#include "exporters/trace/compress.h"

namespace iosonar {
class JsonLine;
class LineSender;
}  // namespace iosonar

namespace iosonar::trace {

constexpr int kMaxThreads = 512;
constexpr int kBufRuns = 1024;
constexpr int kPathSlots = 8192;
constexpr int kPathMax = 256;

struct PathSlot {
  uint64_t id;  // 0 = free; accessed with __atomic builtins
  char path[kPathMax - 8];
};

// A thread's tracing state (zero-initialised; the Compressor is placement-new'd).
struct alignas(64) Slot {
  // The slot's spinlock, in the ring so a drainer can take it: 0 free,
  // kLockThread (its thread, the flusher, exit paths) or kLockDrainer.
  int lock;
  int tid;
  int index;
  // buf is a circle: run n (counted from the slot's first) is at
  // buf[n % kBufRuns]; tail counts the runs ever put (written by the slot's
  // holder), RingHeader::shipped[index] those that left (SlotHeld: the
  // difference). A run leaves by one store of shipped, never by moving the
  // others, so a drainer killed at any instant leaves the slot consistent.
  uint32_t tail;
  uint64_t raw_ops;
  uint64_t next_sweep;
  // Agent mode, written by the agent under the slot's lock: the runs at the
  // head of buf that a batch in flight holds (intent_k of them, taken when
  // RingHeader::shipped[index] was intent_base), so that an agent that died
  // or failed to flush takes exactly those again and merges them into the
  // same lines (ring_agent.h). 0: none.
  uint32_t intent_k;
  uint32_t intent_base;
  alignas(Compressor) unsigned char comp_mem[sizeof(Compressor)];
  alignas(Aggregator) unsigned char agg_mem[sizeof(Aggregator)];
  Run buf[kBufRuns];
  Compressor& comp() { return *reinterpret_cast<Compressor*>(comp_mem); }
  Aggregator& agg() { return *reinterpret_cast<Aggregator*>(agg_mem); }
  Run& at(uint32_t n) { return buf[n % kBufRuns]; }
};

// Runs a slot holds: put and not yet shipped (modulo 2^32, kBufRuns divides it).
inline uint32_t SlotHeld(uint32_t tail, uint32_t shipped) { return tail - shipped; }

// Every call reads the slot's first cache line (lock, raw_ops, next_sweep and
// the Compressor's counts) and the two lines of the run it extends: the runs
// start on a line of their own (slots are whole lines, from a page boundary).
static_assert(offsetof(Slot, comp_mem) + Compressor::RunsOffset() == 64 && sizeof(Slot) % 64 == 0,
              "the slot's hot fields fit one cache line, its open runs start on the next");

constexpr int kLockThread = 1;
constexpr int kLockDrainer = 2;

constexpr uint64_t kRingMagic = 0x314e4952534f49ull;  // "IOSRIN1"
constexpr uint32_t kRingVersion = 13;  // 13: untraced execs; 12: runs that found no room (lost table), reclaim stamp; 11: io_uring counts; 10: the Compressor's counts before its runs, slots aligned to cache lines; 9: slot buffers are circles; 8: merge intents; 7: aio_pending; 6: the Compressor remembers where closed runs ended
// event.seq of lines a drainer sends for a live process: a range of their own.
constexpr uint64_t kDrainSeqBase = uint64_t{1} << 62;
// event.seq of lines the node agent ships for a process in agent mode: per
// slot a range of 2^32 (slot kMaxThreads: the start and end records), so a
// line shipped again after the agent died is the same line (deduplicated).
constexpr uint64_t kAgentSeqBase = uint64_t{3} << 61;
constexpr uint64_t AgentSeq(uint32_t slot, uint64_t n) { return kAgentSeqBase + (uint64_t{slot} << 32) + n; }

struct RingHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;
  uint64_t slot_size, path_slot_size, compressor_size, run_size;
  uint32_t max_threads, path_slots;
  int32_t pid, ppid;
  uint64_t start_time;  // /proc/PID/stat field 22: a pid reused later is another process
  uint64_t stream;
  uint64_t seq;  // event.seq of the first line not yet sent (updated after each send)
  int64_t window_ns;
  uint64_t budget_interval_ticks;  // aggregates close at the end of their interval
  uint64_t tick0;
  int64_t real0;
  int64_t mono0;
  uint32_t use_tsc;  // ticks are TSC cycles (else CLOCK_MONOTONIC ns)
  uint32_t agent;    // IOSONAR_OUTPUT=agent: the process formats and sends nothing; a node agent ships it all
  double ns_per_tick;
  int64_t rank;
  uint32_t slots_hwm;  // slots [0, hwm) were ever used
  uint32_t started;    // the "start" record was sent
  uint32_t finished;   // everything was sent (exit, exec): nothing to drain
  uint32_t cmdline_len;
  uint64_t records, dropped;
  // Written by a drainer (atomics): its next event.seq, the runs it sent, its pid
  // (a thread that finds a slot held by a drainer that died takes it back).
  uint64_t drain_seq;
  uint64_t drained_records;
  int32_t drainer_pid;
  // Agent mode: the process went through its exit path (1) or exec'd (2)
  // with everything closed into its slots, finished but unsent: the agent
  // ships it and removes the ring once its sender holds it durably. An exec
  // that fails sets 2 back to 0 (the ring is live again); the agent takes an
  // exec'd ring whole only once it has stayed 2 for a pass, and sets 3 before
  // it removes it (so a tracer whose exec failed later knows, and the agent
  // never removes a ring that came back to life).
  uint32_t ended;
  char host[256];
  char job[128];
  char cmdline[1024];
  // Agent mode (ring_agent.h): raw ops of threads that have exited. Per
  // slot the runs that left its buffer (Slot::tail): in agent mode those the
  // agent shipped durably (the next event.seq of the slot's range, AgentSeq),
  // written by the agent only; otherwise by the process's own flush and
  // the drainers, under the slot's lock.
  uint64_t raw_ops_gone;
  uint32_t shipped[kMaxThreads];
  // AIO ops submitted and not yet collected by aio_return (nor failed to
  // submit): if the process is killed, they are the ops it can no longer
  // record, counted in its "killed" record's tracer.dropped.
  uint64_t aio_pending;
  // Agent mode, written by the agent: trace records it merged into others of
  // the process (shipped), and those of the batch in flight (added at its commit).
  uint64_t agent_merged;
  uint64_t intent_merged;
  uint32_t intent_unmerged;  // the batch in flight was taken without the merge (--no-thread-merge)
  // io_uring: submissions (SQEs) and rings set up, whose bytes the tracer
  // cannot see (wrap_syscall.cc): tracer.io_uring_sqes of the process.
  uint64_t io_uring_sqes;
  uint32_t io_uring_rings;
  // Runs in the lost table (RingLost): [0, lost_used) are whole (published
  // with release after the entry is written).
  uint32_t lost_used;
  // Written by a tracer that found this ring's process gone while no agent
  // held the ring directory (ReclaimDeadRings): CLOCK_REALTIME seconds of
  // that first sighting; the ring is removed once it is IOSONAR_RING_GRACE_S old.
  int64_t reclaim_seen_s;
  // Programs the process exec'd that the loader will not preload the tracer
  // into (static, setuid/setgid of another user): tracer.untraced_execs, and
  // the last one's path (NUL-terminated; a reader checks).
  uint64_t untraced_execs;
  char untraced_exec[256];
};

constexpr size_t kRingHeaderBytes = 4096;
static_assert(sizeof(RingHeader) <= kRingHeaderBytes, "ring header too large");
constexpr size_t kRingSlotsOffset = kRingHeaderBytes;
constexpr size_t kRingPathsOffset = kRingSlotsOffset + sizeof(Slot) * kMaxThreads;
// The lost table: where a closed run goes when its slot's buffer has no
// room left (agent mode with no agent for a long time, a thread with no slot):
// per (file, op, layer, size, errno) one aggregate (Run::agg) of every such
// run, so the ops, bytes and time of what found no room still reach the data
// as the file's aggregate records, shipped with the process's end. Only past
// kLostRuns keys is anything dropped (tracer.dropped). Written by the process
// only (under a lock of its own), read once it has ended or died.
constexpr int kLostRuns = 2048;
constexpr size_t kRingLostOffset = (kRingPathsOffset + sizeof(PathSlot) * kPathSlots + 4095) & ~size_t{4095};
constexpr size_t kRingBytes = (kRingLostOffset + sizeof(Run) * kLostRuns + 4095) & ~size_t{4095};

inline RingHeader* RingHead(void* base) { return static_cast<RingHeader*>(base); }
inline Slot* RingSlots(void* base) { return reinterpret_cast<Slot*>(static_cast<char*>(base) + kRingSlotsOffset); }
inline PathSlot* RingPaths(void* base) { return reinterpret_cast<PathSlot*>(static_cast<char*>(base) + kRingPathsOffset); }
inline Run* RingLost(void* base) { return reinterpret_cast<Run*>(static_cast<char*>(base) + kRingLostOffset); }
// The lost table's runs a reader may take: lost_used, capped.
inline uint32_t LostUsed(const RingHeader& h) { return h.lost_used < kLostRuns ? h.lost_used : kLostRuns; }
// Where a tracer's ring directory says that an agent is draining it: the
// agent holds a shared flock on the directory while it runs; a tracer
// reclaims dead processes' rings only if it can take it exclusively.
// event.seq of the lost table's runs shipped by an agent: AgentSeq(kMaxThreads, kAgentLostSeq + k).
constexpr uint64_t kAgentLostSeq = 2;

// The root of the ring directories: $IOSONAR_RING_ROOT, else /dev/shm (or
// /tmp without /dev/shm). Raw system calls only (usable in the tracer).
void RingRoot(char* out, size_t cap);
// The ring directory: $IOSONAR_RING_DIR, else ROOT/iosonar-ring-UID.
void DefaultRingDir(char* out, size_t cap);
// Creates (0700) and verifies the directory: a directory, not a link, owned by
// the effective uid (one of ours with another mode is set to 0700). Returns
// its fd or -1.
int OpenRingDir(const char* dir);
// The directory this process's rings go to, opened: DefaultRingDir; when
// ROOT/iosonar-ring-UID is taken (another user made it, a link, not a
// directory), a private ROOT/iosonar-ring-UID.SUFFIX of ours instead (an
// existing one, else made with a random suffix; *fell_back set). out gets the
// path. -1 if neither can be had. $IOSONAR_RING_DIR has no fallback.
int OpenDefaultRingDir(char* out, size_t cap, bool* fell_back = nullptr);
// Start time of a process (clock ticks since boot), 0 if it does not exist;
// state (if given) gets its state letter (R, S, Z, ...).
uint64_t ProcessStartTime(int pid, char* state = nullptr, long* threads = nullptr);  // threads: field 20
// Conservative: a process we cannot prove dead is alive. Dead: no such pid,
// a zombie, or the pid now names a process started at another time.
bool ProcessAlive(int pid, uint64_t start_time);
// The header's layout fields (magic, version, structure sizes and counts):
// what a reader checks before it trusts a ring's contents.
void FillRingLayout(RingHeader& h);

// ---- formatting shared by the tracer and the drainer
enum PrefixKind { kPrefixTrace = 0, kPrefixTracer = 1 };
struct FmtContext {
  char prefix[2][640];
  size_t prefix_len[2];
  uint64_t tick0;
  int64_t real0;
  double ns_per_tick;
  const PathSlot* paths;  // may be null
};
// uid: user.id (the process's user), -1 to leave it out.
void BuildPrefixes(FmtContext* c, uint64_t stream, const char* host, const char* job, int pid, int64_t rank,
                   int64_t uid);
int64_t TicksToEpochNs(const FmtContext& c, uint64_t t);
const char* LookupPath(const PathSlot* paths, uint64_t id);
void FormatCommon(JsonLine& j, const FmtContext& c, PrefixKind kind, int64_t ts_ns, uint64_t seq);
// threads > 1: a run the node agent merged from several threads' (process.threads).
void FormatRun(JsonLine& j, const FmtContext& c, const Run& r, int tid, uint64_t seq, uint32_t threads = 1);
// A drainer's iosonar.tracer record for a process from its ring: "start", or
// its end ("killed", "exit", "exec") with its counts.
struct TracerCounts {
  uint64_t raw = 0, records = 0, dropped = 0;
  uint64_t merged = 0;  // tracer.merged (0: left out)
};
void FormatTracerRecord(JsonLine& j, const FmtContext& c, const RingHeader& h, const char* action, int64_t ts_ns,
                        uint64_t seq, const TracerCounts& n);
// tracer.dropped of a process killed by a signal: what it counted, and its
// uncollected AIO ops, which it can no longer record (capped: the count is the
// ring's, written by its owner).
inline uint64_t KilledDropped(const RingHeader& h, uint64_t dropped) {
  return dropped + (h.aio_pending < (uint64_t{1} << 32) ? h.aio_pending : uint64_t{1} << 32);
}

// ---- the drainer
struct DrainStats {
  uint64_t rings = 0;     // rings of dead processes shipped
  uint64_t lines = 0;     // lines sent from them
  uint64_t skipped = 0;   // rings of live processes, or not ours / malformed (left alone)
  uint64_t live_lines = 0;  // lines taken from live processes' rings
};
// Ships the leftovers of every dead process's ring in dir through sender and
// removes those rings (and the rings of processes that finished cleanly).
// live: also take from live processes' rings what is closed or whose time
// window has ended (slots whose thread is inside the tracer are skipped this
// round): a program that computes without I/O, and without any thread of the
// tracer's, still has its records shipped within about a window.
DrainStats DrainDeadRings(const char* dir, LineSender* sender, bool live = false);
// The same through a sender of its own to output (tcp://, a path or -), with
// spool_dir as the tracer's (null: none). ok is false if output is malformed.
DrainStats DrainDeadRingsTo(const char* dir, const char* output, const char* spool_dir, bool* ok);

}  // namespace iosonar::trace
