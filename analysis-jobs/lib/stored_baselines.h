// Storage shared by the stored baselines (LASSi's avg_fs, `iosonar lassi
// baseline`; the probe slowdown's t_expected, `iosonar slowdown baseline`):
// a JSON-lines file beside an embedded store (created 0600, one baseline a
// line, a bad line named PATH:LINE), or rows of a job-database table
// replaced by baseline name in one transaction; and the choice of the
// named, else the newest, baseline.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "core/base/json.h"
#include "core/base/status.h"
#include "core/jobdb/mysql.h"

namespace iosonar::analysis {

// What every stored baseline has: its name, where it was read from (for
// people: "file PATH", "mysql TABLE"), when it was computed and the history
// [from, to) it covers.
struct BaselineHead {
  std::string name, source;
  int64_t computed_at_ns = 0, from_ns = 0, to_ns = 0;
};

// The head as JSON members (name, computed_at_ns, from_ns, to_ns) and back;
// the parser says which member is missing.
void WriteBaselineHead(JsonWriter& w, const BaselineHead& h);
Status ParseBaselineHead(const rapidjson::Value& obj, BaselineHead* h);
// A line parsed as a JSON object (Invalid naming the offset when it is not one).
Status ParseJsonObjectLine(std::string_view line, rapidjson::Document* d);

// Appends `line` (ending in '\n') to path, created 0600. Io errors name the file.
Status AppendBaselineLine(const std::string& path, std::string_view line);
// Calls each(line) for every non-empty line of path (none when the file does
// not exist); an error of `each` becomes Invalid "PATH:LINE: why".
Status ForEachBaselineLine(const std::string& path, const std::function<Status(std::string_view line)>& each);

// Every baseline of the file parsed by parse(line) -> Result<B> (none if the
// file does not exist), each with source "file PATH"; a bad line is an
// Invalid error naming PATH:LINE.
template <typename B, typename Parse>
Result<std::vector<B>> ReadBaselineFileWith(const std::string& path, Parse parse) {
  std::vector<B> out;
  Status st = ForEachBaselineLine(path, [&](std::string_view line) -> Status {
    Result<B> b = parse(line);
    if (!b.ok()) return b.status();
    b->source = "file " + path;
    out.push_back(std::move(b).value());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

// Replaces the rows of baseline `name` in `table` by what insert() writes,
// in one transaction; errors say to run `iosonar db-migrate`.
Status ReplaceBaselineRows(MysqlConn& c, const std::string& table, const std::string& name,
                           const std::function<Status()>& insert);
// An error of reading `table`, saying to run `iosonar db-migrate`.
Status BaselineTableError(const std::string& table, const Status& st);

// The baseline named `name` (NotFound naming `what` and the stored names),
// else the newest (by computed_at) for which usable() holds; nullopt when none.
template <typename B, typename Usable>
Result<std::optional<B>> SelectStoredBaseline(const std::vector<B>& all, const std::string& name, std::string_view what,
                                              Usable usable) {
  if (!name.empty()) {
    for (const auto& b : all)
      if (b.name == name) return std::optional<B>(b);
    std::string known;
    for (const auto& b : all) known += (known.empty() ? "" : ", ") + b.name;
    return Status::NotFound("no " + std::string(what) + " named '" + name + "' (stored: " + (known.empty() ? "none" : known) +
                            ")");
  }
  const B* best = nullptr;
  for (const auto& b : all)
    if (usable(b) && (!best || b.computed_at_ns >= best->computed_at_ns)) best = &b;
  if (!best) return std::optional<B>();
  return std::optional<B>(*best);
}

}  // namespace iosonar::analysis
