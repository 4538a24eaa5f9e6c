// `iosonar schema`, and the settings lookup every subcommand shares.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "commands.h"
#include "iosonar/schema.h"

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

int CmdSchema(int argc, char** argv) {
  po::options_description desc("usage: iosonar schema [--format json|markdown]\n\nPrints the record schema, the one source of truth for every field iosonar emits");
  std::string format = "json";
  desc.add_options()("help,h", "show this help")("format", po::value(&format)->default_value("json"), "json or markdown");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "iosonar schema: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (format == "json") {
    std::cout << schema::ToJson() << "\n";
    return 0;
  }
  if (format != "markdown") {
    std::cerr << "iosonar schema: --format must be json or markdown, not '" << format << "'\n";
    return 2;
  }
  std::cout << "| field | type | unit | required | datasets | description |\n|---|---|---|---|---|---|\n";
  for (const auto& f : schema::Fields())
    std::cout << "| `" << f.name << "` | " << schema::TypeName(f.type) << " | " << f.unit << " | "
              << (f.required ? "yes" : "no") << " | " << f.datasets << " | " << f.description << " |\n";
  return 0;
}

}  // namespace iosonar::cli
