// Secrets out of command lines (process.command_line, job.command).
#include <catch2/catch.hpp>
#include <string>

#include "core/base/redact.h"

using iosonar::RedactedCommandLine;

TEST_CASE("redact: password-like option values, variables and URL passwords become ***", "[redact]") {
  CHECK(RedactedCommandLine("mysqldump --password=hunter2 db") == "mysqldump --password=*** db");
  CHECK(RedactedCommandLine("tool --password hunter2 --verbose") == "tool --password *** --verbose");
  CHECK(RedactedCommandLine("tool --db-token=abcdef x") == "tool --db-token=*** x");
  CHECK(RedactedCommandLine("tool --API_KEY=abcdef") == "tool --API_KEY=***");
  CHECK(RedactedCommandLine("env PGPASSWORD=s3cr3t psql") == "env PGPASSWORD=*** psql");
  CHECK(RedactedCommandLine("env AWS_SECRET_ACCESS_KEY=xyz1234 aws s3 cp") == "env AWS_SECRET_ACCESS_KEY=*** aws s3 cp");
  CHECK(RedactedCommandLine("iosonar collect --redis redis://:hunter2@h:6379/0") ==
        "iosonar collect --redis redis://:***@h:6379/0");
  CHECK(RedactedCommandLine("curl https://bob:pw123456@es:9200/_bulk") == "curl https://bob:***@es:9200/_bulk");
  // Short values are starred out in place (no length to shrink).
  CHECK(RedactedCommandLine("t --password=ab") == "t --password=**");
  // A trailing --password with nothing after it is left as it is.
  CHECK(RedactedCommandLine("t --password") == "t --password");
}

TEST_CASE("redact: ordinary command lines are left byte for byte", "[redact]") {
  for (const char* s : {"ior -a POSIX -b 1g -t 1m -o /scratch/f", "python3 train.py --epochs 3 --lr=0.1",
                        "srun -n 8 ./a.out -p 5", "cp a b", "", "   ", "x=1 y=2 ./run",
                        "git clone https://github.com/x/y", "mpirun -np 4 ./app --mode=auth"}) {
    CHECK(RedactedCommandLine(s) == s);
  }
}

TEST_CASE("redact: in place, never longer, never past the buffer", "[redact]") {
  // Every prefix of a command line full of secrets: the result is no longer than the input.
  const std::string s = "a --password=xyzxyz --token t0k3n b://u:p4ss@h PASSWD=zz --secret";
  for (size_t n = 0; n <= s.size(); ++n) {
    std::string p = s.substr(0, n);
    const std::string r = RedactedCommandLine(p);
    CHECK(r.size() <= n);
    CHECK(r.find("xyzxyz") == std::string::npos);
  }
  CHECK(RedactedCommandLine(s) == "a --password=*** --token *** b://u:***@h PASSWD=** --secret");
}
