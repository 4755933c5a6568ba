// Sliding-window layers in the KV cache: their blocks live in a pool of their own and go back to
// it once no later token can see them, so a long sequence holds a bounded number; what is still
// held reads back as stored; truncating or prefix-matching into released positions never hands
// out cells that are gone.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kv/kv_cache.h"

namespace minfer {
namespace {

constexpr int64_t kWindow = 8;
constexpr int64_t kBlock = 4;
constexpr int64_t kWindowHeadDim = 32;

// Layer 0 slides, layer 1 is global.
KvCacheConfig window_config() {
  KvCacheConfig c;
  c.n_layer = 2;
  c.n_head_kv = 1;
  c.head_dim = kWindowHeadDim;
  c.head_dim_v = kWindowHeadDim;
  c.cell_type = GgmlType::kF32;
  c.block_size = kBlock;
  c.n_ctx = 200;
  c.max_blocks = 50;
  c.swa_layers = {true, false};
  c.window = kWindow;
  return c;
}

// The row stored at (layer, pos): every element pos + 1000 · layer.
std::vector<float> row_of(int64_t il, int64_t pos) {
  return std::vector<float>(static_cast<size_t>(kWindowHeadDim),
                            static_cast<float>(pos + 1000 * il));
}

// Runs positions [from, to) of sequence seq one at a time as a forward step would: reserve,
// store every layer, advance the length.
void run_positions(KvCache& kv, int32_t seq, int64_t from, int64_t to) {
  for (int64_t pos = from; pos < to; ++pos) {
    ASSERT_TRUE(kv.reserve(seq, pos + 1).is_ok());
    for (int64_t il = 0; il < 2; ++il) {
      const std::vector<float> r = row_of(il, pos);
      kv.store(kernels::ref_table, il, seq, pos, r.data(), r.data());
    }
    kv.set_length(seq, pos + 1);
  }
}

float stored_key(const KvCache& kv, int32_t seq, int64_t il, int64_t pos) {
  const int32_t block = kv.block_table(seq, il)[static_cast<size_t>(pos / kBlock)];
  EXPECT_GE(block, 0) << "position " << pos << " of layer " << il << " was released";
  float x = 0.0f;
  std::memcpy(&x, kv.k_block(block, il, 0) + (pos % kBlock) * kv.k_row_bytes(il), sizeof(float));
  return x;
}

TEST(WindowCache, SlidingLayerHoldsAtMostItsWindowOverATenTimesLongerSequence) {
  auto cache = KvCache::create(window_config());
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  for (int64_t pos = 0; pos < 10 * kWindow; ++pos) {
    run_positions(kv, 0, pos, pos + 1);
    EXPECT_LE(kv.n_window_blocks_held(0), kWindow / kBlock + 1) << "after position " << pos;
    // Every position the next token sees is still there, with what was stored.
    for (int64_t p = std::max<int64_t>(0, pos + 1 - kWindow + 1); p <= pos; ++p) {
      EXPECT_EQ(stored_key(kv, 0, 0, p), static_cast<float>(p));
    }
  }
  // The pool reuses what it got back: it never grew past one window's worth.
  EXPECT_LE(kv.n_window_blocks_allocated(), kWindow / kBlock + 1);
  // The global layer keeps every position.
  EXPECT_EQ(kv.block_table(0, 1).size(), static_cast<size_t>(10 * kWindow / kBlock));
  EXPECT_EQ(stored_key(kv, 0, 1, 0), 1000.0f);
}

// A token's attention reads every position of the global layer and the last kWindow of the
// sliding one: 1 head, f32 rows of kWindowHeadDim floats, keys and values.
TEST(WindowCache, SeenBytesCountTheWindowOfSlidingLayersOnly) {
  auto cache = KvCache::create(window_config());
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  const size_t row_pair = 2 * kWindowHeadDim * sizeof(float);
  EXPECT_EQ((*cache)->seen_bytes(0), 0u);
  EXPECT_EQ((*cache)->seen_bytes(5), (5 + 5) * row_pair);
  EXPECT_EQ((*cache)->seen_bytes(kWindow), (kWindow + kWindow) * row_pair);
  EXPECT_EQ((*cache)->seen_bytes(100), (kWindow + 100) * row_pair);
  KvCacheConfig global = window_config();
  global.swa_layers.clear();
  global.window = 0;
  auto flat = KvCache::create(global);
  ASSERT_TRUE(flat.is_ok()) << flat.status().message();
  EXPECT_EQ((*flat)->seen_bytes(100), 200 * row_pair);
}

TEST(WindowCache, TruncateIntoReleasedPositionsKeepsNothing) {
  auto cache = KvCache::create(window_config());
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  run_positions(kv, 0, 0, 40);
  // Position 40 sees 33..39, so blocks up to position 31 are gone. Position 39 sees 32..38, all
  // held: truncating there keeps them.
  kv.truncate(0, 39);
  EXPECT_EQ(kv.length(0), 39);
  EXPECT_EQ(stored_key(kv, 0, 0, 32), 32.0f);
  EXPECT_EQ(stored_key(kv, 0, 1, 5), 1005.0f);
  // Far back: position 20 would see 13..19, long released: the sequence restarts from 0.
  kv.truncate(0, 20);
  EXPECT_EQ(kv.length(0), 0);
  EXPECT_EQ(kv.n_window_blocks_held(0), 0);
  // It runs again from the start and reads what it stores.
  run_positions(kv, 0, 0, 12);
  EXPECT_EQ(stored_key(kv, 0, 0, 11), 11.0f);
}

TEST(WindowCache, SharesNoPrefixes) {
  auto cache = KvCache::create(window_config());
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  std::vector<int32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);
  run_positions(kv, 0, 0, 40);
  kv.commit_prefix(0, tokens);
  EXPECT_EQ(kv.n_blocks_registered(), 0);
  EXPECT_EQ(kv.match_prefix(1, tokens, 39), 0);
}

TEST(WindowCache, FreeSequenceReturnsEveryWindowBlock) {
  auto cache = KvCache::create(window_config());
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  run_positions(kv, 0, 0, 30);
  run_positions(kv, 1, 0, 30);
  const int64_t allocated = kv.n_window_blocks_allocated();
  kv.free_sequence(0);
  kv.free_sequence(1);
  run_positions(kv, 2, 0, 30);
  EXPECT_EQ(kv.n_window_blocks_allocated(), allocated);  // reused, not grown
}

// Gemma 4: the sliding layers' cells have a shape of their own (4 KV heads of 16 against the
// global layer's 1 of 32): each layer stores and reads back its own rows, and the pools' blocks
// and the cells a token reads are sized per layer.
TEST(WindowCache, SlidingLayersHaveTheirOwnHeadCountAndHeadDim) {
  KvCacheConfig c = window_config();
  c.window_n_head_kv = 4;
  c.window_head_dim = 16;
  c.window_head_dim_v = 16;
  auto cache = KvCache::create(c);
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  EXPECT_EQ(kv.n_head_kv(0), 4);
  EXPECT_EQ(kv.head_dim(0), 16);
  EXPECT_EQ(kv.k_row_bytes(0), 16 * sizeof(float));
  EXPECT_EQ(kv.n_head_kv(1), 1);
  EXPECT_EQ(kv.head_dim_v(1), 32);
  EXPECT_EQ(kv.v_row_bytes(1), 32 * sizeof(float));
  ASSERT_TRUE(kv.reserve(0, 3).is_ok());
  std::vector<float> k0(4 * 16), v0(4 * 16), k1(32), v1(32);  // [n_head_kv · head_dim]
  for (size_t i = 0; i < k0.size(); ++i) {
    k0[i] = static_cast<float>(i);
    v0[i] = static_cast<float>(100 + i);
  }
  for (size_t i = 0; i < k1.size(); ++i) {
    k1[i] = static_cast<float>(200 + i);
    v1[i] = static_cast<float>(300 + i);
  }
  kv.store(kernels::ref_table, 0, 0, 2, k0.data(), v0.data());
  kv.store(kernels::ref_table, 1, 0, 2, k1.data(), v1.data());
  kv.set_length(0, 3);
  for (int64_t h = 0; h < 4; ++h) {
    const int32_t block = kv.block_table(0, 0)[0];
    const auto* k = reinterpret_cast<const float*>(kv.k_block(block, 0, h) + 2 * kv.k_row_bytes(0));
    const auto* v = reinterpret_cast<const float*>(kv.v_block(block, 0, h) + 2 * kv.v_row_bytes(0));
    EXPECT_EQ(std::vector<float>(k, k + 16),
              std::vector<float>(k0.begin() + h * 16, k0.begin() + (h + 1) * 16));
    EXPECT_EQ(std::vector<float>(v, v + 16),
              std::vector<float>(v0.begin() + h * 16, v0.begin() + (h + 1) * 16));
  }
  const int32_t block = kv.block_table(0, 1)[0];
  const auto* k = reinterpret_cast<const float*>(kv.k_block(block, 1, 0) + 2 * kv.k_row_bytes(1));
  EXPECT_EQ(std::vector<float>(k, k + 32), k1);
  // One position: 4 heads of 16 keys and values, and 1 head of 32 keys and values.
  EXPECT_EQ(kv.seen_bytes(1), (4 * 2 * 16 + 2 * 32) * sizeof(float));
  EXPECT_EQ(kv.cells_bytes(1), (4 * 2 * 16 + 2 * 32) * sizeof(float));
}

TEST(WindowCache, RejectsALayerListOfTheWrongLength) {
  KvCacheConfig c = window_config();
  c.swa_layers = {true};
  EXPECT_FALSE(KvCache::create(c).is_ok());
}

}  // namespace
}  // namespace minfer
