// Lumberjack v2, the Beats protocol (Logstash's `beats` input, Filebeat's
// output): acknowledged delivery of JSON events. Frames, all integers
// big-endian:
//
//   '2' 'W' u32 window          the sender will send `window` events, then wait
//   '2' 'J' u32 seq u32 len     one JSON event of len bytes; seq counts 1..window
//   '2' 'C' u32 len             len bytes of zlib data holding more frames
//   '2' 'A' u32 seq             receiver to sender: events 1..seq are safe
//
// iosonar speaks it on both sides: `lumberjack://HOST:PORT` outputs (the
// exporters, the collector's forwarder) keep every record until its ACK
// arrives, and `iosonar collect` answers on its TCP port, telling the protocol
// from the first byte ('2'; JSON lines start with '{'). The receiver
// acknowledges an event only once it is stored (or set aside in the dead-letter
// file), so a spool is emptied only by what the store holds.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar::lumberjack {

constexpr char kVersion = '2';
constexpr char kWindow = 'W';
constexpr char kJson = 'J';
constexpr char kCompressed = 'C';
constexpr char kAck = 'A';

inline void PutU32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
  out->append(b, 4);
}
inline uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

}  // namespace iosonar::lumberjack
