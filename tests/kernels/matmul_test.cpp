// Matmul: every SIMD table against the reference tiles for every weight type, bit-identical
// results for 1, 2 and 3 threads, and GEMV rows equal to the same rows inside a GEMM.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant_traits.h"

namespace minfer::kernels {
namespace {

using test::random_floats;
using test::simd_tables;

// Every weight type of DESIGN.md §4.
const GgmlType kWeightTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,
                                 GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
                                 GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                                 GgmlType::kQ6_K, GgmlType::kMXFP4};

// Tolerance of a SIMD matmul element against the reference, relative to Σ_k |w_k x_k| over the
// dequantized operands: the integer block sums are exact, so only the float steps (scales,
// the order of the per-block or per-element sums) differ.
constexpr double kMatmulRelToAbsSum = 2e-6;

// The n_in values to test: kSizes for the float types; multiples of the block size covering the
// same range for the block types.
std::vector<int64_t> sizes_for(GgmlType type) {
  const uint32_t block = quant_traits(type)->block_size;
  if (block == 1) return test::kSizes;
  if (block == 32) return {32, 64, 256, 288, 4128};
  return {256, 512, 4352};
}

struct Problem {
  GgmlType type;
  int64_t n_in, n_out, n_tokens;
  std::vector<uint8_t> weights;  // [n_out][row bytes]
  std::vector<float> x;          // [n_tokens][n_in]
  std::vector<float> abs_sum;    // [n_tokens][n_out] Σ|w x| of the dequantized operands
};

Problem make_problem(GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tokens, uint32_t seed) {
  Problem p{type, n_in, n_out, n_tokens, {}, {}, {}};
  const QuantTraits& traits = *quant_traits(type);
  const size_t row_bytes = static_cast<size_t>(n_in / traits.block_size) * traits.bytes_per_block;
  p.weights.resize(row_bytes * n_out);
  std::vector<float> w_f = random_floats(n_in * n_out, seed, -1.0f, 1.0f);
  for (int64_t r = 0; r < n_out; ++r) {
    quantize_row(type, w_f.data() + r * n_in, p.weights.data() + r * row_bytes, n_in);
    dequantize_row(type, p.weights.data() + r * row_bytes, w_f.data() + r * n_in, n_in);
  }
  p.x = random_floats(n_in * n_tokens, seed + 1, -2.0f, 2.0f);
  p.abs_sum.assign(n_tokens * n_out, 0.0f);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < n_out; ++r) {
      double s = 0.0;
      for (int64_t k = 0; k < n_in; ++k) s += std::fabs(w_f[r * n_in + k] * p.x[t * n_in + k]);
      p.abs_sum[t * n_out + r] = static_cast<float>(s);
    }
  }
  return p;
}

std::vector<float> run(const KernelTable& table, ThreadPool& pool, const Problem& p, const float* x,
                       int64_t n_tokens) {
  std::vector<uint8_t> scratch(matmul_scratch_bytes(p.type, n_tokens, p.n_in));
  std::vector<float> y(n_tokens * p.n_out, -12345.0f);
  matmul(table, pool, MatmulWeights{p.type, p.weights.data(), p.n_out, p.n_in}, x, n_tokens,
         y.data(), scratch);
  return y;
}

TEST(Matmul, SupportsEveryWeightType) {
  for (GgmlType type : kWeightTypes) {
    EXPECT_TRUE(matmul_supports(type)) << ggml_type_info(type).name;
  }
  EXPECT_FALSE(matmul_supports(GgmlType::kQ8_K));
  EXPECT_FALSE(matmul_supports(GgmlType::kIQ2_XXS));
}

TEST(Matmul, SimdMatchesRefForEveryType) {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  ThreadPool pool(1);
  for (GgmlType type : kWeightTypes) {
    for (int64_t n_in : sizes_for(type)) {
      // 7 rows and 6 tokens: partial micro-tiles in both directions.
      const Problem p = make_problem(type, n_in, 7, 6, static_cast<uint32_t>(n_in) * 31u + 5u);
      const std::vector<float> expected = run(ref_table, pool, p, p.x.data(), p.n_tokens);
      for (const KernelTable* t : simd_tables()) {
        const std::vector<float> actual = run(*t, pool, p, p.x.data(), p.n_tokens);
        for (size_t i = 0; i < expected.size(); ++i) {
          ASSERT_NEAR(actual[i], expected[i], kMatmulRelToAbsSum * p.abs_sum[i] + 1e-6)
              << t->name << " " << ggml_type_info(type).name << " n_in=" << n_in << " element "
              << i;
        }
      }
    }
  }
}

TEST(Matmul, QuantizedSimdTilesAreBitIdenticalToRef) {
  // The quantized tiles sum integers exactly and repeat the reference's float steps in its
  // order, so they must match it exactly (sizes as above, 19 rows: a partial 16-row group; one
  // token takes the single-token paths, 6 the tiles).
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  ThreadPool pool(1);
  for (GgmlType type : kWeightTypes) {
    if (!ggml_type_info(type).is_quantized) continue;
    for (int64_t n_in : sizes_for(type)) {
      for (int64_t n_tokens : {1, 6}) {
        const Problem p = make_problem(type, n_in, 19, n_tokens, static_cast<uint32_t>(n_in) + 3u);
        const std::vector<float> expected = run(ref_table, pool, p, p.x.data(), p.n_tokens);
        for (const KernelTable* t : simd_tables()) {
          const std::vector<float> actual = run(*t, pool, p, p.x.data(), p.n_tokens);
          EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), expected.size() * sizeof(float)))
              << t->name << " " << ggml_type_info(type).name << " n_in=" << n_in
              << " n_tokens=" << n_tokens;
        }
      }
    }
  }
}

// The 16 lanes summed as avx512::hsum_ps adds them: j + (j + 8), then j + (j + 4), then
// (0 + 2) + (1 + 3).
float hsum16(const float* v) {
  float h[8], s[4];
  for (int j = 0; j < 8; ++j) h[j] = v[j] + v[j + 8];
  for (int j = 0; j < 4; ++j) s[j] = h[j] + h[j + 4];
  return (s[0] + s[2]) + (s[1] + s[3]);
}

// One output of the float tiles (kernels/float_tile_impl.h) in scalar steps of the same order:
// F32 rows whose length is not a multiple of 16 as llama.cpp's AVX-512 ggml_vec_dot_f32 (four
// 16-lane accumulators over steps of 64, folded (0 + 2) + (1 + 3), then the leftovers by fma),
// every other row in 16 lanes over steps of 16 (zero-filled past the end).
float float_tile_dot(GgmlType type, const float* w, const float* x, int64_t n) {
  if (type == GgmlType::kF32 && n % 16 != 0) {
    float acc[4][16] = {};
    const int64_t np = n & ~int64_t{63};
    for (int64_t k = 0; k < np; k += 64) {
      for (int a = 0; a < 4; ++a) {
        for (int j = 0; j < 16; ++j) {
          acc[a][j] = std::fma(w[k + 16 * a + j], x[k + 16 * a + j], acc[a][j]);
        }
      }
    }
    float folded[16];
    for (int j = 0; j < 16; ++j) folded[j] = (acc[0][j] + acc[2][j]) + (acc[1][j] + acc[3][j]);
    float r = hsum16(folded);
    for (int64_t k = np; k < n; ++k) r = std::fma(w[k], x[k], r);
    return r;
  }
  float acc[16] = {};
  for (int64_t k = 0; k < n; k += 16) {
    for (int j = 0; j < 16; ++j) {
      const bool in = k + j < n;
      acc[j] = std::fma(in ? w[k + j] : 0.0f, in ? x[k + j] : 0.0f, acc[j]);
    }
  }
  return hsum16(acc);
}

TEST(Matmul, FloatSimdTilesSumInTheAvx512OrderOnEveryIsa) {
  // The float tiles of every ISA (AVX-512, AVX2 / AVX-VNNI, NEON) sum in the AVX-512 table's
  // order, the order of llama.cpp's AVX-512 build, so they agree bit for bit with one another
  // and with float_tile_dot on the weights and activations as the kernels see them (the
  // activations converted to the weight type). 7 rows and 1 or 6 tokens: partial micro-tiles
  // in both directions and the single-token path; 172: stories260K's ffn_down.
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  ThreadPool pool(2);
  std::vector<int64_t> sizes = test::kSizes;
  sizes.push_back(172);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    const size_t elem = ggml_type_info(type).bytes_per_block;
    for (int64_t n_in : sizes) {
      for (int64_t n_tokens : {1, 6}) {
        const Problem p = make_problem(type, n_in, 7, n_tokens, static_cast<uint32_t>(n_in) + 11u);
        std::vector<float> w(n_in * p.n_out), x(n_in * n_tokens);
        std::vector<uint8_t> x_conv(n_in * elem);
        for (int64_t r = 0; r < p.n_out; ++r) {
          dequantize_row(type, p.weights.data() + r * n_in * elem, w.data() + r * n_in, n_in);
        }
        for (int64_t t = 0; t < n_tokens; ++t) {
          quantize_row(type, p.x.data() + t * n_in, x_conv.data(), n_in);
          dequantize_row(type, x_conv.data(), x.data() + t * n_in, n_in);
        }
        std::vector<float> expected(n_tokens * p.n_out);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < p.n_out; ++r) {
            expected[t * p.n_out + r] =
                float_tile_dot(type, w.data() + r * n_in, x.data() + t * n_in, n_in);
          }
        }
        for (const KernelTable* t : simd_tables()) {
          const std::vector<float> actual = run(*t, pool, p, p.x.data(), p.n_tokens);
          for (size_t i = 0; i < expected.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(actual[i]), std::bit_cast<uint32_t>(expected[i]))
                << t->name << " " << ggml_type_info(type).name << " n_in=" << n_in
                << " n_tokens=" << n_tokens << " element " << i << ": " << actual[i] << " vs "
                << expected[i];
          }
        }
      }
    }
  }
}

// Byte offsets of the f16 scale fields inside one block of a quantized weight type.
std::vector<size_t> f16_fields(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ5_0:
    case GgmlType::kQ8_0:
      return {0};
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
      return {0, 2};
    case GgmlType::kQ2_K:
      return {offsetof(BlockQ2K, d), offsetof(BlockQ2K, dmin)};
    case GgmlType::kQ3_K:
      return {offsetof(BlockQ3K, d)};
    case GgmlType::kQ6_K:
      return {offsetof(BlockQ6K, d)};
    default:
      return {};
  }
}

TEST(Matmul, QuantizedTilesMatchRefOnArbitraryBlockBytes) {
  // Every bit pattern of quants and packed scales (Q8_0's -128, 6-bit scales with their top
  // bits set, all fifth / high bits), finite f16 scales of both signs; 41 rows (16-row groups
  // plus a partial one) and 70 tokens (past the 64-token pass of the tiles) or 1 (the
  // single-token paths).
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  ThreadPool pool(2);
  std::mt19937 rng(2024);
  for (GgmlType type : kWeightTypes) {
    for (int64_t n_tokens : {1, 70}) {
      if (!ggml_type_info(type).is_quantized) continue;
      const QuantTraits& traits = *quant_traits(type);
      const int64_t n_in = traits.block_size == 32 ? 320 : 512;
      Problem p = make_problem(type, n_in, 41, n_tokens, 7);
      std::uniform_int_distribution<int> byte(0, 255);
      std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
      for (uint8_t& b : p.weights) b = static_cast<uint8_t>(byte(rng));
      for (size_t blk = 0; blk < p.weights.size() / traits.bytes_per_block; ++blk) {
        for (size_t field : f16_fields(type)) {
          const uint16_t h = fp32_to_fp16(scale(rng));
          std::memcpy(&p.weights[blk * traits.bytes_per_block + field], &h, sizeof(h));
        }
      }
      const std::vector<float> expected = run(ref_table, pool, p, p.x.data(), p.n_tokens);
      for (const KernelTable* t : simd_tables()) {
        const std::vector<float> actual = run(*t, pool, p, p.x.data(), p.n_tokens);
        EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), expected.size() * sizeof(float)))
            << t->name << " " << ggml_type_info(type).name << " n_tokens=" << n_tokens;
      }
    }
  }
}

TEST(Matmul, Q8_0TilesAreExactAtTheDotExtremesForEveryTokenCount) {
  // Q8_0 lanes whose 4-quant dots reach their extremes (weights -128 or 127, activations
  // quantized to ±127: |Σ w x| up to 65024, which the AVX-512 tile carries as the float
  // 12582912 + Σ w x) beside random ones, for every token count up to 8 (each remainder of the
  // tiles' token groups) and 70, on 1 to 3 threads: every table gives the reference's bits.
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  std::mt19937 rng(77);
  const int64_t n_in = 128, n_out = 35;
  for (int64_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 8, 70}) {
    Problem p = make_problem(GgmlType::kQ8_0, n_in, n_out, n_tokens, 11);
    std::uniform_int_distribution<int> pick(0, 3);
    for (size_t blk = 0; blk < p.weights.size() / sizeof(BlockQ8_0); ++blk) {
      BlockQ8_0 b;
      std::memcpy(&b, &p.weights[blk * sizeof(BlockQ8_0)], sizeof(b));
      const int mode = pick(rng);  // 0: all -128, 1: all 127, 2: alternating, 3: as quantized
      for (int i = 0; i < kQK8_0 && mode != 3; ++i) {
        b.qs[i] = static_cast<int8_t>(mode == 0 ? -128 : mode == 1 ? 127 : (i % 2 ? -128 : 127));
      }
      std::memcpy(&p.weights[blk * sizeof(BlockQ8_0)], &b, sizeof(b));
    }
    for (size_t i = 0; i < p.x.size(); ++i) {
      const int mode = pick(rng);  // ±1 in every block: quants ±127 (amax 1)
      p.x[i] = mode == 0 ? 1.0f : mode == 1 ? -1.0f : mode == 2 ? (i % 2 ? 1.0f : -1.0f) : p.x[i];
    }
    ThreadPool one(1);
    const std::vector<float> expected = run(ref_table, one, p, p.x.data(), p.n_tokens);
    for (int threads = 1; threads <= 3; ++threads) {
      ThreadPool pool(threads);
      for (const KernelTable* t : simd_tables()) {
        const std::vector<float> actual = run(*t, pool, p, p.x.data(), p.n_tokens);
        EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), expected.size() * sizeof(float)))
            << t->name << " n_tokens=" << n_tokens << " threads=" << threads;
      }
    }
  }
}

TEST(Matmul, RefMatchesDequantizedFloatDot) {
  // The reference through the matmul driver (activation conversion included) stays close to
  // the float dot of dequantized weights with the unquantized activations.
  ThreadPool pool(1);
  for (GgmlType type : kWeightTypes) {
    const int64_t n_in = 256;
    const Problem p = make_problem(type, n_in, 3, 2, 77);
    const std::vector<float> y = run(ref_table, pool, p, p.x.data(), p.n_tokens);
    const QuantTraits& traits = *quant_traits(type);
    const size_t row_bytes = static_cast<size_t>(n_in / traits.block_size) * traits.bytes_per_block;
    std::vector<float> w_row(n_in);
    for (int64_t t = 0; t < p.n_tokens; ++t) {
      for (int64_t r = 0; r < p.n_out; ++r) {
        dequantize_row(type, p.weights.data() + r * row_bytes, w_row.data(), n_in);
        double expected = 0.0;
        for (int64_t k = 0; k < n_in; ++k) expected += w_row[k] * p.x[t * n_in + k];
        // Activation quantization to 8 bits: error ~ 1% of Σ|w x|.
        EXPECT_NEAR(y[t * p.n_out + r], expected, 0.02 * p.abs_sum[t * p.n_out + r])
            << ggml_type_info(type).name;
      }
    }
  }
}

TEST(Matmul, BitIdenticalForOneTwoThreeThreads) {
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (const KernelTable* t : test::all_tables()) {
    for (GgmlType type : kWeightTypes) {
      // 37 rows: uneven splits. 5 tokens: threads split the rows; 50: few rows for many tokens,
      // so they split the tokens (uneven too).
      for (int64_t n_tokens : {5, 50}) {
        const Problem p = make_problem(type, 512, 37, n_tokens, 99);
        const std::vector<float> y1 = run(*t, pool1, p, p.x.data(), p.n_tokens);
        const std::vector<float> y2 = run(*t, pool2, p, p.x.data(), p.n_tokens);
        const std::vector<float> y3 = run(*t, pool3, p, p.x.data(), p.n_tokens);
        EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)))
            << t->name << " " << ggml_type_info(type).name << " n_tokens=" << n_tokens;
        EXPECT_EQ(0, std::memcmp(y1.data(), y3.data(), y1.size() * sizeof(float)))
            << t->name << " " << ggml_type_info(type).name << " n_tokens=" << n_tokens;
        for (float v : y1) ASSERT_NE(v, -12345.0f) << "an output element was not written";
        for (float v : y2) ASSERT_NE(v, -12345.0f) << "an output element was not written";
      }
    }
  }
}

TEST(Matmul, GemvRowEqualsTheSameRowInAGemm) {
  ThreadPool pool(2);
  for (const KernelTable* t : test::all_tables()) {
    for (GgmlType type : kWeightTypes) {
      const Problem p = make_problem(type, 512, 9, 6, 123);
      const std::vector<float> gemm = run(*t, pool, p, p.x.data(), p.n_tokens);
      for (int64_t tok = 0; tok < p.n_tokens; ++tok) {
        const std::vector<float> gemv = run(*t, pool, p, p.x.data() + tok * p.n_in, 1);
        EXPECT_EQ(0, std::memcmp(gemv.data(), gemm.data() + tok * p.n_out, p.n_out * sizeof(float)))
            << t->name << " " << ggml_type_info(type).name << " token " << tok;
      }
    }
  }
}

// Activations converted once (matmul_convert) and a subset of their rows gathered, as the MoE op
// does per expert: matmul_converted gives the bits matmul gives on the same rows.
TEST(Matmul, ConvertedRowsGiveTheSameBitsAsMatmul) {
  ThreadPool pool(2);
  for (const KernelTable* t : test::all_tables()) {
    for (GgmlType type : kWeightTypes) {
      const Problem p = make_problem(type, 512, 40, 20, 7);
      const MatmulWeights w{p.type, p.weights.data(), p.n_out, p.n_in};
      const size_t row_bytes = matmul_act_row_bytes(type, p.n_in);
      std::vector<uint8_t> act(row_bytes * p.n_tokens);
      matmul_convert(*t, pool, w, p.x.data(), p.n_tokens, act);
      // Tokens 3, 4, 11, …: every other one from 3 on, then 0.
      std::vector<int64_t> picked;
      for (int64_t tok = 3; tok < p.n_tokens; tok += 2) picked.push_back(tok);
      picked.push_back(0);
      const int64_t m = static_cast<int64_t>(picked.size());
      std::vector<uint8_t> gathered(row_bytes * m);
      std::vector<float> x_rows(p.n_in * m);
      for (int64_t i = 0; i < m; ++i) {
        std::memcpy(gathered.data() + i * row_bytes, act.data() + picked[i] * row_bytes, row_bytes);
        std::memcpy(x_rows.data() + i * p.n_in, p.x.data() + picked[i] * p.n_in,
                    p.n_in * sizeof(float));
      }
      std::vector<float> y(m * p.n_out, -12345.0f);
      matmul_converted(*t, pool, w, gathered.data(), m, y.data());
      const std::vector<float> expected = run(*t, pool, p, x_rows.data(), m);
      EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)))
          << t->name << " " << ggml_type_info(type).name;
    }
  }
  EXPECT_TRUE(matmul_shares_act(GgmlType::kQ4_K, GgmlType::kQ6_K));  // both Q8_K
  EXPECT_FALSE(matmul_shares_act(GgmlType::kQ4_K, GgmlType::kQ8_0));
}

// Several matrices of one input in one dispatch (a layer's q, k, v): the bits of one matmul
// each, for 1 to 3 threads, one token (a decode step) and a few, mixed types of one
// vec_dot_type, and odd row counts so that a thread's range crosses from one matrix to the next.
TEST(Matmul, SharedInputGivesTheBitsOfOneMatmulEach) {
  ThreadPool pool1(1), pool2(2), pool3(3);
  const std::vector<std::vector<GgmlType>> groups = {
      {GgmlType::kQ8_0, GgmlType::kQ8_0, GgmlType::kQ8_0},
      {GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_0},
      {GgmlType::kQ4_K, GgmlType::kQ6_K},
      {GgmlType::kF32, GgmlType::kF32, GgmlType::kF32, GgmlType::kF32},
      {GgmlType::kF16, GgmlType::kF16}};
  for (const KernelTable* t : test::all_tables()) {
    for (const std::vector<GgmlType>& types : groups) {
      for (int64_t n_tokens : {1, 3}) {
        std::vector<Problem> problems;
        std::vector<MatmulWeights> ws;
        for (size_t i = 0; i < types.size(); ++i) {
          const int64_t n_out = 37 + 16 * static_cast<int64_t>(i);
          problems.push_back(make_problem(types[i], 512, n_out, n_tokens, 40 + i));
        }
        for (const Problem& p : problems) {
          ws.push_back(MatmulWeights{p.type, p.weights.data(), p.n_out, p.n_in});
        }
        const float* x = problems[0].x.data();
        for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
          std::vector<std::vector<float>> ys;
          std::vector<float*> y_ptrs;
          for (const Problem& p : problems) ys.emplace_back(n_tokens * p.n_out, -12345.0f);
          for (std::vector<float>& y : ys) y_ptrs.push_back(y.data());
          std::vector<uint8_t> scratch(matmul_scratch_bytes(types[0], n_tokens, 512));
          matmul_shared_input(*t, *pool, ws, x, n_tokens, y_ptrs, scratch);
          for (size_t i = 0; i < problems.size(); ++i) {
            const std::vector<float> expected = run(*t, pool1, problems[i], x, n_tokens);
            EXPECT_EQ(0, std::memcmp(ys[i].data(), expected.data(), expected.size() * 4))
                << t->name << " " << ggml_type_info(types[i]).name << " matrix " << i
                << " n_tokens=" << n_tokens << " threads=" << pool->n_threads();
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
