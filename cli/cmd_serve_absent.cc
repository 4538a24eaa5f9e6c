// `iosonar serve` in a build without it (-DIOSONAR_BUILD_SERVE=OFF, the quick
// build of scripts/demo.sh, which installs neither libmicrohttpd nor npm).
#include <cstdio>

#include "cli/commands.h"

namespace iosonar::cli {

int CmdServe(int, char**) {
  std::fprintf(stderr,
               "iosonar serve: not in this build (configured with -DIOSONAR_BUILD_SERVE=OFF, as "
               "scripts/demo.sh does); build it with scripts/setup.sh && scripts/build.sh\n");
  return 2;
}

}  // namespace iosonar::cli
