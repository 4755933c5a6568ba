// OpenAI's Responses API (POST /v1/responses), stateless, over the chat path: a request (input as
// a string or items: messages, function_call and function_call_output; instructions; function
// tools; tool_choice; max_output_tokens; sampling; reasoning.effort; text.format) becomes the
// /v1/chat/completions body the OpenAI path builds, and a reply becomes a Response object or its
// typed events. store and previous_response_id are refused: nothing is kept between requests.
// https://platform.openai.com/docs/api-reference/responses, .../responses-streaming
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "minfer/minfer.h"
#include "server/openai_api.h"
#include "server/wire_format.h"

namespace minfer::server {

// The body as a chat request. Errors name the Responses field (param) and are 400s.
std::optional<ApiError> responses_to_chat(const Json& body, ChatTranslation& out);

// The reply: a Response object (output: reasoning, message with output_text, function_call
// items; status completed or incomplete), or response.created, response.in_progress, per item
// response.output_item.added, its parts and deltas (output_text, reasoning_text,
// function_call_arguments) and response.output_item.done, then response.completed (or
// response.incomplete), every event with its sequence_number.
std::unique_ptr<WireFormat> responses_format(const ReplyInfo& info, int64_t n_prompt);

}  // namespace minfer::server
