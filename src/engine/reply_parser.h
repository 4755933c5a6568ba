// The reply parser (DESIGN.md §4 "Replies"): splits a reply's text, as it streams, into reasoning,
// content and tool calls in the model's own formats (chat/reply_format.h). The token pipeline
// feeds it the text it emits, so the CLI and the server split replies alike.
//
// Text that may still be the start of a marker (<think>, </think>, <tool_call>, Llama 3's "{")
// is held back until decided, as StopMatcher holds a possible stop string. Whitespace around the
// markers is not content: reasoning is trimmed, the blank lines after </think> and between calls
// are dropped.
//
// A tool call is recognised once its function name and the "{" that opens its arguments have
// been read, and reaches the caller only whole: its id, name and arguments come in one delta once
// the arguments' JSON has closed, so what a stream has sent is never taken back. Before the name a
// call that turns out malformed gives its text back as content. A call the reply leaves unfinished
// (cut by the token limit: the finish reason says "length") or whose arguments break off into text
// that is not JSON is dropped (up to its end marker), and none of its markup is content; so is a
// marker's beginning left at the reply's end ("<tool_cal"). OpenAI returns a call cut by max_tokens
// with its arguments truncated; a client cannot parse those, so minfer returns only the complete
// calls. An XML call (engine/xml_tool_calls.h) is committed at its "<function=NAME>" and returned
// at its "</function>", its arguments the JSON object built from its parameters; one whose
// parameters break off into other text is dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reply_format.h"
#include "engine/channel_reply.h"
#include "engine/xml_tool_calls.h"
#include "minfer/minfer.h"

namespace minfer::engine {

using minfer::append_tool_calls;
using minfer::ReplyDelta;
using minfer::ToolCall;
using minfer::ToolCallDelta;

struct ReplyParserOptions {
  chat::ToolCallFormat tool_calls = chat::ToolCallFormat::kNone;  // kNone: no calls parsed
  bool extract_reasoning = false;    // <think>…</think> at the reply's start is reasoning
  bool starts_in_reasoning = false;  // the prompt opened <think> (with extract_reasoning)
  uint64_t id_seed = 0;              // the ids' random source; 0: std::random_device
  // Calls are read (their markup kept out of the content) but not returned: tool_choice none.
  bool drop_tool_calls = false;
  // Harmony or Gemma 4: the reply is read by that format's parser (channel_reply.h); its calls
  // are returned when tool_calls is not kNone.
  chat::ChannelFormat channels = chat::ChannelFormat::kNone;
  // kQwenXml: the tools' parameter types, which type the arguments (null: every value untyped).
  std::shared_ptr<const XmlToolSchemas> xml_tools;
};

// Appends `more` to `into` (an arguments fragment merges with the fragment before it when that
// is the same call's; a call's first piece stays on its own).
void append_delta(ReplyDelta& into, ReplyDelta&& more);

class ReplyParser {
 public:
  explicit ReplyParser(ReplyParserOptions options);

  // Adds emitted text; returns what is now decided.
  ReplyDelta push(std::string_view text);
  // The end of the reply: what is still held back, decided as the text ended.
  ReplyDelta finish();

  // True while the reply is inside its reasoning block.
  bool in_reasoning() const {
    return channels_ != nullptr ? channels_->in_reasoning() : mode_ == Mode::kReasoning;
  }
  int32_t n_tool_calls() const {
    return channels_ != nullptr ? channels_->n_tool_calls() : n_calls_;
  }
  // False when the options ask for no splitting: every text is content, as given.
  bool active() const { return active_; }

 private:
  enum class Mode {
    kStart,         // the reply's start: a <think> may open
    kReasoning,     // inside <think>…</think>
    kContentStart,  // after the reasoning (or at the start): a Llama 3 call may begin
    kContent,       // content; Hermes: a <tool_call> may open
    kCallHeader,    // a call's {"name": …, "arguments": (XML: <function=NAME>) read so far
    kArguments,     // the committed call's arguments, streaming
    kXmlBody,       // the committed XML call's parameters, held until </function>
    kCallEnd,       // after the arguments: the rest of the call's markup
  };

  // Decides what it can of pending_; false when it needs more text (or, at_end, is done).
  bool step(ReplyDelta& out, bool at_end);
  bool step_start(bool at_end);
  bool step_reasoning(ReplyDelta& out, bool at_end);
  bool step_content_start(bool at_end);
  bool step_content(ReplyDelta& out, bool at_end);
  bool step_call_header(ReplyDelta& out, bool at_end);
  bool step_arguments(ReplyDelta& out);
  bool step_xml_body(ReplyDelta& out);
  // The calls open with <tool_call> (Hermes, XML).
  bool tagged_calls() const;
  bool step_call_end(bool at_end);
  std::string new_call_id();
  // Ends the call being read: returned when `whole`, else dropped.
  void end_call(ReplyDelta& out, bool whole);

  ReplyParserOptions options_;
  bool active_ = false;
  Mode mode_ = Mode::kStart;
  std::string pending_;        // text not yet decided
  std::string call_raw_;       // the marker that opened the call being read (content if it fails)
  bool trim_leading_ = false;  // drop the whitespace that begins the next text
  int32_t n_calls_ = 0;        // calls returned, and the one being read
  ReplyDelta call_;            // the call being read, held until its arguments close
  // The committed call's arguments: open brackets ('{' or '['), and the string state.
  std::vector<char> brackets_;
  bool in_string_ = false;
  bool escaped_ = false;
  std::mt19937_64 ids_;
  std::unique_ptr<ChannelReplyParser> channels_;  // set for harmony and Gemma 4 replies
};

}  // namespace minfer::engine
