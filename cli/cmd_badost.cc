// `iosonar bad-ost`: per-OST correlation between per-file performance and the
// OSTs each file is striped over (TOKIO's darshan_bad_ost), analysis-jobs/badost.
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "analysis-jobs/badost/badost.h"
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
    "\n"
    "Correlates per-file I/O performance (bytes / seconds) with the OSTs each file\n"
    "is striped over, one Pearson coefficient and two-sided p-value per OST (TOKIO's\n"
    "darshan_bad_ost). A strongly negative, significant coefficient names a slow OST.\n"
    "INPUT is a CSV with the columns file,bytes,seconds,osts (osts: '0;14;3' or\n"
    "'OST0000 OST000e') or JSON ([{\"file\",\"bytes\",\"seconds\",\"osts\":[...]}] or one\n"
    "object per line); - reads stdin. Rows without I/O time or that do not parse\n"
    "are reported on stderr with their line and set aside. With --output every OST\n"
    "tested goes out as an iosonar.result.bad_ost record.\n"
    "\n"
    "Exit status: 0 done, 1 an input could not be read, 2 usage error.\n"
    "\n"
    "options";
}  // namespace

int CmdBadOst(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string format = "table", output, job_id;
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
      ("job-id", po::value(&job_id)->value_name("ID"), "job.id of the records (the job the files belong to)");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&inputs));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (int rc = ParseCommandLine("bad-ost", argc, argv, all, &vm, &pos, &desc); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("bad-ost", m); };
  if (inputs.empty()) return usage_error("missing INPUT");
  if (format != "table" && format != "json") return usage_error("--format must be table or json");
  if (!(filt.p_threshold > 0 && filt.p_threshold <= 1)) return usage_error("-p must be in (0, 1]");
  if (!(filt.c_threshold >= 0 && filt.c_threshold < 1)) return usage_error("-c must be in [0, 1)");

  analysis::BadOstInput in;
  for (const auto& path : inputs) {
    std::string text;
    if (path == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::ifstream f(path, std::ios::binary);
      if (!f) {
        std::cerr << "iosonar bad-ost: cannot read " << path << "\n";
        return 1;
      }
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
