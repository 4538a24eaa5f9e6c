// Secrets out of command lines before they leave the node: the values of
// password-like options (--password X, --password=X, --db-token=X, -p X is
// NOT touched: too many programs use -p for a port or a path), password-like
// KEY=VALUE words (PGPASSWORD=..., AWS_SECRET_ACCESS_KEY=...) and the password
// of URL credentials (scheme://user:PASS@host) become "***".
//
// In place, no allocation, no libc beyond memmove: the tracer calls it in its
// constructor on /proc/self/cmdline (words separated by single spaces).
#pragma once
#include <cstddef>
#ifndef IOSONAR_NO_STD_STRING
#include <string>
#endif

namespace iosonar {

// Redacts s[0..n) in place; returns the new length (never more than n).
size_t RedactCommandLine(char* s, size_t n);

// True when an option or variable name (without leading dashes) names a secret:
// it contains password, passwd, passphrase, secret, token, apikey, api-key,
// api_key, credential or auth-key (case-insensitive).
bool IsSecretName(const char* name, size_t n);

#ifndef IOSONAR_NO_STD_STRING
inline std::string RedactedCommandLine(std::string s) {
  s.resize(RedactCommandLine(s.data(), s.size()));
  return s;
}
#endif

}  // namespace iosonar
