// The static files `iosonar serve` answers under /static/: uPlot (from npm,
// pinned in serve/web/package-lock.json, installed and embedded at build
// time), its licence, and our own script and style sheet (serve/web/).
// Nothing is loaded from anywhere else at run time.
#pragma once
#include <string_view>

namespace iosonar::serve {

struct Asset {
  std::string_view name;          // "uplot.js" (served as /static/uplot.js)
  std::string_view content_type;
  std::string_view data;
};

// nullptr if there is no such file.
const Asset* FindAsset(std::string_view name);

}  // namespace iosonar::serve
