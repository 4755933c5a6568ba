// Template source -> tokens, reproducing Jinja2's lexer (jinja2/lexer.py, 3.x) under the
// settings Hugging Face transformers renders chat templates with: trim_blocks=True (the first
// newline after a block or comment tag is removed), lstrip_blocks=True (spaces and tabs before a
// block or comment tag on its own line are removed), keep_trailing_newline=False, and the
// "-"/"+" whitespace-control markers on every tag.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace minfer::chat {

enum class TokenType {
  kText,        // literal template text, whitespace control already applied
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // value holds the unescaped string
  kInteger,
  kFloat,
  kOperator,
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;
  int line = 1;
};

// Throws TemplateError on malformed input (an unterminated tag, comment or string, an unbalanced
// bracket, an unexpected character).
std::vector<Token> lex_template(std::string_view source);

}  // namespace minfer::chat
