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

struct LogRow {
  std::string path;
  std::string error;  // the log was refused
  std::string version, job_id, exe;
  int64_t nprocs = 0;
  darshan::ImportReport rep;
  std::vector<darshan::ModuleInfo> modules;
  AppendStats stored;
};

std::vector<std::string> ExpandInputs(const std::vector<std::string>& in, std::string* err) {
  std::vector<std::string> out;
  for (const auto& p : in) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = std::filesystem::recursive_directory_iterator(p, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        const auto& e = *it;
        const std::string name = e.path().filename().string();
        if (e.is_regular_file(ec) && name.size() > 8 && name.ends_with(".darshan")) found.push_back(e.path().string());
      }
      if (ec) {
        *err = p + ": " + ec.message();
        return {};
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

std::string Human(uint64_t b) {
  char buf[32];
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int k = 0;
  while (v >= 1024 && k < 4) {
    v /= 1024;
    ++k;
  }
  snprintf(buf, sizeof buf, k ? "%.1f %s" : "%.0f %s", v, u[k]);
  return buf;
}

void PrintTable(const std::vector<LogRow>& rows, bool to_store) {
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      std::printf("%s: NOT READ: %s\n", r.path.c_str(), r.error.c_str());
      continue;
    }
    std::printf("%s: Darshan %s, job %s, %lld processes, %s\n", r.path.c_str(), r.version.c_str(), r.job_id.c_str(),
                static_cast<long long>(r.nprocs), r.exe.substr(0, 80).c_str());
    std::printf("  %-12s %-4s %9s %12s %12s %12s %12s  %s\n", "module", "ver", "records", "reads", "writes",
                "read", "written", "note");
    for (const auto& m : r.modules) {
      std::string note = m.read ? "imported" : "skipped";
      if (!m.note.empty()) note += ": " + m.note;
      if (m.partial) note += " (partial: Darshan ran out of module memory at run time)";
      auto it = r.rep.totals.find(m.name);
      if (it != r.rep.totals.end()) {
        const auto& t = it->second;
        std::printf("  %-12s %-4u %9llu %12llu %12llu %12s %12s  %s\n", m.name.c_str(), m.version,
                    static_cast<unsigned long long>(m.records), static_cast<unsigned long long>(t.reads),
                    static_cast<unsigned long long>(t.writes), Human(t.bytes_read).c_str(),
                    Human(t.bytes_written).c_str(), note.c_str());
      } else {
        std::printf("  %-12s %-4u %9llu %12s %12s %12s %12s  %s\n", m.name.c_str(), m.version,
                    static_cast<unsigned long long>(m.records), "", "", "", "", note.c_str());
      }
    }
    std::printf("  records: %llu (%llu DXT ops)", static_cast<unsigned long long>(r.rep.lines),
                static_cast<unsigned long long>(r.rep.dxt_segments));
    if (to_store)
      std::printf(", stored %llu, already stored %llu", static_cast<unsigned long long>(r.stored.inserted),
                  static_cast<unsigned long long>(r.stored.duplicates));
    if (r.rep.dxt_files_incomplete)
      std::printf("; %llu files' DXT trace incomplete: their counters used",
                  static_cast<unsigned long long>(r.rep.dxt_files_incomplete));
    std::printf("\n");
  }
}

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o;
}

void PrintJson(const std::vector<LogRow>& rows) {
  std::string o = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (i) o += ",";
    o += "\n{\"log\":\"" + JsonEscape(r.path) + "\"";
    if (!r.error.empty()) {
      o += ",\"error\":\"" + JsonEscape(r.error) + "\"}";
      continue;
    }
    o += ",\"version\":\"" + r.version + "\",\"job_id\":\"" + JsonEscape(r.job_id) +
         "\",\"nprocs\":" + std::to_string(r.nprocs) + ",\"exe\":\"" + JsonEscape(r.exe) +
         "\",\"records\":" + std::to_string(r.rep.lines) + ",\"dxt_ops\":" + std::to_string(r.rep.dxt_segments) +
         ",\"dxt_files_incomplete\":" + std::to_string(r.rep.dxt_files_incomplete) +
         ",\"stored\":" + std::to_string(r.stored.inserted) +
         ",\"already_stored\":" + std::to_string(r.stored.duplicates) + ",\"modules\":[";
    for (size_t k = 0; k < r.modules.size(); ++k) {
      const auto& m = r.modules[k];
      if (k) o += ",";
      o += "{\"name\":\"" + m.name + "\",\"version\":" + std::to_string(m.version) +
           ",\"imported\":" + (m.read ? "true" : "false") + ",\"partial\":" + (m.partial ? "true" : "false") +
           ",\"records\":" + std::to_string(m.records) + ",\"note\":\"" + JsonEscape(m.note) + "\"";
      auto it = r.rep.totals.find(m.name);
      if (it != r.rep.totals.end())
        o += ",\"reads\":" + std::to_string(it->second.reads) + ",\"writes\":" + std::to_string(it->second.writes) +
             ",\"bytes_read\":" + std::to_string(it->second.bytes_read) +
             ",\"bytes_written\":" + std::to_string(it->second.bytes_written);
      o += "}";
    }
    o += "]}";
  }
  o += "\n]\n";
  std::fputs(o.c_str(), stdout);
}

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
  const auto logs = ExpandInputs(inputs, &err);
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
  std::vector<LogRow> rows;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<IngestBatch> batch;
  if (writer) batch = std::make_unique<IngestBatch>(writer, 8192);
  ParsedRecord check;
  std::string pending;  // sink: lines of one log
  uint64_t pending_n = 0;
  std::vector<char> scratch;
  for (const auto& path : logs) {
    LogRow row;
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
    row.version = l.version;
    row.nprocs = l.job.nprocs;
    row.exe = l.job.exe;
    row.modules = l.modules;
    Status st;
    if (batch) {
      // Batches of 8,192 records; a log cut short by an error is completed by importing it again.
      st = darshan::ImportLog(l, opt, [&](std::string_view line) -> Status {
        if (batch->full()) {
          if (Status c = batch->Commit(&row.stored); !c.ok()) return c;
          batch->Clear();
        }
        if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
        if (Status a = batch->Add(line); !a.ok()) return Status::Internal("invalid record from the import: " + a.message());
        return Status::Ok();
      }, &row.rep);
      if (st.ok() && !batch->empty()) st = batch->Commit(&row.stored);
      batch->Clear();
    } else {
      pending.clear();
      pending_n = 0;
      st = darshan::ImportLog(l, opt, [&](std::string_view line) -> Status {
        // The same validation as the collector's before anything leaves.
        scratch.assign(line.begin(), line.end());
        scratch.push_back('\0');
        check.Clear();
        if (Status v = ParseRecordInsitu(scratch.data(), line.size() - 1, &check); !v.ok())
          return Status::Internal("invalid record from the import: " + v.message());
        pending.append(line);
        ++pending_n;
        if (pending.size() >= (4u << 20)) {
          if (Status s = sink->Send(pending, pending_n); !s.ok()) return s;
          pending.clear();
          pending_n = 0;
        }
        return Status::Ok();
      }, &row.rep);
      if (st.ok() && pending_n) st = sink->Send(pending, pending_n);
    }
    row.job_id = row.rep.job_id;
    if (!st.ok()) {
      row.error = st.message();
      rc = CommandError("darshan-import", 1, path, ": ", st.ToString());
    } else {
      if (!badost_csv.empty()) badost += darshan::BadOstCsv(l, false);
      if (db) {
        JobRecord jr;
        jr.cluster = opt.cluster;
        const std::string& id = row.rep.job_id;
        if (id.empty() || id.size() > 19 || id.find_first_not_of("0123456789") != std::string::npos) {
          rc = CommandError("darshan-import", 1, path, ": job id '", id,
                            "' is not numeric: not written to the job database");
        } else {
          jr.job_id = std::stoull(id);
          jr.uid = l.job.uid;
          jr.task_count = l.job.nprocs;
          jr.start_ns = l.job.start_sec * 1000000000 + l.job.start_nsec;
          jr.end_ns = l.job.end_sec * 1000000000 + l.job.end_nsec;
          if (!l.job.exe.empty()) jr.command = l.job.exe;
          jr.source = "darshan";
          if (Status u = db->Upsert(jr); !u.ok()) {
            rc = CommandError("darshan-import", 1, path, ": --mysql: ", u.ToString());
          }
        }
      }
      if (!apps_file.empty() && !l.job.exe.empty()) {
        std::string exe = l.job.exe;
        std::replace(exe.begin(), exe.end(), '\t', ' ');
        apps += row.job_id + "\t" + exe + "\n";
      }
    }
    rows.push_back(std::move(row));
  }
  if (sink) {
    if (Status f = sink->Flush(); !f.ok()) {
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
  if (format == "json") PrintJson(rows);
  else PrintTable(rows, writer != nullptr);
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
