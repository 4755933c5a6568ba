// The prefix cache alone (kv/prefix_cache.h): blocks registered under their whole token prefix,
// matched only where every block before them matches too, parked least recently used first and
// evicted in that order.
#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace minfer {
namespace {

constexpr int64_t kPrefixBlock = 4;  // positions per block

std::vector<int32_t> token_run(int n, int first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixCache, MatchesTheLongestRegisteredRunOfFullBlocks) {
  PrefixCache prefix(kPrefixBlock);
  const std::vector<int32_t> tokens = token_run(10, 100);  // 2 full blocks and 2 positions
  const std::vector<int32_t> table = {7, 3, 5};
  prefix.commit(table, tokens, 10);
  EXPECT_EQ(prefix.n_registered(), 2);
  EXPECT_TRUE(prefix.is_registered(7));
  EXPECT_TRUE(prefix.is_registered(3));
  EXPECT_FALSE(prefix.is_registered(5));  // not full
  EXPECT_EQ(prefix.match(tokens, 64), (std::vector<int32_t>{7, 3}));
  EXPECT_EQ(prefix.match(tokens, 7), (std::vector<int32_t>{7}));  // at most 7 positions

  // The second block's tokens after another first block: no match past the first difference.
  std::vector<int32_t> other = tokens;
  other[0] = 1;
  EXPECT_TRUE(prefix.match(other, 64).empty());
  other = tokens;
  other[6] = 1;
  EXPECT_EQ(prefix.match(other, 64), (std::vector<int32_t>{7}));
}

// A prefix already registered under one block is not registered again under another: the first
// stays the one matched.
TEST(PrefixCache, AKnownPrefixKeepsItsBlock) {
  PrefixCache prefix(kPrefixBlock);
  const std::vector<int32_t> tokens = token_run(8, 0);
  prefix.commit(std::vector<int32_t>{0, 1}, tokens, 8);
  prefix.commit(std::vector<int32_t>{2, 3}, tokens, 8);
  EXPECT_EQ(prefix.n_registered(), 2);
  EXPECT_FALSE(prefix.is_registered(2));
  EXPECT_EQ(prefix.match(tokens, 8), (std::vector<int32_t>{0, 1}));
  prefix.unregister(1);
  EXPECT_EQ(prefix.match(tokens, 8), (std::vector<int32_t>{0}));
}

// Parked blocks are evicted least recently parked first, unregistered as they go; an unparked
// block (held again) is never evicted.
TEST(PrefixCache, EvictsParkedBlocksLeastRecentlyUsedFirst) {
  PrefixCache prefix(kPrefixBlock);
  const std::vector<int32_t> tokens = token_run(16, 0);
  prefix.commit(std::vector<int32_t>{0, 1, 2, 3}, tokens, 16);
  for (const int32_t id : {3, 2, 1, 0}) prefix.park(id);
  EXPECT_EQ(prefix.n_parked(), 4);
  prefix.unpark(2);
  prefix.park(2);  // now the most recently used
  prefix.unpark(1);
  EXPECT_EQ(prefix.evict(), 3);
  EXPECT_FALSE(prefix.is_registered(3));
  EXPECT_EQ(prefix.evict(), 0);
  EXPECT_EQ(prefix.evict(), 2);
  EXPECT_EQ(prefix.evict(), -1);  // block 1 is held
  EXPECT_TRUE(prefix.is_registered(1));
  EXPECT_EQ(prefix.n_registered(), 1);
  EXPECT_EQ(prefix.n_parked(), 0);
}

}  // namespace
}  // namespace minfer
