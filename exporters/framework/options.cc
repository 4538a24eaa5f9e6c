#include "exporters/framework/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "core/base/config_file.h"
#include "core/base/timeutil.h"
#include "exporters/framework/exporter.h"

namespace iosonar::exporters {

namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s.substr(0, 80)) + "'"; }

Status Bad(const OptionSpec& spec, std::string_view what, std::string_view text) {
  return Status::Invalid("--" + std::string(spec.name) + ": " + std::string(what) + ": " + Quote(text));
}

// 4 -> "4", 0.5 -> "0.5", 1073741824 -> "1073741824" (whole numbers in full).
std::string Num(double v) {
  char b[32];
  if (v == std::trunc(v) && std::fabs(v) < 9e15) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// "a,b,c": the index of `item`, or -1.
int ChoiceIndex(const char* choices, std::string_view item) {
  std::string_view list = choices ? choices : "";
  for (int k = 0; !list.empty(); ++k) {
    const size_t c = list.find(',');
    if (list.substr(0, c) == item) return k;
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return -1;
}

// "oss,mds" -> "oss, mds" (for messages).
std::string ChoicesText(const char* choices) {
  std::string out;
  for (const char* p = choices ? choices : ""; *p; ++p) {
    out += *p;
    if (*p == ',') out += ' ';
  }
  return out;
}

template <typename T>
bool Whole(std::string_view v, T* out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return !v.empty() && ec == std::errc() && p == v.data() + v.size();
}

Status CheckRange(const OptionSpec& spec, double v, std::string_view text) {
  const bool low = spec.min_exclusive ? v <= spec.min : v < spec.min;
  if (!low && v <= spec.max) return Status::Ok();
  const bool has_min = std::isfinite(spec.min), has_max = std::isfinite(spec.max);
  std::string what = "must be ";
  if (has_min) what += (spec.min_exclusive ? "> " : ">= ") + Num(spec.min);
  if (has_min && has_max) what += " and ";
  if (has_max) what += "<= " + Num(spec.max);
  if (spec.type == OptionType::kDuration) what += " seconds";
  return Bad(spec, what, text);
}

// The parse of one value: *i, *d and *chosen as the type has them.
Status ParseValue(const OptionSpec& spec, std::string_view v, int64_t* i, double* d, uint64_t* chosen) {
  *i = 0;
  *d = 0;
  *chosen = 0;
  switch (spec.type) {
    case OptionType::kFlag:
    case OptionType::kString:
      return Status::Ok();
    case OptionType::kInt:
      if (!Whole(v, i)) return Bad(spec, "not an integer", v);
      return CheckRange(spec, static_cast<double>(*i), v);
    case OptionType::kDouble:
    case OptionType::kDuration:
      if (!Whole(v, d) || !std::isfinite(*d)) return Bad(spec, "not a number", v);
      return CheckRange(spec, *d, v);
    case OptionType::kBytes: {
      std::string_view n = v;
      int64_t mult = 1;
      if (!n.empty()) {
        switch (n.back()) {
          case 'k': case 'K': mult = int64_t{1} << 10; break;
          case 'm': case 'M': mult = int64_t{1} << 20; break;
          case 'g': case 'G': mult = int64_t{1} << 30; break;
          case 't': case 'T': mult = int64_t{1} << 40; break;
          default: break;
        }
        if (mult != 1) n.remove_suffix(1);
      }
      if (!Whole(n, i) || *i < 0 || *i > INT64_MAX / mult) return Bad(spec, "not a size (bytes, or with K/M/G/T)", v);
      *i *= mult;
      return CheckRange(spec, static_cast<double>(*i), v);
    }
    case OptionType::kTime: {
      auto t = ParseIso8601(v);
      if (!t) return Bad(spec, "not an ISO 8601 time", v);
      *i = *t;
      return Status::Ok();
    }
    case OptionType::kEnum: {
      const int k = ChoiceIndex(spec.choices, v);
      if (k < 0)
        return Status::Invalid("--" + std::string(spec.name) + ": unknown value " + Quote(v) + " (" +
                               ChoicesText(spec.choices) + ")");
      *chosen = uint64_t{1} << k;
      return Status::Ok();
    }
    case OptionType::kList: {
      std::string_view list = v;
      while (!list.empty()) {
        const size_t c = list.find(',');
        const std::string_view item = list.substr(0, c);
        if (!item.empty()) {
          const int k = ChoiceIndex(spec.choices, item);
          if (k < 0)
            return Status::Invalid("--" + std::string(spec.name) + ": unknown value " + Quote(item) + " (" +
                                   ChoicesText(spec.choices) + ")");
          *chosen |= uint64_t{1} << k;
        }
        if (c == std::string_view::npos) break;
        list.remove_prefix(c + 1);
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckOptionValue(const OptionSpec& spec, std::string_view text) {
  int64_t i;
  double d;
  uint64_t chosen;
  return ParseValue(spec, text, &i, &d, &chosen);
}

void Options::Declare(const OptionSpec& spec) {
  Value& v = values_[spec.name];
  v = Value{};
  v.spec = &spec;
}

Status Options::Set(const OptionSpec& spec, std::string_view text) {
  Value v;
  v.spec = &spec;
  if (Status s = ParseValue(spec, text, &v.i, &v.d, &v.chosen); !s.ok()) return s;
  v.present = true;
  v.text.assign(text);
  values_[spec.name] = std::move(v);
  return Status::Ok();
}

const Options::Value& Options::Find(std::string_view name, std::initializer_list<OptionType> types) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    std::fprintf(stderr, "internal error: option --%.*s is not declared\n", static_cast<int>(name.size()), name.data());
    std::abort();
  }
  if (types.size() != 0) {
    bool ok = false;
    for (OptionType t : types) ok = ok || it->second.spec->type == t;
    if (!ok) {
      std::fprintf(stderr, "internal error: option --%.*s read as another type\n", static_cast<int>(name.size()), name.data());
      std::abort();
    }
  }
  return it->second;
}

bool Options::Has(std::string_view name) const { return Find(name, {}).present; }

const std::string& Options::Get(std::string_view name) const { return Find(name, {}).text; }

bool Options::Flag(std::string_view name) const { return Find(name, {OptionType::kFlag}).present; }

int64_t Options::Int(std::string_view name) const { return Find(name, {OptionType::kInt, OptionType::kBytes}).i; }

double Options::Double(std::string_view name) const { return Find(name, {OptionType::kDouble, OptionType::kDuration}).d; }

int64_t Options::TimeNs(std::string_view name) const { return Find(name, {OptionType::kTime}).i; }

bool Options::Contains(std::string_view name, std::string_view choice) const {
  const Value& v = Find(name, {OptionType::kEnum, OptionType::kList});
  const int k = ChoiceIndex(v.spec->choices, choice);
  if (k < 0) {
    std::fprintf(stderr, "internal error: '%.*s' is not a value of --%.*s\n", static_cast<int>(choice.size()), choice.data(),
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return v.chosen >> k & 1;
}

// ---- the command line of an exporter ---------------------------------------------------

namespace {

constexpr OptionSpec kCommon[] = {
    opt::String("output", "URL", "-",
                "where records go: tcp://HOST:PORT (the collector or Logstash's tcp json_lines input), "
                "https://HOST:9200 or es+https://... (Elasticsearch _bulk into the data streams), a file path "
                "(appended), or - for stdout (else $IOSONAR_OUTPUT)")
        .Env("IOSONAR_OUTPUT"),
    opt::String("es-user", "USER", nullptr, "Elasticsearch basic-auth user (password from $IOSONAR_ES_PASSWORD)"),
    opt::String("es-ca-file", "FILE", nullptr, "CA certificate(s) for Elasticsearch's TLS (verification is on by default)"),
    opt::Flag("es-insecure", "do not verify Elasticsearch's certificate"),
    opt::Flag("es-gzip", "gzip the Elasticsearch _bulk bodies (Content-Encoding: gzip; else $IOSONAR_ES_GZIP=1)"),
    // The default is the exporter's (Descriptor::default_interval_s).
    opt::Duration("interval", "SECONDS", nullptr, "time between samples (fractions allowed)").Above(0),
    opt::Int("count", "N", "0", "stop after N samples (0 = run until SIGINT/SIGTERM)").Min(0),
    opt::String("spool-dir", "DIR", nullptr, "keep records here while the output is unreachable and resend them later"),
    opt::String("host-name", "NAME", nullptr, "host.name of the records (default: this host's name)"),
    opt::String("job-id", "ID", nullptr, "tag every record with this job.id"),
    opt::Flag("no-sampler-records", "do not emit the per-source iosonar.sampler self-reports"),
    opt::Flag("quiet", "no warnings and no summary on stderr"),
    opt::String("config", "FILE", nullptr,
                "the configuration file (/etc/iosonar/iosonar.toml): its [EXPORTER] table and shared top-level keys "
                "fill the options not given (else $IOSONAR_CONFIG, when it names a .toml file)")
        .Env("IOSONAR_CONFIG"),
    opt::Flag("help", "show this help"),
};

const OptionSpec* FindSpec(const Descriptor& d, std::string_view name) {
  for (const auto& o : kCommon)
    if (name == o.name) return &o;
  for (const auto& o : d.options)
    if (name == o.name) return &o;
  return nullptr;
}

}  // namespace

std::span<const OptionSpec> CommonOptions() { return kCommon; }

Result<Options> ParseOptions(const Descriptor& d, int argc, char** argv) {
  Options o;
  std::vector<const OptionSpec*> specs;
  for (const auto& s : kCommon) specs.push_back(&s);
  for (const auto& s : d.options) specs.push_back(&s);
  for (const OptionSpec* s : specs) o.Declare(*s);
  // The command line; an option given twice keeps its last value.
  std::vector<std::pair<const OptionSpec*, std::string_view>> given;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.size() < 3 || a.substr(0, 2) != "--")
      return Status::Invalid("unexpected argument " + Quote(a) + " (options start with --)");
    a.remove_prefix(2);
    std::string_view value;
    bool has_value = false;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    const OptionSpec* spec = FindSpec(d, a);
    if (!spec) return Status::Invalid("unknown option --" + std::string(a) + " (see iosonar " + d.name + " --help)");
    if (!spec->takes_value()) {
      if (has_value) return Status::Invalid("option --" + std::string(a) + " takes no value");
    } else if (!has_value) {
      if (i + 1 >= argc) return Status::Invalid("option --" + std::string(a) + " needs a value (" + spec->value_name + ")");
      value = argv[++i];
    }
    given.emplace_back(spec, value);
  }
  for (size_t k = 0; k < given.size(); ++k) {
    bool later = false;
    for (size_t j = k + 1; j < given.size() && !later; ++j) later = given[j].first == given[k].first;
    if (later) continue;
    if (Status s = o.Set(*given[k].first, given[k].second); !s.ok()) return s;
  }
  // Not given: the configuration file (docs/configuration.md), then the
  // environment, then the default.
  const char* cfg_env = getenv("IOSONAR_CONFIG");
  std::string cfg_path;
  for (const auto& g : given)
    if (std::string_view(g.first->name) == "config") cfg_path.assign(g.second);
  if (cfg_path.empty() && cfg_env) cfg_path = cfg_env;
  std::vector<const OptionSpec*> configured;
  if (IsTomlConfigPath(cfg_path)) {
    auto cf = LoadConfigFile(cfg_path);
    if (!cf.ok()) return cf.status();
    std::string errors;  // every bad key, one line each
    auto bad = [&](const std::string& m) { errors += (errors.empty() ? "" : "\n") + m; };
    for (const ConfigEntry& e : cf->entries) {
      bool top = e.table.empty();
      if (!top && e.table != d.name) continue;
      std::string key = ConfigKeyToOption(e.key);
      std::string where = cf->Where(e) + (top ? std::string() : "[" + std::string(d.name) + "] ") + "'" + e.key + "': ";
      const bool shared = key == "mysql" || key == "redis" || key == "store" || key == "output" || key == "cluster" ||
                          key == "munge-socket";
      const OptionSpec* spec = key == "config" || key == "help" || (top && !shared) ? nullptr : FindSpec(d, key);
      if (!spec) {
        if (top && shared) continue;  // a shared setting this exporter does not use
        if (top)
          bad(where + "not a shared setting (the top level takes mysql, redis, store, output, "
                      "cluster, munge-socket; put the other options in their command's [table])");
        else
          bad(where + ProgramName() + " " + d.name + " has no option --" + key);
        continue;
      }
      if (std::any_of(given.begin(), given.end(), [&](const auto& g) { return g.first == spec; })) continue;
      std::string text;
      if (spec->type == OptionType::kFlag) {
        if (e.is_array || (e.values[0] != "true" && e.values[0] != "false")) {
          bad(where + "--" + key + " is a switch: true or false");
          continue;
        }
        configured.push_back(spec);
        if (e.values[0] == "false") continue;
      } else {
        if (e.is_array && spec->type != OptionType::kList) {
          bad(where + "--" + key + " takes one value, not an array");
          continue;
        }
        for (size_t k = 0; k < e.values.size(); ++k) text += (k ? "," : "") + e.values[k];
        configured.push_back(spec);
      }
      if (Status st = o.Set(*spec, text); !st.ok())
        bad(where + (e.is_secret ? std::string("the value from its secret file is not valid here") : st.message()));
    }
    if (!errors.empty()) return Status::Invalid(errors);
  }
  char interval[32];
  std::snprintf(interval, sizeof interval, "%g", d.default_interval_s);
  for (const OptionSpec* s : specs) {
    if (std::any_of(given.begin(), given.end(), [&](const auto& g) { return g.first == s; })) continue;
    if (std::find(configured.begin(), configured.end(), s) != configured.end()) continue;
    const char* env = s->env ? getenv(s->env) : nullptr;
    const char* text = env && *env ? env : std::string_view(s->name) == "interval" ? interval : s->default_value;
    if (!text) continue;
    if (Status st = o.Set(*s, text); !st.ok()) {
      if (text == env) return Status::Invalid(st.message() + " (from $" + s->env + ")");
      return st;
    }
  }
  return o;
}

void PrintOptionHelp(const OptionSpec& o) {
  std::string left = std::string("--") + o.name + (o.value_name ? std::string(" ") + o.value_name : "");
  std::printf("  %-26s %s", left.c_str(), o.help);
  if (o.default_value && *o.default_value) std::printf(" (default %s)", o.default_value);
  std::printf("\n");
}

}  // namespace iosonar::exporters
