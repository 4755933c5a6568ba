// AVX2 matmul tiles for F32, F16 and BF16 weights against activations of the same type: the
// tiles of kernels/float_tile_impl.h on two __m256 per logical vector of 16 lanes (lanes 0-7,
// 8-15), so that they sum in the AVX-512 table's order and give its results bit for bit.
// Micro-tiles of 2 weight rows × 2 tokens: 4 accumulators + 2 activations + 1 weight of 2 ymm
// each fill 14 of the 16 ymm registers. The avxvnni table uses these tiles too.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_math.h"

namespace minfer::kernels::avx2 {
namespace {

// The float_tile_impl.h policy: lanes 0-7 in lo, 8-15 in hi.
struct FloatVec {
  struct F {
    __m256 lo, hi;
  };
  struct Prefetch {  // no software prefetch (as before the tiles were shared)
    Prefetch(const uint8_t*, size_t) {}
    void advance(const uint8_t*) {}
  };
  static constexpr int kRows = 2;
  static constexpr int kToks = 2;
  static constexpr bool kMaskEveryStep = false;
  static F zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static F fma(F a, F b, F acc) {
    return {_mm256_fmadd_ps(a.lo, b.lo, acc.lo), _mm256_fmadd_ps(a.hi, b.hi, acc.hi)};
  }
  static F add(F a, F b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  // avx512::hsum_ps's order: lanes j + (j + 8) first, then the 8-lane sum of avx2::hsum_ps.
  static float hsum(F v) { return hsum_ps(_mm256_add_ps(v.lo, v.hi)); }
  static F load_f32(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static F load_f16(const uint16_t* p) { return {half8(p), half8(p + 8)}; }
  static F load_bf16(const uint16_t* p) { return {bf16_8(p), bf16_8(p + 8)}; }

  static __m256 half8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static __m256 bf16_8(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
};

}  // namespace
}  // namespace minfer::kernels::avx2

#define MINFER_SIMD_KERNEL_NAMESPACE avx2
#include "kernels/float_tile_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
