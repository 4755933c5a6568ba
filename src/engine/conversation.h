// A multi-turn conversation rendered through the model's chat template (DESIGN.md §4 "Chat
// templates", "Engine"): the messages, their tokens, and dropping the oldest turns when the
// context fills. Each turn is rendered whole; the scheduler compares token prefixes to find what
// the cache already holds, so nothing here assumes how a template joins turns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "core/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// The model's `tokenizer.chat_template` (ChatML when the file has none) with the texts of its BOS
// and EOS tokens as the template's bos_token / eos_token. The template is tried once on a small
// conversation under its render budgets: one that goes over a budget there (a template made to
// hang or exhaust memory) is an error (kResourceExhausted) naming the budget and line, so that
// the model loads but its chat requests are refused with that message. Errors the messages
// could cause (raise_exception on a role the template refuses) do not fail the check.
Result<chat::ChatTemplate> load_chat_template(const GgufFile& file);

// Tokens of a rendered chat prompt: special tokens such as <|im_start|> parsed, and the model's
// BOS put in front when it adds one, unless the template already wrote it (no double BOS).
std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, std::string_view text);

class Conversation {
 public:
  // `system` empty: no system message (the template may add its own default).
  // `tmpl` and `tokenizer` must outlive the conversation.
  Conversation(const chat::ChatTemplate& tmpl, const Tokenizer& tokenizer, std::string system);

  void add_user(std::string text);
  void add_assistant(std::string text);
  // An assistant reply that called tools: `tool_calls` as OpenAI writes them ([{"id", "type":
  // "function", "function": {"name", "arguments"}}]; arguments an object, as templates tojson
  // them, or the model's text when it is not JSON).
  void add_assistant(std::string text, nlohmann::ordered_json tool_calls);
  // A tool's result for one call: {"role": "tool", "tool_call_id", "name", "content"}.
  void add_tool_result(std::string call_id, std::string name, std::string content);
  // The tools the template shows the model (an OpenAI tools array; null: none).
  void set_tools(nlohmann::ordered_json tools) { tools_ = std::move(tools); }
  // Removes the last message when it has that role; false when it does not.
  bool pop_last(std::string_view role);
  // Forgets every turn; the system message stays.
  void clear();
  // Drops the oldest turn: the first user message and the replies up to the next user message.
  // The system message and the latest user message always stay; false when nothing can go.
  bool drop_oldest_turn();

  // The whole conversation rendered and tokenized (tokenize_chat_prompt).
  Result<std::vector<int32_t>> tokens(bool add_generation_prompt) const;
  Result<std::string> render(bool add_generation_prompt) const;

  const nlohmann::ordered_json& messages() const { return messages_; }
  // Replaces the messages by `messages` (an array of {"role", "content"} objects with string
  // values, which may carry tool_calls (an array), tool_call_id and name (strings) as
  // add_assistant and add_tool_result write them; a first "system" message is the system
  // message). Error, leaving them as they were:
  // anything else.
  Status set_messages(const nlohmann::ordered_json& messages);

  // User messages held (turns).
  int64_t n_turns() const;
  bool has_system() const { return has_system_; }

 private:
  const chat::ChatTemplate& tmpl_;
  const Tokenizer& tokenizer_;
  bool has_system_ = false;
  nlohmann::ordered_json messages_;  // [n_messages] {"role", "content"}, OpenAI style
  nlohmann::ordered_json tools_;     // the tools offered (null: none)
};

}  // namespace minfer::engine
