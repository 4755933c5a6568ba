// ARMv8.0 NEON matmul tiles for F32, F16 and BF16 weights against activations of the same type:
// the tiles of kernels/float_tile_impl.h on four float32x4_t per logical vector of 16 lanes, so
// that they sum in the AVX-512 table's order and give its results bit for bit. Micro-tiles of
// 2 weight rows × 2 tokens: 4 accumulators + 2 activations + 1 weight of 4 q registers each
// fill 28 of the 32.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "kernels/arm64/neon_kernels.h"

namespace minfer::kernels::neon {
namespace {

// The float_tile_impl.h policy: lanes 4i .. 4i + 3 in v[i].
struct FloatVec {
  struct F {
    float32x4_t v[4];
  };
  struct Prefetch {  // no software prefetch
    Prefetch(const uint8_t*, size_t) {}
    void advance(const uint8_t*) {}
  };
  static constexpr int kRows = 2;
  static constexpr int kToks = 2;
  static constexpr bool kMaskEveryStep = false;
  static F zero() {
    return {{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}};
  }
  static F fma(F a, F b, F acc) {
    for (int i = 0; i < 4; ++i) acc.v[i] = vfmaq_f32(acc.v[i], a.v[i], b.v[i]);
    return acc;
  }
  static F add(F a, F b) {
    for (int i = 0; i < 4; ++i) a.v[i] = vaddq_f32(a.v[i], b.v[i]);
    return a;
  }
  // avx512::hsum_ps's order: lanes j + (j + 8), then j + (j + 4), then (0 + 2) + (1 + 3).
  static float hsum(F x) {
    const float32x4_t s = vaddq_f32(vaddq_f32(x.v[0], x.v[2]), vaddq_f32(x.v[1], x.v[3]));
    const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
  }
  static F load_f32(const float* p) {
    return {{vld1q_f32(p), vld1q_f32(p + 4), vld1q_f32(p + 8), vld1q_f32(p + 12)}};
  }
  static F load_f16(const uint16_t* p) {
    return {{half4(p), half4(p + 4), half4(p + 8), half4(p + 12)}};
  }
  static F load_bf16(const uint16_t* p) {
    return {{bf16_4(p), bf16_4(p + 4), bf16_4(p + 8), bf16_4(p + 12)}};
  }

  static float32x4_t half4(const uint16_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  }
  static float32x4_t bf16_4(const uint16_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
  }
};

}  // namespace
}  // namespace minfer::kernels::neon

#define MINFER_SIMD_KERNEL_NAMESPACE neon
#include "kernels/float_tile_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
