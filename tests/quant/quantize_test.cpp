// Quantizers: hand-computed blocks (Q8_0, Q8_K, Q4_0), quantize -> dequantize error per type
// against its derived bound, the traits table and the checked entry points.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/ref/ref_dot.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant_traits.h"
#include "quant/quantize.h"
#include "quant_test_util.h"

namespace minfer {
namespace {

using test::Distribution;

// --- Q8_0 --------------------------------------------------------------------------------

TEST(QuantizeQ8_0, AbsmaxOf127GivesUnitScaleAndRoundsHalfAwayFromZero) {
  // absmax 127 -> d = 1 exactly, so q = roundf(x): ties go away from zero (2.5 -> 3, not 2).
  std::array<float, 32> x{};  // [32]
  const float values[] = {0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 126.5f, -127.0f, 0.49f, 3.0f, 100.2f};
  std::copy(std::begin(values), std::end(values), x.begin());
  BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x3c00);  // f16 1.0
  const int8_t want[] = {1, -1, 2, 3, -3, 127, -127, 0, 3, 100};
  for (int j = 0; j < 10; ++j) EXPECT_EQ(b.qs[j], want[j]) << j;
  for (int j = 10; j < 32; ++j) EXPECT_EQ(b.qs[j], 0) << j;
}

TEST(QuantizeQ8_0, ScaleTwoAndNegativeMaximum) {
  // absmax 254 (negative) -> d = 2, q = roundf(x / 2): 3 -> 1.5 -> 2, 5 -> 2.5 -> 3.
  std::array<float, 32> x{};  // [32]
  x[0] = -254.0f;
  x[1] = 3.0f;
  x[2] = 5.0f;
  x[3] = -5.0f;
  x[4] = 200.0f;
  BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x4000);  // f16 2.0
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 3);
  EXPECT_EQ(b.qs[3], -3);
  EXPECT_EQ(b.qs[4], 100);
}

TEST(QuantizeQ8_0, ScaleIsRoundedToF16AfterQuantizing) {
  // absmax 1 -> d = 1/127 (f32), stored as f16 2^-7 * (1 + 8/1024) = 0x2008; the quants use
  // the f32 scale: 0.25 * 127 = 31.75 -> 32.
  std::array<float, 32> x{};  // [32]
  x[0] = 1.0f;
  x[1] = 0.25f;
  x[2] = -0.5f + 1.0f / 254;  // 0.5 * 127 - 0.5 = 63.0 (well off the tie at 63.5)
  BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x2008);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 32);
  EXPECT_EQ(b.qs[2], -63);
}

TEST(QuantizeQ8_0, AllZeroBlock) {
  std::array<float, 64> x{};  // [64]
  x[40] = 1.0f;               // second block is not zero
  std::array<BlockQ8_0, 2> b;
  std::memset(b.data(), 0x5a, sizeof(b));
  quantize_row_q8_0(x.data(), b.data(), 64);
  EXPECT_EQ(b[0].d, 0);
  for (int8_t q : b[0].qs) EXPECT_EQ(q, 0);
  EXPECT_EQ(b[1].qs[8], 127);
}

TEST(QuantizeQ8_1, SumIsScaleTimesQuantSum) {
  std::array<float, 32> x{};  // [32]
  x[0] = 127.0f;
  x[1] = -27.0f;
  x[2] = 2.5f;  // -> 3
  BlockQ8_1 b;
  quantize_row_q8_1(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x3c00);
  EXPECT_EQ(b.qs[2], 3);
  EXPECT_EQ(fp16_to_fp32(b.s), 103.0f);  // 127 - 27 + 3
}

// --- Q8_K --------------------------------------------------------------------------------

TEST(QuantizeQ8K, PositiveMaximumGivesNegativeScaleAndTiesToEven) {
  // Q8_K divides by the signed extreme: max = +127 -> iscale = -1, d = -1, q = -x rounded
  // half to even (ggml's nearest_int): 0.5 -> -0, 1.5 -> -2, 2.5 -> -2, -3.5 -> 4.
  std::array<float, 256> x{};  // [256]
  x[0] = 127.0f;
  x[1] = 0.5f;
  x[2] = 1.5f;
  x[3] = 2.5f;
  x[4] = -3.5f;
  x[5] = -126.6f;
  x[17] = 10.0f;
  x[255] = -1.0f;
  BlockQ8K b;
  quantize_row_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, -1.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 0);
  EXPECT_EQ(b.qs[2], -2);
  EXPECT_EQ(b.qs[3], -2);
  EXPECT_EQ(b.qs[4], 4);
  EXPECT_EQ(b.qs[5], 127);
  EXPECT_EQ(b.qs[17], -10);
  EXPECT_EQ(b.qs[255], 1);
  EXPECT_EQ(b.bsums[0], -127 + 0 - 2 - 2 + 4 + 127);
  EXPECT_EQ(b.bsums[1], -10);
  EXPECT_EQ(b.bsums[15], 1);
  for (int j = 2; j < 15; ++j) EXPECT_EQ(b.bsums[j], 0);
}

TEST(QuantizeQ8K, NegativeMaximumGivesPositiveScale) {
  // max = -254 -> iscale = 0.5, d = 2: q = nearest_int(x / 2): 5 -> 2.5 -> 2, 7 -> 3.5 -> 4.
  std::array<float, 256> x{};  // [256]
  x[0] = 5.0f;
  x[1] = 7.0f;
  x[2] = -254.0f;
  x[3] = 253.0f;  // 126.5 -> 126 (even)
  BlockQ8K b;
  quantize_row_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, 2.0f);
  EXPECT_EQ(b.qs[0], 2);
  EXPECT_EQ(b.qs[1], 4);
  EXPECT_EQ(b.qs[2], -127);
  EXPECT_EQ(b.qs[3], 126);
  EXPECT_EQ(b.bsums[0], 2 + 4 - 127 + 126);
}

TEST(QuantizeQ8K, AllZeroBlock) {
  std::array<float, 512> x{};  // [512]
  x[300] = -3.0f;
  std::array<BlockQ8K, 2> b;
  std::memset(b.data(), 0x5a, sizeof(b));
  quantize_row_q8_K(x.data(), b.data(), 512);
  EXPECT_EQ(b[0].d, 0.0f);
  for (int8_t q : b[0].qs) EXPECT_EQ(q, 0);
  for (int16_t s : b[0].bsums) EXPECT_EQ(s, 0);
  EXPECT_FLOAT_EQ(b[1].d, 3.0f / 127.0f);
  EXPECT_EQ(b[1].qs[44], -127);
}

// --- Q4_0 --------------------------------------------------------------------------------

TEST(QuantizeQ4_0, NegativeExtremeMapsToLevelZero) {
  // Signed max -8 -> d = 1, q = min(15, trunc(x + 8.5)): -8 -> 0, 0.5 -> 9 (half up),
  // -0.5 -> 8, 7 -> 15, 7.9 -> 16 clamped to 15.
  std::array<float, 32> x{};  // [32]
  x[0] = -8.0f;
  x[1] = 0.5f;
  x[2] = -0.5f;
  x[3] = 7.0f;
  x[16] = 7.9f;
  BlockQ4_0 b;
  quantize_row_q4_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x3c00);
  EXPECT_EQ(b.qs[0], 0 | (15 << 4));  // element 0 low nibble, element 16 high nibble
  EXPECT_EQ(b.qs[1], 9 | (8 << 4));
  EXPECT_EQ(b.qs[2], 8 | (8 << 4));
  EXPECT_EQ(b.qs[3], 15 | (8 << 4));
}

// --- MXFP4 -------------------------------------------------------------------------------

TEST(QuantizeMxfp4, HandComputedBlock) {
  // absmax 6 -> e = floor(log2 6) - 2 + 127 = 127, scale 2^(127 - 128) = 0.5: the doubled
  // table values times 0.5 are the E2M1 values. Ties go to the lower code (0.75 between 0.5 and
  // 1; 5 between 4 and 6; -0.25 between 0 and -0.5).
  std::array<float, 32> x{};  // [32]
  const float values[] = {6.0f, -6.0f, 0.5f, 0.75f, -0.25f, 5.0f, 1.4f};
  std::copy(std::begin(values), std::end(values), x.begin());
  x[16] = 2.9f;
  x[17] = -3.2f;
  BlockMxfp4 b;
  quantize_row_mxfp4(x.data(), &b, 32);
  EXPECT_EQ(b.e, 127);
  const uint8_t want_low[] = {7, 15, 1, 1, 0, 6, 3};  // 1.4 -> 1.5
  for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j] & 0xf, want_low[j]) << j;
  EXPECT_EQ(b.qs[0] >> 4, 5);   // 2.9 -> 3
  EXPECT_EQ(b.qs[1] >> 4, 13);  // -3.2 -> -3
  std::array<float, 32> y{};    // [32]
  dequantize_row_mxfp4(&b, y.data(), 32);
  EXPECT_EQ(y[0], 6.0f);
  EXPECT_EQ(y[1], -6.0f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[5], 4.0f);
  EXPECT_EQ(y[16], 3.0f);
  EXPECT_EQ(y[17], -3.0f);
}

TEST(QuantizeMxfp4, ScaleIsTwoToTheEMinus128IncludingSubnormals) {
  for (int e : {0, 1, 2, 100, 127, 128, 254}) {
    EXPECT_EQ(e8m0_to_fp32_half(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 128)) << e;
  }
  BlockMxfp4 b{};
  b.e = 0;
  b.qs[0] = 7 | (15 << 4);    // 12 and -12 times 2^-128
  std::array<float, 32> y{};  // [32]
  dequantize_row_mxfp4(&b, y.data(), 32);
  EXPECT_EQ(y[0], std::ldexp(12.0f, -128));
  EXPECT_EQ(y[16], std::ldexp(-12.0f, -128));
}

TEST(QuantizeMxfp4, EveryElementGetsTheNearestValueOfItsBlockScale) {
  for (Distribution dist : {Distribution::kNormal, Distribution::kUniform}) {
    const std::vector<float> x = test::random_data(dist, 4096, 5);
    const std::vector<uint8_t> q = test::quantize_vec(GgmlType::kMXFP4, x);
    const std::vector<float> y = test::dequantize_vec(GgmlType::kMXFP4, q, x.size());
    const auto* blocks = reinterpret_cast<const BlockMxfp4*>(q.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = e8m0_to_fp32_half(blocks[i / 32].e);
      float best = INFINITY;
      for (int8_t v : kMxfp4Values) best = std::min(best, std::fabs(v * d - x[i]));
      ASSERT_EQ(std::fabs(y[i] - x[i]), best) << i;
    }
  }
}

// --- Round trip error per type -------------------------------------------------------------

const GgmlType kAllTypes[] = {GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0, GgmlType::kQ4_1,
                              GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ8_1,
                              GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                              GgmlType::kQ6_K, GgmlType::kQ8_K};

TEST(QuantizeRoundTrip, ErrorWithinPerTypeBound) {
  constexpr size_t kN = 256 * 256;
  for (Distribution dist : {Distribution::kNormal, Distribution::kUniform}) {
    const std::vector<float> x = test::random_data(dist, kN, 42);
    const char* dist_name = dist == Distribution::kNormal ? "normal" : "uniform";
    for (GgmlType type : kAllTypes) {
      const std::vector<float> y = test::dequantize_vec(type, test::quantize_vec(type, x), kN);
      const double err = test::rms_diff(x, y);
      const double model = test::nominal_error_rms(type, x);
      const double bound = test::allowed_error_factor(type) * model;
      EXPECT_LE(err, bound) << ggml_type_info(type).name << " " << dist_name << ": rms error "
                            << err << ", model " << model;
      // The model is not vacuous either: the error is at least a third of it.
      EXPECT_GE(err, model / 3) << ggml_type_info(type).name << " " << dist_name;
      RecordProperty(std::string(ggml_type_info(type).name) + "_" + dist_name + "_rel_rms",
                     std::to_string(err / test::rms(x)));
    }
  }
}

TEST(QuantizeRoundTrip, ZeroRowStaysZero) {
  const std::vector<float> x(512, 0.0f);  // [512]
  for (GgmlType type : kAllTypes) {
    const std::vector<float> y = test::dequantize_vec(type, test::quantize_vec(type, x), 512);
    for (float v : y) ASSERT_EQ(v, 0.0f) << ggml_type_info(type).name;
  }
}

TEST(QuantizeRoundTrip, ConstantRowIsNearlyExact) {
  // A constant row is the easiest case for every scheme: error within 1% of the value (4-bit
  // scales of Q2_K: within 1/15 + f16 rounding).
  const std::vector<float> x(512, -0.75f);  // [512]
  for (GgmlType type : kAllTypes) {
    const std::vector<float> y = test::dequantize_vec(type, test::quantize_vec(type, x), 512);
    const double tol = type == GgmlType::kQ2_K ? 0.75 / 15 : 0.0075;
    for (float v : y) ASSERT_NEAR(v, -0.75, tol) << ggml_type_info(type).name;
  }
}

// --- Traits and checked entry points ------------------------------------------------------

TEST(QuantTraits, EveryComputableTypeHasConsistentTraits) {
  struct Want {
    GgmlType type;
    GgmlType vec_dot_type;
  };
  // ggml-cpu's type_traits_cpu[].vec_dot_type.
  const Want wants[] = {
      {GgmlType::kF32, GgmlType::kF32},   {GgmlType::kF16, GgmlType::kF16},
      {GgmlType::kBF16, GgmlType::kBF16}, {GgmlType::kQ4_0, GgmlType::kQ8_0},
      {GgmlType::kQ4_1, GgmlType::kQ8_1}, {GgmlType::kQ5_0, GgmlType::kQ8_0},
      {GgmlType::kQ5_1, GgmlType::kQ8_1}, {GgmlType::kQ8_0, GgmlType::kQ8_0},
      {GgmlType::kQ2_K, GgmlType::kQ8_K}, {GgmlType::kQ3_K, GgmlType::kQ8_K},
      {GgmlType::kQ4_K, GgmlType::kQ8_K}, {GgmlType::kQ5_K, GgmlType::kQ8_K},
      {GgmlType::kQ6_K, GgmlType::kQ8_K}, {GgmlType::kMXFP4, GgmlType::kQ8_0},
  };
  for (const Want& w : wants) {
    const QuantTraits* t = quant_traits(w.type);
    ASSERT_NE(t, nullptr) << ggml_type_info(w.type).name;
    EXPECT_EQ(t->vec_dot_type, w.vec_dot_type) << ggml_type_info(w.type).name;
    EXPECT_EQ(t->block_size, ggml_type_info(w.type).block_size);
    EXPECT_EQ(t->bytes_per_block, ggml_type_info(w.type).bytes_per_block);
    EXPECT_NE(t->to_float, nullptr);
    EXPECT_NE(t->from_float, nullptr);
    EXPECT_NE(ref::vec_dot_for(w.type), nullptr) << ggml_type_info(w.type).name;
    EXPECT_NE(quant_traits(t->vec_dot_type), nullptr);
    EXPECT_TRUE(ggml_type_info(w.type).computable) << ggml_type_info(w.type).name;
  }
  EXPECT_EQ(ref::vec_dot_for(GgmlType::kQ8_K), nullptr);
  EXPECT_EQ(ref::vec_dot_for(GgmlType::kQ8_1), nullptr);
  EXPECT_EQ(quant_traits(GgmlType::kIQ2_XXS), nullptr);
  EXPECT_EQ(ref::vec_dot_for(GgmlType::kIQ4_NL), nullptr);
}

TEST(QuantChecked, RejectsBadCountsSizesAndTypes) {
  std::vector<float> x(100, 1.0f);  // [100]: not a multiple of 32
  std::vector<uint8_t> q(1000);     // [bytes]
  Status s = quantize_checked(GgmlType::kQ8_0, x, q);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "[quant] quantize q8_0: element count must be a multiple of 32, got 100");

  x.resize(64);
  s = quantize_checked(GgmlType::kQ8_0, x, q);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "[quant] quantize q8_0: 64 elements need 68 bytes, got 1000");

  q.resize(68);
  EXPECT_TRUE(quantize_checked(GgmlType::kQ8_0, x, q).is_ok());
  std::vector<float> back(64);  // [64]
  EXPECT_TRUE(dequantize_checked(GgmlType::kQ8_0, q, back).is_ok());
  EXPECT_EQ(back[5], 127 * fp16_to_fp32(0x2008));  // d = f16(1 / 127), q = 127

  s = dequantize_checked(GgmlType::kQ4_K, q, back);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "[quant] dequantize q4_K: element count must be a multiple of 256, got 64");

  x[3] = NAN;
  s = quantize_checked(GgmlType::kQ8_0, x, q);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "[quant] quantize q8_0: element 3 is nan, expected a finite value");

  s = dequantize_checked(GgmlType::kIQ2_XXS, q, back);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(s.message(), "[quant] dequantize: type iq2_xxs is not supported");
}

}  // namespace
}  // namespace minfer
