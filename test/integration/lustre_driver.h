// `iosonar lustre` in-process on a synthetic clock, for the exporter's tests:
// tick k is stamped kDriverBase + k s (the fixture's first snapshot_time is
// kDriverBase), one Collect per Sample(); all() keeps every line emitted.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "test/testutil/exporter_driver.h"

namespace iosonar::exporters {
extern const Descriptor kLustreExporter;
}

namespace iosonar::test {

class LustreDriver : public ExporterDriver {
 public:
  LustreDriver(std::vector<std::string> args, const std::string& host)
      : ExporterDriver(exporters::kLustreExporter, std::move(args), host) {}
};

}  // namespace iosonar::test
