#include "test/testutil/oracle.h"

#include <catch2/catch.hpp>

#include "test/testutil/testutil.h"

namespace iosonar::test {

rapidjson::Document RunOracle(const std::string& script, const std::vector<std::string>& args,
                              const std::string& stdin_json) {
  std::vector<std::string> argv = {"/usr/bin/python3", SourceDir() + "/test/oracles/" + script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = Run(argv, {}, stdin_json);
  INFO(script << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

}  // namespace iosonar::test
