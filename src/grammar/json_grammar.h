// response_format json_object as a GBNF grammar (grammar/gbnf.h), so JSON-constrained requests run
// on the same engine as every other grammar: one JSON object (RFC 8259) and nothing after it,
// with the bounds of JsonOptions (grammar/json_recognizer.h) written into the rules —
//   nesting: one set of rules per depth (value-1 … value-N), the last level scalars only;
//   whitespace: rules ws-N-L for "at most N more bytes with at most L more line breaks";
//   numbers: at most max_integer_digits integer digits, max_significant_digits integer and
//   fraction digits together, and max_exponent_digits exponent digits;
//   strings: escapes as JSON has them, a \u high surrogate followed by a low one, no lone low
//   surrogate, no raw control characters (the matcher keeps UTF-8 valid).
#pragma once

#include <string>

#include "grammar/json_recognizer.h"

namespace minfer::grammar {

// The GBNF text of one JSON object under `options` (0 for a bound means none).
std::string json_object_gbnf(const JsonOptions& options);

// The rule `number` (and the rules it uses, named number-K) of a JSON number under the digit
// bounds of `options`; shared with the JSON Schema grammars (grammar/json_schema_parts.h).
std::string json_number_gbnf(const JsonOptions& options);

}  // namespace minfer::grammar
