// How deep a JSON text nests, found by one pass over its bytes before any parser recurses or
// copies it (DESIGN.md invariant 13): every recursive walk of a parsed document — a copy, a
// dump, a conversion — then has a bounded depth.
//
//   if (auto at = json_too_deep(body, limits::kMaxJsonDepth)) { … 400 naming *at … }
//
// The scan counts '[' and '{' outside strings; it does not validate, so text that is not JSON
// gets its error from the parser that follows.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace minfer {

// The byte offset of the first '[' or '{' that opens level max_depth + 1; nullopt when the text
// never nests deeper than max_depth.
std::optional<size_t> json_too_deep(std::string_view text, int max_depth);

}  // namespace minfer
