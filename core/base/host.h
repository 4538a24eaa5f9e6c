// This machine's host name: the host.name of the records an exporter or an
// analysis writes.
#pragma once
#include <string>

namespace iosonar {

// gethostname(), or "unknown" when it fails.
std::string HostName();

}  // namespace iosonar
