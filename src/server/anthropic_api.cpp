#include "server/anthropic_api.h"

#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "core/json_nesting.h"

namespace minfer::server {

namespace {

ApiError unsupported_block(const std::string& field, const std::string& type,
                           const char* supported) {
  return bad_request(fmt::format("[server] '{}': content blocks of type '{}' are not supported "
                                 "(expected {})",
                                 field, type, supported),
                     field, "invalid_value");
}

using MaybeError = std::optional<ApiError>;

// A text block's text, appended to `out`.
MaybeError append_block_text(const Json& block, const std::string& name, std::string& out) {
  const std::string type = string_field(block, "type");
  if (type != "text") return unsupported_block(name, type, "'text'");
  if (!block.contains("text") || !block["text"].is_string()) {
    return wrong_type(name + ".text", "a string", block.value("text", Json()));
  }
  out += block["text"].get<std::string>();
  return std::nullopt;
}

// The text of a string, or of an array of text blocks joined (system, tool_result content).
MaybeError text_of(const Json& v, const std::string& field, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return wrong_type(field, "a string or an array of text blocks", v);
  out.clear();
  return for_each_object(v, field, "a content block",
                         [&](const Json& block, const std::string& name) {
                           return append_block_text(block, name, out);
                         });
}

// A tool_result block as a tool message.
MaybeError tool_message(const Json& block, const std::string& name, Json& out) {
  if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string()) {
    return wrong_type(name + ".tool_use_id", "a string", block.value("tool_use_id", Json()));
  }
  std::string result;
  if (block.contains("content") && !block["content"].is_null()) {
    if (auto e = text_of(block["content"], name + ".content", result)) return e;
  }
  if (block.value("is_error", Json(false)) == Json(true)) result = "Error: " + result;
  out = Json{{"role", "tool"}, {"tool_call_id", block["tool_use_id"]}, {"content", result}};
  return std::nullopt;
}

// A user turn: its text blocks as user messages, each tool_result block as a tool message, in
// the order they come.
MaybeError user_messages(const Json& content, const std::string& field, Json& out) {
  if (content.is_string()) {
    out.push_back(Json{{"role", "user"}, {"content", content}});
    return std::nullopt;
  }
  if (!content.is_array()) {
    return wrong_type(field, "a string or an array of content blocks", content);
  }
  std::optional<std::string> text;  // the text blocks since the last tool_result
  auto flush = [&] {
    if (text) out.push_back(Json{{"role", "user"}, {"content", *text}});
    text.reset();
  };
  auto add = [&](const Json& block, const std::string& name) -> MaybeError {
    const std::string type = string_field(block, "type");
    if (type == "text") {
      if (!text) text.emplace();
      return append_block_text(block, name, *text);
    }
    if (type != "tool_result") return unsupported_block(name, type, "'text' or 'tool_result'");
    Json message;
    if (auto e = tool_message(block, name, message)) return e;
    flush();
    out.push_back(std::move(message));
    return std::nullopt;
  };
  if (auto e = for_each_object(content, field, "a content block", add)) return e;
  flush();
  return std::nullopt;
}

// An assistant turn: text blocks as its content, thinking as its reasoning_content, tool_use
// blocks as its tool_calls (arguments as JSON text, as OpenAI clients send them).
MaybeError assistant_message(const Json& content, const std::string& field, Json& out) {
  Json m{{"role", "assistant"}};
  if (content.is_string()) {
    m["content"] = content;
    out.push_back(std::move(m));
    return std::nullopt;
  }
  if (!content.is_array()) {
    return wrong_type(field, "a string or an array of content blocks", content);
  }
  std::string text;
  std::string reasoning;
  Json calls = Json::array();
  auto add = [&](const Json& block, const std::string& name) -> MaybeError {
    const std::string type = string_field(block, "type");
    if (type == "text") {
      text += string_field(block, "text");
    } else if (type == "thinking") {
      reasoning += string_field(block, "thinking");
    } else if (type == "tool_use") {
      if (string_field(block, "name").empty() || string_field(block, "id").empty()) {
        return bad_request(fmt::format("[server] '{}' must have a string 'id' and 'name'", name),
                           name, "invalid_value");
      }
      const Json input = block.value("input", Json::object());
      calls.push_back(
          Json{{"id", block["id"]},
               {"type", "function"},
               {"function", Json{{"name", block["name"]}, {"arguments", dump(input)}}}});
    } else if (type != "redacted_thinking") {  // redacted: nothing the template could show
      return unsupported_block(name, type, "'text', 'thinking' or 'tool_use'");
    }
    return std::nullopt;
  };
  if (auto e = for_each_object(content, field, "a content block", add)) return e;
  m["content"] = text;
  if (!reasoning.empty()) m["reasoning_content"] = reasoning;
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  out.push_back(std::move(m));
  return std::nullopt;
}

// system and messages → the chat's messages.
std::optional<ApiError> translate_messages(const Json& body, Json& out) {
  out = Json::array();
  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    std::string system;
    if (auto e = text_of(*it, "system", system)) return e;
    if (!system.empty()) out.push_back(Json{{"role", "system"}, {"content", system}});
  }
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) {
    return bad_request("[server] 'messages' is required", "messages", "missing_required_parameter");
  }
  if (!it->is_array() || it->empty()) {
    return wrong_type("messages", "a non-empty array of messages", *it);
  }
  return for_each_object(
      *it, "messages", "an object", [&](const Json& m, const std::string& field) -> MaybeError {
        const std::string role = string_field(m, "role");
        if (!m.contains("content")) {
          return bad_request(fmt::format("[server] '{}.content' is required", field),
                             field + ".content", "missing_required_parameter");
        }
        if (role == "user") return user_messages(m["content"], field + ".content", out);
        if (role == "assistant") return assistant_message(m["content"], field + ".content", out);
        return bad_request(fmt::format("[server] '{}.role' must be 'user' or 'assistant', got {}",
                                       field, m.value("role", Json()).dump()),
                           field + ".role", "invalid_value");
      });
}

// tools: [{"name", "description", "input_schema"}] → OpenAI function tools.
std::optional<ApiError> translate_tools(const Json& tools, Json& out) {
  if (!tools.is_array()) return wrong_type("tools", "an array of tools", tools);
  out = Json::array();
  return for_each_object(
      tools, "tools", "a tool object", [&](const Json& t, const std::string& field) -> MaybeError {
        const std::string type = string_field(t, "type");
        if (!type.empty() && type != "custom") {
          return bad_request(
              fmt::format("[server] '{}': tools of type '{}' are not supported (only "
                          "client tools with a name and an input_schema)",
                          field, type),
              field + ".type", "invalid_value");
        }
        if (string_field(t, "name").empty()) {
          return bad_request(fmt::format("[server] '{}.name' must be a non-empty string", field),
                             field + ".name", "invalid_value");
        }
        auto schema = t.find("input_schema");
        if (schema == t.end() || !schema->is_object()) {
          return wrong_type(field + ".input_schema", "an object (a JSON schema)",
                            schema == t.end() ? Json() : *schema);
        }
        // OpenAI's key order: the template prints the tools as JSON.
        Json function{{"name", t["name"]}};
        if (t.contains("description")) function["description"] = t["description"];
        function["parameters"] = *schema;
        out.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
        return std::nullopt;
      });
}

// tool_choice {"type": auto | any | tool | none, "name", "disable_parallel_tool_use"}.
std::optional<ApiError> translate_tool_choice(const Json& choice, Json& chat) {
  if (!choice.is_object()) return wrong_type("tool_choice", "an object", choice);
  const std::string type = string_field(choice, "type");
  if (type == "auto" || type == "none") {
    chat["tool_choice"] = type;
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "tool") {
    if (string_field(choice, "name").empty()) {
      return bad_request("[server] 'tool_choice' of type 'tool' needs a 'name'", "tool_choice.name",
                         "invalid_value");
    }
    chat["tool_choice"] = Json{{"type", "function"}, {"function", Json{{"name", choice["name"]}}}};
  } else {
    return bad_request(fmt::format("[server] 'tool_choice.type' must be 'auto', 'any', 'tool' or "
                                   "'none', got {}",
                                   choice.value("type", Json()).dump()),
                       "tool_choice.type", "invalid_value");
  }
  if (choice.value("disable_parallel_tool_use", Json(false)) == Json(true)) {
    chat["parallel_tool_calls"] = false;
  }
  return std::nullopt;
}

// thinking {"type": "enabled", "budget_tokens"} | {"type": "disabled"} → reasoning on or off.
std::optional<ApiError> translate_thinking(const Json& thinking, ChatTranslation& out) {
  if (!thinking.is_object()) return wrong_type("thinking", "an object", thinking);
  const std::string type = string_field(thinking, "type");
  Json& kwargs = out.chat["chat_template_kwargs"];
  if (type == "disabled") {
    out.reasoning_budget = 0;
    kwargs = Json{{"enable_thinking", false}};
    return std::nullopt;
  }
  if (type != "enabled" && type != "adaptive") {
    return bad_request(fmt::format("[server] 'thinking.type' must be 'enabled', 'adaptive' or "
                                   "'disabled', got {}",
                                   thinking.value("type", Json()).dump()),
                       "thinking.type", "invalid_value");
  }
  kwargs = Json{{"enable_thinking", true}};
  out.chat["reasoning_format"] = "deepseek";
  auto budget = thinking.find("budget_tokens");
  if (budget != thinking.end() && !budget->is_null()) {
    if (!budget->is_number_integer() || budget->get<int64_t>() < 1 ||
        budget->get<int64_t>() > INT32_MAX) {
      return bad_request("[server] 'thinking.budget_tokens' must be a positive integer",
                         "thinking.budget_tokens", "invalid_value");
    }
    out.reasoning_budget = budget->get<int32_t>();
  }
  return std::nullopt;
}

// stop_sequences: an array of strings → stop.
std::optional<ApiError> translate_stop(const Json& stops, Json& chat) {
  if (!stops.is_array()) return wrong_type("stop_sequences", "an array of strings", stops);
  for (const Json& s : stops) {
    if (!s.is_string()) return wrong_type("stop_sequences[]", "a string", s);
  }
  if (stops.size() > limits::kMaxStopStrings) {
    return bad_request(fmt::format("[server] 'stop_sequences' may hold at most {} strings",
                                   limits::kMaxStopStrings),
                       "stop_sequences", "invalid_value");
  }
  chat["stop"] = stops;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> anthropic_to_chat(const Json& body, bool count_only, ChatTranslation& out) {
  out = ChatTranslation{};
  out.chat = Json::object();
  Json& chat = out.chat;
  if (auto e = translate_messages(body, chat["messages"])) return e;
  auto max_tokens = body.find("max_tokens");
  if (!count_only && (max_tokens == body.end() || max_tokens->is_null())) {
    return bad_request("[server] 'max_tokens' is required", "max_tokens",
                       "missing_required_parameter");
  }
  // Fields of the same name and meaning, and llama-server's extensions (seed, min_p, grammar,
  // logit_bias): checked by the chat path (types and ranges).
  for (const char* field : {"model", "max_tokens", "temperature", "top_p", "top_k", "stream",
                            "seed", "min_p", "grammar", "logit_bias"}) {
    if (count_only && std::string_view(field) == "max_tokens") continue;
    if (auto it = body.find(field); it != body.end() && !it->is_null()) chat[field] = *it;
  }
  if (auto it = body.find("stop_sequences"); it != body.end() && !it->is_null()) {
    if (auto e = translate_stop(*it, chat)) return e;
  }
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (auto e = translate_tools(*it, chat["tools"])) return e;
    if (chat["tools"].empty()) chat.erase("tools");
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (auto e = translate_tool_choice(*it, chat)) return e;
  }
  if (auto it = body.find("thinking"); it != body.end() && !it->is_null()) {
    if (auto e = translate_thinking(*it, out)) return e;
  }
  return std::nullopt;
}

const char* anthropic_stop_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEog:
    case FinishReason::kCancelled:
      return "end_turn";
    case FinishReason::kStop:
      return "stop_sequence";
    case FinishReason::kLength:
    case FinishReason::kContext:
      return "max_tokens";
    case FinishReason::kToolCalls:
      return "tool_use";
  }
  return "end_turn";
}

const char* anthropic_error_type(int status) {
  switch (status) {
    case 400:
    case 422:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
  }
}

Json anthropic_error_json(int status, const std::string& message) {
  return Json{{"type", "error"},
              {"error", Json{{"type", anthropic_error_type(status)}, {"message", message}}}};
}

std::string anthropic_error_body(int status, const std::string& openai_body) {
  const Json parsed = Json::parse(openai_body, nullptr, /*allow_exceptions=*/false);
  std::string message = openai_body;
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
    message = string_field(parsed["error"], "message");
  }
  return dump(anthropic_error_json(status, message));
}

namespace {

// usage: input_tokens are the prompt tokens computed, cache_read_input_tokens those found in the
// cache (Anthropic counts the input as their sum).
Json anthropic_usage(const RequestStats& s) {
  return Json{{"input_tokens", s.n_prompt - s.n_cached},
              {"output_tokens", s.n_generated},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", s.n_cached}};
}

// A tool call's arguments as the tool_use block's input: the JSON the model wrote, or the text
// itself when it is not JSON or passes the JSON shape limits (core/json_nesting.h).
Json tool_input(const std::string& arguments) {
  if (json_shape_excess(arguments)) return Json(arguments);
  Json input = Json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_discarded() ? Json(arguments) : input;
}

Json stop_sequence_of(const BatchEvent& e) {
  return e.finish == FinishReason::kStop && !e.stop.empty() ? Json(e.stop) : Json();
}

class AnthropicFormat : public WireFormat {
 public:
  AnthropicFormat(ReplyInfo info, int64_t n_prompt) : info_(std::move(info)), n_prompt_(n_prompt) {}

  std::vector<std::string> stream_open() override {
    Json usage{{"input_tokens", n_prompt_},
               {"output_tokens", 0},
               {"cache_creation_input_tokens", 0},
               {"cache_read_input_tokens", 0}};
    Json start{{"type", "message_start"},
               {"message", message(Json::array(), Json(), Json(), std::move(usage))}};
    return {sse_frame("message_start", start), sse_frame("ping", Json{{"type", "ping"}})};
  }

  std::vector<std::string> stream_event(const BatchEvent& e) override {
    std::vector<std::string> frames;
    if (!e.reasoning.empty()) {
      open_block(frames, Block::kThinking,
                 Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      delta(frames, Json{{"type", "thinking_delta"}, {"thinking", e.reasoning}});
    }
    if (!e.text.empty()) {
      open_block(frames, Block::kText, Json{{"type", "text"}, {"text", ""}});
      delta(frames, Json{{"type", "text_delta"}, {"text", e.text}});
    }
    for (const ToolCallDelta& d : e.tool_calls) {
      if (!d.id.empty()) {
        close_block(frames);  // each call is a block of its own
        open_block(
            frames, Block::kToolUse,
            Json{{"type", "tool_use"}, {"id", d.id}, {"name", d.name}, {"input", Json::object()}});
      }
      if (!d.arguments.empty()) {
        delta(frames, Json{{"type", "input_json_delta"}, {"partial_json", d.arguments}});
      }
    }
    if (e.done) finish(frames, e);
    return frames;
  }

  Json complete(const ReplyParts& parts, const std::vector<SampledToken>&,
                const BatchEvent& final_event) const override {
    Json content = Json::array();
    if (!parts.reasoning.empty()) {
      content.push_back(
          Json{{"type", "thinking"}, {"thinking", parts.reasoning}, {"signature", ""}});
    }
    if (!parts.content.empty()) content.push_back(Json{{"type", "text"}, {"text", parts.content}});
    for (const ToolCall& c : parts.tool_calls) {
      content.push_back(Json{{"type", "tool_use"},
                             {"id", c.id},
                             {"name", c.name},
                             {"input", tool_input(c.arguments)}});
    }
    if (content.empty()) content.push_back(Json{{"type", "text"}, {"text", ""}});
    return message(std::move(content), anthropic_stop_reason(final_event.finish),
                   stop_sequence_of(final_event), anthropic_usage(final_event.stats));
  }

  Json error_body(const ApiError& error) const override {
    return anthropic_error_json(error.status, error.message);
  }

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };

  Json message(Json content, Json stop_reason, Json stop_sequence, Json usage) const {
    return Json{{"id", info_.id},
                {"type", "message"},
                {"role", "assistant"},
                {"model", info_.model},
                {"content", std::move(content)},
                {"stop_reason", std::move(stop_reason)},
                {"stop_sequence", std::move(stop_sequence)},
                {"usage", std::move(usage)}};
  }

  // Starts a block of that kind unless one is open (a tool_use block always starts anew).
  void open_block(std::vector<std::string>& frames, Block kind, Json block) {
    if (open_ == kind && kind != Block::kToolUse) return;
    close_block(frames);
    open_ = kind;
    ++index_;
    frames.push_back(sse_frame("content_block_start", Json{{"type", "content_block_start"},
                                                           {"index", index_},
                                                           {"content_block", std::move(block)}}));
  }

  void close_block(std::vector<std::string>& frames) {
    if (open_ == Block::kNone) return;
    frames.push_back(
        sse_frame("content_block_stop", Json{{"type", "content_block_stop"}, {"index", index_}}));
    open_ = Block::kNone;
  }

  void delta(std::vector<std::string>& frames, Json delta) const {
    frames.push_back(sse_frame(
        "content_block_delta",
        Json{{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}}));
  }

  // The last block closed (an empty text block when there was none, as in complete()), then
  // message_delta and message_stop; or the engine's error.
  void finish(std::vector<std::string>& frames, const BatchEvent& e) {
    if (!e.error.empty()) {
      frames.push_back(sse_frame("error", anthropic_error_json(500, e.error)));
      return;
    }
    if (index_ < 0) open_block(frames, Block::kText, Json{{"type", "text"}, {"text", ""}});
    close_block(frames);
    Json stop{{"stop_reason", anthropic_stop_reason(e.finish)},
              {"stop_sequence", stop_sequence_of(e)}};
    frames.push_back(sse_frame("message_delta", Json{{"type", "message_delta"},
                                                     {"delta", std::move(stop)},
                                                     {"usage", anthropic_usage(e.stats)}}));
    frames.push_back(sse_frame("message_stop", Json{{"type", "message_stop"}}));
  }

  ReplyInfo info_;
  int64_t n_prompt_;
  Block open_ = Block::kNone;
  int index_ = -1;  // the last block's index
};

}  // namespace

std::unique_ptr<WireFormat> anthropic_format(const ReplyInfo& info, int64_t n_prompt) {
  return std::make_unique<AnthropicFormat>(info, n_prompt);
}

}  // namespace minfer::server
