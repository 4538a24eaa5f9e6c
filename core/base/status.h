// Errors as values at module boundaries (no exceptions cross them).
// Status is cheap to copy; Result<T> holds either a value or a Status.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace iosonar {

enum class Code { kOk = 0, kInvalid, kNotFound, kIo, kUnavailable, kRetry, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code c, std::string msg) : code_(c), msg_(std::move(msg)) {}
  static Status Ok() { return {}; }
  static Status Invalid(std::string m) { return {Code::kInvalid, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status Io(std::string m) { return {Code::kIo, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  // From errno, where code meets the OS: "what: strerror(err)".
  static Status FromErrno(const std::string& what, int err);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string msg_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::move(v)) {}            // NOLINT(google-explicit-constructor)
  Result(Status s) : v_(std::move(s)) {}       // NOLINT(google-explicit-constructor)
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace iosonar
