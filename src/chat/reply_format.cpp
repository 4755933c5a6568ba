#include "chat/reply_format.h"

namespace minfer::chat {

namespace {

bool contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
  }
  return "none";
}

ReplyFormat detect_reply_format(std::string_view source) {
  ReplyFormat format;
  // Hermes first: Hermes 3 on Llama 3.1 keeps Llama's headers but calls tools with <tool_call>.
  if (contains(source, "<tool_call>")) {
    format.tool_calls = ToolCallFormat::kHermes;
  } else if (contains(source, "<|start_header_id|>") && contains(source, "ipython")) {
    format.tool_calls = ToolCallFormat::kLlama3Json;
  }
  format.reasoning = contains(source, kThinkOpen);
  return format;
}

std::string tool_call_trigger(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "";
    case ToolCallFormat::kHermes:
      return "<tool_call>";
    case ToolCallFormat::kLlama3Json:
      return "{";
  }
  return "";
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
