// ARMv8.0 NEON vector ops (every ARM64 CPU runs them): kernels/ops_impl.h on a 4-lane policy.
// Tails go through the same vector arithmetic as the body (zero-padded lanes, only the real ones
// stored). add, mul, scale, rope, axpy_f32 and the conversions are the reference's arithmetic bit
// for bit; the exponentials use ops_impl.h's exp_taylor and dot_f32 four fused lanes, as the x86
// tables do. Attention's row loops are the reference's, pair by pair.

// Separate multiplies and adds where the reference has them.
#pragma GCC optimize("fp-contract=off")

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm64/neon_kernels.h"
#include "kernels/arm64/neon_math.h"
#include "kernels/delta_net_impl.h"
#include "kernels/ops_impl.h"

namespace minfer::kernels::neon {
namespace {

float16x4_t load_f16x4(const uint16_t* p) {
  return vreinterpret_f16_u16(vld1_u16(p));
}

// The float vector policy of ops_impl.h.
struct OpsNeon {
  using F = float32x4_t;
  using D = float64x2_t;
  using B = uint32x4_t;
  static constexpr int kLanes = 4;
  static constexpr bool kSiluTailLibm = false;
  static constexpr ops::RowLoops kRowLoops = ops::RowLoops::kPlain;

  static F zero() { return vdupq_n_f32(0.0f); }
  static F set1(float v) { return vdupq_n_f32(v); }
  static F load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, F v) { vst1q_f32(p, v); }
  static F load_partial(const float* p, int64_t n) { return arm64::load_partial(p, n); }
  static void store_partial(float* p, F v, int64_t n) { arm64::store_partial(p, v, n); }
  static B tail_lanes(int64_t n) {
    const uint32x4_t index = {0, 1, 2, 3};
    return vcltq_u32(index, vdupq_n_u32(static_cast<uint32_t>(n)));
  }
  static F select(B b, F yes, F no) { return vbslq_f32(b, yes, no); }
  static B ge(F a, F b) { return vcgeq_f32(a, b); }
  static B le(F a, F b) { return vcleq_f32(a, b); }
  static B lt(F a, F b) { return vcltq_f32(a, b); }

  static F add(F a, F b) { return vaddq_f32(a, b); }
  static F sub(F a, F b) { return vsubq_f32(a, b); }
  static F mul(F a, F b) { return vmulq_f32(a, b); }
  static F div(F a, F b) { return vdivq_f32(a, b); }
  static F fmadd(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static F fnmadd(F a, F b, F c) { return vfmsq_f32(c, a, b); }
  static F min(F a, F b) { return vminq_f32(a, b); }
  static F max(F a, F b) { return vmaxq_f32(a, b); }
  static F round(F x) { return vrndnq_f32(x); }
  static F floor(F x) { return vrndmq_f32(x); }
  static F exp2i(F n) {
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23));
  }
  // The reference's y + a·x: the product rounded, then added.
  static F axpy(F a, F x, F y) { return vaddq_f32(y, vmulq_f32(a, x)); }
  // x > m ? x : m, lane by lane (vmaxq_f32 would let a NaN through).
  static F max_keep(F x, F m) { return vbslq_f32(vcgtq_f32(x, m), x, m); }
  static float hmax(F m) {
    float result = vgetq_lane_f32(m, 0);
    for (int l = 1; l < 4; ++l) {
      m = vextq_f32(m, m, 1);
      const float lane = vgetq_lane_f32(m, 0);
      result = lane > result ? lane : result;
    }
    return result;
  }
  static float hsum(F v) { return vaddvq_f32(v); }
  static F exp(F x) { return ops::exp_taylor<OpsNeon>(x); }
  static F silu_exp(F x) { return ops::exp_taylor<OpsNeon>(x); }

  // The reference's rotation: x0 c - x1 s and x0 s + x1 c, unfused.
  static void rotate(F& x0, F& x1, F c, F s) {
    const F r0 = vsubq_f32(vmulq_f32(x0, c), vmulq_f32(x1, s));
    x1 = vaddq_f32(vmulq_f32(x0, s), vmulq_f32(x1, c));
    x0 = r0;
  }
  // [c0 c0 c1 c1] from `pairs` (<= 2) angles.
  static F dup_pairs(const float* p, int64_t pairs) {
    const F v = pairs == 2 ? vcombine_f32(vld1_f32(p), vdup_n_f32(0.0f)) : load_partial(p, pairs);
    return vzip1q_f32(v, v);
  }
  // Adjacent: x = [a0 b0 a1 b1]; even lanes a c - b s, odd lanes b c + a s, unfused (the
  // reference's a s + b c: the sum is the same either way round).
  static F rotate_pairs(F v, F c, F s) {
    const F ac = vmulq_f32(v, c);
    const F bs = vmulq_f32(vrev64q_f32(v), s);
    const uint32x4_t even = {~0u, 0u, ~0u, 0u};
    return vbslq_f32(even, vsubq_f32(ac, bs), vaddq_f32(ac, bs));
  }
  static F gelu_lookup(F g, const float* table) {
    uint16_t h[4];
    vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(g)));
    const float looked_up[4] = {table[h[0]], table[h[1]], table[h[2]], table[h[3]]};
    return vld1q_f32(looked_up);
  }

  static D zero_pd() { return vdupq_n_f64(0.0); }
  // Adds the 4 floats of v to two double accumulators (low and high halves).
  static void add_pd_halves(F v, D& acc0, D& acc1) {
    acc0 = vaddq_f64(acc0, vcvt_f64_f32(vget_low_f32(v)));
    acc1 = vaddq_f64(acc1, vcvt_high_f64_f32(v));
  }
  static double sum_pd(D acc0, D acc1) { return vaddvq_f64(vaddq_f64(acc0, acc1)); }

  // fcvt: exact to f32, round to nearest even from it.
  static F from_f16(const uint16_t* p) { return vcvt_f32_f16(load_f16x4(p)); }
  static void to_f16(uint16_t* p, F v) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v))); }
  static F from_bf16(const uint16_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
  }
  static void to_bf16(uint16_t* p, F v) { vst1_u16(p, arm64::f32_to_bf16_4(v)); }
};

}  // namespace

MINFER_DEFINE_OPS(OpsNeon)
MINFER_DEFINE_DELTA_NET_OPS(OpsNeon)
MINFER_DEFINE_BF16_CELL_LOOPS(OpsNeon)

}  // namespace minfer::kernels::neon
