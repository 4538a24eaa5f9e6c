// `iosonar collect --auth munge`: identity from MUNGE, as Slurm has it. A real
// munged (private key, socket and pid file) started by the test; senders are
// the Lumberjack output and raw JSON lines with a credential made by the
// `munge` command as another user.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <random>
#include <string>

#include "core/jobdb/jobdb.h"
#include "core/transport/lumberjack.h"
#include "core/transport/lumberjack_sender.h"
#include "test/testutil/golden.h"
#include "test/testutil/mariadb_server.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

// munged on a socket in a directory every user can reach (the test's other
// user must be able to ask it for a credential).
struct Munged {
  TempDir dir;
  std::string sock;
  std::optional<Child> proc;
  Munged() {
    if (!HaveProgram("munge") || access("/usr/sbin/munged", X_OK) != 0)
      FAIL("munge is not installed (scripts/setup.sh --test installs it)");
    chmod(dir.path().c_str(), 0755);
    sock = dir / "munge.sock";
    std::random_device rd;
    std::string key(1024, '\0');
    for (auto& c : key) c = static_cast<char>(rd() & 0xff);
    WriteFile(dir / "munge.key", key);
    chmod((dir / "munge.key").c_str(), 0600);
    Start();
  }
  // A new munged with the same key: its in-memory replay cache starts empty.
  void Restart() {
    proc.reset();
    Start();
  }
  void Start() {
    proc.emplace(std::vector<std::string>{"/usr/sbin/munged", "--foreground", "--force", "--socket=" + sock,
                                          "--key-file=" + dir / "munge.key", "--pid-file=" + dir / "munged.pid",
                                          "--log-file=" + dir / "munged.log", "--seed-file=" + dir / "munged.seed"},
                 std::map<std::string, std::string>{}, dir / "munged.out");
    REQUIRE(WaitUntil([&] { return Run({"munge", "-S", sock, "-n"}).exit_code == 0; }, 20000));
  }
};

std::string Record(const std::string& dataset, const std::string& host, int seq) {
  if (dataset == "iosonar.trace")
    return "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.trace\",\"event.stream\":11,"
           "\"event.seq\":" + std::to_string(seq) + ",\"host.name\":\"" + host + "\",\"job.id\":\"7\",\"process.pid\":1,"
           "\"process.tid\":1,\"io.op\":\"write\",\"io.layer\":\"posix\",\"io.count\":1,\"io.bytes\":4096,"
           "\"event.start_ns\":1,\"event.end_ns\":2,\"io.duration_ns\":1}\n";
  return "{\"@timestamp\":\"2026-11-22T07:09:12.123Z\",\"event.dataset\":\"iosonar.oss\",\"event.stream\":12,"
         "\"event.seq\":" + std::to_string(seq) + ",\"host.name\":\"" + host + "\",\"lustre.target\":\"fs-OST0000\","
         "\"lustre.elapsed_ns\":1000000000,\"oss.write_bytes\":1099511627776}\n";
}

size_t Stored(const std::string& store, const std::string& dataset) {
  auto exp = Run({IosonarBin(), "store-export", "--store", store, "--dataset", dataset});
  REQUIRE(exp.exit_code == 0);
  return static_cast<size_t>(Count(exp.out, "\n"));
}

// A collector with --auth munge on a private port (plus extra arguments), logging to log.
struct MungeCollector {
  int port = FreePort();
  Child c;
  MungeCollector(const Munged& m, const TempDir& tmp, std::vector<std::string> extra = {})
      : c(Args(m, tmp, port, std::move(extra)), {}, tmp / "collect.log") {
    REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  }
  static std::vector<std::string> Args(const Munged& m, const TempDir& tmp, int port, std::vector<std::string> extra) {
    // The test's senders all encode on this host (127.0.0.1): the centre's map names it n1.
    if (!std::filesystem::exists(tmp / "hosts")) WriteFile(tmp / "hosts", "# test cluster\n127.0.0.1 n1\n");
    std::vector<std::string> a = {IosonarBin(), "collect", "--store", tmp / "st", "--listen",
                                  "tcp://127.0.0.1:" + std::to_string(port), "--auth", "munge", "--munge-socket", m.sock,
                                  "--munge-host-map", tmp / "hosts"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// A MUNGE credential of user nobody with payload host (the collector takes the host from it).
std::string NobodyCredential(const Munged& m, const std::string& host) {
  const passwd* nobody = getpwnam("nobody");
  REQUIRE(nobody);
  auto cred = Run({"setpriv", "--reuid=" + std::to_string(nobody->pw_uid), "--regid=" + std::to_string(nobody->pw_gid),
                   "--clear-groups", "munge", "-S", m.sock, "-s", host});
  INFO(cred.err);
  REQUIRE(cred.exit_code == 0);
  std::string credential = cred.out;
  while (!credential.empty() && credential.back() == '\n') credential.pop_back();
  return credential;
}

// The Lumberjack sender's options for that collector, credentials for host.
LumberjackSender::Options MungeSenderOptions(int port, const Munged& m, const std::string& host) {
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = std::to_string(port);
  o.munge = true;
  o.munge_socket = m.sock;
  o.auth_host = host;
  return o;
}

}  // namespace

TEST_CASE("collector --auth munge: an authenticated sender is stored, and none, a replay, a wrong host or another "
          "user's server records are refused",
          "[collector][auth]") {
  Munged m;
  TempDir tmp;
  MungeCollector col(m, tmp);
  const int port = col.port;
  Child& c = col.c;

  // 1. The Lumberjack output with a credential for host n1: stored, acknowledged.
  {
    LumberjackSender s;
    LumberjackSender::Options o = MungeSenderOptions(port, m, "n1");
    REQUIRE(s.Init(o).ok());
    std::string lines;
    for (int i = 0; i < 50; ++i) lines += Record("iosonar.trace", "n1", i);
    for (int i = 0; i < 5; ++i) lines += Record("iosonar.oss", "n1", i);  // root may send server records
    REQUIRE(s.Send(lines).ok());
    REQUIRE(s.Flush().ok());
    CHECK(s.counters().acked == 55);
    CHECK(s.counters().windows == 1);
  }
  // 2. No credential: the connection is refused, nothing stored.
  {
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    SendAll(fd, Record("iosonar.trace", "n1", 100));
    close(fd);
  }
  // 3. Another user's credential (payload n1): tracer records pass, a server record and a
  //    record for host n9 are set aside; the same credential used twice is refused (replay).
  const passwd* nobody = getpwnam("nobody");
  REQUIRE(nobody);
  const std::string credential = NobodyCredential(m, "n1");
  const std::string auth_line = "{\"iosonar.auth\":\"munge\",\"credential\":\"" + credential + "\"}\n";
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    SendAll(fd, auth_line + Record("iosonar.trace", "n1", 200 + attempt) + Record("iosonar.oss", "n1", 300 + attempt) +
                    Record("iosonar.trace", "n9", 400 + attempt));
    close(fd);
  }
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect.log");
  INFO(log);
  CHECK(Stored(tmp / "st", "iosonar.trace") == 51);  // 50 + nobody's one trace record
  CHECK(Stored(tmp / "st", "iosonar.oss") == 5);     // root's only
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  CHECK(dl.find("auth: the first line of every batch (Lumberjack window, or 4096 JSON lines) must be {") !=
        std::string::npos);
  CHECK(dl.find("auth: uid " + std::to_string(nobody->pw_uid) +
                " may send only iosonar.trace and iosonar.tracer records, not iosonar.oss") != std::string::npos);
  CHECK(dl.find("auth: a record for host 'n9' on a connection authenticated for host 'n1'") != std::string::npos);
  CHECK(dl.find("auth: credential refused: munge: Replayed credential") != std::string::npos);
}

TEST_CASE("collector --auth munge --mysql: a user's records only for the user's own jobs", "[collector][auth]") {
  Munged m;
  MariaDbServer db;
  {
    auto j = JobDb::Open(db.url());
    REQUIRE(j.ok());
    REQUIRE(j.value()->Migrate().ok());
    const passwd* nobody = getpwnam("nobody");
    REQUIRE(nobody);
    JobRecord mine, theirs;
    mine.cluster = theirs.cluster = "c1";
    mine.job_id = 7;
    mine.uid = nobody->pw_uid;
    theirs.job_id = 8;
    theirs.uid = 0;
    mine.source = theirs.source = "prolog";
    REQUIRE(j.value()->Upsert(mine).ok());
    REQUIRE(j.value()->Upsert(theirs).ok());
  }
  TempDir tmp;
  MungeCollector col(m, tmp, {"--mysql", db.url()});
  const int port = col.port;
  Child& c = col.c;
  const std::string credential = NobodyCredential(m, "n1");
  const passwd* nobody = getpwnam("nobody");
  auto job = [](const std::string& line, const std::string& id) {
    std::string l = line;
    l.replace(l.find("\"job.id\":\"7\""), 12, "\"job.id\":\"" + id + "\"");
    return l;
  };
  auto user = [](const std::string& line, const std::string& uid) {
    std::string l = line;
    l.insert(l.find("\"process.pid\""), "\"user.id\":\"" + uid + "\",");
    return l;
  };
  int fd = ConnectLoopback(port);
  REQUIRE(fd >= 0);
  SendAll(fd, "{\"iosonar.auth\":\"munge\",\"credential\":\"" + credential + "\"}\n" +
                  Record("iosonar.trace", "n1", 1) +               // job 7: nobody's own
                  job(Record("iosonar.trace", "n1", 2), "8") +     // job 8: root's
                  job(Record("iosonar.trace", "n1", 3), "999") +  // not in the database (yet): taken
                  user(Record("iosonar.trace", "n1", 4), "0"));   // naming another user: refused
  close(fd);
  // Root's connection (the node agent): a record naming the user whose ring it
  // read is checked against that user's jobs; one naming no user is taken.
  const std::string nob = std::to_string(nobody->pw_uid);
  fd = ConnectLoopback(port);
  REQUIRE(fd >= 0);
  std::string root_cred = Run({"munge", "-S", m.sock, "-n", "-s", "n1"}).out;
  while (!root_cred.empty() && root_cred.back() == '\n') root_cred.pop_back();
  SendAll(fd, "{\"iosonar.auth\":\"munge\",\"credential\":\"" + root_cred + "\"}\n" + user(Record("iosonar.trace", "n1", 10), nob) +  // job 7 for nobody: stored
                  user(job(Record("iosonar.trace", "n1", 11), "8"), nob) +      // job 8 is root's: refused
                  job(Record("iosonar.trace", "n1", 12), "8") +                 // no user named: taken
                  user(Record("iosonar.trace", "n1", 13), "x1"));              // not a uid: refused
  close(fd);
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  INFO(ReadFile(tmp / "collect.log"));
  CHECK(Stored(tmp / "st", "iosonar.trace") == 4);
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  CHECK(dl.find("auth: job 8 belongs to uid 0, not to the credential's uid " + nob) != std::string::npos);
  CHECK(dl.find("auth: a record for user.id 0 on a connection of uid " + nob) != std::string::npos);
  CHECK(dl.find("auth: job 8 belongs to uid 0, not to the record's user.id " + nob) != std::string::npos);
  CHECK(dl.find("auth: user.id 'x1' is not a uid") != std::string::npos);
}

namespace {

// Lumberjack v2 frames written by hand: a window of JSON events.
std::string Window(const std::vector<std::string>& events) {
  namespace lj = lumberjack;
  std::string out{lj::kVersion, lj::kWindow};
  lj::PutU32(&out, static_cast<uint32_t>(events.size()));
  uint32_t seq = 0;
  for (const auto& e : events) {
    out += lj::kVersion;
    out += lj::kJson;
    lj::PutU32(&out, ++seq);
    lj::PutU32(&out, static_cast<uint32_t>(e.size()));
    out += e;
  }
  return out;
}

// Reads ACK frames until one covers n events; false if the connection ends first.
bool AwaitAck(int fd, uint32_t n) {
  char ack[6];
  size_t have = 0;
  for (;;) {
    ssize_t r = read(fd, ack + have, sizeof ack - have);
    if (r <= 0) return false;
    have += static_cast<size_t>(r);
    if (have < sizeof ack) continue;
    have = 0;
    if (lumberjack::GetU32(ack + 2) >= n) return true;
  }
}

std::string AuthEvent(const std::string& credential) {
  return "{\"iosonar.auth\":\"munge\",\"credential\":\"" + credential + "\"}";
}

std::string Strip(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

TEST_CASE("collector --auth munge: a fresh credential with every batch, and a window without one, a replayed one and "
          "JSON lines past a credential's 4096 are refused",
          "[collector][auth]") {
  signal(SIGPIPE, SIG_IGN);  // the collector closes a refused connection while the test still writes
  Munged m;
  TempDir tmp;
  MungeCollector col(m, tmp);
  const int port = col.port;
  Child& c = col.c;
  // 1. The sender: 55 records in windows of 10, six windows, six credentials.
  {
    LumberjackSender s;
    LumberjackSender::Options o = MungeSenderOptions(port, m, "n1");
    o.window = 10;
    REQUIRE(s.Init(o).ok());
    std::string lines;
    for (int i = 0; i < 55; ++i) lines += Record("iosonar.trace", "n1", i);
    REQUIRE(s.Send(lines).ok());
    REQUIRE(s.Flush().ok());
    CHECK(s.counters().acked == 55);
    CHECK(s.counters().windows == 6);
  }
  auto cred = [&] { return Strip(Run({"munge", "-S", m.sock, "-n", "-s", "n1"}).out); };
  auto rec = [](int seq) { return Strip(Record("iosonar.trace", "n1", seq)); };
  // 2. A credential opens the first window; the second window comes without one: refused.
  {
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    SendAll(fd, Window({AuthEvent(cred()), rec(100)}));
    REQUIRE(AwaitAck(fd, 2));
    SendAll(fd, Window({rec(101)}));
    CHECK_FALSE(AwaitAck(fd, 1));  // closed, not acknowledged
    close(fd);
  }
  // 3. The second window replays the first window's credential: munged refuses it.
  {
    const std::string first = cred();
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    SendAll(fd, Window({AuthEvent(first), rec(200)}));
    REQUIRE(AwaitAck(fd, 2));
    SendAll(fd, Window({AuthEvent(first), rec(201)}));
    CHECK_FALSE(AwaitAck(fd, 2));
    close(fd);
  }
  // 4. JSON lines: one credential covers 4096 lines; line 4097 needs a new one, and
  //    after a new credential line the next 4096 are covered again.
  {
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    std::string lines = AuthEvent(cred()) + "\n";
    for (int i = 0; i < 4096; ++i) lines += Record("iosonar.trace", "n1", 1000 + i);
    lines += AuthEvent(cred()) + "\n";
    for (int i = 0; i < 10; ++i) lines += Record("iosonar.trace", "n1", 6000 + i);
    SendAll(fd, lines);
    close(fd);
    fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    lines = AuthEvent(cred()) + "\n";
    for (int i = 0; i < 4097; ++i) lines += Record("iosonar.trace", "n1", 7000 + i);
    SendAll(fd, lines);
    close(fd);
  }
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect.log");
  INFO(log);
  // 55 + 1 (case 2) + 1 (case 3) + 4106 + 4096
  CHECK(Stored(tmp / "st", "iosonar.trace") == 55u + 1 + 1 + 4106 + 4096);
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  CHECK(Count(dl, "auth: the first line of every batch") == 2);  // case 2's second window, case 4's line 4097
  CHECK(dl.find("auth: credential refused: munge: Replayed credential") != std::string::npos);
  CHECK(log.find("credentials 11,") != std::string::npos);  // 6 + 1 + 1 (the replay refused) + 3
  CHECK(log.find("auth failures 3,") != std::string::npos);
}

TEST_CASE("collector --auth munge: the host is the one munged says encoded the credential (the payload is a hint), "
          "and a replay is refused after munged and the collector restart",
          "[collector][auth][replay]") {
  signal(SIGPIPE, SIG_IGN);
  Munged m;
  TempDir tmp;
  // Payload n99 (the sender's choice); munged says it was encoded on 127.0.0.1, which the map names n1.
  const std::string credential = NobodyCredential(m, "n99");
  const std::string auth_line = "{\"iosonar.auth\":\"munge\",\"credential\":\"" + credential + "\"}\n";
  auto send = [&](int port, const std::string& body) {
    int fd = ConnectLoopback(port);
    REQUIRE(fd >= 0);
    SendAll(fd, auth_line + body);
    close(fd);
  };
  {
    MungeCollector col(m, tmp);
    send(col.port, Record("iosonar.trace", "n99", 1) + Record("iosonar.trace", "n1", 2));
    REQUIRE(ExitCode(col.c.Stop(30000)) == 0);
  }
  m.Restart();  // munged forgets the credentials it decoded
  {
    MungeCollector col(m, tmp);
    send(col.port, Record("iosonar.trace", "n1", 3));
    REQUIRE(ExitCode(col.c.Stop(30000)) == 0);
  }
  // A map that does not name the address: refused, the address named.
  WriteFile(tmp / "hosts", "10.9.9.9 n1\n");
  {
    MungeCollector col(m, tmp);
    send(col.port, Record("iosonar.trace", "n1", 4));  // the same credential: refused before its replay is looked at
    const std::string fresh = NobodyCredential(m, "n1");
    int fd = ConnectLoopback(col.port);
    REQUIRE(fd >= 0);
    SendAll(fd, "{\"iosonar.auth\":\"munge\",\"credential\":\"" + fresh + "\"}\n" + Record("iosonar.trace", "n1", 5));
    close(fd);
    REQUIRE(ExitCode(col.c.Stop(30000)) == 0);
  }
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  INFO(dl);
  CHECK(Stored(tmp / "st", "iosonar.trace") == 1);  // seq 2 only
  CHECK(dl.find("auth: a record for host 'n99' on a connection authenticated for host 'n1'") != std::string::npos);
  CHECK(dl.find("auth: credential refused: replayed (seen before") != std::string::npos);
  CHECK(dl.find("auth: the credential was encoded on 127.0.0.1, an address --munge-host-map does not name") !=
        std::string::npos);
  struct stat st;
  REQUIRE(stat((tmp / "st/munge-replay.dat").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size >= 16);
}
