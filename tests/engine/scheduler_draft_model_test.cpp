// Speculative decoding by a draft model in the Scheduler (SchedulerOptions::draft_model,
// RequestParams::spec_draft_model): greedy output is plain decoding's token for token (and
// log-probability for log-probability) with a draft that is the target itself — which then
// accepts every draft — and with a different model of the same vocabulary, while another
// sequence of the batch that does not speculate gives what it gives alone; sampled requests
// complete with drafts accepted; stop strings, max_tokens, a full context, context shift and
// cancellation still hold, and neither cache keeps a block once every request is done.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
namespace {

std::vector<int32_t> story_prompt(const Tokenizer& tok) {
  return tok.encode("Once upon a time there was a little cat who liked the sea.", true, false);
}

// Only max_tokens (or the context) ends the reply: drafts never run past an end-of-generation.
RequestParams request(const Loaded& l, std::vector<int32_t> prompt, float temperature,
                      int64_t max_tokens, bool draft) {
  SamplerParams sampling = greedy_without_eog(*l.tokenizer, l.model->config().n_vocab);
  sampling.temperature = temperature;
  sampling.seed = 99;
  RequestParams p;
  static_cast<SamplerParams&>(p.generate) = std::move(sampling);
  p.prompt = std::move(prompt);
  p.generate.max_tokens = max_tokens;
  p.generate.top_logprobs = 0;  // log-probabilities compared bit for bit
  p.spec_draft_model = draft;
  p.generate.draft_max = 5;
  return p;
}

SchedulerOptions options(int n_parallel, int64_t n_ctx, const Model* draft) {
  SchedulerOptions o;
  o.n_parallel = n_parallel;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  o.cache_type = GgmlType::kF32;
  o.draft_model = draft;
  return o;
}

// Runs the requests together to the end; what each streamed, the scheduler's stats.
std::vector<Collected> run_together(const Loaded& l, const SchedulerOptions& o,
                                    std::vector<RequestParams> requests,
                                    SchedulerStats* stats = nullptr) {
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  if (!sched.is_ok()) return std::vector<Collected>(requests.size());
  std::vector<Collected> out = submit_collecting(**sched, std::move(requests));
  EXPECT_TRUE((*sched)->run_until_idle().is_ok());
  expect_all_done(**sched, out, stats);
  return out;
}

TEST(SchedulerDraftModel, GreedyGivesPlainDecodingsTokensBesideAnotherSequence) {
  MINFER_REQUIRE_TEST_DATA();
  // (target, draft): the target itself, then another model of the same vocabulary.
  const std::vector<std::pair<const char*, const char*>> pairs = {
      {"stories260K.gguf", "stories260K.gguf"},
      {"stories260K.gguf", "stories260K-f16.gguf"},
      {"qwen2-tiny-q8_0.gguf", "qwen2-tiny-q8_0.gguf"},
      {"qwen2-tiny-q8_0.gguf", "qwen2-tiny-q4_0.gguf"}};
  int64_t rejected = 0;
  for (const auto& [target, draft_file] : pairs) {
    const Loaded l = load_model_file(target);
    const Loaded d = load_model_file(draft_file);
    ASSERT_NE(l.tokenizer, nullptr);
    ASSERT_NE(d.tokenizer, nullptr);
    const bool itself = std::string(target) == draft_file;
    const std::vector<int32_t> prompt = story_prompt(*l.tokenizer);
    const std::vector<int32_t> other = l.tokenizer->encode("The sea and the stars", true, false);
    for (int64_t budget : {int64_t{512}, int64_t{6}}) {
      SCOPED_TRACE(std::string(target) + " drafted by " + draft_file + ", budget " +
                   std::to_string(budget));
      SchedulerOptions o = options(2, 256, d.model.get());
      o.token_budget = budget;
      const auto alone = run_together(l, o, {request(l, other, 0.0f, 30, false)});
      const auto plain = run_together(
          l, o, {request(l, prompt, 0.0f, 50, false), request(l, other, 0.0f, 30, false)});
      SchedulerStats stats;
      const auto spec = run_together(
          l, o, {request(l, prompt, 0.0f, 50, true), request(l, other, 0.0f, 30, false)}, &stats);
      expect_same_reply(spec[0], plain[0]);
      expect_same_reply(spec[1], plain[1]);
      expect_same_reply(spec[1], alone[0]);
      const RequestStats& st = spec[0].stats;
      EXPECT_GT(st.n_drafted, 0);
      EXPECT_GT(st.n_draft_accepted, 0);
      if (itself) {
        EXPECT_EQ(st.n_draft_accepted, st.n_drafted);  // the target agrees with itself
      }
      EXPECT_EQ(spec[1].stats.n_drafted, 0);
      EXPECT_EQ(stats.n_draft_tokens, st.n_drafted);
      EXPECT_EQ(stats.n_draft_accepted, st.n_draft_accepted);
      rejected += st.n_drafted - st.n_draft_accepted;
    }
  }
  EXPECT_GT(rejected, 0);  // the other models' drafts were rejected at times
}

TEST(SchedulerDraftModel, SampledRequestsCompleteWithDraftsAccepted) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  const SchedulerOptions o = options(2, 256, l.model.get());
  const std::vector<int32_t> prompt = story_prompt(*l.tokenizer);
  const auto out =
      run_together(l, o, {request(l, prompt, 0.9f, 40, true), request(l, prompt, 0.0f, 40, false)});
  EXPECT_EQ(out[0].tokens.size(), 40u);
  EXPECT_GT(out[0].stats.n_drafted, 0);
  // The draft samples from the target's own distribution: min(1, p/q) = 1.
  EXPECT_EQ(out[0].stats.n_draft_accepted, out[0].stats.n_drafted);
  // A sampled request's text is the target's distribution, not a copy of the greedy one.
  const auto greedy = run_together(l, o, {request(l, prompt, 0.0f, 40, false)});
  expect_same_reply(out[1], greedy[0]);
}

TEST(SchedulerDraftModel, StopsMaxTokensAFullContextAndContextShiftAsInPlainDecoding) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  const Loaded d = load_model_file("stories260K-f16.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  ASSERT_NE(d.tokenizer, nullptr);
  const std::vector<int32_t> prompt = story_prompt(*l.tokenizer);
  const SchedulerOptions o = options(1, 256, d.model.get());
  for (int64_t max_tokens : {1, 2, 7}) {
    const auto plain = run_together(l, o, {request(l, prompt, 0.0f, max_tokens, false)});
    const auto spec = run_together(l, o, {request(l, prompt, 0.0f, max_tokens, true)});
    expect_same_reply(spec[0], plain[0]);
  }
  const auto full = run_together(l, o, {request(l, prompt, 0.0f, 60, false)});
  ASSERT_GT(full[0].text.size(), 40u);
  RequestParams p = request(l, prompt, 0.0f, 60, false);
  p.generate.stop = {full[0].text.substr(30, 6)};
  const auto plain_stop = run_together(l, o, {p});
  p.spec_draft_model = true;
  const auto spec_stop = run_together(l, o, {p});
  expect_same_reply(spec_stop[0], plain_stop[0]);
  EXPECT_EQ(spec_stop[0].finish, FinishReason::kStop);
  // A full context of 48 positions, then context shift past it (three times the context).
  const SchedulerOptions small = options(1, 48, d.model.get());
  const auto plain_ctx = run_together(l, small, {request(l, prompt, 0.0f, -1, false)});
  const auto spec_ctx = run_together(l, small, {request(l, prompt, 0.0f, -1, true)});
  expect_same_reply(spec_ctx[0], plain_ctx[0]);
  EXPECT_EQ(spec_ctx[0].finish, FinishReason::kContext);
  auto shifting = [&](bool draft) {
    RequestParams s = request(l, prompt, 0.0f, 150, draft);
    s.generate.context_shift = true;
    s.generate.n_keep = 4;
    return s;
  };
  const auto plain_shift = run_together(l, small, {shifting(false)});
  const auto spec_shift = run_together(l, small, {shifting(true)});
  expect_same_reply(spec_shift[0], plain_shift[0]);
  EXPECT_EQ(spec_shift[0].tokens.size(), 150u);
  EXPECT_GT(spec_shift[0].stats.n_shifts, 0);
  EXPECT_GT(spec_shift[0].stats.n_draft_accepted, 0);
}

TEST(SchedulerDraftModel, AKeptSlotsNextRequestRebuildsItsDraftFromThePrefixCache) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  const std::vector<int32_t> prompt = story_prompt(*l.tokenizer);
  SchedulerOptions o = options(1, 256, l.model.get());
  o.block_size = 16;  // small blocks: the draft's short run fills whole ones
  const auto plain = run_together(l, o, {request(l, prompt, 0.0f, 30, false)});
  o.keep_slots = true;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  Collected first;
  Collected second;
  ASSERT_TRUE((*sched)->submit(request(l, prompt, 0.0f, 30, true), collect_into(first)).is_ok());
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  // The slot keeps the target's cells; the draft's full blocks stay cached, none in use.
  EXPECT_EQ((*sched)->draft_cache().n_blocks_used(), 0);
  EXPECT_GT((*sched)->draft_cache().n_blocks_cached(), 0);
  ASSERT_TRUE((*sched)->submit(request(l, prompt, 0.0f, 30, true), collect_into(second)).is_ok());
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  expect_same_reply(first, plain[0]);
  expect_same_reply(second, plain[0]);
  EXPECT_GT(second.stats.n_cached, 0);
  EXPECT_EQ(second.stats.n_draft_accepted, second.stats.n_drafted);
  EXPECT_GT(second.stats.n_drafted, 0);
}

TEST(SchedulerDraftModel, CancellationFreesBothCaches) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  auto sched = Scheduler::create(*l.model, *l.tokenizer, options(1, 256, l.model.get()));
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  Collected c;
  auto h =
      (*sched)->submit(request(l, story_prompt(*l.tokenizer), 0.0f, 100, true), collect_into(c));
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*sched)->step().is_ok());
  EXPECT_GT((*sched)->draft_cache().n_blocks_used(), 0);
  (*h)->cancel();
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_EQ(c.finish, FinishReason::kCancelled);
  EXPECT_EQ((*sched)->cache().n_blocks_used(), 0);
  EXPECT_EQ((*sched)->draft_cache().n_blocks_used(), 0);
}

TEST(SchedulerDraftModel, RefusesAnotherVocabularyAndMixedOrMissingDrafts) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  {
    const Loaded foreign_model = load_model_file("qwen2-tiny-q8_0.gguf");  // 1000 ids, not 512
    ASSERT_NE(foreign_model.model, nullptr);
    auto foreign =
        Scheduler::create(*l.model, *l.tokenizer, options(1, 128, foreign_model.model.get()));
    ASSERT_FALSE(foreign.is_ok());
    EXPECT_NE(foreign.status().message().find("vocabulary"), std::string::npos)
        << foreign.status().message();
  }
  const std::vector<int32_t> prompt = story_prompt(*l.tokenizer);
  auto none = Scheduler::create(*l.model, *l.tokenizer, options(1, 128, nullptr));
  ASSERT_TRUE(none.is_ok());
  auto h = (*none)->submit(request(l, prompt, 0.0f, 10, true), nullptr);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("none is loaded"), std::string::npos);
  auto with = Scheduler::create(*l.model, *l.tokenizer, options(1, 128, l.model.get()));
  ASSERT_TRUE(with.is_ok());
  RequestParams both = request(l, prompt, 0.0f, 10, true);
  both.generate.spec_ngram = 2;
  h = (*with)->submit(both, nullptr);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("not both"), std::string::npos);
  RequestParams p_min = request(l, prompt, 0.0f, 10, true);
  p_min.generate.draft_p_min = 1.5f;
  h = (*with)->submit(p_min, nullptr);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("draft_p_min"), std::string::npos);
}

}  // namespace
}  // namespace minfer::engine