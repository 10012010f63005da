// kcache: the error vocabulary of the public API.
//
// No exception crosses the kcache API. Every operation that can fail returns
// a `Status` (when it has no value) or a `Result<T>` (a value or a Status).
// A cache miss is not an error: tiers report it as an empty optional, and
// `Cache::get_or_compile` turns it into a compile. What reaches the caller as
// a non-ok Status is a real failure: a compile error (with the compiler's
// log in `details()`), bad input, or an I/O problem the operation could not
// work around.
#pragma once

#include <kcache/export.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kcache {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the request or an option is malformed; nothing was tried
  kNotFound,         // a named thing (file, kernel, backend library) does not exist
  kCompileError,     // the compiler rejected the source; details() holds its log
  kIoError,          // a read, write, rename or sync failed
  kCorruption,       // stored bytes failed their checksum or do not parse
  kTimeout,          // a bounded wait ran out
  kUnavailable,      // a backend or service cannot be used here (library missing)
  kNotSupported,     // the operation is not offered by this tier or backend
  kInternal,         // a bug in kcache; please report it
};

// The stable lower-case name of a code, e.g. "compile_error".
KCACHE_EXPORT std::string_view status_code_name(StatusCode code);

// A value type: cheap to copy when ok, holds a message and optional details
// (a compiler log, for instance) otherwise. Thread-compatible.
class KCACHE_EXPORT Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message, std::string details = {})
      : code_(code), message_(std::move(message)), details_(std::move(details)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status compile_error(std::string m, std::string log) {
    return {StatusCode::kCompileError, std::move(m), std::move(log)};
  }
  static Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status not_supported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  [[nodiscard]] bool is_ok() const { return code_ == StatusCode::kOk; }
  [[nodiscard]] StatusCode code() const { return code_; }
  // One line, for people: what failed and why. Empty when ok.
  [[nodiscard]] const std::string& message() const { return message_; }
  // Free-form extra text: the compiler's log for kCompileError.
  [[nodiscard]] const std::string& details() const { return details_; }
  // "<code name>: <message>", or "ok".
  [[nodiscard]] std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string details_;
};

// Either a T or a non-ok Status. value() (and * and ->) of an error is a
// programming error: it throws std::bad_variant_access, in every build,
// and the library never does it. status() of a value is an ok Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(Status status) : state_(std::in_place_index<1>, std::move(status)) {}

  [[nodiscard]] bool is_ok() const { return state_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  // The error; an ok Status when this holds a value.
  [[nodiscard]] const Status& status() const {
    static const Status ok_status;
    return is_ok() ? ok_status : std::get<1>(state_);
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace kcache
