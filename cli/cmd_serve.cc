// `iosonar serve`: the per-job web pages and JSON API (serve/, docs/serve.md).
#include <signal.h>

#include <boost/program_options.hpp>
#include <cctype>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "serve/http_server.h"
#include "serve/service.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

constexpr const char* kUsage =
    "usage: iosonar serve --store DIR|URL --mysql URL [--redis URL] --listen HOST:PORT [--trusted-proxy ADDR]...\n"
    "                     [--user-header NAME] [--admins USER,...] [--admin-group GROUP] [--share-by account|group]\n"
    "                     [--group-ttl S] [--group-cache N]\n"
    "                     [--munge-socket PATH] [--threads N] [--tls-cert FILE --tls-key FILE]\n"
    "                     [--cluster NAME] [--cluster-store NAME=DIR|URL]... [--compute-threads N] [--compute-queue N]\n"
    "                     [--base-path /PREFIX]\n"
    "\n"
    "Serves each user the pages of their own jobs (summary, I/O mode and its evidence,\n"
    "per-second bandwidth and metadata rate across client, forwarding, OST and MDT\n"
    "layers, phases, advice, top files), a JSON API behind them (docs/openapi.yaml),\n"
    "and administrators an hourly peak-load heatmap of OSTs and forwarding nodes.\n"
    "Read-only. Who asks: the user header (--user-header, default X-Remote-User) from\n"
    "a --trusted-proxy address, or a MUNGE credential (`munge -n`) in the\n"
    "X-Munge-Credential header, checked by munged. Without either: 401. Another\n"
    "user's job is 404 everywhere. Summaries are cached in Redis\n"
    "(iosonar:job:JOB:summary) and computed once, by --compute-threads workers,\n"
    "never by the threads that serve cached answers. Job ids repeat across Slurm\n"
    "clusters: ?cluster=NAME picks one (default --cluster).\n"
    "Runs until SIGINT or SIGTERM.\n"
    "\n"
    "Exit status: 0 stopped by a signal, 1 cannot start, 2 usage error.\n"
    "\n"
    "options";

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int CmdServe(int argc, char** argv) {
  std::string store, mysql_flag, redis_flag, listen, user_header = "X-Remote-User", admins, admin_group, share_by,
                                                     munge_socket, tls_cert, tls_key, config;
  std::vector<std::string> proxies;
  int threads = 4, compute_threads = 2, compute_queue = 64;
  std::string cluster;
  std::string base_path;
  std::vector<std::string> cluster_stores;
  size_t list_limit = 500;
  int64_t group_ttl = 60, group_cache = 4096;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")  //
      ("store", po::value(&store)->value_name("DIR|URL"), "the record store directory, or an Elasticsearch URL")  //
      ("mysql", po::value(&mysql_flag)->value_name("URL"), "the job database (default $IOSONAR_MYSQL or `mysql = URL`)")  //
      ("redis", po::value(&redis_flag)->value_name("URL"),
       "cache results in Redis (default $IOSONAR_REDIS or `redis = URL`; none: in memory)")  //
      ("listen", po::value(&listen)->value_name("HOST:PORT"), "address to serve on, e.g. 127.0.0.1:8080 or [::]:8080")  //
      ("trusted-proxy", po::value(&proxies)->value_name("ADDR"),
       "believe the user header only from this address or CIDR block (repeatable)")  //
      ("user-header", po::value(&user_header)->value_name("NAME"), "the header the proxy names the user in (X-Remote-User)")  //
      ("admins", po::value(&admins)->value_name("USER,..."), "users who see every job and the administration page")  //
      ("admin-group", po::value(&admin_group)->value_name("GROUP"), "members of this Unix group are administrators")  //
      ("share-by", po::value(&share_by)->value_name("account|group"),
       "shared projects: users also see jobs whose Slurm account / Unix group is one of their Unix groups")  //
      ("group-ttl", po::value(&group_ttl)->default_value(60)->value_name("S"),
       "a user's Unix groups (--admin-group, --share-by) are asked of NSS again after S seconds (0: every request)")  //
      ("group-cache", po::value(&group_cache)->default_value(4096)->value_name("N"),
       "users whose groups are kept, at most (the least recently seen goes first)")  //
      ("munge-socket", po::value(&munge_socket)->value_name("PATH"), "munged's socket (default libmunge's)")  //
      ("threads", po::value(&threads)->default_value(4)->value_name("N"), "polling threads (each serves many connections)")  //
      ("compute-threads", po::value(&compute_threads)->default_value(2)->value_name("N"),
       "workers computing uncached results (a job's summary, series, phases; a day's heatmap, LASSi)")  //
      ("compute-queue", po::value(&compute_queue)->default_value(64)->value_name("N"),
       "computations waiting for a worker, at most; beyond: 503 with Retry-After")  //
      ("cluster", po::value(&cluster)->value_name("NAME"),
       "the default cluster of requests (job ids repeat across clusters; ?cluster=NAME picks another)")  //
      ("cluster-store", po::value(&cluster_stores)->value_name("NAME=DIR|URL"),
       "the record store of cluster NAME, when it is not --store (repeatable)")  //
      ("base-path", po::value(&base_path)->value_name("/PREFIX"),
       "the path the reverse proxy mounts the service under (/iosonar): links, scripts and redirects carry it")  //
      ("list-limit", po::value(&list_limit)->default_value(500)->value_name("N"), "jobs in a listing, latest first")  //
      ("tls-cert", po::value(&tls_cert)->value_name("FILE"), "serve HTTPS with this PEM certificate (and --tls-key)")  //
      ("tls-key", po::value(&tls_key)->value_name("FILE"), "the certificate's PEM private key")  //
      ("config", po::value(&config)->value_name("FILE"), "config file (default $IOSONAR_CONFIG, ~/.config/iosonar/iosonar.conf)")  //
      ("print-routes", "print the routes (\"GET /api/jobs\", ...) one a line and exit (docs/openapi.yaml documents them)");
  po::variables_map vm;
  if (int rc = ParseCommandLine("serve", argc, argv, desc, &vm); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("serve", m); };
  if (vm.count("print-routes")) {
    for (const auto& r : serve::Routes()) std::cout << r << "\n";
    return 0;
  }
  serve::ServeOptions o;
  o.store = store;
  o.mysql = ResolveSetting(mysql_flag, "IOSONAR_MYSQL", "mysql", config);
  o.redis = ResolveSetting(redis_flag, "IOSONAR_REDIS", "redis", config);
  if (o.store.empty()) return usage_error("missing --store DIR|URL");
  if (o.mysql.empty()) return usage_error("missing --mysql URL (job ownership comes from the job database)");
  if (listen.empty()) return usage_error("missing --listen HOST:PORT");
  if (threads < 1 || threads > 256) return usage_error("--threads must be in 1..256");
  if (list_limit < 1) return usage_error("--list-limit must be at least 1");
  if (compute_threads < 1 || compute_threads > 64) return usage_error("--compute-threads must be in 1..64");
  if (compute_queue < 1 || compute_queue > 100000) return usage_error("--compute-queue must be in 1..100000");
  auto valid_cluster = [](const std::string& c) {
    if (c.empty() || c.size() > 64) return false;
    for (char ch : c)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') return false;
    return true;
  };
  if (vm.count("cluster") && !valid_cluster(cluster))
    return usage_error("--cluster '" + cluster + "': a cluster name is letters, digits, '_', '-' and '.'");
  o.cluster = cluster;
  if (vm.count("base-path")) {
    auto bp = serve::NormalizeBasePath(base_path);
    if (!bp.ok()) return usage_error("--base-path '" + base_path + "': " + bp.status().message());
    o.base_path = *bp;
  }
  for (const auto& cs : cluster_stores) {
    size_t eq = cs.find('=');
    if (eq == std::string::npos || !valid_cluster(cs.substr(0, eq)) || eq + 1 == cs.size())
      return usage_error("--cluster-store '" + cs + "': expected NAME=DIR|URL");
    o.cluster_stores[cs.substr(0, eq)] = cs.substr(eq + 1);
  }
  if (!share_by.empty() && share_by != "account" && share_by != "group")
    return usage_error("--share-by must be account or group, not '" + share_by + "'");
  if (user_header.empty()) return usage_error("--user-header must not be empty");
  for (const auto& p : proxies) {
    auto m = serve::AddressMatch::Parse(p);
    if (!m.ok()) return usage_error(m.status().message());
    o.identity.trusted_proxies.push_back(*m);
  }
  o.identity.user_header = user_header;
  for (const auto& a : SplitCommas(admins)) o.identity.admins.insert(a);
  o.identity.admin_group = admin_group;
  o.identity.share_by = share_by;
  if (group_ttl < 0 || group_ttl > 86400) return usage_error("--group-ttl must be in 0..86400 seconds");
  if (group_cache < 1 || group_cache > 10000000) return usage_error("--group-cache must be in 1..10000000");
  o.identity.group_cache =
      std::make_shared<serve::GroupCache>(group_ttl * 1000000000LL, static_cast<size_t>(group_cache));
  o.identity.munge_socket = munge_socket;
  o.list_limit = list_limit;

  // Signals are taken by sigwait below: blocked before the server's threads start.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  serve::Service service(o);
  serve::HttpOptions h;
  h.listen = listen;
  h.threads = threads;
  h.compute_threads = compute_threads;
  h.compute_queue = compute_queue;
  h.tls_cert = tls_cert;
  h.tls_key = tls_key;
  auto srv = serve::HttpServer::Start(h, &service);
  if (!srv.ok()) return CommandError("serve", srv.status().code() == Code::kInvalid ? 2 : 1, srv.status().message());
  std::cerr << "iosonar serve: listening on " << (tls_cert.empty() ? "http" : "https") << "://" << listen
            << " (port " << (*srv)->port() << ")" << std::endl;
  int sig = 0;
  sigwait(&sigs, &sig);
  std::cerr << "iosonar serve: stopping (signal " << sig << ")" << std::endl;
  srv->reset();
  return 0;
}

}  // namespace iosonar::cli
