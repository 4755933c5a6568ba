// The AVX2 (+ FMA, F16C) vector policy of the quantized matmul tiles
// (kernels/quant_tile_impl.h): 8 weight rows in the lanes of a ymm register. AVX2 has no
// VNNI: a 4-product dot is maddubs (u8 × s8 pairs to int16) then madd with ones (pairs to
// int32). The int16 pair sums are exact because the tiles' unsigned quants are at most 63
// (2 · 63 · 128 < 2^15); Q8_0's signed weights use |w| × sign(x, w) (at most 2 · 128 · 127).
// Include only from AVX2 translation units; everything is in an anonymous namespace (see
// avx2_math.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace minfer::kernels::avx2 {
namespace {

struct Vec256 {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8;

  // Up to 8 weight rows; missing rows repeat the last real one so every load stays inside the
  // weights, and their lanes are never stored.
  struct Group {
    const uint8_t* row[kLanes];
    __m256i offsets;     // byte offset of each row from row[0] (for gathers)
    __m256i store_mask;  // all ones in the lanes of real rows
  };

  static Group make_group(const uint8_t* w, size_t w_row_bytes, int64_t n_rows) {
    Group g;
    alignas(32) int32_t offsets[kLanes];
    alignas(32) int32_t mask[kLanes];
    for (int r = 0; r < kLanes; ++r) {
      const int64_t rr = r < n_rows ? r : n_rows - 1;
      g.row[r] = w + rr * w_row_bytes;
      offsets[r] = static_cast<int32_t>(rr * static_cast<int64_t>(w_row_bytes));
      mask[r] = r < n_rows ? -1 : 0;
    }
    g.offsets = _mm256_load_si256(reinterpret_cast<const __m256i*>(offsets));
    g.store_mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(mask));
    return g;
  }

  // out[j] lane r = bytes 4j..4j+3 of the 32 bytes at row[r] + off (an 8 × 8 dword transpose).
  static void transpose32(const Group& g, size_t off, I out[8]) {
    I a[8];
    for (int i = 0; i < 8; ++i) {
      a[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.row[i] + off));
    }
    I t[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_epi32(a[2 * i], a[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_epi32(a[2 * i], a[2 * i + 1]);
    }
    // u[j] rows 0-3, v[j] rows 4-7: dword j in the low 128 bits, dword j + 4 in the high.
    const I u[4] = {_mm256_unpacklo_epi64(t[0], t[2]), _mm256_unpackhi_epi64(t[0], t[2]),
                    _mm256_unpacklo_epi64(t[1], t[3]), _mm256_unpackhi_epi64(t[1], t[3])};
    const I v[4] = {_mm256_unpacklo_epi64(t[4], t[6]), _mm256_unpackhi_epi64(t[4], t[6]),
                    _mm256_unpacklo_epi64(t[5], t[7]), _mm256_unpackhi_epi64(t[5], t[7])};
    for (int j = 0; j < 4; ++j) {
      out[j] = _mm256_permute2x128_si256(u[j], v[j], 0x20);
      out[j + 4] = _mm256_permute2x128_si256(u[j], v[j], 0x31);
    }
  }

  // out[j] lane r = bytes 4j..4j+3 of the 16 bytes at row[r] + off: vector m holds rows m and
  // 4 + m in its 128-bit halves, then a 4 × 4 transpose inside each half.
  static void transpose16(const Group& g, size_t off, I out[4]) {
    I v[4];
    for (int m = 0; m < 4; ++m) {
      v[m] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(g.row[4 + m] + off),
                                 reinterpret_cast<const __m128i*>(g.row[m] + off));
    }
    const I t0 = _mm256_unpacklo_epi32(v[0], v[1]);
    const I t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    const I t2 = _mm256_unpacklo_epi32(v[2], v[3]);
    const I t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    out[0] = _mm256_unpacklo_epi64(t0, t2);
    out[1] = _mm256_unpackhi_epi64(t0, t2);
    out[2] = _mm256_unpacklo_epi64(t1, t3);
    out[3] = _mm256_unpackhi_epi64(t1, t3);
  }

  static void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  }

  // Lane r: the 4 bytes at row[r] + off.
  static I gather_u32(const Group& g, size_t off) {
    return _mm256_i32gather_epi32(reinterpret_cast<const int*>(g.row[0] + off), g.offsets, 1);
  }
  // The low 16 bits of each lane as an f16, converted: bytes 0-1, 4-5, 8-9, 12-13 of each
  // 128-bit half, then the two halves' low 64 bits side by side.
  static F f16_lanes(I v) {
    const I pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1,
                                    4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    const I halves = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0x08);
    return _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
  }
  // The f16 at row[r] + off (low half) or + off + 2 (high half) for each row, as floats.
  static F gather_f16(const Group& g, size_t off, bool high) {
    I v = gather_u32(g, off);
    if (high) v = _mm256_srli_epi32(v, 16);
    return f16_lanes(v);
  }

  // Both f16 of the 4 bytes at row[r] + off, from one gather.
  static void gather_f16_pair(const Group& g, size_t off, F& lo, F& hi) {
    const I v = gather_u32(g, off);
    lo = f16_lanes(v);
    hi = f16_lanes(_mm256_srli_epi32(v, 16));
  }

  static I load(const int32_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
  static I bcast(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return _mm256_set1_epi32(v);
  }
  static I set1(int32_t v) { return _mm256_set1_epi32(v); }
  static I set1_8(int8_t v) { return _mm256_set1_epi8(v); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I srli16(I a, int n) { return _mm256_srli_epi16(a, n); }
  static I slli16(I a, int n) { return _mm256_slli_epi16(a, n); }
  static I srli32(I a, int n) { return _mm256_srli_epi32(a, n); }
  static I slli32(I a, int n) { return _mm256_slli_epi32(a, n); }
  static I srai32(I a, int n) { return _mm256_srai_epi32(a, n); }

  // Byte i of every lane replaced by table[byte i] (the bytes of idx are 0..15).
  static I lookup16(const int8_t table[16], I idx) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(t), idx);
  }
  // The lanes' bits as floats.
  static F as_float(I bits) { return _mm256_castsi256_ps(bits); }

  // acc + Σ of 4 products u8 (w, at most 63) × s8 (x) per lane: exact (see the file comment).
  static I dot(I acc, I w, I x) {
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
  }
  // acc + Σ of 2 products int16 × int16 per lane.
  static I dot16(I acc, I a, I b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  // A per-lane scale (int32, |sc| <= 128) in the form dot_scaled takes: (sc, sc) as int16.
  static I scale_operand(I sc) {
    return _mm256_or_si256(_mm256_and_si256(sc, _mm256_set1_epi32(0xffff)),
                           _mm256_slli_epi32(sc, 16));
  }
  // acc + sc · Σ of 4 products u8 (w, at most 63) × s8 (x) per lane, sc from scale_operand:
  // the int16 pair sums (exact, see the file comment) times sc, in int32.
  static I dot_scaled(I acc, I w, I x, I sc) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), sc));
  }
  // Signed Q8_0 weights × signed activations: |w| × (x with w's sign) has the products w · x,
  // from a start of 0.
  static I q8_start(I) { return _mm256_setzero_si256(); }
  static I q8_dot(I acc, I w, I x) {
    return dot(acc, _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  }

  static float f16(uint16_t h) { return _cvtsh_ss(h); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F fset1(float v) { return _mm256_set1_ps(v); }
  static F fmul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fadd(F a, F b) { return _mm256_add_ps(a, b); }
  static F fsub(F a, F b) { return _mm256_sub_ps(a, b); }
  // a · b + c with one rounding (std::fma).
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fload(const float* p) { return _mm256_load_ps(p); }
  static void fstore(float* p, F v) { _mm256_store_ps(p, v); }
  static void store_rows(float* y, F v, const Group& g) { _mm256_maskstore_ps(y, g.store_mask, v); }
};

#if defined(__AVXVNNI__)
// AVX2 with AVX-VNNI (avxvnni_table: Intel's cores since Alder Lake, AMD's since Zen 5): a
// 4-product dot is one vpdpbusd, as on AVX-512 (avx512_quant_vec.h), and Q8_0 takes AVX-512's
// path: weights in as w + 128, from the activation row's lane starts. The int32 sums are exact
// either way, so the results are Vec256's bit for bit.
struct Vec256Vnni : Vec256 {
  static I dot(I acc, I w, I x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
  static I dot16(I acc, I a, I b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
  static I dot_scaled(I acc, I w, I x, I sc) {
    return _mm256_dpwssd_avx_epi32(acc, _mm256_maddubs_epi16(w, x), sc);
  }
  // Q8_0 as AVX-512 takes it (avx512_quant_vec.h Vec512::q8_lane): weights + 128, one vpdpbusd
  // from the activation row's lane start, the int32's bits a float 12582912 + Σ w x.
  static constexpr bool kQ8LaneStarts = true;
  static I q8_bias(I w) { return _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80))); }
  static F q8_lane(const int32_t* start, I w, const int8_t* x) {
    const I s = _mm256_dpbusd_avx_epi32(_mm256_set1_epi32(*start), w, bcast(x));
    return _mm256_sub_ps(_mm256_castsi256_ps(s), _mm256_set1_ps(12582912.0f));
  }
};
#endif

}  // namespace
}  // namespace minfer::kernels::avx2
