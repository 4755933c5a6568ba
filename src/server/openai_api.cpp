#include "server/openai_api.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "core/json_nesting.h"

namespace minfer::server {

Json ApiError::to_json() const {
  Json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json(nullptr) : Json(param);
  e["code"] = code.empty() ? Json(nullptr) : Json(code);
  return Json{{"error", e}};
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

const char* type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// Optional fields: absent or null leave `out` unchanged.
std::optional<ApiError> get_number(const Json& body, const std::string& field, double lo, double hi,
                                   float& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(field, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return bad_request(fmt::format("[server] '{}' must be in [{}, {}], got {}", field, lo, hi, v),
                       field, "invalid_value");
  }
  out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> get_integer(const Json& body, const std::string& field, int64_t lo,
                                    int64_t hi, int64_t& out, bool& present) {
  auto it = body.find(field);
  present = false;
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return wrong_type(field, "an integer", *it);
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return bad_request(fmt::format("[server] '{}' must be in [{}, {}], got {}", field, lo, hi,
                                   it->get<uint64_t>()),
                       field, "invalid_value");
  }
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return bad_request(fmt::format("[server] '{}' must be in [{}, {}], got {}", field, lo, hi, v),
                       field, "invalid_value");
  }
  out = v;
  present = true;
  return std::nullopt;
}

std::optional<ApiError> get_bool(const Json& body, const std::string& field, bool& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(field, "a boolean", *it);
  out = it->get<bool>();
  return std::nullopt;
}

// True when `field` is in `body` and not null.
bool field_given(const Json& body, const char* field) {
  auto it = body.find(field);
  return it != body.end() && !it->is_null();
}

// A message's content as the template sees it: a string, or the text parts of an array joined.
std::optional<ApiError> normalise_content(const Json& content, size_t index, Json& out) {
  const std::string field = fmt::format("messages[{}].content", index);
  if (content.is_null() || content.is_string()) {
    out = content;
    return std::nullopt;
  }
  if (!content.is_array()) return wrong_type(field, "a string or an array of parts", content);
  std::string text;
  for (const Json& part : content) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
        !part.contains("text") || !part["text"].is_string()) {
      return bad_request(fmt::format("[server] '{}': only parts {{\"type\": \"text\", \"text\": "
                                     "string}} are supported",
                                     field),
                         field, "invalid_value");
    }
    text += part["text"].get<std::string>();
  }
  out = text;
  return std::nullopt;
}

// An assistant message's tool_calls as the template wants them: each call's arguments, which
// clients send as JSON text, parsed into an object (Qwen's and Llama's templates print them with
// tojson, as llama-server passes them); text that is not JSON stays a string.
std::optional<ApiError> normalise_tool_calls(const Json& calls, const std::string& field,
                                             Json& out) {
  if (!calls.is_array()) return wrong_type(field, "an array of tool calls", calls);
  out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string call_field = fmt::format("{}[{}]", field, i);
    const Json& c = calls[i];
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
        !c["function"].contains("name") || !c["function"]["name"].is_string()) {
      return bad_request(fmt::format("[server] '{}' must be {{\"type\": \"function\", "
                                     "\"function\": {{\"name\": string, \"arguments\": "
                                     "string}}}}",
                                     call_field),
                         call_field, "invalid_value");
    }
    Json call = c;
    Json& arguments = call["function"]["arguments"];
    if (arguments.is_string()) {
      // The arguments stand 7 levels down the body (body, messages, message, tool_calls, call,
      // function): parsed, they must leave the whole within the body's depth limit.
      const JsonShapeLimits room{.max_depth = limits::kMaxJsonDepth - 7};
      if (const auto why = json_shape_error(arguments.get_ref<const std::string&>(), room)) {
        return bad_request(fmt::format("[server] '{}.function.arguments' {}", call_field, *why),
                           call_field, "invalid_json");
      }
      Json parsed = Json::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded()) arguments = std::move(parsed);
    } else if (arguments.is_null()) {
      arguments = Json::object();
    }
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const Json& body, Json& out) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) {
    return bad_request("[server] 'messages' is required", "messages", "missing_required_parameter");
  }
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) {
    return bad_request("[server] 'messages' must hold at least one message", "messages",
                       "invalid_value");
  }
  out = Json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& m = (*it)[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) return wrong_type(field, "an object", m);
    if (!m.contains("role") || !m["role"].is_string()) {
      return bad_request(fmt::format("[server] '{}.role' must be a string", field), field + ".role",
                         "invalid_value");
    }
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return bad_request(fmt::format("[server] '{}.role' must be one of system, developer, user, "
                                     "assistant, tool; got '{}'",
                                     field, role),
                         field + ".role", "invalid_value");
    }
    Json msg = m;
    msg["role"] = role;
    if (!m.contains("content") && !(role == "assistant" && m.contains("tool_calls"))) {
      return bad_request(fmt::format("[server] '{}.content' is required", field),
                         field + ".content", "missing_required_parameter");
    }
    if (m.contains("content")) {
      Json content;
      if (auto e = normalise_content(m["content"], i, content)) return e;
      if (content.is_null() && role != "assistant") {
        return bad_request(fmt::format("[server] '{}.content' must not be null", field),
                           field + ".content", "invalid_value");
      }
      msg["content"] = content;
    }
    if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (auto e =
              normalise_tool_calls(m["tool_calls"], field + ".tool_calls", msg["tool_calls"])) {
        return e;
      }
      // Templates test the content of a message that calls tools ('</think>' in content in
      // Qwen3's): absent or null, it is "" for them.
      if (!msg.contains("content") || msg["content"].is_null()) msg["content"] = "";
    }
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_prompt(const Json& body, int32_t n_vocab, ParsedRequest& out) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) {
    return bad_request("[server] 'prompt' is required", "prompt", "missing_required_parameter");
  }
  if (it->is_string()) {
    out.prompt_text = it->get<std::string>();
    if (out.prompt_text.empty()) {
      return bad_request("[server] 'prompt' must not be empty", "prompt", "invalid_value");
    }
    return std::nullopt;
  }
  // One prompt given as a list: [string] or [ids] or ids.
  const Json* p = &*it;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) {
    p = &(*p)[0];
    if (p->is_string()) {
      out.prompt_text = p->get<std::string>();
      if (out.prompt_text.empty()) {
        return bad_request("[server] 'prompt' must not be empty", "prompt", "invalid_value");
      }
      return std::nullopt;
    }
  }
  if (!p->is_array()) return wrong_type("prompt", "a string or an array of token ids", *p);
  if (p->empty()) return bad_request("[server] 'prompt' must not be empty", "prompt");
  for (const Json& id : *p) {
    if (!id.is_number_integer()) {
      return bad_request(
          "[server] 'prompt' holds more than one prompt or a non-integer token id "
          "(one prompt per request: a string or an array of token ids)",
          "prompt", "invalid_value");
    }
    const int64_t v = id.get<int64_t>();
    if (v < 0 || v >= n_vocab) {
      return bad_request(fmt::format("[server] token id {} in 'prompt' is out of range: expected "
                                     "0..{}",
                                     v, n_vocab - 1),
                         "prompt", "invalid_value");
    }
    out.prompt_ids.push_back(static_cast<int32_t>(v));
  }
  out.prompt_is_ids = true;
  return std::nullopt;
}

// model and user are not used but must have their documented types.
std::optional<ApiError> check_unused_fields(const Json& body) {
  for (const char* field : {"model", "user"}) {
    if (auto it = body.find(field); it != body.end() && !it->is_null() && !it->is_string()) {
      return wrong_type(field, "a string", *it);
    }
  }
  return std::nullopt;
}

// How much to generate: max_tokens, its newer name max_completion_tokens or llama-server's
// n_predict (two of them given with different values: 400), and n, the choices.
std::optional<ApiError> parse_lengths(const Json& body, GenerateParams& p, int32_t& n) {
  bool present = false;
  int64_t v = 0;
  const char* given = nullptr;  // the first of the fields given
  for (const char* field : {"max_tokens", "max_completion_tokens", "n_predict"}) {
    auto it = body.find(field);
    if (it != body.end() && it->is_number_integer() && it->get<int64_t>() <= 0) {
      return bad_request(
          fmt::format("[server] '{}' must be at least 1, got {}", field, it->get<int64_t>()), field,
          "invalid_value");
    }
    if (auto e = get_integer(body, field, 1, std::numeric_limits<int32_t>::max(), v, present)) {
      return e;
    }
    if (!present) continue;
    if (given != nullptr && v != p.max_tokens) {
      return bad_request(fmt::format("[server] '{}' ({}) and '{}' ({}) name the same limit: give "
                                     "one, or both with the same value",
                                     given, p.max_tokens, field, v),
                         field, "invalid_value");
    }
    if (given == nullptr) given = field;
    p.max_tokens = v;
  }
  if (auto e = get_integer(body, "n", 1, kMaxChoices, v, present)) return e;
  n = present ? static_cast<int32_t>(v) : 1;
  // llama-server's slot pinning: run in that slot, from what it holds (POST /slots/{id}).
  if (auto e = get_integer(body, "id_slot", -1, std::numeric_limits<int32_t>::max(), v, present)) {
    return e;
  }
  if (present) p.id_slot = static_cast<int32_t>(v);
  if (present && n > 1) {
    return bad_request("[server] 'n' > 1 cannot run in one pinned slot ('id_slot'): give one", "n",
                       "invalid_value");
  }
  return std::nullopt;
}

// The sampler's number fields and their ranges, checked in this order.
struct NumberField {
  const char* name;
  double lo;
  double hi;
  float GenerateParams::*field;
};
constexpr NumberField kNumberFields[] = {
    {"temperature", 0.0, 2.0, &GenerateParams::temperature},
    {"top_p", 0.0, 1.0, &GenerateParams::top_p},
    {"min_p", 0.0, 1.0, &GenerateParams::min_p},
    {"presence_penalty", -2.0, 2.0, &GenerateParams::presence_penalty},
    {"frequency_penalty", -2.0, 2.0, &GenerateParams::frequency_penalty},
    {"repeat_penalty", 0.0, 10.0, &GenerateParams::repeat_penalty},
};

// temperature, top_p, min_p, the penalties, top_k and seed.
std::optional<ApiError> parse_sampling(const Json& body, int32_t n_vocab, GenerateParams& s) {
  for (const NumberField& f : kNumberFields) {
    if (auto e = get_number(body, f.name, f.lo, f.hi, s.*f.field)) return e;
  }
  if (auto it = body.find("repeat_penalty");
      it != body.end() && it->is_number() && it->get<double>() <= 0.0) {
    return bad_request("[server] 'repeat_penalty' must be > 0", "repeat_penalty", "invalid_value");
  }
  bool present = false;
  int64_t v = 0;
  if (auto e = get_integer(body, "top_k", -1, n_vocab, v, present)) return e;
  if (present) s.top_k = static_cast<int32_t>(v);
  if (auto e = get_integer(body, "seed", std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max(), v, present)) {
    return e;
  }
  if (auto it = body.find("seed"); it != body.end() && it->is_number_unsigned()) {
    s.seed = it->get<uint64_t>();
  } else if (present) {
    s.seed = static_cast<uint64_t>(v);
  }
  s.seed = resolve_seed(s.seed);  // random unless given; the reply reports it
  return std::nullopt;
}

// stop: a string or a list of at most kMaxStopStrings strings of at most kMaxStopBytes each.
std::optional<ApiError> parse_stop(const Json& body, std::vector<std::string>& stops) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  auto add = [&](const Json& s) -> std::optional<ApiError> {
    if (!s.is_string()) return wrong_type("stop[]", "a string", s);
    const std::string& text = s.get_ref<const std::string&>();
    if (text.size() > limits::kMaxStopBytes) {
      return bad_request(fmt::format("[server] a 'stop' string of {} bytes is over the limit of {}",
                                     text.size(), limits::kMaxStopBytes),
                         "stop", "invalid_value");
    }
    stops.push_back(text);
    return std::nullopt;
  };
  if (it->is_string()) return add(*it);
  if (!it->is_array()) return wrong_type("stop", "a string or an array of strings", *it);
  if (it->size() > limits::kMaxStopStrings) {
    return bad_request(
        fmt::format("[server] 'stop' may hold at most {} strings", limits::kMaxStopStrings), "stop",
        "invalid_value");
  }
  for (const Json& s : *it) {
    if (auto e = add(s)) return e;
  }
  return std::nullopt;
}

// Chat: logprobs is a boolean and top_logprobs the alternatives, which need logprobs.
std::optional<ApiError> parse_chat_logprobs(const Json& body, ParsedRequest& out) {
  if (auto e = get_bool(body, "logprobs", out.logprobs)) return e;
  bool present = false;
  int64_t v = 0;
  if (auto e = get_integer(body, "top_logprobs", 0, kMaxTopLogprobs, v, present)) {
    return e;
  }
  if (present && !out.logprobs) {
    return bad_request("[server] 'top_logprobs' needs 'logprobs' set to true", "top_logprobs",
                       "invalid_value");
  }
  if (out.logprobs) out.params.top_logprobs = present ? static_cast<int32_t>(v) : 0;
  return std::nullopt;
}

// Completions: logprobs is the number of alternatives (0..5); echo is refused.
std::optional<ApiError> parse_completion_logprobs(const Json& body, ParsedRequest& out) {
  bool present = false;
  int64_t v = 0;
  if (auto e = get_integer(body, "logprobs", 0, 5, v, present)) return e;
  if (present) {
    out.logprobs = true;
    out.params.top_logprobs = static_cast<int32_t>(v);
  }
  bool echo = false;
  if (auto e = get_bool(body, "echo", echo)) return e;
  if (echo) return bad_request("[server] 'echo' is not supported", "echo", "unsupported");
  return std::nullopt;
}

// logit_bias: {"token id": bias in [-100, 100]}.
std::optional<ApiError> parse_logit_bias(const Json& body, int32_t n_vocab, GenerateParams& s) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("logit_bias", "an object of token id → bias", *it);
  for (const auto& [key, bias] : it->items()) {
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id >= n_vocab) {
      return bad_request(fmt::format("[server] 'logit_bias' key '{}' is not a token id in "
                                     "0..{}",
                                     key, n_vocab - 1),
                         "logit_bias", "invalid_value");
    }
    if (!bias.is_number() || !std::isfinite(bias.get<double>()) ||
        std::fabs(bias.get<double>()) > 100.0) {
      return bad_request(fmt::format("[server] 'logit_bias' of token {} must be a number in "
                                     "[-100, 100]",
                                     id),
                         "logit_bias", "invalid_value");
    }
    s.logit_bias.emplace_back(static_cast<int32_t>(id), bias.get<float>());
  }
  return std::nullopt;
}

// response_format: {"type": "text"}, {"type": "json_object"} (with an optional "schema", as
// llama-server takes it) or {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}.
// A schema becomes the request's grammar; a keyword minfer does not support is a 400 naming it.
std::optional<ApiError> parse_response_format(const Json& body, GenerateParams& p) {
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string()) {
    return wrong_type("response_format", "an object with a string 'type'", *it);
  }
  const std::string type = (*it)["type"].get<std::string>();
  if (type != "text" && type != "json_object" && type != "json_schema") {
    return bad_request(fmt::format("[server] response_format type must be 'text', "
                                   "'json_object' or 'json_schema', got '{}'",
                                   type),
                       "response_format", "invalid_value");
  }
  const Json* schema = nullptr;
  if (type == "json_schema") {
    auto spec = it->find("json_schema");
    if (spec == it->end() || !spec->is_object() || !spec->contains("schema")) {
      return bad_request(
          "[server] response_format json_schema needs 'json_schema': {\"name\": "
          "…, \"schema\": {…}}",
          "response_format", "invalid_value");
    }
    schema = &(*spec)["schema"];
  } else if (type == "json_object" && it->contains("schema")) {
    schema = &(*it)["schema"];
  }
  if (schema == nullptr) {
    p.json_object = type == "json_object";
    return std::nullopt;
  }
  Result<std::string> gbnf = json_schema_grammar(schema->dump());
  if (!gbnf.is_ok()) {
    return bad_request(gbnf.status().message(), "response_format", "unsupported_schema");
  }
  p.grammar = std::move(gbnf).value();
  return std::nullopt;
}

// The type of response_format when it is an object with a string type, else "".
std::string response_format_type(const Json& body) {
  auto it = body.find("response_format");
  if (it == body.end() || !it->is_object()) return "";
  auto type = it->find("type");
  return type != it->end() && type->is_string() ? type->get<std::string>() : "";
}

// grammar: GBNF text, as llama-server takes it; a grammar that does not parse is a 400 naming its
// line and column. Not together with a JSON response_format (each is a grammar of its own).
std::optional<ApiError> parse_grammar(const Json& body, GenerateParams& p) {
  auto it = body.find("grammar");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return wrong_type("grammar", "a string of GBNF", *it);
  std::string text = it->get<std::string>();
  if (text.empty()) return std::nullopt;
  const std::string format = response_format_type(body);
  if (format == "json_object" || format == "json_schema") {
    return bad_request(fmt::format("[server] 'grammar' cannot be used together with "
                                   "response_format '{}'",
                                   format),
                       "grammar", "invalid_value");
  }
  if (Status s = check_grammar(text); !s.is_ok()) {
    return bad_request(s.message(), "grammar", "invalid_grammar");
  }
  p.grammar = std::move(text);
  return std::nullopt;
}

// stream and stream_options.include_usage.
std::optional<ApiError> parse_stream(const Json& body, ParsedRequest& out) {
  if (auto e = get_bool(body, "stream", out.stream)) return e;
  auto it = body.find("stream_options");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
  if (auto e = get_bool(*it, "include_usage", out.include_usage)) {
    e->param = "stream_options.include_usage";
    return e;
  }
  return std::nullopt;
}

// tools: [{"type": "function", "function": {"name": string, ...}}]; their names are returned.
std::optional<ApiError> parse_tool_list(const Json& tools, std::vector<std::string>& names) {
  if (!tools.is_array()) return wrong_type("tools", "an array of tools", tools);
  if (tools.size() > limits::kMaxTools) {
    return bad_request(fmt::format("[server] 'tools' holds {} tools; the limit is {}", tools.size(),
                                   limits::kMaxTools),
                       "tools", "invalid_value");
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string field = fmt::format("tools[{}]", i);
    if (!t.is_object() || t.value("type", Json()) != "function" || !t.contains("function") ||
        !t["function"].is_object()) {
      return bad_request(fmt::format("[server] '{}' must be {{\"type\": \"function\", "
                                     "\"function\": {{\"name\": …}}}}",
                                     field),
                         field, "invalid_value");
    }
    const Json& f = t["function"];
    if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty()) {
      return bad_request(
          fmt::format("[server] '{}.function.name' must be a non-empty string", field),
          field + ".function.name", "invalid_value");
    }
    if (f.contains("parameters") && !f["parameters"].is_object()) {
      return wrong_type(field + ".function.parameters", "an object (a JSON schema)",
                        f["parameters"]);
    }
    names.push_back(f["name"].get<std::string>());
  }
  return std::nullopt;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}} naming
// one of the tools.
std::optional<ApiError> parse_tool_choice(const Json& body, const std::vector<std::string>& names,
                                          GenerateParams& p) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    const std::string v = it->get<std::string>();
    const std::optional<ToolChoice> choice = tool_choice_from_string(v);
    if (!choice) {
      return bad_request(fmt::format("[server] 'tool_choice' must be 'none', 'auto', 'required' "
                                     "or a function, got '{}'",
                                     v),
                         "tool_choice", "invalid_value");
    }
    p.tool_choice = *choice;
  } else if (it->is_object() && it->value("type", Json()) == "function" &&
             it->contains("function") && (*it)["function"].is_object() &&
             (*it)["function"].contains("name") && (*it)["function"]["name"].is_string()) {
    p.tool_choice = ToolChoice::kFunction;
    p.tool_choice_name = (*it)["function"]["name"].get<std::string>();
    if (std::find(names.begin(), names.end(), p.tool_choice_name) == names.end()) {
      return bad_request(fmt::format("[server] 'tool_choice' names function '{}', which is not "
                                     "in 'tools'",
                                     p.tool_choice_name),
                         "tool_choice", "invalid_value");
    }
  } else {
    return wrong_type("tool_choice",
                      "'none', 'auto', 'required' or {\"type\": \"function\", \"function\": "
                      "{\"name\": …}}",
                      *it);
  }
  if ((p.tool_choice == ToolChoice::kRequired || p.tool_choice == ToolChoice::kFunction) &&
      names.empty()) {
    return bad_request("[server] 'tool_choice' requires a call but 'tools' is empty or absent",
                       "tool_choice", "invalid_value");
  }
  return std::nullopt;
}

// Chat: tools, tool_choice, parallel_tool_calls and reasoning_format.
std::optional<ApiError> parse_tools(const Json& body, ParsedRequest& out) {
  GenerateParams& p = out.params;
  std::vector<std::string> names;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (auto e = parse_tool_list(*it, names)) return e;
    if (!names.empty()) p.tools = dump(*it);
  }
  if (auto e = parse_tool_choice(body, names, p)) return e;
  if (auto e = get_bool(body, "parallel_tool_calls", p.parallel_tool_calls)) return e;
  // Under tool_choice none calls are still read, so that their markup never reaches the content.
  p.parse_tool_calls = !names.empty();
  if (auto it = body.find("reasoning_format"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("reasoning_format", "a string", *it);
    out.reasoning_format = it->get<std::string>();
    if (out.reasoning_format != "none" && out.reasoning_format != "deepseek" &&
        out.reasoning_format != "auto") {
      return bad_request(fmt::format("[server] 'reasoning_format' must be 'none', 'deepseek' or "
                                     "'auto', got '{}'",
                                     out.reasoning_format),
                         "reasoning_format", "invalid_value");
    }
  }
  return std::nullopt;
}

// Speculative decoding, as llama-server names its fields: spec_ngram (prompt lookup: 0 turns it
// off, N > 0 on with N-token matches; on a server with a draft model, N > 0 drafts by lookup
// instead of the draft model), speculative.n_max (drafts per step; 0 turns either off),
// speculative.n_min and speculative.p_min (the draft model's stop). The server's flags are the
// defaults in `p`.
std::optional<ApiError> parse_speculative(const Json& body, GenerateParams& p) {
  bool present = false;
  int64_t v = 0;
  if (auto e = get_integer(body, "spec_ngram", 0, kMaxSpecNgram, v, present)) return e;
  if (present) p.spec_ngram = static_cast<int32_t>(v);
  if (auto e = get_integer(body, "speculative.n_max", 0, kMaxDraft, v, present)) return e;
  if (present) p.draft_max = static_cast<int32_t>(v);
  if (present && v == 0) p.spec_ngram = 0;
  if (auto e = get_integer(body, "speculative.n_min", 0, kMaxDraft, v, present)) return e;
  if (present) p.draft_min = static_cast<int32_t>(v);
  if (auto e = get_number(body, "speculative.p_min", 0.0, 1.0, p.draft_p_min)) return e;
  if (p.spec_ngram > 0 && p.draft_min > p.draft_max) {
    return bad_request(fmt::format("[server] 'speculative.n_min' ({}) must be at most "
                                   "'speculative.n_max' ({})",
                                   p.draft_min, p.draft_max),
                       "speculative.n_min", "invalid_value");
  }
  return std::nullopt;
}

// Chat: reasoning_budget (llama.cpp's name; -1: none) or reasoning_effort, not both.
std::optional<ApiError> parse_reasoning_budget(const Json& body, ParsedRequest& out) {
  bool present = false;
  int64_t v = 0;
  if (auto e = get_integer(body, "reasoning_budget", -1, std::numeric_limits<int32_t>::max(), v,
                           present)) {
    return e;
  }
  if (present) out.reasoning_budget = static_cast<int32_t>(v);
  auto it = body.find("reasoning_effort");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (present) {
    return bad_request("[server] give 'reasoning_effort' or 'reasoning_budget', not both",
                       "reasoning_effort", "invalid_value");
  }
  const std::optional<int32_t> budget =
      it->is_string() ? reasoning_effort_budget(it->get<std::string>()) : std::nullopt;
  if (!budget) {
    return bad_request(fmt::format("[server] 'reasoning_effort' must be none, minimal, low, medium "
                                   "or high, got {}",
                                   it->dump()),
                       "reasoning_effort", "invalid_value");
  }
  out.reasoning_budget = budget;
  return std::nullopt;
}

// Completions: best_of (n <= best_of <= kMaxChoices, not streamed) and suffix (a string).
std::optional<ApiError> parse_best_of_and_suffix(const Json& body, ParsedRequest& out) {
  bool present = false;
  int64_t v = 0;
  if (auto e = get_integer(body, "best_of", 1, kMaxChoices, v, present)) return e;
  out.best_of = present ? static_cast<int32_t>(v) : out.n;
  if (out.best_of < out.n) {
    return bad_request(
        fmt::format("[server] 'best_of' ({}) must be at least 'n' ({})", out.best_of, out.n),
        "best_of", "invalid_value");
  }
  bool stream = false;
  if (auto e = get_bool(body, "stream", stream)) return e;
  if (stream && out.best_of > out.n) {
    return bad_request("[server] 'best_of' cannot be streamed (the best are known at the end)",
                       "best_of", "invalid_value");
  }
  auto it = body.find("suffix");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return wrong_type("suffix", "a string", *it);
  out.suffix = it->get<std::string>();
  return std::nullopt;
}

// OpenAI's request fields that minfer does not act on: each either changes nothing a reply holds
// (accepted as it is) or would, and is a 400 naming it — never ignored in silence. (Unknown
// fields go to the chat template as variables, as llama-server passes them.)
std::optional<ApiError> check_openai_only_fields(const Json& body, bool chat) {
  // Would change the reply: refused when given (null is absent).
  for (const char* field : {"audio", "prediction", "web_search_options", "verbosity"}) {
    if (field_given(body, field)) {
      return bad_request(fmt::format("[server] '{}' is not supported", field), field,
                         "unsupported_parameter");
    }
  }
  if (!chat && field_given(body, "tools")) {
    return bad_request("[server] 'tools' is a chat field (/v1/chat/completions)", "tools",
                       "unsupported_parameter");
  }
  if (auto it = body.find("modalities");
      it != body.end() && !it->is_null() && *it != Json::array({"text"})) {
    return bad_request("[server] 'modalities' supports [\"text\"] only", "modalities",
                       "unsupported_parameter");
  }
  if (auto it = body.find("store"); it != body.end() && !it->is_null() && *it != Json(false)) {
    return bad_request("[server] 'store': minfer keeps no completions (give false or leave it out)",
                       "store", "unsupported_parameter");
  }
  if (auto it = body.find("service_tier");
      it != body.end() && !it->is_null() && *it != Json("auto") && *it != Json("default")) {
    return bad_request("[server] 'service_tier' supports 'auto' and 'default' only", "service_tier",
                       "unsupported_parameter");
  }
  // Changes nothing here (prefix caching is automatic, nothing is stored): typed as documented.
  for (const char* field : {"prompt_cache_key", "safety_identifier"}) {
    if (auto it = body.find(field); it != body.end() && !it->is_null() && !it->is_string()) {
      return wrong_type(field, "a string", *it);
    }
  }
  if (auto it = body.find("metadata"); it != body.end() && !it->is_null() && !it->is_object()) {
    return wrong_type("metadata", "an object", *it);
  }
  if (chat && field_given(body, "best_of")) {
    return bad_request("[server] 'best_of' is a field of /v1/completions", "best_of",
                       "unsupported_parameter");
  }
  if (chat && field_given(body, "suffix")) {
    return bad_request("[server] 'suffix' is a field of /v1/completions", "suffix",
                       "unsupported_parameter");
  }
  return std::nullopt;
}

}  // namespace

std::optional<int32_t> reasoning_effort_budget(std::string_view effort) {
  if (effort == "none" || effort == "minimal") return 0;
  if (effort == "low") return 1024;
  if (effort == "medium") return 4096;
  if (effort == "high") return -1;
  return std::nullopt;
}

ApiError wrong_type(const std::string& field, const char* expected, const Json& v) {
  return bad_request(fmt::format("[server] '{}' must be {}, got {}", field, expected, type_name(v)),
                     field, "invalid_type");
}

std::string string_field(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<ApiError> for_each_object(const Json& items, const std::string& field,
                                        const char* expected, const ItemCheck& fn) {
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string name = fmt::format("{}[{}]", field, i);
    if (!items[i].is_object()) return wrong_type(name, expected, items[i]);
    if (auto e = fn(items[i], name)) return e;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_request(const Json& body, Endpoint endpoint, int32_t n_vocab,
                                      ParsedRequest& out) {
  if (!body.is_object()) return wrong_type("body", "a JSON object", body);
  out.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChat;
  // The first error found is the one reported, so the order of these checks is part of the API.
  if (auto e = check_unused_fields(body)) return e;
  if (auto e = check_openai_only_fields(body, chat)) return e;
  if (auto e = chat ? parse_messages(body, out.messages) : parse_prompt(body, n_vocab, out)) {
    return e;
  }
  if (auto e = parse_lengths(body, out.params, out.n)) return e;
  if (auto e = parse_sampling(body, n_vocab, out.params)) return e;
  if (auto e = parse_stop(body, out.params.stop)) return e;
  if (auto e = chat ? parse_chat_logprobs(body, out) : parse_completion_logprobs(body, out)) {
    return e;
  }
  if (auto e = parse_logit_bias(body, n_vocab, out.params)) return e;
  if (auto e = parse_grammar(body, out.params)) return e;
  if (auto e = parse_response_format(body, out.params)) return e;
  if (chat) {
    if (auto e = parse_tools(body, out)) return e;
    if (auto e = parse_reasoning_budget(body, out)) return e;
  } else {
    if (auto e = parse_best_of_and_suffix(body, out)) return e;
  }
  if (auto e = parse_speculative(body, out.params)) return e;
  return parse_stream(body, out);
}

Json sampling_json(const GenerateParams& params) {
  Json out = Json::object();
  for (const NumberField& f : kNumberFields) out[f.name] = params.*f.field;
  out["top_k"] = params.top_k;
  out["repeat_last_n"] = params.repeat_last_n;
  out["n_predict"] = params.max_tokens;
  out["seed"] = -1;
  return out;
}

}  // namespace minfer::server
