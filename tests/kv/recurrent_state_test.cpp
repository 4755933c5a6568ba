// The recurrent layers' state beside the KV blocks (kv/recurrent_state.h, kv/kv_cache.h): a
// zeroed slot per sequence from its first reserve, counted in bytes_in_use, given back by
// free_sequence, refused past the slot budget with nothing taken; no cells for recurrent layers;
// truncate below the length keeps nothing; no prefix shared; shift refused; a checkpoint is a
// copy counted against the slot budget, and rewinding to it keeps the cells before and restores
// the state exactly; read_state / write_state move the whole state.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kv/kv_cache.h"

namespace minfer {
namespace {

KvCacheConfig hybrid_config(int64_t max_state_slots) {
  KvCacheConfig c;
  c.n_layer = 3;
  c.n_head_kv = 1;
  c.head_dim = 32;
  c.head_dim_v = 32;
  c.cell_type = GgmlType::kF32;
  c.block_size = 4;
  c.n_ctx = 32;
  c.max_blocks = 16;
  c.recurrent_layers = {true, false, true};
  c.conv_state_floats = 6;
  c.delta_state_floats = 10;
  c.max_state_slots = max_state_slots;
  return c;
}

TEST(RecurrentStateCache, ASequenceHoldsOneZeroedSlotCountedInItsBytes) {
  auto cache = KvCache::create(hybrid_config(2));
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  EXPECT_TRUE(kv.has_recurrent());
  EXPECT_EQ(kv.state_bytes(), 2u * (6 + 10) * sizeof(float));
  // Only the attention layer keeps cells.
  EXPECT_EQ(kv.cells_bytes(4), 4u * 32 * 2 * sizeof(float));
  ASSERT_TRUE(kv.reserve(0, 5).is_ok());
  EXPECT_EQ(kv.n_states_held(), 1);
  EXPECT_EQ(kv.bytes_in_use(), 2 * kv.block_bytes() + kv.state_bytes());
  float* conv = kv.conv_state(0, 2);
  float* delta = kv.delta_state(0, 0);
  EXPECT_TRUE(std::all_of(conv, conv + 6, [](float v) { return v == 0.0f; }));
  EXPECT_TRUE(std::all_of(delta, delta + 10, [](float v) { return v == 0.0f; }));
  std::fill(conv, conv + 6, 1.0f);
  // Layers 0 and 2 have states of their own.
  EXPECT_NE(kv.conv_state(0, 0), conv);
  kv.free_sequence(0);
  EXPECT_EQ(kv.n_states_held(), 0);
  EXPECT_EQ(kv.bytes_in_use(), 0u);
  // A slot handed out again starts from zero.
  ASSERT_TRUE(kv.reserve(1, 1).is_ok());
  const float* again = kv.conv_state(1, 2);
  EXPECT_TRUE(std::all_of(again, again + 6, [](float v) { return v == 0.0f; }));
}

TEST(RecurrentStateCache, PastTheSlotBudgetNothingIsTaken) {
  auto cache = KvCache::create(hybrid_config(1));
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  ASSERT_TRUE(kv.reserve(0, 4).is_ok());
  const int64_t free_blocks = kv.n_blocks_free();
  const Status st = kv.reserve(1, 4);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("recurrent state"), std::string::npos) << st.message();
  EXPECT_FALSE(kv.has_sequence(1));
  EXPECT_EQ(kv.n_blocks_free(), free_blocks);
  EXPECT_EQ(kv.n_states_held(), 1);
}

TEST(RecurrentStateCache, DroppingPositionsKeepsNothingAndBlocksAloneShareNoPrefix) {
  auto cache = KvCache::create(hybrid_config(2));
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(kv.reserve(0, 9).is_ok());
  kv.set_length(0, 9);
  std::fill(kv.delta_state(0, 0), kv.delta_state(0, 0) + 10, 2.0f);
  // Its full blocks are registered, but without a checkpoint of the state nothing can resume.
  kv.commit_prefix(0, tokens);
  EXPECT_EQ(kv.n_blocks_registered(), 2);
  EXPECT_EQ(kv.match_prefix(1, tokens, 8), 0);
  // Truncating at the length keeps everything.
  kv.truncate(0, 9);
  EXPECT_EQ(kv.length(0), 9);
  EXPECT_EQ(kv.delta_state(0, 0)[0], 2.0f);
  const Status shifted =
      kv.shift(kernels::ref_table, 0, 1, 2, [](int64_t, int64_t, int64_t, float*) {});
  ASSERT_FALSE(shifted.is_ok());
  EXPECT_NE(shifted.message().find("recurrent"), std::string::npos) << shifted.message();
  EXPECT_EQ(kv.length(0), 9);
  // Below the length: the state cannot forget tokens, so nothing is kept and it is zeroed.
  kv.truncate(0, 5);
  EXPECT_EQ(kv.length(0), 0);
  EXPECT_EQ(kv.delta_state(0, 0)[0], 0.0f);
}

TEST(RecurrentStateCache, RewindingToACheckpointKeepsTheCellsBeforeAndItsState) {
  auto cache = KvCache::create(hybrid_config(2));
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  ASSERT_TRUE(kv.reserve(0, 6).is_ok());
  kv.set_length(0, 6);
  std::vector<float> at6(static_cast<size_t>(kv.state_floats()));
  for (size_t i = 0; i < at6.size(); ++i) at6[i] = static_cast<float>(i) + 0.5f;
  kv.write_state(0, at6);
  const int32_t checkpoint = kv.checkpoint_state(0);
  ASSERT_GE(checkpoint, 0);
  EXPECT_EQ(kv.n_states_held(), 2);
  EXPECT_EQ(kv.bytes_in_use(), 2 * kv.block_bytes() + 2 * kv.state_bytes());
  // Past the budget of 2 slots: no second checkpoint.
  EXPECT_EQ(kv.checkpoint_state(0), -1);
  // Three more positions (drafts) advance the state.
  ASSERT_TRUE(kv.reserve(0, 9).is_ok());
  kv.set_length(0, 9);
  std::fill(kv.delta_state(0, 2), kv.delta_state(0, 2) + 10, -1.0f);
  kv.rewind(0, 6, checkpoint);
  EXPECT_EQ(kv.length(0), 6);
  EXPECT_EQ(kv.n_reserved(0), 8);  // the block of positions 4..7 stays
  EXPECT_EQ(kv.n_states_held(), 1);
  std::vector<float> got(at6.size());
  kv.read_state(0, got);
  EXPECT_EQ(got, at6);
}

// A checkpoint kept with the block that ends a sequence's length lets a new sequence of the same
// prefix resume from it; at most max_prefix_states are kept (least recently used first), and one
// goes with its block when the pool evicts the block.
TEST(RecurrentStateCache, APrefixBlockKeepsAStateCheckpointThatANewSequenceResumesFrom) {
  KvCacheConfig c = hybrid_config(2);
  c.max_blocks = 5;
  c.max_prefix_states = 1;
  auto cache = KvCache::create(c);
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(kv.reserve(0, 8).is_ok());
  kv.set_length(0, 8);
  std::vector<float> at8(static_cast<size_t>(kv.state_floats()), 3.0f);
  kv.write_state(0, at8);
  kv.commit_prefix(0, tokens, /*keep_state=*/true);
  EXPECT_EQ(kv.n_prefix_states(), 1);
  EXPECT_EQ(kv.n_states_held(), 2);
  kv.free_sequence(0);
  EXPECT_EQ(kv.n_states_held(), 1);  // the checkpoint stays with its parked block
  // A prefix of 4 has no checkpoint at its end: nothing; of 8 (of 9 allowed), the whole run.
  EXPECT_EQ(kv.match_prefix(1, tokens, 7), 0);
  EXPECT_EQ(kv.match_prefix(1, tokens, 9), 8);
  std::vector<float> got(at8.size());
  kv.read_state(1, got);
  EXPECT_EQ(got, at8);
  kv.free_sequence(1);
  // Another prefix's checkpoint takes the only place.
  const std::vector<int32_t> other = {7, 7, 7, 7, 8, 8, 8, 8};
  ASSERT_TRUE(kv.reserve(2, 8).is_ok());
  kv.set_length(2, 8);
  kv.commit_prefix(2, other, /*keep_state=*/true);
  EXPECT_EQ(kv.n_prefix_states(), 1);
  EXPECT_EQ(kv.match_prefix(3, tokens, 9), 0);
  kv.free_sequence(3);
  kv.free_sequence(2);
  // Taking every block evicts the parked ones, and the checkpoint with its block.
  ASSERT_TRUE(kv.reserve(4, 20).is_ok());
  EXPECT_EQ(kv.n_prefix_states(), 0);
  EXPECT_EQ(kv.n_states_held(), 1);
}

TEST(RecurrentStateCache, BadRecurrentConfigIsRefused) {
  KvCacheConfig c = hybrid_config(1);
  c.recurrent_layers = {true, false};
  auto cache = KvCache::create(c);
  ASSERT_FALSE(cache.is_ok());
  EXPECT_NE(cache.status().message().find("recurrent layers"), std::string::npos);
}

}  // namespace
}  // namespace minfer
