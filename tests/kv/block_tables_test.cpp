// Each sequence's block tables alone (kv/block_tables.h): which table a layer reads, and which
// window-table blocks the next token can no longer see.
#include "kv/block_tables.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kv/kv_layout_util.h"

namespace minfer {
namespace {

// Layer 1 of 2 slides over a window of 6 positions; blocks of 4.
KvLayout tables_layout() {
  return small_kv_layout(2, 1, {false, true}, 6);
}

TEST(KvBlockTables, ASlidingLayerReadsTheWindowTable) {
  KvBlockTables tables(tables_layout());
  EXPECT_FALSE(tables.contains(3));
  KvSequence& s = tables.get(3);
  s.blocks = {0, 1, 2};
  s.window_blocks = {-1, 4, 5};
  s.length = 10;
  EXPECT_EQ(&tables.table(3, 0), &s.blocks);
  EXPECT_EQ(&tables.table(3, 1), &s.window_blocks);
  EXPECT_EQ(tables.n_reserved(3), 12);
  EXPECT_EQ(tables.length(3), 10);
  EXPECT_EQ(tables.n_window_blocks_held(3), 2);
  tables.erase(3);
  EXPECT_EQ(tables.find(3), nullptr);
  EXPECT_EQ(tables.length(3), 0);
}

// A token at position p sees positions > p - 6: at length 10 the next token sees 5.. (block 0 is
// out of sight), at length 14 it sees 9.. (blocks 0 and 1).
TEST(KvBlockTables, CountsTheWindowBlocksOutOfSight) {
  KvBlockTables tables(tables_layout());
  KvSequence s;
  s.blocks = {0, 1, 2, 3};
  s.window_blocks = {0, 1, 2, 3};
  for (const auto& [length, out] : {std::pair{6, 0}, {8, 0}, {9, 1}, {10, 1}, {13, 2}, {16, 2}}) {
    s.length = length;
    EXPECT_EQ(tables.n_out_of_window(s), out) << length;
  }
  // Keeping 8 positions of 14 when block 0 is gone: the token at 8 sees 3.., which is lost.
  s.length = 14;
  s.window_blocks[0] = -1;
  EXPECT_TRUE(tables.window_lost(s, 8));
  EXPECT_FALSE(tables.window_lost(s, 9));   // sees 4..: block 1
  EXPECT_FALSE(tables.window_lost(s, 14));  // keeps everything
}

}  // namespace
}  // namespace minfer
