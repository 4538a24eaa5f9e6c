// The merged form of a block (store format 4, `iosonar store-compact`):
// Beacon's second pass (NSDI'19 §3.1-3.2) applied to what the store keeps.
// The first pass (the tracer, block_codec.h) stores each run with all its
// fields; many processes of one job emit runs alike but for a few numbers.
// The merged form keeps, per block:
//
//   - a process table: per event.stream, once, the fields whose value is the
//     same in every record of that stream in the block (host, pid, tid,
//     rank, user, job, ...), chosen per block from the data, not assumed;
//   - a group table: per distinct combination of the remaining fields (op,
//     layer, path, fd, size, count, bytes, errno, ...), once -- the feature
//     vector; a file.path ending in the process's rank is kept as a pattern
//     (`/x/out.{rank}`), a file.id that is the path's FNV-1a hash is
//     recomputed; so a group is what many ranks did alike;
//   - per record, in the block's original order: one byte naming its
//     process and group (mostly "the same process", "the group that came
//     after the last one's group last time"), then only the member fields
//     (@timestamp, event.start_ns, event.end_ns, io.duration_ns, event.seq,
//     io.offset) as differences from the previous member of the same group
//     (event.seq: from the same process's previous seq + 1; end from start;
//     offsets second-order, so base + stride * rank costs nothing).
//
//   merged  := format:u8 (=2)  count:u32le
//              nM:varint  (code:u8 base:u8 kind:u8)*nM     member fields
//              pmask:varint gmask:varint                  process / group codes
//              stream:u8 path:u8 id:u8 rank:u8            codes (0xff: none)
//              nprocs:varint  (stream-delta:zigzag  entry)*nprocs
//              ngroups:varint (flags:varint  entry)*ngroups
//              record*count: head:u8 [proc:varint] [group:varint] residual*
//   entry   := local-mask:varint value*   (the table's codes; longs as
//              differences from the previous entry, keywords 0 = same)
//
// Lossless by construction and by check: MergeBlock() expands what it wrote
// and compares it byte for byte with the first-pass block it was given;
// ExpandBlock() gives back exactly that first-pass block, so everything that
// reads a store (scans in time order, unordered, parallel; store-check;
// export) reads a merged block as the original one. Only the SQLite store
// writes merged blocks, only for iosonar.trace.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/store/internal/block_codec.h"

namespace iosonar::blocks {

inline constexpr uint8_t kFormatMerged = 2;

struct MergeStats {
  uint32_t records = 0, procs = 0, groups = 0, rank_patterns = 0;
};

// The first-pass block `data` (format 1) in the merged form, into *out.
// False, with *why, when it cannot be merged losslessly (a code this binary
// does not know, a record without event.stream, the expansion differing
// from data) -- the block is then kept as it is.
bool MergeBlock(const DatasetCodes& codes, std::span<const uint8_t> data, std::vector<uint8_t>* out, std::string* why,
                MergeStats* stats = nullptr);

// A merged block back into its first-pass bytes (*out). False, with *error,
// when the block is damaged (every read is bounds-checked).
bool ExpandBlock(const DatasetCodes& codes, std::span<const uint8_t> data, std::vector<uint8_t>* out,
                 std::string* error);

}  // namespace iosonar::blocks
