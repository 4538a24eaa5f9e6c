// iosonar store-check: verify an embedded store block by block, and move
// damaged blocks aside.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"
#include "core/base/timeutil.h"
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
  if (dir.empty()) return CommandError("store-check", 2, "--store DIR is required");
  if (format != "table" && format != "json")
    return CommandError("store-check", 2, "--format must be table or json, not '", format, "'");
  CheckReport r;
  if (Status st = CheckSqliteStore(dir, repair, &r); !st.ok()) return CommandError("store-check", 1, st.message());
  const bool left = r.damaged.size() > r.repaired;
  if (format == "json") {
    std::string out;
    JsonWriter w(&out, 2);
    w.BeginObject();
    KvAll(w, "store", dir, "blocks", r.blocks, "records", r.records, "unverified_blocks", r.unverified,
          "repaired", r.repaired);
    w.Key("damaged");
    w.BeginArray();
    for (const auto& d : r.damaged) {
      w.BeginObject();
      w.Kv("block", d.id);
      w.Kv("dataset", d.dataset);
      if (!d.job.empty()) w.Kv("job", d.job);
      KvAll(w, "ts_min_ns", d.ts_min, "ts_max_ns", d.ts_max, "records", d.records, "reason", d.reason);
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

int CmdStoreCompact(int argc, char** argv) {
  po::options_description desc(
      "usage: iosonar store-compact --store DIR [--job ID] [--before TIME | --older-than HOURS] [--dry-run]\n"
      "                             [--vacuum] [--format table|json]\n\n"
      "Beacon's second pass applied to an embedded store: each first-pass iosonar.trace block chosen\n"
      "is rewritten in the merged form (a process table, a group table of what many ranks did alike,\n"
      "per record only what differs), losslessly: it reads back as exactly the block it was, so\n"
      "every analysis gives the same output. Crash-safe (merged, checked, checksummed and swapped a\n"
      "chunk a transaction); run it again to finish. --vacuum gives the freed pages back to the file\n"
      "system. Exit status: 0 done, 1 the store cannot be read or written, 2 on bad options.\n\noptions");
  std::string dir, job, before, format = "table";
  double older_hours = -1;
  bool dry_run = false, vacuum = false;
  size_t per_txn = CompactOptions{}.blocks_per_transaction;
  desc.add_options()("help,h", "show this help")("store", po::value(&dir), "store directory (holding store.db)")(
      "job", po::value(&job), "only this job's trace blocks")(
      "before", po::value(&before), "only blocks whose records all precede this ISO 8601 time")(
      "older-than", po::value(&older_hours), "only blocks whose records are all older than this many hours")(
      "dry-run", po::bool_switch(&dry_run), "measure what would be saved, write nothing")(
      "vacuum", po::bool_switch(&vacuum), "VACUUM afterwards (the file shrinks; needs its size again free)")(
      "blocks-per-transaction", po::value(&per_txn)->default_value(per_txn), "blocks merged and swapped in one transaction")(
      "format", po::value(&format)->default_value("table"), "table or json");
  po::variables_map vm;
  if (int rc = ParseCommandLine("store-compact", argc, argv, desc, &vm); rc >= 0) return rc;
  if (dir.empty()) return CommandError("store-compact", 2, "--store DIR is required");
  if (format != "table" && format != "json")
    return CommandError("store-compact", 2, "--format must be table or json, not '", format, "'");
  CompactOptions o;
  o.job = job;
  o.dry_run = dry_run;
  o.vacuum = vacuum;
  if (per_txn == 0) return CommandError("store-compact", 2, "--blocks-per-transaction must be at least 1");
  o.blocks_per_transaction = per_txn;
  if (!before.empty() && vm.count("older-than"))
    return CommandError("store-compact", 2, "give --before or --older-than, not both");
  if (!before.empty()) {
    auto t = ParseIso8601(before);
    if (!t) return CommandError("store-compact", 2, "--before '", before, "' is not an ISO 8601 time");
    o.before_ns = *t;
  }
  if (vm.count("older-than")) {
    if (!(older_hours >= 0) || older_hours > 1e6)
      return CommandError("store-compact", 2, "--older-than must be a number of hours >= 0, not ", older_hours);
    o.before_ns = NowNs() - static_cast<int64_t>(older_hours * 3600e9);
  }
  CompactReport r;
  if (Status st = CompactSqliteStore(dir, o, &r); !st.ok()) return CommandError("store-compact", 1, st.message());
  auto per = [](uint64_t bytes, uint64_t recs) { return recs ? static_cast<double>(bytes) / static_cast<double>(recs) : 0.0; };
  const double ratio = r.bytes_after ? static_cast<double>(r.bytes_before) / static_cast<double>(r.bytes_after) : 0;
  if (format == "json") {
    std::string out;
    JsonWriter w(&out, 2);
    w.BeginObject();
    KvAll(w, "store", dir, "dry_run", dry_run, "blocks", r.blocks, "records", r.records, "merged_blocks", r.merged,
          "merged_records", r.merged_records, "already_merged", r.already, "kept_blocks", r.kept);
    if (!r.kept_why.empty()) w.Kv("kept_why", r.kept_why);
    KvAll(w, "damaged_blocks", r.damaged, "processes", r.procs, "groups", r.groups, "rank_patterns", r.rank_patterns,
          "bytes_before", r.bytes_before, "bytes_after", r.bytes_after,
          "bytes_per_record_before", per(r.bytes_before, r.records),
          "bytes_per_record_after", per(r.bytes_after, r.records), "ratio", ratio,
          "file_bytes_before", r.file_bytes_before, "file_bytes_after", r.file_bytes_after);
    w.EndObject();
    std::cout << out << "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof line, "%s: %llu trace blocks, %llu records: %llu merged%s, %llu already, %llu kept, %llu damaged\n",
                  dir.c_str(), static_cast<unsigned long long>(r.blocks), static_cast<unsigned long long>(r.records),
                  static_cast<unsigned long long>(r.merged), dry_run ? " (dry run: not written)" : "",
                  static_cast<unsigned long long>(r.already), static_cast<unsigned long long>(r.kept),
                  static_cast<unsigned long long>(r.damaged));
    std::cout << line;
    std::snprintf(line, sizeof line, "trace bytes: %llu -> %llu (%.2fx), %.1f -> %.1f bytes a record; store.db: %lld -> %lld bytes\n",
                  static_cast<unsigned long long>(r.bytes_before), static_cast<unsigned long long>(r.bytes_after), ratio,
                  per(r.bytes_before, r.records), per(r.bytes_after, r.records), static_cast<long long>(r.file_bytes_before),
                  static_cast<long long>(r.file_bytes_after));
    std::cout << line;
    if (!r.kept_why.empty()) std::cout << "first block kept: " << r.kept_why << "\n";
    if (r.damaged) std::cout << "damaged blocks were left as they are: run `iosonar store-check --repair`\n";
  }
  return 0;
}

}  // namespace iosonar::cli
