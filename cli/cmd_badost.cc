// `iosonar bad-ost`: per-OST correlation between per-file performance and the
// OSTs each file is striped over (TOKIO's darshan_bad_ost), analysis-jobs/badost.
#include <boost/program_options.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "analysis-jobs/badost/badost.h"
#include "analysis-jobs/xlayer/xlayer.h"
#include "core/jobdb/jobdb.h"
#include "core/store/es_store.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/base/host.h"
#include "core/base/timeutil.h"
#include "cli/publish.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {
constexpr const char* kUsage =
    "usage: iosonar bad-ost INPUT... [-p PVALUE] [-c CORR] [-C WARN] [--format table|json]\n"
    "                       [--output OUT [--job-id ID]]\n"
    "       iosonar bad-ost --job JOB --store DIR|URL (--getstripe FILE | --mysql URL [--cluster NAME])\n"
    "                       [--table FILE] [-p PVALUE] [-c CORR] [-C WARN] [--format table|json] [--output OUT]\n"
    "\n"
    "Correlates per-file I/O performance (bytes / seconds) with the OSTs each file\n"
    "is striped over, one Pearson coefficient and two-sided p-value per OST (TOKIO's\n"
    "darshan_bad_ost). A strongly negative, significant coefficient names a slow OST.\n"
    "INPUT is a CSV with the columns file,bytes,seconds,osts (osts: '0;14;3' or\n"
    "'OST0000 OST000e') or JSON ([{\"file\",\"bytes\",\"seconds\",\"osts\":[...]}] or one\n"
    "object per line); - reads stdin. Rows without I/O time or that do not parse\n"
    "are reported on stderr with their line and set aside. With --job and --store the\n"
    "table is built from the job's trace records (per file path: bytes read + written,\n"
    "seconds inside those calls) and the files' layouts (`lfs getstripe` output, or the\n"
    "job database's file_layouts); --table FILE keeps it as CSV. With --output every OST\n"
    "tested goes out as an iosonar.result.bad_ost record.\n"
    "\n"
    "Exit status: 0 done, 1 an input could not be read, 2 usage error.\n"
    "\n"
    "options";
}  // namespace

int CmdBadOst(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string format = "table", output, job_id, job, store_dir, getstripe, mysql, cluster, table;
  analysis::BadOstFilter filt;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")  //
      ("p-threshold,p", po::value(&filt.p_threshold)->default_value(0.05, "0.05")->value_name("P"),
       "show OSTs whose p-value is below P")  //
      ("c-threshold,c", po::value(&filt.c_threshold)->default_value(0.0, "0")->value_name("C"),
       "... and whose |coefficient| is above C")  //
      ("c-warning,C", po::value(&filt.c_warning)->default_value(0.5, "0.5")->value_name("W"),
       "flag OSTs whose |coefficient| is above W (unhealthy when negative)")  //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "table or json")  //
      ("output", po::value(&output)->value_name("OUT"), "also send iosonar.result.bad_ost records to OUT")  //
      ("job-id", po::value(&job_id)->value_name("ID"), "job.id of the records (the job the files belong to)")  //
      ("job", po::value(&job)->value_name("JOB"), "build the per-file table of this job from --store")  //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "record store with the job's iosonar.trace records")  //
      ("getstripe", po::value(&getstripe)->value_name("FILE"), "`lfs getstripe` output of the job's files (layouts)")  //
      ("mysql", po::value(&mysql)->value_name("URL"), "job database: the job's file_layouts")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "cluster of the job in the job database")  //
      ("table", po::value(&table)->value_name("FILE"), "write the per-file table built from the store as CSV");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&inputs));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (int rc = ParseCommandLine("bad-ost", argc, argv, all, &vm, &pos, &desc); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("bad-ost", m); };
  if (!job.empty() || !store_dir.empty()) {
    if (job.empty() || store_dir.empty()) return usage_error("--job and --store go together");
    if (!inputs.empty()) return usage_error("give INPUT files or --job/--store, not both");
    if (getstripe.empty() == mysql.empty()) return usage_error("give the layouts: --getstripe FILE or --mysql URL");
  } else if (inputs.empty()) {
    return usage_error("missing INPUT (or --job JOB --store DIR)");
  }
  if (format != "table" && format != "json") return usage_error("--format must be table or json");
  if (!(filt.p_threshold > 0 && filt.p_threshold <= 1)) return usage_error("-p must be in (0, 1]");
  if (!(filt.c_threshold >= 0 && filt.c_threshold < 1)) return usage_error("-c must be in [0, 1)");

  analysis::BadOstInput in;
  if (!job.empty()) {
    std::map<std::string, std::vector<int64_t>> layouts;
    if (!getstripe.empty()) {
      std::ifstream f(getstripe, std::ios::binary);
      if (!f) return CommandError("bad-ost", 1, "cannot read ", getstripe);
      std::ostringstream ss;
      ss << f.rdbuf();
      std::vector<xlayer::ParseIssue> issues;
      for (const auto& l : xlayer::ParseGetstripe(ss.str(), &issues))
        layouts[l.path].assign(l.osts.begin(), l.osts.end());
      for (const auto& i : issues) std::cerr << "iosonar bad-ost: " << getstripe << ":" << i.line << ": " << i.what << "\n";
    } else {
      char* end = nullptr;
      const unsigned long long id = std::strtoull(job.c_str(), &end, 10);
      if (job.empty() || *end != '\0') return usage_error("--job must be a numeric job id with --mysql, got '" + job + "'");
      auto db = JobDb::Open(mysql);
      if (!db.ok()) return CommandError("bad-ost", 1, "job database: ", db.status().ToString());
      std::string cl = cluster;
      if (cl.empty()) {
        auto cls = (*db)->ClustersOf(id);
        if (cls.ok() && cls->size() == 1) cl = cls->front();
      }
      auto rows = (*db)->FileLayouts(cl, id);
      if (!rows.ok()) return CommandError("bad-ost", 1, "file_layouts of job ", job, ": ", rows.status().ToString());
      for (const auto& r : *rows) layouts[r.path].assign(r.osts.begin(), r.osts.end());
    }
    auto store = OpenStoreAt(store_dir);
    if (!store.ok()) return CommandError("bad-ost", 1, store.status().ToString());
    uint64_t no_layout = 0;
    if (Status st = analysis::FilesFromStore(*store.value(), job, layouts, &in, &no_layout); !st.ok())
      return CommandError("bad-ost", 1, st.ToString());
    if (no_layout)
      std::cerr << "iosonar bad-ost: " << no_layout << " file(s) of job " << job << " have no layout and are left out\n";
    if (job_id.empty()) job_id = job;
    if (!table.empty()) {
      std::ofstream t(table, std::ios::binary | std::ios::trunc);
      t << analysis::BadOstInputToCsv(in);
      if (!t) return CommandError("bad-ost", 1, "cannot write ", table);
    }
  }
  for (const auto& path : inputs) {
    std::string text;
    if (path == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::ifstream f(path, std::ios::binary);
      if (!f) return CommandError("bad-ost", 1, "cannot read ", path);
      std::ostringstream ss;
      ss << f.rdbuf();
      text = ss.str();
    }
    analysis::ParseBadOstAuto(text, path == "-" ? "stdin" : path, &in);
  }
  for (const auto& e : in.errors) std::cerr << "iosonar bad-ost: " << e << "\n";
  const auto res = analysis::CorrelateOsts(in.files);
  const std::string json = analysis::BadOstToJson(res, filt, in);
  if (format == "json") std::cout << json << "\n";
  else std::cout << TerminalSafe(analysis::BadOstToTable(res, filt, in));
  Publisher pub("bad-ost", {output, "", "", ""});
  if (pub.has_output())
    pub.Send(analysis::BadOstToRecords(res, filt, in, HostName(), job_id, NowNs()));
  return pub.rc();
}

}  // namespace iosonar::cli
