// HTML escaping for every page iosonar writes (the daily report,
// `iosonar screen`'s report section and `iosonar serve`'s pages): one
// function, so a page cannot forget a character another one escapes.
#pragma once
#include <string>
#include <string_view>

namespace iosonar {

// Escapes &, <, >, " and ' for HTML text and attribute values (quoted with " or ').
std::string HtmlEscape(std::string_view s);

}  // namespace iosonar
