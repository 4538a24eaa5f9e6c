// iosonar: one front command, git style. `iosonar SUBCOMMAND --help`.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/config_check.h"
#include "exporters/framework/config_check.h"
#include "exporters/framework/exporter.h"

namespace {

struct Subcommand {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
};

constexpr Subcommand kCommands[] = {
    {"run", iosonar::cli::CmdRun,
     "run a program under the tracer with an embedded collector and print its I/O diagnosis"},
    {"trace", iosonar::cli::CmdTrace, "run a program under the tracer, sending records to --output"},
    {"collect", iosonar::cli::CmdCollect,
     "receive JSON lines on TCP (or from a file), validate, store in SQLite, push to Redis"},
    {"job-summary", iosonar::cli::CmdJobSummary, "per-job I/O summary and I/O mode from the store"},
    {"schema", iosonar::cli::CmdSchema, "print the record schema (JSON or a Markdown table)"},
    {"store-export", iosonar::cli::CmdStoreExport, "print an embedded store's records as JSON lines"},
    {"store-check", iosonar::cli::CmdStoreCheck, "verify an embedded store block by block (checksums); --repair moves damaged blocks aside"},
    {"store-compact", iosonar::cli::CmdStoreCompact, "rewrite old trace blocks in the merged form (Beacon's second pass), losslessly"},
    // Elasticsearch
    {"es-templates", iosonar::cli::CmdEsTemplates, "write the Elasticsearch templates and ILM policies generated from the schema"},
    {"es-setup", iosonar::cli::CmdEsSetup, "install the Elasticsearch templates and ILM policies (idempotent)"},
    // the MySQL job database and the Slurm connector
    {"db-migrate", iosonar::cli::CmdDbMigrate, "create or upgrade the MySQL job database schema"},
    {"scheduler", iosonar::cli::CmdScheduler, "Slurm connector: prolog|epilog|poll|replay into the job database"},
    {"hostlist", iosonar::cli::CmdHostlist, "expand or compress a Slurm host list"},
    // simulator, cross-layer view, second-pass compression
    {"simulate", iosonar::cli::CmdSimulate, "simulate a cluster's multi-layer records (deterministic for a seed)"},
    {"xlayer", iosonar::cli::CmdXlayer, "cross-layer view of a job: clients, forwarding nodes, OSTs, MDTs, coverage"},
    {"compress2", iosonar::cli::CmdCompress2, "second-pass inter-node compression of a job's trace (ratio, round trip)"},
    // per-job analyses
    {"phases", iosonar::cli::CmdPhases, "a job's I/O phases (bursts) found with a wavelet transform"},
    {"anomaly", iosonar::cli::CmdAnomaly, "a job's I/O phases against its earlier runs (DBSCAN), neighbours, lagging servers"},
    {"screen", iosonar::cli::CmdScreen, "hourly screening: OSTs/forwarding nodes under a fraction of their peak for long (Beacon)"},
    {"analyze", iosonar::cli::CmdAnalyze, "the analysis worker: queued finished jobs -> summary, phases, anomaly; hourly screening"},
    {"bad-ost", iosonar::cli::CmdBadOst, "per-OST correlation of file performance with striping (TOKIO's darshan_bad_ost)"},
    {"summarize-job", iosonar::cli::CmdSummarizeJob, "one row per job with TOKIO's summarize_job columns (CSV or JSON)"},
    {"scoreboard", iosonar::cli::CmdScoreboard, "top users and applications by bytes, ops and metadata ops"},
    // LASSi, probe slowdown, the helpdesk report
    {"lassi", iosonar::cli::CmdLassi, "LASSi risk and ops metrics per file system, application, job and window"},
    {"slowdown", iosonar::cli::CmdSlowdown, "probe latency statistics and slowdown factors per fs, op and interval"},
    {"report", iosonar::cli::CmdReport, "the daily helpdesk report: self-contained HTML, text and JSON"},
    {"lmt-import", iosonar::cli::CmdLmtImport, "turn an LMT database (sqlite) into iosonar.oss/mds records"},
    {"darshan-import", iosonar::cli::CmdDarshanImport, "import Darshan logs (3.10-3.41: counters, DXT, job) into the store"},
    // the web pages and JSON API
    {"serve", iosonar::cli::CmdServe, "per-job web pages and JSON API; each user sees only their own jobs"},
};

// `iosonar config check`: a table named after one of the commands above is
// checked by that command's own option parser (cli/cmd_misc.cc).
int CheckCommandTable(const std::string& table, const std::string& path, std::string* errors) {
  for (const auto& c : kCommands) {
    if (table != c.name) continue;
    iosonar::cli::SetConfigCheckPath(path);
    std::string name = table;
    char* args[] = {name.data(), nullptr};
    // The command's parser checks its table and returns before running.
    int rc = c.fn(1, args);
    bool checked = iosonar::cli::ConfigCheckedByParser();
    *errors = iosonar::cli::ConfigCheckErrors();
    iosonar::cli::SetConfigCheckPath("");
    if (!checked && rc == 0 && errors->empty())
      *errors = path + ": [" + table + "]: iosonar " + table + " takes no options from the configuration file";
    else if (rc != 0 && errors->empty())
      *errors = path + ": [" + table + "]: iosonar " + table + " refused its table (exit " + std::to_string(rc) + ")";
    return 0;
  }
  return -1;
}

void Usage(FILE* f) {
  std::fprintf(f, "usage: iosonar SUBCOMMAND [OPTIONS] [ARGS]\n\nI/O monitoring for HPC jobs.\n\nsubcommands:\n");
  for (const auto& c : kCommands) std::fprintf(f, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(f, "  %-12s %s\n", "config", "config check [FILE]: check the configuration file (/etc/iosonar/iosonar.toml)");
  if (!iosonar::exporters::AllExporters().empty()) {
    std::fprintf(f, "\nexporters (sample a source every --interval, send records to --output):\n");
    for (const auto* d : iosonar::exporters::AllExporters()) std::fprintf(f, "  %-12s %s\n", d->name, d->summary);
  }
  std::fprintf(f, "\n`iosonar SUBCOMMAND --help` shows the options of one.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (int rc = iosonar::exporters::HandleCommonArgs(argc, argv, Usage, "iosonar 0.1.0"); rc >= 0) return rc;
  std::string_view sub = argv[1];
  if (sub == "config")
    return iosonar::exporters::RunConfigCheck(argc - 1, argv + 1, iosonar::exporters::AllExporters(), CheckCommandTable);
  for (const auto& c : kCommands)
    if (sub == c.name) return c.fn(argc - 1, argv + 1);
  for (const auto* d : iosonar::exporters::AllExporters())
    if (sub == d->name) return iosonar::exporters::RunExporter(*d, argc - 1, argv + 1);
  std::fprintf(stderr, "iosonar: unknown subcommand '%s'\n\n", argv[1]);
  Usage(stderr);
  return 2;
}
