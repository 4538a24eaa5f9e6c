// The head every analysis result record starts with (iosonar.result.*): opens
// the JSON object and writes @timestamp, event.dataset, event.stream,
// event.seq and host.name, in that order; the caller adds its fields
// (w.Kv(field::kJobId, ...): JsonWriter takes ids as keys, they convert to
// the name) and closes the object.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/base/json.h"
#include "core/base/timeutil.h"
#include "core/records/fields.h"

namespace iosonar::analysis {

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
