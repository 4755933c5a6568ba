// What the reply-parser tests share (reply_parser_test.cpp, channel_reply_test.cpp,
// xml_tool_calls_test.cpp): a whole reply put together from the parser's deltas, the text fed
// whole, in pieces of n bytes or in given pieces, and the check that it splits the same whatever
// the pieces.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/reply_parser.h"

namespace minfer::engine::reply_test {

// A whole reply put together from its deltas.
struct Parsed {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;

  void add(const ReplyDelta& d) {
    reasoning += d.reasoning;
    content += d.content;
    append_tool_calls(calls, d.tool_calls);
  }
};

inline Parsed parse_pieces(const std::vector<std::string>& pieces, const ReplyParserOptions& o) {
  ReplyParser parser(o);
  Parsed p;
  for (const std::string& piece : pieces) p.add(parser.push(piece));
  p.add(parser.finish());
  return p;
}

// The reply fed in pieces of `piece` bytes (0: all at once).
inline Parsed parse(const std::string& text, const ReplyParserOptions& o, size_t piece = 0) {
  if (piece == 0) piece = text.size() + 1;
  std::vector<std::string> pieces;
  for (size_t i = 0; i < text.size(); i += piece) pieces.push_back(text.substr(i, piece));
  return parse_pieces(pieces, o);
}

// The same reasoning, content and calls (names, arguments and ids).
inline void expect_same(const Parsed& a, const Parsed& b, const std::string& where) {
  EXPECT_EQ(a.reasoning, b.reasoning) << where;
  EXPECT_EQ(a.content, b.content) << where;
  ASSERT_EQ(a.calls.size(), b.calls.size()) << where;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, b.calls[i].name) << where;
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << where;
    EXPECT_EQ(a.calls[i].id, b.calls[i].id) << where;
  }
}

// The text cut in two at every byte, and fed one byte at a time, splits as it does whole.
inline void expect_same_at_every_split(const std::string& text, const ReplyParserOptions& o) {
  const Parsed whole = parse(text, o);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    expect_same(parse_pieces({text.substr(0, cut), text.substr(cut)}, o), whole,
                "cut at " + std::to_string(cut));
  }
  expect_same(parse(text, o, 1), whole, "byte by byte");
}

}  // namespace minfer::engine::reply_test
