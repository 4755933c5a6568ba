// Generation on a model's one sequence (LanguageModel::generate: one request stepped through the
// scheduler on the caller's thread): the golden greedy story and its figures, each finish reason
// (eog, stop string, max_tokens, a full context, cancel), seeded sampling, bad parameters, and
// what the sequence keeps between calls. (Stop-string hold-back is token_pipeline_test.cpp's.)
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "minfer/minfer.h"
#include "test_util.h"

namespace minfer::generate_test {
namespace {

struct Stories {
  std::unique_ptr<LanguageModel> model;
  nlohmann::json golden;
  std::vector<int32_t> prompt;
};

Stories load_stories(int64_t n_ctx = 0, int64_t n_batch = 2048) {
  LoadOptions options;
  options.n_ctx = n_ctx;
  options.n_batch = n_batch;
  options.n_threads = 2;
  auto model = LanguageModel::load(test::test_data_path("models/stories260K.gguf"), options);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  std::ifstream in(test::test_data_path("golden/stories260K.once.json"));
  Stories s{model.is_ok() ? std::move(model).value() : nullptr, nlohmann::json::parse(in), {}};
  s.prompt = s.golden["prompt_tokens"].get<std::vector<int32_t>>();
  return s;
}

GenerateParams greedy(int64_t max_tokens) {
  GenerateParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  return p;
}

// Prompt tokens the sequence already holds of `prompt` (it keeps the longest common prefix, less
// the last token, whose logits are computed again).
int64_t held_of(LanguageModel& model, const std::vector<int32_t>& prompt) {
  auto r = model.prefill(prompt);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? r->n_reused : -1;
}

TEST(Generate, GreedyStoryMatchesLlamaCppWithItsFigures) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.model, nullptr);
  std::string streamed;
  int pieces = 0;
  auto r = s.model->generate(s.prompt, greedy(48), [&](std::string_view t) {
    streamed += t;
    ++pieces;
    return true;
  });
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->tokens, s.golden["greedy_tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(r->text, s.golden["greedy_text"].get<std::string>());
  EXPECT_EQ(streamed, r->text);
  EXPECT_GT(pieces, 20);  // streamed piece by piece, not at the end
  EXPECT_EQ(r->finish_reason, "length");
  EXPECT_EQ(r->n_prompt, 5);
  EXPECT_EQ(r->n_prefilled, 5);
  EXPECT_EQ(r->n_generated, 48);
  EXPECT_GT(r->decode_tok_s, 0.0);
  // 47 decode forwards (the last token is never fed back), one prefill forward.
  EXPECT_NE(r->metrics.find("(47 forwards)\nprefill forward:     min "), std::string::npos)
      << r->metrics;
  EXPECT_NE(r->metrics.find("ms (1 forwards)\ndecode forward:      min "), std::string::npos);
  // The sequence holds the prompt and every token but the last.
  std::vector<int32_t> all = s.prompt;
  all.insert(all.end(), r->tokens.begin(), r->tokens.end());
  EXPECT_EQ(held_of(*s.model, all), 5 + 47);
}

TEST(Generate, AStopStringEndsGenerationAndIsNotEmitted) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.model, nullptr);
  GenerateParams p = greedy(48);
  p.stop = {"Lily"};
  auto r = s.model->generate(s.prompt, p);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(r->stop, "Lily");
  EXPECT_EQ(r->text, ", there was a little girl named ");
}

TEST(Generate, AnEndOfGenerationTokenEndsGenerationUnprinted) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.model, nullptr);
  const int32_t eos = 2;  // stories260K's </s>
  GenerateParams p = greedy(48);
  p.logit_bias = {{eos, 1000.0f}};
  auto r = s.model->generate(s.prompt, p);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->finish_reason, "eog");
  EXPECT_EQ(r->tokens, std::vector<int32_t>{eos});
  EXPECT_EQ(r->text, "");
}

// A sampled token sits at the position after the last: the reply ends when none is left.
TEST(Generate, AFullContextEndsGenerationWithEveryTokenInside) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories(/*n_ctx=*/12);
  ASSERT_NE(s.model, nullptr);
  auto r = s.model->generate(s.prompt, greedy(-1));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->finish_reason, "context");
  // Positions 5..11: seven tokens, the same as the golden path's first seven.
  const auto golden = s.golden["greedy_tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(r->tokens, std::vector<int32_t>(golden.begin(), golden.begin() + 7));

  // A prompt one short of the context gets one token; one that fills it exactly, none.
  auto one = s.model->generate(std::vector<int32_t>(11, s.prompt[1]), greedy(-1));
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  EXPECT_EQ(one->finish_reason, "context");
  EXPECT_EQ(one->tokens.size(), 1u);
  auto full = s.model->generate(std::vector<int32_t>(12, s.prompt[1]), greedy(-1));
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_EQ(full->finish_reason, "context");
  EXPECT_TRUE(full->tokens.empty());
  // One past it is an error, not a crash.
  auto over = s.model->generate(std::vector<int32_t>(13, s.prompt[1]), greedy(-1));
  ASSERT_FALSE(over.is_ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(over.status().message().find("13 tokens"), std::string::npos)
      << over.status().message();
}

TEST(Generate, MaxTokensZeroAndCancelStopBeforeAnyToken) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.model, nullptr);
  auto zero = s.model->generate(s.prompt, greedy(0));
  ASSERT_TRUE(zero.is_ok());
  EXPECT_EQ(zero->finish_reason, "length");
  EXPECT_TRUE(zero->tokens.empty());

  std::atomic<bool> cancel{false};
  GenerateParams p = greedy(-1);
  p.cancel = &cancel;
  int calls = 0;
  auto r = s.model->generate(s.prompt, p, [&](std::string_view) {
    if (++calls == 3) cancel.store(true);
    return true;
  });
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->finish_reason, "cancelled");
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r->n_cached, 4);  // the same prompt again: all but its last token reused
}

TEST(Generate, SeededSamplingIsReproducibleAndSeedsDiffer) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.model, nullptr);
  auto sample = [&](uint64_t seed) {
    GenerateParams p;
    p.max_tokens = 32;
    p.seed = seed;
    auto r = s.model->generate(s.prompt, p);
    EXPECT_TRUE(r.is_ok());
    return r.is_ok() ? r->tokens : std::vector<int32_t>{};
  };
  const std::vector<int32_t> a = sample(7);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(sample(7), a);
  EXPECT_NE(sample(8), a);
}

TEST(Generate, BadParametersAreErrors) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.model, nullptr);
  GenerateParams p = greedy(4);
  p.top_p = 2.0f;
  auto r = s.model->generate(s.prompt, p);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("top_p"), std::string::npos) << r.status().message();
  EXPECT_FALSE(s.model->generate({}, greedy(4)).is_ok());
  EXPECT_FALSE(s.model->generate(std::vector<int32_t>{100000}, greedy(4)).is_ok());
  // The sequence goes on after errors.
  EXPECT_TRUE(s.model->generate(s.prompt, greedy(4)).is_ok());
}

// What the sequence keeps between calls: a prompt that extends the last computes only its new
// tokens, one that diverges keeps the common prefix, the same prompt again recomputes only its
// last token — and every reply is the one a fresh model gives, for any chunk size (n_batch).
TEST(Generate, TheSequenceKeepsWhatTheNextPromptSharesAndRepliesAsAFreshOne) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories(/*n_ctx=*/256, /*n_batch=*/3);
  ASSERT_NE(s.model, nullptr);
  const std::vector<int32_t> base = s.model->tokenize("Once upon a time there was a cat");
  std::vector<int32_t> longer = base;
  for (const int32_t t : s.model->tokenize(" who liked fish", false)) longer.push_back(t);
  std::vector<int32_t> diverging(base.begin(), base.begin() + 4);
  for (const int32_t t : s.model->tokenize(" dog ran home", false)) diverging.push_back(t);
  struct Step {
    const std::vector<int32_t>* prompt;
    int64_t cached;
  };
  const Step steps[] = {{&base, 0},
                        {&longer, static_cast<int64_t>(base.size())},
                        {&diverging, 4},
                        {&diverging, static_cast<int64_t>(diverging.size()) - 1}};
  GenerateParams p = greedy(8);
  p.top_logprobs = 0;
  for (const Step& step : steps) {
    auto r = s.model->generate(*step.prompt, p);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->n_cached, step.cached);
    Stories fresh = load_stories(/*n_ctx=*/256);
    auto expected = fresh.model->generate(*step.prompt, p);
    ASSERT_TRUE(expected.is_ok());
    EXPECT_EQ(r->tokens, expected->tokens);
  }
  s.model->clear();
  EXPECT_EQ(held_of(*s.model, base), 0);
}

}  // namespace
}  // namespace minfer::generate_test
