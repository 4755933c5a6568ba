// The shape of a JSON text, checked by one pass over its bytes before any parser recurses,
// copies or builds it (DESIGN.md invariant 13): how deep arrays and objects nest (every recursive
// walk of a parsed document — a copy, a dump, a conversion — then has a bounded depth) and how
// many keys one object holds (the parser's ordered objects insert each key after a linear search:
// 90,000 keys took a minute).
//
//   if (auto why = json_shape_error(body)) { … 400 "[server] the body " + *why … }
//
// The scan counts '[' and '{' and the ':' of each object outside strings; it does not validate,
// so text that is not JSON gets its error from the parser that follows.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/input_limits.h"

namespace minfer {

struct JsonShapeLimits {
  int max_depth = limits::kMaxJsonDepth;         // arrays and objects open at once
  size_t max_keys = limits::kMaxJsonObjectKeys;  // keys in one object
};

// Where a text first passes a limit: the byte of the '[' or '{' that opens one level too many,
// or of the ':' after one key too many.
struct JsonShapeExcess {
  size_t offset = 0;
  bool too_deep = false;  // else too many keys
};

std::optional<JsonShapeExcess> json_shape_excess(std::string_view text,
                                                 const JsonShapeLimits& limits = {});

// The same as the end of a sentence: "nests arrays and objects deeper than the limit of 512
// levels (at byte 42)" or "holds an object of more than 4096 keys, the limit (at byte 42)";
// nullopt within the limits.
std::optional<std::string> json_shape_error(std::string_view text,
                                            const JsonShapeLimits& limits = {});

}  // namespace minfer
