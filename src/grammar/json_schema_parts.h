// The pieces of JSON Schema → GBNF that do not depend on the schema's structure (json_schema.h):
// GBNF literals, the integers of a range, a `pattern` regex as the inside of a JSON string, and
// the keys that are none of a set. Every function returns a GBNF expression over the rules of
// json_primitive_rules().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace minfer::grammar {

// The rules every converted schema may use: ws (between tokens), char (one character of a JSON
// string, escapes included), string, integer, number, boolean, null, value / object / array
// (any JSON), and format-date / format-time / format-date-time / format-uuid (RFC 3339, RFC 4122).
// Whitespace, integers and numbers have the bounds of kGenerationJsonOptions
// (grammar/json_constraint.h): a run of at most one line break and 20 indent bytes, integers of
// at most 15 digits, numbers of at most 15 significant digits. `compact`: whitespace is at most one
// space, as tool calls' arguments are written (the chat templates print them with tojson, on one
// line), so that a token budget goes to the values and not to indentation.
const std::string& json_primitive_rules(bool compact = false);

// `bytes` as a GBNF string literal ("…" with ", \ and control bytes escaped).
std::string gbnf_literal(std::string_view bytes);

// The decimal integers in [lo, hi] (lo <= hi; unset: up to 15 digits, as `integer`), as llama.cpp's
// integer rule writes them (no leading zeros, "-0" not produced).
std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// The characters between the quotes of a JSON string whose value matches `pattern` (the
// documented subset; json_schema.h). Error: a construct outside the subset, naming it and its
// offset.
Result<std::string> pattern_to_gbnf(std::string_view pattern);

// A JSON string (quotes included) that is none of `names`. Error: a name with a character that
// JSON escapes (", \, control characters).
Result<std::string> key_other_than(std::span<const std::string> names);

}  // namespace minfer::grammar
