// The project's own fixtures (test/fixtures/, see its README.md) and golden
// files (test/golden/): an exporter run on a fixture gives records that are
// compared, with their volatile values blanked, against a golden file kept
// in the repository. IOSONAR_UPDATE_GOLDEN=1 rewrites the golden files from
// the records instead of comparing (then review the diff and commit it).
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace iosonar::test {

std::string FixturesDir();  // <source>/test/fixtures
std::string GoldenDir();    // <source>/test/golden

// JSON lines re-written (keys in their order) with the values of the keys
// `blank` picks replaced by "_". Lines that are not JSON objects are kept.
std::string BlankValues(const std::string& jsonl, const std::function<bool(std::string_view key)>& blank);
// The values that differ between any two runs: @timestamp, event.stream,
// host.name, sampler.duration_ns, and the given keys.
std::string BlankVolatile(const std::string& jsonl, std::initializer_list<std::string_view> more = {});

// Compares `actual` with test/golden/<name>, line by line, and names the
// first lines that differ (the whole output is written to
// <build>/golden-actual/<name> for a diff). With IOSONAR_UPDATE_GOLDEN=1 the
// golden file is written instead (the check then passes, with a warning).
void CheckGolden(const std::string& name, const std::string& actual);

// Copies a directory tree (files replaced, symbolic links kept as links),
// leaving out top-level entries named in `skip`.
void CopyTree(const std::string& from, const std::string& to, std::initializer_list<std::string_view> skip = {});

// Writes `text` gzip-compressed (for fixtures kept as text and read as .gz).
void WriteGzip(const std::string& path, const std::string& text);

// Every line parses as a record of the schema (FAILs the test naming the line).
void CheckRecordsValid(const std::string& jsonl);

// How many times `needle` occurs in `s`.
int Count(const std::string& s, const std::string& needle);

}  // namespace iosonar::test
