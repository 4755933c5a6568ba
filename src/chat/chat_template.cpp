#include "chat/chat_template.h"

#include <set>
#include <stdexcept>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/parser.h"
#include "core/input_limits.h"

namespace minfer::chat {

const char* const kChatMlTemplate =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

namespace {

// JSON -> Value as Python's json.loads builds it (objects keep key order). `depth` counts the
// enclosing arrays and objects: deeper input is refused before the recursion gets deep.
Value from_json(const nlohmann::ordered_json& j, uint32_t depth = 0) {
  if (depth >= kMaxNesting) {
    throw TemplateError(0, fmt::format("JSON input nested more than {} deep", kMaxNesting));
  }
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::floating(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, v] : j.items()) d.set(k, from_json(v, depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();
  }
}

// A render stopped by a budget may have freed tens of MiB in the arena of the thread that ran it;
// glibc keeps such memory (its mmap threshold grows after large frees), so a server whose
// requests run on many threads would add up one such peak per thread. Hand it back.
void release_free_memory() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

// std::stoll and friends on a literal or index out of range (99999999999999999999, 0b2):
// an error in the template, never an exception out of the chat layer.
Status number_error(const std::logic_error& e) {
  return make_error(ErrorCode::kInvalidArgument,
                    "[chat] template: a number that cannot be read or is out of range ({})",
                    e.what());
}

Status to_status(const TemplateError& e) {
  const ErrorCode code =
      e.over_budget() ? ErrorCode::kResourceExhausted : ErrorCode::kInvalidArgument;
  if (e.line() > 0) return make_error(code, "[chat] template line {}: {}", e.line(), e.what());
  return make_error(code, "[chat] template: {}", e.what());
}

// Request fields that configure generation, not the template.
const std::set<std::string>& request_fields() {
  static const std::set<std::string> kFields = {"messages",
                                                "tools",
                                                "add_generation_prompt",
                                                "chat_template_kwargs",
                                                "model",
                                                "stream",
                                                "stream_options",
                                                "temperature",
                                                "top_p",
                                                "top_k",
                                                "min_p",
                                                "max_tokens",
                                                "max_completion_tokens",
                                                "n",
                                                "stop",
                                                "seed",
                                                "frequency_penalty",
                                                "presence_penalty",
                                                "repeat_penalty",
                                                "logit_bias",
                                                "logprobs",
                                                "top_logprobs",
                                                "user",
                                                "response_format",
                                                "tool_choice",
                                                "parallel_tool_calls",
                                                "reasoning_format"};
  return kFields;
}

// `messages` with each assistant message's reasoning_content given as its thinking (unless it
// has one).
nlohmann::ordered_json with_thinking(const nlohmann::ordered_json& messages) {
  nlohmann::ordered_json out = messages;
  for (auto& m : out) {
    if (!m.is_object() || m.value("role", "") != "assistant" || m.contains("thinking")) continue;
    auto it = m.find("reasoning_content");
    if (it != m.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      m["thinking"] = *it;
    }
  }
  return out;
}

// The tool messages of `messages` from index `i` on, up to the next message of another role.
size_t end_of_results(const nlohmann::ordered_json& messages, size_t i) {
  while (i < messages.size() && messages[i].is_object() &&
         messages[i].value("role", "") == "tool") {
    ++i;
  }
  return i;
}

// `messages` with each assistant message of several tool calls split into one message per call,
// each followed by the tool messages that answer it (by tool_call_id; unmatched ones after the
// last call, in their order). The first keeps the message's other fields (content, thinking);
// the others have empty content. For a template that renders only an assistant message's first
// call and names a tool result after the call before it (gpt-oss's): every call renders, and
// every result under its own call's name.
nlohmann::ordered_json one_call_per_message(const nlohmann::ordered_json& messages) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const auto calls = m.is_object() ? m.find("tool_calls") : m.end();
    if (!m.is_object() || m.value("role", "") != "assistant" || calls == m.end() ||
        !calls->is_array() || calls->size() < 2) {
      out.push_back(m);
      continue;
    }
    const size_t end = end_of_results(messages, i + 1);
    std::vector<bool> used(end - i - 1, false);
    for (size_t n = 0; n < calls->size(); ++n) {
      nlohmann::ordered_json one =
          n == 0 ? m : nlohmann::ordered_json{{"role", "assistant"}, {"content", ""}};
      one["tool_calls"] = nlohmann::ordered_json::array({(*calls)[n]});
      out.push_back(std::move(one));
      const auto id = (*calls)[n].is_object() ? (*calls)[n].find("id") : (*calls)[n].end();
      for (size_t r = i + 1; r < end && id != (*calls)[n].end(); ++r) {
        const auto answers = messages[r].find("tool_call_id");
        if (used[r - i - 1] || answers == messages[r].end() || *answers != *id) continue;
        used[r - i - 1] = true;
        out.push_back(messages[r]);
      }
    }
    for (size_t r = i + 1; r < end; ++r) {
      if (!used[r - i - 1]) out.push_back(messages[r]);
    }
    i = end - 1;
  }
  return out;
}

}  // namespace

std::string template_reasoning_effort(const std::string& effort) {
  return effort == "none" || effort == "minimal" ? "low" : effort;
}

Result<ChatTemplate> ChatTemplate::create(const std::string& source, std::string bos_token,
                                          std::string eos_token) {
  ChatTemplate t;
  t.source_ = source;
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  t.reads_thinking_ = source.find("message.thinking") != std::string::npos &&
                      source.find("reasoning_content") == std::string::npos;
  // (One that counts the calls decides itself: Llama 3.x's raises for several.)
  t.reads_first_call_only_ = source.find("message.tool_calls[0]") != std::string::npos &&
                             source.find("in message.tool_calls") == std::string::npos &&
                             source.find("tool_calls|length") == std::string::npos &&
                             source.find("tool_calls | length") == std::string::npos;
  if (source.size() > limits::kMaxTemplateBytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[chat] template: {} bytes, over the limit of {} bytes", source.size(),
                      limits::kMaxTemplateBytes);
  }
  try {
    t.program_ = std::make_shared<const StmtList>(parse_template(source));
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::logic_error& e) {
    return number_error(e);
  }
  return t;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                         const nlohmann::ordered_json& tools,
                                         bool add_generation_prompt,
                                         const nlohmann::ordered_json& extra) const {
  if (!messages.is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "[chat] messages: expected an array, got {}",
                      messages.type_name());
  }
  if (!tools.is_null() && !tools.is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "[chat] tools: expected an array, got {}",
                      tools.type_name());
  }
  if (!extra.is_null() && !extra.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[chat] template variables: expected an object, got {}", extra.type_name());
  }
  try {
    // What transformers passes to render(): messages, tools (None when absent), documents=None,
    // add_generation_prompt, the special tokens, then the caller's kwargs.
    Dict vars;
    nlohmann::ordered_json given = reads_thinking_ ? with_thinking(messages) : messages;
    if (reads_first_call_only_) given = one_call_per_message(given);
    vars.set("messages", from_json(given));
    vars.set("tools", from_json(tools));
    vars.set("documents", Value::none());
    vars.set("add_generation_prompt", Value::boolean(add_generation_prompt));
    vars.set("bos_token", Value::string(bos_token_));
    vars.set("eos_token", Value::string(eos_token_));
    if (extra.is_object()) {
      for (const auto& [k, v] : extra.items()) vars.set(k, from_json(v));
    }
    return render_program(*program_, vars, limits_);
  } catch (const TemplateError& e) {
    if (e.over_budget()) release_free_memory();
    return to_status(e);
  } catch (const std::logic_error& e) {
    return number_error(e);
  }
}

Result<std::string> ChatTemplate::render_request(const nlohmann::ordered_json& body) const {
  if (!body.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "[chat] request: expected a JSON object, got {}",
                      body.type_name());
  }
  auto messages = body.find("messages");
  if (messages == body.end()) {
    return make_error(ErrorCode::kInvalidArgument, "[chat] request: missing 'messages'");
  }
  nlohmann::ordered_json tools = body.value("tools", nlohmann::ordered_json());
  bool add_generation_prompt = true;
  if (auto it = body.find("add_generation_prompt"); it != body.end()) {
    if (!it->is_boolean()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] request: add_generation_prompt: expected a boolean, got {}",
                        it->type_name());
    }
    add_generation_prompt = it->get<bool>();
  }
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  for (const auto& [k, v] : body.items()) {
    if (request_fields().count(k) == 0) extra[k] = v;
  }
  if (auto it = extra.find("reasoning_effort"); it != extra.end() && it->is_string()) {
    *it = template_reasoning_effort(it->get<std::string>());
  }
  if (auto it = body.find("chat_template_kwargs"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] request: chat_template_kwargs: expected an object, got {}",
                        it->type_name());
    }
    for (const auto& [k, v] : it->items()) extra[k] = v;
  }
  return render(*messages, tools, add_generation_prompt, extra);
}

}  // namespace minfer::chat
