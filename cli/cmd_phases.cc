// `iosonar phases`: a job's I/O phases from its 1 s bandwidth series,
// denoised with a discrete wavelet transform (analysis-jobs/phases).
#include <boost/program_options.hpp>
#include <iostream>
#include <string>

#include "redis-cache/cache.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/base/host.h"
#include "core/store/es_store.h"
#include "core/jobdb/jobdb.h"
#include "core/store/store.h"
#include "analysis-jobs/phases/phases.h"
#include "cli/publish.h"
#include "core/base/terminal.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {
constexpr const char* kUsage =
    "usage: iosonar phases JOB_ID --store DIR|URL [--wavelet haar|db4] [--level N] [--threshold X]\n"
    "                      [--mode periodization|symmetric] [--format table|json]\n"
    "                      [--redis URL] [--mysql URL [--cluster NAME]] [--output OUT]\n"
    "\n"
    "Finds a job's I/O phases: the bursts in its per-second read and write bandwidth\n"
    "(io.bytes of its iosonar.trace records per 1 s bucket), after denoising the\n"
    "series with a discrete wavelet transform (PyWavelets' conventions). Each phase:\n"
    "start, duration, bytes, direction, mean and peak bandwidth.\n"
    "\n"
    "With --output the phases go out as iosonar.result.phase records (tcp://HOST:PORT,\n"
    "an Elasticsearch URL, a file or -). "
    "With --redis the JSON is cached under iosonar:job:JOB_ID:phases; with --mysql the\n"
    "phases replace the job's rows of job_phases (a failure is an error when the flag\n"
    "was given, a warning when the URL came from the environment or config file).\n"
    "\n"
    "Exit status: 0 done, 1 the job has no read/write records or the store/Redis/MySQL failed, 2 usage error.\n"
    "\n"
    "options";
}  // namespace

int CmdPhases(int argc, char** argv) {
  std::string job_id, store_dir, format = "table", wavelet = "haar", mode = "periodization";
  std::string redis_flag, mysql_flag, cluster, config, output;
  int level = -1, merge_gap = 0;
  double threshold = -1, active_frac = 0.02, bucket_s = 1;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")                                                     //
      ("store", po::value(&store_dir)->value_name("DIR|URL"), "the record store (directory or Elasticsearch URL)")  //
      ("wavelet", po::value(&wavelet)->default_value("haar")->value_name("W"), "haar or db4 (PyWavelets' db4, 8 taps)")  //
      ("mode", po::value(&mode)->default_value("periodization")->value_name("M"),
       "signal extension: periodization or symmetric (as PyWavelets)")  //
      ("level", po::value(&level)->value_name("N"), "decomposition levels (default the deepest useful, clamped to 1..3)")  //
      ("threshold", po::value(&threshold)->value_name("X"),
       "detail threshold in bytes per bucket (default: the universal threshold sigma*sqrt(2 ln n))")  //
      ("hard", "hard instead of soft thresholding")                                                 //
      ("active-frac", po::value(&active_frac)->default_value(0.02, "0.02")->value_name("F"),
       "a bucket is in a phase when its denoised value exceeds F times the largest")  //
      ("merge-gap", po::value(&merge_gap)->default_value(0)->value_name("K"),
       "merge phases separated by fewer than K empty buckets")  //
      ("bucket", po::value(&bucket_s)->default_value(1, "1")->value_name("S"), "bucket width in seconds")  //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "table or json")  //
      ("redis", po::value(&redis_flag)->value_name("URL"), "cache the phases JSON in Redis")       //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "job database: write the phases to job_phases")  //
      ("cluster", po::value(&cluster)->value_name("NAME"), "the job's cluster in the job database")  //
      ("output", po::value(&output)->value_name("OUT"), "also send iosonar.result.phase records to OUT")  //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseJobCommandLine("phases", argc, argv, desc, &job_id, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("phases", m); };
  if (store_dir.empty()) return usage_error("missing --store DIR");
  if (format != "table" && format != "json") return usage_error("--format must be table or json, not '" + format + "'");
  analysis::PhaseOptions opt;
  auto w = analysis::ParseWavelet(wavelet);
  if (!w.ok()) return usage_error("--wavelet: " + w.status().message());
  opt.wavelet = *w;
  auto m = analysis::ParseExtensionMode(mode);
  if (!m.ok()) return usage_error("--mode: " + m.status().message());
  opt.mode = *m;
  if (vm.count("level")) {
    if (level < 0 || level > 30) return usage_error("--level must be 0..30");
    opt.level = level;
  }
  if (vm.count("threshold")) {
    if (!(threshold >= 0)) return usage_error("--threshold must be >= 0");
    opt.threshold = threshold;
  }
  opt.hard = vm.count("hard") > 0;
  if (!(active_frac >= 0 && active_frac < 1)) return usage_error("--active-frac must be in [0, 1)");
  opt.active_frac = active_frac;
  if (merge_gap < 0) return usage_error("--merge-gap must be >= 0");
  opt.merge_gap = merge_gap;
  if (!(bucket_s >= 0.001 && bucket_s <= 86400)) return usage_error("--bucket must be 0.001..86400 s");
  opt.bucket_ns = static_cast<int64_t>(bucket_s * 1e9);

  auto store = OpenStoreAt(store_dir);
  if (!store.ok()) return CommandError("phases", 1, store.status().ToString());
  auto jp = analysis::PhasesForJob(*store.value(), job_id, opt);
  if (!jp.ok()) return CommandError("phases", 1, jp.status().ToString());
  if (format == "json") std::cout << analysis::PhasesToJson(*jp, true) << "\n";
  else std::cout << TerminalSafe(analysis::PhasesToTable(*jp));

  Publisher pub("phases", {output, redis_flag, mysql_flag, config});
  if (pub.has_output()) pub.Send(analysis::PhasesToRecords(*jp, HostName()));
  pub.Cache(cache::JobPhasesKey(job_id), analysis::PhasesToJson(*jp));
  pub.WithJob(job_id, cluster, [&](JobDb& db, const JobRecord& job) {
    return analysis::WritePhasesToDb(db.conn(), job.cluster, job.job_id, *jp);
  });
  return pub.rc();
}

}  // namespace iosonar::cli
