// Activation quantizers: llama.cpp's x86 semantics for Q8_0 / Q8_1 (quant/act_quant.h) on
// hand-computed blocks with ties, the SIMD tables' converters bit-identical to ref_table's for
// Q8_0, Q8_1 and Q8_K, and Q8_K's equal to the reference quantize_row_q8_K.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "quant/act_quant.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant_traits.h"
#include "quant/quantize.h"

namespace minfer::kernels {
namespace {

constexpr int slot(GgmlType type) {
  return static_cast<int>(type);
}

// A block whose largest magnitude is 127: id = 127 / 127 = 1 exactly, so x · id = x and the
// .5 values are exact ties. Expected quants worked out by hand (ties to even).
struct TieBlock {
  float x[32];
  int8_t q[32];
};

TieBlock tie_block() {
  TieBlock b{};
  const float xs[] = {2.5f, -2.5f, 3.5f, -3.5f, 0.5f, -0.5f, 1.5f, 126.5f, -127.0f, 0.0f, 7.25f};
  const int8_t qs[] = {2, -2, 4, -4, 0, 0, 2, 126, -127, 0, 7};
  for (int j = 0; j < 32; ++j) {
    b.x[j] = xs[j % 11];
    b.q[j] = qs[j % 11];
  }
  return b;
}

TEST(ActQuant, Q8_0RoundsTiesToEvenWithId127OverAmax) {
  const TieBlock b = tie_block();
  BlockQ8_0 y;
  quantize_act_q8_0(b.x, &y, 32);
  EXPECT_EQ(y.d, 0x3c00) << "d = 127 / 127 = 1.0";
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y.qs[j], b.q[j]) << "element " << j << " x=" << b.x[j];
  // The weight quantizer (llama.cpp's _ref) rounds the same ties away from zero.
  BlockQ8_0 r;
  quantize_row_q8_0(b.x, &r, 32);
  EXPECT_EQ(r.qs[0], 3);
  EXPECT_EQ(r.qs[1], -3);
  EXPECT_EQ(r.qs[4], 1);
}

TEST(ActQuant, Q8_1SumUsesTheUnroundedScale) {
  const TieBlock b = tie_block();
  BlockQ8_1 y;
  quantize_act_q8_1(b.x, &y, 32);
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y.qs[j], b.q[j]) << "element " << j;
    sum += b.q[j];
  }
  EXPECT_EQ(y.d, 0x3c00);
  EXPECT_EQ(fp16_to_fp32(y.s), static_cast<float>(sum));

  // amax = 1: d = 1/127 is not an f16, and s = f16(d · Σq) with the float d (not the f16 one).
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = (j % 3 == 0) ? 1.0f : 0.3f;
  quantize_act_q8_1(x, &y, 32);
  const float d = 1.0f / 127.0f;
  int s = 0;
  for (int j = 0; j < 32; ++j) s += y.qs[j];
  EXPECT_EQ(y.s, fp32_to_fp16(d * static_cast<float>(s)));
  EXPECT_EQ(y.d, fp32_to_fp16(d));
  EXPECT_EQ(y.qs[0], 127);
  EXPECT_EQ(y.qs[1], 38);  // 0.3 · 127 = 38.1
}

TEST(ActQuant, IdIs127OverAmaxNotTheInverseOfD) {
  // Find an amax where 127 / amax and 1 / (amax / 127) differ, and an x whose quant depends on
  // it; the activation quantizer must follow 127 / amax.
  bool found = false;
  for (int k = 1; k < 200000 && !found; ++k) {
    const float amax = 1.0f + static_cast<float>(k) * 1e-5f;
    const float id_x86 = 127.0f / amax;
    const float id_ref = 1.0f / (amax / 127.0f);
    if (id_x86 == id_ref) continue;
    for (int q = 1; q < 127 && !found; ++q) {
      // x just around (q + 0.5) / id: scan a few neighbouring floats.
      float x = (static_cast<float>(q) + 0.5f) / id_x86;
      for (int step = 0; step < 8; ++step, x = std::nextafter(x, 0.0f)) {
        const float a = std::nearbyint(x * id_x86);
        const float b = std::nearbyint(x * id_ref);
        if (a == b || x >= amax) continue;
        float block[32] = {};
        block[0] = amax;
        block[1] = x;
        BlockQ8_0 y;
        quantize_act_q8_0(block, &y, 32);
        EXPECT_EQ(y.qs[0], 127);
        EXPECT_EQ(y.qs[1], static_cast<int8_t>(a)) << "amax " << amax << " x " << x;
        found = true;
        break;
      }
    }
  }
  EXPECT_TRUE(found) << "no amax / x pair distinguishes the two ids";
}

TEST(ActQuant, ZeroBlock) {
  float x[64] = {};
  BlockQ8_1 y[2];
  std::memset(y, 0x55, sizeof(y));
  quantize_act_q8_1(x, y, 64);
  for (const BlockQ8_1& b : y) {
    EXPECT_EQ(b.d, 0);
    EXPECT_EQ(b.s, 0);
    for (int8_t q : b.qs) EXPECT_EQ(q, 0);
  }
}

// Inputs for the SIMD comparisons: random rows, plus all-zero blocks, exact ties, repeated
// extremes of both signs (Q8_K keeps the first) and tiny values.
std::vector<float> tricky_row(int64_t n, uint32_t seed) {
  std::vector<float> x = test::random_floats(n, seed, -3.0f, 3.0f);
  for (int64_t i = 0; i < 32 && i < n; ++i) x[i] = 0.0f;
  if (n >= 512) {
    const TieBlock b = tie_block();
    std::memcpy(&x[256], b.x, sizeof(b.x));
    x[300] = 200.0f;
    x[301] = -200.0f;  // same magnitude, later: Q8_K keeps +200
    x[400] = -1e-30f;
  }
  return x;
}

TEST(ActQuant, SimdConvertersAreBitIdenticalToRef) {
  if (test::simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  for (GgmlType act : {GgmlType::kQ8_0, GgmlType::kQ8_1, GgmlType::kQ8_K}) {
    const QuantTraits& traits = *quant_traits(act);
    QuantizeRowFn ref = ref_table.quantize_act[slot(act)];
    if (ref == nullptr) ref = traits.from_float;
    for (int64_t n : {256, 512, 4864}) {
      for (uint32_t seed = 1; seed <= 5; ++seed) {
        const std::vector<float> x = tricky_row(n, seed);
        const size_t bytes = static_cast<size_t>(n / traits.block_size) * traits.bytes_per_block;
        std::vector<uint8_t> expected(bytes, 0xAB);
        ref(x.data(), expected.data(), n);
        for (const KernelTable* t : test::simd_tables()) {
          ASSERT_NE(t->quantize_act[slot(act)], nullptr) << t->name;
          std::vector<uint8_t> actual(bytes, 0xCD);
          t->quantize_act[slot(act)](x.data(), actual.data(), n);
          EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), bytes))
              << t->name << " " << ggml_type_info(act).name << " n=" << n << " seed=" << seed;
        }
      }
    }
  }
}

// The Q8_0 converter the matmul uses: blocks, then each block's int32 sum of quants, lane starts
// and f32 scale.
TEST(ActQuant, SimdQ8_0WithSumsIsBitIdenticalToRef) {
  if (test::simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  for (int64_t n : {256, 512, 896, 4864}) {
    const size_t n_blocks = static_cast<size_t>(n / 32);
    const size_t bytes = q8_0_act_row_bytes(n_blocks);
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      const std::vector<float> x = tricky_row(n, seed);
      std::vector<uint8_t> expected(bytes, 0xAB);
      ref_table.quantize_act_q8_0_sums(x.data(), expected.data(), n);
      for (const KernelTable* t : test::simd_tables()) {
        ASSERT_NE(t->quantize_act_q8_0_sums, nullptr) << t->name;
        std::vector<uint8_t> actual(bytes, 0xAB);
        t->quantize_act_q8_0_sums(x.data(), actual.data(), n);
        EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), bytes))
            << t->name << " n=" << n << " seed=" << seed;
      }
    }
  }
}

// The lane starts and f32 scales after the sums mean what kernel_table.h says, in every table.
TEST(ActQuant, Q8_0RowLaneStartsAndScales) {
  const int64_t n = 256;
  const size_t n_blocks = static_cast<size_t>(n / 32);
  std::vector<float> x = tricky_row(n, 3);
  for (int i = 0; i < 32; ++i) x[32 + i] = i % 8 < 4 ? 2.5f : -2.5f;  // block 1: quants ±127
  std::vector<const KernelTable*> tables = test::simd_tables();
  tables.push_back(&ref_table);
  for (const KernelTable* t : tables) {
    std::vector<uint8_t> row(q8_0_act_row_bytes(n_blocks), 0xAB);
    t->quantize_act_q8_0_sums(x.data(), row.data(), n);
    for (size_t b = 0; b < n_blocks; ++b) {
      BlockQ8_0 blk;
      std::memcpy(&blk, row.data() + b * sizeof(BlockQ8_0), sizeof(blk));
      for (int l = 0; l < 8; ++l) {
        const int32_t s = blk.qs[4 * l] + blk.qs[4 * l + 1] + blk.qs[4 * l + 2] + blk.qs[4 * l + 3];
        int32_t start;
        std::memcpy(&start, row.data() + q8_0_act_starts_offset(n_blocks) + 4 * (8 * b + l), 4);
        EXPECT_EQ(start, kQ8_0LaneMagic - 128 * s) << t->name << " block " << b << " lane " << l;
        if (b == 1) {
          EXPECT_EQ(s, l % 2 == 0 ? 508 : -508) << t->name << " lane " << l;
        }
      }
      float d;
      std::memcpy(&d, row.data() + q8_0_act_scales_offset(n_blocks) + 4 * b, 4);
      EXPECT_EQ(d, fp16_to_fp32(blk.d)) << t->name << " block " << b;
    }
  }
}

TEST(ActQuant, RefQ8KIsTheReferenceQuantizer) {
  const std::vector<float> x = tricky_row(512, 9);
  std::vector<BlockQ8K> a(2), b(2);
  quantize_row_q8_K(x.data(), a.data(), 512);
  QuantizeRowFn ref = ref_table.quantize_act[slot(GgmlType::kQ8_K)];
  if (ref == nullptr) ref = quant_traits(GgmlType::kQ8_K)->from_float;
  ref(x.data(), b.data(), 512);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(BlockQ8K) * 2));
  EXPECT_EQ(a[1].qs[300 - 256], -127) << "the first extreme (+200) maps to -127";
  EXPECT_EQ(a[1].qs[301 - 256], 127);
}

}  // namespace
}  // namespace minfer::kernels
