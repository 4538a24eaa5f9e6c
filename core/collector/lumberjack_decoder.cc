#include "core/collector/lumberjack_decoder.h"

#include <zlib.h>

#include <algorithm>

#include <cstring>

#include "core/transport/lumberjack.h"

namespace iosonar {
namespace {

Status Bad(uint64_t at, const std::string& what) {
  return Status::Invalid("lumberjack: " + what + " at stream offset " + std::to_string(at));
}

std::string Printable(char c) {
  if (c >= 0x21 && c < 0x7f) return std::string("'") + c + "'";
  char b[8];
  std::snprintf(b, sizeof b, "0x%02x", static_cast<unsigned char>(c));
  return b;
}

// zlib-inflates in into *out, at most max bytes.
Status Inflate(std::string_view in, size_t max, std::string* out) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Status::Internal("lumberjack: inflateInit failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  out->clear();
  int rc = Z_OK;
  char chunk[65536];
  // Room for the bound at once: no doubling copy past it (a copy would hold
  // twice the bound while it is made), and pages never written take no memory.
  out->reserve(std::min(max, size_t{256} << 20) + sizeof chunk);
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return Status::Invalid(std::string("bad zlib data in a compressed frame (") + (z.msg ? z.msg : "inflate failed") + ")");
    }
    out->append(chunk, sizeof chunk - z.avail_out);
    if (out->size() > max) {
      inflateEnd(&z);
      return Status::Invalid("a compressed frame inflates past " + std::to_string(max) + " bytes");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return Status::Invalid("a compressed frame ends before its zlib stream does");
    }
  }
  inflateEnd(&z);
  return Status::Ok();
}

}  // namespace

Status LumberjackDecoder::Frames(std::string_view s, bool nested, size_t* used, Handler* h) {
  namespace lj = lumberjack;
  size_t p = 0;
  while (p < s.size()) {
    const uint64_t at = offset_ + (nested ? 0 : p);
    const size_t left = s.size() - p;
    if (left < 2) break;
    if (s[p] != lj::kVersion) {
      if (s[p] == '1') return Bad(at, "protocol version 1 is not supported (send version 2, as Beats do)");
      return Bad(at, "expected protocol version '2', got " + Printable(s[p]));
    }
    const char type = s[p + 1];
    if (type == lj::kWindow) {
      if (left < 6) break;
      h->Window(lj::GetU32(s.data() + p + 2));
      p += 6;
    } else if (type == lj::kJson) {
      if (left < 10) break;
      const uint32_t seq = lj::GetU32(s.data() + p + 2);
      const uint32_t len = lj::GetU32(s.data() + p + 6);
      if (len > max_event_)
        return Bad(at, "an event of " + std::to_string(len) + " bytes (the bound is " + std::to_string(max_event_) + ")");
      if (left < 10 + size_t{len}) break;
      h->Event(seq, s.substr(p + 10, len));
      p += 10 + size_t{len};
    } else if (type == lj::kCompressed) {
      if (nested) return Bad(at, "a compressed frame inside a compressed frame");
      if (left < 6) break;
      const uint32_t len = lj::GetU32(s.data() + p + 2);
      if (len > max_compressed_)
        return Bad(at, "a compressed frame of " + std::to_string(len) + " bytes (the bound is " +
                           std::to_string(max_compressed_) + ")");
      if (left < 6 + size_t{len}) break;
      std::string inflated;
      if (Status st = Inflate(s.substr(p + 6, len), max_inflated_, &inflated); !st.ok())
        return Bad(at, st.message());
      size_t inner = 0;
      if (Status st = Frames(inflated, true, &inner, h); !st.ok()) return st;
      if (inner != inflated.size()) return Bad(at, "a compressed frame ends inside a frame");
      p += 6 + size_t{len};
    } else if (type == 'D') {
      return Bad(at, "v1 data frames ('D') are not supported: send JSON frames ('J')");
    } else if (type == lj::kAck) {
      return Bad(at, "an ACK frame from the sender");
    } else {
      return Bad(at, "unknown frame type " + Printable(type));
    }
  }
  *used = p;
  return Status::Ok();
}

// buf_[pos_, end_) holds a partial frame; buf_ only grows (zero-filled only
// then), so reading into it costs no clearing per read.
void LumberjackDecoder::Room(size_t n) {
  if (pos_ > 0 && (pos_ == end_ || end_ - pos_ < pos_)) {  // move the partial frame to the front
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  if (buf_.size() < end_ + n) buf_.resize(end_ + n);
}

void LumberjackDecoder::Consumed(size_t used) {
  offset_ += used;
  pos_ += used;
  if (pos_ == end_) {
    pos_ = end_ = 0;
    if (buf_.size() > (1u << 20)) std::string().swap(buf_);  // one big frame does not keep its memory
  }
}

std::pair<char*, size_t> LumberjackDecoder::Space() {
  constexpr size_t kRoom = 64 * 1024;
  Room(kRoom);
  return {buf_.data() + end_, buf_.size() - end_};
}

Status LumberjackDecoder::Commit(size_t n, Handler* h) {
  end_ += n;
  std::string_view s(buf_.data() + pos_, end_ - pos_);
  size_t used = 0;
  Status st = Frames(s, false, &used, h);
  if (!st.ok()) return st;
  Consumed(used);
  if (buffered() > max_compressed_ + max_event_ + 16)
    return Status::Invalid("lumberjack: a partial frame of " + std::to_string(buffered()) + " bytes at stream offset " +
                           std::to_string(offset_));
  return Status::Ok();
}

Status LumberjackDecoder::Feed(const char* data, size_t n, Handler* h) {
  // Decode straight from the caller's buffer when nothing is pending.
  std::string_view s;
  const bool direct = pos_ == end_;
  if (direct) {
    pos_ = end_ = 0;
    s = std::string_view(data, n);
  } else {
    Room(n);
    std::memcpy(buf_.data() + end_, data, n);
    end_ += n;
    s = std::string_view(buf_.data() + pos_, end_ - pos_);
  }
  size_t used = 0;
  Status st = Frames(s, false, &used, h);
  if (!st.ok()) return st;
  if (direct) {
    offset_ += used;
    Room(n - used);  // the partial frame, if any
    std::memcpy(buf_.data(), data + used, n - used);
    end_ = n - used;
  } else {
    Consumed(used);
  }
  // A partial frame never holds more than its own bound plus a header.
  if (buffered() > max_compressed_ + max_event_ + 16)
    return Bad(offset_, "a partial frame of " + std::to_string(buffered()) + " bytes");
  return Status::Ok();
}

}  // namespace iosonar
