// A seeded mutation fuzzer for the health parsers (lfs df, lctl dl -t and the
// rules over their results), built with -fsanitize=address,undefined: any
// out-of-bounds access, overflow or crash stops it with a report. It mutates
// windows of the Edison captures (when ../shared/data is there) and of small
// built-in samples, and checks the parsers' invariants on every input.
//
//   fuzz_health [ITERATIONS] [SEED] [DATA_DIR]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "exporters/health/health.h"

using namespace iosonar::health;

namespace {

struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n ? static_cast<size_t>(Next() % n) : 0; }
};

const char* kTokens[] = {"BEGIN ", "BEGIN 1489998203\n", "_UUID", " : inactive device", "%", "@", "@o2ib2", "-OST",
                         "-MDT", "-osc-", "-mdc-", "-clilov-", "[OST:", "]", "99999999999999999999",
                         "-1", "18446744073709551615", "9223372036854775807", "\n", "\r\n", "\t", " ", "UUID Inodes",
                         "UUID 1K-blocks", "filesystem_summary:", "filesystem summary:", "UP osc ", "\0", "\xff\xfe",
                         "OST0000", "ffff"};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p < text.size()) {
    size_t nl = text.find('\n', p);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(p, nl - p + 1));
    p = nl + 1;
  }
  return out;
}

void Mutate(std::string* s, Rng& r) {
  int n = 1 + static_cast<int>(r.Below(8));
  for (int i = 0; i < n; ++i) {
    switch (r.Below(8)) {
      case 0:  // flip a byte
        if (!s->empty()) (*s)[r.Below(s->size())] ^= static_cast<char>(1u << r.Below(8));
        break;
      case 1:  // random byte
        if (!s->empty()) (*s)[r.Below(s->size())] = static_cast<char>(r.Below(256));
        break;
      case 2: {  // insert a token
        const char* t = kTokens[r.Below(sizeof kTokens / sizeof *kTokens)];
        std::string tok = *t ? std::string(t) : std::string(1, '\0');
        s->insert(r.Below(s->size() + 1), tok);
        break;
      }
      case 3:  // delete a range
        if (!s->empty()) {
          size_t a = r.Below(s->size());
          s->erase(a, r.Below(64) + 1);
        }
        break;
      case 4:  // truncate
        if (!s->empty()) s->resize(r.Below(s->size()));
        break;
      case 5: {  // duplicate a range
        if (s->empty()) break;
        size_t a = r.Below(s->size());
        size_t len = std::min<size_t>(r.Below(200) + 1, s->size() - a);
        s->insert(r.Below(s->size() + 1), s->substr(a, len));
        break;
      }
      case 6: {  // replace a digit run with a huge or odd number
        size_t a = s->find_first_of("0123456789", r.Below(s->size() + 1));
        if (a == std::string::npos) break;
        size_t b = s->find_first_not_of("0123456789", a);
        s->replace(a, (b == std::string::npos ? s->size() : b) - a, r.Below(2) ? "99999999999999999999" : "-0");
        break;
      }
      default: {  // swap two lines
        auto l = Lines(*s);
        if (l.size() < 2) break;
        std::swap(l[r.Below(l.size())], l[r.Below(l.size())]);
        s->clear();
        for (auto& x : l) *s += x;
      }
    }
  }
}

[[noreturn]] void Fail(const char* what, const std::string& input) {
  std::fprintf(stderr, "fuzz_health: invariant broken: %s\ninput (%zu bytes) written to fuzz_health.crash\n", what, input.size());
  if (FILE* f = std::fopen("fuzz_health.crash", "wb")) {
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  }
  std::abort();
}

void Check(const std::string& in) {
  LfsDf df = ParseLfsDf(in);
  if (df.warnings.texts.size() > kMaxWarningTexts || df.warnings.texts.size() > df.warnings.count) Fail("df warnings", in);
  for (const auto& snap : df.snapshots) {
    for (const auto& t : snap.targets) {
      if (t.total < 0 || t.used < 0 || t.avail < 0) Fail("negative size", in);
      if (t.kind != "ost" && t.kind != "mdt") Fail("kind", in);
    }
    for (const auto& f : SummarizeFullness(snap)) {
      if (f.ost_count > 0 && (f.min_pct > f.max_pct || f.min_target.empty())) Fail("min/max", in);
      if (f.ost_count < 0 || f.mdt_count < 0) Fail("counts", in);
    }
  }
  LctlDl dl = ParseLctlDlT(in);
  if (dl.warnings.texts.size() > kMaxWarningTexts) Fail("dl warnings", in);
  for (const auto& snap : dl.snapshots)
    for (const auto& f : GetFailovers(snap)) {
      int64_t served = 0;
      for (const auto& o : f.oss) {
        served += o.ost_count();
        if (o.overloaded && o.ost_count() <= f.mode) Fail("overloaded but not above the mode", in);
        if (o.overloaded && !(o.overload_factor > 1.0)) Fail("overload factor", in);
      }
      if (served > f.ost_count) Fail("more OSTs served than seen", in);
    }
}

std::string Slurp(const std::string& path) {
  std::string out, err;
  return ReadSource(path, &out, &err) ? out : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t iters = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261122;
  std::string data = argc > 3 ? argv[3] : "";

  std::vector<std::vector<std::string>> corpora;
  corpora.push_back(Lines(
      "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
      "lfs-MDT0000_UUID           4096        1024        3072  25% /mnt/a[MDT:0]\n"
      "lfs-OST0000_UUID           8192        2048        6144  25% /mnt/a[OST:0]\n"
      "lfs-OST0001_UUID            : inactive device\n"
      "a-very-long-fsname-OST0002_UUID\n"
      "                          8192        4096        4096  50% /mnt/b[OST:2]\n"
      "filesystem_summary:       8192        2048        6144  25% /mnt/a\n"));
  corpora.push_back(Lines(
      "BEGIN 1489998203\n"
      "  0 UP mgc MGC10.0.0.1@tcp 1111 5\n"
      "  1 UP lov fs1-clilov-ffff01 u 4\n"
      "  2 UP osc fs1-OST0000-osc-ffff01 u 5 10.0.0.10@tcp\n"
      "  3 UP osc fs1-OST0001-osc-ffff01 u 5 10.0.0.10@tcp\n"
      "  4 IN osc fs1-OST0002-osc-ffff01 u 5 10.0.0.11@tcp\n"
      "  5 UP mdc fs1-MDT0000-mdc-ffff01 u 5 10.0.0.2@tcp\n"));
  // The project's own fixtures (test/fixtures/health), always there.
  for (const char* f : {"lfs-df.txt", "lfs-df-i.txt", "lfs-df-cron.txt", "lctl-dl-t.txt", "lctl-dl-t-cron.txt",
                        "devices-1.8-mds.txt", "devices-2.5-client.txt"}) {
    std::string t = Slurp(std::string(IOSONAR_SOURCE_DIR) + "/test/fixtures/health/" + f);
    if (!t.empty()) corpora.push_back(Lines(t));
  }
  if (!data.empty()) {
    for (const char* f : {"/pytokio/tests/inputs/lfs-df.txt", "/pytokio/tests/inputs/lctl-dl-t.txt"}) {
      std::string t = Slurp(data + f);
      if (!t.empty()) corpora.push_back(Lines(t));
    }
  }
  std::printf("fuzz_health: %zu corpora, %llu iterations, seed %llu\n", corpora.size(),
              static_cast<unsigned long long>(iters), static_cast<unsigned long long>(seed));

  Rng r{seed};
  auto t0 = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < iters; ++i) {
    // A window of 1-40 lines of one corpus, sometimes of two spliced.
    std::string in;
    int parts = 1 + static_cast<int>(r.Below(2));
    for (int p = 0; p < parts; ++p) {
      const auto& c = corpora[r.Below(corpora.size())];
      size_t a = r.Below(c.size());
      size_t n = 1 + r.Below(40);
      for (size_t k = a; k < c.size() && k < a + n; ++k) in += c[k];
    }
    Mutate(&in, r);
    bytes += in.size();
    Check(in);
    if ((i + 1) % 500000 == 0) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  %llu inputs, %.1f s\n", static_cast<unsigned long long>(i + 1), s);
      std::fflush(stdout);
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fuzz_health: %llu inputs (%.1f MB) through ParseLfsDf+SummarizeFullness+ParseLctlDlT+GetFailovers in %.1f s, "
              "no crash, no sanitizer report, invariants held\n",
              static_cast<unsigned long long>(iters), static_cast<double>(bytes) / 1e6, s);
  return 0;
}
