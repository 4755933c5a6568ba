// What the tool-call grammar tests share (tool_grammar_test.cpp, xml_tool_calls_test.cpp): a
// request with tools, and whether a grammar's sentences include a text.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/tool_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"

namespace minfer::engine::test {

inline ReplyRequest tool_request(chat::ToolCallFormat format, ToolChoice choice,
                                 const std::string& tools, bool parallel = true,
                                 const std::string& name = "") {
  ReplyRequest r;
  r.format.tool_calls = format;
  r.parse_tool_calls = true;
  r.tools = tools;
  r.tool_choice = choice;
  r.tool_choice_name = name;
  r.parallel_tool_calls = parallel;
  return r;
}

// True when `text` is a whole sentence of g's grammar.
inline bool accepts(const ToolCallGrammar& g, const std::string& text) {
  Result<std::shared_ptr<const grammar::Grammar>> parsed = grammar::parse_gbnf(g.gbnf);
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << g.gbnf;
  if (!parsed.is_ok()) return false;
  const grammar::GrammarMatcher matcher(*parsed, grammar::MatcherLimits{});
  grammar::MatchState start, end;
  if (matcher.initial(start) != grammar::StepResult::kOk) return false;
  return matcher.advance(start, text, end) == grammar::StepResult::kOk &&
         grammar::GrammarMatcher::can_end(end);
}

}  // namespace minfer::engine::test
