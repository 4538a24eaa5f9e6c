// `iosonar schema`, and the settings lookup every subcommand shares.
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/results/results.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/config_check.h"
#include "core/records/fields.h"
#include "core/records/schema.h"
#include "core/store/sqlite_store.h"
#include "core/store/store.h"
#include "core/transport/es_client.h"
#include "core/base/config_file.h"
#include "core/base/json.h"
#include "core/base/timeutil.h"

namespace po = boost::program_options;

namespace iosonar::cli {

std::string ResolveSetting(const std::string& flag_value, const char* env_name, const std::string& config_key,
                           const std::string& config_path) {
  if (!flag_value.empty()) return flag_value;
  if (const char* e = env_name ? std::getenv(env_name) : nullptr; e && *e) return e;
  std::string path = config_path;
  if (path.empty())
    if (const char* c = std::getenv("IOSONAR_CONFIG"); c && *c) path = c;
  if (path.empty())
    if (const char* h = std::getenv("HOME"); h && *h) path = std::string(h) + "/.config/iosonar/iosonar.conf";
  if (IsTomlConfigPath(path)) {  // its values reached the flags already (ParseCommandLine); shared keys here too
    auto cf = LoadConfigFile(path);
    if (cf.ok())
      for (const ConfigEntry& e : cf->entries)
        if (e.table.empty() && ConfigKeyToOption(e.key) == config_key && e.values.size() == 1) return e.values[0];
    return "";
  }
  std::ifstream f(path);
  std::string line;
  auto trim = [](std::string s) {
    auto b = s.find_first_not_of(" \t\r");
    auto e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(f, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    if (trim(line.substr(0, eq)) == config_key) return trim(line.substr(eq + 1));
  }
  return "";
}

std::string FindTracerLib() {
  if (const char* e = std::getenv("IOSONAR_TRACE_LIB"); e && *e) return e;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.resize(dir.rfind('/'));
    for (const std::string& cand : {dir + "/libiosonar-trace.so", dir + "/../lib/libiosonar-trace.so"})
      if (access(cand.c_str(), R_OK) == 0) return cand;
  }
  for (const std::string& cand : {std::string(IOSONAR_BUILD_LIBDIR) + "/libiosonar-trace.so",
                                  std::string(IOSONAR_INSTALL_LIBDIR) + "/libiosonar-trace.so"})
    if (access(cand.c_str(), R_OK) == 0) return cand;
  return "";
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Io("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status::Io("cannot read " + path);
  return ss.str();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::Io("cannot write " + path);
  return Status::Ok();
}

int CmdSchema(int argc, char** argv) {
  po::options_description desc(
      "usage: iosonar schema [--format json|markdown] | --results\n\nPrints the record schema, the one source of truth "
      "for every field iosonar emits;\nwith --results the analysis results' MySQL tables (core/results/results.def)");
  std::string format = "json";
  desc.add_options()("help,h", "show this help")("format", po::value(&format)->default_value("json"), "json or markdown")(
      "results", "print the CREATE TABLE statements of the analysis results");
  po::variables_map vm;
  if (int rc = ParseCommandLine("schema", argc, argv, desc, &vm); rc >= 0) return rc;
  if (vm.count("results")) {
    std::cout << results::MysqlDdl();
    return 0;
  }
  if (format == "json") {
    // ... and the engines' group keys (es_client.h): engine-only fields the
    // mappings hold and the Logstash indexers write.
    std::string out = schema::ToJson();
    out.pop_back();  // '}'
    out += ",\"group_keys\":[";
    bool first = true;
    for (const GroupKeyField& k : GroupKeyFields()) {
      if (!first) out += ",";
      first = false;
      out += "{\"name\":";
      AppendJsonString(&out, k.name);
      out += ",\"dataset\":";
      AppendJsonString(&out, k.dataset);
      out += ",\"parts\":[";
      for (size_t i = 0; i < k.parts.size(); ++i) {
        if (i) out += ",";
        AppendJsonString(&out, k.parts[i].name());
      }
      out += "]}";
    }
    out += "]}";
    std::cout << out << "\n";
    return 0;
  }
  if (format != "markdown") return CommandError("schema", 2, "--format must be json or markdown, not '", format, "'");
  std::cout << "| field | type | unit | required | datasets | description |\n|---|---|---|---|---|---|\n";
  for (const auto& f : schema::Fields())
    std::cout << "| `" << f.name << "` | " << schema::TypeName(f.type) << " | " << f.unit << " | "
              << (f.required ? "yes" : "no") << " | " << f.datasets << " | " << f.description << " |\n";
  return 0;
}

int CmdStoreExport(int argc, char** argv) {
  po::options_description desc(
      "usage: iosonar store-export --store DIR [--dataset NAME] [--job ID] [--from TIME] [--to TIME]\n\n"
      "Prints the records of an embedded store as JSON lines, the same lines the exporters send:\n"
      "for jq, for re-ingesting (`iosonar collect --from-file`), or for shipping to Logstash.\n\noptions");
  std::string dir, dataset = "iosonar.trace", job, from, to;
  desc.add_options()("help,h", "show this help")("store", po::value(&dir), "store directory (holding store.db)")(
      "dataset", po::value(&dataset)->default_value("iosonar.trace"), "dataset to export")(
      "job", po::value(&job), "only this job id")("from", po::value(&from), "only records at or after this ISO 8601 time")(
      "to", po::value(&to), "only records before this ISO 8601 time");
  po::variables_map vm;
  if (int rc = ParseCommandLine("store-export", argc, argv, desc, &vm); rc >= 0) return rc;
  if (dir.empty()) return CommandError("store-export", 2, "--store DIR is required");
  if (access((dir + "/store.db").c_str(), R_OK) != 0) return CommandError("store-export", 1, "no store.db in ", dir);
  if (!schema::FindDataset(dataset))
    return CommandError("store-export", 2, "unknown dataset '", dataset, "' (see iosonar schema)");
  ScanQuery q;
  q.dataset = dataset;
  for (const auto& [text, slot] : {std::pair{from, &q.range.start_ns}, std::pair{to, &q.range.end_ns}}) {
    if (text.empty()) continue;
    auto ns = ParseIso8601(text);
    if (!ns)
      return CommandError("store-export", 2, "'", text,
                          "' is not an ISO 8601 time with a zone (e.g. 2026-11-22T07:00:00Z)");
    *slot = *ns;
  }
  if (!job.empty()) q.filters.push_back({field::kJobId, job});
  auto store = OpenSqliteStore(dir);
  if (!store.ok()) return CommandError("store-export", 1, store.status().message());
  Status st = ExportJsonLines(**store, q, [](std::string_view line) {
    std::cout.write(line.data(), static_cast<std::streamsize>(line.size()));
    std::cout.put('\n');
    return static_cast<bool>(std::cout);
  });
  if (!st.ok()) return CommandError("store-export", 1, st.message());
  return 0;
}

}  // namespace iosonar::cli

namespace iosonar::cli {

namespace {

std::string g_config_check_path;  // `iosonar config check`: the file every command's parser checks
bool g_config_checked = false;     // set when a command's parser checked it
std::string g_config_check_errors; // what it found

// Top-level keys of the configuration file: settings several commands share;
// each command takes those it has an option for.
constexpr const char* kSharedConfigKeys[] = {"mysql", "redis", "store", "output", "cluster", "munge-socket"};

bool IsSharedConfigKey(const std::string& key) {
  for (const char* k : kSharedConfigKeys)
    if (key == k) return true;
  return false;
}

// Stores the values of CF's table TABLE (and its shared top-level keys) into
// *vm for the options not given on the command line. Errors name the file,
// the line and the key; secrets' values are never printed.
Status ApplyConfigFile(const ConfigFile& cf, const std::string& table, const po::options_description& options,
                       const po::positional_options_description* positional, po::variables_map* vm) {
  std::string errors;  // every bad key, one line each
  auto bad = [&](const std::string& m) { errors += (errors.empty() ? "" : "\n") + m; };
  // The command's table first: a value stored stays (po::store), so its own
  // key wins over a shared top-level one.
  std::vector<const ConfigEntry*> order;
  for (const ConfigEntry& e : cf.entries)
    if (e.table == table) order.push_back(&e);
  for (const ConfigEntry& e : cf.entries)
    if (e.table.empty()) order.push_back(&e);
  for (const ConfigEntry* ep : order) {
    const ConfigEntry& e = *ep;
    bool top = e.table.empty();
    std::string key = ConfigKeyToOption(e.key);
    std::string where = cf.Where(e) + (top ? std::string() : "[" + table + "] ") + "'" + e.key + "': ";
    bool hidden = false;
    if (positional)
      for (unsigned i = 0; i < positional->max_total_count() && i < 4; ++i) hidden = hidden || positional->name_for_position(i) == key;
    const po::option_description* d = hidden || key == "config" || key == "help" ? nullptr : options.find_nothrow(key, false);
    if (!d) {
      if (top && IsSharedConfigKey(key)) continue;  // a shared setting this command does not use
      if (top)
        bad(where + "not a shared setting (the top level takes mysql, redis, store, output, cluster, "
                    "munge-socket; put the other options in their command's [table])");
      else
        bad(where + "iosonar " + table + " has no option --" + key);
      continue;
    }
    if (vm->count(d->long_name()) && !(*vm)[d->long_name()].defaulted()) continue;  // a flag overrides the file
    po::parsed_options one(&options);
    po::option o;
    o.string_key = d->long_name();
    o.value = e.values;
    one.options.push_back(o);
    try {
      po::store(one, *vm);
    } catch (const std::exception& ex) {
      bad(where + (e.is_secret ? std::string("the value from its secret file is not valid here") : std::string(ex.what())));
    }
  }
  return errors.empty() ? Status::Ok() : Status::Invalid(errors);
}

}  // namespace

void SetConfigCheckPath(const std::string& path) {
  g_config_check_path = path;
  g_config_checked = false;
  g_config_check_errors.clear();
}

bool ConfigCheckedByParser() { return g_config_checked; }
std::string ConfigCheckErrors() { return g_config_check_errors; }

int ParseCommandLine(const char* name, int argc, char** argv, const po::options_description& options,
                     po::variables_map* vm, const po::positional_options_description* positional,
                     const po::options_description* help) {
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(options);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), *vm);
  } catch (const std::exception& e) {
    return UsageError(name, e.what());
  }
  // The configuration file (/etc/iosonar/iosonar.toml, docs/configuration.md):
  // --config FILE or $IOSONAR_CONFIG when it names a .toml file; its
  // [COMMAND] table and shared top-level keys fill the options not given.
  std::string cfg_path = g_config_check_path;
  if (cfg_path.empty() && vm->count("config")) cfg_path = (*vm)["config"].as<std::string>();
  if (cfg_path.empty() && options.find_nothrow("config", false))
    if (const char* c = std::getenv("IOSONAR_CONFIG"); c && *c) cfg_path = c;
  if (!cfg_path.empty() && IsTomlConfigPath(cfg_path)) {
    std::string table(name);
    table.resize(std::min(table.find(' '), table.size()));
    auto cf = LoadConfigFile(cfg_path);
    Status st = cf.ok() ? ApplyConfigFile(*cf, table, options, positional, vm) : cf.status();
    if (!st.ok()) {
      if (!g_config_check_path.empty()) {
        g_config_checked = true;
        g_config_check_errors = st.message();
        return 2;
      }
      return CommandError(name, 2, st.message());
    }
    if (!g_config_check_path.empty()) {
      g_config_checked = true;
      return 0;
    }
  }
  try {
    po::notify(*vm);
  } catch (const std::exception& e) {
    return UsageError(name, e.what());
  }
  if (vm->count("help")) {
    std::cout << (help ? *help : options) << "\n";
    return 0;
  }
  return -1;
}

int ParseJobCommandLine(const char* name, int argc, char** argv, const po::options_description& options,
                        std::string* job_id, po::variables_map* vm) {
  po::options_description hidden;
  hidden.add_options()("job-id", po::value(job_id));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description pos;
  pos.add("job-id", 1);
  if (int rc = ParseCommandLine(name, argc, argv, all, vm, &pos, &options); rc >= 0) return rc;
  if (job_id->empty()) return UsageError(name, "missing JOB_ID");
  return -1;
}

int PrintCommandError(std::string_view name, int rc, const std::string& msg) {
  std::cerr << "iosonar " << name << ": " << msg << "\n";
  return rc;
}

int UsageError(std::string_view name, const std::string& msg) {
  std::cerr << "iosonar " << name << ": " << msg << "\n(see iosonar " << name << " --help)\n";
  return 2;
}

}  // namespace iosonar::cli
