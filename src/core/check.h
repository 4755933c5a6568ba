// MINFER_CHECK: an always-on check of an internal invariant (a bug if it fails), unlike assert,
// which vanishes in release builds. Never use it to validate input: input gets a Status.
#pragma once

namespace minfer::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               const char* message);
}  // namespace minfer::detail

#define MINFER_CHECK(condition, message)                                       \
  do {                                                                         \
    if (!(condition)) [[unlikely]] {                                           \
      ::minfer::detail::check_failed(__FILE__, __LINE__, #condition, message); \
    }                                                                          \
  } while (0)
