// The report: advice rules from job summaries and LASSi job
// totals, escaping of user-controlled text, self-contained output.
#include <catch2/catch.hpp>
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
