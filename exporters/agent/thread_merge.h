// The node agent's merge of one process's runs across its threads.
//
// The tracer compresses each thread's ops on its own (Beacon's first pass:
// adjacent ops of one op, descriptor and size on contiguous areas become one
// record). Threads that share a file split that stream: two threads reading
// one file in turns each see a strided run, eight threads writing the chunks
// of a region each see a contiguous piece, and past the detail budget every
// thread sends its own aggregate per file and interval. The agent, which sees
// all the threads' slots of a ring, applies the same rule to the process's
// whole stream before it formats the lines:
//  - aggregates of the same file, descriptor, op, layer, request size, errno
//    and budget interval are summed (count, bytes, time, the three shares);
//  - strided runs of one file, descriptor, op and size whose offsets follow
//    one another by the size, as many of them as the stride holds sizes and
//    each with the same count (threads taking turns), become one contiguous run;
//  - contiguous runs of one file, descriptor, op and size that continue each
//    other (one starts where the other ended) are chained.
// A list of one thread's runs is left as it is. Only within one time window
// (of the first op, in the ring's ticks), only
// successful data ops with known offsets; bytes, ops and time stay exact and
// the record keeps the first member's event.seq, so the receivers'
// deduplication works as before. The result depends only on the list (its
// order and the ring's ticks), so a batch taken again after a failed flush or
// an agent that died merges into the same lines (ring_agent.h: intents).
// The processes of a job are not merged: the analyses attribute a file's
// bytes to processes (I/O modes, private files) from process.pid.
#pragma once
#include <cstdint>
#include <vector>

#include "exporters/trace/compress.h"

namespace iosonar::trace {

// A run taken from a thread slot for a batch.
struct TakenRun {
  Run r;
  int32_t tid = 0;
  uint32_t threads = 1;  // after MergeThreadRuns: the distinct threads merged into it
  uint64_t seq = 0;      // event.seq
  bool gone = false;     // merged into another
};

// Merges v in place (merged runs are marked gone; the first member by the
// rule's order keeps the sums). window_ticks, interval_ticks: the ring's
// compression window and detail-budget interval in its ticks (0: none; then
// detail runs are not merged, or aggregates not). Returns the runs merged away.
uint64_t MergeThreadRuns(std::vector<TakenRun>& v, uint64_t window_ticks, uint64_t interval_ticks);

}  // namespace iosonar::trace
