// `iosonar es-templates` (write the Elasticsearch artifacts generated from the
// schema) and `iosonar es-setup` (install them over REST, idempotently).
#include <sys/stat.h>

#include <rapidjson/document.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/base/url.h"
#include "core/transport/es_client.h"
#include "core/store/es_templates.h"
#include "core/base/json.h"
#include "core/base/json_kv.h"

namespace po = boost::program_options;

namespace iosonar::cli {

namespace {

void AddTemplateOptions(po::options_description& d, EsTemplateOptions* t) {
  d.add_options()("retention", po::value(&t->raw_retention)->default_value(t->raw_retention),
                  "delete raw records (traces, samples, events) after this age (ES time units: d h m s)")(
      "results-retention", po::value(&t->results_retention)->default_value(t->results_retention),
      "delete iosonar.result.* records after this age")(
      "rollover-max-age", po::value(&t->rollover_max_age)->default_value(t->rollover_max_age),
      "roll a backing index over at this age")(
      "rollover-max-size", po::value(&t->rollover_max_primary_shard_size)->default_value(t->rollover_max_primary_shard_size),
      "... or at this primary shard size")("priority", po::value(&t->priority)->default_value(t->priority),
                                           "index template priority (the built-in logs/metrics templates have 100)");
}

std::string Manifest(const std::vector<EsArtifact>& arts) {
  std::string m;
  JsonWriter w(&m, 2);
  w.BeginObject();
  w.Kv("generated_by", "iosonar es-templates (from core/records/fields.def, datasets.def); do not edit, regenerate");
  w.Key("put_in_order");
  w.BeginArray();
  for (const auto& a : arts) {
    KvObject(w, "file", a.file, "api_path", a.api_path);
  }
  w.EndArray();
  w.EndObject();
  m.push_back('\n');
  return m;
}

}  // namespace

int CmdEsTemplates(int argc, char** argv) {
  po::options_description desc(
      "usage: iosonar es-templates --out DIR [options]\n\n"
      "Writes the Elasticsearch index templates, component templates and ILM policies generated\n"
      "from the record schema into DIR (the repository keeps them in es-templates/), with\n"
      "manifest.json listing the REST path of each in the order to PUT them.\n\noptions");
  std::string out, dict;
  EsTemplateOptions t;
  desc.add_options()("help,h", "show this help")("out", po::value(&out), "output directory (created)")(
      "logstash-dict", po::value(&dict),
      "also write the dataset -> stream type dictionary of the Logstash pipelines to this file "
      "(logstash-pipelines/iosonar-stream-types.yml)");
  AddTemplateOptions(desc, &t);
  po::variables_map vm;
  if (int rc = ParseCommandLine("es-templates", argc, argv, desc, &vm); rc >= 0) return rc;
  if (out.empty()) return CommandError("es-templates", 2, "--out DIR is required");
  auto arts = GenerateEsTemplates(t);
  if (!arts.ok()) return CommandError("es-templates", 2, arts.status().message());
  std::error_code ec;
  for (const auto& a : *arts) {
    std::filesystem::path p = std::filesystem::path(out) / a.file;
    std::filesystem::create_directories(p.parent_path(), ec);
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << a.body;
    if (!f) return CommandError("es-templates", 1, "cannot write ", p.string());
  }
  std::ofstream m(std::filesystem::path(out) / "manifest.json", std::ios::binary | std::ios::trunc);
  m << Manifest(*arts);
  if (!m) return CommandError("es-templates", 1, "cannot write ", out, "/manifest.json");
  if (!dict.empty()) {
    std::ofstream d(dict, std::ios::binary | std::ios::trunc);
    d << StreamTypesYaml();
    if (!d) return CommandError("es-templates", 1, "cannot write ", dict);
  }
  std::cout << "wrote " << arts->size() << " artifacts and manifest.json to " << out << "\n";
  return 0;
}

int CmdEsSetup(int argc, char** argv) {
  po::options_description desc(
      "usage: iosonar es-setup --url https://HOST:9200 [--user U --password P | --api-key K]\n"
      "                        [--ca-file F] [--insecure] [--retention 180d] ...\n\n"
      "Installs the lifecycle policies, component templates and index templates generated from the\n"
      "record schema (see `iosonar es-templates`) with PUT, so running it again is safe. It asks\n"
      "the engine what it is and has (GET /, _ilm/status, _plugins/_ism) and installs what that\n"
      "engine accepts: ILM policies on Elasticsearch with ILM, ISM policies on OpenSearch with the\n"
      "ISM plugin, none (with a warning: retention is then the operator's) elsewhere.\n"
      "TLS certificates are verified unless --insecure is given. The password and API key can\n"
      "also come from IOSONAR_ES_PASSWORD and IOSONAR_ES_API_KEY (the user and CA file from\n"
      "IOSONAR_ES_USER and IOSONAR_ES_CA_FILE), the URL from IOSONAR_ES or the\n"
      "config file key `elasticsearch`.\n\noptions");
  std::string url, config;
  EsOptions es;
  EsTemplateOptions t;
  int wait_s = 0;
  desc.add_options()("help,h", "show this help")("url", po::value(&url), "Elasticsearch URL")(
      "user", po::value(&es.user), "basic auth user")("password", po::value(&es.password), "basic auth password")(
      "api-key", po::value(&es.api_key), "API key (the base64 id:key form Elasticsearch returns as `encoded`)")(
      "ca-file", po::value(&es.ca_file), "PEM CA certificate(s) to verify the server with")(
      "insecure", po::bool_switch(&es.insecure), "do not verify the server's certificate")(
      "wait", po::value(&wait_s)->default_value(0), "wait up to this many seconds for Elasticsearch to answer")(
      "config", po::value(&config), "config file");
  AddTemplateOptions(desc, &t);
  po::variables_map vm;
  if (int rc = ParseCommandLine("es-setup", argc, argv, desc, &vm); rc >= 0) return rc;
  url = ResolveSetting(url, "IOSONAR_ES", "elasticsearch", config);
  if (es.password.empty()) es.password = ResolveSetting("", "IOSONAR_ES_PASSWORD", "elasticsearch_password", config);
  if (es.api_key.empty()) es.api_key = ResolveSetting("", "IOSONAR_ES_API_KEY", "elasticsearch_api_key", config);
  // As for --store: the user and CA file may come from the environment too.
  if (const char* v = std::getenv("IOSONAR_ES_USER"); es.user.empty() && v) es.user = v;
  if (const char* v = std::getenv("IOSONAR_ES_CA_FILE"); es.ca_file.empty() && v) es.ca_file = v;
  if (url.empty()) return CommandError("es-setup", 2, "--url is required (or IOSONAR_ES)");
  if (Status st = GenerateEsTemplates(t).status(); !st.ok()) {  // bad options fail before any connection
    std::cerr << "iosonar es-setup: " << st.message() << "\n";
    return 2;
  }
  es.max_attempts = 4;
  auto client = EsClient::Open(url, es);
  if (!client.ok()) return CommandError("es-setup", 2, client.status().message());
  auto& c = **client;
  // Ask the engine what it is and has (GET /, _ilm/status, _plugins/_ism) and
  // generate the artifacts it accepts.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  for (;;) {
    auto e = c.Engine(/*probe_policies=*/true);
    if (e.ok()) {
      t.target = *e;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return CommandError("es-setup", 1, RedactUrl(url), " does not answer: ", e.status().message());
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::cout << "engine: " << t.target.Describe() << "\n";
  if (!t.target.ilm && !t.target.ism)
    std::cerr << "iosonar es-setup: warning: " << t.target.Describe()
              << ": no lifecycle management (neither Elasticsearch ILM nor the OpenSearch ISM plugin answers); "
                 "no retention or rollover policy is installed: deleting old backing indices is left to the operator\n";
  auto arts = GenerateEsTemplates(t);
  if (!arts.ok()) return CommandError("es-setup", 2, arts.status().message());
  int failed = 0, created = 0, updated = 0, kept = 0;
  for (const auto& a : *arts) {
    auto g = c.Call("GET", a.api_path);
    bool existed = g.ok() && g->status == 200;
    // BASE@custom is the operator's: created empty once, never overwritten.
    if (existed && a.api_path.ends_with("@custom")) {
      ++kept;
      std::cout << "kept " << a.api_path << " (the operator's)\n";
      continue;
    }
    std::string put_path = a.api_path;
    if (existed && a.api_path.starts_with("/_plugins/_ism/")) {
      // ISM updates a policy only with the sequence number and primary term it has.
      rapidjson::Document d;
      d.Parse(g->body.data(), g->body.size());
      if (!d.HasParseError() && d.IsObject() && d.HasMember("_seq_no") && d["_seq_no"].IsInt64() &&
          d.HasMember("_primary_term") && d["_primary_term"].IsInt64())
        put_path += "?if_seq_no=" + std::to_string(d["_seq_no"].GetInt64()) +
                    "&if_primary_term=" + std::to_string(d["_primary_term"].GetInt64());
    }
    auto r = c.Call("PUT", put_path, a.body);
    if (!r.ok() || (r->status != 200 && r->status != 201)) {
      ++failed;
      std::cerr << "iosonar es-setup: PUT " << a.api_path << ": "
                << (r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 300) : r.status().message()) << "\n";
      continue;
    }
    existed ? ++updated : ++created;
    std::cout << (existed ? "updated " : "created ") << a.api_path << "\n";
  }
  std::cout << "es-setup: " << created << " created, " << updated << " updated, " << kept << " kept, " << failed
            << " failed\n";
  return failed ? 1 : 0;
}

}  // namespace iosonar::cli
