// Seeded mutation fuzzing of the Lustre parsers and of the lustre exporter's
// delta logic, built with -fsanitize=address,undefined (target fuzz-lustre,
// run with run-fuzz-lustre). Seeds are the captured files under
// ../shared/data/lustre (every stats, job_stats, brw_stats, rpc_stats file
// and lctl dump in MANIFEST.tsv) plus a few hand-written edge cases.
//
// Each iteration mutates one seed (byte flips, inserts of tokens that hurt
// parsers: huge and negative numbers, braces, separators; deletions,
// duplications, splices with another seed, truncation) and runs every parser
// on it, checking the outputs' invariants. Every 16th iteration the mutated
// text also becomes the next sample of an lctl dump read by a running lustre
// exporter, whose output lines must all validate against the schema and
// never hold a negative number.
//
//   fuzz_lustre [--iterations N] [--seconds S] [--seed N] [--data DIR]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "exporters/framework/exporter.h"
#include "exporters/lustre/lustre.h"
#include "exporters/lustre/parse.h"
#include "core/records/record.h"

using namespace iosonar;
using namespace iosonar::lustre;

namespace {

std::string Slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

uint64_t g_iteration = 0;

[[noreturn]] void Die(const char* what, const std::string& input) {
  std::fprintf(stderr, "fuzz_lustre: invariant broken at input %llu: %s\n", static_cast<unsigned long long>(g_iteration), what);
  FILE* f = std::fopen("fuzz_lustre_crash.txt", "wb");
  if (f) {
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
    std::fprintf(stderr, "input saved to fuzz_lustre_crash.txt\n");
  }
  std::abort();
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

const char* kTokens[] = {"-", "18446744073709551615", "18446744073709551616", "99999999999999999999999", "-9223372036854775808",
                         "9223372036854775807", "{", "}", "{ ", " }", ":", ",", "\n", "\t", "samples", " samples ", "[", "]",
                         "[bytes]", "[usecs]", "|", "K:", "M:", "G:", "1K", "\"", "'", "- job_id:", "job_stats:", "hist: {",
                         "sum:", "unit:", "snapshot_time", "start_time", " secs.nsecs", " secs.usecs", "(secs.nsecs)", ".",
                         "=", "obdfilter.x-OST0000.stats=", "\0", "\xff", "%", "read_bytes", "write_bytes", "0", "1"};

void Mutate(std::string* s, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  int n = 1 + static_cast<int>(rng() % 8);
  for (int k = 0; k < n; ++k) {
    const size_t len = s->size();
    const size_t pos = len ? rng() % (len + 1) : 0;
    switch (rng() % 9) {
      case 0:
        if (len) (*s)[pos % len] = static_cast<char>(rng());
        break;
      case 1:
        s->insert(pos, 1, static_cast<char>(rng()));
        break;
      case 2: {
        const char* t = kTokens[rng() % std::size(kTokens)];
        s->insert(pos, t, std::max<size_t>(1, std::strlen(t)));
        break;
      }
      case 3:
        if (len) s->erase(pos % len, 1 + rng() % 64);
        break;
      case 4:
        if (len) {
          size_t a = rng() % len, b = std::min(len, a + 1 + rng() % 256);
          s->insert(pos, s->substr(a, b - a));
        }
        break;
      case 5: {  // splice another seed
        const std::string& o = seeds[rng() % seeds.size()];
        if (!o.empty()) {
          size_t a = rng() % o.size(), b = std::min(o.size(), a + 1 + rng() % 512);
          s->insert(pos, o.substr(a, b - a));
        }
        break;
      }
      case 6:
        s->resize(pos);
        break;
      case 7: {  // a digit run becomes huge or negative
        for (size_t i = pos; i < len; ++i)
          if ((*s)[i] >= '0' && (*s)[i] <= '9') {
            s->insert(i, rng() % 2 ? "-" : "99999999999");
            break;
          }
        break;
      }
      case 8:
        if (len) (*s)[pos % len] = "0123456789 \t\n:{},.|-"[rng() % 21];
        break;
    }
  }
  if (s->size() > (1u << 20)) s->resize(1u << 20);
}

void CheckParsers(const std::string& in) {
  std::string_view text = in;
  static ParsedStats st;
  static ParsedJobStats js;
  static ParsedHist h;
  static std::vector<LctlParam> params;
  static std::vector<Issue> issues;
  ParseStats(text, &st);
  for (const auto& c : st.counters)
    if (c.name.empty() || !Inside(c.name, text) || !Inside(c.unit, text) || c.nvals > 4) Die("stats counter", in);
  if (st.issues.size() > 101) Die("issues unbounded", in);
  ParseJobStats(text, &js);
  for (const auto& j : js.jobs) {
    if (j.job_id.empty() || !Inside(j.job_id, text)) Die("job id", in);
    if (static_cast<size_t>(j.first_op) + j.n_ops > js.ops.size()) Die("job ops range", in);
  }
  for (const auto& o : js.ops)
    if (!Inside(o.name, text) || !Inside(o.unit, text)) Die("job op view", in);
  for (int rpc = 0; rpc < 2; ++rpc) {
    rpc ? ParseRpcStats(text, &h) : ParseBrwStats(text, &h);
    size_t total = 0;
    for (const auto& x : h.hists) {
      if (static_cast<size_t>(x.first) + x.n > h.buckets.size() || !Inside(x.title, text)) Die("hist range", in);
      total += x.n;
    }
    if (total != h.buckets.size()) Die("hist bucket count", in);
  }
  issues.clear();
  ParseLctlDump(text, &params, &issues);
  for (const auto& p : params)
    if (p.name.empty() || !Inside(p.name, text) || !Inside(p.value, text)) Die("dump param", in);
  int64_t ns = 0;
  auto sp = text.find(' ');
  ParseTimestamp(text.substr(0, std::min<size_t>(sp, 40)), text.substr(sp == std::string_view::npos ? 0 : sp), &ns);
}

// Wraps a mutated file as an lctl dump parameter the exporter will read.
std::string AsDump(const std::string& in, std::mt19937_64& rng) {
  static const char* kHeads[] = {"obdfilter.fz-OST0000.stats=\n", "mdt.fz-MDT0000.md_stats=\n", "obdfilter.fz-OST0000.job_stats=\n",
                                 "mdt.fz-MDT0000.job_stats=\n", "osd-ldiskfs.fz-OST0000.brw_stats=\n", "llite.fz-ffff01.stats=\n",
                                 "osc.fz-OST0000-osc-ffff01.rpc_stats=\n", ""};
  return std::string(kHeads[rng() % std::size(kHeads)]) + in;
}

void CheckOutput(const std::string& lines, const std::string& in) {
  size_t a = 0;
  ParsedRecord rec;
  while (a < lines.size()) {
    size_t e = lines.find('\n', a);
    if (e == std::string::npos) e = lines.size();
    std::string l = lines.substr(a, e - a);
    a = e + 1;
    if (l.empty()) continue;
    if (l.find(":-") != std::string::npos) Die(("negative value in " + l).c_str(), in);
    std::string buf = l;
    buf.push_back('\0');
    Status s = ParseRecordInsitu(buf.data(), l.size(), &rec);
    if (!s.ok()) Die(("invalid record: " + s.message() + ": " + l).c_str(), in);
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 2000000, seed = 1;
  double seconds = 7200;
  std::string data = std::string(IOSONAR_SOURCE_DIR) + "/../shared/data/lustre";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--iterations") iterations = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--seconds") seconds = std::strtod(argv[i + 1], nullptr);
    else if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--data") data = argv[i + 1];
  }
  std::vector<std::string> seeds;
  {
    std::ifstream m(data + "/MANIFEST.tsv");
    std::string row;
    std::getline(m, row);
    while (std::getline(m, row)) {
      std::vector<std::string> col;
      std::stringstream rs(row);
      std::string c;
      while (std::getline(rs, c, '\t')) col.push_back(c);
      if (col.size() < 5) continue;
      const std::string& k = col[4];
      bool want = k.find("stats") != std::string::npos || k.find("lctl get_param dump") == 0;
      if (!want || k.find("symlink") == 0) continue;
      std::string t = Slurp(data + "/" + col[0] + "/" + col[1]);
      if (t.size() > 16 * 1024) t.resize(16 * 1024);  // big dumps: their first 16 KiB
      seeds.push_back(std::move(t));
    }
  }
  const size_t captured = seeds.size();
  // The project's own fixtures (every version's files and dumps), always there.
  {
    namespace fs = std::filesystem;
    const std::string fx = std::string(IOSONAR_SOURCE_DIR) + "/test/fixtures/lustre";
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(fx, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file() && it->path().filename() != "README.md") seeds.push_back(Slurp(it->path().string()));
  }
  const size_t fixtures = seeds.size() - captured;
  seeds.push_back("");
  seeds.push_back("job_stats:\n- job_id:\n  read_bytes: { samples: 1, unit: bytes, min: 1, max: 1, sum: 1 }\n");
  seeds.push_back("snapshot_time 1.5 secs.usecs\nwrite 3 samples [usecs] 1 2 -823495890607571055 4426400394686790401\n");
  std::printf("fuzz_lustre: %zu seeds (%zu captured files from %s, %zu fixture files), seed %llu\n", seeds.size(), captured,
              data.c_str(), fixtures, static_cast<unsigned long long>(seed));
  std::fflush(stdout);

  // One exporter fed mutated dumps as successive samples.
  char tmpl[] = "/tmp/fuzz_lustre_XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return 1;
  close(fd);
  const std::string dump = tmpl;
  LustreOptions lo;
  lo.lctl_dump = dump;
  lo.jobstats_max_jobs = 5;
  auto exp = MakeLustreExporter(lo);
  exporters::Context ctx("fuzzhost", "", 7, "lustre");
  ctx.set_quiet(true);

  std::mt19937_64 rng(seed);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t it = 0, exporter_samples = 0, bytes = 0;
  std::string in;
  for (; it < iterations; ++it) {
    g_iteration = it;
    if (it && it % 250000 == 0) {
      std::printf("fuzz_lustre: %llu inputs, %.0f s\n", static_cast<unsigned long long>(it),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::fflush(stdout);
    }
    in = seeds[rng() % seeds.size()];
    Mutate(&in, seeds, rng);
    bytes += in.size();
    CheckParsers(in);
    if (it % 16 == 0) {
      std::string d = AsDump(in, rng);
      FILE* f = std::fopen(dump.c_str(), "wb");
      std::fwrite(d.data(), 1, d.size(), f);
      std::fclose(f);
      const int64_t t = static_cast<int64_t>(exporter_samples);
      ctx.StartTick(exporter_samples, 1700000000000000000LL + t * 1000000000LL, 1000000000LL + t * 1000000000LL, 1000000000LL);
      exp->Collect(ctx);
      CheckOutput(ctx.FinishTick(1), d);
      ++exporter_samples;
    }
    if ((it & 4095) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds)
      break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unlink(dump.c_str());
  std::printf("fuzz_lustre: %llu mutated inputs (%.1f MB) through all 5 parsers, %llu of them as exporter samples, "
              "in %.1f s (%.0f inputs/s): no crash, no sanitizer report, no broken invariant\n",
              static_cast<unsigned long long>(it), static_cast<double>(bytes) / 1e6,
              static_cast<unsigned long long>(exporter_samples), secs, static_cast<double>(it) / secs);
  return 0;
}
