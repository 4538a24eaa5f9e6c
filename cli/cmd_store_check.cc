// iosonar store-check: verify an embedded store block by block, and move
// damaged blocks aside.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/base/json.h"
#include "core/store/sqlite_store.h"

namespace po = boost::program_options;

namespace iosonar::cli {

int CmdStoreCheck(int argc, char** argv) {
  po::options_description desc(
      "usage: iosonar store-check --store DIR [--repair] [--format table|json]\n\n"
      "Reads every block of an embedded store: its CRC-32C checksum, then a full decode.\n"
      "Damaged blocks are listed with their dataset, job and time range (what is missing).\n"
      "--repair moves them into the table damaged_blocks of the same store.db, so later reads\n"
      "no longer meet them. Exit status: 0 when no damaged block is left in the store, 1 when\n"
      "some are (or the store cannot be read), 2 on bad options.\n\noptions");
  std::string dir, format = "table";
  bool repair = false;
  desc.add_options()("help,h", "show this help")("store", po::value(&dir), "store directory (holding store.db)")(
      "repair", po::bool_switch(&repair), "move damaged blocks to damaged_blocks")(
      "format", po::value(&format)->default_value("table"), "table or json");
  po::variables_map vm;
  if (int rc = ParseCommandLine("store-check", argc, argv, desc, &vm); rc >= 0) return rc;
  if (dir.empty()) {
    std::cerr << "iosonar store-check: --store DIR is required\n";
    return 2;
  }
  if (format != "table" && format != "json") {
    std::cerr << "iosonar store-check: --format must be table or json, not '" << format << "'\n";
    return 2;
  }
  CheckReport r;
  if (Status st = CheckSqliteStore(dir, repair, &r); !st.ok()) {
    std::cerr << "iosonar store-check: " << st.message() << "\n";
    return 1;
  }
  const bool left = r.damaged.size() > r.repaired;
  if (format == "json") {
    std::string out;
    JsonWriter w(&out, 2);
    w.BeginObject();
    w.Kv("store", dir);
    w.Kv("blocks", r.blocks);
    w.Kv("records", r.records);
    w.Kv("unverified_blocks", r.unverified);
    w.Kv("repaired", r.repaired);
    w.Key("damaged");
    w.BeginArray();
    for (const auto& d : r.damaged) {
      w.BeginObject();
      w.Kv("block", d.id);
      w.Kv("dataset", d.dataset);
      if (!d.job.empty()) w.Kv("job", d.job);
      w.Kv("ts_min_ns", d.ts_min);
      w.Kv("ts_max_ns", d.ts_max);
      w.Kv("records", d.records);
      w.Kv("reason", d.reason);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::cout << out << "\n";
  } else {
    std::cout << dir << ": " << r.blocks << " blocks, " << r.records << " records read";
    if (r.unverified) std::cout << " (" << r.unverified << " blocks from before checksums, not verified)";
    std::cout << "\n";
    for (const auto& d : r.damaged) std::cout << "  " << d.Describe() << "\n";
    if (r.damaged.empty()) std::cout << "no damaged block\n";
    else if (repair) std::cout << r.repaired << " damaged block(s) moved to damaged_blocks\n";
    else std::cout << r.damaged.size() << " damaged block(s); `--repair` moves them aside\n";
  }
  return left ? 1 : 0;
}

}  // namespace iosonar::cli
