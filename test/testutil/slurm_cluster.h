// A real one-node Slurm for tests, all under a TempDir and all on private
// ports: munged with a generated key and its own socket; optionally slurmdbd
// (accounting in a MariaDB the test started, so sacct works); slurmctld and
// slurmd in the foreground as Child processes, with a generated slurm.conf.
// Each daemon is polled until it answers (no sleeps) and stopped by pid on
// destruction (slurmd, slurmctld, slurmdbd, munged). Runs as root.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test/testutil/testutil.h"

namespace iosonar::test {

struct SlurmClusterOptions {
  std::string cluster_name = "iosonartest";
  int cpus = 6;                     // announced CPUs (SlurmdParameters=config_overrides)
  std::string prolog_slurmctld;     // PrologSlurmctld= script ("" = none)
  std::string epilog_slurmctld;     // EpilogSlurmctld= script
  std::string plugstack;            // PlugStackConfig= file (SPANK plugins; "" = Slurm's default)
  // Accounting: slurmdbd storing into MariaDB at 127.0.0.1:mysql_port as root ("" host = no accounting).
  std::string mysql_host;
  int mysql_port = 0;
};

// True if munged, slurmctld, slurmd and sbatch are installed (and slurmdbd + sacct if accounting is wanted).
bool HaveSlurm(bool accounting);
// The short host name slurmd registers as.
std::string ShortHostname();

class SlurmCluster {
 public:
  explicit SlurmCluster(const SlurmClusterOptions& o);  // FAILs the test if a daemon does not come up
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& conf() const { return conf_; }  // the SLURM_CONF path
  const std::string& dir() const { return dir_.path(); }
  const std::string& node() const { return node_; }
  const std::string& cluster() const { return opt_.cluster_name; }
  // Runs a Slurm client command (sbatch, squeue, sacct, ...) with SLURM_CONF set.
  RunResult Cmd(const std::vector<std::string>& argv, std::map<std::string, std::string> env = {}) const;
  // sbatch --parsable ARGS...; returns the job id (the array's id for arrays). REQUIREs success.
  std::string Submit(const std::vector<std::string>& args) const;
  // Polls squeue until none of the jobs is queued or running.
  bool WaitDone(const std::vector<std::string>& job_ids, int timeout_ms) const;
  std::string Logs() const;  // the daemons' log tails, for failure messages

 private:
  void StartDaemon(std::optional<Child>* slot, const std::vector<std::string>& argv, const std::string& log,
                   const std::function<bool()>& ready, const char* what);
  SlurmClusterOptions opt_;
  TempDir dir_;
  std::string conf_, node_, munge_socket_;
  std::optional<Child> munged_, slurmdbd_, slurmctld_, slurmd_;
};

}  // namespace iosonar::test
