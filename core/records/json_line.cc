#include "core/records/json_line.h"

namespace iosonar {

void JsonLine::Str(const char* s, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  // Fast path: nothing to escape (paths and names almost never need it).
  size_t k = 0;
  while (k < n) {
    unsigned char c = static_cast<unsigned char>(s[k]);
    if (c < 0x20 || c == '"' || c == '\\') break;
    ++k;
  }
  if (k == n) {
    if (len_ + n + 2 > cap_) {
      failed_ = true;
      return;
    }
    buf_[len_++] = '"';
    memcpy(buf_ + len_, s, n);
    len_ += n;
    buf_[len_++] = '"';
    return;
  }
  Raw("\"", 1);
  size_t run = 0;  // start of the pending unescaped run
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    Raw(s + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': Raw("\\\"", 2); break;
      case '\\': Raw("\\\\", 2); break;
      case '\n': Raw("\\n", 2); break;
      case '\r': Raw("\\r", 2); break;
      case '\t': Raw("\\t", 2); break;
      default: {
        char e[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        Raw(e, 6);
      }
    }
  }
  Raw(s + run, n - run);
  Raw("\"", 1);
}

void JsonLine::Uint(uint64_t v) {
  // Two digits per step from a table: this runs ~10 times per trace record.
  static const char kPairs[201] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char tmp[24];
  int i = 24;
  while (v >= 100) {
    unsigned r = static_cast<unsigned>(v % 100);
    v /= 100;
    tmp[--i] = kPairs[2 * r + 1];
    tmp[--i] = kPairs[2 * r];
  }
  if (v >= 10) {
    tmp[--i] = kPairs[2 * v + 1];
    tmp[--i] = kPairs[2 * v];
  } else {
    tmp[--i] = static_cast<char>('0' + v);
  }
  Raw(tmp + i, static_cast<size_t>(24 - i));
}

void JsonLine::Int(int64_t v) {
  if (v < 0) {
    Raw("-", 1);
    Uint(static_cast<uint64_t>(0) - static_cast<uint64_t>(v));
  } else {
    Uint(static_cast<uint64_t>(v));
  }
}

void CivilFromDays(int64_t z, int* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int>(yy + (*m <= 2));
}

void JsonLine::IsoMillis(int64_t epoch_ns) {
  int64_t ms = epoch_ns >= 0 ? epoch_ns / 1000000 : (epoch_ns - 999999) / 1000000;
  int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int milli = static_cast<int>(ms - secs * 1000);
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int sod = static_cast<int>(secs - days * 86400);
  int y;
  unsigned mo, d;
  CivilFromDays(days, &y, &mo, &d);
  char b[32];
  auto two = [](char* p, unsigned v) { p[0] = static_cast<char>('0' + v / 10); p[1] = static_cast<char>('0' + v % 10); };
  b[0] = '"';
  unsigned yy = static_cast<unsigned>(y);
  b[1] = static_cast<char>('0' + yy / 1000 % 10);
  b[2] = static_cast<char>('0' + yy / 100 % 10);
  b[3] = static_cast<char>('0' + yy / 10 % 10);
  b[4] = static_cast<char>('0' + yy % 10);
  b[5] = '-';
  two(b + 6, mo);
  b[8] = '-';
  two(b + 9, d);
  b[11] = 'T';
  two(b + 12, static_cast<unsigned>(sod / 3600));
  b[14] = ':';
  two(b + 15, static_cast<unsigned>(sod / 60 % 60));
  b[17] = ':';
  two(b + 18, static_cast<unsigned>(sod % 60));
  b[20] = '.';
  b[21] = static_cast<char>('0' + milli / 100);
  b[22] = static_cast<char>('0' + milli / 10 % 10);
  b[23] = static_cast<char>('0' + milli % 10);
  b[24] = 'Z';
  b[25] = '"';
  Raw(b, 26);
}

}  // namespace iosonar
