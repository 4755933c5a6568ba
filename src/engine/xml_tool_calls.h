// The XML tool-call format of Qwen3.5 and Qwen3-Coder (chat::ToolCallFormat::kQwenXml): what the
// reply parser and the tool-call grammar share about it.
//
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n…</function>\n</tool_call>
//
// A value is raw text between "<parameter=P>\n" and "\n</parameter>" (the templates write one
// line break on each side; a value written without them is read the same). The call's arguments
// object has the parameters in the order written, each value typed by the tool's JSON Schema for
// that parameter, as the templates print them (a string as itself, anything else as JSON):
//   - a parameter whose "type" includes "string" keeps its text, unless the type lists others
//     too and the text is JSON of one of them ("null" for {"type": ["string", "null"]});
//   - any other parameter (integer, number, boolean, object, array, no type, or a parameter the
//     schema does not name) is the text read as JSON, or the text itself when it is not JSON.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace minfer::engine {

inline constexpr std::string_view kXmlFunctionOpen = "<function=";
inline constexpr std::string_view kXmlFunctionClose = "</function>";
inline constexpr std::string_view kXmlParameterOpen = "<parameter=";
inline constexpr std::string_view kXmlParameterClose = "</parameter>";

// The JSON types a schema declares in its "type" (a name or an array of names); empty when it
// declares none.
std::vector<std::string> schema_types(const nlohmann::ordered_json& schema);

// True when a parameter with this schema is written as raw text (its types include "string").
bool xml_parameter_is_text(const nlohmann::ordered_json& schema);

// The parameter types of a request's tools, read from the tools' JSON (OpenAI's array of
// {"type": "function", "function": {"name", "parameters"}}); tools it cannot read add nothing,
// so their parameters are typed as unknown.
class XmlToolSchemas {
 public:
  static XmlToolSchemas from_tools(std::string_view tools_json);

  // The value of parameter `parameter` of function `function` written as `text`.
  nlohmann::ordered_json argument_value(const std::string& function, const std::string& parameter,
                                        std::string_view text) const;

 private:
  // function → parameter → the types its schema declares
  std::map<std::string, std::map<std::string, std::vector<std::string>>> types_;
};

// What the body of a call (the text after "<function=NAME>") says so far.
struct XmlCallBody {
  enum class State { kNeedMore, kFail, kOk } state = State::kNeedMore;
  std::vector<std::pair<std::string, std::string>> parameters;  // name, value text
  size_t end = 0;  // kOk: where the text after the call's body starts (past "</function>")
};

// Reads a call's parameters up to "</function>" (or up to a "</tool_call>" that closes the call
// without it, which is left in the text). Fails on text that is not a parameter between them, a
// parameter's name with '<', '>' or a line break in it, or a name written twice.
XmlCallBody read_xml_call_body(std::string_view text);

}  // namespace minfer::engine
