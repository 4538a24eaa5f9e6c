// libFuzzer: the merged store block (core/store/internal/block_merge.h), read
// from store.db on every scan. Any bytes as a merged block must be refused
// or expanded, never overrun; and any bytes that decode as a first-pass
// block must merge back to themselves or be refused (MergeBlock checks its
// own expansion).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/records/fields.h"
#include "core/records/schema.h"
#include "core/store/internal/block_codec.h"
#include "core/store/internal/block_merge.h"

using namespace iosonar;

namespace {
blocks::DatasetCodes TraceCodes() {
  blocks::DatasetCodes c;
  c.dataset = dataset::kTrace;
  c.dataset_field = static_cast<int>(field::kEventDataset.index());
  int code = 0;
  for (const auto* f : schema::FieldsOf(dataset::kTrace)) {
    const int pos = static_cast<int>(f - schema::Fields().data());
    if (pos != c.dataset_field) c.Set(code++, pos, f->type);
  }
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const blocks::DatasetCodes codes = TraceCodes();
  std::vector<uint8_t> in(data, data + size), out, back;
  std::string err;
  if (!in.empty()) in[0] = blocks::kFormatMerged;
  (void)blocks::ExpandBlock(codes, in, &out, &err);
  if (!in.empty()) in[0] = blocks::kFormat;
  if (blocks::MergeBlock(codes, in, &out, &err)) {
    // What MergeBlock accepted expands back to exactly its input.
    if (!blocks::ExpandBlock(codes, out, &back, &err) || back != in) std::abort();
  }
  return 0;
}
