#include "kv/kv_cache.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/hadamard.h"
#include "kernels/kernel_test_util.h"
#include "quant/fp16.h"
#include "quant/quant_traits.h"
#include "quant/quantize.h"

namespace minfer {
namespace {

KvCacheConfig small_config(GgmlType type, int64_t head_dim = 64) {
  KvCacheConfig c;
  c.n_layer = 2;
  c.n_head_kv = 2;
  c.head_dim = head_dim;
  c.head_dim_v = head_dim;
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
  const size_t row_bytes = value ? cache.v_row_bytes(il) : cache.k_row_bytes(il);
  const uint8_t* row = base + static_cast<size_t>(pos % c.block_size) * row_bytes;
  std::vector<float> out(static_cast<size_t>(c.head_dim));
  dequantize_row(c.cell_type, row, out.data(), c.head_dim);
  return out;
}

class KvRoundTrip : public ::testing::TestWithParam<GgmlType> {};

// What is stored reads back within the cell format's rounding: exact for f32, half an f16 ulp
// (2^-11 relative) for f16; for q8_0 (whose cells hold the rows Hadamard-rotated in runs of 64,
// kernels/hadamard.h) half a step d = amax / 127 plus the f16 rounding of d (≤ 2^-11 d) times the
// largest quant, 127, of the rotated row.
TEST_P(KvRoundTrip, StoredRowsReadBackWithinTheFormatsRounding) {
  const GgmlType type = GetParam();
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
    kv.store(kernels::ref_table, 1, 3, pos, k.data(), v.data());
    std::vector<float> k_cells = k;  // as the cells hold it
    if (type == GgmlType::kQ8_0) {
      ASSERT_EQ(kv.k_rotation(), 64);
      kernels::hadamard_rotate(k_cells.data(), 2, 64);
    }
    for (int64_t h = 0; h < 2; ++h) {
      const std::vector<float> got_k = read_row(kv, 3, 1, h, pos, false);
      const std::vector<float> got_v = read_row(kv, 3, 1, h, pos, true);
      float amax = 0.0f;
      for (int j = 0; j < 64; ++j) amax = std::max(amax, std::fabs(k_cells[h * 64 + j]));
      for (int j = 0; j < 64; ++j) {
        const float want = k_cells[static_cast<size_t>(h * 64 + j)];
        const float tol = type == GgmlType::kF32   ? 0.0f
                          : type == GgmlType::kF16 ? std::fabs(want) * 0x1p-11f
                                                   : amax / 127.0f * (0.5f + 127 * 0x1p-11f);
        EXPECT_NEAR(got_k[static_cast<size_t>(j)], want, tol) << "pos " << pos << " head " << h;
      }
      if (type == GgmlType::kF32) {
        EXPECT_EQ(0, std::memcmp(got_v.data(), v.data() + h * 64, 64 * 4));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, KvRoundTrip,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0),
                         [](const ::testing::TestParamInfo<GgmlType>& param) {
                           return std::string(kv_cell_type_name(param.param));
                         });

// The bytes of one stored V row of head h at position pos, as v_block lays them out.
std::vector<uint8_t> v_row_bytes(const KvCache& cache, int32_t seq, int64_t il, int64_t h,
                                 int64_t pos) {
  const KvCacheConfig& c = cache.config();
  const int32_t block = cache.block_table(seq)[static_cast<size_t>(pos / c.block_size)];
  const uint8_t* row =
      cache.v_block(block, il, h) + static_cast<size_t>(pos % c.block_size) * cache.v_row_bytes(il);
  return {row, row + cache.v_row_bytes(il)};
}

// A small cache of `type` with positions [0, 20) of sequence 0 reserved.
std::unique_ptr<KvCache> reserved_cache(GgmlType type, int64_t head_dim = 64) {
  auto cache = KvCache::create(small_config(type, head_dim));
  EXPECT_TRUE(cache.is_ok()) << cache.status().message();
  std::unique_ptr<KvCache> kv = std::move(cache).value();
  EXPECT_TRUE(kv->reserve(0, 20).is_ok());
  return kv;
}

// One token's K or V row, [n_head_kv * head_dim], drawn from N(0, sigma²).
std::vector<float> normal_row(std::mt19937& rng, float sigma, int64_t head_dim = 64) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> row(static_cast<size_t>(2 * head_dim));
  for (float& x : row) x = dist(rng);
  return row;
}

// f16 V cells hold fp32_to_fp16 of each stored value, and read back as fp16_to_fp32 of those
// halves, through every kernel table.
TEST(KvCache, F16ValueCellsHoldTheRoundedHalves) {
  for (const kernels::KernelTable* table : kernels::test::all_tables()) {
    std::unique_ptr<KvCache> cache = reserved_cache(GgmlType::kF16);
    KvCache& kv = *cache;
    std::mt19937 rng(11);
    for (int64_t pos : {0, 17}) {
      const std::vector<float> k = normal_row(rng, 3.0f);
      std::vector<float> v = normal_row(rng, 3.0f);
      v[1] = 1.0f + 0x1p-11f;  // an f16 tie: rounds to even, 1.0
      v[2] = 65520.0f;         // past the largest f16: inf
      kv.store(*table, 0, 0, pos, k.data(), v.data());
      for (int64_t h = 0; h < 2; ++h) {
        std::vector<uint16_t> want(64);  // [head_dim] f16
        for (int j = 0; j < 64; ++j) want[static_cast<size_t>(j)] = fp32_to_fp16(v[h * 64 + j]);
        const std::vector<uint8_t> got = v_row_bytes(kv, 0, 0, h, pos);
        ASSERT_EQ(got.size(), 128u);
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size()))
            << table->name << " pos " << pos << " head " << h;
        const std::vector<float> values = read_row(kv, 0, 0, h, pos, true);
        for (int j = 0; j < 64; ++j) {
          EXPECT_EQ(values[static_cast<size_t>(j)], fp16_to_fp32(want[static_cast<size_t>(j)]))
              << table->name << " pos " << pos << " head " << h << " j " << j;
        }
      }
    }
    EXPECT_EQ(read_row(kv, 0, 0, 0, 17, true)[1], 1.0f) << table->name;
    EXPECT_TRUE(std::isinf(read_row(kv, 0, 0, 0, 17, true)[2])) << table->name;
  }
}

// q8_0 V cells of a head dim llama.cpp does not rotate (32: not a multiple of 64) hold
// quantize_row_q8_0's blocks of the stored values (d = amax / 127, quants rounded halfway away
// from zero), and read back as q · d, through every kernel table.
TEST(KvCache, Q8_0ValueCellsHoldTheReferenceBlocks) {
  for (const kernels::KernelTable* table : kernels::test::all_tables()) {
    std::unique_ptr<KvCache> cache = reserved_cache(GgmlType::kQ8_0, 32);
    KvCache& kv = *cache;
    EXPECT_EQ(kv.k_rotation(), 0);
    EXPECT_EQ(kv.v_rotation(), 0);
    std::mt19937 rng(13);
    const std::vector<float> k = normal_row(rng, 2.0f, 32);
    std::vector<float> v = normal_row(rng, 2.0f, 32);
    // Head 1's block: amax 127, so d = 1 and the quants are the values rounded, halfway cases
    // away from zero: 2.5 → 3, -2.5 → -3, 0.5 → 1.
    for (int j = 0; j < 32; ++j) v[static_cast<size_t>(32 + j)] = 0.0f;
    v[32] = 127.0f;
    v[33] = 2.5f;
    v[34] = -2.5f;
    v[35] = 0.5f;
    kv.store(*table, 1, 0, 18, k.data(), v.data());
    for (int64_t h = 0; h < 2; ++h) {
      BlockQ8_0 want;
      quantize_row_q8_0(v.data() + h * 32, &want, 32);
      const std::vector<uint8_t> got = v_row_bytes(kv, 0, 1, h, 18);
      ASSERT_EQ(got.size(), sizeof(want));
      EXPECT_EQ(0, std::memcmp(got.data(), &want, sizeof(want))) << table->name << " head " << h;
      std::vector<float> want_values(32);  // [head_dim]
      dequantize_row_q8_0(&want, want_values.data(), 32);
      EXPECT_EQ(read_row(kv, 0, 1, h, 18, true), want_values) << table->name << " head " << h;
    }
    const std::vector<float> head1 = read_row(kv, 0, 1, 1, 18, true);
    EXPECT_EQ(head1[0], 127.0f) << table->name;
    EXPECT_EQ(head1[1], 3.0f) << table->name;
    EXPECT_EQ(head1[2], -3.0f) << table->name;
    EXPECT_EQ(head1[3], 1.0f) << table->name;
    EXPECT_EQ(head1[4], 0.0f) << table->name;
  }
}

// q8_0 cells of head dims that are multiples of 64 hold the rows Hadamard-rotated as llama.cpp
// stores them (llama-kv-cache.cpp attn_rot_k / attn_rot_v): keys in runs of the largest power of
// two dividing the head dim, values in runs of 64, then quantize_row_q8_0's blocks; other cell
// types and head dims are not rotated.
TEST(KvCache, Q8_0CellsHoldTheHadamardRotatedRows) {
  for (const auto& [head_dim, k_run] :
       {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {192, 64}}) {
    std::unique_ptr<KvCache> cache = reserved_cache(GgmlType::kQ8_0, head_dim);
    KvCache& kv = *cache;
    EXPECT_EQ(kv.k_rotation(), k_run) << head_dim;
    EXPECT_EQ(kv.v_rotation(), 64) << head_dim;
    std::mt19937 rng(17);
    const std::vector<float> k = normal_row(rng, 2.0f, head_dim);
    const std::vector<float> v = normal_row(rng, 2.0f, head_dim);
    kv.store(kernels::ref_table, 0, 0, 5, k.data(), v.data());
    std::vector<float> k_rot = k, v_rot = v;
    kernels::hadamard_rotate(k_rot.data(), 2 * head_dim / k_run, k_run);
    kernels::hadamard_rotate(v_rot.data(), 2 * head_dim / 64, 64);
    const std::vector<float>* rows[] = {&k_rot, &v_rot};
    for (int is_v = 0; is_v < 2; ++is_v) {
      for (int64_t h = 0; h < 2; ++h) {
        std::vector<BlockQ8_0> want(static_cast<size_t>(head_dim / 32));
        quantize_row_q8_0(rows[is_v]->data() + h * head_dim, want.data(), head_dim);
        const int32_t block = kv.block_table(0)[0];
        const uint8_t* got = (is_v == 1 ? kv.v_block(block, 0, h) : kv.k_block(block, 0, h)) +
                             5 * (is_v == 1 ? kv.v_row_bytes(0) : kv.k_row_bytes(0));
        EXPECT_EQ(0, std::memcmp(got, want.data(), want.size() * sizeof(BlockQ8_0)))
            << "head_dim " << head_dim << (is_v == 1 ? " value" : " key") << " head " << h;
      }
    }
  }
  for (const GgmlType type : {GgmlType::kF32, GgmlType::kF16}) {
    std::unique_ptr<KvCache> cache = reserved_cache(type, 128);
    EXPECT_EQ(cache->k_rotation(), 0);
    EXPECT_EQ(cache->v_rotation(), 0);
  }
  EXPECT_EQ(reserved_cache(GgmlType::kQ8_0, 96)->k_rotation(), 0);  // not a multiple of 64
}

TEST(KvCache, BlocksAreTakenOnDemandAndReturnedOnFree) {
  auto cache = KvCache::create(small_config(GgmlType::kF32));
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

// Segments of the layout double from one block up to a full segment, then stay full: each block
// lies in exactly one, they follow each other without gaps, and the memory up to a block's
// segment end is at most about twice the blocks up to it (or one full segment more).
TEST(KvCache, SegmentsDoubleUpToAFullSegment) {
  for (const size_t full : {size_t{1}, size_t{2}, size_t{4}, size_t{64}}) {
    size_t next_first = 0;  // where the next segment begins
    for (size_t b = 0; b < 300; ++b) {
      const KvSegment seg = kv_segment_of(b, full);
      ASSERT_LE(seg.first, b) << full;
      ASSERT_LT(b, seg.first + seg.size) << full;
      if (seg.first == b) {
        EXPECT_EQ(seg.first, next_first) << full << " " << b;
        next_first = seg.first + seg.size;
      }
      EXPECT_EQ(seg.size, std::min(full, std::max<size_t>(1, seg.first))) << full << " " << b;
      EXPECT_EQ(seg.first % seg.size, 0u) << full << " " << b;
      EXPECT_LE(seg.first + seg.size, std::max(2 * (b + 1), b + full)) << full << " " << b;
    }
  }
  EXPECT_EQ(kv_segment_of(0, 4).size, 1u);
  EXPECT_EQ(kv_segment_of(1, 4).first, 1u);
  EXPECT_EQ(kv_segment_of(3, 4).first, 2u);
  EXPECT_EQ(kv_segment_of(7, 4).first, 4u);
  EXPECT_EQ(kv_segment_of(8, 4).first, 8u);
  EXPECT_EQ(kv_segment_of(10, 4).size, 4u);
}

// Each KV head's cells of one layer lie in one run per segment: consecutive blocks of a segment
// follow each other, so a sequence's blocks taken in ascending order are long runs that attention
// reads in one call; no two runs overlap. Freed blocks are taken again lowest first, so a sequence
// reserved after a free gets such runs too.
TEST(KvCache, AHeadsBlocksFollowEachOtherInASegmentAndFreedBlocksAreRetakenLowestFirst) {
  KvCacheConfig c = small_config(GgmlType::kF32);
  c.head_dim = c.head_dim_v = 1024;  // a block's run of one head: 16 rows of 4 KiB, 64 KiB
  c.n_ctx = 512;
  c.max_blocks = 12;  // segments [0], [1], [2, 3], [4, 7], [8, 11]: full ones of 4 blocks
  auto cache = KvCache::create(c);
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  ASSERT_TRUE(kv.reserve(0, 96).is_ok());
  ASSERT_TRUE(kv.reserve(1, 96).is_ok());
  EXPECT_EQ(kv.block_table(0), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  const size_t run = 16 * kv.k_row_bytes(0);  // one block of one head
  std::vector<std::pair<const uint8_t*, const uint8_t*>> runs;
  for (int32_t first : {0, 1, 2, 4, 8}) {
    const KvSegment seg = kv_segment_of(static_cast<size_t>(first), 4);
    ASSERT_EQ(seg.first, static_cast<size_t>(first));
    for (int64_t il = 0; il < 2; ++il) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int32_t b = first; b + 1 < first + static_cast<int32_t>(seg.size); ++b) {
          EXPECT_EQ(kv.k_block(b + 1, il, h), kv.k_block(b, il, h) + run) << il << " " << h;
          EXPECT_EQ(kv.v_block(b + 1, il, h), kv.v_block(b, il, h) + run) << il << " " << h;
        }
        for (const uint8_t* start : {kv.k_block(first, il, h), kv.v_block(first, il, h)}) {
          runs.emplace_back(start, start + seg.size * run);
        }
      }
    }
  }
  std::sort(runs.begin(), runs.end());
  for (size_t i = 0; i + 1 < runs.size(); ++i) EXPECT_LE(runs[i].second, runs[i + 1].first) << i;

  kv.free_sequence(1);  // blocks 6 .. 11
  kv.free_sequence(0);  // 0 .. 5
  ASSERT_TRUE(kv.reserve(2, 128).is_ok());
  EXPECT_EQ(kv.block_table(2), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// The fraction of the 4 KiB pages of [begin, end) (page-aligned) that hold memory.
double resident_fraction(const uint8_t* begin, const uint8_t* end) {
  constexpr size_t kPage = 4096;
  std::vector<unsigned char> pages(static_cast<size_t>(end - begin) / kPage);
  EXPECT_EQ(0, ::mincore(const_cast<uint8_t*>(begin), pages.size() * kPage, pages.data()))
      << std::strerror(errno);
  const auto resident =
      std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1) != 0; });
  return static_cast<double>(resident) / static_cast<double>(pages.size());
}

// A segment's first block touches every page of the segment, so the pool takes the next segment's
// memory ahead, while the positions of the segment before it are written: each new block makes
// its share of the next segment due, and each position written takes some of it. The next segment
// is whole when its first block is reached, and nothing past it is taken. (Only set_length writes
// here: no cell is stored, so every resident page was taken ahead.)
TEST(KvCache, ThePoolTakesTheNextSegmentsMemoryWhileThePositionsBeforeItAreWritten) {
  KvCacheConfig c = small_config(GgmlType::kF32);
  c.n_layer = 16;
  c.head_dim = c.head_dim_v = 1024;  // a block's run of one head: 16 rows of 4 KiB, 64 KiB
  c.n_ctx = 256;
  c.max_blocks = 16;  // 4 MiB blocks; segments [0], [1], [2, 4), then 16 MiB: [4, 8), [8, 12), …
  auto cache = KvCache::create(c);
  ASSERT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  const uint8_t* seg4 = kv.k_block(4, 0, 0);  // where segments [4, 8), [8, 12), [12, 16) begin
  const uint8_t* seg8 = kv.k_block(8, 0, 0);
  const uint8_t* seg12 = kv.k_block(12, 0, 0);
  ASSERT_EQ(seg12 - seg8, seg8 - seg4);
  ASSERT_EQ(seg8 - seg4, 16 << 20);
  EXPECT_EQ(resident_fraction(seg4, seg12 + (seg8 - seg4)), 0.0);  // nothing taken yet

  ASSERT_TRUE(kv.reserve(0, 64).is_ok());  // blocks 0 .. 3: the segments before [4, 8)
  kv.set_length(0, 64);
  EXPECT_EQ(resident_fraction(seg4, seg8), 1.0);
  EXPECT_EQ(resident_fraction(seg8, seg12), 0.0);

  ASSERT_TRUE(kv.reserve(0, 65).is_ok());  // block 4, the first of [4, 8)
  kv.set_length(0, 65);
  const double first_share = resident_fraction(seg8, seg12);
  // Block 4's share is a quarter of [8, 12), taken a position at a time: 512 KiB of it so far
  // (1/32; a 2 MiB page, 1/8, with transparent huge pages).
  EXPECT_GT(first_share, 0.0);
  EXPECT_LT(first_share, 0.2);

  ASSERT_TRUE(kv.reserve(0, 128).is_ok());  // blocks 5 .. 7: the rest of [4, 8)
  kv.set_length(0, 128);
  EXPECT_EQ(resident_fraction(seg8, seg12), 1.0);
  EXPECT_EQ(resident_fraction(seg12, seg12 + (seg8 - seg4)), 0.0);
}

// The pools' memory is reserved when the cache is made and taken as blocks are first used: a
// budget the address space cannot hold is an error then, naming the pool; a fresh block reads as
// zeros.
TEST(KvCache, ABudgetPastTheAddressSpaceIsAnErrorAndFreshBlocksAreZeros) {
  KvCacheConfig c = small_config(GgmlType::kF32);
  c.max_blocks = int64_t{1} << 40;  // 32 KiB blocks: 32 PiB, past the 128 TiB of x86-64
  auto too_big = KvCache::create(c);
  ASSERT_FALSE(too_big.is_ok());
  EXPECT_EQ(too_big.status().message().rfind(
                "[kv] the cache's main pool (1099511627776 blocks of 32768 bytes): cannot "
                "allocate ",
                0),
            0u)
      << too_big.status().message();
  c.max_blocks = int64_t{1} << 62;  // the bytes overflow a size_t
  too_big = KvCache::create(c);
  ASSERT_FALSE(too_big.is_ok());
  EXPECT_EQ(too_big.status().message(),
            "[kv] 4611686018427387904 blocks of 32768 bytes are past the address space");

  auto cache = KvCache::create(small_config(GgmlType::kF32));
  ASSERT_TRUE(cache.is_ok());
  ASSERT_TRUE((*cache)->reserve(0, 96).is_ok());  // every block of the budget
  for (const int32_t block : (*cache)->block_table(0)) {
    const auto* k = reinterpret_cast<const float*>((*cache)->k_block(block, 1, 1));
    const auto* v = reinterpret_cast<const float*>((*cache)->v_block(block, 1, 1));
    EXPECT_EQ(k[0], 0.0f);
    EXPECT_EQ(v[16 * 64 - 1], 0.0f);
  }
}

TEST(KvCache, PastTheContextIsAnErrorAndBadTypesAreNamed) {
  auto cache = KvCache::create(small_config(GgmlType::kF32));
  ASSERT_TRUE(cache.is_ok());
  const Status st = (*cache)->reserve(0, 129);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("past the context of 128"), std::string::npos);
  auto bad = parse_kv_cell_type("q4_0");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "[kv] unknown cache type 'q4_0' (expected f32, f16, bf16 or q8_0)");
}

TEST(KvCache, CellTypesAreGgmlTypesNamedAsUsersWriteThem) {
  for (const GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
    auto parsed = parse_kv_cell_type(kv_cell_type_name(type));
    ASSERT_TRUE(parsed.is_ok()) << kv_cell_type_name(type);
    EXPECT_EQ(*parsed, type);
    EXPECT_TRUE(is_kv_cell_type(type));
  }
  EXPECT_EQ(kv_cell_type_name(GgmlType::kQ8_0), "q8_0");
  EXPECT_EQ(kv_cell_type_name(GgmlType::kBF16), "bf16");
  for (const char* name : {"F16", "BF16", "q4_K", ""}) {
    auto bad = parse_kv_cell_type(name);
    ASSERT_FALSE(bad.is_ok()) << name;
    std::string want = "[kv] unknown cache type '";
    want.append(name).append("' (expected f32, f16, bf16 or q8_0)");
    EXPECT_EQ(bad.status().message(), want);
  }
  // A ggml type that is not a cell type is refused by the cache too.
  KvCacheConfig c = small_config(GgmlType::kQ4_0);
  auto cache = KvCache::create(c);
  ASSERT_FALSE(cache.is_ok());
  EXPECT_EQ(cache.status().message(),
            "[kv] cache type q4_0 is not a KV cell type (expected f32, f16, bf16 or q8_0)");
  c = small_config(GgmlType::kQ8_0);
  c.head_dim_v = 48;
  cache = KvCache::create(c);
  ASSERT_FALSE(cache.is_ok());
  EXPECT_EQ(cache.status().message(),
            "[kv] cache type q8_0 needs head dims that are multiples of 32, got 64 and 48");
}

}  // namespace
}  // namespace minfer
