// The ARM64 vector policies of the quantized matmul tiles (kernels/quant_tile_impl.h): 4 weight
// rows in the lanes of a 128-bit register. NeonVec (ARMv8.0) forms a 4-product dot from
// widening multiplies (s8 × s8 to int16, exact: |w| <= 128, |x| <= 128) and two pairwise adds
// into int32; DotprodVec (ARMv8.2 dotprod) is one sdot. Both are exact integer sums, so the
// tiles give the reference's bits either way. The tiles' unsigned weight quants are at most 63,
// so they are also valid signed bytes and every dot here is signed × signed; Q8_0's signed
// weights need no special path.
// Include only from ARM64 translation units; everything is in an anonymous namespace (see
// quant_tile_impl.h), and DotprodVec exists only where the file is compiled with +dotprod.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace minfer::kernels::arm64 {
namespace {

// Everything but the 4-product dot.
struct NeonVecBase {
  using I = int32x4_t;
  using F = float32x4_t;
  static constexpr int kLanes = 4;

  // Up to 4 weight rows; missing rows repeat the last real one so every load stays inside the
  // weights, and their lanes are never stored.
  struct Group {
    const uint8_t* row[kLanes];
    int n_rows;
  };

  static Group make_group(const uint8_t* w, size_t w_row_bytes, int64_t n_rows) {
    Group g;
    for (int r = 0; r < kLanes; ++r) g.row[r] = w + (r < n_rows ? r : n_rows - 1) * w_row_bytes;
    g.n_rows = static_cast<int>(n_rows < kLanes ? n_rows : kLanes);
    return g;
  }

  // out[j] lane r = dword j of v[r] (a 4 × 4 dword transpose).
  static void transpose4(const I v[4], I out[4]) {
    const I t0 = vtrn1q_s32(v[0], v[1]);  // v0[0] v1[0] v0[2] v1[2]
    const I t1 = vtrn2q_s32(v[0], v[1]);  // v0[1] v1[1] v0[3] v1[3]
    const I t2 = vtrn1q_s32(v[2], v[3]);
    const I t3 = vtrn2q_s32(v[2], v[3]);
    const auto lo = [](I a, I b) {
      return vreinterpretq_s32_s64(vtrn1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
    };
    const auto hi = [](I a, I b) {
      return vreinterpretq_s32_s64(vtrn2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(b)));
    };
    out[0] = lo(t0, t2);
    out[1] = lo(t1, t3);
    out[2] = hi(t0, t2);
    out[3] = hi(t1, t3);
  }

  static I load_bytes(const uint8_t* p) { return vreinterpretq_s32_u8(vld1q_u8(p)); }

  // out[j] lane r = bytes 4j..4j+3 of the 32 bytes at row[r] + off.
  static void transpose32(const Group& g, size_t off, I out[8]) {
    I lo[4], hi[4];
    for (int r = 0; r < kLanes; ++r) {
      lo[r] = load_bytes(g.row[r] + off);
      hi[r] = load_bytes(g.row[r] + off + 16);
    }
    transpose4(lo, out);
    transpose4(hi, out + 4);
  }

  // out[j] lane r = bytes 4j..4j+3 of the 16 bytes at row[r] + off.
  static void transpose16(const Group& g, size_t off, I out[4]) {
    I v[4];
    for (int r = 0; r < kLanes; ++r) v[r] = load_bytes(g.row[r] + off);
    transpose4(v, out);
  }

  static void prefetch(const uint8_t* p) { __builtin_prefetch(p); }

  // Lane r: the 4 bytes at row[r] + off.
  static I gather_u32(const Group& g, size_t off) {
    alignas(16) int32_t v[kLanes];
    for (int r = 0; r < kLanes; ++r) std::memcpy(&v[r], g.row[r] + off, sizeof(int32_t));
    return vld1q_s32(v);
  }
  // The low 16 bits of each lane as an f16, converted (exactly).
  static F f16_lanes(I v) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vmovn_u32(vreinterpretq_u32_s32(v))));
  }
  // The f16 at row[r] + off (low half) or + off + 2 (high half) for each row, as floats.
  static F gather_f16(const Group& g, size_t off, bool high) {
    I v = gather_u32(g, off);
    if (high) v = srli32(v, 16);
    return f16_lanes(v);
  }
  // Both f16 of the 4 bytes at row[r] + off.
  static void gather_f16_pair(const Group& g, size_t off, F& lo, F& hi) {
    const I v = gather_u32(g, off);
    lo = f16_lanes(v);
    hi = f16_lanes(srli32(v, 16));
  }

  static I load(const int32_t* p) { return vld1q_s32(p); }
  static I bcast(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return vdupq_n_s32(v);
  }
  static I set1(int32_t v) { return vdupq_n_s32(v); }
  static I set1_8(int8_t v) { return vreinterpretq_s32_s8(vdupq_n_s8(v)); }
  static I add(I a, I b) { return vaddq_s32(a, b); }
  static I sub(I a, I b) { return vsubq_s32(a, b); }
  static I mullo(I a, I b) { return vmulq_s32(a, b); }
  static I and_(I a, I b) { return vandq_s32(a, b); }
  static I or_(I a, I b) { return vorrq_s32(a, b); }
  // Shifts by a count in a register (a negative count shifts right).
  static I srli16(I a, int n) {
    const uint16x8_t v = vreinterpretq_u16_s32(a);
    return vreinterpretq_s32_u16(vshlq_u16(v, vdupq_n_s16(static_cast<int16_t>(-n))));
  }
  static I slli16(I a, int n) {
    const uint16x8_t v = vreinterpretq_u16_s32(a);
    return vreinterpretq_s32_u16(vshlq_u16(v, vdupq_n_s16(static_cast<int16_t>(n))));
  }
  static I srli32(I a, int n) {
    return vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a), vdupq_n_s32(-n)));
  }
  static I slli32(I a, int n) {
    return vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a), vdupq_n_s32(n)));
  }
  static I srai32(I a, int n) { return vshlq_s32(a, vdupq_n_s32(-n)); }

  // Byte i of every lane replaced by table[byte i] (the bytes of idx are 0..15).
  static I lookup16(const int8_t table[16], I idx) {
    return vreinterpretq_s32_s8(vqtbl1q_s8(vld1q_s8(table), vreinterpretq_u8_s32(idx)));
  }
  // The lanes' bits as floats.
  static F as_float(I bits) { return vreinterpretq_f32_s32(bits); }

  // acc + Σ of 2 products int16 × int16 per lane.
  static I dot16(I acc, I a, I b) {
    const int16x8_t x = vreinterpretq_s16_s32(a);
    const int16x8_t y = vreinterpretq_s16_s32(b);
    const int32x4_t lo = vmull_s16(vget_low_s16(x), vget_low_s16(y));
    const int32x4_t hi = vmull_high_s16(x, y);
    return vaddq_s32(acc, vpaddq_s32(lo, hi));
  }

  static float f16(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
  }
  static F cvt(I a) { return vcvtq_f32_s32(a); }
  static F fset1(float v) { return vdupq_n_f32(v); }
  static F fmul(F a, F b) { return vmulq_f32(a, b); }
  static F fadd(F a, F b) { return vaddq_f32(a, b); }
  static F fsub(F a, F b) { return vsubq_f32(a, b); }
  // a · b + c with one rounding (std::fma).
  static F fmadd(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static F fload(const float* p) { return vld1q_f32(p); }
  static void fstore(float* p, F v) { vst1q_f32(p, v); }
  static void store_rows(float* y, F v, const Group& g) {
    if (g.n_rows == kLanes) {
      vst1q_f32(y, v);
      return;
    }
    alignas(16) float lanes[kLanes];
    vst1q_f32(lanes, v);
    std::memcpy(y, lanes, static_cast<size_t>(g.n_rows) * sizeof(float));
  }

  // Signed Q8_0 weights need nothing special (every dot is signed × signed): a start of 0.
  static I q8_start(I) { return vdupq_n_s32(0); }

  // A per-lane scale in the form the policies' dot_scaled takes: the int32 itself.
  static I scale_operand(I sc) { return sc; }
};

// ARMv8.0: the 4-product dot from widening multiplies and pairwise adds.
struct NeonVec : NeonVecBase {
  // acc + Σ of 4 products s8 (w) × s8 (x) per lane: 16-bit products (exact), pairs summed to
  // int32, then the two pairs of each lane.
  static I dot(I acc, I w, I x) {
    const int8x16_t a = vreinterpretq_s8_s32(w);
    const int8x16_t b = vreinterpretq_s8_s32(x);
    const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    const int32x4_t hi = vpaddlq_s16(vmull_high_s8(a, b));
    return vaddq_s32(acc, vpaddq_s32(lo, hi));
  }
  static I q8_dot(I acc, I w, I x) { return dot(acc, w, x); }
  // acc + sc · Σ of 4 products per lane (sc from scale_operand).
  static I dot_scaled(I acc, I w, I x, I sc) {
    return vmlaq_s32(acc, dot(vdupq_n_s32(0), w, x), sc);
  }
};

#if defined(__ARM_FEATURE_DOTPROD)
// ARMv8.2 dotprod: sdot.
struct DotprodVec : NeonVecBase {
  static I dot(I acc, I w, I x) {
    return vdotq_s32(acc, vreinterpretq_s8_s32(w), vreinterpretq_s8_s32(x));
  }
  static I q8_dot(I acc, I w, I x) { return dot(acc, w, x); }
  static I dot_scaled(I acc, I w, I x, I sc) {
    return vmlaq_s32(acc, dot(vdupq_n_s32(0), w, x), sc);
  }
};
#endif

}  // namespace
}  // namespace minfer::kernels::arm64
