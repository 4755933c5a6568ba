#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quantize.h"

namespace minfer {
namespace {

KvCacheConfig small_config(KvCellType type) {
  KvCacheConfig c;
  c.n_layer = 2;
  c.n_head_kv = 2;
  c.head_dim = 64;
  c.head_dim_v = 64;
  c.cell_type = type;
  c.block_size = 16;
  c.n_ctx = 128;
  c.max_blocks = 6;
  return c;
}

// Reads back one stored row of head h at position pos as f32.
std::vector<float> read_row(const KvCache& cache, int32_t seq, int64_t il, int64_t h, int64_t pos,
                            bool value) {
  const KvCacheConfig& c = cache.config();
  const int32_t block = cache.block_table(seq)[static_cast<size_t>(pos / c.block_size)];
  const uint8_t* base = value ? cache.v_block(block, il, h) : cache.k_block(block, il, h);
  const size_t row_bytes = value ? cache.v_row_bytes() : cache.k_row_bytes();
  const uint8_t* row = base + static_cast<size_t>(pos % c.block_size) * row_bytes;
  std::vector<float> out(static_cast<size_t>(c.head_dim));
  switch (c.cell_type) {
    case KvCellType::kF32:
      std::memcpy(out.data(), row, out.size() * 4);
      break;
    case KvCellType::kF16:
      fp16_to_fp32_row(reinterpret_cast<const uint16_t*>(row), out.data(), c.head_dim);
      break;
    case KvCellType::kQ8_0:
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(row), out.data(), c.head_dim);
      break;
  }
  return out;
}

class KvRoundTrip : public ::testing::TestWithParam<KvCellType> {};

// What is stored reads back within the cell format's rounding: exact for f32, half an f16 ulp
// (2^-11 relative) for f16; for q8_0 half a step d = amax / 127 plus the f16 rounding of d
// (≤ 2^-11 d) times the largest quant, 127.
TEST_P(KvRoundTrip, StoredRowsReadBackWithinTheFormatsRounding) {
  const KvCellType type = GetParam();
  auto cache = KvCache::create(small_config(type));
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  ASSERT_TRUE(kv.reserve(3, 40).is_ok());
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(128), v(128);  // [n_head_kv * head_dim]
  for (int64_t pos : {0, 15, 16, 39}) {
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    kv.store(1, 3, pos, k.data(), v.data());
    for (int64_t h = 0; h < 2; ++h) {
      const std::vector<float> got_k = read_row(kv, 3, 1, h, pos, false);
      const std::vector<float> got_v = read_row(kv, 3, 1, h, pos, true);
      float amax = 0.0f;
      for (int j = 0; j < 64; ++j) amax = std::max(amax, std::fabs(k[h * 64 + j]));
      for (int j = 0; j < 64; ++j) {
        const float want = k[static_cast<size_t>(h * 64 + j)];
        const float tol = type == KvCellType::kF32   ? 0.0f
                          : type == KvCellType::kF16 ? std::fabs(want) * 0x1p-11f
                                                     : amax / 127.0f * (0.5f + 127 * 0x1p-11f);
        EXPECT_NEAR(got_k[static_cast<size_t>(j)], want, tol) << "pos " << pos << " head " << h;
      }
      if (type == KvCellType::kF32) {
        EXPECT_EQ(0, std::memcmp(got_v.data(), v.data() + h * 64, 64 * 4));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, KvRoundTrip,
                         ::testing::Values(KvCellType::kF32, KvCellType::kF16, KvCellType::kQ8_0));

TEST(KvCache, BlocksAreTakenOnDemandAndReturnedOnFree) {
  auto cache = KvCache::create(small_config(KvCellType::kF32));
  ASSERT_TRUE(cache.is_ok());
  KvCache& kv = **cache;
  EXPECT_EQ(kv.n_blocks_allocated(), 0);   // nothing preallocated
  ASSERT_TRUE(kv.reserve(0, 17).is_ok());  // 2 blocks of 16
  EXPECT_EQ(kv.n_blocks_used(), 2);
  ASSERT_TRUE(kv.reserve(1, 64).is_ok());  // 4 more: the budget of 6 is full
  EXPECT_EQ(kv.n_blocks_free(), 0);
  const Status full = kv.reserve(2, 1);
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted);
  EXPECT_FALSE(kv.has_sequence(2));
  kv.free_sequence(1);
  EXPECT_EQ(kv.n_blocks_used(), 2);
  EXPECT_EQ(kv.n_blocks_free(), 4);
  ASSERT_TRUE(kv.reserve(2, 64).is_ok());  // reuses the freed blocks
  EXPECT_EQ(kv.n_blocks_allocated(), 6);
  kv.truncate(2, 20);
  EXPECT_EQ(kv.n_reserved(2), 32);
  EXPECT_EQ(kv.n_blocks_used(), 4);
}

TEST(KvCache, PastTheContextIsAnErrorAndBadTypesAreNamed) {
  auto cache = KvCache::create(small_config(KvCellType::kF32));
  ASSERT_TRUE(cache.is_ok());
  const Status st = (*cache)->reserve(0, 129);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("past the context of 128"), std::string::npos);
  auto bad = parse_kv_cell_type("q4_0");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "[kv] unknown cache type 'q4_0' (expected f32, f16 or q8_0)");
}

}  // namespace
}  // namespace minfer
