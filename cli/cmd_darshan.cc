// `iosonar darshan-import`: Darshan logs into the store or a sink through the
// collector's validation and deduplication (core/darshan, docs/darshan.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/collector/ingest.h"
#include "core/darshan/darshan_import.h"
#include "core/darshan/darshan_log.h"
#include "core/darshan/import_logs.h"
#include "core/jobdb/jobdb.h"
#include "core/records/record.h"
#include "core/store/es_store.h"
#include "core/store/sqlite_store.h"
#include "core/transport/sink.h"

namespace po = boost::program_options;

namespace iosonar::cli {
namespace {

constexpr const char* kUsage =
    "usage: iosonar darshan-import LOG|DIR... (--store DIR | --output URL) [--job-id ID] [--cluster C]\n"
    "Reads Darshan logs (format 3.10-3.41; a DIR is searched for *.darshan files) and stores their\n"
    "records: DXT segments as one trace record per op, else the per-file counters as aggregate records,\n"
    "the job as an iosonar.job record. Importing a log again stores nothing new. Exit 1 when a log cannot\n"
    "be read (named with the byte offset and the reason); the others are imported. Options";

}  // namespace

int CmdDarshanImport(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string store_dir, output, format = "table", badost_csv, apps_file, mysql;
  darshan::ImportOptions opt;
  po::options_description desc(kUsage);
  desc.add_options()("help,h", "show this help")  //
      ("store", po::value(&store_dir)->value_name("DIR"), "the embedded store to write into")  //
      ("output", po::value(&output)->value_name("URL"), "JSON lines to tcp://HOST:PORT, lumberjack://, https:// (Elasticsearch), a file, or - (stdout)")  //
      ("job-id", po::value(&opt.job_id)->value_name("ID"), "job.id of the records (one log only; default: the log's job id)")  //
      ("cluster", po::value(&opt.cluster)->default_value("darshan")->value_name("C"), "job.cluster of the job record")  //
      ("host", po::value(&opt.host)->value_name("NAME"), "host.name where the log names none (default: darshan)")  //
      ("bad-ost-csv", po::value(&badost_csv)->value_name("FILE"), "also write the files' bytes, I/O time and OSTs (LUSTRE records) as `iosonar bad-ost` input")  //
      ("mysql", po::value(&mysql)->value_name("URL"), "also write each log's job (uid, nprocs, start/end, executable as its command) to the job database, under --cluster")  //
      ("apps", po::value(&apps_file)->value_name("FILE"), "also append JOB_ID<TAB>EXECUTABLE lines (for anomaly/lassi --apps)")  //
      ("format", po::value(&format)->default_value("table")->value_name("FMT"), "summary as table or json");
  po::options_description hidden;
  hidden.add_options()("log", po::value(&inputs));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("log", -1);
  po::variables_map vm;
  if (int rc = ParseCommandLine("darshan-import", argc, argv, all, &vm, &pos, &desc); rc >= 0) return rc;
  auto usage_error = [](const std::string& m) { return UsageError("darshan-import", m); };
  if (inputs.empty()) return usage_error("missing LOG");
  if (store_dir.empty() == output.empty()) return usage_error("give --store DIR or --output URL (one of them)");
  if (format != "table" && format != "json") return usage_error("--format must be table or json");
  std::string err;
  const auto logs = darshan::ExpandLogPaths(inputs, &err);
  if (!err.empty()) return CommandError("darshan-import", 1, err);
  if (logs.empty()) return usage_error("no *.darshan files in the given directories");
  if (!opt.job_id.empty() && logs.size() > 1) return usage_error("--job-id names one log's job: give one log");

  std::unique_ptr<Store> store;
  BulkWriter* writer = nullptr;
  std::unique_ptr<RecordSink> sink;
  if (!store_dir.empty()) {
    auto s = OpenSqliteStore(store_dir);
    if (!s.ok()) return CommandError("darshan-import", 1, s.status().ToString());
    store = std::move(s.value());
    writer = BulkWriterOf(store.get());
    if (!writer) return CommandError("darshan-import", 1, "the store has no bulk path");
  } else {
    SinkOptions so;
    so.es = EsOptionsFromEnv();
    auto s = OpenSink(output, so);
    if (!s.ok()) return usage_error(s.status().message());
    sink = std::move(s.value());
  }
  std::unique_ptr<JobDb> db;
  if (!mysql.empty()) {
    auto d = JobDb::Open(mysql);
    if (!d.ok()) return CommandError("darshan-import", 1, "--mysql: ", d.status().ToString());
    db = std::move(d.value());
  }
  std::string badost = badost_csv.empty() ? "" : "file,bytes,seconds,osts\n";
  std::string apps;

  int rc = 0;
  std::vector<darshan::LogImport> rows;
  const auto t0 = std::chrono::steady_clock::now();
  darshan::LogImporter importer(writer, sink.get(), opt);
  for (const auto& path : logs) {
    darshan::LogImport row;
    row.path = path;
    auto log = darshan::ReadLog(path);
    if (!log.ok()) {
      row.error = log.status().message();
      std::cerr << "iosonar darshan-import: " << path << ": " << row.error << "\n";
      rows.push_back(std::move(row));
      rc = 1;
      continue;
    }
    const darshan::Log& l = log.value();
    if (Status st = importer.Import(l, &row); !st.ok()) {
      rc = CommandError("darshan-import", 1, path, ": ", st.ToString());
    } else {
      if (!badost_csv.empty()) badost += darshan::BadOstCsv(l, false);
      if (db) {
        auto jr = darshan::JobRecordOf(l, row.job_id, opt.cluster);
        if (!jr.ok()) {
          rc = CommandError("darshan-import", 1, path, ": ", jr.status().message());
        } else if (Status u = db->Upsert(*jr); !u.ok()) {
          rc = CommandError("darshan-import", 1, path, ": --mysql: ", u.ToString());
        }
      }
      if (!apps_file.empty()) apps += darshan::AppsLine(l, row.job_id);
    }
    rows.push_back(std::move(row));
  }
  if (sink) {
    if (Status f = importer.Flush(); !f.ok()) {
      rc = CommandError("darshan-import", 1, output, ": ", f.ToString());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!badost_csv.empty()) {
    if (Status w = WriteTextFile(badost_csv, badost); !w.ok()) {
      rc = CommandError("darshan-import", 1, w.ToString());
    }
  }
  if (!apps_file.empty()) {
    const int fd = ::open(apps_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const bool ok = fd >= 0 && ::write(fd, apps.data(), apps.size()) == static_cast<ssize_t>(apps.size());
    if (fd >= 0) ::close(fd);
    if (!ok) {
      rc = CommandError("darshan-import", 1, "cannot write ", apps_file);
    }
  }
  const std::string summary = format == "json" ? darshan::ImportJson(rows) : darshan::ImportTable(rows, writer != nullptr);
  std::fwrite(summary.data(), 1, summary.size(), stdout);
  uint64_t lines = 0, bad = 0;
  for (const auto& r : rows) {
    lines += r.rep.lines;
    bad += !r.error.empty();
  }
  std::fprintf(stderr, "iosonar darshan-import: %zu logs (%llu not read), %llu records in %.2f s\n", rows.size(),
               static_cast<unsigned long long>(bad), static_cast<unsigned long long>(lines), secs);
  return rc;
}

}  // namespace iosonar::cli
