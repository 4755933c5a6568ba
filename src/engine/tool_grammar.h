// The grammar that holds a reply's tool calls to the request's tools (OpenAI's tool_choice and
// parallel_tool_calls), written in the model's own call format (chat/reply_format.h):
//
//   auto: a lazy grammar that starts at the call's opening (Hermes: "<tool_call>"), so text before
//         a call is free and the call's name and arguments follow the tools' schemas; Llama 3's
//         call is the whole reply, so the reply is either free text that does not open with "{"
//         or one call.
//   required / a named function: the reply is calls (of that function) from its first token.
//   parallel_tool_calls false: one call, and the reply ends after it.
//
// A function's arguments follow its `parameters` JSON Schema (grammar/json_schema.h); a keyword
// it does not support is an error naming the function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request.h"
#include "grammar/request_grammars.h"

namespace minfer::engine {

struct ToolCallGrammar {
  std::string gbnf;                   // "" when calls are not constrained
  std::vector<std::string> triggers;  // non-empty: lazy, the grammar starts at one of these
  bool end_on_complete = true;        // generation ends once nothing but the end may follow
};

Result<ToolCallGrammar> tool_call_grammar(const ReplyRequest& reply);

// A request's constraint for tool_call_grammar, compiled through `grammars` (shared by requests
// with the same tools); nullptr when calls are not constrained.
Result<std::shared_ptr<TokenConstraint>> tool_call_constraint(grammar::RequestGrammars& grammars,
                                                              const ReplyRequest& reply);

}  // namespace minfer::engine
