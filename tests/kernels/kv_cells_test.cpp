// The KV cell converters (KernelTable::cells_from_f32 / cells_to_f32): ref is quant/'s row
// arithmetic, and every SIMD table matches ref byte for byte at every size in kSizes, tails
// included (q8_0 sizes count 32-element blocks).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "quant/fp16.h"
#include "quant/ggml_type.h"
#include "quant/quantize.h"

namespace minfer::kernels {
namespace {

using test::all_tables;
using test::kSizes;
using test::random_floats;
using test::simd_tables;

constexpr GgmlType kCellTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16,
                                   GgmlType::kQ8_0};

size_t cell_slot(GgmlType type) {
  return static_cast<size_t>(type);
}

// Elements of a row of `size` units: elements for f32 / f16, 32-element blocks for q8_0.
int64_t row_elements(GgmlType type, int64_t size) {
  return size * ggml_type_info(type).block_size;
}

size_t row_bytes(GgmlType type, int64_t n) {
  return static_cast<size_t>(*ggml_row_bytes(type, static_cast<uint64_t>(n)));
}

// Inputs that exercise each format's rounding. f32 / f16 / bf16: ties, subnormals, overflow,
// infinities, NaN. q8_0 (finite only, as its quantizer requires): random blocks of varied
// magnitude, an all-zero block, and blocks of amax 127 (d = 1) whose values are halfway cases
// and their neighbours, where roundf (away from zero) and round-to-even differ.
std::vector<float> cell_inputs(GgmlType type, int64_t n, uint32_t seed) {
  std::vector<float> v = random_floats(n, seed, -2.0f, 2.0f);
  if (type != GgmlType::kQ8_0) {
    const float specials[] = {0.0f,
                              -0.0f,
                              65504.0f,
                              65520.0f,
                              -3e-7f,
                              5.96e-8f,
                              std::bit_cast<float>(0x3f801000u),  // f16 tie, rounds to even
                              std::bit_cast<float>(0x3f803000u),  // f16 tie, rounds up
                              std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              std::bit_cast<float>(0x3f808000u),   // bf16 tie, rounds to even
                              std::bit_cast<float>(0x3f818000u),   // bf16 tie, rounds up
                              std::bit_cast<float>(0x7f7fffffu),   // bf16: rounds to inf
                              1e-40f,                              // a bf16 subnormal, kept
                              std::bit_cast<float>(0xff800001u)};  // a signalling NaN: quiet
    for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i)
      v[i * 7 % v.size()] = specials[i];
    for (size_t i = 3; i < v.size(); i += 5) v[i] *= 1e-6f;
    return v;
  }
  const int64_t n_blocks = n / 32;
  for (int64_t b = 0; b < n_blocks; ++b) {
    float* block = v.data() + 32 * b;
    switch (b % 4) {
      case 0:  // magnitudes from 1e-3 to 1e3
        for (int j = 0; j < 32; ++j) block[j] *= std::pow(10.0f, static_cast<float>(b % 7) - 3);
        break;
      case 1:
        if (b % 8 == 1) std::fill(block, block + 32, 0.0f);
        break;
      default:
        block[0] = b % 2 == 0 ? 127.0f : -127.0f;
        for (int j = 1; j < 32; ++j) {
          const float tie = static_cast<float>((j * 37 + static_cast<int>(b)) % 253 - 126) + 0.5f;
          block[j] = j % 3 == 0 ? std::nextafter(tie, 0.0f) : tie;
        }
        break;
    }
  }
  return v;
}

TEST(KvCells, OnlyTheCellTypesHaveConverters) {
  for (const KernelTable* t : all_tables()) {
    for (const GgmlTypeInfo& info : ggml_types()) {
      if (cell_slot(info.type) >= static_cast<size_t>(kMatmulSlots)) continue;  // no slot at all
      const bool cell = info.type == GgmlType::kF32 || info.type == GgmlType::kF16 ||
                        info.type == GgmlType::kBF16 || info.type == GgmlType::kQ8_0;
      EXPECT_EQ(t->cells_from_f32[cell_slot(info.type)] != nullptr, cell)
          << t->name << " " << info.name;
      EXPECT_EQ(t->cells_to_f32[cell_slot(info.type)] != nullptr, cell)
          << t->name << " " << info.name;
    }
  }
}

// ref is quant/'s arithmetic: f32 copied, f16 fp32_to_fp16 / fp16_to_fp32, bf16 fp32_to_bf16 /
// bf16_to_fp32, q8_0 quantize_row_q8_0 / dequantize_row_q8_0.
TEST(KvCells, RefIsTheQuantRowArithmetic) {
  for (const GgmlType type : kCellTypes) {
    for (int64_t size : kSizes) {
      const int64_t n = row_elements(type, size);
      const std::vector<float> x = cell_inputs(type, n, 3 + static_cast<uint32_t>(size));
      std::vector<uint8_t> cells(row_bytes(type, n)), want(row_bytes(type, n));
      ref_table.cells_from_f32[cell_slot(type)](x.data(), cells.data(), n);
      std::vector<float> back(static_cast<size_t>(n)), want_back(static_cast<size_t>(n));
      ref_table.cells_to_f32[cell_slot(type)](cells.data(), back.data(), n);
      if (type == GgmlType::kF32) {
        std::memcpy(want.data(), x.data(), want.size());
        std::memcpy(want_back.data(), x.data(), want.size());
      } else if (type == GgmlType::kF16) {
        auto* h = reinterpret_cast<uint16_t*>(want.data());
        for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(x[static_cast<size_t>(i)]);
        for (int64_t i = 0; i < n; ++i) want_back[static_cast<size_t>(i)] = fp16_to_fp32(h[i]);
      } else if (type == GgmlType::kBF16) {
        auto* h = reinterpret_cast<uint16_t*>(want.data());
        for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(x[static_cast<size_t>(i)]);
        for (int64_t i = 0; i < n; ++i) want_back[static_cast<size_t>(i)] = bf16_to_fp32(h[i]);
      } else {
        auto* blocks = reinterpret_cast<BlockQ8_0*>(want.data());
        quantize_row_q8_0(x.data(), blocks, n);
        dequantize_row_q8_0(blocks, want_back.data(), n);
      }
      EXPECT_EQ(cells, want) << ggml_type_info(type).name << " size " << size;
      EXPECT_EQ(0, std::memcmp(back.data(), want_back.data(), back.size() * sizeof(float)))
          << ggml_type_info(type).name << " size " << size;
    }
  }
}

TEST(KvCells, Q8_0RoundsHalfwayCasesAwayFromZero) {
  std::vector<float> x(32, 0.0f);  // amax 127: d = 1, so each quant is its value rounded
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  x[4] = std::nextafter(0.5f, 0.0f);
  x[5] = -126.5f;
  const int8_t want[6] = {127, 3, -3, 1, 0, -127};
  for (const KernelTable* t : all_tables()) {
    BlockQ8_0 block;
    t->cells_from_f32[cell_slot(GgmlType::kQ8_0)](x.data(), &block, 32);
    EXPECT_EQ(fp16_to_fp32(block.d), 1.0f) << t->name;
    for (int j = 0; j < 6; ++j) EXPECT_EQ(block.qs[j], want[j]) << t->name << " j " << j;
  }
}

TEST(KvCells, SimdMatchesRefBitForBit) {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  for (const KernelTable* t : simd_tables()) {
    for (const GgmlType type : kCellTypes) {
      const char* name = ggml_type_info(type).name.data();
      for (int64_t size : kSizes) {
        const int64_t n = row_elements(type, size);
        const std::vector<float> x = cell_inputs(type, n, 5 + static_cast<uint32_t>(size));
        std::vector<uint8_t> cells(row_bytes(type, n)), want(row_bytes(type, n));
        ref_table.cells_from_f32[cell_slot(type)](x.data(), want.data(), n);
        t->cells_from_f32[cell_slot(type)](x.data(), cells.data(), n);
        EXPECT_EQ(cells, want) << t->name << " f32 -> " << name << " size " << size;

        std::vector<float> back(static_cast<size_t>(n)), want_back(static_cast<size_t>(n));
        ref_table.cells_to_f32[cell_slot(type)](want.data(), want_back.data(), n);
        t->cells_to_f32[cell_slot(type)](want.data(), back.data(), n);
        EXPECT_EQ(0, std::memcmp(back.data(), want_back.data(), back.size() * sizeof(float)))
            << t->name << " " << name << " -> f32 size " << size;
      }
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
