// Text for a terminal from stored data: the one escaping every table and
// report printer uses. Stored fields (file paths, command lines, job names,
// host names) come from users' programs; a control character in them (ESC
// starting a terminal escape sequence, a carriage return or backspace hiding
// text, a C1 control) is printed as \xNN instead of acting on the terminal.
// Line ends and tabs stay (the tables' own layout).
#pragma once
#include <string>
#include <string_view>

namespace iosonar {

std::string TerminalSafe(std::string_view text);

}  // namespace iosonar
