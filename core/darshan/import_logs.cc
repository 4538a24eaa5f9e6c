// See import_logs.h.
#include "core/darshan/import_logs.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/base/appendf.h"
#include "core/collector/ingest.h"
#include "core/records/record.h"

namespace iosonar::darshan {

namespace {

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

}  // namespace

std::vector<std::string> ExpandLogPaths(const std::vector<std::string>& in, std::string* err) {
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

LogImporter::LogImporter(BulkWriter* writer, RecordSink* sink, const ImportOptions& opt)
    : writer_(writer), sink_(sink), opt_(opt) {
  if (writer_) batch_ = std::make_unique<IngestBatch>(writer_, 8192);
}

LogImporter::~LogImporter() = default;

Status LogImporter::Import(const Log& l, LogImport* row) {
  row->version = l.version;
  row->nprocs = l.job.nprocs;
  row->exe = l.job.exe;
  row->modules = l.modules;
  Status st;
  if (batch_) {
    // Batches of 8,192 records; a log cut short by an error is completed by importing it again.
    st = ImportLog(l, opt_, [&](std::string_view line) -> Status {
      if (batch_->full()) {
        if (Status c = batch_->Commit(&row->stored); !c.ok()) return c;
        batch_->Clear();
      }
      if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
      if (Status a = batch_->Add(line); !a.ok()) return Status::Internal("invalid record from the import: " + a.message());
      return Status::Ok();
    }, &row->rep);
    if (st.ok() && !batch_->empty()) st = batch_->Commit(&row->stored);
    batch_->Clear();
  } else {
    std::string pending;  // the lines of this log not yet sent
    uint64_t pending_n = 0;
    std::vector<char> scratch;
    ParsedRecord check;
    st = ImportLog(l, opt_, [&](std::string_view line) -> Status {
      // The same validation as the collector's before anything leaves.
      scratch.assign(line.begin(), line.end());
      scratch.push_back('\0');
      check.Clear();
      if (Status v = ParseRecordInsitu(scratch.data(), line.size() - 1, &check); !v.ok())
        return Status::Internal("invalid record from the import: " + v.message());
      pending.append(line);
      ++pending_n;
      if (pending.size() >= (4u << 20)) {
        if (Status s = sink_->Send(pending, pending_n); !s.ok()) return s;
        pending.clear();
        pending_n = 0;
      }
      return Status::Ok();
    }, &row->rep);
    if (st.ok() && pending_n) st = sink_->Send(pending, pending_n);
  }
  row->job_id = row->rep.job_id;
  if (!st.ok()) row->error = st.message();
  return st;
}

Status LogImporter::Flush() { return sink_ ? sink_->Flush() : Status::Ok(); }

Result<JobRecord> JobRecordOf(const Log& l, const std::string& id, const std::string& cluster) {
  if (id.empty() || id.size() > 19 || id.find_first_not_of("0123456789") != std::string::npos)
    return Status::Invalid("job id '" + id + "' is not numeric: not written to the job database");
  JobRecord jr;
  jr.cluster = cluster;
  jr.job_id = std::stoull(id);
  jr.uid = l.job.uid;
  jr.task_count = l.job.nprocs;
  jr.start_ns = l.job.start_sec * 1000000000 + l.job.start_nsec;
  jr.end_ns = l.job.end_sec * 1000000000 + l.job.end_nsec;
  if (!l.job.exe.empty()) jr.command = l.job.exe;
  jr.source = "darshan";
  return jr;
}

std::string AppsLine(const Log& l, const std::string& job_id) {
  if (l.job.exe.empty()) return "";
  std::string exe = l.job.exe;
  std::replace(exe.begin(), exe.end(), '\t', ' ');
  return job_id + "\t" + exe + "\n";
}

std::string ImportTable(const std::vector<LogImport>& rows, bool to_store) {
  std::string o;
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      Appendf(&o, "%s: NOT READ: %s\n", r.path.c_str(), r.error.c_str());
      continue;
    }
    Appendf(&o, "%s: Darshan %s, job %s, %lld processes, %s\n", r.path.c_str(), r.version.c_str(), r.job_id.c_str(),
                static_cast<long long>(r.nprocs), r.exe.substr(0, 80).c_str());
    Appendf(&o, "  %-12s %-4s %9s %12s %12s %12s %12s  %s\n", "module", "ver", "records", "reads", "writes",
                "read", "written", "note");
    for (const auto& m : r.modules) {
      std::string note = m.read ? "imported" : "skipped";
      if (!m.note.empty()) note += ": " + m.note;
      if (m.partial) note += " (partial: Darshan ran out of module memory at run time)";
      auto it = r.rep.totals.find(m.name);
      if (it != r.rep.totals.end()) {
        const auto& t = it->second;
        Appendf(&o, "  %-12s %-4u %9llu %12llu %12llu %12s %12s  %s\n", m.name.c_str(), m.version,
                    static_cast<unsigned long long>(m.records), static_cast<unsigned long long>(t.reads),
                    static_cast<unsigned long long>(t.writes), Human(t.bytes_read).c_str(),
                    Human(t.bytes_written).c_str(), note.c_str());
      } else {
        Appendf(&o, "  %-12s %-4u %9llu %12s %12s %12s %12s  %s\n", m.name.c_str(), m.version,
                    static_cast<unsigned long long>(m.records), "", "", "", "", note.c_str());
      }
    }
    Appendf(&o, "  records: %llu (%llu DXT ops)", static_cast<unsigned long long>(r.rep.lines),
                static_cast<unsigned long long>(r.rep.dxt_segments));
    if (to_store)
      Appendf(&o, ", stored %llu, already stored %llu", static_cast<unsigned long long>(r.stored.inserted),
                  static_cast<unsigned long long>(r.stored.duplicates));
    if (r.rep.dxt_files_incomplete)
      Appendf(&o, "; %llu files' DXT trace incomplete: their counters used",
                  static_cast<unsigned long long>(r.rep.dxt_files_incomplete));
    Appendf(&o, "\n");
  }
  return o;
}

std::string ImportJson(const std::vector<LogImport>& rows) {
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
  return o;
}

}  // namespace iosonar::darshan
