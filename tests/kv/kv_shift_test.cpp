// KvCache::shift (context shift): which cells move where, which keys are handed to the rotation,
// copy-on-write of shared prefix blocks, sliding-window tables, and the errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kv/kv_cache.h"

namespace minfer {
namespace {

constexpr int64_t kHeadDim = 32;

KvCacheConfig shift_config() {
  KvCacheConfig c;
  c.n_layer = 2;
  c.n_head_kv = 2;
  c.head_dim = kHeadDim;
  c.head_dim_v = kHeadDim;
  c.cell_type = GgmlType::kF32;
  c.block_size = 4;
  c.n_ctx = 32;
  c.max_blocks = 24;
  return c;
}

// Row value of (layer, head, pos, K or V): distinct for every cell, first element only varies.
float cell_value(int64_t il, int64_t h, int64_t pos, bool is_v) {
  return static_cast<float>(1000 * il + 100 * h + pos) + (is_v ? 0.5f : 0.0f);
}

// Stores positions [0, n) of `seq`: every element of a row is its cell_value.
void fill(KvCache& kv, int32_t seq, int64_t n) {
  ASSERT_TRUE(kv.reserve(seq, n).is_ok());
  const KvCacheConfig& c = kv.config();
  std::vector<float> k(static_cast<size_t>(c.n_head_kv * kHeadDim));  // [n_head_kv][head_dim]
  std::vector<float> v(k.size());                                     // [n_head_kv][head_dim]
  for (int64_t pos = 0; pos < n; ++pos) {
    for (int64_t il = 0; il < c.n_layer; ++il) {
      for (int64_t h = 0; h < c.n_head_kv; ++h) {
        for (int64_t d = 0; d < kHeadDim; ++d) {
          k[static_cast<size_t>(h * kHeadDim + d)] = cell_value(il, h, pos, false);
          v[static_cast<size_t>(h * kHeadDim + d)] = cell_value(il, h, pos, true);
        }
      }
      if (kv.length(seq) <= pos) kv.store(kernels::ref_table, il, seq, pos, k.data(), v.data());
    }
  }
  kv.set_length(seq, n);
}

// The first element of the row at (seq, il, h, pos).
float first_of(const KvCache& kv, int32_t seq, int64_t il, int64_t h, int64_t pos, bool is_v) {
  const int64_t bs = kv.config().block_size;
  const int32_t block = kv.block_table(seq, il)[static_cast<size_t>(pos / bs)];
  const uint8_t* base = is_v ? kv.v_block(block, il, h) : kv.k_block(block, il, h);
  const size_t row = is_v ? kv.v_row_bytes(il) : kv.k_row_bytes(il);
  return reinterpret_cast<const float*>(base + static_cast<size_t>(pos % bs) * row)[0];
}

// A rotation that marks each key with the distance it moved (adds 0.25 per position).
KvCache::KeyRotation marking_rotation(std::vector<int64_t>& calls) {
  return [&calls](int64_t il, int64_t old_pos, int64_t new_pos, float* k) {
    calls.push_back(il * 10000 + old_pos * 100 + new_pos);
    for (int64_t i = 0; i < 2 * kHeadDim; ++i)
      k[i] += 0.25f * static_cast<float>(old_pos - new_pos);
  };
}

// A cache of `config` with positions [0, n) of sequence 0 filled.
std::unique_ptr<KvCache> filled(const KvCacheConfig& config, int64_t n) {
  auto cache = KvCache::create(config);
  EXPECT_TRUE(cache.is_ok()) << cache.status().message();
  if (!cache.is_ok()) return nullptr;
  fill(**cache, 0, n);
  return std::move(cache).value();
}

TEST(KvShift, MovesLaterCellsDownRotatingKeysOnly) {
  const std::unique_ptr<KvCache> cache = filled(shift_config(), 18);
  ASSERT_NE(cache, nullptr);
  KvCache& kv = *cache;
  std::vector<int64_t> calls;
  ASSERT_TRUE(kv.shift(kernels::ref_table, 0, 3, 7, marking_rotation(calls)).is_ok());
  EXPECT_EQ(kv.length(0), 11);
  EXPECT_EQ(kv.block_table(0).size(), 3u);  // 11 positions in blocks of 4
  ASSERT_EQ(calls.size(), 2u * 8u);         // 2 layers, new positions 3..10
  EXPECT_EQ(calls.front(), 0 * 10000 + 10 * 100 + 3);
  for (int64_t il = 0; il < 2; ++il) {
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t pos = 0; pos < 3; ++pos) {
        EXPECT_EQ(first_of(kv, 0, il, h, pos, false), cell_value(il, h, pos, false));
        EXPECT_EQ(first_of(kv, 0, il, h, pos, true), cell_value(il, h, pos, true));
      }
      for (int64_t pos = 3; pos < 11; ++pos) {
        EXPECT_EQ(first_of(kv, 0, il, h, pos, false), cell_value(il, h, pos + 7, false) + 1.75f);
        EXPECT_EQ(first_of(kv, 0, il, h, pos, true), cell_value(il, h, pos + 7, true));
      }
    }
  }
}

// A block another sequence holds (a shared prefix) is copied before it is written: the other
// sequence's cells stay as they were, and the written block is no longer registered.
TEST(KvShift, CopiesSharedPrefixBlocksFirst) {
  const std::unique_ptr<KvCache> cache = filled(shift_config(), 16);
  ASSERT_NE(cache, nullptr);
  KvCache& kv = *cache;
  std::vector<int32_t> tokens(16);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(10 + i);
  kv.commit_prefix(0, tokens);
  ASSERT_EQ(kv.match_prefix(1, tokens, 16), 16);
  ASSERT_EQ(kv.block_table(0), kv.block_table(1));
  std::vector<int64_t> calls;
  ASSERT_TRUE(kv.shift(kernels::ref_table, 1, 4, 6, marking_rotation(calls)).is_ok());
  EXPECT_EQ(kv.length(1), 10);
  // The kept block stays shared; the written ones are the shifted sequence's own.
  EXPECT_EQ(kv.block_table(1)[0], kv.block_table(0)[0]);
  EXPECT_NE(kv.block_table(1)[1], kv.block_table(0)[1]);
  EXPECT_NE(kv.block_table(1)[2], kv.block_table(0)[2]);
  for (int64_t pos = 0; pos < 16; ++pos) {
    EXPECT_EQ(first_of(kv, 0, 1, 1, pos, false), cell_value(1, 1, pos, false));
  }
  EXPECT_EQ(first_of(kv, 1, 1, 1, 4, false), cell_value(1, 1, 10, false) + 1.5f);
  EXPECT_EQ(first_of(kv, 1, 1, 1, 9, true), cell_value(1, 1, 15, true));
  // Sequence 0's prefix is still the registered one.
  kv.free_sequence(1);
  EXPECT_EQ(kv.match_prefix(2, tokens, 16), 16);
}

TEST(KvShift, RefusesBadCountsChangingNothing) {
  const std::unique_ptr<KvCache> cache = filled(shift_config(), 10);
  ASSERT_NE(cache, nullptr);
  KvCache& kv = *cache;
  std::vector<int64_t> calls;
  for (const auto& [keep, discard] :
       std::vector<std::pair<int64_t, int64_t>>{{-1, 2}, {2, 0}, {5, 6}, {0, 11}}) {
    const Status st = kv.shift(kernels::ref_table, 0, keep, discard, marking_rotation(calls));
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << keep << " " << discard;
    EXPECT_NE(st.message().find("context shift"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(calls.empty());
  EXPECT_EQ(kv.length(0), 10);
  EXPECT_EQ(kv.shift(kernels::ref_table, 7, 0, 1, marking_rotation(calls)).code(),
            ErrorCode::kInvalidArgument);  // an unknown sequence holds nothing
}

// Sliding layers move only the positions the next token can see, into window blocks taken as
// needed; global layers move them all.
TEST(KvShift, SlidingLayersMoveTheirWindowOnly) {
  KvCacheConfig c = shift_config();
  c.swa_layers = {true, false};
  c.window = 4;
  const std::unique_ptr<KvCache> cache = filled(c, 24);
  ASSERT_NE(cache, nullptr);
  KvCache& kv = *cache;
  std::vector<int64_t> calls;
  ASSERT_TRUE(kv.shift(kernels::ref_table, 0, 2, 11, marking_rotation(calls)).is_ok());
  EXPECT_EQ(kv.length(0), 13);
  // Global layer 1: new positions 2..12; sliding layer 0: the window of position 13, 10..12.
  EXPECT_EQ(calls.size(), 11u + 3u);
  for (int64_t pos = 10; pos < 13; ++pos) {
    EXPECT_EQ(first_of(kv, 0, 0, 1, pos, false), cell_value(0, 1, pos + 11, false) + 2.75f);
    EXPECT_EQ(first_of(kv, 0, 0, 1, pos, true), cell_value(0, 1, pos + 11, true));
  }
  for (int64_t pos = 2; pos < 13; ++pos) {
    EXPECT_EQ(first_of(kv, 0, 1, 0, pos, true), cell_value(1, 0, pos + 11, true));
  }
  // Blocks wholly before the window went back to the pool.
  EXPECT_EQ(kv.block_table(0, 0)[0], -1);
  EXPECT_LE(kv.n_window_blocks_held(0), 2);
}

}  // namespace
}  // namespace minfer
