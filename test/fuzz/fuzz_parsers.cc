// libFuzzer entry points, one per parser (built with -DFUZZ_<NAME>=1 by
// test/fuzz/CMakeLists.txt; run by scripts/fuzz.sh, seeded from
// test/fixtures). Each feeds the bytes exactly as the network or the source
// file would, and checks what the parser promises beyond "no crash".
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/config_file.h"
#include "core/collector/lumberjack_decoder.h"
#include "core/records/fields.h"
#include "core/records/record.h"
#include "core/records/schema.h"
#include "exporters/health/health.h"
#include "exporters/lustre/parse.h"
#include "exporters/scheduler/sacct.h"

using namespace iosonar;
using namespace iosonar::lustre;
using namespace iosonar::health;

namespace {
[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "fuzz: broken promise: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
#if defined(FUZZ_RECORD)
  // The collector's path: a heap buffer of exactly the line plus the NUL the
  // in-place parser may write (so ASan sees any read or write past it).
  std::vector<char> buf(text.begin(), text.end());
  buf.push_back('\0');
  ParsedRecord rec;
  Status st = ParseRecordInsitu(buf.data(), size, &rec);
  if (st.ok() && !rec.dataset) Broken("a record accepted without a dataset");
  // The same line read as a store's scan of some of its fields (a whole
  // _source, es_store.cc): every other key is skipped. A line the whole
  // parser accepts is accepted, with the same values in those fields.
  FieldSet only;
  only.Set(field::kEventDataset.index());
  for (size_t i = 0; i < schema::Fields().size(); ++i)
    if ((i * 2654435761u + size) % 3 == 0) only.Set(i);
  std::vector<char> buf2(text.begin(), text.end());
  buf2.push_back('\0');
  ParsedRecord part;
  Status st2 = ParseRecordFieldsInsitu(buf2.data(), size, &part, &only);
  if (st.ok()) {
    if (!st2.ok()) Broken("a record the whole parser accepts is refused when read for some fields");
    for (size_t i = 0; i < schema::Fields().size(); ++i) {
      if (!only.Test(i)) continue;
      const FieldValue &a = rec.v[i], &b = part.v[i];
      if (a.kind != b.kind || a.i != b.i || a.s != b.s || (a.kind == FieldValue::kDouble && a.d != b.d))
        Broken("a field read for itself differs from the whole parser's");
    }
  }
#elif defined(FUZZ_LUMBERJACK)
  struct H : LumberjackDecoder::Handler {
    size_t events = 0, bytes = 0;
    void Window(uint32_t) override {}
    void Event(uint32_t, std::string_view json) override {
      ++events;
      bytes += json.size();
    }
  } h;
  LumberjackDecoder d(4096, 4096, 1 << 20);
  // Fed in two pieces at a split the input chooses: framing must not depend on it.
  const size_t cut = size ? data[0] % (size + 1) : 0;
  Status st = d.Feed(text.data(), cut, &h);
  if (st.ok()) st = d.Feed(text.data() + cut, size - cut, &h);
  if (st.ok() && d.buffered() > 4096 + 4096 + 16) Broken("a partial frame beyond the bound");
  if (h.bytes > size * 1100 + (1 << 20)) Broken("more event bytes than the input can inflate to");
  // The collector's read path (read() into Space(), then Commit()) in chunks
  // the input chooses: the same events, the same verdict.
  H h2;
  LumberjackDecoder d2(4096, 4096, 1 << 20);
  const size_t step = size ? 1 + data[size - 1] % 257 : 1;
  Status st2;
  for (size_t pos = 0; st2.ok() && pos < size;) {
    auto [p, room] = d2.Space();
    const size_t n = std::min(room, std::min(step, size - pos));
    std::memcpy(p, text.data() + pos, n);
    st2 = d2.Commit(n, &h2);
    pos += n;
  }
  if (st.ok() != st2.ok()) Broken("Feed and Space/Commit disagree on the input's validity");
  if (st.ok() && (h.events != h2.events || h.bytes != h2.bytes)) Broken("Feed and Space/Commit decode differently");
  if (st2.ok() && d2.buffered() != d.buffered()) Broken("Feed and Space/Commit hold different partial frames");
#elif defined(FUZZ_LUSTRE_STATS)
  ParsedStats p;
  ParseStats(text, &p);
  ParsedHist h;
  ParseRpcStats(text, &h);
#elif defined(FUZZ_JOB_STATS)
  ParsedJobStats p;
  ParseJobStats(text, &p);
#elif defined(FUZZ_BRW_STATS)
  ParsedHist h;
  ParseBrwStats(text, &h);
#elif defined(FUZZ_LCTL_DUMP)
  std::vector<LctlParam> params;
  std::vector<Issue> issues;
  ParseLctlDump(text, &params, &issues);
  for (const auto& p : params)
    if (p.name.data() < text.data() || p.name.data() + p.name.size() > text.data() + size)
      Broken("a parameter name outside the input");
#elif defined(FUZZ_LFS_DF)
  (void)ParseLfsDf(text);
#elif defined(FUZZ_LCTL_DL)
  (void)ParseLctlDlT(text);
#elif defined(FUZZ_SACCT)
  (void)scheduler::ParseSacct(text, "c1");
  (void)scheduler::ParseSacct(text, "c1", "\x1f");
#elif defined(FUZZ_CONFIG)
  // /etc/iosonar/iosonar.toml (core/base/config_file.h): an accepted file's
  // entries carry lines inside the file and tables it declared; a rejected
  // one names the file and a line inside it.
  auto cf = ParseConfigText(std::string(text), "f.toml");
  const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (cf.ok()) {
    for (const auto& e : cf->entries) {
      if (e.line < 1 || e.line > lines) Broken("an entry's line outside the file");
      if (e.key.empty()) Broken("an entry without a key");
      if (!e.is_array && e.values.size() != 1) Broken("a scalar without exactly one value");
      if (!e.table.empty() && std::find(cf->tables.begin(), cf->tables.end(), e.table) == cf->tables.end())
        Broken("an entry in a table the file never declared");
    }
  } else {
    const std::string& m = cf.status().message();
    if (m.rfind("f.toml", 0) != 0) Broken("an error that does not name the file");
    // "f.toml:N: ..." names a line; "f.toml: ..." (a NUL byte) the whole file.
    if (m.rfind("f.toml:", 0) == 0 && m.size() > 7 && m[7] >= '0' && m[7] <= '9') {
      int n = std::atoi(m.c_str() + 7);
      if (n < 1 || n > lines) Broken("an error naming a line outside the file");
    }
  }
#else
#error "define one FUZZ_<NAME>"
#endif
  return 0;
}
