// AVX-512 matmul tiles for F32, F16 and BF16 weights against activations of the same type: the
// tiles of kernels/float_tile_impl.h on one __m512 per logical vector, micro-tiles of 4 weight
// rows × 4 tokens (16 accumulators + 4 activations + 1 weight of 32 zmm), every step through
// masked, zero-filled loads. The other ISAs' tables give these results bit for bit.
// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/avx512_gemv_prefetch.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"

namespace minfer::kernels::avx512 {
namespace {

// The float_tile_impl.h policy: one __m512.
struct FloatVec {
  using F = __m512;
  using Mask = __mmask16;
  using Prefetch = GemvPrefetch;
  static constexpr int kRows = 4;
  static constexpr int kToks = 4;
  static constexpr bool kMaskEveryStep = true;
  static F zero() { return _mm512_setzero_ps(); }
  static F fma(F a, F b, F acc) { return _mm512_fmadd_ps(a, b, acc); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static float hsum(F v) { return hsum_ps(v); }
  static Mask mask(int64_t n) { return lane_mask(n); }
  static F load_f32(const float* p) { return _mm512_loadu_ps(p); }
  static F load_f32(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static F load_f16(Mask m, const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  static F load_bf16(Mask m, const uint16_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
};

}  // namespace
}  // namespace minfer::kernels::avx512

#define MINFER_SIMD_KERNEL_NAMESPACE avx512
#include "kernels/float_tile_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
