// The reply formats found from chat templates: Hermes for Qwen2.5/Qwen3 (and Hermes 3 on Llama),
// Llama 3.x JSON for the Llama 3.1+ templates, <think> for Qwen3 and DeepSeek-R1, none for plain
// templates; and a prompt that leaves <think> open.
#include "chat/reply_format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "chat_test_util.h"

namespace minfer::chat {
namespace {

std::string template_file(const std::string& name) {
  std::ifstream in(test::repo_root() + "/tests/chat/templates/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReplyFormat, FromTemplates) {
  struct Expect {
    const char* file;
    ToolCallFormat calls;
    bool reasoning;
  };
  const Expect cases[] = {
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
      {"meta-llama-Meta-Llama-3-8B-Instruct.jinja", ToolCallFormat::kNone, false},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::kNone, true},
      {"teknium-OpenHermes-2.5-Mistral-7B-chatml.jinja", ToolCallFormat::kNone, false},
  };
  for (const Expect& e : cases) {
    const std::string source = template_file(e.file);
    ASSERT_FALSE(source.empty()) << e.file;
    const ReplyFormat f = detect_reply_format(source);
    EXPECT_EQ(f.tool_calls, e.calls) << e.file;
    EXPECT_EQ(f.reasoning, e.reasoning) << e.file;
  }
  EXPECT_EQ(detect_reply_format(kChatMlTemplate).tool_calls, ToolCallFormat::kNone);
}

// Qwen3.5's and Qwen3-Coder's real templates (../shared/templates): XML calls; Qwen3.5 thinks.
TEST(ReplyFormat, XmlCallsFromQwen35AndQwen3CoderTemplates) {
  MINFER_REQUIRE_TEST_DATA();
  const ReplyFormat q35 = detect_reply_format(
      test::read_text(minfer::test::test_data_path("templates/Qwen3.5-4B.jinja")));
  EXPECT_EQ(q35.tool_calls, ToolCallFormat::kQwenXml);
  EXPECT_TRUE(q35.reasoning);
  const ReplyFormat coder = detect_reply_format(
      test::read_text(minfer::test::test_data_path("templates/Qwen3-Coder.jinja")));
  EXPECT_EQ(coder.tool_calls, ToolCallFormat::kQwenXml);
  EXPECT_FALSE(coder.reasoning);
}

TEST(ReplyFormat, TriggersAndNames) {
  EXPECT_EQ(tool_call_trigger(ToolCallFormat::kHermes), "<tool_call>");
  EXPECT_EQ(tool_call_trigger(ToolCallFormat::kLlama3Json), "{");
  EXPECT_EQ(tool_call_trigger(ToolCallFormat::kNone), "");
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kHermes), "hermes");
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kLlama3Json), "llama3_json");
  EXPECT_EQ(tool_call_trigger(ToolCallFormat::kQwenXml), "<tool_call>");
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kQwenXml), "qwen_xml");
}

TEST(ReplyFormat, PromptOpensReasoning) {
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>\n"));
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<think>\nx"));
}

}  // namespace
}  // namespace minfer::chat
