// The OpenAI-compatible wire format, reply side: the JSON of a blocking reply and of each chunk of
// a streamed one (SSE), built by one Reply so both carry the same envelope, choice, logprobs and
// usage. https://platform.openai.com/docs/api-reference/chat/object, .../chat-streaming,
// .../completions/object
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "minfer/minfer.h"
#include "server/openai_api.h"

namespace minfer::server {

// "stop" for an end-of-generation token or a stop string, "length" for max_tokens or a full
// context.
const char* openai_finish_reason(FinishReason reason);

// The usage object: prompt/completion/total tokens and prompt_tokens_details.cached_tokens.
Json usage_json(const RequestStats& stats);

// llama-server's timings object: prompt (cache_n, prompt_n, prompt_ms, per token, per second),
// generation (predicted_*), and with speculative decoding draft_n and draft_n_accepted.
Json timings_json(const RequestStats& stats);

// The logprobs of some tokens in each endpoint's shape: chat {"content": [...]}, completions
// {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
Json chat_logprobs_json(const LanguageModel& model, const std::vector<SampledToken>& toks);
Json completion_logprobs_json(const LanguageModel& model, const std::vector<SampledToken>& toks,
                              int64_t text_offset);

// A reply's parts put together from its events: content, reasoning and whole tool calls.
struct ReplyParts {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;

  void add(const BatchEvent& event);
};

// Chat's assistant message of a whole reply: content (null when the reply is only tool calls, as
// OpenAI's), reasoning_content when there is some, tool_calls when there are some — or, for a
// request in the legacy functions shape, function_call (the one call such a reply holds).
Json assistant_message(const ReplyParts& parts, bool legacy_functions = false);

// What every reply to one request shares.
struct ReplyInfo {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;  // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;
  std::string model;
  bool logprobs = false;       // the request asked for logprobs
  bool include_usage = false;  // streamed: a last chunk carries the usage
  uint64_t seed = 0;           // the sampling seed used (usage.seed), so a request can be repeated
  // The request sent legacy functions / function_call: a call is returned as function_call and
  // the finish reason is "function_call" (OpenAI's shape for those requests).
  bool legacy_functions = false;
};

// The reply JSON of one request. A blocking reply is one object; a streamed one is the role chunk
// (chat), a text chunk per piece of text, the finish chunk and, when asked, the usage chunk.
class Reply {
 public:
  // `model` (token pieces for logprobs) must outlive the Reply.
  Reply(const LanguageModel& model, ReplyInfo info);

  const ReplyInfo& info() const { return info_; }

  // The whole reply: all the text, every sampled token and the final event's finish and usage.
  Json complete(const std::string& text, const std::vector<SampledToken>& tokens,
                FinishReason finish, const RequestStats& stats) const;
  Json complete(const ReplyParts& parts, const std::vector<SampledToken>& tokens,
                FinishReason finish, const RequestStats& stats) const;

  // Chat only, before any text: the assistant role with empty content.
  Json role_chunk() const;
  // A piece of text and the tokens sampled for it; text_offset is where the piece starts in the
  // reply's text (completions' logprobs report it).
  Json text_chunk(const std::string& text, const std::vector<SampledToken>& tokens,
                  int64_t text_offset) const;
  // Chat: a piece of reasoning (delta.reasoning_content).
  Json reasoning_chunk(const std::string& reasoning) const;
  // Chat: a piece of a tool call (delta.tool_calls): a call's first piece carries index, id,
  // type and the function's name with arguments "", the next ones index and an arguments
  // fragment.
  Json tool_call_chunk(const ToolCallDelta& delta) const;
  // The chunks of one event of a streamed reply, in reply order: reasoning, content (with the
  // event's logprobs), tool-call pieces. text_offset (bytes of content sent so far) advances.
  std::vector<Json> event_chunks(const BatchEvent& event, int64_t& text_offset) const;
  // No text, the finish reason.
  Json finish_chunk(FinishReason finish) const;
  // No choices, the usage (send only when include_usage).
  Json usage_chunk(const RequestStats& stats) const;

 private:
  // The tokens' logprobs in the endpoint's shape; null when the request did not ask.
  Json logprobs_of(const std::vector<SampledToken>& tokens, int64_t text_offset) const;
  // One choice: chat's `message` (blocking) or `delta` (streamed), completions' `text`.
  Json choice(bool streamed, Json content, Json logprobs, Json finish) const;
  const char* finish_reason(FinishReason finish) const;
  // id, object, created, model, system_fingerprint and the choices.
  Json envelope(bool streamed, Json choices) const;
  Json chunk(Json content, Json logprobs, Json finish) const;

  const LanguageModel* model_;
  ReplyInfo info_;
};

}  // namespace minfer::server
