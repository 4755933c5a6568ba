// The reply parsers of the formats whose replies are messages on channels
// (chat::ChannelFormat): gpt-oss harmony and Gemma 4. The ReplyParser (reply_parser.h) hands a
// reply of those formats to one of them; like it, they split text as it streams, hold back what
// may still be a marker, and return a tool call whole, once its arguments have closed.
//
// Harmony (OpenAI's harmony format, as gpt-oss's template writes it; the prompt ends with
// "<|start|>assistant"), a reply is messages, each a header and a body:
//   header: [<|start|>ROLE][ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ [<|constrain|>]TYPE]
//           <|message|>
//   body:   text up to <|end|>, <|call|> or <|return|> (the last two end generation as tokens;
//           as text they end the message), or up to the next <|start|> / <|channel|>.
//   A message to functions.NAME is a call (its body the arguments' JSON); channel analysis is
//   reasoning; final, and commentary without a recipient (a preamble), are content. Text that
//   does not open with a header (or whose header breaks off: a line break, over 256 bytes) is
//   content as written.
// Gemma 4 (its template; the prompt ends with "<|turn>model\n", and with an empty thought
// "<|channel>thought\n<channel|>" when thinking is off):
//   <|channel>thought\n…<channel|> is reasoning (the word "thought" and the line break after it
//   are markup); <|tool_call>call:NAME{ARGS}<tool_call|> is a call, ARGS read by
//   read_gemma4_arguments; the rest is content, trimmed around the markup.
// A call whose arguments do not read as a JSON object, or that the reply leaves unfinished, is
// dropped, and none of its markup is content.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "minfer/minfer.h"

namespace minfer::engine {

struct ChannelReplyOptions {
  bool return_calls = true;       // false: calls are read (never content) but not returned
  bool extract_reasoning = true;  // false: reasoning text is content (its markup is not)
  uint64_t id_seed = 0;           // the ids' random source; 0: std::random_device
};

// What the two parsers share: text held until decided, the steps that decide it, and the calls.
class ChannelReplyParser {
 public:
  explicit ChannelReplyParser(const ChannelReplyOptions& options);
  virtual ~ChannelReplyParser() = default;
  // Adds emitted text; returns what is now decided.
  minfer::ReplyDelta push(std::string_view text);
  // The end of the reply: what is still held back, decided as the text ended.
  minfer::ReplyDelta finish();
  virtual bool in_reasoning() const = 0;
  int32_t n_tool_calls() const { return n_calls_; }

 protected:
  // Decides what it can of pending_; false when it needs more text (or, at_end, is done).
  virtual bool step(minfer::ReplyDelta& out, bool at_end) = 0;
  // The reply's end, after the last step: decides what pending_ still holds.
  virtual void end(minfer::ReplyDelta& out) = 0;
  // Adds a whole call to `out` (read but not added when calls are not returned).
  void add_call(minfer::ReplyDelta& out, std::string name, std::string arguments);

  ChannelReplyOptions options_;
  std::string pending_;  // text not yet decided

 private:
  int32_t n_calls_ = 0;
  std::mt19937_64 ids_;
};

std::unique_ptr<ChannelReplyParser> make_harmony_parser(const ChannelReplyOptions& options);
std::unique_ptr<ChannelReplyParser> make_gemma4_parser(const ChannelReplyOptions& options);

// Gemma 4's arguments, as its template writes them, read into JSON: `text` starts at the "{" and
// holds the whole object (the rest of `text` is ignored; `end` gets the position after its "}").
//   object: { key:value, … }   key: bare text up to ':' or a string
//   string: <|"|>raw text<|"|> (no escapes)   array: [ value, … ]
//   bare:   true / false, null / None (Python's str of None), a JSON number, else the text as a
//           string.
// nullopt when the text is not such an object (or does not end within `text`), or nests deeper
// than 64 levels.
std::optional<nlohmann::ordered_json> read_gemma4_arguments(std::string_view text, size_t& end);

}  // namespace minfer::engine
