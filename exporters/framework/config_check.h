// `iosonar config check` / `iosonar-exporter config check` (exporter.cc).
#pragma once
#include <span>
#include <string>

namespace iosonar::exporters {

struct Descriptor;

// `iosonar config check [FILE]` and `iosonar-exporter config check [FILE]`
// (docs/configuration.md): parses FILE (default $IOSONAR_CONFIG when it is a
// .toml file, else /etc/iosonar/iosonar.toml) and checks every key of every
// table against its command's options, printing each bad key with its line;
// exit 0 when all are good, 1 when any is not, 2 on usage. The tables of
// EXPORTERS (the binary's AllExporters()) are checked here; OTHER (may be null) checks the tables of the
// binary's other commands: it returns -1 for a table it does not know, else
// 0, with the bad keys' messages (one a line) in *errors.
using ConfigTableChecker = int (*)(const std::string& table, const std::string& path, std::string* errors);
int RunConfigCheck(int argc, char** argv, std::span<const Descriptor* const> exporters, ConfigTableChecker other);

}  // namespace iosonar::exporters
