#include "requests.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

namespace minfer::python {

namespace {

// The keyword arguments each call takes (the .pyi stub documents them).
constexpr std::array kSamplingKeys = {"max_tokens",
                                      "temperature",
                                      "top_p",
                                      "top_k",
                                      "min_p",
                                      "repeat_penalty",
                                      "repeat_last_n",
                                      "frequency_penalty",
                                      "presence_penalty",
                                      "stop",
                                      "seed",
                                      "logit_bias",
                                      "grammar",
                                      "response_format",
                                      "stream",
                                      "logprobs"};
constexpr std::array kChatKeys = {"tools",        "tool_choice",      "parallel_tool_calls",
                                  "top_logprobs", "reasoning_budget", "chat_template_kwargs"};

[[noreturn]] void raise_type(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw py::error_already_set();
}

void check_keys(const py::dict& options, Endpoint endpoint) {
  const char* call = endpoint == Endpoint::kChat ? "chat" : "complete";
  for (const auto& item : options) {
    const std::string key = py::str(item.first);
    auto known = [&key](const auto& keys) {
      return std::find(keys.begin(), keys.end(), std::string_view(key)) != keys.end();
    };
    if (known(kSamplingKeys) || (endpoint == Endpoint::kChat && known(kChatKeys))) continue;
    raise_type("[python] " + std::string(call) + "() got an unexpected keyword argument '" + key +
               "'");
  }
}

// options[key] as T when present and not None; a value of another type is a TypeError naming it.
template <typename T>
bool get(const py::dict& options, const char* key, T& out, const char* expected) {
  if (!options.contains(key)) return false;
  py::object v = options[key];
  if (v.is_none()) return false;
  const bool is_bool = PyBool_Check(v.ptr());
  if constexpr (std::is_same_v<T, bool>) {
    if (!is_bool) raise_type(std::string("[python] '") + key + "' must be " + expected);
  } else if constexpr (std::is_arithmetic_v<T>) {
    // True is an int in Python, but not a number a caller means.
    if (is_bool) raise_type(std::string("[python] '") + key + "' must be " + expected);
  }
  try {
    out = v.cast<T>();
  } catch (const py::cast_error&) {
    raise_type(std::string("[python] '") + key + "' must be " + expected + ", got " +
               std::string(py::str(v.get_type().attr("__name__"))));
  }
  return true;
}

py::object json_module() {
  return py::module_::import("json");
}

std::string dumps(const py::object& value) {
  return py::str(json_module().attr("dumps")(value, py::arg("ensure_ascii") = false));
}

void parse_sampling(const py::dict& o, GenerateParams& p) {
  get(o, "max_tokens", p.max_tokens, "an int");
  get(o, "temperature", p.temperature, "a number");
  get(o, "top_p", p.top_p, "a number");
  get(o, "top_k", p.top_k, "an int");
  get(o, "min_p", p.min_p, "a number");
  get(o, "repeat_penalty", p.repeat_penalty, "a number");
  get(o, "repeat_last_n", p.repeat_last_n, "an int");
  get(o, "frequency_penalty", p.frequency_penalty, "a number");
  get(o, "presence_penalty", p.presence_penalty, "a number");
  int64_t seed = 0;
  if (get(o, "seed", seed, "an int")) {
    p.seed = seed < 0 ? kRandomSeed : static_cast<uint64_t>(seed);
  }
  if (o.contains("stop") && py::isinstance<py::str>(o["stop"])) {
    p.stop = {py::str(o["stop"])};
  } else {
    get(o, "stop", p.stop, "a str or a list of str");
  }
  if (o.contains("logit_bias") && !o["logit_bias"].is_none()) {
    std::map<int32_t, float> by_id;
    get(o, "logit_bias", by_id, "a dict of token id to bias");
    p.logit_bias.assign(by_id.begin(), by_id.end());
  }
}

// response_format and grammar: a GBNF text, a JSON Schema (compiled to GBNF by the engine) or
// JSON object mode.
void parse_constraint(const py::dict& o, GenerateParams& p) {
  get(o, "grammar", p.grammar, "a str of GBNF");
  if (!p.grammar.empty()) {
    if (Status s = check_grammar(p.grammar); !s.is_ok()) raise_status(s);
  }
  py::dict format;
  if (!get(o, "response_format", format, "a dict such as {'type': 'json_object'}")) return;
  const std::string type = format.contains("type") ? std::string(py::str(format["type"])) : "";
  if (type == "text") return;
  if (type != "json_object" && type != "json_schema") {
    raise_invalid(
        "[python] response_format type must be 'text', 'json_object' or "
        "'json_schema', got '" +
        type + "'");
  }
  if (!p.grammar.empty()) {
    raise_invalid("[python] 'grammar' cannot be used together with response_format '" + type + "'");
  }
  py::object schema = py::none();
  if (type == "json_schema") {
    py::dict spec;
    if (!format.contains("json_schema") || !get(format, "json_schema", spec, "a dict") ||
        !spec.contains("schema")) {
      raise_invalid(
          "[python] response_format json_schema needs 'json_schema': {'name': …, "
          "'schema': {…}}");
    }
    schema = spec["schema"];
  } else if (format.contains("schema")) {
    schema = format["schema"];
  }
  if (schema.is_none()) {
    p.json_object = true;
    return;
  }
  p.grammar = value_or_raise(json_schema_grammar(dumps(schema)));
}

// tools, tool_choice and parallel_tool_calls (OpenAI's shapes).
void parse_tools(const py::dict& o, GenerateParams& p) {
  bool has_tools = false;
  if (o.contains("tools") && !o["tools"].is_none()) {
    py::list tools;
    get(o, "tools", tools, "a list of tools");
    has_tools = !tools.empty();
    if (has_tools) p.tools = dumps(tools);
  }
  get(o, "parallel_tool_calls", p.parallel_tool_calls, "a bool");
  if (o.contains("tool_choice") && !o["tool_choice"].is_none()) {
    py::object choice = o["tool_choice"];
    if (py::isinstance<py::dict>(choice)) {
      py::dict function = choice.cast<py::dict>().contains("function")
                              ? choice["function"].cast<py::dict>()
                              : py::dict();
      if (!function.contains("name")) {
        raise_invalid(
            "[python] 'tool_choice' as a dict must be {'type': 'function', "
            "'function': {'name': …}}");
      }
      p.tool_choice = ToolChoice::kFunction;
      p.tool_choice_name = py::str(function["name"]);
    } else {
      const std::string v = py::str(choice);
      const std::optional<ToolChoice> named = tool_choice_from_string(v);
      if (!named) {
        raise_invalid(
            "[python] 'tool_choice' must be 'none', 'auto', 'required' or a function, "
            "got '" +
            v + "'");
      }
      p.tool_choice = *named;
    }
    if (p.tool_choice != ToolChoice::kAuto && p.tool_choice != ToolChoice::kNone && !has_tools) {
      raise_invalid("[python] 'tool_choice' requires a call but 'tools' is empty or absent");
    }
  }
  p.parse_tool_calls = has_tools && p.tool_choice != ToolChoice::kNone;
}

// The options every request takes; `logprobs` is a bool for chat (with top_logprobs) and an int
// (the alternatives) for a completion, as in OpenAI's APIs.
Request common_request(ModelCore& core, Endpoint endpoint, const py::dict& options) {
  check_keys(options, endpoint);
  Request r;
  r.endpoint = endpoint;
  r.params = core.default_params();
  parse_sampling(options, r.params);
  parse_constraint(options, r.params);
  get(options, "stream", r.stream, "a bool");
  if (endpoint == Endpoint::kChat) {
    get(options, "logprobs", r.logprobs, "a bool");
    int32_t top = 0;
    get(options, "top_logprobs", top, "an int");
    if (r.logprobs) r.params.top_logprobs = top;
  } else {
    int32_t top = -1;
    r.logprobs = get(options, "logprobs", top, "an int");
    r.params.top_logprobs = top;
  }
  return r;
}

}  // namespace

std::string chat_request_json(const py::object& messages, const py::object& tools,
                              const py::object& template_kwargs, bool add_generation_prompt) {
  if (!py::isinstance<py::list>(messages) && !py::isinstance<py::tuple>(messages)) {
    raise_type("[python] 'messages' must be a list of {'role': …, 'content': …} dicts");
  }
  py::dict body;
  body["messages"] = py::list(messages);
  if (!tools.is_none()) body["tools"] = tools;
  if (!template_kwargs.is_none()) body["chat_template_kwargs"] = template_kwargs;
  body["add_generation_prompt"] = add_generation_prompt;
  return dumps(body);
}

Request chat_request(ModelCore& core, const py::object& messages, const py::dict& options) {
  Request r = common_request(core, Endpoint::kChat, options);
  parse_tools(options, r.params);
  get(options, "reasoning_budget", r.params.reasoning_budget, "an int");
  // As the server's default reasoning_format: <think> goes to reasoning_content.
  r.params.extract_reasoning = true;
  const py::object none = py::none();
  const std::string body = chat_request_json(
      messages, options.contains("tools") ? py::object(options["tools"]) : none,
      options.contains("chat_template_kwargs") ? py::object(options["chat_template_kwargs"]) : none,
      true);
  r.prompt = value_or_raise(core.model().tokenize_chat_request(body));
  return r;
}

Request completion_request(ModelCore& core, const py::object& prompt, const py::dict& options) {
  Request r = common_request(core, Endpoint::kCompletion, options);
  if (py::isinstance<py::str>(prompt)) {
    r.prompt = core.model().tokenize(std::string(py::str(prompt)), /*add_special=*/true,
                                     /*parse_special=*/true);
  } else {
    try {
      r.prompt = prompt.cast<std::vector<int32_t>>();
    } catch (const py::cast_error&) {
      raise_type("[python] 'prompt' must be a str or a list of token ids");
    }
  }
  return r;
}

}  // namespace minfer::python
