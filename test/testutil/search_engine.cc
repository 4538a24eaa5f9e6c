#include "test/testutil/search_engine.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace iosonar::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUser = "iosonar-test";  // made by scripts/engines.sh (and setup.sh --test)

// KEY=VALUE lines of BUILD_DIR/engines.env, written by scripts/engines.sh.
std::map<std::string, std::string> EnginesEnv() {
  std::map<std::string, std::string> m;
  std::ifstream f(BinaryDir() + "/engines.env");
  std::string line;
  while (std::getline(f, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

std::string Setting(const std::string& key) {
  if (const char* v = std::getenv(key.c_str()); v && *v) return v;
  auto m = EnginesEnv();
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

std::string JavaHome() {
  if (const char* v = std::getenv("IOSONAR_JAVA_HOME"); v && *v) return v;
  for (const char* p : {"/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/java-17-openjdk-arm64", "/usr/lib/jvm/default-java"})
    if (fs::exists(std::string(p) + "/bin/java")) return p;
  if (const char* v = std::getenv("JAVA_HOME"); v && *v) return v;
  return "";
}

struct User {
  uid_t uid = 0;
  gid_t gid = 0;
};

User EngineUser() {
  struct passwd* pw = getpwnam(kUser);
  if (!pw)
    FAIL("the engines refuse to run as root and user " << kUser
                                                      << " does not exist: run scripts/engines.sh (or scripts/setup.sh --test)");
  return {pw->pw_uid, pw->pw_gid};
}

void ChownTree(const std::string& root, const User& u) {
  REQUIRE(lchown(root.c_str(), u.uid, u.gid) == 0);
  for (const auto& e : fs::recursive_directory_iterator(root)) REQUIRE(lchown(e.path().c_str(), u.uid, u.gid) == 0);
}

// argv as the engine's user (setpriv from util-linux).
std::vector<std::string> AsUser(const User& u, std::vector<std::string> argv) {
  std::vector<std::string> a = {"setpriv", "--reuid=" + std::to_string(u.uid), "--regid=" + std::to_string(u.gid),
                                "--clear-groups"};
  a.insert(a.end(), argv.begin(), argv.end());
  return a;
}

void MustRun(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
             const std::string& in = "") {
  auto r = Run(argv, env, in);
  INFO(argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
}

std::atomic<int> g_namespace{0};

}  // namespace

std::string UniqueNamespace(const std::string& prefix) { return prefix + std::to_string(++g_namespace); }

SearchEngine* SearchEngine::Shared(EngineKind kind, std::string* skip) {
  static std::unique_ptr<SearchEngine> os, es;
  static std::string os_failed, es_failed;
  auto& slot = kind == EngineKind::kOpenSearch ? os : es;
  auto& failed = kind == EngineKind::kOpenSearch ? os_failed : es_failed;
  if (!failed.empty()) FAIL("the engine did not start earlier in this run: " << failed);
  if (slot) {
    if (!slot->running()) slot->Start();
    return slot.get();
  }
  if (Setting("IOSONAR_SKIP_REAL_ENGINES") == "1") {
    *skip = "IOSONAR_SKIP_REAL_ENGINES=1: no real engine; this test checked nothing";
    return nullptr;
  }
  const std::string key = kind == EngineKind::kOpenSearch ? "IOSONAR_OPENSEARCH_HOME" : "IOSONAR_ES_HOME";
  std::string home = Setting(key);
  if (home.empty())
    FAIL(key << " is not set and " << BinaryDir()
             << "/engines.env does not name it: run scripts/engines.sh (scripts/test.sh does), or set "
                "IOSONAR_SKIP_REAL_ENGINES=1 to skip the real-engine tests knowingly");
  failed = "see the first failure";
  slot = std::make_unique<SearchEngine>(kind, home);
  failed.clear();
  return slot.get();
}

SearchEngine::SearchEngine(EngineKind kind, const std::string& home) : kind_(kind), home_(home) {
  const std::string bin = home_ + (kind_ == EngineKind::kOpenSearch ? "/bin/opensearch" : "/bin/elasticsearch");
  if (!fs::exists(bin)) FAIL(name() << " is not at " << home_ << " (no " << bin << "): run scripts/engines.sh");
  if (JavaHome().empty()) FAIL("no Java 17 found for " << name() << " (set IOSONAR_JAVA_HOME)");
  http_port_ = FreePort();
  do transport_port_ = FreePort();
  while (transport_port_ == http_port_);
  WriteConfig();
  Start();
}

SearchEngine::SearchEngine(EngineKind kind, const std::string& home, const ClusterNodeSpec& spec)
    : kind_(kind), home_(home), cluster_(spec) {
  const std::string bin = home_ + (kind_ == EngineKind::kOpenSearch ? "/bin/opensearch" : "/bin/elasticsearch");
  if (!fs::exists(bin)) FAIL(name() << " is not at " << home_ << " (no " << bin << "): run scripts/engines.sh");
  if (JavaHome().empty()) FAIL("no Java 17 found for " << name() << " (set IOSONAR_JAVA_HOME)");
  transport_port_ = spec.transport_port;
  do http_port_ = FreePort();
  while (std::find(spec.seeds.begin(), spec.seeds.end(), http_port_) != spec.seeds.end());
  WriteConfig();
  Launch();
}

std::vector<std::unique_ptr<SearchEngine>> SearchEngine::Cluster(int n, std::string* skip) {
  std::vector<std::unique_ptr<SearchEngine>> nodes;
  if (Setting("IOSONAR_SKIP_REAL_ENGINES") == "1") {
    *skip = "IOSONAR_SKIP_REAL_ENGINES=1: no real engine; this test checked nothing";
    return nodes;
  }
  const std::string home = Setting("IOSONAR_OPENSEARCH_HOME");
  if (home.empty()) FAIL("IOSONAR_OPENSEARCH_HOME is not set and " << BinaryDir() << "/engines.env does not name it: run scripts/engines.sh");
  ClusterNodeSpec spec;
  for (int i = 0; i < n; ++i) {
    int p;
    do p = FreePort();
    while (std::find(spec.seeds.begin(), spec.seeds.end(), p) != spec.seeds.end());
    spec.seeds.push_back(p);
    spec.nodes.push_back("n" + std::to_string(i + 1));
  }
  for (int i = 0; i < n; ++i) {
    ClusterNodeSpec one = spec;
    one.node = spec.nodes[static_cast<size_t>(i)];
    one.transport_port = spec.seeds[static_cast<size_t>(i)];
    nodes.push_back(std::make_unique<SearchEngine>(EngineKind::kOpenSearch, home, one));
  }
  for (auto& node : nodes) {
    try {
      node->WaitReady();
    } catch (...) {
      for (auto& other : nodes) other->Stop();
      throw;
    }
  }
  return nodes;
}

SearchEngine::~SearchEngine() { Stop(); }

void SearchEngine::Kill() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (kill(-pid_, 0) == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pid_ = -1;
}

std::string SearchEngine::url() const {
  return std::string(kind_ == EngineKind::kElasticsearch ? "https" : "http") + "://127.0.0.1:" + std::to_string(http_port_);
}

EsOptions SearchEngine::options(const std::string& name_space) const {
  EsOptions o;
  o.name_space = name_space;
  if (kind_ == EngineKind::kElasticsearch) {
    o.user = user_;
    o.password = user_password_;
  }
  o.ca_file = ca_file_;
  o.backoff_initial_ms = 50;
  o.backoff_max_ms = 1000;
  return o;
}

std::map<std::string, std::string> SearchEngine::Env(const std::string& name_space) const {
  const bool es = kind_ == EngineKind::kElasticsearch;
  return {{"IOSONAR_ES_API_KEY", ""},
          {"IOSONAR_ES_CA_FILE", ca_file_},
          {"IOSONAR_NAMESPACE", name_space},
          {"IOSONAR_ES_USER", es ? user_ : ""},
          {"IOSONAR_ES_PASSWORD", es ? user_password_ : ""},
          {"IOSONAR_CONFIG", "/nonexistent"}};
}

void SearchEngine::WriteConfig() {
  const User u = EngineUser();
  const std::string d = dir_.path();
  fs::copy(home_ + "/config", d + "/config", fs::copy_options::recursive);
  fs::create_directories(d + "/data");
  fs::create_directories(d + "/logs");
  fs::create_directories(d + "/tmp");
  const std::string conf = d + "/config";
  const std::string yml = conf + (kind_ == EngineKind::kOpenSearch ? "/opensearch.yml" : "/elasticsearch.yml");
  std::ostringstream y;
  y << "\n# iosonar test engine\ncluster.name: iosonar-test\nnode.name: " << (cluster_.node.empty() ? "n1" : cluster_.node) << "\n"
    << "path.data: " << d << "/data\npath.logs: " << d << "/logs\n"
    << "network.host: 127.0.0.1\nhttp.port: " << http_port_ << "\ntransport.port: " << transport_port_ << "\n";
  if (cluster_.node.empty()) {
    y << "discovery.type: single-node\n";
  } else {
    y << "discovery.seed_hosts: [";
    for (size_t i = 0; i < cluster_.seeds.size(); ++i) y << (i ? ", " : "") << "\"127.0.0.1:" << cluster_.seeds[i] << "\"";
    y << "]\n" << (kind_ == EngineKind::kOpenSearch ? "cluster.initial_cluster_manager_nodes" : "cluster.initial_master_nodes") << ": [";
    for (size_t i = 0; i < cluster_.nodes.size(); ++i) y << (i ? ", " : "") << cluster_.nodes[i];
    y << "]\n";
  }
  y
    // A nearly full test disk must not make the engine refuse writes.
    << "cluster.routing.allocation.disk.threshold_enabled: false\n";
  if (kind_ == EngineKind::kElasticsearch) {
    y << "xpack.security.enabled: true\n"
      << "xpack.security.http.ssl.enabled: true\n"
      << "xpack.security.http.ssl.key: node.key\n"
      << "xpack.security.http.ssl.certificate: node.crt\n"
      << "xpack.security.http.ssl.certificate_authorities: [ca.crt]\n";
    // The role iosonar's user has: only what it needs (file-based, like the
    // user: the integ-test distribution cannot create the .security index,
    // which needs the analysis-common module, so neither native users nor API
    // keys exist there).
    std::ofstream roles(conf + "/roles.yml", std::ios::app);
    roles << "\niosonar_writer:\n"
             "  cluster: [monitor, manage_index_templates, manage_ilm]\n"
             "  indices:\n"
             "    - names: ['logs-iosonar.*', 'metrics-iosonar.*']\n"
             "      privileges: [create_doc, read, auto_configure, maintenance, view_index_metadata]\n";
    REQUIRE(roles.good());
  }
  {
    std::ofstream f(yml, std::ios::app);
    f << y.str();
    REQUIRE(f.good());
  }
  // jvm.options: a small heap; GC log, heap dumps and error files in our dirs
  // (the shipped ones are relative to the home, which the user cannot write).
  {
    std::ifstream in(conf + "/jvm.options");
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.starts_with("-Xms") || line.starts_with("-Xmx") || line.find("gc.log") != std::string::npos ||
          line.find("HeapDumpPath") != std::string::npos || line.find("ErrorFile") != std::string::npos ||
          line.find("Xloggc") != std::string::npos)
        continue;
      out += line + "\n";
    }
    // IOSONAR_ENGINE_HEAP (e.g. 3g) for benches that load millions of records; tests keep 512m.
    std::string heap = Setting("IOSONAR_ENGINE_HEAP");
    if (heap.empty()) heap = "512m";
    if (heap.find_first_not_of("0123456789kmgKMG") != std::string::npos || !std::isdigit(static_cast<unsigned char>(heap[0])))
      FAIL("IOSONAR_ENGINE_HEAP='" << heap << "': expected a JVM size such as 512m or 3g");
    // C1 only: a test engine lives for minutes, and C2's compilations of a
    // long-lived server's hot paths would cost more CPU than they win back.
    out += "-XX:TieredStopAtLevel=1\n";
    out += "-Xms" + heap + "\n-Xmx" + heap + "\n-XX:HeapDumpPath=" + d + "/data\n-XX:ErrorFile=" + d + "/logs/hs_err_pid%p.log\n";
    WriteFile(conf + "/jvm.options", out);
  }
  if (kind_ == EngineKind::kElasticsearch) {
    // A CA made here, and the node's certificate for 127.0.0.1 signed by it.
    ca_file_ = d + "/ca.crt";
    MustRun({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/ca.key", "-out", ca_file_, "-days",
             "3", "-subj", "/CN=iosonar test CA"});
    MustRun({"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", conf + "/node.key", "-out", d + "/node.csr",
             "-subj", "/CN=localhost"});
    WriteFile(d + "/ext.cnf", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    MustRun({"openssl", "x509", "-req", "-in", d + "/node.csr", "-CA", ca_file_, "-CAkey", d + "/ca.key", "-CAcreateserial",
             "-out", conf + "/node.crt", "-days", "3", "-extfile", d + "/ext.cnf"});
    fs::copy_file(ca_file_, conf + "/ca.crt");
  }
  ChownTree(d, u);
  if (kind_ == EngineKind::kElasticsearch) {
    // The elastic user's password, from which the test makes its API key.
    const std::map<std::string, std::string> env = {{"ES_PATH_CONF", conf}, {"ES_JAVA_HOME", JavaHome()}, {"JAVA_HOME", JavaHome()}};
    MustRun(AsUser(u, {home_ + "/bin/elasticsearch-keystore", "add", "-x", "-f", "bootstrap.password"}), env, password_);
    // iosonar's own user (file realm) with the role above.
    MustRun(AsUser(u, {home_ + "/bin/elasticsearch-users", "useradd", user_, "-p", user_password_, "-r", "iosonar_writer"}), env);
  }
}

void SearchEngine::Launch() {
  const User u = EngineUser();
  const std::string d = dir_.path();
  const std::string bin = home_ + (kind_ == EngineKind::kOpenSearch ? "/bin/opensearch" : "/bin/elasticsearch");
  const std::string log = d + "/out.log";
  const std::string java = JavaHome();
  const std::string conf = d + "/config";
  const pid_t self = getpid();
  const bool main_thread = OnMainThread();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: stopped as a whole (Elasticsearch's launcher forks the server JVM)
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (chdir(d.c_str()) != 0) _exit(126);
    if (setgroups(0, nullptr) != 0 || setgid(u.gid) != 0 || setuid(u.uid) != 0) _exit(125);
    DieWithTest(self, main_thread);  // after setuid, which clears it
    setenv("JAVA_HOME", java.c_str(), 1);
    setenv("OPENSEARCH_JAVA_HOME", java.c_str(), 1);
    setenv("ES_JAVA_HOME", java.c_str(), 1);
    setenv("OPENSEARCH_PATH_CONF", conf.c_str(), 1);
    setenv("ES_PATH_CONF", conf.c_str(), 1);
    setenv("OPENSEARCH_TMPDIR", (d + "/tmp").c_str(), 1);
    setenv("ES_TMPDIR", (d + "/tmp").c_str(), 1);
    setenv("HOME", d.c_str(), 1);
    unsetenv("ES_JAVA_OPTS");
    unsetenv("OPENSEARCH_JAVA_OPTS");
    execl(bin.c_str(), bin.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  pid_ = pid;
}

void SearchEngine::Start() {
  if (pid_ > 0) return;
  Launch();
  try {
    WaitReady();
  } catch (...) {  // a failed start leaves nothing running
    Stop();
    throw;
  }
}

void SearchEngine::WaitReady() {
  // Elasticsearch: the elastic user with the bootstrap password, over TLS with our CA.
  EsOptions o;
  o.ca_file = ca_file_;
  if (kind_ == EngineKind::kElasticsearch) {
    o.user = "elastic";
    o.password = password_;
  }
  o.connect_timeout_ms = 2000;
  o.request_timeout_ms = 30000;
  auto c = HttpClient::Open(url(), o);
  REQUIRE(c.ok());
  admin_ = std::move(*c);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  std::string last = "no answer yet";
  for (;;) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      FAIL(name() << " exited before it answered (status " << status << "); its log:\n" << LogTail());
    }
    const std::string nodes = cluster_.node.empty() ? "" : "&wait_for_nodes=" + std::to_string(cluster_.nodes.size());
    auto r = admin_->Request("GET", "/_cluster/health?wait_for_status=yellow&timeout=1s" + nodes, "", "application/json");
    if (r.ok() && r->status == 200) break;
    last = r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 200) : r.status().message();
    if (std::chrono::steady_clock::now() >= deadline) {
      Stop();
      FAIL(name() << " did not answer _cluster/health within 180 s (last: " << last << "); its log:\n" << LogTail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  if (kind_ == EngineKind::kElasticsearch) {
    // iosonar's user authenticates (file realm, over TLS) and has its role.
    auto c2 = HttpClient::Open(url(), options());
    REQUIRE(c2.ok());
    auto r = (*c2)->Request("GET", "/_security/_authenticate", "", "application/json");
    REQUIRE(r.ok());
    INFO(r->body);
    REQUIRE(r->status == 200);
    REQUIRE(r->body.find("iosonar_writer") != std::string::npos);
  }
}

HttpResponse SearchEngine::Admin(const std::string& method, const std::string& path, const std::string& body) {
  REQUIRE(admin_);
  auto r = admin_->Request(method, path, body, path.find("_bulk") != std::string::npos ? "application/x-ndjson" : "application/json");
  INFO(method << " " << path);
  REQUIRE(r.ok());
  return *r;
}

void SearchEngine::Stop() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGTERM);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // The rest of the group (the server JVM under Elasticsearch's launcher) goes too.
  const auto group_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (kill(-pid_, 0) == 0) {
    if (std::chrono::steady_clock::now() >= group_deadline) {
      kill(-pid_, SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid_ = -1;
}

std::string SearchEngine::LogTail(size_t bytes) const {
  std::string s = ReadFile(dir_.path() + "/out.log");
  if (s.size() > bytes) s = "..." + s.substr(s.size() - bytes);
  return s;
}

}  // namespace iosonar::test
