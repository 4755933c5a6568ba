// The reply parser inside the token pipeline, driven by forced tokens of the real Qwen3
// vocabulary (each target token made the argmax): reasoning, content and tool calls come out of
// the steps, the finish reason becomes tool_calls, the prompt's open <think> starts the reply in
// reasoning, and the reasoning budget closes the block itself.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "chat/reply_format.h"
#include "engine/token_pipeline.h"
#include "engine/tool_grammar.h"
#include "grammar/request_grammars.h"
#include "test_util.h"
#include "tokenizer/tokenizer_test_util.h"

namespace minfer::engine {
namespace {

// The real Qwen3 vocabulary, shared by the tests of this program.
const Tokenizer* qwen3_vocab() {
  return test::shared_tokenizer("models/qwen3-vocab.gguf");
}

// What the steps and the end gave, put together.
struct Reply {
  std::string text;  // the raw text
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;
  std::vector<int32_t> tokens;  // every token the pipeline chose
  FinishReason finish = FinishReason::kLength;
};

void add(Reply& r, const ReplyDelta& d) {
  r.reasoning += d.reasoning;
  r.content += d.content;
  append_tool_calls(r.calls, d.tool_calls);
}

// Runs the pipeline with `wanted` as the argmax of each step's logits until it finishes or
// `wanted` runs out (then the end is kEog, as an eog token would make it).
Reply run(const Tokenizer& tok, TokenPipelineOptions o, const std::vector<int32_t>& prompt,
          const std::vector<int32_t>& wanted) {
  o.sampling.temperature = 0.0f;
  TokenPipeline p(tok, tok.n_vocab(), o, prompt);
  Reply r;
  std::optional<FinishReason> finish;
  for (const int32_t id : wanted) {
    std::vector<float> logits(static_cast<size_t>(tok.n_vocab()), 0.0f);  // [n_vocab]
    logits[static_cast<size_t>(id)] = 10.0f;
    Result<TokenStep> step = p.next(logits);
    EXPECT_TRUE(step.is_ok()) << step.status().message();
    if (!step.is_ok()) break;
    r.tokens.push_back(step->sampled.token);
    r.text += step->text;
    add(r, step->delta);
    if (step->finish.has_value()) {
      finish = step->finish;
      break;
    }
  }
  const TokenEnding end = p.finish(finish.value_or(FinishReason::kEog));
  r.text += end.flushed + end.held;
  add(r, end.delta);
  r.finish = end.finish;
  return r;
}

std::vector<int32_t> ids(const Tokenizer& tok, const std::string& text) {
  return tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
}

TokenPipelineOptions hermes_with_reasoning() {
  TokenPipelineOptions o;
  o.reply.tool_calls = chat::ToolCallFormat::kHermes;
  o.reply.extract_reasoning = true;
  return o;
}

TEST(ReplyPipeline, ReasoningContentAndToolCallsFromTokens) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  const std::string reply =
      "<think>\nThe user wants weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": "
      "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>";
  const std::vector<int32_t> wanted = ids(tok, reply);
  ASSERT_TRUE(tok.is_eog(wanted.back()));
  const Reply r = run(tok, hermes_with_reasoning(), {}, wanted);
  EXPECT_EQ(r.tokens, wanted);
  EXPECT_EQ(r.reasoning, "The user wants weather.");
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(r.finish, FinishReason::kToolCalls);
  EXPECT_STREQ(finish_reason_name(r.finish), "tool_calls");
}

TEST(ReplyPipeline, WithoutParsingTheTextIsAllContent) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  const std::string text =
      "<think>\nx\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}";
  const Reply r = run(tok, TokenPipelineOptions{}, {}, ids(tok, text));
  EXPECT_EQ(r.content, text);
  EXPECT_EQ(r.content, r.text);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.finish, FinishReason::kEog);
}

TEST(ReplyPipeline, APromptThatOpenedThinkStartsTheReplyInReasoning) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  const std::vector<int32_t> prompt =
      ids(tok, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  const Reply r =
      run(tok, hermes_with_reasoning(), prompt, ids(tok, "Greet back.\n</think>\n\nHello!"));
  EXPECT_EQ(r.reasoning, "Greet back.");
  EXPECT_EQ(r.content, "Hello!");
  EXPECT_EQ(r.finish, FinishReason::kEog);
}

TEST(ReplyPipeline, TheReasoningBudgetClosesTheBlockAfterItsTokens) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  TokenPipelineOptions o = hermes_with_reasoning();
  o.reasoning_budget = 4;
  // The model would think on and on: " a" forever after <think>.
  const std::vector<int32_t> think = ids(tok, "<think>");
  ASSERT_EQ(think.size(), 1u);
  const std::vector<int32_t> a = ids(tok, " a");
  ASSERT_EQ(a.size(), 1u);
  std::vector<int32_t> wanted = {think[0]};
  for (int i = 0; i < 12; ++i) wanted.push_back(a[0]);
  const Reply r = run(tok, o, {}, wanted);
  const std::vector<int32_t> close = ids(tok, std::string(chat::kThinkCloseForced));
  // <think>, four reasoning tokens, the forced close, then the model's tokens again.
  ASSERT_GE(r.tokens.size(), 1 + 4 + close.size());
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin() + 5, r.tokens.begin() + 5 + close.size()), close);
  EXPECT_EQ(r.reasoning, "a a a a");
  EXPECT_EQ(r.content, std::string("a a a a a a a a a a a a").substr(0, r.content.size()));
  EXPECT_FALSE(r.content.empty());
  EXPECT_EQ(r.text.substr(0, std::string("<think> a a a a\n</think>\n\n").size()),
            "<think> a a a a\n</think>\n\n");
}

TEST(ReplyPipeline, AZeroBudgetClosesAnOpenedThinkAtOnce) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  TokenPipelineOptions o = hermes_with_reasoning();
  o.reasoning_budget = 0;
  const std::vector<int32_t> prompt = ids(tok, "<|im_start|>assistant\n<think>\n");
  const std::vector<int32_t> close = ids(tok, std::string(chat::kThinkCloseForced));
  std::vector<int32_t> wanted(close.size() + 3, ids(tok, " b")[0]);
  const Reply r = run(tok, o, prompt, wanted);
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + close.size()), close);
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, "b b b");
}

// A grammar holds the whole reply, reasoning included. A budget's forced close that the grammar
// refuses used to fail the request: the grammar decides instead. One that it allows is written,
// and the answer follows the grammar.
TEST(ReplyPipeline, AReasoningBudgetUnderAGrammarClosesOnlyWhereTheGrammarAllows) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  grammar::RequestGrammars grammars(tok);
  const std::vector<int32_t> prompt = ids(tok, "<|im_start|>assistant\n<think>\n");
  const std::vector<int32_t> close = ids(tok, std::string(chat::kThinkCloseForced));
  const std::vector<int32_t> wanted(12, ids(tok, " a")[0]);  // the model would think on
  for (const bool closes : {false, true}) {
    const char* gbnf = closes ? R"(root ::= [a-z ]+ "\n</think>\n\n" [a-z ]+ ".")"
                              : R"(root ::= [a-z ]+ ("." | "!"))";
    auto constraint = grammars.constraint(false, gbnf);
    ASSERT_TRUE(constraint.is_ok()) << constraint.status().message();
    TokenPipelineOptions o = hermes_with_reasoning();
    o.reply.starts_in_reasoning = true;
    o.reasoning_budget = 2;
    o.constraint = constraint.value().get();
    const Reply r = run(tok, o, prompt, wanted);  // every step ok
    ASSERT_GT(r.tokens.size(), 2 + close.size()) << gbnf;
    const std::vector<int32_t> after_budget(r.tokens.begin() + 2,
                                            r.tokens.begin() + 2 + close.size());
    if (closes) {
      EXPECT_EQ(after_budget, close);
      EXPECT_EQ(r.reasoning, "a a");
      EXPECT_EQ(r.content, std::string("a a a a a a a").substr(0, r.content.size()));
      EXPECT_FALSE(r.content.empty());
    } else {
      EXPECT_NE(after_budget, close);
      EXPECT_EQ(r.content, "");
      EXPECT_EQ(r.reasoning.find_first_not_of("a "), std::string::npos) << r.reasoning;
    }
  }
}

// A forced call's opening is written in the tokenizer's own tokens whatever the model prefers,
// so a small budget is not spent spelling it out piece by piece.
TEST(ReplyPipeline, AForcedCallOpensWithTheTokenizersOwnTokens) {
  MINFER_REQUIRE_TEST_DATA();
  ASSERT_NE(qwen3_vocab(), nullptr);
  const Tokenizer& tok = *qwen3_vocab();
  grammar::RequestGrammars grammars(tok);
  ReplyRequest request;
  request.format.tool_calls = chat::ToolCallFormat::kHermes;
  request.parse_tool_calls = true;
  request.tools = R"([{"type": "function", "function": {"name": "add", "parameters":
      {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}])";
  request.tool_choice = ToolChoice::kFunction;
  request.tool_choice_name = "add";
  auto constraint = tool_call_constraint(grammars, request);
  ASSERT_TRUE(constraint.is_ok()) << constraint.status().message();
  TokenPipelineOptions o;
  o.reply = request.parser_options();
  o.constraint = constraint.value().get();
  const std::vector<int32_t> open = ids(tok, "<tool_call>\n{\"name\": \"add\", \"arguments\":");
  // The model would spell everything one byte at a time ("<", "t", ...): it is not asked.
  const std::vector<int32_t> wanted(open.size() + 2, ids(tok, "<")[0]);
  const Reply r = run(tok, o, {}, wanted);
  ASSERT_GE(r.tokens.size(), open.size());
  EXPECT_EQ(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + open.size()), open);
}

}  // namespace
}  // namespace minfer::engine
