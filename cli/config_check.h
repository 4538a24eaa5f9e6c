// The configuration file in the subcommands' option parser (cmd_misc.cc).
#pragma once
#include <string>

namespace iosonar::cli {

// `iosonar config check`: while PATH is set, every command's option parser
// checks that file's table of the command instead of running it.
void SetConfigCheckPath(const std::string& path);
bool ConfigCheckedByParser();
std::string ConfigCheckErrors();  // the bad keys the parser found, one a line  // whether a parser checked it since SetConfigCheckPath

}  // namespace iosonar::cli
