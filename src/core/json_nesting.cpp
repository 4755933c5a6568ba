#include "core/json_nesting.h"

#include <vector>

#include <fmt/format.h>

namespace minfer {

std::optional<JsonShapeExcess> json_shape_excess(std::string_view text,
                                                 const JsonShapeLimits& limits) {
  // The keys of each open container (npos for an array), innermost last.
  std::vector<size_t> keys;
  constexpr size_t kArray = static_cast<size_t>(-1);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (static_cast<int64_t>(keys.size()) >= limits.max_depth) {
        return JsonShapeExcess{i, true};
      }
      keys.push_back(c == '[' ? kArray : 0);
    } else if ((c == ']' || c == '}') && !keys.empty()) {
      keys.pop_back();
    } else if (c == ':' && !keys.empty() && keys.back() != kArray) {
      if (++keys.back() > limits.max_keys) return JsonShapeExcess{i, false};
    }
  }
  return std::nullopt;
}

std::optional<std::string> json_shape_error(std::string_view text, const JsonShapeLimits& limits) {
  const std::optional<JsonShapeExcess> excess = json_shape_excess(text, limits);
  if (!excess) return std::nullopt;
  if (excess->too_deep) {
    return fmt::format("nests arrays and objects deeper than the limit of {} levels (at byte {})",
                       limits.max_depth, excess->offset);
  }
  return fmt::format("holds an object of more than {} keys, the limit (at byte {})",
                     limits.max_keys, excess->offset);
}

}  // namespace minfer
