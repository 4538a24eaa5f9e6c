#include "analysis-jobs/job-summary/job_meta.h"

#include <optional>
#include <sstream>

#include "core/base/json.h"
#include "core/base/timeutil.h"

namespace iosonar::analysis {

JobSummaryRow ToJobSummaryRow(const JobSummary& s, const std::string& cluster, uint64_t job_id) {
  JobSummaryRow row;
  row.cluster = cluster;
  row.job_id = job_id;
  row.runtime_s = s.runtime_s;
  row.read_bytes = s.read.bytes;
  row.write_bytes = s.write.bytes;
  row.read_ops = s.read.ops;
  row.write_ops = s.write.ops;
  row.read_bw_avg = s.read.bw_avg;
  row.read_bw_peak = s.read.bw_peak;
  row.write_bw_avg = s.write.bw_avg;
  row.write_bw_peak = s.write.bw_peak;
  row.read_iops = s.read.iops;
  row.write_iops = s.write.iops;
  row.meta_ops = s.meta_ops;
  row.meta_ops_per_s = s.meta_ops_per_s;
  row.processes_with_io = s.processes_with_io;
  row.nodes_with_io = s.nodes_with_io;
  row.files = s.files;
  row.errors = s.errors;
  row.io_mode_read = s.mode_read.mode;
  row.io_mode_write = s.mode_write.mode;
  row.summary_json = SummaryToJson(s, false);
  return row;
}

namespace {

std::string JobMetaToJson(const JobMeta& meta, int indent) {
  const JobRecord& j = meta.job;
  std::string out;
  JsonWriter w(&out, indent);
  w.BeginObject();
  w.Kv("cluster", j.cluster);
  w.Kv("job_id", static_cast<int64_t>(j.job_id));
  auto opt_s = [&](const char* k, const std::optional<std::string>& v) {
    w.Key(k);
    if (v) w.String(*v);
    else w.Null();
  };
  auto opt_i = [&](const char* k, const std::optional<int64_t>& v) {
    w.Key(k);
    if (v) w.Int(*v);
    else w.Null();
  };
  auto opt_t = [&](const char* k, const std::optional<int64_t>& v) {
    w.Key(k);
    if (v) w.String(FormatIsoMillis(*v));
    else w.Null();
  };
  opt_s("user", j.user);
  opt_s("name", j.name);
  opt_s("command", j.command);
  opt_s("partition", j.partition);
  opt_s("node_list", j.node_list);
  w.Key("nodes");
  w.BeginArray();
  for (const auto& n : meta.nodes) w.String(n);
  w.EndArray();
  opt_i("array_job_id", j.array_job_id);
  opt_i("array_task_id", j.array_task_id);
  opt_t("start", j.start_ns);
  opt_t("end", j.end_ns);
  opt_s("state", j.state);
  opt_i("exit_code", j.exit_code);
  w.EndObject();
  return out;
}

}  // namespace

std::string SummaryJsonWithJob(const JobSummary& s, const JobMeta* meta, bool pretty) {
  std::string js = SummaryToJson(s, pretty);
  if (!meta) return js;
  size_t close = js.find_last_of('}');
  if (close == std::string::npos) return js;
  std::string m = JobMetaToJson(*meta, pretty ? 2 : 0);
  js.insert(close, std::string(pretty ? ",\n  " : ",") + "\"job\": " + m + (pretty ? "\n" : ""));
  if (pretty) {  // trailing whitespace before the inserted text
    size_t ins = js.rfind(",\n  \"job\"");
    while (ins > 0 && (js[ins - 1] == '\n' || js[ins - 1] == ' ')) js.erase(--ins, 1);
  }
  return js;
}

std::string WithMember(std::string json, const std::string& key, const std::string& value_json, bool pretty) {
  const size_t close = json.find_last_of('}');
  if (close == std::string::npos || value_json.empty()) return json;
  const std::string head = std::string(pretty ? ",\n  " : ",") + "\"" + key + "\": ";
  json.insert(close, head + value_json + (pretty ? "\n" : ""));
  if (pretty) {  // trailing whitespace before the inserted text
    size_t ins = json.rfind(head);
    while (ins > 0 && (json[ins - 1] == '\n' || json[ins - 1] == ' ')) json.erase(--ins, 1);
  }
  return json;
}

std::string JobMetaToTable(const JobMeta& meta) {
  const JobRecord& j = meta.job;
  auto v = [](const std::optional<std::string>& s) { return s ? *s : std::string("-"); };
  std::ostringstream o;
  o << "Job " << j.job_id << " on " << j.cluster << " (job database)\n"
    << "  user       " << v(j.user) << "\n"
    << "  name       " << v(j.name) << "\n"
    << "  command    " << v(j.command) << "\n"
    << "  nodes      " << v(j.node_list) << " (" << meta.nodes.size() << ")\n"
    << "  start      " << (j.start_ns ? FormatIsoMillis(*j.start_ns) : "-") << "\n"
    << "  end        " << (j.end_ns ? FormatIsoMillis(*j.end_ns) : "-") << "\n"
    << "  state      " << v(j.state) << (j.exit_code ? " (exit code " + std::to_string(*j.exit_code) + ")" : "")
    << "\n\n";
  return o.str();
}

}  // namespace iosonar::analysis
