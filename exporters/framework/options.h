// Exporter options declared once, with their types, as Fluent Bit's
// config_map tables: each exporter lists its options in a constexpr table of
// OptionSpec, the framework parses and validates every value against its
// spec (type, range, allowed values; errors name the option and the value:
// "--interval: not a number: 'x'"), and the exporter reads typed values
// (Options::Int, Bytes, Seconds, Contains, ...) that cannot fail. The same
// table prints --help. options.cc also holds the common options of every
// exporter and ParseOptions (declared in exporter.h).
//
//   constexpr OptionSpec kOptions[] = {
//       opt::String("proc-root", "DIR", "/", "read DIR/proc/fs/lustre ..."),
//       opt::Int("jobstats-every", "N", "1", "read job_stats every N samples").Min(1),
//       opt::Duration("timeout", "SECONDS", "30", "kill a command ...").Above(0).Max(86400),
//       opt::List("sources", "LIST", "oss,mds", "oss,mds,jobstats", "what to sample (comma-separated)"),
//       opt::Flag("per-file-sources", "self-report per file"),
//   };
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace iosonar::exporters {

enum class OptionType : uint8_t {
  kFlag,      // no value
  kString,    // any text
  kInt,       // a decimal integer
  kDouble,    // a decimal number (finite)
  kBytes,     // "3901", "4K", "64M", "1G", "2T" (powers of 1024)
  kDuration,  // seconds, fractions allowed ("0.5")
  kEnum,      // one of `choices`
  kList,      // comma-separated values, each one of `choices` (empty items ignored)
  kTime,      // an ISO 8601 time ("2026-11-22T08:00:00Z"; no zone: UTC)
};

struct OptionSpec {
  OptionType type = OptionType::kString;
  const char* name = "";               // without the leading "--"
  const char* value_name = nullptr;    // "DIR", "SECONDS", ... for --help; nullptr for a flag
  const char* default_value = nullptr; // text, checked like a given value; nullptr: none
  const char* help = "";
  const char* choices = nullptr;       // kEnum, kList: the allowed values, comma-separated (at most 64)
  const char* env = nullptr;           // environment variable read when the option is not given
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;

  // Ranges (kInt, kDouble, kBytes, kDuration): >= v, > v, <= v.
  constexpr OptionSpec Min(double v) const {
    OptionSpec o = *this;
    o.min = v;
    o.min_exclusive = false;
    return o;
  }
  constexpr OptionSpec Above(double v) const {
    OptionSpec o = *this;
    o.min = v;
    o.min_exclusive = true;
    return o;
  }
  constexpr OptionSpec Max(double v) const {
    OptionSpec o = *this;
    o.max = v;
    return o;
  }
  // The value of this environment variable (if set and not empty) when the
  // option is not given; the command line wins.
  constexpr OptionSpec Env(const char* var) const {
    OptionSpec o = *this;
    o.env = var;
    return o;
  }
  constexpr bool takes_value() const { return type != OptionType::kFlag; }
};

// Table entries, one function per type.
namespace opt {
constexpr OptionSpec Flag(const char* name, const char* help) {
  return {OptionType::kFlag, name, nullptr, nullptr, help};
}
constexpr OptionSpec String(const char* name, const char* value_name, const char* def, const char* help) {
  return {OptionType::kString, name, value_name, def, help};
}
constexpr OptionSpec Int(const char* name, const char* value_name, const char* def, const char* help) {
  return {OptionType::kInt, name, value_name, def, help};
}
constexpr OptionSpec Double(const char* name, const char* value_name, const char* def, const char* help) {
  return {OptionType::kDouble, name, value_name, def, help};
}
constexpr OptionSpec Bytes(const char* name, const char* value_name, const char* def, const char* help) {
  return {OptionType::kBytes, name, value_name, def, help};
}
constexpr OptionSpec Duration(const char* name, const char* value_name, const char* def, const char* help) {
  return {OptionType::kDuration, name, value_name, def, help};
}
constexpr OptionSpec Enum(const char* name, const char* value_name, const char* def, const char* choices, const char* help) {
  return {OptionType::kEnum, name, value_name, def, help, choices};
}
constexpr OptionSpec List(const char* name, const char* value_name, const char* def, const char* choices, const char* help) {
  return {OptionType::kList, name, value_name, def, help, choices};
}
constexpr OptionSpec Time(const char* name, const char* value_name, const char* def, const char* help) {
  return {OptionType::kTime, name, value_name, def, help};
}
}  // namespace opt

// Checks one value against its spec: Ok, or the error naming the option and
// the value ("--count: not an integer: 'x'", "--jobstats-every: must be >= 1: '0'").
Status CheckOptionValue(const OptionSpec& spec, std::string_view text);

// The values of one command line, parsed and checked against the specs
// (ParseOptions). The typed getters cannot fail: a value that did not parse
// was refused before the exporter saw it. Asking for an option that was not
// declared, or with the getter of another type, is a programming error
// (message on stderr, abort).
class Options {
 public:
  bool Has(std::string_view name) const;                // given, from its environment variable, or a default
  const std::string& Get(std::string_view name) const;  // the text ("" if absent)
  bool Flag(std::string_view name) const;               // kFlag
  int64_t Int(std::string_view name) const;             // kInt, kBytes (0 if absent)
  int64_t Bytes(std::string_view name) const { return Int(name); }
  double Double(std::string_view name) const;           // kDouble, kDuration in seconds (0 if absent)
  double Seconds(std::string_view name) const { return Double(name); }
  int64_t TimeNs(std::string_view name) const;          // kTime: epoch ns (0 if absent)
  bool Contains(std::string_view name, std::string_view choice) const;  // kEnum, kList: selected?

  // ParseOptions declares every option of the exporter (absent), then sets
  // the ones given, found in the environment or defaulted, each checked
  // against its spec.
  void Declare(const OptionSpec& spec);
  Status Set(const OptionSpec& spec, std::string_view text);

 private:
  struct Value {
    const OptionSpec* spec = nullptr;
    bool present = false;
    std::string text;
    int64_t i = 0;
    double d = 0;
    uint64_t chosen = 0;  // kEnum, kList: bit k = the k-th choice
  };
  const Value& Find(std::string_view name, std::initializer_list<OptionType> types) const;
  std::map<std::string, Value, std::less<>> values_;
};

// Prints one option as --help does: "  --name VALUE   help (default D)".
void PrintOptionHelp(const OptionSpec& o);

}  // namespace iosonar::exporters
