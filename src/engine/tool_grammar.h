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
// A function's arguments follow its `parameters` JSON Schema (grammar/json_schema.h), written
// compact (at most one space between tokens, as the templates print calls); a keyword it does not
// support is an error naming the function. A forced call's opening is written in the tokenizer's
// own tokens (forced_prefix), not sampled.
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
  // A forced call's opening up to the arguments (without the space before them): the tokenizer's
  // tokens for it are written, not sampled, so a budget of a few tokens still holds the call.
  std::string forced_prefix;
};

Result<ToolCallGrammar> tool_call_grammar(const ReplyRequest& reply);

// A request's constraint for tool_call_grammar, compiled through `grammars` (shared by requests
// with the same tools); nullptr when calls are not constrained.
Result<std::shared_ptr<TokenConstraint>> tool_call_constraint(grammar::RequestGrammars& grammars,
                                                              const ReplyRequest& reply);

}  // namespace minfer::engine
