// TLS between the Lumberjack sender and `iosonar collect`, with client
// certificates as the sender's identity. The certificates are made by the test
// with the openssl command: two CAs (A, the collector's; B, a stranger's), a
// server certificate from A for 127.0.0.1, client certificates from A for
// host n1 and from B for host n1.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/transport/lumberjack_sender.h"
#include "test/integration/lumberjack_util.h"
#include "test/testutil/golden.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {

// The test's PKI, made with the openssl command in dir.
struct Pki {
  TempDir dir;
  explicit Pki() {
    if (!HaveProgram("openssl")) FAIL("the openssl command is not installed (scripts/setup.sh --test installs it)");
    const std::string script = R"(set -e
cd "$1"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
for ca in caA caB; do
  openssl req -x509 $ec -keyout $ca.key -out $ca.pem -days 2 -subj /CN=$ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
done
leaf() {  # name CN CA SAN
  openssl req $ec -keyout $1.key -out $1.csr -subj /CN=$2 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nsubjectAltName=%s\n' "$4" > $1.ext
  openssl x509 -req -in $1.csr -CA $3.pem -CAkey $3.key -CAcreateserial -out $1.pem -days 2 -extfile $1.ext 2>/dev/null
}
leaf server localhost caA IP:127.0.0.1,DNS:localhost
leaf n1 n1 caA DNS:n1
leaf n1b n1 caB DNS:n1
leaf n2alias n2 caA DNS:n2,DNS:n2-ib
chmod 600 *.key
)";
    auto r = Run({"/bin/sh", "-c", script, "pki", dir.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  std::string operator/(const std::string& f) const { return dir / f; }
};

std::vector<std::string> CollectArgs(const Pki& pki, const std::string& store, int port) {
  return {IosonarBin(),       "collect",        "--store",     store,          "--listen",
          "tcp://127.0.0.1:" + std::to_string(port), "--tls-cert", pki / "server.pem", "--tls-key",
          pki / "server.key", "--tls-ca",       pki / "caA.pem", "--require-client-cert"};
}

LumberjackSender::Options TlsSender(const Pki& pki, int port, const std::string& client) {
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = std::to_string(port);
  o.tls = true;
  o.tls_ca = pki / "caA.pem";
  if (!client.empty()) {
    o.tls_cert = pki / (client + ".pem");
    o.tls_key = pki / (client + ".key");
  }
  o.connect_timeout_ms = 5000;
  o.ack_timeout_ms = 5000;
  o.retry_interval_ms = 50;
  return o;
}

}  // namespace

TEST_CASE("collector over TLS: collector killed with SIGKILL mid-stream and restarted: 0 lost, 0 stored twice",
          "[lumberjack][collector][tls]") {
  Pki pki;
  TempDir tmp;
  const int port = FreePort();
  const auto argv = CollectArgs(pki, tmp / "st", port);
  auto c = std::make_unique<Child>(argv, std::map<std::string, std::string>{}, tmp / "collect1.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  REQUIRE(mkdir((tmp / "spool").c_str(), 0700) == 0);
  LumberjackSender s;
  auto o = TlsSender(pki, port, "n1");
  o.window = 256;
  o.spool_dir = tmp / "spool";
  o.compression_level = GENERATE(3, 0);  // zlib 'C' frames inside TLS (the default), and plain frames
  INFO("compression_level " << o.compression_level);
  REQUIRE(s.Init(o).ok());
  const int n = 30000;
  SendThroughCollectorKill(s, c, argv, tmp.path(), port, n);
  CHECK((s.counters().compressed_frames > 0) == (o.compression_level > 0));
  REQUIRE(ExitCode(c->Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect2.log");
  INFO(log);
  CHECK(log.find(", auth failures 0,") != std::string::npos);
  CHECK(log.find("client certificates 0,") == std::string::npos);  // the restarted collector saw the certificate
  CHECK(StoredRecords(tmp / "st") == static_cast<size_t>(n));  // none lost, none twice
}

TEST_CASE("collector over TLS: no client certificate, one from another CA, records for another host, a wrong "
          "server CA and plain text are all refused",
          "[lumberjack][collector][tls][auth]") {
  Pki pki;
  TempDir tmp;
  const int port = FreePort();
  Child c(CollectArgs(pki, tmp / "st", port), {}, tmp / "collect.log");
  REQUIRE(WaitUntil([&] { return CanConnect(port); }, 20000));
  auto deliver = [&](LumberjackSender::Options o, const std::string& lines) {
    LumberjackSender s;
    REQUIRE(s.Init(o).ok());
    (void)s.Send(lines);
    (void)s.Flush();
    return s.counters();
  };
  // 1. n1's certificate from CA A: stored.
  auto ok = deliver(TlsSender(pki, port, "n1"), TraceLines("n1", 0, 20));
  CHECK(ok.acked == 20);
  // 2. The certificate names n2 and n2-ib (subjectAltNames): both pass; n3 does not.
  auto alias = deliver(TlsSender(pki, port, "n2alias"), TraceLines("n2", 100, 3) + TraceLines("n2-ib", 200, 3) + TraceLines("n3", 300, 2));
  CHECK(alias.acked == 8);  // acknowledged: stored or set aside
  // 3. n1's certificate sending a record of host n9: set aside.
  auto other = deliver(TlsSender(pki, port, "n1"), TraceLines("n9", 400, 1));
  CHECK(other.acked == 1);
  // 4. No client certificate, and one from CA B: the handshake is refused, nothing acknowledged.
  auto none = deliver(TlsSender(pki, port, ""), TraceLines("n1", 500, 5));
  CHECK(none.acked == 0);
  CHECK(none.dropped == 5);
  auto foreign = deliver(TlsSender(pki, port, "n1b"), TraceLines("n1", 600, 5));
  CHECK(foreign.acked == 0);
  CHECK(foreign.dropped == 5);
  // 5. The sender trusts CA B only: the collector's certificate (from A) is refused by the sender.
  auto o = TlsSender(pki, port, "n1");
  o.tls_ca = pki / "caB.pem";
  auto wrong_ca = deliver(o, TraceLines("n1", 700, 5));
  CHECK(wrong_ca.acked == 0);
  CHECK(wrong_ca.failures > 0);
  // 6. Plain JSON lines to the TLS port.
  int fd = ConnectLoopback(port);
  REQUIRE(fd >= 0);
  SendAll(fd, TraceLines("n1", 800, 3));
  close(fd);
  // Stopped only once it has refused that connection (under load the stop
  // could otherwise come first and close it unread).
  CHECK(WaitUntil([&] { return ReadFile(tmp / "st/deadletter.jsonl").find("wrong version number") != std::string::npos; },
                  20000));
  REQUIRE(ExitCode(c.Stop(30000)) == 0);
  const std::string log = ReadFile(tmp / "collect.log");
  INFO(log);
  CHECK(StoredRecords(tmp / "st") == 26);  // 20 + 3 + 3
  const std::string dl = ReadFile(tmp / "st/deadletter.jsonl");
  INFO(dl);
  CHECK(dl.find("tls: a record for host 'n3' on a connection whose client certificate is for 'n2'") != std::string::npos);
  CHECK(dl.find("tls: a record for host 'n9' on a connection whose client certificate is for 'n1'") != std::string::npos);
  CHECK(Count(dl, "peer did not return a certificate") == 1);  // no certificate
  CHECK(Count(dl, "certificate verify failed") == 1);           // CA B's
  CHECK(dl.find("tlsv1 alert unknown ca") != std::string::npos);  // the sender refused the collector's certificate
  CHECK(dl.find("wrong version number") != std::string::npos);  // plain text: not a TLS record (OpenSSL's reason)
  CHECK(log.find("auth failures 4,") != std::string::npos);
}

TEST_CASE("collector --tls: bad configurations are refused with the file and the reason", "[collector][tls]") {
  Pki pki;
  TempDir tmp;
  auto r = Run({IosonarBin(), "collect", "--store", tmp / "st", "--listen", "tcp://127.0.0.1:0", "--tls-cert",
                pki / "server.pem", "--tls-key", pki / "n1.key"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("tls: private key " + pki / "n1.key" + ": ") != std::string::npos);
  CHECK(r.err.find("key values mismatch") != std::string::npos);
  r = Run({IosonarBin(), "collect", "--store", tmp / "st", "--listen", "tcp://127.0.0.1:0", "--require-client-cert"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("need --tls-cert") != std::string::npos);
  LumberjackSender s;
  LumberjackSender::Options o;
  o.host = "127.0.0.1";
  o.port = "1";
  o.tls = true;
  o.tls_ca = tmp / "missing.pem";
  CHECK(s.Init(o).message().find("CA file " + tmp / "missing.pem") != std::string::npos);
}
