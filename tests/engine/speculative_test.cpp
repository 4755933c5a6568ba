// Speculative decoding: the prompt-lookup draft, the draft model's vocabulary check, and
// generation with either giving exactly the tokens of plain decoding — greedy and sampled, on
// stories260K and the shared Qwen/Llama models, with drafts accepted and rejected, up to a full
// context.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/generate.h"
#include "engine/setup.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

TEST(Speculative, LookupDraftsWhatFollowedTheLastEarlierOccurrence) {
  const std::vector<int32_t> h = {1, 2, 3, 4, 1, 2, 5, 6, 1, 2};
  // [1, 2] last occurred earlier at 4: 5, 6, 1, 2 followed it.
  EXPECT_EQ(lookup_draft(h, 2, 16), (std::vector<int32_t>{5, 6, 1, 2}));
  EXPECT_EQ(lookup_draft(h, 2, 3), (std::vector<int32_t>{5, 6, 1}));
  EXPECT_EQ(lookup_draft(h, 3, 16), (std::vector<int32_t>{}));     // 6, 1, 2 never occurred before
  EXPECT_EQ(lookup_draft(h, 1, 2), (std::vector<int32_t>{5, 6}));  // 2 at 5, then 5, 6
  EXPECT_EQ(lookup_draft(h, 0, 4), (std::vector<int32_t>{}));      // off
  EXPECT_EQ(lookup_draft({h.data(), 2}, 2, 4), (std::vector<int32_t>{}));  // nothing before
}

LoadedModel load(const std::string& file, int64_t n_ctx) {
  ModelOptions options;
  options.path = test::test_data_path("models/" + file);
  options.n_ctx = n_ctx;
  options.n_threads = 2;
  auto loaded = load_for_generation(options);
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().message();
  return loaded.is_ok() ? std::move(loaded).value() : LoadedModel{};
}

GenerateResult run(LoadedModel& m, const std::vector<int32_t>& prompt, float temperature, int ngram,
                   int64_t n_predict, Session* draft = nullptr, float p_min = 0.0f) {
  GenerateOptions o;
  o.sampling.temperature = temperature;
  o.sampling.seed = 1234;
  o.n_predict = n_predict;
  o.speculative.ngram = ngram;
  o.speculative.draft = draft;
  o.speculative.draft_max = 6;
  o.speculative.draft_p_min = p_min;
  m.session->clear();
  auto r = generate(*m.session, *m.tokenizer, prompt, o, nullptr);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? std::move(r).value() : GenerateResult{};
}

// A prompt that the reply tends to repeat: the same sentence several times.
std::vector<int32_t> repeating_prompt(const LoadedModel& m) {
  std::string text;
  for (int i = 0; i < 4; ++i) text += "Once upon a time there was a little cat. ";
  return m.tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/false);
}

TEST(Speculative, GivesThePlainTokensGreedyAndSampled) {
  MINFER_REQUIRE_TEST_DATA();
  int64_t accepted = 0;
  int64_t rejected = 0;
  for (const char* file : {"stories260K.gguf", "qwen2-tiny-q4_k_m.gguf", "llama3-tiny-q4_k_m.gguf",
                           "qwen3-tiny-f32.gguf"}) {
    LoadedModel m = load(file, 256);
    ASSERT_NE(m.session, nullptr) << file;
    const std::vector<int32_t> prompt = repeating_prompt(m);
    for (float temperature : {0.0f, 0.9f}) {
      for (int ngram : {1, 2}) {
        SCOPED_TRACE(std::string(file) + " temperature " + std::to_string(temperature) + " ngram " +
                     std::to_string(ngram));
        const GenerateResult plain = run(m, prompt, temperature, 0, 60);
        const GenerateResult spec = run(m, prompt, temperature, ngram, 60);
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_EQ(spec.text, plain.text);
        EXPECT_EQ(spec.finish, plain.finish);
        // The session holds what plain decoding leaves: no draft cells remain.
        EXPECT_EQ(m.session->n_past(),
                  static_cast<int64_t>(prompt.size() + plain.tokens.size()) - 1);
        const SpeculativeStats& st = spec.metrics.speculative;
        EXPECT_LE(st.n_accepted, st.n_drafted);
        accepted += st.n_accepted;
        rejected += st.n_drafted - st.n_accepted;
      }
    }
  }
  // Both paths were taken: drafts sampled as drafted, and drafts dropped.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

TEST(Speculative, StopsAtAFullContextAsPlainDecodingDoes) {
  MINFER_REQUIRE_TEST_DATA();
  LoadedModel m = load("stories260K.gguf", 64);
  ASSERT_NE(m.session, nullptr);
  const std::vector<int32_t> prompt = repeating_prompt(m);
  const GenerateResult plain = run(m, prompt, 0.0f, 0, -1);
  const GenerateResult spec = run(m, prompt, 0.0f, 1, -1);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.finish, plain.finish);
}

TEST(Speculative, RefusesContextShiftAndSlidingWindows) {
  MINFER_REQUIRE_TEST_DATA();
  LoadedModel m = load("gemma3-tiny-q8_0.gguf", 128);
  ASSERT_NE(m.session, nullptr);
  GenerateOptions o;
  o.speculative.ngram = 2;
  auto r = generate(*m.session, *m.tokenizer, repeating_prompt(m), o, nullptr);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("sliding-window"), std::string::npos);
  LoadedModel s = load("stories260K.gguf", 128);
  o.context_shift = true;
  auto shifted = generate(*s.session, *s.tokenizer, repeating_prompt(s), o, nullptr);
  ASSERT_FALSE(shifted.is_ok());
  EXPECT_NE(shifted.status().message().find("context shift"), std::string::npos);
}

// A draft model: a quantized copy of the target (same vocabulary), and the target itself (every
// greedy draft is the target's own token: the mechanism's ceiling).
TEST(Speculative, ADraftModelGivesThePlainTokensAndItselfIsAlwaysAccepted) {
  MINFER_REQUIRE_TEST_DATA();
  LoadedModel target = load("qwen2-tiny-f32.gguf", 256);
  LoadedModel quantized = load("qwen2-tiny-q4_k_m.gguf", 256);
  LoadedModel itself = load("qwen2-tiny-f32.gguf", 256);
  ASSERT_NE(target.session, nullptr);
  ASSERT_NE(quantized.session, nullptr);
  ASSERT_NE(itself.session, nullptr);
  ASSERT_TRUE(check_draft_vocabulary(*target.tokenizer, *quantized.tokenizer).is_ok());
  const std::vector<int32_t> prompt = repeating_prompt(target);
  for (float temperature : {0.0f, 0.9f}) {
    SCOPED_TRACE("temperature " + std::to_string(temperature));
    const GenerateResult plain = run(target, prompt, temperature, 0, 60);
    for (LoadedModel* draft : {&quantized, &itself}) {
      const GenerateResult spec = run(target, prompt, temperature, 0, 60, draft->session.get());
      EXPECT_EQ(spec.tokens, plain.tokens);
      EXPECT_EQ(target.session->n_past(),
                static_cast<int64_t>(prompt.size() + plain.tokens.size()) - 1);
      const SpeculativeStats& st = spec.metrics.speculative;
      EXPECT_GT(st.n_verified, 0);
      if (draft == &itself && temperature == 0.0f) {
        // Every draft but those past the 60th token is the token sampled.
        EXPECT_GE(st.n_accepted, st.n_drafted - 6) << st.n_accepted << " of " << st.n_drafted;
      }
    }
  }
  // A draft that stops below probability 1 drafts nothing here: plain forwards only.
  const GenerateResult none = run(target, prompt, 0.0f, 0, 20, quantized.session.get(), 1.0f);
  EXPECT_EQ(none.metrics.speculative.n_verified, 0);
  EXPECT_EQ(none.tokens, run(target, prompt, 0.0f, 0, 20).tokens);
}

TEST(Speculative, ADraftModelOfAnotherVocabularyIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  LoadedModel qwen = load("qwen2-tiny-q4_k_m.gguf", 64);
  LoadedModel stories = load("stories260K.gguf", 64);
  ASSERT_NE(qwen.tokenizer, nullptr);
  ASSERT_NE(stories.tokenizer, nullptr);
  const Status s = check_draft_vocabulary(*qwen.tokenizer, *stories.tokenizer);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("vocabulary"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace minfer::engine
