// The grammar of a Gemma 4 call's arguments (chat::ToolCallFormat::kGemma4), from a tool's JSON
// Schema, written as Gemma 4's template writes arguments (channel_reply.h,
// read_gemma4_arguments): {key:value,…} with bare keys in sorted order (the template's
// dictsort), strings in <|"|>…<|"|>, None for null.
//
// Supported: type string (minLength / maxLength) / integer (minimum / maximum) / number /
// boolean / null / array (items, minItems / maxItems) / object (properties, required), a list of
// types, enum and const; description, title, default and additionalProperties are read past
// (only the listed properties are written). Any other keyword (pattern, anyOf, $ref, …) is an
// error naming the function and the keyword. A string's text never holds "<|" (so its closing
// quote cannot be written inside it); a string with a length bound holds no '<' at all.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace minfer::engine {

// The rule of the arguments object of `function` for its `parameters` schema; the rules it
// needs are appended to `rules`, named from `prefix`. The rules also need kGemma4TextRules and
// the JSON primitives (integer, number, boolean).
Result<std::string> gemma4_arguments_rule(const nlohmann::ordered_json& parameters,
                                          const std::string& function, const std::string& prefix,
                                          std::string& rules);

inline constexpr std::string_view kGemma4TextRules =
    "gemma-string ::= \"<|\\\"|>\" ( [^<] | \"<\" [^|] )* \"<|\\\"|>\"\n"
    "gemma-any ::= gemma-string | number | boolean\n";

}  // namespace minfer::engine
