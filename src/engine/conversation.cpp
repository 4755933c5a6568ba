#include "engine/conversation.h"

namespace minfer::engine {

namespace {

// The text of the token whose id is stored under `key` (e.g. tokenizer.ggml.bos_token_id), or ""
// when the file names none.
std::string special_token_text(const GgufFile& file, const char* key) {
  if (file.find(key) == nullptr) return "";
  auto id = file.get_integer(key);
  auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!id.is_ok() || !tokens.is_ok()) return "";
  const std::vector<std::string>& list = *tokens.value();
  if (id.value() < 0 || static_cast<size_t>(id.value()) >= list.size()) return "";
  return list[static_cast<size_t>(id.value())];
}

nlohmann::ordered_json message(const char* role, std::string content) {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  m["role"] = role;
  m["content"] = std::move(content);
  return m;
}

}  // namespace

Result<chat::ChatTemplate> load_chat_template(const GgufFile& file) {
  std::string source = chat::kChatMlTemplate;
  if (file.find("tokenizer.chat_template") != nullptr) {
    MINFER_ASSIGN_OR_RETURN(source, file.get_string("tokenizer.chat_template"));
  }
  MINFER_ASSIGN_OR_RETURN(
      chat::ChatTemplate tmpl,
      chat::ChatTemplate::create(source, special_token_text(file, "tokenizer.ggml.bos_token_id"),
                                 special_token_text(file, "tokenizer.ggml.eos_token_id")));
  nlohmann::ordered_json one_turn = nlohmann::ordered_json::array();
  one_turn.push_back(message("user", "Hello"));
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();
  turns.push_back(message("system", "You are helpful."));
  turns.push_back(message("user", "Hello"));
  turns.push_back(message("assistant", "Hi."));
  turns.push_back(message("user", "Thanks"));
  for (const nlohmann::ordered_json* messages : {&one_turn, &turns}) {
    Result<std::string> trial =
        tmpl.render(*messages, nullptr, true, nlohmann::ordered_json::object());
    if (!trial.is_ok() && trial.status().code() == ErrorCode::kResourceExhausted) {
      return make_error(ErrorCode::kResourceExhausted,
                        "[chat] the model's chat template failed its load-time check on a "
                        "{}-message conversation: {}",
                        messages->size(), trial.status().message());
    }
  }
  return tmpl;
}

std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, std::string_view text) {
  std::vector<int32_t> ids = tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
  const int32_t bos = tokenizer.bos_id();
  if (tokenizer.add_bos() && bos != kNoToken && (ids.empty() || ids.front() != bos)) {
    ids.insert(ids.begin(), bos);
  }
  return ids;
}

Conversation::Conversation(const chat::ChatTemplate& tmpl, const Tokenizer& tokenizer,
                           std::string system)
    : tmpl_(tmpl), tokenizer_(tokenizer), messages_(nlohmann::ordered_json::array()) {
  if (!system.empty()) {
    messages_.push_back(message("system", std::move(system)));
    has_system_ = true;
  }
}

void Conversation::add_user(std::string text) {
  messages_.push_back(message("user", std::move(text)));
}

void Conversation::add_assistant(std::string text) {
  messages_.push_back(message("assistant", std::move(text)));
}

void Conversation::add_assistant(std::string text, nlohmann::ordered_json tool_calls) {
  nlohmann::ordered_json m = message("assistant", std::move(text));
  m["tool_calls"] = std::move(tool_calls);
  messages_.push_back(std::move(m));
}

void Conversation::add_tool_result(std::string call_id, std::string name, std::string content) {
  nlohmann::ordered_json m = message("tool", std::move(content));
  m["tool_call_id"] = std::move(call_id);
  m["name"] = std::move(name);
  messages_.push_back(std::move(m));
}

bool Conversation::pop_last(std::string_view role) {
  const size_t first = has_system_ ? 1 : 0;
  if (messages_.size() <= first || messages_.back()["role"] != role) return false;
  messages_.erase(messages_.size() - 1);
  return true;
}

void Conversation::clear() {
  const size_t keep = has_system_ ? 1 : 0;
  while (messages_.size() > keep) messages_.erase(messages_.size() - 1);
}

Status Conversation::set_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[chat] messages must be a JSON array of {{\"role\", \"content\"}}");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::ordered_json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] message {} must be an object with string 'role' and 'content'", i);
    }
    const bool calls_ok = !m.contains("tool_calls") || m["tool_calls"].is_array();
    const bool id_ok = !m.contains("tool_call_id") || m["tool_call_id"].is_string();
    const bool name_ok = !m.contains("name") || m["name"].is_string();
    if (!calls_ok || !id_ok || !name_ok) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] message {}: tool_calls must be an array, tool_call_id and name "
                        "strings",
                        i);
    }
  }
  messages_ = nlohmann::ordered_json::array();
  for (const auto& m : messages) {
    nlohmann::ordered_json kept =
        message(m["role"].get<std::string>().c_str(), m["content"].get<std::string>());
    for (const char* key : {"tool_calls", "tool_call_id", "name"}) {
      if (m.contains(key)) kept[key] = m[key];
    }
    messages_.push_back(std::move(kept));
  }
  has_system_ = !messages_.empty() && messages_[0]["role"] == "system";
  return Status::ok();
}

int64_t Conversation::n_turns() const {
  int64_t n = 0;
  for (const auto& m : messages_) n += m["role"] == "user" ? 1 : 0;
  return n;
}

bool Conversation::drop_oldest_turn() {
  const size_t first = has_system_ ? 1 : 0;
  // The end of the oldest turn: the index of the second user message.
  size_t end = first + 1;
  while (end < messages_.size() && messages_[end]["role"] != "user") ++end;
  if (end >= messages_.size()) return false;  // only the latest turn is left
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages_.size(); ++i) {
    if (i < first || i >= end) kept.push_back(messages_[i]);
  }
  messages_ = std::move(kept);
  return true;
}

Result<std::string> Conversation::render(bool add_generation_prompt) const {
  return tmpl_.render(messages_, tools_, add_generation_prompt, nlohmann::ordered_json::object());
}

Result<std::vector<int32_t>> Conversation::tokens(bool add_generation_prompt) const {
  MINFER_ASSIGN_OR_RETURN(std::string text, render(add_generation_prompt));
  return tokenize_chat_prompt(tokenizer_, text);
}

}  // namespace minfer::engine
