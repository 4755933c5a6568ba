// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) over the chat path: a
// request becomes the /v1/chat/completions body the OpenAI path builds (system, messages with
// text / tool_use / tool_result blocks, tools, tool_choice, max_tokens, stop_sequences, sampling,
// thinking), and a reply becomes a Message or its stream of events, errors Anthropic's error
// object. https://docs.anthropic.com/en/api/messages, .../messages-streaming, .../errors
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "minfer/minfer.h"
#include "server/openai_api.h"
#include "server/wire_format.h"

namespace minfer::server {

// The body as a chat request. count_only: /v1/messages/count_tokens, where max_tokens is not
// required. Errors name the Anthropic field (param) and are 400s.
std::optional<ApiError> anthropic_to_chat(const Json& body, bool count_only, ChatTranslation& out);

// "end_turn", "stop_sequence", "max_tokens" or "tool_use".
const char* anthropic_stop_reason(FinishReason reason);

// Anthropic's error type for an HTTP status: invalid_request_error (400, 422),
// authentication_error (401), permission_error (403), not_found_error (404),
// request_too_large (413), rate_limit_error (429), overloaded_error (503, 529), api_error.
const char* anthropic_error_type(int status);
// {"type": "error", "error": {"type": …, "message": …}}.
Json anthropic_error_json(int status, const std::string& message);
// An OpenAI error body ({"error": {"message", …}}) of that status as Anthropic's; other text is
// kept as the message.
std::string anthropic_error_body(int status, const std::string& openai_body);

// The Messages reply: a Message object, or message_start, ping, content_block_start / _delta /
// _stop per block (thinking, text, tool_use), message_delta (stop reason, usage), message_stop.
// info.id is the message's id; n_prompt the prompt's tokens (message_start's input_tokens).
std::unique_ptr<WireFormat> anthropic_format(const ReplyInfo& info, int64_t n_prompt);

}  // namespace minfer::server
