// The report: advice rules from job summaries and LASSi job
// totals, escaping of user-controlled text, self-contained output.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "analysis-jobs/report/report.h"
#include "core/base/html.h"

using namespace iosonar;

TEST_CASE("report advice: N-1 with many processes and small requests from job summaries", "[report]") {
  report::ReportInput in;
  analysis::JobSummary n1;
  n1.job_id = "42";
  n1.mode_write.mode = "N-1";
  n1.mode_write.processes = 64;
  n1.mode_write.explanation = "64 processes write one file";
  n1.write.ops = 100000;
  n1.write.avg_request_bytes = 4096;
  n1.write.sequential_share = 1;  // one op after the other: no random access
  in.summaries["42"] = n1;
  analysis::JobSummary ok = n1;
  ok.job_id = "43";
  ok.mode_write.processes = 8;  // N-1 but few processes
  ok.write.avg_request_bytes = 4 << 20;
  in.summaries["43"] = ok;
  auto adv = report::FindAdvice(in);
  REQUIRE(adv.size() == 2);
  CHECK(adv[0].job == "42");
  CHECK(adv[0].kind == "N-1 with many processes");
  CHECK(adv[0].change.find("collective") != std::string::npos);
  CHECK(adv[1].kind == "small requests");
  CHECK(adv[1].evidence.find("4 KiB") != std::string::npos);
}

TEST_CASE("report advice: drishti's rules on Darshan's counters, at drishti's thresholds", "[report]") {
  report::ReportInput in;
  analysis::JobSummary j;
  j.job_id = "50";
  j.write.ops = 5000;
  j.write.sequential_share = 0.7;  // 1,500 ops (30 %) not consecutive
  j.read.ops = 5000;
  j.read.sequential_share = 0.85;  // 750 (15 %): under both thresholds
  j.alignment.data_ops = 10000;
  j.alignment.not_aligned = 1001;  // 10.01 %
  j.alignment.alignment = 1048576;
  analysis::ImbalancedFile st;
  st.id = "f1";
  st.path = "/scratch/shared.h5";
  st.layer = "posix";
  st.kind = "stragglers";
  st.slowest_rank = 7;
  st.fastest_rank = 2;
  st.slowest_bytes = 300;
  st.fastest_bytes = 100;
  st.bytes = 1000;
  st.bytes_imbalance = 0.2;
  j.imbalanced_files.push_back(st);
  j.shared_small_write_ops = 1000;
  j.shared_small_write.push_back({"f1", "/scratch/shared.h5", 4096000, 16});
  j.mpiio.records = 10;
  j.mpiio.write.ops = 1001;  // all independent
  j.mpiio.read.ops = 1001;
  j.mpiio.read.collective_ops = 1;
  in.summaries["50"] = j;
  auto kinds = [](const std::vector<report::Advice>& v) {
    std::set<std::string> k;
    for (const auto& a : v) k.insert(a.kind);
    return k;
  };
  auto adv = report::FindAdvice(in);
  CHECK(kinds(adv) == std::set<std::string>{"misaligned requests", "stragglers", "random access",
                                            "small requests on shared files", "no collective MPI-IO"});
  for (const auto& a : adv) {
    CHECK_FALSE(a.change.empty());
    if (a.kind == "misaligned requests") CHECK(a.evidence.find("1001 of 10000") != std::string::npos);
    if (a.kind == "stragglers") CHECK(a.evidence.find("/scratch/shared.h5: the slowest rank (7)") != std::string::npos);
    if (a.kind == "random access") CHECK(a.evidence.find("writes (30%)") != std::string::npos);
    if (a.kind == "no collective MPI-IO") CHECK(a.evidence.find("writes") != std::string::npos);
  }
  // Just under every threshold: nothing.
  j.write.sequential_share = 0.8;
  j.alignment.not_aligned = 1000;  // 10 %, not more
  j.imbalanced_files.clear();
  j.shared_small_write_ops = 999;
  j.mpiio.write.ops = 1000;
  in.summaries["50"] = j;
  CHECK(report::FindAdvice(in).empty());
}

TEST_CASE("report advice from LASSi job totals, thresholds respected", "[report]") {
  report::ReportInput in;
  lassi::TargetTotal meta;
  meta.fs = "fs";
  meta.target = "7";
  meta.app = "./farm";
  meta.meta_ops = 20000;
  meta.write_kb = 1024;  // 1 MiB: 20000 per MiB
  lassi::TargetTotal fine = meta;
  fine.target = "8";
  fine.meta_ops = 9999;  // below the 10,000 floor
  in.lassi.jobs = {meta, fine};
  auto adv = report::FindAdvice(in);
  REQUIRE(adv.size() == 1);
  CHECK(adv[0].job == "7");
  CHECK(adv[0].kind == "metadata-heavy");
}

TEST_CASE("report escapes command lines and loads nothing from elsewhere", "[report]") {
  report::ReportInput in;
  in.title = "2026-11-20";
  in.lassi.opt.window_ns = 3600LL * 1000000000;
  lassi::WindowRow w;
  w.fs = "fs";
  w.start_ns = 0;
  w.risk_oss = 2;
  in.lassi.fs_windows.push_back(w);
  lassi::WindowRow a = w;
  a.target = "</script><script>alert(1)</script> & \"x\"";
  in.lassi.app_windows.push_back(a);
  lassi::TargetTotal t;
  t.fs = "fs";
  t.target = "1";
  t.app = a.target;
  t.risk_oss = 2;
  t.windows = 1;
  in.lassi.jobs.push_back(t);
  auto out = report::RenderReport(in);
  CHECK(out.html.find("<script>alert(1)") == std::string::npos);
  CHECK(out.html.find("&lt;/script&gt;&lt;script&gt;alert(1)") != std::string::npos);
  CHECK(out.html.find("src=") == std::string::npos);
  CHECK(out.html.find("<svg") != std::string::npos);
  CHECK(out.text.find("File system fs: 1 windows, 1 with risk > 0") != std::string::npos);
  CHECK(out.json.find("\"advice\":[]") != std::string::npos);
  CHECK(HtmlEscape("a<b>&'\"") == "a&lt;b&gt;&amp;&#39;&quot;");
}
