// JSON Schema → GBNF: the grammar of the JSON documents a schema describes, for
// response_format json_schema, `-j/--json-schema` and the arguments of a tool call. The grammar
// text is compiled by grammar/gbnf.h like any user grammar, so there is one constraint mechanism.
//
//   Result<std::string> gbnf = grammar::json_schema_to_gbnf(schema);   // root rule "root"
//
// What is generated is always valid against the schema; the grammar may allow less than the
// schema does (generation wants one tight shape), never more:
// - Objects list their properties in the order the schema writes them; an optional property may
//   be left out. Without `additionalProperties` (or with false) no other property is generated;
//   with true or a schema, other keys (never one of the named ones) may follow the named ones.
// - `oneOf` is generated as `anyOf` (a document that matches two branches is not excluded).
// - Integers have at most 15 digits (exact in a double) unless `minimum`/`maximum` (and the
//   exclusive forms), which bound them exactly, say more; numbers at most 15 significant digits.
//   Numbers take no bounds (a 400 names the keyword).
// - `pattern` is a regular expression of this subset, always anchored to the whole string:
//   literals and escapes (\d \w \s \D \W \S \. \\ \/ \- …), `.`, classes `[a-z0-9_]` and `[^…]`,
//   groups `( )` and `(?: )`, `|`, and `* + ? {m} {m,} {m,n}`; `^` and `$` only at the ends.
// - Whitespace between tokens: at most one line break and 20 indent bytes in a row, as the
//   json_object grammar.
//
// Every other keyword that constrains a document is an error naming it and where it stands
// ("unsupported JSON Schema keyword 'not' at #/properties/a"). Annotations (title,
// description, default, examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are
// ignored.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace minfer::grammar {

struct JsonSchemaGbnfOptions {
  // Starts the name of every rule made for this schema (its root is `{rule_prefix}root`), so that
  // several schemas can share one grammar (the arguments of several tools).
  std::string rule_prefix;
  // Append json_primitive_rules() (json_schema_parts.h), which the rules use; once per grammar.
  bool with_primitives = true;
};

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                        const JsonSchemaGbnfOptions& options = {});

}  // namespace minfer::grammar
