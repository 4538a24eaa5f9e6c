// A password on a traced program's command line never leaves the node.
#include <catch2/catch.hpp>
#include <string>

#include "test/integration/trace_util.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

TEST_CASE("tracer: process.command_line carries no password", "[tracer][redact]") {
  TempDir dir;
  const std::string out = dir.path() + "/trace.jsonl";
  const std::string data = dir.path() + "/data";
  auto t = RunTraced({"/bin/sh", "-c", "echo x > " + data, "sh", "--password=hunter2", "--token", "t0k3n99",
                      "redis://:s3cr3tpw@h:6379/0"},
                     out);
  REQUIRE(t.run.exit_code == 0);
  const std::string text = ReadFile(out);
  REQUIRE(text.find("process.command_line") != std::string::npos);
  CHECK(text.find("hunter2") == std::string::npos);
  CHECK(text.find("t0k3n99") == std::string::npos);
  CHECK(text.find("s3cr3tpw") == std::string::npos);
  CHECK(text.find("--password=***") != std::string::npos);
  CHECK(text.find("--token ***") != std::string::npos);
  CHECK(text.find("redis://:***@h:6379/0") != std::string::npos);
}
