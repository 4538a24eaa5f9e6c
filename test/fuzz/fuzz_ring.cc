// libFuzzer target for the node agent's ring reader (exporters/agent/ring_agent.h):
// the agent runs as root and reads shared memory that any user's program
// writes, so a ring is hostile input. The input is a plausible ring header
// (so the search starts past the magic) overlaid with patches anywhere in the
// header, the first two thread slots and the path table; flags choose a live
// or dead process, agent mode, ended, started, and whether to commit.
// Promises beyond "no crash, no sanitizer report": every taken line is one
// '\n'-terminated JSON object, and nlines counts them.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exporters/trace/ring.h"
#include "exporters/agent/ring_agent.h"

using namespace iosonar::trace;

namespace {
[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "fuzz: broken promise: %s\n", what);
  std::abort();
}

char* Ring() {
  static char* base = [] {
    void* m = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) std::abort();
    return static_cast<char*>(m);
  }();
  return base;
}

void Skeleton(char* b, uint8_t flags) {
  RingHeader& h = *RingHead(b);
  FillRingLayout(h);
  h.pid = 1234;
  h.ppid = 1;
  h.stream = 77;
  h.window_ns = 1000000000;
  h.budget_interval_ticks = 1000000000;
  h.real0 = int64_t{1} << 60;
  h.ns_per_tick = 1.0;
  h.slots_hwm = 2;
  h.agent = flags & 2 ? 1 : 0;
  h.ended = flags & 4 ? 1 : 0;
  h.started = flags & 8 ? 1 : 0;
  std::memcpy(h.job, "42", 3);
  std::memcpy(h.cmdline, "prog", 4);
  h.cmdline_len = 4;
  if (flags & 128) {
    // Runs the agent merges across the two threads (thread_merge.h): contiguous
    // pieces, turns, aggregates; the patches then bend them, and the intents.
    for (int t = 0; t < 2; ++t) {
      Slot& s = RingSlots(b)[t];
      s.tid = 100 + t;
      for (int k = 0; k < 3; ++k) {
        Run& r = s.at(s.tail++);
        r = Run{};
        r.op = kOpWrite;
        r.fd = 3;
        r.file_id = 0x42;
        r.size = 4096;
        r.count = 4;
        r.bytes = 4 * 4096;
        r.t_start = 1000 + static_cast<uint64_t>(k);
        r.t_end = r.t_start + 10;
        if (k == 0) {  // contiguous: thread t's piece t
          r.offset = t * 4 * 4096;
          r.next_offset = r.offset + 4 * 4096;
        } else if (k == 1) {  // turns: strided by two sizes
          r.strided = 1;
          r.stride = 2 * 4096;
          r.offset = (1 << 20) + t * 4096;
          r.next_offset = r.offset + 4 * r.stride;
        } else {  // an aggregate
          r.agg = 1;
          r.offset = -1;
          r.n_random = 4;
        }
      }
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static RingReader reader;
  char* b = Ring();
  const uint8_t flags = size ? data[0] : 0;
  Skeleton(b, flags);
  // Patches: u32 offset (little-endian), u8 length, the bytes.
  constexpr size_t kSlots = 2 * sizeof(Slot);
  constexpr size_t kPaths = sizeof(PathSlot) * kPathSlots;
  std::vector<std::pair<size_t, size_t>> patched;
  for (size_t i = 1; i + 5 <= size;) {
    uint32_t off;
    std::memcpy(&off, data + i, 4);
    size_t len = data[i + 4];
    i += 5;
    if (len > size - i) len = size - i;
    size_t r = off % (kRingHeaderBytes + kSlots + kPaths);
    size_t at = r < kRingHeaderBytes + kSlots ? r : kRingPathsOffset + (r - kRingHeaderBytes - kSlots);
    if (r < kRingHeaderBytes && at + len > kRingHeaderBytes) len = kRingHeaderBytes - at;
    if (at + len > kRingBytes) len = kRingBytes - at;
    std::memcpy(b + at, data + i, len);
    patched.emplace_back(at, len);
    i += len;
  }
  TakeParams p;
  p.name_pid = 1234;
  p.alive = flags & 1;
  p.host = "fuzz";
  auto check = [](std::string_view lines, uint64_t nlines) {
    uint64_t n = 0;
    size_t start = 0;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (lines[k] != '\n') continue;
      if (lines[start] != '{' || lines[k - 1] != '}') Broken("a taken line that is not one JSON object");
      ++n;
      start = k + 1;
    }
    if (start != lines.size()) Broken("taken lines not newline-terminated");
    if (n != nlines) Broken("nlines is not the number of lines");
  };
  // A ring taken whole in parts (the agent's --flush-bytes), and an output
  // that refuses a part (the take is abandoned: nothing left to commit).
  uint64_t spilled = 0;
  bool refused = false;
  if (flags & 32) {
    p.spill_bytes = 512;
    p.spill = [&](std::string_view lines, uint64_t nlines) {
      check(lines, nlines);
      if ((flags & 64) && spilled > 0) {
        refused = true;
        return false;
      }
      spilled += nlines;
      return true;
    };
  }
  RingTake t;
  std::string why;
  RingHeader h;
  reader.Header(b, kRingBytes, &h, &why);
  if (reader.Take(b, kRingBytes, p, &t, &why)) {
    check(t.lines, t.nlines);
    // A take abandoned after parts went out (a slot a thread still holds:
    // the whole ring again next pass, the parts deduplicated) reports none.
    const bool abandoned = !t.remove && t.nlines == 0 && t.spilled == 0;
    if (t.spilled != (refused ? 0 : spilled) && !abandoned) Broken("spilled is not the lines handed to spill");
    if (refused && (t.nlines || t.remove || !t.slots.empty())) Broken("a refused part left something to commit");
    if (flags & 16) reader.Commit(b, kRingBytes, t);
  }
  // Back to zero: the header, the two slots, the patched path entries.
  std::memset(b, 0, kRingHeaderBytes + kSlots);
  for (auto [at, len] : patched) std::memset(b + at, 0, len);
  return 0;
}
