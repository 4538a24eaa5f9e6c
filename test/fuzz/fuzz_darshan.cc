// libFuzzer entry point of the Darshan log reader (core/darshan): any bytes
// as a log file. Promises beyond "no crash, no sanitizer report": a log the
// reader accepts imports without error (bounded here to 200,000 records, as
// a shared file of a large job spreads over its ranks), and every record the
// import emits passes the collector's schema validation.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "core/darshan/darshan_import.h"
#include "core/darshan/darshan_log.h"
#include "core/records/record.h"

using namespace iosonar;

namespace {
[[noreturn]] void Broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz: broken promise: %s: %s\n", what, detail.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto log = darshan::ParseLog(std::span<const uint8_t>(data, size));
  if (!log.ok()) {
    if (log.status().message().rfind("offset ", 0) != 0) Broken("an error without its offset", log.status().message());
    return 0;
  }
  darshan::ImportReport rep;
  std::vector<char> buf;
  ParsedRecord rec;
  uint64_t n = 0;
  const Status stop = Status::Unavailable("bound");
  Status st = darshan::ImportLog(log.value(), {}, [&](std::string_view line) -> Status {
    if (++n > 200000) return stop;
    buf.assign(line.begin(), line.end());
    buf.push_back('\0');
    if (line.empty() || line.back() != '\n') Broken("a line without its newline", std::string(line));
    if (Status v = ParseRecordInsitu(buf.data(), line.size() - 1, &rec); !v.ok())
      Broken("an emitted record fails the schema", v.message() + ": " + std::string(line));
    return Status::Ok();
  }, &rep);
  if (!st.ok() && st.code() != Code::kUnavailable) Broken("an accepted log does not import", st.message());
  return 0;
}
