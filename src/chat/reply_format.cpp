#include "chat/reply_format.h"

namespace minfer::chat {

namespace {

bool contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

struct FormatNames {
  ToolCallFormat format;
  const char* name;
  const char* trigger;  // the text that opens a call
};

constexpr FormatNames kFormatNames[] = {
    {ToolCallFormat::kNone, "none", ""},
    {ToolCallFormat::kHermes, "hermes", "<tool_call>"},
    {ToolCallFormat::kLlama3Json, "llama3_json", "{"},
    {ToolCallFormat::kQwenXml, "qwen_xml", "<tool_call>"},
    {ToolCallFormat::kHarmony, "harmony", ""},
    {ToolCallFormat::kGemma4, "gemma4", "<|tool_call>"},
};

const FormatNames& names_of(ToolCallFormat format) {
  for (const FormatNames& names : kFormatNames) {
    if (names.format == format) return names;
  }
  return kFormatNames[0];
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  return names_of(format).name;
}

ReplyFormat detect_reply_format(std::string_view source) {
  ReplyFormat format;
  // Harmony and Gemma 4 first: their replies have their own markup throughout.
  if (contains(source, "<|channel|>") && contains(source, "<|message|>")) {
    format.tool_calls = ToolCallFormat::kHarmony;
    format.channels = ChannelFormat::kHarmony;
    format.reasoning = true;
    return format;
  }
  if (contains(source, "<|tool_call>") && contains(source, "<|channel>")) {
    format.tool_calls = ToolCallFormat::kGemma4;
    format.channels = ChannelFormat::kGemma4;
    format.reasoning = true;
    return format;
  }
  // The XML format first (its calls open with <tool_call> too), then Hermes: Hermes 3 on Llama 3.1
  // keeps Llama's headers but calls tools with <tool_call>.
  if (contains(source, "<tool_call>") && contains(source, "<function=") &&
      contains(source, "<parameter=")) {
    format.tool_calls = ToolCallFormat::kQwenXml;
  } else if (contains(source, "<tool_call>")) {
    format.tool_calls = ToolCallFormat::kHermes;
  } else if (contains(source, "<|start_header_id|>") && contains(source, "ipython")) {
    format.tool_calls = ToolCallFormat::kLlama3Json;
  }
  format.reasoning = contains(source, kThinkOpen);
  return format;
}

std::string_view reasoning_close_forced(ChannelFormat channels) {
  switch (channels) {
    case ChannelFormat::kHarmony:
      return "<|end|><|start|>assistant<|channel|>final<|message|>";
    case ChannelFormat::kGemma4:
      return "<channel|>";
    case ChannelFormat::kNone:
      break;
  }
  return kThinkCloseForced;
}

std::string tool_call_trigger(ToolCallFormat format) {
  return names_of(format).trigger;
}

bool prompt_opens_reasoning(std::string_view prompt_tail) {
  const size_t open = prompt_tail.rfind(kThinkOpen);
  if (open == std::string_view::npos) return false;
  for (size_t i = open + kThinkOpen.size(); i < prompt_tail.size(); ++i) {
    if (!is_space(prompt_tail[i])) return false;
  }
  return true;
}

}  // namespace minfer::chat
