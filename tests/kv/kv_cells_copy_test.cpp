// KvCache::read_cells / write_cells (what state files carry): cells read from one cache and
// written into a sequence of another read back byte for byte, across block boundaries and whatever
// the block size; a write that does not fit the budget holds nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kv/kv_cache.h"

namespace minfer {
namespace {

KvCacheConfig config(int64_t block_size, int64_t max_blocks) {
  KvCacheConfig c;
  c.n_layer = 3;
  c.n_head_kv = 2;
  c.head_dim = 32;
  c.head_dim_v = 64;
  c.cell_type = GgmlType::kF16;
  c.block_size = block_size;
  c.n_ctx = 128;
  c.max_blocks = max_blocks;
  return c;
}

std::unique_ptr<KvCache> make(int64_t block_size, int64_t max_blocks) {
  auto cache = KvCache::create(config(block_size, max_blocks));
  EXPECT_TRUE(cache.is_ok()) << cache.status().message();
  return std::move(cache).value();
}

TEST(KvCellsCopy, WrittenCellsReadBackByteForByteAcrossBlockSizes) {
  auto source = make(16, 8);
  const int64_t n = 37;                                // two full blocks of 16 and a part
  std::vector<uint8_t> cells(source->cells_bytes(n));  // [cells_bytes(n)]
  EXPECT_EQ(cells.size(), static_cast<size_t>(3 * 2 * n * (32 + 64) * 2));
  for (size_t i = 0; i < cells.size(); ++i) cells[i] = static_cast<uint8_t>(i * 131 + 7);
  ASSERT_TRUE(source->write_cells(4, n, cells).is_ok());
  EXPECT_EQ(source->length(4), n);
  std::vector<uint8_t> back(cells.size());
  source->read_cells(4, n, back);
  EXPECT_EQ(back, cells);

  // Another block size: the flat layout does not depend on it.
  auto other = make(8, 8);
  ASSERT_TRUE(other->write_cells(0, n, cells).is_ok());
  std::vector<uint8_t> again(cells.size());
  other->read_cells(0, n, again);
  EXPECT_EQ(again, cells);
  // A prefix reads as the prefix of each head's rows.
  std::vector<uint8_t> part(other->cells_bytes(5));
  other->read_cells(0, 5, part);
  EXPECT_EQ(0, std::memcmp(part.data(), cells.data(), 5 * 32 * 2));
}

TEST(KvCellsCopy, AWriteBeyondTheBudgetHoldsNothing) {
  auto cache = make(16, 2);
  std::vector<uint8_t> cells(cache->cells_bytes(40));  // needs 3 blocks, 2 in the budget
  const Status st = cache->write_cells(1, 40, cells);
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted);
  EXPECT_FALSE(cache->has_sequence(1));
  EXPECT_EQ(cache->n_blocks_used(), 0);
}

}  // namespace
}  // namespace minfer
