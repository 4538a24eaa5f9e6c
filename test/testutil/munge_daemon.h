// A real munged for tests: a fresh random key and its own socket under a
// TempDir, polled with `munge -n` until it answers (no sleeps), stopped by pid
// on destruction. The socket's directory is open to every user, so a test
// can make credentials as another uid (`setpriv --reuid=UID munge -n`).
#pragma once
#include <optional>
#include <string>

#include "test/testutil/testutil.h"

namespace iosonar::test {

class MungeDaemon {
 public:
  MungeDaemon();  // FAILs the test if munged is missing or does not come up
  ~MungeDaemon();
  const std::string& socket() const { return socket_; }
  // `munge -n` run as uid/gid (setpriv), the credential text; REQUIREs success.
  std::string Credential(int uid, int gid) const;

 private:
  TempDir dir_;
  std::string socket_;
  std::optional<Child> proc_;
};

bool HaveMunge();

}  // namespace iosonar::test
