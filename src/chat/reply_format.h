// The formats a model writes its reply in, as its chat template reveals them: how it calls tools
// and how it marks its reasoning. The token pipeline's ReplyParser (engine/reply_parser.h) splits
// replies by them; the grammar for tool calls starts at tool_call_trigger().
//
// Which template text identifies which format (the same facts llama.cpp's common/chat.cpp uses):
//   Hermes (Qwen2.5, Qwen3, Hermes 2/3): the template writes "<tool_call>"; a reply holds
//     <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call> blocks, several per reply.
//   Llama 3.x (3.1, 3.2, 3.3): "<|start_header_id|>" and the "ipython" role; a call is the whole
//     reply as one JSON object {"name": …, "parameters": {…}}, optionally after <|python_tag|>.
//   Qwen3.5 and Qwen3-Coder (XML): the template writes "<function=" and "<parameter="; a reply
//     holds <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n…</function>\n
//     </tool_call> blocks, several per reply. A value is raw text; the arguments object is built
//     from the parameters, each typed by the tool's JSON Schema (xml_argument_value).
//   Reasoning: the template writes "<think>" (Qwen3, DeepSeek-R1 distills): the reply may open
//     with <think>…</think>, or start inside it when the generation prompt already opened it.
//   gpt-oss harmony: the template writes "<|channel|>" and "<|message|>"; a reply is messages
//     [<|start|>assistant][ to=functions.NAME]<|channel|>CHANNEL[ <|constrain|>json]<|message|>
//     BODY ending at <|end|>, <|call|> or <|return|>: analysis is reasoning, final and commentary
//     without a recipient (a preamble) are content, a message to functions.NAME is a call whose
//     body is the arguments' JSON (engine/harmony_reply.h).
//   Gemma 4: the template writes "<|tool_call>" and "<|channel>"; thoughts are
//     <|channel>thought\n…<channel|>, a call is <|tool_call>call:NAME{key:value,…}<tool_call|>
//     with strings in <|"|>…<|"|> (engine/gemma4_reply.h).
#pragma once

#include <string>
#include <string_view>

namespace minfer::chat {

enum class ToolCallFormat {
  kNone,        // the template shows no tool-call format: replies are content only
  kHermes,      // <tool_call>{"name", "arguments"}</tool_call>, several per reply
  kLlama3Json,  // the whole reply is {"name", "parameters"} (after an optional <|python_tag|>)
  kQwenXml,     // <tool_call><function=NAME><parameter=P>VALUE</parameter>…, several per reply
  kHarmony,     // gpt-oss: <|channel|>commentary to=functions.NAME …<|message|>{args}<|call|>
  kGemma4,      // <|tool_call>call:NAME{key:<|"|>text<|"|>,…}<tool_call|>, several per reply
};

// How the reply is divided into reasoning and answer beyond <think>: harmony's channels, Gemma
// 4's thought channel. Replies of these formats are split by their own parsers.
enum class ChannelFormat {
  kNone,
  kHarmony,
  kGemma4,
};

// "none", "hermes", "llama3_json", "qwen_xml", "harmony", "gemma4".
const char* tool_call_format_name(ToolCallFormat format);

struct ReplyFormat {
  ToolCallFormat tool_calls = ToolCallFormat::kNone;
  bool reasoning = false;  // the template knows <think>…</think> (or its format's channels)
  ChannelFormat channels = ChannelFormat::kNone;
};

inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";
// What the engine writes to end reasoning at the budget (--reasoning-budget): the close marker
// on a line of its own, then the blank line Qwen3 and DeepSeek-R1 put before the answer.
inline constexpr std::string_view kThinkCloseForced = "\n</think>\n\n";

// What the engine writes to end reasoning at the budget in replies of `channels`: harmony ends
// the analysis message and opens the final one; Gemma 4 closes its thought channel.
std::string_view reasoning_close_forced(ChannelFormat channels);

// The formats of the template with this source text.
ReplyFormat detect_reply_format(std::string_view template_source);

// The text that opens a tool call in `format` ("" for kNone): where a lazy grammar for the call's
// arguments starts ("<tool_call>" for Hermes and the XML format, "{" for Llama 3's JSON object,
// "<|tool_call>" for Gemma 4; harmony's calls are not read lazily: its header has two spellings).
std::string tool_call_trigger(ToolCallFormat format);

// True when `prompt_tail` (the end of a rendered prompt) ends inside an opened <think> block:
// the last "<think>" is followed by whitespace only (DeepSeek-R1's generation prompt
// "<｜Assistant｜><think>\n"), so the reply starts in reasoning.
bool prompt_opens_reasoning(std::string_view prompt_tail);

}  // namespace minfer::chat
