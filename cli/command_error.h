// How every command reports a bad option or input, or a failure, and exits:
// one line "iosonar NAME: WHAT" on stderr, and the exit code returned.
//
//   if (!store.ok()) return CommandError("anomaly", 1, store.status().ToString());
//   if (n < 1) return UsageError("anomaly", "--k: not a positive number: '" + k + "'");
//
// Exit codes: 2 for a wrong command line (UsageError, which adds the hint
// "(see iosonar NAME --help)") or an input file that is not of its form,
// 1 for work that failed (a file, a service, the data). The parts are
// written one after the other as with <<. Only cli/*.cc include this.
#pragma once
#include <sstream>
#include <string>
#include <string_view>

namespace iosonar::cli {

// Prints "iosonar NAME: msg" and returns rc.
int PrintCommandError(std::string_view name, int rc, const std::string& msg);

template <class... Parts>
int CommandError(std::string_view name, int rc, const Parts&... parts) {
  std::ostringstream msg;
  (msg << ... << parts);
  return PrintCommandError(name, rc, msg.str());
}

// Prints "iosonar NAME: msg\n(see iosonar NAME --help)" and returns 2.
int UsageError(std::string_view name, const std::string& msg);

}  // namespace iosonar::cli
