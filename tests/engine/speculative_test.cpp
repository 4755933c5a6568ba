// Speculative decoding: the prompt-lookup draft, the draft model's vocabulary check, and
// generation with either giving exactly the tokens of plain decoding — greedy and sampled, on
// stories260K and the shared Qwen/Llama models, with drafts accepted and rejected, up to a full
// context.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chi_square.h"
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

LoadedModel load(const std::string& file, int64_t n_ctx, int n_threads = 2) {
  ModelOptions options;
  options.path = test::test_data_path("models/" + file);
  options.n_ctx = n_ctx;
  options.n_threads = n_threads;
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
      if (temperature == 0.0f) {
        EXPECT_EQ(spec.tokens, plain.tokens);
      } else {
        // Sampled with a draft model: the accept/resample rule gives the target's distribution
        // (SampledTokensFollowTheTargetsDistribution), not plain decoding's tokens; the first
        // token comes before any draft, and the same seed gives the same tokens.
        ASSERT_FALSE(spec.tokens.empty());
        EXPECT_EQ(spec.tokens.front(), plain.tokens.front());
        EXPECT_EQ(run(target, prompt, temperature, 0, 60, draft->session.get()).tokens,
                  spec.tokens);
      }
      EXPECT_EQ(target.session->n_past(),
                static_cast<int64_t>(prompt.size() + spec.tokens.size()) - 1);
      const SpeculativeStats& st = spec.metrics.speculative;
      EXPECT_GT(st.n_verified, 0);
      if (draft == &itself) {
        // Every draft but those past the 60th token is the token sampled: greedy, the target's
        // own argmax; sampled, q = p at every row (the same logits, settings and history), so
        // the rule accepts each draft.
        EXPECT_GE(st.n_accepted, st.n_drafted - 6) << st.n_accepted << " of " << st.n_drafted;
      }
    }
  }
  // A draft that stops below probability 1 drafts nothing here: plain forwards only.
  const GenerateResult none = run(target, prompt, 0.0f, 0, 20, quantized.session.get(), 1.0f);
  EXPECT_EQ(none.metrics.speculative.n_verified, 0);
  EXPECT_EQ(none.tokens, run(target, prompt, 0.0f, 0, 20).tokens);
}

// The first two tokens sampled after `prompt` under `params`, exactly: p(t1) · p(t2 | t1) from
// the sampler chain's distributions on the model's logits (index t1 * n_vocab + t2).
std::map<int64_t, double> exact_pairs(LoadedModel& m, const std::vector<int32_t>& prompt,
                                      const SamplerParams& params) {
  const int32_t n_vocab = m.tokenizer->n_vocab();
  auto distribution = [&](const std::vector<int32_t>& history) {
    Sampler s(params, n_vocab);
    for (int32_t t : history) s.accept(t);
    m.session->clear();
    auto logits = m.session->set_prompt(history);
    EXPECT_TRUE(logits.is_ok());
    s.sample(logits.value());
    return s.last_candidates();
  };
  std::map<int64_t, double> pairs;
  for (const Candidate& first : distribution(prompt)) {
    std::vector<int32_t> history = prompt;
    history.push_back(first.id);
    for (const Candidate& second : distribution(history)) {
      pairs[int64_t{first.id} * n_vocab + second.id] = double{first.p} * second.p;
    }
  }
  return pairs;
}

// n seeded runs of three tokens (the second sampled from the verify forward's first row, through
// the accept/resample rule when a draft model drafts), against the exact distribution.
test::ChiSquare pair_fit(LoadedModel& m, const std::vector<int32_t>& prompt,
                         const SamplerParams& params, Session* draft, int n,
                         SpeculativeStats& stats) {
  const std::map<int64_t, double> exact = exact_pairs(m, prompt, params);
  std::map<int64_t, int64_t> counts;
  int64_t outside = 0;
  for (int i = 0; i < n; ++i) {
    GenerateOptions o;
    o.sampling = params;
    o.sampling.seed = static_cast<uint64_t>(i) + 1;
    o.n_predict = 3;  // the third token is drawn after the first draft is accepted or not
    o.speculative.draft = draft;
    o.speculative.draft_max = 3;
    auto r = generate(*m.session, *m.tokenizer, prompt, o, nullptr);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    if (!r.is_ok() || r->tokens.size() != 3) return {};
    const int64_t pair = int64_t{r->tokens[0]} * m.tokenizer->n_vocab() + r->tokens[1];
    if (exact.count(pair) == 0) ++outside;
    ++counts[pair];
    stats.n_drafted += r->metrics.speculative.n_drafted;
    stats.n_accepted += r->metrics.speculative.n_accepted;
  }
  std::vector<int64_t> observed = {outside};  // bin 0: pairs of probability 0
  std::vector<double> expected = {0.0};
  for (const auto& [pair, p] : exact) {
    observed.push_back(counts.count(pair) > 0 ? counts.at(pair) : 0);
    expected.push_back(p);
  }
  return test::chi_square(observed, expected);
}

// Sampled decoding with a draft model is distributed as plain decoding: the first two tokens'
// joint distribution, exact from the target's logits, fits plain and speculative draws alike
// (chi-square at the 0.001 level, seeded draws); with a quantized draft (q ≠ p) drafts are both
// accepted and rejected, with penalties and truncation in the chain.
TEST(Speculative, SampledTokensFollowTheTargetsDistribution) {
  MINFER_REQUIRE_TEST_DATA();
  // One thread: thousands of tiny forwards, no barrier to wait at on a busy machine.
  LoadedModel target = load("qwen2-tiny-f32.gguf", 64, 1);
  LoadedModel draft = load("qwen2-tiny-q2_k.gguf", 64, 1);
  ASSERT_NE(target.session, nullptr);
  ASSERT_NE(draft.session, nullptr);
  const std::vector<int32_t> prompt = target.tokenizer->encode("Once upon a time", true, false);
  SamplerParams params;
  params.temperature = 1.0f;
  params.top_k = 4;
  params.top_p = 1.0f;
  params.min_p = 0.0f;
  params.repeat_penalty = 1.3f;
  for (int32_t id = 0; id < target.tokenizer->n_vocab(); ++id) {
    if (target.tokenizer->is_eog(id)) params.logit_bias.emplace_back(id, -INFINITY);
  }
  constexpr int kRuns = 800;
  SpeculativeStats none, spec;
  const test::ChiSquare plain_fit = pair_fit(target, prompt, params, nullptr, kRuns, none);
  EXPECT_TRUE(plain_fit.fits()) << plain_fit.statistic << " > " << plain_fit.critical;
  const test::ChiSquare spec_fit =
      pair_fit(target, prompt, params, draft.session.get(), kRuns, spec);
  EXPECT_TRUE(spec_fit.fits()) << spec_fit.statistic << " > " << spec_fit.critical;
  EXPECT_GE(spec_fit.df, 3);

  // Both paths of the rule were taken.
  EXPECT_GT(spec.n_accepted, kRuns / 10) << spec.n_accepted << " of " << spec.n_drafted;
  EXPECT_LT(spec.n_accepted, spec.n_drafted) << spec.n_accepted << " of " << spec.n_drafted;
}

// A sampled draft: each token with the distribution it was drawn from (sorted by id, the token
// in it); a confidence threshold no token reaches drafts nothing.
TEST(Speculative, ASampledDraftCarriesItsDistribution) {
  MINFER_REQUIRE_TEST_DATA();
  LoadedModel m = load("stories260K.gguf", 128);
  ASSERT_NE(m.session, nullptr);
  SamplerParams params;
  params.seed = 3;
  Sampler sampler(params, m.tokenizer->n_vocab());
  const std::vector<int32_t> history = repeating_prompt(m);
  auto drafts = sample_model_draft(*m.session, history, 5, 0.0f, sampler);
  ASSERT_TRUE(drafts.is_ok()) << drafts.status().message();
  ASSERT_EQ(drafts->size(), 5u);
  for (const DraftProposal& d : *drafts) {
    EXPECT_TRUE(std::is_sorted(d.q.begin(), d.q.end(),
                               [](const Candidate& a, const Candidate& b) { return a.id < b.id; }));
    EXPECT_GT(probability_of(d.q, d.token), 0.0);
    double total = 0.0;
    for (const Candidate& c : d.q) total += c.p;
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  // The session holds the history and the drafts but the last.
  EXPECT_EQ(m.session->n_past(), static_cast<int64_t>(history.size()) + 4);
  auto none = sample_model_draft(*m.session, history, 5, 1.0f, sampler);
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->empty());
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
