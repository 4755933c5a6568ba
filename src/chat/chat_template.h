// A model's chat template (GGUF `tokenizer.chat_template`, Jinja) compiled once and rendered per
// request, byte-identical to Hugging Face transformers' apply_chat_template (Jinja2 with
// trim_blocks, lstrip_blocks and loop controls; tojson = json.dumps without ASCII escaping).
//
//   auto tmpl = ChatTemplate::create(source, "<|endoftext|>", "<|im_end|>");
//   auto prompt = tmpl->render(messages, nullptr, /*add_generation_prompt=*/true, {});
//
// Inputs are nlohmann::ordered_json so that object keys keep the caller's order, as Python's
// dicts do (tojson of a tool schema prints keys in the order they were given).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/budget.h"
#include "core/status.h"

namespace minfer::chat {

struct Stmt;

// The template used when a model file has none: ChatML.
extern const char* const kChatMlTemplate;

// The OpenAI request field reasoning_effort as a template reads it: none and minimal (no
// thinking, which the server's reasoning budget of 0 holds to) are given as low, the least that
// gpt-oss's "Reasoning:" line knows (low, medium, high); other values as they are.
std::string template_reasoning_effort(const std::string& effort);

class ChatTemplate {
 public:
  // Parses `source`; a template needing an unsupported construct fails here with
  // "[chat] template line N: unsupported filter 'wordwrap'" and the like. `bos_token` and
  // `eos_token` become the template variables of the same names.
  static Result<ChatTemplate> create(const std::string& source, std::string bos_token,
                                     std::string eos_token);

  // Renders `messages` (an array of OpenAI-style messages, passed through as given: tool_calls
  // arguments stay objects or strings; for a template that reads an assistant message's
  // `thinking` and never `reasoning_content` — gpt-oss's — a message's reasoning_content is
  // given as its thinking too, as llama-server does; for a template that renders only an
  // assistant message's first tool call — gpt-oss's — a message of several calls is given as one
  // message per call, each followed by its results). `tools` is an array, or null for none (the
  // variable `tools` is then defined and None, as transformers passes it). `extra` is an object of
  // further template variables (enable_thinking, ...); they override the defaults.
  Result<std::string> render(const nlohmann::ordered_json& messages,
                             const nlohmann::ordered_json& tools, bool add_generation_prompt,
                             const nlohmann::ordered_json& extra) const;

  // Renders an OpenAI-style request body: `messages`, optional `tools`, `add_generation_prompt`
  // (default true), and template variables from `chat_template_kwargs` and from any other
  // top-level key that is not a known sampling/request field (kwargs win; a top-level
  // reasoning_effort through template_reasoning_effort, kwargs' as given).
  Result<std::string> render_request(const nlohmann::ordered_json& body) const;

  const std::string& source() const { return source_; }

  // The budgets every render runs under (RenderLimits' defaults unless set): a render that goes
  // over one fails with "[chat] template line N: ... exceeds the 16 MiB size budget" and the
  // like.
  void set_limits(const RenderLimits& limits) { limits_ = limits; }
  const RenderLimits& limits() const { return limits_; }

 private:
  ChatTemplate() = default;

  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  RenderLimits limits_;
  bool reads_thinking_ = false;  // the template reads message.thinking, not reasoning_content
  // message.tool_calls[0], never a loop over the calls nor their count
  bool reads_first_call_only_ = false;
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> program_;
};

}  // namespace minfer::chat
