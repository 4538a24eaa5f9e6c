#include "core/base/host.h"

#include <unistd.h>

namespace iosonar {

std::string HostName() {
  char h[256] = {};  // the last byte stays 0: gethostname need not terminate a truncated name
  if (gethostname(h, sizeof h - 1) != 0) return "unknown";
  return h;
}

}  // namespace iosonar
