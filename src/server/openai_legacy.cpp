// OpenAI's legacy function calling as tools (openai_api.h: translate_legacy_functions).
#include <fmt/format.h>

#include "server/openai_api.h"

namespace minfer::server {

namespace {

// The history of a legacy conversation as tool calls and results (ids made up, paired in order).
void translate_legacy_history(Json& body) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array()) return;
  int n_calls = 0;
  int n_results = 0;
  for (Json& m : *it) {
    if (!m.is_object()) continue;
    if (m.value("role", Json()) == "function") {
      m["role"] = "tool";
      m["tool_call_id"] = fmt::format("call_legacy_{}", n_results++);
    } else if (m.value("role", Json()) == "assistant" && m.contains("function_call") &&
               m["function_call"].is_object() && !m.contains("tool_calls")) {
      m["tool_calls"] = Json::array({Json{{"id", fmt::format("call_legacy_{}", n_calls++)},
                                          {"type", "function"},
                                          {"function", m["function_call"]}}});
      m.erase("function_call");
    }
  }
}

bool legacy_field_given(const Json& body, const char* field) {
  auto it = body.find(field);
  return it != body.end() && !it->is_null();
}

}  // namespace

std::optional<ApiError> translate_legacy_functions(Json& body, bool& legacy) {
  legacy = false;
  if (!body.is_object()) return std::nullopt;
  translate_legacy_history(body);
  if (legacy_field_given(body, "function_call") && !legacy_field_given(body, "functions")) {
    return bad_request("[server] 'function_call' needs 'functions'", "function_call",
                       "invalid_value");
  }
  if (!legacy_field_given(body, "functions")) return std::nullopt;
  if (legacy_field_given(body, "tools")) {
    return bad_request("[server] 'functions' (legacy) and 'tools' cannot be used together",
                       "functions", "invalid_value");
  }
  const Json& functions = body["functions"];
  if (!functions.is_array()) return wrong_type("functions", "an array of functions", functions);
  Json tools = Json::array();
  for (const Json& f : functions) tools.push_back(Json{{"type", "function"}, {"function", f}});
  if (legacy_field_given(body, "function_call")) {
    if (legacy_field_given(body, "tool_choice")) {
      return bad_request(
          "[server] 'function_call' (legacy) and 'tool_choice' cannot be used "
          "together",
          "function_call", "invalid_value");
    }
    const Json& call = body["function_call"];
    if (call == "none" || call == "auto") {
      body["tool_choice"] = call;
    } else if (call.is_object() && call.contains("name") && call["name"].is_string()) {
      body["tool_choice"] = Json{{"type", "function"}, {"function", {{"name", call["name"]}}}};
    } else {
      return wrong_type("function_call", "'none', 'auto' or {\"name\": …}", call);
    }
  }
  body["tools"] = std::move(tools);
  body["parallel_tool_calls"] = false;
  body.erase("functions");
  body.erase("function_call");
  legacy = true;
  return std::nullopt;
}

}  // namespace minfer::server
