// Qwen3.5's recurrent state (gated delta-net layers, kv/recurrent_state.h) through the scheduler:
// sequences batched at different positions, chunked under a small token budget, with the prefix
// cache on and two of them the same prompt (what n > 1 runs), give exactly what each gives alone;
// a kept slot continues its state when the new prompt extends it and computes again when it
// does not; a slot saved to a state file and restored in a fresh scheduler continues as a plain
// run; a request sharing a prefix resumes from the state checkpoint kept with the prefix's
// blocks; speculative decoding (prompt lookup, draft model) gives plain greedy tokens; and what
// would drop tokens from a state refuses clearly (context shift, recomputing a position).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/runtime.h"
#include "engine/scheduler.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

// A namespace of its own: the unity build puts this file beside other tests' helpers.
namespace minfer::engine::recurrent_state_test {
namespace {

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

Loaded load(const char* name) {
  Loaded l;
  auto model = Model::load(test::test_data_path(std::string("models/") + name));
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  if (!model.is_ok()) return l;
  l.model = std::move(*model);
  auto tok = Tokenizer::from_gguf(l.model->file());
  EXPECT_TRUE(tok.is_ok()) << tok.status().message();
  if (tok.is_ok()) l.tokenizer = std::move(*tok);
  return l;
}

std::vector<int32_t> prompt_of(int64_t n, int32_t seed) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    p[static_cast<size_t>(i)] = (seed + 37 * static_cast<int32_t>(i)) % 700 + 5;
  return p;
}

SchedulerOptions options(int n_parallel) {
  SchedulerOptions o;
  o.n_parallel = n_parallel;
  o.n_ctx = 128;
  o.block_size = 16;
  o.n_threads = 2;
  return o;
}

// One slot whose finished conversation stays in the cache (the server's --keep-slots).
std::unique_ptr<Scheduler> keep_slots_scheduler(const Loaded& l) {
  SchedulerOptions o = options(1);
  o.keep_slots = true;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  return sched.is_ok() ? std::move(*sched) : nullptr;
}

std::vector<Collected> run(const Loaded& l, const std::vector<std::vector<int32_t>>& prompts,
                           const SchedulerOptions& o, int64_t max_tokens = 12) {
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  if (!sched.is_ok()) return {};
  std::vector<RequestParams> requests;
  for (const auto& p : prompts) requests.push_back(greedy_request(p, max_tokens));
  std::vector<Collected> out = submit_collecting(**sched, std::move(requests));
  EXPECT_TRUE((*sched)->run_until_idle().is_ok());
  // Only checkpoints kept with prefix blocks stay.
  EXPECT_EQ((*sched)->cache().n_states_held(), (*sched)->cache().n_prefix_states())
      << "a finished sequence kept its state";
  return out;
}

// The chunked delta rule (graph/delta_net.h) sums in another order than the token-by-token
// recurrence, so a sequence's bits depend on where its tokens were cut into batches — never on
// what else a batch holds or on the thread count. Replies whose prompts were cut differently
// agree token for token, and in log-probability within this bound (the largest difference
// measured on these tests is 8e-6).
constexpr float kCutOrderLogprobBound = 1e-4f;

void expect_same_reply(const Collected& got, const Collected& want, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  for (size_t i = 0; i < got.logprobs.size(); ++i) {
    EXPECT_NEAR(got.logprobs[i], want.logprobs[i], kCutOrderLogprobBound)
        << what << ", token " << i;
  }
}

TEST(RecurrentState, BatchedChunkedSequencesMatchEachAlone) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name : {"qwen35-tiny-f32.gguf", "qwen35moe-tiny-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    const Loaded l = load(name);
    ASSERT_NE(l.tokenizer, nullptr);
    const std::vector<std::vector<int32_t>> prompts = {prompt_of(20, 1), prompt_of(45, 2),
                                                       prompt_of(20, 1)};
    SchedulerOptions together = options(3);
    together.token_budget = 8;  // prefills in chunks, beside the others' decodes
    together.prefix_cache = true;
    const std::vector<Collected> batched = run(l, prompts, together);
    ASSERT_EQ(batched.size(), prompts.size());
    SchedulerOptions alone_in_pieces = options(1);
    alone_in_pieces.token_budget = together.token_budget;
    for (size_t i = 0; i < prompts.size(); ++i) {
      // Pieces of at most 8 tokens run the recurrence token by token however the batch is cut:
      // the same bits alone as beside the others.
      const std::vector<Collected> alone = run(l, {prompts[i]}, alone_in_pieces);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(batched[i].tokens, alone[0].tokens) << "prompt " << i;
      EXPECT_EQ(batched[i].logprobs, alone[0].logprobs) << "prompt " << i;
      // The whole prompt in one batch takes the chunked form.
      const std::vector<Collected> whole = run(l, {prompts[i]}, options(1));
      ASSERT_EQ(whole.size(), 1u);
      expect_same_reply(batched[i], whole[0], "prompt " + std::to_string(i) + " in one batch");
      // No prefix is shared: the same prompts ran together, before either kept a checkpoint.
      EXPECT_EQ(batched[i].stats.n_cached, 0) << "prompt " << i;
    }
    EXPECT_EQ(batched[0].tokens, batched[2].tokens);
  }
}

// n > 1 (the server submits the same prompt once per choice) and preemption: every branch and
// every preempted sequence gives its plain run's tokens; preemptions and a cancellation give
// every sequence's state slot back (the pool's free count returns to full, less the bounded
// checkpoints kept with prefix blocks).
TEST(RecurrentState, BranchesPreemptionAndCancellationGiveBackEveryStateSlot) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load("qwen35-tiny-f32.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  const std::vector<std::vector<int32_t>> prompts = {prompt_of(30, 1), prompt_of(30, 1),
                                                     prompt_of(20, 6)};
  SchedulerOptions o = options(3);
  o.n_ctx = 64;
  o.n_ctx_total = 64;  // 4 blocks of 16 for three sequences that each need 2-4
  o.token_budget = 16;
  o.prefix_cache = true;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  const KvCache& kv = (*sched)->cache();
  const int64_t all_free = kv.config().max_state_slots + kv.config().max_prefix_states;
  EXPECT_EQ(kv.n_states_free(), all_free);
  // The slots sequences hold (the others keep prefix checkpoints).
  auto in_sequences = [&] { return kv.n_states_held() - kv.n_prefix_states(); };
  std::vector<RequestParams> requests;
  for (const auto& p : prompts) requests.push_back(greedy_request(p, 30));
  const std::vector<Collected> together = submit_collecting(**sched, std::move(requests));
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_GT((*sched)->stats().n_preemptions, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<Collected> alone = run(l, {prompts[i]}, options(1), 30);
    ASSERT_EQ(alone.size(), 1u);
    expect_same_reply(together[i], alone[0], "request " + std::to_string(i));
  }
  EXPECT_EQ(together[0].tokens, together[1].tokens);
  EXPECT_EQ(in_sequences(), 0);
  EXPECT_EQ(kv.n_states_free(), all_free - kv.n_prefix_states());

  // A request cancelled while it runs gives its slot back at the next step.
  Collected kept;
  Collected cancelled;
  ASSERT_TRUE((*sched)->submit(greedy_request(prompts[2], 20), collect_into(kept)).is_ok());
  auto handle = (*sched)->submit(greedy_request(prompts[0], 20), collect_into(cancelled));
  ASSERT_TRUE(handle.is_ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*sched)->step().is_ok());
  EXPECT_EQ(in_sequences(), 2);
  (*handle)->cancel();
  ASSERT_TRUE((*sched)->step().is_ok());
  EXPECT_TRUE(cancelled.done);
  EXPECT_EQ(cancelled.finish, FinishReason::kCancelled);
  EXPECT_EQ(in_sequences(), 1);
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_TRUE(kept.done);
  EXPECT_EQ(in_sequences(), 0);
  EXPECT_EQ(kv.n_states_free(), all_free - kv.n_prefix_states());
  EXPECT_LE(kv.n_prefix_states(), kv.config().max_prefix_states);
}

// One greedy request's reply on `sched`.
Collected ask(Scheduler& sched, std::vector<int32_t> prompt, int64_t max_tokens) {
  std::vector<RequestParams> r;
  r.push_back(greedy_request(std::move(prompt), max_tokens));
  std::vector<Collected> out = submit_collecting(sched, std::move(r));
  EXPECT_TRUE(sched.run_until_idle().is_ok());
  return out.empty() ? Collected{} : out[0];
}

// What a new scheduler replies to `prompt` (the whole prompt in one batch), checked against
// `got` token for token.
void expect_fresh_reply(const Loaded& l, const std::vector<int32_t>& prompt, const Collected& got) {
  auto fresh = Scheduler::create(*l.model, *l.tokenizer, options(1));
  ASSERT_TRUE(fresh.is_ok());
  const Collected want = ask(**fresh, prompt, static_cast<int64_t>(got.tokens.size()));
  expect_same_reply(got, want, "a fresh scheduler's reply");
}

TEST(RecurrentState, AKeptSlotContinuesItsStateOrComputesAgain) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load("qwen35-tiny-f32.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  auto sched = keep_slots_scheduler(l);
  ASSERT_NE(sched, nullptr);
  const std::vector<int32_t> first = prompt_of(20, 3);
  const Collected reply = ask(*sched, first, 6);
  ASSERT_EQ(reply.tokens.size(), 6u);
  // The next turn extends the conversation: the slot's state holds all but the last token.
  std::vector<int32_t> next = first;
  next.insert(next.end(), reply.tokens.begin(), reply.tokens.end());
  for (int32_t t : prompt_of(7, 9)) next.push_back(t);
  const Collected continued = ask(*sched, next, 6);
  EXPECT_GT(continued.stats.n_cached, 20);
  expect_fresh_reply(l, next, continued);
  // A prompt that leaves the kept tokens midway cannot resume the state: computed again.
  std::vector<int32_t> other = first;
  other.resize(10);
  for (int32_t t : prompt_of(9, 11)) other.push_back(t);
  const Collected diverged = ask(*sched, other, 6);
  EXPECT_EQ(diverged.stats.n_cached, 0);
  expect_fresh_reply(l, other, diverged);
}

// A slot saved after a prompt and restored into a fresh scheduler (as after a restart) continues
// the conversation from its recurrent state: the reply is an uninterrupted plain run's, token for
// token, and only the new tokens are computed.
TEST(RecurrentState, ASlotSavedAndRestoredInAFreshRuntimeContinuesAsAPlainRun) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name : {"qwen35-tiny-f32.gguf", "qwen35-tiny-q8_0.gguf"}) {
    SCOPED_TRACE(name);
    const Loaded l = load(name);
    ASSERT_NE(l.tokenizer, nullptr);
    const std::vector<int32_t> first = prompt_of(24, 5);
    const std::string path = ::testing::TempDir() + "/q35_slot.state";
    Collected reply;
    {
      auto sched = keep_slots_scheduler(l);
      ASSERT_NE(sched, nullptr);
      reply = ask(*sched, first, 5);
      ASSERT_EQ(reply.tokens.size(), 5u);
      auto saved = sched->slot_table().act(SlotAction::kSave, 0, path);
      ASSERT_TRUE(saved.is_ok()) << saved.status().message();
      // The slot holds the prompt and every reply token but the last (never fed back).
      EXPECT_EQ(saved->n_tokens, 24 + 4);
    }
    auto sched = keep_slots_scheduler(l);
    ASSERT_NE(sched, nullptr);
    auto restored = sched->slot_table().act(SlotAction::kRestore, 0, path);
    ASSERT_TRUE(restored.is_ok()) << restored.status().message();
    EXPECT_EQ(sched->cache().n_states_held(), 1);
    std::vector<int32_t> next = first;
    next.insert(next.end(), reply.tokens.begin(), reply.tokens.end());
    for (int32_t t : prompt_of(6, 13)) next.push_back(t);
    const Collected continued = ask(*sched, next, 8);
    EXPECT_EQ(continued.stats.n_cached, 24 + 4);
    expect_fresh_reply(l, next, continued);
  }
}

// A prompt whose greedy reply repeats parts of it and of itself: prompt lookup's drafts are
// accepted where it does and rejected elsewhere.
std::vector<int32_t> repeating_prompt(const Loaded& l) {
  return l.tokenizer->encode("The cat sat on the mat. The cat sat on the mat.", true, false);
}

RequestParams speculating(std::vector<int32_t> prompt, int64_t max_tokens, bool by_model) {
  RequestParams p = greedy_request(std::move(prompt), max_tokens);
  p.generate.draft_max = 5;
  if (by_model) {
    p.spec_draft_model = true;
  } else {
    p.generate.spec_ngram = 1;
  }
  return p;
}

// Speculative decoding rolls a recurrent state back exactly (a checkpoint before the drafts,
// rewound to when one is rejected): drafts by prompt lookup, or by the q8_0 model drafting for
// the f32 one, give plain greedy decoding's tokens and log-probabilities, beside another
// sequence, with the whole budget or a small one; drafts are both accepted and rejected; no
// state slot (sequence or checkpoint) stays held, in the model's cache or the draft's.
TEST(RecurrentState, SpeculativeDecodingGivesPlainGreedyTokens) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load("qwen35-tiny-f32.gguf");
  const Loaded draft = load("qwen35-tiny-q8_0.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  ASSERT_NE(draft.model, nullptr);
  const std::vector<int32_t> prompt = repeating_prompt(l);
  const std::vector<int32_t> other = prompt_of(15, 4);
  for (const bool by_model : {false, true}) {
    int64_t accepted = 0;
    int64_t rejected = 0;
    for (const int64_t budget : {int64_t{512}, int64_t{5}}) {
      SCOPED_TRACE(std::string(by_model ? "draft model" : "prompt lookup") + " budget " +
                   std::to_string(budget));
      SchedulerOptions o = options(2);
      o.token_budget = budget;
      o.draft_model = draft.model.get();
      const std::vector<Collected> plain = run(l, {prompt, other}, o, 80);
      auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
      ASSERT_TRUE(sched.is_ok()) << sched.status().message();
      std::vector<RequestParams> requests;
      requests.push_back(speculating(prompt, 80, by_model));
      requests.push_back(greedy_request(other, 80));
      const std::vector<Collected> spec = submit_collecting(**sched, std::move(requests));
      ASSERT_TRUE((*sched)->run_until_idle().is_ok());
      ASSERT_EQ(spec.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "request " << i;
        EXPECT_EQ(spec[i].logprobs, plain[i].logprobs) << "request " << i;
      }
      const RequestStats& st = spec[0].stats;
      accepted += st.n_draft_accepted;
      rejected += st.n_drafted - st.n_draft_accepted;
      EXPECT_EQ((*sched)->cache().n_states_held(), (*sched)->cache().n_prefix_states());
      EXPECT_EQ((*sched)->draft_cache().n_states_held(), 0);
    }
    EXPECT_GT(accepted, 0) << (by_model ? "draft model" : "prompt lookup");
    EXPECT_GT(rejected, 0) << (by_model ? "draft model" : "prompt lookup");
  }
}

// Prefix reuse across requests: the state at the end of a prompt's last full block is kept with
// that block, and a later request that shares the prefix (the same prompt, as n > 1's other
// choices; a longer one) resumes there and replies as a cold run. The kept checkpoints are
// bounded (one per slot, least recently used dropped first).
TEST(RecurrentState, ARequestSharingAPrefixResumesFromItsStateCheckpoint) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load("qwen35-tiny-f32.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  SchedulerOptions o = options(1);
  o.prefix_cache = true;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  const KvCache& kv = (*sched)->cache();
  const std::vector<int32_t> first = prompt_of(40, 7);  // its last full block ends at 32
  const Collected cold = ask(**sched, first, 8);
  EXPECT_EQ(cold.stats.n_cached, 0);
  EXPECT_EQ(kv.n_prefix_states(), 1);
  EXPECT_EQ(kv.n_states_held(), 1);  // the checkpoint alone
  const Collected again = ask(**sched, first, 8);
  EXPECT_EQ(again.stats.n_cached, 32);
  EXPECT_EQ(again.tokens, cold.tokens);
  EXPECT_EQ(again.logprobs, cold.logprobs);
  std::vector<int32_t> longer = first;
  for (int32_t t : prompt_of(12, 3)) longer.push_back(t);
  const Collected extended = ask(**sched, longer, 8);
  EXPECT_EQ(extended.stats.n_cached, 32);
  expect_fresh_reply(l, longer, extended);
  // One checkpoint per slot: the longer prompt's (at 48) took the first one's place.
  EXPECT_EQ(kv.n_prefix_states(), 1);
  EXPECT_EQ(ask(**sched, first, 8).stats.n_cached, 0);
  EXPECT_EQ(kv.n_states_held(), kv.n_prefix_states());
}

void expect_refused(const Status& st, const std::string& what) {
  EXPECT_FALSE(st.is_ok()) << what;
  EXPECT_NE(st.message().find("recurrent"), std::string::npos) << what << ": " << st.message();
}

TEST(RecurrentState, FeaturesThatDropTokensAreRefused) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load("qwen35-tiny-f32.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  auto sched = keep_slots_scheduler(l);
  ASSERT_NE(sched, nullptr);
  RequestParams shift = greedy_request(prompt_of(10, 1), 4);
  shift.generate.context_shift = true;
  expect_refused(sched->submit(shift, [](RequestEvent&&) {}).status(), "context shift");
  // The runtime: a position computed again, and a context shift.
  RuntimeOptions ro;
  ro.n_ctx = 32;
  ro.n_threads = 1;
  auto runtime = Runtime::create(*l.model, ro);
  ASSERT_TRUE(runtime.is_ok());
  Batch batch;
  for (int32_t p = 0; p < 6; ++p) batch.add(10 + p, p, 0, p == 5);
  auto first = (*runtime)->step(batch);
  ASSERT_TRUE(first.is_ok());
  const std::vector<float> first_logits(first->begin(), first->end());
  Batch again;
  again.add(12, 4, 0, true);
  expect_refused((*runtime)->step(again).status(), "recomputing position 4");
  EXPECT_EQ((*runtime)->cache().length(0), 6);
  expect_refused((*runtime)->shift_context(0, 1, 2), "shift");
  // Keeping fewer positions than the state holds keeps none: the caller computes again.
  (*runtime)->cache().truncate(0, 3);
  EXPECT_EQ((*runtime)->cache().length(0), 0);
  Batch restart;
  for (int32_t p = 0; p < 6; ++p) restart.add(10 + p, p, 0, p == 5);
  auto logits = (*runtime)->step(restart);
  ASSERT_TRUE(logits.is_ok()) << logits.status().message();
  EXPECT_EQ(std::vector<float>(logits->begin(), logits->end()), first_logits)
      << "the state was not cleared";
}

}  // namespace
}  // namespace minfer::engine::recurrent_state_test
