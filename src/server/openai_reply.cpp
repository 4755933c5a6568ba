#include "server/openai_reply.h"

#include <algorithm>
#include <utility>

namespace minfer::server {

const char* openai_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEog:
    case FinishReason::kStop:
    case FinishReason::kCancelled:
      return "stop";
    case FinishReason::kLength:
    case FinishReason::kContext:
      return "length";
    case FinishReason::kToolCalls:
      return "tool_calls";
  }
  return "stop";
}

Json usage_json(const RequestStats& s) {
  Json u;
  u["prompt_tokens"] = s.n_prompt;
  u["completion_tokens"] = s.n_generated;
  u["total_tokens"] = s.n_prompt + s.n_generated;
  u["prompt_tokens_details"] = Json{{"cached_tokens", s.n_cached}};
  return u;
}

Json timings_json(const RequestStats& s) {
  const int64_t n_prompt = s.n_prompt - s.n_cached;
  const double prompt_ms = std::max(0.0, s.ttft_ms - s.queue_ms);  // admission to first token
  const double predicted_ms = std::max(0.0, s.total_ms - s.ttft_ms);
  auto per_token_ms = [](double ms, int64_t n) {
    return n > 0 ? ms / static_cast<double>(n) : 0.0;
  };
  auto per_second = [](double ms, int64_t n) {
    return ms > 0.0 ? 1000.0 * static_cast<double>(n) / ms : 0.0;
  };
  Json t;
  t["cache_n"] = s.n_cached;
  t["prompt_n"] = n_prompt;
  t["prompt_ms"] = prompt_ms;
  t["prompt_per_token_ms"] = per_token_ms(prompt_ms, n_prompt);
  t["prompt_per_second"] = per_second(prompt_ms, n_prompt);
  t["predicted_n"] = s.n_generated;
  t["predicted_ms"] = predicted_ms;
  t["predicted_per_token_ms"] = per_token_ms(predicted_ms, s.n_generated);
  t["predicted_per_second"] = per_second(predicted_ms, s.n_generated);
  if (s.n_drafted > 0) {
    t["draft_n"] = s.n_drafted;
    t["draft_n_accepted"] = s.n_draft_accepted;
  }
  return t;
}

namespace {

// The vocabulary's text of a sampled token (always a valid id).
std::string piece_of(const LanguageModel& model, int32_t id) {
  Result<std::string> piece = model.token_piece(id);
  return piece.is_ok() ? std::move(piece).value() : std::string();
}

Json bytes_of(const std::string& piece) {
  Json b = Json::array();
  for (const unsigned char c : piece) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

Json chat_logprobs_json(const LanguageModel& model, const std::vector<SampledToken>& toks) {
  Json content = Json::array();
  for (const SampledToken& t : toks) {
    const std::string piece = piece_of(model, t.token);
    Json top = Json::array();
    for (const TokenLogprob& alt : t.top) {
      const std::string alt_piece = piece_of(model, alt.token);
      top.push_back(
          Json{{"token", alt_piece}, {"logprob", alt.logprob}, {"bytes", bytes_of(alt_piece)}});
    }
    content.push_back(Json{{"token", piece},
                           {"logprob", t.logprob},
                           {"bytes", bytes_of(piece)},
                           {"top_logprobs", top}});
  }
  return Json{{"content", content}};
}

Json completion_logprobs_json(const LanguageModel& model, const std::vector<SampledToken>& toks,
                              int64_t text_offset) {
  Json tokens = Json::array();
  Json token_logprobs = Json::array();
  Json top_logprobs = Json::array();
  Json offsets = Json::array();
  for (const SampledToken& t : toks) {
    const std::string piece = piece_of(model, t.token);
    tokens.push_back(piece);
    token_logprobs.push_back(t.logprob);
    Json top = Json::object();
    for (const TokenLogprob& alt : t.top) {
      top[piece_of(model, alt.token)] = alt.logprob;
    }
    top_logprobs.push_back(top);
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(piece.size());
  }
  return Json{{"tokens", tokens},
              {"token_logprobs", token_logprobs},
              {"top_logprobs", top_logprobs},
              {"text_offset", offsets}};
}

void ReplyParts::add(const BatchEvent& event) {
  content += event.text;
  reasoning += event.reasoning;
  append_tool_calls(tool_calls, event.tool_calls);
}

Json assistant_message(const ReplyParts& parts, bool legacy_functions) {
  Json m;
  m["role"] = "assistant";
  m["content"] = parts.content.empty() && !parts.tool_calls.empty() ? Json() : Json(parts.content);
  if (!parts.reasoning.empty()) m["reasoning_content"] = parts.reasoning;
  if (legacy_functions && !parts.tool_calls.empty()) {
    const ToolCall& c = parts.tool_calls.front();
    m["function_call"] = Json{{"name", c.name}, {"arguments", c.arguments}};
  } else if (!parts.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : parts.tool_calls) {
      calls.push_back(Json{{"id", c.id},
                           {"type", "function"},
                           {"function", Json{{"name", c.name}, {"arguments", c.arguments}}}});
    }
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

Reply::Reply(const LanguageModel& model, ReplyInfo info) : model_(&model), info_(std::move(info)) {}

Json Reply::logprobs_of(const std::vector<SampledToken>& tokens, int64_t text_offset) const {
  if (!info_.logprobs) return Json();
  return info_.endpoint == Endpoint::kChat ? chat_logprobs_json(*model_, tokens)
                                           : completion_logprobs_json(*model_, tokens, text_offset);
}

const char* Reply::finish_reason(FinishReason finish) const {
  if (info_.legacy_functions && finish == FinishReason::kToolCalls) return "function_call";
  return openai_finish_reason(finish);
}

Json Reply::choice(bool streamed, Json content, Json logprobs, Json finish) const {
  Json c;
  c["index"] = 0;
  const char* key = info_.endpoint == Endpoint::kCompletion ? "text"
                    : streamed                              ? "delta"
                                                            : "message";
  c[key] = std::move(content);
  c["logprobs"] = std::move(logprobs);
  c["finish_reason"] = std::move(finish);
  return c;
}

Json Reply::envelope(bool streamed, Json choices) const {
  const bool chat = info_.endpoint == Endpoint::kChat;
  const char* object =
      chat ? (streamed ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return Json{{"id", info_.id},
              {"object", object},
              {"created", info_.created},
              {"model", info_.model},
              {"system_fingerprint", "minfer"},
              {"choices", std::move(choices)}};
}

Json Reply::complete(const std::string& text, const std::vector<SampledToken>& tokens,
                     FinishReason finish, const RequestStats& stats) const {
  ReplyParts parts;
  parts.content = text;
  return complete(parts, tokens, finish, stats);
}

Json Reply::complete(const ReplyParts& parts, const std::vector<SampledToken>& tokens,
                     FinishReason finish, const RequestStats& stats) const {
  Json content = info_.endpoint == Endpoint::kChat
                     ? assistant_message(parts, info_.legacy_functions)
                     : Json(parts.content);
  Json out = envelope(false, Json::array({choice(false, std::move(content), logprobs_of(tokens, 0),
                                                 finish_reason(finish))}));
  out["usage"] = usage_json(stats);
  out["usage"]["seed"] = info_.seed;
  out["timings"] = timings_json(stats);
  return out;
}

Json Reply::chunk(Json content, Json logprobs, Json finish) const {
  Json c = envelope(
      true,
      Json::array({choice(true, std::move(content), std::move(logprobs), std::move(finish))}));
  // With include_usage every chunk has the field, null but in the last (OpenAI's shape).
  if (info_.include_usage) c["usage"] = nullptr;
  return c;
}

Json Reply::role_chunk() const {
  return chunk(Json{{"role", "assistant"}, {"content", ""}}, Json(), Json());
}

Json Reply::text_chunk(const std::string& text, const std::vector<SampledToken>& tokens,
                       int64_t text_offset) const {
  Json content = info_.endpoint == Endpoint::kChat ? Json{{"content", text}} : Json(text);
  return chunk(std::move(content), logprobs_of(tokens, text_offset), Json());
}

Json Reply::reasoning_chunk(const std::string& reasoning) const {
  return chunk(Json{{"reasoning_content", reasoning}}, Json(), Json());
}

Json Reply::tool_call_chunk(const ToolCallDelta& delta) const {
  if (info_.legacy_functions) {
    Json fn{{"arguments", delta.arguments}};
    if (!delta.name.empty()) fn["name"] = delta.name;
    return chunk(Json{{"function_call", std::move(fn)}}, Json(), Json());
  }
  Json call;
  call["index"] = delta.index;
  if (!delta.id.empty()) {
    call["id"] = delta.id;
    call["type"] = "function";
    call["function"] = Json{{"name", delta.name}, {"arguments", delta.arguments}};
  } else {
    call["function"] = Json{{"arguments", delta.arguments}};
  }
  return chunk(Json{{"tool_calls", Json::array({std::move(call)})}}, Json(), Json());
}

std::vector<Json> Reply::event_chunks(const BatchEvent& e, int64_t& text_offset) const {
  std::vector<Json> chunks;
  if (!e.reasoning.empty()) chunks.push_back(reasoning_chunk(e.reasoning));
  if (!e.text.empty() || (info_.logprobs && !e.tokens.empty())) {
    chunks.push_back(text_chunk(e.text, e.tokens, text_offset));
    text_offset += static_cast<int64_t>(e.text.size());
  }
  for (const ToolCallDelta& d : e.tool_calls) chunks.push_back(tool_call_chunk(d));
  return chunks;
}

Json Reply::finish_chunk(FinishReason finish) const {
  Json content = info_.endpoint == Endpoint::kChat ? Json::object() : Json("");
  return chunk(std::move(content), Json(), finish_reason(finish));
}

Json Reply::usage_chunk(const RequestStats& stats) const {
  Json u = envelope(true, Json::array());
  u["usage"] = usage_json(stats);
  u["usage"]["seed"] = info_.seed;
  return u;
}

}  // namespace minfer::server
