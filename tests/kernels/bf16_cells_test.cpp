// bf16 KV cells' row loops (KernelTable::dot_rows_bf16 / weighted_sum_bf16): the reference's
// order of operations on small hand-made cases, then every table (and AVX-512's VDPBF16PS and
// emulated variants apart) bit for bit against ref at widths across the 32- and 64-element steps
// and row counts across the 16-row groups, with subnormals and products small enough for the
// instruction's flushing in the inputs.
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/fp16.h"
#if defined(__x86_64__)
#include "kernels/avx512/avx512_kernels.h"
#endif

namespace minfer::kernels {
namespace {

using test::all_tables;
using test::random_floats;

// A bf16 of sign s, biased exponent e and 7-bit mantissa m.
uint16_t bf16(int s, int e, int m) {
  return static_cast<uint16_t>((s << 15) | (e << 7) | m);
}

std::vector<uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = fp32_to_bf16(x[i]);
  return out;
}

using DotRows = std::function<void(BF16Rows, BF16Rows, int64_t, float, float*, int64_t)>;

struct NamedDotRows {
  std::string name;
  DotRows dot;
};

// Every table's dot_rows_bf16, and on x86 AVX-512's two variants apart where the CPU runs them.
std::vector<NamedDotRows> dot_rows_variants() {
  std::vector<NamedDotRows> out;
  for (const KernelTable* t : all_tables()) out.push_back({t->name, t->dot_rows_bf16});
#if defined(__x86_64__)
  if (cpu_features().can_run_avx512()) {
    out.push_back({"avx512 emulated", avx512::dot_rows_bf16_emulated});
    if (cpu_features().avx512bf16) out.push_back({"avx512 vdpbf16ps", avx512::dot_rows_bf16_vdp});
  }
#endif
  return out;
}

TEST(Bf16Cells, EachPairTakesItsHighElementFirstIntoTwoAccumulators) {
  // Lane 0 of the first accumulator: 2^-24 from the step at 0 (element 1), then at the step at
  // 64 element 65's product 1 before element 64's 2^-24. High first: 2^-24 + 1 rounds to 1 (a
  // tie, to even), then 1 + 2^-24 to 1 again; low first would give 1 + 2^-23.
  std::vector<uint16_t> a(128, 0), b(128, 0);
  a[1] = bf16(0, 127 - 24, 0);
  b[1] = bf16(0, 127, 0);
  a[65] = bf16(0, 127, 0);
  b[65] = bf16(0, 127, 0);
  a[64] = bf16(0, 127 - 24, 0);
  b[64] = bf16(0, 127, 0);
  EXPECT_EQ(ref::dot_bf16_cells(a.data(), b.data(), 128), 1.0f);
  // The same row 17 times: a group of 16 rows and one after it.
  std::vector<uint16_t> rows;
  for (int r = 0; r < 17; ++r) rows.insert(rows.end(), a.begin(), a.end());
  for (const NamedDotRows& v : dot_rows_variants()) {
    std::vector<float> out(17, -1.0f);
    v.dot({rows.data(), 17, 128}, {b.data(), 1, 128}, 128, 1.0f, out.data(), 17);
    EXPECT_EQ(out, std::vector<float>(17, 1.0f)) << v.name << ": the pair's high element first";
  }
  // The two accumulators' sums and the elements after the last step meet in double: 1 (first),
  // 2^-24 (second, element 33) and 2^-24 (element 128, after the steps) give 1 + 2^-23, where
  // float sums would round each 2^-24 away.
  std::vector<uint16_t> c(129, 0), d(129, 0);
  for (const size_t i : {size_t{1}, size_t{33}, size_t{128}}) d[i] = bf16(0, 127, 0);
  c[1] = bf16(0, 127, 0);
  c[33] = bf16(0, 127 - 24, 0);
  c[128] = bf16(0, 127 - 24, 0);
  EXPECT_EQ(ref::dot_bf16_cells(c.data(), d.data(), 129), 1.0f + 0x1p-23f);
  // Elements past the last whole step of 64 are float products added to the double one by one:
  // a subnormal there counts (the steps would read it as zero).
  std::vector<uint16_t> e(65, 0), f(65, 0);
  e[64] = bf16(0, 0, 64);  // 2^-127, subnormal
  f[64] = bf16(0, 127 + 20, 0);
  EXPECT_EQ(ref::dot_bf16_cells(e.data(), f.data(), 65), 0x1p-107f);
  e[0] = e[64];
  f[0] = f[64];
  EXPECT_EQ(ref::dot_bf16_cells(e.data(), f.data(), 64), 0.0f) << "steps read subnormals as 0";
}

TEST(Bf16Cells, RefStepFlushesTinyResultsAfterRounding) {
  // acc 2^-126 + 2^-149 minus 9 · 2^-152 is 2^-126 - 2^-152 exactly, which rounds up to FLT_MIN:
  // kept (a Sapphire Rapids VDPBF16PS keeps it too). A product alone below FLT_MIN is flushed.
  const float acc = 0x1p-126f + 0x1p-149f;
  EXPECT_EQ(ref::dpbf16_step(acc, bf16(1, 127 - 77, 16), bf16(0, 127 - 72, 0)), 0x1p-126f);
  EXPECT_EQ(ref::dpbf16_step(0.0f, bf16(0, 127 - 70, 0), bf16(0, 127 - 60, 0)), 0.0f);
  EXPECT_EQ(ref::dpbf16_step(1.0f, bf16(0, 0, 1), bf16(0, 254, 0)), 1.0f) << "subnormal input";
}

// n_rows rows of `stride` bf16s: random values of both signs, some of larger magnitude. With
// `tiny`, rows by their index mod 4 hold what the steps treat specially: (1) bf16 subnormals here
// and there; (2) values just above FLT_MIN only, so that whole lanes sum below it and the steps'
// flushing decides the score; (3) values near 2^-115, whose products with the other operand's
// lie about the bound under which no sum can fall below FLT_MIN (the emulating tables' exact path,
// avx2_bf16_cells.cpp); (0) values from 2^-2 to 2^6, which rows of (3) meet about that bound.
std::vector<uint16_t> bf16_rows(int64_t n_rows, int64_t stride, uint32_t seed, bool tiny) {
  std::vector<uint16_t> v = to_bf16(random_floats(n_rows * stride, seed, -2.0f, 2.0f));
  for (int64_t j = 0; j < n_rows; ++j) {
    for (int64_t i = 0; i < stride; ++i) {
      uint16_t& e = v[static_cast<size_t>(j * stride + i)];
      const int sign = static_cast<int>((i + j) % 2);
      if (i % 13 == 7) e = bf16(sign, 127 + static_cast<int>(i % 30), 5);
      if (!tiny) continue;
      if (j % 4 == 1 && i % 11 == 3) e = bf16(sign, 0, static_cast<int>(i % 128));
      if (j % 4 == 2) e = static_cast<uint16_t>((e & 0x807Fu) | ((1 + i % 3) << 7));
      if (j % 4 == 3) e = static_cast<uint16_t>((e & 0x807Fu) | ((8 + i % 8) << 7));
      if (j % 4 == 0) e = static_cast<uint16_t>((e & 0x807Fu) | ((125 + i % 8) << 7));
    }
  }
  return v;
}

TEST(Bf16Cells, EveryTableScoresAsRef) {
  const std::vector<NamedDotRows> variants = dot_rows_variants();
  for (const int64_t n : {1, 31, 32, 33, 63, 64, 65, 96, 127, 128, 129, 192, 256, 257}) {
    for (const int64_t n_rows : {1, 7, 15, 16, 17, 32, 37}) {
      for (const int64_t n_x : {1, 3, 8}) {
        for (const bool tiny : {false, true}) {
          const int64_t stride = n + 5;
          const int64_t out_stride = n_rows + 2;
          const uint32_t seed = static_cast<uint32_t>(n * 97 + n_rows * 7 + n_x);
          const std::vector<uint16_t> rows = bf16_rows(n_rows, stride, seed, tiny);
          const std::vector<uint16_t> x = bf16_rows(n_x, stride, seed + 1, tiny);
          const std::vector<uint16_t> next(rows.size(), 0x3F80);
          std::vector<float> want(static_cast<size_t>(n_x * out_stride), -1.0f);
          ref::dot_rows_bf16({rows.data(), n_rows, stride}, {x.data(), n_x, stride}, n, 0.125f,
                             want.data(), out_stride);
          for (const NamedDotRows& v : variants) {
            for (const bool ahead : {false, true}) {
              std::vector<float> got(want.size(), -1.0f);
              v.dot({rows.data(), n_rows, stride, ahead ? next.data() : nullptr},
                    {x.data(), n_x, stride}, n, 0.125f, got.data(), out_stride);
              ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                  << v.name << " n=" << n << " rows " << n_rows << " x " << n_x << " tiny " << tiny
                  << " ahead " << ahead;
            }
          }
        }
      }
    }
  }
}

TEST(Bf16Cells, FlushingAndSubnormalsDecideScoresAboutTheExactBound) {
  // Keys of exponent 2^-114 and queries of 2^-2: their products are multiples of 2^-130, under
  // the 2^-126 that would make every sum safe from flushing. (129/128)^2 · 2^-116 then
  // -(130/128) · 2^-116 leave 2^-130 in lane 0, which VDPBF16PS flushes: the score is 0 on every
  // table (one taking its flush-free path here would give 2^-130 · scale).
  std::vector<uint16_t> key(64, 0), query(64, 0);
  key[1] = bf16(0, 127 - 114, 1);  // (129/128) · 2^-114
  query[1] = bf16(0, 127 - 2, 1);  // (129/128) · 2^-2
  key[0] = bf16(1, 127 - 114, 2);  // -(130/128) · 2^-114
  query[0] = bf16(0, 127 - 2, 0);  // 2^-2
  EXPECT_EQ(ref::dot_bf16_cells(key.data(), query.data(), 64), 0.0f);
  for (const NamedDotRows& v : dot_rows_variants()) {
    float out = -1.0f;
    v.dot({key.data(), 1, 64}, {query.data(), 1, 64}, 64, 1.0f, &out, 1);
    EXPECT_EQ(out, 0.0f) << v.name;
  }
  // A subnormal key against a query of 2^30 (exponents far above the bound): read as zero.
  std::vector<uint16_t> sub(64, 0), big(64, 0);
  sub[0] = bf16(0, 0, 64);  // 2^-127
  big[0] = bf16(0, 127 + 30, 0);
  for (const NamedDotRows& v : dot_rows_variants()) {
    float out = -1.0f;
    v.dot({sub.data(), 1, 64}, {big.data(), 1, 64}, 64, 1.0f, &out, 1);
    EXPECT_EQ(out, 0.0f) << v.name << ": a subnormal key";
    v.dot({big.data(), 1, 64}, {sub.data(), 1, 64}, 64, 1.0f, &out, 1);
    EXPECT_EQ(out, 0.0f) << v.name << ": a subnormal query";
  }
}

TEST(Bf16Cells, WeightedSumIsTheF32LoopOnTheConvertedRows) {
  for (const KernelTable* t : all_tables()) {
    for (const int64_t n : {1, 8, 31, 64, 80, 128, 130, 256}) {
      for (const int64_t n_rows : {7, 32, 37}) {
        for (const int64_t n_x : {1, 5, 8}) {
          const int64_t stride = n + 3;
          const int64_t w_stride = n_rows + 2;
          const std::vector<uint16_t> rows16 =
              to_bf16(random_floats(n_rows * stride, 31 + static_cast<uint32_t>(n), -2.0f, 2.0f));
          std::vector<float> rows(rows16.size());
          t->bf16_to_f32(rows16.data(), static_cast<int64_t>(rows16.size()), rows.data());
          const std::vector<float> w = random_floats(n_x * w_stride, 32, 0.0f, 1.0f);
          std::vector<float> y = random_floats(n_x * stride, 33, -1.0f, 1.0f);
          std::vector<float> want = y;
          t->weighted_sum_bf16({w.data(), n_x, w_stride}, {rows16.data(), n_rows, stride}, n,
                               y.data(), stride);
          t->weighted_sum_f32({w.data(), n_x, w_stride}, {rows.data(), n_rows, stride}, n,
                              want.data(), stride);
          ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
              << t->name << " n=" << n << " rows " << n_rows << " x " << n_x;
        }
      }
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
