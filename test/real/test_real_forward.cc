// What writes into the engine: the collector's forward output (a resend
// stored once; the engine stopped and restarted while it forwards: nothing
// lost, nothing stored twice), and every result stream the analyses write
// (read back from the engine equal to the same command's file output).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "core/collector/collector.h"
#include "core/records/fields.h"
#include "core/records/schema.h"
#include "core/store/es_store.h"
#include "core/transport/es_client.h"
#include "test/real/real_engine.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using namespace iosonar::test;

namespace {
// A double read back from an engine may come as another decimal of (nearly)
// the same value: the JVM's shortest form is not always C++'s. Compare
// fractional numbers at 15 significant digits.
std::string FloatsAt15(const std::string& json) {
  static const std::regex num(R"((-?\d+\.\d+(?:[eE][-+]?\d+)?))");
  std::string out;
  size_t last = 0;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), num); it != std::sregex_iterator(); ++it) {
    out.append(json, last, static_cast<size_t>(it->position()) - last);
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", std::stod(it->str()));
    out += buf;
    last = static_cast<size_t>(it->position() + it->length());
  }
  out.append(json, last, std::string::npos);
  return out;
}



// n iosonar.tracer lines of one stream, from seq `from`.
std::string TracerLines(int64_t from, int64_t n) {
  std::string s;
  for (int64_t i = from; i < from + n; ++i)
    s += "{\"@timestamp\":\"2026-11-22T07:09:12.000Z\",\"event.dataset\":\"iosonar.tracer\",\"event.stream\":4242,"
         "\"event.seq\":" + std::to_string(i) + ",\"host.name\":\"n1\",\"process.pid\":7,\"event.action\":\"exit\","
         "\"tracer.raw_ops\":" + std::to_string(i) + ",\"tracer.records\":1,\"tracer.dropped\":0,\"tracer.spooled\":0}\n";
  return s;
}

void CollectorForwards(SearchEngine& e) {
  EnsureTemplates(e);
  TempDir dir;
  const std::string ns = UniqueNamespace("fw");
  WriteFile(dir / "in.jsonl", TracerLines(0, 3000));
  auto env = e.Env(ns);
  std::vector<std::string> argv = {IosonarBin(), "collect", "--store", dir / "store", "--from-file", dir / "in.jsonl",
                                   "--es", e.url(), "--es-namespace", ns};
  if (e.kind() == EngineKind::kElasticsearch) {
    argv.insert(argv.end(), {"--es-user", "iosonar", "--es-ca-file", e.ca_file()});
  }
  auto r1 = Run(argv, env);
  INFO(r1.err);
  REQUIRE(r1.exit_code == 0);
  CHECK(r1.err.find("stored 3000") != std::string::npos);
  CHECK(r1.err.find("forwarded 3000, forward errors 0") != std::string::npos);
  CHECK(CountIn(e, "logs-iosonar.tracer-" + ns) == 3000);
  // The same records again, through a new store: forwarded as already stored (409), not twice.
  argv[3] = dir / "store2";
  auto r2 = Run(argv, env);
  INFO(r2.err);
  REQUIRE(r2.exit_code == 0);
  CHECK(r2.err.find("forwarded 3000, forward errors 0") != std::string::npos);
  CHECK(CountIn(e, "logs-iosonar.tracer-" + ns) == 3000);
  // With gzip on _bulk (Content-Encoding: gzip), into a new namespace: the engine inflates, all stored.
  const std::string nz = UniqueNamespace("fwz");
  argv[3] = dir / "store3";
  argv[9] = nz;
  argv.push_back("--es-gzip");
  auto r3 = Run(argv, e.Env(nz));
  INFO(r3.err);
  REQUIRE(r3.exit_code == 0);
  CHECK(r3.err.find("forwarded 3000, forward errors 0") != std::string::npos);
  CHECK(CountIn(e, "logs-iosonar.tracer-" + nz) == 3000);
}
REAL_ENGINE_TEST("the collector's forward output bulks into the data stream, a resend is stored once", "[collector]",
                 CollectorForwards)

// The lean exporter's Elasticsearch output (libcurl loaded at run time) bulks
// probe records into their data stream, over TLS with the CA and a user on
// Elasticsearch.
void ExporterOutput(SearchEngine& e) {
  EnsureTemplates(e);
  TempDir d;
  const std::string lean = BinaryDir() + "/iosonar-exporter";
  REQUIRE(Run({lean, "probe", "--precreate", "--dir", d / "p", "--file-size", "2M", "--pool-size", "4", "--allow-small-file"}).exit_code == 0);
  const std::string ns = UniqueNamespace("exp");
  std::vector<std::string> argv = {lean,       "probe",   "--dir",      d / "p", "--allow-small-file", "--count", "2",
                                   "--interval", "0.02", "--output",   e.url(), "--host-name",        "cn1"};
  if (e.kind() == EngineKind::kElasticsearch) argv.insert(argv.end(), {"--es-user", "iosonar", "--es-ca-file", e.ca_file()});
  auto r = Run(argv, e.Env(ns));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The same command into a file: as many probe records.
  argv[10] = d / "probe.jsonl";
  REQUIRE(Run(argv, e.Env(ns)).exit_code == 0);
  uint64_t want = 0;
  for (const auto& l : SplitLines(ReadFile(d / "probe.jsonl"))) want += l.find("\"iosonar.probe\"") != std::string::npos;
  CHECK(want == 12);
  CHECK(CountIn(e, "metrics-iosonar.probe-" + ns) == want);
}
REAL_ENGINE_TEST("the lean exporter's Elasticsearch output bulks into the data stream", "[exporter]", ExporterOutput)

// The engine is stopped while the collector forwards and started again:
// every record arrives once (the forward spool keeps what could not be sent).
void ForwardFault(SearchEngine& e) {
  EnsureTemplates(e);
  TempDir dir;
  const std::string ns = UniqueNamespace("fault");
  CollectorOptions o;
  o.listen = "tcp://127.0.0.1:0";
  o.store_dir = dir / "store";
  o.batch_records = 500;
  o.forward_output = e.url();
  o.forward.es = e.options(ns);
  o.forward.es.max_attempts = 3;
  o.forward_spool_chunk_bytes = 65536;  // the spool (~1 MB) is resent in many pieces
  o.self_report_ms = 0;  // no iosonar.sampler record of its own in the counts (the test can outlast 60 s)
  auto c = Collector::Start(o);
  REQUIRE(c.ok());
  Collector& col = **c;
  auto send = [&](int64_t from, int64_t n) {
    int fd = ConnectLoopback(col.port());
    REQUIRE(fd >= 0);
    REQUIRE(SendAll(fd, TracerLines(from, n)));
    close(fd);
  };
  send(0, 2000);
  REQUIRE(col.Drain(1, 60000).ok());
  CHECK(col.stats().forwarded == 2000);
  e.Stop();
  send(2000, 3000);  // while the engine is down: stored, spooled
  REQUIRE(col.Drain(2, 120000).ok());
  CHECK(col.stats().stored == 5000);
  CHECK(col.stats().forward_spooled == 3000);
  struct stat sb {};
  REQUIRE(stat((dir / "store/forward-spool.jsonl").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0600);
  e.Start();
  send(5000, 1000);  // and after: sent after the spooled ones
  REQUIRE(col.Drain(3, 60000).ok());
  // The spool is sent once the engine answers (the collector backs off up to 30 s).
  CHECK(WaitUntil([&] { return col.stats().forward_spooled == 0; }, 120000));
  REQUIRE(col.Stop().ok());
  const auto st = col.stats();
  CHECK(st.stored == 6000);
  CHECK(st.forward_errors == 0);
  CHECK(st.forward_spool_buffer_max > 0);  // resent from the spool, a piece at a time
  CHECK(st.forward_spool_buffer_max <= 65536 + 1024);
  CHECK(st.forwarded >= 6000);  // a batch cut off mid-send is resent: what had arrived counts twice (409)
  CHECK(CountIn(e, "logs-iosonar.tracer-" + ns) == 6000);
  // Every seq once: a terms count of distinct event.seq values.
  auto r = e.Admin("POST", "/logs-iosonar.tracer-" + ns + "/_search",
                   R"({"size":0,"aggs":{"d":{"cardinality":{"field":"event.seq","precision_threshold":40000}},)"
                   R"("mn":{"min":{"field":"event.seq"}},"mx":{"max":{"field":"event.seq"}}}})");
  INFO(r.body);
  CHECK(r.body.find("\"d\":{\"value\":6000}") != std::string::npos);
  CHECK(r.body.find("\"mx\":{\"value\":5999.0}") != std::string::npos);
  CHECK(!std::filesystem::exists(dir / "store/forward-spool.jsonl"));
  CHECK(!std::filesystem::exists(dir / "store/forward-spool.jsonl.sent"));
}
REAL_ENGINE_TEST("fault: the engine stops while the collector forwards and comes back: nothing lost, nothing twice",
                 "[collector][fault]", ForwardFault)

// Every result stream the analyses write, written to the engine and read
// back: the same records as the command's file output.
void ResultStreams(SearchEngine& e) {
  EnsureTemplates(e);
  TempDir dir;
  auto sim = Run({IosonarBin(), "simulate", "--store", dir / "store", "--nodes", "16", "--fwd", "2", "--osts", "4",
                  "--duration", "8", "--seed", "9", "--slow-ost", "1", "--maps", dir / "maps.json", "--getstripe",
                  dir / "gs.txt", "--file-perf", dir / "perf.csv"});
  INFO(sim.err);
  REQUIRE(sim.exit_code == 0);
  const std::string ns = UniqueNamespace("res");
  const auto env = e.Env(ns);
  const std::string from = "2026-11-22T00:00:00Z", to = "2026-11-22T01:00:00Z";
  const std::string st = dir / "store";
  // {argv without the output, the output option}
  const std::vector<std::pair<std::vector<std::string>, std::string>> cmds = {
      {{"xlayer", "1000", "--store", st, "--maps", dir / "maps.json", "--getstripe", dir / "gs.txt"}, "--output"},
      {{"summarize-job", "1000", "1001", "--store", st}, "--output"},
      {{"phases", "1000", "--store", st}, "--output"},
      {{"compress2", "1000", "--store", st}, "--output"},
      {{"scoreboard", "--store", st, "--from", from, "--to", to}, "--output"},  // a fixed period: a resend is the same records
      {{"bad-ost", dir / "perf.csv"}, "--output"},
      {{"lassi", "--store", st, "--from", from, "--to", to, "--window", "1m"}, "--results-output"},
  };
  std::string file_lines;
  int k = 0;
  for (const auto& [args, opt] : cmds) {
    for (const bool to_engine : {false, true, true}) {  // the second run to the engine is a resend
      std::vector<std::string> argv = {IosonarBin()};
      argv.insert(argv.end(), args.begin(), args.end());
      const std::string f = dir / ("out" + std::to_string(k) + ".jsonl");
      argv.push_back(opt);
      argv.push_back(to_engine ? e.url() : f);
      auto r = Run(argv, env);
      INFO(args[0] << (to_engine ? " -> engine: " : " -> file: ") << r.err);
      REQUIRE(r.exit_code == 0);
      if (!to_engine) file_lines += ReadFile(f);
    }
    ++k;
  }
  // Per result dataset: the records in the engine equal the file's.
  std::map<std::string, std::multiset<std::string>> want;
  ParsedLines pl;
  for (const auto& l : SplitLines(file_lines)) {
    if (l.empty()) continue;
    pl.Add(l);
    std::string json;
    AppendRecordJson(&json, *pl.ptrs.back());
    want[std::string(pl.ptrs.back()->dataset->name)].insert(FloatsAt15(json));
  }
  REQUIRE(want.size() >= 7);
  auto store = OpenElasticsearchStore(e.url(), e.options(ns));
  REQUIRE(store.ok());
  REQUIRE(e.Admin("POST", "/logs-iosonar.*-" + ns + ",metrics-iosonar.*-" + ns + "/_refresh").status == 200);
  for (const auto& [ds, recs] : want) {
    INFO(ds);
    ScanQuery q;
    q.dataset = ds;
    for (const auto* f : schema::FieldsOf(ds)) q.fields.push_back(*FieldByName(f->name));
    std::multiset<std::string> got;
    Status s = (*store)->Scan(q, [&](const Row& row) {
      ParsedRecord rec;
      rec.Clear();
      rec.dataset = schema::FindDataset(ds);
      for (size_t i = 0; i < q.fields.size(); ++i) {
        if (!row.Has(i)) continue;
        const schema::Field& fd = schema::FieldOf(q.fields[i]);
        FieldValue& v = rec.At(q.fields[i]);
        if (fd.type == schema::Type::kDouble) {
          v.kind = FieldValue::kDouble;
          v.d = row.Double(i);
        } else if (fd.type == schema::Type::kKeyword || fd.type == schema::Type::kDate) {
          v.kind = FieldValue::kString;
          v.s = row.Str(i);
          if (fd.type == schema::Type::kDate) v.i = row.Int(i);
        } else {
          v.kind = fd.type == schema::Type::kBool ? FieldValue::kBool : FieldValue::kInt;
          v.i = row.Int(i);
        }
      }
      std::string json;
      AppendRecordJson(&json, rec);
      got.insert(FloatsAt15(json));
      return true;
    });
    REQUIRE(s.message() == "");
    CHECK(got.size() == recs.size());
    CHECK(got == recs);
  }
}
REAL_ENGINE_TEST("every result stream is written to the engine and read back the same; a resend is stored once",
                 "[results]", ResultStreams)

}  // namespace
