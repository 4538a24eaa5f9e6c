// What every analysis result record (iosonar.result.*) shares: its stream id
// and its head.
//
// The stream id rule, for every analysis: event.stream is FNV-1a (StreamHash,
// core/base/hash.h) over the dataset and then the parts that identify the
// computation (the job, the options, and where a recomputation can find
// something else, the result itself), so re-sending the same result gives the
// same (event.stream, event.seq) and the stores drop the copy, while a
// different result lands under another stream instead of overwriting or
// being taken for a copy. Each analysis's *ToRecords derives its stream here;
// nothing else makes result stream ids.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/hash.h"
#include "core/base/json.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::analysis {

// parts: a list of strings (string_view, std::string), written out or
// built at run time (one per phase, ...).
template <class Parts>
int64_t ResultStreamId(std::string_view dataset, const Parts& parts) {
  StreamHash h;
  h.Add(dataset);
  for (std::string_view p : parts) h.Add(p);
  return h.Id();
}
inline int64_t ResultStreamId(std::string_view dataset, std::initializer_list<std::string_view> parts) {
  return ResultStreamId<std::initializer_list<std::string_view>>(dataset, parts);
}

// Opens the JSON object and writes @timestamp, event.dataset, event.stream,
// event.seq and host.name, in that order; the caller adds its fields and
// closes the object (w.Kv(field::kJobId, ...): JsonWriter takes ids as keys).
inline void BeginResultRecord(JsonWriter& w, int64_t ts_ns, DatasetId dataset, int64_t stream, int64_t seq,
                              std::string_view host) {
  w.BeginObject();
  w.Kv(field::kTimestamp, FormatIsoMillis(ts_ns));
  w.Kv(field::kEventDataset, dataset);
  w.Kv(field::kEventStream, stream);
  w.Kv(field::kEventSeq, seq);
  w.Kv(field::kHostName, host);
}

}  // namespace iosonar::analysis
