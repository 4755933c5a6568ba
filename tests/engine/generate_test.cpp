// The generation loop: the golden greedy story, each finish reason (eog, stop string, n_predict,
// full context, cancel), seeded sampling, and the chat conversation. (Stop-string hold-back is
// token_pipeline_test.cpp's.)
#include "engine/generate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/conversation.h"
#include "engine/setup.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

// --- generate on stories260K --------------------------------------------------------------------

struct Stories {
  LoadedModel loaded;
  nlohmann::json golden;
};

Stories load_stories(int64_t n_ctx = 0) {
  ModelOptions options;
  options.path = test::test_data_path("models/stories260K.gguf");
  options.n_ctx = n_ctx;
  options.n_threads = 2;
  auto loaded = load_for_generation(options);
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().message();
  std::ifstream in(test::test_data_path("golden/stories260K.once.json"));
  Stories s{loaded.is_ok() ? std::move(loaded).value() : LoadedModel{}, nlohmann::json::parse(in)};
  return s;
}

GenerateOptions greedy(int64_t n_predict) {
  GenerateOptions o;
  o.sampling.temperature = 0.0f;
  o.n_predict = n_predict;
  return o;
}

std::vector<int32_t> prompt_of(const Stories& s) {
  return s.golden["prompt_tokens"].get<std::vector<int32_t>>();
}

TEST(Generate, GreedyStoryMatchesLlamaCppTokenForToken) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.loaded.session, nullptr);
  const std::vector<int32_t> prompt =
      s.loaded.tokenizer->encode(s.golden["prompt"].get<std::string>(), true, true);
  EXPECT_EQ(prompt, prompt_of(s));
  std::string streamed;
  int pieces = 0;
  auto r =
      generate(*s.loaded.session, *s.loaded.tokenizer, prompt, greedy(48), [&](std::string_view t) {
        streamed += t;
        ++pieces;
        return true;
      });
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->tokens, s.golden["greedy_tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(r->text, s.golden["greedy_text"].get<std::string>());
  EXPECT_EQ(streamed, r->text);
  EXPECT_GT(pieces, 20);  // streamed piece by piece, not at the end
  EXPECT_EQ(r->finish, FinishReason::kLength);
  const GenerationMetrics& m = r->metrics;
  EXPECT_EQ(m.n_prompt, 5);
  EXPECT_EQ(m.n_prefilled, 5);
  EXPECT_EQ(m.n_generated, 48);
  EXPECT_EQ(m.n_decoded, 47);  // the last token is never fed back
  EXPECT_EQ(m.decode_forwards.count, 47);
  EXPECT_EQ(m.prefill_forwards.count, 1);
  EXPECT_LE(m.decode_forwards.min_ms, m.decode_forwards.mean_ms());
  EXPECT_LE(m.decode_forwards.mean_ms(), m.decode_forwards.max_ms);
  EXPECT_GE(m.ttft_ms, m.prefill_ms);
  // The session holds the prompt and every token but the last.
  EXPECT_EQ(s.loaded.session->n_past(), 5 + 47);
}

TEST(Generate, AStopStringEndsGenerationAndIsNotEmitted) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.loaded.session, nullptr);
  GenerateOptions o = greedy(48);
  o.stops = {"Lily"};
  auto r = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), o, nullptr);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->finish, FinishReason::kStop);
  EXPECT_EQ(r->stop, "Lily");
  EXPECT_EQ(r->text, ", there was a little girl named ");
}

TEST(Generate, AnEndOfGenerationTokenEndsGenerationUnprinted) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.loaded.session, nullptr);
  const int32_t eos = s.loaded.tokenizer->eos_id();
  ASSERT_TRUE(s.loaded.tokenizer->is_eog(eos));
  GenerateOptions o = greedy(48);
  o.sampling.logit_bias = {{eos, 1000.0f}};
  auto r = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), o, nullptr);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->finish, FinishReason::kEog);
  EXPECT_EQ(r->tokens, std::vector<int32_t>{eos});
  EXPECT_EQ(r->text, "");
}

TEST(Generate, AFullContextEndsGenerationWithEveryTokenInside) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories(/*n_ctx=*/12);
  ASSERT_NE(s.loaded.session, nullptr);
  auto r = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), greedy(-1), nullptr);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->finish, FinishReason::kContext);
  // Positions 5..11: seven tokens, the same as the golden path's first seven.
  const auto golden = s.golden["greedy_tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(r->tokens, std::vector<int32_t>(golden.begin(), golden.begin() + 7));
  EXPECT_EQ(s.loaded.session->n_past(), 11);

  // A prompt that fills the context exactly leaves no room for a token.
  auto full = generate(*s.loaded.session, *s.loaded.tokenizer,
                       std::vector<int32_t>(12, prompt_of(s)[1]), greedy(-1), nullptr);
  ASSERT_TRUE(full.is_ok());
  EXPECT_EQ(full->finish, FinishReason::kContext);
  EXPECT_TRUE(full->tokens.empty());
  // One past it is an error, not a crash.
  auto over = generate(*s.loaded.session, *s.loaded.tokenizer,
                       std::vector<int32_t>(13, prompt_of(s)[1]), greedy(-1), nullptr);
  ASSERT_FALSE(over.is_ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kOutOfRange);
}

TEST(Generate, NPredictZeroAndCancelStopBeforeAnyToken) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.loaded.session, nullptr);
  auto zero = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), greedy(0), nullptr);
  ASSERT_TRUE(zero.is_ok());
  EXPECT_EQ(zero->finish, FinishReason::kLength);
  EXPECT_TRUE(zero->tokens.empty());

  std::atomic<bool> cancel{false};
  GenerateOptions o = greedy(-1);
  o.cancel = &cancel;
  int calls = 0;
  auto r = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), o, [&](std::string_view) {
    if (++calls == 3) cancel.store(true);
    return true;
  });
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->finish, FinishReason::kCancelled);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r->metrics.n_reused, 4);  // the same prompt again: all but its last token reused
}

TEST(Generate, SeededSamplingIsReproducibleAndSeedsDiffer) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.loaded.session, nullptr);
  auto sample = [&](uint64_t seed) {
    GenerateOptions o;
    o.n_predict = 32;
    o.sampling.seed = seed;
    auto r = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), o, nullptr);
    EXPECT_TRUE(r.is_ok());
    return r.is_ok() ? r->tokens : std::vector<int32_t>{};
  };
  const std::vector<int32_t> a = sample(7);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(sample(7), a);
  EXPECT_NE(sample(8), a);
}

TEST(Generate, BadSamplingParametersAreErrors) {
  MINFER_REQUIRE_TEST_DATA();
  Stories s = load_stories();
  ASSERT_NE(s.loaded.session, nullptr);
  GenerateOptions o = greedy(4);
  o.sampling.top_p = 2.0f;
  auto r = generate(*s.loaded.session, *s.loaded.tokenizer, prompt_of(s), o, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("top_p"), std::string::npos) << r.status().message();
}

// --- Conversation
// ---------------------------------------------------------------------------------

TEST(Conversation, RendersTheModelTemplateAndDropsTheOldestTurnKeepingTheSystem) {
  MINFER_REQUIRE_TEST_DATA();
  ModelOptions options;
  options.path = test::test_data_path("models/qwen2.5-qwentok-tiny-q8_0.gguf");
  options.n_ctx = 256;
  options.n_threads = 1;
  auto loaded = load_for_generation(options);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  auto tmpl = load_chat_template(loaded->model->file());
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().message();
  Conversation c(*tmpl, *loaded->tokenizer, "Be brief.");
  c.add_user("one");
  c.add_assistant("first");
  c.add_user("two");
  auto text = c.render(true);
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\none<|im_end|>\n"
            "<|im_start|>assistant\nfirst<|im_end|>\n<|im_start|>user\ntwo<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto ids = c.tokens(true);
  ASSERT_TRUE(ids.is_ok());
  EXPECT_EQ(ids->front(), loaded->tokenizer->find_token("<|im_start|>"));
  EXPECT_EQ(c.n_turns(), 2);
  ASSERT_TRUE(c.drop_oldest_turn());
  EXPECT_EQ(c.n_turns(), 1);
  EXPECT_EQ(c.messages().size(), 2u);
  EXPECT_EQ(c.messages()[0]["role"], "system");
  EXPECT_EQ(c.messages()[1]["content"], "two");
  EXPECT_FALSE(c.drop_oldest_turn());  // the latest message always stays
  EXPECT_FALSE(c.pop_last("assistant"));
  EXPECT_TRUE(c.pop_last("user"));
  EXPECT_FALSE(c.pop_last("system"));  // the system message is not a turn
}

TEST(Conversation, ChatPromptsGetOneBosWhenTheModelAddsIt) {
  MINFER_REQUIRE_TEST_DATA();
  ModelOptions options;
  options.path = test::test_data_path("models/stories260K.gguf");
  options.n_ctx = 64;
  auto loaded = load_for_generation(options);
  ASSERT_TRUE(loaded.is_ok());
  const Tokenizer& tok = *loaded->tokenizer;
  ASSERT_TRUE(tok.add_bos());
  const std::vector<int32_t> plain = tokenize_chat_prompt(tok, "Hello");
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.front(), tok.bos_id());
  const std::vector<int32_t> with_bos =
      tokenize_chat_prompt(tok, tok.token_text(tok.bos_id()) + "Hello");
  EXPECT_EQ(with_bos, plain);
}

}  // namespace
}  // namespace minfer::engine
