// The receiving side of Lumberjack v2 (core/transport/lumberjack.h): bytes in,
// window sizes and JSON events out. Bounded: an event larger than max_event,
// a compressed frame larger than max_compressed or inflating past
// max_inflated, an unknown frame type or version, a v1 frame, is a protocol
// error naming what was wrong and where (the connection is then closed; what
// was acknowledged before stays stored, the rest the sender resends).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/base/status.h"

namespace iosonar {

class LumberjackDecoder {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void Window(uint32_t size) = 0;
    virtual void Event(uint32_t seq, std::string_view json) = 0;
  };

  LumberjackDecoder(size_t max_event, size_t max_compressed, size_t max_inflated)
      : max_event_(max_event), max_compressed_(max_compressed), max_inflated_(max_inflated) {}

  // Consumes n bytes; complete frames go to h, a partial one is kept.
  Status Feed(const char* data, size_t n, Handler* h);
  // Zero-copy reading: read() into Space(), then Commit(n) decodes in place.
  std::pair<char*, size_t> Space();
  Status Commit(size_t n, Handler* h);
  // Bytes held for a partial frame (the collector counts them in its bound).
  size_t buffered() const { return end_ - pos_; }
  uint64_t offset() const { return offset_; }  // stream offset of the next frame (for errors)

 private:
  // Decodes whole frames from s; *used: bytes consumed. nested: inside a 'C'
  // frame, where a partial frame at the end is an error and 'C' may not nest.
  Status Frames(std::string_view s, bool nested, size_t* used, Handler* h);

  size_t max_event_, max_compressed_, max_inflated_;
  std::string buf_;
  size_t pos_ = 0;
  size_t end_ = 0;  // buf_[pos_, end_): a partial frame; buf_ beyond end_ is room
  void Room(size_t n);           // at least n bytes of room after end_
  void Consumed(size_t used);    // used bytes from pos_ decoded
  uint64_t offset_ = 0;
};

}  // namespace iosonar
