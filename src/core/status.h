// Status and Result<T>: how every boundary (files, user input, HTTP, config) reports failure.
// Messages start with the component in brackets and say expected vs actual, e.g.
//   [gguf] tensor 'blk.3.attn_q.weight': offset 1234567 + 4096 bytes is past the end of the file
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace minfer {

// What kind of failure; the HTTP layer maps these to status codes.
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,    // bad user input: a flag, a request field, a token id
  kNotFound,           // a missing file, key, tensor
  kOutOfRange,         // a position past the context, an index past a table
  kResourceExhausted,  // a budget is full (KV blocks, queue)
  kUnsupported,        // a valid thing we do not implement (a tensor type, an architecture)
  kCorrupt,            // malformed input data (a broken file)
  kIo,                 // the operating system refused (open, mmap, write)
  kInternal,           // a bug on our side
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Builds an error Status with an fmt-style message.
template <typename... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).is_ok()) {
      state_ = Status(ErrorCode::kInternal, "[core] Result built from an ok Status");
    }
  }

  bool is_ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(state_);
  }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace minfer

#define MINFER_CONCAT_INNER(a, b) a##b
#define MINFER_CONCAT(a, b) MINFER_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is an error.
#define MINFER_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::minfer::Status minfer_status_ = (expr);           \
    if (!minfer_status_.is_ok()) return minfer_status_; \
  } while (0)

// `MINFER_ASSIGN_OR_RETURN(auto x, make_x());` — unwraps a Result or returns its Status.
#define MINFER_ASSIGN_OR_RETURN(lhs, expr) \
  MINFER_ASSIGN_OR_RETURN_IMPL(MINFER_CONCAT(minfer_result_, __LINE__), lhs, expr)
#define MINFER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
