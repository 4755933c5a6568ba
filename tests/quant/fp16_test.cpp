// f16 / bf16 conversions: special values, rounding ties, subnormals, and every f16 bit pattern
// and a million floats against an independent double-precision rounding.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "quant/fp16.h"

namespace minfer {
namespace {

float bits_to_float(uint32_t b) {
  return std::bit_cast<float>(b);
}

TEST(Fp16, ExactAndSpecialValues) {
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);  // largest finite f16
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(1023 * 0x1p-24f), 0x03ff);
  EXPECT_EQ(fp32_to_fp16(-0x1p-24f), 0x8001);
  EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(bits_to_float(1)), 0x0000);  // f32 subnormal

  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0x8400), -0x1p-14f);
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp16_to_fp32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xfc00), -std::numeric_limits<float>::infinity());
}

TEST(Fp16, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: the even neighbour (mantissa 0) wins.
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between mantissas 1 and 2: 2 wins.
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
  // Just above a tie rounds up, just below rounds down.
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f - 0x1p-20f), 0x3c01);
  // 65520 is halfway between 65504 (odd mantissa) and 2^16: it rounds to inf; below stays.
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7bff);
  // Subnormal ties: 2^-25 is halfway between 0 and 2^-24 -> 0; 3 * 2^-25 -> 2 * 2^-24.
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0x1p-25f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(fp32_to_fp16(5 * 0x1p-25f), 0x0002);
  // Rounding up out of the subnormal range gives the smallest normal.
  EXPECT_EQ(fp32_to_fp16(0x1p-14f - 0x1p-26f), 0x0400);
}

TEST(Fp16, NanStaysQuietNan) {
  const uint16_t qnan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(qnan & 0x7c00, 0x7c00);
  EXPECT_NE(qnan & 0x0200, 0);  // quiet bit
  // A signalling NaN whose payload sits only in the low bits must not become inf.
  const uint16_t snan = fp32_to_fp16(bits_to_float(0x7f800001u));
  EXPECT_EQ(snan, 0x7e00);
  EXPECT_EQ(fp32_to_fp16(bits_to_float(0xff800001u)), 0xfe00);
  // Top payload bits are kept (as F16C does).
  EXPECT_EQ(fp32_to_fp16(bits_to_float(0x7fc02000u)), 0x7e01);
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7c01)));
}

TEST(Fp16, EveryF16RoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    const bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(fp32_to_fp16(f), h | 0x0200) << h;  // quieted, otherwise unchanged
    } else {
      ASSERT_EQ(fp32_to_fp16(f), h) << h;
    }
  }
}

// Independent reference: round |f| to the f16 grid in double arithmetic (nearbyint is
// round-half-even in the default rounding mode), then compare values.
double reference_f16_value(float f) {
  const double a = std::fabs(static_cast<double>(f));
  if (a == 0.0) return 0.0;
  const int e = std::max(std::ilogb(a), -14);
  const double spacing = std::ldexp(1.0, e - 10);
  const double rounded = std::nearbyint(a / spacing) * spacing;
  return rounded >= 65536.0 ? std::numeric_limits<double>::infinity() : rounded;
}

TEST(Fp16, MatchesDoublePrecisionRounding) {
  std::mt19937 rng(1234);
  // Exponents from f32 subnormals up to past the f16 range, random mantissas.
  std::uniform_int_distribution<uint32_t> exponent(80, 145);
  std::uniform_int_distribution<uint32_t> mantissa(0, 0x7fffff);
  std::uniform_int_distribution<uint32_t> low_bits(0, 0x1fff);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits = (exponent(rng) << 23) | mantissa(rng);
    // Every 4th sample lands exactly on a tie of the normal range's 13 dropped bits.
    if (i % 4 == 0) bits = (bits & ~0x1fffu) | 0x1000u;
    if (i % 8 == 1) bits = (bits & ~0x1fffu) | low_bits(rng);
    if (i % 2 == 0) bits |= 0x80000000u;
    const float f = bits_to_float(bits);
    const double want = std::copysign(reference_f16_value(f), static_cast<double>(f));
    ASSERT_EQ(static_cast<double>(fp16_to_fp32(fp32_to_fp16(f))), want) << std::hex << bits;
  }
}

TEST(Bf16, ValuesTiesAndSpecials) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xc000);
  // 0x3f808000 is halfway between 0x3f80 and 0x3f81: the even one wins; next tie goes up.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3f808000u)), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3f818000u)), 0x3f82);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3f808001u)), 0x3f81);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3f807fffu)), 0x3f80);
  // Largest float rounds past the largest finite bf16 into inf.
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  // NaNs stay NaN and become quiet, keeping the sign.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0xff800001u)), 0xffc0);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7fc00000u)), 0x7fc0);
  // Subnormals are rounded, not flushed.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00010000u)), 0x0001);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00008000u)), 0x0000);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x00018000u)), 0x0002);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x80018000u)), 0x8002);

  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0x0001), bits_to_float(0x00010000u));
  EXPECT_TRUE(std::isnan(bf16_to_fp32(0x7fc1)));
}

TEST(Bf16, EveryBf16RoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    const bool is_nan = (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0;
    ASSERT_EQ(fp32_to_bf16(f), is_nan ? (h | 0x0040) : h) << h;
  }
}

}  // namespace
}  // namespace minfer
