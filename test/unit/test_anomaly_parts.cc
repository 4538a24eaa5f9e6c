// The small parts around anomaly detection: the worker's queue (order,
// failure, bad ids), which screening hours are due, the screening state's
// round trip, peak files, and the alert mail's wire form.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "analysis-jobs/anomaly/screen.h"
#include "analysis-jobs/worker/queue.h"
#include "analysis-jobs/worker/worker.h"
#include "core/transport/smtp.h"
#include "test/testutil/testutil.h"

using namespace iosonar;
using iosonar::test::TempDir;

TEST_CASE("analysis queue: oldest first, removed when done, failures set aside with the reason", "[worker]") {
  TempDir dir;
  worker::AnalysisQueue q(dir / "q");
  REQUIRE(q.Enqueue("42").ok());
  REQUIRE(q.Enqueue("7", "sim").ok());
  REQUIRE(q.Enqueue("1000").ok());
  CHECK(q.Enqueue("../etc").code() == Code::kInvalid);
  CHECK(q.Enqueue("").code() == Code::kInvalid);
  struct stat st {};
  REQUIRE(::stat((dir / "q").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto items = q.List();
  REQUIRE(items.ok());
  REQUIRE(items->size() == 3);
  CHECK((*items)[0].job_id == "42");
  CHECK((*items)[1].job_id == "7");
  CHECK((*items)[1].cluster == "sim");
  CHECK((*items)[2].job_id == "1000");
  REQUIRE(::stat((*items)[0].path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(q.Done((*items)[0]).ok());
  REQUIRE(q.Fail((*items)[1], "no records").ok());
  items = q.List();
  REQUIRE(items.ok());
  REQUIRE(items->size() == 1);
  CHECK((*items)[0].job_id == "1000");
  const auto failed = test::SplitLines(test::Run({"/bin/sh", "-c", "cat " + dir / "q/failed/*.reason"}).out);
  CHECK(failed == std::vector<std::string>{"no records"});
  // A garbage file in the queue is set aside, not taken for a job.
  FILE* f = std::fopen((dir / "q/zzz-garbage").c_str(), "w");
  REQUIRE(f);
  std::fputs("not a job id\n", f);
  std::fclose(f);
  items = q.List();
  REQUIRE(items.ok());
  CHECK(items->size() == 1);
}

TEST_CASE("analysis queue: a job queued by the epilog and the poller is queued and analysed once, --enqueue always",
          "[worker]") {
  TempDir dir;
  worker::AnalysisQueue q(dir / "q");
  bool queued = false;
  REQUIRE(q.Enqueue("81", "vm", true, &queued).ok());  // the epilog
  CHECK(queued);
  REQUIRE(q.Enqueue("81", "vm", true, &queued).ok());  // the poller, before the worker ran: already queued
  CHECK_FALSE(queued);
  REQUIRE(q.Enqueue("81", "other", true, &queued).ok());  // the same id on another cluster is another job
  CHECK(queued);
  auto items = q.List();
  REQUIRE(items.ok());
  REQUIRE(items->size() == 2);
  CHECK((*items)[0].once);
  CHECK_FALSE(q.Analysed((*items)[0]));
  REQUIRE(q.Done((*items)[0], true).ok());  // analysed
  CHECK(q.Analysed((*items)[0]));
  struct stat st {};
  REQUIRE(::stat((dir / "q/done/vm@81").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // The poller again, after the analysis: not queued.
  REQUIRE(q.Enqueue("81", "vm", true, &queued).ok());
  CHECK_FALSE(queued);
  // An administrator's --enqueue: queued although analysed, and not marked once.
  REQUIRE(q.Enqueue("81", "vm", false, &queued).ok());
  CHECK(queued);
  items = q.List();
  REQUIRE(items.ok());
  REQUIRE(items->size() == 2);
  CHECK((*items)[1].job_id == "81");
  CHECK((*items)[1].cluster == "vm");
  CHECK_FALSE((*items)[1].once);
  // Two sources racing past the check both wrote an entry: the worker sees the
  // second is of an analysed job (once) and drops it (cmd_analyze).
  REQUIRE(q.Done((*items)[0], true).ok());
  REQUIRE(q.Done((*items)[1], true).ok());
  FILE* f = std::fopen((dir / "q/99999999999999999999-000001-0000-81").c_str(), "w");
  REQUIRE(f);
  std::fputs("81\tvm\tonce\n", f);
  std::fclose(f);
  items = q.List();
  REQUIRE(items.ok());
  REQUIRE(items->size() == 1);
  CHECK((*items)[0].once);
  CHECK(q.Analysed((*items)[0]));
  // A cluster name that is not a plain file name is written in hex; tabs are refused.
  REQUIRE(q.Done({"", "82", "../x", true}, true).ok());
  CHECK(::stat((dir / "q/done/x2e2e2f78@82").c_str(), &st) == 0);
  CHECK(q.Enqueue("83", "a\tb").code() == Code::kInvalid);
}

TEST_CASE("worker: the whole hours not yet screened are due, oldest first", "[worker]") {
  constexpr int64_t H = 3600ll * 1000000000;
  const int64_t t0 = 1795305600ll * 1000000000;  // a whole hour
  // No state: the last whole hour only.
  auto d = worker::DueScreenings(0, t0 + 2 * H + 5, H);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == std::make_pair(t0 + H, t0 + 2 * H));
  // Screened up to t0: the hours since, up to the last whole one (after downtime: all of them).
  d = worker::DueScreenings(t0, t0 + 3 * H + H / 2, H);
  REQUIRE(d.size() == 3);
  CHECK(d[0].first == t0);
  CHECK(d[2].second == t0 + 3 * H);
  CHECK(worker::DueScreenings(t0 + 3 * H, t0 + 3 * H + H / 2, H).empty());
}

TEST_CASE("screen state: round trip in a 0600 file, a missing file is empty, garbage is an error naming the file", "[screen]") {
  TempDir dir;
  auto empty = anomaly::LoadScreenState(dir / "none.json");
  REQUIRE(empty.ok());
  CHECK(empty->open.empty());
  anomaly::ScreenState s;
  s.to_ns = 123;
  s.open["ost:fs-OST0003"] = {10, 20, 0.25};
  s.peaks["ost:fs-OST0003"] = 1.5e9;
  s.reported.insert("ost:fs-OST0003:2026-11-22T00:20:00.000Z");
  s.alerted.insert("ost:fs-OST0003:2026-11-22T00:20:00.000Z");
  REQUIRE(anomaly::SaveScreenState(dir / "s.json", s).ok());
  struct stat st {};
  REQUIRE(::stat((dir / "s.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto back = anomaly::LoadScreenState(dir / "s.json");
  REQUIRE(back.ok());
  CHECK(back->to_ns == 123);
  CHECK(back->open.at("ost:fs-OST0003").last_low_end_ns == 20);
  CHECK(back->peaks.at("ost:fs-OST0003") == 1.5e9);
  CHECK(back->reported == s.reported);
  CHECK(back->alerted == s.alerted);
  FILE* f = std::fopen((dir / "bad.json").c_str(), "w");
  std::fputs("{\"open\": 3}", f);
  std::fclose(f);
  auto bad = anomaly::LoadScreenState(dir / "bad.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.json") != std::string::npos);
}

TEST_CASE("peak file: NAME BYTES_PER_S lines, a bad line is named with file:line", "[screen]") {
  TempDir dir;
  FILE* f = std::fopen((dir / "p.txt").c_str(), "w");
  std::fputs("# peaks\nfs-OST0000 2e9\nfwd001\t1500000000\n\nfs-OST0001 fast\n", f);
  std::fclose(f);
  auto p = anomaly::LoadPeaks(dir / "p.txt");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("p.txt:5") != std::string::npos);
  f = std::fopen((dir / "p.txt").c_str(), "w");
  std::fputs("# peaks\nfs-OST0000 2e9\nfwd001\t1500000000\n", f);
  std::fclose(f);
  p = anomaly::LoadPeaks(dir / "p.txt");
  REQUIRE(p.ok());
  CHECK(p->at("fs-OST0000") == 2e9);
  CHECK(p->at("fwd001") == 1.5e9);
}

TEST_CASE("alert mail: CRLF lines, headers, no header injection through a subject", "[alert]") {
  MailMessage m;
  m.from = "iosonar@host";
  m.to = {"a@example.org", "b@example.org"};
  m.subject = "ost fs-OST0003 slow\r\nBcc: evil@example.org";
  m.body = "line 1\nline 2";
  const std::string t = FormatMail(m, 1795305600ll * 1000000000, "1.iosonar@host");
  CHECK(t.find("Date: Sun, 22 Nov 2026 00:00:00 +0000\r\n") == 0);
  CHECK(t.find("To: <a@example.org>, <b@example.org>\r\n") != std::string::npos);
  CHECK(t.find("\r\nBcc:") == std::string::npos);
  CHECK(t.find("Subject: ost fs-OST0003 slow  Bcc: evil@example.org\r\n") != std::string::npos);
  CHECK(t.find("\r\n\r\nline 1\r\nline 2\r\n") != std::string::npos);
  // Not an SMTP URL: refused before anything is sent.
  CHECK(SendMail({"http://x", "", "", false, 5}, m).code() == Code::kInvalid);
}
