// The x16 row-interleaved layout (kernels/interleave.h): the repack round-trips, and every table
// (its x16 tiles, or matmul's fallback without them) gives the reference tiles' bits on the GGUF
// layout, for 1 to 70 tokens, odd numbers of row groups and 1, 2 and 3 threads.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "quant/blocks.h"
#include "quant/quant_traits.h"

namespace minfer::kernels {
namespace {

const GgmlType kTypes[] = {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kMXFP4,
                           GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

bool is_k_quant(GgmlType type) {
  return quant_traits(type)->block_size == 256;
}

// Row widths the type's layout takes: even 32-element blocks, or whole K-quant super-blocks
// (under emulation the large ones are left out: the same code paths, a fraction of the work).
std::vector<int64_t> widths_of(GgmlType type) {
  if (is_k_quant(type))
    return test::under_emulation() ? std::vector<int64_t>{256, 768}
                                   : std::vector<int64_t>{256, 768, 2816};
  return test::under_emulation() ? std::vector<int64_t>{64, 192}
                                 : std::vector<int64_t>{64, 896, 4160};
}

// Row counts: one group, odd numbers of groups (3, and 17 where the machine is not emulated).
std::vector<int64_t> row_counts() {
  return test::under_emulation() ? std::vector<int64_t>{16, 48}
                                 : std::vector<int64_t>{16, 48, 144, 272};
}

struct Matrix {
  GgmlType type;
  int64_t n_in, n_out;
  size_t row_bytes;
  std::vector<uint8_t> gguf;  // [n_out][row bytes]
  std::vector<uint8_t> x16;   // the same, interleaved
};

Matrix make_matrix(GgmlType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  const QuantTraits& traits = *quant_traits(type);
  Matrix m{type,  n_in,
           n_out, static_cast<size_t>(n_in / traits.block_size) * traits.bytes_per_block,
           {},    {}};
  m.gguf.resize(m.row_bytes * n_out);
  const std::vector<float> w = test::random_floats(n_in * n_out, seed, -1.0f, 1.0f);
  for (int64_t r = 0; r < n_out; ++r) {
    quantize_row(type, w.data() + r * n_in, m.gguf.data() + r * m.row_bytes, n_in);
  }
  if (type == GgmlType::kMXFP4) {
    // Exponents from 0 (a subnormal scale) to 2^61, not only those of values near 1.
    for (size_t b = 0; b < m.gguf.size() / sizeof(BlockMxfp4); ++b) {
      m.gguf[b * sizeof(BlockMxfp4) + offsetof(BlockMxfp4, e)] = static_cast<uint8_t>(b * 37 % 190);
    }
  }
  m.x16.assign(m.gguf.size(), 0);
  interleave_rows(type, m.gguf.data(), n_in, 0, n_out, m.x16.data());
  return m;
}

std::vector<float> run(const KernelTable& table, ThreadPool& pool, const Matrix& m,
                       WeightLayout layout, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<uint8_t> scratch(matmul_scratch_bytes(m.type, n_tokens, m.n_in));
  std::vector<float> y(n_tokens * m.n_out, -12345.0f);
  const uint8_t* data = layout == WeightLayout::kRows16 ? m.x16.data() : m.gguf.data();
  matmul(table, pool, MatmulWeights{m.type, data, m.n_out, m.n_in, layout}, x.data(), n_tokens,
         y.data(), scratch);
  return y;
}

TEST(Interleave, ShapesThatCanTakeTheLayout) {
  EXPECT_TRUE(can_interleave(GgmlType::kQ8_0, 896, 896));
  EXPECT_TRUE(can_interleave(GgmlType::kQ5_0, 151936, 896));
  EXPECT_TRUE(can_interleave(GgmlType::kMXFP4, 2880, 2880));  // a gpt-oss-20b expert
  EXPECT_FALSE(can_interleave(GgmlType::kQ8_0, 24, 896));     // rows not a multiple of 16
  EXPECT_FALSE(can_interleave(GgmlType::kQ4_0, 32, 96));      // odd blocks per row
  EXPECT_TRUE(can_interleave(GgmlType::kQ4_K, 151936, 1024));
  EXPECT_TRUE(can_interleave(GgmlType::kQ6_K, 1536, 8960));
  EXPECT_FALSE(can_interleave(GgmlType::kQ4_K, 32, 896));   // not whole super-blocks
  EXPECT_FALSE(can_interleave(GgmlType::kQ6_K, 40, 1024));  // rows not a multiple of 16
  EXPECT_FALSE(can_interleave(GgmlType::kQ3_K, 32, 1024));  // no x16 layout for the type
  EXPECT_FALSE(matmul_supports_layout(ref_table, GgmlType::kQ8_0, WeightLayout::kRows16));
  EXPECT_TRUE(matmul_supports_layout(ref_table, GgmlType::kQ8_0, WeightLayout::kGguf));
}

// Every SIMD table (AVX2 and AVX-512) reads the layout with its own x16 tiles, so loading
// repacks under either (models/repack.h), and types without the layout keep the GGUF one.
// The x86 SIMD tables have x16 tiles for these types; the ARM64 tables have none yet (their
// weights keep the GGUF layout, which the Interleave tests above check through the fallback).
TEST(Interleave, EveryX86SimdTableHasX16Tiles) {
  for (const KernelTable* table : test::simd_tables()) {
    if (table->isa != Isa::kAvx2 && table->isa != Isa::kAvxVnni && table->isa != Isa::kAvx512 &&
        table->isa != Isa::kAmx)
      continue;
    for (GgmlType type : kTypes) {
      EXPECT_TRUE(matmul_supports_layout(*table, type, WeightLayout::kRows16))
          << table->name << " " << ggml_type_info(type).name;
    }
    for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K}) {
      EXPECT_FALSE(matmul_supports_layout(*table, type, WeightLayout::kRows16))
          << table->name << " " << ggml_type_info(type).name;
    }
  }
}

TEST(Interleave, EveryRowComesBack) {
  for (GgmlType type : kTypes) {
    const Matrix m = make_matrix(type, is_k_quant(type) ? 512 : 192, 48, 5);
    std::vector<uint8_t> row(m.row_bytes);
    for (int64_t r = 0; r < m.n_out; ++r) {
      deinterleave_row(type, m.x16.data(), m.n_in, r, row.data());
      ASSERT_EQ(0, std::memcmp(row.data(), m.gguf.data() + r * m.row_bytes, m.row_bytes))
          << ggml_type_info(type).name << " row " << r;
    }
  }
}

TEST(Interleave, X16TilesAreBitIdenticalToRefOnTheGgufLayout) {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  // The SIMD tables run their x16 tiles (AVX2: two 8-row halves per group); ref, which has
  // none, reads the layout through matmul's fallback.
  for (const KernelTable* table : test::all_tables()) {
    for (GgmlType type : kTypes) {
      for (int64_t n_in : widths_of(type)) {
        for (int64_t n_out : row_counts()) {
          const Matrix m = make_matrix(type, n_in, n_out, static_cast<uint32_t>(n_in + n_out));
          for (int64_t n_tokens : {1, 2, 3, 4, 5, 8, 9, 16, 17, 64, 70}) {
            const std::vector<float> x = test::random_floats(n_in * n_tokens, 11, -2.0f, 2.0f);
            const std::vector<float> want =
                run(ref_table, pools[0], m, WeightLayout::kGguf, x, n_tokens);
            for (ThreadPool& pool : pools) {
              const std::vector<float> got =
                  run(*table, pool, m, WeightLayout::kRows16, x, n_tokens);
              ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
                  << table->name << " " << ggml_type_info(type).name << " " << n_in << "x" << n_out
                  << " tokens " << n_tokens << " threads " << pool.n_threads();
            }
          }
        }
      }
    }
  }
}

// The amx table's tiles: Q4_K and Q5_K 16 tokens a tile on AMX, the rest on avx512's kernels
// (Q8_0 all on avx512's, here beside them), the K-quants unpacked 2 blocks at a time. Every
// token count around one, two and three tiles, odd numbers of chunks and remainders (1, 3 and 5
// blocks; Q8_0 1, 3 and 5 block pairs) and 1 or 3 threads (each pool worker loads its own tile
// configuration).
TEST(Interleave, AmxTilesAreBitIdenticalToRefAroundTheTileSizes) {
#if defined(__x86_64__)
  if (!isa_available(Isa::kAmx, cpu_features())) {
    GTEST_SKIP() << "no AMX-INT8 here (CPU features: " << cpu_feature_names(cpu_features()) << ")";
  }
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(3)};
  for (int i = 0; i < 3; ++i) {
    for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K}) {
      const int64_t n_in = (is_k_quant(type) ? 256 : 64) * (2 * i + 1);
      for (int64_t n_out : {16, 48}) {
        const Matrix m = make_matrix(type, n_in, n_out, static_cast<uint32_t>(n_in + n_out));
        for (int64_t n_tokens : {15, 16, 17, 18, 31, 32, 33, 47, 48, 49}) {
          const std::vector<float> x = test::random_floats(n_in * n_tokens, 7, -3.0f, 3.0f);
          const std::vector<float> want =
              run(ref_table, pools[0], m, WeightLayout::kGguf, x, n_tokens);
          for (ThreadPool& pool : pools) {
            const std::vector<float> got =
                run(table_for(Isa::kAmx), pool, m, WeightLayout::kRows16, x, n_tokens);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
                << ggml_type_info(type).name << " " << n_in << "x" << n_out << " tokens "
                << n_tokens << " threads " << pool.n_threads();
          }
        }
      }
    }
  }
#else
  GTEST_SKIP() << "AMX exists on x86-64 only";
#endif
}

}  // namespace
}  // namespace minfer::kernels
