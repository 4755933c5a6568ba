#include "core/status.h"

#include "core/enum_names.h"

namespace minfer {

namespace {
constexpr std::array<const char*, 9> kErrorCodeNames = {
    "ok",          "invalid_argument", "not_found", "out_of_range", "resource_exhausted",
    "unsupported", "corrupt",          "io",        "internal"};
static_assert(kErrorCodeNames.size() == static_cast<size_t>(ErrorCode::kInternal) + 1);
}  // namespace

const char* error_code_name(ErrorCode code) {
  return enum_name(kErrorCodeNames, code, "unknown");
}

}  // namespace minfer
