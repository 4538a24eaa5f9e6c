#include "core/base/redact.h"

#include <cstring>

namespace iosonar {
namespace {

constexpr const char* kSecretWords[] = {"password", "passwd", "passphrase", "secret", "token",
                                        "apikey", "api-key", "api_key", "credential", "auth-key", "auth_key"};
constexpr char kMask[] = "***";
constexpr size_t kMaskLen = 3;

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool ContainsCi(const char* s, size_t n, const char* w) {
  const size_t m = std::strlen(w);
  for (size_t i = 0; i + m <= n; ++i) {
    size_t k = 0;
    while (k < m && Lower(s[i + k]) == w[k]) ++k;
    if (k == m) return true;
  }
  return false;
}

// Replaces s[b..e) of a buffer of length *n by the mask; returns the new end of the masked span.
size_t Mask(char* s, size_t* n, size_t b, size_t e) {
  const size_t len = e - b;
  if (len == 0) return e;
  if (len < kMaskLen) {  // too short to shrink: star it out
    for (size_t i = b; i < e; ++i) s[i] = '*';
    return e;
  }
  std::memcpy(s + b, kMask, kMaskLen);
  std::memmove(s + b + kMaskLen, s + e, *n - e);
  *n -= len - kMaskLen;
  return b + kMaskLen;
}

size_t WordEnd(const char* s, size_t n, size_t i) {
  while (i < n && s[i] != ' ') ++i;
  return i;
}

}  // namespace

bool IsSecretName(const char* name, size_t n) {
  for (const char* w : kSecretWords)
    if (ContainsCi(name, n, w)) return true;
  return false;
}

size_t RedactCommandLine(char* s, size_t n) {
  bool mask_next = false;  // the previous word was "--password" with no value
  size_t i = 0;
  while (i < n) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    size_t e = WordEnd(s, n, i);
    if (mask_next) {
      mask_next = false;
      e = Mask(s, &n, i, e);
      i = e;
      continue;
    }
    // URL credentials anywhere in the word: "://user:PASS@".
    for (size_t k = i; k + 3 <= e; ++k) {
      if (s[k] != ':' || s[k + 1] != '/' || s[k + 2] != '/') continue;
      size_t a = k + 3, at = a, colon = 0;
      while (at < e && s[at] != '@' && s[at] != '/') {
        if (s[at] == ':' && !colon) colon = at;
        ++at;
      }
      if (at < e && s[at] == '@' && colon) {
        const size_t old_n = n;
        Mask(s, &n, colon + 1, at);
        e -= old_n - n;
      }
    }
    // An option: -x... or --name[=value]; a variable: NAME=value.
    size_t name_b = i;
    while (name_b < e && s[name_b] == '-') ++name_b;
    const bool option = name_b > i;
    size_t eq = name_b;
    while (eq < e && s[eq] != '=') ++eq;
    if (IsSecretName(s + name_b, eq - name_b)) {
      if (eq < e) {
        e = Mask(s, &n, eq + 1, e);
      } else if (option && name_b - i == 2) {
        mask_next = true;  // "--password VALUE"
      }
    }
    i = e;
  }
  return n;
}

}  // namespace iosonar
