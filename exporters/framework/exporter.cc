#include "exporters/framework/exporter.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/base/config_file.h"
#include "exporters/framework/config_check.h"
#include "core/base/host.h"
#include "core/base/json.h"
#include "core/records/fields.h"
#include "core/transport/sink.h"
#include "core/base/timeutil.h"

namespace iosonar::exporters {

// ---- records ------------------------------------------------------------------------

Record& Record::Str(FieldId key, std::string_view v) {
  Key(key);
  AppendJsonString(out_, v);
  return *this;
}

Record& Record::Int(FieldId key, int64_t v) {
  Key(key);
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  out_->append(b, static_cast<size_t>(r.ptr - b));
  return *this;
}

Record& Record::Num(FieldId key, double v) {
  if (!std::isfinite(v)) return *this;
  Key(key);
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  std::string_view t(b, static_cast<size_t>(r.ptr - b));
  out_->append(t);
  // JSON has one number type, but the schema's double fields accept integers
  // anyway; keep "2" as "2" (valid), nothing to add.
  return *this;
}

Record& Record::Raw(std::string_view members) {
  out_->append(members);
  return *this;
}

Record& Record::Bool(FieldId key, bool v) {
  Key(key);
  out_->append(v ? "true" : "false");
  return *this;
}

// ---- context ------------------------------------------------------------------------

Context::Context(std::string host, std::string job_id, uint64_t stream, std::string sampler_name)
    : host_(std::move(host)), job_id_(std::move(job_id)), sampler_(std::move(sampler_name)), stream_(stream) {}

void Context::StartTick(uint64_t tick, int64_t now_ns, int64_t mono_ns, int64_t interval_ns) {
  tick_ = tick;
  now_ns_ = now_ns;
  mono_ns_ = mono_ns;
  interval_ns_ = interval_ns;
  ts_text_ = FormatIsoMillis(now_ns);
  buf_.clear();
  // Start from a power of two, so the doublings of a big sample's buffer
  // land on powers of two too (3.7 MB of records: 4 MiB, not 6.5 MiB).
  if (buf_.capacity() < (64u << 10)) buf_.reserve(64u << 10);
  open_ = false;
  lines_ = 0;
  spilled_ = 0;
  for (auto& [name, s] : sources_) {
    s.ok = true;
    s.duration_ns = 0;
    s.warnings = 0;
    s.timeouts = 0;
    s.error.clear();
    s.touched = false;
  }
}

void Context::EndRecord() {
  if (!open_) return;
  buf_.append("}\n", 2);
  open_ = false;
  ++lines_;
  if (spill_ && buf_.size() >= spill_bytes_) {
    spill_(buf_, lines_ - spilled_);
    spilled_ = lines_;
    buf_.clear();
  }
}

Record& Context::Begin(DatasetId dataset, int64_t ts_ns) {
  EndRecord();
  buf_.push_back('{');
  buf_.append(field::kTimestamp.key());
  buf_.push_back('"');
  if (ts_ns == 0 || ts_ns == now_ns_) {
    buf_.append(ts_text_);
  } else {
    buf_.append(FormatIsoMillis(ts_ns));
  }
  if (hdr_mid_.empty() || dataset.index() != hdr_dataset_) {
    hdr_dataset_ = dataset.index();
    hdr_mid_.assign("\"", 1);
    hdr_mid_.append(field::kEventDataset.member());
    AppendJsonString(&hdr_mid_, dataset.name());
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, stream_);
    hdr_mid_.append(field::kEventStream.member());
    hdr_mid_.append(b, static_cast<size_t>(r.ptr - b));
    hdr_mid_.append(field::kEventSeq.member());
  }
  if (hdr_tail_.empty()) {
    hdr_tail_.assign(field::kHostName.member());
    AppendJsonString(&hdr_tail_, host_);
    if (!job_id_.empty()) {
      hdr_tail_.append(field::kJobId.member());
      AppendJsonString(&hdr_tail_, job_id_);
    }
  }
  buf_.append(hdr_mid_);
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, seq_++);
  buf_.append(b, static_cast<size_t>(r.ptr - b));
  buf_.append(hdr_tail_);
  open_ = true;
  return rec_;
}

Context::SourceState& Context::Source(std::string_view name) {
  auto it = sources_.find(name);
  if (it == sources_.end()) it = sources_.emplace(std::string(name), SourceState{}).first;
  it->second.touched = true;
  return it->second;
}

void Context::Warn(std::string_view source, std::string_view message) {
  SourceState& s = Source(source);
  ++s.warnings;
  ++warnings_total_;
  if (quiet_) return;
  // At most one line a minute per source, saying how many were held back.
  if (mono_ns_ - s.last_print_mono >= int64_t{60} * 1000000000) {
    if (s.suppressed)
      std::fprintf(stderr, "%s %s: warning: %.*s: %.*s (and %llu more warnings since the last one shown)\n",
                   ProgramName(), sampler_.c_str(), static_cast<int>(source.size()), source.data(), static_cast<int>(message.size()),
                   message.data(), static_cast<unsigned long long>(s.suppressed));
    else
      std::fprintf(stderr, "%s %s: warning: %.*s: %.*s\n", ProgramName(), sampler_.c_str(), static_cast<int>(source.size()),
                   source.data(), static_cast<int>(message.size()), message.data());
    s.last_print_mono = mono_ns_;
    s.suppressed = 0;
  } else {
    ++s.suppressed;
  }
}

void Context::Timeout(std::string_view source, std::string_view message) {
  ++timeouts_total_;
  ++Source(source).timeouts;
  Warn(source, message);
}

void Context::SourceDone(std::string_view source, bool ok, int64_t duration_ns, std::string_view error) {
  EndRecord();
  SourceState& s = Source(source);
  if (!ok) {
    s.ok = false;
    if (s.error.empty()) s.error = std::string(error.substr(0, 512));
  }
  s.duration_ns += duration_ns;
}

std::string& Context::FinishTick(int64_t collect_ns) {
  EndRecord();
  if (sampler_records_) {
    const uint64_t data_lines = lines_;
    uint64_t total_warn = 0, total_timeouts = 0;
    bool all_ok = true;
    for (auto& [name, s] : sources_) {
      if (!s.touched) continue;
      total_warn += s.warnings;
      total_timeouts += s.timeouts;
      all_ok = all_ok && s.ok;
      Record& r = Begin(dataset::kSampler);
      r.Str(field::kSamplerName, sampler_).Str(field::kSamplerSource, name).Bool(field::kSamplerOk, s.ok);
      r.Int(field::kSamplerDurationNs, s.duration_ns).Int(field::kSamplerWarnings, static_cast<int64_t>(s.warnings));
      if (s.timeouts) r.Int(field::kSamplerTimeouts, static_cast<int64_t>(s.timeouts));
      if (!s.error.empty()) r.Str(field::kSamplerError, s.error);
      EndRecord();
    }
    Record& r = Begin(dataset::kSampler);
    r.Str(field::kSamplerName, sampler_).Str(field::kSamplerSource, "*").Bool(field::kSamplerOk, all_ok);
    r.Int(field::kSamplerDurationNs, collect_ns).Int(field::kSamplerWarnings, static_cast<int64_t>(total_warn));
    if (total_timeouts) r.Int(field::kSamplerTimeouts, static_cast<int64_t>(total_timeouts));
    r.Int(field::kSamplerRecords, static_cast<int64_t>(data_lines)).Int(field::kSamplerIntervalNs, interval_ns_);
    EndRecord();
  }
  return buf_;
}

SourceTimer::SourceTimer(Context& ctx, std::string source) : ctx_(ctx), source_(std::move(source)), start_(MonotonicNs()) {}

SourceTimer::~SourceTimer() { ctx_.SourceDone(source_, ok_, MonotonicNs() - start_, error_); }

namespace {
const char* g_program_name = "iosonar";
}  // namespace

const char* ProgramName() { return g_program_name; }
void SetProgramName(const char* name) { g_program_name = name; }

// ---- the loop -----------------------------------------------------------------------

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

void PrintHelp(const Descriptor& d) {
  std::printf("usage: %s %s [OPTIONS]\n\n%s\n\noptions:\n", ProgramName(), d.name, d.description);
  for (const auto& o : d.options) PrintOptionHelp(o);
  std::printf("\ncommon options:\n");
  for (const auto& o : CommonOptions()) {
    if (std::string_view(o.name) == "interval") {
      std::printf("  %-26s time between samples (default %g)\n", "--interval SECONDS", d.default_interval_s);
      continue;
    }
    PrintOptionHelp(o);
  }
}

uint64_t RandomStream() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(NowNs());
  return v & INT64_MAX;
}

void SleepUntilMono(int64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000), static_cast<long>(t % 1000000000)};
  while (!g_stop.load()) {
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    if (rc == 0) return;
    if (rc != EINTR) return;
  }
}

}  // namespace

bool StopRequested() { return g_stop.load(); }

void Exporter::Idle(int64_t until_ns) { SleepUntilMono(until_ns); }

int RunExporter(const Descriptor& d, int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      PrintHelp(d);
      return 0;
    }
  // `doctor` checks the node as its daemons see it: their configuration file
  // unless another is named.
  if (std::string_view(d.name) == "doctor" && !getenv("IOSONAR_CONFIG") && access("/etc/iosonar/iosonar.toml", R_OK) == 0) {
    bool named = false;
    for (int i = 1; i < argc; ++i) named = named || std::string_view(argv[i]).rfind("--config", 0) == 0;
    if (!named) setenv("IOSONAR_CONFIG", "/etc/iosonar/iosonar.toml", 1);
  }
  auto parsed = ParseOptions(d, argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s %s: %s\n", ProgramName(), d.name, parsed.status().message().c_str());
    return 2;
  }
  const Options& opts = parsed.value();
  if (d.one_shot) {
    int rc = d.one_shot(opts);
    if (rc >= 0) return rc;
  }
  auto made = d.create(opts);
  if (!made.ok()) {
    std::fprintf(stderr, "%s %s: %s\n", ProgramName(), d.name, made.status().message().c_str());
    return 2;
  }
  std::unique_ptr<Exporter> exp = std::move(made.value());

  std::string host = opts.Get("host-name");
  if (host.empty()) host = HostName();
  const uint64_t stream = RandomStream();
  SinkOptions so;
  so.spool_dir = opts.Get("spool-dir");
  so.es.user = opts.Get("es-user");
  so.es.ca_file = opts.Get("es-ca-file");
  so.es.insecure = opts.Flag("es-insecure");
  // As `iosonar collect --es-gzip`: the flag, or IOSONAR_ES_GZIP=1.
  so.es.gzip = opts.Flag("es-gzip");
  if (const char* z = getenv("IOSONAR_ES_GZIP"); z && std::string_view(z) == "1") so.es.gzip = true;
  if (const char* pw = getenv("IOSONAR_ES_PASSWORD"); pw && *pw) so.es.password = pw;
  if (const char* k = getenv("IOSONAR_ES_API_KEY"); k && *k) so.es.api_key = k;
  if (const char* ns = getenv("IOSONAR_NAMESPACE"); ns && *ns) so.es.name_space = ns;  // data stream namespace
  auto sink = OpenSink(opts.Get("output"), so);
  if (!sink.ok()) {
    std::fprintf(stderr, "%s %s: --output: %s\n", ProgramName(), d.name, sink.status().message().c_str());
    return 2;
  }
  RecordSink& out = *sink.value();

  Context ctx(host, opts.Get("job-id"), stream, d.name);
  const bool quiet = opts.Flag("quiet");
  // A sample's lines go out in pieces of about 256 KiB, so a sample of 10,000
  // job ids (~4 MB of JSON) is never held whole (<= 10 MiB RSS).
  ctx.set_spill(256 << 10, [&](const std::string& lines, uint64_t nlines) {
    if (Status st = out.Send(lines, nlines); !st.ok() && !quiet)
      std::fprintf(stderr, "%s %s: output: %s\n", ProgramName(), d.name, st.message().c_str());
  });
  ctx.set_quiet(quiet);
  ctx.set_sampler_records(!opts.Flag("no-sampler-records"));
  const int64_t interval_ns = static_cast<int64_t>(opts.Seconds("interval") * 1e9);
  const int64_t count = opts.Int("count");
  ctx.StartTick(0, NowNs(), MonotonicNs(), interval_ns);
  if (Status s = exp->Init(ctx); !s.ok()) {
    std::fprintf(stderr, "%s %s: %s\n", ProgramName(), d.name, s.message().c_str());
    return 1;
  }

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  uint64_t samples = 0, lines = 0, skipped = 0;
  int64_t next = MonotonicNs();
  int rc = 0;
  while (!g_stop.load()) {
    const int64_t mono = MonotonicNs();
    ctx.StartTick(samples, NowNs(), mono, interval_ns);
    exp->Collect(ctx);
    const std::string& buf = ctx.FinishTick(MonotonicNs() - mono);
    const uint64_t n = ctx.lines_in_tick();
    if (n > 0) {
      Status st = buf.empty() ? Status::Ok() : out.Send(buf, ctx.pending_lines());  // (empty if all spilled)
      // One sample is one batch: a buffering sink (Elasticsearch _bulk) sends
      // it now, not when 8 MiB have piled up or at exit.
      if (st.ok()) st = out.Flush();
      if (!st.ok() && !quiet)
        std::fprintf(stderr, "%s %s: output: %s\n", ProgramName(), d.name, st.message().c_str());
    }
    lines += n;
    ++samples;
    if (count > 0 && samples >= static_cast<uint64_t>(count)) break;
    // Absolute schedule; a sample that overran skips the ticks it covered.
    next += interval_ns;
    const int64_t now = MonotonicNs();
    if (next < now) {
      const int64_t behind = (now - next) / interval_ns + 1;
      skipped += static_cast<uint64_t>(behind);
      next += behind * interval_ns;
    }
    exp->Idle(next);
  }
  exp->Stop(ctx);
  if (Status st = out.Flush(); !st.ok() && !quiet)
    std::fprintf(stderr, "%s %s: output: %s\n", ProgramName(), d.name, st.message().c_str());
  const SinkCounters c = out.counters();
  if (!quiet)
    std::fprintf(stderr,
                 "%s %s: %llu samples, %llu records (sent %llu, spooled %llu, dropped %llu), %llu warnings%s, "
                 "%llu ticks skipped\n",
                 ProgramName(), d.name, static_cast<unsigned long long>(samples), static_cast<unsigned long long>(lines),
                 static_cast<unsigned long long>(c.lines_sent), static_cast<unsigned long long>(c.spooled),
                 static_cast<unsigned long long>(c.dropped), static_cast<unsigned long long>(ctx.warnings_total()),
                 ctx.timeouts_total() ? (" (" + std::to_string(ctx.timeouts_total()) + " reads timed out)").c_str() : "",
                 static_cast<unsigned long long>(skipped));
  if (c.dropped) rc = 1;
  return rc;
}

int RunConfigCheck(int argc, char** argv, std::span<const Descriptor* const> exporters, ConfigTableChecker other) {
  if (argc < 2 || std::string_view(argv[1]) != "check" || argc > 3) {
    std::fprintf(stderr, "usage: %s config check [FILE]   (default $IOSONAR_CONFIG or /etc/iosonar/iosonar.toml)\n",
                 ProgramName());
    return 2;
  }
  std::string path = argc == 3 ? argv[2] : "";
  if (path.empty())
    if (const char* e = getenv("IOSONAR_CONFIG"); e && IsTomlConfigPath(e)) path = e;
  if (path.empty()) path = "/etc/iosonar/iosonar.toml";
  auto cf = LoadConfigFile(path);
  if (!cf.ok()) {
    std::fprintf(stderr, "%s\n", cf.status().message().c_str());
    return 1;
  }
  int bad = 0;
  std::set<std::string> printed;  // a top-level key is checked by every table: print each message once
  auto print = [&](const std::string& lines) {
    size_t b = 0;
    while (b < lines.size()) {
      size_t e = lines.find('\n', b);
      std::string l = lines.substr(b, e == std::string::npos ? std::string::npos : e - b);
      if (printed.insert(l).second) {
        std::fprintf(stderr, "%s\n", l.c_str());
        ++bad;
      }
      if (e == std::string::npos) break;
      b = e + 1;
    }
  };
  std::vector<std::string> tables = cf->tables;
  if (tables.empty()) tables.push_back("");  // top-level keys only: check them against the exporters
  for (const std::string& t : tables) {
    const Descriptor* d = nullptr;
    for (const auto* x : exporters)
      if (t == x->name) d = x;
    if (t.empty()) d = exporters.empty() ? nullptr : exporters[0];
    if (d) {
      std::string name = d->name, flag = "--config";
      char* args[] = {name.data(), flag.data(), path.data(), nullptr};
      auto r = ParseOptions(*d, 3, args);
      if (!r.ok()) print(r.status().message());
      continue;
    }
    std::string errors;
    int n = other ? other(t, path, &errors) : -1;
    if (n >= 0) {
      if (!errors.empty()) print(errors);
      continue;
    }
    std::string names;
    for (const auto* x : exporters) names += std::string(names.empty() ? "" : ", ") + x->name;
    if (!other) {  // the lean binary: the analysis host's tables share the file
      std::printf("%s: [%s]: not an exporter, not checked here (`iosonar config check` checks it)\n", path.c_str(),
                  t.c_str());
      continue;
    }
    print(path + ": [" + t + "]: no command '" + t + "' (tables: the commands of `iosonar --help`, or " + names + ")");
  }
  if (bad) {
    std::fprintf(stderr, "%s: not valid (each bad key above, with its line)\n", path.c_str());
    return 1;
  }
  std::printf("%s: %zu table%s, %zu key%s: ok\n", path.c_str(), cf->tables.size(), cf->tables.size() == 1 ? "" : "s",
              cf->entries.size(), cf->entries.size() == 1 ? "" : "s");
  return 0;
}

int HandleCommonArgs(int argc, char** argv, void (*usage)(std::FILE*), const char* version_line) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view sub = argv[1];
  if (sub == "-h" || sub == "--help" || sub == "help") {
    usage(stdout);
    return 0;
  }
  if (sub == "--version") {
    std::printf("%s\n", version_line);
    return 0;
  }
  return -1;
}

}  // namespace iosonar::exporters
