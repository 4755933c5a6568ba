#include "engine/tool_grammar.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_limits.h"
#include "core/json_nesting.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_parts.h"

namespace minfer::engine {
namespace {

using Json = nlohmann::ordered_json;

// One function a call may name: its name and the rule of its arguments.
struct CallTarget {
  std::string name;
  std::string arguments_rule;
};

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
  return format == chat::ToolCallFormat::kHermes ? "<tool_call>\n{\"name\": " : "{\"name\": ";
}

std::string call_head(chat::ToolCallFormat format, const std::string& name) {
  const bool hermes = format == chat::ToolCallFormat::kHermes;
  return fmt::format("{}, \"{}\": ", Json(name).dump(), hermes ? "arguments" : "parameters");
}

// call ::= the model's call text around one of the targets.
std::string call_rule(chat::ToolCallFormat format, const std::vector<CallTarget>& targets) {
  const bool hermes = format == chat::ToolCallFormat::kHermes;
  std::string alternatives;
  for (const CallTarget& t : targets) {
    alternatives += fmt::format("{}{} {}", alternatives.empty() ? "" : " | ",
                                grammar::gbnf_literal(call_head(format, t.name)), t.arguments_rule);
  }
  const std::string open = call_open(format);
  const std::string close = hermes ? "}\n</tool_call>" : "}";
  return fmt::format("call ::= {} ( {} ) {}\n", grammar::gbnf_literal(open), alternatives,
                     grammar::gbnf_literal(close));
}

}  // namespace

Result<ToolCallGrammar> tool_call_grammar(const ReplyRequest& reply) {
  ToolCallGrammar out;
  const chat::ToolCallFormat format = reply.format.tool_calls;
  if (!reply.parse_tool_calls || reply.tools.empty() || reply.tool_choice == ToolChoice::kNone ||
      format == chat::ToolCallFormat::kNone) {
    return out;
  }
  std::string rules;
  MINFER_ASSIGN_OR_RETURN(std::vector<CallTarget> targets, call_targets(reply, rules));
  const bool forced = reply.tool_choice != ToolChoice::kAuto;
  const std::string calls = reply.parallel_tool_calls ? "call ( \"\\n\" call )*" : "call";
  std::string root;
  if (format == chat::ToolCallFormat::kHermes) {
    root = "root ::= " + calls + "\n";
    if (!forced) out.triggers = {chat::tool_call_trigger(format)};
  } else {
    // Llama 3: one call is the whole reply; under auto, any text that does not open with "{".
    root = forced ? "root ::= call\n" : "root ::= call | ( [^{] [\\x01-\\U0010FFFF]* )?\n";
  }
  out.gbnf =
      root + call_rule(format, targets) + rules + grammar::json_primitive_rules(/*compact=*/true);
  if (forced) {
    out.forced_prefix = call_open(format);
    if (targets.size() == 1) out.forced_prefix += call_head(format, targets[0].name);
    while (out.forced_prefix.ends_with(' ')) out.forced_prefix.pop_back();
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
