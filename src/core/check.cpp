#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace minfer::detail {

void check_failed(const char* file, int line, const char* condition, const char* message) {
  std::fprintf(stderr, "[minfer] internal check failed at %s:%d: %s (%s)\n", file, line, condition,
               message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace minfer::detail
