// The shape every sampling exporter (lustre, health, probe, ...) shares, as
// Fluent Bit's input plugins do: one Descriptor {name, options, create} per
// exporter, and one loop (RunExporter) that owns what they have in common —
// the common options (--output, --interval, --count, ...), the schedule, the
// output, and each source's self-report.
//
// Each exporter is a plugin folder (exporters/<name>/) whose CMakeLists.txt
// registers it: iosonar_add_exporter(NAME lustre SOURCES ... DESCRIPTOR
// kLustreExporter [LEAN]) (exporters/cmake/IosonarExporter.cmake). The
// binaries' tables of exporters (AllExporters) are generated from those
// registrations at configure time: every exporter is in `iosonar`, the LEAN
// ones also in `iosonar-exporter`. Options are declared once with their
// types (options.h); the framework parses and checks them, the exporter
// reads typed values.
//
// An exporter implements Collect(): read its sources, and for each record
// call ctx.Begin(dataset) and add fields. Around each source it calls
// ctx.SourceDone(source, ok, duration) (or uses a SourceTimer), and bad input
// goes to ctx.Warn(source, message): counted per source, printed to stderr at
// most once a minute per source, never fatal. Every interval the loop then
// emits one iosonar.sampler record per source (duration, ok, warnings,
// records, error), so a broken source shows up in the data, not only in a log.
//
// The loop: ticks on an absolute schedule (CLOCK_MONOTONIC, so a slow sample
// does not drift the next), SIGINT/SIGTERM end it after the current sample,
// --count N stops after N samples (0 = until stopped). Records go out after
// each sample through the output (tcp://, file, "-"; with the spool of
// LineSender when --spool-dir is given).
//
// Not thread-safe: one loop thread calls everything.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/records/fields.h"
#include "exporters/framework/options.h"

namespace iosonar::exporters {

class Context;

// One record being written. Keys are field ids (field::kIoBytes); they must be
// fields of the record's dataset (tests push every emitted line through
// ParseRecordInsitu). Values that cannot be represented (NaN, infinity) leave
// the field out.
class Record {
 public:
  Record& Str(FieldId key, std::string_view v);
  Record& Int(FieldId key, int64_t v);
  Record& Num(FieldId key, double v);
  Record& Bool(FieldId key, bool v);
  // Appends members rendered beforehand, exactly as the calls above would
  // write them: `,"key":value` repeated (for fields that repeat on many
  // records, e.g. a target's name on each of its job records); the key of
  // each is the id's member(): field::kLustreFs.member() is `,"lustre.fs":`.
  Record& Raw(std::string_view members);

 private:
  friend class Context;
  explicit Record(std::string* out) : out_(out) {}
  void Key(FieldId key) { out_->append(key.member()); }
  std::string* out_;
};

class Context {
 public:
  // Starts a record of `dataset` at ts_ns (0: the tick's time); it ends at
  // the next Begin() or when the sample is over. Adds @timestamp,
  // event.dataset, event.stream, event.seq and host.name (and job.id if the
  // exporter was given --job-id).
  Record& Begin(DatasetId dataset, int64_t ts_ns = 0);
  // Bad input from a source: counted, printed (rate-limited), not fatal.
  void Warn(std::string_view source, std::string_view message);
  // A read of the source abandoned at its deadline (a file whose read(2)
  // blocked in the kernel): a warning (counted in the source's
  // sampler.warnings, printed as Warn) and a count in the run's summary.
  void Timeout(std::string_view source, std::string_view message);
  // A source's outcome for this interval (merged if called twice for one source).
  void SourceDone(std::string_view source, bool ok, int64_t duration_ns, std::string_view error = {});

  int64_t now_ns() const { return now_ns_; }            // wall clock at the tick
  int64_t mono_ns() const { return mono_ns_; }          // monotonic clock at the tick
  int64_t interval_ns() const { return interval_ns_; }  // nominal interval
  uint64_t tick() const { return tick_; }               // 0 for the first sample
  const std::string& host() const { return host_; }
  uint64_t warnings_total() const { return warnings_total_; }
  uint64_t timeouts_total() const { return timeouts_total_; }

  // ---- used by the loop and by tests ----
  Context(std::string host, std::string job_id, uint64_t stream, std::string sampler_name);
  void StartTick(uint64_t tick, int64_t now_ns, int64_t mono_ns, int64_t interval_ns);
  // Ends the sample: closes the open record, appends the iosonar.sampler
  // records (collect_ns = the whole Collect call), and returns the lines.
  std::string& FinishTick(int64_t collect_ns);
  uint64_t lines_in_tick() const { return lines_; }        // all lines of this tick
  uint64_t pending_lines() const { return lines_ - spilled_; }  // lines in the buffer FinishTick returned
  // Bounded memory for big samples: once the buffer holds at least `bytes`,
  // each completed record boundary hands the buffer's whole lines to fn
  // (which sends them) and empties it. Records and their order are unchanged.
  void set_spill(size_t bytes, std::function<void(const std::string& lines, uint64_t nlines)> fn) {
    spill_bytes_ = bytes;
    spill_ = std::move(fn);
  }
  void set_quiet(bool q) { quiet_ = q; }
  void set_sampler_records(bool on) { sampler_records_ = on; }

 private:
  void EndRecord();
  struct SourceState {
    bool ok = true;
    int64_t duration_ns = 0;
    uint64_t warnings = 0;   // this tick
    uint64_t timeouts = 0;   // this tick (each also counted in warnings)
    std::string error;
    int64_t last_print_mono = INT64_MIN;
    uint64_t suppressed = 0;
    bool touched = false;
  };
  SourceState& Source(std::string_view name);

  std::string host_, job_id_, sampler_;
  uint64_t stream_;
  uint64_t seq_ = 0;
  std::string buf_;
  Record rec_{&buf_};
  bool open_ = false;
  uint64_t lines_ = 0;
  uint64_t spilled_ = 0;  // lines of this tick already handed to spill_
  size_t spill_bytes_ = 0;
  std::function<void(const std::string&, uint64_t)> spill_;
  uint64_t tick_ = 0;
  int64_t now_ns_ = 0, mono_ns_ = 0, interval_ns_ = 0;
  std::string ts_text_;  // @timestamp of the tick, formatted once
  // Begin()'s constant parts, rendered once: for the last dataset
  // `","event.dataset":"D","event.stream":S,"event.seq":`, and
  // `,"host.name":"H"` (+ job.id).
  size_t hdr_dataset_ = SIZE_MAX;  // DatasetId::index() of hdr_mid_
  std::string hdr_mid_, hdr_tail_;
  std::map<std::string, SourceState, std::less<>> sources_;
  uint64_t warnings_total_ = 0;
  uint64_t timeouts_total_ = 0;
  bool quiet_ = false;
  bool sampler_records_ = true;
};

// Measures one source: SourceTimer t(ctx, "oss"); ... t.Fail("why"); — its
// destructor reports the duration and outcome.
class SourceTimer {
 public:
  SourceTimer(Context& ctx, std::string source);
  ~SourceTimer();
  void Fail(std::string error) { ok_ = false; error_ = std::move(error); }
  SourceTimer(const SourceTimer&) = delete;
  SourceTimer& operator=(const SourceTimer&) = delete;

 private:
  Context& ctx_;
  std::string source_;
  int64_t start_;
  bool ok_ = true;
  std::string error_;
};

class Exporter {
 public:
  virtual ~Exporter() = default;
  // Once, before the first sample (e.g. the probe's precreate check).
  virtual Status Init(Context&) { return Status::Ok(); }
  // One sample. Must not throw; problems go to Warn/SourceDone.
  virtual void Collect(Context& ctx) = 0;
  // After the last sample (flush state, remove temporary files).
  virtual void Stop(Context&) {}
  // Between samples: returns when the monotonic clock reaches until_ns (the
  // next tick) or a stop was asked for (StopRequested). The default sleeps;
  // an exporter that serves something between samples (lustre
  // --listen-metrics) does it here.
  virtual void Idle(int64_t until_ns);
};

struct Descriptor {
  const char* name;         // subcommand: "lustre"
  const char* summary;      // one line for `iosonar --help`
  const char* description;  // paragraph for `iosonar NAME --help`
  std::span<const OptionSpec> options;  // the exporter's own (options.h)
  double default_interval_s;
  // Builds the exporter from parsed options (common ones included; every
  // value already checked against its spec), or says what else was wrong
  // (combinations: "nothing to do: both sources are switched off").
  Result<std::unique_ptr<Exporter>> (*create)(const Options& opts);
  // Optional one-shot action instead of the loop (e.g. `probe --precreate`):
  // returns an exit code, or -1 to run the loop as usual.
  int (*one_shot)(const Options& opts) = nullptr;
};

// SIGINT or SIGTERM arrived: the loop ends after the current sample.
bool StopRequested();

// The common options every exporter takes (see RunExporter's --help).
std::span<const OptionSpec> CommonOptions();

// Parses argv (argv[0] = the subcommand name) against the common and the
// exporter's options, and checks every value against its spec. Unknown
// options, missing values and values that do not parse (or are out of
// range, or not an allowed value) are errors naming the option and the
// value. "--name=value" and "--name value" both work; an option given twice
// keeps the last value. Not given: its environment variable, then its default.
Result<Options> ParseOptions(const Descriptor& d, int argc, char** argv);

// The whole subcommand: options, --help, create, Init, the loop, Stop, and a
// final summary line on stderr. Returns the process exit code (0, 1 on a
// failed Init or output, 2 on bad options).
int RunExporter(const Descriptor& d, int argc, char** argv);

// The binary's name in messages and --help ("iosonar", "iosonar-exporter").
const char* ProgramName();

// The start of a binary's main(): no subcommand prints usage to stderr (2),
// -h/--help/help to stdout (0), --version the version line (0); -1 means go on
// with argv[1] as the subcommand.
int HandleCommonArgs(int argc, char** argv, void (*usage)(std::FILE*), const char* version_line);
void SetProgramName(const char* name);

// The descriptors of all exporters linked into this binary, in registration
// order (each binary has its own table, generated by CMake from the
// iosonar_add_exporter calls: exporters/framework/registry.cc.in).
std::span<const Descriptor* const> AllExporters();

}  // namespace iosonar::exporters
