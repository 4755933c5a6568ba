#include "engine/tool_grammar.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_limits.h"
#include "core/json_nesting.h"
#include "engine/gemma4_grammar.h"
#include "engine/xml_tool_calls.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_parts.h"

namespace minfer::engine {
namespace {

using Json = nlohmann::ordered_json;

// One function a call may name: its name and the rule of its arguments ("" for none: an XML
// call without parameters).
struct CallTarget {
  std::string name;
  std::string arguments_rule;
};

// A raw-text value of the XML format: lines that never hold "</" (so no closing tag can stand
// inside a value) and do not end in '<'.
// The largest minLength / maxLength of a raw-text value: a repetition count of the grammar.
constexpr int64_t kMaxXmlTextLength = limits::kMaxGbnfRepetition;

constexpr std::string_view kXmlTextRules =
    "xml-text ::= xml-line ( \"\\n\" xml-line )*\n"
    "xml-line ::= ( [^<\\n] | \"<\"+ [^/<\\n] )*\n";

// A raw-text value: bounded by minLength / maxLength (characters) when the schema gives them,
// then with no '<' at all; else xml-text, unbounded as a JSON string without maxLength is.
Result<std::string> xml_text_rule(const Json& schema, const std::string& where) {
  if (!schema.contains("minLength") && !schema.contains("maxLength")) {
    return std::string("xml-text");
  }
  int64_t bounds[2] = {0, -1};
  const char* keywords[2] = {"minLength", "maxLength"};
  for (int i = 0; i < 2; ++i) {
    if (!schema.contains(keywords[i])) continue;
    const Json& v = schema[keywords[i]];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxXmlTextLength) {
      return make_error(ErrorCode::kInvalidArgument, "{}: '{}' must be an integer in 0..{}", where,
                        keywords[i], kMaxXmlTextLength);
    }
    bounds[i] = v.get<int64_t>();
  }
  if (bounds[1] >= 0 && bounds[1] < bounds[0]) {
    return make_error(ErrorCode::kInvalidArgument, "{}: 'maxLength' is below 'minLength'", where);
  }
  return bounds[1] < 0 ? fmt::format("[^<]{{{},}}", bounds[0])
                       : fmt::format("[^<]{{{},{}}}", bounds[0], bounds[1]);
}

// The rule of one XML parameter's value, its rules appended to `rules`: a string's raw text (its
// enum or const as literals), anything else the compact JSON of its schema.
Result<std::string> xml_value_rule(const Json& schema, const Json& defs, const std::string& prefix,
                                   const std::string& where, std::string& rules) {
  if (xml_parameter_is_text(schema)) {
    for (const char* keyword : {"pattern", "format"}) {
      if (schema.contains(keyword)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: '{}' on a string is not supported in the XML tool-call format, "
                          "which writes strings as raw text",
                          where, keyword);
      }
    }
    std::vector<Json> values;
    if (schema.contains("const")) values.push_back(schema["const"]);
    if (schema.contains("enum") && schema["enum"].is_array()) {
      values.assign(schema["enum"].begin(), schema["enum"].end());
    }
    if (values.empty()) return xml_text_rule(schema, where);
    std::string alternatives;
    for (const Json& v : values) {
      const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      alternatives += (alternatives.empty() ? "" : " | ") + grammar::gbnf_literal(text);
    }
    return "( " + alternatives + " )";
  }
  Json value_schema = schema;
  // References into the parameters' definitions resolve against the value's own schema.
  for (const char* key : {"$defs", "definitions"}) {
    if (defs.contains(key) && value_schema.is_object() && !value_schema.contains(key)) {
      value_schema[key] = defs[key];
    }
  }
  Result<std::string> gbnf =
      grammar::json_schema_to_gbnf(value_schema, {.rule_prefix = prefix, .with_primitives = false});
  if (!gbnf.is_ok()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: {}", where, gbnf.status().message());
  }
  rules += *gbnf;
  return prefix + "root";
}

// The rule of an XML call's parameters ("" when it has none): the schema's properties in its
// order, each optional unless required, as <parameter=NAME>\nVALUE\n</parameter>\n.
Result<std::string> xml_arguments_rule(const Json& parameters, const std::string& function,
                                       const std::string& prefix, std::string& rules) {
  if (!parameters.is_object() || !parameters.contains("properties") ||
      !parameters["properties"].is_object()) {
    return std::string();
  }
  std::vector<std::string> required;
  if (parameters.contains("required") && parameters["required"].is_array()) {
    for (const Json& r : parameters["required"]) {
      if (r.is_string()) required.push_back(r.get<std::string>());
    }
  }
  std::string sequence;
  int index = 0;
  for (const auto& [name, schema] : parameters["properties"].items()) {
    const std::string rule = fmt::format("{}p{}", prefix, index++);
    const std::string where = fmt::format("[tools] function '{}' parameter '{}'", function, name);
    MINFER_ASSIGN_OR_RETURN(const std::string value,
                            xml_value_rule(schema, parameters, rule + "-", where, rules));
    rules += fmt::format("{} ::= {} {} {}\n", rule,
                         grammar::gbnf_literal(fmt::format("<parameter={}>\n", name)), value,
                         grammar::gbnf_literal("\n</parameter>\n"));
    const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
    sequence += fmt::format("{}{}{}", sequence.empty() ? "" : " ", rule, is_required ? "" : "?");
  }
  if (sequence.empty()) return std::string();
  rules += fmt::format("{}root ::= {}\n", prefix, sequence);
  return prefix + "root";
}

// The functions of `tools` the choice allows, their argument rules appended to `rules`.
Result<std::vector<CallTarget>> call_targets(const ReplyRequest& reply, std::string& rules) {
  if (const auto why = json_shape_error(reply.tools)) {
    return make_error(ErrorCode::kInvalidArgument, "[tools] the tools {}", *why);
  }
  const Json tools = Json::parse(reply.tools, nullptr, false);
  if (!tools.is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "[tools] expected an array of tools");
  }
  if (tools.size() > limits::kMaxTools) {
    return make_error(ErrorCode::kInvalidArgument, "[tools] {} tools; the limit is {}",
                      tools.size(), limits::kMaxTools);
  }
  std::vector<CallTarget> targets;
  for (const Json& tool : tools) {
    const Json function = tool.value("function", Json::object());
    const std::string name = function.value("name", std::string());
    if (name.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "[tools] a function has no name");
    }
    if (reply.tool_choice == ToolChoice::kFunction && name != reply.tool_choice_name) continue;
    const Json parameters = function.value("parameters", Json{{"type", "object"}});
    const std::string prefix = fmt::format("tool{}-", targets.size());
    if (reply.format.tool_calls == chat::ToolCallFormat::kQwenXml) {
      MINFER_ASSIGN_OR_RETURN(std::string rule,
                              xml_arguments_rule(parameters, name, prefix, rules));
      targets.push_back({name, std::move(rule)});
      continue;
    }
    if (reply.format.tool_calls == chat::ToolCallFormat::kGemma4) {
      MINFER_ASSIGN_OR_RETURN(std::string rule,
                              gemma4_arguments_rule(parameters, name, prefix, rules));
      targets.push_back({name, std::move(rule)});
      continue;
    }
    Result<std::string> gbnf =
        grammar::json_schema_to_gbnf(parameters, {.rule_prefix = prefix, .with_primitives = false});
    if (!gbnf.is_ok()) {
      return make_error(ErrorCode::kInvalidArgument, "[tools] function '{}': {}", name,
                        gbnf.status().message());
    }
    rules += *gbnf;
    targets.push_back({name, prefix + "root"});
  }
  if (targets.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[tools] tool_choice names '{}', which is not "
                      "among the tools",
                      reply.tool_choice_name);
  }
  return targets;
}

// The text of a call up to its arguments: the opening, and the head once the name is known.
std::string call_open(chat::ToolCallFormat format) {
  switch (format) {
    case chat::ToolCallFormat::kHermes:
      return "<tool_call>\n{\"name\": ";
    case chat::ToolCallFormat::kQwenXml:
      return std::string("<tool_call>\n") + std::string(kXmlFunctionOpen);
    case chat::ToolCallFormat::kHarmony:
      return "<|channel|>commentary to=functions.";
    case chat::ToolCallFormat::kGemma4:
      return "<|tool_call>call:";
    default:
      return "{\"name\": ";
  }
}

std::string call_head(chat::ToolCallFormat format, const std::string& name) {
  if (format == chat::ToolCallFormat::kQwenXml) return name + ">\n";
  if (format == chat::ToolCallFormat::kHarmony) return name + " <|constrain|>json<|message|>";
  if (format == chat::ToolCallFormat::kGemma4) return name;
  const bool hermes = format == chat::ToolCallFormat::kHermes;
  return fmt::format("{}, \"{}\": ", Json(name).dump(), hermes ? "arguments" : "parameters");
}

std::string call_close(chat::ToolCallFormat format) {
  switch (format) {
    case chat::ToolCallFormat::kHermes:
      return "}\n</tool_call>";
    case chat::ToolCallFormat::kQwenXml:
      return std::string(kXmlFunctionClose) + "\n</tool_call>";
    case chat::ToolCallFormat::kHarmony:
      return "";  // <|call|> ends generation: the grammar ends with the arguments
    case chat::ToolCallFormat::kGemma4:
      return "<tool_call|>";
    default:
      return "}";
  }
}

// call ::= the model's call text around one of the targets.
std::string call_rule(chat::ToolCallFormat format, const std::vector<CallTarget>& targets) {
  std::string alternatives;
  for (const CallTarget& t : targets) {
    alternatives += fmt::format("{}{} {}", alternatives.empty() ? "" : " | ",
                                grammar::gbnf_literal(call_head(format, t.name)), t.arguments_rule);
  }
  const std::string open = call_open(format);
  const std::string close = call_close(format);
  return fmt::format("call ::= {} ( {} ){}\n", grammar::gbnf_literal(open), alternatives,
                     close.empty() ? "" : " " + grammar::gbnf_literal(close));
}

}  // namespace

Result<ToolCallGrammar> tool_call_grammar(const ReplyRequest& reply) {
  ToolCallGrammar out;
  const chat::ToolCallFormat format = reply.format.tool_calls;
  if (!reply.parse_tool_calls || reply.tools.empty() || reply.tool_choice == ToolChoice::kNone ||
      format == chat::ToolCallFormat::kNone) {
    return out;
  }
  // Harmony's calls are not read lazily (a call's header has two spellings): under auto the
  // reply is free, and a call's arguments are checked only by the parser.
  const bool harmony = format == chat::ToolCallFormat::kHarmony;
  if (harmony && reply.tool_choice == ToolChoice::kAuto) return out;
  std::string rules;
  MINFER_ASSIGN_OR_RETURN(std::vector<CallTarget> targets, call_targets(reply, rules));
  const bool forced = reply.tool_choice != ToolChoice::kAuto;
  // Harmony: one call (its <|call|> ends generation); Gemma 4 writes calls back to back.
  const std::string calls = !reply.parallel_tool_calls || harmony     ? "call"
                            : format == chat::ToolCallFormat::kGemma4 ? "call+"
                                                                      : "call ( \"\\n\" call )*";
  // A forced call in a reply that starts inside reasoning closes the reasoning block first.
  const std::string close_reasoning =
      forced && reply.prompt_opens_reasoning ? std::string(chat::kThinkCloseForced) : "";
  std::string root = "root ::= ";
  if (!close_reasoning.empty()) root += grammar::gbnf_literal(close_reasoning) + " ";
  if (format != chat::ToolCallFormat::kLlama3Json) {
    root += calls + "\n";
    if (!forced) out.triggers = {chat::tool_call_trigger(format)};
  } else {
    // Llama 3: one call is the whole reply; under auto, any text that does not open with "{".
    root += forced ? "call\n" : "( call | ( [^{] [\\x01-\\U0010FFFF]* )? )\n";
  }
  out.gbnf = root + call_rule(format, targets) + rules +
             grammar::json_primitive_rules(/*compact=*/true) +
             (format == chat::ToolCallFormat::kQwenXml ? std::string(kXmlTextRules) : "") +
             (format == chat::ToolCallFormat::kGemma4 ? std::string(kGemma4TextRules) : "");
  if (forced) {
    out.forced_prefix = close_reasoning + call_open(format);
    if (targets.size() == 1) out.forced_prefix += call_head(format, targets[0].name);
    while (out.forced_prefix.ends_with(' ') || out.forced_prefix.ends_with('\n')) {
      out.forced_prefix.pop_back();
    }
  }
  return out;
}

Result<std::shared_ptr<TokenConstraint>> tool_call_constraint(grammar::RequestGrammars& grammars,
                                                              const ReplyRequest& reply) {
  MINFER_ASSIGN_OR_RETURN(ToolCallGrammar tools, tool_call_grammar(reply));
  if (tools.gbnf.empty()) return std::shared_ptr<TokenConstraint>();
  MINFER_ASSIGN_OR_RETURN(std::shared_ptr<grammar::TokenGrammar> compiled,
                          grammars.compile(tools.gbnf));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<grammar::GrammarConstraint> constraint,
                          grammar::GrammarConstraint::create(
                              std::move(compiled), {.trigger_texts = tools.triggers,
                                                    .trigger_tokens = {},
                                                    .end_on_complete = tools.end_on_complete,
                                                    .forced_prefix = tools.forced_prefix}));
  return std::shared_ptr<TokenConstraint>(std::move(constraint));
}

}  // namespace minfer::engine
