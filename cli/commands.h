// The subcommands of the `iosonar` front command. Each takes the arguments
// after its name (argv[0] is the subcommand) and returns the exit code.
#pragma once
#include <string>

#include "core/base/status.h"

namespace iosonar::anomaly {
struct JobSource;
}

namespace iosonar::cli {

int CmdCollect(int argc, char** argv);     // cmd_collect.cc
int CmdJobSummary(int argc, char** argv);  // cmd_job_summary.cc
int CmdRun(int argc, char** argv);         // cmd_run.cc
int CmdTrace(int argc, char** argv);       // cmd_run.cc
int CmdSchema(int argc, char** argv);      // cmd_misc.cc
int CmdStoreExport(int argc, char** argv); // cmd_misc.cc
int CmdStoreCheck(int argc, char** argv);  // cmd_store_check.cc
int CmdStoreCompact(int argc, char** argv);  // cmd_store_check.cc
// Elasticsearch
int CmdEsTemplates(int argc, char** argv);  // cmd_es.cc
int CmdEsSetup(int argc, char** argv);      // cmd_es.cc
// the job database and Slurm
int CmdDbMigrate(int argc, char** argv);   // cmd_db.cc
int CmdHostlist(int argc, char** argv);    // cmd_db.cc
int CmdScheduler(int argc, char** argv);   // cmd_scheduler.cc
// simulator, cross-layer view, second-pass compression
int CmdSimulate(int argc, char** argv);    // cmd_simulate.cc
int CmdXlayer(int argc, char** argv);      // cmd_xlayer.cc
int CmdCompress2(int argc, char** argv);   // cmd_xlayer.cc
// per-job analyses
int CmdPhases(int argc, char** argv);      // cmd_phases.cc
int CmdAnomaly(int argc, char** argv);     // cmd_anomaly.cc
int CmdScreen(int argc, char** argv);      // cmd_screen.cc
int CmdAnalyze(int argc, char** argv);     // cmd_analyze.cc
int CmdBadOst(int argc, char** argv);      // cmd_badost.cc
int CmdSummarizeJob(int argc, char** argv);  // cmd_summarize.cc
int CmdScoreboard(int argc, char** argv);    // cmd_summarize.cc
// LASSi, probe slowdown, the report, the LMT importer
int CmdLassi(int argc, char** argv);       // cmd_lassi.cc
int CmdSlowdown(int argc, char** argv);    // cmd_lassi.cc
int CmdReport(int argc, char** argv);      // cmd_lassi.cc
int CmdLmtImport(int argc, char** argv);   // cmd_lassi.cc
int CmdDarshanImport(int argc, char** argv);  // cmd_darshan.cc
// the web pages and JSON API
int CmdServe(int argc, char** argv);       // cmd_serve.cc

// Service URL from flag, else environment variable, else config file key
// ("" if none). Config file: --config FILE, $IOSONAR_CONFIG, else
// ~/.config/iosonar/iosonar.conf; lines "key = value", '#' comments.
std::string ResolveSetting(const std::string& flag_value, const char* env_name, const std::string& config_key,
                           const std::string& config_path = "");

// Where the tracer library is: $IOSONAR_TRACE_LIB, beside the binary, or the install lib dir.
std::string FindTracerLib();

// A whole file as text (Io "cannot read PATH"), and text written over a file
// (Io "cannot write PATH"): the commands' input and --json/--html/... files.
Result<std::string> ReadTextFile(const std::string& path);
Status WriteTextFile(const std::string& path, const std::string& text);

// anomaly and analyze: --apps FILE (job id<TAB>command) and --maps FILE (the
// node -> forwarding node map) into src; errors name the option (cmd_anomaly.cc).
Status LoadJobSourceFiles(const std::string& apps, const std::string& maps, anomaly::JobSource* src);

}  // namespace iosonar::cli
