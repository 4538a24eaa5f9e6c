// The exporters linked into the `iosonar` binary: one line each. The front
// command dispatches `iosonar NAME` to RunExporter(*descriptor) and lists
// them in its help.
#include <vector>

#include "exporters/framework/exporter.h"

namespace iosonar::exporters {

extern const Descriptor kLustreExporter;                   // exporters/lustre
extern const Descriptor kHealthExporter, kProbeExporter;  // exporters/health, exporters/probe
extern const Descriptor kSlurmExporter;                    // exporters/scheduler

std::span<const Descriptor* const> AllExporters() {
  static const std::vector<const Descriptor*> kAll = {
      &kLustreExporter,
      &kHealthExporter,
      &kProbeExporter,
      &kSlurmExporter,
  };
  return kAll;
}

}  // namespace iosonar::exporters
