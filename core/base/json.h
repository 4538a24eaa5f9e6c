// JSON on std::string for everything off the tracer's hot path: a small
// streaming writer (objects, arrays, escaping) used by the summary, the schema
// dump and the dead-letter file. Parsing lives in record.h (RapidJSON, kept
// out of headers so only a few translation units pay for it).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iosonar {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out, int indent = 0) : out_(out), indent_(indent) {}
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view k);
  void String(std::string_view s);
  void Int(int64_t v);
  void Double(double v);  // shortest round-trip form; NaN/inf become null
  void Bool(bool b);
  void Null();
  template <typename V>
  void Kv(std::string_view k, const V& v) {
    Key(k);
    Value(v);
  }

 private:
  void Value(std::string_view s) { String(s); }
  void Value(const std::string& s) { String(s); }
  void Value(const char* s) { String(s); }
  void Value(bool b) { Bool(b); }
  void Value(double d) { Double(d); }
  void Value(int v) { Int(v); }
  void Value(long v) { Int(v); }
  void Value(long long v) { Int(v); }
  void Value(unsigned v) { Int(v); }
  void Value(unsigned long v) { Int(static_cast<int64_t>(v)); }
  void Value(unsigned long long v) { Int(static_cast<int64_t>(v)); }
  void Open(char c);
  void Close(char c);
  void Sep();
  void Newline();
  std::string* out_;
  int indent_;
  std::vector<bool> first_;  // one per open container
  bool after_key_ = false;
};

// Appends s to out as a JSON string literal (with quotes), escaping control
// characters; bytes that are not valid UTF-8 become \ufffd so the output is
// always valid JSON.
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace iosonar
