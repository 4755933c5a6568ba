// The prefix cache of the paged KV cache: ref-counted blocks registered by their token prefix,
// attached by later sequences, kept while free and evicted least recently used first.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_cache.h"

namespace minfer {
namespace {

std::unique_ptr<KvCache> make_cache(int64_t max_blocks) {
  KvCacheConfig c;
  c.n_layer = 1;
  c.n_head_kv = 1;
  c.head_dim = 4;
  c.head_dim_v = 4;
  c.block_size = 4;
  c.n_ctx = 64;
  c.max_blocks = max_blocks;
  auto cache = KvCache::create(c);
  EXPECT_TRUE(cache.is_ok());
  return std::move(cache).value();
}

// Reserves and "computes" positions [0, n) of seq: stores a row per position whose first value
// is the position's token, so a test can see which tokens a block holds.
void fill(KvCache& cache, int32_t seq, const std::vector<int32_t>& tokens) {
  const int64_t start = cache.length(seq);
  ASSERT_TRUE(cache.reserve(seq, static_cast<int64_t>(tokens.size())).is_ok());
  for (size_t p = static_cast<size_t>(start); p < tokens.size(); ++p) {
    const float row[4] = {static_cast<float>(tokens[p]), 0, 0, 0};  // [head_dim]
    cache.store(kernels::ref_table, 0, seq, static_cast<int64_t>(p), row, row);
  }
  cache.set_length(seq, static_cast<int64_t>(tokens.size()));
}

float first_value(const KvCache& cache, int32_t seq, int64_t pos) {
  const int32_t block = cache.block_table(seq)[static_cast<size_t>(pos / 4)];
  const float* keys = reinterpret_cast<const float*>(cache.k_block(block, 0, 0));  // [4][4]
  return keys[(pos % 4) * 4];
}

std::vector<int32_t> iota_tokens(int n, int first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixCache, FullComputedBlocksAreSharedAndCounted) {
  auto cache = make_cache(8);
  const std::vector<int32_t> a = iota_tokens(10, 100);  // 2 full blocks + 2 positions
  fill(*cache, 1, a);
  cache->commit_prefix(1, a);
  EXPECT_EQ(cache->n_blocks_registered(), 2);

  // Same first 9 tokens, then different: the 2 full blocks match.
  std::vector<int32_t> b = a;
  b[9] = 7;
  EXPECT_EQ(cache->match_prefix(2, b, 100), 8);
  EXPECT_EQ(cache->length(2), 8);
  EXPECT_EQ(cache->block_table(2)[0], cache->block_table(1)[0]);
  EXPECT_EQ(cache->block_table(2)[1], cache->block_table(1)[1]);
  EXPECT_EQ(first_value(*cache, 2, 5), 105.0f);
  EXPECT_EQ(cache->n_blocks_used(), 3);  // shared blocks count once

  // max_positions caps the match to whole blocks below it.
  EXPECT_EQ(cache->match_prefix(3, b, 7), 4);
  // A different first block matches nothing, even when later blocks are equal.
  std::vector<int32_t> c = a;
  c[0] = 1;
  EXPECT_EQ(cache->match_prefix(4, c, 100), 0);
  EXPECT_FALSE(cache->has_sequence(4));
}

TEST(PrefixCache, FreedBlocksStayCachedUntilThePoolNeedsThem) {
  auto cache = make_cache(4);
  const std::vector<int32_t> a = iota_tokens(8, 0);
  fill(*cache, 1, a);
  cache->commit_prefix(1, a);
  cache->free_sequence(1);
  EXPECT_EQ(cache->n_blocks_used(), 0);
  EXPECT_EQ(cache->n_blocks_cached(), 2);
  EXPECT_EQ(cache->n_blocks_free(), 4);

  // Reattached after the owner left: the cells are still there.
  EXPECT_EQ(cache->match_prefix(2, a, 100), 8);
  EXPECT_EQ(first_value(*cache, 2, 6), 6.0f);
  EXPECT_EQ(cache->n_blocks_cached(), 0);
  cache->free_sequence(2);

  // A sequence that needs the whole budget evicts them, last block of the prefix first.
  ASSERT_TRUE(cache->reserve(3, 12).is_ok());  // 2 fresh blocks + 1 evicted
  EXPECT_EQ(cache->n_blocks_cached(), 1);
  EXPECT_EQ(cache->match_prefix(4, a, 100), 4);  // the head survived
  cache->free_sequence(4);
  ASSERT_TRUE(cache->reserve(3, 16).is_ok());
  EXPECT_EQ(cache->n_blocks_cached(), 0);
  EXPECT_EQ(cache->n_blocks_registered(), 0);
  EXPECT_EQ(cache->match_prefix(5, a, 100), 0);
  EXPECT_FALSE(cache->reserve(6, 4).is_ok());
}

TEST(PrefixCache, TruncatingIntoASharedBlockCopiesIt) {
  auto cache = make_cache(8);
  const std::vector<int32_t> a = iota_tokens(8, 10);
  fill(*cache, 1, a);
  cache->commit_prefix(1, a);
  ASSERT_EQ(cache->match_prefix(2, a, 100), 8);
  const int32_t shared = cache->block_table(1)[1];

  // Sequence 2 rewrites from position 6: its second block becomes its own copy.
  cache->truncate(2, 6);
  EXPECT_EQ(cache->length(2), 6);
  EXPECT_NE(cache->block_table(2)[1], shared);
  EXPECT_EQ(first_value(*cache, 2, 5), 15.0f);
  const float row[4] = {99, 0, 0, 0};  // [head_dim]
  cache->store(kernels::ref_table, 0, 2, 6, row, row);
  EXPECT_EQ(first_value(*cache, 2, 6), 99.0f);
  EXPECT_EQ(first_value(*cache, 1, 6), 16.0f);  // the shared block is untouched

  // The only holder truncating into its registered block unregisters it.
  cache->free_sequence(2);
  cache->truncate(1, 6);
  EXPECT_EQ(cache->n_blocks_registered(), 1);
  EXPECT_EQ(cache->match_prefix(3, a, 100), 4);
}

TEST(PrefixCache, ExistingApiKeepsItsAccounting) {
  auto cache = make_cache(3);
  ASSERT_TRUE(cache->reserve(1, 12).is_ok());
  EXPECT_EQ(cache->n_blocks_used(), 3);
  EXPECT_EQ(cache->n_blocks_free(), 0);
  cache->truncate(1, 5);
  EXPECT_EQ(cache->n_blocks_used(), 2);
  cache->free_sequence(1);
  EXPECT_EQ(cache->n_blocks_used(), 0);
  EXPECT_EQ(cache->n_blocks_free(), 3);
  EXPECT_EQ(cache->n_blocks_cached(), 0);
}

}  // namespace
}  // namespace minfer
