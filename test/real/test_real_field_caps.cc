// Every field a Kibana data view, Lens panel or Grafana query names exists,
// with the expected type, in the real engine's _field_caps after records of
// every dataset were written (test/static/check_field_caps.py, with its own
// selftest of mutated copies).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/real/real_engine.h"
#include "test/testutil/testutil.h"

using namespace iosonar::test;

namespace {

void FieldCaps(SearchEngine& e) {
  EnsureTemplates(e);  // es-setup once per engine: the check ingests with --setup none
  const auto o = e.options();
  std::vector<std::string> argv = {"python3", SourceDir() + "/test/static/check_field_caps.py", "--url", e.url(),
                                   "--source", SourceDir(), "--iosonar", IosonarBin(), "--ingest", "--setup", "none",
                                   "--selftest"};
  if (!o.user.empty()) argv.insert(argv.end(), {"--user", o.user});
  if (!o.ca_file.empty()) argv.insert(argv.end(), {"--ca-file", o.ca_file});
  auto env = e.Env();
  auto r = Run(argv, env);
  INFO(r.out);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

}  // namespace

REAL_ENGINE_TEST("every field the dashboards name is in _field_caps with its type", "[fieldcaps]", FieldCaps)
