// Tokens -> statements, following Jinja2's grammar (jinja2/parser.py) for the subset chat
// templates use. Everything outside the subset — an unknown tag, filter, test, global function
// or method — is rejected here, at load time, with the construct and its line.
#pragma once

#include <string_view>

#include "chat/ast.h"

namespace minfer::chat {

// Throws TemplateError naming the construct and its line.
StmtList parse_template(std::string_view source);

}  // namespace minfer::chat
