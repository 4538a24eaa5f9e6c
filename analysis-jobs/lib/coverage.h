// TOKIO's coverage factor (tokio-clusterstor.txt; pytokio's summarize_job):
// the share of a file system's traffic over a job's window that the job's own
// I/O *on that file system* accounts for — bytes, opens, stats. One
// implementation for `summarize-job` (iosonar_coverage_factor_*) and `xlayer`
// (coverage), so a job has one coverage factor whichever command shows it.
//
// Which of the job's files are on the file system `fs`, first rule that applies:
//  - under a listed mount (iosonar.health: mount point -> file system; the
//    longest mount point the path is under): on fs iff that mount is fs's;
//  - with a known Lustre layout on fs (lfs getstripe / the job database's
//    file_layouts): on fs;
//  - node-local (/tmp, /var/tmp, /dev/shm, /dev, /run, /proc, /sys): not;
//  - otherwise (under no known mount): counted as on fs, and basis() says so.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace iosonar::analysis {

class JobOnFs {
 public:
  // mounts: mount point -> file system (may be empty); fs: the file system
  // ("" = any listed Lustre mount); layout_paths: paths with a known layout on fs.
  JobOnFs(std::vector<std::pair<std::string, std::string>> mounts, std::string fs,
          std::vector<std::string> layout_paths = {});
  bool OnFs(std::string_view path) const;
  // One trace run (or a file's totals): its data bytes, opens and stats.
  void Add(std::string_view path, double bytes, double opens, double stats);
  double bytes() const { return on_.bytes; }
  double opens() const { return on_.opens; }
  double stats() const { return on_.stats; }
  double bytes_elsewhere() const { return off_.bytes; }  // the job's bytes not on fs
  // How files were placed, for people (what decided, and whether any were assumed).
  std::string basis() const;

 private:
  enum Where { kOnByMount, kOnByLayout, kOff, kAssumed };
  Where Place(std::string_view path) const;
  double assumed_bytes_ = 0;
  struct Sums {
    double bytes = 0, opens = 0, stats = 0;
  };
  std::vector<std::pair<std::string, std::string>> mounts_;
  std::string fs_;
  std::vector<std::string> layouts_;  // sorted
  mutable std::map<std::string, Where, std::less<>> memo_;
  Sums on_, off_;
};

struct CoverageFactors {
  std::optional<double> bytes, opens, stats;  // nullopt: the file system's count is 0 or unknown
};
// job / file system, each where the file system's count is > 0.
CoverageFactors Coverage(const JobOnFs& job, double fs_bytes, double fs_opens, double fs_stats);

}  // namespace iosonar::analysis
