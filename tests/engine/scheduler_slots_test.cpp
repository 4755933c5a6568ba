// Scheduler slots (BatchOptions::keep_slots): a finished request's cells stay in its slot and
// serve the next request pinned there; save, erase and restore (engine/state_file.h) move a
// slot's state through a file, and a restored slot gives exactly the tokens and log-probabilities
// of the run it was saved from.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "models/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
namespace {

std::unique_ptr<Scheduler> make_scheduler(const Loaded& l, bool keep_slots) {
  SchedulerOptions o;
  o.n_threads = 2;
  o.n_parallel = 2;
  o.n_ctx = 256;
  o.cache_type = GgmlType::kF16;
  o.keep_slots = keep_slots;
  auto s = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

struct Generation {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  RequestStats stats;
};

Generation generate(Scheduler& s, const std::vector<int32_t>& prompt, int32_t slot) {
  RequestParams p;
  p.prompt = prompt;
  p.generate.temperature = 0.0f;
  p.generate.max_tokens = 6;
  p.generate.top_logprobs = 0;
  p.generate.id_slot = slot;
  Generation r;
  auto handle = s.submit(std::move(p), [&r](RequestEvent&& e) {
    for (const SampledToken& t : e.tokens) {
      r.tokens.push_back(t.token);
      r.logprobs.push_back(t.logprob);
    }
    if (e.done) r.stats = e.stats;
  });
  EXPECT_TRUE(handle.is_ok()) << handle.status().message();
  EXPECT_TRUE(s.run_until_idle().is_ok());
  return r;
}

Result<SlotReply> act(Scheduler& s, SlotAction action, int32_t slot, const std::string& path) {
  std::optional<Result<SlotReply>> out;
  s.slot_action(action, slot, path, [&out](Result<SlotReply> r) { out.emplace(std::move(r)); });
  EXPECT_TRUE(s.run_until_idle().is_ok());
  EXPECT_TRUE(out.has_value());
  return out.has_value() ? std::move(*out)
                         : Result<SlotReply>(make_error(ErrorCode::kInternal, "no reply"));
}

std::vector<int32_t> prompt_of(const Loaded& l) {
  return l.tokenizer->encode(
      "Once upon a time, in a land far away, there lived a small dragon who loved books.", true,
      false);
}

TEST(SchedulerSlots, SaveEraseRestoreGivesTheSameTokensAndLogprobsBitForBit) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  test::TempDir dir;
  auto s = make_scheduler(l, /*keep_slots=*/true);
  ASSERT_NE(s, nullptr);
  const std::vector<int32_t> prompt = prompt_of(l);
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  const Generation first = generate(*s, prompt, 0);
  // The slot keeps the cells: the pinned request reuses all but the last prompt token.
  EXPECT_GT(s->cache().n_blocks_used(), 0);
  const Generation kept = generate(*s, prompt, 0);
  EXPECT_EQ(kept.stats.n_cached, n_prompt - 1);
  EXPECT_EQ(kept.tokens, first.tokens);

  auto saved = act(*s, SlotAction::kSave, 0, dir.file("slot.bin"));
  ASSERT_TRUE(saved.is_ok()) << saved.status().message();
  EXPECT_GE(saved->n_tokens, n_prompt);
  EXPECT_GT(saved->n_bytes, 0);
  auto erased = act(*s, SlotAction::kErase, 0, "");
  ASSERT_TRUE(erased.is_ok());
  EXPECT_EQ(erased->n_tokens, saved->n_tokens);

  // A new scheduler (as after a restart), no prefix cache to help: the restored slot 1 serves
  // the prompt and the reply is the same, bit for bit.
  auto t = make_scheduler(l, /*keep_slots=*/true);
  auto restored = act(*t, SlotAction::kRestore, 1, dir.file("slot.bin"));
  ASSERT_TRUE(restored.is_ok()) << restored.status().message();
  EXPECT_EQ(restored->n_tokens, saved->n_tokens);
  const Generation again = generate(*t, prompt, 1);
  EXPECT_EQ(again.stats.n_cached, n_prompt - 1);
  EXPECT_EQ(again.tokens, first.tokens);
  ASSERT_EQ(again.logprobs.size(), first.logprobs.size());
  EXPECT_EQ(std::memcmp(again.logprobs.data(), first.logprobs.data(),
                        first.logprobs.size() * sizeof(float)),
            0);
}

TEST(SchedulerSlots, ActionsNeedKeepSlotsAnExistingSlotAndAUsableFile) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  test::TempDir dir;
  auto off = make_scheduler(l, /*keep_slots=*/false);
  auto r = act(*off, SlotAction::kSave, 0, dir.file("x.bin"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  // Without keep_slots nothing stays held once requests finish.
  generate(*off, prompt_of(l), -1);
  EXPECT_EQ(off->cache().n_blocks_used(), 0);

  auto s = make_scheduler(l, /*keep_slots=*/true);
  r = act(*s, SlotAction::kSave, 2, dir.file("x.bin"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("slot 2 does not exist"), std::string::npos);
  r = act(*s, SlotAction::kRestore, 0, dir.file("missing.bin"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  RequestParams p;
  p.prompt = {1, 2, 3};
  p.generate.id_slot = 2;
  auto submitted = s->submit(std::move(p), {});
  ASSERT_FALSE(submitted.is_ok());
  EXPECT_EQ(submitted.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace minfer::engine
