// Errors as values: Result<T> carries either a value or an Error a user can act on.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace benchfleet {

enum class ErrorCode {
  kInvalidArgument,  // bad input; `field` names the offending JSON path when known
  kNotFound,
  kConflict,          // e.g. stale lease, different result for the same attempt
  kUnauthenticated,   // missing or wrong credentials
  kPermissionDenied,  // valid credentials, not allowed
  kPayloadTooLarge,
  kUnavailable,  // shutting down, database busy past the timeout
  kInternal,
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string field;  // JSON path such as "measurement.min_iterations"; empty if none

  static Error invalid(std::string field, std::string message) {
    return {ErrorCode::kInvalidArgument, std::move(message), std::move(field)};
  }
  static Error not_found(std::string message) { return {ErrorCode::kNotFound, std::move(message), {}}; }
  static Error conflict(std::string message) { return {ErrorCode::kConflict, std::move(message), {}}; }
  static Error internal(std::string message) { return {ErrorCode::kInternal, std::move(message), {}}; }

  // "field: message" when a field is known, else the message.
  std::string describe() const { return field.empty() ? message : field + ": " + message; }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // REQUIRES: !ok()
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// A Result without a value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return {}; }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  // REQUIRES: !ok()
  const Error& error() const {
    assert(failed_);
    return error_;
  }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace benchfleet

// Propagate an error from a Status or Result expression to the caller.
#define BF_CONCAT_INNER(a, b) a##b
#define BF_CONCAT(a, b) BF_CONCAT_INNER(a, b)
#define BF_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    auto&& bf_status_ = (expr);                      \
    if (!bf_status_.ok()) return bf_status_.error(); \
  } while (0)
// `BF_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its error.
#define BF_ASSIGN_OR_RETURN(lhs, expr) BF_ASSIGN_OR_RETURN_IMPL(BF_CONCAT(bf_result_, __LINE__), lhs, expr)
// `tmp` is a name and `lhs` may be a declaration: neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define BF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.error();             \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
