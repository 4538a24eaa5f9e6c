// iosonar-exporter: the lean node/server exporter. The same
// exporters, options and records as `iosonar lustre|health|probe`, in a binary
// that links only the record core (schema, JSON, LineSender, sinks) and the
// exporter framework: no libcurl, OpenSSL, MariaDB, SQLite, hiredis or boost,
// so a sampler on every OSS/MDS/client costs a few MiB of RSS. Elasticsearch
// output (--output http(s)://...) loads libcurl at run time, only then.
// `iosonar slurm` (MySQL) and everything else stay in the full `iosonar`.
#include <cstdio>
#include <string_view>
#include <vector>

#include "exporters/framework/exporter.h"

namespace iosonar::exporters {

extern const Descriptor kLustreExporter;                   // exporters/lustre
extern const Descriptor kHealthExporter, kProbeExporter;  // exporters/health, exporters/probe

std::span<const Descriptor* const> AllExporters() {
  static const std::vector<const Descriptor*> kAll = {&kLustreExporter, &kHealthExporter, &kProbeExporter};
  return kAll;
}

}  // namespace iosonar::exporters

namespace {

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: iosonar-exporter EXPORTER [OPTIONS]\n\n"
               "The lean node/server exporter: the exporters of `iosonar`, without its databases and\n"
               "HTTP stack linked (Elasticsearch output loads libcurl at run time).\n\n"
               "exporters (sample a source every --interval, send records to --output):\n");
  for (const auto* d : iosonar::exporters::AllExporters()) std::fprintf(f, "  %-12s %s\n", d->name, d->summary);
  std::fprintf(f, "\n`iosonar-exporter EXPORTER --help` shows the options of one; every other\n"
                  "subcommand (collect, slurm, es-setup, ...) is in the full `iosonar` binary.\n");
}

}  // namespace

int main(int argc, char** argv) {
  iosonar::exporters::SetProgramName("iosonar-exporter");
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string_view sub = argv[1];
  if (sub == "-h" || sub == "--help" || sub == "help") {
    Usage(stdout);
    return 0;
  }
  if (sub == "--version") {
    std::printf("iosonar-exporter 0.1.0\n");
    return 0;
  }
  for (const auto* d : iosonar::exporters::AllExporters())
    if (sub == d->name) return iosonar::exporters::RunExporter(*d, argc - 1, argv + 1);
  std::fprintf(stderr, "iosonar-exporter: unknown exporter '%s'%s\n\n", argv[1],
               sub == "slurm" ? " (`iosonar slurm` needs MySQL: use the full `iosonar` binary)" : "");
  Usage(stderr);
  return 2;
}
