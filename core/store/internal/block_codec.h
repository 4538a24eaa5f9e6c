// The compact encoding of a block of records, as the SQLite store keeps them
// (one BLOB per block; see sqlite_store.h). Internal to the store; public so
// tests can check the round trip and tools can read blocks.
//
// A block holds the records of one dataset. Each field of the dataset has a
// small number, its code (0..63), fixed per store in its `fields` table, so
// a field added to the schema later gets a new code and old blocks stay
// readable; event.dataset has no code (it is the block's dataset).
//
//   block   := format:u8 (=1)  count:u32le  record*
//   record  := mask:varint  value*        one value per set bit, lowest code first
//   value   := long, date   zigzag varint of (v - previous v of this code in the block)
//              bool         one byte, 0 or 1
//              double       8 bytes, IEEE 754 little-endian
//              keyword      varint 0: same as the previous value of this code in the block
//                           varint L > 0: L - 1 bytes of text follow
//
// Deltas make timestamps (and pids, seqs, counts of interleaved streams)
// one or two bytes; repeats make job, op, layer and often host a byte each.
// Every read is bounds-checked: a damaged blob is reported, never overrun.
//
// Encoders and decoders are single-threaded objects; a DatasetCodes is
// immutable while they use it.
#pragma once
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/records/record.h"
#include "core/records/schema.h"

namespace iosonar::blocks {

inline constexpr uint8_t kFormat = 1;
inline constexpr size_t kHeaderBytes = 5;
inline constexpr int kMaxCodes = 64;

// The codes of one dataset's fields in one store.
struct DatasetCodes {
  struct Code {
    int field = -1;  // position in schema::Fields(), -1 if this binary's schema lacks it
    schema::Type type = schema::Type::kLong;
    bool used = false;  // the code exists
  };
  std::array<Code, kMaxCodes> by_code{};
  std::array<int8_t, kMaxFields> code_of{};  // schema position -> code, -1 if none
  int dataset_field = -1;                    // schema position of event.dataset
  std::string_view dataset;                  // its name (the schema's string)

  DatasetCodes() { code_of.fill(-1); }
  void Set(int code, int field, schema::Type type) {
    by_code[static_cast<size_t>(code)] = {field, type, true};
    if (field >= 0) code_of[static_cast<size_t>(field)] = static_cast<int8_t>(code);
  }
};

// ---- varints ----------------------------------------------------------------------

inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// false if the varint runs past end or is longer than 10 bytes.
inline bool GetVarint(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  if (p < end && *p < 0x80) {
    *out = *p++;
    return true;
  }
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return false;
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) {
      *out = v;
      return true;
    }
  }
  return false;
}

// ---- encoder -----------------------------------------------------------------------

class BlockEncoder {
 public:
  // codes must outlive the encoder and not change between Reset()s.
  explicit BlockEncoder(const DatasetCodes* codes) : codes_(codes) { Reset(); }

  // Starts a new, empty block (keeps the buffer).
  void Reset() {
    fields_.clear();
    for (int c = 0; c < kMaxCodes; ++c) {
      const auto& e = codes_->by_code[static_cast<size_t>(c)];
      if (e.used && e.field >= 0) fields_.push_back({e.field, c, e.type});
    }
    Reserve(kHeaderBytes);
    buf_[0] = kFormat;
    len_ = kHeaderBytes;
    n_ = 0;
    prev_i_.fill(0);
    prev_s_.fill({0, 0});
    has_prev_s_ = 0;
  }

  // Appends one record of the codes' dataset. Values are copied.
  void Add(const ParsedRecord& r) {
    // Upper bound of everything but keyword text: mask + 10 bytes a value.
    Reserve(len_ + 10 + 10 * fields_.size());
    uint64_t mask = 0;
    for (const auto& f : fields_)
      if (r.v[static_cast<size_t>(f.field)].kind != FieldValue::kAbsent) mask |= uint64_t{1} << f.code;
    uint8_t* p = PutVarint(buf_.get() + len_, mask);
    for (const auto& f : fields_) {
      if (!(mask >> f.code & 1)) continue;
      const FieldValue& v = r.v[static_cast<size_t>(f.field)];
      const size_t c = static_cast<size_t>(f.code);
      switch (f.type) {
        case schema::Type::kLong:
        case schema::Type::kDate: {
          // Wrapping difference: exact for every pair of int64 values.
          const uint64_t d = static_cast<uint64_t>(v.i) - static_cast<uint64_t>(prev_i_[c]);
          p = PutVarint(p, ZigZag(static_cast<int64_t>(d)));
          prev_i_[c] = v.i;
          break;
        }
        case schema::Type::kBool: *p++ = v.i ? 1 : 0; break;
        case schema::Type::kDouble: {
          uint64_t bits = std::bit_cast<uint64_t>(v.d);
          if constexpr (std::endian::native == std::endian::big) bits = __builtin_bswap64(bits);
          std::memcpy(p, &bits, 8);
          p += 8;
          break;
        }
        case schema::Type::kKeyword: {
          const size_t n = v.s.size();
          const auto& [off, plen] = prev_s_[c];
          if ((has_prev_s_ >> c & 1) && plen == n && std::memcmp(buf_.get() + off, v.s.data(), n) == 0) {
            *p++ = 0;
            break;
          }
          len_ = static_cast<size_t>(p - buf_.get());
          Reserve(len_ + 10 + n + 10 * fields_.size());  // this text, and the values still to come
          p = PutVarint(buf_.get() + len_, uint64_t{n} + 1);
          prev_s_[c] = {static_cast<uint32_t>(p - buf_.get()), static_cast<uint32_t>(n)};
          has_prev_s_ |= uint64_t{1} << c;
          if (n) std::memcpy(p, v.s.data(), n);
          p += n;
          break;
        }
      }
    }
    len_ = static_cast<size_t>(p - buf_.get());
    ++n_;
  }

  uint32_t records() const { return n_; }
  size_t bytes() const { return len_; }
  // The finished block (valid until the next Add or Reset).
  std::span<const uint8_t> Finish() {
    uint32_t n = n_;
    if constexpr (std::endian::native == std::endian::big) n = __builtin_bswap32(n);
    std::memcpy(buf_.get() + 1, &n, 4);
    return {buf_.get(), len_};
  }
  // Memory held by the buffer.
  size_t capacity() const { return cap_; }

 private:
  struct Field {
    int field, code;
    schema::Type type;
  };

  void Reserve(size_t need) {
    if (need <= cap_) return;
    size_t cap = cap_ ? cap_ : 4096;
    while (cap < need) cap *= 2;
    auto b = std::make_unique_for_overwrite<uint8_t[]>(cap);
    if (len_) std::memcpy(b.get(), buf_.get(), len_);
    buf_ = std::move(b);
    cap_ = cap;
  }

  const DatasetCodes* codes_;
  std::vector<Field> fields_;  // the codes this binary writes, in code order
  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0, len_ = 0;
  uint32_t n_ = 0;
  std::array<int64_t, kMaxCodes> prev_i_{};
  std::array<std::pair<uint32_t, uint32_t>, kMaxCodes> prev_s_{};  // offset, length in buf_
  uint64_t has_prev_s_ = 0;
};

// ---- decoder -----------------------------------------------------------------------

class BlockDecoder {
 public:
  // Checks the header; on error says what is wrong.
  bool Open(const DatasetCodes* codes, const uint8_t* data, size_t size, std::string* error) {
    codes_ = codes;
    p_ = data;
    end_ = data + size;
    left_ = 0;
    last_present_.Reset();
    prev_i_.fill(0);
    prev_s_.fill({});
    if (size < kHeaderBytes || data[0] != kFormat) {
      *error = size < kHeaderBytes ? "block too short" : "unknown block format " + std::to_string(data[0]);
      return false;
    }
    uint32_t n;
    std::memcpy(&n, data + 1, 4);
    if constexpr (std::endian::native == std::endian::big) n = __builtin_bswap32(n);
    left_ = n;
    p_ += kHeaderBytes;
    return true;
  }

  uint32_t left() const { return left_; }

  // Decodes the next record into *out: fields absent from it are cleared
  // (out must start cleared, or be the record of the previous call); strings
  // point into the block; dates come back as kInt epoch ns; event.dataset is
  // set to the dataset. *present gets the record's fields (schema positions).
  // Returns false at the end (error empty) or on damage (error set).
  bool Next(ParsedRecord* out, FieldSet* present, std::string* error) {
    if (left_ == 0) {
      if (p_ != end_) *error = "bytes after the last record";
      return false;
    }
    uint64_t mask;
    if (!GetVarint(p_, end_, &mask)) return Bad("record header", error);
    FieldSet pres;
    for (uint64_t m = mask; m; m &= m - 1) {
      const int c = std::countr_zero(m);
      const auto& code = codes_->by_code[static_cast<size_t>(c)];
      if (!code.used) return Bad("unknown field code " + std::to_string(c), error);
      FieldValue v;
      switch (code.type) {
        case schema::Type::kLong:
        case schema::Type::kDate: {
          uint64_t z;
          if (!GetVarint(p_, end_, &z)) return Bad("integer", error);
          const int64_t x = static_cast<int64_t>(static_cast<uint64_t>(prev_i_[static_cast<size_t>(c)]) +
                                                 static_cast<uint64_t>(UnZigZag(z)));
          prev_i_[static_cast<size_t>(c)] = x;
          v.kind = FieldValue::kInt;
          v.i = x;
          break;
        }
        case schema::Type::kBool:
          if (p_ == end_) return Bad("boolean", error);
          v.kind = FieldValue::kBool;
          v.i = *p_++ != 0;
          break;
        case schema::Type::kDouble: {
          if (end_ - p_ < 8) return Bad("double", error);
          uint64_t bits;
          std::memcpy(&bits, p_, 8);
          if constexpr (std::endian::native == std::endian::big) bits = __builtin_bswap64(bits);
          p_ += 8;
          v.kind = FieldValue::kDouble;
          v.d = std::bit_cast<double>(bits);
          break;
        }
        case schema::Type::kKeyword: {
          uint64_t h;
          if (!GetVarint(p_, end_, &h)) return Bad("text length", error);
          auto& prev = prev_s_[static_cast<size_t>(c)];
          if (h == 0) {
            if (!prev.data()) return Bad("repeat without an earlier value", error);
          } else {
            if (h - 1 > static_cast<uint64_t>(end_ - p_)) return Bad("text", error);
            prev = std::string_view(reinterpret_cast<const char*>(p_), h - 1);
            p_ += h - 1;
          }
          v.kind = FieldValue::kString;
          v.s = prev;
          break;
        }
      }
      if (code.field >= 0) {
        out->v[static_cast<size_t>(code.field)] = v;
        pres.Set(static_cast<size_t>(code.field));
      }
    }
    if (codes_->dataset_field >= 0) {
      FieldValue& d = out->v[static_cast<size_t>(codes_->dataset_field)];
      d.kind = FieldValue::kString;
      d.s = codes_->dataset;
      pres.Set(static_cast<size_t>(codes_->dataset_field));
    }
    // Fields the previous record had and this one lacks (positions beyond 64 too).
    for (size_t k = 0; k < FieldSet::kWords; ++k)
      for (uint64_t gone = last_present_.w[k] & ~pres.w[k]; gone; gone &= gone - 1)
        out->v[k * 64 + static_cast<size_t>(std::countr_zero(gone))].kind = FieldValue::kAbsent;
    last_present_ = pres;
    *present = pres;
    --left_;
    return true;
  }

 private:
  bool Bad(const std::string& what, std::string* error) {
    *error = "damaged block: bad " + what + " (" + std::to_string(left_) + " records before the end)";
    left_ = 0;
    return false;
  }

  const DatasetCodes* codes_ = nullptr;
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint32_t left_ = 0;
  FieldSet last_present_;
  std::array<int64_t, kMaxCodes> prev_i_{};
  std::array<std::string_view, kMaxCodes> prev_s_{};
};

}  // namespace iosonar::blocks
