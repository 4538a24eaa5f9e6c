// Prints what core/darshan's reader read from a Darshan log, as one JSON
// document, for test/darshan/test_darshan.py to compare with pydarshan's
// (the Darshan project's own reader): the job, every module's state, every
// record's counters, LUSTRE layouts and DXT segments. On a log it refuses it
// prints the error on stderr and exits 1.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "core/darshan/darshan_log.h"

using namespace iosonar::darshan;

namespace {

std::string Esc(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o;
}

void Counters(const char* mod, const std::vector<CounterRecord>& recs, bool* first) {
  for (const auto& r : recs) {
    printf("%s\n{\"module\":\"%s\",\"id\":%" PRIu64 ",\"rank\":%" PRId64 ",\"counters\":[", *first ? "" : ",", mod,
           r.id, r.rank);
    *first = false;
    for (size_t i = 0; i < r.counters.size(); ++i) printf("%s%" PRId64, i ? "," : "", r.counters[i]);
    printf("],\"fcounters\":[");
    for (size_t i = 0; i < r.fcounters.size(); ++i) printf("%s%.17g", i ? "," : "", r.fcounters[i]);
    printf("]}");
  }
}

void Dxt(const char* mod, const std::vector<DxtRecord>& recs, bool* first) {
  for (const auto& r : recs) {
    printf("%s\n{\"module\":\"%s\",\"id\":%" PRIu64 ",\"rank\":%" PRId64 ",\"hostname\":\"%s\",\"segments\":[",
           *first ? "" : ",", mod, r.id, r.rank, Esc(r.hostname).c_str());
    *first = false;
    for (size_t i = 0; i < r.segments.size(); ++i) {
      const auto& s = r.segments[i];
      printf("%s[%d,%" PRId64 ",%" PRId64 ",%.17g,%.17g]", i ? "," : "", s.write ? 1 : 0, s.offset, s.length, s.start,
             s.end);
    }
    printf("]}");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: darshan_dump LOG\n");
    return 2;
  }
  auto log = ReadLog(argv[1]);
  if (!log.ok()) {
    fprintf(stderr, "%s: %s\n", argv[1], log.status().message().c_str());
    return 1;
  }
  const Log& l = log.value();
  const Job& j = l.job;
  printf("{\"version\":\"%s\",\"swapped\":%s,\"job\":{\"uid\":%" PRId64 ",\"nprocs\":%" PRId64 ",\"jobid\":%" PRId64
         ",\"start_time_sec\":%" PRId64 ",\"start_time_nsec\":%" PRId64 ",\"end_time_sec\":%" PRId64
         ",\"end_time_nsec\":%" PRId64 ",\"exe\":\"%s\",\"mounts\":%zu},\"modules\":[",
         l.version.c_str(), l.swapped ? "true" : "false", j.uid, j.nprocs, j.jobid, j.start_sec, j.start_nsec,
         j.end_sec, j.end_nsec, Esc(j.exe).c_str(), j.mounts.size());
  for (size_t i = 0; i < l.modules.size(); ++i) {
    const auto& m = l.modules[i];
    printf("%s{\"name\":\"%s\",\"version\":%u,\"partial\":%s,\"read\":%s,\"records\":%" PRIu64 ",\"note\":\"%s\"}",
           i ? "," : "", m.name.c_str(), m.version, m.partial ? "true" : "false", m.read ? "true" : "false",
           m.records, Esc(m.note).c_str());
  }
  printf("],\"names\":%zu,\"records\":[", l.names.size());
  bool first = true;
  Counters("POSIX", l.posix, &first);
  Counters("MPI-IO", l.mpiio, &first);
  Counters("STDIO", l.stdio, &first);
  for (const auto& r : l.lustre) {
    printf("%s\n{\"module\":\"LUSTRE\",\"id\":%" PRIu64 ",\"rank\":%" PRId64 ",\"components\":[", first ? "" : ",",
           r.id, r.rank);
    first = false;
    for (size_t i = 0; i < r.components.size(); ++i)
      printf("%s[%" PRId64 ",%" PRId64 "]", i ? "," : "", r.components[i].stripe_size, r.components[i].stripe_count);
    printf("],\"osts\":[");
    for (size_t i = 0; i < r.osts.size(); ++i) printf("%s%" PRId64, i ? "," : "", r.osts[i]);
    printf("]}");
  }
  Dxt("DXT_POSIX", l.dxt_posix, &first);
  Dxt("DXT_MPIIO", l.dxt_mpiio, &first);
  printf("\n]}\n");
  return 0;
}
