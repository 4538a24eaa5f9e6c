// Stored LASSi baselines (avg_fs per application-hour, `iosonar lassi
// baseline`): a JSON-lines file beside an embedded store (0600), or the
// job database's lassi_baseline table (migration 036). `lassi` and `report`
// take the newest one of the window length they analyse, or a named one.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "analysis-jobs/lassi/lassi.h"
#include "core/base/status.h"
#include "core/jobdb/mysql.h"

namespace iosonar::lassi {

// DIR/lassi-baselines.jsonl for an embedded store directory.
std::string BaselineFileOf(const std::string& store_dir);

// One baseline as one JSON line (with '\n') and back; the parser names what is wrong.
std::string BaselineLine(const Baseline& b);
Result<Baseline> ParseBaselineLine(std::string_view line);

// Appends to the file (created 0600). Io errors name the file.
Status AppendBaselineFile(const std::string& path, const Baseline& b);
// Every baseline of the file (none if it does not exist); a bad line is an
// Invalid error naming PATH:LINE. source = "file PATH".
Result<std::vector<Baseline>> ReadBaselineFile(const std::string& path);

// lassi_baseline rows: replaces the baseline's rows (same name) in one transaction.
Status WriteBaselineToDb(MysqlConn& c, const Baseline& b);
// Every baseline in the table; source = "mysql lassi_baseline".
Result<std::vector<Baseline>> ReadBaselinesFromDb(MysqlConn& c);

// The named baseline (NotFound naming it and what exists), else the newest
// (by computed_at) with this window length (nullopt when there is none).
Result<std::optional<Baseline>> SelectBaseline(const std::vector<Baseline>& all, const std::string& name,
                                               int64_t window_ns);

}  // namespace iosonar::lassi
