#include "core/base/timeutil.h"

#include <ctime>

#include "core/records/json_line.h"

namespace iosonar {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string FormatIsoMillis(int64_t epoch_ns) {
  char b[40];
  JsonLine j(b, sizeof b);
  j.IsoMillis(epoch_ns);
  return std::string(b + 1, j.size() - 2);  // without the quotes
}

namespace {
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}
bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}
}  // namespace

std::optional<int64_t> ParseIso8601(std::string_view s) {
  int y, mo, d, h, mi, sec;
  if (!Digits(s, 0, 4, &y) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != ' ') || !Digits(s, 11, 2, &h) || s[13] != ':' ||
      !Digits(s, 14, 2, &mi) || s[16] != ':' || !Digits(s, 17, 2, &sec))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  // Epoch nanoseconds in an int64 span 1677-09-21 to 2262-04-11: refuse the
  // years at and beyond the edges rather than overflow.
  if (y < 1678 || y > 2261) return std::nullopt;
  size_t p = 19;
  int64_t frac_ns = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    int64_t scale = 100000000;
    size_t start = p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
      frac_ns += (s[p] - '0') * scale;
      scale /= 10;
      ++p;
    }
    if (p == start) return std::nullopt;
  }
  int64_t tz = 0;
  if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
    ++p;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    int th, tm;
    if (!Digits(s, p + 1, 2, &th) || p + 3 >= s.size()) return std::nullopt;
    size_t q = p + 3;
    if (s[q] == ':') ++q;
    if (!Digits(s, q, 2, &tm)) return std::nullopt;
    // Real zones lie within -12:00 .. +14:00; anything beyond +-14:00 is garbage.
    if (tm > 59 || th * 60 + tm > 14 * 60) return std::nullopt;
    tz = (th * 3600 + tm * 60) * (s[p] == '+' ? 1 : -1);
    p = q + 2;
  } else {
    return std::nullopt;  // a timestamp without a zone is ambiguous: refuse it
  }
  if (p != s.size()) return std::nullopt;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - tz;
  return secs * 1000000000 + frac_ns;
}

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12) return 0;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

}  // namespace iosonar
