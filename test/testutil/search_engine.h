// A real search engine for the `real-opensearch:` and `real-es:` tests:
// OpenSearch or Elasticsearch from their integ-test distributions (fetched
// and unpacked by scripts/engines.sh; homes from IOSONAR_OPENSEARCH_HOME /
// IOSONAR_ES_HOME or BUILD_DIR/engines.env), started by the test as the
// unprivileged user iosonar-test (both refuse root) with a private config,
// data and log dir under a TempDir, on private loopback ports (HTTP and
// transport), single-node, a 512 MB heap (IOSONAR_ENGINE_HEAP=3g for benches);
// ready when _cluster/health answers
// (polled with a deadline; the engine's log is shown when it fails); stopped
// by its process group.
//
//   OpenSearch      plain HTTP (the integ-test zip has no security plugin).
//   Elasticsearch   security on: TLS on HTTP with a CA this helper makes
//                   (openssl); the administrator is the elastic user with a
//                   bootstrap password from the keystore; iosonar is a file-
//                   realm user with a least-privilege role (roles.yml). API
//                   keys cannot be made on this distribution: they live in
//                   the .security index, whose creation needs the
//                   analysis-common module the integ-test zip lacks.
//
// One engine of each kind per test process (Shared): startup takes 20-40 s.
// Tests keep apart by data-stream namespace (UniqueNamespace), since the
// Elasticsearch integ-test zip has no _data_stream API to delete with.
#pragma once
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/http_client.h"
#include "core/transport/sink.h"
#include "test/testutil/testutil.h"

namespace iosonar::test {

enum class EngineKind { kOpenSearch, kElasticsearch };

// One node of a multi-node cluster on loopback (SearchEngine::Cluster).
struct ClusterNodeSpec {
  std::string node;                 // node.name
  int transport_port = 0;           // this node's, chosen beforehand so every node can name its seeds
  std::vector<int> seeds;           // every node's transport port (discovery.seed_hosts)
  std::vector<std::string> nodes;   // every node's name (the initial cluster managers)
};

class SearchEngine {
 public:
  // The process's engine of this kind, started on first use. nullptr (with
  // the reason in *skip) only when IOSONAR_SKIP_REAL_ENGINES=1; a missing
  // distribution or an engine that does not come up FAILs the test.
  static SearchEngine* Shared(EngineKind kind, std::string* skip);

  explicit SearchEngine(EngineKind kind, const std::string& home);
  // A node of a cluster: configured and launched, not waited for (a cluster
  // answers only once enough of its nodes run); see Cluster.
  SearchEngine(EngineKind kind, const std::string& home, const ClusterNodeSpec& spec);

  // n OpenSearch nodes forming one cluster on loopback, each started as in the
  // single-node case, ready when _cluster/health counts n nodes. Empty (with
  // the reason in *skip) only when IOSONAR_SKIP_REAL_ENGINES=1. (Elasticsearch
  // with security on needs TLS between nodes as well: not made here.)
  static std::vector<std::unique_ptr<SearchEngine>> Cluster(int n, std::string* skip);
  ~SearchEngine();
  SearchEngine(const SearchEngine&) = delete;
  SearchEngine& operator=(const SearchEngine&) = delete;

  EngineKind kind() const { return kind_; }
  std::string name() const { return kind_ == EngineKind::kOpenSearch ? "OpenSearch" : "Elasticsearch"; }
  std::string url() const;  // http(s)://127.0.0.1:PORT
  // Options to reach it as iosonar would (user, password and CA file on Elasticsearch).
  EsOptions options(const std::string& name_space = "default") const;
  // The same for the iosonar command line (IOSONAR_ES_USER/PASSWORD, IOSONAR_ES_CA_FILE, IOSONAR_NAMESPACE).
  std::map<std::string, std::string> Env(const std::string& name_space = "default") const;
  const std::string& ca_file() const { return ca_file_; }

  // One request as the administrator (no retries); FAILs if it cannot be sent.
  HttpResponse Admin(const std::string& method, const std::string& path, const std::string& body = "");

  // Stops the engine (SIGTERM to its process group, SIGKILL after 60 s) / starts it
  // again on the same data dir and ports and waits until it answers.
  void Stop();
  void Start();
  // SIGKILL to its process group, at once (a node lost, not shut down).
  void Kill();
  bool running() const { return pid_ > 0; }
  std::string LogTail(size_t bytes = 4000) const;

 private:
  void WriteConfig();
  void Launch();
  void WaitReady();
  EngineKind kind_;
  std::string home_;
  ClusterNodeSpec cluster_;  // node empty: single-node
  TempDir dir_;
  int http_port_ = 0, transport_port_ = 0;
  pid_t pid_ = -1;
  std::string ca_file_;
  const std::string password_ = "iosonar-test-bootstrap";
  const std::string user_ = "iosonar", user_password_ = "iosonar-test-writer";
  std::unique_ptr<HttpClient> admin_;
};

// A data-stream namespace no other test of this process uses ("t1", "t2", ...).
std::string UniqueNamespace(const std::string& prefix = "t");

}  // namespace iosonar::test
