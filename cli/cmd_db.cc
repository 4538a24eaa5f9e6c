// `iosonar db-migrate` (the MySQL job database schema) and
// `iosonar hostlist expand|compress LIST` (Slurm host lists).
#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/jobdb/hostlist.h"
#include "core/jobdb/jobdb.h"

namespace po = boost::program_options;

namespace iosonar::cli {

int CmdDbMigrate(int argc, char** argv) {
  std::string mysql_flag, config;
  po::options_description desc(
      "usage: iosonar db-migrate [--mysql URL] [--status]\n\n"
      "Applies the job database migrations (mysql-schema/NNN_name.sql, compiled in) that\n"
      "the database has not recorded in schema_migrations yet, in order; running it again\n"
      "does nothing. URL: mysql://USER[:PASS]@HOST[:PORT]/DB[?socket=PATH][&create=1]\n"
      "(--mysql, else $IOSONAR_MYSQL, else `mysql = URL` in the config file).\n\n"
      "Exit status: 0 done, 1 the database failed, 2 usage error.\n\noptions");
  desc.add_options()("help,h", "show this help")                                             //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "the job database")               //
      ("status", "print the schema version and the newest known, change nothing")            //
      ("config", po::value(&config)->value_name("FILE"), "config file");
  po::variables_map vm;
  if (int rc = ParseCommandLine("db-migrate", argc, argv, desc, &vm); rc >= 0) return rc;
  std::string url = ResolveSetting(mysql_flag, "IOSONAR_MYSQL", "mysql", config);
  if (url.empty())
    return CommandError("db-migrate", 2, "no MySQL URL (--mysql, $IOSONAR_MYSQL or `mysql = URL` in the config file)");
  auto db = JobDb::Open(url);
  if (!db.ok()) return CommandError("db-migrate", 1, db.status().ToString());
  int newest = BuiltinMigrations().empty() ? 0 : BuiltinMigrations().back().version;
  if (!vm.count("status")) {
    int applied = 0;
    Status st = db.value()->Migrate(&applied);
    if (!st.ok()) return CommandError("db-migrate", 1, st.ToString());
    std::cout << "applied " << applied << " migration(s)\n";
  }
  auto v = db.value()->SchemaVersion();
  if (!v.ok()) return CommandError("db-migrate", 1, v.status().ToString());
  std::cout << "schema version " << v.value() << " (newest known " << newest << ")\n";
  return 0;
}

int CmdHostlist(int argc, char** argv) {
  std::string usage =
      "usage: iosonar hostlist expand LIST     one host per line\n"
      "       iosonar hostlist compress LIST   the compact form (LIST: hosts or ranges, comma/space separated)\n\n"
      "LIST is a Slurm host list: nid[05398-05399,05401],login1 or a[1-2]b[3-4]. Zero padding is kept.\n"
      "Exit status: 0 done, 1 malformed list (the error says where), 2 usage error.\n";
  if (argc >= 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
    std::cout << usage;
    return 0;
  }
  if (argc < 3) {
    std::cerr << usage;
    return 2;
  }
  std::string mode = argv[1];
  std::string list;
  for (int i = 2; i < argc; ++i) list += (i > 2 ? "," : "") + std::string(argv[i]);
  if (mode != "expand" && mode != "compress") {
    std::cerr << "iosonar hostlist: unknown mode '" << mode << "'\n" << usage;
    return 2;
  }
  auto hosts = ExpandHostlist(list);
  if (!hosts.ok()) return CommandError("hostlist", 1, hosts.status().message());
  if (mode == "expand")
    for (const auto& h : hosts.value()) std::cout << h << "\n";
  else
    std::cout << CompressHostlist(hosts.value()) << "\n";
  return 0;
}

}  // namespace iosonar::cli
