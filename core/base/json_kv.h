// One call for a run of JSON key/value pairs: KvAll(w, "a", x, "b", y) is
// w.Kv("a", x); w.Kv("b", y); KvObject(w, ...) wraps them in { }. The output
// is the same as writing each pair; the analyses' JSON is mostly such runs.
#pragma once
#include <string_view>

#include "core/base/json.h"

namespace iosonar {

inline void KvAll(JsonWriter&) {}

template <typename V, typename... Rest>
void KvAll(JsonWriter& w, std::string_view k, const V& v, const Rest&... rest) {
  w.Kv(k, v);
  KvAll(w, rest...);
}

template <typename... KeysAndValues>
void KvObject(JsonWriter& w, const KeysAndValues&... kv) {
  static_assert(sizeof...(kv) % 2 == 0, "KvObject takes keys and values in pairs");
  w.BeginObject();
  KvAll(w, kv...);
  w.EndObject();
}

}  // namespace iosonar
