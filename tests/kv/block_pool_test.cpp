// One pool of KV blocks alone (kv/block_pool.h): ids handed out lowest first up to the budget,
// holds counted, a block's cells where the segment layout puts them, copies of whole blocks.
#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kv/kv_layout_util.h"

namespace minfer {
namespace {

// 2 layers of 2 KV heads: a block of 4 positions holds 2 · 2 · 4 f32 rows of 4, keys and values.
KvBlockPool make_pool(int64_t max_blocks) {
  const KvLayout layout = small_kv_layout(2, 2);
  auto pool = KvBlockPool::create(layout, layout.main, 2, max_blocks, "main");
  EXPECT_TRUE(pool.is_ok()) << pool.status().message();
  return std::move(pool).value();
}

TEST(KvBlockPool, HandsOutTheLowestFreeIdUpToItsBudget) {
  KvBlockPool pool = make_pool(4);
  EXPECT_EQ(pool.block_bytes(), size_t{2 * 2 * 2 * 4 * 16});
  EXPECT_EQ(pool.n_allocated(), 0);  // nothing taken before it is asked for
  EXPECT_EQ(pool.n_free(), 4);
  for (int32_t id = 0; id < 4; ++id) EXPECT_EQ(pool.take(), id);
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_EQ(pool.n_held(), 4);
  for (const int32_t id : {3, 1, 2}) {
    ASSERT_TRUE(pool.release(id));
    pool.recycle(id);
  }
  EXPECT_EQ(pool.n_free(), 3);
  EXPECT_EQ(pool.n_held(), 1);
  EXPECT_EQ(pool.take(), 1);
  EXPECT_EQ(pool.take(), 2);
  EXPECT_EQ(pool.n_allocated(), 4);
}

// A block held twice is unheld only by its second release; one released and not recycled (a
// parked prefix block) is not handed out again, and holding it again says no one held it.
TEST(KvBlockPool, HoldsAreCountedAndAParkedBlockIsNotFree) {
  KvBlockPool pool = make_pool(2);
  const int32_t id = pool.take();
  EXPECT_FALSE(pool.hold(id));
  EXPECT_EQ(pool.refs(id), 2);
  EXPECT_EQ(pool.n_held(), 1);
  EXPECT_FALSE(pool.release(id));
  EXPECT_TRUE(pool.release(id));
  EXPECT_EQ(pool.n_held(), 0);
  EXPECT_EQ(pool.n_free(), 1);  // only the never used one
  EXPECT_EQ(pool.take(), 1);
  EXPECT_TRUE(pool.hold(id));
  EXPECT_EQ(pool.n_held(), 2);
}

// Fresh blocks read as zeros; copy_block copies every layer and head of a block, keys and values,
// and nothing else.
TEST(KvBlockPool, CopyBlockCopiesEveryLayerAndHead) {
  KvBlockPool pool = make_pool(4);
  const int32_t from = pool.take();
  const int32_t to = pool.take();
  const int32_t other = pool.take();
  const size_t run = 4 * 4 * sizeof(float);  // [block_size][head_dim] f32
  float value = 1.0f;
  for (int64_t slot = 0; slot < 2; ++slot) {
    for (const bool is_v : {false, true}) {
      for (int64_t h = 0; h < 2; ++h) {
        EXPECT_EQ(pool.cells(slot, is_v, h, to)[run - 1], 0);
        auto* cells = reinterpret_cast<float*>(pool.cells(slot, is_v, h, from));
        for (size_t i = 0; i < 16; ++i) cells[i] = value++;
      }
    }
  }
  pool.copy_block(to, from);
  for (int64_t slot = 0; slot < 2; ++slot) {
    for (const bool is_v : {false, true}) {
      for (int64_t h = 0; h < 2; ++h) {
        EXPECT_EQ(std::memcmp(pool.cells(slot, is_v, h, to), pool.cells(slot, is_v, h, from), run),
                  0)
            << slot << " " << is_v << " " << h;
        const std::vector<uint8_t> zeros(run);
        EXPECT_EQ(std::memcmp(pool.cells(slot, is_v, h, other), zeros.data(), run), 0);
      }
    }
  }
}

// A pool of no layers holds no memory and still counts its blocks (the window pool of a cache
// without sliding-window layers).
TEST(KvBlockPool, APoolOfNoLayersHoldsNoMemory) {
  const KvLayout layout = small_kv_layout(2, 2);
  auto pool = KvBlockPool::create(layout, layout.window, 0, 8, "window");
  ASSERT_TRUE(pool.is_ok());
  EXPECT_EQ(pool->block_bytes(), 0u);
  EXPECT_EQ(pool->n_free(), 8);
  pool->populate_ahead(64);  // nothing to take
}

}  // namespace
}  // namespace minfer
