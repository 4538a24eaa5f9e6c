// Wall-clock helpers: epoch nanoseconds and ISO 8601 (UTC) conversion.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace iosonar {

int64_t NowNs();        // CLOCK_REALTIME, ns since the Unix epoch
int64_t MonotonicNs();  // CLOCK_MONOTONIC
// "2026-11-22T07:09:12.123Z" (milliseconds, UTC).
std::string FormatIsoMillis(int64_t epoch_ns);
// Days in month m (1-12) of year y of the proleptic Gregorian calendar; 0 for a bad month.
int DaysInMonth(int y, int m);
// Accepts YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM); returns epoch ns.
std::optional<int64_t> ParseIso8601(std::string_view s);

}  // namespace iosonar
