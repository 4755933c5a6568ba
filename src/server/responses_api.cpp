#include "server/responses_api.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace minfer::server {

namespace {

using MaybeError = std::optional<ApiError>;

// A message's content: a string, or parts {"type": input_text | output_text | text, "text"}
// joined.
std::optional<ApiError> content_text(const Json& content, const std::string& field,
                                     std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return wrong_type(field, "a string or an array of content parts", content);
  out.clear();
  return for_each_object(content, field, "a content part",
                         [&](const Json& part, const std::string& name) -> MaybeError {
                           const std::string type = string_field(part, "type");
                           if (type != "input_text" && type != "output_text" && type != "text") {
                             return bad_request(
                                 fmt::format("[server] '{}': content parts of type '{}' are not "
                                             "supported (expected 'input_text' or 'output_text')",
                                             name, type),
                                 name, "invalid_value");
                           }
                           out += string_field(part, "text");
                           return std::nullopt;
                         });
}

std::optional<ApiError> message_item(const Json& item, const std::string& field, Json& out) {
  std::string role = string_field(item, "role");
  if (role == "developer") role = "system";
  if (role != "user" && role != "system" && role != "assistant") {
    return bad_request(fmt::format("[server] '{}.role' must be user, system, developer or "
                                   "assistant, got {}",
                                   field, item.value("role", Json()).dump()),
                       field + ".role", "invalid_value");
  }
  std::string text;
  if (auto e = content_text(item.value("content", Json()), field + ".content", text)) return e;
  out.push_back(Json{{"role", role}, {"content", text}});
  return std::nullopt;
}

// A function_call item joins the assistant message before it (its text, its other calls).
std::optional<ApiError> function_call_item(const Json& item, const std::string& field, Json& out) {
  if (string_field(item, "call_id").empty() || string_field(item, "name").empty() ||
      !item.contains("arguments") || !item["arguments"].is_string()) {
    return bad_request(fmt::format("[server] '{}' must have string 'call_id', 'name' and "
                                   "'arguments'",
                                   field),
                       field, "invalid_value");
  }
  Json call{{"id", item["call_id"]},
            {"type", "function"},
            {"function", Json{{"name", item["name"]}, {"arguments", item["arguments"]}}}};
  if (out.empty() || string_field(out.back(), "role") != "assistant") {
    out.push_back(Json{{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array()}});
  }
  Json& calls = out.back()["tool_calls"];
  if (!calls.is_array()) calls = Json::array();
  calls.push_back(std::move(call));
  return std::nullopt;
}

std::optional<ApiError> function_output_item(const Json& item, const std::string& field,
                                             Json& out) {
  if (string_field(item, "call_id").empty()) {
    return bad_request(fmt::format("[server] '{}.call_id' must be a non-empty string", field),
                       field + ".call_id", "invalid_value");
  }
  std::string output;
  if (auto e = content_text(item.value("output", Json()), field + ".output", output)) return e;
  out.push_back(Json{{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", output}});
  return std::nullopt;
}

// instructions and input → the chat's messages.
std::optional<ApiError> translate_input(const Json& body, Json& out) {
  out = Json::array();
  if (auto it = body.find("instructions"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("instructions", "a string", *it);
    out.push_back(Json{{"role", "system"}, {"content", *it}});
  }
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) {
    return bad_request("[server] 'input' is required", "input", "missing_required_parameter");
  }
  if (input->is_string()) {
    out.push_back(Json{{"role", "user"}, {"content", *input}});
    return std::nullopt;
  }
  if (!input->is_array()) return wrong_type("input", "a string or an array of items", *input);
  return for_each_object(
      *input, "input", "an item object",
      [&](const Json& item, const std::string& field) -> MaybeError {
        const std::string type = string_field(item, "type");
        if (type.empty() || type == "message") return message_item(item, field, out);
        if (type == "function_call") return function_call_item(item, field, out);
        if (type == "function_call_output") return function_output_item(item, field, out);
        if (type == "reasoning") return std::nullopt;  // earlier reasoning is not shown again
        return bad_request(
            fmt::format("[server] '{}': items of type '{}' are not supported (expected "
                        "message, function_call, function_call_output or reasoning)",
                        field, type),
            field + ".type", "invalid_value");
      });
}

// tools: [{"type": "function", "name", "description", "parameters"}] → chat tools.
std::optional<ApiError> translate_response_tools(const Json& tools, Json& out) {
  if (!tools.is_array()) return wrong_type("tools", "an array of tools", tools);
  out = Json::array();
  return for_each_object(
      tools, "tools", "a tool object", [&](const Json& t, const std::string& field) -> MaybeError {
        if (string_field(t, "type") != "function" || string_field(t, "name").empty()) {
          return bad_request(
              fmt::format("[server] '{}' must be {{\"type\": \"function\", \"name\": "
                          "…}} (only function tools are supported)",
                          field),
              field, "invalid_value");
        }
        Json function{{"name", t["name"]}};
        for (const char* key : {"description", "parameters"}) {
          if (t.contains(key) && !t[key].is_null()) function[key] = t[key];
        }
        out.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
        return std::nullopt;
      });
}

std::optional<ApiError> translate_response_tool_choice(const Json& choice, Json& chat) {
  if (choice.is_string()) {
    chat["tool_choice"] = choice;  // none, auto, required: checked by the chat path
  } else if (string_field(choice, "type") == "function" && !string_field(choice, "name").empty()) {
    chat["tool_choice"] = Json{{"type", "function"}, {"function", Json{{"name", choice["name"]}}}};
  } else {
    return wrong_type("tool_choice",
                      "'none', 'auto', 'required' or {\"type\": \"function\", \"name\": …}",
                      choice);
  }
  return std::nullopt;
}

// text.format {"type": text | json_object | json_schema, "schema", "name"} → response_format.
std::optional<ApiError> translate_text_format(const Json& text, Json& chat) {
  if (!text.is_object()) return wrong_type("text", "an object", text);
  auto format = text.find("format");
  if (format == text.end() || format->is_null()) return std::nullopt;
  const std::string type = string_field(*format, "type");
  if (type == "json_schema") {
    if (!format->contains("schema") || !(*format)["schema"].is_object()) {
      return wrong_type("text.format.schema", "an object (a JSON schema)",
                        format->value("schema", Json()));
    }
    chat["response_format"] = Json{
        {"type", "json_schema"},
        {"json_schema",
         Json{{"name", format->value("name", Json("response"))}, {"schema", (*format)["schema"]}}}};
  } else if (type == "json_object" || type == "text") {
    chat["response_format"] = Json{{"type", type}};
  } else {
    return bad_request(fmt::format("[server] 'text.format.type' must be 'text', 'json_object' or "
                                   "'json_schema', got {}",
                                   format->value("type", Json()).dump()),
                       "text.format.type", "invalid_value");
  }
  return std::nullopt;
}

// reasoning.effort: none / minimal → no thinking (and chat's reasoning_effort, which a template
// reads as low); low / medium / high → thinking, with the budget chat's reasoning_effort has
// (reasoning_effort_budget), and the effort as a template variable.
std::optional<ApiError> translate_reasoning(const Json& reasoning, ChatTranslation& out) {
  if (!reasoning.is_object()) return wrong_type("reasoning", "an object", reasoning);
  auto effort = reasoning.find("effort");
  if (effort == reasoning.end() || effort->is_null()) return std::nullopt;
  const std::string value = effort->is_string() ? effort->get<std::string>() : "";
  const std::optional<int32_t> budget = reasoning_effort_budget(value);
  if (budget == 0) {
    out.reasoning_budget = 0;
    out.chat["chat_template_kwargs"] = Json{{"enable_thinking", false}};
    // The chat field, which the template reads as an effort it knows (gpt-oss's: low).
    out.chat["reasoning_effort"] = value;
  } else if (budget.has_value()) {
    out.reasoning_budget = budget;
    // The effort as gpt-oss's template reads it (its "Reasoning:" line); others ignore it.
    out.chat["chat_template_kwargs"] = Json{{"enable_thinking", true}, {"reasoning_effort", value}};
    out.chat["reasoning_format"] = "deepseek";
  } else {
    return bad_request(fmt::format("[server] 'reasoning.effort' must be none, minimal, low, medium "
                                   "or high, got {}",
                                   effort->dump()),
                       "reasoning.effort", "invalid_value");
  }
  return std::nullopt;
}

// Nothing is stored: store true and previous_response_id / conversation are refused.
std::optional<ApiError> check_stateless(const Json& body) {
  if (auto it = body.find("store"); it != body.end() && *it == Json(true)) {
    return bad_request(
        "[server] 'store' true is not supported: this server keeps no responses "
        "(send store: false and the whole conversation as input)",
        "store", "unsupported");
  }
  for (const char* field : {"previous_response_id", "conversation"}) {
    if (auto it = body.find(field); it != body.end() && !it->is_null()) {
      return bad_request(fmt::format("[server] '{}' is not supported: this server keeps no "
                                     "responses (send the whole conversation as input)",
                                     field),
                         field, "unsupported");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> responses_to_chat(const Json& body, ChatTranslation& out) {
  out = ChatTranslation{};
  out.chat = Json::object();
  Json& chat = out.chat;
  if (auto e = check_stateless(body)) return e;
  if (auto e = translate_input(body, chat["messages"])) return e;
  // Fields of the same name and meaning, and llama-server's extensions (seed, top_k, min_p,
  // grammar, logit_bias): checked by the chat path (types and ranges).
  for (const char* field : {"model", "temperature", "top_p", "stream", "parallel_tool_calls",
                            "seed", "top_k", "min_p", "grammar", "logit_bias"}) {
    if (auto it = body.find(field); it != body.end() && !it->is_null()) chat[field] = *it;
  }
  if (auto it = body.find("max_output_tokens"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return bad_request("[server] 'max_output_tokens' must be a positive integer",
                         "max_output_tokens", "invalid_value");
    }
    chat["max_tokens"] = *it;
  }
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (auto e = translate_response_tools(*it, chat["tools"])) return e;
    if (chat["tools"].empty()) chat.erase("tools");
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (auto e = translate_response_tool_choice(*it, chat)) return e;
  }
  if (auto it = body.find("text"); it != body.end() && !it->is_null()) {
    if (auto e = translate_text_format(*it, chat)) return e;
  }
  if (auto it = body.find("reasoning"); it != body.end() && !it->is_null()) {
    if (auto e = translate_reasoning(*it, out)) return e;
  }
  return std::nullopt;
}

namespace {

Json responses_usage(const RequestStats& s) {
  return Json{{"input_tokens", s.n_prompt},
              {"input_tokens_details", Json{{"cached_tokens", s.n_cached}}},
              {"output_tokens", s.n_generated},
              {"output_tokens_details", Json{{"reasoning_tokens", 0}}},
              {"total_tokens", s.n_prompt + s.n_generated}};
}

Json output_text_part(const std::string& text) {
  return Json{{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}};
}

Json reasoning_part(const std::string& text) {
  return Json{{"type", "reasoning_text"}, {"text", text}};
}

// One output item: a message (its output_text), a reasoning item or a function call.
struct OutputItem {
  enum class Kind { kMessage, kReasoning, kFunctionCall } kind = Kind::kMessage;
  std::string id;
  std::string text;  // the message's text, the reasoning, or the call's arguments
  std::string call_id;
  std::string name;

  // done: the item whole (an item just added has no content parts yet).
  Json to_json(bool done) const {
    const char* status = done ? "completed" : "in_progress";
    Json parts = Json::array();
    if (done)
      parts.push_back(kind == Kind::kMessage ? output_text_part(text) : reasoning_part(text));
    switch (kind) {
      case Kind::kMessage:
        return Json{{"id", id},
                    {"type", "message"},
                    {"status", status},
                    {"role", "assistant"},
                    {"content", std::move(parts)}};
      case Kind::kReasoning:
        return Json{{"id", id},
                    {"type", "reasoning"},
                    {"summary", Json::array()},
                    {"content", std::move(parts)},
                    {"status", status}};
      case Kind::kFunctionCall:
        break;
    }
    return Json{{"id", id},     {"type", "function_call"}, {"status", status}, {"call_id", call_id},
                {"name", name}, {"arguments", text}};
  }
};

class ResponsesFormat : public WireFormat {
 public:
  explicit ResponsesFormat(ReplyInfo info) : info_(std::move(info)) {}

  std::vector<std::string> stream_open() override {
    Json response = response_json("in_progress", Json::array(), Json(), Json());
    std::vector<std::string> frames;
    emit(frames, "response.created", Json{{"response", response}});
    emit(frames, "response.in_progress", Json{{"response", std::move(response)}});
    return frames;
  }

  std::vector<std::string> stream_event(const BatchEvent& e) override {
    std::vector<std::string> frames;
    if (!e.reasoning.empty()) {
      open_item(frames, OutputItem::Kind::kReasoning);
      append(frames, "response.reasoning_text.delta", e.reasoning);
    }
    if (!e.text.empty()) {
      open_item(frames, OutputItem::Kind::kMessage);
      append(frames, "response.output_text.delta", e.text);
    }
    for (const ToolCallDelta& d : e.tool_calls) {
      if (!d.id.empty()) {
        close_item(frames);  // each call is an item of its own
        open_item(frames, OutputItem::Kind::kFunctionCall, d.id, d.name);
      }
      if (!d.arguments.empty())
        append(frames, "response.function_call_arguments.delta", d.arguments);
    }
    if (e.done) finish(frames, e);
    return frames;
  }

  Json complete(const ReplyParts& parts, const std::vector<SampledToken>&,
                const BatchEvent& final_event) const override {
    std::vector<OutputItem> items;
    if (!parts.reasoning.empty()) {
      items.push_back(item(OutputItem::Kind::kReasoning, items.size(), parts.reasoning));
    }
    if (!parts.content.empty() || parts.tool_calls.empty()) {
      items.push_back(item(OutputItem::Kind::kMessage, items.size(), parts.content));
    }
    for (const ToolCall& c : parts.tool_calls) {
      items.push_back(
          item(OutputItem::Kind::kFunctionCall, items.size(), c.arguments, c.id, c.name));
    }
    Json output = Json::array();
    for (const OutputItem& i : items) output.push_back(i.to_json(true));
    return final_response(final_event, std::move(output));
  }

 private:
  OutputItem item(OutputItem::Kind kind, size_t index, std::string text, std::string call_id = "",
                  std::string name = "") const {
    static constexpr const char* kPrefix[] = {"msg_", "rs_", "fc_"};
    OutputItem i;
    i.kind = kind;
    // resp_N → msg_N_0, rs_N_1, fc_N_2: unique within the server's run.
    i.id = fmt::format("{}{}_{}", kPrefix[static_cast<int>(kind)],
                       info_.id.substr(info_.id.find('_') + 1), index);
    i.text = std::move(text);
    i.call_id = std::move(call_id);
    i.name = std::move(name);
    return i;
  }

  Json response_json(const char* status, Json output, Json usage, Json incomplete) const {
    return Json{{"id", info_.id},
                {"object", "response"},
                {"created_at", info_.created},
                {"status", status},
                {"error", nullptr},
                {"incomplete_details", std::move(incomplete)},
                {"instructions", nullptr},
                {"model", info_.model},
                {"output", std::move(output)},
                {"parallel_tool_calls", true},
                {"tool_choice", "auto"},
                {"tools", Json::array()},
                {"store", false},
                {"metadata", Json::object()},
                {"usage", std::move(usage)}};
  }

  // completed, or incomplete when it ran out of tokens (max_output_tokens or the context).
  Json final_response(const BatchEvent& e, Json output) const {
    const bool incomplete = e.finish == FinishReason::kLength || e.finish == FinishReason::kContext;
    return response_json(incomplete ? "incomplete" : "completed", std::move(output),
                         responses_usage(e.stats),
                         incomplete ? Json{{"reason", "max_output_tokens"}} : Json());
  }

  void emit(std::vector<std::string>& frames, const char* type, Json fields) {
    Json event{{"type", type}, {"sequence_number", sequence_++}};
    for (auto& [key, value] : fields.items()) event[key] = std::move(value);
    frames.push_back(sse_frame(type, event));
  }

  Json item_place() const { return Json{{"item_id", open_->id}, {"output_index", items_.size()}}; }

  // Starts an output item of that kind unless one is open (a call always starts anew).
  void open_item(std::vector<std::string>& frames, OutputItem::Kind kind,
                 const std::string& call_id = "", const std::string& name = "") {
    if (open_ && open_->kind == kind && kind != OutputItem::Kind::kFunctionCall) return;
    close_item(frames);
    open_ = item(kind, items_.size(), "", call_id, name);
    emit(frames, "response.output_item.added",
         Json{{"output_index", items_.size()}, {"item", open_->to_json(false)}});
    if (kind == OutputItem::Kind::kFunctionCall) return;
    Json place = item_place();
    place["content_index"] = 0;
    place["part"] = kind == OutputItem::Kind::kMessage ? output_text_part("") : reasoning_part("");
    emit(frames, "response.content_part.added", std::move(place));
  }

  void append(std::vector<std::string>& frames, const char* type, const std::string& delta) {
    open_->text += delta;
    Json place = item_place();
    if (open_->kind != OutputItem::Kind::kFunctionCall) place["content_index"] = 0;
    if (open_->kind == OutputItem::Kind::kMessage) place["logprobs"] = Json::array();
    place["delta"] = delta;
    emit(frames, type, std::move(place));
  }

  // The open item's done events: its text or arguments whole, its part, the item.
  void close_item(std::vector<std::string>& frames) {
    if (!open_) return;
    Json place = item_place();
    if (open_->kind == OutputItem::Kind::kFunctionCall) {
      place["arguments"] = open_->text;
      emit(frames, "response.function_call_arguments.done", std::move(place));
    } else {
      const bool message = open_->kind == OutputItem::Kind::kMessage;
      place["content_index"] = 0;
      Json done = place;
      done["text"] = open_->text;
      if (message) done["logprobs"] = Json::array();
      emit(frames, message ? "response.output_text.done" : "response.reasoning_text.done",
           std::move(done));
      place["part"] = message ? output_text_part(open_->text) : reasoning_part(open_->text);
      emit(frames, "response.content_part.done", std::move(place));
    }
    Json item = open_->to_json(true);
    emit(frames, "response.output_item.done",
         Json{{"output_index", items_.size()}, {"item", item}});
    items_.push_back(std::move(item));
    open_.reset();
  }

  void finish(std::vector<std::string>& frames, const BatchEvent& e) {
    if (!e.error.empty()) {
      emit(frames, "error",
           Json{{"code", "server_error"}, {"message", e.error}, {"param", nullptr}});
      return;
    }
    if (items_.empty() && !open_) open_item(frames, OutputItem::Kind::kMessage);
    close_item(frames);
    Json response = final_response(e, items_);
    const char* type =
        response["status"] == "incomplete" ? "response.incomplete" : "response.completed";
    emit(frames, type, Json{{"response", std::move(response)}});
  }

  ReplyInfo info_;
  int64_t sequence_ = 0;
  std::optional<OutputItem> open_;
  Json items_ = Json::array();  // the items done, in output order
};

}  // namespace

std::unique_ptr<WireFormat> responses_format(const ReplyInfo& info, int64_t) {
  return std::make_unique<ResponsesFormat>(info);
}

}  // namespace minfer::server
