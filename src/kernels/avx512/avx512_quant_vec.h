// The AVX-512 (F/BW/VL/DQ/VNNI) vector policy of the quantized matmul tiles
// (kernels/quant_tile_impl.h): 16 weight rows in the lanes of a zmm register. Include only from
// AVX-512 translation units; everything is in an anonymous namespace (see avx512_math.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/avx512/avx512_math.h"

namespace minfer::kernels::avx512 {
namespace {

struct Vec512 {
  using I = __m512i;
  using F = __m512;
  static constexpr int kLanes = 16;

  // Up to 16 weight rows; missing rows repeat the last real one so every load stays inside the
  // weights, and their lanes are never stored.
  struct Group {
    const uint8_t* row[kLanes];
    __m512i offsets;  // byte offset of each row from row[0] (for gathers)
    __mmask16 store_mask;
  };

  static Group make_group(const uint8_t* w, size_t w_row_bytes, int64_t n_rows) {
    Group g;
    alignas(64) int32_t offsets[kLanes];
    for (int r = 0; r < kLanes; ++r) {
      const int64_t rr = r < n_rows ? r : n_rows - 1;
      g.row[r] = w + rr * w_row_bytes;
      offsets[r] = static_cast<int32_t>(rr * static_cast<int64_t>(w_row_bytes));
    }
    g.offsets = _mm512_load_si512(offsets);
    g.store_mask = lane_mask(n_rows);
    return g;
  }

  // out[j] lane r = bytes 4j..4j+3 of the 32 bytes at row[r] + off (a 16 × 8 dword transpose:
  // rows r and r + 8 share a vector, then two unpack rounds and a cross-lane permute).
  static void transpose32(const Group& g, size_t off, I out[8]) {
    I a[8];
    for (int i = 0; i < 8; ++i) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.row[i] + off));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.row[i + 8] + off));
      a[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    I t[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]);
    }
    // u[j] (rows 0-3 / 8-11) and v[j] (rows 4-7 / 12-15): per 128-bit lane L, dword j (L even)
    // or j + 4 (L odd) of four rows.
    const I u[4] = {_mm512_unpacklo_epi64(t[0], t[2]), _mm512_unpackhi_epi64(t[0], t[2]),
                    _mm512_unpacklo_epi64(t[1], t[3]), _mm512_unpackhi_epi64(t[1], t[3])};
    const I v[4] = {_mm512_unpacklo_epi64(t[4], t[6]), _mm512_unpackhi_epi64(t[4], t[6]),
                    _mm512_unpacklo_epi64(t[5], t[7]), _mm512_unpackhi_epi64(t[5], t[7])};
    const I even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const I odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int j = 0; j < 4; ++j) {
      out[j] = _mm512_permutex2var_epi64(u[j], even, v[j]);
      out[j + 4] = _mm512_permutex2var_epi64(u[j], odd, v[j]);
    }
  }

  // out[j] lane r = bytes 4j..4j+3 of the 16 bytes at row[r] + off: vector m holds rows
  // m, 4 + m, 8 + m, 12 + m in its 128-bit lanes, then a 4 × 4 transpose inside each lane.
  static void transpose16(const Group& g, size_t off, I out[4]) {
    I v[4];
    for (int m = 0; m < 4; ++m) {
      I x =
          _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g.row[m] + off)));
      x = _mm512_inserti32x4(
          x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.row[4 + m] + off)), 1);
      x = _mm512_inserti32x4(
          x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.row[8 + m] + off)), 2);
      x = _mm512_inserti32x4(
          x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.row[12 + m] + off)), 3);
      v[m] = x;
    }
    const I t0 = _mm512_unpacklo_epi32(v[0], v[1]);
    const I t1 = _mm512_unpackhi_epi32(v[0], v[1]);
    const I t2 = _mm512_unpacklo_epi32(v[2], v[3]);
    const I t3 = _mm512_unpackhi_epi32(v[2], v[3]);
    out[0] = _mm512_unpacklo_epi64(t0, t2);
    out[1] = _mm512_unpackhi_epi64(t0, t2);
    out[2] = _mm512_unpacklo_epi64(t1, t3);
    out[3] = _mm512_unpackhi_epi64(t1, t3);
  }

  static void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  }

  // Lane r: the 4 bytes at row[r] + off.
  static I gather_u32(const Group& g, size_t off) {
    return _mm512_i32gather_epi32(g.offsets, g.row[0] + off, 1);
  }
  // The f16 at row[r] + off (low half) or + off + 2 (high half) for each row, as floats.
  static F gather_f16(const Group& g, size_t off, bool high) {
    I v = gather_u32(g, off);
    if (high) v = _mm512_srli_epi32(v, 16);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
  }

  // Both f16 of the 4 bytes at row[r] + off, from one gather.
  static void gather_f16_pair(const Group& g, size_t off, F& lo, F& hi) {
    const I v = gather_u32(g, off);
    lo = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
    hi = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
  }

  static I load(const int32_t* p) { return _mm512_load_si512(p); }
  static I bcast(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return _mm512_set1_epi32(v);
  }
  static I set1(int32_t v) { return _mm512_set1_epi32(v); }
  static I set1_8(int8_t v) { return _mm512_set1_epi8(v); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I srli16(I a, int n) { return _mm512_srli_epi16(a, static_cast<unsigned>(n)); }
  static I slli16(I a, int n) { return _mm512_slli_epi16(a, static_cast<unsigned>(n)); }
  static I srli32(I a, int n) { return _mm512_srli_epi32(a, static_cast<unsigned>(n)); }
  static I slli32(I a, int n) { return _mm512_slli_epi32(a, static_cast<unsigned>(n)); }
  static I srai32(I a, int n) { return _mm512_srai_epi32(a, static_cast<unsigned>(n)); }

  // Byte i of every lane replaced by table[byte i] (the bytes of idx are 0..15).
  static I lookup16(const int8_t table[16], I idx) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(t), idx);
  }
  // The lanes' bits as floats.
  static F as_float(I bits) { return _mm512_castsi512_ps(bits); }

  // acc + Σ of 4 products u8 (w) × s8 (x) per lane: exact.
  static I dot(I acc, I w, I x) { return _mm512_dpbusd_epi32(acc, w, x); }
  // acc + Σ of 2 products int16 × int16 per lane: exact for our operands (|sum| < 2^31).
  static I dot16(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  // A per-lane scale (int32, |sc| <= 128) in the form dot_scaled takes: (sc, sc) as int16.
  static I scale_operand(I sc) {
    return _mm512_or_si512(_mm512_and_si512(sc, _mm512_set1_epi32(0xffff)),
                           _mm512_slli_epi32(sc, 16));
  }
  // acc + sc · Σ of 4 products u8 (w, at most 63) × s8 (x) per lane, sc from scale_operand:
  // int16 pair sums (|2 · 63 · 128| < 2^15, exact) times sc, added in int32.
  static I dot_scaled(I acc, I w, I x, I sc) {
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(w, x), sc);
  }
  // Signed Q8_0 weights × signed activations (quant_tile_impl.h KindQ8_0), from the activation
  // row's lane starts (kernel_table.h MatmulTileFn): the weights are stored + 128 as u8
  // (q8_bias), and one vpdpbusd from the start kQ8_0LaneMagic - 128 Σx adds Σ (w + 128) x, so
  // the int32 is kQ8_0LaneMagic + Σ w x: as a float, 12582912 + Σ w x exactly (|Σ w x| <= 4 ·
  // 128 · 127 < 2^22), and the subtraction gives the dot as a float with no vcvtdq2ps (port 0,
  // which the vpdpbusd already keeps busy).
  static constexpr bool kQ8LaneStarts = true;
  static I q8_bias(I w) { return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80))); }
  static F q8_lane(const int32_t* start, I w, const int8_t* x) {
    const I s = _mm512_dpbusd_epi32(_mm512_set1_epi32(*start), w, bcast(x));
    return _mm512_sub_ps(_mm512_castsi512_ps(s), _mm512_set1_ps(12582912.0f));
  }

  static float f16(uint16_t h) { return _cvtsh_ss(h); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F fset1(float v) { return _mm512_set1_ps(v); }
  static F fmul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fadd(F a, F b) { return _mm512_add_ps(a, b); }
  static F fsub(F a, F b) { return _mm512_sub_ps(a, b); }
  // a · b + c with one rounding (std::fma).
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fload(const float* p) { return _mm512_load_ps(p); }
  static void fstore(float* p, F v) { _mm512_store_ps(p, v); }
  static void store_rows(float* y, F v, const Group& g) {
    _mm512_mask_storeu_ps(y, g.store_mask, v);
  }
};

}  // namespace
}  // namespace minfer::kernels::avx512
