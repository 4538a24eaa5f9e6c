// Independent oracles (test/oracles/*.py): the expected numbers of a named
// metric computed by a separate implementation (numpy, scikit-learn, PyWavelets).
#pragma once
#include <rapidjson/document.h>

#include <string>
#include <vector>

namespace iosonar::test {

// Runs python3 test/oracles/<script> with args and stdin_json, requires it to
// succeed and print JSON, and returns the parsed document.
rapidjson::Document RunOracle(const std::string& script, const std::vector<std::string>& args,
                              const std::string& stdin_json = "");

}  // namespace iosonar::test
