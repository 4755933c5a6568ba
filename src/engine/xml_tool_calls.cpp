#include "engine/xml_tool_calls.h"

#include <algorithm>

#include "core/json_nesting.h"

namespace minfer::engine {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kCallClose = "</tool_call>";

bool is_xml_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The JSON type names `value` satisfies ("integer" is also a "number").
bool has_type(const Json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  return false;
}

// `text` read as JSON; discarded when it is not JSON (or nests past the shape limits).
Json parse_json(std::string_view text) {
  if (json_shape_excess(text)) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// A parameter's value: from "<parameter=P>" up to "</parameter>", without one line break on
// each side (the ones the templates write around it).
std::string value_text(std::string_view raw) {
  if (raw.starts_with('\n')) raw.remove_prefix(1);
  if (raw.ends_with('\n')) raw.remove_suffix(1);
  return std::string(raw);
}

XmlCallBody body_state(XmlCallBody::State state) {
  XmlCallBody b;
  b.state = state;
  return b;
}

}  // namespace

std::vector<std::string> schema_types(const Json& schema) {
  std::vector<std::string> types;
  if (!schema.is_object() || !schema.contains("type")) return types;
  const Json& type = schema["type"];
  if (type.is_string()) types.push_back(type.get<std::string>());
  if (type.is_array()) {
    for (const Json& t : type) {
      if (t.is_string()) types.push_back(t.get<std::string>());
    }
  }
  return types;
}

bool xml_parameter_is_text(const Json& schema) {
  const std::vector<std::string> types = schema_types(schema);
  return std::find(types.begin(), types.end(), "string") != types.end();
}

XmlToolSchemas XmlToolSchemas::from_tools(std::string_view tools_json) {
  XmlToolSchemas out;
  if (tools_json.empty()) return out;
  const Json tools = parse_json(tools_json);
  if (!tools.is_array()) return out;
  for (const Json& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    const Json& function = tool["function"];
    if (!function.contains("name") || !function["name"].is_string()) continue;
    auto& params = out.types_[function["name"].get<std::string>()];
    if (!function.contains("parameters") || !function["parameters"].is_object()) continue;
    const Json& parameters = function["parameters"];
    if (!parameters.contains("properties") || !parameters["properties"].is_object()) continue;
    for (const auto& [name, schema] : parameters["properties"].items()) {
      params[name] = schema_types(schema);
    }
  }
  return out;
}

Json XmlToolSchemas::argument_value(const std::string& function, const std::string& parameter,
                                    std::string_view text) const {
  std::vector<std::string> types;
  if (const auto f = types_.find(function); f != types_.end()) {
    if (const auto p = f->second.find(parameter); p != f->second.end()) types = p->second;
  }
  const bool is_text = std::find(types.begin(), types.end(), "string") != types.end();
  const Json parsed = parse_json(text);
  if (parsed.is_discarded()) return Json(std::string(text));
  if (!is_text) return parsed;
  for (const std::string& type : types) {
    if (type != "string" && has_type(parsed, type)) return parsed;
  }
  return Json(std::string(text));
}

XmlCallBody read_xml_call_body(std::string_view text) {
  using State = XmlCallBody::State;
  XmlCallBody body;
  size_t pos = 0;
  while (true) {
    while (pos < text.size() && is_xml_space(text[pos])) ++pos;
    const std::string_view rest = text.substr(pos);
    if (rest.starts_with(kXmlFunctionClose)) {
      body.state = State::kOk;
      body.end = pos + kXmlFunctionClose.size();
      return body;
    }
    if (rest.starts_with(kCallClose)) {
      body.state = State::kOk;
      body.end = pos;
      return body;
    }
    if (!rest.starts_with(kXmlParameterOpen)) {
      const bool may_open = kXmlFunctionClose.starts_with(rest) || kCallClose.starts_with(rest) ||
                            kXmlParameterOpen.starts_with(rest);
      return body_state(may_open ? State::kNeedMore : State::kFail);
    }
    const size_t name_at = pos + kXmlParameterOpen.size();
    const size_t name_end = text.find_first_of("<>\n", name_at);
    if (name_end == std::string_view::npos) return body_state(State::kNeedMore);
    if (text[name_end] != '>' || name_end == name_at) return body_state(State::kFail);
    std::string name(text.substr(name_at, name_end - name_at));
    const size_t close = text.find(kXmlParameterClose, name_end + 1);
    if (close == std::string_view::npos) return body_state(State::kNeedMore);
    for (const auto& [seen, value] : body.parameters) {
      if (seen == name) return body_state(State::kFail);
    }
    body.parameters.emplace_back(std::move(name),
                                 value_text(text.substr(name_end + 1, close - name_end - 1)));
    pos = close + kXmlParameterClose.size();
  }
}

}  // namespace minfer::engine
